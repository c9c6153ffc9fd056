# SPDX-License-Identifier: BSD-3-Clause
"""``verify(attention=...)`` on every seed: does GD reach the map's own SVM?

For each seed, ``random_data(6, 8, 10, seed)`` is trained by :func:`svmgeo.verify` with linear,
sigmoid and ReLU attention (normalized GD, logistic loss, step 0.1, ``--steps`` steps; ReLU
from ``init=("random", 0.1)`` with the same seed, as ``svmgeo verify --seed`` does). Each row
prints ``converged_to``, the final ``corr_own`` (GD's W against the map's own SVM: linear's
one-row SVM, sigmoid's SVM of the final sign pattern, ReLU's KKT point at the final active
pattern) and ``corr_fro`` (against softmax's Att-SVM of the final selection). Where there is no
own SVM, the row says why: ``att_svm(attention=..., pattern=run)``'s status, and for ReLU the
sequences left with no active key (dead).

Each row is also ``svmgeo verify --n 6 --T 8 --d 10 --seed S --steps 5000 --attention A``.
Runtime about 3 s for seeds 0-9 after numba's kernels are compiled (once, about 40 s).

    OPENBLAS_NUM_THREADS=1 python examples/attention_maps_seeds.py [--seeds 0-9] [--steps 5000] [--backend numba]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import svmgeo as sg

MAPS = ("linear", "sigmoid", "relu")


def _why_none(data: sg.TokenData, attention: str, rep: sg.VerifyReport) -> str:
    """The status of the map's own SVM at GD's final pattern, and ReLU's dead sequences."""
    svm = sg.att_svm(data, attention=attention, pattern=rep.run)
    pattern = svm.extras.get("pattern")
    if attention != "relu" or pattern is None:
        return svm.status
    dead = int(np.sum(np.all(np.asarray(pattern) <= 0, axis=-1)))
    return f"{svm.status}, {dead} dead"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-9", help="a range lo-hi (inclusive)")
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--backend", default="numba", help="verify's backend (default numba)")
    args = parser.parse_args()
    lo, hi = map(int, args.seeds.split("-"))
    print("seed  map      converged_to  corr_own   corr_fro  own SVM")
    own = {m: 0 for m in MAPS}
    for seed in range(lo, hi + 1):
        data = sg.random_data(6, 8, 10, seed=seed)
        for attention in MAPS:
            init = ("random", 0.1) if attention == "relu" else "zero"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rep = sg.verify(
                    data, attention=attention, init=init, seed=seed, n_steps=args.steps,
                    step_size=0.1, backend=args.backend,
                )  # fmt: skip
            corr_own = float("nan") if rep.corr_own is None else float(rep.corr_own[-1])
            corr_fro = float(np.asarray(rep.corr_fro)[-1])
            note = "" if rep.W_own is not None else _why_none(data, attention, rep)
            own[attention] += rep.converged_to == "own"
            print(
                f"{seed:4d}  {attention:8} {rep.converged_to!s:12}  {corr_own:8.6f}  "
                f"{corr_fro:.4f}    {note}"
            )
    n = hi - lo + 1
    print("converged_to == 'own': " + ", ".join(f"{m} {own[m]} of {n}" for m in MAPS))


if __name__ == "__main__":
    main()
