# SPDX-License-Identifier: BSD-3-Clause
"""Session 48: history fields asked for by name that the run cannot record are refused, and the
built-in losses pickle."""

from __future__ import annotations

import pickle

import numpy as np
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


@pytest.mark.parametrize("name", sorted(sg.LOSS_SPECS))
def test_a_built_in_loss_pickles_as_itself(name: str) -> None:
    """The built-ins' callables are lambdas: pickle refused them, and cloudpickle (Dask) made a
    copy that no longer selected the compiled kernels."""
    spec = sg.LOSS_SPECS[name]
    assert pickle.loads(pickle.dumps(spec)) is spec
    cloudpickle = pytest.importorskip("cloudpickle")
    assert cloudpickle.loads(cloudpickle.dumps(spec)) is spec


def test_a_pickled_built_in_trains_like_its_name() -> None:
    data = sg.random_data(3, 4, 2, seed=0)
    spec = pickle.loads(pickle.dumps(sg.LOSS_SPECS["exponential"]))
    run = sg.train(data, loss=spec, n_steps=20)
    np.testing.assert_array_equal(run.W, sg.train(data, loss="exponential", n_steps=20).W)
    user = sg.LossSpec("mine", np.exp, np.negative)  # a user's spec of ufuncs still pickles
    assert pickle.loads(pickle.dumps(user)) == user
