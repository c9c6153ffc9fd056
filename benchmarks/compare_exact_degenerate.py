# SPDX-License-Identifier: BSD-3-Clause
"""Degenerate Att-SVM instances whose exact proof needs the repair step: verdicts and times.

Usage::

    # once per checkout (each in its own process, that checkout first on the path)
    PYTHONPATH=<checkout> OPENBLAS_NUM_THREADS=1 python benchmarks/compare_exact_degenerate.py \\
        --out before.pkl
    python benchmarks/compare_exact_degenerate.py --compare before.pkl after.pkl

The instances are ``random_data(n, T, d, seed)`` at the optimal tokens with the selected token of
the first ``k`` sequences replaced by the float mean of that sequence's other tokens: the
selected token lies (up to rounding) inside the hull of the others, so the float check and the
exact proof disagree at round-off level and ``prove_verdict`` falls through to its exact repair
(:math:`G_{SS}\\mu = c_S - m_S` solved in rational arithmetic and every margin evaluated exactly).
Sizes (n, T, d) in ``--sizes`` (default 5,6,8 12,10,20 20,10,20 30,10,20), seeds 0-2, k = 1, 2.
``--out`` records, per instance, the status, proof, message, point and Farkas vector of
``check_feasibility(cs)`` and its CPU time; ``--compare`` prints every difference (verdict
fields must be equal, arrays bit for bit) and the per-instance CPU-time ratios.
"""

from __future__ import annotations

import argparse
import pickle
import time
import warnings

import numpy as np

import svmgeo as sg
from svmgeo.solvers import check_feasibility

SIZES = ["5,6,8", "12,10,20", "20,10,20", "30,10,20"]


def _instance(n: int, T: int, d: int, seed: int, k: int) -> sg.ConstraintSet:
    data = sg.random_data(n, T, d, seed=seed)
    opt = np.asarray(sg.optimal_tokens(data))
    X = np.array(data.X)
    for i in range(k):
        others = [t for t in range(T) if t != opt[i]]
        X[i, opt[i]] = X[i, others].mean(axis=0)
    return sg.att_svm_constraints(sg.TokenData(X, Y=data.Y, v=data.v, Z=data.Z), opt)


def _record(sizes: list[str]) -> dict[tuple[int, ...], dict[str, object]]:
    out: dict[tuple[int, ...], dict[str, object]] = {}
    for size in sizes:
        n, T, d = (int(x) for x in size.split(","))
        for seed in range(3):
            for k in (1, 2):
                cs = _instance(n, T, d, seed, k)
                start = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    f = check_feasibility(cs)
                seconds = time.process_time() - start
                out[(n, T, d, seed, k)] = {
                    "status": str(f.status),
                    "proof": f.proof,
                    "message": f.message,
                    "point": None if f.point is None else np.asarray(f.point),
                    "farkas": None if f.farkas is None else np.asarray(f.farkas),
                    "cpu": seconds,
                }
                print((n, T, d, seed, k), f.status, f.proof, f"{seconds:.3f} s CPU", flush=True)
    return out


def _same(x: object, y: object) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and np.array_equal(x, y)
    return x == y


def _compare(before: str, after: str) -> None:
    with open(before, "rb") as fa, open(after, "rb") as fb:
        a, b = pickle.load(fa), pickle.load(fb)
    differences = 0
    for key in a:
        for field in ("status", "proof", "message", "point", "farkas"):
            if not _same(a[key][field], b[key][field]):
                differences += 1
                print("differs:", key, field)
        print(
            key,
            f"before {a[key]['cpu']:.3f} s, after {b[key]['cpu']:.3f} s,",
            f"ratio {a[key]['cpu'] / b[key]['cpu']:.1f}x",
        )
    print(f"{len(a)} instances, {differences} differences")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=SIZES)
    parser.add_argument("--out")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        _compare(*args.compare)
    else:
        result = _record(args.sizes)
        if args.out:
            with open(args.out, "wb") as f:
                pickle.dump(result, f)


if __name__ == "__main__":
    main()
