"""The openb GPU-sharing replay (Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing
Workloads with Fragmentation Gradient Descent", USENIX ATC 2023, Section 6).

Pods of an openb trace arrive one at a time in a seeded random order and are placed at once by a
placement strategy (or fail); nothing departs. When the trace is used up, pods drawn from it at
random keep arriving until the arrived GPU requests reach ``stop_at`` times the cluster's GPUs.
The native core (``gpufleet._core``) does the whole replay; this module converts the tables and
shapes the result. See ``docs/replay.md`` for definitions and the measured figures.

Data: Alibaba ``cluster-trace-gpu-v2023`` (https://github.com/alibaba/clusterdata), loaded with
:func:`gpufleet.traces.load_openb_nodes` / :func:`gpufleet.traces.load_openb_pods`, or generated
with :func:`gpufleet.traces.synthetic_openb`.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gpufleet import published, registries
from gpufleet._core import replay as native_replay
from gpufleet._lazy import lazy

# Imported by the first call that needs them: `import gpufleet` stays fast.
np = lazy("numpy")
pd = lazy("pandas")

__all__ = ["DRA_PREFIX", "POLICIES", "PUBLISHED_ALLOC_AT_100", "STUDY_POLICY_NAMES", "TIES", "ReplayResult",
           "compare_with_published", "load_published", "plot_alloc", "policy_names", "replay_many",
           "replay_openb"]

#: The six policies of the study, in the paper's order (registered placement strategies).
POLICIES: tuple[str, ...] = ("random", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd")

#: GPU allocation ratio (a fraction) at 100% arrived workload, mean of 10 seeds, default trace, as published
#: by Weng et al. (USENIX ATC 2023); every trace: :func:`load_published` (both from
#: :mod:`gpufleet.published`).
PUBLISHED_ALLOC_AT_100: dict[str, float] = published.FGD_DEFAULT_ALLOC_AT_100

#: A policy written ``dra:<strategy>`` replays as DRA (see :func:`replay_openb`).
DRA_PREFIX = "dra:"

#: How ties between equally scored nodes are broken (see :func:`replay_openb`).
TIES: tuple[str, ...] = ("seeded", "name", "random")

_NODE_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "model")
_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec")


def policy_names() -> list[str]:
    """The replay's policies (each a registered placement strategy), in the paper's order."""
    known = set(registries.names("strategies"))
    return [p for p in POLICIES if p in known]


@dataclass
class ReplayResult:
    """One replay. ``timeseries`` has a row per arrival; ``summary`` uses snake_case keys.

    Timeseries columns: ``pod`` (row of the input pods; resampled pods repeat rows), ``name``,
    ``placed``, ``node`` (name, ``None`` when failed), ``arrived`` / ``allocated`` / ``fragmented``
    / ``idle`` / ``failed_gpu`` (GPU share over cluster GPUs, 1.0 = 100%), ``failed`` (count),
    ``frag_ratio`` (fragmented / idle share).
    """

    summary: dict[str, Any]
    timeseries: pd.DataFrame
    workload: list[dict[str, Any]]
    cluster: Any = field(repr=False)

    def at(self, arrived: float) -> pd.Series:
        """The row when arrived demand first reaches ``arrived`` (e.g. 1.0), else the last row."""
        return _row_at(self.timeseries, arrived)

    def plot(self, ax=None, **kwargs):
        """Allocation ratio against arrived workload (axes in percent), as in the paper's Figure 7."""
        return plot_alloc({self.summary["policy"]: self}, ax=ax, **kwargs)


def _row_at(ts: pd.DataFrame, arrived: float) -> pd.Series:
    idx = int(np.searchsorted(ts["arrived"].to_numpy(), arrived - 1e-12, side="left"))
    return ts.iloc[min(idx, len(ts) - 1)]


def _columns(frame: pd.DataFrame, names: Iterable[str], what: str) -> None:
    missing = [c for c in names if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} table lacks column(s) {', '.join(missing)}; "
                         f"expected {', '.join(names)} (see gpufleet.traces.load_openb_{what})")


def _spec(value: Any) -> list[str]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    if isinstance(value, str):
        return [m.strip() for m in value.split("|") if m.strip()]
    return [str(m) for m in value]


