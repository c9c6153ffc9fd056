# SPDX-License-Identifier: BSD-3-Clause
"""Where a small Frobenius solve spends its time beyond the floor (issue 25).

For ``random_data(n, T, d, seed)`` with the optimal tokens, CPU time (minimum over rounds) of

* ``floor``: G = (AAᵀ)∘(BBᵀ) and one Cholesky factor (``bench_svm_peers.floor``);
* ``svmgeo``: ``solve_svm(cs)`` (feasibility, exact proof, polish, certificate);
* ``kernels``: the compiled small path's one call of ``solve_svm`` made directly
  (:func:`~svmgeo.solvers._frobenius_small.tight_route`: the point, the proof's screen and the
  polish; its exact rows built first): ``svmgeo`` less this is the Python around it;

measured two ways: interleaved single calls with libsvm and L-BFGS-B between them, as
``bench_svm_peers.py`` measures (cold caches), and a warm loop of ``--loop`` calls each.

Run:  OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/profile_frobenius_small.py
      [--sizes 12,10,20 20,10,20] [--seeds 0,1,2] [--rounds 7] [--loop 300]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_svm_peers as peers

import svmgeo as sg
from svmgeo.solvers import _frobenius_small as small
from svmgeo.solvers._exact import ExactRows
from svmgeo.solvers._geometry import RowGeometry


def kernels(cs: sg.ConstraintSet) -> Callable[[sg.ConstraintSet], float]:
    """The compiled path's call on ``cs``'s rows, as ``solve_svm`` makes it."""
    arrays = small._rows(RowGeometry(cs))
    assert arrays is not None, "float64 rows expected"

    def run(cs: sg.ConstraintSet) -> float:
        out = small.tight_route(*small.route_arguments(cs, arrays, ExactRows.build(cs), 1e-8))
        assert out[0] == small.OK and out[6] and out[8][0] > 0, "the route expected to answer"
        return 0.0

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="*", default=["12,10,20", "20,10,20"])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--loop", type=int, default=300)
    args = ap.parse_args()
    print(f"load average at the start: {os.getloadavg()}")
    for seed in map(int, args.seeds.split(",")):
        for n, T, d in (tuple(map(int, s.split(","))) for s in args.sizes):
            cs = peers._instance(n, T, d, seed)
            mine = {"floor": peers.floor, "svmgeo": peers.svmgeo, "kernels": kernels(cs)}
            others = (peers.libsvm, peers.lbfgsb)
            for f in (*mine.values(), *others):
                f(cs)  # first calls: imports, compile, threadpoolctl's scan
            cold = {k: float("inf") for k in mine}
            for _ in range(args.rounds):
                for k, f in mine.items():
                    c = time.process_time()
                    f(cs)
                    cold[k] = min(cold[k], time.process_time() - c)
                for f in others:
                    f(cs)
            warm = {}
            for k, f in mine.items():
                best = float("inf")
                for _ in range(3):
                    c = time.process_time()
                    for _ in range(args.loop):
                        f(cs)
                    best = min(best, (time.process_time() - c) / args.loop)
                warm[k] = best
            line = ", ".join(
                f"{k} {cold[k] * 1e3:.3f} ms ({cold[k] / cold['floor']:.2f}x) / "
                f"{warm[k] * 1e3:.3f} ms ({warm[k] / warm['floor']:.2f}x)"
                for k in mine
            )
            print(f"(n, T, d) = {(n, T, d)}, N = {cs.N}, seed {seed}, interleaved / warm: {line}")
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
