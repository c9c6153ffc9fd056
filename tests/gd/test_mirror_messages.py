# SPDX-License-Identifier: BSD-3-Clause
"""The messages of l_p mirror descent: the exponent's range and the GRADIENT_UNDERFLOW stop."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import svmgeo as sg

_CALLERS: dict[str, Callable[..., Any]] = {
    "train_mirror": lambda data, p: sg.train_mirror(data, exponent=p, n_steps=2),
    "verify_mirror": lambda data, p: sg.verify_mirror(data, exponent=p, n_steps=2, backend="numpy"),
    "train": lambda data, p: sg.train(
        data, optimizer="mirror", exponent=p, n_steps=2, backend="numpy"
    ),
}


@pytest.mark.parametrize("p", [1.0, 0.5, math.inf, math.nan])
@pytest.mark.parametrize("caller", list(_CALLERS))
def test_exponent_error_states_one_open_range(caller: str, p: float) -> None:
    """Regression (audit 45, F1): the message said "(1, inf]" and then refused inf as "must
    be finite"; it now names one range, (1, inf), the argument, the value and the fix."""
    data = sg.random_data(2, 3, 4, seed=0)
    with pytest.raises(sg.ProblemError) as info:
        _CALLERS[caller](data, p)
    msg = str(info.value)
    assert f"The 'exponent' parameter of {caller} must be a float in (1, inf)." in msg
    assert f"Got {p!r} instead" in msg
    assert "inf]" not in msg and "must be finite" not in msg
    assert "e.g. exponent=1.5" in msg
    assert "att_svm(data, norm=('lp', inf))" in msg


def test_exponent_error_fix_is_a_call_that_works() -> None:
    """The message's pointer for p = inf (and p = 1) is a call att_svm takes."""
    data = sg.random_data(2, 3, 4, seed=0)
    for q in (math.inf, 1.0):
        res = sg.att_svm(data, norm=("lp", q))
        assert res.success and res.W is not None


def _huge_mirror_coordinates(normalized: bool) -> sg.GDRun:
    # Theta = |W|^(p-1) = 50^199 ~ e^778: an eta-step is below float64's range beside it
    data = sg.random_data(3, 4, 4, seed=1)
    init = np.full((4, 4), 50.0)
    return sg.train_mirror(data, exponent=200.0, init=init, n_steps=20, normalized=normalized)


def test_normalized_underflow_message_says_what_happened() -> None:
    """Regression (audit 45, F2): a normalized run was told "use normalized=True to go on"."""
    run = _huge_mirror_coordinates(normalized=True)
    assert run.config.normalized and run.status is sg.StopStatus.GRADIENT_UNDERFLOW
    msg = run.message
    assert "use normalized=True to go on" not in msg
    assert msg.startswith("stopped after 0 steps: ")
    assert "the normalized step eta fell below" in msg and "smaller init" in msg
    assert "eta*|grad L|" not in msg  # the plain step's case is not this run's


def test_plain_underflow_message_promises_nothing_false() -> None:
    """Regression (audit 45, F2): the same instance fails with plain steps too, so the plain
    run's advice may not promise that normalized=True goes on; it says that it may."""
    plain = _huge_mirror_coordinates(normalized=False)
    normed = _huge_mirror_coordinates(normalized=True)
    assert plain.status is normed.status is sg.StopStatus.GRADIENT_UNDERFLOW
    assert "use normalized=True to go on" not in plain.message
    assert "normalized=True" in plain.message and "may go on" in plain.message
    assert "smaller init" not in plain.message  # the normalized run's case


def test_plain_underflow_advice_holds_where_the_gradient_underflowed() -> None:
    """Where the plain step underflows because the gradient does (p = 2, far out along the
    SVM direction), the normalized run does go on, as the message says it may."""
    data = sg.random_data(3, 4, 4, seed=1)
    svm = sg.att_svm(data, norm=("lp", 2.0))
    assert svm.W is not None
    kw: dict[str, Any] = dict(exponent=2.0, init=1e3 * svm.W, n_steps=20)
    plain = sg.train_mirror(data, normalized=False, **kw)
    normed = sg.train_mirror(data, normalized=True, **kw)
    assert plain.status is sg.StopStatus.GRADIENT_UNDERFLOW and plain.n_steps == 0
    assert "may go on" in plain.message
    assert normed.status is sg.StopStatus.MAX_STEPS and normed.n_steps == 20


def test_next_token_overflow_message_is_train_ntp_s() -> None:
    """Regression (audit 45): train_ntp's OVERFLOW message was the attention loop's (the
    attention limit 1e150, "rescale init", which train_ntp does not take)."""
    data = sg.random_next_token_data(10, 3, 4, 5, tier_size=2, seed=0)
    run = sg.train_ntp(data, n_steps=20, step_size=1e300, normalized=False)
    assert run.status is sg.StopStatus.OVERFLOW, run.message
    assert "next-token risk's norm limit" in run.message
    assert "rescale init" not in run.message and "1e150" not in run.message
