# SPDX-License-Identifier: BSD-3-Clause
"""The concave head's lam in train and train_batch: finite, shared or one per instance."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg


def test_batch_takes_one_lam_per_instance() -> None:
    """train_batch's documented (B,) lam: instance b trains as train with lam[b] (it was
    refused with a message naming train)."""
    datasets = [sg.random_data(4, 5, 6, seed=s) for s in range(3)]
    lams = np.array([0.1, 0.2, 0.3])
    batch = sg.train_batch(datasets, head="concave", lam=lams, n_steps=20, backend="numpy")
    for b, lam in enumerate(lams):
        one = sg.train(datasets[b], head="concave", lam=float(lam), n_steps=20, backend="numpy")
        np.testing.assert_array_equal(batch.W[b], one.W)


@pytest.mark.parametrize("lam", [float("inf"), float("nan"), -0.1])
def test_lam_must_be_finite_and_nonnegative(lam: float) -> None:
    data = sg.random_data(4, 5, 6, seed=0)
    with pytest.raises(sg.ProblemError, match="lam"):
        sg.train(data, head="concave", lam=lam, n_steps=3)
    with pytest.raises(sg.ProblemError, match="lam"):
        sg.train_batch([data, data], head="concave", lam=np.array([0.1, lam]), n_steps=3)
