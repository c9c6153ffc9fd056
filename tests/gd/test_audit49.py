# SPDX-License-Identifier: BSD-3-Clause
"""Regressions of session 49's audit of the training engine: the statuses of a gradient in
float64's denormal range with ``log_domain=False``, and of steepest-descent steps on (K, Q)
past the norm limit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg


def _denormal_gradient() -> sg.TokenData:
    """||grad L(0)|| ~ 1e-312 (a float64 denormal): scores shrunk by 1e-150, head by 1e-85."""
    d0 = sg.random_data(4, 5, 3, seed=1)
    return sg.TokenData(d0.X * 1e-75, v=d0.v * 1e-85, Z=d0.Z * 1e-75, Y=d0.Y)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_denormal_gradient_without_the_log_domain_is_gradient_underflow(backend: str) -> None:
    """The direction's factor e^{M-c} = 1/||G|| overflowed: numpy stopped with OVERFLOW,
    numba with STATIONARY, and both recorded log ||grad|| = -inf."""
    data = _denormal_gradient()
    log_domain = sg.train(data, n_steps=5, normalized=False, backend="numpy")
    true_log = float(log_domain.history.log_grad_norm[0])
    assert -745.0 < true_log < -709.0
    run = sg.train(data, log_domain=False, n_steps=5, backend=backend)
    assert run.status is sg.StopStatus.GRADIENT_UNDERFLOW and run.n_steps == 0
    np.testing.assert_allclose(run.history.log_grad_norm[0], true_log, rtol=1e-12)


def test_denormal_gradient_in_the_lane_kernel() -> None:
    """train_batch's lanes (16 small softmax instances) share the factor with the scalar
    kernel: the same stop."""
    runs = sg.train_batch([_denormal_gradient()] * 16, log_domain=False, n_steps=5)
    assert {str(s) for s in runs.status} == {"gradient_underflow"}


@pytest.mark.parametrize("optimizer", ["sign", "adam", "spectral", ("steepest", 1.5)])
def test_steepest_steps_past_the_limit_on_kq_are_overflow(optimizer: object) -> None:
    """K Q^T of factors past the limit overflowed in the product: the rule said NON_FINITE
    ("a bug guard: no known input reaches it") and numpy warned; gd says OVERFLOW."""
    data = sg.random_data(4, 5, 3, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = sg.train(data, optimizer=optimizer, param="KQ", init=("random", 0.1), seed=0,
                       step_size=1e160, n_steps=5)  # fmt: skip
    assert run.status is sg.StopStatus.OVERFLOW and run.n_steps == 0


@pytest.mark.parametrize("init", ["zero", np.eye(3)])
def test_seed_without_a_random_start_is_refused(init: object) -> None:
    """seed seeds init=("random", scale) only: with another start it was accepted and
    changed nothing (two seeds, the same W), while m, lam and normalize_eps that a run would
    ignore are refused by name."""
    data = sg.random_data(4, 5, 3, seed=1)
    with pytest.raises(sg.ProblemError, match="'seed' parameter of train seeds the random"):
        sg.train(data, init=init, seed=7, n_steps=5)
    with pytest.raises(sg.ProblemError, match="'seed' parameter of train_batch seeds"):
        sg.train_batch([data, data], init=init, seed=7, n_steps=5)
    a = sg.train(data, init=("random", 0.1), seed=0, n_steps=5)
    b = sg.train(data, init=("random", 0.1), seed=1, n_steps=5)
    assert not np.array_equal(a.W, b.W)


def test_verify_and_the_cli_keep_their_seed_for_what_it_seeds() -> None:
    """verify's seed also seeds its cone perturbation and the command line's --seed the data
    generator: both pass it to train only with a random start."""
    from svmgeo.cli import main

    data = sg.random_data(4, 5, 3, seed=1)
    rep = sg.verify(data, n_steps=20, seed=3, backend="numpy")
    assert rep.run.n_steps == 20
    assert main(["train", "--n", "3", "--T", "4", "--d", "5", "--seed", "4", "--steps", "5",
                 "--json"]) == 0  # fmt: skip


@pytest.mark.parametrize("optimizer", ["gd", "sign", ("steepest", 1.5), "adam", "spectral"])
def test_every_rule_refuses_a_stacked_start(optimizer: object) -> None:
    """train takes one start: gd refused train_batch's stacked (1, d, d), the steepest rules
    (handed over before train's check) took it."""
    data = sg.random_data(3, 4, 3, seed=0)
    with pytest.raises(sg.ProblemError, match=r"init W must have shape \(3, 3\)"):
        sg.train(data, optimizer=optimizer, init=0.1 * np.ones((1, 3, 3)), n_steps=2)
