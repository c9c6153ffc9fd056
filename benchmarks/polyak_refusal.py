# SPDX-License-Identifier: BSD-3-Clause
r"""The Polyak step where L⋆ is not the risk's infimum (docs/optimizers.md, "The Polyak step").

For ``random_data(6, 4, 2, seed)``, seeds 0-4 by default: whether Att-SVM(opt) is feasible
(``RiskOracle.infimum_attained``), the lower bound :math:`L_\star` (``RiskOracle.optimal_risk``),
what ``train(data, step_size="polyak", n_steps=3000)`` does (a ``ProblemError`` where the
infimum is not attained; else its stop, steps, ‖W‖_F and last loss), and normalized GD with
η = 0.05 from W = 0 for 3000 steps: its loss at steps 1000 and 3000, and the smallest
:math:`L - L_\star` over all its 3001 recorded steps (> 0 is "L stays above L⋆" on this run).

    OPENBLAS_NUM_THREADS=1 python benchmarks/polyak_refusal.py [--seeds 0 1 2 3 4]

About 5 s on one core. The script reads only what older checkouts also had, so it also runs
on commit 338f28d, the one before the refusal (3c4ecea): ``git archive 338f28d | tar -x -C
OLD`` then ``PYTHONPATH=OLD python benchmarks/polyak_refusal.py`` (there ``infimum_attained``
prints n/a and the Polyak runs are not refused).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

import svmgeo as sg
from svmgeo.gd import RiskOracle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    a = parser.parse_args(argv)
    print("| seed | Att-SVM(opt) feasible | L⋆ | Polyak step, 3000 steps | GD η=0.05: L at 1000 | "
          "L at 3000 | min over the run of L − L⋆ |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for seed in a.seeds:
        data = sg.random_data(6, 4, 2, seed=seed)
        oracle = RiskOracle(data)
        attained = getattr(oracle, "infimum_attained", "n/a")
        l_star = oracle.optimal_risk
        try:
            run: Any = sg.train(data, step_size="polyak", n_steps=3000)  # type: ignore[arg-type]
            polyak = (f"{run.status.value} after {run.n_steps} steps, ‖W‖_F = "
                      f"{np.linalg.norm(run.W):.4g}, L = {run.history.loss[-1]:.3f}")  # fmt: skip
        except sg.ProblemError as exc:
            polyak = f"ProblemError ({str(exc).split(';')[0][:48]}...)"
        gd = sg.train(data, step_size=0.05, n_steps=3000, record_every=1, record=("loss",))
        loss = np.asarray(gd.history.loss)
        print(f"| {seed} | {attained} | {l_star:.4f} | {polyak} | {loss[1000]:.4f} | "
              f"{loss[-1]:.4f} | {np.min(loss - l_star):.4f} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
