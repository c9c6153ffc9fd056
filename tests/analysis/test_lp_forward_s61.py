# SPDX-License-Identifier: BSD-3-Clause
"""The forward bound of an l_p answer (session 61): ``extras["argmin"].radius`` bounds
||W - W*||_p / ||W||_p (Clarkson's inequalities), and a token read as slack at W but not
proved slack at W* leaves the LOT verdict undecided (``SupportTokens.slack_unproved``).

Before: ``OPENBLAS_NUM_THREADS=1 python examples/lp_backward_error.py`` decided LOT = True at
p = 3, 10, 20, 100 where the closed form says not a LOT (all margins 1 at u* = (1, 0))."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import solve_naive_cvxpy


def _example() -> sg.TokenData:
    """examples/lp_backward_error.py: rows u1 >= 1, u1 + 1e-10 u2 >= 1, u1 + 5 u2 >= 1."""
    X = np.array([[[0.0, 0.0], [-1.0, 0.0], [-1.0, -1e-10], [-1.0, -5.0]]])
    return sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[1.0, 0.0, 0.0, 2.0]]))


def _lp(x: np.ndarray, p: float) -> float:
    return float(np.sum(np.abs(x) ** p) ** (1.0 / p))


@pytest.mark.parametrize("p", [3.0, 10.0, 20.0, 100.0])
def test_the_wrong_decided_lot_of_the_example_is_undecided(p: float) -> None:
    """Main decided LOT = True (the returned u2 = 7e-6 ... 0.32 leaves token 3 slack); u* = (1, 0)
    makes token 3 (score 2 > 1) a support token: not a LOT. Undecided now, naming token 3."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        lot = sg.is_locally_optimal(_example(), [0], norm=("lp", p))
    assert lot.answer is None, lot.reason
    assert "token 3" in lot.reason and "not proved slack" in lot.reason
    assert lot.support.slack_unproved is not None
    assert lot.support.slack_unproved.tolist() == [[False, False, False, True]]


@pytest.mark.parametrize("p", [1.5, 1.9, 2.0, 2.5, 3.0, 10.0, 20.0, 100.0])
def test_the_radius_bounds_the_distance_to_the_closed_form(p: float) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        res = sg.att_svm(_example(), [0], norm=("lp", p))
    radius = res.extras["argmin"].radius
    u = res.W[:, 0]
    assert np.isfinite(radius)
    assert _lp(u - np.array([1.0, 0.0]), p) <= radius * _lp(res.W.ravel(), p)


def _oracle(cs: sg.ConstraintSet, p: float) -> np.ndarray:
    """min ||W||_p over the rows: svmgeo's naive cvxpy model, Clarabel at tight tolerances."""
    W, status, _, _ = solve_naive_cvxpy(
        cs, ("lp", p), tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500
    )
    assert W is not None, status
    return W


@pytest.mark.parametrize("p", [1.5, 2.5, 3.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_radius_bounds_the_distance_to_a_tight_clarabel_solve(p: float, seed: int) -> None:
    """Random Att-SVM(alpha), p in (1, 2) and p >= 2: ||W - W_clarabel||_p within the radius
    (plus 1e-7 ||W||_p for Clarabel's own error; the radius is 1e-5 to 1e-3 here, the
    distance about 1e-9)."""
    data = sg.random_data(3, 4, 3, seed=seed)
    res = sg.att_svm(data, sg.optimal_tokens(data), norm=("lp", p))
    assert res.success
    size = _lp(res.W.ravel(), p)
    radius = res.extras["argmin"].radius
    assert 0.0 < radius < 1e-2
    dist = _lp((res.W - _oracle(res.constraints, p)).ravel(), p)
    assert dist <= (radius + 1e-7) * size


@pytest.mark.parametrize("p", [1.1, 1.5, 1.9, 2.0, 3.0, 7.0])
def test_clarksons_inequalities_hold_on_random_vectors(p: float) -> None:
    """The statements used (Clarkson 1936): p >= 2, ||(x+y)/2||^p + ||(x-y)/2||^p <= (||x||^p +
    ||y||^p)/2; 1 < p < 2, ||(x+y)/2||^q + ||(x-y)/2||^q <= ((||x||^p + ||y||^p)/2)^(q-1)."""
    rng = np.random.default_rng(0)
    q = p / (p - 1.0)
    for _ in range(200):
        x, y = rng.standard_normal((2, 9)) * rng.exponential(1.0, (2, 9))
        half = (_lp(x, p) ** p + _lp(y, p) ** p) / 2.0
        if p >= 2.0:
            lhs, rhs = _lp((x + y) / 2, p) ** p + _lp((x - y) / 2, p) ** p, half
        else:
            lhs, rhs = _lp((x + y) / 2, p) ** q + _lp((x - y) / 2, p) ** q, half ** (q - 1.0)
        assert lhs <= rhs * (1.0 + 1e-12)


def test_slack_unproved_is_none_off_lp_and_false_where_slack_is_proved() -> None:
    """Frobenius: None (masks read off the certified W as before). l_p at p = 2.5 on data with
    a token far from its bound: that slack is proved (False)."""
    X = np.array([[[1.0, 0.0], [0.0, 1.0], [-2.0, 0.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[3.0, 2.0, 1.0]]))
    assert sg.support_tokens(data, [0]).slack_unproved is None
    sup = sg.support_tokens(data, [0], norm=("lp", 2.5))
    assert sup.slack_unproved is not None
    assert not sup.slack_unproved.any()
    assert np.isfinite(sup.svm.extras["argmin"].radius)
