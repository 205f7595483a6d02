"""Prometheus metrics and readiness for the extender.

Each app has its own registry (several extenders may live in one process, as tests run them).
Counters and the latency histogram are updated by the verb handler; what the state holds
(allocations, the rebuild's results) is read when Prometheus scrapes, so it is never stale.

Exported (prefix gpufleet_extender_):
- requests_total{verb, outcome}: outcome is ok, error (an answer with Error set: no fit, bind
  refused), bad_request (malformed input), internal (a bug; also logged) or unauthorized (no or
  a wrong bearer token; verb is then also state, metrics or other for any other path);
- request_seconds{verb}: handler time, body read to response built;
- binds_total: successful binds;
- allocations{state}: pods holding devices, Reserved (bind in flight) or Bound;
- rebuild_pods{result}: what the last start's rebuild did with each bound pod
  (restored, refused, skipped);
- unanswered_holds: holds of binds journalled but never answered, waiting for a retry;
- claim_conflicts (--dra): ResourceClaims whose devices bound pods hold too (both kept held);
- journal_failed (scenario mode): 1 once a journal write failed and binds are refused;
- journal_write_failures_total{what}: failed journal writes (write, sync: the journal then
  fails; compaction: the old file is kept and the journal goes on).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

OUTCOMES = ("ok", "error", "bad_request", "internal", "unauthorized")
# Extender verbs answer in well under a millisecond to tens of milliseconds.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class ExtenderMetrics:
    """The metrics of one extender app; `render()` is the /metrics body."""

    def __init__(self, state: Any) -> None:
        from gpufleet._extras import require
        require("prometheus_client", "k8s", "the extender's metrics")
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("gpufleet_extender_requests", "Extender requests by verb and outcome.",
                                ["verb", "outcome"], registry=self.registry)
        self.latency = Histogram("gpufleet_extender_request_seconds",
                                 "Handler time per verb (body read to response built).", ["verb"],
                                 buckets=LATENCY_BUCKETS, registry=self.registry)
        self.binds = Counter("gpufleet_extender_binds", "Successful binds.", registry=self.registry)
        self.registry.register(_StateCollector(state))
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        # labels() validates and locks on every call; each labelled child is looked up once.
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def observe(self, verb: str, outcome: str, seconds: float | None) -> None:
        self._child(self.requests, verb, outcome).inc()
        if seconds is not None:
            self._child(self.latency, verb).observe(seconds)
        if verb == "bind" and outcome == "ok":
            self.binds.inc()

    def render(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _StateCollector:
    """Gauges read from the state at scrape time."""

    def __init__(self, state: Any) -> None:
        self.state = state

    def describe(self) -> list[Any]:
        return []  # read at scrape time only; nothing to check at registration

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        held = GaugeMetricFamily("gpufleet_extender_allocations",
                                 "Pods holding devices, by allocation state.", labels=["state"])
        counts = {"Reserved": 0, "Bound": 0}
        for a in self.state.cluster.allocations():
            counts[a.state] = counts.get(a.state, 0) + 1
        for name, n in sorted(counts.items()):
            held.add_metric([name], n)
        yield held
        rebuild = GaugeMetricFamily("gpufleet_extender_rebuild_pods",
                                    "Bound pods the last rebuild restored, refused or skipped.",
                                    labels=["result"])
        summary = self.state.rebuild.summary()
        rebuild.add_metric(["restored"], summary["restored"])
        rebuild.add_metric(["refused"], len(summary["refused"]))
        rebuild.add_metric(["skipped"], len(summary["skipped"]))
        yield rebuild
        unanswered = GaugeMetricFamily("gpufleet_extender_unanswered_holds",
                                       "Holds of binds journalled but never answered, waiting "
                                       "for the scheduler's retry.")
        unanswered.add_metric([], len(self.state.unanswered))
        yield unanswered
        ledger = self.state.claim_ledger
        if ledger is not None:
            conflicts = GaugeMetricFamily("gpufleet_extender_claim_conflicts",
                                          "ResourceClaims (--dra) whose devices bound pods' "
                                          "annotations name too; both are kept held.")
            conflicts.add_metric([], len(ledger.conflicts))
            yield conflicts
        journal = self.state.journal
        if journal is not None:
            stats = journal.stats()
            failed = GaugeMetricFamily("gpufleet_extender_journal_failed",
                                       "1 once a journal write failed: binds are answered with "
                                       "an error until a restart.")
            failed.add_metric([], 1 if stats["failed"] else 0)
            yield failed
            failures = CounterMetricFamily("gpufleet_extender_journal_write_failures",
                                           "Failed journal writes by kind.", labels=["what"])
            for what in ("write", "sync", "compaction"):
                failures.add_metric([what], stats["write_failures"].get(what, 0))
            yield failures


def readiness(checks: dict[str, Callable[[], bool]]) -> list[str]:
    """The readiness checks that fail (an empty list: ready): a check's name, followed by the
    reason when it raised one."""
    failing = []
    for name, check in sorted(checks.items()):
        try:
            ok = bool(check())
        except Exception as e:  # noqa: BLE001 - a check that raises is a failing check
            failing.append(f"{name} ({e})" if str(e) else name)
            continue
        if not ok:
            failing.append(name)
    return failing
