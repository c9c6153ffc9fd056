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
        DATA,
        param=param,
        step_size=1e300,
        n_steps=50,
        init=init,
        seed=0 if param == "KQ" else None,
        backend=backend,
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


def _head_overflow_data() -> sg.TokenData:
    """Large tokens with a tiny head: one normalized step of 3.3e149 on the trained head takes
    f = v^T X s to 1e249, where the next gradient overflows float64 (inf and NaN entries)."""
    rng = np.random.default_rng(0)
    return sg.TokenData(
        rng.normal(size=(3, 4, 5)) * 1e100, v=np.ones(5) * 1e-100, Z=rng.normal(size=(3, 5)) * 1e40
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_non_finite_gradient_stops_with_overflow_never_converged(backend: str) -> None:
    """Regression: with grad_tol=0 ("0 disables") the numpy backend stopped with CONVERGED
    once a gradient block overflowed (its NaN log-norm read as -inf), the numba one took four
    more head steps and stopped with OVERFLOW. Both now stop with OVERFLOW at the first
    non-finite gradient, the step not taken, without a RuntimeWarning."""
    import warnings

    data = _head_overflow_data()
    kw = dict(train_head=True, step_size=1e150 / 3, record_every=1, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = sg.train(data, n_steps=10, grad_tol=0.0, **kw)  # type: ignore[arg-type]
    assert run.status is StopStatus.OVERFLOW and run.n_steps == 1, (run.status, run.n_steps)
    assert "not finite" in run.message
    assert np.all(np.isfinite(run.W)) and np.all(np.isfinite(run.v))
    one = sg.train(data, n_steps=1, **kw)  # type: ignore[arg-type]
    assert one.status is StopStatus.MAX_STEPS
    np.testing.assert_array_equal(run.W, one.W)
    np.testing.assert_array_equal(run.v, one.v)
    batch = sg.train_batch([data, DATA], n_steps=10, **kw)  # type: ignore[arg-type]
    assert batch.status[0] is StopStatus.OVERFLOW and batch.n_steps[0] == 1


def test_a_nan_gradient_of_tied_keys_stops_alike_on_both_backends() -> None:
    """Repeated tokens (exactly tied keys) far out: at step 724 the log-domain weights of a
    query whose only weights are denormal rounding residues overflow (inf * 0 = NaN in G at
    a finite M, ||W|| ~ 255). The numba kernels called that GRADIENT_UNDERFLOW, the numpy
    ones STATIONARY; both now stop with OVERFLOW there, the step not taken."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6, 8, 10))
    X[:, 3] = X[:, 1]
    X[:, 6] = X[:, 2]
    tied = sg.TokenData(X, Y=rng.choice([-1.0, 1.0], 6), Z=X[:, 0], v=rng.normal(size=10))
    runs = [
        sg.train(tied, n_steps=800, step_size=0.5, record_every=400, backend=backend)
        for backend in ("numpy", "numba")
    ]
    for run in runs:
        assert run.status is StopStatus.OVERFLOW and run.n_steps == 723, (run.status, run.n_steps)
        assert np.all(np.isfinite(run.W))
    np.testing.assert_allclose(runs[1].W, runs[0].W, rtol=1e-9)
