# SPDX-License-Identifier: BSD-3-Clause
"""joint_svm: the head SVM v^mm and the relaxed SVM of its support, against naive oracles."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import svmgeo as sg
from svmgeo import testing as sgt


def _companion_data(third: list[float]) -> sg.TokenData:
    """The joint-training data of the companion paper's code: head = attention features."""
    X = np.array([[[0, 0], [1, 1]], [[0, 0], [1, -1]], [[0, 0], third]], dtype=float)
    return sg.TokenData(X, Y=[1, -1, 1], v=[0.0, 1.0], Z=np.ones((3, 2)))


def _values_data(seed: int, *, n: int = 4, T: int = 3, d: int = 8, d_u: int = 5, K: int = 1):
    """Attention tokens x (d) apart from head features u (d_u), random labels and queries."""
    rng = np.random.default_rng(seed)
    return sg.TokenData(
        rng.normal(size=(n, T, d)),
        Y=rng.choice([-1, 1], n),
        v=rng.normal(size=d_u),
        values=rng.normal(size=(n, T, d_u)),
        Z=rng.normal(size=(n, K, d)) if K > 1 else rng.normal(size=(n, d)),
    )


def _assert_matches_oracles(data: sg.TokenData, res: sg.JointSVMResult, param: str) -> None:
    alpha = res.alpha
    head = sgt.oracle_head_svm(data, alpha)
    assert head.feasible and res.head.success, (head.status, res.head.message)
    np.testing.assert_allclose(res.v, head.W, rtol=0, atol=1e-8 * max(1.0, head.objective))
    np.testing.assert_allclose(res.head.objective, head.objective, rtol=1e-9)
    # the support read off the oracle's v with a loose band (the oracle is accurate to ~1e-9)
    U, Y = np.asarray(data.values), np.asarray(data.labels)
    a = np.asarray(alpha).reshape(data.n, data.K)
    m = np.array([[Y[i, k] * U[i, a[i, k]] @ head.W for k in range(data.K)] for i in range(data.n)])
    np.testing.assert_array_equal(res.support.reshape(m.shape), m < 1.0 + 1e-6)
    np.testing.assert_array_equal(res.margin.reshape(m.shape), (m < 1.0 + 1e-6).astype(float))
    if param == "p":
        ref = sgt.oracle_prompt_svm(data, alpha, res.margin)
        got = res.p
    else:
        ref = sgt.oracle_att_svm(data, alpha, margin=res.margin)
        got = res.W
    assert res.attention is not None
    if ref.feasible:
        assert res.attention.success, res.attention.message
        np.testing.assert_allclose(got, ref.W, rtol=0, atol=1e-7 * max(1.0, ref.objective))
        np.testing.assert_allclose(res.attention.objective, ref.objective, rtol=1e-8)
    else:
        assert ref.feasible is False, ref.status
        assert res.attention.status is sg.Status.INFEASIBLE
        sgt.assert_farkas(res.attention.constraints, res.attention.farkas)


@pytest.mark.parametrize(("third", "support"), [([0.5, 1.0], [1, 1, 1]), ([0.5, 1.5], [1, 1, 0])])
def test_companion_tight_and_non_tight_data(third, support):
    """Tight data: every input on v^mm's margin, the relaxed SVM is the p-SVM; non-tight: the
    third input is off the margin and its rows get right-hand side 0."""
    data = _companion_data(third)
    res = sg.joint_svm(data)
    assert res.success, res.message
    assert res.support_proof == "exact"
    np.testing.assert_array_equal(res.support, np.array(support, dtype=bool))
    _assert_matches_oracles(data, res, "p")
    p_svm = sg.att_svm(data, param="p")
    if all(support):
        np.testing.assert_allclose(res.p, p_svm.p, rtol=0, atol=1e-12)
    else:
        assert res.attention.objective < p_svm.objective - 1e-3


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("param", ["p", "W"])
def test_values_apart_from_tokens_match_the_oracles(seed, param):
    data = _values_data(seed)
    res = sg.joint_svm(data, param=param)
    assert res.v.shape == (5,)
    assert (res.p is None) == (param == "W") and (res.W is None) == (param == "p")
    _assert_matches_oracles(data, res, param)


