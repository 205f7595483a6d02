"""DraCluster.place without `nodes` asks one node per class of alike nodes; with an attached
Cluster, nodes whose devices pods (or claims) use there are classed by what that usage leaves.
On small random clusters with random pods and claims its answers are those of asking every
node in name order (place(nodes=...)): the same node, devices and score, for both strategies
and whether answers are remembered or not; and it never picks a GPU a pod holds."""
from __future__ import annotations

import random

import gpufleet
from gpufleet.dra.cluster import DraCluster
from gpufleet.dra.legacy import PSEUDO_POD_PREFIX
from test_dra_cluster import DRIVER, _claim

NODE_SHAPES = (2, 2, 4, 4, 4)  # GPUs per node: repeats make groups of alike nodes


def _slice(node: str, gpus: int, extra: int = 0) -> dict:
    """`gpus` GPUs the Cluster knows (by minor), and `extra` devices that are DRA's alone."""
    sl = {"kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"}, "spec": {
        "driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"gpu-{i}", "attributes": {
            "model": {"string": "H100"}, "type": {"string": "gpu"}, "minor": {"int": i},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci-{i // 2}"}}} for i in range(gpus)]}}
    sl["spec"]["devices"] += [{"name": f"dra-{i}", "attributes": {"model": {"string": "H100"}}} for i in range(extra)]
    return sl


def _world(rng: random.Random, strategy: str) -> tuple[DraCluster, gpufleet.Cluster, list[str]]:
    cl = gpufleet.Cluster()
    c = DraCluster(strategy=strategy, cluster=cl)
    c.apply({"kind": "DeviceClass", "metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    nodes = [f"n{i}" for i in range(rng.randint(3, 7))]
    for n in rng.sample(nodes, len(nodes)):  # added out of name order: ties go to name order
        gpus = rng.choice(NODE_SHAPES)
        cl.add_node({"name": n, "cpu": "64", "memory": "256Gi",
                     "gpus": {"count": gpus, "model": "H100", "memory": "80Gi"}})
        c.add_node(n)
        c.apply(_slice(n, gpus, rng.choice([0, 0, 1])))
    for i in range(rng.randint(0, 6)):  # pods asking through nvidia.com/gpu
        pod = gpufleet.Pod.from_dict({"name": f"p{i}", "requests": {"nvidia.com/gpu": rng.choice([1, 1, 2])}})
        alloc, _ = cl.place(pod, strategy=rng.choice(["binpack", "spread"]))
        if alloc is not None and rng.random() < 0.3:
            cl.release(f"p{i}")
    return c, cl, nodes


def _pod_gpus(cl: gpufleet.Cluster) -> set[tuple[str, int]]:
    return {(a.node, g.minor) for a in cl.allocations()
            if not a.pod.startswith(PSEUDO_POD_PREFIX) for g in a.devices}


def _same(a: tuple, b: tuple) -> None:
    (node_a, out_a), (node_b, out_b) = a, b
    assert (node_a, out_a.verdict, out_a.reason, out_a.score) == (node_b, out_b.verdict, out_b.reason, out_b.score)
    assert out_a.results == out_b.results


def test_place_answers_as_asking_every_node_with_pods_and_claims_about() -> None:
    for seed in range(80):
        rng = random.Random(seed)
        strategy = rng.choice(["pack", "first"])
        c, cl, nodes = _world(rng, strategy)
        for i in range(rng.randint(4, 10)):
            name = f"c{i}"
            c.apply(_claim(name, rng.choice([1, 1, 2, 3])))
            remember = rng.random() < 0.5
            fast = c.place([f"ml/{name}"], remember=remember)
            _same(fast, c.place([f"ml/{name}"], nodes=sorted(nodes)))
            node, out = fast
            if node is None:
                assert not out.ok and out.reason.startswith(f"0/{len(nodes)} nodes")
                continue
            minors = {int(r["device"].split("-")[1]) for r in out.results[0]["devices"]["results"]
                      if r["device"].startswith("gpu-")}
            assert not {(node, m) for m in minors} & _pod_gpus(cl), f"seed {seed}: a pod's GPU given"
            if rng.random() < 0.7:  # committed: held in the Cluster as well
                placed = c.place([f"ml/{name}"], commit=True)
                assert placed[0] == node
                assert (cl.allocation(f"dra:ml/{name}") is not None) == bool(minors)  # GPUs only
            if rng.random() < 0.3:  # a pod comes or goes between claims
                pod = gpufleet.Pod.from_dict({"name": f"q{seed}-{i}", "requests": {"nvidia.com/gpu": 1}})
                cl.place(pod)
            pods = sorted(a.pod for a in cl.allocations() if not a.pod.startswith(PSEUDO_POD_PREFIX))
            if pods and rng.random() < 0.3:
                cl.release(rng.choice(pods))
            held = [f"ml/c{k}" for k in range(i) if (c.claim(f"ml/c{k}").get("status") or {}).get("allocation")]
            if held and rng.random() < 0.2:  # a claim lets go
                c.release(rng.choice(held))
        cl.check_invariants()


def test_a_gang_lands_where_asking_every_node_lands_it() -> None:
    for seed in range(20):
        rng = random.Random(1000 + seed)
        c, cl, nodes = _world(rng, "pack")
        gang = []
        for i in range(rng.randint(2, 4)):
            c.apply(_claim(f"g{i}", rng.choice([1, 2])))
            gang.append([f"ml/g{i}"])
        fast = c.place_gang(gang)
        fast_claims = {n: c.claim(n).get("status") for pod in gang for n in pod}
        for pod in gang:  # undo, then the same gang by asking every node
            if fast_claims[pod[0]]:
                c.release(pod[0])
        slow = c.place_gang(gang, nodes=sorted(nodes))
        assert fast[0] == slow[0] and (fast[1] == "") == (slow[1] == "")
        if fast[0] is not None:
            for pod, node in zip(gang, fast[0]):
                minors = {int(r["device"].split("-")[1])
                          for r in c.claim(pod[0])["status"]["allocation"]["devices"]["results"]
                          if r["device"].startswith("gpu-")}
                assert not {(node, m) for m in minors} & _pod_gpus(cl)
        cl.check_invariants()


def test_without_a_cluster_place_answers_as_asking_every_node() -> None:
    for seed in range(40):
        rng = random.Random(2000 + seed)
        c = DraCluster(strategy=rng.choice(["pack", "first"]))
        c.apply({"kind": "DeviceClass", "metadata": {"name": "gpu"},
                 "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
        nodes = [f"n{i}" for i in range(rng.randint(3, 8))]
        for n in rng.sample(nodes, len(nodes)):
            c.add_node(n)
            c.apply(_slice(n, rng.choice(NODE_SHAPES)))
        committed = []
        for i in range(16):  # claims of a few shapes: remembered answers are read again
            c.apply(_claim(f"c{i}", rng.choice([1, 1, 2, 4])))
            fast = c.place([f"ml/c{i}"], remember=rng.random() < 0.8)
            _same(fast, c.place([f"ml/c{i}"], nodes=sorted(nodes)))
            if fast[0] is not None:
                c.commit(f"ml/c{i}", fast[1].results[0])
                committed.append(f"ml/c{i}")
            if committed and rng.random() < 0.3:  # a node goes back to an earlier group
                c.release(committed.pop(rng.randrange(len(committed))))


def test_nodes_that_pods_use_alike_are_asked_once(monkeypatch) -> None:
    """Eight alike nodes, a pod on one GPU of every other one: a claim is one question for the
    untouched nodes and one for those the pods use, not a question per node."""
    from gpufleet import _core
    cl = gpufleet.Cluster()
    c = DraCluster(cluster=cl)
    c.apply({"kind": "DeviceClass", "metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    nodes = [f"n{i}" for i in range(8)]
    for n in nodes:
        cl.add_node({"name": n, "cpu": "64", "memory": "256Gi", "gpus": {"count": 2, "model": "H100", "memory": "80Gi"}})
        c.add_node(n)
        c.apply(_slice(n, 2))
    for n in nodes[1::2]:
        cl.place(gpufleet.Pod.from_dict({"name": f"p-{n}", "requests": {"nvidia.com/gpu": 1}}), nodes=[n])
    c.apply(_claim("one"))
    c.apply(_claim("two", 2))
    solve, asked = _core.dra_solve_prepared, []
    monkeypatch.setattr(_core, "dra_solve_prepared", lambda qs, *a: (asked.extend(qs), solve(qs, *a))[1])
    fast = c.place(["ml/one"], remember=False)
    assert len(asked) == 2
    _same(fast, c.place(["ml/one"], nodes=nodes))
    asked.clear()
    assert c.place(["ml/two"], remember=False)[0] == "n0" and len(asked) == 2
    c.place(["ml/one"], nodes=["n3"], commit=True)   # the pod has gpu 0: the claim takes gpu 1
    assert c.claim("ml/one")["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-1"
    asked.clear()
    assert c.place(["ml/two"], remember=False)[0] == "n0" and len(asked) == 3   # n3 is full now


def test_the_usage_reader_reads_what_device_use_reads_as_the_cluster_changes() -> None:
    from gpufleet.dra.legacy import UseReader, device_use
    cl = gpufleet.Cluster()
    for n in ("a", "b", "c"):
        cl.add_node({"name": n, "cpu": "64", "memory": "256Gi", "gpus": {"count": 4, "model": "H100", "memory": "80Gi"}})
    reader = UseReader()
    assert reader.read(cl) == device_use(cl) == {} and reader.changed is None
    cl.place(gpufleet.Pod.from_dict({"name": "p", "requests": {"nvidia.com/gpu": 2}}), nodes=["b"])
    before = reader.read(cl)
    assert before == device_use(cl) and reader.changed == {"b"} and set(before) == {"b"}
    kept = before["b"]
    cl.place(gpufleet.Pod.from_dict({"name": "q", "requests": {"nvidia.com/gpu": 1}}), nodes=["c"])
    assert reader.read(cl) == device_use(cl) and reader.changed == {"c"}
    assert reader.use["b"] is kept   # unchanged usage: the same dict
    cl.release("p")
    assert reader.read(cl) == device_use(cl) and reader.changed == {"b"} and "b" not in reader.use
    # The last node replaced by one of the same name and GPU count: read in full again.
    cl.release("q")
    cl.remove_node("c")
    cl.add_node({"name": "c", "cpu": "64", "memory": "256Gi", "gpus": {"count": 4, "model": "A100", "memory": "40Gi"}})
    cl.place(gpufleet.Pod.from_dict({"name": "r", "requests": {"nvidia.com/gpu": 1}}), nodes=["a"])
    assert reader.read(cl) == device_use(cl) and set(reader.use) == {"a"}


def test_a_removed_node_is_no_longer_chosen() -> None:
    rng = random.Random(7)
    c, cl, nodes = _world(rng, "pack")
    c.apply(_claim("x"))
    first, _ = c.place(["ml/x"])
    c.remove_node(first)
    rest = [n for n in sorted(nodes) if n != first]
    again = c.place(["ml/x"])
    assert again[0] != first
    _same(again, c.place(["ml/x"], nodes=rest))
