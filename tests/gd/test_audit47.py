# SPDX-License-Identifier: BSD-3-Clause
"""Regressions from session 47's audit of the training engine and verify."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg


def _far_margin_data() -> sg.TokenData:
    """One sequence of one-hot tokens with scores γ = (30, -3000, -3000): at W = 0 the
    margin Y f = -1990, where e^{-Y f} overflows float64."""
    X = np.eye(3)[None]
    return sg.TokenData(
        X, Z=np.ones((1, 3)), Y=np.array([1.0]), v=np.array([30.0, -3000.0, -3000.0])
    )


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_the_exponential_loss_gap_is_its_value_where_the_loss_overflows(backend: str) -> None:
    """log(L - L_sel) at W = 0 is log(e^{1990} - e^{-30}) = 1990 (to float64), not the -inf
    ("L is the selection's loss exactly") it was; no overflow warning leaks."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = sg.train(
            _far_margin_data(), loss="exponential", n_steps=2, record_every=1, backend=backend
        )
    gap = run.history.log_loss_gap
    f = np.mean([30.0, -3000.0, -3000.0])  # h at W = 0: uniform attention
    np.testing.assert_allclose(gap[0], -f + np.log1p(-np.exp(-30.0 + f)), rtol=1e-15)
    assert np.all(np.isfinite(gap))
    assert np.all(np.isinf(run.history.loss))  # the loss itself overflows: reported as inf


def test_train_batch_refuses_a_factor_pair_as_two_starts_of_w() -> None:
    """init=(K, Q) with param='W' and B = 2 was read as the starts of the two instances."""
    datasets = [sg.random_data(4, 5, 3, seed=s) for s in range(2)]
    rng = np.random.default_rng(0)
    K, Q = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    for train in (lambda: sg.train_batch(datasets, init=(K, Q), n_steps=1),
                  lambda: sg.train(datasets[0], init=(K, Q), n_steps=1)):  # fmt: skip
        with pytest.raises(sg.ProblemError, match="param='KQ'"):
            train()
    run = sg.train_batch(datasets, init=np.stack([K, Q]), n_steps=1, record=("W",))
    np.testing.assert_array_equal(run.history.W[:, 0], np.stack([K, Q]))  # stated as an array


@pytest.mark.parametrize("n_steps", [2**63, 10**30])
def test_an_int64_overflowing_step_count_is_a_problem_error(n_steps: int) -> None:
    data = sg.random_data(3, 4, 2, seed=0)
    with pytest.raises(sg.ProblemError, match="'n_steps' parameter of train"):
        sg.train(data, n_steps=n_steps, grad_tol=1e300)  # would stop at once if accepted


def test_recording_the_prompt_vector_of_a_w_run_is_refused() -> None:
    """record=('p', 'p_norm') with param='W' recorded nothing at all."""
    data = sg.random_data(3, 4, 2, seed=0)
    with pytest.raises(sg.ProblemError, match="Record 'W' and 'W_norm'"):
        sg.train(data, param="W", record=("p", "p_norm"), n_steps=10)
    run = sg.train(data, param="W", n_steps=10)  # the default record: p dropped, W kept
    assert run.history.p is None and run.history.W is not None


def test_a_tie_after_an_overflow_stop_says_the_run_stopped() -> None:
    data = sg.random_data(3, 4, 2, seed=0)
    with pytest.raises(sg.TieError, match=r"status 'overflow'.*Lower step_size"):
        sg.verify(data, step_size=1e300, n_steps=50)
