# SPDX-License-Identifier: BSD-3-Clause
"""SVM solvers over token-pair constraint sets, with certificates recomputed by svmgeo."""

from ._cvxpy import solve_naive_cvxpy
from ._result import Certificate, FeasibilityResult, SVMResult
from ._status import Status

__all__ = ["Certificate", "FeasibilityResult", "SVMResult", "Status", "solve_naive_cvxpy"]
