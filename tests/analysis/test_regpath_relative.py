# SPDX-License-Identifier: BSD-3-Clause
"""regularization_path's stationarity residual is relative (session 55): the gradient's norm
over the sum of its own terms' norms, free of the units of keys, queries and values, of a
factor on the loss, of the value of L and of sequences in units of their own."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.analysis._regpath import _RelativeGradient
from svmgeo.gd import RiskOracle, loss_and_grad

_DLOSS = {
    "logistic": lambda u: -1.0 / (1.0 + np.exp(u)),
    "exponential": lambda u: -np.exp(-u),
    "correlation": lambda u: -np.ones_like(u),
}


def _naive_terms(
    data: sg.TokenData, W: np.ndarray, loss: str, head: str, v: np.ndarray, lam: float
) -> tuple[np.ndarray, float]:
    """(sum of the terms, N) of grad L, by loops over (i, k, t, t'): the terms
    l'(Y f) Y s_t s_t' h'(r)'(u_t - u_t') (x_t - x_t') z', t < t' (linear or concave head,
    h(r) = v'r - lam ||r||^2), and N the sum of their norms with |h'(r)'(u_t - u_t')| at its
    largest over r among the query's visible values (h' is affine in r)."""
    X, U, Z, Y, vis = data.X, data.values, data.queries, data.labels, data.visible
    G = np.zeros_like(W)
    N = 0.0
    for i in range(data.n):
        for k in range(data.K):
            z = Z[i, k]
            keys = np.flatnonzero(vis[i, k])
            logits = X[i, keys] @ W @ z
            s = np.exp(logits - logits.max())
            s /= s.sum()
            r = s @ U[i, keys]
            f = v @ r - lam * r @ r
            slope = U[i, keys] @ (v - 2.0 * lam * r)
            c0 = _DLOSS[loss](Y[i, k] * f) * Y[i, k]
            for a in range(keys.size):
                for b in range(a + 1, keys.size):
                    c = c0 * s[a] * s[b] * (slope[a] - slope[b])
                    du = U[i, keys[a]] - U[i, keys[b]]
                    top = max(abs((v - 2.0 * lam * U[i, j]) @ du) for j in keys)
                    dx = X[i, keys[a]] - X[i, keys[b]]
                    G += c * np.outer(dx, z)
                    N += abs(c0) * s[a] * s[b] * top * np.linalg.norm(dx) * np.linalg.norm(z)
    return G / data.n, N / data.n


@pytest.mark.parametrize("loss", ["logistic", "exponential", "correlation"])
@pytest.mark.parametrize("head", ["linear", "concave"])
def test_the_relative_gradient_is_the_gradient_over_its_terms(loss: str, head: str) -> None:
    """The terms sum to loss_and_grad's gradient (masks, K = 2 queries, values apart from the
    keys), and the residual inside the ball is ||grad L|| / N (the terms' norms, each with
    the head's largest slope; the linear head's is its own)."""
    rng = np.random.default_rng(3)
    n, K, T, d = 3, 2, 4, 3
    mask = rng.random((n, K, T)) < 0.7
    mask[:, :, 0] = True
    v = rng.standard_normal(d)
    data = sg.TokenData(
        rng.standard_normal((n, T, d)),
        Y=np.where(rng.random((n, K)) < 0.5, -1.0, 1.0),
        Z=rng.standard_normal((n, K, d)),
        values=rng.standard_normal((n, T, d)),
        mask=mask,
        v=v,
    )
    lam = 0.7 if head == "concave" else 0.0
    kw: dict[str, Any] = {"lam": lam} if head == "concave" else {}
    oracle = RiskOracle(data, loss=loss, head=head, **kw)
    for W in (np.zeros((d, d)), rng.standard_normal((d, d))):
        G_terms, N = _naive_terms(data, W, loss, head, v, lam)
        _, G = loss_and_grad(data, W, loss=loss, head=head, **kw)
        np.testing.assert_allclose(G_terms, G, rtol=1e-10, atol=1e-14)
        assert float(np.linalg.norm(G)) <= N
        np.testing.assert_allclose(
            _RelativeGradient(oracle, loss)(W), np.linalg.norm(G) / N, rtol=1e-10
        )
        assert np.linalg.norm(G) / N > 0.05  # W = 0, a random W: far from stationary


def _paths(
    c: float, case: str, radii: tuple[float, ...]
) -> tuple[sg.RegularizationPath, sg.RegularizationPath]:
    """(path at c = 1, path at c) of one case, with W's units or the loss changed by c."""
    d0 = sg.random_data(3, 4, 4, seed=0)
    ref = np.eye(4)  # a fixed reference direction: correlations are comparable

    def run(c: float) -> sg.RegularizationPath:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.ConvergenceWarning)
            if case == "keys, head":  # the reproducer: keys times c, v / c (logits: W / c)
                data = sg.TokenData(c * d0.X, Y=d0.Y, Z=d0.Z, v=np.asarray(d0.v) / c)
                return sg.regularization_path(data, [R / c for R in radii], reference=ref)
            if case == "KQ":  # the factored path, concave head: keys times c, v / c, lam / c^2
                data = sg.TokenData(c * d0.X, Y=d0.Y, Z=d0.Z, v=np.asarray(d0.v) / c)
                return sg.regularization_path(
                    data,
                    [R / c for R in radii],
                    param="KQ",
                    head="concave",
                    lam=0.5 / (c * c),
                    reference=ref,
                )
            if case == "keys, values":  # keys times c, values / c, h unchanged on them
                data = sg.TokenData(c * d0.X, Y=d0.Y, Z=d0.Z, values=d0.X / c)
                return sg.regularization_path(
                    data,
                    [R / c for R in radii],
                    head="concave",
                    v=c * np.ones(4),
                    lam=0.5 * c * c,
                    reference=ref,
                )
            # the loss times c: correlation loss, concave head with (v, lam) times c
            return sg.regularization_path(
                d0, list(radii), head="concave", loss="correlation", v=c * np.ones(4),
                lam=0.5 * c, reference=ref,
            )  # fmt: skip

    return run(1.0), run(c)


