# SPDX-License-Identifier: BSD-3-Clause
"""Regularization paths (Theorem 2): global W, factored (K, Q), local in the score cone."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import NonlinearConstraint, minimize

import svmgeo as sg
from svmgeo.gd import RiskOracle, loss_and_grad

RADII = [0.5, 1, 2, 4, 8, 16, 32, 64, 128]


def _data(seed: int) -> sg.TokenData:
    # (n, T, d) = (4, 5, 8): d >= max(T - 1, n), so Att-SVM(opt) is feasible (Theorem 1)
    return sg.random_data(4, 5, 8, seed=seed, score_gap=0.05)


# ---------------------------------------------------------------- the GD module's entry point


def test_risk_oracle_matches_loss_and_grad() -> None:
    data = _data(0)
    W = np.random.default_rng(1).standard_normal((8, 8))
    for loss in ("logistic", "exponential", "correlation"):
        value = RiskOracle(data, loss=loss)(W)
        L, G = loss_and_grad(data, W, loss=loss)
        np.testing.assert_allclose(value.loss, L, rtol=1e-14)
        np.testing.assert_allclose(np.exp(value.M) * value.G, G, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("loss", ["logistic", "exponential", "correlation"])
def test_log_excess_risk(loss: str) -> None:
    data = _data(0)
    oracle = RiskOracle(data, loss=loss)
    W = sg.att_svm(data).W
    assert W is not None
    # moderate scale: the plain difference L - L* is accurate and must agree
    for s in (0.1, 1.0, 3.0):
        gap = oracle(s * W).loss - oracle.optimal_risk
        np.testing.assert_allclose(oracle.log_excess_risk(s * W), np.log(gap), rtol=1e-10)
    # far out L - L* underflows; along W^mm (every margin >= 1, some = 1) the log gap
    # decreases with slope -1 per unit of scale up to a bounded term
    far = np.array([oracle.log_excess_risk(s * W) for s in (200.0, 400.0, 800.0)])
    assert np.all(np.isfinite(far))
    assert oracle(800.0 * W).loss - oracle.optimal_risk == 0.0  # the plain difference is gone
    np.testing.assert_allclose(np.diff(far) / np.array([200.0, 400.0]), -1.0, atol=1e-3)


# ---------------------------------------------------------------- Theorem 2, W


@pytest.mark.parametrize("seed", [0, 2, 4])
@pytest.mark.parametrize("loss", ["logistic", "exponential", "correlation"])
def test_path_direction_approaches_w_mm(seed: int, loss: str) -> None:
    data = _data(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.ConvergenceWarning)
        path = sg.regularization_path(data, RADII, loss=loss)
    W_mm = sg.att_svm(data).W
    np.testing.assert_allclose(path.reference, W_mm)
    norms = np.linalg.norm(path.W, axis=(1, 2))
    np.testing.assert_allclose(norms, RADII, rtol=1e-12)  # the minimizer sits on the sphere
    assert path.converged.all() and np.all(path.stationarity <= 1e-6)
    corr = path.correlation
    assert corr is not None
    np.testing.assert_allclose(corr, [sg.correlation(W, W_mm) for W in path.W])
    # measured: increasing along the whole path, 1 - corr < 5e-4 at R = 128 on these seeds
    # (examples/regpath_seeds.py prints them)
    assert np.all(np.diff(corr) > 0.0)
    assert corr[-1] > 0.999
    assert np.all(np.diff(path.log_loss_gap) < 0.0)  # L(W_R) - L* decreases with R


def test_path_that_follows_a_non_optimal_lot() -> None:
    # regression, seed 6: the warm-started path from W = 0 settles near a locally optimal
    # selection beta != opt (the problem is nonconvex; the path is a local method); F =
    # log(L - L*) flattened there and the path stalled at R = 64 (residual 2e-3). With the gap
    # to the currently selected tokens' risk it converges, in direction to W^mm_beta.
    data = _data(6)
    radii = [*RADII, 256]
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.ConvergenceWarning)
        path = sg.regularization_path(data, radii)
    assert path.converged.all() and np.all(path.stationarity <= 1e-6)
    np.testing.assert_allclose(np.linalg.norm(path.W, axis=(1, 2)), radii, rtol=1e-12)
    beta = RiskOracle(data)(path.W[-1]).selected[:, 0]
    assert not np.array_equal(beta, sg.optimal_tokens(data))
    assert sg.is_locally_optimal(data, beta)
    W_b = sg.att_svm(data, beta).W
    assert W_b is not None
    corr = np.array([sg.correlation(W, W_b) for W in path.W])
    # measured: 1 - corr = 0.35 at R = 0.5, 1.3e-3 at R = 64, 8.7e-5 at R = 256
    assert np.all(np.diff(corr) > 0.0)
    assert corr[-1] > 0.9998
    assert np.all(np.diff(path.loss) <= 1e-15)  # nested balls: the minimum cannot grow


def test_correlation_loss_is_linear_in_f() -> None:
    # l(u) = -u: L(W) - L* = (1/n) sum (gamma_opt - f), bounded by max score gap; Theorem 2
    # applies (l strictly decreasing) and the path follows the logistic one closely
    data = _data(2)
    corr = sg.regularization_path(data, RADII, loss="correlation")
    logi = sg.regularization_path(data, RADII, loss="logistic")
    gamma = sg.token_scores(data)
    bound = np.mean(gamma.max(axis=1) - gamma.min(axis=1))
    gaps = np.exp(corr.log_loss_gap)
    assert np.all(gaps > 0.0) and np.all(gaps < bound)
    np.testing.assert_allclose(corr.loss, -np.mean(gamma.max(axis=1)) + gaps, rtol=1e-12)
    assert corr.correlation is not None and logi.correlation is not None
    np.testing.assert_allclose(corr.correlation[-1], logi.correlation[-1], atol=1e-4)


@pytest.mark.filterwarnings("ignore:delta_grad == 0.0:UserWarning")
@pytest.mark.parametrize("R", [1.0, 3.0])
def test_optimal_against_trust_constr(R: float) -> None:
    # an independent solver: scipy trust-constr on vec(W) with ||w||^2 <= R^2, minimizing L
    # itself from several starts; the path must match the best of them
    data = _data(3)
    d = data.d
    path = sg.regularization_path(data, [R])

    def f(w: np.ndarray) -> tuple[float, np.ndarray]:
        L, G = loss_and_grad(data, w.reshape(d, d))
        return L, G.ravel()

    ball = NonlinearConstraint(lambda w: w @ w, -np.inf, R * R, jac=lambda w: 2.0 * w)
    rng = np.random.default_rng(0)
    best = np.inf
    for _ in range(4):
        w0 = rng.standard_normal(d * d)
        w0 *= 0.5 * R / np.linalg.norm(w0)
        out = minimize(
            f,
            w0,
            jac=True,
            method="trust-constr",
            constraints=[ball],
            options={"gtol": 1e-12, "xtol": 1e-14, "maxiter": 3000},
        )
        best = min(best, float(out.fun))
    np.testing.assert_allclose(path.loss[0], best, rtol=1e-8)
    assert path.stationarity[0] <= 1e-6


def test_concave_head_stationary() -> None:
    # h(x) = v'x - lam ||x||^2; each path point is a KKT point of the ball: grad L points
    # inwards and its tangential part is below tol (recomputed here with loss_and_grad)
    data = _data(0)
    radii = [0.5, 1, 2, 4, 8, 16]
    path = sg.regularization_path(data, radii, head="concave", lam=0.5)
    assert path.converged.all() and np.all(path.stationarity <= 1e-6)
    np.testing.assert_allclose(np.linalg.norm(path.W, axis=(1, 2)), radii, rtol=1e-12)
    for W, L_path in zip(path.W, path.loss, strict=True):
        L, G = loss_and_grad(data, W, head="concave", lam=0.5)
        np.testing.assert_allclose(L, L_path, rtol=1e-14)
        w = W / np.linalg.norm(W)
        assert np.vdot(G, w) < 0.0
        tangential = np.linalg.norm(G - np.vdot(G, w) * w)
        assert tangential <= 1e-6 * max(1.0, float(np.linalg.norm(G)))
    assert np.all(np.diff(path.loss) < 0.0)  # nested balls: the minimum cannot grow


def test_relu_head_with_live_units_equals_linear_head() -> None:
    # tokens x = (1, xi): every unit with a large bias is active on every token, hence on
    # every convex combination; then h(X's) = (V w)' X's and the paths must agree
    rng = np.random.default_rng(5)
    n, T, d, p = 4, 5, 8, 3
    X = np.concatenate([np.ones((n, T, 1)), 0.3 * rng.standard_normal((n, T, d - 1))], axis=2)
    V = np.concatenate([np.full((1, p), 10.0), rng.standard_normal((d - 1, p))], axis=0)
    w = rng.standard_normal(p)
    Y = np.where(rng.standard_normal(n) > 0, 1.0, -1.0)
    data = sg.TokenData(X, Y=Y, v=V @ w, Z=rng.standard_normal((n, d)))
    assert np.all(np.einsum("ntd,dp->ntp", X, V) > 0)
    radii = [0.5, 1, 2, 4]
    relu = sg.regularization_path(data, radii, head="relu", V=V, v=w)
    lin = sg.regularization_path(data, radii)
    assert relu.converged.all() and np.all(relu.stationarity <= 1e-6)
    np.testing.assert_allclose(relu.loss, lin.loss, rtol=1e-10)
    np.testing.assert_allclose(relu.W, lin.W, atol=1e-4 * max(radii))


# ---------------------------------------------------------------- Theorem 2, (K, Q)


@pytest.mark.parametrize("seed", [0, 2])
def test_kq_path_direction_approaches_nuclear_svm(seed: int) -> None:
    data = _data(seed)
    path = sg.regularization_path(data, RADII, param="KQ")
    assert path.K is not None and path.Q is not None
    np.testing.assert_allclose(path.W, path.K @ np.swapaxes(path.Q, 1, 2), atol=1e-12)
    sq = np.sum(path.K**2, axis=(1, 2)) + np.sum(path.Q**2, axis=(1, 2))
    assert np.all(sq <= 2.0 * np.asarray(RADII) * (1 + 1e-12))
    assert path.converged.all()
    W_star = sg.att_svm(data, norm="nuc").W
    assert W_star is not None
    corr = path.correlation
    assert corr is not None
    np.testing.assert_allclose(corr, [sg.correlation(W, W_star) for W in path.W])
    # measured: 1 - corr goes 0.8 (R <= 2) ... 0.2 (R = 8) ... < 0.01 (R = 128), increasing
    assert np.all(np.diff(corr) > 0.0)
    assert corr[-1] > 0.99
    W_fro = sg.att_svm(data).W
    assert sg.correlation(path.W[-1], W_fro) < corr[-1]  # it is the nuclear direction


def test_kq_path_with_a_rank_bound_is_compared_with_the_rank_bounded_svm() -> None:
    """With factors of width m < d the default reference is Att-SVM*(opt) with rank <= m
    (Theorem 2's set): a rank-2 reference is out of reach of a rank-1 K Q^T (its correlation
    plateaued at 0.92 on these data)."""
    data = sg.random_data(3, 3, 3, seed=0, score_gap=0.1)
    path = sg.regularization_path(data, [1, 4, 16, 64], param="KQ", m=1)
    ref = sg.att_svm(data, sg.optimal_tokens(data), norm="nuc", rank=1).W
    assert path.correlation is not None
    np.testing.assert_allclose(path.correlation, [sg.correlation(W, ref) for W in path.W])
    assert path.correlation[-1] > 0.999


def test_no_default_reference_for_a_nonlinear_head() -> None:
    """Another head's limit is not Att-SVM(opt) of the linear head's scores (MATH-NOTES 2):
    no correlation unless a reference is given (it raised without a linear v)."""
    X = sg.random_data(3, 3, 2, seed=0).X
    data = sg.TokenData(X, Z=np.ones((3, 2)), Y=[1, -1, 1])
    path = sg.regularization_path(data, [1, 2], head="relu", v=np.ones(2), V=np.eye(2))
    assert path.correlation is None
    ref = np.eye(2)
    given = sg.regularization_path(data, [1, 2], head="relu", v=np.ones(2), V=np.eye(2),
                                   reference=ref)  # fmt: skip
    np.testing.assert_allclose(given.correlation, [sg.correlation(W, ref) for W in given.W])


# ---------------------------------------------------------------- local path


def test_local_path_with_a_finite_minimizer() -> None:
    # seed 11, alpha = [0, 0, 0, 4] (locally optimal), eps = eps_max / 2: the cone admits a
    # finite W with L(W) < L_alpha (the witness token beats the high-score ones only by
    # eps ||W||, so they keep weight); every W with direction near W^mm_alpha and a large norm
    # has L close to L_alpha from above, so the local path cannot turn towards W^mm_alpha. The
    # path must find that interior minimizer and stay there (nested feasible sets).
    data = _data(11)
    alpha = np.array([0, 0, 0, 4])
    assert sg.is_locally_optimal(data, alpha)
    W_a = sg.att_svm(data, alpha).W
    assert W_a is not None
    eps = 0.5 * sg.score_cone_margin(data, alpha, W_a) / np.linalg.norm(W_a)
    radii = [4, 8, 16, 32, 64, 128]
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.ConvergenceWarning)
        path = sg.regularization_path(data, radii, alpha=alpha, eps=eps, local_set="ball")
    assert path.converged.all()
    for W in path.W:
        assert sg.in_score_cone(data, alpha, W, eps)
    L_a = _selection_risk(data, alpha, "logistic")
    assert path.loss[-1] < L_a - 1e-4
    assert np.all(np.diff(path.loss) <= 1e-12)
    norms = np.linalg.norm(path.W, axis=(1, 2))
    assert norms[-1] < 0.5 * radii[-1]  # inside the ball: the ball constraint is inactive
    np.testing.assert_allclose(norms[-2:], norms[-1], rtol=1e-4)
    np.testing.assert_allclose(path.W[-1], path.W[-2], atol=1e-4 * norms[-1])


def _seed6() -> tuple[sg.TokenData, np.ndarray]:
    # a locally optimal alpha != opt (found with sg.locally_optimal_selections(data))
    data = _data(6)
    alpha = np.array([4, 1, 0, 0])
    assert sg.is_locally_optimal(data, alpha)
    return data, alpha


def _selection_risk(data: sg.TokenData, alpha: np.ndarray, loss: str) -> float:
    gamma = np.take_along_axis(sg.token_scores(data), alpha[:, None], axis=1)[:, 0]
    ell = {
        "logistic": np.log1p(np.exp(-gamma)),
        "exponential": np.exp(-gamma),
        "correlation": -gamma,
    }[loss]
    return float(np.mean(ell))


def _non_optimal_lot(
    seed: int, alpha: list[int]
) -> tuple[sg.TokenData, np.ndarray, np.ndarray, float]:
    """``(data, alpha, W^mm_alpha, eps_max / 2)`` for a non-optimal LOT of ``_data(seed)``."""
    data = _data(seed)
    a = np.array(alpha)
    assert sg.is_locally_optimal(data, a)
    assert not np.array_equal(a, sg.optimal_tokens(data))
    W_a = sg.att_svm(data, a).W
    assert W_a is not None
    return data, a, W_a, float(0.5 * sg.score_cone_margin(data, a, W_a) / np.linalg.norm(W_a))


@pytest.mark.parametrize("loss", ["logistic", "exponential", "correlation"])
def test_selection_gap(loss: str) -> None:
    from svmgeo.analysis._regpath import _Objective, _SelectionGap

    data, alpha = _seed6()
    gap = _SelectionGap(_Objective(data, loss, "linear", None, None, None), alpha[:, None])
    L_a = _selection_risk(data, alpha, loss)
    W_a, W_opt = sg.att_svm(data, alpha).W, sg.att_svm(data).W
    assert W_a is not None and W_opt is not None
    # moderate scale: the signed gap equals the plain difference L - L_alpha, of either sign
    # (along W^mm_opt the high-score tokens win, so L < L_alpha)
    signs = set()
    for W in (0.1 * W_a, 3.0 * W_a, 3.0 * W_opt, 10.0 * W_opt):
        sign, log_abs = gap.log_gap(W)
        plain = loss_and_grad(data, W, loss=loss)[0] - L_a
        np.testing.assert_allclose(sign * np.exp(log_abs), plain, rtol=1e-9)
        signs.add(sign)
    assert signs == {-1.0, 1.0}
    # far out along W^mm_alpha the plain difference is gone; the log gap keeps slope -1
    far = np.array([gap.log_gap(s * W_a) for s in (200.0, 400.0, 800.0)])
    assert np.all(far[:, 0] == 1.0)
    plain = loss_and_grad(data, 800.0 * W_a, loss=loss)[0] - L_a
    assert abs(plain) <= 4.0 * np.finfo(float).eps * max(1.0, abs(L_a))  # round-off only
    np.testing.assert_allclose(np.diff(far[:, 1]) / 200.0 / np.array([1, 2]), -1.0, atol=1e-3)
    # F = sign(g) log(1 + |g|/s) and its gradient (central differences), both signs of g
    rng = np.random.default_rng(0)
    for W in (2.0 * W_a, 3.0 * W_opt):
        W = W + 0.1 * rng.standard_normal(W.shape)
        gap.reset(0.5 * W)
        F, G = gap(W)
        sign, log_abs = gap.log_gap(W)
        np.testing.assert_allclose(F, sign * np.log1p(np.exp(log_abs - gap.log_scale)))
        D = rng.standard_normal(W.shape)
        h = 1e-6
        fd = (gap(W + h * D)[0] - gap(W - h * D)[0]) / (2.0 * h)
        np.testing.assert_allclose(np.vdot(G, D), fd, rtol=1e-6)


@pytest.mark.parametrize(
    ("seed", "alpha", "radii", "min_corr"),
    [
        # found with sg.locally_optimal_selections(data); measured 1 - corr: 0.44 at R = 0.5,
        # 4e-4 at R = 128 (seed 2); 0.50 at R = 0.5, 1.8e-3 at R = 64, 6.6e-5 at R = 256 (seed 6)
        (2, [0, 2, 4, 3], RADII, 0.999),
        # regression: the cone stays active up to R = 64, where the log gap to the *global*
        # optimum flattened and the earlier objective stalled (residuals 0.6 and 0.96)
        (6, [4, 1, 0, 0], [*RADII, 256], 0.9998),
    ],
)
def test_local_path_for_a_non_optimal_lot(
    seed: int, alpha: list[int], radii: list[float], min_corr: float
) -> None:
    data, a, W_a, eps = _non_optimal_lot(seed, alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.ConvergenceWarning)
        path = sg.regularization_path(data, radii, alpha=a, eps=eps, local_set="ball")
    assert path.converged.all() and np.all(path.stationarity <= 1e-6)
    np.testing.assert_allclose(np.linalg.norm(path.W, axis=(1, 2)), radii, rtol=1e-9)
    for W in path.W:
        assert sg.in_score_cone(data, a, W, eps)
    assert path.cone_margin is not None
    assert np.all(path.cone_margin >= eps * (1.0 - 1e-9))
    assert np.any(path.cone_margin <= eps * (1.0 + 1e-6))  # the cone is active early on
    corr = path.correlation
    assert corr is not None
    np.testing.assert_allclose(corr, [sg.correlation(W, W_a) for W in path.W])
    assert np.all(np.diff(corr) > 0.0)
    assert corr[-1] > min_corr
    glob = sg.regularization_path(data, radii)
    assert np.all(path.loss >= glob.loss - 1e-12)  # a restriction cannot do better


# ---------------------------------------------------------------- local path on the sphere

# The 13 non-optimal LOTs of docs/analysis.md: random_data(4, 5, 8, seed=s, score_gap=0.05),
# s = 0 ... 11, at most three per seed (found with sg.locally_optimal_selections). On the ball
# (the statement as read) 7 of them end at a finite W with L < L_alpha (MATH-NOTES §1.2).
LOT13 = [
    (2, [0, 2, 4, 3]),
    (3, [2, 0, 0, 1]),
    (3, [2, 0, 3, 1]),
    (3, [2, 2, 0, 1]),
    (5, [1, 4, 1, 4]),
    (6, [4, 1, 0, 0]),
    (6, [4, 1, 0, 1]),
    (6, [4, 1, 2, 0]),
    (8, [3, 3, 3, 2]),
    (9, [0, 4, 3, 4]),
    (11, [0, 0, 0, 4]),
    (11, [0, 0, 4, 4]),
    (11, [2, 0, 4, 2]),
]
SPHERE_RADII = [32, 128, 512]


def _sphere_path(seed: int, alpha: list[int]) -> sg.RegularizationPath:
    data, a, W_a, eps = _non_optimal_lot(seed, alpha)
    with warnings.catch_warnings():
        # measured: a few intermediate radii stop above tol (seed 5 at R = 32, seed 11
        # [0, 0, 0, 4] at R = 128, seed 3 [2, 0, 0, 1] at R = 32: 1.1e-6); not the last one
        warnings.simplefilter("ignore", sg.ConvergenceWarning)
        path = sg.regularization_path(data, SPHERE_RADII, alpha=a, eps=eps)
    assert path.local_set == "sphere"
    np.testing.assert_allclose(np.linalg.norm(path.W, axis=(1, 2)), SPHERE_RADII, rtol=1e-9)
    for W in path.W:
        assert sg.in_score_cone(data, a, W, eps)
    assert path.correlation is not None
    np.testing.assert_allclose(path.correlation, [sg.correlation(W, W_a) for W in path.W])
    return path


def _check_sphere_converges(path: sg.RegularizationPath) -> None:
    assert path.correlation is not None
    # measured (docs/regpath.md): 1 - corr <= 8.3e-5 at R = 512 on all 13 cases
    assert 1.0 - path.correlation[-1] <= 1e-4
    assert path.converged[-1] and path.stationarity[-1] <= 1e-6


@pytest.mark.parametrize(("seed", "alpha"), [(9, [0, 4, 3, 4]), (6, [4, 1, 0, 1])])
def test_sphere_path_converges_where_the_ball_path_does_not(seed: int, alpha: list[int]) -> None:
    # two former failures of the ball path (finite minimizer with L < L_alpha, ||W|| ~ 12-17)
    path = _sphere_path(seed, alpha)
    _check_sphere_converges(path)


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "alpha"), LOT13, ids=[f"{s}-{a}" for s, a in LOT13])
def test_sphere_path_converges_on_the_13_lot_cases(seed: int, alpha: list[int]) -> None:
    path = _sphere_path(seed, alpha)
    _check_sphere_converges(path)


def test_ball_counterexample_and_sphere_path() -> None:
    # MATH-NOTES §1.2: one sequence, z = e1, v = e3, tokens x_alpha = (1, 0, 1),
    # x_t = 0, x_tau = (-P, 0, 1 + D), P = 20, D = 10. alpha = 0 is a LOT (its only support
    # token t scores lower); W_0 = 0.05 e1 e1^T is in C_eps for every eps <= P and has
    # L(W_0) < L_alpha, so every ball minimizer beats L_alpha at a norm below log(D)/eps and
    # the ball path cannot turn towards W^mm_alpha. On the sphere L >= L_alpha for R >= R_0.
    X = np.array([[[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [-20.0, 0.0, 11.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0, 0.0]]), v=np.array([0.0, 0.0, 1.0]))
    a = np.array([0])
    assert sg.is_locally_optimal(data, a)
    W_a = sg.att_svm(data, a).W
    assert W_a is not None
    np.testing.assert_allclose(W_a, 0.5 * np.array([[1, 0, 0], [0, 0, 0], [1, 0, 0]]), atol=1e-9)
    eps = 0.5 * sg.score_cone_margin(data, a, W_a) / np.linalg.norm(W_a)
    L_a = _selection_risk(data, a, "logistic")
    W0 = np.zeros((3, 3))
    W0[0, 0] = 0.05
    assert sg.in_score_cone(data, a, W0, eps)
    assert loss_and_grad(data, W0)[0] < L_a - 0.19  # measured: L(W_0) - L_alpha = -0.199
    radii = [1.0, 4.0, 16.0, 64.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.ConvergenceWarning)
        path = sg.regularization_path(data, radii, alpha=a, eps=eps)
    assert path.converged.all()
    np.testing.assert_allclose(np.linalg.norm(path.W, axis=(1, 2)), radii, rtol=1e-9)
    assert path.correlation is not None
    assert 1.0 - path.correlation[-1] <= 1e-12
    assert np.all(path.loss[1:] >= L_a * (1 - 1e-12))  # beyond R_0 = log(D)/eps, L >= L_alpha


# ---------------------------------------------------------------- bad input


def test_bad_input() -> None:
    data = _data(0)
    with pytest.raises(sg.ProblemError, match="radii"):
        sg.regularization_path(data, [1, -2, 3])
    with pytest.raises(sg.ProblemError, match="radii"):
        sg.regularization_path(data, [0, 1])
    with pytest.raises(sg.ProblemError, match="strictly increasing"):
        sg.regularization_path(data, [1, 4, 2])
    with pytest.raises(sg.ProblemError, match="radii"):
        sg.regularization_path(data, [])
    with pytest.raises(sg.ProblemError, match="param"):
        sg.regularization_path(data, [1], param="V")
    with pytest.raises(sg.ProblemError, match="'m'"):
        sg.regularization_path(data, [1], param="KQ", m=0)
    with pytest.raises(sg.ProblemError, match=r"'m' parameter.*more than.*memory"):
        sg.regularization_path(data, [1], param="KQ", m=10**15)  # allocated until killed
    with pytest.raises(sg.ProblemError, match="'m'"):
        sg.regularization_path(data, [1], m=2)
    with pytest.raises(sg.ProblemError, match="loss"):
        sg.regularization_path(data, [1], loss="hinge")
    alpha = sg.optimal_tokens(data)
    with pytest.raises(sg.ProblemError, match="both alpha and eps"):
        sg.regularization_path(data, [1], alpha=alpha)
    with pytest.raises(sg.ProblemError, match="'eps'"):
        sg.regularization_path(data, [1], alpha=alpha, eps=-0.1)
    data2 = _data(2)
    alpha2 = np.array([0, 2, 4, 3])
    with pytest.raises(sg.ProblemError, match=r"'eps'.*must be in"):
        sg.regularization_path(data2, [1], alpha=alpha2, eps=10.0)
    with pytest.raises(sg.ProblemError, match="param='W' only"):
        sg.regularization_path(data2, [1], param="KQ", alpha=alpha2, eps=0.01)
    with pytest.raises(sg.ProblemError, match="TokenData"):
        sg.regularization_path(np.zeros((2, 3, 4)), [1])  # type: ignore[arg-type]
    with pytest.raises(sg.ProblemError, match=r"'local_set'.*local path only"):
        sg.regularization_path(data, [1], local_set="ball")
    with pytest.raises(sg.ProblemError, match="'local_set'"):
        sg.regularization_path(data2, [1], alpha=alpha2, eps=0.01, local_set="disc")
    with pytest.raises(sg.ProblemError, match="nonzero"):
        sg.regularization_path(data2, [1], alpha=alpha2, eps=0.01, init=np.zeros((8, 8)))


def test_not_converged_warns() -> None:
    data = _data(0)
    with pytest.warns(sg.ConvergenceWarning, match="max_iter"):
        path = sg.regularization_path(data, [4.0], max_iter=1)
    assert not path.converged[0] and path.stationarity[0] > 1e-6


def test_local_path_says_when_no_eps_exists() -> None:
    """A LOT whose W^mm lies outside every score cone (MATH-NOTES 1.1): the error offered the
    empty range (0, -0.023) and asked for a smaller eps."""
    data = sg.random_data(3, 4, 3, seed=2)
    with pytest.raises(sg.ProblemError, match="no eps works"):
        sg.regularization_path(data, [1, 2], alpha=[1, 3, 1], eps=0.01)


def test_local_path_keeps_alpha_in_the_selection_shape() -> None:
    """RegularizationPath.alpha is the selection as passed: (n,) for single-query data (it was
    (n, 1)), (n, K) for several queries."""
    data, alpha = _seed6()
    W_a = sg.att_svm(data, alpha).W
    eps = 0.5 * sg.score_cone_margin(data, alpha, W_a) / np.linalg.norm(W_a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.ConvergenceWarning)
        path = sg.regularization_path(data, [4.0], alpha=alpha, eps=eps, local_set="ball")
    assert path.alpha.shape == data.selection_shape == (data.n,)
    np.testing.assert_array_equal(path.alpha, alpha)
    multi = sg.random_data(3, 4, 6, seed=0, n_queries=2)
    a2 = sg.optimal_tokens(multi)
    W2 = sg.att_svm(multi, a2).W
    eps2 = min(0.5 * sg.score_cone_margin(multi, a2, W2) / np.linalg.norm(W2), 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.ConvergenceWarning)
        path2 = sg.regularization_path(multi, [4.0], alpha=a2, eps=eps2, local_set="ball")
    assert path2.alpha.shape == multi.selection_shape == (multi.n, multi.K)
    np.testing.assert_array_equal(path2.alpha, a2)


def test_local_path_errors_echo_alpha_as_given() -> None:
    data = sg.random_data(3, 4, 3, seed=2)
    with pytest.raises(sg.ProblemError, match=r"alpha=\[1, 3, 1\]"):
        sg.regularization_path(data, [1, 2], alpha=[1, 3, 1], eps=0.01)


def test_the_local_path_cone_is_the_trained_heads() -> None:
    """The score cone comes from the scores of the head trained (v=), not the data's own v.
    With v = -data.v, the data's optimal selection is the lowest-scoring one: not a LOT for
    v's scores (its cone is empty), and the local path is refused (it ran an unconstrained
    path, reporting cone margin inf). The selection that is optimal under v has the whole space
    as its cone (margin inf)."""
    data = sg.random_data(3, 4, 5, seed=0)
    flipped = -np.asarray(data.v)
    with pytest.raises(sg.ProblemError, match="is not locally optimal for the scores of this"):
        sg.regularization_path(data, [1, 4], v=flipped, alpha=sg.optimal_tokens(data), eps=0.01)
    own = sg.TokenData(np.asarray(data.X), Y=np.asarray(data.Y), Z=np.asarray(data.Z), v=flipped)
    alpha = sg.optimal_tokens(own)
    assert not np.array_equal(alpha, sg.optimal_tokens(data))  # the case itself
    path = sg.regularization_path(data, [1, 4], v=flipped, alpha=alpha, eps=0.01)
    assert np.all(np.isinf(path.cone_margin)) and np.all(path.cone_margin > 0)
    for W in path.W:  # the path's answer by the scores of v: every W in the (whole-space) cone
        assert sg.score_cone_margin(own, alpha, W) == np.inf


def test_the_local_path_with_a_whole_space_cone_runs_its_local_solver() -> None:
    """No query has a higher-scoring token (alpha = opt): the cone has no rows, which the SLSQP
    stage (reached with a tight tol) reshaped into a numpy ValueError."""
    data = sg.random_data(3, 4, 5, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tolerance this tight may warn that it is not met
        path = sg.regularization_path(
            data, [1, 4], alpha=sg.optimal_tokens(data), eps=0.01, tol=1e-8
        )
    assert len(path) == 2 and np.all(np.isinf(path.cone_margin))


def test_the_local_path_needs_token_scores() -> None:
    data = sg.random_data(3, 4, 5, seed=0)
    V = np.random.default_rng(0).standard_normal((5, 3))
    with pytest.raises(sg.ProblemError, match="head='relu' has no per-token score"):
        sg.regularization_path(data, [1, 4], head="relu", V=V, alpha=[0, 0, 3], eps=0.01)


def test_a_gradient_underflowed_below_the_radius_scale_is_not_called_stationary() -> None:
    """A single large radius: the gap fell ~700 e-folds below its scale at the radius's start
    within one step, the gradient underflowed to zero, and that point (one step from W = 0,
    correlation 0.604 with W^mm) was reported converged with stationarity 0. The path now
    measures at the gap's own scale and goes on: it ends where the warm path ends."""
    data = sg.random_data(2, 3, 3, seed=0, score_gap=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cold = sg.regularization_path(data, [1e4])
        warm = sg.regularization_path(data, [1.0, 10.0, 100.0, 1e3, 1e4])
    assert cold.converged[0] and warm.converged[-1]
    assert cold.correlation[0] > 1 - 1e-7
    np.testing.assert_allclose(cold.log_loss_gap[0], warm.log_loss_gap[-1], rtol=1e-6)


def test_a_radius_beyond_the_risk_range_is_refused() -> None:
    """R = 1e300 ran with numpy's overflow warning and returned W = 0 after one iteration."""
    data = sg.random_data(2, 3, 3, seed=0)
    with pytest.raises(sg.ProblemError, match=r"go up to 1e\+300, beyond the largest"):
        sg.regularization_path(data, [1.0, 1e300])


def test_the_local_path_is_not_stopped_by_an_underflowed_gradient() -> None:
    """The local path at R = 1e3 kept its start R W^mm_alpha / ||W^mm_alpha|| with
    stationarity exactly 0: the gap had fallen below the radius's scale and the gradient
    underflowed. Measured at the gap's own scale, the start is not stationary; the path now
    moves off it (to 1 - 3e-6 correlation at this finite radius) and converges. The ball path,
    which since session 61 also solves the radii 250, 62.5, ... between, ends lower still, at
    a finite W (||W|| = 31, L = 0.5155 against 0.5269 at the start; the ball counterexample of
    docs/regpath.md)."""
    data = sg.random_data(3, 4, 4, seed=0, score_gap=0.1)
    alpha = np.asarray(sg.locally_optimal_selections(data).selections[0])
    W_a = np.asarray(sg.att_svm(data, alpha).W)
    start = sg.gd.RiskOracle(data).value(1e3 * W_a / np.linalg.norm(W_a))
    for local_set in ("ball", "sphere"):
        path = sg.regularization_path(data, [1.0, 1e3], alpha=alpha, eps=1e-3, local_set=local_set)
        assert path.converged.all() and path.stationarity[1] > 0.0
        if local_set == "sphere":
            assert 1e-7 < 1.0 - path.correlation[1] < 1e-4
        else:
            assert path.loss[1] < start - 1e-3 and np.linalg.norm(path.W[1]) < 1e2


def test_the_kq_path_is_not_called_converged_inside_the_ball_on_a_wrong_selection() -> None:
    """Regression: from seeded random factors at R = 64 the (K, Q) path saturated on tokens
    (2, 0, 2) (opt is (1, 1, 1)) strictly inside the ball, where log(L - L*) has a gradient
    ~1e-27: it reported converged at every radius (0 iterations after the first) with
    correlation -0.81 and L = 0.786, above the 0.411 the W path reaches. It now minimizes the
    selection gap of the tokens K Q^T selects, re-measured when a solve ends, as the W path."""
    data = sg.random_data(3, 3, 3, seed=0, score_gap=0.05)
    radii = [64.0, 256.0, 1024.0]
    kq = sg.regularization_path(data, radii, param="KQ")
    w = sg.regularization_path(data, radii, param="W")
    for R, K, Q, ok in zip(radii, kq.K, kq.Q, kq.converged, strict=True):
        assert not ok or np.sum(K**2) + np.sum(Q**2) >= 2.0 * R * (1.0 - 1e-9)
    np.testing.assert_allclose(kq.loss, w.loss, rtol=1e-6)
    assert np.all(kq.correlation > 0.999)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: sg.regularization_path(
                sg.TokenData(np.ones((2, 1, 2)), Z=np.ones((2, 2)), v=np.ones(2)),
                [1, 4],
                alpha=[0, 0],
                eps=0.1,
            ),
            "W\\^mm_alpha = 0",
        ),
        (
            lambda: sg.regularization_path(
                sg.random_data(3, 3, 3, seed=0), [1, 2], head="concave", lam=-1
            ),
            "'lam' parameter of regularization_path",
        ),
        (
            lambda: sg.regularization_path(sg.random_data(3, 3, 3, seed=0), [True, 2]),
            "'radii' parameter of regularization_path must hold numbers",
        ),
    ],
)
def test_bad_local_starts_and_arguments_are_named(call, match) -> None:
    """Regression: the local path from W^mm_alpha = 0 (no query sees two keys) raised a bare
    ZeroDivisionError; a negative lam was reported as train's; a bool radius was taken as 1."""
    with pytest.raises(sg.ProblemError, match=match):
        call()
