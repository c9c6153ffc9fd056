# SPDX-License-Identifier: BSD-3-Clause
"""Token scores, optimal tokens with tie reporting, and selection validation."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg


def test_scores_are_label_times_head():
    data = sg.random_data(4, 5, 3, seed=0)
    expected = data.Y[:, None] * np.einsum("itd,d->it", data.X, data.v)
    np.testing.assert_allclose(sg.token_scores(data), expected, rtol=1e-14)
    np.testing.assert_array_equal(sg.optimal_tokens(data), np.argmax(expected, axis=1))


def test_scores_need_head():
    data = sg.TokenData(np.ones((2, 3, 4)), query=0)
    with pytest.raises(sg.ProblemError, match="need the linear head v"):
        sg.token_scores(data)


def test_explicit_scores_are_used():
    scores = np.array([[0.0, 2.0, 1.0], [3.0, 1.0, 2.0]])
    data = sg.TokenData(np.ones((2, 3, 4)), query=0, scores=scores)
    np.testing.assert_array_equal(sg.optimal_tokens(data), [1, 0])


def test_ties_are_reported_not_broken():
    scores = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0]])
    data = sg.TokenData(np.ones((2, 3, 4)), query=0, scores=scores)
    with pytest.raises(sg.TieError, match=r"sequence 0: tokens \[0, 1\]"):
        sg.optimal_tokens(data)
    sets = sg.optimal_token_sets(data)
    np.testing.assert_array_equal(sets, [[True, True, False], [False, True, False]])
    np.testing.assert_array_equal(sg.optimal_tokens(data, ties="first"), [0, 1])
    with pytest.warns(UserWarning, match="not unique"):
        np.testing.assert_array_equal(sg.optimal_tokens(data, ties="warn"), [0, 1])
    with pytest.raises(sg.ProblemError, match="'ties' parameter"):
        sg.optimal_tokens(data, ties="random")


@pytest.mark.parametrize("factor", [1e-13, 1e-150, 1e13, 1e150])
def test_tie_tolerance_is_relative_to_the_scores(factor: float) -> None:
    """Rescaling the tokens rescales the scores: the optimal tokens must not change, at any
    scale (an absolute tolerance tied every sequence of X * 1e-13)."""
    data = sg.random_data(6, 5, 4, seed=3)
    expected = sg.optimal_tokens(data)
    scaled = sg.TokenData(data.X * factor, Y=data.Y, v=data.v, Z=data.Z)
    np.testing.assert_array_equal(sg.optimal_tokens(scaled), expected)
    assert int(np.asarray(sg.optimal_token_sets(scaled)).sum()) == data.n


@pytest.mark.parametrize("factor", [1e-13, 1.0, 1e13])
def test_genuine_ties_are_found_at_every_scale(factor: float) -> None:
    # sequence 0: exact tie; sequence 1: a tie up to round-off (relative 1e-15); sequence 2:
    # distinct scores whose relative difference (1e-9) is far above round-off
    base = np.array([[1.0, 1.0, 0.5], [0.3, 0.3 * (1 + 1e-15), 0.1], [2.0, 2.0 * (1 - 1e-9), 0.0]])
    data = sg.TokenData(np.ones((3, 3, 2)), query=0, scores=base * factor)
    sets = sg.optimal_token_sets(data)
    np.testing.assert_array_equal(
        sets, [[True, True, False], [True, True, False], [True, False, False]]
    )
    with pytest.raises(sg.TieError, match=r"2 queries: sequence 0: tokens \[0, 1\]; sequence 1"):
        sg.optimal_tokens(data)
    # an explicit tolerance is relative too: 1e-8 of the scale ties sequence 2 as well
    assert np.asarray(sg.optimal_token_sets(data, tol=1e-8)).sum() == 6
    # tol=0 ties only exactly equal scores
    np.testing.assert_array_equal(sg.optimal_token_sets(data, tol=0.0).sum(axis=1), [2, 1, 1])


def test_tie_tolerance_is_per_query() -> None:
    # one sequence at scale 1e12 must not tie the tokens of a sequence at scale 1
    scores = np.array([[1e12, 0.0, 1.0], [1.0, 1.0 - 1e-6, 0.0]])
    data = sg.TokenData(np.ones((2, 3, 2)), query=0, scores=scores)
    np.testing.assert_array_equal(sg.optimal_tokens(data), [0, 0])


def test_a_score_far_below_the_top_does_not_tie_the_others() -> None:
    """Regression: the tolerance was relative to the largest |score| of the query, so a key
    whose score was imputed as -1e9 (scores must be finite) tied 0.3 and 0.3005, and one at
    -1e30 tied 0.2, 0.5 and 0.9 (TieError; ties="first" took 1). It is now relative to the
    two scores compared."""
    data = sg.TokenData(np.ones((2, 4, 2)), query=0, scores=[[-1e9, 0.3, 0.3005, 0.0],
                                                              [-1e30, 0.2, 0.5, 0.9]])  # fmt: skip
    np.testing.assert_array_equal(sg.optimal_token_sets(data).sum(axis=1), [1, 1])
    np.testing.assert_array_equal(sg.optimal_tokens(data), [2, 3])
    # a linear head: one token far along -v
    X = np.array([[[-1e13, 0.0], [0.2, 0.0], [0.9, 0.0]]])
    head = sg.TokenData(X, Z=np.array([[0.0, 1.0]]), v=np.array([1.0, 0.0]))
    np.testing.assert_array_equal(sg.optimal_tokens(head), [2])


def test_computed_scores_tie_within_the_round_off_of_their_products() -> None:
    """v.u = 5.6e-17 for u = (0.1 + 0.2, -0.3), v = (1, 1): zero but for the rounding of the
    products (size |v|.|u| = 0.6); it ties the score 0 of a zero token although the two
    scores differ relative to themselves."""
    X = np.array([[[0.1 + 0.2, -0.3], [0.0, 0.0], [-1.0, 0.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), v=np.array([1.0, 1.0]))
    assert sg.token_scores(data)[0, 0] > 0.0
    np.testing.assert_array_equal(sg.optimal_token_sets(data), [[True, True, False]])


@pytest.mark.parametrize("tol", [-1e-3, 1.0, float("nan"), "small"])
def test_bad_tie_tolerance_raises(tol: object) -> None:
    data = sg.random_data(2, 3, 2, seed=0)
    with pytest.raises(sg.ProblemError, match="'tol' parameter of optimal_token_sets"):
        sg.optimal_token_sets(data, tol=tol)  # type: ignore[arg-type]


def test_optimal_token_respects_mask():
    scores = np.array([[0.0, 1.0, 5.0]])
    X = np.ones((1, 3, 2))
    data = sg.TokenData(X, query="all", mask="causal", scores=scores)
    np.testing.assert_array_equal(sg.optimal_tokens(data), [[0, 1, 2]])


def test_check_selection_shapes_and_errors():
    data = sg.random_data(3, 4, 2, seed=0)
    np.testing.assert_array_equal(sg.check_selection(data, [0, 1, 2]), [[0], [1], [2]])
    with pytest.raises(sg.ProblemError, match=r"alpha must have shape \(3,\).*got \(2,\)"):
        sg.check_selection(data, [0, 1])
    with pytest.raises(sg.ProblemError, match=r"token indices in \[0, 3\]; got 4"):
        sg.check_selection(data, [0, 1, 4])
    with pytest.raises(sg.ProblemError, match="must hold integers"):
        sg.check_selection(data, [0.5, 1, 2])
    seq = sg.random_data(2, 3, 2, seed=0, query="all", mask="causal")
    with pytest.raises(sg.ProblemError, match="mask hides it"):
        sg.check_selection(seq, [[1, 1, 2], [0, 1, 2]])
    with pytest.raises(sg.ProblemError, match=r"shape \(2, 3\)"):
        sg.check_selection(seq, [0, 1])
