"""Who may call the extender: TLS, client certificates and the bearer token.

Two ways to authenticate, one per deployment:
- mutual TLS (`--tls-cert`, `--tls-key`, `--tls-client-ca`), what kube-scheduler's extender client
  speaks (its `tlsConfig` has a client certificate, no token): the TLS handshake itself refuses a
  client without a certificate signed by the client CA, so nothing unauthenticated reaches a verb;
- a bearer token (`--token-file`), for clients that are not kube-scheduler (scripts calling the
  scenario mode's release verb): every request but the health probes must carry it.

A non-loopback `--listen` needs TLS plus one of the two, or an explicit `--insecure`. Everything
is checked before the extender starts, and a problem is one line naming the option and the file.
"""
from __future__ import annotations

import hmac
import ipaddress
import ssl
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from gpufleet._extras import require

for _name in ("orjson", "starlette"):
    require(_name, "k8s", "the scheduler extender (gpufleet extender)")

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

MIN_TOKEN_CHARS = 16
# Probes stay open: the kubelet presents no credentials, and they reveal nothing but "ok".
OPEN_PATHS = ("/healthz", "/readyz")


@dataclass(frozen=True)
class Access:
    """The extender's security settings (the CLI's options); `check()` before serving."""
    tls_cert: Optional[str] = None
    tls_key: Optional[str] = None
    tls_client_ca: Optional[str] = None
    token: Optional[bytes] = None
    insecure: bool = False

    @property
    def tls(self) -> bool:
        return bool(self.tls_cert)

    @property
    def authenticates(self) -> bool:
        return bool(self.tls_client_ca) or self.token is not None

    def check(self, host: str) -> None:
        """ValueError (one line) for a combination that cannot work or that would expose the
        verbs without authentication on a non-loopback `host`, or for unusable TLS files."""
        self.check_exposure(host)
        if self.tls:
            check_tls_files(self.tls_cert or "", self.tls_key or "", self.tls_client_ca)

    def check_exposure(self, host: str) -> None:
        """The options alone (no file is read): what `check` refuses before the files."""
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("--tls-cert and --tls-key go together: give both or neither")
        if self.tls_client_ca and not self.tls:
            raise ValueError("--tls-client-ca needs --tls-cert and --tls-key (the server side "
                             "of the TLS connection)")
        if self.tls_client_ca and self.token is not None:
            raise ValueError("--token-file and --tls-client-ca are alternatives: with a client "
                             "CA every connection already presents a verified certificate (and "
                             "kube-scheduler cannot send a token)")
        if not is_loopback(host) and not self.insecure and not (self.tls and self.authenticates):
            raise ValueError(
                f"--listen {host}: not a loopback address, so the verbs would be open to the "
                "network; give --tls-cert and --tls-key with --tls-client-ca (mutual TLS, as "
                "kube-scheduler speaks it) or with --token-file, or --insecure to serve "
                "without them")

    def uvicorn_ssl(self) -> dict[str, Any]:
        """uvicorn.Config arguments: TLS, and with a client CA a required client certificate."""
        if not self.tls:
            return {}
        out: dict[str, Any] = {"ssl_certfile": self.tls_cert, "ssl_keyfile": self.tls_key}
        if self.tls_client_ca:
            out.update(ssl_ca_certs=self.tls_client_ca, ssl_cert_reqs=ssl.CERT_REQUIRED)
        return out


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False   # a host name: it may resolve to anything


def _refuse_password() -> str:
    raise ValueError("encrypted")


def check_tls_files(cert: str, key: str, client_ca: Optional[str]) -> None:
    """Load the files the way the server will, so a bad one stops the start with its name
    instead of a traceback from inside uvicorn (or a password prompt)."""
    for option, path in (("--tls-cert", cert), ("--tls-key", key), ("--tls-client-ca", client_ca)):
        if path:
            try:
                with open(path, "rb"):
                    pass
            except OSError as e:
                raise ValueError(f"{option} {path}: cannot read it: {e.strerror}") from None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_verify_locations(cafile=cert)   # parses the certificates only
    except ssl.SSLError:
        raise ValueError(f"--tls-cert {cert}: no PEM certificate in it") from None
    try:
        ctx.load_cert_chain(cert, key, password=_refuse_password)
    except ValueError:
        raise ValueError(f"--tls-key {key}: the key is encrypted; give an unencrypted key "
                         "(protect the file instead)") from None
    except ssl.SSLError as e:
        if e.reason == "KEY_VALUES_MISMATCH":
            raise ValueError(f"--tls-key {key} does not match the certificate in --tls-cert "
                             f"{cert}") from None
        raise ValueError(f"--tls-key {key}: no PEM private key in it") from None
    if client_ca:
        ca = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            ca.load_verify_locations(cafile=client_ca)
        except ssl.SSLError:
            raise ValueError(f"--tls-client-ca {client_ca}: no PEM certificate in it") from None
        if not ca.get_ca_certs():
            raise ValueError(f"--tls-client-ca {client_ca}: holds no CA certificate (basic "
                             "constraints CA:TRUE)")


def read_token_file(path: str) -> bytes:
    """The token in `path` (surrounding whitespace dropped); ValueError if it is unusable."""
    try:
        with open(path, "rb") as f:
            token = f.read().strip()
    except OSError as e:
        raise ValueError(f"--token-file {path}: cannot read it: {e.strerror}") from None
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"--token-file {path}: the token has {len(token)} characters, fewer "
                         f"than {MIN_TOKEN_CHARS} (make one with `openssl rand -hex 32`)")
    if not all(0x21 <= b <= 0x7e for b in token):
        raise ValueError(f"--token-file {path}: the token must be printable ASCII without "
                         "spaces (it travels in an HTTP header)")
    return token


class RequireToken:
    """ASGI middleware: a request outside `open_paths` without `Authorization: Bearer <token>`
    is answered 401 with a JSON `Error`, and `refused(path)` counts it."""

    def __init__(self, app: ASGIApp, token: bytes, open_paths: Iterable[str],
                 refused: Callable[[str], None]) -> None:
        self.app, self.token = app, token
        self.open_paths = frozenset(open_paths)
        self.refused = refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.open_paths:
            return await self.app(scope, receive, send)
        given = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        scheme, _, credential = (given or b"").partition(b" ")
        # compare_digest: the time taken does not depend on how much of the token matched.
        if scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self.token):
            return await self.app(scope, receive, send)
        self.refused(scope.get("path", ""))
        why = "no bearer token" if given is None else "wrong bearer token"
        body = orjson.dumps({"Error": f"unauthorized: {why} (Authorization: Bearer <token>)"})
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", b"%d" % len(body)),
                                (b"www-authenticate", b'Bearer realm="gpufleet-extender"')]})
        await send({"type": "http.response.body", "body": body})
