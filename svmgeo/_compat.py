# SPDX-License-Identifier: BSD-3-Clause
"""Deprecated aliases of renamed attributes."""

from __future__ import annotations

import warnings
from typing import Any


def renamed(old: str, new: str, owner: str) -> property:
    """A read-only property ``old`` that warns (DeprecationWarning) and returns ``new``.

    ``certificate`` names a :class:`~svmgeo.Certificate` (KKT residuals) on solver results and the
    Farkas vector of an infeasible problem is ``farkas`` everywhere; wall time is ``solve_time``.
    """

    def get(self: Any) -> Any:
        warnings.warn(
            f"{owner}.{old} is deprecated; use {owner}.{new} (one name per meaning across "
            "svmgeo's results).",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(self, new)

    return property(get, doc=f"Deprecated alias of :attr:`{new}`.")
