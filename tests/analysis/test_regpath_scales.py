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


# ------------------------------------------------- the residual's floor (session 55)
# Inside the ball the residual is ||grad F|| / max(||grad F||, sigma Phi), sigma Phi a bound on
# ||grad F|| free of W's units, of a constant factor of the loss, of the radius and of L's
# value (svmgeo.analysis._regpath._Scale); until session 55 the floor was an absolute 1.


def _relu_head() -> dict[str, np.ndarray]:
    """h(r) = v' ReLU(V' r) whose path on _in_units' data converges at 3 of 4 radii (a kink
    of a unit at the minimizer can leave the gradient's residual above tol)."""
    rng = np.random.default_rng(5)
    return {"V": rng.standard_normal((4, 3)), "v": rng.standard_normal(3)}


def _in_units(head: str, c: float) -> tuple[sg.TokenData, dict[str, object]]:
    """random_data(3, 4, 4, seed=0) with the keys (and values) times c and the head
    compensating (v / c; the concave lam / c^2; the ReLU's V / c): the same logits at W / c
    and the same risk."""
    d0 = sg.random_data(3, 4, 4, seed=0)
    data = sg.TokenData(c * d0.X, Y=d0.Y, Z=d0.Z, v=d0.v / c)
    if head == "concave":
        return data, {"head": "concave", "lam": 0.5 / c**2}
    if head == "relu":
        kw = _relu_head()
        return data, {"head": "relu", "V": kw["V"] / c, "v": kw["v"]}
    return data, {}


_REF = np.arange(16.0).reshape(4, 4) - 7.5  # a direction to correlate the other heads with


@pytest.mark.parametrize("c", [2.0**-20, 2.0**20])
@pytest.mark.parametrize(("head", "param"), [("linear", "W"), ("linear", "KQ"),
                                             ("concave", "W"), ("relu", "W")])  # fmt: skip
def test_keys_in_other_units_leave_every_verdict_unchanged(head: str, param: str, c: float) -> None:
    """Regression: keys times c (W -> W / c, radii -> R / c) must leave each radius's verdict,
    stationarity and correlation as they were. With the absolute floor 1, keys times 2^-20
    stopped the linear, concave and ReLU W paths at W = 0 after 0 iterations, "converged",
    correlation 0 (against 0.03-0.92) and the loss 0.03-0.22 above the path's; keys times
    2^20 gave the concave and ReLU paths other iterates (W 1e-5 and 5e-6 apart). (Linear
    head with keys times 2^20, and the (K, Q) path, were the same already: kept as guards.)
    The floor is now sigma Phi, sigma (max ||z|| times the keys' diameter) in W's units: the
    same path, bit for bit with c a power of 2 (compared to 1e-12 here)."""
    radii = np.array([0.5, 1.0, 2.0, 4.0])
    data, kw = _in_units(head, 1.0)
    ref_dir = None if head == "linear" else _REF
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.ConvergenceWarning)  # the ReLU path's kink at R = 4
        ref = sg.regularization_path(data, radii, param=param, reference=ref_dir, **kw)  # type: ignore[arg-type]
        data, kw = _in_units(head, c)
        path = sg.regularization_path(data, radii / c, param=param, reference=ref_dir, **kw)  # type: ignore[arg-type]
    np.testing.assert_array_equal(path.converged, ref.converged)
    assert ref.converged.sum() >= 3
    np.testing.assert_allclose(path.stationarity, ref.stationarity, rtol=1e-12)
    assert path.correlation is not None and ref.correlation is not None
    np.testing.assert_allclose(path.correlation, ref.correlation, rtol=0, atol=1e-12)
    np.testing.assert_allclose(path.W * c, ref.W, rtol=0, atol=1e-12)
    np.testing.assert_allclose(path.loss, ref.loss, rtol=1e-12)


# One sequence of three tokens (the unit vectors), one query. The concave head
# h(x) = v'x - lam ||x||^2 with v = 2 lam p peaks at x = p, the tokens' mixture with weights p,
# where h = lam ||p||^2; with the correlation loss L = -h is least, -lam ||p||^2, on the W that
# give the softmax weights p: a finite W (least norm 0.53), strictly inside a ball of radius 8.
_P = np.array([0.5, 0.3, 0.2])
_EYE = sg.TokenData(np.eye(3)[None], Y=[1.0], Z=np.array([[1.0, 0.5, -0.5]]), v=np.ones(3))