def test_several_queries_per_input():
    data = _values_data(3, n=3, T=3, d=9, d_u=6, K=2)
    res = sg.joint_svm(data, param="W")
    assert res.support.shape == (3, 2) and res.head_margins.shape == (3, 2)
    _assert_matches_oracles(data, res, "W")


def test_nuclear_relaxed_svm_matches_the_oracle():
    data = _values_data(4)
    res = sg.joint_svm(data, param="W", norm="nuc")
    ref = sgt.oracle_att_svm(data, res.alpha, "nuc", margin=res.margin)
    assert res.success and ref.feasible, (res.message, ref.status)
    sgt.assert_certified(res.attention)
    np.testing.assert_allclose(res.attention.objective, ref.objective, rtol=1e-6)


def test_rhs_zero_rows_are_certified_and_proved():
    """The relaxed SVM's rows with right-hand side 0: certificate, dual sign, exact proof."""
    data = _companion_data([0.5, 1.5])
    res = sg.joint_svm(data, param="W")
    att = res.attention
    cs = att.constraints
    zero = cs.rhs == 0.0
    assert zero.any() and (~zero).any()
    sgt.assert_certified(att)
    assert att.proof == "exact"
    assert np.all(att.margins[zero] >= 0.0) and np.all(att.margins[~zero] >= 1.0 - 1e-12)
    exact = sgt.exact_margins(cs, att.W)
    assert all(m >= c for m, c in zip(exact, cs.rhs, strict=True) if c == 0.0)


def test_exact_and_tolerance_supports_agree():
    for seed in range(3):
        data = _values_data(seed, n=6, d_u=4)
        exact = sg.joint_svm(data)
        loose = sg.joint_svm(data, exact=False)
        if exact.v is None:
            continue
        assert exact.support_proof == "exact" and loose.support_proof == "tolerance"
        np.testing.assert_array_equal(exact.support, loose.support)
        assert "support_tol" in loose.message


def test_infeasible_head_data_give_a_farkas_certificate():
    """Two inputs select the same head feature with opposite labels: no v separates them."""
    X = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, -1.0]]])
    data = sg.TokenData(X, Y=[1, -1], Z=np.ones((2, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.InaccurateSolutionWarning)  # a proved verdict
        res = sg.joint_svm(data, alpha=[0, 0])
    assert res.status is sg.Status.INFEASIBLE and not res.success
    assert res.v is None and res.support is None and res.attention is None and res.p is None
    assert res.head.proof == "exact"
    sgt.assert_farkas(res.head.constraints, res.head.farkas)
    assert sgt.oracle_head_svm(data, [0, 0]).feasible is False
    assert "head SVM infeasible" in res.message and "Head SVM" in res.summary()


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(1, 4),
    extra=st.integers(0, 3),
    T=st.integers(2, 4),
    seed=st.integers(0, 2**16),
)
def test_relaxed_svm_is_the_p_svm_when_every_input_is_a_support_vector(n, extra, T, seed):
    """Head features u_{i alpha_i} = Y_i s_i e_i (orthogonal): v^mm = sum_i e_i / s_i puts every
    input on its margin, so the relaxed SVM has every right-hand side 1: it is the p-SVM."""
    rng = np.random.default_rng(seed)
    d_u = n + extra
    Y = rng.choice([-1, 1], n)
    alpha = rng.integers(0, T, n)
    U = rng.normal(size=(n, T, d_u))
    U[np.arange(n), alpha] = 0.0
    U[np.arange(n), alpha, np.arange(n)] = Y * rng.uniform(0.5, 2.0, n)
    data = sg.TokenData(rng.normal(size=(n, T, 3 * n)), Y=Y, values=U, Z=np.ones((n, 3 * n)))
    res = sg.joint_svm(data, alpha)
    assert res.head.success and res.support_proof == "exact"
    assert res.support.all()
    p_svm = sg.att_svm(data, alpha, param="p")
    assert res.attention.status is p_svm.status
    if p_svm.success:
        np.testing.assert_allclose(res.p, p_svm.p, rtol=0, atol=1e-9 * max(1.0, p_svm.objective))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_relaxed_svm_is_a_relaxation(seed):
    """Right-hand sides 0 <= 1: the relaxed optimum is at most the p-SVM optimum."""
    data = _values_data(seed, n=3, T=3, d=7, d_u=4)  # both SVMs feasible (generic data)
    res = sg.joint_svm(data)
    p_svm = sg.att_svm(data, res.alpha, param="p")
    assert res.success and p_svm.success, (res.message, p_svm.message)
    assert res.attention.objective <= p_svm.objective * (1 + 1e-12)
    if res.support.all():
        np.testing.assert_allclose(res.p, p_svm.p, rtol=0, atol=1e-9 * p_svm.objective)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"param": "KQ"}, "norm='nuc'"),
        ({"support_tol": 0.0}, "'support_tol'"),
        ({"support_tol": 1.0}, "'support_tol'"),
        ({"alpha": [0, 0]}, "alpha"),
        ({"norm": "l2"}, "'norm'"),
    ],
)
def test_bad_input_is_named(kwargs, match):
    with pytest.raises(sg.ProblemError, match=match):
        sg.joint_svm(_companion_data([0.5, 1.0]), **kwargs)


