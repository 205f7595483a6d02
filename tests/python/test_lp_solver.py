"""The LP solver behind gavel-lp (COIN-OR CLP, through _core.maximize_lp) cross-checked against an
independent solver, HiGHS (highspy), on a few hundred seeded instances: Gavel's max-min LPs, random
packing LPs, degenerate ones (zero right-hand sides, repeated rows, tied costs) and mixed-sign ones,
some with all-zero columns, that may be unbounded or infeasible. Both solvers must agree on the outcome and on the optimal
objective to 1e-7 relative; the point CLP returns must be feasible and give its objective."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import highspy
import numpy as np
import pytest

from gpufleet import _core

REL = 1e-7


def highs_maximize(a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """("optimal", objective), or ("infeasible" | "unbounded" | "infeasible or unbounded", None):
    HiGHS' presolve may stop at the last when the LP is either."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    lp = highspy.HighsLp()
    rows, cols = a.shape
    lp.num_col_, lp.num_row_ = cols, rows
    lp.col_cost_ = c
    lp.col_lower_ = np.zeros(cols)
    lp.col_upper_ = np.full(cols, highspy.kHighsInf)
    lp.row_lower_ = np.full(rows, -highspy.kHighsInf)
    lp.row_upper_ = b
    lp.sense_ = highspy.ObjSense.kMaximize
    nz = a.T != 0  # column-wise
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum(nz.sum(axis=1))]).astype(np.int32)
    lp.a_matrix_.index_ = np.nonzero(nz)[1].astype(np.int32)
    lp.a_matrix_.value_ = a.T[nz]
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status == highspy.HighsModelStatus.kOptimal:
        return "optimal", h.getInfo().objective_function_value
    if status == highspy.HighsModelStatus.kInfeasible:
        return "infeasible", None
    if status == highspy.HighsModelStatus.kUnbounded:
        return "unbounded", None
    if status == highspy.HighsModelStatus.kUnboundedOrInfeasible:
        return "infeasible or unbounded", None
    raise AssertionError(f"HiGHS: {h.modelStatusToString(status)}")


def clp_maximize(a: np.ndarray, b: np.ndarray, c: np.ndarray):
    try:
        objective, x = _core.maximize_lp(a, b, c)
    except ValueError as e:
        for outcome in ("infeasible", "unbounded"):
            if outcome in str(e):
                return outcome, None, None
        raise
    return "optimal", objective, x


def gavel_lp(rng: np.random.Generator):
    """Gavel's max-min fairness LP over job classes, built as policies/gavel_lp.cc builds it."""
    models = int(rng.integers(1, 6))
    classes = int(rng.integers(1, 40))
    capacity = rng.integers(0, 65, models).astype(float)
    capacity[rng.integers(models)] = 64
    jobs = rng.integers(1, 6, classes)
    gpus_per_job = 2 ** rng.integers(0, 4, classes)
    speed = rng.uniform(0.05, 1.0, (classes, models))
    speed[rng.random((classes, models)) < 0.15] = 0  # models a class cannot use
    # As in gavel_lp.cc, a job has speed 0 on models with fewer GPUs than it needs, and a class
    # without any model left is not in the LP.
    speed[capacity[None, :] < gpus_per_job[:, None]] = 0
    speed[speed.sum(axis=1) == 0, int(np.argmax(capacity))] = 1
    if rng.random() < 0.3:
        speed[:] = np.where(speed > 0, 1.0, 0.0)  # the heterogeneity-agnostic variant
    gpus = capacity.sum()
    cols = classes * models + 1
    a, b = [], []
    for k in range(classes):
        equal_time = min(1.0, gpus / (jobs.sum() * gpus_per_job[k]))
        equal = max((speed[k] * equal_time * capacity / gpus).sum(), 1e-12)
        fair, one = np.zeros(cols), np.zeros(cols)
        fair[-1] = 1
        usable = speed[k] > 0
        fair[k * models:(k + 1) * models][usable] = -speed[k][usable] / equal
        one[k * models:(k + 1) * models][usable] = 1
        a += [fair, one]
        b += [0.0, 1.0]
    for m in range(models):
        cap = np.zeros(cols)
        cap[m:classes * models:models] = jobs * gpus_per_job
        a.append(cap)
        b.append(capacity[m])
    c = np.zeros(cols)
    c[-1] = 1
    return np.array(a), np.array(b), c


