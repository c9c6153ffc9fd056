# SPDX-License-Identifier: BSD-3-Clause
"""LOT enumeration against hand-derived answers and an unpruned brute force."""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np
import pytest

import svmgeo as sg

from ._cases import TRIANGLE, triangle
from ._oracle import brute_force_lots


def test_triangle_lots_by_hand() -> None:
    # _cases.py: supports {1}, {0, 2}, {1} for α = 0, 1, 2; scores (3, 1, 2) ⇒ LOTs {0, 2}
    lots = sg.locally_optimal_selections(triangle([3.0, 1.0, 2.0]))
    np.testing.assert_array_equal(lots.selections, [[0], [2]])
    assert (lots.total, lots.examined, lots.pruned) == (3, 3, 0)
    assert [bool(r) for r in lots.results] == [True, True]
    assert len(lots) == lots.n_lots == 2


def test_hull_pruning_by_hand() -> None:
    # Two sequences with queries e_1, e_2: they see W's two columns w, u, and ‖W‖² = ‖w‖² + ‖u‖²,
    # so the problems decouple. Sequence 0: x = (1, 0), (−1, 0), (0, 0); x_2 is the midpoint
    # of x_0, x_1 ⇒ α_0 = 2 fails the hull test (3 of 9 selections). α_0 = 0: rows 2 w_0 ≥ 1,
    # w_0 ≥ 1 ⇒ w_0 = 1, support {2}; α_0 = 1 likewise (w_0 = −1), support {2}.
    # Sequence 1: the triangle of _cases.py (supports {1}, {0, 2}, {1}).
    # Scores γ_0 = (5, 4, 0), γ_1 = (3, 1, 2) ⇒ LOTs: α_0 ∈ {0, 1} × α_1 ∈ {0, 2}.
    X = np.array([[[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]], TRIANGLE[0]])
    Z = np.array([[1.0, 0.0], [0.0, 1.0]])
    data = sg.TokenData(X, Z=Z, scores=np.array([[5.0, 4.0, 0.0], [3.0, 1.0, 2.0]]))
    lots = sg.locally_optimal_selections(data)
    assert (lots.total, lots.pruned_hull, lots.pruned_infeasible, lots.examined) == (9, 3, 0, 6)
    np.testing.assert_array_equal(lots.selections, [[0, 0], [0, 2], [1, 0], [1, 2]])
    expected, n_feasible = brute_force_lots(data)
    assert n_feasible == 6
    np.testing.assert_array_equal(lots.selections, np.asarray(expected))


def _random_cases() -> list[sg.TokenData]:
    return [
        sg.random_data(3, 4, 3, seed=0),  # d ≥ T − 1, n: everything feasible
        sg.random_data(3, 4, 2, seed=0),  # d < T − 1: infeasible partial selections
        sg.random_data(4, 3, 2, seed=0),  # more sequences than d: certificates reused
        sg.random_data(2, 3, 3, seed=1, query="all", mask="causal"),
        sg.random_data(2, 3, 2, seed=3, n_queries=2),
    ]


@pytest.mark.parametrize(
    "data", _random_cases(), ids=["d3", "d2", "n4-d2", "causal", "two-queries"]
)
def test_enumeration_matches_brute_force(data: sg.TokenData) -> None:
    expected, n_feasible = brute_force_lots(data)
    lots = sg.locally_optimal_selections(data)
    assert lots.selections.shape[1:] == data.selection_shape
    np.testing.assert_array_equal(
        lots.selections, np.asarray(expected).reshape(-1, *data.selection_shape)
    )
    vis = data.visible
    assert lots.total == int(np.prod(vis.sum(axis=2)))
    assert lots.examined == n_feasible  # every feasible selection solved, nothing else
    assert lots.examined + lots.pruned == lots.total
    assert lots.pruned == lots.pruned_hull + lots.pruned_infeasible
    assert lots.failed.shape[0] == 0 and lots.inaccurate == 0 and lots.undecided == 0
    for alpha, res in zip(lots.selections, lots.results, strict=True):
        np.testing.assert_array_equal(res.alpha, alpha)
        assert res.locally_optimal


