# SPDX-License-Identifier: BSD-3-Clause
"""regularization_path's stationarity verdict at extreme scales (session 54): the residual is
scale-free inside the ball as on the sphere, and a log-domain objective that float64 cannot
resolve to ``tol`` is not called converged."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import svmgeo as sg

# One sequence of three tokens (the unit vectors), one query, label +1. The concave head
# h(x) = v'x - lam ||x||^2 with v = 2 lam p peaks at x = p, the mixture of the tokens with
# weights p, where h = lam ||p||^2; with the correlation loss L = -h, so L is least, at
# -lam ||p||^2, on the W that give the softmax weights p: a finite W (its least norm is 0.53),
# strictly inside a ball of radius 8 and outside one of radius 0.25.
_X = np.eye(3)[None]
_Z = np.array([[1.0, 0.5, -0.5]])
_P = np.array([0.5, 0.3, 0.2])
_LAM = 1.0
_RADII = (0.25, 8.0)


def _concave_path(c: float, a: float) -> sg.RegularizationPath:
    """The path with the loss multiplied by c ((v, lam) -> c (v, lam)) and W in other units
    (tokens times a, v / a and lam / a^2 keep h, W / a and R / a keep the logits)."""
    data = sg.TokenData(a * _X, Y=[1.0], Z=_Z, v=np.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.ConvergenceWarning)
        return sg.regularization_path(
            data,
            [R / a for R in _RADII],
            head="concave",
            v=c * 2.0 * _LAM * _P / a,
            lam=c * _LAM / a**2,
            loss="correlation",
        )


@pytest.mark.parametrize(
    ("c", "a"), [(2.0**-30, 1.0), (2.0**30, 1.0), (1.0, 2.0**-20), (1.0, 2.0**20)]
)
def test_the_residual_is_invariant_when_the_loss_is_scaled_or_w_changes_units(
    c: float, a: float
) -> None:
    """Regression: the residual's floor was an absolute 1 (||grad L|| / max(1, ||grad L||)
    inside the ball, the tangential part over max(1, ||grad L||) on the sphere). With the loss
    times 2^-30, or the tokens times 2^-20, the path stopped at W = 0 after 0 iterations,
    "converged", at L = -1/3 instead of -0.38; with the loss times 2^30 it did not converge
    at R = 8 (residual 2.3e-4). The floor is now |L| / R (F = L): the same path in every case."""
    ref = _concave_path(1.0, 1.0)
    path = _concave_path(c, a)
    assert path.converged.all() and ref.converged.all()
    norms = np.linalg.norm(ref.W, axis=(1, 2))
    np.testing.assert_allclose(norms[0], _RADII[0], rtol=1e-12)  # on the sphere
    assert norms[1] < 0.1 * _RADII[1]  # strictly inside the ball
    np.testing.assert_allclose(ref.loss[1], -_LAM * float(_P @ _P), rtol=1e-9)
    np.testing.assert_allclose(path.loss / c, ref.loss, rtol=1e-9)
    np.testing.assert_allclose(path.W * a, ref.W, atol=1e-6)


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("where", ["inside", "sphere", "ball boundary"])
def test_the_ball_residual_is_invariant_under_loss_scale_and_units(
    normalized: bool, where: str
) -> None:
    """The residual at one point: the same with (grad F, F) times c (F = L, the loss times c;
    the log-domain F does not change then: the next test) and with x / a, grad F * a, rho / a
    (W in other units); it stays in [0, 1]."""
    from svmgeo.analysis._regpath import _ball_residual, _kkt_residual

    rng = np.random.default_rng(0)
    rho = 3.0
    x = rng.standard_normal(6)
    x *= (0.4 if where == "inside" else 1.0) * rho / np.linalg.norm(x)
    sphere = where == "sphere"
    for g in (1e-3 * rng.standard_normal(6), -x + 0.1 * rng.standard_normal(6)):
        f = -0.7
        base = _ball_residual(x, g, f, rho, normalized, sphere)
        assert 0.0 < base <= 1.0
        for c in () if normalized else (2.0**-40, 3.0, 2.0**40):
            scaled = _ball_residual(x, c * g, c * f, rho, normalized, sphere)
            np.testing.assert_allclose(scaled, base, rtol=1e-12)
        for a in (1e-20, 7.0, 1e20):
            units = _ball_residual(x / a, a * g, f, rho / a, normalized, sphere)
            np.testing.assert_allclose(units, base, rtol=1e-12)
        if where == "inside":  # the local path's residual with no active constraint
            np.testing.assert_allclose(_kkt_residual(g, f, [], rho), base if normalized else
                                       _ball_residual(x, g, f, rho, True), rtol=1e-12)  # fmt: skip
            np.testing.assert_allclose(_kkt_residual(7.0 * g, f, [], rho / 7.0),
                                       _kkt_residual(g, f, [], rho), rtol=1e-12)  # fmt: skip


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
