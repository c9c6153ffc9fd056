# SPDX-License-Identifier: BSD-3-Clause
"""Theorem 1 and the exact feasibility decision, as properties over drawn datasets."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import svmgeo as sg

from ._oracle import assert_farkas, assert_feasible_point
from .strategies import Case, cases, examples, selections

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
        assert feas.feasible, feas.message
        assert feas.status is sg.Status.OPTIMAL
        assert_feasible_point(feas.constraints, feas.point)


@settings(max_examples=examples(2))
@given(case=cases(), draw=st.data())
def test_feasibility_is_decided_with_a_verified_certificate(
    case: Case, draw: st.DataObject
) -> None:
    """Every verdict carries a proof: a point meeting every margin, or a Farkas vector."""
    data = case.data
    alpha = draw.draw(selections(data), label="alpha")
    feas = sg.feasibility(data, alpha)
    cs = feas.constraints
    if feas.feasible:
        assert feas.status is sg.Status.OPTIMAL
        assert_feasible_point(cs, feas.point)
    else:
        assert feas.status is sg.Status.INFEASIBLE, feas.message
        assert_farkas(cs, feas.certificate)
    # rows with a_j b_j^T = 0 (a zero query, or the selected token duplicated) need 0 >= 1
    dead = (np.linalg.norm(cs.A, axis=1) == 0) | (np.linalg.norm(cs.B, axis=1) == 0)
    if np.any(dead):
        assert not feas.feasible
