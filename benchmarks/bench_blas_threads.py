# SPDX-License-Identifier: BSD-3-Clause
"""Where does one BLAS thread win? ``solve_svm`` with the library's limit against the default.

Usage::

    python benchmarks/bench_blas_threads.py            # Frobenius sizes and one nuclear size
    python benchmarks/bench_blas_threads.py --quick    # two small sizes

For each (n, T, d) it times ``solve_svm`` (best of ``--repeats``) twice in the same process:
with svmgeo's automatic limit (one BLAS thread up to a dense dimension of
``svmgeo.solvers._threads.ONE_THREAD_UP_TO``) and with the limit switched off (the BLAS
default: one thread per core, or what ``OPENBLAS_NUM_THREADS`` says). It prints the dense
dimension :math:`\\min(N, r_1 r_2)` the solver factors, both times and their ratio; the
threshold is set where the ratio crosses 1. Run it without ``OPENBLAS_NUM_THREADS``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import svmgeo as sg
from svmgeo.solvers import _threads
from svmgeo.solvers._geometry import dense_dimension


def _best(cs: sg.ConstraintSet, norm: str, repeats: int, limit: int) -> float:
    _threads.ONE_THREAD_UP_TO = limit
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        sg.solve_svm(cs, norm=norm, method="fast")  # type: ignore[arg-type]
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small sizes only")
    parser.add_argument("--repeats", type=int, default=5, help="repeats (best is kept)")
    args = parser.parse_args()
    sizes = [("fro", 20, 10, 20), ("fro", 50, 20, 40)]
    if not args.quick:
        sizes += [("fro", 100, 20, 60), ("fro", 200, 20, 100), ("fro", 400, 20, 200)]
        sizes += [("nuc", 10, 10, 200)]
    default = _threads.ONE_THREAD_UP_TO
    blas = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    print(f"# cores visible: {os.cpu_count()}, BLAS threads outside the limit: {blas or 'default'}")
    print(f"# one BLAS thread up to dense dimension {default}")
    print(
        f"{'norm':>4} {'(n, T, d)':>15} {'N':>6} {'dense dim':>9} {'1 thread [s]':>13} "
        f"{'default [s]':>12} {'default / 1':>11}"
    )
    for norm, n, T, d in sizes:
        data = sg.random_data(n, T, d, seed=0)
        cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
        one = _best(cs, norm, args.repeats, limit=10**12)
        free = _best(cs, norm, args.repeats, limit=-1)
        print(
            f"{norm:>4} {(n, T, d)!s:>15} {cs.N:>6} {dense_dimension(cs):>9} {one:>13.4f} "
            f"{free:>12.4f} {free / one:>10.2f}x"
        )
    _threads.ONE_THREAD_UP_TO = default


if __name__ == "__main__":
    main()
