# SPDX-License-Identifier: BSD-3-Clause
"""check_loss (issue #22): the attained intervals, l' < 0 proved there, its suprema, and the
flagged interior stationary point of the square loss."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.analysis import check_loss
from svmgeo.analysis._initial_gradient import gradient_lipschitz_bound


def _scaled(seed: int, c: float) -> sg.TokenData:
    """random_data(6, 8, 10) with tokens scaled by c (scores scale by c, selections do not)."""
    d = sg.random_data(6, 8, 10, seed=seed)
    return sg.TokenData(c * np.asarray(d.X), Y=d.Y, v=d.v, Z=d.Z)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("loss", ["logistic", "exponential", "correlation"])
def test_builtin_decreasing_losses_pass(seed: int, loss: str) -> None:
    data = _scaled(seed, 3.0)
    chk = check_loss(loss, data)
    assert chk.passed and chk.proved and np.all(chk.decreasing)
    assert np.all(np.isnan(chk.stationary))
    gamma = sg.token_scores(data)
    np.testing.assert_allclose(chk.lo[:, 0], gamma.min(axis=1), rtol=0)
    np.testing.assert_allclose(chk.hi[:, 0], gamma.max(axis=1), rtol=0)


@pytest.mark.parametrize("scores", [(0.0, 5.0, 10.0), (30.0, 35.0, 40.0), (-40.0, 0.0, 700.0)])
@pytest.mark.parametrize("loss", ["logistic", "exponential"])
def test_builtin_decreasing_losses_pass_on_wide_and_far_scores(scores, loss: str) -> None:
    """Wide score ranges and scores far out: l' < 0 is proved cell by cell (one bound on
    |l''| over the interval swamped l' where it is small, and the logistic l' underflowed to
    0 from u ~ 37.4, a 'stationary point')."""
    X = sg.random_data(2, 3, 2, seed=0).X
    data = sg.TokenData(X, Z=np.ones((2, 2)), scores=np.array([scores] * 2))
    chk = check_loss(loss, data)
    assert chk.passed and chk.proved and np.all(np.isnan(chk.stationary))
    # the grid's cell bounds prove it too (a copy of the built-in is not proved in closed form)
    grid = check_loss(dataclasses.replace(sg.LOSS_SPECS[loss], name=f"{loss} (copy)"), data)
    assert grid.passed and grid.proved and "exact bound" in grid.message


@pytest.mark.parametrize("loss", ["logistic", "exponential", "correlation"])
def test_builtin_decreasing_losses_pass_beyond_float64(loss: str) -> None:
    """Scores to +-1100: e^{-u} overflows, l' underflows to 0 and the grid's cells are ~1 wide.
    l' = -exp(log|l'|) < 0 proves them decreasing (they were 'not shown', with an 'interior
    stationary point' at an underflowed zero of the exponential l'), and no RuntimeWarning."""
    X = sg.random_data(2, 3, 2, seed=0).X
    data = sg.TokenData(X, Z=np.ones((2, 2)), scores=np.array([[-1100.0, 0.0, 1100.0]] * 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chk = check_loss(loss, data)
    assert chk.passed and chk.proved and np.all(chk.decreasing)
    assert np.all(np.isnan(chk.stationary)) and "closed form" in chk.message


def test_a_user_loss_beyond_float64_is_undecided_not_stationary() -> None:
    """A user exponential (log|l'| declared) far out: l' overflows and underflows on the grid,
    so the queries are not decided, and no underflowed zero is called a stationary point."""
    X = sg.random_data(2, 3, 2, seed=0).X
    data = sg.TokenData(X, Z=np.ones((2, 2)), scores=np.array([[-1100.0, 0.0, 1100.0]] * 2))
    user = sg.LossSpec("user exp", lambda u: np.exp(-u), lambda u: -np.exp(-u),
                       lambda u: np.exp(-u), log_abs_d1=lambda u: -u)  # fmt: skip
    chk = check_loss(user, data)
    assert not chk.passed and np.all(np.isnan(chk.stationary))
    assert "not decided there" in chk.message and "stationary" not in chk.message


@pytest.mark.parametrize(
    "d1",
    [lambda u: -np.exp(-u), lambda u: -1.0 / (1.0 + np.exp(u))],
    ids=["exponential", "logistic"],
)
def test_a_user_derivative_underflowing_to_zero_is_not_a_stationary_point(d1) -> None:
    """Regression: l' = -e^-u given as a callable (no log|l'|) underflows to 0 past u ~ 745
    (the logistic's past ~710); that 0 was reported as an interior stationary point."""
    X = sg.random_data(1, 3, 2, seed=0).X
    data = sg.TokenData(X, Z=np.ones((1, 2)), scores=np.array([[0.0, 400.0, 800.0]]))
    chk = check_loss((lambda u: np.exp(-u), d1), data)
    assert not chk.passed and np.all(np.isnan(chk.stationary))
    assert "not decided there" in chk.message and "stationary" not in chk.message
    square = check_loss((lambda u: (1 - u) ** 2, lambda u: -2.0 * (1 - u)), data)
    np.testing.assert_allclose(square.stationary, 1.0, rtol=1e-12)  # a true zero still is one


def test_prompt_data_get_the_bound_in_p() -> None:
    """Regression: check_loss raised on prompt-attention data (no queries) while forming L_W.
    Logits X_i p are X_i W z with z = e_1 and p = W e_1: the same bound as unit queries."""
    base = sg.random_data(3, 4, 5, seed=0)
    prompt = sg.TokenData(base.X, v=base.v)
    unit = sg.TokenData(base.X, Z=np.tile(np.eye(5)[0], (3, 1)), v=base.v)
    chk = check_loss("logistic", prompt)
    assert chk.passed
    np.testing.assert_allclose(chk.L_W, check_loss("logistic", unit).L_W, rtol=1e-15)


def test_logistic_derivative_is_accurate_far_out() -> None:
    """l'(u) = -sigma(-u) = -1 / (1 + e^u), to a few ulps where it is ~e^-u."""
    u = np.array([-30.0, 0.0, 20.0, 38.0, 100.0, 700.0])
    d1 = sg.LOSS_SPECS["logistic"].d1(u)
    np.testing.assert_allclose(d1, -1.0 / (1.0 + np.exp(u)), rtol=1e-14)


@pytest.mark.parametrize("seed", range(4))
def test_square_loss_is_flagged_where_its_minimizer_is_attained(seed: int) -> None:
    data = _scaled(seed, 3.0)
    chk = check_loss("square", data)
    inside = (chk.lo < 1.0) & (chk.hi > 1.0)
    assert inside.any() and not chk.passed
    np.testing.assert_allclose(chk.stationary[inside], 1.0, rtol=1e-12)
    assert np.all(np.isnan(chk.stationary[~inside]))
    np.testing.assert_array_equal(chk.decreasing, chk.hi <= 1.0)
    assert "stationary" in chk.message


def test_square_loss_passes_where_scores_stay_below_one() -> None:
    data = _scaled(0, 0.5)  # unit tokens and head scaled by 1/2: |gamma| <= 1/2 < 1
    assert check_loss("square", data).passed


def test_suprema_are_exact() -> None:
    data = _scaled(1, 2.0)
    chk = check_loss("exponential", data)
    np.testing.assert_allclose(chk.sup_d1, np.exp(-chk.lo), rtol=1e-15)
    np.testing.assert_allclose(chk.lip_d1, np.exp(-chk.lo), rtol=1e-15)
    # the same suprema as gradient_lipschitz_bound's, so the same L_W
    np.testing.assert_allclose(chk.L_W, gradient_lipschitz_bound(data, "exponential"), rtol=1e-13)
    cor = check_loss("correlation", data)
    np.testing.assert_allclose(cor.L_W, gradient_lipschitz_bound(data, "correlation"), rtol=1e-13)
    logi = check_loss("logistic", data)
    u = np.linspace(logi.lo, logi.hi, 20001, axis=-1)
    s = 1 / (1 + np.exp(-u))
    np.testing.assert_allclose(logi.lip_d1, (s * (1 - s)).max(axis=-1), rtol=1e-7)


def test_user_loss_measured_or_proved() -> None:
    data = _scaled(2, 3.0)
    pair = (lambda u: np.logaddexp(0, -u), lambda u: -1 / (1 + np.exp(u)))
    measured = check_loss(pair, data)
    assert measured.passed and not measured.proved and "measured" in measured.message
    proved = check_loss(pair, data, d2_bound=0.25)
    assert proved.passed and proved.proved
    shifted = (lambda u: (u - 0.2) ** 2, lambda u: 2 * (u - 0.2), lambda u: 2 + 0 * u)
    flagged = check_loss(shifted, data)
    inside = (flagged.lo < 0.2) & (flagged.hi > 0.2)
    np.testing.assert_allclose(flagged.stationary[inside], 0.2, rtol=1e-12)


def test_bad_inputs() -> None:
    data = _scaled(0, 1.0)
    with pytest.raises(sg.ProblemError, match="'loss'"):
        check_loss("hinge", data)
    with pytest.raises(sg.ProblemError, match="'loss'"):
        check_loss(42, data)
    with pytest.raises(sg.ProblemError, match="grid"):
        check_loss("logistic", data, grid=2)
    X = np.random.default_rng(0).normal(size=(2, 3, 4))
    with pytest.raises(sg.ProblemError, match="linear head v"):
        check_loss("logistic", sg.TokenData(X, Z=np.ones((2, 4))))


def test_a_maximum_of_the_loss_is_flagged_too() -> None:
    data = _scaled(3, 3.0)
    bump = (lambda u: -((u - 0.1) ** 2), lambda u: -2 * (u - 0.1))  # l' > 0 below 0.1
    chk = check_loss(bump, data, d2_bound=2.0)
    inside = (chk.lo < 0.1) & (chk.hi > 0.1)
    assert inside.any() and not chk.passed
    np.testing.assert_allclose(chk.stationary[inside], 0.1, rtol=1e-12)
    np.testing.assert_array_equal(chk.decreasing, chk.lo >= 0.1)


def test_the_lipschitz_bound_beyond_float64_is_inf_without_warnings() -> None:
    """e^{1100} overflowed with a RuntimeWarning; the bound is honestly infinite."""
    X = sg.random_data(2, 3, 2, seed=0).X
    data = sg.TokenData(X, Z=np.ones((2, 2)), scores=np.array([[-1100.0, 0.0, 1100.0]] * 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradient_lipschitz_bound(data, loss="exponential") == np.inf


@pytest.mark.parametrize(
    ("scores", "grid"),
    [([-1e6, 0.0, 1e6], 2049), ([0.0, 1000.0, 1500.0], 3)],
    ids=["wide", "coarse"],
)
def test_an_underflow_between_coarse_grid_points_is_not_a_stationary_point(scores, grid) -> None:
    """Regression: a user logistic's l' = -1/(1 + e^u) goes from -0.5 to -0.0 between two grid
    points ~1000 apart, with no grid value in (0, 2^-1000): that 0 was reported as an interior
    stationary point (u* = 976.6, 750). The first zero is now bisected to adjacent floats and
    its last nonzero value read; a true zero (the square loss's) stays one on the same grid."""
    X = sg.random_data(1, 3, 2, seed=0).X
    data = sg.TokenData(X, Z=np.ones((1, 2)), scores=np.array([scores]))
    user = (lambda u: np.logaddexp(0.0, -u), lambda u: -1.0 / (1.0 + np.exp(u)))
    chk = check_loss(user, data, grid=grid)
    assert not chk.passed and np.all(np.isnan(chk.stationary))
    assert "not decided there" in chk.message and "stationary" not in chk.message
    square = check_loss((lambda u: (1 - u) ** 2, lambda u: -2.0 * (1 - u)), data, grid=grid)
    np.testing.assert_allclose(square.stationary, 1.0, rtol=1e-12)
    hinge = check_loss((lambda u: np.maximum(0.0, 1 - u), lambda u: np.where(u < 1, -1.0, 0.0)),
                       data, grid=grid)  # fmt: skip
    assert np.all(np.isfinite(hinge.stationary)) and "interior stationary point" in hinge.message


@pytest.mark.parametrize(
    ("loss", "match"),
    [
        ((lambda u: u, lambda u: 1 / 0), "d1 callable .* failed .*ZeroDivisionError"),
        (sg.LossSpec("bad", 1, 2), "value callable \\('bad'\\) failed .*TypeError"),  # type: ignore[arg-type]
        ((lambda u: u, lambda u: u * np.nan), "d1 callable .* is not finite at u .*got nan"),
    ],
)
def test_a_user_loss_that_fails_is_a_named_error(loss, match) -> None:
    """Regression: check_loss ran the user's callables bare (ZeroDivisionError, 'int' object is
    not callable) and read a NaN l' as 'not decided'; train refused the same losses by name."""
    data = sg.random_data(2, 3, 2, seed=0)
    with pytest.raises(
        sg.ProblemError, match=f"'loss' parameter of check_loss: the loss's {match}"
    ):
        check_loss(loss, data)


def test_a_stationary_maximum_is_not_said_to_hold_y_f() -> None:
    """Session 48 audit: at a maximum of l (l'' < 0) the message said 'GD holds Y f near u*';
    it holds Y f at a minimum (the square loss), and a maximum repels it."""
    data = sg.random_data(4, 5, 3, seed=0)
    peak = sg.LossSpec("peak", lambda u: -((u - 0.1) ** 2) / 2, lambda u: -(u - 0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        top = check_loss(peak, data, d2_bound=1.0)
    assert np.isfinite(top.stationary).all() and not top.passed
    assert "minimum of l (l' from - to +) on 0 of them" in top.message
    bowl = check_loss("square", _scaled(0, 3.0))
    flagged = int(np.isfinite(bowl.stationary).sum())
    assert flagged > 0 and f"on {flagged} of them, where GD holds Y f" in bowl.message


def test_a_user_loss_sup_d1_bounds_a_peak_between_grid_points() -> None:
    # |l'| peaks at u = a, off the grid; with a valid d2_bound the verdict is proved, so sup_d1
    # (and L_W from it) must be an upper bound: the grid's own largest |l'| is below the peak
    data = sg.random_data(4, 5, 6, seed=0)
    a, w = 0.2079, 0.01
    d1 = lambda u: -(1.0 + 0.9 * np.exp(-(((u - a) / w) ** 2)))  # noqa: E731
    M2 = 0.9 * np.sqrt(2.0) * np.exp(-0.5) / w * 1.01  # > sup|l''| = 0.9 sqrt(2) e^(-1/2) / w
    for grid in (17, 2049):
        chk = check_loss((lambda u: -u, d1), data, grid=grid, d2_bound=M2)
        assert chk.proved
        u = np.linspace(chk.lo, chk.hi, 400_001, axis=-1)
        true_sup = np.abs(d1(u)).max(axis=-1)  # independent: a fine grid through the peak
        assert np.all(chk.sup_d1 >= true_sup)
        np.testing.assert_allclose(chk.sup_d1, true_sup, rtol=M2 * (chk.hi - chk.lo).max() / grid)
