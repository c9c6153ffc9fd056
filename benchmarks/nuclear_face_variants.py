# SPDX-License-Identifier: BSD-3-Clause
"""Is the ``variants`` experiment's nuclear column an understatement? (docs/attention-maps.md.)

The experiment correlates each map's final W with the Att-SVM⋆ (nuclear) solution the solver
returns, one point of the optimal set, which need not be a single point (the nuclear norm is not
strictly convex). For every run of its full grid (``random_data(6, 8, 10)``, seeds 0-5, every
map, 20,000 steps of ``train_map``), this prints, for the Att-SVM⋆ of the final selection:

* ``excess@τ``: the best correlation with W over the τ-optimal face
  :math:`\\mathcal F_\\tau = \\{\\|W'\\|_* \\le (1 + \\tau)\\mathrm{OPT}\\}`
  (``optimal_face_alignment``) minus the returned one, for τ = 1e-5, 1e-6, 1e-7 ("≥" where it
  is only a lower bound, ``FaceAlignment.maximum`` False). The optimal set lies in every
  :math:`\\mathcal F_\\tau`, so the smallest excess that is a maximum bounds how much the
  returned correlation can understate the best over the optimal set (up to the solvers'
  accuracy);
* ``width@τ``: ``optimum_uniqueness(res, tol=τ, n_directions=3)``, the face's extent along
  random directions relative to ‖W‖_F, for τ = 1e-4 ... 1e-7: a unique optimum's face narrows
  like √τ (a factor 3.16 per decade), a face of optima of relative diameter δ stays ≳ δ.

    OPENBLAS_NUM_THREADS=1 python benchmarks/nuclear_face_variants.py   # about 2 CPU minutes
"""

from __future__ import annotations

import itertools
import math
import sys

import numpy as np

import svmgeo as sg
from svmgeo.experiments._selection import final_selection
from svmgeo.experiments.variants import MAPS, train_map
from svmgeo.experiments.variants import grid as variants_grid
from svmgeo.solvers import optimal_face_alignment, optimum_uniqueness

FACE_TAUS = (1e-5, 1e-6, 1e-7)
WIDTH_TAUS = (1e-4, 1e-5, 1e-6, 1e-7)


def main() -> int:
    heads = [f"excess@{t:g}" for t in FACE_TAUS] + [f"width@{t:g}" for t in WIDTH_TAUS]
    print("| map | seed | returned corr | " + " | ".join(heads) + " | bound |")
    print("|---" * (len(heads) + 4) + "|")
    bounds, ratios = [], []
    for params in sorted(variants_grid(False), key=lambda p: (MAPS.index(p["attention"]),
                                                              p["seed"])):  # fmt: skip
        data = sg.random_data(6, 8, 10, seed=params["seed"])
        W = np.asarray(train_map(data, params["attention"], params["n_steps"], params["seed"]).W)
        alpha, tied = final_selection(data, W)
        res = None if alpha is None else sg.att_svm(data, alpha, norm="nuc")
        if res is None or res.W is None:
            print(f"| {params['attention']} | {params['seed']} | no Att-SVM⋆ ({tied or res}) |")
            continue
        faces = [optimal_face_alignment(res, W, tol=t) for t in FACE_TAUS]
        returned = faces[0].returned_correlation
        excess = [(f.correlation - returned, f.maximum) for f in faces]
        widths = [optimum_uniqueness(res, tol=t, n_directions=3).width for t in WIDTH_TAUS]
        bound = min((e for e, is_max in excess if is_max), default=math.nan)  # none: no bound
        if not math.isnan(bound):
            bounds.append(bound)
        ratios += [a / b for a, b in itertools.pairwise(widths)]
        cells = [f"{'' if m else '≥ '}{e:.1e}" for e, m in excess] + [f"{w:.2e}" for w in widths]
        print(f"| {params['attention']} | {params['seed']} | {returned:.6f} | "
              f"{' | '.join(cells)} | {bound:.1e} |", flush=True)  # fmt: skip
    span = f"{min(bounds):.1e}-{max(bounds):.1e}" if bounds else "-"
    print(f"\nbound on the understatement: {span} over {len(bounds)} "
          f"runs; width ratio per decade of tau: {min(ratios):.3f}-{max(ratios):.3f} "
          f"(sqrt(10) = {np.sqrt(10):.3f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
