# SPDX-License-Identifier: BSD-3-Clause
"""Theorem statements of TF-SVM not covered elsewhere, each under exactly its hypotheses.

* App. E: the W- and (K, Q)-regularization paths correspond one to one with equal costs;
* Theorem 3(2): under B.1/B.2, GD with η ≤ 1/L_W descends and moves along W^mm at every step;
* Theorem 4: the good-initial-gradient check, and no stationary points in C_{μ,R}(W^mm);
* Theorem 5: no stationary points in C_{μ,R}(W^mm_α) of a LOT α, and GD moves along W^mm_α;
* §5.4 cone lemma with the caveat of MATH-NOTES §1.1;
* the sequence / causal regularization-path corollary (App. E).

Limits ("as R → ∞") are not asserted at a finite R: each test asserts a finite statement the
theorem's proof rests on, at radii where its quantitative hypothesis (checked in the test)
holds. Conjectures (over-parameterization, Gen-SVM) are measured in experiments, never here.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

import svmgeo as sg
from svmgeo.gd import RiskOracle, loss_and_grad
from svmgeo.testing import (
    KINDS,
    LOSSES,
    SINGLE_QUERY,
    Case,
    build_b1_case,
    build_b2_case,
    build_case,
    cases,
    examples,
    risk_grad,
    softmax_rows,
    visible_scores,
)

EPS = np.finfo(float).eps


def _unique_opt_svm(data: sg.TokenData, alpha: np.ndarray | None = None) -> np.ndarray:
    """W^mm of alpha (default opt); rejects ties, infeasible, inaccurate or trivial cases."""
    if alpha is None:
        try:
            alpha = sg.optimal_tokens(data)
        except sg.TieError:
            assume(False)
    res = sg.att_svm(data, alpha)
    assume(res.success and res.W is not None and res.constraints.N > 0)
    assert res.W is not None
    return np.asarray(res.W)


def _cone_point(W_ref: np.ndarray, mu: float, rng: np.random.Generator) -> np.ndarray:
    """A unit matrix with corr(., W_ref) = 1 - mu (a point on the boundary of C_mu)."""
    u = W_ref / np.linalg.norm(W_ref)
    P = rng.normal(size=u.shape)
    P -= np.vdot(P, u) * u
    if np.linalg.norm(P) <= 1e-12:  # d = 1: the cone is a ray
        return u
    P /= np.linalg.norm(P)
    c = 1.0 - mu
    return c * u + np.sqrt(max(0.0, 1.0 - c * c)) * P


def _selected_dominates(data: sg.TokenData, W: np.ndarray, alpha: np.ndarray) -> bool:
    """Y f_ik > every visible score other than gamma_ik,alpha (f_ik strictly between)."""
    g = visible_scores(data)
    s = softmax_rows(data, W)
    f = np.sum(np.where(np.isfinite(g), g, 0.0) * s, axis=2)
    a = alpha.reshape(data.n, data.K)
    others = g.copy()
    np.put_along_axis(others, a[:, :, None], -np.inf, axis=2)
    return bool(np.all(f > others.max(axis=2)))


def _sign_inner_grad(data: sg.TokenData, W: np.ndarray, D: np.ndarray, loss: str) -> float:
    """sign <grad L(W), D> from the GD module's log-domain gradient (exact where the plain
    gradient underflows)."""
    r = RiskOracle(data, loss=loss)(W)
    return float(np.sign(np.vdot(r.G, D)))


# ------------------------------------------------------------------ App. E: W <-> (K, Q)


@settings(max_examples=examples(1))
@given(case=cases(), seed=st.integers(0, 2**32 - 1), loss=st.sampled_from(LOSSES))
def test_kq_and_w_paths_have_equal_costs_at_every_radius(case: Case, seed: int, loss: str) -> None:
    """min_{||W||_* <= R, rank W <= m} L(W) = min_{||K||^2 + ||Q||^2 <= 2R} L(KQ^T) for every R:
    every feasible (K, Q) gives W = KQ^T with ||W||_* <= (||K||^2 + ||Q||^2)/2, and every
    feasible W of rank <= m its balanced factors K = U S^1/2, Q = V S^1/2 with
    ||K||^2 + ||Q||^2 = 2||W||_*; the cost is L(W) on both sides."""
    data = case.data
    d = data.d
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, d + 1))
    R = float(rng.uniform(0.1, 10.0))
    # (K, Q) -> W
    K, Q = rng.normal(size=(d, m)), rng.normal(size=(d, m))
    scale = np.sqrt(2.0 * R / (np.sum(K**2) + np.sum(Q**2))) * rng.uniform(0.1, 1.0)
    K, Q = scale * K, scale * Q
    W = K @ Q.T
    assert np.linalg.norm(W, "nuc") <= 0.5 * (np.sum(K**2) + np.sum(Q**2)) * (1 + 1e-12)
    LKQ, (GK, GQ) = loss_and_grad(data, (K, Q), loss=loss)
    LW, GW = loss_and_grad(data, W, loss=loss)
    np.testing.assert_allclose(LKQ, LW, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(GK, GW @ Q, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(GQ, GW.T @ K, rtol=1e-10, atol=1e-14)
    # W -> (K, Q): a rank-<= m W in the nuclear ball
    A = rng.normal(size=(d, m)) @ rng.normal(size=(m, d))
    A *= R * rng.uniform(0.1, 1.0) / np.linalg.norm(A, "nuc")
    U, S, Vt = np.linalg.svd(A)
    Kb = U[:, :m] * np.sqrt(S[:m])
    Qb = Vt[:m].T * np.sqrt(S[:m])
    np.testing.assert_allclose(Kb @ Qb.T, A, atol=1e-12 * max(1.0, float(np.abs(A).max())))
    np.testing.assert_allclose(
        0.5 * (np.sum(Kb**2) + np.sum(Qb**2)), np.linalg.norm(A, "nuc"), rtol=1e-12
    )
    assert 0.5 * (np.sum(Kb**2) + np.sum(Qb**2)) <= R * (1 + 1e-12)
    np.testing.assert_allclose(
        loss_and_grad(data, (Kb, Qb), loss=loss)[0],
        loss_and_grad(data, A, loss=loss)[0],
        rtol=1e-13,
        atol=1e-15,
    )


@pytest.mark.slow
@settings(max_examples=examples(0.2))
@given(case=cases(kinds=SINGLE_QUERY, variants=("generic",), overparameterized=True))
def test_kq_path_points_are_points_of_the_nuclear_ball_path(case: Case) -> None:
    """svmgeo's (K, Q) path at R gives W = KQ^T with ||W||_* <= R and the same cost; its
    balanced refactorization is feasible for the (K, Q) ball with that cost (App. E)."""
    data = case.data
    radii = [0.5, 2.0, 8.0]
    path = sg.regularization_path(data, radii, param="KQ", tol=1e-5)
    assert path.K is not None and path.Q is not None
    for R, W, K, Q, L in zip(radii, path.W, path.K, path.Q, path.loss, strict=True):
        assert np.linalg.norm(W, "nuc") <= R * (1 + 1e-9)
        assert 0.5 * (np.sum(K**2) + np.sum(Q**2)) <= R * (1 + 1e-12)
        np.testing.assert_allclose(loss_and_grad(data, W)[0], L, rtol=1e-12)
        U, S, Vt = np.linalg.svd(W)
        Kb, Qb = U * np.sqrt(S), Vt.T * np.sqrt(S)
        assert 0.5 * (np.sum(Kb**2) + np.sum(Qb**2)) <= R * (1 + 1e-9)
        np.testing.assert_allclose(loss_and_grad(data, (Kb, Qb))[0], L, rtol=1e-12)


# ------------------------------------------------------------------ L_W and Theorem 3(2)


@settings(max_examples=examples(1))
@given(case=cases(), seed=st.integers(0, 2**32 - 1), loss=st.sampled_from(LOSSES))
def test_lipschitz_bound_of_the_gradient(case: Case, seed: int, loss: str) -> None:
    """||grad L(W1) - grad L(W2)||_F <= L_W ||W1 - W2||_F (the bound behind eta <= 1/L_W)."""
    from svmgeo.analysis._initial_gradient import gradient_lipschitz_bound

    data = case.data
    L_W = gradient_lipschitz_bound(data, loss)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        W1 = rng.normal(size=(data.d, data.d)) * rng.uniform(0.0, 3.0)
        W2 = W1 + rng.normal(size=W1.shape) * 10.0 ** rng.uniform(-4, 0)
        G1 = risk_grad(data, W1, loss)
        G2 = risk_grad(data, W2, loss)
        lhs = float(np.linalg.norm(G1 - G2))
        assert lhs <= L_W * float(np.linalg.norm(W1 - W2)) * (1 + 1e-9) + 1e-14


def _gd_plain(data: sg.TokenData, eta: float, steps: int, loss: str, W0: np.ndarray):
    W = W0.copy()
    Ws, Ls = [W.copy()], [loss_and_grad(data, W, loss=loss)[0]]
    for _ in range(steps):
        W = W - eta * loss_and_grad(data, W, loss=loss)[1]
        Ws.append(W.copy())
        Ls.append(loss_and_grad(data, W, loss=loss)[0])
    return np.array(Ws), np.array(Ls)


@settings(max_examples=examples(1))
@given(
    kind=st.sampled_from(KINDS),
    n=st.integers(1, 4),
    T=st.integers(2, 5),
    d=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
    loss=st.sampled_from(LOSSES),
    b1=st.booleans(),
)
def test_theorem3_gd_with_step_below_one_over_lw(
    kind: str, n: int, T: int, d: int, seed: int, loss: str, b1: bool
) -> None:
    """Theorem 3(2): under B.1 or B.2 with Att-SVM(opt) feasible, GD from 0 with eta = 1/L_W
    decreases L at every step (descent lemma) and <W(k), W^mm> increases strictly at every
    step (<grad L, W^mm> < 0 everywhere), so ||W(k)|| >= <W(k), W^mm>/||W^mm|| grows; it
    cannot stop (no stationary point): the norm diverges as k -> infinity."""
    from svmgeo.analysis._initial_gradient import gradient_lipschitz_bound

    if b1:
        built = build_b1_case(kind if kind in SINGLE_QUERY else "cross", n=n, T=T, d=d, seed=seed)
        assume(built is not None)
        assert built is not None
        case = built
    else:
        case = build_b2_case(kind, n=n, T=T, d=d, seed=seed)
    data = case.data
    W_mm = _unique_opt_svm(data)
    if b1:  # the construction keeps every non-optimal token a support token (checked)
        sup = sg.support_tokens(data, sg.optimal_tokens(data), tol=1e-4)
        assume(int(np.asarray(sup).sum()) == data.n * (data.T - 1))
    eta = 1.0 / gradient_lipschitz_bound(data, loss)
    Ws, Ls = _gd_plain(data, eta, 60, loss, np.zeros((data.d, data.d)))
    assert np.all(np.diff(Ls) <= 8 * EPS * np.maximum(1.0, np.abs(Ls[1:])))
    proj = np.einsum("kij,ij->k", Ws, W_mm)
    assert np.all(np.diff(proj) > 0.0)
    norms = np.linalg.norm(Ws, axis=(1, 2))
    assert np.all(norms >= proj / np.linalg.norm(W_mm) - 1e-12)


# ------------------------------------------------------------------ Theorem 4


@settings(max_examples=examples(1))
@given(
    case=cases(kinds=SINGLE_QUERY, variants=("generic",), overparameterized=True),
    loss=st.sampled_from(LOSSES),
    seed=st.integers(0, 2**32 - 1),
)
def test_theorem4_good_initial_gradient_and_its_cone(case: Case, loss: str, seed: int) -> None:
    """The check equals <grad L(0), W^mm> < 0 (an independent gradient); under the theorem's
    hypotheses there is an R with no stationary point in C_{mu,R}(W^mm): <grad L(W), W^mm>
    < 0 there, tested at R, 2R, 4R once every query's Y f exceeds its second-best score. The
    theorem's setting: one query per sequence, every key visible (multi-query and masked data
    are svmgeo's extension, listed among the failed hypotheses)."""
    data = case.data
    W_mm = _unique_opt_svm(data)
    chk = sg.good_initial_gradient(data, loss=loss)
    assert chk.hypotheses == ()
    assert chk.W_mm is not None
    np.testing.assert_allclose(chk.W_mm, W_mm, rtol=1e-9, atol=1e-12)
    G0 = risk_grad(data, np.zeros((data.d, data.d)), loss)
    inner = float(np.vdot(G0, W_mm))
    np.testing.assert_allclose(chk.inner, inner, rtol=1e-9, atol=1e-15)
    assume(abs(inner) > 1e-12 * float(np.linalg.norm(G0) * np.linalg.norm(W_mm)))
    assert chk.good == (inner < 0.0)
    if chk.good:  # GD's first step from zero lies in C_mu for mu = mu_first_step
        assert chk.in_cone(-chk.max_step * chk.grad0, chk.mu_first_step + 1e-12)
    assume(chk.good)
    rng = np.random.default_rng(seed)
    opt = sg.optimal_tokens(data)
    mu = 1e-3
    U = _cone_point(W_mm, 0.5 * mu, rng)
    R = next((2.0**j for j in range(16) if _selected_dominates(data, 2.0**j * U, opt)), None)
    assume(R is not None)
    assert R is not None
    for r in (R, 2 * R, 4 * R):
        assert chk.in_cone(r * U, mu, R * (1 - 1e-12))
        assert _sign_inner_grad(data, r * U, W_mm, loss) < 0.0


