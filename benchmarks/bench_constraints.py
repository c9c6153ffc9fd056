# SPDX-License-Identifier: BSD-3-Clause
"""Benchmark of building a set of Att-SVM rows (sweeps and LOT searches build one per trial).

For ``random_data(n, T, d)`` seeds 0-4 and its optimal tokens: ``att_svm_constraints`` (the
selection checked, the rows' indices and kinds checked, A and B formed, the set made
read-only) beside its floor measured in the same run, the same rows formed by plain numpy
with no check (``np.nonzero`` of the competing tokens, then ``X[i, alpha] - X[i, t]`` and
``Z[i, k]``). Best of ``--repeats`` rounds of ``--number`` calls each, per call.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_constraints.py [--repeats 5] [--number 2000]
"""

from __future__ import annotations

import argparse
import os
import sys
import timeit

import numpy as np

import svmgeo as sg

SHAPES = ((12, 10, 20), (20, 10, 20), (50, 20, 40))
SEEDS = range(5)


def floor(data: sg.TokenData, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows with nothing checked: what any builder must at least do."""
    a = alpha.reshape(data.n, data.K)
    competing = data.visible.copy()
    np.put_along_axis(competing, a[:, :, None], False, axis=2)
    i, k, t = np.nonzero(competing)
    return data.X[i, a[i, k]] - data.X[i, t], data.queries[i, k]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| (n, T, d) | seed | N | att_svm_constraints (us) | floor (us) | ratio |")
    print("|---|---|---|---|---|---|")
    for shape in SHAPES:
        for seed in SEEDS:
            data = sg.random_data(*shape, seed=seed)
            alpha = sg.optimal_tokens(data)
            N = sg.att_svm_constraints(data, alpha).N
            times = {}
            for label, call in (("svmgeo", sg.att_svm_constraints), ("floor", floor)):
                runs = timeit.repeat(
                    lambda c=call, x=data, a=alpha: c(x, a), number=args.number, repeat=args.repeats
                )
                times[label] = min(runs) / args.number * 1e6
            print(f"| {shape} | {seed} | {N} | {times['svmgeo']:.1f} | {times['floor']:.1f} | "
                  f"{times['svmgeo'] / times['floor']:.2f}x |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
