"""Node side: NVML inventory (recorded answers), container env, MPS runner, profiler, CLI."""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import gpufleet
import pytest


from gpufleet.commands import node as node_cmd
from gpufleet.node import annotations as ann
from gpufleet.node.annotations import DeviceGrant, GpuShareAllocation, PodAllocation
from gpufleet.node import inventory as inv_mod
from gpufleet.node import mps, profiler
from gpufleet.node.env import container_env
from gpufleet.node.nvml_replay import ReplayNvml

DATA = Path(__file__).parent / "data"


def replay(name: str) -> ReplayNvml:
    return ReplayNvml.from_json(str(DATA / f"nvml_{name}.json"))


def read(name: str, tmp_path: Path, nvml: ReplayNvml | None = None) -> inv_mod.NodeInventory:
    return inv_mod.read_inventory(nvml or replay(name), sysfs=str(tmp_path / "nosys"))


def cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="gpufleet")
    node_cmd.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


# --- inventory -----------------------------------------------------------------------------------
def test_inventory_h100_sxm8(tmp_path):
    inv = read("h100_sxm8", tmp_path)
    assert [d["minor"] for d in inv.devices] == list(range(8))
    d0 = inv.devices[0]
    assert d0["type"] == "gpu" and d0["model"] == "H100" and d0["health"] is True
    assert d0["id"].startswith("GPU-")
    assert d0["resources"] == {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "81559Mi",
                               "koordinator.sh/gpu-memory-ratio": "100"}
    assert d0["topology"] == {"socketID": 0, "nodeID": 0, "pcieID": "pci0000:18", "busID": "0000:18:00.0"}
    assert [d["topology"]["nodeID"] for d in inv.devices] == [0] * 4 + [1] * 4
    assert inv.nvlink_groups == [list(range(8))]  # all joined through the NVSwitches
    assert len({d["topology"]["pcieID"] for d in inv.devices}) == 8
    assert inv.to_dict()["driver_version"] == "550.54.15"


def test_inventory_pcie_bridged_pairs_and_t4(tmp_path):
    pcie = read("h100_pcie4_bridged", tmp_path)
    assert pcie.nvlink_groups == [[0, 1], [2, 3]]
    ids = [d["topology"]["pcieID"] for d in pcie.devices]
    assert ids[0] == ids[1] != ids[2] == ids[3]
    t4 = read("t4x2", tmp_path)
    assert [d["model"] for d in t4.devices] == ["T4", "T4"]
    assert t4.devices[0]["resources"]["koordinator.sh/gpu-memory"] == "15Gi"
    assert t4.nvlink_groups == [] and "nvlink_groups" not in t4.to_dict()
    assert "nodeID" not in t4.devices[0]["topology"]  # NVML did not report it, no sysfs here


def test_inventory_numa_from_sysfs_when_nvml_lacks_it(tmp_path):
    sysfs = tmp_path / "sys"
    for bus, node in (("0000:3b:00.0", "0"), ("0000:d8:00.0", "1")):
        (sysfs / "bus/pci/devices" / bus).mkdir(parents=True)
        (sysfs / "bus/pci/devices" / bus / "numa_node").write_text(node + "\n")
    (sysfs / "devices/system/node/node1").mkdir(parents=True)
    (sysfs / "devices/system/node/node1/cpulist").write_text("32-63\n")
    (sysfs / "devices/system/cpu/cpu32/topology").mkdir(parents=True)
    (sysfs / "devices/system/cpu/cpu32/topology/physical_package_id").write_text("1\n")
    inv = inv_mod.read_inventory(replay("t4x2"), sysfs=str(sysfs))
    assert inv.devices[1]["topology"]["nodeID"] == 1 and inv.devices[1]["topology"]["socketID"] == 1
    assert inv.devices[0]["topology"]["socketID"] == 0  # fallback: socket = NUMA node


def test_inventory_health(tmp_path):
    nvml = replay("h100_sxm8")
    nvml.devices[2]["remapped_rows"] = [0, 1, False, True]   # row remapping failed
    nvml.devices[5]["lost"] = True                          # fell off the bus
    t4 = replay("t4x2")
    t4.devices[1]["retired_pages_pending"] = 1
    inv = read("", tmp_path, nvml)
    assert [d["health"] for d in inv.devices] == [True, True, False, True, True, False, True, True]
    assert "koordinator.sh/gpu-memory" not in inv.devices[5]["resources"]
    assert [d["health"] for d in read("", tmp_path, t4).devices] == [True, False]


