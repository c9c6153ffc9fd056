# SPDX-License-Identifier: BSD-3-Clause
"""The Polyak step (``step_size="polyak"``) on every seed (docs/optimizers.md, issue #23).

For ``random_data(6, 8, 10)`` seeds 0-9, GD with the classical Polyak step
:math:`\\eta_t = (L - L_\\star)/\\|\\nabla L\\|_F^2` (W from zero, 2000 steps) beside normalized GD
(eta = 0.1, 2000 steps): how each run stopped, the steps it took, ||W||_F, and the
correlation of its final W with the Frobenius Att-SVM of its final selection.

    OPENBLAS_NUM_THREADS=1 python benchmarks/polyak_seeds.py
"""

from __future__ import annotations

import sys

import svmgeo as sg
from svmgeo.gd import RiskOracle

SEEDS = range(10)
N_STEPS = 2000


def main() -> int:
    print("| seed | step | stop | steps taken | ‖W‖_F | corr(W, W^mm_α) |")
    print("|---|---|---|---|---|---|")
    for seed in SEEDS:
        data = sg.random_data(6, 8, 10, seed=seed)
        for label, step in (("polyak", "polyak"), ("η = 0.1", 0.1)):
            run = sg.train(data, step_size=step, n_steps=N_STEPS)  # type: ignore[arg-type]
            assert run.W is not None
            alpha = RiskOracle(data)(run.W).selected.reshape(data.selection_shape)
            res = sg.att_svm(data, alpha)
            corr = sg.correlation(run.W, res.W) if res.W is not None else float("nan")
            norm = float(run.history.W_norm[-1])  # type: ignore[index]
            print(f"| {seed} | {label} | {run.status.value} | {run.n_steps} | {norm:.4g} | "
                  f"{corr:.6f} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
