"""What an operator sees of the device plugin: its log lines while it waits for the kubelet, at
registration and at every ListAndWatch change, and its metrics, which are on by default."""
from __future__ import annotations

import logging
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import grpc

from gpufleet.cli import build_parser
from gpufleet.k8s.deviceplugin import api_pb2 as pb
from gpufleet.k8s.deviceplugin import api_pb2_grpc as pb_grpc
from gpufleet.k8s.deviceplugin.server import DevicePluginServer, serve
from test_deviceplugin import DATA, T, inventory, start_kubelet, stub_for

ROOT = Path(__file__).resolve().parents[2]
LOGGER = "gpufleet.k8s.deviceplugin.server"


def _messages(caplog, level: int = logging.INFO) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= level]


def _until(check, timeout: float = T) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def _samples(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(url, timeout=T).read().decode()
    return {k: float(v) for k, v in (line.rsplit(" ", 1) for line in text.splitlines()
                                     if line and not line.startswith("#"))}


def test_serve_says_that_it_waits_for_the_kubelet_and_when_it_registered(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    sockdir = tmp_path / "dp"
    srv = DevicePluginServer("nvidia.com/gpu", inventory("t4x2", tmp_path).devices, "whole", None,
                             str(sockdir))
    metrics = srv.enable_metrics()
    http = metrics.serve("127.0.0.1", 0)
    url = f"http://127.0.0.1:{http.server_port}/metrics"
    kubelet_sock = sockdir / "kubelet.sock"
    stop = threading.Event()
    t = threading.Thread(target=serve, args=(srv, stop), daemon=True,
                         kwargs={"poll_s": 0.02, "note_s": 0.1})
    t.start()
    ksrv = None
    try:
        waiting = f"nvidia.com/gpu: waiting for the kubelet: no socket at {kubelet_sock} yet"
        _until(lambda: sum(m.startswith(waiting) for m in _messages(caplog)) >= 3)
        first = _messages(caplog)[0]
        assert first == f"nvidia.com/gpu: serving 2 devices (whole mode) on {srv.socket_path}"
        # Notes come every note_s, not at every poll (50 polls a second would flood the log).
        assert sum(m.startswith(waiting) for m in _messages(caplog)) < 10
        samples = _samples(url)
        assert samples['gpufleet_deviceplugin_registered{resource="nvidia.com/gpu"}'] == 0
        kubelet, ksrv = start_kubelet(kubelet_sock)
        assert kubelet.requests.get(timeout=T).endpoint == srv.socket_name
        _until(lambda: srv.registered)
        assert (f"nvidia.com/gpu: registered with the kubelet at {kubelet_sock} "
                f"(endpoint {srv.socket_name})") in _messages(caplog)
        assert _samples(url)['gpufleet_deviceplugin_registered{resource="nvidia.com/gpu"}'] == 1
    finally:
        stop.set()
        t.join(timeout=T)
        http.shutdown()
        if ksrv is not None:
            ksrv.stop(0).wait()
    assert not t.is_alive() and not srv.registered


def test_a_refused_registration_is_logged_with_the_kubelet_socket(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    sockdir = tmp_path / "dp"
    sockdir.mkdir()
    (sockdir / "kubelet.sock").write_text("")   # there, but nobody answers on it
    srv = DevicePluginServer("nvidia.com/gpu", inventory("t4x2", tmp_path).devices, "whole", None,
                             str(sockdir))
    srv.register_with_kubelet = lambda path: (_ for _ in ()).throw(RuntimeError("connection refused"))
    stop = threading.Event()
    t = threading.Thread(target=serve, args=(srv, stop), daemon=True,
                         kwargs={"poll_s": 0.02, "note_s": 60})
    t.start()
    try:
        failed = (f"nvidia.com/gpu: registration with the kubelet at {sockdir / 'kubelet.sock'} "
                  "failed, retrying every 0.02s: connection refused")
        _until(lambda: failed in _messages(caplog, logging.WARNING))
        time.sleep(0.2)   # ten more failed tries, no more lines before note_s
        assert _messages(caplog, logging.WARNING).count(failed) == 1
    finally:
        stop.set()
        t.join(timeout=T)


def test_every_list_and_watch_change_is_logged(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    sockdir = tmp_path / "dp"
    srv = DevicePluginServer("nvidia.com/gpu", inventory("h100_pcie4_bridged", tmp_path).devices,
                             "whole", None, str(sockdir)).start()
    metrics = srv.enable_metrics()
    http = metrics.serve("127.0.0.1", 0)
    url = f"http://127.0.0.1:{http.server_port}/metrics"
    ch, stub = stub_for(srv)
    try:
        stream = stub.ListAndWatch(pb.Empty(), timeout=T)
        assert len(next(stream).devices) == 4
        assert ("nvidia.com/gpu: ListAndWatch opened by the kubelet: listed 4 devices "
                "(4 healthy, 0 unhealthy)") in _messages(caplog)
        assert _samples(url)['gpufleet_deviceplugin_list_streams{resource="nvidia.com/gpu"}'] == 1
        srv.set_health(2, False)
        assert sum(d.health == "Unhealthy" for d in next(stream).devices) == 1
        assert ("nvidia.com/gpu: GPU minor 2 is now unhealthy (3 of 4 GPUs healthy); the new list "
                "goes to 1 ListAndWatch stream(s)") in _messages(caplog, logging.WARNING)
        assert ("nvidia.com/gpu: ListAndWatch update: listed 4 devices (3 healthy, 1 unhealthy)"
                in _messages(caplog))
        srv.set_health(2, True)
        next(stream)
        back = [r for r in caplog.records if "GPU minor 2 is now healthy" in r.getMessage()]
        assert [r.levelno for r in back] == [logging.INFO]
        srv.set_health(2, True)   # no change: no line, no new list
        assert sum("GPU minor 2 is now" in m for m in _messages(caplog)) == 2
        stream.cancel()
        _until(lambda: srv.open_streams == 0)
        assert _samples(url)['gpufleet_deviceplugin_list_updates_total{resource="nvidia.com/gpu"}'] == 3
    finally:
        ch.close()
        http.shutdown()
        srv.stop(0)


# --- the command: metrics on by default, one /metrics for every resource -------------------------
class _Cli:
    """`gpufleet deviceplugin ...` in a child process whose log lines are read as they come."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gpufleet.cli", "deviceplugin", *args, "--log-level", "info"],
            env={**os.environ, "PYTHONPATH": str(ROOT / "python")}, stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL, text=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(x) for x in self.proc.stderr],
                         daemon=True).start()

    def wait_for(self, pattern: str, timeout: float = 20.0) -> re.Match:
        end = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            m = re.search(pattern, line)
            if m:
                return m

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=T)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def test_metrics_are_on_by_default():
    from gpufleet.k8s.deviceplugin.metrics import DEFAULT_PORT

    # The chart's DaemonSet scrapes the same port (tests/python/test_deploy_chart.py).
    assert build_parser().parse_args(["deviceplugin"]).metrics_listen == f"0.0.0.0:{DEFAULT_PORT}"


def test_the_command_reports_every_mig_resource_on_one_metrics_port(tmp_path):
    sockdir = tmp_path / "dp"
    sockdir.mkdir()
    kubelet, ksrv = start_kubelet(sockdir / "kubelet.sock")
    cli = _Cli("--replay", str(DATA / "nvml_a100_mig.json"), "--socket-dir", str(sockdir),
               "--metrics-listen", "127.0.0.1:0")
    try:
        m = cli.wait_for(r"metrics of (.*) at http://127\.0\.0\.1:(\d+)/metrics")
        names, port = set(m.group(1).split(", ")), int(m.group(2))
        assert "nvidia.com/gpu" in names and any(n.startswith("nvidia.com/mig-") for n in names)
        assert {kubelet.requests.get(timeout=20).resource_name for _ in names} == names
        _until(lambda: all(
            _samples(f"http://127.0.0.1:{port}/metrics").get(
                f'gpufleet_deviceplugin_registered{{resource="{n}"}}') == 1 for n in names))
        samples = _samples(f"http://127.0.0.1:{port}/metrics")
        for n in names:
            assert samples[f'gpufleet_deviceplugin_gpus{{health="healthy",resource="{n}"}}'] >= 1
        assert cli.stop() == 0
    finally:
        cli.stop()
        ksrv.stop(0).wait()


def test_metrics_off_and_the_wait_for_the_kubelet_are_said_at_start(tmp_path):
    sockdir = tmp_path / "dp"
    cli = _Cli("--replay", str(DATA / "nvml_t4x2.json"), "--socket-dir", str(sockdir),
               "--metrics-listen", "off")
    try:
        cli.wait_for(r"metrics off \(--metrics-listen off\)")
        cli.wait_for(r"nvidia\.com/gpu: serving 2 devices \(whole mode\) on ")
        cli.wait_for(re.escape(f"waiting for the kubelet: no socket at {sockdir / 'kubelet.sock'} yet"))
        assert cli.stop() == 0
    finally:
        cli.stop()