@pytest.mark.parametrize("name,model", [
    ("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H100 PCIe", "H100"), ("Tesla T4", "T4"),
    ("NVIDIA A100-SXM4-80GB", "A100"), ("Tesla V100-SXM2-32GB", "V100"), ("NVIDIA L40S", "L40S"),
    ("NVIDIA GeForce RTX 4090", "RTX4090"), ("NVIDIA RTX A6000", "RTXA6000"), ("NVIDIA H200", "H200")])
def test_normalize_model(name, model):
    assert inv_mod.normalize_model(name) == model


def test_inventory_nvml_failure_is_unavailable(tmp_path):
    nvml = replay("t4x2")
    nvml.nvmlDeviceGetCount = lambda: (_ for _ in ()).throw(nvml.NVMLError(9))  # driver gone
    with pytest.raises(inv_mod.NvmlUnavailable, match="NVML query failed"):
        read("", tmp_path, nvml)
    nvml.devices = []
    nvml.nvmlDeviceGetCount = lambda: 0
    with pytest.raises(inv_mod.NvmlUnavailable, match="no GPUs"):
        read("", tmp_path, nvml)


def test_inventory_without_driver(monkeypatch, capsys):
    def unavailable():
        raise inv_mod.NvmlUnavailable("NVML could not start (NVML Shared Library Not Found)")
    monkeypatch.setattr(inv_mod, "load_nvml", unavailable)
    with pytest.raises(inv_mod.NvmlUnavailable):
        inv_mod.read_inventory()
    assert cli(["node", "inventory"]) == 2
    assert "no GPU inventory" in capsys.readouterr().err


