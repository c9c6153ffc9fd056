# SPDX-License-Identifier: BSD-3-Clause
"""Where Gen-SVM does not predict GD: the search of docs/verify.md §6, every seed.

For each shape (n, T, d) and seed, ReLU-head attention ``random_data(n, T, d, seed)`` with
``V = default_rng(seed).standard_normal((d, k))`` (k = 3 for d = 4, else 4) and the
alternating-sign ``v = (1, -1, 1, ...)`` is trained by ``verify`` (normalized GD, step 0.1,
``--steps`` steps). A run counts when its selected set has a sequence with at least two tokens
and no token is ambiguous (the others are counted per shape, not listed). For each such run
it prints ``corr(W, W^eq)`` (the Gen-SVM's prediction), Γ, and the correlation of GD's W with
two min-norm W's solved by the naive cvxpy model (Clarabel):

* ``drop |O|>=2``: the Gen-SVM rows without the margin rows of the sequences with two or more
  selected tokens (their equality rows kept);
* ``drop zero cost``: the rows of ``gen_svm(..., drop_zero_cost=True)``, without the margin
  rows of masked tokens whose first-order cost is zero (svmgeo's extension).

Both are *svmgeo's hypotheses*, measured here, not theorems (Gen-SVM itself is the paper's
proposal, TF-SVM §6).

    OPENBLAS_NUM_THREADS=1 python examples/gen_svm_search.py [--seeds 0-39] [--steps 3000]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import svmgeo as sg
from svmgeo.solvers import solve_naive_cvxpy

SHAPES = [(2, 3, 4), (3, 4, 6), (4, 4, 8)]


def _corr(A: np.ndarray, B: np.ndarray | None) -> float:
    """:func:`svmgeo.correlation`, NaN when the min-norm problem had no answer."""
    return float("nan") if B is None else sg.correlation(A, B)


def _min_norm(cs: sg.ConstraintSet) -> np.ndarray | None:
    W, status, _, _ = solve_naive_cvxpy(cs, "fro")
    return W if status.startswith("optimal") else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-39", help="a range lo-hi (inclusive)")
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args()
    lo, hi = map(int, args.seeds.split("-"))
    print("shape      seed  |O_i|  corr(W, W^eq)  Gamma     drop |O|>=2  drop zero cost")
    for n, T, d in SHAPES:
        k = 3 if d == 4 else 4
        v = [(-1.0) ** i for i in range(k)]
        counted = 0
        for seed in range(lo, hi + 1):
            data = sg.random_data(n, T, d, seed=seed)
            V = np.random.default_rng(seed).standard_normal((d, k))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    rep = sg.verify(data, head="relu", V=V, v=v, step_size=0.1, n_steps=args.steps)
                except (sg.TieError, ValueError) as exc:
                    print(f"{(n, T, d)!s:10} {seed:4d}  skipped: {type(exc).__name__}")
                    continue
                if rep.selected is None or rep.run is None or rep.gen is None:
                    continue  # not a nonlinear head's report (not met here)
                sizes = rep.selected.sum(axis=1)
                if rep.n_ambiguous or sizes.max() < 2 or rep.gen.svm is None:
                    continue
                cs = rep.gen.svm.constraints
                mixing = np.flatnonzero(sizes >= 2)
                keep = ~(np.isin(cs.seq, mixing) & cs.is_margin)
                probs = np.asarray(rep.run.history.probs)[-1]  # GD's final softmax
                dropped = sg.gen_svm(
                    data, selected=rep.selected, probs=probs, head="relu", V=V, v=v,
                    drop_zero_cost=True,
                )  # fmt: skip
                W_zero = None if dropped.svm is None else _min_norm(dropped.svm.constraints)
                W_mix = _min_norm(cs.subset(np.flatnonzero(keep)))
            counted += 1
            print(
                f"{(n, T, d)!s:10} {seed:4d}  {sizes.tolist()!s:6} {rep.final_corr_eq:13.5f}"
                f"  {rep.gamma:8.1e}  {_corr(rep.W, W_mix):11.6f}  {_corr(rep.W, W_zero):14.6f}"
            )
        print(f"{(n, T, d)!s:10} seeds {lo}-{hi}: {counted} runs counted, the others not")


if __name__ == "__main__":
    main()
