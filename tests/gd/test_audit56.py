# SPDX-License-Identifier: BSD-3-Clause
"""The engine at logits beyond float64's range (session 56).

* A normalized-linear start whose logits' sums overflow is refused on every backend (the numba
  kernels refuse such a sum themselves, so it cannot be the OVERFLOW stop of the other maps
  there), and the message says it is an overflow: it read "undefined where the visible logits
  of a query sum to 0 ... rounding error can reach inf", and the numpy backend warned
  ("overflow encountered in matmul") on the way.
* At the OVERFLOW stop of logits that overflowed to NaN, the numpy backend no longer warns for
  sigmoid (``logaddexp`` of NaN) or normalized linear attention (the bound's products), as
  linear and ReLU attention (session 55).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo import ProblemError, StopStatus

from .conftest import ALL_BACKENDS, DATASETS


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_a_normalized_start_whose_sums_overflow_is_refused_as_an_overflow(backend: str) -> None:
    data = DATASETS["cross"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ProblemError) as info:
            sg.train(
                data, attention="normalized_linear", init=1e308 * np.ones((data.d, data.d)),
                n_steps=3, backend=backend,
            )  # fmt: skip
    msg = str(info.value)
    assert "overflows float64" in msg and "scale W (or init) down" in msg, msg
    assert "sum to 0" not in msg and "Move W off the hyperplane" not in msg, msg
    # the same start scaled into range (the map is scale invariant) runs: MAX_STEPS
    run = sg.train(
        data, attention="normalized_linear", init=np.ones((data.d, data.d)), n_steps=3,
        backend=backend,
    )  # fmt: skip
    assert run.status is StopStatus.MAX_STEPS, run.message


def _nan_logits_data() -> sg.TokenData:
    """Queries with (W z)_a = +inf for every a at W = 1e308 (all entries), and in every
    sequence keys whose entries have both signs: their logits x^T (W z) are inf - inf = NaN,
    and so is every query's sum 1^T u."""
    X = np.array([[[1.0, -1.0], [1.0, 1.0], [-1.0, 0.5]]] * 2)
    X[1] *= -1.0
    return sg.TokenData(X, Z=np.array([[1.0, 1.0], [2.0, 1.0]]), v=np.array([1.0, 0.5]))


@pytest.mark.parametrize("backend", ALL_BACKENDS)
@pytest.mark.parametrize("attention", ["linear", "relu", "sigmoid", "normalized_linear"])
def test_nan_logits_are_the_overflow_stop_without_numpy_warnings(
    attention: str, backend: str
) -> None:
    data = _nan_logits_data()
    init = np.full((2, 2), 1e308)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = sg.train(data, attention=attention, init=init, n_steps=3, backend=backend)
    assert run.status is StopStatus.OVERFLOW and run.n_steps == 0, run.message
    np.testing.assert_array_equal(run.W, init)  # no step taken
