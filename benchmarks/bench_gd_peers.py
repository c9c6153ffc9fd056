# SPDX-License-Identifier: BSD-3-Clause
"""Benchmark of the GD engine (issues 7, 25): steps per second, ratios measured in the same run.

Normalized GD on W (logistic loss, linear head, log-domain gradient, float64, zero start) on
``random_data(n, T, d, seed)`` instances:

1. one run of (6, 8, 10), (32, 64, 64) and (8, 128, 256): svmgeo's numba kernel against the
   peers installed here -- JAX (x64, jit) with the *same* stable log-domain softmax gradient and
   normalized step (:func:`jax_step`, not autodiff; its trajectory is checked against svmgeo's to
   1e-12 in this run) and a plain PyTorch autograd loop -- and against a float64 one-thread
   1000 x 1000 matmul measured in the same run (share of its flop rate, the kernel's own flop
   count :func:`flops_per_step`);
2. ``train_batch`` of B (6, 8, 10) instances: instance-steps per second with 1 and 2 numba
   threads, against JAX jit + vmap of the same step.

Every rate is given as wall time and as CPU time (``time.process_time`` of the process that
ran it), since the machine may be shared: the CPU-time rate is the rate per core. With
``--baseline DIR`` (a checkout of an older svmgeo, e.g. ``git worktree add /tmp/base main``)
the svmgeo cases run alternately in child processes on DIR and on this checkout, round by
round, so "before" and "after" see the same load. Seeds: instance ``b`` of a batch is seed
``b``; single runs use seed 0.

Run:  OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_gd_peers.py [--quick]
      [--baseline DIR] [--rounds R]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the matmul reference: one thread

import numpy as np

SHAPES = ((6, 8, 10), (32, 64, 64), (8, 128, 256))
ETA = 0.1


def flops_per_step(n: int, T: int, d: int) -> int:
    """The kernel's own flop count of one gradient (one query per sequence): W z, the logits,
    the head read-out, the dynamic scores, the key combination (T d each) and the outer
    product g z^T (d^2), a multiply and an add each."""
    return 2 * n * (2 * d * d + 4 * T * d)


def matmul_rate(size: int = 1000, reps: int = 5) -> float:
    """float64 flop/s of one ``size x size`` matmul (best of ``reps``; one BLAS thread when
    OPENBLAS_NUM_THREADS=1)."""
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(size, size)), rng.normal(size=(size, size))
    best = np.inf
    for _ in range(reps):
        c = time.process_time()
        A @ B
        best = min(best, time.process_time() - c)
    return 2.0 * size**3 / best


# ----------------------------------------------------------------------------- svmgeo side


def _svmgeo_cases(n_single: dict[tuple[int, int, int], int], B: int, n_batch: int) -> dict:
    """Rates of this process's svmgeo (run in a child on one checkout): wall and CPU."""
    import numba

    import svmgeo as sg

    out: dict[str, Any] = {}
    numba.set_num_threads(1)
    for shape, n in n_single.items():
        data = sg.random_data(*shape, seed=0)
        kw = dict(n_steps=n, record_every=n, record=("loss",), backend="numba")
        sg.train(data, **{**kw, "n_steps": 4, "record_every": 4})  # compile / warm up
        wall, cpu = 0.0, 0.0
        for _ in range(2):
            c = time.process_time()
            run = sg.train(data, **kw)
            cpu = max(cpu, n / (time.process_time() - c))
            wall = max(wall, n / run.solve_time)
        out[str(shape)] = {"wall": wall, "cpu": cpu, "W": np.asarray(run.W).tolist()}
    datasets = [sg.random_data(6, 8, 10, seed=b) for b in range(B)]
    kw = dict(n_steps=n_batch, record_every=n_batch, record=("loss",), backend="numba")
    for threads in (1, 2):
        if threads > numba.config.NUMBA_NUM_THREADS:
            continue
        numba.set_num_threads(threads)
        # warm up on the parallel path too (B x steps >= 10,000 runs on several threads)
        sg.train_batch(datasets[:50], **{**kw, "n_steps": 200, "record_every": 200})
        c = time.process_time()
        runs = sg.train_batch(datasets, **kw)
        cpu = time.process_time() - c
        work = B * n_batch
        out[f"batch{threads}"] = {
            "wall": work / runs.solve_time,
            "cpu": work / cpu,
            "cores": cpu / runs.solve_time,
            "W": np.asarray(runs.W[:3]).tolist(),
        }
    return out


