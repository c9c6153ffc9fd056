# SPDX-License-Identifier: BSD-3-Clause
"""Result objects returned by the SVM solvers and the feasibility check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..constraints import ConstraintSet
from ._status import Status

__all__ = ["Certificate", "FeasibilityResult", "SVMResult"]


@dataclass(frozen=True)
class Certificate:
    r"""Optimality residuals recomputed by svmgeo from the problem data (SPEC §6).

    All entries are nonnegative; a residual that does not apply to a norm is 0.

    Attributes
    ----------
    primal_infeasibility : float
        :math:`\max_j (c_j - a_j^\top W b_j)_+` over margin rows and
        :math:`\max_j |a_j^\top W b_j - c_j|` over equality rows.
    dual_infeasibility : float
        Frobenius: :math:`\max_j (-\lambda_j)_+` over margin rows. Nuclear:
        :math:`(\|\sum_j \lambda_j a_j b_j^\top\|_2 - 1)_+` plus the sign violation.
    stationarity : float
        Frobenius: :math:`\|W - \sum_j \lambda_j a_j b_j^\top\|_F / \max(1, \|W\|_F)`. Nuclear:
        :math:`|\langle \Lambda, W\rangle - \|W\|_*| / \max(1, \|W\|_*)` (Λ is a subgradient).
    complementarity : float
        :math:`\max_j |\lambda_j (a_j^\top W b_j - c_j)|` over margin rows.
    duality_gap : float
        Relative gap between the primal objective and the dual objective.
    tol : float
        The tolerance the residuals were judged against.
    failures : tuple of str
        One message per residual above ``tol``; empty when the certificate holds.
    """

    primal_infeasibility: float
    dual_infeasibility: float
    stationarity: float
    complementarity: float
    duality_gap: float
    tol: float
    failures: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass(frozen=True)
class SVMResult:
    r"""Solution of an attention SVM over a :class:`~svmgeo.ConstraintSet`.

    Attributes
    ----------
    W : ndarray of shape (d, d) or None
        The solution (None when there is none, e.g. infeasible).
    status : Status
    message : str
        Human-readable account of the status, including any downgrade.
    objective : float or None
        :math:`\|W\|_F` for ``norm="fro"``, :math:`\|W\|_*` for ``norm="nuc"``.
    dual : ndarray of shape (N,) or None
        Multipliers :math:`\lambda_j` of the rows (``W = Σ λ_j a_j b_jᵀ`` for Frobenius).
    margins : ndarray of shape (N,) or None
        :math:`a_j^\top W b_j`.
    constraints : ConstraintSet
    norm : {"fro", "nuc"}
    rank : int or None
        The rank bound of a rank-constrained Att-SVM⋆, else None.
    solver : str
    n_iter : int
    solve_time : float
        Seconds, svmgeo's own work included.
    certificate : Certificate or None
    farkas : ndarray of shape (N,) or None
        Infeasibility certificate :math:`\lambda` (see :class:`FeasibilityResult`).
    K, Q : ndarray of shape (d, m) or None
        Factors :math:`W = KQ^\top` of a rank-constrained solution.
    lower_bound : float or None
        Convex lower bound on the objective (rank-constrained problems).
    extras : dict
        Raw native output of the backend.
    proof : {"exact", "float"} or None
        How the *feasibility verdict* behind this result was checked (as
        :attr:`FeasibilityResult.proof`); the optimality certificate is a floating-point check.
    """

    W: np.ndarray | None
    status: Status
    message: str
    objective: float | None
    dual: np.ndarray | None
    margins: np.ndarray | None
    constraints: ConstraintSet
    norm: Literal["fro", "nuc"]
    solver: str
    rank: int | None = None
    n_iter: int = 0
    solve_time: float = 0.0
    certificate: Certificate | None = None
    farkas: np.ndarray | None = None
    K: np.ndarray | None = None
    Q: np.ndarray | None = None
    lower_bound: float | None = None
    extras: dict[str, Any] = field(default_factory=dict, repr=False)
    proof: Literal["exact", "float"] | None = None  # exact-proof hook (issue 11)

    @property
    def success(self) -> bool:
        """True when the status is :attr:`Status.OPTIMAL`."""
        return self.status is Status.OPTIMAL

    @property
    def relative_gap(self) -> float | None:
        """(objective − lower_bound) / lower_bound for rank-constrained solves, else None."""
        if self.objective is None or self.lower_bound is None or self.lower_bound <= 0:
            return None
        return (self.objective - self.lower_bound) / self.lower_bound


@dataclass(frozen=True)
class FeasibilityResult:
    r"""Whether a constraint set admits a W, with a certificate either way.

    Feasible: ``point`` is a W with every margin row :math:`a_j^\top W b_j \ge c_j` (strictly
    positive margins) and every equality row satisfied. Infeasible: ``certificate`` is a Farkas
    vector :math:`\lambda` with :math:`\lambda_j \ge 0` on margin rows (free on equality rows),
    :math:`\sum_j \lambda_j a_j b_j^\top = 0` and :math:`\sum_j \lambda_j c_j = 1`.

    ``proof`` says how the verdict was checked: ``"exact"`` — proved in rational arithmetic on
    the float input (the point's exact margins, or an exact Farkas vector; see
    ``docs/certificates.md``); ``"float"`` — checked in floating point only (``exact=False``);
    None — not proved (an ``*_INACCURATE`` or error status: the verdict is undecided).
    """

    feasible: bool
    status: Status
    message: str
    constraints: ConstraintSet
    point: np.ndarray | None = None
    certificate: np.ndarray | None = None
    residual: float = 0.0
    solver: str = ""
    extras: dict[str, Any] = field(default_factory=dict, repr=False)
    proof: Literal["exact", "float"] | None = None  # exact-proof hook (issue 11)

    def __bool__(self) -> bool:
        return self.feasible
