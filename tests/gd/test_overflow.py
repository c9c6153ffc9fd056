# SPDX-License-Identifier: BSD-3-Clause
"""Runs that would leave float64's range stop with StopStatus.OVERFLOW before any inf; the
compiled kernels cache outside the installed package."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo import StopStatus
from svmgeo.gd._problem import NORM_LIMIT

from .conftest import ALL_BACKENDS, DATASETS

DATA = DATASETS["cross"]  # d = 5
BACKENDS = ALL_BACKENDS


def _all_finite(run: sg.GDRun) -> None:
    h = run.history
    for name in ("loss", "grad_norm", "W_norm", "max_prob", "W"):
        arr = getattr(h, name)
        assert arr is not None and np.all(np.isfinite(arr)), name
    assert np.all(np.isfinite(run.W))
    assert float(np.max(h.W_norm)) <= NORM_LIMIT


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("param", ["W", "KQ"])
def test_huge_step_stops_with_overflow_before_any_inf(backend: str, param: str) -> None:
    init = ("random", 0.1) if param == "KQ" else "zero"
    run = sg.train(
        DATA, param=param, step_size=1e300, n_steps=50, init=init, seed=0, backend=backend
    )
    assert run.status is StopStatus.OVERFLOW and run.n_steps == 0, run.message
    assert "step_size" in run.message
    _all_finite(run)


@pytest.mark.parametrize("backend", BACKENDS)
def test_overflow_stops_at_the_limit_not_before(backend: str) -> None:
    # normalized steps of 2e149 from W = 0: ||W|| grows by at most 2e149 a step, so the
    # first few steps stay below 1e150 and the run stops at the first step past it
    run = sg.train(DATA, step_size=2e149, n_steps=40, record_every=1, backend=backend)
    assert run.status is StopStatus.OVERFLOW
    assert 2 <= run.n_steps < 40
    _all_finite(run)
    assert run.history.W_norm[-1] > 0.1 * NORM_LIMIT


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("normalized", [True, False])
def test_init_beyond_the_limit_stops_at_once(backend: str, normalized: bool) -> None:
    W0 = np.random.default_rng(0).normal(size=(DATA.d, DATA.d))
    W0 *= 1e200 / np.linalg.norm(W0)
    run = sg.train(DATA, init=W0, n_steps=30, normalized=normalized, backend=backend)
    assert run.status is StopStatus.OVERFLOW and run.n_steps == 0
    np.testing.assert_allclose(run.history.W_norm, [1e200], rtol=1e-12)
    np.testing.assert_array_equal(run.W, W0)


def test_factors_whose_product_is_not_representable_are_an_error() -> None:
    K = np.full((DATA.d, DATA.d), 1e200)
    with pytest.raises(sg.ProblemError, match="init"):
        sg.train(DATA, param="KQ", init=(K, K), n_steps=5, backend="numpy")


def test_batch_instances_overflow_independently() -> None:
    W0 = np.zeros((2, DATA.d, DATA.d))
    W0[1, 0, 0] = 1e160
    batch = sg.train_batch([DATA, DATA], init=W0, n_steps=20, backend="numba")
    assert batch.status == (StopStatus.MAX_STEPS, StopStatus.OVERFLOW)
    assert batch.n_steps.tolist() == [20, 0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_init_beyond_the_limit_warns_nothing(backend: str) -> None:
    """Regression (issue #21): no numpy RuntimeWarning escapes an OVERFLOW start."""
    import warnings

    W0 = np.random.default_rng(0).normal(size=(DATA.d, DATA.d))
    W0 *= 1e200 / np.linalg.norm(W0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = sg.train(DATA, init=W0, n_steps=5, backend=backend)
    assert run.status is StopStatus.OVERFLOW
