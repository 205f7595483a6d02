"""Logging set-up for the services: plain lines for people, or one JSON object per line for log
collectors (`--log-format json`)."""
from __future__ import annotations

import argparse
import json
import logging
import time
from typing import Any

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = ["critical", "error", "warning", "info", "debug"]


class JsonFormatter(logging.Formatter):
    """{"time": RFC 3339 UTC, "level", "logger", "message"[, "exception"]} on one line."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", default="info", choices=LEVELS)
    parser.add_argument("--log-format", default="text", choices=["text", "json"],
                        help="text lines, or one JSON object per line (default %(default)s)")


def configure(level: str, fmt: str = "text") -> None:
    """The root logger's one handler, on standard error. Services' own loggers (uvicorn's too,
    which the extender leaves unconfigured) propagate to it."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
