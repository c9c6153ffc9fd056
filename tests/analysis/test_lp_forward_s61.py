# SPDX-License-Identifier: BSD-3-Clause
"""The forward bound of an l_p answer (session 61): ``extras["argmin"].radius`` bounds
||W - W*||_p / ||W||_p (Clarkson's inequalities), and a token read as slack at W but not
proved slack at W* leaves the LOT verdict undecided (``SupportTokens.slack_unproved``).

Before: ``OPENBLAS_NUM_THREADS=1 python examples/lp_backward_error.py`` decided LOT = True at
p = 3, 10, 20, 100 where the closed form says not a LOT (all margins 1 at u* = (1, 0))."""

from __future__ import annotations

import warnings
from decimal import Decimal, localcontext

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
    assert f"l_{p:g} minimizer W*" in lot.reason
    assert lot.support.slack_unproved is not None
    assert lot.support.slack_unproved.tolist() == [[False, False, False, True]]


@pytest.mark.parametrize("p", [1.1, 1.5, 1.9, 2.0, 2.5, 3.0, 10.0, 20.0, 100.0])
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


def _exact_norm(x: np.ndarray, p: float) -> Decimal:
    """||x||_p of the float entries at 60 digits."""
    P = Decimal(p)
    total = sum((Decimal(abs(float(v))).ln() * P).exp() for v in x.ravel() if v != 0.0)
    return (Decimal(total).ln() / P).exp()


@pytest.mark.parametrize("p", [1.01, 1.1, 1.5, 2.0, 3.0, 7.0, 20.0, 100.0])
def test_the_radius_rounded_up_steps_bound_the_exact_values(p: float) -> None:
    """The radius is an upper bound only if each of its rounded-up steps is one: the norm
    (entries from 1e-150 to 1e150 included), x^p - 1 near x = 1 and below, and t^(1/e),
    each against 60-digit decimal arithmetic on the same floats."""
    from svmgeo.solvers._lp_norm import _norm_upper, _power_excess, _root_up

    rng = np.random.default_rng(int(p * 100))
    P = Decimal(p)
    with localcontext() as ctx:
        ctx.prec = 60
        for scale in (1e-150, 1e-8, 1.0, 1e8, 1e150):
            for _ in range(20):
                X = scale * rng.standard_normal((3, 3)) * rng.exponential(1.0, (3, 3))
                exact = _exact_norm(X, p)
                upper = Decimal(_norm_upper(X, p))
                assert exact <= upper <= exact * (1 + Decimal("1e-12"))
        for ratio in (0.5, 0.9, 1.0, 1.0 + 2.0**-52, 1.0 + 1e-12, 1.0 + 1e-6, 1.3, 3.0):
            exact = (Decimal(ratio).ln() * P).exp() - 1
            assert exact <= Decimal(_power_excess(ratio, p))
        for t in (1e-300, 1e-14, 0.3, 1.0, 7.0, 1e200):
            assert (Decimal(t).ln() / P).exp() <= Decimal(_root_up(t, p))


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


@pytest.mark.parametrize("p", [1.5, 3.0, 10.0])
@pytest.mark.parametrize("s", [1e-8, 1e8])
def test_the_radius_holds_on_scaled_rows_and_the_verdict_does_not_change(
    s: float, p: float
) -> None:
    """The example's tokens times s (solved on unit rows, certified on the caller's): the
    closed form of the float rows is W* = e1 e1^T / a_11 (a_11 = fl(s), the first row's
    coefficient), within the radius of W (+1e-14 ||W||_p for the rounding of 1/a_11), and
    the LOT verdict is the unscaled one (decided "not a LOT" at p = 1.5, undecided at 3, 10)."""
    data = _example()
    scaled = sg.TokenData(s * data.X, Z=data.Z, scores=data.scores)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        res = sg.att_svm(scaled, [0], norm=("lp", p))
        lot = sg.is_locally_optimal(scaled, [0], norm=("lp", p))
        plain = sg.is_locally_optimal(data, [0], norm=("lp", p))
    W_star = np.zeros((2, 2))
    W_star[0, 0] = 1.0 / res.constraints.A[0, 0]
    size = _lp(res.W.ravel(), p)
    radius = res.extras["argmin"].radius
    assert np.isfinite(radius)
    assert _lp((res.W - W_star).ravel(), p) <= (radius + 1e-14) * size
    assert lot.answer == plain.answer, (lot.reason, plain.reason)


def test_slack_unproved_is_none_without_w_and_for_the_nuclear_norm() -> None:
    """An infeasible Att-SVM (the selected token equals another: a row a = 0 >= 1) has no W
    to read slack off: None, with the Farkas certificate; Att-SVM* ("nuc"): None."""
    X = np.array([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]])
    bad = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[1.0, 2.0, 0.0]]))
    sup = sg.support_tokens(bad, [0], norm=("lp", 2.5))
    assert not sup.feasible
    assert sup.slack_unproved is None
    X = np.array([[[1.0, 0.0], [0.0, 1.0], [-2.0, 0.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[3.0, 2.0, 1.0]]))
    assert sg.support_tokens(data, [0], norm="nuc").slack_unproved is None
