# SPDX-License-Identifier: BSD-3-Clause
"""LOT enumeration against hand-derived answers and an unpruned brute force."""

from __future__ import annotations

import time

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


def test_parallel_search_finds_the_same_lots() -> None:
    data = sg.random_data(4, 3, 2, seed=0)
    serial = sg.locally_optimal_selections(data)
    parallel = sg.locally_optimal_selections(data, n_jobs=2)
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
