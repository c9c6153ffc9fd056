# SPDX-License-Identifier: BSD-3-Clause
"""ℓp LOT verdicts with and without the forward radius (session 61), against a Clarabel oracle.

Usage::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python examples/lp_forward_verdicts.py

CHANGELOG (session 61) and docs/analysis.md ("One optimum does not mean the solver returned
it"). Instances: ``random_data(n, T, d, seed)`` for (n, T, d) in (2, 3, 3), (3, 4, 3),
(3, 4, 4) and seeds 0-19, the selection ``default_rng(seed).integers(0, T, n)``, at each p
in 1.01, 1.05, 1.1, 1.5, 2.5, 3, 5, 7, 10, 20 (600 verdicts). Each is
``is_locally_optimal(data, alpha, norm=("lp", p))`` ("now") and the same support read
without ``slack_unproved`` (``lot_from_support`` of the support with
``slack_unproved=None``: the verdict before session 61). Oracle, per instance: Att-SVM(α)
infeasible for Clarabel is "not a LOT"; otherwise a token scoring at least as high as its
selected one is a support token when dropping its row lowers the optimal value of
``solve_naive_cvxpy`` (Clarabel, tolerances 1e-10) by more than 1e-6 relative, and not one
when by less than 1e-9; an instance with a change in between, or a Clarabel status other
than optimal or infeasible, is "unclear" and not counted as wrong. A decided verdict is
wrong when it contradicts a clear oracle. Printed per p: decided before / now, wrong before
/ now, the decided "LOT" verdicts now, unclear oracles, and the median
``extras["argmin"].radius`` of the feasible instances. Runtime about 75 s (2 shared cores).
"""

from __future__ import annotations

import dataclasses
import time
import warnings

import numpy as np

import svmgeo as sg
from svmgeo.analysis._local import lot_from_support
from svmgeo.selection import scores_full, sizes_full
from svmgeo.solvers import solve_naive_cvxpy

SHAPES = ((2, 3, 3), (3, 4, 3), (3, 4, 4))
SEEDS = range(20)
PS = (1.01, 1.05, 1.1, 1.5, 2.5, 3.0, 5.0, 7.0, 10.0, 20.0)
TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10, "max_iter": 500}


def _value(cs: sg.ConstraintSet, p: float) -> float | None:
    """The optimal ℓp norm over the rows: inf when Clarabel finds them infeasible, None when
    its status is neither optimal nor infeasible (an inaccurate solve: no oracle)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # cvxpy's "may be inaccurate"
        _, status, value, _ = solve_naive_cvxpy(cs, ("lp", p), **TIGHT)
    return float(value) if status in ("optimal", "infeasible") else None


def _oracle(cs: sg.ConstraintSet, scores: np.ndarray, alpha: np.ndarray, p: float) -> str:
    """ "lot", "not", or "unclear" (see the module docstring)."""
    full = _value(cs, p)
    if full is None:
        return "unclear"
    if not np.isfinite(full):
        return "not"
    unclear = False
    for j in range(cs.N):
        i, k, t = int(cs.seq[j]), int(cs.query[j]), int(cs.comp[j])
        if scores[i, k, t] < scores[i, k, alpha[i]]:
            continue
        dropped = _value(cs.subset(np.arange(cs.N) != j), p)
        if dropped is None:
            unclear = True
            continue
        drop = (full - dropped) / full
        if drop > 1e-6:
            return "not"
        unclear |= drop >= 1e-9
    return "unclear" if unclear else "lot"


def main() -> None:
    t0 = time.perf_counter()
    print(
        f"{'p':>5}  {'verdicts':>8}  {'decided before/now':>18}  {'wrong before/now':>16}  "
        f"{'LOT now':>7}  {'unclear':>7}  {'median radius':>13}"
    )
    for p in PS:
        count = decided_before = decided_now = wrong_before = wrong_now = unclear = lots = 0
        radii = []
        for n, T, d in SHAPES:
            for seed in SEEDS:
                data = sg.random_data(n, T, d, seed=seed)
                alpha = np.random.default_rng(seed).integers(0, T, n)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
                    now = sg.is_locally_optimal(data, alpha, norm=("lp", p))
                scores = scores_full(data)
                sup = dataclasses.replace(now.support, slack_unproved=None)
                before = lot_from_support(data, scores, sizes_full(data, None, "bench"), sup)
                cs = now.support.svm.constraints
                truth = _oracle(cs, scores, alpha, p)
                if now.support.feasible:
                    radii.append(now.support.svm.extras["argmin"].radius)
                count += 1
                lots += now.decided and bool(now)
                unclear += truth == "unclear"
                for lot, is_now in ((before, False), (now, True)):
                    wrong = lot.decided and truth != "unclear" and bool(lot) != (truth == "lot")
                    if is_now:
                        decided_now += lot.decided
                        wrong_now += wrong
                    else:
                        decided_before += lot.decided
                        wrong_before += wrong
        radius = f"{np.median(radii):.2g}" if radii else "-"
        print(
            f"{p:>5g}  {count:>8}  {f'{decided_before}/{decided_now}':>18}  "
            f"{f'{wrong_before}/{wrong_now}':>16}  {lots:>7}  {unclear:>7}  {radius:>13}"
        )
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
