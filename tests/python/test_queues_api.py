"""gpufleet.queues and queue trees through the Engine and the CLI: KAI, Kueue and Volcano queue
objects read unchanged, fair shares and DRS values as the anchors compute them, bad trees refused
with the engine unchanged, and the multi-tenant simulation."""
from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpufleet import queues
from gpufleet.cli import main
from gpufleet.engine import Engine

DATA = Path(__file__).parent / "data" / "queues"


def test_reads_kai_kueue_and_volcano_objects():
    kueue = queues.read_queue_objects(DATA / "kueue-cohort.yaml")
    assert [q["name"] for q in kueue] == ["team-a", "team-b", "org"]  # the implicit cohort last
    assert kueue[0]["parent"] == "org" and kueue[0]["quota"] == {"gpu": 4.0}
    assert kueue[0]["reclaim_within_cohort"] == "Any"
    kai = {q["name"]: q for q in queues.read_queue_objects(DATA / "kai-departments.yaml")}
    assert kai["team-nlp"]["parent"] == "dept-ml"
    assert kai["team-nlp"]["over_quota_weight"] == {"gpu": 2.0}
    assert kai["team-nlp"]["limit"] == {"gpu": "unlimited"}
    volcano = {q["name"]: q for q in queues.read_queue_objects(DATA / "volcano-queues.yaml")}
    assert "parent" not in volcano["eng"]  # Volcano's root is the top
    assert volcano["eng"]["guarantee"] == {"gpu": 4.0} and volcano["eng"]["limit"] == {"gpu": 8.0}
    for specs in (kueue, list(kai.values()), list(volcano.values())):
        queues.check_tree(specs)


def test_bad_trees_get_one_line_errors(tmp_path):
    cases = [
        ([{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}], "form a cycle of parents"),
        ([{"name": "p", "guarantee": {"gpu": 2}, "quota": {"gpu": 2}},
          {"name": "c", "parent": "p", "guarantee": {"gpu": 4}, "quota": {"gpu": 4}}],
         "queue c: gpu guarantee 4 is above its parent p's guarantee 2"),
        ([{"name": "solo", "quota": {"gpu": 2}, "borrowing_limit": {"gpu": 1}}],
         "queue solo: gpu borrowing limit needs a cohort"),
    ]
    for specs, message in cases:
        with pytest.raises(ValueError, match=message) as e:
            queues.check_tree(specs)
        assert "\n" not in str(e.value)
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(ValueError, match=r"bad.yaml: .*is not a queue"):
        queues.read_queue_objects(bad)


def test_fair_shares_restate_kai_division():
    # KAI's "distributes remainder between queues based on largest remaining": 11 GPUs, deserved
    # 2 each, over-quota weights 1 and 4: 7 over quota is 1.4 and 5.6, so 3 and 8.
    specs = [{"name": "q1", "quota": {"gpu": 2}, "over_quota_weight": {"gpu": 1}},
             {"name": "q2", "quota": {"gpu": 2}, "over_quota_weight": {"gpu": 4}}]
    fs = queues.fair_shares(specs, {"gpu": 11}, {"q1": {"gpu": 10}, "q2": {"gpu": 10}}, "kai")
    assert fs.loc["q1", "gpu"] == 3 and fs.loc["q2", "gpu"] == 8
    # Time-aware: equal weights, past usage 0.8 and 0.2 with k = 1 move the split to 2 : 8.
    specs = [{"name": "q1"}, {"name": "q2"}]
    fs = queues.fair_shares(specs, {"gpu": 10}, {"q1": {"gpu": 10}, "q2": {"gpu": 10}}, "kai",
                            usage={"q1": {"gpu": 0.8}, "q2": {"gpu": 0.2}}, k_value=1)
    assert (fs.loc["q1", "gpu"], fs.loc["q2", "gpu"]) == (2, 8)


def test_dominant_resource_share_restates_kueue():
    # Kueue's "usage above nominal": nominal 5 of a lendable 10, using 7 -> 200 (thousandths).
    specs = [{"name": "cohort"},
             {"name": "cq", "parent": "cohort", "quota": {"gpu": 5}},
             {"name": "lender", "parent": "cohort", "quota": {"gpu": 5}}]
    drs = queues.dominant_resource_shares(specs, {"cq": {"gpu": 7}})
    assert math.floor(drs["cq"] * 1000 + 1e-9) == 200 and drs["lender"] == 0
    specs[1]["weight"] = 0.5
    assert math.floor(queues.dominant_resource_shares(specs, {"cq": {"gpu": 7}})["cq"] * 1000 + 1e-9) == 400
    specs[1]["weight"] = 0
    assert math.isinf(queues.dominant_resource_shares(specs, {"cq": {"gpu": 7}})["cq"])


