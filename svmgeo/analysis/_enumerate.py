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
4. **batching** (``search="batched"``, the default from 1000 selections on) — complete
   selections are solved in batches by a compiled active-set method (:mod:`._enumerate_fast`):
   siblings differ in the last query's rows only, so each solve is warm-started from its
   neighbour's active set and the Gram rows of the unchanged queries are kept. Each answer is certified as
   :func:`~svmgeo.solve_svm` certifies its own (margins recomputed from W, complementarity,
   duality gap); a certified non-LOT is counted as examined, and every LOT and every
   selection that does not settle or certify is solved by :func:`~svmgeo.solve_svm` exactly
   as in ``search="reference"``. Partial selections are proved feasible by the parent's point
   or by a compiled Cholesky solve of :math:`G\lambda = 1` (margins recomputed from W)
   before the LP. In Theorem 1's regime (:math:`d \ge \max(T - 1, nK)`, where almost every
   selection is feasible) the parents of complete selections are not checked first: a parent
   none of whose selections certifies is checked afterwards, and pruned with all its
   selections when infeasible. Skipping a check never loses soundness, only pruning.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .._errors import InaccurateSolutionWarning, ProblemError, SolverError
from .._summary import summarized
from .._validation import check_int, check_option
from ..constraints import ConstraintSet, pair_constraints
from ..data import TokenData
from ..selection import check_data as _check_data
from ..selection import score_size_table, selection_space
from ..selection import scores_full as _scores_full
from ..solvers import Status, check_feasibility, parse_norm, solve_for, solve_svm
from ._local import LocalOptimality, lot_from_support
from ._support import (
    SUPPORT_DUAL_TOL,
    SUPPORT_TOL,
    check_lot_norm,
    check_tolerances,
    support_from_result,
)

__all__ = ["LOTEnumeration", "locally_optimal_selections"]


