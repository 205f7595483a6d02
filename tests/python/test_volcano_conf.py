"""Volcano's shipped scheduler configurations (tests/data/volcano, sources in the README there)
load unchanged through `Engine`, `load_config` and `gpufleet cycle --conf`, ConfigMap wrapper
included; a Volcano plugin gpufleet lacks is an error that names it and the supported ones."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpufleet import engine as eng
from gpufleet.cli import main
from gpufleet.engine import Engine, engine_from_scenario, load_config
from gpufleet.registries import entries

import conftest

VOLCANO = Path(__file__).resolve().parents[1] / "data" / "volcano"
HELM_TIERS = [["priority", "gang", "conformance"],
              ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"]]
STOCK = {
    "volcano-scheduler.conf": HELM_TIERS,
    "agent-scheduler.conf": HELM_TIERS,
    "volcano-development-configmap.yaml": HELM_TIERS,
    "volcano-development-excerpt.yaml": HELM_TIERS,  # several documents, one scheduler ConfigMap
    "benchmark-gang-configmap.yaml": HELM_TIERS,
    "default-scheduler.conf": [HELM_TIERS[0], HELM_TIERS[1][:-1]],  # no binpack in the fallback
}


def scenario() -> dict:
    """Two 4-GPU nodes, a 2x2-GPU gang that fits and a 16-GPU job that never does."""
    return {"nodes": [conftest.gpu_node("n1", 4), conftest.gpu_node("n2", 4)],
            "jobs": [conftest.job("gang", 2, 2), conftest.job("huge", 1, 16)]}


def tier_names(config: dict) -> list[list[str]]:
    return [[p["name"] for p in tier["plugins"]] for tier in config["tiers"]]


@pytest.mark.parametrize("name", sorted(STOCK))
def test_stock_files_load_through_engine(name):
    path = VOLCANO / name
    load_config(path)  # raises on any refusal
    engine = Engine(path)
    config = engine.config
    assert tier_names(config) == STOCK[name]
    assert [a["name"] for a in config["actions"]] == ["enqueue", "allocate", "backfill"]
    switches = {p["name"]: p.get("enablePreemptable") for tier in config["tiers"]
                for p in tier["plugins"]}
    shipped_off = "enablePreemptable: false" in path.read_text()
    assert switches["gang"] is (False if shipped_off else None)
    assert switches["drf"] is (False if shipped_off else None)


@pytest.mark.parametrize("name", sorted(STOCK))
def test_stock_files_run_through_the_cli(name, tmp_path, capsys):
    path = VOLCANO / name
    assert main(["cycle", str(_scenario_file(tmp_path)), "--conf", str(path), "--json"]) == 0
    cycle = json.loads(capsys.readouterr().out)["cycles"][0]
    assert sorted(b["job"] for b in cycle["binds"]) == ["gang", "gang"]
    # overcommit (1.2 x 8 GPUs) and proportion keep the 16-GPU job out of the queue.
    assert "not admitted" in cycle["pending"]["huge"]


def _scenario_file(folder: Path) -> Path:
    path = folder / "scenario.json"
    path.write_text(json.dumps(scenario()))
    return path


def test_configmap_given_as_a_mapping():
    # Engine(dict) with the ConfigMap as read from YAML: its data value is still YAML text.
    configmap = yaml.safe_load((VOLCANO / "volcano-development-configmap.yaml").read_text())
    assert isinstance(configmap["data"]["volcano-scheduler.conf"], str)
    engine = engine_from_scenario(scenario(), "<test>", configmap)
    config = engine.config
    assert tier_names(config) == HELM_TIERS


def test_multi_document_manifest_needs_exactly_one_scheduler_configmap(tmp_path):
    docs = list(yaml.safe_load_all((VOLCANO / "volcano-development-excerpt.yaml").read_text()))
    scheduler = [d for d in docs if d["kind"] == "ConfigMap" and "volcano-scheduler.conf" in d["data"]]
    assert len(docs) == 6 and len(scheduler) == 1
    none = tmp_path / "none.yaml"
    none.write_text(yaml.safe_dump_all([d for d in docs if d is not scheduler[0]]))
    with pytest.raises(ValueError, match=r"none.yaml: 5 YAML documents \(Namespace, Namespace, "
                                         r"ServiceAccount, ConfigMap, ServiceAccount\), of which 0"):
        load_config(none)
    two = tmp_path / "two.yaml"
    two.write_text(yaml.safe_dump_all(docs + scheduler))
    with pytest.raises(ValueError, match="of which 2 are ConfigMaps holding volcano-scheduler.conf"):
        load_config(two)
    # A repeated key in any document is refused, naming the file.
    dup = tmp_path / "dup.yaml"
    dup.write_text("kind: Namespace\n---\nkind: ConfigMap\nkind: ConfigMap\n")
    with pytest.raises(ValueError, match="dup.yaml: not valid YAML.*duplicate key 'kind'"):
        load_config(dup)


def test_unsupported_volcano_plugin_names_it_and_the_supported_ones(tmp_path, capsys):
    ci = VOLCANO / "volcano-scheduler-ci.conf"
    with pytest.raises(ValueError) as err:
        load_config(ci)
    message = str(err.value)
    assert str(ci) in message and 'unknown plugin "sla"' in message
    for supported in eng.plugins():
        assert supported in message
    assert main(["cycle", str(_scenario_file(tmp_path)), "--conf", str(ci)]) == 2
    assert 'unknown plugin "sla"' in capsys.readouterr().err


def test_errors_inside_the_configmap_text_name_file_and_key(tmp_path):
    configmap = yaml.safe_load((VOLCANO / "benchmark-gang-configmap.yaml").read_text())
    text = configmap["data"]["volcano-scheduler.conf"]
    bad = tmp_path / "cm.yaml"
    line = next(x for x in text.splitlines() if x.strip() == "- name: binpack")
    indent = " " * (len(line) - len(line.lstrip()) + 2)
    configmap["data"]["volcano-scheduler.conf"] = text.replace(
        line, f"{line}\n{indent}enabledJobOrder: false")
    bad.write_text(yaml.safe_dump(configmap))
    with pytest.raises(ValueError, match='unknown field "enabledJobOrder".*enableJobOrder'):
        load_config(bad)
    configmap["data"]["volcano-scheduler.conf"] = "tiers: [\n"
    bad.write_text(yaml.safe_dump(configmap))
    with pytest.raises(ValueError, match=r'cm.yaml: data "volcano-scheduler.conf": not valid YAML'):
        load_config(bad)


def test_registry_metadata_of_the_volcano_plugins():
    meta = {p["name"]: p for p in entries("plugins")}
    binpack = {p["name"]: p["default"] for p in meta["binpack"]["parameters"]}
    assert binpack["binpack.weight"] == 1 and binpack["binpack.cpu"] == 1
    assert binpack["binpack.resources"] == ""
    overcommit = {p["name"]: p["default"] for p in meta["overcommit"]["parameters"]}
    assert overcommit == {"overcommit-factor": 1.2}
    assert {"preemptable", "reclaimable"} <= set(meta["conformance"]["capabilities"])
    assert "enqueueable" in meta["overcommit"]["capabilities"]
