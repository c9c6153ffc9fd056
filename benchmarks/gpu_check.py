# SPDX-License-Identifier: BSD-3-Clause
"""GPU check of the GD engine (issue 7), for a machine with a CUDA GPU and CuPy.

1. Agreement: the cupy backend reproduces the numba trajectory to <= 1e-10 (relative, float64)
   over 1000 steps: W and (K, Q) parameterizations, linear and ReLU heads, causal mask, plain
   and normalized steps.
2. Throughput: B = 10^4 instances of (6, 8, 10) in one train_batch call, instance-steps per
   second for cupy, and numba on all CPU threads in the same run.

Exit status: 0 when everything agrees (or when no GPU is present: it then says so and skips),
1 on a disagreement. Record the printed figures in the docs once measured.

Run:  PYTHONPATH=. python benchmarks/gpu_check.py [--B 10000] [--n-steps 200]
"""

from __future__ import annotations

import argparse
import sys

import numba
import numpy as np

import svmgeo as sg
from svmgeo.gd import cupy_available
from svmgeo.gd._backend import get_cupy

CASES = {
    "W, normalized": dict(),
    "W, plain": dict(normalized=False, step_size=0.5),
    "KQ m=4, normalized": dict(param="KQ", m=4, init=("random", 0.1), seed=0, step_size=0.02),
    "W, relu head": dict(head="relu", V=np.random.default_rng(7).normal(size=(10, 3))),
    "W, causal mask": dict(data="causal"),
}


def agreement(n_steps: int) -> bool:
    ok = True
    for name, case in CASES.items():
        kw = dict(case)
        which = kw.pop("data", "cross")
        if which == "causal":
            data = sg.random_data(4, 8, 10, seed=3, query="all", mask="causal")
        else:
            data = sg.random_data(6, 8, 10, seed=2, score_gap=0.05)
        runs = [
            sg.train(data, n_steps=n_steps, record_every=n_steps // 4, backend=b, **kw)  # type: ignore[arg-type]
            for b in ("numba", "cupy")
        ]
        ref, gpu = runs
        err = float(np.abs(gpu.history.W - ref.history.W).max() / np.abs(ref.history.W).max())
        same = gpu.status is ref.status and gpu.n_steps == ref.n_steps and err <= 1e-10
        ok = ok and same
        print(
            f"{name:22s} max rel diff {err:.1e}  status {gpu.status.value:>10s}  {'ok' if same else 'FAIL'}"
        )
    return ok


def throughput(B: int, n_steps: int) -> None:
    datasets = [sg.random_data(6, 8, 10, seed=s) for s in range(B)]
    kw = dict(n_steps=n_steps, record_every=n_steps, record=("loss",))
    for backend in ("cupy", "numba"):
        sg.train_batch(datasets[:8], backend=backend, **{**kw, "n_steps": 5, "record_every": 5})
        runs = sg.train_batch(datasets, backend=backend, **kw)  # type: ignore[arg-type]
        extra = f" ({numba.get_num_threads()} threads)" if backend == "numba" else ""
        print(
            f"{backend}{extra}: {B * n_steps / runs.seconds:14,.0f} instance-steps/s (B = {B}, {n_steps} steps)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--B", type=int, default=10_000)
    parser.add_argument("--n-steps", type=int, default=200)
    parser.add_argument("--agree-steps", type=int, default=1000)
    args = parser.parse_args()
    if not cupy_available():
        try:
            get_cupy()
        except sg.BackendError as exc:
            print(f"SKIPPED: {exc}")
        return 0
    cp = get_cupy()
    props = cp.cuda.runtime.getDeviceProperties(0)
    print(f"GPU: {props['name'].decode()}  CuPy {cp.__version__}")
    ok = agreement(args.agree_steps)
    throughput(args.B, args.n_steps)
    print("PASS" if ok else "FAIL: cupy and numba disagree")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
