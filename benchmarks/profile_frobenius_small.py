# SPDX-License-Identifier: BSD-3-Clause
"""Where a small Frobenius solve spends its time beyond the floor (issue 25).

For ``random_data(n, T, d, seed)`` with the optimal tokens, CPU time (minimum over rounds) of

* ``floor``: G = (AAᵀ)∘(BBᵀ) and one Cholesky factor (``bench_svm_peers.floor``);
* ``svmgeo``: ``solve_svm(cs)`` (feasibility, exact proof, polish, certificate);
* ``kernels``: the compiled small path's one call of ``solve_svm`` made directly
  (:func:`~svmgeo.solvers._frobenius_small.tight_route`: the point, the proof's screen and the
  polish; its exact rows built first): ``svmgeo`` less this is the Python around it;

measured two ways: single calls, each right after a call of libsvm and one of L-BFGS-B (cold
caches, as ``bench_svm_peers.py`` times svmgeo; there the floor runs right after svmgeo, on the
rows svmgeo has just read), and a warm loop of ``--loop`` calls each.

With ``--phases``, warm loops instead (best of 7) of the call's steps, each run on its own:
the Gram, its copy and LAPACK factor, the point (``feasible_point``: Gram and factor
included), the exact proof's screen, the polish (``polish_and_certify``: its active-set
rounds and certificate), and the Python of ``solve_svm`` alone (the call replaced by one that
returns its answer, computed once).

Run:  OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/profile_frobenius_small.py
      [--sizes 12,10,20 20,10,20] [--seeds 0,1,2] [--rounds 7] [--loop 300] [--phases]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import timeit
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_svm_peers as peers

import svmgeo as sg
from svmgeo.solvers import _frobenius_small as small
from svmgeo.solvers._exact import ExactRows


def kernels(cs: sg.ConstraintSet) -> Callable[[sg.ConstraintSet], float]:
    """The compiled path's call on ``cs``'s rows, as ``solve_svm`` makes it."""
    arrays = small._rows(cs)
    assert arrays is not None, "float64 rows expected"

    def run(cs: sg.ConstraintSet) -> float:
        out = small.tight_route(*small.route_arguments(cs, arrays, ExactRows.build(cs), 1e-8))
        assert out[0] == small.OK and out[6] and out[8][0] > 0, "the route expected to answer"
        return 0.0

    return run


def phases(cs: sg.ConstraintSet, loop: int) -> dict[str, float]:
    """Warm seconds per call (best of 7 loops of ``loop`` calls) of the compiled call's steps
    and of ``solve_svm``'s Python alone (see the module docstring)."""
    from svmgeo import _active_set

    arrays = small._rows(cs)
    assert arrays is not None, "float64 rows expected"
    A, Q, inv, grouped = arrays
    rows = ExactRows.build(cs)
    args = small.route_arguments(cs, arrays, rows, 1e-8)
    answer = small.tight_route(*args)
    G, lam0, point = answer[1], answer[3], answer[4]
    na, nb = cs._row_norms

    def factor() -> None:
        _active_set.lapack_factor(G.copy(), cs.N)

    steps: dict[str, Callable[[], object]] = {
        "call": lambda: small.tight_route(*args),
        "gram": lambda: small._gram(A, Q, inv),
        "copy+factor": factor,
        "point": lambda: small.feasible_point(
            A, Q, inv, grouped, cs._margin_rows, cs.rhs, na, nb, small._ULPS, small._DECADES
        ),
        "screen": lambda: small.margins_beyond_rounding(
            point, rows.P, rows.Q, rows.pref, rows.comp, rows.query
        ),
        "polish": lambda: small.polish_and_certify(
            A, Q, inv, grouped, cs._margin_rows, cs.rhs, G, lam0, 1e-8, small._ULPS
        ),
        "solve_svm": lambda: sg.solve_svm(cs),
    }
    out = {k: min(timeit.repeat(f, number=loop, repeat=7)) / loop for k, f in steps.items()}
    real = small.tight_route
    small.tight_route = lambda *a: answer  # the Python around the call, the call answered
    try:
        out["python"] = min(timeit.repeat(lambda: sg.solve_svm(cs), number=loop, repeat=7)) / loop
    finally:
        small.tight_route = real
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="*", default=["12,10,20", "20,10,20"])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--loop", type=int, default=300)
    ap.add_argument("--phases", action="store_true", help="the call's steps, warm")
    args = ap.parse_args()
    print(f"load average at the start: {os.getloadavg()}")
    if args.phases:
        for seed in map(int, args.seeds.split(",")):
            for n, T, d in (tuple(map(int, s.split(","))) for s in args.sizes):
                cs = peers._instance(n, T, d, seed)
                peers.svmgeo(cs)  # compile / load the kernels
                line = ", ".join(f"{k} {v * 1e6:.1f}" for k, v in phases(cs, args.loop).items())
                print(f"(n, T, d) = {(n, T, d)}, N = {cs.N}, seed {seed}, us warm: {line}")
        print(f"load average at the end: {os.getloadavg()}")
        return
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
                    for g in others:  # each contender after the peers, as svmgeo is there
                        g(cs)
                    c = time.process_time()
                    f(cs)
                    cold[k] = min(cold[k], time.process_time() - c)
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
