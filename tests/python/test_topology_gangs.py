"""Gangs placed by network topology from Python: levels from labels, the anchors' objects read
unchanged (Kueue's and KAI's Topology, Volcano's HyperNodes), the NVLink clique level, bad input
refused in one line with the cluster unchanged, binding all or none, many threads on one cluster,
and the stream driver the notebook compares fit rules with."""
from __future__ import annotations

import threading

import pytest

from gpufleet import Cluster
from gpufleet.topology import (
    BLOCK_LABEL,
    NVLINK_CLIQUE_LABEL,
    RACK_LABEL,
    StreamJob,
    domains,
    make_stream,
    place_gang,
    rack_cluster,
    rack_levels,
    run_stream,
)


def gang(count: int, gpus: int = 8, **constraint) -> dict:
    return {"name": "train", "groups": [{"name": "w", "count": count,
                                         "requests": {"nvidia.com/gpu": gpus}, **constraint}]}


def test_required_rack_keeps_the_gang_in_one_rack_and_commit_binds_it():
    c = rack_cluster(blocks=1, racks=2, nodes_per_rack=2)
    r = place_gang(c, rack_levels(), gang(2, required="rack"), commit=True)
    assert r["placed"], r["reason"]
    assert r["groups"][0]["level"] == "rack"
    nodes = {p["node"] for p in r["groups"][0]["pods"]}
    assert len({n.rsplit("-", 1)[0] for n in nodes}) == 1
    assert len(c.allocations()) == 2
    # A rack holds two 8-GPU pods: three fit no rack, and the reason names the level.
    r = place_gang(c, rack_levels(), gang(3, required="rack"))
    assert not r["placed"]
    assert r["reason"] == "topology: no rack domain takes the gang: 3 pods (the most one takes is 2)"
    c.check_invariants()


def test_kueue_and_kai_topology_objects_are_read_unchanged():
    c = rack_cluster(blocks=2, racks=1, nodes_per_rack=2)
    kueue = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
             "metadata": {"name": "default"},
             "spec": {"levels": [{"nodeLabel": BLOCK_LABEL}, {"nodeLabel": RACK_LABEL}]}}
    # Kueue names levels by their label; its annotation picks the level.
    g = gang(2)
    g["groups"][0]["annotations"] = {"kueue.x-k8s.io/podset-required-topology": BLOCK_LABEL}
    r = place_gang(c, kueue, g)
    assert r["placed"] and r["groups"][0]["level"] == BLOCK_LABEL
    g["groups"][0]["annotations"] = {"kai.scheduler/topology-required-placement": RACK_LABEL}
    assert place_gang(c, kueue, g)["placed"]


def test_volcano_hyper_nodes_are_read_unchanged():
    c = rack_cluster(blocks=1, racks=2, nodes_per_rack=2)

    def hn(name, tier, members):
        return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                "metadata": {"name": name}, "spec": {"tier": tier, "members": members}}

    objs = [
        hn("s0", 1, [{"type": "Node", "selector": {"regexMatch": {"pattern": "b0-r0-.*"}}}]),
        hn("s1", 1, [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {RACK_LABEL: "b0-r1"}}}}]),
        hn("spine", 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": "s0"}}},
                        {"type": "HyperNode", "selector": {"exactMatch": {"name": "s1"}}}]),
    ]
    topo = {"hyper_nodes": {"apiVersion": "v1", "kind": "List", "items": objs}}
    d = domains(c, topo)
    assert set(d["level"]) == {"tier-2", "tier-1"}
    assert d.attrs["outside"] == []
    r = place_gang(c, topo, gang(2, required="tier-1"))
    assert r["placed"] and r["groups"][0]["domain"] in ("spine/s0", "spine/s1")
    # Volcano's networkTopology on the gang: hard with highestTierAllowed, or soft.
    def volcano(mode: str, tier: int, count: int) -> dict:
        g = gang(count)
        g["networkTopology"] = {"mode": mode, "highestTierAllowed": tier}
        return place_gang(c, topo, g)

    assert volcano("hard", 1, 2)["groups"][0]["level"] == "tier-1"
    tight = volcano("hard", 1, 3)
    assert not tight["placed"] and "no tier-1 domain" in tight["reason"]
    assert volcano("hard", 2, 3)["groups"][0]["level"] == "tier-2"
    assert volcano("soft", 1, 3)["placed"]
    with pytest.raises(ValueError, match="networkTopology mode firm"):
        volcano("firm", 1, 1)


def test_nvlink_clique_label_is_a_level():
    c = Cluster()
    for i in range(4):
        c.add_node({"name": f"gb{i}", "cpu": "64", "memory": "512Gi",
                    "gpus": {"count": 4, "model": "GB200", "memory": "180Gi"},
                    "labels": {NVLINK_CLIQUE_LABEL: "a1b2c3.1" if i < 2 else "a1b2c3.2"}})
    topo = {"levels": [{"name": "nvlink", "label": NVLINK_CLIQUE_LABEL}]}
    r = place_gang(c, topo, gang(2, gpus=4, required="nvlink"), commit=True)
    assert r["placed"]
    assert {p["node"] for p in r["groups"][0]["pods"]} in ({"gb0", "gb1"}, {"gb2", "gb3"})


