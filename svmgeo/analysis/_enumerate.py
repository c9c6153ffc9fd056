# SPDX-License-Identifier: BSD-3-Clause
r"""Exact enumeration of the locally optimal token selections (LOTs) of a dataset.

A selection assigns one visible token to every query :math:`(i, k)`; there are
:math:`\prod_{ik} |\{t : M_{ikt} = 1\}|` of them (:math:`T^{n}`, or :math:`T^{nK}`, without a
mask). Every one is accounted for: it is either solved and tested (*examined*) or excluded
by a sound argument (*pruned*):

1. **hull-vertex test** — Att-SVM restricted to query :math:`(i, k)` is feasible iff
   :math:`x_{i\alpha_{ik}}` is not in the convex hull of the other visible tokens as seen
   through :math:`z_{ik}`; decided exactly by :func:`~svmgeo.check_feasibility` on that
   query's rows. A token failing it cannot appear in any feasible selection.
2. **partial feasibility** — a depth-first search assigns queries in order; if the rows of
   the assigned queries are already infeasible, so is every completion (rows only grow), and
   the whole subtree is pruned. Only a *verified* Farkas certificate prunes; an inconclusive
   check never does. A complete selection's feasibility is decided by
   :func:`~svmgeo.solve_svm` itself (it runs the exact check before solving); an infeasible
   one counts as pruned, not examined.
3. **reuse** — each hull verdict is computed once; a feasible parent's point is reused as the
   child's certificate whenever it already gives the new rows positive values (scaling it
   then satisfies every row); a Farkas certificate's support (the queries whose rows it
   uses) is stored as a *nogood* and prunes every later partial selection that contains it,
   without another LP.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._errors import InaccurateSolutionWarning, ProblemError, SolverError
from .._validation import check_int
from ..constraints import ConstraintSet, pair_constraints
from ..data import TokenData
from ..selection import _check_data, _scores_full
from ..solvers import check_feasibility, solve_svm
from ..solvers._status import Status
from ._local import LocalOptimality, lot_from_support
from ._support import check_tolerances, support_from_result

__all__ = ["LOTEnumeration", "locally_optimal_selections"]


@dataclass(frozen=True, eq=False)
class LOTEnumeration:
    r"""All locally optimal selections of a dataset, with the accounting of the search.

    Attributes
    ----------
    selections : ndarray of int, shape (m, n) or (m, n, K)
        The LOTs, in lexicographic order.
    results : tuple of LocalOptimality
        The verdict (with support tokens and the Att-SVM solve) of each LOT.
    total : int
        Size of the selection space (visible tokens only).
    examined : int
        Complete selections whose Att-SVM was solved and LOT-tested.
    pruned : int
        Selections excluded without a solve; ``examined + pruned == total``.
    pruned_hull, pruned_infeasible : int
        ``pruned`` split by reason: hull-vertex test, infeasible partial selection.
    infeasible : int
        Examined selections whose feasibility check was inconclusive and whose solve then
        reported infeasibility (normally 0).
    undecided : int
        Feasibility checks that were inconclusive (never used to prune).
    failed : ndarray of int
        Selections whose solve failed (neither a solution nor an infeasibility verdict).
    inaccurate : int
        Examined selections whose solve was inaccurate or whose margins and duals disagreed.
    n_checks, n_point_reused, n_nogood_hits : int
        check_feasibility calls (LP or Cholesky), partial selections certified by a parent's point, partial
        selections pruned by a stored certificate.
    seconds : float
    """

    selections: np.ndarray
    results: tuple[LocalOptimality, ...]
    total: int
    examined: int
    pruned: int
    pruned_hull: int
    pruned_infeasible: int
    infeasible: int
    undecided: int
    failed: np.ndarray
    inaccurate: int
    n_checks: int
    n_point_reused: int
    n_nogood_hits: int
    seconds: float

    @property
    def n_lots(self) -> int:
        return int(self.selections.shape[0])

    def __len__(self) -> int:
        return self.n_lots

    def summary(self) -> str:
        """One line with the counts."""
        return (
            f"{self.n_lots} LOT(s) among {self.total} selections: examined {self.examined}, "
            f"pruned {self.pruned} (hull {self.pruned_hull}, infeasible partial "
            f"{self.pruned_infeasible}); {self.n_checks} feasibility checks, {self.n_point_reused} "
            f"points reused, {self.n_nogood_hits} certificate reuses; {self.seconds:.2f} s"
        )


class _Progress:
    """tqdm when installed, otherwise a line on stderr at most twice a second."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.enabled = total, 0, enabled
        self._bar: Any = None
        self._last = 0.0
        if enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:  # pragma: no cover - tqdm is optional
                self._bar = None
            else:
                self._bar = tqdm(total=total, unit="sel", desc="LOT enumeration", mininterval=0.5)

    def update(self, k: int) -> None:
        if not self.enabled or k == 0:
            return
        self.done += k
        if self._bar is not None:
            self._bar.update(k)
            return
        now = time.perf_counter()
        if now - self._last >= 0.5 or self.done == self.total:
            self._last = now
            pct = 100.0 * self.done / max(self.total, 1)
            print(
                f"\rLOT enumeration: {self.done}/{self.total} selections ({pct:.1f}%)",
                end="",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            print(file=sys.stderr, flush=True)


_Rows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _concat(parts: list[_Rows]) -> _Rows:
    return tuple(np.concatenate([p[c] for p in parts]) for c in range(4))  # type: ignore[return-value]


def _lift_point(cs: ConstraintSet, W: np.ndarray) -> np.ndarray | None:
    """``s * W`` with every row of ``cs`` at least 1, or None when some row is not clearly > 0."""
    if cs.N == 0:
        return W
    vals = cs.apply(W)
    scale = float(np.linalg.norm(W)) * float(
        np.max(np.linalg.norm(cs.A, axis=1) * np.linalg.norm(cs.B, axis=1))
    )
    low = float(vals.min())
    if not low > 1e-9 * scale:
        return None
    return W * max(1.0, 1.0 / low)


def locally_optimal_selections(
    data: TokenData,
    *,
    norm: Literal["fro", "nuc"] = "fro",
    max_selections: int = 10**6,
    progress: bool = False,
    tol: float = 1e-6,
    dual_tol: float = 1e-9,
    **solve_kwargs: Any,
) -> LOTEnumeration:
    r"""Every locally optimal selection (LOT) of a dataset, exactly.

    .. math::

        \{\alpha \in \textstyle\prod_{ik} \mathcal V_{ik} :\ \text{Att-SVM}(\alpha)
        \text{ feasible and } \gamma_{ik\alpha_{ik}} > \gamma_{ikt}\ \forall\, t \in
        \mathcal T_{ik}(\alpha)\},

    with :math:`\mathcal V_{ik}` the tokens visible to query :math:`(i, k)`. The search is a
    depth-first search over queries with sound pruning only (see the module notes): hull-vertex
    tests, feasibility of partial selections with verified Farkas certificates, and reuse of
    points and certificates. Each complete feasible selection is solved with
    :func:`~svmgeo.solve_svm` and tested as in :func:`is_locally_optimal`.

    Parameters
    ----------
    data : TokenData
        Needs scores (``v`` or explicit ``scores``).
    norm : {"fro", "nuc"}, default "fro"
    max_selections : int, default 10**6
        Refuse (before any work) when the selection space is larger.
    progress : bool, default False
        Show a progress bar (tqdm when installed, else a line on stderr).
    tol, dual_tol, **solve_kwargs
        As in :func:`support_tokens`.

    Returns
    -------
    LOTEnumeration
        The LOTs and the counts ``total == examined + pruned``.

    Raises
    ------
    ProblemError
        When the selection space exceeds ``max_selections``, or invalid input.

    Examples
    --------
    >>> import svmgeo as sg
    >>> data = sg.random_data(2, 3, 4, seed=0)
    >>> lots = sg.locally_optimal_selections(data)
    >>> lots.total, lots.examined + lots.pruned
    (9, 9)
    """
    where = "locally_optimal_selections"
    start = time.perf_counter()
    data = _check_data(data, where)
    max_selections = check_int(max_selections, "max_selections", low=1, where=where)
    if not isinstance(progress, bool):
        raise ProblemError(
            f"The 'progress' parameter of {where} must be a bool. Got {progress!r} instead."
        )
    tol, dual_tol = check_tolerances(tol, dual_tol, where)
    scores = _scores_full(data)
    n, K = data.n, data.K
    vis = data.visible
    units = [(i, k) for i in range(n) for k in range(K)]
    cand = [np.flatnonzero(vis[i, k]) for i, k in units]
    total = math.prod(len(c) for c in cand)
    if total > max_selections:
        raise ProblemError(
            f"The selection space of this dataset has {total} selections (one visible token "
            f"for each of the {len(units)} queries), above max_selections={max_selections}. "
            f"Pass max_selections={total} or more to run it anyway (up to {total} SVM solves), "
            "or reduce n, T or the number of queries."
        )

    def rows_of(u: int, a: int) -> _Rows:
        i, k = units[u]
        comp = cand[u][cand[u] != a]
        m = comp.size
        return (np.full(m, i), np.full(m, k), np.full(m, a), comp)

    bar = _Progress(total, progress)
    undecided = n_checks = n_reused = n_nogood = 0
    # 1. hull-vertex test per query and token (cached: computed once)
    ok: list[list[int]] = []
    hull_point: dict[tuple[int, int], np.ndarray | None] = {}
    for u in range(len(units)):
        keep = []
        for a in cand[u]:
            r = rows_of(u, int(a))
            if r[0].size == 0:
                hull_point[u, int(a)] = np.zeros((data.d, data.d))
                keep.append(int(a))
                continue
            fr = check_feasibility(pair_constraints(data, *r))
            n_checks += 1
            if fr.feasible:
                hull_point[u, int(a)] = fr.point
                keep.append(int(a))
            elif fr.status is not Status.INFEASIBLE:
                undecided += 1
                hull_point[u, int(a)] = None
                keep.append(int(a))
        ok.append(keep)
    n_ok = math.prod(len(k) for k in ok)
    pruned_hull = total - n_ok
    bar.update(pruned_hull)
    suffix = [math.prod(len(k) for k in ok[d + 1 :]) for d in range(len(units))]

    # nogoods[u] : list of (token at u, ((unit, token), ...) for earlier units)
    nogoods: list[list[tuple[int, tuple[tuple[int, int], ...]]]] = [[] for _ in units]
    lots: list[np.ndarray] = []
    results: list[LocalOptimality] = []
    failed: list[np.ndarray] = []
    counts = {"examined": 0, "pruned": 0, "infeasible": 0, "inaccurate": 0}

    def nogood_hit(depth: int, a: int, chosen: list[int]) -> bool:
        return any(
            tok == a and all(chosen[v] == t for v, t in rest) for tok, rest in nogoods[depth]
        )

    def record_nogood(cs: ConstraintSet, lam: np.ndarray, chosen: list[int]) -> None:
        used = np.flatnonzero(lam != 0)
        unit_ids = sorted({int(cs.seq[j]) * K + int(cs.query[j]) for j in used})
        if not unit_ids:
            return
        last = unit_ids[-1]
        nogoods[last].append((chosen[last], tuple((v, chosen[v]) for v in unit_ids[:-1])))

    def leaf(chosen: list[int], parts: list[_Rows]) -> None:
        alpha = np.asarray(chosen, dtype=np.int64).reshape(n, K)
        cs = pair_constraints(data, *_concat(parts))
        res = solve_svm(cs, norm=norm, **solve_kwargs)  # decides feasibility first, exactly
        bar.update(1)
        if res.status is Status.INFEASIBLE and res.farkas is not None:
            record_nogood(cs, res.farkas, chosen)
            counts["pruned"] += 1
            return
        counts["examined"] += 1
        if res.status.is_infeasible:
            counts["infeasible"] += 1
            return
        try:
            sup = support_from_result(data, alpha, res, tol=tol, dual_tol=dual_tol, warn=False)
        except SolverError:
            failed.append(alpha[:, 0] if data.single_query else alpha)
            return
        if res.status.is_inaccurate or (
            sup.inconsistent is not None and bool(np.any(sup.inconsistent))
        ):
            counts["inaccurate"] += 1
        lot = lot_from_support(data, scores, sup)
        if lot:
            lots.append(np.asarray(lot.alpha))
            results.append(lot)

    def visit(depth: int, chosen: list[int], parts: list[_Rows], point: np.ndarray | None) -> None:
        nonlocal undecided, n_checks, n_reused, n_nogood
        if depth == len(units):
            leaf(chosen, parts)
            return
        sub = suffix[depth]
        for a in ok[depth]:
            new_rows = rows_of(depth, a)
            new_parts = [*parts, new_rows]
            chosen.append(a)
            try:
                if depth == 0:
                    new_point = hull_point[0, a]
                elif nogood_hit(depth, a, chosen):
                    n_nogood += 1
                    counts["pruned"] += sub
                    bar.update(sub)
                    continue
                elif depth == len(units) - 1:
                    new_point = None  # the leaf's solve decides feasibility itself
                else:
                    lifted = None
                    if point is not None:
                        lifted = _lift_point(pair_constraints(data, *new_rows), point)
                    if lifted is not None:
                        n_reused += 1
                        new_point = lifted
                    else:
                        cs = pair_constraints(data, *_concat(new_parts))
                        fr = check_feasibility(cs)
                        n_checks += 1
                        if fr.feasible:
                            new_point = fr.point
                        elif fr.status is Status.INFEASIBLE and fr.certificate is not None:
                            record_nogood(cs, fr.certificate, chosen)
                            counts["pruned"] += sub
                            bar.update(sub)
                            continue
                        else:
                            undecided += 1
                            new_point = None
                visit(depth + 1, chosen, new_parts, new_point)
            finally:
                chosen.pop()

    try:
        visit(0, [], [], None)
    finally:
        bar.close()
    shape = (0, *data.selection_shape)
    sel = np.asarray(lots, dtype=np.int64) if lots else np.zeros(shape, dtype=np.int64)
    fail = np.asarray(failed, dtype=np.int64) if failed else np.zeros(shape, dtype=np.int64)
    if counts["inaccurate"] or len(failed):
        warnings.warn(
            f"{counts['inaccurate']} examined selection(s) had inaccurate Att-SVM solves and "
            f"{len(failed)} failed; their LOT verdicts may be wrong (see .failed).",
            InaccurateSolutionWarning,
            stacklevel=2,
        )
    return LOTEnumeration(
        selections=sel,
        results=tuple(results),
        total=total,
        examined=counts["examined"],
        pruned=pruned_hull + counts["pruned"],
        pruned_hull=pruned_hull,
        pruned_infeasible=counts["pruned"],
        infeasible=counts["infeasible"],
        undecided=undecided,
        failed=fail,
        inaccurate=counts["inaccurate"],
        n_checks=n_checks,
        n_point_reused=n_reused,
        n_nogood_hits=n_nogood,
        seconds=time.perf_counter() - start,
    )