def test_inventory_cli_replay_json_and_yaml(capsys):
    assert cli(["node", "inventory", "--json", "--replay", str(DATA / "nvml_h100_pcie4_bridged.json")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nvlink_groups"] == [[0, 1], [2, 3]] and len(doc["devices"]) == 4
    assert cli(["node", "inventory", "--replay", str(DATA / "nvml_t4x2.json")]) == 0
    import yaml
    assert yaml.safe_load(capsys.readouterr().out)["devices"][1]["minor"] == 1


# --- env ---------------------------------------------------------------------------------------------
@pytest.fixture
def h100(tmp_path):
    return read("h100_pcie4_bridged", tmp_path).devices


def test_env_whole_gpus_by_uuid(h100):
    env = container_env([DeviceGrant("gpu", 3), DeviceGrant("gpu", 1)], h100)
    assert env["NVIDIA_VISIBLE_DEVICES"] == f"{h100[3]['id']},{h100[1]['id']}"
    assert env["CUDA_VISIBLE_DEVICES"] == env["NVIDIA_VISIBLE_DEVICES"]
    assert "all" not in env["NVIDIA_VISIBLE_DEVICES"].split(",")
    assert set(env) == {"NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"}
    # Whole-card quantities add no MPS limits either.
    full = container_env([DeviceGrant("gpu", 0, 100, 80 << 30, 100)], h100)
    assert not any(k.startswith("CUDA_MPS") for k in full)


def test_env_minors_when_uuid_unknown():
    env = container_env([DeviceGrant("gpu", 1)], [{"minor": 0}, {"minor": 1}])
    assert env["NVIDIA_VISIBLE_DEVICES"] == "1" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_env_mps_limits(h100):
    grants = [DeviceGrant("gpu", 2, 50, 4 << 30), DeviceGrant("gpu", 3, 25, None, 10)]
    env = container_env(grants, h100)
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25"
    # Indexed by position in the visible list; ratio 10% of 81559 MiB is 8155 MiB.
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=4096M,1=8155M"
    env = container_env(ann.parse_device_allocated(
        '{"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"100","koordinator.sh/gpu-memory":"16Gi"}}]}'), h100)
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" not in env
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=16384M"


def test_env_gpushare_compat(h100):
    share = GpuShareAllocation((1,), 8192, None, False, 1)
    env = container_env(share, h100, container_units=4096)
    assert env["ALIYUN_COM_GPU_MEM_IDX"] == "1" and env["ALIYUN_COM_GPU_MEM_POD"] == "8192"
    assert env["ALIYUN_COM_GPU_MEM_DEV"] == "81559"  # from the card, in MiB units
    assert env["ALIYUN_COM_GPU_MEM_CONTAINER"] == "4096"
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=8192M"
    assert env["NVIDIA_VISIBLE_DEVICES"] == h100[1]["id"]


def test_env_errors(h100):
    with pytest.raises(ValueError, match="no GPU"):
        container_env([], h100)
    with pytest.raises(ValueError, match="no GPU"):
        container_env([DeviceGrant("rdma", 0)], h100)
    with pytest.raises(ValueError, match="minor 9.*does not have"):
        container_env([DeviceGrant("gpu", 9)], h100)
    with pytest.raises(ValueError, match="twice"):
        container_env([DeviceGrant("gpu", 0), DeviceGrant("gpu", 0)], h100)
    with pytest.raises(ValueError, match="gpu-core"):
        container_env([DeviceGrant("gpu", 0, 150)], h100)


# --- MPS -------------------------------------------------------------------------------------------
class Recorder:
    def __init__(self, rcs=(0, 0)):
        self.calls: list[tuple[list[str], dict]] = []
        self.rcs = list(rcs)

    def __call__(self, argv, env=None, check=False):
        self.calls.append((list(argv), dict(env or {})))
        return SimpleNamespace(returncode=self.rcs.pop(0) if self.rcs else 0)


def test_mps_starts_daemon_then_runs_command(tmp_path, h100):
    cfg = mps.MpsConfig(str(tmp_path / "pipe"), str(tmp_path / "log"))
    run = Recorder(rcs=[0, 7])
    alloc = PodAllocation((DeviceGrant("gpu", 2, 30, 2 << 30),))
    rc = mps.run_under_mps(alloc, ["python", "train.py"], h100, cfg, runner=run,
                           which=lambda name: f"/usr/bin/{name}", base_env={"PATH": "/usr/bin"})
    assert rc == 7
    (start_argv, start_env), (cmd_argv, cmd_env) = run.calls
    assert start_argv == ["/usr/bin/nvidia-cuda-mps-control", "-d"]
    assert start_env["CUDA_MPS_PIPE_DIRECTORY"] == cfg.pipe_dir and start_env["CUDA_MPS_LOG_DIRECTORY"] == cfg.log_dir
    assert os.path.isdir(cfg.pipe_dir) and os.path.isdir(cfg.log_dir)
    assert cmd_argv == ["python", "train.py"]
    assert cmd_env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "30"
    assert cmd_env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=2048M"
    assert cmd_env["NVIDIA_VISIBLE_DEVICES"] == h100[2]["id"] and cmd_env["PATH"] == "/usr/bin"
    assert cmd_env["CUDA_MPS_PIPE_DIRECTORY"] == cfg.pipe_dir


def test_mps_daemon_already_running_and_failures(tmp_path, h100):
    cfg = mps.MpsConfig(str(tmp_path / "pipe"), str(tmp_path / "log"))
    os.makedirs(cfg.pipe_dir)
    open(os.path.join(cfg.pipe_dir, "control"), "w").close()
    run = Recorder()
    alloc = PodAllocation((DeviceGrant("gpu", 0),))
    assert mps.run_under_mps(alloc, ["true"], h100, cfg, runner=run, which=lambda n: "/x/" + n, base_env={}) == 0
    assert [argv for argv, _ in run.calls] == [["true"]]  # no second daemon
    with pytest.raises(mps.MpsUnavailable, match="nvidia-cuda-mps-control"):
        mps.run_under_mps(alloc, ["true"], h100, cfg, runner=run, which=lambda n: None)
    with pytest.raises(ValueError, match="minor 5"):
        mps.run_under_mps(PodAllocation((DeviceGrant("gpu", 5),)), ["true"], h100, cfg, runner=run,
                          which=lambda n: "/x/" + n)
    cfg2 = mps.MpsConfig(str(tmp_path / "p2"), str(tmp_path / "l2"))
    with pytest.raises(RuntimeError, match="exit code 1"):
        mps.ensure_daemon(cfg2, "/x/ctl", runner=Recorder(rcs=[1]), base_env={})


def test_node_run_cli(tmp_path, h100, monkeypatch, capsys):
    devices = tmp_path / "devices.json"
    devices.write_text(json.dumps({"devices": h100}))
    alloc = tmp_path / "alloc.json"
    alloc.write_text(json.dumps({ann.GPUSHARE_IDX: "3", ann.GPUSHARE_POD: "4096", ann.GPUSHARE_DEV: "81559"}))
    assert cli(["node", "run", "--allocation", f"@{alloc}", "--devices", str(devices), "--print-env"]) == 0
    out = dict(line.split("=", 1) for line in capsys.readouterr().out.split("\n") if line)
    assert out["ALIYUN_COM_GPU_MEM_IDX"] == "3" and out["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=4096M"
    # No MPS binaries on this machine: a clear error and exit code 2.
    monkeypatch.setattr(mps.shutil, "which", lambda name: None)
    koord = '{"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"50"}}]}'
    assert cli(["node", "run", "--allocation", koord, "--devices", str(devices), "--", "echo", "hi"]) == 2
    assert "nvidia-cuda-mps-control not found" in capsys.readouterr().err
    assert cli(["node", "run", "--allocation", "{oops", "--", "echo"]) == 2
    assert "malformed JSON" in capsys.readouterr().err


# --- profiler ----------------------------------------------------------------------------------------
def test_profile_cpu_step_without_gpu(monkeypatch):
    def unavailable():
        raise inv_mod.NvmlUnavailable("no driver")
    monkeypatch.setattr(profiler, "load_nvml", unavailable)
    calls = []

    def step():
        calls.append(1)
        time.sleep(0.002)

    res = profiler.profile(step, warmup=2, iters=10, use_torch=False)
    assert len(calls) == 12 and res.iterations == 10
    assert 0 < res.iterations_per_s <= 500  # each step sleeps 2 ms
    assert res.peak_memory_bytes is None and res.gpu_model is None and res.memory_source == "none"
    with pytest.raises(ValueError):
        profiler.profile(step, iters=0)


def test_profile_nvml_sampling():
    nvml = replay("h100_sxm8")
    nvml.devices[1]["memory_used"] = 1 << 30

    def step():
        nvml.devices[1]["memory_used"] += 1 << 20  # the "training" allocates a little each step
        time.sleep(0.001)

    res = profiler.profile(step, warmup=1, iters=5, device=1, nvml=nvml, use_torch=False)
    assert res.memory_source == "nvml" and res.gpu_model == "H100"
    assert res.peak_memory_bytes == (1 << 30) + (6 << 20)
    assert res.iterations_per_s > 0


def test_profile_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(profiler, "load_nvml", lambda: (_ for _ in ()).throw(inv_mod.NvmlUnavailable("x")))
    script = tmp_path / "job.py"
    script.write_text("import math\nstate = {}\ndef setup():\n    state['n'] = 1000\n"
                      "def step():\n    return sum(math.sqrt(i) for i in range(state['n']))\n")
    assert cli(["node", "profile", str(script), "--steps", "5", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["iterations"] == 5 and res["iterations_per_s"] > 0
    bad = tmp_path / "nostep.py"
    bad.write_text("x = 1\n")
    assert cli(["node", "profile", str(bad)]) == 2
    assert "no step()" in capsys.readouterr().err


def test_profile_uses_torch_cuda_when_present(monkeypatch):
    import sys
    calls: list[str] = []
    cuda = SimpleNamespace(
        is_available=lambda: True, synchronize=lambda i: calls.append(f"sync{i}"),
        reset_peak_memory_stats=lambda i: calls.append(f"reset{i}"),
        max_memory_allocated=lambda i: 3 << 30, get_device_name=lambda i: "NVIDIA A100-SXM4-80GB")
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=cuda))
    res = profiler.profile(lambda: calls.append("step"), warmup=1, iters=3, device=1)
    assert res.memory_source == "torch" and res.peak_memory_bytes == 3 << 30 and res.gpu_model == "A100"
    # Peak stats reset after warmup; the timed window ends with a synchronize.
    assert calls == ["step", "sync1", "reset1", "step", "step", "step", "sync1"]
