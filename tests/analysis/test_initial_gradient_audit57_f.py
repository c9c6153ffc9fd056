# SPDX-License-Identifier: BSD-3-Clause
"""Regression of audit 57 (F4): good_initial_gradient on data without the linear head's scores
names itself and what it accepts (it takes no v=)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import svmgeo as sg


def test_data_without_scores_is_refused_in_good_initial_gradient_s_terms() -> None:
    """Before session 57 the error came from the training problem: "head='linear' needs v:
    dataset 0 has no v. Pass v=... to train", naming neither the function called nor its
    data's other option, scores=."""
    assert "v" not in inspect.signature(sg.good_initial_gradient).parameters  # no v= to pass
    rng = np.random.default_rng(0)
    data = sg.TokenData(rng.normal(size=(3, 4, 3)), Z=rng.normal(size=(3, 3)))
    with pytest.raises(sg.ProblemError) as info:
        sg.good_initial_gradient(data)
    text = str(info.value)
    assert text.startswith("good_initial_gradient"), text
    assert "v=" in text and "scores=" in text and "(3, 4)" in text, text
    assert "train" not in text and "dataset 0" not in text, text