def packing_lp(rng: np.random.Generator):
    """A >= 0 (sparse or dense), b >= 0, c of either sign: always feasible and bounded."""
    rows, cols = int(rng.integers(1, 60)), int(rng.integers(1, 60))
    a = rng.uniform(0, 10, (rows, cols)) * (rng.random((rows, cols)) < rng.uniform(0.1, 1))
    a[:, a.sum(axis=0) == 0] = rng.uniform(0.5, 2)  # every column bounded by some row
    b = rng.uniform(0, 100, rows)
    c = rng.uniform(-1, 5, cols)
    return a, b, c


def degenerate_lp(rng: np.random.Generator):
    """Many zero right-hand sides, repeated and scaled rows, integer data: ties everywhere."""
    a, b, c = packing_lp(rng)
    a = np.round(a)
    a[:, a.sum(axis=0) == 0] = 1
    b = np.round(b)
    b[rng.random(b.size) < 0.4] = 0
    picks = rng.integers(0, a.shape[0], int(rng.integers(1, 10)))
    scale = rng.integers(1, 4, picks.size)[:, None]
    a = np.vstack([a, a[picks] * scale])
    b = np.concatenate([b, b[picks] * scale[:, 0]])
    c = np.round(c) + (rng.random(c.size) < 0.5)  # equal costs: several optimal vertices
    return a, b, c


def mixed_lp(rng: np.random.Generator):
    """Entries of both signs, some negative b, some all-zero columns: feasible, infeasible and
    unbounded LPs."""
    rows, cols = int(rng.integers(1, 30)), int(rng.integers(1, 30))
    a = rng.normal(0, 1, (rows, cols)) * (rng.random((rows, cols)) < 0.6)
    a += (rng.random((rows, cols)) < 0.3) * rng.uniform(0, 3, (rows, cols))
    if rng.random() < 0.3:
        a[:, rng.random(cols) < 0.15] = 0
    b = rng.uniform(-1, 10, rows) if rng.random() < 0.5 else rng.uniform(0, 10, rows)
    c = rng.normal(0, 1, cols)
    return a, b, c


KINDS = [(gavel_lp, 150), (packing_lp, 80), (degenerate_lp, 70), (mixed_lp, 80)]


def check_against_highs(make, seed):
    a, b, c = make(np.random.default_rng([seed, len(make.__name__)]))
    outcome, objective, x = clp_maximize(a, b, c)
    reference, ref_objective = highs_maximize(a, b, c)
    assert outcome == reference or (outcome != "optimal" and outcome in reference), \
        (outcome, reference)
    if outcome != "optimal":
        return outcome
    assert abs(objective - ref_objective) <= REL * max(1.0, abs(ref_objective)), \
        (objective, ref_objective)
    assert x.shape == c.shape and (x >= 0).all()
    lhs = a @ x
    scale = np.maximum(1.0, np.maximum(np.abs(b), np.abs(a) @ x))
    assert (lhs - b <= REL * scale).all(), (lhs - b).max()
    assert objective == pytest.approx(float(c @ x), rel=1e-12, abs=1e-12)
    return outcome


@pytest.mark.parametrize("make", [make for make, _ in KINDS], ids=lambda f: f.__name__)
def test_clp_agrees_with_highs(make):
    outcomes = [check_against_highs(make, seed) for seed in range(dict(KINDS)[make])]
    if make is mixed_lp:  # the generator reaches every outcome
        assert min(outcomes.count(o) for o in ("optimal", "infeasible", "unbounded")) >= 5, outcomes
    else:  # feasible and bounded by construction
        assert set(outcomes) == {"optimal"}


