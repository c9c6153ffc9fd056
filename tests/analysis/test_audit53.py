# SPDX-License-Identifier: BSD-3-Clause
"""Session 53's audit of svmgeo.analysis: stability results at extreme data scales and the
regularization path's log-gap objective for the logistic loss with large scores."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.analysis import lipschitz, robustness_radius


def _cross(seed: int, scale: float = 1.0) -> tuple[sg.TokenData, np.ndarray]:
    rng = np.random.default_rng(seed)
    X, Z, W = rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 2)), rng.normal(size=(2, 2))
    return sg.TokenData(X * scale, Z=Z * scale, v=np.ones(2)), W


@pytest.mark.parametrize("name", ["softmax", "linear", "sigmoid"])
@pytest.mark.parametrize("scale", [1e-75, 1e75])
def test_lipschitz_in_w_is_homogeneous_at_extreme_data_scales(name: str, scale: float) -> None:
    # X, Z -> sX, sZ with W -> W / s^2 keeps the logits, and every constant in W scales by
    # s^3 (U^T J X by s^2, z by s). Before: LinAlgError at 1e75 (the Gram of the stacked
    # Jacobian overflowed), overall = 0 and bound_overall = 0 or inf at 1e-75 / 1e75.
    unit = lipschitz(*_cross(0), name)
    data, W = _cross(0, scale)
    far = lipschitz(data, W / scale**2, name)
    for field in ("per_query", "overall", "bound_per_query", "bound_overall"):
        np.testing.assert_allclose(
            np.asarray(getattr(far, field)) / scale**3, getattr(unit, field), rtol=1e-9
        )


def test_robustness_perturbation_attains_the_radius_for_large_tokens_and_w() -> None:
    # tokens and queries of 1e75, W of 1e60: m g overflowed in m g / (2 ||g||^2), and the
    # perturbation was inf
    data, W = _cross(0, 1e75)
    rad = robustness_radius(data, W * 1e60, svm=False)
    assert np.all(np.isfinite(rad.perturbation))
    np.testing.assert_allclose(
        np.linalg.norm(rad.perturbation, axis=(1, 2)), rad.radius, rtol=1e-12
    )
    for i in range(data.n):  # just past the radius, the selection of some query changes
        logits = (data.X[i] + 1.000001 * rad.perturbation[i]) @ (W * 1e60) @ data.queries[i].T
        assert not np.array_equal(logits.argmax(axis=0), rad.selected[i])
