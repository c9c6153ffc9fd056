# SPDX-License-Identifier: BSD-3-Clause
"""Options of the verify entry points: renamed spellings and options a run does not use.

One name per meaning (issue #20): the training algorithm is ``optimizer`` (``method`` is a
solve method), the ℓp exponent is ``exponent`` (``p`` is the prompt vector), the
gradient-norm stop is ``grad_tol`` (``tol`` is a certificate tolerance).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._errors import ProblemError

__all__ = ["RENAMED", "refuse_options"]

RENAMED = {
    "method": ("optimizer", "the training algorithm"),
    "p": ("exponent", "the exponent of the mirror potential ‖W‖_p^p/p"),
    "tol": ("grad_tol", "the gradient-norm stop of train"),
}
"""Old spelling -> (new spelling, what it names)."""


def refuse_options(
    options: dict[str, Any], *, where: str, takes: Iterable[str], hints: dict[str, str]
) -> None:
    """Raise a :class:`~svmgeo.ProblemError` for any option in ``options``.

    Parameters
    ----------
    options : dict
        The options ``where`` does not take (its ``**options`` after the accepted ones).
    where : str
        The function's name, for the message.
    takes : iterable of str
        The options it does take, listed in the message (the first word of each is the name).
    hints : dict
        Extra advice per option name (e.g. which function to call instead).

    Raises
    ------
    ProblemError
        Renamed spellings first (naming the new one), then the other unknown options.
    """
    taken = {name.split()[0] for name in takes}
    for old in sorted(set(options) & set(RENAMED)):
        new, what = RENAMED[old]
        advice = [f"pass {new}=... instead."] if new in taken else []
        advice += [hints[old]] if old in hints else []
        advice = advice or [f"{where} takes neither: drop it."]
        raise ProblemError(
            f"{where}: the option {old!r} ({what}) was renamed {new!r}; " + " ".join(advice)
        )
    unknown = sorted(options)
    if unknown:
        hint = " ".join(hints[name] for name in unknown if name in hints)
        raise ProblemError(
            f"{where} got unknown option(s) {unknown}. It takes {', '.join(takes)}."
            + (f" {hint}" if hint else "")
        )
