"""The parts of the real-GPU checks that need no GPU: detection, nvidia-smi parsing, the inventory
comparison, the child programs (they must at least compile), and the node CLI without the native
extension, which is how a GPU machine with only a checkout runs it (tools/verify_gpu.sh)."""
from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import gpu_checks as gc
from gpufleet.node.inventory import normalize_bus_id, read_inventory
from gpufleet.node.nvml_replay import ReplayNvml

DATA = Path(__file__).parent / "data"

# `nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id --format=csv,noheader,nounits`
# as nvidia-smi prints it for the recorded 2x T4 box (tests/python/data/nvml_t4x2.json).
SMI_T4X2 = ("0, GPU-5e0c7a19-2d3b-4f6a-b1c2-0d9e8f7a6b50, Tesla T4, 15360, 00000000:3B:00.0\n"
            "1, GPU-5e0c7a19-2d3b-4f6a-b1c2-0d9e8f7a6b51, Tesla T4, 15360, 00000000:D8:00.0\n")
SMI_L_H100 = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0b5d3c2a-1111-2222-3333-444455556666)\n"


def fake_run(rc: int = 0, stdout: str = "", stderr: str = "", exc: Exception | None = None):
    def run(argv, **kw):
        assert argv == ["nvidia-smi", "-L"] and kw.get("timeout"), "must ask `nvidia-smi -L` with a timeout"
        if exc is not None:
            raise exc
        return SimpleNamespace(returncode=rc, stdout=stdout, stderr=stderr)
    return run


def t4_inventory(tmp_path: Path) -> dict:
    nvml = ReplayNvml.from_json(str(DATA / "nvml_t4x2.json"))
    return read_inventory(nvml, sysfs=str(tmp_path / "nosys")).to_dict()


# --- detection -----------------------------------------------------------------------------------
def test_gpu_detection():
    on_path = lambda name: "/usr/bin/" + name  # noqa: E731
    assert gc.gpu_absent_reason(on_path, fake_run(stdout=SMI_L_H100)) is None
    cases = {
        "nvidia-smi not found on PATH": (lambda name: None, fake_run()),
        "exited 9: NVIDIA-SMI has failed": (on_path, fake_run(9, "NVIDIA-SMI has failed because it "
                                                                "couldn't communicate with the NVIDIA driver.\n")),
        "lists no GPU": (on_path, fake_run(0, "No devices were found\n")),
        "failed": (on_path, fake_run(exc=subprocess.TimeoutExpired(["nvidia-smi", "-L"], 30))),
    }
    for want, (which, run) in cases.items():
        reason = gc.gpu_absent_reason(which, run)
        assert reason and reason.startswith("no NVIDIA GPU here: ") and want in reason, reason
        assert "docs/gpu-verification.md" in reason


# --- nvidia-smi parsing and the comparison -------------------------------------------------------
def test_parse_smi_csv():
    gpus = gc.parse_smi_csv(SMI_T4X2 + "\n")
    assert gpus[1] == gc.SmiGpu(1, "GPU-5e0c7a19-2d3b-4f6a-b1c2-0d9e8f7a6b51", "Tesla T4", 15360,
                                "00000000:D8:00.0")
    # A comma inside the name must not shift memory and bus id.
    odd = gc.parse_smi_csv("0, GPU-x, NVIDIA Foo, Bar 80GB, 81559, 00000000:18:00.0")[0]
    assert (odd.name, odd.memory_mib, odd.bus_id) == ("NVIDIA Foo, Bar 80GB", 81559, "00000000:18:00.0")
    with pytest.raises(ValueError, match="line 1: expected 5 columns"):
        gc.parse_smi_csv("0, GPU-x, 81559")
    with pytest.raises(ValueError, match="line 2"):
        gc.parse_smi_csv(SMI_T4X2.splitlines()[0] + "\n0, GPU-y, Tesla T4, [N/A], 00000000:3B:00.0")


def test_bus_ids_compare_across_formats():
    # nvidia-smi: 8-digit domain, upper case; NVML may give either; the inventory writes sysfs style.
    assert gc.canonical_bus_id("00000000:3B:00.0") == gc.canonical_bus_id("0000:3b:00.0") == "0000:3b:00.0"
    assert gc.canonical_bus_id(normalize_bus_id("00000000:D8:00.0")) == gc.canonical_bus_id("00000000:D8:00.0")
    assert gc.canonical_bus_id("00000001:18:00.0") != gc.canonical_bus_id("0000:18:00.0")
    with pytest.raises(ValueError):
        gc.canonical_bus_id("not-a-bus")


def test_inventory_matches_recorded_nvidia_smi(tmp_path):
    assert gc.compare_inventory(t4_inventory(tmp_path), gc.parse_smi_csv(SMI_T4X2)) == []