def replay_openb(nodes: pd.DataFrame, pods: pd.DataFrame, policy: str | None = None, seed: int = 0,
                 stop_at: float = 1.3, *, coverage: float = 0.95, random_ties: bool = False,
                 ties: str = "seeded", as_dra: bool = False, **params: Any) -> ReplayResult:
    """Replay ``pods`` on ``nodes`` with placement strategy ``policy`` (default ``fgd``); see the
    module doc.

    ``as_dra=True``, or a policy written ``dra:<strategy>``, runs the same arrivals with every GPU
    pod asking through a ResourceClaim, placed by the DRA strategy ``policy`` (``pack``, the
    default, or ``first``; :func:`gpufleet.dra.replay.replay_openb_as_dra`, docs/dra.md); its
    summary names the policy ``dra:<strategy>``.

    ``params`` go to the strategy (e.g. ``integer_scores=False`` for fgd's exact scores, or
    ``workload=[[cpu_milli, core_percent, gpu_count, weight], ...]`` to replace the trace's own
    typical pods). ``coverage`` is the share of pods the typical-pod workload covers (0.95 in the
    paper). ``ties`` says which of several equally scored nodes a pod takes: ``"seeded"`` (default)
    a random node order drawn once per run from ``seed``, as the study's simulator does (it gives
    ties to the smallest node name after prefixing every name with a random rank); ``"name"`` the
    smallest node name; ``"random"`` a fresh random node for every pod (upstream kube-scheduler).
    ``random_ties=True`` is the same as ``ties="random"``.
    Bad rows raise ``ValueError`` naming the row and field; unknown policies raise ``KeyError``.
    """
    _columns(nodes, _NODE_COLUMNS, "nodes")
    _columns(pods, _POD_COLUMNS, "pods")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    if random_ties:
        ties = "random"
    if as_dra or (policy or "").startswith(DRA_PREFIX):
        from gpufleet.dra.replay import replay_openb_as_dra
        if params:
            raise ValueError(f"as_dra: the DRA strategies take no parameters, got {', '.join(sorted(params))}")
        strategy = (policy or "pack").removeprefix(DRA_PREFIX)
        return replay_openb_as_dra(nodes, pods, strategy, seed, stop_at, coverage=coverage, ties=ties)
    policy = policy or "fgd"
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    options = native_replay.ReplayOptions(policy=policy, params=params or None, seed=int(seed),
                                          stop_at=float(stop_at), coverage=float(coverage), ties=ties)
    node_columns = {
        "name": [str(n) for n in nodes["name"]],
        **{c: nodes[c].astype(np.int64).tolist() for c in ("cpu_milli", "memory_mib", "num_gpu")},
        "model": ["" if m is None or (isinstance(m, float) and np.isnan(m)) else str(m)
                  for m in nodes["model"]]}
    pod_columns = {
        "name": [str(n) for n in pods["name"]],
        **{c: pods[c].astype(np.int64).tolist() for c in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli")},
        "gpu_spec": [_spec(s) for s in pods["gpu_spec"]]}
    raw = native_replay._replay_openb(node_columns, pod_columns, options)
    columns = raw.to_dict()
    node_names = np.asarray([str(n) for n in nodes["name"]], dtype=object)
    node_idx = columns["node"]
    where = np.where(node_idx >= 0, node_names[np.maximum(node_idx, 0)], None)
    idle = columns["idle"]
    ts = pd.DataFrame({
        "pod": columns["pod"],
        "name": np.asarray(pods["name"], dtype=object)[columns["pod"]] if len(columns["pod"]) else [],
        "placed": columns["placed"].astype(bool),
        "node": where,
        "arrived": columns["arrived"],
        "allocated": columns["allocated"],
        "fragmented": columns["fragmented"],
        "idle": idle,
        "frag_ratio": np.divide(columns["fragmented"], idle, out=np.zeros_like(idle), where=idle > 0),
        "failed": columns["failed"],
        "failed_gpu": columns["failed_gpu"],
    })
    summary = _summary(ts, policy, seed, stop_at, columns["gpu_capacity"])
    return ReplayResult(summary=summary, timeseries=ts, workload=columns["workload"], cluster=raw.cluster)


def _window_mean(ts: pd.DataFrame, percent: int) -> float:
    """Mean allocation over the arrivals whose arrived share rounds to ``percent`` (or, if none,
    lies within one point of it): how the study reads its own curves at a given arrived load.
    Without such arrivals (a run that stops short of it), the allocation at that load."""
    arrived = np.round(100 * ts["arrived"].to_numpy())
    rows = arrived == percent
    if not rows.any():
        rows = np.abs(arrived - percent) <= 1
    if not rows.any():
        return float(_row_at(ts, percent / 100)["allocated"])
    return float(ts["allocated"].to_numpy()[rows].mean())


def _summary(ts: pd.DataFrame, policy: str, seed: int, stop_at: float, gpus: int) -> dict[str, Any]:
    out: dict[str, Any] = {"policy": policy, "seed": int(seed), "stop_at": float(stop_at),
                           "cluster_gpus": int(gpus), "arrivals": int(len(ts))}
    if len(ts) == 0:
        return out
    for label, level in (("100", 1.0), ("130", 1.3)):
        row = _row_at(ts, level)
        out[f"arrived_at_{label}"] = float(row["arrived"])
        out[f"alloc_ratio_at_{label}"] = float(row["allocated"])
        out[f"alloc_ratio_near_{label}"] = _window_mean(ts, int(label))
        out[f"frag_ratio_at_{label}"] = float(row["frag_ratio"])
        out[f"frag_gpus_at_{label}"] = float(row["fragmented"] * gpus)
    last = ts.iloc[-1]
    out["final_alloc_ratio"] = float(last["allocated"])
    out["failed_pods"] = int(last["failed"])
    out["failed_gpu_share"] = float(last["failed_gpu"])
    return out


def replay_many(nodes: pd.DataFrame, pods: pd.DataFrame, policies: Iterable[str] | str = POLICIES,
                seeds: Iterable[int] = range(10), *, per_run: bool = False, progress: bool = True,
                **kwargs: Any) -> pd.DataFrame:
    """Replays every policy with every seed (tqdm progress bar) and averages over seeds.

    Returns one row per policy (index ``policy``, paper order) with the mean of every numeric
    summary key plus ``runs``; ``per_run=True`` returns the summaries themselves, one row per
    (policy, seed). Other keyword arguments go to :func:`replay_openb`.
    """
    policy_list = [policies] if isinstance(policies, str) else list(policies)
    runs = [(p, s) for p in policy_list for s in seeds]
    iterator: Iterable[tuple[str, int]] = runs
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(runs, desc="openb replay", unit="run")
    rows = pd.DataFrame([replay_openb(nodes, pods, policy=p, seed=s, **kwargs).summary
                         for p, s in iterator])
    if per_run or rows.empty:
        return rows
    numeric = rows.drop(columns=["seed"]).select_dtypes("number").columns
    means = rows.groupby("policy", sort=False)[list(numeric)].mean()
    means.insert(0, "runs", rows.groupby("policy", sort=False).size())
    return means


#: The study's policy folders (``sc_policy`` in its result tables) by replay policy name: the view
#: of :data:`gpufleet.published.FGD_POLICY_NAMES` from this side.
STUDY_POLICY_NAMES: dict[str, str] = {v: k for k, v in published.FGD_POLICY_NAMES.items()}


def load_published(path: Any, arrived: int = 100) -> pd.DataFrame:
    """The study's own per-seed results (``analysis_allo_discrete.csv`` of its simulator's
    repository, e.g. ``shared/data/openb/fgd_expected_alloc.csv``) at ``arrived`` percent, as
    :func:`gpufleet.published.fgd_alloc` reads them.

    Returns one row per (trace, policy) with index ``(trace, policy)`` (the trace as in
    ``openb_pod_list_<trace>.csv``, the policy by replay name) and columns ``mean``, ``std``
    (over seeds, fractions like every ratio here) and ``seeds``. Raises ``ValueError`` naming what
    is missing.
    """
    return published.fgd_alloc(path, arrived).set_index(["trace", "policy"])


def plot_alloc(results: dict[str, ReplayResult], ax=None, upto: float = 1.3):
    """GPU allocation ratio against arrived GPU workload per policy, with the diagonal; the data are
    the fractions of the timeseries, the axes are labelled in percent. A policy keeps its colour
    (:func:`gpufleet.plots.policy_color`) in every figure."""
    from gpufleet._extras import require
    from gpufleet.plots import percent_axis, policy_color
    plt = require("matplotlib.pyplot", "plot", "gpufleet.replay.plot_alloc")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for name, res in results.items():
        ts = res.timeseries[res.timeseries["arrived"] <= upto + 1e-9]
        ax.plot(ts["arrived"], ts["allocated"], label=name, color=policy_color(name))
    ax.plot([0, upto], [0, upto], color="grey", linestyle=":", linewidth=1)
    percent_axis(ax, "x", decimals=0)
    percent_axis(ax, "y", decimals=0)
    ax.set_xlabel("arrived GPU workload (% of cluster GPUs)")
    ax.set_ylabel("GPU allocation ratio (%)")
    ax.legend()
    return ax


def compare_with_published(nodes: pd.DataFrame, pods: pd.DataFrame, seeds: Iterable[int] = range(10),
                           as_dra: Iterable[str] = (), **kwargs: Any) -> pd.DataFrame:
    """Mean over ``seeds`` per policy next to the published allocation ratios at 100% (fractions,
    as every ratio the replay returns; the table printed by :func:`main` shows percent).
    ``as_dra`` adds rows for DRA strategies (``["pack", "first"]``) replayed on the same seeds
    (policies ``dra:<strategy>``; nothing published for them).

    ``alloc_at_100`` and ``alloc_at_130`` are read as the study reads its curves (the mean over
    the arrivals that round to that load: ``alloc_ratio_near_*``); ``published_at_100`` is the
    default trace's published figure (:data:`PUBLISHED_ALLOC_AT_100`; other traces:
    :func:`load_published`).
    """
    policies = [*POLICIES, *(DRA_PREFIX + str(s) for s in as_dra)]
    df = replay_many(nodes, pods, policies, list(seeds), per_run=True, **kwargs)
    table = df.groupby("policy", sort=False).agg(
        alloc_at_100=("alloc_ratio_near_100", "mean"), std_at_100=("alloc_ratio_near_100", "std"),
        alloc_at_130=("alloc_ratio_near_130", "mean"), frag_ratio_at_100=("frag_ratio_at_100", "mean"),
        failed_pods=("failed_pods", "mean"))
    table["published_at_100"] = pd.Series(PUBLISHED_ALLOC_AT_100)
    table["difference"] = table["alloc_at_100"] - table["published_at_100"]
    return table


def main(argv: list[str] | None = None) -> None:
    """``python -m gpufleet.replay --nodes NODES.csv --pods PODS.csv [--seeds 10]``: the table."""
    import argparse

    from gpufleet.traces import load

    parser = argparse.ArgumentParser(prog="python -m gpufleet.replay", description=main.__doc__)
    parser.add_argument("--nodes", help="openb_node_list_*.csv (default: openb_node_list_gpu_node.csv "
                                        "beside the pod list)")
    parser.add_argument("--pods", required=True, help="openb_pod_list_*.csv")
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default 10)")
    parser.add_argument("--as-dra", nargs="+", default=[], metavar="STRATEGY",
                        help="also replay as DRA with these strategies (pack, first): docs/dra.md")
    args = parser.parse_args(argv)
    trace = load(format="openb", trace=args.pods, nodes=args.nodes)
    table = compare_with_published(trace.nodes, trace.pods, seeds=range(args.seeds), as_dra=args.as_dra)
    ratios = [c for c in ("alloc_at_100", "std_at_100", "alloc_at_130", "frag_ratio_at_100", "published_at_100",
                          "difference") if c in table.columns]
    shown = table.copy()
    shown[ratios] = shown[ratios] * 100   # printed in percent; the returned table holds fractions
    print(shown.rename(columns={c: f"{c} (%)" for c in ratios}).round(2).to_string())


if __name__ == "__main__":
    main()
