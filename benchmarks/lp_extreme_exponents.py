# SPDX-License-Identifier: BSD-3-Clause
"""The l_p Att-SVM at extreme exponents, on every seed (CHANGELOG, session 39).

For the Att-SVM rows of the optimal tokens of ``random_data(3, 4, 5)`` and
``random_data(4, 4, 6)``, seeds 0-4, and p in {1 + 1e-12, 1 + 1e-9, 50, 700, 1000}: the status
of ``method="fast"`` and ``method="auto"``, and whether the answer is W = 0 (every row
violated). Where the smooth dual cannot go in float64 the fast path answers the nearer linear
program's (p = 1 or inf) W, certified at p.

    OPENBLAS_NUM_THREADS=1 python benchmarks/lp_extreme_exponents.py
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

import svmgeo as sg

SHAPES = ((3, 4, 5), (4, 4, 6))
SEEDS = range(5)
EXPONENTS = (1 + 1e-12, 1 + 1e-9, 50.0, 700.0, 1000.0)


def main() -> int:
    warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
    print("| (n, T, d) | seed | " + " | ".join(f"p = {p}" for p in EXPONENTS) + " |")
    print("|---|---|" + "---|" * len(EXPONENTS))
    for shape in SHAPES:
        for seed in SEEDS:
            data = sg.random_data(*shape, seed=seed)
            cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
            cells = []
            for p in EXPONENTS:
                answers = []
                for method in ("fast", "auto"):
                    res = sg.solve_svm(cs, norm=("lp", p), method=method)
                    zero = res.W is not None and not np.any(res.W)
                    answers.append(f"{method}: {res.status.value}{' (W = 0)' if zero else ''}")
                cells.append("; ".join(answers))
            print(f"| {shape} | {seed} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
