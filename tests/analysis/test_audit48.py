# SPDX-License-Identifier: BSD-3-Clause
"""Session 48 audit: arguments of the analysis functions checked with errors that name them (a
string for a bool was taken as True; huge sizes ran into MemoryError)."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.analysis import check_loss, fit_rates, robustness_radius


def test_robustness_radius_refuses_a_string_for_svm() -> None:
    data = sg.random_data(3, 4, 5, seed=0)
    with pytest.raises(sg.ProblemError, match="'svm' parameter of robustness_radius"):
        robustness_radius(data, np.eye(5), svm="no")


def test_check_loss_bounds_the_grid() -> None:
    data = sg.random_data(3, 4, 5, seed=0)
    with pytest.raises(sg.ProblemError, match=r"'grid' parameter of check_loss.*\[3, 1048577\]"):
        check_loss("logistic", data, grid=10**9)


def test_fit_rates_bounds_the_resamples() -> None:
    run = sg.train(sg.random_data(3, 4, 5, seed=0), n_steps=200, record_every=10)
    with pytest.raises(sg.ProblemError, match="'n_boot' parameter of fit_rates"):
        fit_rates(run, n_boot=10**12)
