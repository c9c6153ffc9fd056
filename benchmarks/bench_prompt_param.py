# SPDX-License-Identifier: BSD-3-Clause
"""The prompt vector's native path against W with every query e₁, in the same run.

``train(data, param="p")`` holds p as a d × 1 matrix with the scalar query 1: O(d) work per
key. Training W on the same tokens with every query :math:`z_i = e_1` gives the same iterates
(W's first column is p; bit for bit with numba, tested in ``tests/gd``) at O(d²) per key. This
script times both, interleaved, ``--repeats`` times each, on ``random_data(6, 8, d, seed)``
for each ``d`` of ``--dims``, and prints the best wall and CPU times and their ratios, with
the load average. It also checks that the two runs end on the same p (W's first column).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_prompt_param.py [--dims 10,100] [--repeats 3]
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


def _timed(run: Callable[[], sg.GDRun]) -> tuple[float, float, sg.GDRun]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="10,100", help="comma-separated d")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"# {args.steps} normalized GD steps, numba, load average {os.getloadavg()[0]:.2f}")
    print(
        f"{'d':>5} {'p: wall / CPU [s]':>22} {'W, z = e1: wall / CPU [s]':>28} {'ratio wall / CPU':>18}"
    )
    for d in map(int, args.dims.split(",")):
        data = sg.random_data(6, 8, d, seed=args.seed)
        e1 = np.zeros((data.n, d))
        e1[:, 0] = 1.0
        on_e1 = sg.TokenData(data.X, Z=e1, Y=data.Y, v=data.v)
        kw: dict[str, Any] = {"n_steps": args.steps, "record": ("loss",), "backend": "numba"}
        runs = {
            "p": functools.partial(sg.train, data, param="p", **kw),
            "W": functools.partial(sg.train, on_e1, param="W", **kw),
        }
        for run in runs.values():  # compile or load the kernels first
            run()
        best = {name: [np.inf, np.inf] for name in runs}
        ends = {}
        for _ in range(args.repeats):
            for name, run in runs.items():
                wall, cpu, result = _timed(run)
                best[name] = [min(best[name][0], wall), min(best[name][1], cpu)]
                ends[name] = result
        p, W = np.asarray(ends["p"].p), np.asarray(ends["W"].W)
        diff = float(np.max(np.abs(W[:, 0] - p)) / np.max(np.abs(p)))
        (pw, pc), (ww, wc) = best["p"], best["W"]
        print(
            f"{d:>5} {pw:>10.3f} / {pc:<9.3f} {ww:>14.3f} / {wc:<11.3f} "
            f"{ww / pw:>7.2f}x / {wc / pc:.2f}x   (p vs W[:, 0]: {diff:.1e})"
        )


if __name__ == "__main__":
    main()
