# SPDX-License-Identifier: BSD-3-Clause
r"""The calibration of ``fit_rates`` in docs/optimizers.md ("Rates"): plain GD on separable
logistic regression, where the rates are theorems (Soudry et al. 2018).

.. math::

    \|w(t)\| = \|\hat w\| \log t + O(\log\log t), \qquad \hat w = (1/2, 0)

for the data of ``tests/analysis/test_rates.py`` (support vectors :math:`\pm(2, 0)`, step
0.5), whose ``logistic_gd`` runs the GD here, so the test and this table share one run.
Prints, for 2·10⁴ steps (the test's run) and 10⁵ steps, :func:`svmgeo.fit_rates` against
:math:`\hat w`: the fitted window, the norm slope (→ 0.5), κ and λ of the direction error
(λ → 2 once the residual has converged), each with its 95 % bootstrap interval, the final
correlation and the verdict. Deterministic data and bootstrap seed (``fit_rates``'s
``seed=0``): no seeds to list.

    OPENBLAS_NUM_THREADS=1 python benchmarks/rates_calibration.py

About a second.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import svmgeo as sg
from tests.analysis.test_rates import W_MM, logistic_gd


def rows(horizons: list[int]) -> list[str]:
    """The markdown table, header first: one row per number of GD steps."""
    out = [
        "| steps | window | norm slope [95%] | kappa [95%] | lambda [95%] | final corr | verdict |",
        "|---" * 7 + "|",
    ]
    for n_steps in horizons:
        steps, ws = logistic_gd(n_steps)
        r = sg.fit_rates((steps, ws), W_MM)
        assert r.error_power_ci is not None and r.error_log_power_ci is not None
        out.append(
            f"| {n_steps} | [{r.steps[0]:.0f}, {r.steps[-1]:.0f}] "
            f"| {r.norm_slope:.4f} [{r.norm_slope_ci[0]:.4f}, {r.norm_slope_ci[1]:.4f}] "
            f"| {r.error_power:.3f} [{r.error_power_ci[0]:.3f}, {r.error_power_ci[1]:.3f}] "
            f"| {r.error_log_power:.3f} [{r.error_log_power_ci[0]:.3f}, "
            f"{r.error_log_power_ci[1]:.3f}] | {r.final_corr:.6f} "
            f"| {r.verdict.split(';')[0]} |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, nargs="+", default=[20000, 100000])
    args = parser.parse_args(argv)
    print("\n".join(rows(args.steps)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
