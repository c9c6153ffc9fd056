# SPDX-License-Identifier: BSD-3-Clause
"""What a small Frobenius solve pays once per constraint set (issue 25, "--fresh").

``bench_svm_peers.py`` reuses one ``ConstraintSet``; a sweep builds one per problem, and its
first ``solve_svm`` computes what later calls find cached on the set. For
``random_data(n, T, d, seed)`` with the optimal tokens, this prints (median and minimum over
``--rounds`` fresh sets, microseconds, each step timed on a new set after the steps before it):

* the per-set caches, in the order a solve computes them: query groups, compressed width
  (and, for comparison, ``np.unique(Q, axis=0)``, the count it used before), row norms,
  largest entries, margin rows, exact rows of the proof;
* ``solve_svm`` on a fresh set, on a set whose caches were computed first, and on a set
  already solved once (what ``bench_svm_peers.py`` times).

Run:  OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/profile_frobenius_first_call.py
      [--sizes 12,10,20 20,10,20] [--seed 2] [--rounds 300]
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import svmgeo as sg
from svmgeo.solvers import solve_svm
from svmgeo.solvers._exact import ExactRows
from svmgeo.solvers._geometry import compressed_width

CACHES: dict[str, Callable[[sg.ConstraintSet], Any]] = {
    "query groups": lambda cs: cs.query_groups,
    "compressed width": compressed_width,
    "np.unique(Q, axis=0) (before)": lambda cs: np.unique(cs.query_groups[0], axis=0),
    "row norms": lambda cs: cs._row_norms,
    "largest entries": lambda cs: cs._largest_entries,
    "margin rows": lambda cs: cs._margin_rows,
    "exact rows": ExactRows.build,
}


def _timed(make: Callable[[], sg.ConstraintSet], before: list, step: Callable, rounds: int):
    times = []
    for _ in range(rounds):
        cs = make()
        for f in before:
            f(cs)
        t0 = time.perf_counter()
        step(cs)
        times.append(time.perf_counter() - t0)
    return np.median(times) * 1e6, min(times) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="*", default=["12,10,20", "20,10,20"])
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=300)
    args = ap.parse_args()
    print(f"# load average at the start: {os.getloadavg()}")
    for size in args.sizes:
        n, T, d = map(int, size.split(","))
        data = sg.random_data(n, T, d, seed=args.seed)
        alpha = sg.optimal_tokens(data)

        make = functools.partial(sg.att_svm_constraints, data, alpha)
        for _ in range(50):  # warm: imports and compiles
            solve_svm(make())
        cs0 = make()
        print(f"\n(n, T, d) = {(n, T, d)}, N = {cs0.N}, seed {args.seed}: us, median (min)")
        done: list = []
        for name, f in CACHES.items():
            med, lo = _timed(make, done, f, args.rounds)
            print(f"  {name:>32} {med:8.1f} ({lo:.1f})")
            if "before" not in name:
                done.append(f)
        solved = make()
        solve_svm(solved)
        for name, prep in (("fresh set", []), ("caches computed first", done)):
            med, lo = _timed(make, prep, solve_svm, args.rounds)
            print(f"  {'solve_svm, ' + name:>32} {med:8.1f} ({lo:.1f})")
        med, lo = _timed(functools.partial(lambda s: s, solved), [], solve_svm, args.rounds)
        print(f"  {'solve_svm, set solved before':>32} {med:8.1f} ({lo:.1f})")


if __name__ == "__main__":
    main()
