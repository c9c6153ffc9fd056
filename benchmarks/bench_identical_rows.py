# SPDX-License-Identifier: BSD-3-Clause
"""Datasets with repeated sequences: feasibility and Att-SVM with and without merging copies.

For ``random_data(n, T, d, seed)`` with its optimal tokens, every sequence repeated ``copies``
times, wall seconds of ``sg.feasibility`` and ``sg.att_svm`` on three contenders, each call in
a fresh process (so a call that hangs is cut at ``--timeout`` and reported as such):

* ``distinct``: the data without the copies (the reference);
* ``merged``: the repeated data (svmgeo merges identical rows before its LP and solvers);
* ``unmerged``: the repeated data with the merge switched off (``identical_rows`` patched to
  find none), i.e. svmgeo before the merge.

The ratios are against ``distinct`` measured in the same run.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_identical_rows.py \
        [--cases 200,11,20,2 100,8,20,3] [--seeds 0] [--timeout 120] [--exact]
        [--modes distinct,merged,unmerged]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import svmgeo as sg


def _run(
    n: int, T: int, d: int, copies: int, seed: int, what: str, mode: str, exact: bool
) -> float:
    """One call in this process: seconds of ``what`` ("feasibility" or "att_svm")."""
    if mode == "unmerged":
        from svmgeo.solvers import _feasibility

        _feasibility.identical_rows = lambda cs: None
    data = sg.random_data(n, T, d, seed=seed)
    alpha = sg.optimal_tokens(data)
    if mode != "distinct":
        data = sg.TokenData(
            np.concatenate([data.X] * copies),
            Y=np.concatenate([data.Y] * copies),
            v=data.v,
            Z=np.concatenate([data.Z] * copies),
        )
        alpha = np.concatenate([alpha] * copies)
    sg.att_svm(sg.random_data(4, 5, 6, seed=0))  # imports and compiled kernels loaded
    call = sg.feasibility if what == "feasibility" else sg.att_svm
    start = time.perf_counter()
    res = call(data, alpha, exact=exact)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "status": str(res.status)}))
    return seconds


def _timed(args: list[str], timeout: float) -> tuple[float | None, str]:
    """(seconds, status) of one call in a fresh process; (None, "timeout") past ``timeout``."""
    command = [sys.executable, os.path.abspath(__file__), "--one", *args]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    line = json.loads(out.stdout.strip().splitlines()[-1])
    return float(line["seconds"]), str(line["status"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=["200,11,20,2", "100,8,20,3"])
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--exact", action="store_true", help="prove verdicts exactly")
    parser.add_argument("--modes", default="distinct,merged,unmerged", help="contenders")
    parser.add_argument("--one", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        n, T, d, copies, seed = map(int, args.one[:5])
        _run(n, T, d, copies, seed, args.one[5], args.one[6], args.exact)
        return 0
    print(f"load average at the start: {os.getloadavg()}; exact={args.exact}")
    for case in args.cases:
        n, T, d, copies = map(int, case.split(","))
        for seed in map(int, args.seeds.split(",")):
            for what in ("feasibility", "att_svm"):
                times = {}
                for mode in args.modes.split(","):
                    extra = ["--exact"] if args.exact else []
                    times[mode] = _timed(
                        [str(n), str(T), str(d), str(copies), str(seed), what, mode, *extra],
                        args.timeout,
                    )
                base = times["distinct"][0] if "distinct" in times else None
                cells = []
                for mode, (sec, status) in times.items():
                    if sec is None:
                        cells.append(f"{mode} > {args.timeout:.0f} s (cut)")
                    else:
                        ratio = f" ({sec / base:.2f}x)" if base else ""
                        cells.append(f"{mode} {sec:.2f} s{ratio} {status}")
                print(f"{what} ({n}, {T}, {d}) x {copies}, seed {seed}: " + "; ".join(cells))
    print(f"load average at the end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
