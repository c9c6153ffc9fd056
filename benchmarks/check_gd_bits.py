# SPDX-License-Identifier: BSD-3-Clause
r"""Bit-for-bit check of the numba GD engine between two checkouts (issue #25).

Each checkout runs the same cases in a child process with a *fresh, empty* numba cache
(``NUMBA_CACHE_DIR`` and ``SVMGEO_CACHE_DIR`` in a new temporary directory, so every kernel is
compiled anew, as in a fresh clone); the final parameters, stop statuses, step counts and every
recorded history (steps, loss, gradient norm, parameter norms, probabilities) are saved and
compared exactly (``np.array_equal`` on the float64 bit patterns: a sign of zero counts too).

The cases: several seeds of (6, 8, 10), the large shapes (32, 64, 64) and (8, 128, 256), long
saturated runs (step 0.5 to 20,000 steps, ties of logits from repeated tokens), the linear,
ReLU, concave and given-scores heads, masks and causal visibility, several queries, W, KQ and
p parameters, a trained head, log_domain on and off, normalized and plain GD, ridge and
normalize_eps, the stops (the norm limit on W and on KQ, an underflowed gradient, the gradient
tolerance), every built-in loss and user losses (LossSpec with d1 and with log_abs_d1), the
other attention maps, the other optimizers that read the kernels' gradients, ``train_batch`` on
one and on two threads, and ``loss_and_grad`` at moderate and saturated W.

    OPENBLAS_NUM_THREADS=1 python benchmarks/check_gd_bits.py BEFORE AFTER [--repeat 2]
        [--rtol 1e-14 [--loose large,lg_large]]

Exits 1 when any array differs. With ``--rtol R`` (the issue's "1e-14 agreement" route) the
arrays of the cases named by ``--loose`` (prefixes of the case names; every case when not
given) may instead agree to R record by record: :math:`\max_j |x_j - y_j| \le R \max_j |x_j|` over
each recorded step of a history (each entry of a history of one number a step) and over the
whole of every other array (NaN where NaN, the same infinities). Every differing array's
largest relative difference per record is printed, and beside it the entrywise one,
:math:`|x - y| / \max(|x|, |y|)` (large where entries cancel to near zero). The stop statuses and step counts must still
be *equal* (a stop decided at a boundary, the norm limit or the tolerance, that flips is a
failure, reported as such), and so must the shapes; the other cases stay bit for bit.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def _cases() -> dict[str, np.ndarray]:
    """Every case's arrays, keyed ``case/field`` (run in the child, on one checkout)."""
    import numba

    import svmgeo as sg
    from svmgeo.gd import loss_and_grad

    out: dict[str, np.ndarray] = {}

    def keep(name: str, run: object) -> None:
        for field in ("W", "p", "v", "K", "Q"):
            x = getattr(run, field, None)
            if x is not None:
                out[f"{name}/{field}"] = np.asarray(x, dtype=np.float64)
        hist = getattr(run, "history", None)
        if hist is not None:
            for field in ("step", "loss", "grad_norm", "W_norm", "max_prob", "probs", "p_norm",
                          "v_norm"):  # fmt: skip
                x = getattr(hist, field, None)
                if x is not None:
                    out[f"{name}/h_{field}"] = np.asarray(x, dtype=np.float64)
        n = getattr(run, "n_steps", None)
        if n is not None:
            out[f"{name}/n_steps"] = np.asarray(n, dtype=np.float64)
        st = getattr(run, "status", None)
        if st is not None:  # a StopStatus, or a tuple of them for a batch
            names = ",".join(x.value for x in (st if isinstance(st, tuple) else (st,)))
            out[f"{name}/status"] = np.frombuffer(names.encode(), np.uint8).astype(np.float64)

    rec = ("loss", "grad_norm", "W_norm", "max_prob", "probs")
    base = dict(backend="numba", record_every=250, record=rec)
    numba.set_num_threads(1)
    for seed in range(5):
        data = sg.random_data(6, 8, 10, seed=seed)
        keep(f"small{seed}", sg.train(data, n_steps=3000, **base))
    for seed in range(2):
        data = sg.random_data(6, 8, 10, seed=seed)
        keep(f"small{seed}_plain", sg.train(data, n_steps=3000, log_domain=False, **base))
        keep(f"small{seed}_unnorm", sg.train(data, n_steps=3000, normalized=False,
                                             step_size=2.0, **base))  # fmt: skip
    # saturated: long runs with a large step (the softmax saturates, logits tie far out)
    for seed in range(2):
        data = sg.random_data(6, 8, 10, seed=seed)
        for ld in (True, False):
            keep(f"sat{seed}_{ld}", sg.train(data, n_steps=20000, step_size=0.5, log_domain=ld,
                                             backend="numba", record_every=2000, record=rec))  # fmt: skip
    # exact ties: tokens repeated within each sequence
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6, 8, 10))
    X[:, 3] = X[:, 1]
    X[:, 6] = X[:, 2]
    tied = sg.TokenData(X, Y=rng.choice([-1.0, 1.0], 6), Z=X[:, 0], v=rng.normal(size=10))
    for ld in (True, False):
        keep(f"ties_{ld}", sg.train(tied, n_steps=8000, step_size=0.5, log_domain=ld,
                                    backend="numba", record_every=1000, record=rec))  # fmt: skip
    keep("ties_relu", sg.train(tied, n_steps=4000, step_size=0.5, head="relu",
                               V=rng.normal(size=(10, 4)), v=rng.normal(size=4),
                               backend="numba", record_every=1000, record=rec))  # fmt: skip
    keep("large32", sg.train(sg.random_data(32, 64, 64, seed=0), n_steps=120, **base))
    keep("large8", sg.train(sg.random_data(8, 128, 256, seed=0), n_steps=40, **base))
    keep("large8_sat", sg.train(sg.random_data(8, 128, 256, seed=1), n_steps=300, step_size=2.0,
                                backend="numba", record_every=50, record=rec))  # fmt: skip
    # heads, masks, queries, parameters
    rng = np.random.default_rng(7)
    relu = {"head": "relu", "V": rng.normal(size=(10, 3)), "v": rng.normal(size=3)}
    d6 = sg.random_data(6, 8, 10, seed=3)
    keep("relu", sg.train(d6, n_steps=3000, **relu, **base))
    keep("relu_sat", sg.train(d6, n_steps=15000, step_size=0.5, **relu, backend="numba",
                              record_every=1500, record=rec))  # fmt: skip
    keep("relu_plain", sg.train(d6, n_steps=3000, log_domain=False, **relu, **base))
    keep("concave", sg.train(d6, n_steps=3000, head="concave", lam=0.3, **base))
    keep("concave_sat", sg.train(d6, n_steps=10000, step_size=0.5, head="concave", lam=0.3,
                                 backend="numba", record_every=1000, record=rec))  # fmt: skip
    gamma = np.asarray(d6.Y)[:, None] * (np.asarray(d6.X) @ np.asarray(d6.v))
    scored = sg.TokenData(np.asarray(d6.X), Z=np.asarray(d6.Z), Y=np.asarray(d6.Y), scores=gamma)
    keep("scores", sg.train(scored, n_steps=3000, **base))
    keep("scores_sat", sg.train(scored, n_steps=10000, step_size=0.5, backend="numba",
                                record_every=1000, record=rec))  # fmt: skip
    causal = sg.random_data(4, 6, 7, seed=3, query="all", mask="causal")
    keep("causal", sg.train(causal, n_steps=3000, **base))
    keep("causal_sat", sg.train(causal, n_steps=10000, step_size=0.5, backend="numba",
                                record_every=1000, record=rec))  # fmt: skip
    mask = rng.random((3, 8)) < 0.6
    mask[np.arange(3), rng.integers(0, 8, 3)] = True
    masked = sg.random_data(5, 8, 6, seed=4, n_queries=3, mask=mask)
    keep("masked", sg.train(masked, n_steps=3000, **base))
    keep("selfq", sg.train(sg.random_data(5, 7, 9, seed=2, query=0), n_steps=3000, **base))
    keep("kq", sg.train(d6, param="KQ", m=4, n_steps=2000, init=("random", 0.1), seed=1, **base))
    keep("p", sg.train(d6, param="p", n_steps=3000, **base))
    keep("head", sg.train(d6, train_head=True, n_steps=3000, **base))
    keep("head_sat", sg.train(d6, train_head=True, n_steps=10000, step_size=0.5,
                              backend="numba", record_every=1000, record=rec))  # fmt: skip
    # stops: the norm limit (huge steps: W, and KQ), an underflowed gradient, the tolerance
    keep("stop_norm", sg.train(d6, step_size=2e149, n_steps=100, **base))
    keep("stop_norm_kq", sg.train(d6, param="KQ", m=4, init=("random", 0.1), seed=1,
                                  step_size=1e74, n_steps=100, **base))  # fmt: skip
    keep("stop_under", sg.train(d6, normalized=False, step_size=1e148, n_steps=50, **base))
    keep("stop_tol", sg.train(d6, grad_tol=1e-3, n_steps=20000, **base))
    keep("ridge", sg.train(d6, ridge=0.01, n_steps=3000, **base))
    keep("eps", sg.train(d6, normalize_eps=0.1, n_steps=3000, **base))
    keep("eps_plain", sg.train(d6, normalize_eps=0.1, log_domain=False, n_steps=3000, **base))
    for loss in ("exponential", "correlation", "square"):
        spec = sg.LOSS_SPECS["square"] if loss == "square" else loss
        keep(f"loss_{loss}", sg.train(d6, loss=spec, n_steps=2000, **base))
    user = sg.LossSpec("my-logistic", lambda u: np.logaddexp(0.0, -u),
                       lambda u: -0.5 * (1.0 + np.tanh(-0.5 * u)))  # fmt: skip
    user_log = sg.LossSpec("my-logistic-log", lambda u: np.logaddexp(0.0, -u),
                           lambda u: -0.5 * (1.0 + np.tanh(-0.5 * u)),
                           log_abs_d1=lambda u: -np.logaddexp(0.0, u))  # fmt: skip
    keep("user_d1", sg.train(d6, loss=user, n_steps=3000, **base))
    keep("user_log", sg.train(d6, loss=user_log, n_steps=10000, step_size=0.5, backend="numba",
                              record_every=1000, record=rec))  # fmt: skip
    for att in ("linear", "normalized_linear", "sigmoid", "relu"):
        keep(f"att_{att}", sg.train(d6, attention=att, n_steps=2000, step_size=0.05,
                                    init=("random", 0.1), seed=2, **base))  # fmt: skip
    for opt in ("sign", "adam", "mirror"):
        extra = {"exponent": 1.5} if opt == "mirror" else {}
        keep(f"opt_{opt}", sg.train(d6, optimizer=opt, n_steps=1000, backend="numba",
                                    record_every=250, **extra))  # fmt: skip
    # batches: one thread and two (svmgeo.gd._backend.in_threads)
    datasets = [sg.random_data(6, 8, 10, seed=b) for b in range(40)]
    for threads in (1, 2):
        if threads > numba.config.NUMBA_NUM_THREADS:
            continue
        numba.set_num_threads(threads)
        keep(f"batch{threads}", sg.train_batch(datasets, n_steps=600, **base))
        keep(f"batch{threads}_relu", sg.train_batch(datasets[:20], n_steps=600, **relu, **base))
        keep(f"batch{threads}_sat", sg.train_batch(datasets[:20], n_steps=5000, step_size=0.5,
                                                   backend="numba", record_every=1000,
                                                   record=rec))  # fmt: skip
    numba.set_num_threads(1)
    # loss_and_grad at moderate and saturated W
    for name, data, kw in (("lin", d6, {}), ("relu", d6, {k: relu[k] for k in relu}),
                           ("scores", scored, {}), ("causal", causal, {}),
                           ("large", sg.random_data(8, 128, 256, seed=0), {})):  # fmt: skip
        d = data.d
        W0 = np.random.default_rng(3).normal(size=(d, d))
        for scale in (0.3, 30.0, 3000.0):
            value, grad = loss_and_grad(data, scale * W0, backend="numba", **kw)
            out[f"lg_{name}_{scale}/value"] = np.asarray(value, dtype=np.float64)
            out[f"lg_{name}_{scale}/grad"] = np.asarray(grad, dtype=np.float64)
        value, grads = loss_and_grad(data, 30.0 * W0, backend="numba", train_head=True, **kw) \
            if name in ("lin", "causal", "large") else (0.0, ())  # fmt: skip
        for j, g in enumerate(grads):
            out[f"lg_{name}_head/grad{j}"] = np.asarray(g, dtype=np.float64)
    return out


