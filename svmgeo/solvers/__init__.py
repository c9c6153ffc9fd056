# SPDX-License-Identifier: BSD-3-Clause
"""SVM solvers over token-pair constraint sets, with certificates recomputed by svmgeo."""

from ._api import STATUS_MAP, att_svm, feasibility, solve_svm
from ._certificates import farkas_residual, frobenius_certificate
from ._feasibility import check_feasibility
from ._frobenius import solve_frobenius
from ._reference import solve_naive_cvxpy, solve_naive_cvxpy_duals
from ._result import Certificate, FeasibilityResult, SVMResult
from ._status import Status

__all__ = [
    "STATUS_MAP",
    "Certificate",
    "FeasibilityResult",
    "SVMResult",
    "Status",
    "att_svm",
    "check_feasibility",
    "farkas_residual",
    "feasibility",
    "frobenius_certificate",
    "solve_frobenius",
    "solve_naive_cvxpy",
    "solve_naive_cvxpy_duals",
    "solve_svm",
]
