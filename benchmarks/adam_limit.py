# SPDX-License-Identifier: BSD-3-Clause
"""Does Adam reach the l_inf Att-SVM with more steps? (docs/optimizers.md, issue #23.)

For ``random_data(6, 8, 10)`` seeds 0-3, Adam (Kingma & Ba defaults, eta = 0.1, W from zero)
and Adam with eps = 0 run 30000 steps (the rules of the ``optimizers`` experiment); W after
3000, 10000 and 30000 steps is compared, as in the experiment's trial, with every Att-SVM of
the selection it has then (``svm_correlations``: the best over the optimal face for l1,
l_inf, spectral; "≥ x" where the face's best could not be measured and x is a lower bound on
it, ``FaceAlignment.maximum``), and the closest is listed. Sign descent, the l_inf rule Adam is predicted to
match, is listed at the same steps.

    OPENBLAS_NUM_THREADS=1 python benchmarks/adam_limit.py
"""

from __future__ import annotations

import sys
import time

import svmgeo as sg
from svmgeo.experiments.optimizers import OPTIMIZERS, STEP, SVMS, closest, svm_correlations
from svmgeo.gd import RiskOracle

SEEDS = (0, 1, 2, 3)
LENGTHS = (3000, 10000, 30000)
RULES = ("adam", "adam eps=0", "sign")


def main() -> int:
    cols = " | ".join(SVMS)
    print(f"| optimizer | steps | seed | {cols} | closest |")
    print("|---" * (len(SVMS) + 4) + "|")
    for name in RULES:
        for seed in SEEDS:
            t = time.process_time()
            data = sg.random_data(6, 8, 10, seed=seed)
            run = sg.train(data, n_steps=max(LENGTHS), step_size=STEP, record_every=1000,
                           **OPTIMIZERS[name])  # fmt: skip
            assert run.history.W is not None
            steps = list(run.history.step)
            for n in LENGTHS:
                W = run.history.W[steps.index(n)]
                alpha = RiskOracle(data)(W).selected.reshape(data.selection_shape)
                bounds: set[str] = set()
                corr, _ = svm_correlations(data, W, alpha, SVMS, lower_bounds=bounds)
                cells = " | ".join(f"{'≥ ' if k in bounds else ''}{corr[k]:.3f}" for k in SVMS)
                print(f"| {name} | {n} | {seed} | {cells} | {closest(corr, bounds)} |", flush=True)
            print(f"  {name} seed {seed}: cpu {time.process_time() - t:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