# ------------------------------------------------------------------ Theorem 5


@settings(max_examples=examples(0.6))
@given(
    case=cases(
        kinds=SINGLE_QUERY, variants=("generic",), n_range=(1, 3), T_range=(3, 5), d_range=(2, 5)
    ),
    loss=st.sampled_from(LOSSES),
    seed=st.integers(0, 2**32 - 1),
)
def test_theorem5_no_stationary_point_in_the_cone_of_a_lot(
    case: Case, loss: str, seed: int
) -> None:
    """For a locally optimal alpha (possibly != opt) there is R with <grad L(W), W^mm_alpha>
    < 0 on C_{mu,R}(W^mm_alpha) (sampled points of the boundary of C_mu; R where Y f
    exceeds every other visible score, then 2R, 4R), and plain GD with eta = 1/L_W started
    there moves along W^mm_alpha at every step while it stays in the cone."""
    from svmgeo.analysis._initial_gradient import gradient_lipschitz_bound

    data = case.data
    try:
        sg.optimal_tokens(data)
    except sg.TieError:
        assume(False)
    lots = sg.locally_optimal_selections(data)
    sels = np.asarray(lots.selections)
    assume(len(sels) > 0)
    rng = np.random.default_rng(seed)
    alpha = sels[int(rng.integers(len(sels)))].reshape(-1)
    event("alpha = opt" if np.array_equal(alpha, sg.optimal_tokens(data)) else "alpha != opt")
    W_a = _unique_opt_svm(data, alpha)
    mu = 1e-3
    U = _cone_point(W_a, 0.5 * mu, rng)
    R = next((2.0**j for j in range(16) if _selected_dominates(data, 2.0**j * U, alpha)), None)
    assume(R is not None)
    assert R is not None
    for r in (R, 2 * R, 4 * R):
        assert _sign_inner_grad(data, r * U, W_a, loss) < 0.0
    eta = 1.0 / gradient_lipschitz_bound(data, loss)
    Ws, _ = _gd_plain(data, eta, 30, loss, R * U)
    corr = np.array([sg.correlation(W, W_a) for W in Ws])
    inside = np.cumprod(corr >= 1.0 - mu) > 0  # the steps taken from inside the cone
    assert inside[0]
    proj = np.einsum("kij,ij->k", Ws, W_a)
    assert np.all(np.diff(proj)[inside[:-1]] > 0.0)