def _same_enumeration(fast: sg.LOTEnumeration, ref: sg.LOTEnumeration) -> None:
    np.testing.assert_array_equal(fast.selections, ref.selections)
    np.testing.assert_array_equal(fast.failed, ref.failed)
    for name in ("total", "examined", "pruned", "pruned_hull", "pruned_infeasible"):
        assert getattr(fast, name) == getattr(ref, name), name
    assert (fast.inaccurate, fast.infeasible) == (ref.inaccurate, ref.infeasible)
    for a, b in zip(fast.results, ref.results, strict=True):
        assert a.locally_optimal and b.locally_optimal
        np.testing.assert_array_equal(np.asarray(a.support), np.asarray(b.support))
        np.testing.assert_allclose(a.support.svm.W, b.support.svm.W, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    "size",
    [(3, 4, 3), (2, 5, 4), (4, 3, 2)],
    ids=["d3-T4", "d4-T5", "n4-d2"],
)
def test_batched_search_matches_brute_force_and_reference(
    size: tuple[int, int, int], seed: int
) -> None:
    # d >= max(T - 1, n) (complete selections batched, parents decided afterwards) and
    # d < T - 1 (parents checked first, most selections infeasible), several seeds
    data = sg.random_data(*size, seed=seed)
    expected, n_feasible = brute_force_lots(data)
    fast = sg.locally_optimal_selections(data, search="batched")
    ref = sg.locally_optimal_selections(data, search="reference")
    np.testing.assert_array_equal(fast.selections, np.asarray(expected).reshape(-1, data.n))
    assert fast.examined == n_feasible
    _same_enumeration(fast, ref)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"query": "all", "mask": "causal", "seed": 1},
        {"n_queries": 2, "seed": 3},
        {"query": 0, "seed": 2},
    ],
    ids=["causal", "two-queries", "self-attention"],
)
def test_batched_search_matches_reference_with_masks_and_queries(kwargs: dict[str, Any]) -> None:
    data = sg.random_data(2, 3, 3, **kwargs)
    _same_enumeration(
        sg.locally_optimal_selections(data, search="batched"),
        sg.locally_optimal_selections(data, search="reference"),
    )


def test_batched_search_with_nuclear_norm_solves_each_selection() -> None:
    # the compiled solver is Frobenius only: other norms go through solve_svm, same answer
    data = sg.random_data(2, 3, 3, seed=0)
    _same_enumeration(
        sg.locally_optimal_selections(data, norm="nuc", search="batched"),
        sg.locally_optimal_selections(data, norm="nuc", search="reference"),
    )


def _leaf_verdicts(data: sg.TokenData, cert_tol: float = 1e-8) -> tuple[np.ndarray, np.ndarray]:
    from svmgeo.analysis._enumerate_fast import RowTable, leaf_batch

    cand = [np.arange(data.T)] * data.n
    table = RowTable(data.X, data.queries, sg.token_scores(data).reshape(data.n, 1, -1), cand)
    sel = np.array(list(itertools.product(range(data.T), repeat=data.n)), dtype=np.int64)
    verdict = np.full(sel.shape[0], -1, dtype=np.int64)
    leaf_batch(
        table.A, table.sizes, table.offsets, table.Z, table.H, table.bad, sel, 30,
        cert_tol, 1e-6, 1e-9, verdict,
    )  # fmt: skip
    return sel, verdict


@pytest.mark.parametrize("seed", range(3))
def test_compiled_solves_certify_and_agree_with_is_locally_optimal(seed: int) -> None:
    from svmgeo.analysis._enumerate_fast import LOT, NOT_LOT

    data = sg.random_data(3, 4, 4, seed=seed)  # every selection feasible
    sel, verdict = _leaf_verdicts(data)
    assert np.all((verdict == LOT) | (verdict == NOT_LOT))  # none handed back
    for alpha, v in zip(sel, verdict, strict=True):
        assert bool(sg.is_locally_optimal(data, alpha)) == (v == LOT)


def test_batched_search_solves_only_the_lots_with_solve_svm(monkeypatch: Any) -> None:
    from svmgeo.analysis import _enumerate

    calls: list[list[int]] = []
    reference_leaf = _enumerate._Search._leaf

    def counting_leaf(self: Any, chosen: list[int], parts: Any) -> None:
        calls.append(list(chosen))
        reference_leaf(self, chosen, parts)

    monkeypatch.setattr(_enumerate._Search, "_leaf", counting_leaf)
    data = sg.random_data(3, 4, 4, seed=0)  # every selection feasible, all certify
    lots = sg.locally_optimal_selections(data, search="batched")
    assert lots.examined == 64 and lots.n_lots > 0
    np.testing.assert_array_equal(np.asarray(calls), lots.selections)
    calls.clear()  # "auto" batches from 1000 selections on: 64 are solved one by one
    sg.locally_optimal_selections(data)
    assert len(calls) == 64


def test_compiled_solves_that_do_not_certify_are_handed_back() -> None:
    from svmgeo.analysis._enumerate_fast import UNSETTLED

    # a negative certificate tolerance, which no residual meets (some are exactly 0): every
    # solve must be handed back to solve_svm
    _, verdict = _leaf_verdicts(sg.random_data(3, 4, 4, seed=0), cert_tol=-1.0)
    assert np.all(verdict == UNSETTLED)


