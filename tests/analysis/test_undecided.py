# SPDX-License-Identifier: BSD-3-Clause
"""Undecided LOT verdicts: ambiguous support tokens and faces of Att-SVM⋆ optima."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg


def _slack_data(delta: float = 1e-7) -> sg.TokenData:
    # z = e1, tokens (1, 0), (0, 0), (-delta, 5), scores (1, 0, 2), alpha = [0].
    # Rows: a_1 = e1 (W11 >= 1) and a_2 = (1 + delta, -5) ((1 + delta) W11 - 5 W21 >= 1).
    # W = e1 e1^T meets both ((1 + delta) >= 1) with row 1 tight: min ||W||_F is W11 = 1, the
    # rest 0, so token 2 has margin exactly 1 + delta: slack, multiplier 0. Exact support {1},
    # score 0 < 1: alpha = [0] IS a LOT by the definition; floats cannot tell 1 + 1e-7 from 1.
    X = np.array([[[1.0, 0.0], [0.0, 0.0], [-delta, 5.0]]])
    return sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[1.0, 0.0, 2.0]]))


def test_weakly_active_high_scoring_token_leaves_the_verdict_undecided() -> None:
    lot = sg.is_locally_optimal(_slack_data(), [0])
    np.testing.assert_allclose(lot.support.svm.W, [[1.0, 0.0], [0.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(lot.support.svm.margins, [1.0, 1.0 + 1e-7], rtol=1e-12)
    assert not lot.decided and not lot and not lot.locally_optimal
    assert lot.violations == ()
    assert lot.reason.startswith("undecided")
    assert "token 2" in lot.reason and "margin 1.0000001" in lot.reason
    assert "multiplier 0.0" in lot.reason


def test_clear_slack_decides_the_verdict() -> None:
    # delta = 0.5: token 2 has margin 1.5, clearly slack: support {1}, alpha = [0] a LOT
    lot = sg.is_locally_optimal(_slack_data(0.5), [0])
    assert lot.decided and lot


@pytest.mark.parametrize("search", ["reference", "batched"])
def test_enumeration_lists_undecided_selections(search: str) -> None:
    data = _slack_data()
    with pytest.warns(sg.InaccurateSolutionWarning, match="undecided LOT verdict"):
        e = sg.locally_optimal_selections(data, search=search)
    # [0] undecided (above); [2] = opt, no token scores above it: a LOT; [1]: through
    # z = e1 token 1 is 0, between -1e-7 and 1 (the others): Att-SVM([1]) is infeasible
    np.testing.assert_array_equal(e.selections, [[2]])
    np.testing.assert_array_equal(e.undecided_selections, [[0]])
    assert len(e.undecided_results) == 1 and not e.undecided_results[0].decided
    assert e.total == 3 and e.examined + e.pruned == e.total
    assert "1 undecided" in e.summary()


def _face_data() -> sg.TokenData:
    # Att-SVM⋆([0, 0]) has rows W11 >= 1, W11 + W21 >= 1 (seq 0, z = e1) and W22 >= 1,
    # 2 W22 >= 1 (seq 1, z = e2). ||W||_* >= |W11| + |W22| >= 2 (the trace norm bounds the
    # diagonal's l1 norm), and every W = [[1, a], [a, 1]], a in [0, 1], has singular values
    # 1 + a, 1 - a: ||W||_* = 2. On that face token 2 of seq 0 (score 5 > 1) has margin 1 + a:
    # a support token at a = 0, not one at a > 0, so the verdict differs over the face.
    X = np.array([[[1.0, 0.0], [0.0, 0.0], [0.0, -1.0]], [[0.0, 1.0], [0.0, 0.0], [0.0, -1.0]]])
    return sg.TokenData(X, Z=np.eye(2), scores=np.array([[1.0, 0.0, 5.0], [1.0, 0.0, 0.0]]))


def test_face_of_nuclear_optima_leaves_the_verdict_undecided() -> None:
    data = _face_data()
    for a in (0.0, 0.5, 1.0):
        np.testing.assert_allclose(np.linalg.svd([[1.0, a], [a, 1.0]], compute_uv=False).sum(), 2.0)
    lot = sg.is_locally_optimal(data, [0, 0], norm="nuc")
    np.testing.assert_allclose(lot.support.svm.objective, 2.0, rtol=1e-6)
    assert not lot.decided and not lot
    assert "not proved unique" in lot.reason and "sequence 0: token 2" in lot.reason
    assert not lot.support.unique_optimum
    with pytest.warns(sg.InaccurateSolutionWarning, match="undecided"):
        e = sg.locally_optimal_selections(data, norm="nuc")
    assert [0, 0] in e.undecided_selections.tolist()
    assert [0, 0] not in e.selections.tolist()
    # opt = [2, 0] (unique optimal tokens): no token scores above it, a LOT on any face
    assert [2, 0] in e.selections.tolist()
    assert e.examined + e.pruned == e.total


@pytest.mark.parametrize("norm", ["spectral", ("lp", 1), ("lp", np.inf)])
def test_lot_functions_refuse_norms_without_tf_svm_support(norm: object) -> None:
    data = sg.random_data(3, 4, 3, seed=1)
    for f in (sg.is_locally_optimal, sg.support_tokens):
        with pytest.raises(sg.ProblemError, match=r"'norm' parameter of .* takes 'fro'"):
            f(data, [0, 0, 0], norm=norm)


def test_strictly_convex_lp_has_one_optimum_and_its_own_verdicts() -> None:
    """l_p for 1 < p < inf is strictly convex: one optimum, so support tokens and LOT verdicts
    are decided as for Att-SVM (verify_mirror judges by them); the enumeration's searches take
    Att-SVM and Att-SVM* only."""
    data = sg.random_data(3, 4, 3, seed=1)
    sup = sg.support_tokens(data, [0, 0, 0], norm=("lp", 3.0))
    assert sup.unique_optimum
    lot = sg.is_locally_optimal(data, [0, 0, 0], norm=("lp", 1.5))
    assert lot.decided and lot.support.unique_optimum
    with pytest.raises(sg.ProblemError, match=r"takes 'fro' \(Att-SVM\) or 'nuc' \(Att-SVM\*\);"):
        sg.locally_optimal_selections(data, norm=("lp", 3.0))


def test_support_tokens_say_whether_the_optimum_is_unique() -> None:
    data = sg.random_data(3, 4, 3, seed=1)
    assert sg.support_tokens(data, [0, 0, 0]).unique_optimum  # Frobenius: strictly convex
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        assert not sg.support_tokens(data, [0, 0, 0], norm="nuc").unique_optimum