# ------------------------------------------------------------------ §5.4 cone lemma


@settings(max_examples=examples(1))
@given(
    case=cases(kinds=SINGLE_QUERY, n_range=(1, 4), T_range=(2, 5), d_range=(1, 5)), draw=st.data()
)
def test_cone_lemma_with_its_caveat(case: Case, draw: st.DataObject) -> None:
    """For feasible alpha: alpha not a LOT => score_cone_margin(W^mm_alpha) <= 0 (W^mm_alpha
    is in no C_eps); alpha a LOT and every sequence with a high-score token has a support
    token => margin >= min over those sequences and high tokens of (m_tau - 1) > 0 (in
    C_eps for small eps). The caveat (MATH-NOTES §1.1): without that support token the LOT
    test passes vacuously and the margin may be negative. alpha = opt (unique): C_eps is
    the whole space."""
    from svmgeo.testing import selections

    data = case.data
    alpha = draw.draw(selections(data), label="alpha")
    if draw.draw(st.booleans(), label="from the LOT enumeration"):
        lots = np.asarray(sg.locally_optimal_selections(data).selections)
        if len(lots):
            alpha = lots[draw.draw(st.integers(0, len(lots) - 1), label="lot")].reshape(-1)
    res = sg.att_svm(data, alpha)
    assume(res.success and res.W is not None)
    W = np.asarray(res.W)
    margin = sg.score_cone_margin(data, alpha, W)
    lot = sg.is_locally_optimal(data, alpha)
    sup = np.asarray(sg.support_tokens(data, alpha)).reshape(data.n, data.T)
    g = visible_scores(data)[:, 0]
    ga = g[np.arange(data.n), alpha]
    high = g >= ga[:, None]
    high[np.arange(data.n), alpha] = False
    scale = max(1.0, float(np.linalg.norm(W)) * float(np.abs(data.X).max() ** 2))
    if not lot.locally_optimal:
        event("not a LOT")
        assert margin <= 1e-6 * scale
        return
    rows = res.constraints
    m = rows.apply(W)
    has_high = high.any(axis=1)
    caveat_ok = bool(np.all(sup.any(axis=1) | ~has_high))
    event(f"LOT, caveat {'met' if caveat_ok else 'NOT met'}, high tokens: {has_high.any()}")
    if caveat_ok and has_high.any():
        mt = np.full((data.n, data.T), np.inf)
        mt[rows.seq, rows.comp] = m
        bound = float(np.min(np.where(high, mt, np.inf)[has_high]) - 1.0)
        assert bound > 0.0
        assert margin >= bound - 1e-6 * scale
    try:
        opt = sg.optimal_tokens(data)
    except sg.TieError:
        return
    if np.array_equal(alpha, opt):
        assert margin == np.inf
        assert (
            sg.score_cone_margin(
                data,
                opt,
                np.asarray(
                    draw.draw(
                        st.builds(
                            lambda s: np.random.default_rng(s).normal(size=W.shape),
                            st.integers(0, 2**32 - 1),
                        )
                    )
                ),
            )
            == np.inf
        )


