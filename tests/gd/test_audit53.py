# SPDX-License-Identifier: BSD-3-Clause
"""Regressions of session 53's audit of the training engine: the Polyak step's excess risk
past the range of ``exp``."""

from __future__ import annotations

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
