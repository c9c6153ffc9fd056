# SPDX-License-Identifier: BSD-3-Clause
"""Support tokens: hand-derived cases, the cvxpy oracle, degeneracy, infeasibility, reporting."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.analysis._support import support_from_result
from svmgeo.solvers import solve_naive_cvxpy
from svmgeo.testing import assert_farkas

from ._cases import E1, triangle


@pytest.mark.parametrize(
    ("alpha", "expected"),
    [(0, [False, True, False]), (1, [True, False, True]), (2, [False, True, False])],
)
def test_triangle_support_by_hand(alpha: int, expected: list[bool]) -> None:
    # derivations in _cases.py; here every active row also has a positive multiplier
    sup = sg.support_tokens(triangle([3.0, 1.0, 2.0]), [alpha])
    assert sup.feasible
    np.testing.assert_array_equal(np.asarray(sup), [expected])
    np.testing.assert_array_equal(sup.by_dual, [expected])
    assert not sup.weakly_active.any() and not sup.inconsistent.any()
    assert sup.tokens(0) == [t for t in range(3) if expected[t]]


def test_triangle_alpha1_multipliers_by_hand() -> None:
    # u = (0, 1) = λ_0 (−1, 1) + λ_2 (2, 1)  ⇒  λ_0 = 2/3, λ_2 = 1/3
    sup = sg.support_tokens(triangle([3.0, 1.0, 2.0]), [1])
    np.testing.assert_allclose(sup.svm.W, [[0.0, 0.0], [1.0, 0.0]], atol=1e-10)
    np.testing.assert_allclose(sup.svm.dual, [2 / 3, 1 / 3], atol=1e-10)


def test_weakly_active_token_is_reported() -> None:
    # x_2 = (−1, 0): for α = 0 the rows are (1, −1)·u ≥ 1 and (2, 0)·u ≥ 1. u = (½, −½) is the
    # min-norm point of the first row alone and meets the second with equality: token 2 is
    # active with λ_2 = 0 (weakly active), token 1 active with λ_1 = ½.
    X = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]])
    data = sg.TokenData(X, Z=E1, scores=np.array([[3.0, 1.0, 2.0]]))
    sup = sg.support_tokens(data, [0])
    np.testing.assert_array_equal(sup.mask, [[False, True, True]])
    np.testing.assert_array_equal(sup.by_dual, [[False, True, False]])
    np.testing.assert_array_equal(sup.weakly_active, [[False, False, True]])
    assert not sup.inconsistent.any()


def test_positive_dual_on_slack_row_is_reported_with_warning() -> None:
    data = triangle([3.0, 1.0, 2.0])
    res = sg.att_svm(data, [0])  # support {1}; token 2 has margin 3/2
    fake = dataclasses.replace(res, dual=np.array([0.5, 0.5]))
    with pytest.warns(sg.InaccurateSolutionWarning, match="positive dual multiplier"):
        sup = support_from_result(data, np.array([[0]]), fake, tol=1e-6, dual_tol=1e-9)
    np.testing.assert_array_equal(sup.inconsistent, [[False, False, True]])
    np.testing.assert_array_equal(sup.mask, [[False, True, False]])  # margins decide


def _oracle_mask(data: sg.TokenData, alpha: np.ndarray) -> np.ndarray:
    """Support mask (n, K, T) from the naive cvxpy model's W and the rows' margins."""
    cs = sg.att_svm_constraints(data, alpha)
    W = solve_naive_cvxpy(cs, "fro", solver="CLARABEL")[0]
    margins = np.einsum("ja,ab,jb->j", cs.A, W, cs.B)
    # generic data: support margins are 1, the others clearly above (checked, not assumed)
    assert np.all((np.abs(margins - 1.0) < 1e-5) | (margins > 1.0 + 1e-3))
    expected = np.zeros((data.n, data.K, data.T), dtype=bool)
    expected[cs.seq, cs.query, cs.comp] = np.abs(margins - 1.0) < 1e-5
    return expected


@pytest.mark.parametrize(
    "data",
    [
        sg.random_data(4, 5, 6, seed=0),
        sg.random_data(4, 5, 6, seed=1),
        sg.random_data(3, 4, 6, seed=2, query=0),
        sg.random_data(3, 4, 6, seed=3, query="all", mask="causal"),
        sg.random_data(2, 4, 5, seed=4, n_queries=2),
    ],
    ids=["cross-0", "cross-1", "self", "causal", "two-queries"],
)
def test_support_matches_cvxpy_oracle(data: sg.TokenData) -> None:
    alpha = sg.optimal_tokens(data)
    sup = sg.support_tokens(data, alpha)
    expected = _oracle_mask(data, alpha)
    if data.single_query:
        expected = expected[:, 0]
    assert sup.mask.shape == expected.shape
    np.testing.assert_array_equal(sup.mask, expected)
    np.testing.assert_array_equal(sup.by_dual, expected)
    assert expected.any()


def test_infeasible_alpha_gives_certificate_not_exception() -> None:
    # x_2 = (x_0 + x_1)/2 lies in the hull of the others: α = 2 is infeasible
    X = np.array([[[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]]])
    data = sg.TokenData(X, Z=E1, scores=np.array([[1.0, 2.0, 3.0]]))
    sup = sg.support_tokens(data, [2])
    assert not sup.feasible
    assert sup.mask is None and sup.by_dual is None
    assert_farkas(sup.svm.constraints, sup.farkas)
    np.testing.assert_allclose(sup.farkas, [0.5, 0.5], atol=1e-9)
    assert not hasattr(sup, "certificate")  # the deprecated alias is gone (never released)
    for read in (lambda: np.asarray(sup), lambda: sup.tokens(0)):  # not [] (session 48)
        with pytest.raises(sg.ProblemError, match="infeasible"):
            read()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"tol": 0.0}, "'tol'"), ({"tol": 2.0}, "'tol'"), ({"dual_tol": -1.0}, "'dual_tol'")],
)
def test_bad_tolerances(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        sg.support_tokens(triangle([3.0, 1.0, 2.0]), [0], **kwargs)


def test_tol_decides_the_margins_and_leaves_the_solve_alone() -> None:
    """support_tokens' tol is the margin decision's only (its docstring): the solve keeps
    solve_svm's certificate tolerance. Token 2 of alpha = 0 has margin 3/2 (see above), within
    tol = 0.5 relative of 1."""
    data = triangle([3.0, 1.0, 2.0])
    default = sg.support_tokens(data, [0])
    loose = sg.support_tokens(data, [0], tol=0.5)
    solve_tol = inspect.signature(sg.solve_svm).parameters["tol"].default
    for sup in (default, loose):
        np.testing.assert_allclose(sup.svm.certificate.tol, solve_tol, rtol=0.0)
    np.testing.assert_allclose(loose.svm.W, default.svm.W, rtol=0.0, atol=0.0)
    np.testing.assert_allclose(loose.svm.margins, [1.0, 1.5], rtol=1e-12)
    np.testing.assert_array_equal(default.mask, [[False, True, False]])
    np.testing.assert_array_equal(loose.mask, [[False, True, True]])
    assert loose.tol == 0.5


def test_bad_alpha_and_data() -> None:
    data = triangle([3.0, 1.0, 2.0])
    with pytest.raises(sg.ProblemError, match="alpha"):
        sg.support_tokens(data, [3])
    with pytest.raises(sg.ProblemError, match="TokenData"):
        sg.support_tokens(np.zeros((1, 3, 2)), [0])