def test_cone_lemma_caveat_example() -> None:
    """MATH-NOTES §1.1: random_data(3, 4, 3, seed=2), alpha = (1, 3, 1) is a LOT (sequence 1
    has no support token) yet W^mm_alpha has a negative score-cone margin (measured -0.106)."""
    data = sg.random_data(3, 4, 3, seed=2)
    alpha = np.array([1, 3, 1])
    assert sg.is_locally_optimal(data, alpha)
    sup = np.asarray(sg.support_tokens(data, alpha))
    assert not sup[1].any()
    W = sg.att_svm(data, alpha).W
    assert W is not None
    assert sg.score_cone_margin(data, alpha, W) < 0.0
    # and a non-optimal LOT with the caveat met: W^mm_alpha is inside C_eps (docs/analysis.md)
    data2 = sg.random_data(4, 5, 8, seed=2, score_gap=0.05)
    alpha2 = np.array([0, 2, 4, 3])
    assert sg.is_locally_optimal(data2, alpha2)
    assert not np.array_equal(alpha2, sg.optimal_tokens(data2))
    W2 = sg.att_svm(data2, alpha2).W
    assert W2 is not None
    assert sg.score_cone_margin(data2, alpha2, W2) > 0.0


# ------------------------------------------------------------------ sequence / causal paths


