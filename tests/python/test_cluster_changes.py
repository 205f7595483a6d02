"""Cluster.usage_changes: a cheap feed of the nodes changed since a version, and
Cluster.node_device_use, the usage of named nodes only; UseReader follows both."""
import random
import threading

import pytest

from gpufleet import Cluster, Pod
from gpufleet.dra.legacy import UseReader, device_use


def gpu_node(name: str, count: int = 4) -> dict:
    return {"name": name, "cpu": "64", "memory": "256Gi",
            "gpus": {"count": count, "model": "A100", "memory": "16Gi"}}


def cluster(*names: str) -> Cluster:
    c = Cluster()
    for n in names:
        c.add_node(gpu_node(n))
    return c


def gpus(name: str, n: int = 1) -> Pod:
    return Pod(name, {"nvidia.com/gpu": str(n)})


def changed_by(c: Cluster, change) -> list[str] | None:
    """The nodes the feed names for `change`; the version must grow."""
    before, _ = c.usage_changes(0)
    change()
    after, nodes = c.usage_changes(before)
    assert after > before
    return nodes


def test_each_kind_of_change_moves_the_version_and_names_its_node() -> None:
    c = cluster("a", "b", "c")
    assert changed_by(c, lambda: c.add_node(gpu_node("d"))) == ["d"]
    assert changed_by(c, lambda: c.reserve(gpus("p"), "b")) == ["b"]
    assert changed_by(c, lambda: c.commit("p")) == ["b"]  # no usage moves; its allocation does
    assert changed_by(c, lambda: c.release("p")) == ["b"]
    c.reserve(gpus("q"), "c")
    assert changed_by(c, lambda: c.unreserve("q")) == ["c"]
    assert changed_by(c, lambda: c.set_device_health("a", 1, False)) == ["a"]
    assert changed_by(c, lambda: c.place(gpus("r", 2), nodes=["d"])) == ["d"]
    ann = {"ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "1024"}
    assert changed_by(c, lambda: c.restore_allocation(Pod("s", {"aliyun.com/gpu-mem": "1024"}), "c", ann)) == ["c"]
    # A removal shifts the nodes: a reader must read everything again.
    assert changed_by(c, lambda: c.remove_node("b")) is None


def test_the_feed_names_each_touched_node_once_in_the_order_first_touched() -> None:
    c = cluster("a", "b", "c", "d")
    start, _ = c.usage_changes(0)
    c.reserve(gpus("p"), "c")
    c.reserve(gpus("q"), "a")
    c.commit("p")
    c.release("q")
    version, nodes = c.usage_changes(start)
    assert nodes == ["c", "a"]
    assert c.usage_changes(version) == (version, [])


def test_reads_and_failed_changes_leave_the_version_alone() -> None:
    c = cluster("a", "b")
    c.reserve(gpus("p", 4), "a")
    version, _ = c.usage_changes(0)
    c.filter(gpus("x"), "a")
    c.score(gpus("x"), "b")
    c.plan(gpus("x"), "b")
    c.place(gpus("x"), commit=False, nodes=["a"])  # does not fit: nothing placed
    c.device_usage()
    c.node_device_use(["a", "b"])
    c.allocations()
    c.snapshot()
    c.check_invariants()
    c.copy()
    with pytest.raises(ValueError):
        c.reserve(gpus("p"), "b")  # the pod holds an allocation already
    with pytest.raises(KeyError):
        c.commit("nobody")
    with pytest.raises(ValueError):
        c.remove_node("a")  # a pod holds it
    assert c.usage_changes(version) == (version, [])


def test_a_version_from_elsewhere_or_too_old_asks_for_a_full_read() -> None:
    c = cluster("a", "b")
    version, _ = c.usage_changes(0)
    copy = c.copy()
    assert copy.usage_changes(version)[1] is None  # a copy keeps its own record
    assert cluster("a", "b").usage_changes(version)[1] is None
    assert c.usage_changes(version + 1)[1] is None  # not a version this cluster gave
    for i in range(3000):  # far more changes than the record keeps for two nodes
        c.reserve(gpus("p"), "a")
        c.release("p")
    assert c.usage_changes(version)[1] is None
    now, _ = c.usage_changes(0)
    assert c.usage_changes(now) == (now, [])


def test_bad_versions_are_refused_in_one_line() -> None:
    c = cluster("a")
    with pytest.raises(ValueError, match="since: -1 is not a version"):
        c.usage_changes(-1)
    with pytest.raises(TypeError):
        c.usage_changes(True)
    with pytest.raises(TypeError):
        c.usage_changes("1")
    assert c.usage_changes(1 << 200)[1] is None  # a number, but no version of this cluster


def test_node_device_use_is_device_use_for_the_named_nodes() -> None:
    c = cluster("a", "b", "c")
    c.reserve(gpus("p", 2), "b")
    ann = {"ALIYUN_COM_GPU_MEM_IDX": "3", "ALIYUN_COM_GPU_MEM_POD": "1024"}
    c.restore_allocation(Pod("s", {"aliyun.com/gpu-mem": "1024"}), "b", ann)
    whole = device_use(c)
    assert c.node_device_use(["b", "a", "zz"]) == [whole["b"], {}, None]
    assert whole["b"][("gpu", 3)] == (0, 1024 << 20)


def test_the_reader_reads_only_the_changed_nodes_and_nothing_when_none_changed() -> None:
    c = cluster("a", "b", "c")
    c.reserve(gpus("p"), "a")
    reader = UseReader()
    first = reader.read(c)
    assert first == device_use(c) and reader.changed is None
    kept = first["a"]

    asked = []

    class Counting:  # the Cluster, counting what the reader asks of it
        def __getattr__(self, name):
            asked.append(name)
            return getattr(c, name)

    assert reader.read(Counting()) == device_use(c) and reader.changed == set()
    assert asked == ["usage_changes"]
    c.reserve(gpus("q"), "c")
    asked.clear()
    assert reader.read(Counting()) == device_use(c) and reader.changed == {"c"}
    assert asked == ["usage_changes", "node_device_use"] and reader.use["a"] is kept
    c.commit("q")  # named by the feed, but its usage is the same: nothing changed
    assert reader.read(c) == device_use(c) and reader.changed == set()
    c.remove_node("b")
    assert reader.read(c) == device_use(c) and reader.changed is None


def test_a_reader_following_the_feed_while_threads_change_the_cluster_misses_nothing() -> None:
    names = [f"n{i}" for i in range(12)]
    c = cluster(*names)
    reader = UseReader()
    reader.read(c)
    partial_reads = 0
    done = threading.Event()

    def change(seed: int) -> None:
        rng = random.Random(seed)
        held: list[str] = []
        for k in range(300):
            if held and rng.random() < 0.45:
                c.release(held.pop(rng.randrange(len(held))))
                continue
            pod = f"t{seed}-{k}"
            try:
                c.reserve(gpus(pod, rng.randint(1, 2)), rng.choice(names))
            except ValueError:
                continue  # the node is full
            held.append(pod)
            if rng.random() < 0.5:
                c.commit(pod)

    def follow() -> None:
        nonlocal partial_reads
        while not done.is_set():
            reader.read(c)
            partial_reads += reader.changed is not None

    writers = [threading.Thread(target=change, args=(s,)) for s in range(4)]
    follower = threading.Thread(target=follow)
    follower.start()
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    follower.join()
    assert partial_reads > 0  # it followed the feed, not only full reads
    assert reader.read(c) == device_use(c) and reader.changed is not None
    assert sum(len(u) for u in reader.use.values()) > 0