@pytest.mark.parametrize("c", [2.0**-30, 2.0**30])
@pytest.mark.parametrize("case", ["concave, interior", "concave", "relu"])
def test_a_loss_times_a_constant_leaves_every_verdict_unchanged(case: str, c: float) -> None:
    """Regression: the correlation loss times c (v and lam, or the ReLU's output weights,
    times c) must leave each radius's verdict and correlation as they were. With the
    absolute floor 1, a loss times 2^-30 stopped every path here at W = 0 after 0 iterations,
    "converged", correlation 0; times 2^30 the interior optimum (R = 8) was not converged
    (residual 2.7e-4) and the other two paths took other iterates (W 2e-5 and 2e-6 apart).
    Phi now scales with the loss: the same path. Tolerance: on the sphere to round-off; at the
    interior optimum |W - W*| <= 2 tol sigma Phi / mu = 2.7e-5 with sigma Phi = 1.13 and mu =
    0.084 the Hessian's least eigenvalue along the directions the iterates span (measured)."""
    if case == "concave, interior":
        data, radii, ref_dir = _EYE, [0.25, 8.0], np.arange(9.0).reshape(3, 3) - 4.0
        head: dict[str, object] = {"head": "concave", "v": 2.0 * _P, "lam": 1.0}
        atol = 3e-5
    else:
        data, radii, ref_dir = sg.random_data(3, 4, 4, seed=0), [0.5, 1.0, 2.0, 4.0], _REF
        head = {"head": "concave", "v": data.v, "lam": 0.5} if case == "concave" else {
            "head": "relu", **_relu_head()}  # fmt: skip
        atol = 1e-12

    def path(c: float) -> sg.RegularizationPath:
        scaled = {k: c * val if k in ("v", "lam") else val for k, val in head.items()}
        return sg.regularization_path(data, radii, loss="correlation", reference=ref_dir, **scaled)  # type: ignore[arg-type]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.ConvergenceWarning)  # the ReLU path's kinks
        ref, scaled = path(1.0), path(c)
    assert ref.converged.sum() >= 2
    np.testing.assert_array_equal(scaled.converged, ref.converged)
    np.testing.assert_allclose(scaled.loss / c, ref.loss, rtol=1e-10)
    assert scaled.correlation is not None and ref.correlation is not None
    np.testing.assert_allclose(scaled.correlation, ref.correlation, rtol=0, atol=atol)
    np.testing.assert_allclose(scaled.W, ref.W, rtol=0, atol=atol)
    if case == "concave, interior":  # the minimum, derived above
        assert np.linalg.norm(ref.W[1]) < 0.1 * radii[1]
        np.testing.assert_allclose(ref.loss[1], -float(_P @ _P), rtol=1e-10)


def test_an_interior_optimum_with_zero_loss_converges() -> None:
    """Guard against a floor that scales with L (session 54's Phi / rho with Phi = |L|, reverted
    in review F): tokens e_t - p, whose p-mixture is 0, and the concave head with v = 0,
    lam = 1 and the correlation loss give L = ||r||^2 >= 0, 0 exactly where the softmax
    weights are p (a finite W, strictly inside R = 8): L* = 0, and the floor |L| / R vanished
    with it, the residual read 1 and the path never converged there (72 iterations, loss
    2e-33). The floor sigma Phi does not depend on L for this loss."""
    X = (np.eye(3) - _P)[None]
    data = sg.TokenData(X, Y=[1.0], Z=np.array([[1.0, 0.5, -0.5]]), v=np.ones(3))
    path = sg.regularization_path(
        data, [0.25, 8.0], head="concave", v=np.zeros(3), lam=1.0, loss="correlation"
    )
    assert path.converged.all()
    assert np.linalg.norm(path.W[1]) < 0.1 * 8.0
    logits = X[0] @ path.W[1] @ data.Z[0]
    s = np.exp(logits - logits.max())
    np.testing.assert_allclose(s / s.sum(), _P, atol=1e-5)  # the minimizer's weights
    assert 0.0 <= path.loss[1] <= 1e-10  # L = ||r||^2, r = X's s-mixture, ~ 1e-5 here


