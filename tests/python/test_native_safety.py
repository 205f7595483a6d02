"""Bindings that release the GIL, while other threads change their arguments
(docs/architecture.md, "Concurrency model").

A binding reads its Python arguments with the GIL held and then runs without it; another thread may
meanwhile replace the items of a list it was given, clear it, or change a dict. Whatever happens,
the call must answer for the arguments as they were when it started (or raise a documented error),
and never read memory the caller has since freed. The crash-prone cases run in a child interpreter
so that a crash fails the test instead of ending the run.
"""
from __future__ import annotations

import threading
import time

from gpufleet import Cluster

from conftest import gpu_node
from native_isolation import run_isolated

# Strings of 256 KiB live in their own mappings when glibc's mmap threshold is pinned below their
# size: freeing one unmaps it, so a view kept into it faults instead of reading stale bytes.
_UNMAP_FREED = {"MALLOC_MMAP_THRESHOLD_": "131072"}


def test_partition_nodes_and_host_priorities_keep_the_names_they_were_given():
    """The extender's two calls take views of the name strings; another thread replacing every
    item (the old strings freed), rotating or clearing the list while they wait for the lock and
    score must not crash them, and each answer must describe one state of the list: every node
    found, every stranger unknown, nothing answered under another entry's name."""
    out = run_isolated("""
        import sys, threading, time
        from gpufleet import Cluster, Pod
        from gpufleet._core import extender
        sys.setswitchinterval(1e-6)
        c = Cluster()
        NODES = [f"n{i}" for i in range(32)]
        for n in NODES:
            c.add_node({"name": n, "cpu": "8", "memory": "32Gi",
                        "gpus": {"count": 2, "model": "V100", "memory": "16Gi"}})
        KNOWN = set(NODES)
        pod = Pod("p", {"nvidia.com/gpu": "1"})
        def stranger(k):
            return "?" * (1 << 18) + str(k)
        names = NODES + [stranger(k) for k in range(8)]
        stop = threading.Event()

        def churn():
            k = 0
            while not stop.is_set():
                k += 1
                fresh = NODES + [stranger(8 * k + j) for j in range(8)]
                names[:] = fresh[k % 40:] + fresh[:k % 40]
                if k % 7 == 0:
                    names.clear()

        def hold_the_lock():
            k = 0
            while not stop.is_set():
                c.add_node({"name": f"x{k}", "cpu": "1", "memory": "1Gi"})
                c.remove_node(f"x{k}")
                k += 1

        threads = [threading.Thread(target=f) for f in (churn, hold_the_lock)]
        for t in threads:
            t.start()
        calls = 0
        deadline = time.monotonic() + 1.5
        try:
            while time.monotonic() < deadline:
                passed, failed, unresolvable, unknown = extender.partition_nodes(c, pod, names)
                found = passed + list(failed) + list(unresolvable)
                assert len(found) + len(unknown) in (0, 40), (len(found), len(unknown))
                assert all(n in KNOWN for n in found), "a stranger answered as a node"
                assert all(n.startswith("?") for n in unknown), "a node answered as unknown"
                assert len(found) in (0, 32)
                hosts = extender.host_priorities(c, pod, names)
                assert len(hosts) in (0, 40)
                for h in hosts:
                    assert h["Host"] in KNOWN or (h["Host"].startswith("?") and h["Score"] == 0)
                calls += 1
        finally:
            stop.set()
            for t in threads:
                t.join()
        print(calls)
        """, env=_UNMAP_FREED)
    assert int(out) > 0