@summarized
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
        reported infeasibility (normally 0). Their non-LOT verdict is not proved (no verified
        Farkas vector); they are counted in the warning.
    undecided : int
        Feasibility checks that were inconclusive (never used to prune).
    undecided_selections : ndarray of int, shape (u, n) or (u, n, K)
        Examined selections whose LOT verdict is undecided (:class:`LocalOptimality`'s
        ``decided`` False: a token scoring at least as high as the selected one whose margin
        and multiplier disagree, or a face of Att-SVM⋆ optima): neither listed nor ruled out.
    undecided_results : tuple of LocalOptimality
        Their verdicts; each ``reason`` names the tokens.
    failed : ndarray of int
        Selections whose solve failed (neither a solution nor an infeasibility verdict): their
        LOT verdict is undecided, neither listed nor ruled out. In practice these are feasible
        problems (feasibility proved) whose max-margin :math:`W` is beyond double precision,
        e.g. tokens collinear up to rounding (:math:`\|W^{mm}\|_F \sim 1/\epsilon`, where
        the rounding of each margin exceeds the margin); ``inaccurate`` does not count them.
    inaccurate : int
        Examined selections whose solve was inaccurate or whose margins and duals disagreed.
    n_checks, n_point_reused, n_nogood_hits : int
        check_feasibility calls (LP or Cholesky; with ``search="batched"`` also the compiled
        Cholesky proofs), partial selections certified by a parent's point, partial
        selections pruned by a stored certificate. Work counters: they depend on the search
        (as ``undecided`` can: a check the batched search does not need is not made).
    solve_time : float
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
    undecided_selections: np.ndarray
    undecided_results: tuple[LocalOptimality, ...]
    failed: np.ndarray
    inaccurate: int
    n_checks: int
    n_point_reused: int
    n_nogood_hits: int
    solve_time: float

    @property
    def n_lots(self) -> int:
        return int(self.selections.shape[0])

    def __len__(self) -> int:
        return self.n_lots

    def summary(self) -> str:
        """One line with the counts, the selections whose verdict may be wrong first (failed
        solves, inaccurate solves: also warned at the call, which a pickled result or a Dask
        worker's log loses)."""
        unsettled = len(self.undecided_results)
        failed = int(np.asarray(self.failed).shape[0])
        doubtful = ", ".join(
            text
            for count, text in (
                (failed, f"{failed} failed solve(s)"),
                (self.inaccurate, f"{self.inaccurate} inaccurate solve(s)"),
            )
            if count
        )
        return (
            f"{self.n_lots} LOT(s)"
            + (f" and {unsettled} undecided selection(s)" if unsettled else "")
            + (f" ({doubtful}: their verdicts may be wrong)" if doubtful else "")
            + f" among {self.total} selections: examined {self.examined}, "
            f"pruned {self.pruned} (hull {self.pruned_hull}, infeasible partial "
            f"{self.pruned_infeasible}); {self.n_checks} feasibility checks, {self.n_point_reused} "
            f"points reused, {self.n_nogood_hits} certificate reuses; {self.solve_time:.2f} s"
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


def _scaled_point(W: np.ndarray, vals: np.ndarray, row_scale: float) -> np.ndarray | None:
    r"""``s * W`` with every row value ``vals`` at least 1, or None when one is not clearly > 0.

    "Clearly": above :math:`10^{-9}\,\|W\|_F \max_j \|a_j\|\|b_j\|` (``row_scale`` is the
    max), far above the rounding of :math:`a_j^\top W b_j`, so the point is a proof.
    """
    if vals.size == 0:
        return W
    low = float(vals.min())
    if not low > 1e-9 * float(np.linalg.norm(W)) * row_scale:
        return None
    return W * max(1.0, 1.0 / low)


def _lift_point(cs: ConstraintSet, W: np.ndarray) -> np.ndarray | None:
    """``s * W`` with every row of ``cs`` at least 1, or None when some row is not clearly > 0."""
    if cs.N == 0:
        return W
    row_scale = float(np.max(np.linalg.norm(cs.A, axis=1) * np.linalg.norm(cs.B, axis=1)))
    return _scaled_point(W, cs.apply(W), row_scale)


@dataclass
class _Settings:
    """What a search needs besides the data (picklable, for worker processes)."""

    norm: str
    tol: float
    dual_tol: float
    solve_kwargs: dict[str, Any]
    cand: list[np.ndarray]  # visible tokens of each query
    ok: list[list[int]]  # tokens passing the hull test
    hull_point: dict[tuple[int, int], np.ndarray | None]
    search: str = "batched"


@dataclass
class _Tally:
    """What one search (a subtree) found."""

    lots: list[np.ndarray] = field(default_factory=list)
    results: list[LocalOptimality] = field(default_factory=list)
    unsettled: list[LocalOptimality] = field(default_factory=list)
    failed: list[np.ndarray] = field(default_factory=list)
    examined: int = 0
    pruned: int = 0
    infeasible: int = 0
    inaccurate: int = 0
    undecided: int = 0
    n_checks: int = 0
    n_reused: int = 0
    n_nogood: int = 0


MAX_SEARCH_DEPTH = 100_000
"""The most queries the depth-first search takes (one Python frame per query)."""


@contextlib.contextmanager
def _recursion_room(depth: int) -> Any:
    """Python's recursion limit raised, for the duration, to fit a depth-first search of
    ``depth`` levels (a few frames each) above the caller's frames; a ProblemError beyond
    ``MAX_SEARCH_DEPTH``. (About 1,000 queries overflowed the default limit of 1,000.)"""
    if depth > MAX_SEARCH_DEPTH:
        raise ProblemError(
            f"locally_optimal_selections: the selection search goes one level per query; got "
            f"{depth} queries, more than MAX_SEARCH_DEPTH = {MAX_SEARCH_DEPTH}. Split the data "
            "into smaller sets of sequences."
        )
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, len(inspect.stack(0)) + 4 * depth + 200))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


