# SPDX-License-Identifier: BSD-3-Clause
"""Benchmark of the GD engine (issue 7): steps per second, ratios measured in the same run.

1. One (n, T, d) = (6, 8, 10) instance, normalized GD on W: numba against a plain PyTorch CPU
   loop in the style of the paper's experiment code (nn.Module, autograd, SGD on the
   normalized gradient, float64, one thread). Without torch the numpy backend is the baseline.
   The head options on the same instance (``param="p"``, ``train_head=True``, both) print
   their cost per step relative to the plain W run.
2. B = 1000 such instances x 2000 steps in one ``train_batch`` call: instance-steps per second
   for numba with 1 and 2 threads (and cupy when a CUDA GPU is present).

Run:  PYTHONPATH=. python benchmarks/bench_gd.py [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import time

import numba
import numpy as np

import svmgeo as sg
from svmgeo.gd import cupy_available


def _instance(seed: int = 0) -> sg.TokenData:
    return sg.random_data(6, 8, 10, seed=seed)


def torch_steps_per_second(data: sg.TokenData, n_steps: int) -> float:
    """The baseline: a straightforward PyTorch loop (autograd, normalized SGD step)."""
    import torch

    torch.set_num_threads(1)
    X = torch.tensor(np.asarray(data.X), dtype=torch.float64)
    Z = torch.tensor(np.asarray(data.Z), dtype=torch.float64)
    Y = torch.tensor(np.asarray(data.Y), dtype=torch.float64)
    v = torch.tensor(np.asarray(data.v), dtype=torch.float64)

    class Attention(torch.nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.W = torch.nn.Parameter(torch.zeros(d, d, dtype=torch.float64))

        def forward(self, X: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
            s = torch.softmax(torch.einsum("ntd,de,ne->nt", X, self.W, Z), dim=1)
            return torch.einsum("nt,ntd->nd", s, X) @ v

    model = Attention(data.d)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step() -> None:
        opt.zero_grad()
        loss = torch.nn.functional.softplus(-Y * model(X, Z)).mean()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.grad /= p.grad.norm()
        opt.step()

    for _ in range(50):
        step()
    start = time.perf_counter()
    for _ in range(n_steps):
        step()
    return n_steps / (time.perf_counter() - start)


def svmgeo_steps_per_second(
    data: sg.TokenData, n_steps: int, backend: str, **options: object
) -> float:
    kw = dict(n_steps=n_steps, record_every=n_steps, record=("loss",), backend=backend, **options)
    sg.train(data, **{**kw, "n_steps": 10, "record_every": 10})  # compile / warm up
    best = 0.0
    for _ in range(3):
        run = sg.train(data, **kw)  # type: ignore[arg-type]
        best = max(best, n_steps / run.solve_time)
    return best


def batch_instance_steps_per_second(B: int, n_steps: int, backend: str) -> tuple[float, float]:
    """Instance-steps per second, and the CPU seconds used per wall second (how many cores
    the run really got: on a machine busy with other jobs, fewer than the threads asked)."""
    datasets = [_instance(seed) for seed in range(B)]
    kw = dict(n_steps=n_steps, record_every=n_steps, record=("loss",), backend=backend)
    sg.train_batch(datasets[:2], **{**kw, "n_steps": 10, "record_every": 10})  # warm up
    cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    runs = sg.train_batch(datasets, **kw)  # type: ignore[arg-type]
    cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu
    return B * n_steps / runs.solve_time, cpu / runs.solve_time


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer steps and instances")
    args = parser.parse_args()
    n_single = 2000 if args.quick else 20000
    B, n_batch = (200, 500) if args.quick else (1000, 2000)
    data = _instance()

    print("== one instance (6, 8, 10), normalized GD on W, float64 ==")
    numba.set_num_threads(1)
    fast = svmgeo_steps_per_second(data, n_single, "numba")
    print(f"svmgeo numba : {fast:12,.0f} steps/s")
    for label, options in (
        ('param="p"', {"param": "p"}),
        ("train_head=True", {"train_head": True}),
        ('param="p", train_head', {"param": "p", "train_head": True}),
    ):
        rate = svmgeo_steps_per_second(data, n_single, "numba", **options)
        print(f"  {label:21}: {rate:12,.0f} steps/s   cost per step / W = {fast / rate:5.2f}")
    ref = svmgeo_steps_per_second(data, max(n_single // 10, 200), "numpy")
    print(f"svmgeo numpy : {ref:12,.0f} steps/s   numba/numpy = {fast / ref:6.1f}x")
    if importlib.util.find_spec("torch") is not None:
        base = torch_steps_per_second(data, max(n_single // 10, 500))
        print(
            f"torch loop   : {base:12,.0f} steps/s   numba/torch = {fast / base:6.1f}x (target >= 50x)"
        )
    else:
        print("torch is not installed: the baseline is the numpy backend above")

    print(f"== batch: B = {B} instances x {n_batch} steps (train_batch) ==")
    rates = {}
    for threads in (1, 2):
        if threads > numba.config.NUMBA_NUM_THREADS:
            print(
                f"numba, {threads} threads: not available (NUMBA_NUM_THREADS = {numba.config.NUMBA_NUM_THREADS})"
            )
            continue
        numba.set_num_threads(threads)
        rates[threads], cores = batch_instance_steps_per_second(B, n_batch, "numba")
        print(
            f"numba, {threads} thread(s): {rates[threads]:12,.0f} instance-steps/s "
            f"(CPU busy {cores:.2f} cores on average)"
        )
    if 1 in rates and 2 in rates:
        print(
            f"2 threads / 1 thread = {rates[2] / rates[1]:.2f}x (near-linear is 2x when the run "
            f"gets 2 cores; os.cpu_count() = {os.cpu_count()})"
        )
    if cupy_available():
        rate, _ = batch_instance_steps_per_second(B, n_batch, "cupy")
        print(f"cupy          : {rate:12,.0f} instance-steps/s")
    else:
        print("cupy: no CUDA GPU here (see benchmarks/gpu_check.py)")


if __name__ == "__main__":
    main()