def test_every_binding_that_releases_the_gil_survives_its_arguments_changing():
    """Each binding that takes a list, dict or array and releases the GIL is called again and
    again while a second thread changes that argument and a third holds the object's lock (so the
    call waits without the GIL). Each answer must fit the argument at some instant; the only
    errors allowed are the documented ValueError/KeyError for an argument caught half-changed."""
    out = run_isolated("""
        import sys, threading, time
        import numpy as np
        from gpufleet import Cluster, Pod, _core
        from gpufleet._core import extender
        from gpufleet.engine import Engine
        sys.setswitchinterval(1e-6)

        def node(name, gpus=2):
            return {"name": name, "cpu": "16", "memory": "64Gi",
                    "gpus": {"count": gpus, "model": "V100", "memory": "16Gi"}}

        c = Cluster()
        NODES = [f"n{i}" for i in range(8)]
        for n in NODES:
            c.add_node(node(n))
        pod = Pod("p", {"nvidia.com/gpu": "1"})
        names = list(NODES)
        pod_dict = {"name": "d", "requests": {"nvidia.com/gpu": "1"}}
        spec = node("spec")
        share = {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"}
        annotations = {"scheduling.koordinator.sh/device-allocated":
                       '{"gpu": [{"minor": 0, "resources": {"koordinator.sh/gpu-core": "50", '
                       '"koordinator.sh/gpu-memory-ratio": "50"}}]}'}
        pods = [Pod(f"m{i}", {"nvidia.com/gpu": "1"}) for i in range(4)]
        e = Engine()
        e.add_node(node("e0", 4))
        job = {"name": "j", "replicas": 2, "requests": {"cpu": "1", "nvidia.com/gpu": 1}}
        queue = {"name": "default", "weight": 1}
        conf = {"actions": "enqueue, allocate", "tiers": [{"plugins": ["priority", "gang"]},
                                                         {"plugins": ["predicates", "proportion"]}]}
        lp_a = [[1.0, 2.0], [3.0, 1.0]]
        submit = np.array([0.0, 1.0, 2.0])
        tree = [{"name": "q1", "quota": {"gpu": 2}}, {"name": "q2", "quota": {"gpu": 2}}]
        requests = {"q1": {"gpu": 3}, "q2": {"gpu": 1}}
        queue_names = ["q1", "q2", "q1"]
        from gpufleet.topology import rack_cluster, rack_levels
        racks = rack_cluster(blocks=1, racks=2, nodes_per_rack=2)
        levels = rack_levels()
        gang = {"name": "g", "groups": [{"name": "w", "count": 2,
                                         "requests": {"nvidia.com/gpu": 8}, "required": "rack"}]}
        def free_everything():
            for a in c.allocations():
                c.release(a.pod)

        def change_names(k):
            names[:] = NODES[k % 8:] + NODES[:k % 8]
            if k % 3 == 0:
                names[k % 8:] = ["ghost"]
            if k % 5 == 0:
                names.clear()
        def change_pod_dict(k):
            pod_dict["requests"] = {"nvidia.com/gpu": str(1 + k % 2)} if k % 2 else dict(share)
            if k % 9 == 0:
                pod_dict.pop("requests")
        def change_spec(k):
            spec["gpus"] = {"count": 1 + k % 3, "model": "V100", "memory": "16Gi"}
            if k % 4 == 0:
                spec["cpu"] = "many" if k % 8 == 0 else "16"
        def change_annotations(k):
            annotations["ALIYUN_COM_GPU_MEM_IDX"] = str(k % 2)
            if k % 3 == 0:
                annotations.pop("ALIYUN_COM_GPU_MEM_IDX")
        def change_pods(k):
            pods[:] = [Pod(f"m{k}-{i}", {"nvidia.com/gpu": "1"}) for i in range(k % 5)]
        def change_job(k):
            job["replicas"] = 1 + k % 3
            job["requests"] = {"cpu": "1", "nvidia.com/gpu": k % 2}
        def change_queue(k):
            queue["weight"] = 1 + k % 4
            if k % 5 == 0:
                queue["weight"] = -1
        def change_conf(k):
            conf["tiers"][0]["plugins"] = ["priority", "gang"] if k % 2 else ["gang"]
        def change_lp(k):
            lp_a[k % 2] = [float(k % 3), 1.0]
            if k % 4 == 0:
                lp_a[1] = [1.0]
        def change_tree(k):
            tree[1]["quota"] = {"gpu": k % 3}
            if k % 4 == 0:
                tree[1]["parent"] = "q2"   # a cycle: refused while it lasts
            else:
                tree[1].pop("parent", None)
        def change_requests(k):
            requests["q2"] = {"gpu": k % 4}
            if k % 5 == 0:
                requests["nowhere"] = {"gpu": 1}
            else:
                requests.pop("nowhere", None)
        def change_queue_names(k):
            queue_names[k % 3] = "q2" if k % 2 else ("ghost" if k % 7 == 0 else "q1")
        def change_gang(k):
            gang["groups"][0]["count"] = 1 + k % 3
            gang["groups"][0]["required"] = "spine" if k % 5 == 0 else "rack"
        def change_levels(k):
            levels["levels"] = levels["levels"][:1] if k % 2 else rack_levels()["levels"]
        def change_submit(k):
            submit[:] = [0.0, float(k % 3), -1.0 if k % 5 == 0 else 2.0]

        def check_filter(r):
            codes, reasons = r
            assert len(codes) == len(reasons)
        def check_partition(r):
            passed, failed, unresolvable, unknown = r
            assert len(passed) + len(failed) + len(unresolvable) + len(unknown) <= 8
        def placed_then_free(r):
            free_everything()
        def reserved_then_free(r):
            free_everything()
        def added_then_removed(r):
            c.remove_node("spec")
        def submitted_then_deleted(r):
            e.delete("j")

        CASES = [
            ("filter_nodes", lambda: c.filter_nodes(pod, names), change_names, check_filter),
            ("score_nodes", lambda: c.score_nodes(pod, names), change_names, lambda r: None),
            ("partition_nodes", lambda: extender.partition_nodes(c, pod, names), change_names, check_partition),
            ("host_priorities", lambda: extender.host_priorities(c, pod, names), change_names, lambda r: None),
            ("place(nodes=)", lambda: c.place(pod, "binpack", True, names), change_names, placed_then_free),
            ("place_many", lambda: c.place_many(pods), change_pods, placed_then_free),
            ("filter(dict pod)", lambda: c.filter(pod_dict, "n0"), change_pod_dict, lambda r: None),
            ("score(dict pod)", lambda: c.score(pod_dict, "n0"), change_pod_dict, lambda r: None),
            ("plan(dict pod)", lambda: c.plan(pod_dict, "n0"), change_pod_dict, lambda r: None),
            ("reserve(dict pod)", lambda: c.reserve(pod_dict, "n1"), change_pod_dict, reserved_then_free),
            ("add_node", lambda: c.add_node(spec), change_spec, added_then_removed),
            ("restore_allocation", lambda: c.restore_allocation(Pod("r", share), "n2", annotations),
             change_annotations, reserved_then_free),
            ("engine.add_node", lambda: e._native.add_node(spec), change_spec,
             lambda r: spec.update(name=f"spec{time.monotonic_ns()}")),
            ("engine.submit_job", lambda: e._native.submit_job(job), change_job, submitted_then_deleted),
            ("engine.update_queue", lambda: e._native.update_queue(queue), change_queue, lambda r: None),
            ("engine.configure", lambda: e._native.configure(conf), change_conf, lambda r: None),
            ("maximize_lp", lambda: _core.maximize_lp(lp_a, [4.0, 5.0], [1.0, 1.0]), change_lp,
             lambda r: None),
            ("sim_run", lambda: _core.sim_run([{"name": "v100", "count": 4}], np.arange(3), submit,
                                               np.array([1, 2, 1]), np.array([5.0, 3.0, 1.0]), None,
                                               None, _core.SimOptions("fifo", placement="")),
             change_submit, lambda r: None),
            ("queue_fair_shares", lambda: _core.queue_fair_shares(tree, {"gpu": 4}, requests),
             change_requests, lambda r: None),
            ("queue_fair_shares(tree)", lambda: _core.queue_fair_shares(tree, {"gpu": 4},
                                                                         {"q1": {"gpu": 3}}),
             change_tree, lambda r: None),
            ("simulate_queues", lambda: _core.simulate_queues(
                tree, 4, np.arange(3), submit, np.array([5.0, 3.0, 1.0]), np.array([1, 2, 1]),
                queue_names, np.zeros(3, dtype=np.int64)), change_queue_names, lambda r: None),
            ("place_gang", lambda: _core.place_gang(racks, levels, gang, "binpack", False),
             change_gang, lambda r: None),
            ("topology_domains", lambda: _core.topology_domains(racks, levels), change_levels,
             lambda r: None),
        ]

        def hold_the_locks(stop):
            k = 0
            while not stop.is_set():
                c.add_node(node(f"x{k}"))
                c.remove_node(f"x{k}")
                racks.add_node(node(f"x{k}"))   # the gang placer waits on this lock without the GIL
                racks.remove_node(f"x{k}")
                e.run_cycle()
                k += 1

        for name, call, change, check in CASES:
            stop = threading.Event()
            def churn():
                k = 0
                while not stop.is_set():
                    change(k)
                    k += 1
            threads = [threading.Thread(target=churn), threading.Thread(target=hold_the_locks, args=(stop,))]
            for t in threads:
                t.start()
            answered = refused = 0
            deadline = time.monotonic() + 0.15
            try:
                while time.monotonic() < deadline:
                    try:
                        r = call()
                    except (ValueError, KeyError) as err:
                        refused += 1
                        continue
                    check(r)
                    answered += 1
            finally:
                stop.set()
                for t in threads:
                    t.join()
            assert answered + refused > 0, name
            print(name, answered, refused)
        c.check_invariants()
        racks.check_invariants()
        e.cluster.check_invariants()
        """)
    assert len(out.splitlines()) == 23, out