class _Search:
    r"""Depth-first search over the queries, below a fixed prefix of assigned queries."""

    def __init__(
        self, data: TokenData, cfg: _Settings, prefix: tuple[int, ...], bar: _Progress | None
    ) -> None:
        self.data, self.cfg, self.bar = data, cfg, bar
        self.scores = _scores_full(data)
        self.score_size = score_size_table(data)  # once: every leaf's LOT test reads them
        self.K = data.K
        self.units = [(i, k) for i in range(data.n) for k in range(data.K)]
        # the choices at each depth: the prefix, then every hull-passing token
        self.choices = [[a] for a in prefix] + cfg.ok[len(prefix) :]
        self.suffix = [
            math.prod(len(c) for c in self.choices[d + 1 :]) for d in range(len(self.units))
        ]
        # nogoods[u][token at u]: [((unit, token), ...) for earlier units, ...]
        self.nogoods: list[dict[int, list[tuple[tuple[int, int], ...]]]] = [{} for _ in self.units]
        self.t = _Tally()

    def rows_of(self, u: int, a: int) -> _Rows:
        i, k = self.units[u]
        cand = self.cfg.cand[u]
        comp = cand[cand != a]
        m = comp.size
        return (np.full(m, i), np.full(m, k), np.full(m, a), comp)

    def _tick(self, k: int) -> None:
        if self.bar is not None:
            self.bar.update(k)

    def _nogood_hit(self, depth: int, a: int, chosen: list[int]) -> bool:
        return any(all(chosen[v] == t for v, t in rest) for rest in self.nogoods[depth].get(a, ()))

    def _record_nogood(self, cs: ConstraintSet, lam: np.ndarray, chosen: list[int]) -> None:
        used = np.flatnonzero(lam != 0)
        unit_ids = sorted({int(cs.seq[j]) * self.K + int(cs.query[j]) for j in used})
        if unit_ids:
            last = unit_ids[-1]
            rest = tuple((v, chosen[v]) for v in unit_ids[:-1])
            self.nogoods[last].setdefault(chosen[last], []).append(rest)

    def _leaf(self, chosen: list[int], parts: list[_Rows]) -> None:
        data, cfg, t = self.data, self.cfg, self.t
        alpha = np.asarray(chosen, dtype=np.int64).reshape(data.n, data.K)
        cs = pair_constraints(data, *_concat(parts))
        # solve_svm decides feasibility first, exactly, and only then solves
        res = solve_for(cs, where="locally_optimal_selections", norm=cfg.norm, **cfg.solve_kwargs)
        self._tick(1)
        if res.status is Status.INFEASIBLE and res.farkas is not None:
            self._record_nogood(cs, res.farkas, chosen)
            t.pruned += 1
            return
        t.examined += 1
        if res.status.is_infeasible:
            t.infeasible += 1
            return
        try:
            sup = support_from_result(
                data, alpha, res, tol=cfg.tol, dual_tol=cfg.dual_tol, warn=False
            )
        except SolverError:
            t.failed.append(alpha[:, 0] if data.single_query else alpha)
            return
        if res.status.is_inaccurate or (
            sup.inconsistent is not None and bool(np.any(sup.inconsistent))
        ):
            t.inaccurate += 1
        lot = lot_from_support(data, self.scores, self.score_size, sup)
        if lot:
            t.lots.append(np.asarray(lot.alpha))
            t.results.append(lot)
        elif not lot.decided:
            t.unsettled.append(lot)

    def _child_point(
        self, depth: int, chosen: list[int], parts: list[_Rows], point: np.ndarray | None
    ) -> tuple[bool, np.ndarray | None]:
        """(keep?, a point certifying the partial selection, or None when undecided)."""
        t = self.t
        if depth == 0:
            return True, self.cfg.hull_point[0, chosen[0]]
        if self._nogood_hit(depth, chosen[depth], chosen):
            t.n_nogood += 1
            return False, None
        if depth == len(self.units) - 1:
            return True, None  # the leaf's solve decides feasibility itself
        if point is not None:
            lifted = _lift_point(pair_constraints(self.data, *parts[-1]), point)
            if lifted is not None:
                t.n_reused += 1
                return True, lifted
        return self._check(chosen, parts)

    def _check(self, chosen: list[int], parts: list[_Rows]) -> tuple[bool, np.ndarray | None]:
        """:func:`check_feasibility` of a partial selection: (keep?, its point or None)."""
        t = self.t
        cs = pair_constraints(self.data, *_concat(parts))
        fr = check_feasibility(cs)
        t.n_checks += 1
        if fr.feasible:
            return True, fr.point
        if fr.status is Status.INFEASIBLE and fr.farkas is not None:
            self._record_nogood(cs, fr.farkas, chosen)
            return False, None
        t.undecided += 1  # inconclusive: never prune on it
        return True, None

    def visit(
        self, depth: int, chosen: list[int], parts: list[_Rows], point: np.ndarray | None
    ) -> None:
        if depth == len(self.units):
            self._leaf(chosen, parts)
            return
        for a in self.choices[depth]:
            chosen.append(a)
            new_parts = [*parts, self.rows_of(depth, a)]
            keep, new_point = self._child_point(depth, chosen, new_parts, point)
            if keep:
                self.visit(depth + 1, chosen, new_parts, new_point)
            else:
                self.t.pruned += self.suffix[depth]
                self._tick(self.suffix[depth])
            chosen.pop()

    def run(self) -> _Tally:
        with _recursion_room(len(self.units)):
            self.visit(0, [], [], None)
        return self.t


