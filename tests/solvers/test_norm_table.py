# SPDX-License-Identifier: BSD-3-Clause
"""The table of norms (solvers/_norms.py) and the fixes of issue #21 that live in it: every
option of every norm is used or refused, l_p solves are certified at any float64 scale, the
head features are named when out of range, and a feasible point keeps its contract."""

from __future__ import annotations

import math
import types
from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo._linalg import balanced_factors, numerical_rank
from svmgeo.solvers import NORMS, _feasibility, _norms, parse_norm
from svmgeo.testing import assert_exact_point


@pytest.fixture
def data() -> sg.TokenData:
    return sg.random_data(4, 3, 5, seed=0)


# -- parsing and the table -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("norm", "name", "parameter"),
    [("fro", "fro", None), ("nuc", "nuc", None), (("lp", 1.5), "lp", 1.5), ("lp:3", "lp", 3.0)],
)
def test_parse_norm_reads_names_tuples_and_cli_spellings(norm, name, parameter):
    entry, value = parse_norm(norm, "solve_svm")
    assert entry is NORMS[name] and value == parameter


@pytest.mark.parametrize("norm", ["lp", "fro:2", "lp:x", ("nuc", 2.0), ("lp", 0.5), "l2", 3])
def test_a_bad_norm_names_the_function_the_user_called(data, norm):
    with pytest.raises(sg.ProblemError, match="of att_svm") as info:
        sg.att_svm(data, norm=norm)
    assert "solve_svm" not in str(info.value)


def test_every_entry_has_a_geometry_a_solver_and_a_reference(data):
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    for name, entry in NORMS.items():
        parameter = None if entry.parameter is None else 1.5
        norm = name if parameter is None else (name, parameter)
        fast = sg.solve_svm(cs, norm=norm, method="fast")
        ref = sg.solve_svm(cs, norm=norm, method="cvxpy")
        geometry = entry.geometry(parameter)
        assert fast.success and fast.norm == geometry.name, fast.message
        assert ref.status.has_solution and ref.solver.startswith("cvxpy"), ref.message
        np.testing.assert_allclose(ref.objective, fast.objective, rtol=1e-6)
        np.testing.assert_allclose(fast.objective, geometry.value(fast.W), rtol=1e-12)


# -- options: every one used or refused (issue #21) -------------------------------------------
@pytest.mark.parametrize("p", [1.0, 1.5, math.inf])
@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"max_iter": 10}, "max_iter"),
        ({"seed": 1}, "seed"),
        ({"n_restarts": 2}, "n_restarts"),
    ],
)
def test_lp_refuses_options_it_would_ignore(data, p, options, name):
    with pytest.raises(sg.ProblemError, match=f"'{name}' parameter of att_svm has no effect"):
        sg.att_svm(data, norm=("lp", p), **options)


@pytest.mark.parametrize("norm", ["fro", "nuc", ("lp", 1.5)])
def test_a_vacuous_tolerance_is_refused_for_every_norm(data, norm):
    with pytest.raises(sg.ProblemError, match=r"'tol' parameter of att_svm must be a float in"):
        sg.att_svm(data, norm=norm, tol=5.0)


@pytest.mark.parametrize("norm", ["fro", "nuc", ("lp", 1.5), ("lp", 1.0)])
def test_an_unknown_cvxpy_solver_is_refused(data, norm):
    with pytest.raises(sg.ProblemError, match="'solver' parameter of att_svm names a cvxpy"):
        sg.att_svm(data, norm=norm, method="cvxpy", solver="NO_SUCH_SOLVER")


def test_lp_honours_exact_false(data):
    res = sg.att_svm(data, norm=("lp", 1.5), exact=False)
    assert res.success and res.proof == "float"
    assert sg.att_svm(data, norm=("lp", 1.5)).proof == "exact"


def test_the_matrix_free_route_is_decided_once_by_the_entry(data, monkeypatch):
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    monkeypatch.setattr(_norms, "use_matrix_free", lambda cs: True)
    res = sg.solve_svm(cs)
    assert res.solver == "svmgeo-matfree" and res.success, res.message
    dense = sg.solve_svm(cs, method="cvxpy")  # the reference model never goes matrix-free
    assert dense.solver.startswith("cvxpy")
    np.testing.assert_allclose(res.objective, dense.objective, rtol=1e-6)


