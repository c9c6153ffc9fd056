# SPDX-License-Identifier: BSD-3-Clause
"""Next-token prediction: token-priority graphs, Graph-SVM, the finite component, the NTP loss."""

from __future__ import annotations

import dataclasses
import math
from decimal import Context, Decimal, getcontext, localcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components

import svmgeo as sg
from svmgeo.constraints import EQUALITY, MARGIN
from svmgeo.solvers import solve_naive_cvxpy


def _closure(adj: np.ndarray) -> np.ndarray:
    """Reachability (reflexive, transitive), by repeated boolean squaring: an independent oracle."""
    R = adj.astype(bool) | np.eye(adj.shape[0], dtype=bool)
    while True:
        R2 = R | ((R.astype(int) @ R.astype(int)) > 0)
        if np.array_equal(R2, R):
            return R
        R = R2


@st.composite
def ntp_data(draw: st.DrawFn) -> sg.NextTokenData:
    V = draw(st.integers(2, 6))
    n = draw(st.integers(1, 25))
    T = draw(st.integers(2, 5))
    seqs = [draw(st.lists(st.integers(0, V - 1), min_size=T, max_size=T)) for _ in range(n)]
    labels = [draw(st.sampled_from(s)) for s in seqs]
    E = np.random.default_rng(draw(st.integers(0, 1000))).normal(size=(V, V + 1))
    return sg.NextTokenData(seqs, np.asarray(labels), E)


@settings(max_examples=30, deadline=None)
@given(data=ntp_data())
def test_sccs_match_reachability_and_the_condensation_is_acyclic(data: sg.NextTokenData) -> None:
    for g in sg.token_priority_graphs(data).values():
        A = g.adjacency.toarray() > 0
        R = _closure(A)
        nodes = g.nodes
        for i in nodes:
            for j in nodes:
                assert g.same_component(i, j) == bool(R[i, j] and R[j, i])
        # condensation acyclic: its own SCCs are single nodes, and priorities follow edges
        n_c, _ = connected_components(g.condensation, directed=True, connection="strong")
        assert n_c == g.condensation.shape[0]
        s, t = np.nonzero(A)
        cross = g.component[s] != g.component[t]
        assert np.all(g.priority[s[cross]] < g.priority[t[cross]])


@settings(max_examples=30, deadline=None)
@given(data=ntp_data())
def test_equality_rows_are_exactly_the_cycles(data: sg.NextTokenData) -> None:
    graphs = sg.token_priority_graphs(data)
    cs = sg.graph_svm_constraints(data)
    n_eq = 0
    for g in graphs.values():
        _, sizes = np.unique(g.component[g.nodes], return_counts=True)
        n_eq += int(np.sum(sizes - 1))
    assert int(np.count_nonzero(cs.kind == EQUALITY)) == n_eq
    if all(g.is_acyclic for g in graphs.values()):  # a DAG gives no equality rows
        assert np.all(cs.kind == MARGIN)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), V=st.integers(2, 6))
def test_single_tiers_give_acyclic_graphs(seed: int, V: int) -> None:
    data = sg.random_next_token_data(30, 4, V, V + 2, tier_size=1, seed=seed)
    assert all(g.is_acyclic for g in sg.token_priority_graphs(data).values())


@pytest.mark.parametrize("norm", ["fro", "nuc"])
@pytest.mark.parametrize("tier", [1, 2])
def test_graph_svm_matches_naive_cvxpy(norm: str, tier: int) -> None:
    data = sg.random_next_token_data(40, 5, 6, 8, tier_size=tier, seed=0)
    res = sg.graph_svm(data, norm=norm)  # type: ignore[arg-type]
    assert res.success, res.message
    cs = res.constraints
    W_ref, status, value, _ = solve_naive_cvxpy(cs, norm)  # type: ignore[arg-type]
    assert status == "optimal" and W_ref is not None
    np.testing.assert_allclose(res.objective, value, rtol=1e-6)
    m = np.einsum("ja,ab,jb->j", cs.A, res.W, cs.B)
    assert np.all(m[cs.kind == MARGIN] >= 1 - 1e-10)
    np.testing.assert_allclose(m[cs.kind == EQUALITY], 0.0, atol=1e-9)


@pytest.mark.parametrize("loss", ["ce", "retrieval"])
def test_ntp_gradient_matches_finite_differences(loss: str) -> None:
    data = sg.random_next_token_data(12, 4, 5, 6, tier_size=2, seed=3)
    W = np.random.default_rng(1).normal(size=(6, 6))
    keep_all = None
    on_label = data.tokens == data.labels[:, None]
    keep_some = data.valid & ((np.arange(data.T)[None, :] >= 2) | on_label)
    for keep in (keep_all, keep_some):
        _, G = sg.ntp_loss_and_grad(data, W, loss=loss, keep=keep)
        fd = np.zeros_like(W)
        h = 1e-6
        for a in range(6):
            for b in range(6):
                E = np.zeros_like(W)
                E[a, b] = h
                up, _ = sg.ntp_loss_and_grad(data, W + E, loss=loss, keep=keep)
                dn, _ = sg.ntp_loss_and_grad(data, W - E, loss=loss, keep=keep)
                fd[a, b] = (up - dn) / (2 * h)
        assert np.all(np.isfinite(G))
        np.testing.assert_allclose(G, fd, atol=1e-8, rtol=1e-6)


