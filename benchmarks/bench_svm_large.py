# SPDX-License-Identifier: BSD-3-Clause
"""Frobenius Att-SVM at large N: the dense Gram path against the matrix-free path (issue 16).

Each solve runs in its own subprocess, which reports wall time, CPU time, its peak resident
memory (``resource.getrusage``: data, constraints and solve together), the status and
svmgeo's recomputed certificate (relative duality gap, complementarity, primal infeasibility).

* ``dense``: ``solve_frobenius(cs, geometry=RowGeometry(cs))`` — the Gram (N×N) path, its
  construction included.
* ``matfree``: ``solve_frobenius_matfree(cs)`` — products with G only.

Neither side runs the feasibility LP (``solve_svm`` adds it on the dense side only). The
sizes where both fit are printed side by side with the ratio; the dense estimate
(``dense_bytes``: 24 N² bytes) tells which path ``solve_frobenius`` picks automatically
(matrix-free above half the available memory).

Run: ``OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_svm_large.py [--seeds 0]
[--quick] [--no-huge]``. Cross-attention data ``random_data(n, T, d, seed=s)``, α = optimal
tokens. ``--quick``: the two smallest sizes; ``--no-huge`` skips (2000, 50, 1000), N = 98 000
(matrix-free only: its Gram needs 71.6 GiB); ``--crossover`` runs only the small sizes
N = 90 ... 950, to locate where the two paths' times cross.
"""

from __future__ import annotations

import argparse
import os
import time

from _isolated import answer_one, run_isolated, solve_figures

BOTH = [(100, 20, 200), (200, 20, 500), (500, 20, 1000), (1000, 20, 2000)]
#: below N = 1 900, where the crossover of the two paths' times lies (``--crossover``)
SMALL = [(10, 10, 20), (20, 10, 50), (50, 10, 100), (50, 20, 200)]
HUGE = [(2000, 50, 1000)]


def _one(n: int, T: int, d: int, seed: int, path: str) -> dict[str, object]:
    import numpy as np

    import svmgeo as sg
    from svmgeo.solvers._frobenius import solve_frobenius
    from svmgeo.solvers._frobenius_matfree import dense_bytes, solve_frobenius_matfree
    from svmgeo.solvers._geometry import RowGeometry

    data = sg.random_data(n, T, d, seed=seed)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    wall, cpu = time.perf_counter(), time.process_time()
    if path == "dense":
        res = solve_frobenius(cs, geometry=RowGeometry(cs))
    else:
        res = solve_frobenius_matfree(cs)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    c = res.certificate
    return {
        **solve_figures(cs, res, wall, cpu),
        "comp": c.complementarity if c else float("nan"),
        "support": int(np.count_nonzero(res.dual > 0)) if res.dual is not None else -1,
        "dense_gb": dense_bytes(cs) / 2**30,
    }


def _row(size: tuple[int, int, int], seed: int, path: str, r: dict[str, object]) -> str:
    if "wall" not in r:
        return f"{size!s:>16} {seed:>4} {path:>8} {r['status']}"
    return (
        f"{size!s:>16} {seed:>4} {path:>8} {r['N']:>6} {r['dense_gb']:8.2f} {r['status']:>8} "
        f"{r['wall']:9.2f} {r['cpu']:9.2f} {r['rss_mb']:8.0f} {r['objective']:16.10f} "
        f"{r['gap']:9.1e} {r['comp']:9.1e} {r['primal_inf']:9.1e} {r['support']:>7}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", default="0", help="comma-separated random_data seeds")
    parser.add_argument("--quick", action="store_true", help="the two smallest sizes only")
    parser.add_argument("--no-huge", action="store_true", help="skip N = 98 000")
    parser.add_argument(
        "--crossover", action="store_true", help="only the small sizes (N = 90 ... 950)"
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        answer_one(args.one, _one)
        return

    seeds = [int(s) for s in args.seeds.split(",")]
    both = SMALL if args.crossover else BOTH[:2] if args.quick else BOTH
    huge = [] if (args.quick or args.no_huge or args.crossover) else HUGE
    print(
        f"# cores {os.cpu_count()}, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}"
    )
    print(
        f"{'(n, T, d)':>16} {'seed':>4} {'path':>8} {'N':>6} {'dense GB':>8} {'status':>8} "
        f"{'wall s':>9} {'CPU s':>9} {'RSS MB':>8} {'objective':>16} {'rel gap':>9} "
        f"{'compl':>9} {'primal':>9} {'support':>7}"
    )
    ratios = []
    for size in both + huge:
        for seed in seeds:
            fast = run_isolated(__file__, *size, seed, "matfree")
            print(_row(size, seed, "matfree", fast), flush=True)
            if size in huge:
                continue
            dense = run_isolated(__file__, *size, seed, "dense")
            print(_row(size, seed, "dense", dense), flush=True)
            if "wall" in fast and "wall" in dense:
                diff = abs(float(fast["objective"]) - float(dense["objective"])) / float(
                    dense["objective"]
                )
                ratios.append(
                    f"{size!s:>16} seed {seed}: dense / matrix-free = "
                    f"{float(dense['wall']) / float(fast['wall']):6.1f}x (wall), "
                    f"{float(dense['cpu']) / float(fast['cpu']):6.1f}x (CPU), memory "
                    f"{float(dense['rss_mb']) / float(fast['rss_mb']):5.1f}x; "
                    f"relative objective difference {diff:.1e}"
                )
    print("\n== dense path / matrix-free path (same run) ==")
    print("\n".join(ratios))


if __name__ == "__main__":
    main()