@pytest.mark.parametrize("topo,gang_doc,message", [
    (rack_levels(), gang(1, required="spine"), "unknown topology level spine (levels: block, rack)"),
    ({"levels": [{"name": "rack", "label": "x"}, {"name": "rack", "label": "y"}]}, gang(1),
     "level rack given twice"),
    ({"hyper_nodes": [
        {"metadata": {"name": "a"}, "spec": {"tier": 2, "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": "b"}}}]}},
        {"metadata": {"name": "b"}, "spec": {"tier": 3, "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": "a"}}}]}},
    ]}, gang(1), "HyperNode cycle: a -> b -> a"),
    ({"hyper_nodes": [
        {"metadata": {"name": "r1"}, "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "b0-r0-n0"}}}]}},
        {"metadata": {"name": "r2"}, "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "b0-.*"}}}]}},
    ]}, gang(1), "node b0-r0-n0 is a member of two HyperNodes: r1 and r2"),
])
def test_bad_topology_input_is_a_one_line_error_and_changes_nothing(topo, gang_doc, message):
    c = rack_cluster(blocks=1, racks=1, nodes_per_rack=2)
    before = c.snapshot()
    with pytest.raises(ValueError) as err:
        place_gang(c, topo, gang_doc, commit=True)
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    assert c.snapshot() == before


def test_many_threads_placing_gangs_never_overcommit():
    c = rack_cluster(blocks=1, racks=4, nodes_per_rack=4)
    placed: list[dict] = []
    lock = threading.Lock()

    def worker(k: int) -> None:
        for i in range(6):
            g = gang(2, required="rack")
            g["name"] = f"t{k}-{i}"
            r = place_gang(c, rack_levels(), g, commit=True)
            if r["placed"]:
                with lock:
                    placed.append(r)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 16 nodes of one 8-GPU pod each: exactly 8 gangs of two fit, each inside one rack.
    assert len(placed) == 8
    assert len(c.allocations()) == 16
    for r in placed:
        racks = {p["node"].rsplit("-", 1)[0] for p in r["groups"][0]["pods"]}
        assert len(racks) == 1
    c.check_invariants()


def test_stream_starts_every_job_with_each_fit():
    jobs = make_stream(60, seed=3, mean_gap=30.0, mean_duration=600.0, gang_gpus=(8, 16, 32, 64))
    assert any(j.pods > 1 for j in jobs) and any(j.gpus == 1 for j in jobs)
    for fit in ("best-fit", "fragmentation"):
        res = run_stream(jobs, fit=fit, blocks=1, racks=4, nodes_per_rack=8, large=64)
        assert res.jobs["start"].notna().all(), fit
        assert (res.jobs["wait"] >= 0).all()
    with pytest.raises(ValueError, match="unknown fit"):
        run_stream(jobs, fit="tightest")


def test_stream_job_counts_its_gpus():
    assert StreamJob("g", 0.0, 1.0, pods=4, gpus_per_pod=8).gpus == 32


def test_simulate_with_racks_changes_where_jobs_run_never_when():
    import pandas as pd

    from gpufleet.sim import simulate

    jobs = pd.DataFrame({"job_id": range(30), "submit_time": [30.0 * i for i in range(30)],
                         "num_gpu": [16 if i % 5 == 0 else 1 + i % 8 for i in range(30)],
                         "duration": [600.0 + 37 * (i % 7) for i in range(30)]})
    cluster = {"h100": {"count": 64, "gpus_per_node": 8}}
    plain = simulate(jobs, cluster, "fifo")
    racked = simulate(jobs, cluster, "fifo", racks=(2, 2))
    assert plain.jobs["jct"].tolist() == racked.jobs["jct"].tolist()
    with pytest.raises(ValueError, match="nodes per rack"):
        simulate(jobs, cluster, "fifo", racks=(-1, 0))


def test_engine_places_a_topology_job_in_one_rack():
    from gpufleet.engine import Engine, default_config

    config = default_config()
    config["tiers"][-1]["plugins"].append(
        {"name": "gang-topology", "arguments": {"levels": f"block={BLOCK_LABEL}, rack={RACK_LABEL}"}})
    eng = Engine(config)
    for b, r, n in [(0, r, n) for r in range(2) for n in range(2)]:
        name = f"b{b}-r{r}-n{n}"
        eng.add_node({"name": name, "cpu": "64", "memory": "512Gi",
                      "gpus": {"count": 8, "model": "H100", "memory": "80Gi"},
                      "labels": {BLOCK_LABEL: f"b{b}", RACK_LABEL: f"b{b}-r{r}"}})
    eng.submit(name="small", replicas=1, requests={"nvidia.com/gpu": 1},
               node_selector={RACK_LABEL: "b0-r0"})
    eng.run_cycle()
    eng.submit(name="train", replicas=2, requests={"nvidia.com/gpu": 8}, topology={"required": "rack"})
    r = eng.run_cycle()
    nodes = set(r.binds[r.binds.job == "train"].node)
    assert nodes == {"b0-r1-n0", "b0-r1-n1"}
    eng.submit(name="wide", replicas=3, requests={"nvidia.com/gpu": 8}, topology={"required": "rack"})
    r = eng.run_cycle()
    assert "no rack domain takes the gang: 3 pods" in r.pending["wide"]
