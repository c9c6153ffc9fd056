# SPDX-License-Identifier: BSD-3-Clause
"""Frobenius Att-SVM: svmgeo's exact solver against the naive cvxpy model, in the same run.

Usage::

    python benchmarks/bench_svm.py            # the default sizes
    python benchmarks/bench_svm.py --quick    # small sizes only (smoke test)

For each (n, T, d) it prints the naive cvxpy time (one constraint object per token pair,
Clarabel), svmgeo's time (``solve_svm``: exact feasibility check + solve + certificate, best
of ``--repeats``), the ratio, and the relative difference of the two W. The last size runs
svmgeo alone (the naive model would take far too long).

No environment variable is needed: svmgeo runs its small dense solves with one BLAS thread
(threadpoolctl; see ``benchmarks/bench_blas_threads.py``), which keeps them fast on a busy
machine. Both sides run in the same process.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

import svmgeo as sg
from svmgeo.solvers import solve_naive_cvxpy, solve_svm


def _instance(n: int, T: int, d: int, seed: int = 0) -> sg.ConstraintSet:
    data = sg.random_data(n, T, d, seed=seed)
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


def _best_time(cs: sg.ConstraintSet, repeats: int) -> tuple[float, sg.SVMResult]:
    best, res = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        res = solve_svm(cs, method="fast")
        best = min(best, time.perf_counter() - start)
    assert res is not None
    return best, res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--repeats", type=int, default=5, help="svmgeo repeats (best is kept)")
    args = parser.parse_args()
    compared = [(20, 10, 20)] if args.quick else [(20, 10, 20), (50, 20, 40)]
    alone = [] if args.quick else [(200, 20, 1000)]
    print(f"# cores visible: {os.cpu_count()}; svmgeo limits BLAS threads itself")
    print(
        f"{'(n, T, d)':>16} {'N':>6} {'naive cvxpy [s]':>16} {'svmgeo [s]':>11} {'ratio':>8} "
        f"{'rel diff W':>11} status"
    )
    for n, T, d in compared:
        cs = _instance(n, T, d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            W_ref, status, _, t_naive = solve_naive_cvxpy(cs, solver="CLARABEL")
        t_fast, res = _best_time(cs, args.repeats)
        diff = (
            np.linalg.norm(res.W - W_ref) / np.linalg.norm(W_ref)
            if (W_ref is not None and res.W is not None)
            else float("nan")
        )
        print(
            f"{(n, T, d)!s:>16} {cs.N:>6} {t_naive:>16.3f} {t_fast:>11.4f} "
            f"{t_naive / t_fast:>7.0f}x {diff:>11.1e} {res.status} (cvxpy: {status})"
        )
    for n, T, d in alone:
        cs = _instance(n, T, d)
        t_fast, res = _best_time(cs, max(1, min(args.repeats, 3)))
        print(
            f"{(n, T, d)!s:>16} {cs.N:>6} {'-':>16} {t_fast:>11.3f} {'-':>8} {'-':>11} "
            f"{res.status} ({res.solver}, certificate "
            f"{'passed' if res.certificate and res.certificate.passed else 'FAILED'})"
        )


if __name__ == "__main__":
    main()
