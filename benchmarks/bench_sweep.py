# SPDX-License-Identifier: BSD-3-Clause
"""Benchmark of the sweep runner: its cost over a plain loop, and what worker processes buy.

One paper-style trial (random data; normalized GD on W, 10000 steps by default; Att-SVM(opt); the
correlation of the two) over a grid, run

1. as a plain Python loop in this process, one BLAS/numba thread (the baseline: no table,
   no processes). The same loop with the default threads is timed once for information: on
   a busy machine multi-threaded BLAS in small solves is far slower, which is why sweep
   workers get ``threads=1``;
2. by ``sweep(workers=0)`` (this process, CSV table appended and fsync'd per trial): the
   runner's bookkeeping overhead;
3. by ``sweep(workers=W)`` (local worker processes, W = the cores available by default),
   process start-up included;
4. with ``--dask``, on a ``distributed.LocalCluster`` of W one-thread worker processes, cluster
   start-up excluded.

Every run must give the same results as the baseline (checked). Times are wall-clock, best of
``--repeat`` runs; ratios are against the baseline measured in the same run.

Run:  PYTHONPATH=. python benchmarks/bench_sweep.py [--quick] [--dask] [--workers W]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

import svmgeo as sg
from svmgeo.experiments import expand_grid, sweep
from svmgeo.experiments._sweep import _limit_threads


def trial(n: int, T: int, d: int, seed: int, steps: int) -> dict:
    data = sg.random_data(n, T, d, seed=seed)
    gd = sg.train(data, n_steps=steps)
    svm = sg.att_svm(data)
    corr = sg.correlation(gd.W, svm.W) if svm.W is not None else None
    return {"objective": svm.objective if svm.W is not None else None, "corr": corr}


def _check(rows: list[dict], baseline: list[dict]) -> None:
    for key in ("objective", "corr"):
        got = np.array([r[key] for r in rows], dtype=float)
        want = np.array([b[key] for b in baseline], dtype=float)
        np.testing.assert_allclose(got, want, rtol=1e-9, equal_nan=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a smaller grid")
    p.add_argument("--dask", action="store_true", help="also time a dask LocalCluster")
    p.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    p.add_argument("--steps", type=int, default=10000, help="GD steps per trial")
    p.add_argument("--repeat", type=int, default=3, help="best of this many runs (default 3)")
    args = p.parse_args()
    workers = args.workers or len(os.sched_getaffinity(0))
    seeds = list(range(4 if args.quick else 16))
    grid = {"n": [10], "T": [6], "d": [8, 20], "seed": seeds, "steps": [args.steps]}
    trials = expand_grid(grid)
    print(
        f"{len(trials)} trials ({args.steps} GD steps + att_svm) on random_data(n=10, T=6, d in {grid['d']})"
    )
    print(f"cores available: {len(os.sched_getaffinity(0))}, workers: {workers}")

    print(f"load average before: {os.getloadavg()[0]:.2f}")

    def best(fn):
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
        return min(times), out

    [trial(**t) for t in trials]  # warm caches (numba, imports) before timing
    t0 = time.perf_counter()
    default = [trial(**t) for t in trials]
    many = time.perf_counter() - t0
    _limit_threads(1)
    base, baseline = best(lambda: [trial(**t) for t in trials])
    _check(default, baseline)
    print(f"\n{'run':<40}{'seconds':>9}{'vs loop':>9}")
    print(f"{'plain loop, 1 thread (baseline)':<40}{base:9.2f}{1.0:9.2f}", end="")
    print(f"   ({base / len(trials) * 1e3:.1f} ms/trial)")
    print(f"{'plain loop, default threads (once)':<40}{many:9.2f}{many / base:9.2f}")

    with tempfile.TemporaryDirectory() as tmp:
        for label, kw in [
            ("sweep workers=0 (CSV, fsync)", {"workers": 0}),
            (f"sweep workers={workers} (processes)", {"workers": workers}),
        ]:
            out = Path(tmp) / f"{kw['workers']}.csv"
            sec, res = best(
                lambda out=out, kw=kw: sweep(
                    trial, grid, out=out, progress=False, resume=False, **kw
                )
            )
            _check(res.rows, baseline)
            print(f"{label:<40}{sec:9.2f}{sec / base:9.2f}")
        if args.dask:
            from distributed import LocalCluster

            with LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
            ) as cluster:
                sweep(
                    trial,
                    {"n": [5], "T": [3], "d": [4], "seed": [0], "steps": [10]},
                    progress=False,
                    scheduler=cluster.scheduler_address,
                )  # warm the workers' imports
                sec, res = best(
                    lambda: sweep(
                        trial,
                        grid,
                        out=Path(tmp) / "dask.csv",
                        progress=False,
                        resume=False,
                        scheduler=cluster.scheduler_address,
                    )
                )
                _check(res.rows, baseline)
                print(f"{f'sweep dask LocalCluster x{workers}':<40}{sec:9.2f}{sec / base:9.2f}")


if __name__ == "__main__":
    main()