def _dump(path: str) -> None:
    np.savez(path, **_cases())


def _child(tree: Path, out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="nbfresh-") as cache:
        env = {**os.environ, "PYTHONPATH": str(tree), "OPENBLAS_NUM_THREADS": "1",
               "NUMBA_CACHE_DIR": cache, "SVMGEO_CACHE_DIR": cache}  # fmt: skip
        subprocess.run([sys.executable, os.path.abspath(__file__), "--dump", str(out)], cwd=tree,
                       env=env, check=True)  # fmt: skip


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).view(np.int64)


def _rel(key: str, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(the largest entrywise relative difference |x - y| / max(|x|, |y|), 0 where both are 0;
    the largest relative difference of a record, max|x_r - y_r| / max|x_r|), both inf where the
    NaNs or the infinities differ. A record is one recorded step of a history (the leading
    index of an ``h_`` field; its entry when the history is one number a step), else the whole
    array (final parameters, gradients): entrywise figures of entries that cancel to near zero
    say nothing about the trajectory."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    nx, ny = np.isnan(x), np.isnan(y)
    fin = np.isfinite(x) & np.isfinite(y)
    if np.any(nx != ny) or np.any(~fin & ~(nx & ny) & (x != y)):
        return np.inf, np.inf
    x, y = np.where(fin, x, 0.0), np.where(fin, y, 0.0)
    dx = np.abs(x - y)
    if x.size == 0 or np.max(dx) == 0.0:
        return 0.0, 0.0
    ent = float(np.max(dx / np.where(dx == 0.0, 1.0, np.maximum(np.abs(x), np.abs(y)))))
    history = key.rsplit("/", 1)[-1].startswith("h_") and x.ndim >= 1
    rows = x.shape[0] if history else 1
    dr, xr = dx.reshape(rows, -1).max(axis=1), np.abs(x).reshape(rows, -1).max(axis=1)
    rec = np.where(dr == 0.0, 0.0, dr / np.where(xr == 0.0, 1.0, xr))
    rec = np.where((dr > 0.0) & (xr == 0.0), np.inf, rec)
    return ent, float(np.max(rec))


def _exact_field(key: str) -> bool:
    """Fields that must be equal in every mode: the stop statuses and the step counts."""
    return key.endswith(("/status", "/n_steps"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("before", type=Path, nargs="?")
    parser.add_argument("after", type=Path, nargs="?")
    parser.add_argument("--repeat", type=int, default=1, help="fresh-cache rounds")
    parser.add_argument("--rtol", type=float, default=None,
                        help="allow this entrywise relative difference (default: bit for bit)")  # fmt: skip
    parser.add_argument("--loose", default="",
                        help="comma-separated case-name prefixes --rtol applies to (default all)")  # fmt: skip
    parser.add_argument("--dump", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.dump:
        _dump(a.dump)
        return 0
    loose = tuple(x for x in a.loose.split(",") if x)
    bad = 0
    with tempfile.TemporaryDirectory(prefix="gdbits-") as tmp:
        for r in range(a.repeat):
            files = {}
            for name, tree in (("before", a.before), ("after", a.after)):
                files[name] = Path(tmp) / f"{name}{r}.npz"
                _child(tree.resolve(), files[name])
            A, B = np.load(files["before"]), np.load(files["after"])
            if set(A.files) != set(B.files):
                print(f"round {r}: different fields: {sorted(set(A.files) ^ set(B.files))}")
                bad += 1
            n_same = n_close = 0
            worst = 0.0
            for key in sorted(set(A.files) & set(B.files)):
                x, y = A[key], B[key]
                if x.shape == y.shape and np.array_equal(_bits(x), _bits(y)):
                    n_same += 1
                    continue
                tolerant = (a.rtol is not None and not _exact_field(key)
                            and (not loose or key.startswith(loose)))  # fmt: skip
                if x.shape != y.shape:
                    print(f"round {r}: {key} differs in shape ({x.shape} vs {y.shape})")
                    bad += 1
                    continue
                ent, rec = _rel(key, x, y)
                figures = f"relative difference {rec:.3g} per record, {ent:.3g} entrywise"
                if tolerant and rec <= a.rtol:
                    n_close += 1
                    worst = max(worst, rec)
                    print(f"round {r}: {key} within rtol: {figures}")
                    continue
                bad += 1
                what = "a stop or step count that flipped" if _exact_field(key) else "differs"
                print(f"round {r}: {key} {what}: {figures}")
            line = f"round {r}: {n_same} of {len(A.files)} arrays bit-for-bit equal"
            if a.rtol is not None:
                line += f", {n_close} more within rtol {a.rtol:g} (largest {worst:.3g})"
            print(line, flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
