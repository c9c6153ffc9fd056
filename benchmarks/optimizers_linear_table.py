# SPDX-License-Identifier: BSD-3-Clause
r"""The per-trial table of docs/optimizers.md ("Calibration: linear attention"), from the
trial table of a full ``optimizers_linear`` run.

One row per (rule, seed), as :func:`svmgeo.experiments.optimizers.linear_summarize` orders
them: the step η, the margin ratio

.. math::

    \rho_{\|\cdot\|}(W) = \frac{\min_j \langle A_j, W\rangle}{\|W\|}\,\|W^{mm}_{\|\cdot\|}\| \le 1

in every norm (the rule's own in bold), its own ratio at a tenth of the steps, the
correlation with its own SVM ("≥ x" where it is only a lower bound on the optimal face's
best) and the closest SVM by correlation / by margin ratio. ``--check`` compares the rows
with the table between the ``optimizers_linear_table`` markers of docs/optimizers.md and
prints every cell that differs, with both values (exit 1 when one does).

    OPENBLAS_NUM_THREADS=1 svmgeo reproduce optimizers_linear --out DIR   # 80 trials
    python benchmarks/optimizers_linear_table.py DIR/optimizers_linear.csv [--check]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import svmgeo as sg
from svmgeo.experiments.optimizers import SVMS, face_lower_bounds, linear_summarize

DOC = Path(__file__).resolve().parents[1] / "docs" / "optimizers.md"
BEGIN, END = "<!-- optimizers_linear_table begin -->", "<!-- optimizers_linear_table end -->"


def rows(table: Path) -> list[str]:
    """The markdown rows, header first, of the trial table ``table``."""
    trials = [r for r in sg.read_results(table) if r["status"] == "ok"]
    _, summary = linear_summarize(trials)
    out = [
        "| optimizer | seed | η | "
        + " | ".join(f"ρ {k}" for k in SVMS)
        + " | ρ own at T/10 | corr own | closest: corr / margin |",
        "|---" * (len(SVMS) + 6) + "|",
    ]
    for r in summary:
        own = r["own"]
        ratios = [f"{r[f'ratio_{k}']:.4f}" for k in SVMS]
        ratios = [f"**{v}**" if k == own else v for k, v in zip(SVMS, ratios, strict=True)]
        bound = "≥ " if own in (face_lower_bounds(r) or ()) else ""
        out.append(
            f"| {r['optimizer']} | {r['seed']} | {r['step']:.3g} | {' | '.join(ratios)} "
            f"| {r['own_ratio_tenth']:.4f} | {bound}{r[f'corr_{own}']:.4f} "
            f"| {r['closest']} / {r['closest_margin']} |"
        )
    return out


def differences(table: list[str], documented: list[str]) -> list[str]:
    """One line per cell of ``documented`` that differs from ``table``: the row's optimizer
    and seed, the column, the documented value and the run's."""
    if len(table) != len(documented):
        return [f"{len(documented)} documented rows, {len(table)} in the run"]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    out = []
    for run_line, doc_line in zip(table[2:], documented[2:], strict=True):
        run_cells = [c.strip() for c in run_line.strip("|").split("|")]
        doc_cells = [c.strip() for c in doc_line.strip("|").split("|")]
        for name, ran, doc in zip(header, run_cells, doc_cells, strict=True):
            if ran != doc:
                out.append(f"{run_cells[0]}, seed {run_cells[1]}, {name}: doc {doc}, run {ran}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("table", type=Path, help="DIR/optimizers_linear.csv of a full run")
    parser.add_argument("--check", action="store_true", help="compare with docs/optimizers.md")
    args = parser.parse_args(argv)
    table = rows(args.table)
    print("\n".join(table))
    if not args.check:
        return 0
    text = DOC.read_text()
    documented = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip().splitlines()
    diff = differences(table, documented)
    print(f"--check: {len(diff)} difference(s) with {DOC.name}", *diff, sep="\n")
    return 1 if diff else 0


if __name__ == "__main__":
    raise SystemExit(main())
