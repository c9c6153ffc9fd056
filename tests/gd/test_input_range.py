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