def _child(root: str, args: argparse.Namespace) -> dict:
    """Run :func:`_svmgeo_cases` in a child process on the checkout ``root``."""
    env = {**os.environ, "PYTHONPATH": root, "OPENBLAS_NUM_THREADS": "1"}
    cmd = [sys.executable, os.path.abspath(__file__), "--child", *_child_flags(args)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def _child_flags(args: argparse.Namespace) -> list[str]:
    return ["--quick"] if args.quick else []


# ------------------------------------------------------------------------------- JAX peer


def jax_step() -> Any:
    """Normalized GD on W with svmgeo's stable log-domain gradient, written in JAX.

    For query i (one per sequence), logits a = X_i W z_i, m = argmax, t2 = the runner-up,
    s = softmax(a), e_t = (g_t - g_m) - sum_s s_s (g_s - g_m) with g = X_i v; the gradient of
    the mean logistic loss is e^M G with G = -(1/n) sum_i Y_i e^{L_i - M} sum_{t != m}
    (s_t / s_t2) e_t (x_t - x_m) z_i^T (s_t / s_t2 = exp(a_t - a_t2) once a_t2 - a_m <= -600, as
    in svmgeo's kernel), L_i = -softplus(Y_i f_i) + log s_t2 and
    M = max_i (L_i + log max_t |s_t / s_t2 e_t|); the step is W - eta D / ||D||, D = G / ||G||.
    """
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def step(W: Any, X: Any, Z: Any, Y: Any, v: Any) -> Any:
        a = jnp.einsum("itp,pq,iq->it", X, W, Z)
        T = a.shape[1]
        m = jnp.argmax(a, axis=1)
        top = jnp.take_along_axis(a, m[:, None], 1)
        t2 = jnp.argmax(jnp.where(jnp.arange(T)[None, :] == m[:, None], -jnp.inf, a), axis=1)
        s = jnp.exp(a - top)
        ssum = s.sum(1, keepdims=True)
        lse = top[:, 0] + jnp.log(ssum[:, 0])
        s = s / ssum
        g = X @ v
        gm = jnp.take_along_axis(g, m[:, None], 1)
        f = (s * g).sum(1)
        mean = (s * (g - gm)).sum(1, keepdims=True)
        off = jnp.arange(T)[None, :] != m[:, None]
        s2 = jnp.take_along_axis(s, t2[:, None], 1)
        a2 = jnp.take_along_axis(a, t2[:, None], 1)
        # s_t / s_t2, as svmgeo's kernel forms it: from the logits once s_t2 may be subnormal
        rel = jnp.where(a2 - top > -600.0, s / s2, jnp.exp(a - a2))
        w = jnp.where(off, rel * ((g - gm) - mean), 0.0)
        L = -jnp.logaddexp(0.0, Y * f) + (a2[:, 0] - lse)
        M = jnp.max(L + jnp.log(jnp.max(jnp.abs(w), 1)))
        scale = -Y * jnp.exp(L - M)
        xm = jnp.take_along_axis(X, m[:, None, None], 1)
        gq = jnp.einsum("it,itp->ip", w * scale[:, None], X - xm)
        G = gq.T @ Z / X.shape[0]
        D = G / jnp.linalg.norm(G)
        return W - ETA * D / jnp.linalg.norm(D)

    return jax, step


def jax_runner(step: Any, jax: Any, n_steps: int, batched: bool) -> Any:
    def run(W: Any, X: Any, Z: Any, Y: Any, v: Any) -> Any:
        one = jax.vmap(step) if batched else step
        return jax.lax.fori_loop(0, n_steps, lambda _, W: one(W, X, Z, Y, v), W)

    return jax.jit(run)


def jax_rate(data: list, n_steps: int, batched: bool) -> tuple[float, float, np.ndarray]:
    """(wall rate, CPU rate, final W) of the JAX peer over ``n_steps`` (instance-)steps."""
    jax, step = jax_step()
    arrs = [np.stack([np.asarray(getattr(x, name)) for x in data]) for name in "XZYv"]
    if not batched:
        arrs = [a[0] for a in arrs]
    d = arrs[0].shape[-1]
    W0 = np.zeros((len(data), d, d) if batched else (d, d))
    fn = jax_runner(step, jax, n_steps, batched)
    fn(W0, *arrs).block_until_ready()  # compile
    wall, cpu = 0.0, 0.0
    for _ in range(2):
        c, t = time.process_time(), time.perf_counter()
        W = fn(W0, *arrs).block_until_ready()
        cpu = max(cpu, n_steps * len(data) / (time.process_time() - c))
        wall = max(wall, n_steps * len(data) / (time.perf_counter() - t))
    return wall, cpu, np.asarray(W)


def torch_rate(data: Any, n_steps: int) -> float:
    """A straightforward PyTorch loop (autograd, normalized SGD step, float64, one thread)."""
    import torch

    torch.set_num_threads(1)
    X = torch.tensor(np.asarray(data.X), dtype=torch.float64)
    Z = torch.tensor(np.asarray(data.Z), dtype=torch.float64)
    Y = torch.tensor(np.asarray(data.Y), dtype=torch.float64)
    v = torch.tensor(np.asarray(data.v), dtype=torch.float64)
    W = torch.zeros(data.d, data.d, dtype=torch.float64, requires_grad=True)

    def step() -> None:
        s = torch.softmax(torch.einsum("ntd,de,ne->nt", X, W, Z), dim=1)
        loss = torch.nn.functional.softplus(-Y * (torch.einsum("nt,ntd->nd", s, X) @ v)).mean()
        (grad,) = torch.autograd.grad(loss, W)
        with torch.no_grad():
            W.sub_(ETA * grad / grad.norm())

    for _ in range(20):
        step()
    c = time.process_time()
    for _ in range(n_steps):
        step()
    return n_steps / (time.process_time() - c)


# ------------------------------------------------------------------------------------ main


def _sizes(quick: bool) -> tuple[dict[tuple[int, int, int], int], int, int]:
    steps = (4000, 200, 60) if quick else (20000, 1000, 300)
    B, n_batch = (200, 500) if quick else (1000, 2000)
    return dict(zip(SHAPES, steps, strict=True)), B, n_batch


def _rel(a: Any, b: Any) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def _print_round(res: dict[str, list[dict]], peer: dict, n_single: dict) -> None:
    """This round's CPU rates (steps or instance-steps per CPU second), one line per case."""
    print(f"  matmul {peer['matmul'] / 1e9:.1f} GFLOP/s")
    for key in [str(shape) for shape in n_single] + ["batch1", "batch2"]:
        rates = [
            f"{name} {rows[-1][key]['cpu']:,.0f}" for name, rows in res.items() if key in rows[-1]
        ]
        jax = peer.get("jaxbatch" if key.startswith("batch") else f"jax{key}")
        if jax is not None and key != "batch2":
            rates.append(f"jax {jax[1]:,.0f}")
        print(f"  {key}: " + ", ".join(rates), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer steps and instances")
    parser.add_argument("--baseline", help="checkout of the svmgeo to compare against")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    n_single, B, n_batch = _sizes(args.quick)
    if args.child:
        print(json.dumps(_svmgeo_cases(n_single, B, n_batch)))
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    roots = {"after": here}
    if args.baseline:
        roots = {"before": os.path.abspath(args.baseline), "after": here}
    have_jax = importlib.util.find_spec("jax") is not None
    have_torch = importlib.util.find_spec("torch") is not None
    sys.path.insert(0, here)
    import svmgeo as sg

    print(f"load average at start: {os.getloadavg()}; os.cpu_count() = {os.cpu_count()}")
    res: dict[str, list[dict]] = {k: [] for k in roots}
    peers: list[dict] = []
    for r in range(args.rounds):
        for name, root in roots.items():
            res[name].append(_child(root, args))
        peer: dict[str, Any] = {"matmul": matmul_rate()}
        for shape, n in n_single.items():
            data = [sg.random_data(*shape, seed=0)]
            if have_jax:
                peer[f"jax{shape}"] = jax_rate(data, n, batched=False)
            if have_torch and shape == SHAPES[0]:
                peer["torch"] = torch_rate(data[0], max(n // 20, 200))
        if have_jax:
            data = [sg.random_data(6, 8, 10, seed=b) for b in range(B)]
            peer["jaxbatch"] = jax_rate(data, n_batch, batched=True)
        peers.append(peer)
        print(f"round {r + 1}/{args.rounds} done; load average {os.getloadavg()}", flush=True)
        _print_round(res, peers[-1], n_single)

    def best(rows: list[dict], key: str, field: str) -> float:
        return max(row[key][field] for row in rows)

    mm = max(p["matmul"] for p in peers)
    print(f"float64 1000x1000 matmul, one thread: {mm / 1e9:.1f} GFLOP/s (best CPU-time rate)")
    print("rates: best over rounds, CPU time (per core) / wall; x = after's CPU rate / peer's")
    for shape, n in n_single.items():
        fl = flops_per_step(*shape)
        print(f"== one run {shape}, {n} steps ({fl:,} flops/step) ==")
        for name in roots:
            cpu, wall = best(res[name], str(shape), "cpu"), best(res[name], str(shape), "wall")
            print(
                f"  svmgeo {name:6}: {cpu:10,.0f} steps/s CPU {wall:10,.0f} wall   "
                f"{cpu * fl / mm:6.1%} of the matmul rate"
            )
        after = best(res["after"], str(shape), "cpu")
        if args.baseline:
            print(f"  after / before = {after / best(res['before'], str(shape), 'cpu'):.2f}x")
        if have_jax:
            jc = max(p[f"jax{shape}"][1] for p in peers)
            jw = max(p[f"jax{shape}"][0] for p in peers)
            err = _rel(peers[-1][f"jax{shape}"][2], res["after"][-1][str(shape)]["W"])
            print(
                f"  JAX same gradient: {jc:10,.0f} steps/s CPU {jw:10,.0f} wall   svmgeo/JAX = "
                f"{after / jc:.2f}x   trajectory: max rel diff {err:.1e} (must be <= 1e-12)"
            )
        if have_torch and shape == SHAPES[0]:
            tc = max(p["torch"] for p in peers)
            print(
                f"  torch autograd loop: {tc:10,.0f} steps/s CPU   svmgeo/torch = {after / tc:.0f}x"
            )
    print(f"== train_batch: B = {B} x (6, 8, 10) x {n_batch} steps ==")
    fl = flops_per_step(6, 8, 10)
    for name in roots:
        for th in (1, 2):
            key = f"batch{th}"
            if key not in res[name][0]:
                continue
            cpu, wall = best(res[name], key, "cpu"), best(res[name], key, "wall")
            cores = max(row[key]["cores"] for row in res[name])
            print(
                f"  svmgeo {name:6} {th} thread(s): {wall:12,.0f} instance-steps/s wall, "
                f"{cpu:12,.0f} per CPU second (busy {cores:.2f} cores; "
                f"{wall * fl / 1e9:.2f} GFLOP/s)"
            )
        if "batch2" in res[name][0]:
            ratio = best(res[name], "batch2", "wall") / best(res[name], "batch1", "wall")
            print(f"  {name}: 2 threads / 1 thread (wall) = {ratio:.2f}x")
    if have_jax:
        jc = max(p["jaxbatch"][1] for p in peers)
        jw = max(p["jaxbatch"][0] for p in peers)
        after = best(res["after"], "batch1", "cpu")
        err = _rel(peers[-1]["jaxbatch"][2][:3], res["after"][-1]["batch1"]["W"])
        print(
            f"  JAX jit+vmap same gradient: {jw:12,.0f} wall {jc:12,.0f} per CPU second;"
            f" svmgeo/JAX per core = {after / jc:.2f}x; trajectory max rel diff {err:.1e}"
        )
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
