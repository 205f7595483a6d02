"""Many Python threads on one Cluster or one Engine (docs/architecture.md, "Concurrency model").

Each test starts its threads together, asserts the accounting's invariants and that no call raised
anything but the documented errors, and compares with a serial run of what the threads committed:
- threads placing on shared cards (where the order decides the devices) must leave exactly the
  pods they were told are placed, on cards whose usage adds up;
- threads placing on their own nodes (where only each thread's own order matters) must give
  exactly the placements of a serial replay of each thread's operations;
- readers racing one writer must only ever see states the writer's serial run passes through;
- separate clusters placing with fgd or random in parallel must place as one serial cluster does;
- engine changes and cycles recorded in commit order must replay to the same cluster and jobs.
"""
from __future__ import annotations

import sys
import threading
from collections.abc import Callable

import numpy as np
import pytest

from gpufleet import Cluster, Pod
from gpufleet._core import extender
from gpufleet.engine import Engine, register_plugin

import conftest
from conftest import gpu_node


@pytest.fixture(autouse=True)
def frequent_thread_switches():
    """Python threads switch every microsecond instead of every 5 ms, so calls interleave."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def run_threads(n: int, body: Callable[[int], None], timeout: float = 60.0) -> None:
    """Runs body(0) .. body(n-1) on n threads released together; re-raises the first error."""
    start = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            start.wait()
            body(i)
        except BaseException as e:  # noqa: BLE001 - re-raised below with the thread's traceback
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "threads still running: a deadlock?"
    if errors:
        raise errors[0]


def pod(name: str, k: int, selector: dict[str, str] | None = None) -> Pod:
    """A whole-GPU pod or a share of one GPU (25..55 %), by k."""
    if k % 3 == 0:
        requests = {"cpu": "1", "nvidia.com/gpu": "1"}
    else:
        share = str(25 + 10 * (k % 4))
        requests = {"cpu": "1", "koordinator.sh/gpu-core": share, "koordinator.sh/gpu-memory-ratio": share}
    return Pod(name, requests, node_selector=selector)


def cluster_of(nodes: int, owners: int = 0) -> Cluster:
    """`nodes` nodes of 4 GPUs; with `owners`, node i is labelled owner=t<i % owners>."""
    c = Cluster()
    for i in range(nodes):
        extra = {"labels": {"owner": f"t{i % owners}"}} if owners else {}
        c.add_node(gpu_node(f"n{i}", 4, **extra))
    return c


def placements(c: Cluster) -> dict[str, tuple]:
    """pod -> (node, ((type, minor, core, memory), ...)): the allocations without their times."""
    return {a.pod: (a.node, tuple((g.type, g.minor, g.core, g.memory_bytes) for g in a.devices))
            for a in c.allocations()}


def usage_from_allocations(c: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """Per-device core and memory used, summed from the allocations (independent of the core's
    own counters)."""
    u = c.device_usage(copy=True)
    index = {(c.node_names()[n], int(m)): i for i, (n, m) in enumerate(zip(u["node"], u["minor"]))}
    core = np.zeros(len(u["node"]), dtype=np.int64)
    mem = np.zeros(len(u["node"]), dtype=np.int64)
    for a in c.allocations():
        for g in a.devices:
            core[index[(a.node, g.minor)]] += g.core
            mem[index[(a.node, g.minor)]] += g.memory_bytes
    return core, mem


# --- One Cluster ------------------------------------------------------------------------------

def test_writers_on_shared_cards_keep_the_accounting_exact():
    """8 threads place_many / place / release on 16 nodes they all compete for. Every pod a call
    reported placed is held until its thread releases it (release never raises), and no card is
    used beyond its capacity or differently from its allocations."""
    c = cluster_of(16)
    held: list[set[str]] = [set() for _ in range(8)]
    placed = [0] * 8
    rounds = 150
    # Made first, and reused every round: the threads spend their time in the calls.
    batches = [[pod(f"t{t}-{k}", k + t) for k in range(48)] for t in range(8)]
    extras = [pod(f"t{t}-x", t) for t in range(8)]

    def body(t: int) -> None:
        strategy = ("binpack", "fgd", "spread", "random(seed=3)")[t % 4]
        for r in range(rounds):
            where = c.place_many(batches[t], strategy)
            placed[t] += int((where >= 0).sum())
            held[t].update(p.name for p, n in zip(batches[t], where) if n >= 0)
            alloc, reason = c.place(extras[t], strategy, nodes=["n1", "n2"])
            if alloc is not None:
                assert alloc.node in ("n1", "n2")
                held[t].add(alloc.pod)
            else:
                assert "nodes are available" in reason
            if r % 10 == 0:
                c.check_invariants()
            if r < rounds - 1:  # give everything back but in the last round
                for name in sorted(held[t]):
                    c.release(name)
                held[t].clear()

    run_threads(8, body)
    c.check_invariants()
    assert set(placements(c)) == set().union(*held)
    assert sum(placed) > 0, "the test placed nothing"
    u = c.device_usage(copy=True)
    core, mem = usage_from_allocations(c)
    np.testing.assert_array_equal(u["core_used"], core)
    np.testing.assert_array_equal(u["memory_used"], mem)
    assert (u["core_used"] <= u["core_capacity"]).all()


@pytest.mark.parametrize("strategy", ["binpack", "fgd", "spread"])
def test_writers_on_their_own_nodes_equal_a_serial_replay(strategy):
    """6 threads each own two nodes (node selector / candidate list) and place, reserve, commit,
    unreserve and release there. Each thread's results depend only on its own order, so a serial
    replay of every thread's committed operations must give the same answers and placements."""
    threads, rounds = 6, 60
    c = cluster_of(2 * threads, owners=threads)
    logs: list[list[tuple]] = [[] for _ in range(threads)]
    batches = [[pod(f"t{t}-{k}", k + t, {"owner": f"t{t}"}) for k in range(24)] for t in range(threads)]
    extras = [[pod(f"t{t}-x{r % 2}", r) for r in range(rounds)] for t in range(threads)]

    def ops(t: int, target: Cluster, log: list[tuple] | None, replay: list[tuple] | None) -> None:
        nodes = [f"n{t}", f"n{t + threads}"]
        for r in range(rounds):
            result = [int(n) for n in target.place_many(batches[t], strategy)]
            held = [p.name for p, n in zip(batches[t], result) if n >= 0]
            entries = [("place_many", r, result)]
            alloc, _ = target.place(extras[t][r], strategy, nodes=nodes)
            if alloc is not None:
                held.append(alloc.pod)
            entries.append(("place", r, None if alloc is None else alloc.node))
            name = f"t{t}-res"
            try:
                a = target.reserve(pod(name, r + 1), nodes[r % 2], strategy)
                if r % 2:
                    target.commit(name)
                    held.append(name)
                else:
                    target.unreserve(name)
                entries.append(("reserve", r, a.node, tuple(g.minor for g in a.devices)))
            except ValueError as e:  # documented: the pod does not fit there
                assert "does not fit" in str(e)
                entries.append(("reserve", r, None, ()))
            # Release everything but every third pod; the last round keeps what it holds.
            released = held if r < rounds - 1 else held[::3]
            for n in released:
                target.release(n)
            entries.append(("release", r, tuple(released)))
            for got in entries:
                if log is not None:
                    log.append(got)
                if replay is not None:
                    assert got == replay.pop(0), f"thread {t} diverged from its serial replay"

    run_threads(threads, lambda t: ops(t, c, logs[t], None))
    c.check_invariants()
    serial = cluster_of(2 * threads, owners=threads)
    for t in range(threads):
        ops(t, serial, None, list(logs[t]))
    assert placements(c) == placements(serial)
    assert placements(c), "the test placed nothing"
    np.testing.assert_array_equal(c.device_usage(copy=True)["core_used"],
                                  serial.device_usage(copy=True)["core_used"])


