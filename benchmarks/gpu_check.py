# SPDX-License-Identifier: BSD-3-Clause
"""GPU check of the GD engine (issue 7) and the dense Frobenius path (issue 16), for a machine
with a CUDA GPU and CuPy.

1. Agreement: the cupy backend reproduces the numba trajectory to <= 1e-10 (relative, float64)
   over 1000 steps: W and (K, Q) parameterizations, linear and ReLU heads, causal mask, plain
   and normalized steps.
2. Throughput: B = 10^4 instances of (6, 8, 10) in one train_batch call (``--B 10000,100000``
   for several batch sizes), instance-steps per second for cupy, and numba on all CPU threads
   in the same run; then one run of (32, 64, 64) and of (8, 128, 256) (``--single``), steps
   per second for each backend, and their trajectories' largest relative difference.
3. Dense Frobenius Att-SVM on the GPU: the Gram G = (AAᵀ)∘(BBᵀ) and the working-set method
   ("every row tight", Cholesky of G_SS, drop negative multipliers, add violated rows) in
   CuPy float64, certified on the CPU by svmgeo's ``frobenius_certificate``, side by side with
   the CPU matrix-free path (``solve_frobenius_matfree``) in the same run. A size is skipped,
   with its estimate, when 3·8N² bytes (G, a copy of G_SS, its factor) exceed the free GPU
   memory. ``--fro-sizes "1000,20,2000;2000,50,1000"`` chooses the (n, T, d).

Exit status: 0 when everything agrees (or when no GPU is present: it then says so and skips),
1 on a disagreement. Record the printed figures in the docs once measured.

Run:  PYTHONPATH=. python benchmarks/gpu_check.py [--B 10000,100000] [--n-steps 200] [--single ...] [--fro-sizes ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

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
        # warm-up on the whole batch, so the kernels the timed call runs (numba: the parallel
        # lane kernel, compiled apart from the one-thread path a small batch takes) compile here
        sg.train_batch(datasets, backend=backend, **{**kw, "n_steps": 5, "record_every": 5})
        runs = sg.train_batch(datasets, backend=backend, **kw)  # type: ignore[arg-type]
        extra = f" ({numba.get_num_threads()} threads)" if backend == "numba" else ""
        print(
            f"{backend}{extra}: {B * n_steps / runs.solve_time:14,.0f} instance-steps/s (B = {B}, {n_steps} steps)"
        )


def single_runs(sizes: list[tuple[int, int, int]], n_steps: int) -> bool:
    """One run of each (n, T, d) on cupy and numba: steps per second and agreement."""
    ok = True
    for n, T, d in sizes:
        data = sg.random_data(n, T, d, seed=0)
        runs = {}
        for backend in ("cupy", "numba"):
            sg.train(data, n_steps=5, record_every=5, backend=backend)  # type: ignore[arg-type]
            runs[backend] = sg.train(
                data, n_steps=n_steps, record_every=n_steps // 4, backend=backend
            )  # type: ignore[arg-type]
        ref, gpu = runs["numba"], runs["cupy"]
        err = float(np.abs(gpu.history.W - ref.history.W).max() / np.abs(ref.history.W).max())
        same = gpu.status is ref.status and gpu.n_steps == ref.n_steps and err <= 1e-10
        ok = ok and same
        rates = "  ".join(f"{b} {r.n_steps / r.solve_time:10,.0f} steps/s" for b, r in runs.items())
        print(
            f"one run ({n}, {T}, {d}), {n_steps} steps: {rates}  max rel diff {err:.1e}  {'ok' if same else 'FAIL'}"
        )
    return ok


def dense_working_set(
    xp: Any, tri: Callable[..., Any], A: Any, B: Any, c: Any, max_rounds: int = 30
) -> tuple[Any, int, bool]:
    r"""Dual of the Frobenius Att-SVM (margin rows only) by the dense working-set method.

    .. math::

        \max_{\lambda \ge 0} c^\top\lambda - \tfrac12\lambda^\top G\lambda,\quad
        G = (AA^\top)\circ(BB^\top):\quad G_{SS}\lambda_S = c_S,\ \lambda_{\bar S} = 0,

    from S = every row; rows with a negative multiplier leave S, violated rows join it. ``xp``
    is numpy or cupy and ``tri`` the matching ``solve_triangular``. Returns (λ, rounds, settled).
    """
    G = (A @ A.T) * (B @ B.T)
    N = G.shape[0]
    S = xp.ones(N, dtype=bool)
    lam = xp.zeros(N)
    for rounds in range(1, max_rounds + 1):
        idx = xp.flatnonzero(S)
        L = xp.linalg.cholesky(G[xp.ix_(idx, idx)])
        lam = xp.zeros(N)
        lam[idx] = tri(L.T, tri(L, c[idx], lower=True), lower=False)
        del L
        margins = G @ lam
        neg = S & (lam < -1e-12 * max(1.0, float(xp.abs(lam).max())))
        viol = ~S & (margins < c - 1e-9)
        if not bool(neg.any()) and not bool(viol.any()):
            return lam, rounds, True
        S = (S & ~neg) | viol
    return lam, max_rounds, False


def frobenius_gpu(sizes: list[tuple[int, int, int]], seed: int = 0) -> bool:
    """Section 3: dense Frobenius on the GPU vs the CPU matrix-free path, both certified."""
    from svmgeo.solvers._certificates import frobenius_certificate
    from svmgeo.solvers._frobenius_matfree import solve_frobenius_matfree

    cp = get_cupy()
    from cupyx.scipy.linalg import solve_triangular

    ok = True
    for n, T, d in sizes:
        data = sg.random_data(n, T, d, seed=seed)
        cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
        need, free = 24.0 * cs.N**2, float(cp.cuda.Device(0).mem_info[0])
        if need > free:
            print(
                f"({n}, {T}, {d}) N = {cs.N}: skipped, needs {need / 2**30:.0f} GiB > free {free / 2**30:.0f} GiB"
            )
            continue
        start = time.perf_counter()
        lam_gpu, rounds, settled = dense_working_set(
            cp, solve_triangular, cp.asarray(cs.A), cp.asarray(cs.B), cp.asarray(cs.rhs)
        )
        cp.cuda.Device(0).synchronize()
        gpu_s = time.perf_counter() - start
        lam = np.maximum(cp.asnumpy(lam_gpu), 0.0)
        del lam_gpu
        cp.get_default_memory_pool().free_all_blocks()
        W = cs.adjoint(lam)
        cert = frobenius_certificate(cs, W, lam, 1e-8)
        start = time.perf_counter()
        cpu = solve_frobenius_matfree(cs)
        cpu_s = time.perf_counter() - start
        diff = abs(float(np.linalg.norm(W)) - float(cpu.objective)) / float(cpu.objective)
        good = settled and cert.passed and cpu.success and diff <= 1e-8
        ok = ok and good
        print(
            f"({n}, {T}, {d}) N = {cs.N}: GPU dense {gpu_s:8.2f} s ({rounds} rounds, gap "
            f"{cert.duality_gap:.1e}, certificate {'passed' if cert.passed else 'FAILED'}); "
            f"CPU matrix-free {cpu_s:8.2f} s ({cpu.status}); objective diff {diff:.1e}  "
            f"{'ok' if good else 'FAIL'}"
        )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--B", default="10000", help="batch sizes, ','-separated")
    parser.add_argument("--n-steps", type=int, default=200)
    parser.add_argument("--agree-steps", type=int, default=1000)
    parser.add_argument(
        "--fro-sizes",
        default="500,20,1000;1000,20,2000;2000,50,1000",
        help="(n, T, d) of the dense Frobenius section, ';'-separated",
    )
    parser.add_argument(
        "--single",
        default="32,64,64;8,128,256",
        help="(n, T, d) of the one-run section, ';'-separated ('' for none)",
    )
    args = parser.parse_args()
    sizes = [tuple(int(v) for v in s.split(",")) for s in args.fro_sizes.split(";") if s]
    singles = [tuple(int(v) for v in s.split(",")) for s in args.single.split(";") if s]
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
    for B in (int(b) for b in args.B.split(",")):
        throughput(B, args.n_steps)
    ok = single_runs(singles, args.n_steps) and ok  # type: ignore[arg-type]
    ok = frobenius_gpu(sizes) and ok  # type: ignore[arg-type]
    print("PASS" if ok else "FAIL: cupy and numba disagree, or a GPU Frobenius solve failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
