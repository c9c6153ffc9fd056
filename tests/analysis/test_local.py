# SPDX-License-Identifier: BSD-3-Clause
"""Local optimality on hand-derived cases (support sets derived in _cases.py)."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg

from ._cases import TRIANGLE, triangle


def test_non_optimal_token_is_locally_optimal() -> None:
    # scores (3, 1, 2): opt = 0. α = 2 has support {1} and γ_1 = 1 < γ_2 = 2 ⇒ LOT although
    # token 0 scores higher (it is not a support token of α = 2).
    data = triangle([3.0, 1.0, 2.0])
    lo = sg.is_locally_optimal(data, [2])
    assert lo and lo.locally_optimal
    assert lo.violations == ()
    assert "locally optimal" in lo.reason and "1 support token" in lo.reason
    assert sg.optimal_tokens(data)[0] == 0


def test_lot_flips_when_support_token_score_changes() -> None:
    # raise the support token's score to 2.5 ≥ γ_2 = 2: α = 2 is no longer locally optimal
    lo = sg.is_locally_optimal(triangle([3.0, 2.5, 2.0]), [2])
    assert not lo
    assert lo.violations == (sg.LOTViolation(0, 0, 1, 2.0, 2.5),)
    assert "support token 1 scores 2.5 >= selected 2" in lo.reason


def test_non_support_token_score_is_irrelevant() -> None:
    # token 0 is not a support token of α = 2: lowering it below γ_2 keeps the verdict
    assert sg.is_locally_optimal(triangle([2.1, 1.0, 2.0]), [2])
    assert sg.is_locally_optimal(triangle([0.5, 1.0, 2.0]), [2])


def test_tie_with_support_token_is_a_violation() -> None:
    lo = sg.is_locally_optimal(triangle([3.0, 2.0, 2.0]), [2])
    assert not lo and lo.violations[0].token == 1


def test_two_support_tokens_both_higher() -> None:
    # α = 1 has support {0, 2}; with scores (3, 1, 2) both score higher: two violations
    lo = sg.is_locally_optimal(triangle([3.0, 1.0, 2.0]), [1])
    assert not lo
    assert {v.token for v in lo.violations} == {0, 2}
    assert "2 of 2 support token(s)" in lo.reason


def test_infeasible_selection_is_not_locally_optimal() -> None:
    X = np.array([[[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[1.0, 2.0, 3.0]]))
    lo = sg.is_locally_optimal(data, [2])  # the optimal token, inside the hull
    assert not lo
    assert "infeasible" in lo.reason
    assert lo.support.farkas is not None


def test_several_queries_with_mask() -> None:
    # Two queries z_0 = e_1, z_1 = e_2: they see W's two columns, so the problems decouple.
    # Query 0 sees all three triangle tokens; query 1 sees tokens {0, 2} only (mask).
    # α = (2, 0): query 0 has support {1} (γ 1 < 2: fine); query 1's rows: (x_0 − x_2)·u ≥ 1,
    # i.e. 3 u_0 ≥ 1, tight at u = (1/3, 0) ⇒ support {2}, and γ_{1,2} = 5 ≥ γ_{1,0} = 1.
    Z = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    mask = np.array([[True, True, True], [True, False, True]])
    scores = np.array([[[3.0, 1.0, 2.0], [1.0, 0.0, 5.0]]])
    data = sg.TokenData(TRIANGLE, Z=Z, mask=mask, scores=scores)
    lo = sg.is_locally_optimal(data, [[2, 0]])
    np.testing.assert_array_equal(lo.support.mask, [[[False, True, False], [False, False, True]]])
    np.testing.assert_allclose(lo.support.svm.W, [[-0.4, 1 / 3], [-0.2, 0.0]], atol=1e-10)
    assert lo.violations == (sg.LOTViolation(0, 1, 2, 1.0, 5.0),)
    assert "query 1" in lo.reason
    # lowering query 1's token 2 below token 0 makes the selection locally optimal
    data_ok = sg.TokenData(TRIANGLE, Z=Z, mask=mask, scores=scores * [[[1], [-1]]])
    assert sg.is_locally_optimal(data_ok, [[2, 0]])
    with pytest.raises(sg.ProblemError, match="mask hides"):
        sg.is_locally_optimal(data, [[2, 1]])


@pytest.mark.parametrize("seed", range(4))
def test_optimal_selection_is_always_locally_optimal(seed: int) -> None:
    # SPEC §5: α = opt is locally optimal whenever Att-SVM(opt) is feasible (d ≥ n, T − 1 here)
    data = sg.random_data(4, 5, 6, seed=seed, query="all", mask="causal")
    assert sg.is_locally_optimal(data, sg.optimal_tokens(data))


def test_needs_scores() -> None:
    data = sg.TokenData(TRIANGLE, Z=np.array([[1.0, 0.0]]))
    with pytest.raises(sg.ProblemError, match="scores"):
        sg.is_locally_optimal(data, [0])
