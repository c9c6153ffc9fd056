# SPDX-License-Identifier: BSD-3-Clause
"""The p-SVM (att_svm(param="p")): naive cvxpy oracle, the z = e1 equivalence, its norms."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo import testing as sgt


def _e1_queries(data: sg.TokenData) -> np.ndarray:
    Z = np.zeros((data.n, data.K, data.d))
    Z[:, :, 0] = 1.0
    return Z


def _data(seed: int, *, n: int = 4, T: int = 3, d: int = 8, **kw) -> sg.TokenData:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, T, d))
    return sg.TokenData(X, Y=rng.choice([-1, 1], n), v=rng.normal(size=d), **kw)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_p_svm_matches_naive_oracle(seed):
    data = _data(seed, Z=np.random.default_rng(seed + 10).normal(size=(4, 8)))
    alpha = sg.optimal_tokens(data)
    res = sg.att_svm(data, alpha, param="p")
    ref = sgt.oracle_prompt_svm(data, alpha)
    assert res.success and ref.feasible, (res.message, ref.status)
    assert res.proof == "exact"
    scale = max(1.0, float(np.linalg.norm(ref.W)))
    np.testing.assert_allclose(res.p, ref.W, rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(res.objective, ref.objective, rtol=1e-9)
    np.testing.assert_allclose(res.objective, np.linalg.norm(res.p), rtol=1e-14)
    sgt.assert_certified(res)


def test_p_svm_ignores_queries_and_keeps_the_mask():
    """Self-attention data with a causal mask: the rows are those of each query's visible keys,
    whatever the queries (here the tokens themselves)."""
    data = _data(3, n=2, T=4, d=9, query="all", mask="causal")
    alpha = np.array([[0, 0, 0, 0], [0, 1, 1, 1]])  # one p prefers one token per input
    res = sg.att_svm(data, alpha, param="p")
    ref = sgt.oracle_prompt_svm(data, alpha)
    assert res.success and ref.feasible
    assert res.constraints.N == 2 * (0 + 1 + 2 + 3)
    np.testing.assert_allclose(res.p, ref.W, rtol=0, atol=1e-8 * max(1.0, ref.objective))


@pytest.mark.parametrize("norm", ["fro", "nuc", ("lp", 1.5)])
def test_p_svm_is_att_svm_with_every_query_e1(norm):
    """The W of Att-SVM on the same tokens with z_i = e1 is p e1^T, with the same objective."""
    data = _data(4, Z=np.ones((4, 8)))
    alpha = sg.optimal_tokens(data)
    res = sg.att_svm(data, alpha, param="p", norm=norm)
    e1 = sg.TokenData(np.asarray(data.X), Z=_e1_queries(data))
    ref = sg.att_svm(e1, alpha, norm=norm)
    assert res.success and ref.success, (res.message, ref.message)
    atol = 1e-6 if norm != "fro" else 1e-9
    np.testing.assert_allclose(ref.W[:, 0], res.p, rtol=0, atol=atol * max(1.0, res.objective))
    np.testing.assert_allclose(ref.W[:, 1:], 0.0, atol=atol * max(1.0, res.objective))
    np.testing.assert_allclose(ref.objective, res.objective, rtol=1e-7)


def test_nuclear_p_svm_is_the_euclidean_p_svm():
    """||p e1^T||_* = ||p||_2: norm="nuc" (the SDP) solves the same problem as norm="fro"."""
    data = _data(5, Z=np.ones((4, 8)))
    fro = sg.att_svm(data, param="p")
    nuc = sg.att_svm(data, param="p", norm="nuc")
    assert fro.success and nuc.success
    sgt.assert_certified(nuc)
    np.testing.assert_allclose(nuc.p, fro.p, rtol=0, atol=1e-6 * fro.objective)
    np.testing.assert_allclose(nuc.objective, fro.objective, rtol=1e-7)
    assert sgt.numerical_rank(nuc.W) == 1


def test_lp_p_svm_matches_a_naive_lq_model():
    """norm=("lp", q) is min ||p||_q: the entrywise norm of p e1^T."""
    import cvxpy as cp

    data = _data(6, Z=np.ones((4, 8)))
    alpha = sg.optimal_tokens(data)
    res = sg.att_svm(data, alpha, param="p", norm=("lp", 1.5))
    A, _ = sgt.naive_rows(data, alpha)
    p = cp.Variable(data.d)
    cp.Problem(cp.Minimize(cp.pnorm(p, 1.5)), [A @ p >= 1]).solve(solver=cp.CLARABEL)
    assert res.success and res.proof == "exact"  # its feasibility verdict, proved
    np.testing.assert_allclose(
        res.objective, np.sum(np.abs(p.value) ** 1.5) ** (1 / 1.5), rtol=1e-6
    )
    np.testing.assert_allclose(res.p, p.value, rtol=0, atol=1e-5 * res.objective)


def test_infeasible_p_svm_is_a_result_with_a_farkas_certificate():
    """Two inputs whose selected and competing tokens swap: no p prefers both."""
    X = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]])
    data = sg.TokenData(X, v=[1.0, 0.0], Z=np.ones((2, 2)))
    alpha = np.array([0, 0])
    res = sg.att_svm(data, alpha, param="p")
    assert res.status is sg.Status.INFEASIBLE and res.proof == "exact"
    assert res.p is None and res.W is None
    sgt.assert_farkas(res.constraints, res.farkas)
    assert "p-SVM" in res.summary()
    feas = sg.feasibility(data, alpha, param="p")
    assert not feas.feasible and feas.proof == "exact"
    assert sgt.oracle_prompt_svm(data, alpha).feasible is False


def test_feasibility_p_agrees_with_the_solve():
    data = _data(7, Z=np.ones((4, 8)))
    feas = sg.feasibility(data, param="p")
    assert feas.feasible and feas.proof == "exact"
    W = feas.point
    np.testing.assert_array_equal(W[:, 1:], 0.0)


def test_summary_and_repr_name_the_p_svm():
    res = sg.att_svm(_data(8, Z=np.ones((4, 8))), param="p")
    assert "p-SVM" in res.summary() and "||p||_2" in res.summary()
    assert "p=(8,)" in repr(res)
    assert sg.att_svm(_data(8, Z=np.ones((4, 8)))).p is None


@pytest.mark.parametrize(
    ("param", "match"),
    [("KQ", "norm='nuc'"), ("q", "'param'"), (None, "'param'")],
)
def test_bad_param_is_named(param, match):
    data = _data(9, Z=np.ones((4, 8)))
    with pytest.raises(sg.ProblemError, match=match):
        sg.att_svm(data, param=param)
    with pytest.raises(sg.ProblemError, match=match):
        sg.feasibility(data, param=param)


def test_cli_solve_param_p_matches_the_python_api(capsys, tmp_path):
    import json

    from svmgeo.cli import main

    save = tmp_path / "p.npz"
    args = ["solve", "--n", "3", "--T", "3", "--d", "6", "--seed", "0", "--param", "p"]
    assert main([*args, "--json", "--save", str(save)]) == 0
    out = json.loads(capsys.readouterr().out)
    res = sg.att_svm(sg.random_data(3, 3, 6, seed=0), param="p")
    assert out["param"] == "p" and out["status"] == "optimal"
    np.testing.assert_allclose(out["p"], res.p, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.load(save)["p"], res.p, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("norm", [("lp", np.inf), "spectral", "fro", "nuc", ("lp", 1.0)])
def test_the_prompt_solution_is_p_e1(norm: object) -> None:
    """The docs promise W = p e1^T; the entrywise l_inf optimum is not unique and its solver
    returned a W with every column filled (p itself was optimal)."""
    rng = np.random.default_rng(4)
    data = sg.TokenData(rng.normal(size=(4, 3, 6)), v=rng.normal(size=6))
    res = sg.att_svm(data, param="p", norm=norm)  # type: ignore[arg-type]
    assert res.status is sg.Status.OPTIMAL and res.W is not None and res.p is not None
    np.testing.assert_array_equal(res.W[:, 1:], 0.0)
    np.testing.assert_array_equal(res.W[:, 0], res.p)
    if norm == ("lp", np.inf):
        np.testing.assert_allclose(np.abs(res.p).max(), res.objective, rtol=1e-12)