class _BatchedSearch(_Search):
    r"""The same search and the same verdicts, with the per-selection work compiled and batched.

    - Partial selections: a parent's point is tested on the new rows directly (no
      :class:`ConstraintSet`); when it does not certify the child,
      :func:`~._enumerate_fast.prefix_point` tries :math:`G\lambda = \mathbf 1` (accepted
      only when the margins of :math:`W = \sum_j \lambda_j a_j b_j^\top`, recomputed from
      :math:`W`, are clearly positive); otherwise :func:`check_feasibility` as before.
    - Complete selections are queued, :data:`_BATCH` at a time, and solved, certified and
      LOT-tested by :func:`~._enumerate_fast.leaf_batch`. A certified non-LOT is counted as
      examined; a LOT, and every selection that does not settle or certify (infeasible ones
      included), goes through the reference leaf (:func:`~svmgeo.solve_svm`, the support
      tokens, the LOT test), so each reported LOT carries the same :class:`LocalOptimality`
      as in the reference search.

    Queued selections are kept as token tuples; their rows are rebuilt where the reference
    code needs them.
    """

    def __init__(
        self, data: TokenData, cfg: _Settings, prefix: tuple[int, ...], bar: _Progress | None
    ) -> None:
        super().__init__(data, cfg, prefix, bar)
        from ._enumerate_fast import RowTable

        self.table = RowTable(data.X, data.queries, self.scores, cfg.cand, self.score_size)
        self.leaf_solver = parse_norm(cfg.norm, "locally_optimal_selections")[0].gram_qp and (
            not cfg.solve_kwargs
        )
        # Theorem 1's regime (almost every selection feasible): the parents of complete
        # selections are not checked before their selections are solved (skipping a check is
        # always sound); a parent none of whose selections certifies is checked in _flush
        widest = max((c.size for c in cfg.cand), default=1)
        self.defer_parents = self.leaf_solver and data.d >= max(widest - 1, len(self.units))
        self.queue: list[tuple[int, ...]] = []

    def _parts(self, chosen: list[int]) -> list[_Rows]:
        return [self.rows_of(u, a) for u, a in enumerate(chosen)]

    def _child_point(
        self, depth: int, chosen: list[int], parts: list[_Rows], point: np.ndarray | None
    ) -> tuple[bool, np.ndarray | None]:
        from ._enumerate_fast import prefix_point

        t, tab = self.t, self.table
        if depth == 0:
            return True, self.cfg.hull_point[0, chosen[0]]
        if self._nogood_hit(depth, chosen[depth], chosen):
            t.n_nogood += 1
            return False, None
        a = chosen[depth]
        if point is not None:
            vals = tab.A[depth, a, : tab.sizes[depth]] @ (point @ tab.Z[depth])
            lifted = _scaled_point(point, vals, float(tab.row_scale[depth, a]))
            if lifted is not None:
                t.n_reused += 1
                return True, lifted
        sel = np.asarray(chosen, dtype=np.int64)
        W = np.empty((self.data.d, self.data.d))
        row_scale = float(tab.row_scale[np.arange(sel.size), sel].max())
        t.n_checks += 1
        if prefix_point(tab.A, tab.sizes, tab.offsets, tab.Z, tab.H, sel, row_scale, W):
            return True, W
        t.n_checks -= 1  # counted again by the exact check
        return self._check(chosen, parts)

    def visit(
        self, depth: int, chosen: list[int], parts: list[_Rows], point: np.ndarray | None
    ) -> None:
        last = len(self.units) - 1
        if (
            not self.leaf_solver
            or depth < last - 1
            or (depth == last - 1 and not self.defer_parents)
        ):
            super().visit(depth, chosen, parts, point)
            return
        if depth == last:
            self._queue_leaves(chosen)
        else:  # parents of complete selections: their feasibility is decided in _flush
            for a in self.choices[depth]:
                chosen.append(a)
                if depth > 0 and self._nogood_hit(depth, a, chosen):
                    self.t.n_nogood += 1
                    self.t.pruned += self.suffix[depth]
                    self._tick(self.suffix[depth])
                else:
                    self._queue_leaves(chosen)
                chosen.pop()
        if len(self.queue) >= _BATCH or not self.defer_parents:
            self._flush()  # eagerly: the certificates of infeasible selections prune the next

    def _queue_leaves(self, chosen: list[int]) -> None:
        """Queue the complete selections below ``chosen`` (the last query still open)."""
        depth = len(chosen)
        nogoods = self.nogoods[depth]
        for a in self.choices[depth]:
            chosen.append(a)
            if nogoods and self._nogood_hit(depth, a, chosen):
                self.t.n_nogood += 1
                self.t.pruned += 1
                self._tick(1)
            else:
                self.queue.append(tuple(chosen))
            chosen.pop()

    def _flush(self) -> None:
        r"""Solve the queued selections; the rest goes through the reference code.

        A parent (all queries but the last) none of whose selections certified gets the
        reference's partial-feasibility check: a verified Farkas certificate prunes every
        selection below it, as the reference search would have before visiting them.
        """
        from ._enumerate_fast import NOT_LOT, UNSETTLED, leaf_batch

        if not self.queue:
            return
        sel = np.asarray(self.queue, dtype=np.int64)
        self.queue.clear()
        tab = self.table
        verdict = np.zeros(sel.shape[0], dtype=np.int64)
        leaf_batch(
            tab.A,
            tab.sizes,
            tab.offsets,
            tab.Z,
            tab.H,
            tab.bad,
            sel,
            30,
            _CERT_TOL,
            self.cfg.tol,
            self.cfg.dual_tol,
            verdict,
        )
        done = verdict == NOT_LOT
        self.t.examined += int(done.sum())
        self._tick(int(done.sum()))
        # groups of selections sharing a parent, in queue order
        last = sel.shape[1] - 1
        new_parent = np.ones(sel.shape[0], dtype=bool)
        new_parent[1:] = np.any(sel[1:, :-1] != sel[:-1, :-1], axis=1)
        starts = np.flatnonzero(new_parent)
        certified = np.maximum.reduceat((verdict != UNSETTLED).astype(np.int64), starts) > 0
        for lo, hi, seen in zip(starts, [*starts[1:], sel.shape[0]], certified, strict=True):
            if self.defer_parents and last > 0 and not seen:
                # no selection below this parent certified: decide the parent as the
                # reference search does before visiting them (a stored certificate, or a check)
                prefix = [int(x) for x in sel[lo, :-1]]
                if self._nogood_hit(last - 1, prefix[-1], prefix):
                    self.t.n_nogood += 1
                    keep = False
                else:
                    keep, _ = self._check(prefix, self._parts(prefix))
                if not keep:
                    self.t.pruned += hi - lo
                    self._tick(hi - lo)
                    continue
            for b in range(lo, hi):
                if done[b]:
                    continue
                chosen = [int(x) for x in sel[b]]
                if last > 0 and self._nogood_hit(last, chosen[-1], chosen):
                    self.t.n_nogood += 1  # a certificate found since it was queued
                    self.t.pruned += 1
                    self._tick(1)
                else:
                    self._leaf(chosen, self._parts(chosen))

    def run(self) -> _Tally:
        with _recursion_room(len(self.units)):
            self.visit(0, [], [], None)
        self._flush()
        return self.t