@pytest.mark.slow
@settings(max_examples=examples(0.2))
@given(
    case=cases(
        kinds=("causal", "multi"),
        variants=("generic",),
        overparameterized=True,
        n_range=(1, 2),
        T_range=(2, 4),
    ),
)
def test_sequence_path_corollary(case: Case) -> None:
    """App. E corollary (sequence / causal outputs; Theorem 2's hypotheses: linear head,
    logistic loss, unique opt per query, sequence Att-SVM(opt) feasible): the minimizer over
    the ball of radius R is no worse than the feasible point R W^mm/||W^mm||, whose risk
    tends to L*. svmgeo's path is a local method: started there it must not end above it
    (started from 0 it can end at a worse local minimizer: build_case('causal', 'generic',
    n=2, T=4, d=8, seed=208) at R = 16, L = 2.2762 > 2.2735). The direction is measured."""
    data = case.data
    W_mm = _unique_opt_svm(data)
    u = W_mm / np.linalg.norm(W_mm)
    for R in (4.0, 16.0):
        path = sg.regularization_path(data, [R], init=R * u, tol=1e-5)
        L_ref = loss_and_grad(data, R * u)[0]
        assert path.loss[0] <= L_ref + 8 * EPS * max(1.0, abs(L_ref)) * data.K
        assert path.stationarity[0] <= 1e-5


def test_sequence_path_corollary_example() -> None:
    """A causal example: the path's direction approaches the sequence Att-SVM(opt) (measured:
    1 - corr decreases along the radii)."""
    data = build_case("causal", "generic", n=1, T=3, d=4, seed=3).data
    W_mm = sg.att_svm(data).W
    assert W_mm is not None
    path = sg.regularization_path(data, [1.0, 8.0, 64.0], tol=1e-5)
    corr = np.array([sg.correlation(W, W_mm) for W in path.W])
    assert np.all(np.diff(corr) > 0.0)
