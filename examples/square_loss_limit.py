# SPDX-License-Identifier: BSD-3-Clause
"""The square loss holds sequences at its stationary point: Y f and corr(W, W^mm), every seed.

docs/attention-maps.md ("The loss hypotheses") and the atlas's square-loss row. For each seed,
``random_data(6, 8, 10, seed)`` with its tokens scaled by ``--scale`` (default 3, so scores
γ reach past 1) is trained with softmax attention, a linear head and the square loss
ℓ(u) = (1 − u)² (``svmgeo.LOSS_SPECS["square"]``) by plain gradient descent with
η = 1/L_W, ``check_loss``'s step-size bound (normalized GD with a constant step cannot settle
at a stationary point of ℓ). ``check_loss`` flags the sequences with min γ < 1 < max γ, where
ℓ′ = 0 inside the attained range I_i. Each row prints, at ``--steps``/10 and ``--steps``:

* the flagged sequences and the range of their Y f = γ_iᵀ softmax(X_i W z_i);
* ``corr(W, W^mm)``: :func:`svmgeo.correlation` of GD's W with ``att_svm(data, alpha)``, the
  Att-SVM of GD's final selection α (the most probable key of each sequence);
* ``||W||_F`` (it stops growing when every sequence is flagged);
* the same correlation for the logistic loss under the same protocol (η = 1/L_W of the
  logistic loss), for contrast.

A measurement (svmgeo's), not a theorem.

    OPENBLAS_NUM_THREADS=1 python examples/square_loss_limit.py [--seeds 0-9] [--steps 100000] [--backend numba]

Runtime about 15 s for the defaults (about 90 s with ``--steps 1000000``), after numba's
kernels are compiled (once, about 40 s).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import svmgeo as sg

SQUARE = sg.LOSS_SPECS["square"]


def _at(run: sg.GDRun, step: int) -> tuple[np.ndarray, np.ndarray]:
    """W and the softmax probabilities recorded at ``step``."""
    i = int(np.flatnonzero(np.asarray(run.history.step) == step)[0])
    return np.asarray(run.history.W)[i], np.asarray(run.history.probs)[i]


def _corr_mm(data: sg.TokenData, W: np.ndarray, probs: np.ndarray) -> tuple[float, str]:
    """corr(W, W^mm) with W^mm the Att-SVM of the selection argmax(probs), and its status."""
    svm = sg.att_svm(data, alpha=probs.argmax(axis=-1))
    return (float("nan") if svm.W is None else sg.correlation(W, svm.W)), str(svm.status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-9", help="a range lo-hi (inclusive)")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--scale", type=float, default=3.0, help="token scale (default 3)")
    parser.add_argument("--backend", default="numba", help="train's backend (default numba)")
    args = parser.parse_args()
    lo, hi = map(int, args.seeds.split("-"))
    checkpoints = (args.steps // 10, args.steps)
    print("seed  step     flagged        Y f (flagged)   corr(W, W^mm)  W^mm     ||W||_F  logistic")
    for seed in range(lo, hi + 1):
        raw = sg.random_data(6, 8, 10, seed=seed)
        data = sg.TokenData(args.scale * np.asarray(raw.X), Y=raw.Y, v=raw.v, Z=raw.Z)
        check = sg.check_loss("square", data)
        flagged = np.flatnonzero(~np.isnan(check.stationary[:, 0]))
        gamma = sg.token_scores(data)
        runs = {}
        for name, loss in (("square", SQUARE), ("logistic", "logistic")):
            eta = 1.0 / sg.check_loss(loss, data).L_W
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sg.LossWarning)  # check_loss's flag, above
                runs[name] = sg.train(
                    data, loss=loss, normalized=False, step_size=eta, n_steps=args.steps,
                    record_every=checkpoints[0], backend=args.backend,
                )  # fmt: skip
        for step in checkpoints:
            W, probs = _at(runs["square"], step)
            yf = np.sum(gamma * probs, axis=-1)[flagged]
            corr, status = _corr_mm(data, W, probs)
            corr_log, _ = _corr_mm(data, *_at(runs["logistic"], step))
            print(
                f"{seed:4d}  {step:<8d} {' '.join(map(str, flagged)):14} "
                f"{yf.min():.4f}..{yf.max():.4f}  {corr:.4f}         {status:8} "
                f"{np.linalg.norm(W):7.3f}  {corr_log:.4f}"
            )


if __name__ == "__main__":
    main()