def _tree_engine() -> Engine:
    eng = Engine(DATA / "tree-conf.yaml")
    for n in ("n1", "n2"):
        eng.add_node({"name": n, "cpu": "32", "memory": "256Gi",
                      "gpus": {"count": 4, "model": "A100", "memory": "80Gi"}})
    eng.load_queues(DATA / "kueue-cohort.yaml")
    return eng


def test_engine_reclaims_a_lent_quota():
    eng = _tree_engine()
    assert set(eng.queues()["queue"]) == {"default", "org", "team-a", "team-b"}
    assert dict(zip(eng.queues()["queue"], eng.queues()["parent"]))["team-a"] == "org"
    eng.submit(name="b", queue="team-b", replicas=8, min_available=1, requests={"nvidia.com/gpu": 1})
    assert len(eng.run_cycle().binds) == 8  # team-b borrows the idle quota of team-a
    eng.submit(name="a", queue="team-a", replicas=4, requests={"nvidia.com/gpu": 1})
    r = eng.run_cycle()
    assert len(r.evictions) == 4 and set(r.evictions["job"]) == {"b"}
    assert r.binds["job"].tolist() == ["a"] * 4
    shares = r.queues.set_index("queue")
    assert shares.loc["team-a", "deserved_gpu"] == 4 and shares.loc["team-b", "deserved_gpu"] == 4


def test_engine_refuses_bad_trees_and_changes_nothing():
    eng = _tree_engine()
    before = eng.queues().to_dict("records")
    with pytest.raises(ValueError, match="form a cycle of parents"):
        eng.load_queues([{"name": "x", "parent": "y"}, {"name": "y", "parent": "x"}])
    with pytest.raises(ValueError, match="borrowing limit needs a cohort"):
        eng.add_queue({"name": "z", "quota": {"gpu": 1}, "borrowing_limit": {"gpu": 1}})
    with pytest.raises(ValueError, match="queue org has child queues"):
        eng.submit(name="j", queue="org", replicas=1, requests={"nvidia.com/gpu": 1})
    assert eng.queues().to_dict("records") == before