def test_inventory_mismatches_are_named(tmp_path):
    inv = t4_inventory(tmp_path)
    smi = gc.parse_smi_csv(SMI_T4X2)
    assert gc.compare_inventory(inv, smi[:1]) == ["inventory has 2 GPUs, nvidia-smi lists 1"]
    # 0.5% off is rounding; 2% off is a different card.
    near = [dataclasses.replace(gpu, memory_mib=15400) for gpu in smi]
    assert gc.compare_inventory(inv, near) == []
    far = [smi[0], gc.SmiGpu(1, smi[1].uuid, "NVIDIA A10", 15700, "00000000:AF:00.0")]
    problems = gc.compare_inventory(inv, far)
    assert len(problems) == 3, problems
    assert "GPU 1: inventory memory 15Gi (15360 MiB) vs nvidia-smi 15700 MiB" in problems[0]
    assert problems[1] == "GPU 1: inventory busID '0000:d8:00.0' vs nvidia-smi '00000000:AF:00.0'"
    assert problems[2] == "GPU 1: inventory model 'T4' vs 'A10' (from nvidia-smi name 'NVIDIA A10')"
    other = [smi[0], gc.SmiGpu(1, "GPU-other", "Tesla T4", 15360, "00000000:D8:00.0")]
    assert gc.compare_inventory(inv, other)[0].startswith("GPU 1 (GPU-other) is missing from the inventory")


# --- reports of the child programs ---------------------------------------------------------------
def test_overlap_and_reports():
    a, b = {"start": 10.0, "end": 15.0}, {"start": 12.0, "end": 17.5}
    assert gc.overlap_seconds(a, b) == gc.overlap_seconds(b, a) == 3.0
    assert gc.overlap_seconds(a, {"start": 15.5, "end": 20.0}) == 0.0
    out = 'CUDA_VISIBLE_DEVICES=GPU-x\n{"iters_per_s": 1}\nnoise {\n{"iters_per_s": 2.5, "start": 1}\n'
    assert gc.last_json_line(out, "iters_per_s") == {"iters_per_s": 2.5, "start": 1}
    with pytest.raises(ValueError, match="no JSON report"):
        gc.last_json_line("nothing here", "iters_per_s")


@pytest.mark.parametrize("name", ["OOM_SCRIPT", "MATMUL_SCRIPT", "profile"])
def test_child_programs_compile(name):
    # They only run on a GPU machine; a syntax or f-string slip must not wait for one.
    src = gc.profile_script(4096, 2) if name == "profile" else getattr(gc, name)
    compile(src, name, "exec")
    if name == "OOM_SCRIPT":
        assert gc.OOM_MARKER in src and "{" not in gc.OOM_MARKER


# --- the node side without the native extension --------------------------------------------------
# Python run as a child: refuses gpufleet._core as if it had never been compiled, then runs the CLI.
WITHOUT_CORE = """
import sys
class NoCore:
    def find_spec(self, name, path=None, target=None):
        if name == "gpufleet._core":
            raise ModuleNotFoundError("No module named 'gpufleet._core'", name=name)
sys.meta_path.insert(0, NoCore())
from gpufleet.cli import main
sys.exit(main(sys.argv[1:]))
"""


def without_core(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_CORE, *args], env=gc.node_env(),
                          capture_output=True, text=True, timeout=120)


def test_node_commands_run_without_the_native_extension(tmp_path):
    res = without_core("node", "inventory", "--json", "--replay", str(DATA / "nvml_t4x2.json"))
    assert res.returncode == 0, res.stderr
    assert gc.compare_inventory(json.loads(res.stdout), gc.parse_smi_csv(SMI_T4X2)) == []
    devices = tmp_path / "devices.json"
    devices.write_text(json.dumps(t4_inventory(tmp_path)))
    res = without_core("node", "run", "--print-env", "--devices", str(devices), "--allocation",
                       '{"gpu":[{"minor":1,"resources":{"koordinator.sh/gpu-core":"50",'
                       '"koordinator.sh/gpu-memory":"4Gi"}}]}')
    assert res.returncode == 0, res.stderr
    assert "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M" in res.stdout.splitlines()
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50" in res.stdout.splitlines()


def test_core_commands_explain_the_missing_extension():
    res = without_core("place", "examples/scenarios/quickstart.yaml")
    assert res.returncode == 2
    assert "gpufleet place: needs the native extension gpufleet._core" in res.stderr
    res = subprocess.run([sys.executable, "-c", WITHOUT_CORE.replace(
        "from gpufleet.cli import main\nsys.exit(main(sys.argv[1:]))", "import gpufleet\ngpufleet.Cluster")],
        env=gc.node_env(), capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "ImportError: gpufleet.Cluster needs the native extension" in res.stderr


def test_a_source_tree_without_the_extension_imports_beside_the_stub_package(tmp_path):
    # The stubs (python/gpufleet/_core/*.pyi) make gpufleet._core an empty namespace package
    # where the extension was never built: `import gpufleet` must still work and say what is
    # missing when a core name is touched. No site-packages (-S): nothing else can supply _core.
    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "python" / "gpufleet", tmp_path / "gpufleet",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    assert (tmp_path / "gpufleet" / "_core").is_dir()
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import gpufleet\n"
            "try:\n    gpufleet.Cluster\nexcept ImportError as e:\n    print(e)\n"
            # Guarded imports elsewhere (the CLI's registries) see the same ImportError, never
            # an empty module.
            "try:\n    from gpufleet import _core\nexcept ImportError:\n    print('refused')\n")
    res = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "gpufleet.Cluster needs the native extension gpufleet._core" in res.stdout
    assert res.stdout.splitlines()[-1] == "refused"
