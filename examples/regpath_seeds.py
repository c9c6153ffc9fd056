# SPDX-License-Identifier: BSD-3-Clause
"""The W regularization path's direction on the seeds of the tests: 1 − corr(W̄_R, W^mm) per R.

docs/analysis.md ("Regularization paths"). For each seed, ``random_data(4, 5, 8, seed,
score_gap=0.05)`` (the data of ``tests/analysis/test_regpath.py``) and each loss (logistic,
exponential, correlation), ``regularization_path(data, radii, param="W")`` with the tests'
radii 0.5, 1, 2, ..., 128. Each row prints ‖W^mm‖_F (Att-SVM(opt)), 1 − corr at every radius,
and the smallest and largest factor by which 1 − corr falls per doubling of R from R = 4 on
(1/R would be a factor 2).

A measurement (svmgeo's), not a theorem: TF-SVM's Theorem 2 proves the limit, not a rate.

    OPENBLAS_NUM_THREADS=1 python examples/regpath_seeds.py [--seeds 0,2,4]

Runtime about 3 s.
"""

from __future__ import annotations

import argparse

import numpy as np

import svmgeo as sg

RADII = [0.5, 1, 2, 4, 8, 16, 32, 64, 128]
LOSSES = ("logistic", "exponential", "correlation")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,2,4", help="comma-separated seeds (default 0,2,4)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    first = RADII.index(4)
    print("R:", " ".join(f"{r:g}" for r in RADII))
    print("seed  loss         ||W^mm||  1 - corr at each R  |  fall per doubling from R = 4")
    for seed in seeds:
        data = sg.random_data(4, 5, 8, seed=seed, score_gap=0.05)
        W_mm = sg.att_svm(data).W
        assert W_mm is not None
        for loss in LOSSES:
            path = sg.regularization_path(data, RADII, loss=loss)
            assert path.correlation is not None
            gap = 1.0 - np.asarray(path.correlation)
            fall = gap[first:-1] / gap[first + 1 :]
            cells = " ".join(f"{g:.2e}" for g in gap)
            print(
                f"{seed:4d}  {loss:11s}  {np.linalg.norm(W_mm):8.3f}  {cells}  |  "
                f"{fall.min():.2f}-{fall.max():.2f}"
            )


if __name__ == "__main__":
    main()
