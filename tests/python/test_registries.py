"""Registry metadata from Python and the CLI's --list-* options."""
from __future__ import annotations

import pytest

from gpufleet.cli import main
from gpufleet.registries import KINDS, entries, format_listing, metadata


def _by_name(kind: str) -> dict:
    return {e["name"]: e for e in entries(kind)}


def test_every_registry_lists_names_with_declarations():
    meta = metadata()
    assert set(meta) == set(KINDS)
    for kind in KINDS:
        assert meta[kind], kind
        for e in meta[kind]:
            assert set(e) >= {"name", "description", "parameters", "capabilities"}
            for p in e["parameters"]:
                assert set(p) >= {"name", "type", "default", "help"}


def test_declarations_carry_defaults_types_and_capabilities():
    strategies = _by_name("strategies")
    assert strategies["random"]["parameters"][0] == {
        "name": "seed", "type": "int", "default": 0, "help": "generator seed (unsigned 64-bit)",
        "example": None}
    assert "random" in strategies["random"]["capabilities"]
    assert "random" not in strategies["binpack"]["capabilities"]
    actions = _by_name("actions")
    assert "places-tasks" in actions["allocate"]["capabilities"]
    assert "places-tasks" not in actions["enqueue"]["capabilities"]
    plugins = _by_name("plugins")
    assert "preemptable" in plugins["priority"]["capabilities"]
    weights = {p["name"]: p["default"] for p in plugins["nodeorder"]["parameters"]}
    assert {k: v for k, v in weights.items() if v is not None} == {
        "binpack": 1.0, "spread": 0.0, "leastrequested": 0.0}
    assert "leastrequested.weight" in weights  # Volcano's names, no default of their own
    policies = _by_name("policies")
    assert "needs-durations" in policies["sjf"]["capabilities"]
    durations = {p["name"]: p for p in policies["gittins"]["parameters"]}["durations"]
    assert durations["default"] is None and durations["example"] == [100, 500, 1000, 3000]


def test_unknown_registry_is_a_key_error():
    with pytest.raises(KeyError, match="unknown registry 'games'"):
        entries("games")


def test_listing_shows_parameters_with_defaults():
    text = format_listing("strategies")
    assert "random" in text and "seed: int = 0" in text


@pytest.mark.parametrize("argv, expected", [
    (["place", "--list-strategies"], ["binpack", "fgd", "integer_scores: bool = true"]),
    (["cycle", "--list-plugins"], ["nodeorder", "binpack: number = 1.0", "[node-score]"]),
    (["cycle", "--list-actions"], ["allocate", "jobtime", 'policy: string = "fifo"']),
    (["simulate", "--list-policies"], ["dlas-gpu", "queue_limits: list of numbers"]),
])
def test_cli_lists_every_registry(capsys, argv, expected):
    assert main(argv) == 0
    out = capsys.readouterr().out
    for want in expected:
        assert want in out, (argv, want)


def test_cli_without_scenario_or_listing_is_a_usage_error(capsys):
    assert main(["cycle"]) == 2
    assert "scenario file is required" in capsys.readouterr().err