def test_readers_only_see_states_the_writer_passed_through():
    """One writer places and releases; 5 readers take snapshot (and restore it), allocations,
    copy, device_usage(copy=True), filter, filter_nodes, partition_nodes and host_priorities
    meanwhile. Every state a reader sees is
    one of the states a serial run of the writer passes through, in order."""
    rounds = 100
    batches = [[pod(f"w{r}-{k}", k + r) for k in range(60)] for r in range(rounds)]

    def writer(c: Cluster, seen: list[frozenset] | None) -> None:
        held: list[str] = []
        for r in range(rounds):
            held += [p.name for p, n in zip(batches[r], c.place_many(batches[r], "binpack")) if n >= 0]
            now = placements(c) if seen is not None else {}
            if seen is not None:
                seen.append(frozenset(now.items()))
            for name in held[: len(held) // 2]:
                c.release(name)
                if seen is not None:  # every release is a state of its own
                    del now[name]
                    seen.append(frozenset(now.items()))
            del held[: len(held) // 2]

    states: list[frozenset] = [frozenset()]
    writer(cluster_of(8), states)
    index = {s: i for i, s in enumerate(states)}  # a state repeats only right after itself
    totals = {sum(g[2] for _, (_, devs) in s for g in devs) for s in states}

    c = cluster_of(8)
    done = threading.Event()
    probe = pod("probe", 1)
    names = [f"n{i}" for i in range(8)] + ["n99"]

    def reader(i: int) -> None:
        last = 0
        while not done.is_set():
            kind = i % 5
            if kind == 0:
                restored = Cluster.restore(c.snapshot())
                restored.check_invariants()
                state = frozenset(placements(restored).items())
            elif kind == 1:
                state = frozenset(placements(c).items())
            elif kind == 2:
                copy = c.copy()
                copy.check_invariants()
                state = frozenset(placements(copy).items())
            elif kind == 3:
                used = int(c.device_usage(copy=True)["core_used"].sum())
                assert used in totals, f"usage {used} is no state's"
                codes, _ = c.filter_nodes(probe, names)
                assert codes[-1] == -1 and set(codes[:-1]) <= {0, 1}
                assert c.filter(probe, "n0").code in ("Ok", "Unschedulable")
                # The extender's one-call verbs read under the same shared lock.
                passed, failed, unresolvable, unknown = extender.partition_nodes(c, probe, names)
                assert unknown == ["n99"] and not unresolvable
                assert sorted(passed + list(failed)) == sorted(names[:-1])
                priorities = extender.host_priorities(c, probe, names)
                assert [h["Host"] for h in priorities] == names
                assert priorities[-1]["Score"] == 0
                assert all(0 <= h["Score"] <= 10 for h in priorities)
                continue
            else:
                c.check_invariants()
                continue
            assert state in index, "a reader saw a state the writer never passed through"
            assert index[state] >= last, "a reader saw the state go back in time"
            last = index[state]

    def body(i: int) -> None:
        if i == 0:
            try:
                writer(c, None)
            finally:
                done.set()
        else:
            reader(i - 1)

    run_threads(6, body)
    assert frozenset(placements(c).items()) == states[-1]


def test_device_usage_views_are_live_and_copies_are_not():
    c = cluster_of(1)
    live = c.device_usage()
    frozen = c.device_usage(copy=True)
    assert not live["core_used"].flags.writeable
    c.place(pod("a", 0))
    assert live["core_used"].sum() == 100  # the view follows the placement
    assert frozen["core_used"].sum() == 0  # the copy keeps the instant it was taken


@pytest.mark.parametrize("strategy", ["fgd", "random(seed=5)", "binpack"])
def test_separate_clusters_in_parallel_place_like_one_serial_cluster(strategy):
    """A strategy's memo or generator belongs to its cluster: clusters placing the same pods in
    parallel (and clusters placing one after another) all give the first cluster's answers."""
    pods = [pod(f"p{k}", k) for k in range(800)]

    def run(c: Cluster) -> list:
        out: list = []
        for start in range(0, len(pods), 40):
            out += [int(n) for n in c.place_many(pods[start:start + 30], strategy)]
            for p in pods[start + 30:start + 40]:
                a, _ = c.place(p, strategy)
                out.append(None if a is None else (a.node, tuple(g.minor for g in a.devices)))
            for p in pods[start:start + 40:3]:
                if c.allocation(p.name) is not None:
                    c.release(p.name)
        return out

    first = cluster_of(12)
    want = run(first)
    assert run(cluster_of(12)) == want, "a second cluster placed differently after the first"
    clusters = [cluster_of(12) for _ in range(4)]
    got: list[list] = [[] for _ in clusters]

    def body(t: int) -> None:
        got[t] = run(clusters[t])

    run_threads(4, body)
    for t, c in enumerate(clusters):
        assert got[t] == want, f"cluster {t} placed differently in parallel"
        assert placements(c) == placements(first)


# --- One Engine -------------------------------------------------------------------------------

class PreferLowNodes:
    """A Python node_order callback, so cycles call back into Python under the engine's lock."""

    def node_order(self, task, node):
        return -float(node[1:])


def engine_with_nodes(nodes: int = 3, python_plugin: bool = False) -> Engine:
    register_plugin("test-prefer-low", PreferLowNodes)
    plugins = ["drf", "predicates", "proportion", "nodeorder"] + (["test-prefer-low"] if python_plugin else [])
    e = Engine({"actions": "enqueue, allocate, backfill", "tiers": [
        {"plugins": ["priority", "gang"]}, {"plugins": plugins}]})
    for i in range(nodes):
        e.add_node(gpu_node(f"n{i}", 4))
    return e


def job(name: str, k: int) -> dict:
    return conftest.job(name, 1 + k % 2, 1, queue="default")


def engine_state(e: Engine) -> tuple:
    jobs = e.jobs().to_dict("records")
    return placements(e.cluster), sorted(map(str, jobs)), e.cycles


def test_engine_changes_cycles_and_reads_replay_serially():
    """3 threads submit and delete jobs, one runs cycles, 3 read (jobs, cluster snapshot and
    allocations, queues, last result). Changes and cycles are logged in the order they commit
    (readers run free); replaying the log on a fresh engine gives the same cluster and jobs."""
    e = engine_with_nodes()
    log: list[tuple] = []
    commit = threading.Lock()  # orders the writers and their log entries; readers never take it
    done = threading.Event()

    def submitter(t: int) -> None:
        for k in range(12):
            with commit:
                e.submit(job(f"j{t}-{k}", k))
                log.append(("submit", job(f"j{t}-{k}", k)))
            if k % 3 == 2:
                with commit:
                    e.delete(f"j{t}-{k - 1}")
                    log.append(("delete", f"j{t}-{k - 1}"))

    def cycler() -> None:
        for n in range(1, 61):
            with commit:
                r = e.run_cycle(now=float(n))
                log.append(("cycle", float(n)))
            assert r.cycle == n - 1

    def reader() -> None:
        while not done.is_set():
            jobs = e.jobs()
            assert (jobs["running"] <= jobs["tasks"]).all()
            Cluster.restore(e.cluster.snapshot()).check_invariants()
            e.cluster.check_invariants()
            placements(e.cluster)
            e.queues()
            last = e.last
            assert last is None or last.cycle < e.cycles

    def body(i: int) -> None:
        if i < 3:
            submitter(i)
        elif i == 3:
            try:
                cycler()
            finally:
                done.set()
        else:
            reader()

    run_threads(7, body)
    e.cluster.check_invariants()
    serial = engine_with_nodes()
    for kind, arg in log:
        {"submit": serial.submit, "delete": serial.delete,
         "cycle": lambda now: serial.run_cycle(now=now)}[kind](arg)
    assert engine_state(e) == engine_state(serial)
    assert e.last is not None and e.last.cycle == e.cycles - 1


def test_engine_calls_overlapping_cycles_from_many_threads():
    """Without any ordering of their own, 6 threads submit, delete, run cycles (on the engine's
    clock; a plugin written in Python takes the GIL inside them) and read. Nothing raises, every
    cycle adopts a sound state, and the jobs left are exactly the ones not deleted."""
    e = engine_with_nodes(python_plugin=True)
    kept: list[set[str]] = [set() for _ in range(6)]

    def body(t: int) -> None:
        for k in range(30):
            name = f"j{t}-{k}"
            e.submit(job(name, k))
            kept[t].add(name)
            if k % 3 == 1:
                e.delete(name)
                kept[t].discard(name)
            if t % 2 == 0:
                r = e.run_cycle()
                assert r.cycle >= 0
            else:
                jobs = e.jobs()
                assert (jobs["running"] <= jobs["tasks"]).all()
                e.cluster.snapshot()
                e.cluster.allocations()
                e.queue_shares()

    run_threads(6, body)
    e.cluster.check_invariants()
    assert set(e.jobs()["name"]) == set().union(*kept)
    assert e.last is not None and e.last.cycle == e.cycles - 1
    running = {a.pod for a in e.cluster.allocations()}
    tasks = {t for name in e.jobs()["name"] for t in e.job_tasks(name)}
    assert running <= tasks, "a deleted job's task is still running"


class CallsItsEngine:
    """A plugin that calls back into the engine running it: refused, not a deadlock."""

    engine: Engine | None = None

    def predicate(self, task, node):
        CallsItsEngine.engine.jobs()
        return None


def test_plugin_calling_back_into_its_engine_is_refused():
    register_plugin("test-calls-engine", CallsItsEngine)
    e = Engine({"actions": "allocate", "tiers": [{"plugins": ["gang", "predicates", "test-calls-engine"]}]})
    CallsItsEngine.engine = e
    e.add_node(gpu_node("n0", 2))
    e.submit(job("a", 0))
    before = e.cluster.snapshot()
    with pytest.raises(RuntimeError, match="busy in this thread"):
        e.run_cycle()
    assert e.cluster.snapshot() == before
    assert e.cycles == 0
    assert list(e.jobs()["name"]) == ["a"]  # the engine is free again


# --- Registries ---------------------------------------------------------------------------------

def test_registry_listings_while_plugins_register():
    """registry_metadata() copies each registry under its lock with the GIL released, while other
    threads register Python plugins (the registry's exclusive lock). Every listing a reader sees
    is a state that existed: no name twice, the built-ins always there, registrations only ever
    added; at the end every registration is listed."""
    from gpufleet import registries

    builtin = {e["name"] for e in registries.entries("plugins")}
    names = [f"test-threaded-{t}-{i}" for t in range(2) for i in range(40)]
    problems: list[str] = []

    def body(t: int) -> None:
        if t < 2:
            for name in names[t * 40:(t + 1) * 40]:
                register_plugin(name, PreferLowNodes)
            return
        seen: set[str] = set()
        for _ in range(60):
            listed = [e["name"] for e in registries.metadata()["plugins"]]
            now = set(listed)
            if len(listed) != len(now):
                problems.append("a plugin listed twice")
            if not builtin <= now:
                problems.append("a built-in plugin missing")
            if not seen <= now:
                problems.append("a registered plugin disappeared")
            seen = now

    run_threads(6, body)
    assert problems == []
    assert set(names) <= {e["name"] for e in registries.entries("plugins")}
