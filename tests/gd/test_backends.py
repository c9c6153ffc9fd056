# SPDX-License-Identifier: BSD-3-Clause
"""Backends: numba and numpy give the same trajectories; cupy is optional and lazy."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import svmgeo as sg
from svmgeo import BackendError
from svmgeo.gd import HEADS, LOSSES, cupy_available

from .conftest import DATASETS, head_kwargs, optimal_instance, requires_cupy


def _same_trajectory(data: sg.TokenData, n_steps: int, backends=("numpy", "numba"), **kw) -> None:  # type: ignore[no-untyped-def]
    runs = [
        sg.train(data, n_steps=n_steps, record_every=n_steps // 4, backend=b, **kw)
        for b in backends
    ]
    ref = runs[0]
    scale = np.abs(ref.history.W).max()
    for run in runs[1:]:
        assert run.status is ref.status and run.n_steps == ref.n_steps
        np.testing.assert_allclose(run.history.W, ref.history.W, rtol=1e-10, atol=1e-10 * scale)
        np.testing.assert_allclose(run.history.loss, ref.history.loss, rtol=1e-10)
        np.testing.assert_array_equal(run.history.selected, ref.history.selected)


def test_numba_equals_numpy_over_1000_steps_on_the_issue_size() -> None:
    data, _ = optimal_instance(2)
    _same_trajectory(data, 1000)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("loss", LOSSES)
def test_numba_equals_numpy_for_every_loss_and_head(loss: str, head: str) -> None:
    """Plain steps (the concave head's normalized dynamics are chaotic, see below)."""
    data = DATASETS["masked"]
    _same_trajectory(
        data,
        400,
        loss=loss,
        head=head,
        normalized=False,
        step_size=0.5,
        **head_kwargs(head, data.d),
    )


@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("param", ["W", "KQ"])
def test_numba_equals_numpy_normalized_on_every_attention_type(name: str, param: str) -> None:
    kw = dict(head="relu", **head_kwargs("relu", DATASETS[name].d)) if name == "self" else {}
    if param == "KQ":
        kw.update(param="KQ", m=3, init=("random", 0.1), seed=0, step_size=0.02)
    _same_trajectory(DATASETS[name], 400, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("m", [2, 8])
def test_numba_equals_numpy_kq_with_ridge_plain_steps(m: int) -> None:
    kw = dict(
        param="KQ", m=m, init=("random", 0.3), seed=1, ridge=1e-3, normalized=False, step_size=0.5
    )
    _same_trajectory(DATASETS["masked"], 400, **kw)  # type: ignore[arg-type]


def test_concave_normalized_dynamics_amplify_rounding() -> None:
    """Why agreement is checked with plain steps for the concave head (and for a ridge): with
    normalized steps of fixed size the iterate keeps bouncing around a finite optimum, and one
    backend alone separates a 1e-15 perturbation of the start to far more than 1e-10. Not a
    backend bug."""
    data = DATASETS["cross"]
    W0 = 0.1 * np.eye(data.d)
    kw = dict(head="concave", lam=0.3, n_steps=1000, backend="numba", record=("W",))
    a = sg.train(data, init=W0, **kw)  # type: ignore[arg-type]
    b = sg.train(data, init=W0 * (1 + 1e-15), **kw)  # type: ignore[arg-type]
    assert np.abs(a.W - b.W).max() > 1e-8 * np.abs(a.W).max()


@requires_cupy
@pytest.mark.gpu
def test_cupy_equals_numba() -> None:
    data, _ = optimal_instance(2)
    _same_trajectory(data, 1000, backends=("numba", "cupy"))
    _same_trajectory(
        DATASETS["causal"],
        400,
        backends=("numba", "cupy"),
        param="KQ",
        m=3,
        init=("random", 0.1),
        seed=0,
        step_size=0.02,
    )


def test_cupy_disabled_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVMGEO_DISABLE_CUPY", "1")
    with pytest.raises(BackendError, match="SVMGEO_DISABLE_CUPY"):
        sg.train(DATASETS["cross"], backend="cupy", n_steps=2)
    assert not cupy_available()


def test_missing_cupy_names_the_install_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVMGEO_DISABLE_CUPY", raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real(name, *a)
    )
    with pytest.raises(BackendError, match=r"pip install svmgeo\[gpu\]"):
        sg.train(DATASETS["cross"], backend="cupy", n_steps=2)


def test_importing_svmgeo_does_not_import_cupy() -> None:
    import subprocess
    import sys

    code = "import sys, svmgeo; svmgeo.train(svmgeo.random_data(2, 3, 4, seed=0), n_steps=2, backend='numpy'); print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_parallel_kernels_equal_serial_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads over instances (advance, grad_batch) give what one thread gives."""
    import numba

    from svmgeo.gd import _backend

    datasets = [sg.random_data(3, 4, 5, seed=s) for s in range(6)]
    kw = dict(param="KQ", m=3, init=("random", 0.2), seed=1, n_steps=200, record_every=50)
    kw["record"] = sg.gd.RECORDS
    monkeypatch.setattr(_backend, "_PARALLEL_WORK", 10**12)
    serial = sg.train_batch(datasets, **kw)  # type: ignore[arg-type]
    monkeypatch.setattr(_backend, "_PARALLEL_WORK", 0)
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    numba.set_num_threads(2)
    parallel = sg.train_batch(datasets, **kw)  # type: ignore[arg-type]
    assert parallel.history.W.shape == (6, 5, 5, 5)
    np.testing.assert_array_equal(parallel.history.W, serial.history.W)
    np.testing.assert_array_equal(parallel.history.grad_norm, serial.history.grad_norm)
    assert parallel.status == serial.status


def _batch_W(datasets: list[sg.TokenData]) -> np.ndarray:
    return sg.train_batch(datasets, n_steps=20).W  # type: ignore[return-value]


def test_threaded_batches_run_in_a_forked_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process forked after a threaded batch (a sweep's local workers) runs threaded batches
    on threads of its own: the parent's pool threads do not exist in the child."""
    import multiprocessing

    import numba

    from svmgeo.gd import _backend

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here")
    monkeypatch.setattr(_backend, "_PARALLEL_WORK", 0)
    numba.set_num_threads(2)
    datasets = [sg.random_data(3, 4, 5, seed=s) for s in range(4)]
    parent = _batch_W(datasets)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        child = pool.apply_async(_batch_W, (datasets,)).get(timeout=300)
    np.testing.assert_array_equal(child, parent)


class _NumpyAsDevice:
    """A stand-in array namespace for the cupy path: numpy's functions behind another module
    object (so nothing can rely on ``xp is numpy``), arrays with ``.get()`` like CuPy's."""

    class ndarray(np.ndarray):
        def get(self) -> np.ndarray:
            return np.asarray(self).copy()

    def __getattr__(self, name: str) -> object:
        return getattr(np, name)

    def asarray(self, x: object, *args: object, **kwargs: object) -> np.ndarray:
        return np.asarray(x, *args, **kwargs).view(self.ndarray)  # type: ignore[call-overload]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_cupy_code_path_runs_on_a_stand_in_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    from svmgeo.gd import _backend

    monkeypatch.setattr(_backend, "get_cupy", lambda: _NumpyAsDevice())
    data = DATASETS["causal"]
    for kw in ({}, {"param": "KQ", "m": 3, "init": ("random", 0.1), "seed": 0, "step_size": 0.02}):
        dev = sg.train(data, n_steps=200, record_every=50, backend="cupy", **kw)  # type: ignore[arg-type]
        # the reference is the independent numba kernel, not the numpy backend (which is the
        # same xp code as the cupy path and would compare that code with itself)
        ref = sg.train(data, n_steps=200, record_every=50, backend="numba", **kw)  # type: ignore[arg-type]
        assert type(dev.W) is np.ndarray and type(dev.history.loss) is np.ndarray
        np.testing.assert_allclose(dev.history.W, ref.history.W, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(dev.history.log_loss_gap, ref.history.log_loss_gap, rtol=1e-12)