# -- scale (issue #21) ----------------------------------------------------------------------
@pytest.mark.parametrize("p", [1.0, 1.5, 3.0, math.inf])
@pytest.mark.parametrize("scale", [1e-150, 1e-30, 1e30, 1e150])
def test_lp_is_certified_across_float64_scales(data, p, scale):
    alpha = sg.optimal_tokens(data)
    base = sg.att_svm(data, alpha, norm=("lp", p))
    scaled = sg.TokenData(data.X * scale, Z=data.Z, v=data.v)
    res = sg.att_svm(scaled, alpha, norm=("lp", p))
    assert res.success and res.certificate is not None and res.certificate.passed, res.message
    # the l_p Att-SVM is homogeneous: W scales by 1/scale
    np.testing.assert_allclose(res.objective * scale, base.objective, rtol=1e-7)
    np.testing.assert_allclose(res.W * scale, base.W, atol=1e-6 * np.abs(base.W).max())


@pytest.mark.parametrize("scale", [1e160, 1e-170])
def test_head_features_out_of_range_are_named_values(scale):
    """Regression (#21): head features out of float64's range are named ``values``, never X
    or Z: TokenData's scale check refuses huge ones, joint_svm tiny ones (its Gram would
    underflow)."""
    rng = np.random.default_rng(0)
    X, U = rng.normal(size=(4, 3, 5)), rng.normal(size=(4, 3, 2)) * scale
    with pytest.raises(sg.ProblemError, match="values") as info:
        Y = np.array([1.0, -1.0, 1.0, -1.0])
        data = sg.TokenData(X, values=U, Y=Y, Z=rng.normal(size=(4, 5)))
        sg.joint_svm(data, np.zeros(4, dtype=int))
    assert "Rescale values" in str(info.value) and "Rescale X or Z" not in str(info.value)


# -- the feasible point keeps its contract (issue #21) --------------------------------------
def _wrong_optimal(real: Any) -> Any:
    """The dual Phase-1 LP answering a wrong "optimal" (a positive value, random duals)."""

    def solve(L: np.ndarray, cs_lp: sg.ConstraintSet) -> Any:
        res = real(L, cs_lp)
        rng = np.random.default_rng(0)
        return types.SimpleNamespace(
            status=0,
            message="wrong optimal",
            fun=-1.0,
            x=np.abs(rng.normal(size=np.shape(res.x))),
            eqlin=types.SimpleNamespace(marginals=rng.normal(size=np.shape(res.eqlin.marginals))),
        )

    return solve


def test_a_feasible_point_meets_every_margin_when_the_lp_lies(monkeypatch):
    # one vertex token selected in 2-d: feasible, with more rows than d^2 (the LP decides)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2, 9, 2))
    X[:, 0] = (5.0, 5.0)
    data = sg.TokenData(X, Z=np.array([[1.0, 0.3], [0.2, 1.0]]), v=np.ones(2))
    monkeypatch.setattr(_feasibility, "_solve_dual_lp", _wrong_optimal(_feasibility._solve_dual_lp))
    feas = sg.feasibility(data)
    assert feas.feasible and feas.proof == "exact", feas.message
    cs = feas.constraints
    margins = cs.apply(feas.point)
    # FeasibilityResult.point promises every margin row >= c_j (it was 0.229 before the fix)
    assert np.all(margins[cs.is_margin] >= cs.rhs[cs.is_margin]), margins.min()
    assert_exact_point(cs, feas.point)


# -- one numerical rank, one balanced factorization ------------------------------------------
def test_numerical_rank_counts_singular_values_above_the_threshold():
    U, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(5, 5)))
    W = U @ np.diag([3.0, 1.0, 1e-7, 1e-13, 0.0]) @ U.T
    assert numerical_rank(W, 1e-6) == 2  # 1e-7 < 1e-6 * 3
    assert numerical_rank(W, 1e-12) == 3
    assert numerical_rank(np.zeros((3, 3)), 1e-6) == 0


def test_balanced_factors_reproduce_w_and_its_nuclear_norm():
    W = np.random.default_rng(1).normal(size=(4, 2)) @ np.random.default_rng(2).normal(size=(2, 4))
    K, Q = balanced_factors(W, 3)
    assert K.shape == (4, 3) and Q.shape == (4, 3)
    np.testing.assert_allclose(K @ Q.T, W, atol=1e-12)
    np.testing.assert_allclose(
        0.5 * (np.sum(K**2) + np.sum(Q**2)), np.linalg.norm(W, "nuc"), rtol=1e-12
    )


@pytest.mark.parametrize("p", [1.0, math.inf])
def test_lp_linear_programs_run_the_reference_model_when_asked(data, p):
    fast = sg.att_svm(data, norm=("lp", p))
    ref = sg.att_svm(data, norm=("lp", p), method="cvxpy")
    assert fast.solver == "highs" and ref.solver.startswith("cvxpy"), ref.message
    assert ref.status.has_solution and ref.certificate is not None
    np.testing.assert_allclose(ref.objective, fast.objective, rtol=1e-6)
