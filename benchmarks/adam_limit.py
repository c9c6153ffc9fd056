# SPDX-License-Identifier: BSD-3-Clause
"""Does Adam reach the l_inf Att-SVM with more steps? (docs/optimizers.md, issue #23.)

For ``random_data(6, 8, 10)`` seeds 0-3, Adam (Kingma & Ba defaults, eta = 0.1, W from zero)
and Adam with eps = 0 run 3000, 10000 and 30000 steps; for each run the ``optimizers``
experiment's trial gives the final correlation with every Att-SVM of its final selection (the
best over the optimal face for l1, l_inf, spectral) and the closest. Sign descent, the
l_inf rule Adam is predicted to match, is listed at the same lengths.

    OPENBLAS_NUM_THREADS=1 python benchmarks/adam_limit.py
"""

from __future__ import annotations

import sys
import time

from svmgeo.experiments.optimizers import SVMS, trial

SEEDS = (0, 1, 2, 3)
LENGTHS = (3000, 10000, 30000)
RULES = ("adam", "adam eps=0", "sign")


def main() -> int:
    cols = " | ".join(SVMS)
    print(f"| optimizer | steps | seed | {cols} | closest |")
    print("|---" * (len(SVMS) + 4) + "|")
    for name in RULES:
        for n in LENGTHS:
            for seed in SEEDS:
                t = time.process_time()
                row = trial(seed=seed, param="W", optimizer=name, n_steps=n)
                cells = " | ".join(f"{row[f'corr_{k}']:.3f}" for k in SVMS)
                print(f"| {name} | {n} | {seed} | {cells} | {row['closest']} |", flush=True)
                print(f"  cpu {time.process_time() - t:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
