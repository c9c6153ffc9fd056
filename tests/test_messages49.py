# SPDX-License-Identifier: BSD-3-Clause
"""User-facing messages, regressions of audit 49: train's init and loss errors offer only what
train takes, no numpy RuntimeWarning leaks from the numpy kernels, TokenData's shape errors say
how to fix them, and the LOT reason prints plain scores and names the SVM it tested."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import RiskOracle, loss_and_grad

DATA = sg.random_data(4, 5, 3, seed=1)  # d = 3


def _message(call: object) -> str:
    with pytest.raises(sg.ProblemError) as info:
        call()  # type: ignore[operator]
    return str(info.value)


# -- 1. train's init shapes and loss names ---------------------------------------------------
@pytest.mark.parametrize(
    ("param", "bad", "batched"),
    [
        ("W", np.eye(4), (1, 3, 3)),
        ("W", np.ones((1, 3, 3)), (1, 3, 3)),
        ("p", np.ones(4), (1, 3)),
        ("p", np.ones((1, 3)), (1, 3)),
    ],
)
def test_train_init_shape_error_offers_one_start(
    param: str, bad: np.ndarray, batched: tuple[int, ...]
) -> None:
    """The error offered (d, d) or (1, d, d) for a wrong-sized start, then refused (1, d, d)."""
    msg = _message(lambda: sg.train(DATA, param=param, init=bad, n_steps=5))
    want = (3, 3) if param == "W" else (3,)
    parts = re.split(r"; got (\([0-9, ]*\))\. ", msg)  # expected; got (shape). fix
    assert len(parts) == 3, msg
    offered, got, fix = parts
    assert offered.startswith(f"init {param} must have shape {want}") and got == str(bad.shape)
    assert str(batched) not in offered + fix, msg
    assert fix.startswith("train takes one start") and "train_batch" in fix, msg
    sg.train(DATA, param=param, init=np.zeros(want), n_steps=5)  # what it offers is taken


def test_train_batch_init_shape_error_keeps_the_batched_shape() -> None:
    msg = _message(lambda: sg.train_batch([DATA, DATA], init=np.eye(4), n_steps=5))
    assert "(3, 3) or (2, 3, 3)" in msg
    sg.train_batch([DATA, DATA], init=np.zeros((2, 3, 3)), n_steps=5)


def test_loss_square_name_points_to_its_loss_spec() -> None:
    """loss='square' was refused with a list without 'square' while the tuple error listed it."""
    calls = {
        "train": lambda loss: sg.train(DATA, loss=loss, n_steps=5),
        "train_batch": lambda loss: sg.train_batch([DATA], loss=loss, n_steps=5),
        "loss_and_grad": lambda loss: loss_and_grad(DATA, np.zeros((3, 3)), loss=loss),
        "RiskOracle": lambda loss: RiskOracle(DATA, loss=loss),
    }
    for where, call in calls.items():
        msg = _message(lambda call=call: call("square"))
        assert msg.startswith(f"The 'loss' parameter of {where}"), msg
        assert "got 'square'" in msg and "loss=svmgeo.LOSS_SPECS['square']" in msg, msg
        call(sg.LOSS_SPECS["square"])  # the fix it names is taken
    msg = _message(lambda: sg.train(DATA, loss=(lambda u: u,), n_steps=5))
    names = re.search(r"a name among (.*?), a svmgeo\.LossSpec", msg)
    assert names is not None, msg
    assert "'square'" not in names.group(1), msg  # train's names are its compiled ones
    assert "svmgeo.LOSS_SPECS['square']" in msg


# -- 2. numpy RuntimeWarnings ---------------------------------------------------------------
def test_numpy_backend_leaks_no_runtime_warning() -> None:
    """grad_w's inf * 0 and frobenius's inf / inf warned out of train; statuses unchanged."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2, 3, 2))
    X[:, 1] = X[:, 0]  # tokens 0 and 1 identical
    tied = sg.TokenData(X, v=np.array([1.0, 0.5]), Z=rng.normal(size=(2, 2)))
    big = sg.TokenData(DATA.X, v=DATA.v * 1e5, Z=DATA.Z, Y=DATA.Y)  # exp(-Y f) overflows
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r1 = sg.train(tied, n_steps=500, step_size=1.0, backend="numpy")
        r2 = sg.train(big, loss="exponential", normalized=False, n_steps=5, backend="numpy")
    assert r1.status is sg.StopStatus.OVERFLOW
    assert r2.status is sg.StopStatus.OVERFLOW


# -- 3. TokenData shape errors ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "start", "fix"),
    [
        ({"Z": np.ones((2, 3))}, "Z must have shape (2, 2); got (2, 3).", "Use Z of shape"),
        (
            {"Z": np.ones((2, 2)), "v": np.ones(3)},
            "v must have shape (2,); got (3,).",
            "use v of shape (2,)",
        ),
        (
            {"Z": np.ones((2, 2)), "Y": [1, 1, 1]},
            "Y must have shape (2,) or (2, 1); got (3,).",
            "Give one label per sequence",
        ),
        (
            {"query": "all", "mask": np.ones((2, 2), bool)},
            "mask must have shape (3, 3) or (2, 3, 3); got (2, 2).",
            "use shape (K, T) = (3, 3)",
        ),
        (
            {"Z": np.ones((2, 2)), "scores": np.ones((2, 4))},
            "scores must have shape (2, 3) or (2, 1, 3); got (2, 4).",
            "Give one score per token",
        ),
    ],
)
def test_token_data_shape_errors_say_how_to_fix(
    kwargs: dict[str, object], start: str, fix: str
) -> None:
    kwargs.setdefault("v", np.ones(2))
    msg = _message(lambda: sg.TokenData(np.ones((2, 3, 2)), **kwargs))  # type: ignore[arg-type]
    assert msg.startswith(start), msg
    assert fix in msg, msg


def test_token_data_label_error_prints_a_plain_value() -> None:
    msg = _message(lambda: sg.TokenData(np.ones((2, 3, 2)), Z=np.ones((2, 2)), Y=[0, 1]))
    assert "found 0.0 at index (0, 0)" in msg, msg
    assert "np." not in msg


# -- 4. the LOT reason -----------------------------------------------------------------------
def test_lot_reason_prints_zero_scores_without_sign() -> None:
    """A score Y h = -1 * 0 printed as -0."""
    X = np.array([[[1.0, 0.0], [0.0, 1.0], [-2.0, 0.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[-0.0, -0.0, -0.0]]))
    lot = sg.is_locally_optimal(data, [0])
    assert not lot.locally_optimal and lot.decided
    assert "scores 0 >= selected 0" in lot.reason, lot.reason
    assert "-0" not in lot.reason


def test_verify_prompt_lot_reason_names_the_p_svm() -> None:
    X = np.array([[[0, 0], [1, 1]], [[0, 0], [1, -1]], [[0, 0], [0.5, 1.0]]], dtype=float)
    data = sg.TokenData(X, Y=[1, -1, 1], v=[0.0, 1.0])  # prompt attention: no queries
    rep = sg.verify(data, param="p", n_steps=200)
    assert rep.lot_reason.startswith("locally optimal: p-SVM(alpha) is feasible"), rep.lot_reason
    assert "Att-SVM" not in rep.lot_reason
    rep_w = sg.verify(sg.random_data(2, 3, 4, seed=0), n_steps=50)
    assert "p-SVM" not in rep_w.lot_reason