def test_loss_is_finite_at_huge_norms() -> None:
    data = sg.random_next_token_data(12, 4, 5, 6, seed=3)
    svm = sg.graph_svm(data)
    assert svm.W is not None
    for loss in ("ce", "retrieval"):
        value, G = sg.ntp_loss_and_grad(data, 1e8 * svm.W, loss=loss)
        assert np.isfinite(value) and np.all(np.isfinite(G))


def test_finite_component_acyclic_is_zero_and_cyclic_is_orthogonal_to_the_svm() -> None:
    acyclic = sg.random_next_token_data(30, 4, 5, 7, tier_size=1, seed=0)
    fin = sg.finite_component(acyclic)
    assert fin.basis.shape[0] == 0 and fin.success
    np.testing.assert_array_equal(fin.W, 0.0)
    cyclic = sg.random_next_token_data(40, 5, 6, 10, tier_size=2, seed=0)
    fin = sg.finite_component(cyclic, loss="retrieval")
    assert fin.basis.shape[0] > 0 and fin.success, fin.message
    np.testing.assert_allclose(fin.project(fin.W), fin.W, atol=1e-12)  # W_fin in S_fin
    svm = sg.graph_svm(cyclic)
    assert svm.W is not None  # equality rows make W_svm orthogonal to S_fin
    np.testing.assert_allclose(np.einsum("rab,ab->r", fin.basis, svm.W), 0.0, atol=1e-9)
    # stationarity of the restricted loss along S_fin, recomputed here
    _, G = sg.ntp_loss_and_grad(cyclic, fin.W, loss="retrieval", keep=fin.keep)
    assert np.linalg.norm(fin.project(G)) < 1e-7


def test_gd_aligns_with_the_graph_svm_on_acyclic_data() -> None:
    """Example of the paper's retrieval statement (acyclic graphs: W_t/||W_t|| -> W_svm)."""
    data = sg.random_next_token_data(40, 5, 6, 10, tier_size=1, seed=0)
    run = sg.train_ntp(data, step_size=0.1, n_steps=2000, record_every=1000)
    svm = sg.graph_svm(data)
    corr = [sg.verify_ntp(data, W, svm=svm).corr_svm for W in run.history.W]
    assert corr[-1] > corr[1] > corr[0] - 1.0
    assert corr[-1] > 0.99