def test_gavel_textbook_instance():
    # One V100 and two K80s, jobs at 1.0 / 0.5 and 1.0 / 0.1 (tests/cpp/policy_gavel_lp_test.cc):
    # max-min fairness t = 1.1875.
    a = [[-1.5, -0.75, 0, 0, 1], [1, 1, 0, 0, 0], [0, 0, -2.5, -0.25, 1], [0, 0, 1, 1, 0],
         [1, 0, 1, 0, 0], [0, 1, 0, 1, 0]]
    objective, x = _core.maximize_lp(a, [0, 1, 0, 1, 1, 2], [0, 0, 0, 0, 1])
    assert objective == pytest.approx(1.1875, rel=1e-9)
    assert x[0] == pytest.approx(7 / 12) and x[2] == pytest.approx(5 / 12)


def test_lists_and_arrays_give_the_same_answer():
    a, b, c = gavel_lp(np.random.default_rng(7))
    from_arrays = _core.maximize_lp(a, b, c)
    from_lists = _core.maximize_lp(a.tolist(), b.tolist(), c.tolist())
    assert from_arrays[0] == from_lists[0]
    np.testing.assert_array_equal(from_arrays[1], from_lists[1])


def test_empty_problems():
    assert _core.maximize_lp([], [], [])[0] == 0
    objective, x = _core.maximize_lp([], [], [-1.0, 0.0])
    assert objective == 0 and list(x) == [0, 0]
    assert _core.maximize_lp([[], []], [1, 2], [])[1].size == 0
    with pytest.raises(ValueError, match="unbounded"):
        _core.maximize_lp([], [], [1.0])
    with pytest.raises(ValueError, match="infeasible"):
        _core.maximize_lp([[]], [-1], [])


@pytest.mark.parametrize("a, b, c, message", [
    ([[1, 2], [3]], [1, 1], [1, 1], r"row 1 of A has 1 entries but c has 2"),
    ([[1, 2]], [1, 1], [1, 1], r"A has 1 rows but b has 2 entries"),
    ([[1, float("nan")]], [1], [1, 1], r"A\[0\]\[1\] must be finite, got nan"),
    ([[1]], [float("inf")], [1], r"b\[0\] must be finite, got inf"),
    ([[1, 1]], [1], [1, float("nan")], r"c\[1\] must be finite, got nan"),
    ([[1, 1]], [1e21], [1, 1], r"b\[0\] = 1e\+21 exceeds 1e\+20 in magnitude"),
    ([[-1]], [1], [1], r"unbounded"),
    # Feasible (x1 >= 3.5) and unbounded through the empty column x0: CLP 1.17 alone calls it
    # infeasible, so the core sets empty columns aside.
    ([[0, -0.2]], [-0.7], [0.1, 0], r"unbounded"),
    ([[1], [-1]], [1, -2], [1], r"infeasible"),
])
def test_bad_or_unsolvable_input_is_named(a, b, c, message):
    with pytest.raises(ValueError, match=message):
        _core.maximize_lp(a, b, c)


def test_iteration_limit():
    a, b, c = packing_lp(np.random.default_rng(1))
    with pytest.raises(RuntimeError, match=r"iteration limit \(0\)"):
        _core.maximize_lp(a, b, c, max_iterations=0)
    with pytest.raises(ValueError, match="max_iterations must be >= 0"):
        _core.maximize_lp(a, b, c, max_iterations=-1)
    assert _core.maximize_lp(a, b, c, max_iterations=100000)[0] > 0


def test_the_solver_prints_nothing(capfd):
    for a, b, c in [([[1]], [1], [1]), ([[-1]], [1], [1]), ([[1]], [-1], [1]), ([], [], [])]:
        try:
            _core.maximize_lp(a, b, c)
        except ValueError:
            pass
    assert capfd.readouterr() == ("", "")


def test_concurrent_solves_match_sequential_ones():
    # The GIL is released during the solve, so these run in parallel inside CLP.
    problems = [gavel_lp(np.random.default_rng(seed)) for seed in range(40)]
    sequential = [_core.maximize_lp(*p) for p in problems]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda p: _core.maximize_lp(*p), problems * 3))
    for i, (objective, x) in enumerate(parallel):
        assert objective == sequential[i % len(problems)][0]
        np.testing.assert_array_equal(x, sequential[i % len(problems)][1])