def test_small_radii_do_not_stop_at_w_zero() -> None:
    """Guard against a floor that grows as the radius shrinks (session 54's Phi / rho,
    reverted in review F): at R = 1e-7 the residual rho ||grad F|| read below tol at W = 0,
    and the path stopped there after 0 iterations, "converged", correlation 0. The minimizer
    over a tiny ball is R times the unit steepest-descent direction at 0 (to O(R)), so its
    correlation with W^mm is that of -grad L(0) (loss_and_grad: an independent gradient)."""
    from svmgeo.gd import loss_and_grad

    data = sg.random_data(3, 4, 4, seed=0)
    radii = [1e-7, 1e-5, 1e-3]
    path = sg.regularization_path(data, radii)
    assert path.converged.all()
    np.testing.assert_allclose(np.linalg.norm(path.W, axis=(1, 2)), radii, rtol=1e-12)
    _, G0 = loss_and_grad(data, np.zeros((4, 4)))
    assert path.correlation is not None and path.reference is not None
    expected = sg.correlation(-G0, path.reference)
    assert expected > 0.5
    np.testing.assert_allclose(path.correlation[:2], expected, atol=1e-6)


@pytest.mark.parametrize("loss", ["correlation", "logistic", "exponential"])
@pytest.mark.parametrize("head", ["concave", "relu"])
def test_the_floor_bounds_the_gradient(head: str, loss: str) -> None:
    """sigma Phi(L) bounds ||grad L(W)|| everywhere (ReLU and concave heads: the derivation in
    _Scale's docstring), checked with loss_and_grad's gradient at W of norms 0 to 30, on causal
    self-attention data (K = T queries, masks) with values apart from the keys; sigma and
    max_i E_i recomputed here from their definitions, pair by pair."""
    import itertools

    from svmgeo.analysis._regpath import _Objective, _Scale
    from svmgeo.gd import loss_and_grad

    rng = np.random.default_rng(0)
    d0 = sg.random_data(3, 5, 4, seed=1, query="all", mask="causal")
    U = rng.standard_normal((3, 5, 6))
    data = sg.TokenData(3.0 * d0.X, Y=d0.Y, query="all", mask="causal", values=U)
    if head == "concave":
        kw: dict[str, object] = {"v": rng.standard_normal(6), "lam": 0.7}
    else:
        kw = {"V": rng.standard_normal((6, 3)), "v": rng.standard_normal(3)}
    scale = _Scale.of(_Objective(data, loss, head, kw.get("v"), kw.get("V"), kw.get("lam")))  # type: ignore[arg-type]

    X, Z, vis = data.X, data.queries, data.visible
    sigma, E = 0.0, 0.0
    for i in range(data.n):
        keys = np.flatnonzero(vis[i].any(axis=0))
        D = max(np.linalg.norm(X[i, t] - X[i, u]) for t, u in itertools.product(keys, keys))
        sigma = max(
            [sigma] + [np.linalg.norm(Z[i, k]) * D for k in range(data.K) if vis[i, k].any()]
        )
        if head == "concave":
            slopes = [kw["v"] - 2.0 * 0.7 * U[i, a] for a in keys]  # grad h at the vertices
            E = max([E] + [g @ (U[i, t] - U[i, u]) for g in slopes for t in keys for u in keys])
        else:
            S = U[i, keys] @ kw["V"]  # (keys, units)
            E = max(E, float(np.abs(kw["v"]) @ (S.max(axis=0) - S.min(axis=0))))
    np.testing.assert_allclose(scale.sigma, sigma, rtol=1e-12)
    np.testing.assert_allclose(scale.head_size, E, rtol=1e-12)
    for norm in (0.0, 0.3, 1.0, 3.0, 10.0, 30.0):
        for _ in range(5):
            W = rng.standard_normal((4, 4))
            W *= norm / np.linalg.norm(W)
            L, G = loss_and_grad(data, W, loss=loss, head=head, **kw)  # type: ignore[arg-type]
            assert np.linalg.norm(G) <= scale.floor(W, L)
