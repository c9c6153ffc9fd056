# SPDX-License-Identifier: BSD-3-Clause
"""Benchmark: LOT enumeration, batched search against the reference search, in the same run.

For each size (n, T, d) and seed (random_data(n, T, d, seed=s)) the enumeration runs twice,
back to back in this process: ``search="batched"`` (the default: compiled, batched Att-SVM
solves of complete selections) and ``search="reference"`` (one ``solve_svm`` per complete
selection, the algorithm before the batched search). Both must find the same LOTs, the same
results and the same counts (total, examined, pruned, hull / infeasible split, inaccurate,
failed); the script stops with an error otherwise. Printed: selections per second
(``total / seconds``) of each, and the ratio. The numba kernels are compiled (or loaded from
numba's cache) by a warm-up enumeration first; its time is printed separately.

Defaults: (4, 8, 8) and (6, 8, 10), where d >= max(T - 1, n) and every selection is feasible
(Theorem 1), and the low-dimensional (6, 4, 2), where most are pruned as infeasible.

Run:  PYTHONPATH=. python benchmarks/bench_analysis.py [--sizes 4,8,8 6,8,10 6,4,2]
      [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import svmgeo as sg

COUNTS = ("total", "examined", "pruned", "pruned_hull", "pruned_infeasible", "inaccurate")


def enumerate_lots(data: sg.TokenData, search: str) -> sg.LOTEnumeration:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)  # counted in .inaccurate
        return sg.locally_optimal_selections(
            data,
            max_selections=10**7,
            search=search,  # type: ignore[arg-type]
        )


def same_answer(fast: sg.LOTEnumeration, ref: sg.LOTEnumeration) -> None:
    np.testing.assert_array_equal(fast.selections, ref.selections)
    np.testing.assert_array_equal(fast.failed, ref.failed)
    for name in COUNTS:
        if getattr(fast, name) != getattr(ref, name):
            raise AssertionError(f"{name}: batched {getattr(fast, name)} != {getattr(ref, name)}")
    for a, b in zip(fast.results, ref.results, strict=True):
        assert a.locally_optimal == b.locally_optimal
        np.testing.assert_array_equal(np.asarray(a.support), np.asarray(b.support))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["4,8,8", "6,8,10", "6,4,2"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args()
    start = time.perf_counter()
    enumerate_lots(sg.random_data(4, 3, 3, seed=0), "batched")  # both kernels
    print(
        f"svmgeo {sg.__version__}; warm-up (numba compile or cache load): "
        f"{time.perf_counter() - start:.2f} s"
    )
    print(
        f"{'(n, T, d)':>12} {'seed':>4} {'total':>7} {'examined':>8} {'pruned':>7} {'LOTs':>4} "
        f"{'batched s':>9} {'sel/s':>8} {'reference s':>11} {'sel/s':>7} {'speedup':>7}"
    )
    for spec in args.sizes:
        n, T, d = (int(x) for x in spec.split(","))
        for seed in args.seeds:
            data = sg.random_data(n, T, d, seed=seed)
            fast = enumerate_lots(data, "batched")
            ref = enumerate_lots(data, "reference")
            same_answer(fast, ref)
            print(
                f"{(n, T, d)!s:>12} {seed:>4} {fast.total:>7} {fast.examined:>8} "
                f"{fast.pruned:>7} {fast.n_lots:>4} {fast.solve_time:>9.2f} "
                f"{fast.total / fast.solve_time:>8.0f} {ref.solve_time:>11.2f} "
                f"{ref.total / ref.solve_time:>7.0f} {ref.solve_time / fast.solve_time:>7.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
