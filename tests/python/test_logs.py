"""Service logs: `--log-format json` gives one JSON object per line, uvicorn's lines included."""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

from gpufleet.logs import JsonFormatter


def test_json_formatter_writes_one_object_per_record():
    record = logging.LogRecord("gpufleet.extender", logging.WARNING, __file__, 1,
                               "pod %s refused", ("default/p",), None)
    out = json.loads(JsonFormatter().format(record))
    assert out["level"] == "warning" and out["logger"] == "gpufleet.extender"
    assert out["message"] == "pod default/p refused" and out["time"].endswith("Z")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record.exc_info = sys.exc_info()
    assert "RuntimeError: boom" in json.loads(JsonFormatter().format(record))["exception"]


def test_extender_logs_json_lines(tmp_path: Path):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("nodes:\n  - {name: n1, gpus: {count: 1, memory: 16Gi}}\npods: []\n")
    proc = subprocess.Popen([sys.executable, "-m", "gpufleet", "extender", "--state", str(scenario),
                             "--listen", "127.0.0.1:0", "--log-format", "json"],
                            stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            if "Uvicorn running" in line or "Application startup complete" in line:
                break
    finally:
        proc.kill()
        proc.wait()
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    loggers = {r["logger"] for r in records}
    assert "gpufleet.extender" in loggers and any(lg.startswith("uvicorn") for lg in loggers)
