# SPDX-License-Identifier: BSD-3-Clause
"""Exceptions and warnings owned by svmgeo.

Every error about a *value* the user passed subclasses :class:`ValueError`, so
``except ValueError`` keeps working for callers that do not know svmgeo.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BackendError",
    "ConvergenceWarning",
    "InaccurateSolutionWarning",
    "LossWarning",
    "ProblemError",
    "SolverError",
    "SolverNotFound",
    "SvmgeoError",
    "TieError",
]


class SvmgeoError(Exception):
    """Base class of every exception raised by svmgeo."""


class ProblemError(SvmgeoError, ValueError):
    """A problem's data or parameters are invalid (shape, value, range)."""


class TieError(ProblemError):
    """Optimal tokens are not unique and the caller did not say how to break ties.

    Attributes
    ----------
    run : GDRun or None
        The run whose final selection is tied, where one was trained (:func:`svmgeo.verify`,
        :func:`svmgeo.verify_mirror`), so a caller can report it without training it again;
        else None.
    """

    def __init__(self, *args: object, run: Any = None) -> None:
        super().__init__(*args)
        self.run = run


class SolverNotFound(SvmgeoError, ImportError):
    """A requested backend solver is not installed."""


class SolverError(SvmgeoError, RuntimeError):
    """A backend solver failed in a way that leaves no usable answer."""


class BackendError(SvmgeoError, ValueError):
    """An array backend is missing, unknown, or the inputs mix backends."""


class ConvergenceWarning(UserWarning):
    """An iterative method stopped before its stopping criterion was met."""


class InaccurateSolutionWarning(UserWarning):
    """A solution failed svmgeo's own certificate check at the requested tolerance."""


class LossWarning(UserWarning):
    r"""A loss fails a hypothesis of the max-margin limit where it is evaluated
    (:math:`\ell' \ge 0` on the attained interval of :math:`Y f`)."""