def test_prefix_point_proves_feasibility_only() -> None:
    from svmgeo.analysis._enumerate_fast import RowTable, prefix_point

    data = sg.random_data(3, 4, 4, seed=0)
    cand = [np.arange(4)] * 3
    table = RowTable(data.X, data.queries, sg.token_scores(data).reshape(3, 1, -1), cand)
    sel = np.array([1, 2], dtype=np.int64)
    W = np.empty((4, 4))
    scale = float(table.row_scale[[0, 1], sel].max())
    assert prefix_point(table.A, table.sizes, table.offsets, table.Z, table.H, sel, scale, W)
    margins = sg.att_svm_constraints(data, [1, 2, 0]).subset(np.arange(6)).apply(W)
    assert margins.min() >= 1.0 - 1e-12
    # the midpoint of two tokens is in their hull: its rows cannot all be met
    X = data.X.copy()
    X[0, 3] = 0.5 * (X[0, 0] + X[0, 1])
    mid = sg.TokenData(X, Z=data.Z, v=data.v, Y=data.Y)
    table = RowTable(mid.X, mid.queries, sg.token_scores(mid).reshape(3, 1, -1), cand)
    sel = np.array([3], dtype=np.int64)
    scale = float(table.row_scale[0, 3])
    assert not prefix_point(table.A, table.sizes, table.offsets, table.Z, table.H, sel, scale, W)


@pytest.mark.parametrize("seed", range(3))
def test_optimal_selection_is_among_the_lots(seed: int) -> None:
    # SPEC §5: opt is locally optimal whenever Att-SVM(opt) is feasible (always for d ≥ T − 1, n)
    data = sg.random_data(3, 4, 4, seed=seed)
    lots = sg.locally_optimal_selections(data)
    opt = sg.optimal_tokens(data)
    assert any(np.array_equal(opt, s) for s in lots.selections)


def test_pruning_and_reuse_happen_on_low_dimensional_data() -> None:
    lots = sg.locally_optimal_selections(sg.random_data(4, 3, 2, seed=0))
    assert lots.pruned_infeasible > 0
    assert lots.n_nogood_hits > 0 and lots.n_point_reused > 0


@pytest.mark.parametrize("search", ["reference", "batched"])
def test_parallel_search_finds_the_same_lots(search: str) -> None:
    data = sg.random_data(4, 3, 2, seed=0)
    serial = sg.locally_optimal_selections(data, search=search)  # type: ignore[arg-type]
    parallel = sg.locally_optimal_selections(data, n_jobs=2, search=search)  # type: ignore[arg-type]
    np.testing.assert_array_equal(parallel.selections, serial.selections)
    assert (parallel.examined, parallel.pruned) == (serial.examined, serial.pruned)
    for alpha, res in zip(parallel.selections, parallel.results, strict=True):
        np.testing.assert_array_equal(res.alpha, alpha)


def test_cap_refuses_before_any_work() -> None:
    data = sg.random_data(8, 6, 3, seed=0)  # 6**8 = 1,679,616 selections
    start = time.perf_counter()
    with pytest.raises(sg.ProblemError, match=r"1679616 selections.*max_selections=1000000"):
        sg.locally_optimal_selections(data)
    assert time.perf_counter() - start < 1.0
    with pytest.raises(sg.ProblemError, match="max_selections=10"):
        sg.locally_optimal_selections(sg.random_data(3, 3, 3, seed=0), max_selections=10)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_selections": 0}, "max_selections"),
        ({"progress": "yes"}, "progress"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"n_jobs": -2}, "n_jobs"),
        ({"search": "fast"}, "search"),
    ],
)
def test_bad_options(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        sg.locally_optimal_selections(triangle([3.0, 1.0, 2.0]), **kwargs)  # type: ignore[arg-type]


def test_progress_bar_reports(capsys: pytest.CaptureFixture[str]) -> None:
    lots = sg.locally_optimal_selections(sg.random_data(2, 3, 3, seed=0), progress=True)
    err = capsys.readouterr().err
    assert "9/9" in err
    assert "LOT(s) among 9 selections" in lots.summary()


def test_parallel_search_starts_no_more_workers_than_subtrees_or_cpus(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Regression (session 50): n_jobs=16 started 16 processes for 9 subtrees of work."""
    from concurrent.futures import ProcessPoolExecutor

    from svmgeo.analysis import _enumerate

    asked: list[int] = []

    class Spy(ProcessPoolExecutor):
        def __init__(self, max_workers: int) -> None:
            asked.append(max_workers)
            super().__init__(max_workers=max_workers)

    monkeypatch.setattr(_enumerate, "ProcessPoolExecutor", Spy)
    monkeypatch.setattr(_enumerate.os, "cpu_count", lambda: 4)
    data = sg.random_data(2, 3, 2, seed=0)  # 2 queries of 3 tokens: at most 9 subtrees
    serial = sg.locally_optimal_selections(data)
    parallel = sg.locally_optimal_selections(data, n_jobs=16)
    assert len(asked) == 1 and 1 <= asked[0] <= 4
    np.testing.assert_array_equal(parallel.selections, serial.selections)
