# SPDX-License-Identifier: BSD-3-Clause
"""Benchmark the l_p Att-SVM and the Graph-SVM against the naive cvxpy models, side by side.

1. l_p Att-SVM, p in {1.1, 1.5, 3} (and the LPs p = 1, inf): svmgeo's ``method="fast"``
   (smooth dual by L-BFGS-B + active-set Newton polish) and ``method="cvxpy"`` (the naive
   model with Clarabel power cones + the same polish), against the naive model alone
   (``solve_naive_cvxpy(cs, ("lp", p))``, one cvxpy constraint per token pair). Times are medians over
   ``--repeats``; the ratio is naive / svmgeo; accuracy is svmgeo's certificate (largest
   residual) and the relative objective difference to the naive model.
2. Graph-SVM (Frobenius) of synthetic next-token data: ``sg.graph_svm`` against the naive
   cvxpy model of the same rows.

Run: ``OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_lp_svm.py [--repeats 3]``.
Every seed is printed.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import svmgeo as sg
from svmgeo._linalg import entrywise_norm
from svmgeo.solvers import solve_naive_cvxpy


def solve_lp(cs: sg.ConstraintSet, p: float, **kw: Any) -> sg.SVMResult:
    return sg.solve_svm(cs, norm=("lp", p), **kw)


def _timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def _worst(res: sg.SVMResult) -> float:
    c = res.certificate
    if c is None:
        return math.nan
    return max(c.primal_infeasibility, c.dual_infeasibility, c.stationarity,
               c.complementarity, c.duality_gap)  # fmt: skip


def bench_lp(repeats: int, sizes: list[tuple[int, int, int]], seeds: list[int]) -> None:
    print("l_p Att-SVM: naive cvxpy (Clarabel power cones) vs svmgeo")
    print(f"{'(n,T,d)':>12} {'seed':>4} {'p':>5} {'method':>6} {'svmgeo s':>9} {'naive s':>8} "
          f"{'ratio':>6} {'status':>8} {'worst res':>9} {'rel diff':>9}")  # fmt: skip
    for n, T, d in sizes:
        for seed in seeds:
            data = sg.random_data(n, T, d, seed=seed)
            cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
            for p in (1.0, 1.1, 1.5, 3.0, math.inf):
                t_naive, (W, _, _, _) = _timed(partial(solve_naive_cvxpy, cs, ("lp", p)), repeats)
                ref = entrywise_norm(W, p) if W is not None else math.nan
                methods = ("fast", "cvxpy") if 1 < p < math.inf else ("lp",)
                for method in methods:
                    m = "auto" if method == "lp" else method
                    t, res = _timed(partial(solve_lp, cs, p, method=m), repeats)
                    diff = abs(res.objective - ref) / ref if res.objective else math.nan
                    print(f"{(n, T, d)!s:>12} {seed:>4} {p:>5g} {method:>6} {t:>9.3f} "
                          f"{t_naive:>8.3f} {t_naive / t:>6.2f} {str(res.status)[:8]:>8} "
                          f"{_worst(res):>9.1e} {diff:>9.1e}")  # fmt: skip


def bench_graph(repeats: int, seeds: list[int], sizes: list[tuple[int, int, int, int]]) -> None:
    print("\nGraph-SVM (Frobenius): naive cvxpy (Clarabel) vs sg.graph_svm")
    print(f"{'(n,T,V,d)':>16} {'tier':>4} {'seed':>4} {'rows':>5} {'svmgeo s':>9} {'naive s':>8} "
          f"{'ratio':>6} {'status':>8} {'rel diff':>9}")  # fmt: skip
    for n, T, V, d in sizes:
        for tier in (1, 2):
            for seed in seeds:
                data = sg.random_next_token_data(n, T, V, d, tier_size=tier, seed=seed)
                t, res = _timed(partial(sg.graph_svm, data), repeats)
                cs = res.constraints
                t_naive, (_, _, value, _) = _timed(partial(solve_naive_cvxpy, cs, "fro"), repeats)
                diff = abs(res.objective - value) / value
                print(f"{(n, T, V, d)!s:>16} {tier:>4} {seed:>4} {cs.N:>5} {t:>9.3f} "
                      f"{t_naive:>8.3f} {t_naive / t:>6.2f} {str(res.status)[:8]:>8} {diff:>9.1e}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--quick", action="store_true", help="one small size, one repeat")
    args = ap.parse_args()
    sizes = [(4, 5, 6)] if args.quick else [(4, 5, 6), (8, 6, 10), (10, 8, 16)]
    repeats = 1 if args.quick else args.repeats
    bench_lp(repeats, sizes, args.seeds)
    graphs = [(100, 5, 8, 12)] if args.quick else [(100, 5, 8, 12), (200, 6, 10, 16)]
    bench_graph(repeats, args.seeds, graphs)


if __name__ == "__main__":
    main()
