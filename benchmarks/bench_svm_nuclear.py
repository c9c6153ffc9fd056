# SPDX-License-Identifier: BSD-3-Clause
"""Att-SVM⋆ (nuclear norm): the factored path (issue 16) against the compressed SDP, same run.

Each solve runs in its own subprocess, which reports wall time, CPU time, its peak resident
memory (``resource.getrusage``, the whole process: data, constraints, solve) and svmgeo's
recomputed certificate (relative duality gap |‖W‖_* − cᵀλ| / ‖W‖_*, dual infeasibility
‖Σλ_j a_j b_jᵀ‖₂ − 1, primal infeasibility).

* ``factored``: ``solve_nuclear(cs)`` (solver="auto": the factored path, SDP fallback).
* ``sdp``: ``solve_nuclear(cs, solver="scs")``, what "auto" ran before issue 16 (SCS, then
  Clarabel only when SCS fails; SCS certified at these sizes).

Sizes: (10, 10, 200), (25, 10, 200), (50, 10, 200) side by side (the SDP at (50, 10, 200) takes
~7 min on 2 cores; ``--quick`` skips that baseline), then (50, 10, 1000) and (100, 20, 1000)
factored only (the SDP took 824 s, and failed after 9.4 GB, there: issue 16).

Run: ``python benchmarks/bench_svm_nuclear.py [--seeds 0] [--quick]``. Cross-attention data
``random_data(n, T, d, seed=s)``, α = optimal tokens. No environment variable is needed: svmgeo
runs small dense solves with one BLAS thread (threadpoolctl) itself.
"""

from __future__ import annotations

import argparse
import os
import time

from _isolated import answer_one, peak_rss_mb, run_isolated

COMPARED = [(10, 10, 200), (25, 10, 200), (50, 10, 200)]
ALONE = [(50, 10, 1000), (100, 20, 1000)]


def _one(n: int, T: int, d: int, seed: int, path: str) -> dict[str, object]:
    """Solve one instance in this process and return its figures."""
    import numpy as np

    import svmgeo as sg
    from svmgeo.solvers._nuclear import solve_nuclear

    data = sg.random_data(n, T, d, seed=seed)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    wall, cpu = time.perf_counter(), time.process_time()
    res = solve_nuclear(cs) if path == "factored" else solve_nuclear(cs, solver="scs")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    c = res.certificate
    return {
        "N": cs.N,
        "solver": res.solver,
        "status": res.status.value,
        "wall": wall,
        "cpu": cpu,
        "rss_mb": peak_rss_mb(),
        "objective": res.objective,
        "gap": c.duality_gap if c else float("nan"),
        "dual_inf": c.dual_infeasibility if c else float("nan"),
        "primal_inf": c.primal_infeasibility if c else float("nan"),
        "rank": int(np.linalg.matrix_rank(res.W, tol=1e-9 * np.abs(res.W).max()))
        if res.W is not None
        else -1,
    }


def _row(size: tuple[int, int, int], seed: int, path: str, r: dict[str, object]) -> str:
    if "wall" not in r:
        return f"{size!s:>15} {seed:>4} {path:>9} {r['status']}"
    return (
        f"{size!s:>15} {seed:>4} {path:>9} {r['N']:>5} {r['status']:>10} {r['wall']:9.2f} "
        f"{r['cpu']:9.2f} {r['rss_mb']:8.0f} {r['objective']:16.10f} {r['gap']:9.1e} "
        f"{r['dual_inf']:9.1e} {r['primal_inf']:9.1e} {r['rank']:>4}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", default="0", help="comma-separated random_data seeds")
    parser.add_argument("--quick", action="store_true", help="no SDP baseline at (50, 10, 200)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        answer_one(args.one, _one)
        return

    seeds = [int(s) for s in args.seeds.split(",")]
    print(
        f"# cores {os.cpu_count()}, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}"
    )
    print(
        f"{'(n, T, d)':>15} {'seed':>4} {'path':>9} {'N':>5} {'status':>10} {'wall s':>9} "
        f"{'CPU s':>9} {'RSS MB':>8} {'objective':>16} {'rel gap':>9} {'|Λ|₂-1':>9} "
        f"{'primal':>9} {'rank':>4}"
    )
    ratios = []
    for size in COMPARED + ALONE:
        for seed in seeds:
            fast = run_isolated(__file__, *size, seed, "factored")
            print(_row(size, seed, "factored", fast), flush=True)
            if size not in COMPARED or (args.quick and size == (50, 10, 200)):
                continue
            sdp = run_isolated(__file__, *size, seed, "sdp")
            print(_row(size, seed, "sdp", sdp), flush=True)
            if "wall" in fast and "wall" in sdp:
                diff = abs(float(fast["objective"]) - float(sdp["objective"])) / float(
                    sdp["objective"]
                )
                ratios.append(
                    f"{size!s:>15} seed {seed}: factored {float(sdp['wall']) / float(fast['wall']):6.1f}x "
                    f"faster (wall), {float(sdp['cpu']) / float(fast['cpu']):6.1f}x (CPU); "
                    f"relative objective difference {diff:.1e}"
                )
    print("\n== speed-up over the SDP path (same run) ==")
    print("\n".join(ratios))


if __name__ == "__main__":
    main()
