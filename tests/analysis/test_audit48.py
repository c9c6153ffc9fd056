# SPDX-License-Identifier: BSD-3-Clause
"""Session 48 audit: arguments of the analysis functions checked with errors that name them (a
string for a bool was taken as True; huge sizes ran into MemoryError)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.analysis import check_loss, fit_rates, robustness_radius


def test_robustness_radius_refuses_a_string_for_svm() -> None:
    data = sg.random_data(3, 4, 5, seed=0)
    with pytest.raises(sg.ProblemError, match="'svm' parameter of robustness_radius"):
        robustness_radius(data, np.eye(5), svm="no")


def test_check_loss_bounds_the_grid() -> None:
    data = sg.random_data(3, 4, 5, seed=0)
    with pytest.raises(sg.ProblemError, match=r"'grid' parameter of check_loss.*\[3, 1048577\]"):
        check_loss("logistic", data, grid=10**9)


def test_fit_rates_bounds_the_resamples() -> None:
    run = sg.train(sg.random_data(3, 4, 5, seed=0), n_steps=200, record_every=10)
    with pytest.raises(sg.ProblemError, match="'n_boot' parameter of fit_rates"):
        fit_rates(run, n_boot=10**12)


@pytest.mark.parametrize("scale", [1e-315, 1e-320, 1e300])
def test_robustness_radius_of_a_subnormal_or_huge_w_is_its_scaled_radius(scale: float) -> None:
    """The radius does not depend on W's scale; with subnormal logits it was off by 2.6e-9 and
    5e-4 (relative) at max|W| ~ 1e-315 and 1e-320. Compared on the same stored W, scaled by a
    power of two (exact)."""
    data = sg.random_data(3, 4, 3, seed=1)
    W = scale * np.random.default_rng(0).normal(size=(3, 3))
    ref = robustness_radius(data, np.ldexp(W, -math.frexp(np.abs(W).max())[1]), svm=False)
    got = robustness_radius(data, W, svm=False)
    np.testing.assert_allclose(got.per_query, ref.per_query, rtol=1e-15)
    np.testing.assert_allclose(got.perturbation, ref.perturbation, rtol=1e-15, atol=1e-300)


def _two_scales() -> sg.TokenData:
    """random_data(2, 3, 2, seed=0) with sequence 0's tokens scaled by 1e-8: Att-SVM([0, 2])'s
    multipliers span 1e-3 to 5e16, and sequence 1's token 1 (scoring above the selected one)
    is a support token in exact arithmetic (the audit's rational active-set enumeration)."""
    base = sg.random_data(2, 3, 2, seed=0)
    X = np.array(base.X)
    X[0] *= 1e-8
    return sg.TokenData(X, v=np.asarray(base.v), Z=np.asarray(base.queries)[:, 0],
                        Y=np.asarray(base.labels)[:, 0])  # fmt: skip


@pytest.mark.filterwarnings("ignore::svmgeo.InaccurateSolutionWarning")
@pytest.mark.parametrize("search", ["batched", "reference"])
def test_a_lot_verdict_across_scales_is_not_decided_wrong(search: str) -> None:
    """Both support witnesses judged multipliers against the largest one (4.8e16), so the
    support token's 4.8e7 read as zero and [0, 2] was a decided LOT; a multiplier is now
    weighed by its row's scale, lambda_j |a_j| |b_j|, and the verdict is not LOT: undecided
    (OpenBLAS's SkylakeX kernels) or decided not LOT, the truth (its Haswell kernels, where
    the support token's margin comes out within tol with a positive multiplier)."""
    data = _two_scales()
    verdict = sg.is_locally_optimal(data, [0, 2])
    assert not verdict.locally_optimal, verdict.reason
    if verdict.decided:  # then for the support token that scores above the selected one
        assert [(v.seq, v.token) for v in verdict.violations] == [(1, 1)], verdict.reason
    lots = sg.locally_optimal_selections(data, search=search)
    assert [0, 2] not in lots.selections.tolist()


@pytest.mark.parametrize("search", ["batched", "reference"])
def test_the_lot_search_goes_deeper_than_the_recursion_limit(search: str) -> None:
    """1,100 one-token sequences (one selection) raised RecursionError: the search recurses
    once per query."""
    n = 1100
    rng = np.random.default_rng(0)
    data = sg.TokenData(rng.normal(size=(n, 1, 2)), v=np.ones(2), Z=rng.normal(size=(n, 2)))
    limit = sys.getrecursionlimit()
    lots = sg.locally_optimal_selections(data, search=search)
    assert lots.selections.tolist() == [[0] * n]
    assert sys.getrecursionlimit() == limit  # restored


@pytest.mark.parametrize(("args", "name"), [((5,), "'i'"), ((-1,), "'i'"), ((1.5,), "'i'"),
                                            ((0, 3), "'k'")])  # fmt: skip
def test_support_tokens_indices_are_checked(args: tuple, name: str) -> None:
    """tokens(5) raised a bare IndexError and tokens(-1) read the last sequence."""
    data = sg.random_data(2, 4, 6, seed=0)
    sup = sg.support_tokens(data, sg.optimal_tokens(data))
    with pytest.raises(sg.ProblemError, match=f"{name} parameter of SupportTokens.tokens"):
        sup.tokens(*args)


@pytest.mark.parametrize("search", ["batched", "reference"])
def test_scores_tied_up_to_round_off_are_ties_in_the_lot_test(search: str) -> None:
    """gamma = 0.1 + 0.2 against 0.3: optimal_token_sets calls them tied (TIE_RTOL), but the
    LOT test compared them exactly, so alpha = 0 was a decided LOT with the other token as its
    support token; a support token that ties the selected one fails the test (SPEC)."""
    X = np.array([[[0.1, 0.2], [0.3, 0.0]]])
    data = sg.TokenData(X, v=np.array([1.0, 1.0]), Z=np.array([[1.0, 0.0]]))
    assert sg.optimal_token_sets(data).tolist() == [[True, True]]
    for alpha in (0, 1):
        verdict = sg.is_locally_optimal(data, [alpha])
        assert verdict.decided and not verdict.locally_optimal, verdict.reason
    assert sg.locally_optimal_selections(data, search=search).selections.tolist() == []


def test_the_score_cone_counts_ties_up_to_round_off_as_high() -> None:
    """T+ of the score cone compared scores exactly: with 0.1 + 0.2 against 0.3 selected at
    token 0, token 1 (tied) was in neither T+ nor T-, and the cone was the whole space."""
    X = np.array([[[0.1, 0.2], [0.3, 0.0]]])
    data = sg.TokenData(X, v=np.array([1.0, 1.0]), Z=np.array([[1.0, 0.0]]))
    margin = sg.analysis.score_cone_margin(data, [0], np.eye(2))
    assert margin == -np.inf  # token 1 ties: high, and there is no lower token
