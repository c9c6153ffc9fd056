# SPDX-License-Identifier: BSD-3-Clause
"""Session 48: history fields asked for by name that the run cannot record are refused."""

from __future__ import annotations

import pytest

import svmgeo as sg


@pytest.mark.parametrize("fields", [("v",), ("v_norm",), ("loss", "v", "v_norm")])
def test_recording_a_fixed_head_is_refused(fields: tuple[str, ...]) -> None:
    """record=('v', 'v_norm') without train_head recorded nothing at all, silently."""
    data = sg.random_data(3, 4, 2, seed=0)
    with pytest.raises(sg.ProblemError, match="train_head=True"):
        sg.train(data, record=fields, n_steps=5)
    with pytest.raises(sg.ProblemError, match="train_head=True"):
        sg.train_batch([data, data], record=fields, n_steps=5)
    run = sg.train(data, record=fields, n_steps=5, train_head=True)
    if "v" in fields:
        assert run.history.v is not None and run.history.v.shape[0] == len(run.history.step)
    default = sg.train(data, n_steps=5)  # the default record: the fixed head is dropped
    assert default.history.v is None and default.history.loss is not None