@pytest.mark.parametrize(
    ("seqs", "labels", "match"),
    [
        ([[0, 1]], [2], "does not occur"),
        ([[0, 7]], [0], "outside"),
        ([[0, 1]], [[0]], "labels must"),
    ],
)
def test_bad_input_is_a_clear_error(seqs: list[list[int]], labels: list[int], match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        sg.NextTokenData(seqs, np.asarray(labels), np.eye(3))


def _mp_gradient(data: sg.NextTokenData, W: np.ndarray, loss: str) -> np.ndarray:
    """The NTP gradient at 60 digits (mpmath), straight from the chain rule: the reference."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    E = [[mp.mpf(float(x)) for x in row] for row in data.embeddings]
    Wm = mp.matrix([[mp.mpf(float(x)) for x in row] for row in W])
    d, V = data.d, data.V
    G = mp.matrix(d, d)
    for i in range(data.n):
        toks = [int(t) for t in data.tokens[i] if t >= 0]
        z = mp.matrix(E[int(data.last[i])])
        X = [mp.matrix(E[t]) for t in toks]
        a = [(x.T * Wm * z)[0] for x in X]
        top = max(a)
        w = [mp.exp(v - top) for v in a]
        s = [v / sum(w) for v in w]
        y = int(data.labels[i])
        if loss == "ce":
            f = sum((s[t] * X[t] for t in range(len(X))), mp.matrix(d, 1))
            o = [(mp.matrix(E[v]).T * f)[0] for v in range(V)]
            p = [mp.exp(v) / sum(mp.exp(u) for u in o) for v in o]
            gf = sum(((p[v] - (1 if v == y else 0)) * mp.matrix(E[v]) for v in range(V)),
                     mp.matrix(d, 1))  # fmt: skip
            gs = [(x.T * gf)[0] for x in X]
            mean = sum(s[t] * gs[t] for t in range(len(X)))
            ga = [s[t] * (gs[t] - mean) for t in range(len(X))]
        else:
            mass = sum(s[t] for t in range(len(X)) if toks[t] == y)
            ga = [s[t] - (s[t] / mass if toks[t] == y else 0) for t in range(len(X))]
        for t in range(len(X)):
            G += ga[t] * X[t] * z.T
    return np.array([[float(G[r, c]) / data.n for c in range(d)] for r in range(d)])


def _largest_exact_gradient_entry(data: sg.NextTokenData, W: np.ndarray, loss: str) -> Decimal:
    """max |dL/dW_pq| at 50 digits with an exponent range far beyond float64's (decimal):
    the chain rule of :func:`_mp_gradient`, entries that float64 cannot hold included (in
    the caller's decimal context)."""
    ctx = getcontext()  # the caller's: 50 digits, exponents to 1e6
    E = [[Decimal(float(x)) for x in row] for row in data.embeddings]
    Wd = [[Decimal(float(x)) for x in row] for row in W]
    d, V = data.d, data.V

    def dot(a: list[Decimal], b: list[Decimal]) -> Decimal:
        return sum((x * y for x, y in zip(a, b, strict=True)), Decimal(0))

    G = [[Decimal(0)] * d for _ in range(d)]
    for i in range(data.n):
        toks = [int(t) for t in data.tokens[i] if t >= 0]
        z = E[int(data.last[i])]
        Wz = [dot(Wd[p], z) for p in range(d)]
        a = [dot(E[t], Wz) for t in toks]
        w = [ctx.exp(v - max(a)) for v in a]
        s = [ctx.divide(v, sum(w)) for v in w]
        y = int(data.labels[i])
        if loss == "ce":
            f = [sum(s[t] * E[toks[t]][p] for t in range(len(toks))) for p in range(d)]
            o = [dot(E[v], f) for v in range(V)]
            eo = [ctx.exp(v - max(o)) for v in o]
            pr = [ctx.divide(v, sum(eo)) - (1 if v_ == y else 0) for v_, v in enumerate(eo)]
            gf = [sum(pr[v] * E[v][p] for v in range(V)) for p in range(d)]
            gs = [dot(E[t], gf) for t in toks]
            mean = sum(s[t] * gs[t] for t in range(len(toks)))
            ga = [s[t] * (gs[t] - mean) for t in range(len(toks))]
        else:
            mass = sum(s[t] for t in range(len(toks)) if toks[t] == y)
            ga = [s[t] - (s[t] / mass if toks[t] == y else 0) for t in range(len(toks))]
        for t, tok in enumerate(toks):
            for p in range(d):
                for q in range(d):
                    G[p][q] += ga[t] * E[tok][p] * z[q]
    return max(abs(x) for row in G for x in row) / data.n


@pytest.mark.parametrize("loss", ["ce", "retrieval"])
def test_gradient_stays_exact_far_out(loss: str) -> None:
    """At ||W|| ~ 60 the attention is one-hot to 1e-25: the gradient must not be rounding noise."""
    data = sg.random_next_token_data(4, 3, 4, 4, tier_size=1, seed=1)
    svm = sg.graph_svm(data)
    assert svm.W is not None
    W = 60.0 * svm.W / np.linalg.norm(svm.W) + 0.3 * np.random.default_rng(0).normal(size=(4, 4))
    _, G = sg.ntp_loss_and_grad(data, W, loss=loss)
    ref = _mp_gradient(data, W, loss)
    assert np.linalg.norm(ref) < 1e-10  # far out indeed
    np.testing.assert_allclose(G, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


def test_normalized_steps_go_on_where_the_gradient_norm_underflows() -> None:
    """Every entry of the gradient below ~1e-162: np.linalg.norm(G) is 0.0 but G is not, so the
    normalized step goes on (it stopped as STATIONARY at step 1082 of this run)."""
    data = sg.random_next_token_data(20, 4, 5, 8, seed=0)
    run = sg.train_ntp(data, step_size=1.0, n_steps=1200, record_every=1200)
    assert run.status is sg.StopStatus.MAX_STEPS and run.n_steps == 1200
    G = sg.ntp_loss_and_grad(data, run.W)[1]
    assert np.any(G) and float(np.linalg.norm(G)) == 0.0  # the case itself


@pytest.mark.parametrize("loss", ["ce", "retrieval"])
def test_a_gradient_underflowed_to_zero_is_not_called_stationary(loss: str) -> None:
    """Far out, every entry of G underflows to 0 in float64 (the risk has no log-domain
    scale) while the exact gradient is not zero: the run stops with GRADIENT_UNDERFLOW, not
    STATIONARY, and its message gives no init advice (train_ntp takes no init)."""
    data = sg.random_next_token_data(4, 3, 4, 4, tier_size=1, seed=1)
    run = sg.train_ntp(data, loss=loss, step_size=5.0, n_steps=3000, record_every=3000)
    assert run.status is sg.StopStatus.GRADIENT_UNDERFLOW and run.n_steps < 3000
    assert not np.any(sg.ntp_loss_and_grad(data, run.W, loss=loss)[1])  # zero in float64
    with localcontext(Context(prec=50, Emin=-(10**6), Emax=10**6)):
        largest = _largest_exact_gradient_entry(data, run.W, loss)
        near = run.W / 200.0  # the reference itself, where float64 holds the gradient
        G_near = sg.ntp_loss_and_grad(data, near, loss=loss)[1]
        reference = float(_largest_exact_gradient_entry(data, near, loss))
    np.testing.assert_allclose(np.max(np.abs(G_near)), reference, rtol=1e-9)
    assert 0 < largest < Decimal("5e-324")  # not zero: no stationary point, only an underflow
    assert "init" not in run.message


def test_train_ntp_is_a_gdrun_of_the_one_loop() -> None:
    """train_ntp returns a GDRun whose history holds what verify reads, and it is plain
    (normalized) GD on ntp_loss_and_grad, step by step."""
    data = sg.random_next_token_data(15, 4, 5, 6, tier_size=2, seed=1)
    run = sg.train_ntp(data, loss="ce", step_size=0.3, n_steps=12, record_every=5)
    assert isinstance(run, sg.GDRun) and run.status is sg.StopStatus.MAX_STEPS
    h = run.history
    np.testing.assert_array_equal(h.step, [0, 5, 10, 12])
    assert h.W.shape == (4, 6, 6) and run.W.shape == (6, 6) and run.n_steps == 12
    np.testing.assert_allclose(h.W_norm, np.linalg.norm(h.W, axis=(1, 2)), rtol=1e-13)
    W = np.zeros((6, 6))
    for t in range(12):
        value, G = sg.ntp_loss_and_grad(data, W, loss="ce")
        if t in (0, 5, 10):
            np.testing.assert_allclose(h.loss[[0, 5, 10].index(t)], value, rtol=1e-15)
        W = W - 0.3 * (G / np.linalg.norm(G))
    np.testing.assert_array_equal(run.W, W)
    assert run.config.risk == "next_token" and run.solve_time > 0


def test_huge_embeddings_are_a_clear_error_naming_them() -> None:
    """Regression (issue #21): 1e200 embeddings ended in "is the problem infeasible?"."""
    data = sg.random_next_token_data(10, 3, 4, 4, seed=0)
    seqs = [list(data.tokens[i][data.valid[i]]) for i in range(data.n)]
    with pytest.raises(
        sg.ProblemError, match=r"too large for float64 \(NextTokenData\).*Rescale embeddings"
    ):
        sg.NextTokenData(seqs, data.labels, data.embeddings * 1e200)
    # just inside the bound the data are accepted and the Graph-SVM is the rescaled one
    big = sg.NextTokenData(seqs, data.labels, data.embeddings * 1e75)
    small = sg.graph_svm(data)
    large = sg.graph_svm(big)
    assert small.W is not None and large.W is not None
    np.testing.assert_allclose(large.W * 1e150, small.W, rtol=1e-6, atol=1e-8)


def test_verify_without_graph_edges_is_an_honest_result() -> None:
    """Regression (issue #21): data whose samples hold only their label token have no graph
    edge; verify raised ZeroDivisionError. W_svm = 0 predicts no direction: corr_svm is NaN,
    R = 0, and GD (whose gradient is exactly zero) stops at W = 0 = W_fin."""
    E = np.eye(3)
    data = sg.NextTokenData([[0, 0], [1], [2, 2, 2]], np.array([0, 1, 2]), E)
    rep = sg.ntp.verify_ntp_training(data, loss="retrieval", n_steps=20)
    assert rep.run.status is sg.StopStatus.STATIONARY and rep.run.n_steps == 0
    assert np.all(np.isnan(rep.corr_svm)) and np.all(rep.R == 0.0)
    np.testing.assert_array_equal(rep.W, np.zeros((3, 3)))
    np.testing.assert_array_equal(rep.fin_error, 0.0)


def test_finite_component_success_is_the_stated_criterion() -> None:
    """success: the gradient's largest entry in the basis coordinates is at most tol (BFGS's
    gtol); grad_norm is its Euclidean norm (it was compared with tol * sqrt(r) while the
    field said 'at most the requested tolerance')."""
    data = sg.random_next_token_data(60, 5, 6, 8, tier_size=3, seed=1)
    for tol in (1e-2, 1e-6):
        fin = sg.finite_component(data, tol=tol)
        G = sg.ntp_loss_and_grad(data, fin.W, keep=fin.keep)[1]
        g = np.einsum("rab,ab->r", fin.basis, G)
        np.testing.assert_allclose(fin.grad_norm, np.linalg.norm(g), rtol=1e-12)
        if fin.success:
            assert np.abs(g).max() <= tol


def test_ntp_verification_checks_its_inputs() -> None:
    """svm='x' raised AttributeError, an svm of other data a numpy broadcast error, a bogus
    loss with fin given was accepted, keep = 0.5 was cast to True, and the training
    verification's errors named 'verify'."""
    data = sg.random_next_token_data(20, 4, 5, 8, seed=0)
    other = sg.random_next_token_data(20, 4, 5, 6, seed=1)
    W = np.zeros((data.d, data.d))
    fin = sg.finite_component(data)
    with pytest.raises(sg.ProblemError, match="'svm' parameter of verify_ntp"):
        sg.verify_ntp(data, W, svm="x")  # type: ignore[arg-type]
    with pytest.raises(sg.ProblemError, match="'svm' parameter of verify_ntp"):
        sg.verify_ntp(data, W, svm=sg.graph_svm(other))
    with pytest.raises(sg.ProblemError, match="'loss' parameter of verify_ntp"):
        sg.verify_ntp(data, W, fin=fin, loss="bogus")
    with pytest.raises(sg.ProblemError, match="keep"):
        sg.ntp_loss_and_grad(data, W, keep=np.full((data.n, data.T), 0.5))
    with pytest.raises(sg.ProblemError, match="verify_ntp_training"):
        sg.ntp.verify_ntp_training(data, loss="bogus")
    for bad in ({"step_size": "x"}, {"n_steps": 0}, {"record_every": 0}):
        with pytest.raises(sg.ProblemError, match="parameter of verify_ntp_training"):
            sg.ntp.verify_ntp_training(data, **bad)  # type: ignore[arg-type]
    with pytest.raises(sg.ProblemError) as err:  # train_ntp takes no optimizer, no Polyak step
        sg.train_ntp(data, step_size="polyak")
    assert "parameter of train_ntp" in str(err.value) and "optimizer='gd'" not in str(err.value)


def _rescaled(data: sg.NextTokenData, c: float) -> sg.NextTokenData:
    """The same samples with embeddings c E."""
    seqs = [data.tokens[i][data.valid[i]] for i in range(data.n)]
    return sg.NextTokenData(seqs, data.labels, data.embeddings * c)


@pytest.mark.parametrize("c", [1e-4, 1e-5, 1e3, 2.0**-20])
def test_finite_component_is_scale_equivariant(c: float) -> None:
    """The retrieval loss sees W and E only through the logits e_x^T W e_k, unchanged by
    E -> cE, W -> W / c^2: so W_fin(cE) = W_fin(E) / c^2 with the same loss. BFGS's absolute
    gtol returned W_fin = 0 with success=True at c = 1e-4 (the gradient scales with c^2)."""
    data = sg.random_next_token_data(40, 4, 5, 8, tier_size=2, seed=1)
    ref = sg.finite_component(data, loss="retrieval")
    fin = sg.finite_component(_rescaled(data, c), loss="retrieval")
    assert ref.success and fin.success, fin.message
    assert np.linalg.norm(ref.W) > 0.1  # a nonzero W_fin: the case itself
    np.testing.assert_allclose(
        fin.W, ref.W / c**2, rtol=1e-6, atol=1e-7 * np.abs(ref.W / c**2).max()
    )
    np.testing.assert_allclose(fin.loss, ref.loss, rtol=1e-12)


def _min_top_attention(data: sg.NextTokenData, fin: sg.FiniteComponent) -> float:
    """Smallest softmax weight of a kept position under fin.W, computed here."""
    E = data.embeddings
    out = 1.0
    for i in range(data.n):
        pos = np.flatnonzero(fin.keep[i])
        logits = E[data.tokens[i, pos]] @ fin.W @ E[data.last[i]]
        w = np.exp(logits - logits.max())
        out = min(out, float((w / w.sum()).min()))
    return out


def test_finite_component_separates_not_converged_from_at_boundary() -> None:
    """success (BFGS reached tol) and at_boundary (top attention below 1e-6: no finite
    minimizer, svmgeo's heuristic) are two fields: an unreachable tol at an interior minimizer
    was reported as 'W_fin NOT finite'."""
    data = sg.random_next_token_data(8, 4, 5, 3, tier_size=3, orthonormal=False, seed=113)
    ref = sg.finite_component(data, loss="retrieval")
    missed = sg.finite_component(data, loss="retrieval", tol=1e-300)  # not reachable in float64
    assert ref.success and not missed.success and not missed.at_boundary
    assert "did not reach its tolerance" in missed.message
    assert _min_top_attention(data, missed) > 0.1  # interior: far from the boundary
    np.testing.assert_allclose(missed.loss, ref.loss, rtol=1e-12)
    # cyclic graphs under the cross-entropy loss: the restricted loss runs to the boundary
    ce = sg.random_next_token_data(60, 5, 6, 10, tier_size=2, seed=0)
    fin = sg.finite_component(ce, loss="ce")
    assert fin.at_boundary and "heuristic" in fin.message
    assert _min_top_attention(ce, fin) < 1e-6  # the documented threshold


def test_report_says_which_way_w_fin_failed() -> None:
    data = sg.random_next_token_data(8, 4, 5, 3, tier_size=3, orthonormal=False, seed=113)
    rep = sg.ntp.verify_ntp_training(data, loss="retrieval", n_steps=5)

    def verdict(**fields: bool) -> str:
        text = str(dataclasses.replace(rep, **fields))
        return next(line for line in text.splitlines() if "W_fin " in line)

    assert "W_fin            finite: " in verdict(fin_success=True, fin_at_boundary=False)
    missed = verdict(fin_success=False, fin_at_boundary=False)
    assert "finite (BFGS did not reach its tolerance)" in missed and "NOT" not in missed
    for ok in (True, False):
        assert "no finite minimizer found (heuristic" in verdict(
            fin_success=ok, fin_at_boundary=True
        )


def test_ntp_experiment_counts_only_the_boundary_as_not_finite() -> None:
    from svmgeo.experiments.ntp import summarize

    def row(seed: int, success: bool, boundary: bool) -> dict[str, object]:
        return {"setting": "cyclic", "loss": "ce", "step": 10, "seed": seed, "part": 0,
                "n_parts": 1, "corr_svm": 0.9, "fin_error": 0.1, "composition_error": 0.01,
                "fin_success": success, "fin_at_boundary": boundary}  # fmt: skip

    rows = [row(0, False, False), row(1, True, True), row(2, False, True), row(3, True, False)]
    headline, summary = summarize(rows)
    assert headline["cyclic ce: W_fin finite / trials"] == "2/4"
    assert (
        headline["cyclic ce: fin error (W_fin finite only), seeds 0-3"] == "1.0e-01, -, -, 1.0e-01"
    )
    assert summary[0]["fin_finite"] == 2


def test_rank_zero_s_fin_of_a_cyclic_graph_is_not_called_acyclic() -> None:
    """Tokens 0 and 1 form a cycle of G^(2) but share an embedding: (e_0 - e_1) e_2^T = 0, so
    S_fin = {0} though no graph is acyclic (the message said 'every graph is acyclic')."""
    E = np.array([[1.0, 0, 0], [1.0, 0, 0], [0, 0, 1.0]])
    data = sg.NextTokenData([[0, 1, 2], [0, 1, 2]], [0, 1], E)
    assert not sg.token_priority_graphs(data)[2].is_acyclic
    np.testing.assert_array_equal(np.outer(E[0] - E[1], E[2]), 0.0)  # the only generator
    fin = sg.finite_component(data, loss="retrieval")
    assert fin.basis.shape[0] == 0 and "acyclic" not in fin.message
    assert "S_fin = {0}" in fin.message and "embedding differences vanish" in fin.message


def _stationary_cases() -> dict[str, sg.NextTokenData]:
    E = np.eye(2)
    return {
        # one context [0, 1] with labels 0 and 1: the two samples' gradients cancel at W = 0
        "symmetric": sg.NextTokenData([[0, 1], [0, 1]], [0, 1], E),
        # a zero query embedding: every logit e_x^T W 0 = 0, the risk is the same for every W
        "zero query": sg.NextTokenData([[0, 1, 2]], [0], np.array([[1.0, 0], [0, 1], [0, 0]])),
        # two tokens, one embedding: the attention on either gives the same output
        "shared embedding": sg.NextTokenData([[0, 1]], [0], np.array([[1.0, 0], [1.0, 0]])),
    }


@pytest.mark.parametrize("loss", ["ce", "retrieval"])
@pytest.mark.parametrize("case", list(_stationary_cases()))
def test_an_exactly_zero_gradient_is_stationary(case: str, loss: str) -> None:
    """W = 0 is an exact stationary point here (by symmetry or because the risk does not
    depend on W); train_ntp said GRADIENT_UNDERFLOW since only one-token contexts counted."""
    data = _stationary_cases()[case]
    _, G = sg.ntp_loss_and_grad(data, np.zeros((data.d, data.d)), loss=loss)
    np.testing.assert_array_equal(G, 0.0)
    if case == "symmetric":  # the two samples' gradients, each nonzero, cancel
        one = sg.NextTokenData([[0, 1]], [0], np.eye(2))
        assert np.any(sg.ntp_loss_and_grad(one, np.zeros((2, 2)), loss=loss)[1])
    run = sg.train_ntp(data, loss=loss, n_steps=10)
    assert run.status is sg.StopStatus.STATIONARY and run.n_steps == 0, run.message
    rep = sg.ntp.verify_ntp_training(data, loss=loss, n_steps=10) if case == "symmetric" else None
    if rep is not None:  # the report prints how the run stopped
        assert f"run              stationary: {rep.run.message}" in str(rep)


def test_ntp_risk_refuses_a_norm_beyond_its_limit() -> None:
    """||W||_F past 1e149 (the norm train_ntp stops at) is refused with a hint to rescale,
    as sg.loss_and_grad does; at 1e308 entries the loss was NaN."""
    data = sg.random_next_token_data(4, 3, 3, 3, seed=0)
    direction = np.full((3, 3), 1.0 / 3.0)  # ||direction||_F = 1
    value, G = sg.ntp_loss_and_grad(data, 0.99e149 * direction, loss="retrieval")
    assert np.isfinite(value) and np.all(np.isfinite(G))
    for W in (1.01e149 * direction, np.full((3, 3), 1e308)):
        with pytest.raises(sg.ProblemError, match=r"ntp_loss_and_grad: \|\|W\|\|_F = .*rescale W"):
            sg.ntp_loss_and_grad(data, W)
        with pytest.raises(sg.ProblemError, match=r"verify_ntp: \|\|W\|\|_F = .*rescale W"):
            sg.verify_ntp(data, W)


def test_verify_ntp_refuses_an_svm_or_fin_of_other_data() -> None:
    """An svm of other data with the same d was used silently (corr -0.03 instead of 0.88), a
    fin of other data ended in a numpy broadcast error, and a fin of another loss was mixed
    with the loss asked for."""
    a = sg.random_next_token_data(20, 4, 5, 8, tier_size=2, seed=0)
    b = sg.random_next_token_data(12, 3, 5, 8, tier_size=2, seed=1)
    b_same_shape = sg.random_next_token_data(20, 4, 5, 8, tier_size=2, seed=2)
    W = sg.train_ntp(a, loss="retrieval", n_steps=50).W
    for other in (b, b_same_shape):
        with pytest.raises(sg.ProblemError, match=r"'svm' parameter of verify_ntp.*other"):
            sg.verify_ntp(a, W, svm=sg.graph_svm(other), loss="retrieval")
        with pytest.raises(sg.ProblemError, match=r"'fin' parameter of verify_ntp.*other data"):
            sg.verify_ntp(a, W, fin=sg.finite_component(other, loss="retrieval"))
    fin = sg.finite_component(a, loss="retrieval")
    with pytest.raises(sg.ProblemError, match=r"'fin' parameter.*loss='ce'.*loss='retrieval'"):
        sg.verify_ntp(a, W, fin=fin, loss="ce")
    # its own svm and fin give what verify_ntp computes by itself
    own = sg.verify_ntp(a, W, svm=sg.graph_svm(a), fin=fin)
    ref = sg.verify_ntp(a, W, loss="retrieval")
    np.testing.assert_allclose(
        [own.corr_svm, own.fin_error, own.composition_error, own.R],
        [ref.corr_svm, ref.fin_error, ref.composition_error, ref.R],
        rtol=1e-12,
    )
    assert fin.loss_name == "retrieval"


def test_graph_svm_constraints_checks_its_graphs() -> None:
    a = sg.random_next_token_data(20, 4, 5, 8, seed=0)
    b = sg.random_next_token_data(20, 4, 5, 8, seed=1)
    own = sg.token_priority_graphs(a)
    ref = sg.graph_svm_constraints(a)
    with pytest.warns(DeprecationWarning, match="graph_svm_constraints.data. instead"):
        given = sg.graph_svm_constraints(a, graphs=own)
    for f in ("A", "B", "kind", "rhs", "seq", "pref", "comp"):
        np.testing.assert_array_equal(getattr(given, f), getattr(ref, f))
    swapped = dict(own)
    k0, k1 = sorted(own)[:2]
    swapped[k0], swapped[k1] = own[k1], own[k0]
    for bad in ({}, sg.token_priority_graphs(b), [1], {k: 1 for k in own}, swapped):
        with (
            pytest.warns(DeprecationWarning),
            pytest.raises(sg.ProblemError, match="'graphs' parameter of graph_svm_constraints"),
        ):
            sg.graph_svm_constraints(a, graphs=bad)  # type: ignore[arg-type]


def test_an_infeasible_graph_svm_fails_fast_with_a_fix() -> None:
    """d = 1 with five tokens: the margin rows conflict (graph_svm proves it by Farkas).
    verify_ntp_training trained first, then failed without a hint."""
    rng = np.random.default_rng(0)
    data = sg.NextTokenData([[0, 1, 2, 3, 4], [1, 2, 3, 4]], [0, 1], rng.normal(size=(5, 1)))
    svm = sg.graph_svm(data)
    assert svm.status is sg.Status.INFEASIBLE and svm.farkas is not None
    for call in (
        lambda: sg.verify_ntp(data, np.zeros((1, 1))),
        lambda: sg.ntp.verify_ntp_training(data, n_steps=10**9),  # fails before any step
    ):
        with pytest.raises(sg.ProblemError, match=r"no solution.*Raise the embedding .*farkas"):
            call()


@pytest.mark.parametrize(
    ("sequences", "embeddings", "match"),
    [
        (5, np.eye(3), "sequences must be a sequence of sequences"),
        (None, np.eye(3), "sequences must be a sequence of sequences"),
        ([[0, [1, 2]]], np.eye(3), "sequences must be a sequence of sequences"),
        ([[0, 1], [1, 0]], np.ones((3, 0)), r"embeddings .* d >= 1; got shape \(3, 0\)"),
    ],
)
def test_bad_sequences_and_empty_embeddings_are_clear_errors(
    sequences: object, embeddings: np.ndarray, match: str
) -> None:
    """A bare TypeError / numpy ValueError for bad sequences; d = 0 was accepted and failed
    later in reshape or a zero-size reduction."""
    labels = [0] if embeddings.shape[1] else [0, 1]
    with pytest.raises(sg.ProblemError, match=match):
        sg.NextTokenData(sequences, labels, embeddings)


def test_neither_ntp_loss_is_labelled_a_theorem_without_its_hypotheses() -> None:
    """The ce loss is the issue's statement, not the paper's: the atlas called both a theorem.
    The retrieval loss is the paper's (as svmgeo reads it), but the paper's hypotheses are not
    known here, so it is a conjecture, measured, and the docstring says the statement is for
    plain GD (normalized steps leave an O(eta) error in S_fin)."""
    rows = [c for c in sg.atlas.CORRESPONDENCES if "next-token" in c.attention]
    status = {c.attention.split("loss=")[1].strip("')"): c.status for c in rows}
    assert status == {"retrieval": "conjecture", "ce": "conjecture"}
    retrieval = next(c for c in rows if "retrieval" in c.attention)
    assert "not checked" in retrieval.where and "measured" in retrieval.where
    doc = sg.ntp.verify_ntp_training.__doc__ or ""
    assert 'For ``loss="ce"``' in doc and "conjecture" in doc
    assert "plain GD" in doc and "O(\\eta)" in doc


def test_train_points_next_token_data_to_train_ntp() -> None:
    data = sg.random_next_token_data(5, 3, 3, 3, seed=0)
    with pytest.raises(sg.ProblemError, match=r"sg\.train_ntp") as err:
        sg.train(data)  # type: ignore[arg-type]
    assert "train_batch" not in str(err.value)


def test_retrieval_loss_keeps_its_relative_accuracy_far_out() -> None:
    """-log(label mass) rounded to -0.0 once the mass was within an ulp of 1 (at 100 W_svm
    here, and over the last 44 % of verify_ntp_training's default run): the loss is now
    -log1p(-(non-label mass)), checked against that mass from the logits, token by token."""
    data = sg.random_next_token_data(6, 3, 4, 4, seed=0)
    svm = sg.graph_svm(data)
    assert svm.W is not None
    for scale in (30.0, 100.0):
        W = scale * svm.W
        E = data.embeddings
        rest = []
        for i in range(data.n):
            toks = [int(t) for t in data.tokens[i] if t >= 0]
            logits = [float(E[t] @ W @ E[int(data.last[i])]) for t in toks]
            top = max(logits)
            total = sum(math.exp(a - top) for a in logits)
            other = sum(
                math.exp(a - top) for a, t in zip(logits, toks, strict=True) if t != data.labels[i]
            )
            rest.append(other / total)
        value = sg.ntp_loss_and_grad(data, W, loss="retrieval")[0]
        assert 0.0 < value < 1e-12 and math.copysign(1.0, value) == 1.0
        np.testing.assert_allclose(value, np.mean(rest), rtol=1e-12)


def test_all_zero_embeddings_are_an_infeasible_result_not_a_zero_division() -> None:
    """Every embedding zero: a_j b_j^T = 0 on every row, so the Graph-SVM is infeasible (a
    one-row Farkas vector, proved). The next-token rewording divided by the largest embedding
    norm, 0, and graph_svm, verify_ntp and verify_ntp_training raised ZeroDivisionError."""
    data = sg.NextTokenData([[0, 1]], np.array([1]), np.zeros((2, 1)))
    res = sg.graph_svm(data)
    assert res.status is sg.Status.INFEASIBLE and res.farkas is not None
    assert np.count_nonzero(res.farkas) == 1  # one row alone: its a_j b_j^T vanishes
    assert "every embedding is zero" in res.message
    for call in (
        lambda: sg.verify_ntp(data, np.zeros((1, 1))),
        lambda: sg.ntp.verify_ntp_training(data, n_steps=2),
    ):
        with pytest.raises(sg.ProblemError, match="Give the tokens nonzero, distinct embeddings"):
            call()
