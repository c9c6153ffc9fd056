# SPDX-License-Identifier: BSD-3-Clause
"""Where a ``train_batch`` instance-step of (6, 8, 10) spends its time (issue 25).

The CPU time :math:`c(s)` of ``train_batch`` on B instances for s steps is split as
:math:`c(s) \\approx c_0 + B s \\tau`: the per-call overhead :math:`c_0` (setup, dispatch,
results) from a short and a long batch, the instance-step time :math:`\\tau` from the long one,
and the cost of the scalar libm ``exp`` / ``log`` the kernel calls, from a compiled loop of
each (no fastmath, a serial sum, so not vectorized, as in the kernel). One numba thread, best
of ``--reps``; instance ``b`` is ``random_data(6, 8, 10, seed=b)``.

Run:  OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/profile_gd_batch.py [--B 200]
"""

from __future__ import annotations

import argparse
import math
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numba
import numpy as np

import svmgeo as sg


@numba.njit
def _exp_loop(x: np.ndarray, reps: int) -> float:
    s = 0.0
    for r in range(reps):
        for i in range(x.size):
            s += math.exp(x[i] - 0.001 * r)
    return s


@numba.njit
def _log_loop(x: np.ndarray, reps: int) -> float:
    s = 0.0
    for r in range(reps):
        for i in range(x.size):
            s += math.log(x[i] + 0.001 * r + 1.0)
    return s


def _batch_cpu(datasets: list, steps: int, reps: int) -> float:
    """Best CPU seconds of one ``train_batch`` of ``steps`` steps."""
    kw = dict(record=("loss",), backend="numba", n_steps=steps, record_every=steps)
    best = np.inf
    for _ in range(reps):
        c = time.process_time()
        sg.train_batch(datasets, **kw)
        best = min(best, time.process_time() - c)
    return float(best)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--B", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    numba.set_num_threads(1)
    datasets = [sg.random_data(6, 8, 10, seed=b) for b in range(args.B)]
    sg.train_batch(datasets[:50], record=("loss",), backend="numba", n_steps=200)  # compile
    short, long_ = 20, 2000
    c_short = _batch_cpu(datasets, short, args.reps)
    c_long = _batch_cpu(datasets, long_, args.reps)
    tau = (c_long - c_short) / (args.B * (long_ - short))
    c0 = c_short - args.B * short * tau
    print(f"B = {args.B}: {short} steps {c_short:.3f} s CPU, {long_} steps {c_long:.3f} s CPU")
    print(f"instance-step {tau * 1e6:.3f} us; per-call overhead {c0 * 1e3:.1f} ms")
    x = -np.random.default_rng(0).random(80) * 5.0
    reps = 200_000
    for name, loop in (("exp", _exp_loop), ("log", _log_loop)):
        loop(x, 1)
        c = time.process_time()
        loop(x, reps)
        ns = (time.process_time() - c) / (reps * x.size) * 1e9
        print(f"scalar {name}: {ns:.2f} ns per call")


if __name__ == "__main__":
    main()
