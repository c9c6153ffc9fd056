# SPDX-License-Identifier: BSD-3-Clause
r"""svmgeo's testing kit: hypothesis strategies, independent oracles and certificate checks.

The tools svmgeo's own property suite is written with, for writing properties of your own
(``pip install "svmgeo[testing]"``; docs/testing.md walks through an example)::

    from hypothesis import given
    import svmgeo as sg
    from svmgeo import testing as sgt

    @given(sgt.cases(kinds=("self",), d_range=(8, 12)))
    def test_my_claim(case):
        data = case.data
        res = sg.att_svm(data, sg.optimal_tokens(data, ties="first"))
        sgt.assert_certified(res)

A falsifying example prints as ``svmgeo.testing.build_case(...)``: that call rebuilds the
dataset exactly, and the note ``reproduce: import svmgeo.testing; case = ...`` gives it as a
line that runs as printed (``import svmgeo`` alone does not load ``svmgeo.testing``).

Strategies and cases
    :func:`cases` (a :class:`Case`: parameters + data), :func:`token_data` (the data alone),
    :func:`selections`, :func:`build_case`, :func:`build_b1_case`, :func:`build_b2_case`,
    :func:`examples`, :func:`scale_ratio`, :data:`KINDS`, :data:`VARIANTS`.
Oracles (naive, independent of svmgeo's builders and solvers)
    :func:`oracle_att_svm` (cvxpy + Clarabel), :func:`oracle_prompt_svm` and
    :func:`oracle_head_svm` (the companion paper's p-SVM, relaxed SVM and head SVM),
    :func:`oracle_feasibility` (HiGHS LP), :func:`naive_rows`, :func:`naive_rows_rhs`, :func:`margin_rows`, and the risk: :func:`risk`, :func:`risk_grad`, :func:`optimal_risk`.
Checks
    :func:`assert_certified`, :func:`assert_exact_point`, :func:`assert_feasible_point`, :func:`assert_farkas`,
    :func:`assert_frobenius_kkt`, :func:`assert_nuclear_kkt`, :func:`exact_margins`,
    :func:`exact_rows`, :func:`verdict`,
    :func:`feasibility_verdict`, :func:`conditioning`.
Profiles
    :func:`register_profiles` registers hypothesis profiles "ci" (derandomized), "dev" and
    "thorough".
"""

from __future__ import annotations

import importlib.util

from .._errors import SolverNotFound

if importlib.util.find_spec("hypothesis") is None:  # pragma: no cover - depends on the install
    raise SolverNotFound(
        "svmgeo.testing needs hypothesis, which is not installed. "
        'Install it with: pip install "svmgeo[testing]".'
    )

from ._checks import (
    ILL_CONDITIONED,
    LOSSES,
    SOLVER_RTOL,
    adjoint,
    assert_agree,
    assert_certified,
    assert_exact_point,
    assert_farkas,
    assert_feasible_point,
    assert_frobenius_kkt,
    assert_nuclear_kkt,
    conditioning,
    dloss,
    exact_margins,
    exact_rows,
    feasibility_verdict,
    is_support_lot,
    loss,
    margin_rows,
    numerical_rank,
    optimal_risk,
    risk,
    risk_gap_lower_bound,
    risk_grad,
    row_values,
    signed_margin,
    softmax_rows,
    verdict,
    visible_scores,
    well_conditioned,
)
from ._oracles import (
    OracleResult,
    naive_rows,
    naive_rows_rhs,
    oracle_att_svm,
    oracle_feasibility,
    oracle_head_svm,
    oracle_prompt_svm,
)
from ._strategies import (
    KINDS,
    MIN_SCALE_RATIO,
    SINGLE_QUERY,
    VARIANTS,
    Case,
    build_b1_case,
    build_b2_case,
    build_case,
    cases,
    examples,
    n_queries,
    register_profiles,
    scale_ratio,
    selections,
    token_data,
)

__all__ = [
    "ILL_CONDITIONED",
    "KINDS",
    "LOSSES",
    "MIN_SCALE_RATIO",
    "SINGLE_QUERY",
    "SOLVER_RTOL",
    "VARIANTS",
    "Case",
    "OracleResult",
    "adjoint",
    "assert_agree",
    "assert_certified",
    "assert_exact_point",
    "assert_farkas",
    "assert_feasible_point",
    "assert_frobenius_kkt",
    "assert_nuclear_kkt",
    "build_b1_case",
    "build_b2_case",
    "build_case",
    "cases",
    "conditioning",
    "dloss",
    "exact_margins",
    "exact_rows",
    "examples",
    "feasibility_verdict",
    "is_support_lot",
    "loss",
    "margin_rows",
    "n_queries",
    "naive_rows",
    "naive_rows_rhs",
    "numerical_rank",
    "optimal_risk",
    "oracle_att_svm",
    "oracle_feasibility",
    "oracle_head_svm",
    "oracle_prompt_svm",
    "register_profiles",
    "risk",
    "risk_gap_lower_bound",
    "risk_grad",
    "row_values",
    "scale_ratio",
    "selections",
    "signed_margin",
    "softmax_rows",
    "token_data",
    "verdict",
    "visible_scores",
    "well_conditioned",
]
