# SPDX-License-Identifier: BSD-3-Clause
"""Wrong verdicts of the float-only and of the exact feasibility check on the tiny-margin corpus.

Usage::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/tiny_margin_verdicts.py

docs/certificates.md ("Why this matters"). The corpus is ``_corpus()`` of
``tests/solvers/test_tiny_margin_corpus.py`` (barely separable instances, margins
1e-6 … 1e-14, nearly collinear tokens, token scales 1e-150 … 1e150, truth known by
construction), each built as that test builds it. Each instance is checked with
``sg.feasibility(data, alpha=0, exact=False)`` (floating point only) and with
``exact=True`` (the default). A verdict is wrong when it is decided (feasible with status
``OPTIMAL``, or ``INFEASIBLE``) and contradicts the truth; an inaccurate status is undecided,
never wrong. For each mode the script prints the number of instances, of wrong verdicts
(feasible instances called infeasible, and the reverse) and of undecided ones; ``--list``
also prints each wrong verdict's label. Runtime about 3 s.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
import warnings
from pathlib import Path

import numpy as np

import svmgeo as sg

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "solvers" / "test_tiny_margin_corpus.py"


def _load_corpus() -> tuple:
    spec = importlib.util.spec_from_file_location("tiny_margin_corpus", CORPUS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._corpus(), module._instance, module._verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print each wrong verdict's label")
    args = parser.parse_args()
    corpus, instance, verdict_of = _load_corpus()
    print(f"corpus: {len(corpus)} instances ({CORPUS.name})")
    for exact in (False, True):
        t0 = time.perf_counter()
        missed, false_feasible, undecided, labels = 0, 0, 0, []
        for label, names, eps, s, zs in corpus:
            data, truth = instance(names, eps, s, zs, seed=len(label))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
                res = sg.feasibility(data, np.zeros(data.n, int), exact=exact)
            verdict = verdict_of(res.status, res.feasible)
            if verdict == "undecided":
                undecided += 1
            elif verdict != ("feasible" if truth else "infeasible"):
                missed += truth
                false_feasible += not truth
                labels.append(label)
        mode = "exact" if exact else "float"
        print(
            f"{mode}: {len(corpus)} instances, {missed + false_feasible} wrong ({missed} feasible "
            f"called infeasible, {false_feasible} infeasible called feasible), {undecided} "
            f"undecided, {time.perf_counter() - t0:.1f} s"
        )
        if args.list:
            for label in labels:
                print(f"  wrong ({mode}): {label}")


if __name__ == "__main__":
    main()
