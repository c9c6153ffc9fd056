# SPDX-License-Identifier: BSD-3-Clause
r"""Hand-built low-dimensional datasets whose Att-SVM solutions are derived by hand.

One sequence, d = 2, cross-attention query z = e_1, so W z = W[:, 0] =: u and ‖W‖_F is
minimised with W = u e_1ᵀ: Att-SVM(α) is min ‖u‖ s.t. (x_α − x_t)ᵀ u ≥ 1.

TRIANGLE: x_0 = (1, 0), x_1 = (0, 1), x_2 = (−2, 0).
  α = 0: rows (1, −1)·u ≥ 1, (3, 0)·u ≥ 1. u = (½, −½) meets the first with equality and
         gives 3/2 on the second  →  support {1}.
  α = 1: rows (−1, 1)·u ≥ 1, (2, 1)·u ≥ 1. Neither alone suffices ((−½, ½) gives −½ on the
         second; (⅖, ⅕) gives −⅕ on the first); both tight: u = (0, 1), λ = (⅔, ⅓) > 0
         →  support {0, 2}.
  α = 2: rows (−3, 0)·u ≥ 1, (−2, −1)·u ≥ 1. u = (−⅖, −⅕) is tight on the second and gives
         6/5 on the first  →  support {1}.
"""

from __future__ import annotations

import numpy as np

import svmgeo as sg

TRIANGLE = np.array([[[1.0, 0.0], [0.0, 1.0], [-2.0, 0.0]]])
E1 = np.array([[1.0, 0.0]])


def triangle(scores: list[float]) -> sg.TokenData:
    return sg.TokenData(TRIANGLE, Z=E1, scores=np.array([scores]))
