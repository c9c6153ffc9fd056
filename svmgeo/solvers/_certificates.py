# SPDX-License-Identifier: BSD-3-Clause
r"""Certificates recomputed by svmgeo from the problem data, never trusted from a backend.

The shared machinery lives here: primal residuals of a constraint set, judging residuals
against a tolerance, and downgrading a result whose check fails. Norm-specific KKT checks
(Frobenius, nuclear) and the Farkas check build on these.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..constraints import MARGIN, ConstraintSet
from ._result import Certificate, SVMResult
from ._status import Status

__all__ = ["downgrade", "judge", "primal_infeasibility"]


def primal_infeasibility(cs: ConstraintSet, margins: np.ndarray) -> float:
    r"""Largest violation: :math:`(c_j - m_j)_+` on margin rows, :math:`|m_j - c_j|` on equality rows."""
    if cs.N == 0:
        return 0.0
    diff = np.asarray(margins) - cs.rhs
    viol = np.where(cs.kind == MARGIN, np.maximum(-diff, 0.0), np.abs(diff))
    return float(viol.max())


def judge(
    *,
    tol: float,
    primal_infeasibility: float = 0.0,
    dual_infeasibility: float = 0.0,
    stationarity: float = 0.0,
    complementarity: float = 0.0,
    duality_gap: float = 0.0,
) -> Certificate:
    """Build a :class:`Certificate`, listing every residual above ``tol`` (NaN always fails)."""
    values = {
        "primal infeasibility": primal_infeasibility,
        "dual infeasibility": dual_infeasibility,
        "stationarity": stationarity,
        "complementarity": complementarity,
        "duality gap": duality_gap,
    }
    failures = tuple(
        f"{name} {value:.3g} > tol {tol:.1e}"
        for name, value in values.items()
        if not (value <= tol)  # catches NaN
    )
    return Certificate(
        primal_infeasibility=float(primal_infeasibility),
        dual_infeasibility=float(dual_infeasibility),
        stationarity=float(stationarity),
        complementarity=float(complementarity),
        duality_gap=float(duality_gap),
        tol=float(tol),
        failures=failures,
    )


def downgrade(result: SVMResult, certificate: Certificate) -> SVMResult:
    """Attach ``certificate``; when it fails, downgrade an optimal status and say why.

    ``OPTIMAL`` becomes ``OPTIMAL_INACCURATE`` and ``INFEASIBLE`` becomes
    ``INFEASIBLE_INACCURATE``; the message names each failed residual and its size.
    """
    status, message = result.status, result.message
    if not certificate.passed:
        text = "svmgeo's certificate check failed: " + "; ".join(certificate.failures)
        if status is Status.OPTIMAL:
            status = Status.OPTIMAL_INACCURATE
        elif status is Status.INFEASIBLE:
            status = Status.INFEASIBLE_INACCURATE
        message = f"{message}; {text}" if message else text
    return dataclasses.replace(result, status=status, message=message, certificate=certificate)
