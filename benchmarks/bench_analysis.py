# SPDX-License-Identifier: BSD-3-Clause
"""Benchmark: exact LOT enumeration vs the unpruned brute force.

Prints, for (n, T, d) = (4, 6, 8), (6, 8, 10) and, to show the pruning at work, the
low-dimensional (6, 4, 2) (random_data, seed 0): the size of the
selection space Tⁿ, how many selections the enumeration solved (examined) and pruned, its
time, and the time per examined selection. The brute force (feasibility + att_svm +
is_locally_optimal for every one of the Tⁿ selections, no pruning, no reuse) runs in the
same process at (4, 6, 8) and at any size whose estimated time is under --brute-limit
seconds; the ratio brute / enumeration is printed with it. Both must find the same LOTs.

Run:  PYTHONPATH=. python benchmarks/bench_analysis.py [--sizes 4,6,8 6,8,10] [--brute-limit 120]
      [--n-jobs 1]
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings

import numpy as np

import svmgeo as sg


def brute_force(data: sg.TokenData) -> tuple[list[tuple[int, ...]], float]:
    start = time.perf_counter()
    lots = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)  # counted by the enumeration
        for alpha in itertools.product(range(data.T), repeat=data.n):
            a = np.asarray(alpha)
            if sg.feasibility(data, a).feasible and sg.is_locally_optimal(data, a):
                lots.append(alpha)
    return lots, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["4,6,8", "6,8,10", "6,4,2"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--brute-limit", type=float, default=120.0)
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--n-jobs", type=int, default=1, help="worker processes of the enumeration")
    args = parser.parse_args()
    print(
        f"svmgeo {sg.__version__}; enumeration n_jobs={args.n_jobs}; brute force (serial) run "
        f"when estimated under {args.brute_limit:g} s"
    )
    header = (
        f"{'(n, T, d)':>12} {'T^n':>8} {'examined':>9} {'pruned':>8} {'LOTs':>5} "
        f"{'enum s':>8} {'ms/sel':>7} {'brute s':>8} {'brute/enum':>10}"
    )
    print(header)
    for spec in args.sizes:
        n, T, d = (int(x) for x in spec.split(","))
        data = sg.random_data(n, T, d, seed=args.seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = sg.locally_optimal_selections(
                data, max_selections=T**n, progress=args.progress, n_jobs=args.n_jobs
            )
        per = 1e3 * res.seconds / max(res.total, 1)
        est_brute = res.total * 1.5 * res.seconds / max(res.examined, 1)
        brute = ratio = "-"
        if est_brute <= args.brute_limit:
            lots, tb = brute_force(data)
            found = [tuple(int(x) for x in s) for s in res.selections]
            assert found == lots, "enumeration and brute force disagree"
            brute, ratio = f"{tb:8.2f}", f"{tb / res.seconds:10.2f}"
        print(
            f"{(n, T, d)!s:>12} {res.total:>8} {res.examined:>9} {res.pruned:>8} "
            f"{res.n_lots:>5} {res.seconds:>8.2f} {per:>7.3f} {brute:>8} {ratio:>10}"
        )
        print(f"{'':>12} {res.summary()}")
        if caught:
            print(f"{'':>12} {len(caught)} warning(s): {caught[0].message}")


if __name__ == "__main__":
    main()
