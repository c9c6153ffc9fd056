# SPDX-License-Identifier: BSD-3-Clause
"""One status vocabulary for every solver in svmgeo."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Status"]


class Status(StrEnum):
    """Outcome of a solve. Compare with members or their string values (``"optimal"``).

    Each member has exactly one meaning (the table in ``docs/statuses.md``):
    :attr:`OPTIMAL` is a *certified global* optimum; :attr:`LOCALLY_OPTIMAL` is a verified KKT
    point of the nonconvex rank-bounded problem whose value is above the convex lower bound
    (a solution, not a certified optimum: ``has_solution`` is True, ``success`` is False).
    A backend's native code that svmgeo does not know maps to :attr:`SOLVER_ERROR`, never to
    success; a solution that fails svmgeo's own certificate is downgraded to
    :attr:`OPTIMAL_INACCURATE` (or :attr:`INFEASIBLE_INACCURATE`) with a message. A backend's
    "almost" verdict maps to the ``*_INACCURATE`` member, never to the exact one.
    """

    OPTIMAL = "optimal"
    LOCALLY_OPTIMAL = "locally_optimal"
    OPTIMAL_INACCURATE = "optimal_inaccurate"
    INFEASIBLE = "infeasible"
    INFEASIBLE_INACCURATE = "infeasible_inaccurate"
    UNBOUNDED = "unbounded"
    UNBOUNDED_INACCURATE = "unbounded_inaccurate"
    MAX_ITER = "max_iter"
    NUMERICAL_ERROR = "numerical_error"
    SOLVER_ERROR = "solver_error"

    def __str__(self) -> str:
        return self.value

    @property
    def has_solution(self) -> bool:
        """True when a primal solution is available (possibly inaccurate, or only locally
        optimal)."""
        return self in (Status.OPTIMAL, Status.LOCALLY_OPTIMAL, Status.OPTIMAL_INACCURATE)

    @property
    def success(self) -> bool:
        """True only for :attr:`OPTIMAL`: a certified, globally optimal solution."""
        return self is Status.OPTIMAL

    @property
    def is_infeasible(self) -> bool:
        """True for a proved or an undecided infeasibility verdict."""
        return self in (Status.INFEASIBLE, Status.INFEASIBLE_INACCURATE)

    @property
    def is_inaccurate(self) -> bool:
        """True for a backend's "almost" verdict or a downgraded one (never certified)."""
        return self in (
            Status.OPTIMAL_INACCURATE,
            Status.INFEASIBLE_INACCURATE,
            Status.UNBOUNDED_INACCURATE,
        )
