# SPDX-License-Identifier: BSD-3-Clause
"""The lane kernel of ``train_batch`` (svmgeo.gd._numba_lanes) against the scalar kernel: bit
for bit (every recorded array, the stops, the step counts)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import _backend
from svmgeo.gd._numba_lanes import LANES

pytest.importorskip("numba")


def _both(
    monkeypatch: pytest.MonkeyPatch, datasets: list[sg.TokenData], **kw: Any
) -> tuple[Any, Any]:
    """``train_batch`` on the lane kernel (checked to run) and on the scalar one."""
    kw = {"backend": "numba", "record": sg.gd.RECORDS, **kw}
    calls = []
    lanes = _backend._advance_lanes

    def counted(*args: Any) -> None:
        calls.append(1)
        lanes(*args)

    with monkeypatch.context() as m:
        m.setattr(_backend, "_advance_lanes", counted)
        fast = sg.train_batch(datasets, **kw)
    assert calls, "the lane kernel did not run"
    with monkeypatch.context() as m:
        m.setattr(_backend, "lanes_fit", lambda P, cfg: False)
        slow = sg.train_batch(datasets, **kw)
    return fast, slow


def _assert_same(fast: Any, slow: Any) -> None:
    assert fast.status == slow.status
    np.testing.assert_array_equal(fast.n_steps, slow.n_steps)
    np.testing.assert_array_equal(np.asarray(fast.W), np.asarray(slow.W))
    for key in ("step", "W", "loss", "grad_norm", "W_norm", "max_prob"):
        a, b = getattr(fast.history, key, None), getattr(slow.history, key, None)
        if a is not None or b is not None:
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=key)


@pytest.mark.parametrize("B", [LANES, LANES + 1, 2 * LANES + 3, 5 * LANES - 1])
def test_lanes_equal_scalar_for_batches_not_divisible_by_the_lanes(
    monkeypatch: pytest.MonkeyPatch, B: int
) -> None:
    datasets = [sg.random_data(6, 8, 10, seed=b) for b in range(B)]
    _assert_same(*_both(monkeypatch, datasets, n_steps=300, record_every=40))


def test_lanes_equal_scalar_when_instances_stop_at_different_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    datasets = [sg.random_data(4, 5, 6, seed=b) for b in range(2 * LANES + 1)]
    fast, slow = _both(monkeypatch, datasets, n_steps=3000, grad_tol=2e-3, record_every=500)
    assert len(set(np.asarray(fast.n_steps).tolist())) > 2  # they stop apart
    assert "converged" in {s.value for s in fast.status}
    _assert_same(fast, slow)


@pytest.mark.parametrize("log_domain", [True, False])
def test_lanes_equal_scalar_on_saturated_runs(
    monkeypatch: pytest.MonkeyPatch, log_domain: bool
) -> None:
    datasets = [sg.random_data(6, 8, 10, seed=b) for b in range(LANES + 3)]
    fast, slow = _both(
        monkeypatch, datasets, n_steps=4000, step_size=0.5, log_domain=log_domain,
        record_every=1000,
    )  # fmt: skip
    _assert_same(fast, slow)


def test_lanes_equal_scalar_with_one_instance_overflowing_at_the_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    B = LANES + 2
    datasets = [sg.random_data(5, 6, 7, seed=b) for b in range(B)]
    init = np.zeros((B, 7, 7))
    init[1] = 1e200
    fast, slow = _both(monkeypatch, datasets, n_steps=200, init=init, record_every=50)
    assert fast.status[1].value == "overflow"
    _assert_same(fast, slow)


@pytest.mark.parametrize(
    "kw",
    [
        {"loss": "exponential"},
        {"loss": "correlation", "normalized": True},
        {"ridge": 0.05},
        {"normalize_eps": 0.3},
        {"normalized": False, "step_size": 2.0},
        {"normalized": False, "log_domain": False},
        {"head": "concave", "lam": 0.3},
        {"record": ("loss",), "record_every": 1},
        {"step_size": 2e149, "n_steps": 100},  # the norm limit
        {"normalized": False, "step_size": 1e148, "n_steps": 50},  # an underflowed gradient
    ],
)
def test_lanes_equal_scalar_for_the_options_they_take(
    monkeypatch: pytest.MonkeyPatch, kw: dict[str, Any]
) -> None:
    datasets = [sg.random_data(5, 6, 7, seed=b) for b in range(LANES + 3)]
    _assert_same(*_both(monkeypatch, datasets, **{"n_steps": 200, "record_every": 50, **kw}))


@pytest.mark.parametrize(
    "make",
    [
        lambda b: sg.random_data(4, 6, 5, seed=b, query=0),
        lambda b: sg.random_data(3, 6, 5, seed=b, query="all", mask="causal"),
        lambda b: sg.random_data(3, 5, 4, seed=b, n_queries=3),
    ],
)
def test_lanes_equal_scalar_on_masks_and_several_queries(
    monkeypatch: pytest.MonkeyPatch, make: Any
) -> None:
    datasets = [make(b) for b in range(LANES + 5)]
    _assert_same(*_both(monkeypatch, datasets, n_steps=300, record_every=100))


def test_lanes_equal_scalar_on_one_and_two_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    import numba

    datasets = [sg.random_data(6, 8, 10, seed=b) for b in range(3 * LANES + 1)]
    monkeypatch.setattr(_backend, "_PARALLEL_WORK", 10**12)
    serial, _ = _both(monkeypatch, datasets, n_steps=300, record_every=100)
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    monkeypatch.setattr(_backend, "_PARALLEL_WORK", 0)
    numba.set_num_threads(2)
    parallel, slow = _both(monkeypatch, datasets, n_steps=300, record_every=100)
    _assert_same(parallel, serial)
    _assert_same(parallel, slow)


def test_lanes_do_not_take_what_they_do_not_cover() -> None:
    from svmgeo.gd._config import GDConfig
    from svmgeo.gd._problem import make_problem

    datasets = [sg.random_data(6, 8, 10, seed=b) for b in range(LANES)]
    P = make_problem(datasets, "linear")
    assert _backend.lanes_fit(P, GDConfig())
    assert not _backend.lanes_fit(P, GDConfig(param="KQ", m=3))
    assert not _backend.lanes_fit(P, GDConfig(train_head=True))
    relu = make_problem(datasets, "relu", V=np.ones((10, 3)))
    assert not _backend.lanes_fit(relu, GDConfig())
    assert not _backend.lanes_fit(make_problem(datasets, "linear", attention="sigmoid"), GDConfig())
    big = make_problem([sg.random_data(2, 16, 4, seed=b) for b in range(LANES)], "linear")
    assert not _backend.lanes_fit(big, GDConfig())
    assert not _backend.lanes_fit(make_problem(datasets[: LANES - 1], "linear"), GDConfig())


@pytest.mark.parametrize("kw", [{}, {"normalized": False}, {"log_domain": False}])
def test_lanes_equal_scalar_where_a_gradient_is_exactly_zero(
    monkeypatch: pytest.MonkeyPatch, kw: dict[str, Any]
) -> None:
    """Instances whose queries are all zero (an order-one G that is exactly zero at a finite
    scale M) stop at once with STATIONARY on both kernels (GRADIENT_UNDERFLOW with the direct
    formula, whose zero may be an underflow); the others run on."""
    datasets = [sg.random_data(5, 6, 7, seed=b) for b in range(LANES + 3)]
    zero = (0, 5, LANES + 1)
    for b in zero:
        datasets[b] = sg.TokenData(datasets[b].X, v=datasets[b].v, Z=np.zeros((5, 7)))
    fast, slow = _both(monkeypatch, datasets, **{"n_steps": 100, "record_every": 50, **kw})
    _assert_same(fast, slow)
    want = (
        sg.StopStatus.GRADIENT_UNDERFLOW
        if kw.get("log_domain") is False
        else sg.StopStatus.STATIONARY
    )
    for b, status in enumerate(fast.status):
        assert status is (want if b in zero else sg.StopStatus.MAX_STEPS), (b, status)
        assert (fast.n_steps[b] == 0) == (b in zero)