def test_no_alpha_and_no_head_is_explained():
    data = sg.TokenData(np.ones((2, 3, 2)), Z=np.ones((2, 2)))
    with pytest.raises(sg.ProblemError, match="pass alpha"):
        sg.joint_svm(data)
    with pytest.raises(sg.ProblemError, match="TokenData"):
        sg.joint_svm(np.ones((2, 3, 2)))


def test_summary_and_repr():
    res = sg.joint_svm(_companion_data([0.5, 1.5]))
    text = res.summary()
    assert "2 of 3 queries" in text and "Relaxed attention SVM" in text and "p-SVM" in text
    assert "||v||_2" in text
    assert repr(res).startswith("JointSVMResult(status=optimal")


def test_the_companion_doc_example_runs():
    """docs/companion.md's example block, as a doctest (its printed numbers are checked)."""
    import doctest
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "docs" / "companion.md"
    result = doctest.testfile(
        str(path), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted >= 8 and result.failed == 0, result


@pytest.mark.parametrize("eps", [2.0**-53, 1e-9])
def test_nearly_dependent_head_rows_get_their_exact_support(eps: float) -> None:
    """Regression: three head rows in the plane, nearly dependent; the float dual spreads over
    all three (0.269, 0.423, 0.308 at eps = 1e-9), the pivots taken in index order ({0, 1})
    failed row 2 by one ulp, and the tolerance rule put query 0 in S with status OPTIMAL:
    p^relax = (1, 1) for the wrong S. An exact enumeration of the KKT points gives S = {1, 2}
    and p^relax = (0, 1); the candidates are now ordered by multiplier."""
    U = np.array([[[0, 0], [1, 1]], [[0, 0], [1, -1]], [[0, 0], [0.5, 1.0 - eps]]])
    X = np.array([[[0, 0], [1, 0]], [[0, 0], [0, 1]], [[0, 0], [1, 1]]], dtype=float)
    data = sg.TokenData(X, Y=[1, -1, 1], values=U)
    res = sg.joint_svm(data, [1, 1, 1])
    assert res.status is sg.Status.OPTIMAL and res.support_proof == "exact", res.message
    np.testing.assert_array_equal(res.support, [False, True, True])
    np.testing.assert_allclose(res.p, [0.0, 1.0], atol=1e-12)


def test_a_failed_support_proof_is_not_optimal(monkeypatch: pytest.MonkeyPatch) -> None:
    """With exact=True, a support the exact proof could not settle is decided by support_tol;
    the relaxed SVM is then certified for an unproved S, so the joint status is
    OPTIMAL_INACCURATE ("undecided"), not OPTIMAL."""
    import svmgeo.solvers._joint as joint

    X = np.array([[[0, 0], [1, 1]], [[0, 0], [1, -1]], [[0, 0], [0.5, 1.5]]])
    data = sg.TokenData(X, Y=[1, -1, 1], v=[0.0, 1.0], Z=np.ones((3, 2)))
    assert sg.joint_svm(data).status is sg.Status.OPTIMAL
    monkeypatch.setattr(joint, "exact_support", lambda cs, candidates: None)
    with pytest.warns(sg.InaccurateSolutionWarning):
        res = sg.joint_svm(data)
    assert res.status is sg.Status.OPTIMAL_INACCURATE and res.support_proof == "tolerance"
    assert res.message.startswith("undecided") and "exact proof failed" in res.message
    # exact=False chooses the tolerance rule: no downgrade
    assert sg.joint_svm(data, exact=False).status is sg.Status.OPTIMAL
