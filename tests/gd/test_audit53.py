# SPDX-License-Identifier: BSD-3-Clause
"""Regressions of session 53's audit of the training engine: the Polyak step's excess risk
past the range of ``exp``, and Adam on gradients whose order-one factor is not of order one."""

from __future__ import annotations

import math

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import RiskOracle, loss_and_grad

LOSSES = {"logistic": lambda u: np.logaddexp(0.0, -u), "exponential": lambda u: np.exp(-u)}


def _scaled(factor: float) -> sg.TokenData:
    """``random_data(4, 5, 6, seed=1)`` with its tokens multiplied by ``factor``."""
    d0 = sg.random_data(4, 5, 6, seed=1)
    return sg.TokenData(d0.X * factor, Y=d0.Y, Z=d0.Z, v=d0.v)


@pytest.mark.parametrize("loss", ["logistic", "exponential"])
def test_polyak_step_where_the_excess_risk_is_past_exp_range(loss: str) -> None:
    """Scores of order 1000 make Delta = gamma_opt - Y f exceed log(float64 max) ~ 709.8:
    expm1(Delta) overflowed, log_excess_risk returned -inf ("L = L*") and the Polyak run
    stopped at step 0 as STATIONARY, with L - L* ~ 100."""
    data = _scaled(1e3)
    W0 = np.zeros((data.d, data.d))
    value, grad = loss_and_grad(data, W0, loss=loss)
    gamma = data.Y[:, None] * (data.X @ data.v)  # (n, T): one query per sequence
    excess = value - float(np.mean(LOSSES[loss](gamma.max(axis=1))))
    assert excess > 50.0  # no cancellation in the reference
    log_excess = RiskOracle(data, loss=loss).log_excess_risk(W0)
    np.testing.assert_allclose(np.exp(log_excess), excess, rtol=1e-12)
    run = sg.train(data, loss=loss, step_size="polyak", n_steps=1)
    assert run.status is sg.StopStatus.MAX_STEPS and run.n_steps == 1
    # GD's Polyak step: W - (L - L*) / ||grad||_F^2 grad
    np.testing.assert_allclose(run.W, W0 - excess / np.sum(grad**2) * grad, rtol=1e-12)


def test_adam_on_data_at_the_edge_of_float64() -> None:
    """Tokens of norm ~1e150 (inside TokenData's range): the kernels' G carries the data's
    scale (max|G| ~ 1e149), Adam squared it past float64 and the run stopped NON_FINITE (the
    bug guard) after one step. Adam is invariant under g -> g/s, eps -> eps/s, so the
    reference runs in units of s = 1e150."""
    data = _scaled(1e150)
    eta, s, n = 0.1, 1e150, 3
    run = sg.train(data, optimizer="adam", step_size=eta, n_steps=n, record_every=1)
    assert run.status is sg.StopStatus.MAX_STEPS and run.n_steps == n
    W = np.zeros((data.d, data.d))
    m, v = np.zeros_like(W), np.zeros_like(W)
    for t in range(1, n + 1):
        g = loss_and_grad(data, W)[1] / s
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g**2
        W = W - eta * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8 / s)
        np.testing.assert_allclose(run.history.W[t], W, rtol=1e-12, atol=1e-14)


