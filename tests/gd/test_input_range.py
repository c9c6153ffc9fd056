# SPDX-License-Identifier: BSD-3-Clause
"""Regressions of session 50's input audit of the training engine: ``loss_and_grad`` with a
ridge near float64's largest, and ``train``'s unknown options."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import loss_and_grad

# -- loss_and_grad with a ridge near float64's largest -----------------------------------------


def test_loss_and_grad_with_a_huge_ridge_is_finite_where_the_objective_is() -> None:
    """e^c of the scaled gradient overflowed once ||ridge W|| passed 1.8e308 (inf entries
    with a RuntimeWarning, each entry finite); ||K||^2 past float64 was an OverflowError where
    ridge ||K||^2 / 2 is finite."""
    data = sg.random_data(3, 4, 5, seed=0)
    W = np.zeros((5, 5))
    W[0, 0], W[1, 2] = 0.9, -0.5
    ridge = 1.7e308
    value0, grad0 = loss_and_grad(data, W)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value, grad = loss_and_grad(data, W, ridge=ridge)
    np.testing.assert_allclose(value, value0 + 0.5 * ridge * (0.81 + 0.25), rtol=1e-14)
    np.testing.assert_allclose(grad, grad0 + ridge * W, rtol=1e-11)
    K, Q = np.full((5, 2), 1e200), np.full((5, 2), 1e-200)  # W = K Q^T = 2
    value, _ = loss_and_grad(data, (K, Q), ridge=1e-300)
    np.testing.assert_allclose(value, 0.5e-300 * 10 * 1e200 * 1e200, rtol=1e-12)  # + L ~ 1


def test_loss_and_grad_refuses_a_ridge_whose_objective_overflows() -> None:
    """ridge=1e308 gave loss inf and an inf gradient, with an overflow warning; both are
    beyond float64 at this W, so the ridge is refused, naming the range that fits."""
    data = sg.random_data(3, 4, 5, seed=0)
    W = np.full((5, 5), 0.5)  # ridge ||W||^2 / 2 = 3.1e308
    with pytest.raises(sg.ProblemError, match=r"ridge=1e\+308 puts the objective beyond") as err:
        loss_and_grad(data, W, ridge=1e308)
    limit = float(str(err.value).split("Pass a ridge in [0, ")[1].split("]")[0])
    assert 1e307 < limit < np.finfo(float).max / 6.25 * 2  # ||W||_F^2 = 6.25
    value, grad = loss_and_grad(data, W, ridge=limit)
    assert math.isfinite(value) and np.all(np.isfinite(grad))
    one = np.zeros((5, 5))
    one[0, 0] = 1.1  # the term 1.03e308 is finite, the gradient ridge W = 1.87e308 is not
    with pytest.raises(sg.ProblemError, match=r"ridge=1\.7e\+308 puts the objective beyond"):
        loss_and_grad(data, one, ridge=1.7e308)


# -- train's unknown options ------------------------------------------------------------------


def test_train_names_an_unknown_option_as_train_batch_does() -> None:
    """train(..., bogus=1) was Python's TypeError ("unexpected keyword argument"), where
    train_batch and verify named the option and listed the valid ones."""
    data = sg.random_data(3, 4, 5, seed=0)
    for call, name in (
        (lambda **kw: sg.train(data, **kw), "train"),
        (lambda **kw: sg.train_batch([data], **kw), "train_batch"),
        (lambda **kw: sg.train_mirror(data, exponent=1.5, **kw), "train_mirror"),
    ):
        with pytest.raises(
            sg.ProblemError,
            match=rf"^{name} got unknown option\(s\) 'bogus'; valid options are .*n_steps",
        ):
            call(bogus=1)
        with pytest.raises(
            sg.ProblemError, match=rf"^{name} no longer takes tol= \(renamed grad_tol"
        ):
            call(tol=1e-3, bogus=1)
    with pytest.raises(sg.ProblemError, match=r"valid options are optimizer, .*adam_eps"):
        sg.train(data, adam_epsilon=0.0)


def _four_equal_losses_near_float64_max() -> sg.TokenData:
    """Four sequences, each one query whose two keys score -707 and -711 (v), at W = 0 equal
    weights: every exponential loss e^709 (8.2e307), their sum 4 e^709 beyond float64."""
    X = np.zeros((4, 2, 2))
    X[:, 0, 0] = X[:, 1, 1] = 1.0
    return sg.TokenData(X, v=np.array([-707.0, -711.0]), Z=np.ones((4, 2)))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_finite_mean_of_losses_whose_sum_overflows_is_finite(backend: str) -> None:
    """The risk (1/n) sum of losses was the sum, then the division: inf where the sum
    overflowed and the mean did not (loss_and_grad, history.loss)."""
    data = _four_equal_losses_near_float64_max()
    f = -0.5 * (707.0 + 711.0)  # the head's value at W = 0 (equal weights)
    L, G = loss_and_grad(data, np.zeros((2, 2)), loss="exponential", backend=backend)
    np.testing.assert_allclose(L, np.exp(-f), rtol=1e-14)
    assert np.all(np.isfinite(G))
    run = sg.train(data, loss="exponential", n_steps=2, backend=backend)
    assert np.all(np.isfinite(run.history.loss))
    np.testing.assert_allclose(run.history.loss[0], np.exp(-f), rtol=1e-14)


def test_an_infinite_risk_is_not_blamed_on_the_ridge() -> None:
    """A risk beyond float64 with a ridge > 0 raised 'ridge=1e-300 puts the objective beyond
    float64's range ... pass a ridge in [0, 1.8e308]' (the ridge it refused); the ridge adds
    nothing there, so the answer is the ridge-free one, inf."""
    data = sg.TokenData(
        _four_equal_losses_near_float64_max().X, v=np.array([-7.0e4, -7.1e4]), Z=np.ones((4, 2))
    )
    W = np.zeros((2, 2))
    W[0, 0] = 1e-3
    plain = loss_and_grad(data, W, loss="exponential")[0]
    assert plain == np.inf  # e^(7e4) is beyond float64: the case itself
    assert loss_and_grad(data, W, loss="exponential", ridge=1e-300)[0] == np.inf


def test_a_random_init_without_its_scale_is_named_before_the_seed() -> None:
    """init=('random',) with a seed was refused for the seed ('would not change init=<tuple>'),
    which hid the real mistake, the missing scale."""
    data = sg.random_data(3, 4, 5, seed=0)
    with pytest.raises(sg.ProblemError, match=r"init=\(name, scale\) takes two entries"):
        sg.train(data, n_steps=2, init=("random",), seed=0)
    with pytest.raises(sg.ProblemError, match="seeds the random start"):  # still refused there
        sg.train(data, n_steps=2, init="zeros", seed=0)


@pytest.mark.parametrize("w00", [1e-6, 0.0])
def test_a_loss_gradient_beyond_float64_is_not_blamed_on_a_tiny_ridge(w00: float) -> None:
    """The exponential loss's gradient overflows here (inf with ridge = 0); ridge = 1e-300
    was refused as 'puts the objective beyond float64 ... Pass a ridge in [0, 1.8e308]' (at
    W = 0 a bare 'math domain error'): the ridge's own term and gradient are finite, so the
    answer is the ridge-free one plus the ridge."""
    X = np.zeros((4, 2, 2))
    X[:, 0, 0] = X[:, 1, 1] = 10.0
    data = sg.TokenData(X, v=np.array([-70.7, -71.1]), Z=100.0 * np.ones((4, 2)))
    W = np.zeros((2, 2))
    W[0, 0] = w00
    plain_value, plain_grad = loss_and_grad(data, W, loss="exponential")
    assert math.isfinite(plain_value) and np.all(np.isinf(plain_grad))  # the case itself
    value, grad = loss_and_grad(data, W, loss="exponential", ridge=1e-300)
    assert value == plain_value + 1e-300 * w00**2 / 2
    np.testing.assert_array_equal(grad, plain_grad)