_BATCH = 4096
"""Complete selections solved per call of the compiled active-set method."""
_CERT_TOL: float = inspect.signature(solve_svm).parameters["tol"].default
"""Certificate tolerance of the batched solves: that of :func:`~svmgeo.solve_svm` (its default)."""

_AUTO_BATCHED = 1000
"""Smallest selection space for which ``search="auto"`` batches (below, loading the compiled
kernels would cost more than it saves)."""
_SEARCHES: dict[str, type[_Search]] = {"batched": _BatchedSearch, "reference": _Search}


def _run_subtree(args: tuple[TokenData, _Settings, tuple[int, ...]]) -> _Tally:
    data, cfg, prefix = args
    return _SEARCHES[cfg.search](data, cfg, prefix, None).run()


def _hull_tests(data: TokenData, cand: list[np.ndarray]) -> tuple[_Settings, int, int]:
    """Hull-vertex test of every (query, token), each decided once: (settings, checks, undecided)."""
    units = [(i, k) for i in range(data.n) for k in range(data.K)]
    ok: list[list[int]] = []
    points: dict[tuple[int, int], np.ndarray | None] = {}
    checks = undecided = 0
    for u, (i, k) in enumerate(units):
        keep = []
        for a in (int(x) for x in cand[u]):
            comp = cand[u][cand[u] != a]
            if comp.size == 0:
                points[u, a] = np.zeros((data.d, data.d))
                keep.append(a)
                continue
            m = comp.size
            fr = check_feasibility(
                pair_constraints(data, np.full(m, i), np.full(m, k), np.full(m, a), comp)
            )
            checks += 1
            if fr.feasible:
                points[u, a] = fr.point
                keep.append(a)
            elif fr.status is not Status.INFEASIBLE:
                undecided += 1  # inconclusive: keep the token
                points[u, a] = None
                keep.append(a)
        ok.append(keep)
    cfg = _Settings("", 0.0, 0.0, {}, cand, ok, points)
    return cfg, checks, undecided


