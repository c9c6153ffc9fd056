# SPDX-License-Identifier: BSD-3-Clause
"""Next-token prediction, regressions of audit 45: the finite component at mixed embedding
scales, the Graph-SVM that verify_ntp takes, and the NTP error messages."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import svmgeo as sg

# two queries (tokens 2 and 4) with the same cycle 0 <-> 1 and label counts 2 : 1 under each
_SEQS = [[0, 1, 2]] * 3 + [[0, 1, 4]] * 3
_LABELS = [0, 0, 1, 0, 0, 1]


def _mixed(c: float, e4: np.ndarray | None = None) -> sg.NextTokenData:
    """E = I_5 with token 4's embedding of norm c (along e_4, or c * e4 when given)."""
    E = np.eye(5)
    E[4] = c * (np.eye(5)[4] if e4 is None else e4)
    return sg.NextTokenData(_SEQS, _LABELS, E)


def _minimizer(data: sg.NextTokenData) -> np.ndarray:
    r"""The restricted retrieval loss's minimizer on S_fin, by hand: under each query k the
    attention on tokens 0, 1 must be 2/3, 1/3 (the label counts), i.e. the logit gap
    (e_0 - e_1)^T W e_k = log 2; S_fin = (e_0 - e_1) span(e_2, e_4)^T, so
    W = (e_0 - e_1) x^T / 2 with x^T e_2 = x^T e_4 = log 2, x in span(e_2, e_4)."""
    E = data.embeddings
    Q = np.stack([E[2], E[4]])  # (2, d)
    x = Q.T @ np.linalg.solve(Q @ Q.T, np.full(2, math.log(2)))
    return np.outer(E[0] - E[1], x) / 2


@pytest.mark.parametrize("c", [1e-9, 1e-10, 1e-13, 1e-60])
def test_finite_component_keeps_a_small_query_s_direction(c: float) -> None:
    """Audit 45: with token 4's embedding of norm c and the others of norm 1, W_fin's gap
    under query 4 stayed 0 (loss 0.6648 instead of 0.6365) with success=True: one scale
    2^-2k from the largest norm left that direction's gradient (~c) below tol at W = 0; for
    c <= 1e-12 the rank cut, relative to the largest generator, dropped the direction."""
    data = _mixed(c)
    fin = sg.finite_component(data, loss="retrieval")
    W = _minimizer(data)
    assert fin.basis.shape[0] == 2, fin.message  # (e_0 - e_1) e_2^T and (e_0 - e_1) e_4^T
    assert fin.success and not fin.at_boundary, fin.message
    E = data.embeddings
    np.testing.assert_allclose((E[0] - E[1]) @ fin.W @ E[4], math.log(2), rtol=1e-7)
    np.testing.assert_allclose((E[0] - E[1]) @ fin.W @ E[2], math.log(2), rtol=1e-7)
    np.testing.assert_allclose(fin.W, W, rtol=1e-7, atol=1e-7 * np.abs(W).max())
    best = sg.ntp_loss_and_grad(data, W, loss="retrieval", keep=fin.keep)[0]
    np.testing.assert_allclose(fin.loss, best, rtol=1e-12)
    np.testing.assert_allclose(fin.project(W), W, rtol=1e-12, atol=1e-12 * np.abs(W).max())


def test_finite_component_at_mixed_scales_when_the_queries_are_not_orthogonal() -> None:
    """The small query's embedding c (e_2 + e_3)/sqrt(2) is not orthogonal to the large
    one's e_2: its direction in S_fin mixes both generators' scales."""
    data = _mixed(1e-10, np.array([0.0, 0, 1, 1, 0]) / math.sqrt(2))
    fin = sg.finite_component(data, loss="retrieval")
    W = _minimizer(data)
    assert fin.basis.shape[0] == 2 and fin.success, fin.message
    E = data.embeddings
    np.testing.assert_allclose((E[0] - E[1]) @ fin.W @ E[4], math.log(2), rtol=1e-7)
    np.testing.assert_allclose(fin.W, W, rtol=1e-7, atol=1e-7 * np.abs(W).max())


@pytest.mark.parametrize("m", [-30, 7])
def test_finite_component_at_mixed_scales_is_exactly_power_of_two_equivariant(m: int) -> None:
    """E -> 2^m E leaves every logit e_x^T W e_k of W / 4^m unchanged, and every step of the
    solve is exact in float64: W_fin(2^m E) = W_fin(E) / 4^m bit for bit."""
    ref = sg.finite_component(_mixed(1e-9), loss="retrieval")
    scaled = sg.NextTokenData(_SEQS, _LABELS, np.ldexp(_mixed(1e-9).embeddings, m))
    fin = sg.finite_component(scaled, loss="retrieval")
    np.testing.assert_array_equal(fin.W, np.ldexp(ref.W, -2 * m))
    assert fin.loss == ref.loss and fin.success == ref.success


