# SPDX-License-Identifier: BSD-3-Clause
"""Theorem 1 and the exact feasibility decision, as properties over drawn datasets."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import svmgeo as sg
from svmgeo.testing import Case, cases, examples, feasibility_verdict, selections

SIGMAS = st.sampled_from([1e-1, 1e-3, 1e-6])


@settings(max_examples=examples(2))
@given(case=cases(overparameterized=True, sigma=SIGMAS, conditioned=False), draw=st.data())
def test_theorem1_overparameterized_data_is_feasible_for_every_selection(
    case: Case, draw: st.DataObject
) -> None:
    """d ≥ max(T−1, nK) and a Gaussian perturbation: Att-SVM(α) is feasible for every α.

    SPEC states K = 1 (cross- and self-attention); with K queries per sequence the same
    argument needs the nK queries independent, hence d ≥ nK (svmgeo's extension). The base
    data may be degenerate (duplicates, zero queries, a subspace): the perturbation alone
    makes it generic, down to sigma = 1e-6.
    """
    data = case.data
    for _ in range(3):
        alpha = draw.draw(selections(data), label="alpha")
        feas = sg.feasibility(data, alpha)
        # True (with a checked point); None only when beyond precision (checked inside)
        assert feasibility_verdict(feas) is not False, feas.message


@settings(max_examples=examples(2))
@given(case=cases(), draw=st.data())
def test_feasibility_is_decided_with_a_verified_certificate(
    case: Case, draw: st.DataObject
) -> None:
    """Every verdict carries a proof: a point meeting every margin, or a Farkas vector; an
    undecided (inaccurate) answer only on an ill-conditioned problem."""
    data = case.data
    alpha = draw.draw(selections(data), label="alpha")
    feas = sg.feasibility(data, alpha)
    cs = feas.constraints
    decided = feasibility_verdict(feas)
    # rows with a_j b_j^T = 0 (a zero query, or the selected token duplicated) need 0 >= 1
    dead = (np.linalg.norm(cs.A, axis=1) == 0) | (np.linalg.norm(cs.B, axis=1) == 0)
    if np.any(dead):
        assert decided is False


def test_a_mask_leaving_each_query_only_its_selected_token_gives_w_zero() -> None:
    """Regression for the first counterexample the suite found: no competing visible token
    means no rows, so Att-SVM(α) is feasible with W = 0 (it used to raise ProblemError)."""
    X = np.random.default_rng(0).normal(size=(1, 2, 2))
    data = sg.TokenData(X, v=np.ones(2), query="all", mask=np.array([[False, True], [True, False]]))
    alpha = np.array([[1, 0]])
    assert sg.feasibility(data, alpha).feasible
    for norm in ("fro", "nuc"):
        res = sg.att_svm(data, alpha, norm=norm)
        assert res.status is sg.Status.OPTIMAL
        assert res.constraints.N == 0
        np.testing.assert_array_equal(res.W, np.zeros((2, 2)))
    assert sg.is_locally_optimal(data, alpha)
