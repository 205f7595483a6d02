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
            assert set(e) >= {"name", "description", "parameters", "traits", "capabilities"}
            for p in e["parameters"]:
                assert set(p) >= {"name", "type", "default", "help", "range"}


def test_declarations_carry_defaults_types_and_traits():
    strategies = _by_name("strategies")
    assert strategies["random"]["parameters"][0] == {
        "name": "seed", "type": "int", "default": 0, "help": "generator seed (unsigned 64-bit)",
        "example": None, "range": None}
    # Typed traits, with the display words derived from them.
    assert strategies["random"]["traits"] == {"deterministic": False, "concurrent_safe": False}
    assert strategies["binpack"]["traits"] == {"deterministic": True, "concurrent_safe": True}
    assert strategies["fgd"]["traits"] == {"deterministic": True, "concurrent_safe": False}
    assert strategies["binpack"]["capabilities"] == ["concurrent-safe", "deterministic"]
    assert strategies["random"]["capabilities"] == []
    actions = _by_name("actions")
    assert actions["allocate"]["traits"] == {"places_tasks": True, "evicts": False,
                                             "admits_jobs": False, "needs": []}
    assert actions["enqueue"]["traits"]["admits_jobs"] is True
    assert actions["preempt"]["traits"]["needs"] == ["preemptable"]
    assert "places-tasks" in actions["allocate"]["capabilities"]
    assert "places-tasks" not in actions["enqueue"]["capabilities"]
    assert "needs:overused" in actions["reclaim"]["capabilities"]
    plugins = _by_name("plugins")
    # A plugin's answers are what it registers on a session, observed, not declared.
    assert plugins["priority"]["answers"] == ["job-order", "task-order", "preemptable"]
    assert plugins["reservation"]["answers"] == ["target-job"]
    assert plugins["reservation"]["traits"] == {"needs": ["job-ready"]}
    assert plugins["reservation"]["capabilities"] == ["target-job", "needs:job-ready"]
    weights = {p["name"]: p["default"] for p in plugins["nodeorder"]["parameters"]}
    assert {k: v for k, v in weights.items() if v is not None} == {
        "binpack": 1.0, "spread": 0.0, "leastrequested": 0.0}
    assert "leastrequested.weight" in weights  # Volcano's names, no default of their own
    policies = _by_name("policies")
    assert policies["sjf"]["traits"] == {"needs_durations": True, "preemptive": False}
    assert "needs-durations" in policies["sjf"]["capabilities"]
    assert policies["fifo"]["traits"] == {"needs_durations": False, "preemptive": False}
    durations = {p["name"]: p for p in policies["gittins"]["parameters"]}["durations"]
    assert durations["default"] is None and durations["example"] == [100, 500, 1000, 3000]


def test_parameter_ranges_are_declared_and_checked_before_the_factory():
    ranges = {(kind, e["name"], p["name"]): p["range"]
              for kind in KINDS for e in entries(kind) for p in e["parameters"]}
    assert ranges[("strategies", "topology", "domain_weight")] == "in [0, 1]"
    assert ranges[("plugins", "binpack", "binpack.cpu")] == ">= 0"
    assert ranges[("plugins", "overcommit", "overcommit-factor")] == "finite, >= 1"
    assert ranges[("policies", "gavel-lp", "round_duration")] == "> 0"
    assert ranges[("policies", "las", "service")] == 'one of "gpu_time", "time"'
    from gpufleet import Cluster
    with pytest.raises(ValueError, match=r'topology: "domain_weight" must be in \[0, 1\], got 2'):
        Cluster().place({"name": "p", "requests": {"cpu": "1"}}, strategy="topology(domain_weight=2)")
    from gpufleet.sim import policy_spec
    with pytest.raises(ValueError, match='las: "service" must be one of "gpu_time", "time", '
                                         'got "wall"'):
        policy_spec("las", service="wall")


def test_unknown_registry_is_a_key_error():
    with pytest.raises(KeyError, match="unknown registry 'games'"):
        entries("games")


def test_listing_shows_parameters_with_defaults_and_ranges():
    text = format_listing("strategies")
    assert "random" in text and "seed: int = 0" in text
    assert "domain_weight: number = 0.0 (in [0, 1])" in text


@pytest.mark.parametrize("argv, expected", [
    (["place", "--list-strategies"], ["binpack", "fgd", "integer_scores: bool = true"]),
    (["cycle", "--list-plugins"], ["nodeorder", "binpack: number = 1.0 (finite, >= 0)", "[node-score]"]),
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
