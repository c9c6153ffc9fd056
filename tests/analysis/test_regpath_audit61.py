# SPDX-License-Identifier: BSD-3-Clause
"""Session 61's audit of the local regularization path: its acceptance of a selection, its
score cone's tie rule, the ball path's restarts (reproducers in CHANGELOG, session 61)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg


def test_the_local_path_refuses_a_non_lot_whose_cone_margin_rounds_positive() -> None:
    """alpha = [0, 3, 3] is a feasible non-LOT (a support token scores above the selected
    one), so W^mm_alpha's cone margin is <= 0 in exact arithmetic; computed, it is +8.6e-16,
    and the path accepted eps = eps_max / 2 (it followed a cone that holds no W^mm_alpha)."""
    data = sg.random_data(3, 4, 3, seed=0)
    alpha = np.array([0, 3, 3])
    lot = sg.is_locally_optimal(data, alpha)
    assert lot.decided and not lot  # the case itself
    W = np.asarray(sg.att_svm(data, alpha).W)
    eps_max = sg.score_cone_margin(data, alpha, W) / np.linalg.norm(W)
    assert 0.0 < eps_max < 1e-14  # the round-off that the margin test alone let through
    with pytest.raises(sg.ProblemError, match=r"alpha=\[0, 3, 3\] is not locally optimal"):
        sg.regularization_path(data, [1, 4], alpha=alpha, eps=0.5 * eps_max)


def test_the_local_path_still_runs_on_a_lot() -> None:
    data = sg.random_data(3, 4, 3, seed=0)
    alpha = np.asarray(sg.locally_optimal_selections(data).selections[0])
    assert sg.is_locally_optimal(data, alpha)
    W = np.asarray(sg.att_svm(data, alpha).W)
    eps = 0.5 * sg.score_cone_margin(data, alpha, W) / np.linalg.norm(W)
    assert 1e-3 < eps < np.inf  # a cone with rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.ConvergenceWarning)
        path = sg.regularization_path(data, [1, 4], alpha=alpha, eps=eps)
    assert np.all(path.cone_margin >= eps)


def _near_tie() -> tuple[sg.TokenData, np.ndarray]:
    """One query: alpha = 0 scores 0.3 + 1 ulp, token 1 scores 0.3 (tied up to round-off),
    token 2 scores 0. Token 2 is the support token (low score, so alpha is a LOT), token 1 has
    a margin near 2. The round-off rule puts token 1 in T+, exact comparison
    in T-."""
    up = np.nextafter(0.3, 1.0)
    X = np.array([[[1.0, 0.0, up], [-1.0, 0.0, 0.3], [0.0, 0.0, 0.0]]])
    data = sg.TokenData(
        X, Y=np.array([1.0]), v=np.array([0.0, 0.0, 1.0]), Z=np.array([[1.0, 0.0, 0.0]])
    )
    return data, np.array([0])


def test_the_local_path_cone_counts_round_off_ties_as_score_cone_margin_does() -> None:
    """The path's cone compared scores exactly: token 1 (tied up to round-off) was low, no
    query had a high-score token, and the path reported cone_margin inf and accepted any eps,
    where score_cone_margin (and its docstring's cone_margin) reads 0.87."""
    data, alpha = _near_tie()
    assert sg.is_locally_optimal(data, alpha)  # the case itself
    W = np.asarray(sg.att_svm(data, alpha).W)
    eps_max = sg.score_cone_margin(data, alpha, W) / np.linalg.norm(W)
    assert 0.5 < eps_max < 1.0  # finite: token 1 is a high-score token
    path = sg.regularization_path(data, [1, 4], alpha=alpha, eps=0.5 * eps_max)
    want = [sg.score_cone_margin(data, alpha, Wr) / np.linalg.norm(Wr) for Wr in path.W]
    np.testing.assert_allclose(path.cone_margin, want, rtol=1e-12)
    assert np.all(np.isfinite(path.cone_margin))
    with pytest.raises(sg.ProblemError, match="'eps' parameter"):
        sg.regularization_path(data, [1, 4], alpha=alpha, eps=2.0)


def test_one_radius_ends_where_the_ladder_does_on_the_audit_case() -> None:
    """radii=[256] ended at ||W|| = 256 with L = 0.5224, "converged", where the radii 0.5, 1,
    ..., 256 find L = 0.5166 at ||W|| = 15.5 inside the same ball: a solve from R W^mm_alpha
    alone does not reach the interior minimizer. The ball path now also solves the radii
    R/4, R/16, ... down to the logit length, unreported, and finds it from one radius here
    (not on every list of radii: the path stays a local search)."""
    data = sg.random_data(4, 5, 8, seed=3, score_gap=0.05)
    alpha = np.array([2, 0, 0, 1])
    W = np.asarray(sg.att_svm(data, alpha).W)
    eps = 0.5 * sg.score_cone_margin(data, alpha, W) / np.linalg.norm(W)
    one = sg.regularization_path(data, [256], alpha=alpha, eps=eps, local_set="ball")
    ladder = [0.5 * 2**k for k in range(10)]
    lad = sg.regularization_path(data, ladder, alpha=alpha, eps=eps, local_set="ball")
    assert one.converged[0] and lad.converged[-1]
    np.testing.assert_allclose(one.loss[0], lad.loss[-1], rtol=1e-9)
    assert np.linalg.norm(one.W[0]) < 20.0  # the interior minimizer, not the sphere's point
    assert one.n_iter[0] > 0  # the unreported radii's iterations count with the reported one
