"""The HOST:PORT form both services take for where to listen (`--listen`, `--metrics-listen`).

Its own module so the device plugin can read the option without importing the extender's web
stack."""
from __future__ import annotations


def parse_listen(listen: str, option: str = "--listen") -> tuple[str, int]:
    """"HOST:PORT" (or ":PORT", or "[::1]:PORT") -> (host, port); an empty host is 127.0.0.1.
    Raises ValueError naming `option` when the text is not of that form."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{option} {listen!r}: expected HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)
