# SPDX-License-Identifier: BSD-3-Clause
"""Copies of rows (repeated sequences): decided and solved on the distinct rows, reported on all."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.constraints import pair_constraints
from svmgeo.solvers import Status, farkas_residual
from svmgeo.solvers._exact import identical_rows
from svmgeo.testing import assert_farkas, assert_feasible_point, oracle_att_svm


def _repeated(data: sg.TokenData, alpha: np.ndarray, copies: int):
    """``data`` with every sequence repeated ``copies`` times (one block after another)."""
    out = sg.TokenData(
        np.concatenate([data.X] * copies),
        Y=np.concatenate([data.Y] * copies),
        v=data.v,
        Z=np.concatenate([data.Z] * copies),
    )
    return out, np.concatenate([alpha] * copies)


def test_identical_rows_classes_by_definition():
    data = sg.random_data(4, 5, 3, seed=0)
    alpha = sg.optimal_tokens(data)
    assert identical_rows(sg.att_svm_constraints(data, alpha)) is None
    twice, alpha2 = _repeated(data, alpha, 2)
    cs = sg.att_svm_constraints(twice, alpha2)
    first, position = identical_rows(cs)
    half = cs.N // 2
    np.testing.assert_array_equal(first, np.arange(half))  # the first block, in order
    np.testing.assert_array_equal(position, np.tile(np.arange(half), 2))
    # the same a_j, b_j and c_j in a row of another kind (equality) is not a copy
    mixed = pair_constraints(
        sg.TokenData(np.concatenate([data.X] * 2), Z=np.concatenate([data.Z] * 2), v=data.v),
        seq=np.array([0, 4]),
        query=np.zeros(2, dtype=np.int64),
        pref=np.array([alpha[0], alpha[0]]),
        comp=np.array([(alpha[0] + 1) % 5] * 2),
        kind=np.array([sg.MARGIN, sg.EQUALITY]),
        rhs=np.ones(2),
    )
    assert identical_rows(mixed) is None


@pytest.mark.parametrize(("n", "T", "d", "feasible"), [(12, 8, 10, True), (40, 11, 8, False)])
def test_feasibility_of_repeated_sequences_is_the_verdict_of_the_distinct_ones(n, T, d, feasible):
    data = sg.random_data(n, T, d, seed=1)
    alpha = sg.optimal_tokens(data)
    once = sg.feasibility(data, alpha)
    assert once.feasible is feasible and once.proof == "exact"
    thrice, alpha3 = _repeated(data, alpha, 3)
    res = sg.feasibility(thrice, alpha3)
    cs = res.constraints
    assert res.feasible is feasible and res.proof == "exact"
    assert res.status is Status.OPTIMAL if feasible else Status.INFEASIBLE
    assert res.extras["identical_rows"] == cs.N - cs.N // 3
    assert "copies of another row set aside" in res.message
    if feasible:
        assert_feasible_point(cs, res.point, rtol=0.0, atol=1e-12)
    else:
        assert_farkas(cs, res.farkas)
        assert farkas_residual(cs, res.farkas) <= res.residual <= 1e-9
        third = cs.N // 3  # each weight shared by the three copies of its row
        np.testing.assert_allclose(np.tile(res.farkas[:third], 3), res.farkas, rtol=0, atol=0)
        np.testing.assert_allclose(3 * res.farkas[:third], once.farkas, rtol=1e-15, atol=0)


def test_att_svm_of_repeated_sequences_against_the_oracle():
    data = sg.random_data(12, 8, 10, seed=1)
    alpha = sg.optimal_tokens(data)
    thrice, alpha3 = _repeated(data, alpha, 3)
    res = sg.att_svm(thrice, alpha3)
    cs = res.constraints
    assert res.status is Status.OPTIMAL and res.success
    assert res.extras["identical_rows"] == cs.N - cs.N // 3
    assert res.extras["feasibility"].constraints is cs
    oracle = oracle_att_svm(thrice, alpha3)  # the naive model on every row, copies included
    np.testing.assert_allclose(np.linalg.norm(res.W), oracle.objective, rtol=1e-7)
    np.testing.assert_allclose(res.W, oracle.W, atol=1e-6 * np.abs(oracle.W).max())
    third = cs.N // 3
    np.testing.assert_allclose(res.margins, cs.apply(res.W), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(res.margins[third:], np.tile(res.margins[:third], 2))
    np.testing.assert_array_equal(res.dual[third:], np.tile(res.dual[:third], 2))  # shared
    support = sg.support_tokens(thrice, alpha3)  # every copy of a support token is one
    np.testing.assert_array_equal(
        support.by_dual, np.tile(sg.support_tokens(data, alpha).mask, (3, 1))
    )
    assert not support.weakly_active.any()
    # the dual still gives W: sum_j lambda_j a_j b_j^T = W at the optimum
    np.testing.assert_allclose(cs.adjoint(res.dual), res.W, atol=1e-9 * np.abs(res.W).max())


def test_a_solve_on_repeated_sequences_decides_the_distinct_rows_once(monkeypatch):
    from svmgeo.solvers import _api, _feasibility

    decided = []
    decide = _feasibility.decide_feasibility

    def counted(cs, geometry, exact, **kw):
        decided.append(cs.N)
        return decide(cs, geometry, exact, **kw)

    monkeypatch.setattr(_api, "decide_feasibility", counted)
    monkeypatch.setattr(_feasibility, "decide_feasibility", counted)  # its recursive call
    data = sg.random_data(12, 8, 10, seed=1)
    alpha = sg.optimal_tokens(data)
    thrice, alpha3 = _repeated(data, alpha, 3)
    once = sg.att_svm(data, alpha)
    res = sg.att_svm(thrice, alpha3)
    N = res.constraints.N
    assert decided == [once.constraints.N, N, N // 3], decided  # no second check of N // 3
    third = N // 3
    np.testing.assert_array_equal(res.W, once.W)  # the same solve on the same distinct rows
    np.testing.assert_allclose(3 * res.dual[:third], once.dual, rtol=1e-15, atol=0)
    assert res.extras["feasibility"].extras["identical_rows"] == N - third