def test_cli_cycle_reads_queue_objects(capsys):
    code = main(["cycle", str(DATA / "tree-scenario.yaml"), "--conf", str(DATA / "tree-conf.yaml"),
                 "--queues", str(DATA / "kueue-cohort.yaml"), "-o", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    cycle = out["cycles"][0]
    assert sorted(b["job"] for b in cycle["binds"]) == ["a-train", "a-train"]
    assert len(cycle["evictions"]) == 2


def test_inner_queues_report_what_their_subtree_holds(capsys):
    """Only leaves hold jobs: an inner queue's own allocation stays 0 and its subtree's is the sum
    over every queue below it (two levels down here); the share divides the subtree's by the
    deserved. The CLI prints that sum as GPU IN SUBTREE."""
    eng = Engine(DATA / "tree-conf.yaml")
    eng.add_node({"name": "n1", "cpu": "32", "memory": "256Gi",
                  "gpus": {"count": 8, "model": "A100", "memory": "80Gi"}})
    eng.load_queues([{"name": "org", "quota": {"gpu": 8}},
                     {"name": "dept", "parent": "org", "quota": {"gpu": 6}},
                     {"name": "team-a", "parent": "dept", "quota": {"gpu": 3}},
                     {"name": "team-b", "parent": "dept", "quota": {"gpu": 3}},
                     {"name": "team-c", "parent": "org", "quota": {"gpu": 2}}])
    for job, queue, gpus in (("a", "team-a", 3), ("b", "team-b", 2), ("c", "team-c", 1)):
        eng.submit(name=job, queue=queue, replicas=gpus, requests={"cpu": "1", "nvidia.com/gpu": 1})
    r = eng.run_cycle()
    assert len(r.binds) == 6
    shares = r.queues.set_index("queue")
    own, subtree = shares["allocated_gpu"].to_dict(), shares["subtree_allocated_gpu"].to_dict()
    assert own == {"default": 0, "org": 0, "dept": 0, "team-a": 3, "team-b": 2, "team-c": 1}
    assert subtree == {"default": 0, "org": 6, "dept": 5, "team-a": 3, "team-b": 2, "team-c": 1}
    assert shares.loc["org", "subtree_allocated_cpu"] == 6000
    for name in ("org", "dept"):
        assert shares.loc[name, "share"] == pytest.approx(subtree[name] / shares.loc[name, "deserved_gpu"])
    record = {q["queue"]: q for q in r.to_dict()["queues"]}
    assert record["dept"]["subtree_allocated"]["gpu"] == 5 and record["dept"]["allocated"]["gpu"] == 0

    assert main(["cycle", str(DATA / "tree-scenario.yaml"), "--conf", str(DATA / "tree-conf.yaml"),
                 "--queues", str(DATA / "kueue-cohort.yaml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("QUEUE"))
    assert re.split(r"\s{2,}", header)[:4] == ["QUEUE", "WEIGHT", "GPU ALLOCATED", "GPU IN SUBTREE"]
    org = next(line for line in lines if line.startswith("org ")).split()
    assert org[2:4] == ["0", "8"]  # the cohort holds no job; its ClusterQueues hold 2 + 6


def _trace(n: int = 300, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "job_id": np.arange(n), "submit_time": np.sort(rng.uniform(0, 86400, n)),
        "num_gpu": rng.choice([1, 2, 4], n), "duration": rng.uniform(600, 7200, n),
        "model_name": "unknown", "team": rng.choice(["team-nlp", "team-vision"], n, p=[0.7, 0.3]),
    })


def test_simulate_queues_reports_jobs_shares_and_summary():
    specs = queues.read_queue_objects(DATA / "kai-departments.yaml")
    r = queues.simulate_queues(_trace(), specs, gpus=8, queue_column="team", interval=60)
    assert r.jobs["end"].notna().all() and (r.jobs["start"] >= r.jobs["submit_time"]).all()
    assert (r.jobs["jct"] >= r.jobs["duration"] - 1e-6).all()
    assert set(r.summary.index) == {"team-nlp", "team-vision"}
    totals = r.shares[r.shares["queue"] == "dept-ml"]
    assert (totals["held"] <= 8).all()
    assert r.preemptions == r.jobs["preemptions"].sum()
    with pytest.raises(KeyError, match="no queue nowhere"):
        queues.simulate_queues(_trace().assign(team="nowhere"), specs, gpus=8, queue_column="team")


def test_simulations_in_threads_match_a_serial_run():
    specs = queues.read_queue_objects(DATA / "kai-departments.yaml")
    trace = _trace(200)
    want = queues.simulate_queues(trace, specs, gpus=8, queue_column="team", k_value=1,
                                  half_life=3600).jobs["end"].to_numpy()
    got: list[np.ndarray] = []
    def run() -> None:
        got.append(queues.simulate_queues(trace, specs, gpus=8, queue_column="team", k_value=1,
                                          half_life=3600).jobs["end"].to_numpy())
    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and all(np.array_equal(g, want) for g in got)


def test_scenarios_may_list_queue_objects():
    from gpufleet.engine import engine_from_scenario

    scenario = {
        "nodes": [{"name": "n1", "cpu": "8", "memory": "64Gi",
                   "gpus": {"count": 8, "model": "A100", "memory": "80Gi"}}],
        "queues": [
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
             "metadata": {"name": "eng-train"},
             "spec": {"parent": "eng", "deserved": {"nvidia.com/gpu": 6}}},
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "eng"},
             "spec": {"parent": "root", "deserved": {"nvidia.com/gpu": 8}, "capability": {"nvidia.com/gpu": 8}}},
        ],
        "jobs": [{"name": "t", "queue": "eng-train", "replicas": 2, "requests": {"nvidia.com/gpu": 1}}],
    }
    eng = engine_from_scenario(scenario, "<test>", DATA / "tree-conf.yaml")
    parents = dict(zip(eng.queues()["queue"], eng.queues()["parent"]))
    assert parents["eng-train"] == "eng" and parents["eng"] == ""  # children listed first is fine


def test_queue_simulation_at_unix_second_clocks_matches_one_from_zero():
    # Finishing times compare relative to the first arrival, so a trace in Unix seconds (about
    # 1.7e9) gives the same job times as the same trace starting at 0.
    specs = queues.read_queue_objects(DATA / "kai-departments.yaml")
    trace = _trace(60).assign(duration=lambda d: d["duration"].round(0) + 0.25)
    base = queues.simulate_queues(trace, specs, gpus=8, queue_column="team")
    unix = queues.simulate_queues(trace.assign(submit_time=trace["submit_time"] + 1.7e9), specs,
                                  gpus=8, queue_column="team")
    assert unix.jobs["jct"].to_numpy() == pytest.approx(base.jobs["jct"].to_numpy(), abs=1e-3)
    assert (unix.jobs["end"] - unix.jobs["start"] >= unix.jobs["duration"] - 1e-3).all()