def test_device_usage_arrays_have_one_length_while_nodes_are_added():
    """Every column of one device_usage() answer, the live views included, has one length (the
    device count when it was read) while another thread adds nodes, and each device's node index
    and node name name the same node."""
    c = Cluster()
    for i in range(4):
        c.add_node(gpu_node(f"n{i}", 4))
    stop = threading.Event()
    problems: list[str] = []

    def add_nodes() -> None:
        for k in range(3000):
            if stop.is_set():
                return
            c.add_node(gpu_node(f"a{k}", 1 + k % 4))
        stop.set()

    def read(copy: bool) -> None:
        while not stop.is_set():
            u = c.device_usage(copy=copy)
            lengths = {key: len(column) for key, column in u.items()}
            if len(set(lengths.values())) != 1:
                problems.append(f"copy={copy}: {lengths}")
            pairs = set(zip(u["node"].tolist(), u["node_name"]))
            if not len(pairs) == len(set(u["node_name"])) == len(set(u["node"].tolist())):
                problems.append(f"copy={copy}: node index and node name disagree")

    threads = [threading.Thread(target=add_nodes)] + [
        threading.Thread(target=read, args=(copy,)) for copy in (False, True, False)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    stop.set()
    for t in threads:
        t.join()
    assert problems == []
    live = c.device_usage()
    assert len(live["core_used"]) == c.num_devices == len(live["node"])