@pytest.mark.parametrize("case", ["keys, head", "keys, values", "KQ", "loss"])
@pytest.mark.parametrize("c", [2.0**-20, 2.0**20])
def test_the_verdicts_are_invariant_under_units_and_loss_scale(c: float, case: str) -> None:
    """Regression: inside the ball the residual was ||grad F|| / max(1, ||grad F||), an
    absolute floor in W's units. Keys times 2^-20 (v times 2^20) stopped the path at W = 0
    after 0 iterations, 'converged', correlation 0 (unscaled: 18 and 22 iterations,
    correlations 0.5648, 0.6525); the same with values or the loss rescaled; the factored
    path (concave head) stopped after 11 and 2 iterations elsewhere. Powers of two
    change no rounding: the paths must agree exactly."""
    ref, path = _paths(c, case, (0.5, 1.0))
    assert ref.converged.all() and ref.n_iter.min() > 0
    np.testing.assert_array_equal(path.converged, ref.converged)
    np.testing.assert_array_equal(path.n_iter, ref.n_iter)
    assert path.correlation is not None and ref.correlation is not None
    np.testing.assert_allclose(path.correlation, ref.correlation, rtol=1e-12)
    scale = c if case != "loss" else 1.0  # W in units of 1 / c
    np.testing.assert_allclose(path.W * scale, ref.W, rtol=1e-12, atol=1e-15)


def _outlier(case: str) -> tuple[sg.TokenData, dict[str, Any]]:
    """Two sequences, the first in other units (the review's reproducers)."""
    d0 = sg.random_data(2, 4, 4, seed=0)
    X, U = d0.X.copy(), d0.X.copy()
    concave: dict[str, Any] = {"head": "concave", "v": np.ones(4), "lam": 0.5}
    if case == "equal values":  # keys far apart, values all equal: f_0 is constant
        X[0] *= 1e8
        U[0] = U[0].mean(axis=0)
        return sg.TokenData(X, Y=d0.Y, Z=d0.Z, values=U), concave
    factor = {"1e4": 1e4, "1e6": 1e6, "linear 1e6": 1e6}[case]
    X[0] *= factor
    U[0] /= factor
    if case.startswith("linear"):
        return sg.TokenData(X, Y=d0.Y, Z=d0.Z, values=U, v=d0.v), {}
    return sg.TokenData(X, Y=d0.Y, Z=d0.Z, values=U), concave