def locally_optimal_selections(
    data: TokenData,
    *,
    norm: Literal["fro", "nuc"] = "fro",
    max_selections: int = 10**6,
    progress: bool = False,
    n_jobs: int = 1,
    search: Literal["auto", "batched", "reference"] = "auto",
    tol: float = SUPPORT_TOL,
    dual_tol: float = SUPPORT_DUAL_TOL,
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
    n_jobs : int, default 1
        Worker processes; ``-1`` for one per CPU. The subtrees below the first queries'
        choices are searched in parallel (each worker keeps its own certificate cache, so
        the pruning counts may differ slightly from a serial run; the LOTs do not). No more
        workers than subtrees or CPUs are started; ``n_jobs`` still sets the split, so the
        results do not depend on the machine.
    search : {"auto", "batched", "reference"}, default "auto"
        ``"reference"``: one :func:`~svmgeo.solve_svm` per complete selection.
        ``"batched"``: the same search and verdicts, with the Att-SVMs of complete selections
        solved in batches by a compiled active-set method (``norm="fro"`` without
        ``solve_kwargs``; otherwise one solve each, as in the reference) and cheaper proofs
        for partial selections; every selection whose batched answer does not certify, and
        every LOT, is solved by :func:`~svmgeo.solve_svm` as in the reference. The LOTs,
        their results and ``total``/``examined``/``pruned`` agree; the work counters
        (``n_checks``, ``n_point_reused``, ``n_nogood_hits``) may differ. Its kernels are
        compiled by numba on first use (cached on disk; loading them takes about a second).
        ``"auto"``: ``"batched"`` from 1000 selections on, ``"reference"`` below.
    tol, dual_tol, **solve_kwargs
        As in :func:`support_tokens`.

    Returns
    -------
    LOTEnumeration
        The LOTs, the selections whose verdict is undecided (``undecided_selections``, as
        in :func:`is_locally_optimal`) and the counts ``total == examined + pruned``.

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
    n_jobs = check_int(n_jobs, "n_jobs", low=-1, where=where)
    if n_jobs == 0:
        raise ProblemError(
            f"The 'n_jobs' parameter of {where} must be a positive int or -1 (all CPUs). Got 0."
        )
    if n_jobs == -1:
        n_jobs = os.cpu_count() or 1
    search = check_option(search, "search", ("auto", *_SEARCHES), where=where)  # type: ignore[assignment]
    tol, dual_tol = check_tolerances(tol, dual_tol, where)
    check_lot_norm(norm, where, strictly_convex=False)  # the searches: Att-SVM, Att-SVM*
    _scores_full(data)  # fail early when the dataset has no scores
    vis = data.visible
    n_units = data.n * data.K
    cand = [np.flatnonzero(vis[i, k]) for i in range(data.n) for k in range(data.K)]
    total = selection_space(data)
    if total > max_selections:
        raise ProblemError(
            f"The selection space of this dataset has {total} selections (one visible token "
            f"for each of the {n_units} queries), above max_selections={max_selections}. "
            f"Pass max_selections={total} or more to run it anyway (up to {total} SVM solves), "
            "or reduce n, T or the number of queries."
        )

    if search == "auto":
        search = "batched" if total >= _AUTO_BATCHED else "reference"
    bar = _Progress(total, progress)
    try:
        cfg, hull_checks, hull_undecided = _hull_tests(data, cand)
        cfg.norm, cfg.tol, cfg.dual_tol, cfg.solve_kwargs = norm, tol, dual_tol, solve_kwargs
        cfg.search = search
        pruned_hull = total - math.prod(len(k) for k in cfg.ok)
        bar.update(pruned_hull)
        if n_jobs == 1 or n_units < 2:
            tallies = [_SEARCHES[search](data, cfg, (), bar).run()]
        else:
            tallies = _parallel(data, cfg, n_jobs, bar)
    finally:
        bar.close()
    t = _Tally()
    for part in tallies:
        t.lots += part.lots
        t.results += part.results
        t.unsettled += part.unsettled
        t.failed += part.failed
        for name in ("examined", "pruned", "infeasible", "inaccurate", "undecided", "n_checks"):
            setattr(t, name, getattr(t, name) + getattr(part, name))
        t.n_reused += part.n_reused
        t.n_nogood += part.n_nogood
    shape = (0, *data.selection_shape)
    sel = np.asarray(t.lots, dtype=np.int64) if t.lots else np.zeros(shape, dtype=np.int64)
    fail = np.asarray(t.failed, dtype=np.int64) if t.failed else np.zeros(shape, dtype=np.int64)
    unsettled = np.asarray([r.alpha for r in t.unsettled], dtype=np.int64).reshape(
        len(t.unsettled), *data.selection_shape
    )
    if t.unsettled:
        warnings.warn(
            f"{len(t.unsettled)} examined selection(s) have an undecided LOT verdict (see "
            ".undecided_selections, and .undecided_results for the tokens that leave each "
            "undecided); they are neither listed as LOTs nor ruled out.",
            InaccurateSolutionWarning,
            stacklevel=2,
        )
    if t.inaccurate or t.failed or t.infeasible:
        # every verdict that is not a proof is reported: an inaccurate solve, a failed one (no
        # W at all: feasible problems whose W^mm is beyond double precision, ||W|| ~ 1/eps),
        # and an infeasibility that the exact check could not prove
        unproved = f", {t.infeasible} unproved infeasible" if t.infeasible else ""
        warnings.warn(
            f"{t.inaccurate} examined selection(s) had inaccurate Att-SVM solves and "
            f"{len(t.failed)} failed{unproved}; their LOT verdicts may be wrong (see .failed"
            + (", .infeasible" if t.infeasible else "")
            + ").",
            InaccurateSolutionWarning,
            stacklevel=2,
        )
    return LOTEnumeration(
        selections=sel,
        results=tuple(t.results),
        total=total,
        examined=t.examined,
        pruned=pruned_hull + t.pruned,
        pruned_hull=pruned_hull,
        pruned_infeasible=t.pruned,
        infeasible=t.infeasible,
        undecided=hull_undecided + t.undecided,
        undecided_selections=unsettled,
        undecided_results=tuple(t.unsettled),
        failed=fail,
        inaccurate=t.inaccurate,
        n_checks=hull_checks + t.n_checks,
        n_point_reused=t.n_reused,
        n_nogood_hits=t.n_nogood,
        solve_time=time.perf_counter() - start,
    )


def _parallel(data: TokenData, cfg: _Settings, n_jobs: int, bar: _Progress) -> list[_Tally]:
    """Search the subtrees below prefixes of the first queries in worker processes, in order."""
    prefixes: list[tuple[int, ...]] = [()]
    depth = 0
    while len(prefixes) < 4 * n_jobs and depth < len(cfg.ok) - 1:
        prefixes = [(*p, a) for p in prefixes for a in cfg.ok[depth]]
        depth += 1
    sizes = [math.prod(len(k) for k in cfg.ok[depth:]) for _ in prefixes]
    out: list[_Tally | None] = [None] * len(prefixes)
    # the split above follows n_jobs (so the results do not depend on the machine); no more
    # workers than subtrees or CPUs are started (n_jobs=16 started 16 for 9 subtrees)
    workers = min(n_jobs, len(prefixes), os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_run_subtree, (data, cfg, p)): j for j, p in enumerate(prefixes)}
        for fut in as_completed(futures):
            j = futures[fut]
            out[j] = fut.result()
            bar.update(sizes[j])
    return [t for t in out if t is not None]
