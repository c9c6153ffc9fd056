# SPDX-License-Identifier: BSD-3-Clause
"""Where one softmax GD step of a large instance spends its time (issue 25).

For ``random_data(n, T, d, seed=0)`` (one query per sequence, linear head, logistic loss,
normalized GD on W) this times, as compiled loops of the kernel's own helpers on the
instance's arrays (CPU time, best of ``--reps``, in microseconds per step):

* ``W z`` of every query (:func:`svmgeo.gd._numba._matvecs`),
* the logits and the dynamic scores (:func:`svmgeo.gd._numba._add_rows` on the transposed
  X_i, U_i, once each per query),
* the head read-out ``r += s_t u_t`` and the key combination ``g += w (x_t - x_m)``
  (:func:`svmgeo.gd._numba._add_rows` on U_i and X_i, as in the kernel),
* the outer products ``G = sum_j g_j z_j^T / n`` (:func:`svmgeo.gd._numba._outer_sum`),
* one exact Frobenius norm of a d x d_z matrix (:func:`svmgeo.gd._numba._norm`; a step
  takes two),
* the step itself (:func:`svmgeo.gd._numba._step` of normalized GD on W, G's largest entry
  known as the gradient gives it: both norms, the update, the copy),
* the whole gradient (:func:`svmgeo.gd._numba.grad_one`) and the whole step (``train``).

Run:  OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/profile_gd_phases.py [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numba
import numpy as np

import svmgeo as sg
from svmgeo.gd import _numba as kern
from svmgeo.gd._backend import _prob
from svmgeo.gd._problem import make_problem


@numba.njit
def _wz(W, ZT, WZ, every, reps):
    for _ in range(reps):
        kern._matvecs(W, ZT, WZ, every)


@numba.njit
def _scores(XT, WZ, a, every, reps):
    n, d = XT.shape[0], XT.shape[1]
    wz = np.empty(d)
    for _ in range(reps):
        for i in range(n):
            for r in range(a.shape[0]):
                a[r] = 0.0
            for p in range(d):  # the column of W z, contiguous (as the kernel does)
                wz[p] = WZ[p, i]
            kern._add_rows(a, XT[i], wz, every, d, np.int64(-1))


@numba.njit
def _readout(U, s, r, every, reps):
    n, T, du = U.shape
    for _ in range(reps):
        for i in range(n):
            for p in range(du):
                r[p] = 0.0
            kern._add_rows(r, U[i], s, every, T, np.int64(-1))


@numba.njit
def _keys(X, w, gq, every, reps):
    n, T, d = X.shape
    for _ in range(reps):
        for i in range(n):
            g = gq[i]
            for p in range(d):
                g[p] = 0.0
            kern._add_rows(g, X[i], w, every[1:], T - 1, np.int64(0))


@numba.njit
def _outers(G, gq, act, Z, reps):
    for _ in range(reps):
        kern._outer_sum(G, gq, act, act.shape[0], Z, Z.shape[0])


@numba.njit
def _norms(G, reps):
    s = 0.0
    for _ in range(reps):
        s += kern._norm(G)
    return s


@numba.njit
def _steps(P1, G, top, reps):
    d = P1.shape[0]
    P2, P3, Gv = np.empty((d, 0)), np.zeros((1, 1)), np.zeros((1, 1))
    work = (np.empty(P1.shape), np.empty(P2.shape), np.empty(P1.shape), P2.copy(), P3.copy())
    opts = (False, False, True, True, 0.1, 0.0, -np.inf, 0.0, 0.0, 0.0)
    for _ in range(reps):
        kern._step((P1, P2, P3), (G, Gv), (0.0, -np.inf), opts, np.inf, work, top)


@numba.njit
def _grads(W, inst, head_id, G, ws, Gv, reps):
    for _ in range(reps):
        kern._grad_one(W, inst, head_id, 0, True, G, ws, False, Gv)


def _layouts(P, reps):
    for _ in range(reps):
        kern.layout(P.X, P.U, P.Z)


def _us(fn, reps: int, rounds: int) -> float:
    fn(1)  # compile
    best = np.inf
    for _ in range(rounds):
        c = time.process_time()
        fn(reps)
        best = min(best, time.process_time() - c)
    return float(best / reps * 1e6)


def profile(shape: tuple[int, int, int], rounds: int) -> dict[str, float]:
    """Microseconds per step of each phase for ``random_data(*shape, seed=0)``."""
    data = sg.random_data(*shape, seed=0)
    P = make_problem([data], "linear")
    inst = tuple(x[0] for x in _prob(P))
    X, U, Z = inst[0], inst[1], inst[2]
    n, T, d = X.shape
    dz = Z.shape[2]
    rng = np.random.default_rng(0)
    W = rng.normal(size=(d, dz)) * 0.01
    ws = kern._workspace(inst)
    XT, UT, ZT = inst[10:]
    gq, act, WZ, _, _, every = ws[12:18]
    gq[:] = rng.normal(size=gq.shape)
    act[:] = np.arange(act.shape[0])
    G = rng.normal(size=(d, dz))
    s = rng.random(T)
    a, r = np.empty(T), np.empty(U.shape[2])
    reps = max(1, int(2e8 / (n * (2 * d * dz + 4 * T * d) + 1)))
    out = {
        "W z (all queries)": _us(lambda k: _wz(W, ZT, WZ, every, k), reps, rounds),
        "logits": _us(lambda k: _scores(XT, WZ, a, every, k), reps, rounds),
        "dynamic scores": _us(lambda k: _scores(UT, WZ, a, every, k), reps, rounds),
        "read-out r": _us(lambda k: _readout(U, s, r, np.arange(T), k), reps, rounds),
        "key combination": _us(lambda k: _keys(X, s, gq, np.arange(T), k), reps, rounds),
        "outer products": _us(lambda k: _outers(G.copy(), gq, act, Z, k), reps, rounds),
        "one norm": _us(lambda k: _norms(G, k), reps, rounds),
        "step (2 norms, update)": _us(
            lambda k: _steps(W.copy(), G, float(np.abs(G).max()), k), reps, rounds
        ),
        "layout (per problem)": _us(lambda k: _layouts(P, k), 3, rounds),
        "whole gradient": _us(
            lambda k: _grads(W, inst, P.head_id, np.empty_like(W), ws, np.zeros(U.shape[2]), k),
            reps,
            rounds,
        ),
    }
    steps = max(4, reps)
    kw = dict(record_every=steps, record=("loss",), backend="numba")
    sg.train(data, n_steps=4, **{**kw, "record_every": 4})
    best = np.inf
    for _ in range(rounds):
        c = time.process_time()
        sg.train(data, n_steps=steps, **kw)
        best = min(best, time.process_time() - c)
    out["whole step (train)"] = float(best / steps * 1e6)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3, help="rounds per phase (best is kept)")
    args = ap.parse_args()
    for shape in ((32, 64, 64), (8, 128, 256)):
        print(f"{shape}: us per step (CPU, best of {args.reps})")
        for name, us in profile(shape, args.reps).items():
            print(f"  {name:22s} {us:9.1f}")


if __name__ == "__main__":
    main()