@pytest.mark.parametrize("case", ["1e4", "1e6", "linear 1e6", "equal values"])
def test_a_sequence_in_other_units_does_not_read_converged_far_from_the_path(case: str) -> None:
    """Guard (the review of a floor sigma * Phi built from worst-case bounds over all
    sequences: with one sequence in other units it stood orders of magnitude above the
    gradient's scale, and points far from the minimizer read converged). Each radius's W
    matches the same path solved to tol = 1e-12; with sequence 0's values all equal (its f
    constant in W) the path is that of sequence 1 alone."""
    data, kw = _outlier(case)
    radii = [0.5, 1.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.ConvergenceWarning)
        path = sg.regularization_path(data, radii, **kw)
        if case == "equal values":
            one = sg.TokenData(data.X[1:], Y=data.labels[1:], Z=data.queries[1:],
                               values=data.values[1:])  # fmt: skip
            accurate = sg.regularization_path(one, radii, **kw)
        else:
            accurate = sg.regularization_path(data, radii, tol=1e-12, **kw)
    assert path.converged.all()
    np.testing.assert_allclose(path.W, accurate.W, atol=1e-5)


# One sequence of three tokens (the unit vectors), one query, label +1, and the concave head
# h(x) = v'x - lam ||x||^2 with v = 2 lam p, largest (lam ||p||^2) at x = p, the mixture of the
# tokens with weights p; a second sequence whose values are all p (h = lam ||p||^2 whatever
# W) with label -1. Correlation loss: L = (h(p) - h(r_1)) / 2 >= 0, zero exactly on the W that
# give sequence 1 the softmax weights p: L* = 0, at a finite W strictly inside a ball of
# radius 8.
_P = np.array([0.5, 0.3, 0.2])
_Z = np.array([[1.0, 0.5, -0.5], [0.3, -1.0, 0.2]])


@pytest.mark.parametrize("a", [1.0, 2.0**-20, 2.0**20])
def test_an_interior_optimum_with_zero_risk_converges(a: float) -> None:
    """Guard (a floor proportional to |L| never called this optimum, L* = 0, converged) and
    regression at a = 2^-20 (tokens times a: the absolute floor stopped at W = 0)."""
    X = a * np.stack([np.eye(3), np.eye(3)])
    U = np.stack([np.eye(3), np.tile(_P, (3, 1))])
    data = sg.TokenData(X, Y=[1.0, -1.0], Z=_Z, values=U)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.ConvergenceWarning)
        path = sg.regularization_path(
            data, [8.0 / a], head="concave", v=2.0 * _P, lam=1.0, loss="correlation"
        )
    assert path.converged.all()
    W = path.W[0]
    assert float(np.linalg.norm(W)) < 0.2 * 8.0 / a  # strictly inside
    logits = X[0] @ W @ _Z[0]
    s = np.exp(logits - logits.max())
    np.testing.assert_allclose(s / s.sum(), _P, atol=1e-5)
    assert abs(float(path.loss[0])) <= 1e-10


@pytest.mark.parametrize("a", [1.0, 2.0**-20])
@pytest.mark.parametrize("head", ["linear", "concave"])
def test_small_radii_leave_zero_along_the_negative_gradient(head: str, a: float) -> None:
    """Guard (a floor Phi / rho stopped radii of 1e-7 at W = 0, 'converged', correlation 0)
    and regression at a = 2^-20 (keys times a, v / a: the absolute floor did the same). W_R
    lies on the sphere and its direction tends to that of -grad L(0) as R -> 0, by O(R)."""
    d0 = sg.random_data(3, 4, 4, seed=0)
    data = sg.TokenData(a * d0.X, Y=d0.Y, Z=d0.Z, v=np.asarray(d0.v) / a)
    kw: dict[str, Any] = {"head": "concave", "lam": 0.5 * a * a} if head == "concave" else {}
    radii = np.array([1e-7, 1e-5, 1e-3]) / a
    ref = np.eye(4)
    path = sg.regularization_path(data, radii, reference=ref, **kw)
    assert path.converged.all()
    np.testing.assert_allclose(np.linalg.norm(path.W, axis=(1, 2)), radii, rtol=1e-12)
    _, G0 = loss_and_grad(data, np.zeros((4, 4)), **kw)
    expected = float(np.vdot(-G0, ref) / (np.linalg.norm(G0) * np.linalg.norm(ref)))
    assert path.correlation is not None
    for R, corr in zip(radii * a, path.correlation, strict=True):  # R in the data's units
        np.testing.assert_allclose(corr, expected, atol=0.1 * R + 1e-9)
