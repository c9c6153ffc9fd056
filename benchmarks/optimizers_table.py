# SPDX-License-Identifier: BSD-3-Clause
"""The measured table of docs/optimizers.md: which SVM each optimizer's W ends closest to.

A thin caller of the ``optimizers`` experiment (``svmgeo reproduce optimizers``, which adds the
spectral SVM, the optimal faces, (K, Q) and seeds 0-9); this table keeps its four seeds.

For ``random_data(6, 8, 10)`` seeds 0-3 and each optimizer, train W from zero, take the final
selection (the most probable key of every query; a tied one is named and no SVM solved),
solve the Frobenius, nuclear, l1, l1.5 and l_inf Att-SVMs of that selection, and print the
correlation of the final W with each (and the largest). ``--check`` compares the printed rows
with the table in docs/optimizers.md.

    OPENBLAS_NUM_THREADS=1 python benchmarks/optimizers_table.py [--check]
    OPENBLAS_NUM_THREADS=1 python benchmarks/optimizers_table.py --rates   (the rates example)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import svmgeo as sg
from svmgeo.experiments.optimizers import OPTIMIZERS, closest, final_run, svm_correlations
from svmgeo.experiments.optimizers import SVMS as OPT_SVMS
from svmgeo.gd import RiskOracle

SEEDS = (0, 1, 2, 3)
N_STEPS = 3000
#: The SVMs of this table (no spectral column; correlations with the returned solutions).
SVMS = {k: OPT_SVMS[k] for k in ("fro", "nuc", "l1", "l1.5", "linf")}
DOC = Path(__file__).resolve().parents[1] / "docs" / "optimizers.md"
BEGIN, END = "<!-- optimizers_table begin -->", "<!-- optimizers_table end -->"


def rows() -> list[str]:
    """The table's markdown rows (header first), from the ``optimizers`` experiment's
    :func:`~svmgeo.experiments.optimizers.final_run` and ``svm_correlations``."""
    out = [
        "| optimizer | seed | " + " | ".join(SVMS) + " | closest |",
        "|---" * (len(SVMS) + 3) + "|",
    ]
    for seed in SEEDS:
        data = sg.random_data(6, 8, 10, seed=seed)
        cache: dict[tuple[str, bytes], object] = {}
        for name in OPTIMIZERS:
            W, alpha, tied = final_run(data, name, n_steps=N_STEPS)
            corr, _ = svm_correlations(data, W, alpha, SVMS, face=frozenset(), cache=cache)
            cells = " | ".join(f"{corr[k]:.3f}" for k in SVMS)
            best = f"none (tied: {tied})" if tied else closest(corr)
            out.append(f"| {name} | {seed} | {cells} | {best} |")
    return out


def rates_rows() -> list[str]:
    """fit_rates on GD (plain and normalized steps) for random_data(6, 8, 10, seed=0), against
    the Frobenius Att-SVM of the final selection: the norm fitted against log t, and for the
    normalized run also against t (as verify fits steps of a fixed length); each slope with
    its drift across the window (the lack-of-fit check), and the verdict's first clause."""
    data = sg.random_data(6, 8, 10, seed=0)
    oracle = RiskOracle(data)
    out = [
        "| run | ||W^mm||_F | norm slope [95%] (drift) | kappa [95%] (drift) | lambda (drift) "
        "| final corr | verdict |",
        "|---" * 7 + "|",
    ]
    for name, kw, growths in (
        ("gd plain, eta 1", {"normalized": False, "step_size": 1.0}, ("log",)),
        ("gd normalized, eta 0.1", {"step_size": 0.1}, ("log", "linear")),
    ):
        run = sg.train(data, n_steps=20000, record_every=100, **kw)  # type: ignore[arg-type]
        assert run.W is not None
        alpha = oracle(run.W).selected.reshape(data.selection_shape)
        W_mm = sg.att_svm(data, alpha).W
        for growth in growths:
            r = sg.fit_rates(run, W_mm, growth=growth)
            assert r.error_power_ci is not None and r.error_log_power is not None
            assert r.error_power_lack_of_fit is not None and r.error_log_power_lack_of_fit
            out.append(
                f"| {name}, growth {growth} | {np.linalg.norm(W_mm):.3f} | {r.norm_slope:.3g} "
                f"[{r.norm_slope_ci[0]:.3g}, {r.norm_slope_ci[1]:.3g}] "
                f"({r.norm_lack_of_fit.drift:+.0%}) | {r.error_power:.3g} "
                f"[{r.error_power_ci[0]:.3g}, {r.error_power_ci[1]:.3g}] "
                f"({r.error_power_lack_of_fit.drift:+.0%}) | {r.error_log_power:.3g} "
                f"({r.error_log_power_lack_of_fit.drift:+.0%}) | {r.final_corr:.6f} "
                f"| {r.verdict.split(':')[0].split(';')[0]} |"
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with docs/optimizers.md")
    parser.add_argument("--rates", action="store_true", help="print the rates example instead")
    args = parser.parse_args()
    if args.rates:
        print("\n".join(rates_rows()))
        return 0
    table = rows()
    print("\n".join(table))
    if args.check:
        text = DOC.read_text()
        documented = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip().splitlines()
        bad = [(a, b) for a, b in zip(table, documented, strict=False) if a != b]
        if len(documented) != len(table) or bad:
            print(f"--check: {len(bad)} row(s) differ from {DOC.name}", file=sys.stderr)
            return 1
        print(f"--check: 0 mismatch(es) with {DOC.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
