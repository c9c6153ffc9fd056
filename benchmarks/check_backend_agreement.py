# SPDX-License-Identifier: BSD-3-Clause
r"""How closely the numba and numpy GD backends agree, and where rounding is amplified
(docs/gd.md, "Known limits").

Every figure is a relative difference of two runs, record by record:
:math:`\max_r \max_{ij} |x_{r,ij} - y_{r,ij}| / \max_{ij} |y_{r,ij}|` over the recorded steps
:math:`r` (W, or K Qᵀ for ``param="KQ"``, or p), with y the numpy run (or the unperturbed run).

* ``amplify``: normalized GD (η = 0.1, 1000 steps) with a finite optimum, the concave head
  (λ = 0.3) and a ridge (0.01 and 0.001, linear head), on ``random_data(6, 8, 10, seed)``, seeds 0-4, from
  W₀ = 0.1 I: the numba run from W₀ (1 + 1e-15) against the one from W₀ (the same backend), and
  numba against numpy with normalized steps and with plain steps (η = 0.5), after 100 and after
  1000 steps.
* ``grid``: ``param="W"``, linear and ReLU heads, no ridge: every combination of 6 datasets
  (``random_data(3, 4, 5, seed=1)``, the same with ``query=0`` and seed 2, a causal and a
  masked instance, ``random_data(6, 8, 10, seed)`` for seeds 0 and 1), 2 heads, the 3 losses,
  normalized (η = 0.1) or plain (η = 0.5) steps, log domain on or off, 500 steps recorded every
  50: one row per combination, then the count and the largest difference.
* ``kq``: ``param="KQ"``, ``m=3``, ``init=("random", 0.3)`` on ``random_data(5, 6, 4, seed=1)``,
  normalized steps of η = 0.1, logistic loss, linear head: for init seeds 0-4 numba against
  numpy at steps 100, 169, 200 and 300; for seed 3 also a 1e-15 nudge of K within numba, and
  one step of each backend from numpy's iterate at steps 100, 169 and 200.
* ``other``: ``param="p"`` on three masked instances (η = 0.1 and 0.5, with and without
  ``train_head``, 1000 steps), and the Polyak step (``step_size="polyak"``, 300 steps) on
  ``random_data(6, 8, 10, seed)``, seeds 0-4.

    OPENBLAS_NUM_THREADS=1 python benchmarks/check_backend_agreement.py [--part all] [--quick]

About 40 s in all on one core with warm numba caches (the grid about 25 s; a first run
compiles the kernels, about 20 s more); ``--quick`` runs a few cases of each part (for the
test).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

import svmgeo as sg


def rel(x: Any, y: Any) -> np.ndarray:
    """Per record: max |x - y| / max |y| (0 where both are 0, inf where only y is 0)."""
    x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
    dx, sy = np.abs(x - y).max(axis=1), np.abs(y).max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(dx == 0.0, 0.0, dx / sy)


def train(data: sg.TokenData, **kw: Any) -> Any:
    """``svmgeo.train``, its result untyped (histories are arrays here, never None)."""
    return sg.train(data, **kw)


def general_mask(K: int, T: int, seed: int) -> np.ndarray:
    """A random visibility mask with at least one visible token per query."""
    rng = np.random.default_rng(seed)
    mask = rng.random((K, T)) < 0.6
    mask[np.arange(K), rng.integers(0, T, K)] = True
    return mask


def part_amplify(quick: bool) -> None:
    print("## amplify: normalized GD with a finite optimum (eta = 0.1, W0 = 0.1 I)")
    print("| problem | seed | nudge 1e-15, step 100 | nudge, step 1000 | numba-numpy normalized, "
          "100 | normalized, 1000 | plain (eta 0.5), 1000 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    kinds: dict[str, dict[str, Any]] = {"concave lam=0.3": {"head": "concave", "lam": 0.3}, "ridge 0.01": {"ridge": 0.01},
             "ridge 0.001": {"ridge": 0.001}}  # fmt: skip
    for label, kw in kinds.items():
        for seed in range(1 if quick else 5):
            data = sg.random_data(6, 8, 10, seed=seed)
            W0 = 0.1 * np.eye(data.d)
            run = dict(n_steps=1000, record_every=100, record=("W",), init=W0, **kw)
            a = train(data, backend="numba", **run)
            b = train(data, backend="numba", **{**run, "init": W0 * (1 + 1e-15)})
            c = train(data, backend="numpy", **run)
            plain = {**run, "normalized": False, "step_size": 0.5}
            p1 = train(data, backend="numba", **plain)
            p2 = train(data, backend="numpy", **plain)
            nudge, back = rel(b.history.W, a.history.W), rel(a.history.W, c.history.W)
            print(f"| {label} | {seed} | {nudge[1]:.1e} | {nudge[-1]:.1e} | {back[1]:.1e} | "
                  f"{back[-1]:.1e} | {rel(p1.history.W, p2.history.W).max():.1e} |",
                  flush=True)  # fmt: skip


def grid_datasets(quick: bool) -> dict[str, sg.TokenData]:
    out = {
        "cross(3,4,5)": sg.random_data(3, 4, 5, seed=1),
        "self(3,4,5)": sg.random_data(3, 4, 5, seed=2, query=0),
        "causal(2,4,5)": sg.random_data(2, 4, 5, seed=3, query="all", mask="causal"),
        "masked(2,5,4)": sg.random_data(2, 5, 4, seed=4, n_queries=3, mask=general_mask(3, 5, 4)),
        "(6,8,10) s0": sg.random_data(6, 8, 10, seed=0),
        "(6,8,10) s1": sg.random_data(6, 8, 10, seed=1),
    }
    return dict(list(out.items())[:2]) if quick else out


def part_grid(quick: bool) -> None:
    print('## grid: param="W", linear/ReLU heads, no ridge, 500 steps (numba vs numpy)')
    print("| data | head | loss | steps | log domain | W | loss | stops equal |")
    print("|---|---|---|---|---|---|---|---|")
    steps = {"normalized 0.1": {}, "plain 0.5": {"normalized": False, "step_size": 0.5}}
    worst_w = worst_l = 0.0
    count = within = 0
    for name, data in grid_datasets(quick).items():
        rng = np.random.default_rng(7)
        heads = {"linear": {}, "relu": {"head": "relu", "V": rng.normal(size=(data.d, 3)),
                                        "v": rng.normal(size=3)}}  # fmt: skip
        for head, hk in heads.items():
            for loss in ("logistic",) if quick else ("logistic", "exponential", "correlation"):
                for step, sk in steps.items():
                    for ld in (True, False):
                        kw = dict(n_steps=500, record_every=50, record=("W", "loss"), loss=loss,
                                  log_domain=ld, **hk, **sk)  # fmt: skip
                        a = train(data, backend="numba", **kw)
                        b = train(data, backend="numpy", **kw)
                        dw = float(rel(a.history.W, b.history.W).max())
                        dl = float(rel(a.history.loss[:, None], b.history.loss[:, None]).max())
                        same = a.status is b.status and a.n_steps == b.n_steps
                        count += 1
                        within += dw <= 1e-12 and dl <= 1e-12 and same
                        worst_w, worst_l = max(worst_w, dw), max(worst_l, dl)
                        print(f"| {name} | {head} | {loss} | {step} | {ld} | {dw:.1e} | "
                              f"{dl:.1e} | {same} |", flush=True)  # fmt: skip
    print(
        f"grid: {within} of {count} combinations agree to <= 1e-12 (W and loss, same stop); "
        f"largest difference of W {worst_w:.1e}, of the loss {worst_l:.1e}"
    )


def part_kq(quick: bool) -> None:
    print('## kq: random_data(5, 6, 4, seed=1), param="KQ", m=3, init=("random", 0.3), eta 0.1')
    data = sg.random_data(5, 6, 4, seed=1)
    marks = (100, 169, 200, 300)
    kw = dict(param="KQ", m=3, n_steps=300, record_every=1, record=("W",))
    print("| init seed | " + " | ".join(f"K Qᵀ numba-numpy, step {s}" for s in marks) + " |")
    print("|---|" + "---|" * len(marks))
    for seed in (3,) if quick else range(5):
        a = train(data, init=("random", 0.3), seed=seed, backend="numba", **kw)
        b = train(data, init=("random", 0.3), seed=seed, backend="numpy", **kw)
        r = rel(a.history.W, b.history.W)
        print(f"| {seed} | " + " | ".join(f"{r[s]:.1e}" for s in marks) + " |", flush=True)
    # seed 3 again: the start drawn here as init=("random", 0.3) draws it, K then Q
    rng = np.random.default_rng(3)
    K0, Q0 = rng.normal(0.0, 0.3, (data.d, 3)), rng.normal(0.0, 0.3, (data.d, 3))
    a = train(data, init=(K0, Q0), backend="numba", **kw)
    b = train(data, init=(K0 * (1 + 1e-15), Q0), backend="numba", **kw)
    ref = train(data, init=("random", 0.3), seed=3, backend="numba", **kw)
    r = rel(b.history.W, a.history.W)
    print(
        f"seed 3, start passed as (K, Q) equals init=('random', 0.3): "
        f"{np.array_equal(a.history.W, ref.history.W)}"
    )
    print("seed 3, numba, K nudged by 1e-15 (relative): K Qᵀ differs by "
          + ", ".join(f"{r[s]:.1e} at step {s}" for s in marks))  # fmt: skip
    one = []
    for s in marks[:3]:
        at = train(data, init=(K0, Q0), backend="numpy", **{**kw, "n_steps": s})
        nxt = [train(data, init=(at.K, at.Q), backend=bk, **{**kw, "n_steps": 1})
               for bk in ("numba", "numpy")]  # fmt: skip
        one.append(f"{rel(nxt[0].history.W[-1:], nxt[1].history.W[-1:])[0]:.1e} from step {s}")
    print(
        "seed 3, one step of numba and of numpy from numpy's iterate: K Qᵀ differs by "
        + ", ".join(one)
    )


def part_other(quick: bool) -> None:
    print('## other: param="p" with masks (1000 steps), and Polyak steps (numba vs numpy)')
    sets = {
        "masked(2,5,4)": sg.random_data(2, 5, 4, seed=4, n_queries=3, mask=general_mask(3, 5, 4)),
        "causal(2,4,5)": sg.random_data(2, 4, 5, seed=3, query="all", mask="causal"),
        "masked(6,8,10)": sg.random_data(6, 8, 10, seed=0, n_queries=3, mask=general_mask(3, 8, 0)),
    }
    print("| data | eta | train_head | p, step 300 | p, step 1000 | stops equal |")
    print("|---|---|---|---|---|---|")
    for name, data in list(sets.items())[: 1 if quick else 3]:
        for eta in (0.1, 0.5):
            for head in (False, True):
                kw = dict(param="p", n_steps=1000, step_size=eta, train_head=head,
                          record_every=100, record=("p",))  # fmt: skip
                a = train(data, backend="numba", **kw)
                b = train(data, backend="numpy", **kw)
                r = rel(a.history.p, b.history.p)
                same = a.status is b.status and a.n_steps == b.n_steps
                print(f"| {name} | {eta} | {head} | {r[3]:.1e} | {r[-1]:.1e} | {same} |",
                      flush=True)  # fmt: skip
    print("| data | stop | steps | W, largest over the run | final W |")
    print("|---|---|---|---|---|")
    for seed in range(1 if quick else 5):
        data = sg.random_data(6, 8, 10, seed=seed)
        kw = dict(step_size="polyak", n_steps=300, record_every=50)
        a = train(data, backend="numba", **kw)
        b = train(data, backend="numpy", **kw)
        stop = a.status.value if a.status is b.status else f"{a.status.value}/{b.status.value}"
        steps = a.n_steps if a.n_steps == b.n_steps else f"{a.n_steps}/{b.n_steps}"
        print(f"| (6,8,10) s{seed} | {stop} | {steps} | {rel(a.history.W, b.history.W).max():.1e}"
              f" | {rel(a.W[None], b.W[None])[0]:.1e} |", flush=True)  # fmt: skip


PARTS = {"amplify": part_amplify, "grid": part_grid, "kq": part_kq, "other": part_other}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--part", choices=["all", *PARTS], default="all")
    parser.add_argument("--quick", action="store_true", help="a few cases of each part")
    a = parser.parse_args(argv)
    for name, part in PARTS.items():
        if a.part in ("all", name):
            part(a.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