def test_verify_ntp_refuses_an_svm_that_is_not_the_frobenius_graph_svm() -> None:
    """Audit 45: verify_ntp(svm=...) measured corr_svm and R against a nuclear-norm, an
    l_1.5 or a rank-bounded (locally optimal) Graph-SVM without a word; W^svm is the
    Frobenius Graph-SVM."""
    data = sg.random_next_token_data(20, 4, 5, 8, tier_size=2, seed=0)
    W = np.zeros((data.d, data.d))
    cases = {
        "norm='nuc'": sg.graph_svm(data, norm="nuc"),
        "norm=('lp', 1.5)": sg.graph_svm(data, norm=("lp", 1.5)),
        "rank=2": sg.graph_svm(data, norm="nuc", rank=2),
        "status 'locally_optimal'": dataclasses.replace(
            sg.graph_svm(data), status=sg.Status.LOCALLY_OPTIMAL
        ),
    }
    for got, svm in cases.items():
        assert svm.W is not None
        with pytest.raises(sg.ProblemError) as err:
            sg.verify_ntp(data, W, svm=svm)
        text = str(err.value)
        assert "'svm' parameter of verify_ntp" in text and got in text, text
        assert "norm='fro'" in text and "no rank bound" in text and "graph_svm(data)" in text
    sg.verify_ntp(data, W, svm=sg.graph_svm(data))  # the Frobenius one is taken


def _uncertified() -> sg.NextTokenData:
    """Token 2's embedding 1e-160: the Graph-SVM's certificate overflows (optimal_inaccurate)."""
    E = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1e-160]])
    return sg.NextTokenData([[0, 1, 2], [1, 2]], [0, 1], E)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_report_says_when_w_svm_is_not_certified() -> None:
    """Audit 45: rep.svm.status was optimal_inaccurate and the report printed corr(W, Wsvm)
    without a word; a certified W^svm keeps the report as it was (no W_svm line)."""
    rep = sg.ntp.verify_ntp_training(_uncertified(), loss="retrieval", n_steps=5)
    assert rep.svm.status is sg.Status.OPTIMAL_INACCURATE
    line = next(x for x in str(rep).splitlines() if x.startswith("  W_svm "))
    assert "optimal_inaccurate" in line and "not certified" in line and "corr(W,Wsvm)" in line
    ok = sg.ntp.verify_ntp_training(
        sg.random_next_token_data(20, 4, 5, 8, tier_size=2, seed=0), loss="retrieval", n_steps=5
    )
    assert ok.svm.status is sg.Status.OPTIMAL and "W_svm " not in str(ok)


def test_an_infeasible_graph_svm_is_told_in_next_token_terms() -> None:
    """Audit 45: tokens 0 and 1 share an embedding; the only margin row, edge 1 -> 0 of the
    graph of last token 2, cannot be met. The message named 'sequence 2' (the row's seq field
    holds the last token; there is one sequence) and verify_ntp_training advised raising d."""
    E = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    data = sg.NextTokenData([[1, 0, 2]], [1], E)
    svm = sg.graph_svm(data)
    assert svm.status is sg.Status.INFEASIBLE
    assert "sequence 2" not in svm.message
    assert "last token 2, edge 1 -> 0" in svm.message, svm.message
    assert "tokens 1 and 0 share an embedding" in svm.message
    with pytest.raises(sg.ProblemError) as err:
        sg.ntp.verify_ntp_training(data, n_steps=5)
    text = str(err.value)
    assert "tokens 1 and 0 share an embedding" in text and "sequences[0]" in text
    assert "Raise the embedding dimension" not in text, text
    # a zero query embedding: every logit under last token 2 is 0
    zero = sg.NextTokenData([[1, 0, 2]], [1], np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(sg.ProblemError, match="last token 2 has a zero embedding") as err:
        sg.verify_ntp(zero, np.zeros((2, 2)))
    assert "Raise the embedding dimension" not in str(err.value)


def test_keep_errors_separate_the_shape_from_a_dropped_label() -> None:
    """Audit 45: a keep of the right shape that drops sequence 0's label said '... got shape
    (2, 3)', the shape it asked for."""
    data = sg.NextTokenData([[0, 1, 2], [1, 0, 2]], [0, 0], np.eye(3))
    keep = np.array([[False, True, True], [True, True, True]])
    with pytest.raises(sg.ProblemError) as err:
        sg.ntp_loss_and_grad(data, np.eye(3), keep=keep)
    text = str(err.value)
    assert "keep[0]" in text and "label 0" in text and "got shape" not in text, text
    with pytest.raises(sg.ProblemError, match=r"shape \(2, 3\).*got shape \(2, 2\)"):
        sg.ntp_loss_and_grad(data, np.eye(3), keep=np.ones((2, 2), dtype=bool))


def test_finite_component_refuses_a_direction_past_the_norm_limit() -> None:
    """Token 4's embedding 1e-160: W_fin along (e_0 - e_1) e_4^T is of order 1e160, past the
    next-token risk's norm limit 1e149. It returned W_fin without that direction, success=True."""
    with pytest.raises(
        sg.ProblemError, match=r"finite_component: .*norm limit.*tokens 0, 1 under last token 4"
    ):
        sg.finite_component(_mixed(1e-160), loss="retrieval")
