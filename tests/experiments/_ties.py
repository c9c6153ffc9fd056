# SPDX-License-Identifier: BSD-3-Clause
"""A final iterate whose largest logit is tied: the data and W of the tied-selection tests."""

from __future__ import annotations

import numpy as np

import svmgeo as sg


def tied_final_iterate(seed: int = 0) -> tuple[sg.TokenData, np.ndarray]:
    """``random_data(6, 8, 10, seed)`` with tokens 3 and 5 of sequence 0 large and different
    only in their last coordinate, and a W that ignores it (W = u z_0^T, u_9 = 0), under which
    the two share sequence 0's largest logit exactly."""
    data = sg.random_data(6, 8, 10, seed=seed)
    X = np.array(data.X)
    X[0, 3] *= 10.0
    X[0, 5] = X[0, 3]
    X[0, 5, 9] += 1.0
    u = X[0, 3].copy()
    u[9] = 0.0
    tied = sg.TokenData(X, Y=data.Y, v=data.v, Z=data.Z)
    return tied, np.outer(u, np.asarray(data.Z)[0])
