# SPDX-License-Identifier: BSD-3-Clause
"""regularization_path's stationarity verdict at extreme scales (session 54): a log-domain
objective that float64 cannot resolve to ``tol`` is not called converged."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import svmgeo as sg


@pytest.mark.parametrize("param", ["W", "KQ"])
@pytest.mark.parametrize("scale", [1e30, 1e100])
def test_scores_past_float64_resolution_are_not_called_converged(param: str, scale: float) -> None:
    """Regression: with scores of size 1e100 (v times 1e100) the path reported converged with
    stationarity 0: log|L - L_beta| ~ -6.6e98 is represented only to 1e83, the gradient's
    scale e^(M - log|g|) came out 0, and a zero gradient read as stationary. At 1e30 the
    path ended not converged with a residual of 1 and no word on why. Where the log-gap's
    float64 spacing exceeds tol the stationarity is now inf, with a warning that says so."""
    d0 = sg.random_data(3, 4, 4, seed=0)
    data = sg.TokenData(d0.X, Y=d0.Y, Z=d0.Z, v=d0.v * scale)
    with pytest.warns(sg.ConvergenceWarning, match="cannot resolve its objective") as record:
        path = sg.regularization_path(data, [1.0, 2.0], param=param)
    assert all("Rescale the data" in str(w.message) for w in record)
    assert not path.converged.any()
    assert np.all(np.isinf(path.stationarity))
    assert all(math.ulp(g) > 1e-6 for g in path.log_loss_gap)


def test_radii_past_float64_resolution_are_not_called_converged() -> None:
    """Ordinary scores, radii 1, 1e2, ..., 1e14: the log-gap grows like -R * margin, and past
    |log-gap| = 2^33 (ulp 2^-19 > tol = 1e-6) no radius is called converged (R = 1e10 ended
    with a residual 2e-4, 1e14 with 8e-2, reported as plain non-convergence); up to
    R = 1e8 (|log-gap| 1e8, ulp 1.5e-8) the path converges."""
    data = sg.random_data(2, 3, 3, seed=0, score_gap=0.1)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always", sg.ConvergenceWarning)
        path = sg.regularization_path(data, [10.0**k for k in range(0, 15, 2)])
    unresolved = np.array([math.ulp(g) > 1e-6 for g in path.log_loss_gap])
    np.testing.assert_array_equal(unresolved, [False] * 5 + [True] * 3)
    np.testing.assert_array_equal(np.isinf(path.stationarity), unresolved)
    np.testing.assert_array_equal(path.converged, ~unresolved)
    assert len(record) == 3
    assert all("cannot resolve its objective" in str(w.message) for w in record)


def test_the_log_domain_path_is_invariant_when_the_loss_is_scaled() -> None:
    """Linear head, correlation loss: v times c multiplies L by c, and leaves the log-domain
    objective F = sign(g) log(1 + |g| / s) (g and s scale alike) and so the path unchanged."""
    data = sg.random_data(3, 4, 4, seed=0)
    ref = sg.regularization_path(data, [1.0, 2.0], loss="correlation")
    for c in (2.0**-30, 2.0**30):
        scaled = sg.TokenData(data.X, Y=data.Y, Z=data.Z, v=c * data.v)
        path = sg.regularization_path(scaled, [1.0, 2.0], loss="correlation")
        assert path.converged.all() and ref.converged.all()
        np.testing.assert_allclose(path.loss / c, ref.loss, rtol=1e-12)
        np.testing.assert_allclose(path.W, ref.W, atol=1e-12)
        np.testing.assert_allclose(path.stationarity, ref.stationarity, rtol=1e-6)