def test_adam_without_eps_on_tiny_factors() -> None:
    """K, Q of entries ~1e-160: the factor gradient G Q (~1e-160) squared underflowed to 0,
    so with adam_eps=0 the first step was m/0 and the run stopped OVERFLOW at the start;
    Adam's first step is eta sign(g) (m_hat / sqrt(v_hat) = g / |g|)."""
    data = sg.random_data(4, 5, 6, seed=1)
    rng = np.random.default_rng(0)
    K0, Q0 = rng.normal(0.0, 1e-160, (6, 6)), rng.normal(0.0, 1e-160, (6, 6))
    _, (gK, gQ) = loss_and_grad(data, (K0, Q0))
    assert np.all(gK != 0.0) and np.all(gQ != 0.0)
    run = sg.train(
        data, optimizer="adam", adam_eps=0.0, param="KQ", init=(K0, Q0), n_steps=1, step_size=0.1
    )
    assert run.status is sg.StopStatus.MAX_STEPS and run.n_steps == 1
    np.testing.assert_allclose(run.K, K0 - 0.1 * np.sign(gK), rtol=1e-12)
    np.testing.assert_allclose(run.Q, Q0 - 0.1 * np.sign(gQ), rtol=1e-12)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_polyak_with_a_user_loss_follows_the_builtin(backend: str) -> None:
    """A user's logistic loss: its excess l(gamma - Delta) - l(gamma) cancelled to 0 once the
    run saturated, log_excess_risk read L = L*, and the run stopped at step 38 as STATIONARY
    ("the gradient is exactly zero", max|grad L| ~ 1e-18). Below Delta = 2^-26 (and where
    the difference cancels) it is now -l'(gamma) Delta: the built-in's run to round-off."""
    data = sg.random_data(4, 5, 6, seed=1)
    user = sg.LossSpec(
        "my-logistic", LOSSES["logistic"], lambda u: -0.5 * (1.0 + np.tanh(-0.5 * u))
    )
    opts = dict(step_size="polyak", n_steps=300, backend=backend)
    ref = sg.train(data, loss="logistic", **opts)
    run = sg.train(data, loss=user, **opts)
    assert run.status is ref.status is sg.StopStatus.MAX_STEPS
    np.testing.assert_allclose(run.W, ref.W, rtol=0, atol=1e-9 * np.abs(ref.W).max())
    oracle_user, oracle = RiskOracle(data, loss=user), RiskOracle(data, loss="logistic")
    # Delta above and below 2^-26, and below float64's range (10 W: log Delta ~ -3000)
    for W in (0.0 * ref.W, 0.05 * ref.W, 0.1 * ref.W, ref.W, 10.0 * ref.W):
        np.testing.assert_allclose(
            oracle_user.log_excess_risk(W), oracle.log_excess_risk(W), rtol=1e-9
        )


def test_polyak_refuses_a_loss_that_rises_on_the_scores() -> None:
    """The square loss rises past u = 1: with scores up to ~2.2 (tokens x3), L fell below
    L* = (1/n) sum l(gamma_opt) and the Polyak run stopped as STATIONARY ("the gradient is
    exactly zero") with L - L* = -0.77. Below 1 it decreases, and the step runs."""
    d0 = sg.random_data(4, 5, 6, seed=1)
    square = sg.LOSS_SPECS["square"]
    scaled = sg.TokenData(d0.X * 3.0, Y=d0.Y, Z=d0.Z, v=d0.v)
    gamma = d0.Y[:, None] * (d0.X @ d0.v)  # (n, T): one query per sequence
    assert np.max(3.0 * gamma) > 1.0 > np.max(gamma)
    with pytest.warns(sg.LossWarning), pytest.raises(sg.ProblemError, match="Assumption A"):
        sg.train(scaled, loss=square, step_size="polyak", n_steps=30)
    run = sg.train(d0, loss=square, step_size="polyak", n_steps=30)
    assert run.status is sg.StopStatus.MAX_STEPS
    # a decreasing loss whose l' underflows to 0 on the scores (tokens x100) is not refused
    user = sg.LossSpec(
        "my-logistic", LOSSES["logistic"], lambda u: -0.5 * (1.0 + np.tanh(-0.5 * u))
    )
    large = sg.TokenData(d0.X * 100.0, Y=d0.Y, Z=d0.Z, v=d0.v)
    assert np.max(user.d1(100.0 * gamma)) == 0.0
    with pytest.warns(sg.LossWarning, match="l'"):  # the grid's l' underflows: a warning only
        run = sg.train(large, loss=user, step_size="polyak", n_steps=30)
    assert run.status is sg.StopStatus.MAX_STEPS


def test_public_adam_direction_takes_a_gradient_factor_of_any_scale() -> None:
    """Before: adam_direction refused a G with max|G| outside [2^-511, 2^511] and asked the
    caller to rescale it, which the engine's own steps now do: the same gradient e^M G in
    other units gives the same step."""
    from svmgeo.gd import AdamMoments, adam_direction

    G = np.random.default_rng(0).standard_normal((3, 3))
    start = AdamMoments(np.zeros_like(G), -np.inf, np.zeros_like(G), -np.inf, 0)
    ref, _ = adam_direction(G, 0.0, start, 0.9, 0.999, 1e-8)
    for s in (1e200, 1e-200):
        D, _ = adam_direction(G * s, -math.log(s), start, 0.9, 0.999, 1e-8)
        np.testing.assert_allclose(D, ref, rtol=1e-13)
