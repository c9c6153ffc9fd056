# SPDX-License-Identifier: BSD-3-Clause
r"""Row helpers shared by the experiments' summaries: filter, group and average table rows.

A row is one dict of a sweep table (:func:`svmgeo.experiments.read_results`); a summary
reduces the rows of a group to statistics that skip missing values (``None``, NaN, inf):

.. math::

    \operatorname{mean}(v) = \frac{1}{|F|}\sum_{x \in F} x, \qquad
    F = \{x \in v : x \text{ finite}\}
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

__all__ = [
    "Rows",
    "as_float",
    "coverage",
    "final_parts",
    "finite",
    "group",
    "mean",
    "median",
    "ok_rows",
    "quantile",
    "seeds",
    "span",
    "tied_entry",
    "unknown",
]

Rows = list[dict[str, Any]]


def as_float(x: float | None) -> float:
    """``x`` as a float table cell, NaN for ``None``."""
    return float("nan") if x is None else float(x)


def ok_rows(rows: Rows) -> Rows:
    """The rows of trials that finished (``status == "ok"``)."""
    return [r for r in rows if r.get("status") == "ok"]


def group(rows: Iterable[dict[str, Any]], keys: tuple[str, ...]) -> dict[tuple[Any, ...], Rows]:
    """Rows grouped by the values of ``keys``, groups in order of first appearance."""
    out: dict[tuple[Any, ...], Rows] = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


def finite(values: Iterable[Any]) -> list[float]:
    """The finite values as floats (``None``, NaN and ±inf left out)."""
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def coverage(kept: int, total: int, why: str, unit: str = "seed") -> str:
    """What a statistic over a subset covers, to append to it: ``""`` when it covers all
    ``total`` rows, else e.g. ``" (1 of 2 seeds; 1 NaN: no SVM solution)"``, ``why`` saying
    why the others are missing.

    Examples
    --------
    >>> coverage(2, 2, "NaN"), coverage(1, 2, "NaN: infeasible")
    ('', ' (1 of 2 seeds; 1 NaN: infeasible)')
    """
    if kept == total:
        return ""
    return f" ({kept} of {total} {unit}{'' if total == 1 else 's'}; {total - kept} {why})"


def span(values: Iterable[Any], fmt: str, why: str, unit: str = "seed") -> str:
    r"""``min-max`` of the finite values in format ``fmt`` (``-`` when there are none), with
    how many values it covers and why the others are missing when some are (:func:`coverage`):
    a span over a subset never reads as one over every row. The missing values are named by
    kind: ``NaN`` when all are NaN, else ``missing`` with a count of each kind (``None``,
    ``NaN``, ``inf``, ``-inf``); ``why`` (may be empty) says why.

    .. math::

        \big[\min F,\ \max F\big],\qquad F = \{x \in v : x \text{ finite}\}

    Examples
    --------
    >>> span([0.5, float("nan"), 0.25], ".2f", "no SVM solution")
    '0.25-0.50 (2 of 3 seeds; 1 NaN: no SVM solution)'
    >>> span([0.5, 0.25], ".2f", ""), span([None, float("inf")], ".2f", "infeasible")
    ('0.25-0.50', '- (0 of 2 seeds; 2 missing (1 None, 1 inf): infeasible)')
    """
    values = list(values)
    v = finite(values)
    text = f"{min(v):{fmt}}-{max(v):{fmt}}" if v else "-"
    return text + missing_note(values, why, unit)


def missing_note(values: Iterable[Any], why: str, unit: str = "seed") -> str:
    """:func:`coverage` of the finite ``values``, the others named by kind as in :func:`span`
    (``NaN`` when all are NaN, else ``missing`` with a count of each kind); ``""`` when every
    value is finite.

    Examples
    --------
    >>> missing_note([0.5, None, float("nan")], "no SVM solution")
    ' (1 of 3 seeds; 2 missing (1 None, 1 NaN): no SVM solution)'
    """
    values = list(values)
    kinds: dict[str, int] = {}
    for x in values:
        kind = "None" if x is None else str(float(x)).replace("nan", "NaN")
        if x is None or not math.isfinite(float(x)):
            kinds[kind] = kinds.get(kind, 0) + 1
    label = "NaN" if set(kinds) <= {"NaN"} else (
        "missing (" + ", ".join(f"{n} {k}" for k, n in kinds.items()) + ")"
    )  # fmt: skip
    kept = len(values) - sum(kinds.values())
    return coverage(kept, len(values), f"{label}: {why}" if why else label, unit)


def mean(values: Iterable[Any]) -> float:
    """Mean of the finite values (NaN when there are none)."""
    v = finite(values)
    return statistics.fmean(v) if v else float("nan")


def median(values: Iterable[Any]) -> float:
    """Median of the finite values (NaN when there are none)."""
    v = finite(values)
    return float(statistics.median(v)) if v else float("nan")


def quantile(values: Iterable[Any], q: float) -> float:
    """Lower empirical ``q``-quantile of the finite values: the ⌈q·N⌉-th smallest (the smallest
    value with at least a fraction q of the N values at or below it; the minimum for q = 0)."""
    v = sorted(finite(values))
    if not v:
        return float("nan")
    k = math.ceil(round(q * len(v), 9))  # rounded: 0.1 * 30 is 3.0000000000000004
    return v[min(len(v) - 1, max(k - 1, 0))]


def final_parts(rows: Rows) -> Rows:
    """The final recorded row (step or threshold) of each multi-row trial."""
    return [r for r in rows if r["part"] == r["n_parts"] - 1]


def tied_entry(rows: Rows, key: str, by: str = "seed") -> dict[str, str]:
    """The headline entry ``key`` listing the rows whose final selection is tied (their
    ``tied`` cell, each after its ``by`` column, e.g. ``"seed 3: sequence 0: tokens [1, 4]"``,
    joined by ``"; "``); ``{}`` when none is."""
    tied = [f"{by} {r[by]}: {r['tied']}" for r in rows if r.get("tied")]
    return {key: "; ".join(tied)} if tied else {}


def unknown(rows: Rows, columns: Iterable[str]) -> dict[str, str]:
    """Headline entries for the ``columns`` that some rows lack, as unknown (not empty): rows
    of a table written before the column existed (read back with
    :func:`~svmgeo.experiments.read_results`); ``{}`` when every row has them."""
    out = {}
    for column in columns:
        n = sum(1 for r in rows if column not in r)
        if n:
            out[f"{column}: unknown"] = (
                f"{n} of {len(rows)} rows lack the column (a table written before it); rerun "
                "them (resume=False) to measure it"
            )
    return out


def seeds(quick: bool, n_quick: int, n_full: int) -> list[int]:
    """Seeds ``0 … N-1`` of a grid: ``n_quick`` of them in quick mode, else ``n_full``."""
    return list(range(n_quick if quick else n_full))
