# SPDX-License-Identifier: BSD-3-Clause
"""Prompt attention ``param="p"``: logits x_it^T p for every query. Finite differences, numba =
numpy, and the identity with ``param="W"`` when every query is z = e1 (W's first column is p)."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import HEADS, LOSSES, loss_and_grad

from .conftest import ALL_BACKENDS, DATASETS, FAST_BACKENDS, VALUES, head_kwargs, rebuilt
from .test_values import _fd_check


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("name", ["masked", "values"])
def test_p_gradient_matches_finite_differences(name: str, loss: str, head: str) -> None:
    data = VALUES["masked"] if name == "values" else DATASETS[name]
    p = np.random.default_rng(0).normal(size=data.d)
    _fd_check(data, p, loss=loss, head=head, ridge=0.01, **head_kwargs(head, data.d_values))


def _e1_queries(data: sg.TokenData) -> sg.TokenData:
    """The same data with every query z_ik = e1 (values and head kept)."""
    Z = np.zeros((data.n, data.K, data.d))
    Z[:, :, 0] = 1.0
    extra = {"values": np.asarray(data.values)} if data.has_values else {}
    return sg.TokenData(
        np.asarray(data.X), Y=np.asarray(data.labels), Z=Z, v=data.v, **extra,
        mask=None if data.mask is None else np.asarray(data.mask),
    )  # fmt: skip


@pytest.mark.parametrize("backend", ALL_BACKENDS)
@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"normalized": False, "step_size": 0.5, "loss": "exponential"},
        {"ridge": 0.05, "log_domain": False, "head": "relu"},
        {"loss": "correlation", "head": "concave", "lam": 0.3, "normalized": False},
    ],
)
def test_p_equals_w_with_queries_e1_iterate_by_iterate(kw: dict, backend: str) -> None:  # type: ignore[type-arg]
    data = VALUES["masked"]
    if kw.get("head") == "relu":
        kw = {**kw, **head_kwargs("relu", data.d_values)}
    p0 = np.random.default_rng(2).normal(scale=0.3, size=data.d)
    W0 = np.zeros((data.d, data.d))
    W0[:, 0] = p0
    opts = dict(n_steps=300, record_every=1, backend=backend, **kw)
    rp = sg.train(data, param="p", init=p0, **opts)
    rw = sg.train(_e1_queries(data), param="W", init=W0, **opts)
    assert rp.W is None and rp.history.W is None and rp.history.W_norm is None
    assert rp.p is not None and rp.history.p is not None and rw.history.W is not None
    assert rp.status is rw.status and rp.n_steps == rw.n_steps
    np.testing.assert_array_equal(rw.history.W[:, :, 1:], 0.0)
    if backend == "numba":  # loops: products with the query's 0 and 1 entries are exact
        np.testing.assert_array_equal(rp.history.p, rw.history.W[:, :, 0])
        np.testing.assert_array_equal(rp.history.loss, rw.history.loss)
    else:  # numpy's einsum may sum in another order
        np.testing.assert_allclose(rp.history.p, rw.history.W[:, :, 0], rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(rp.history.loss, rw.history.loss, rtol=1e-11)
    np.testing.assert_allclose(rp.history.p_norm, rw.history.W_norm, rtol=1e-10)
    np.testing.assert_allclose(rp.p, rw.W[:, 0], rtol=1e-10, atol=1e-13)  # type: ignore[index]


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"normalized": False, "step_size": 0.5, "ridge": 1e-2},
        {"log_domain": False, "head": "relu", "loss": "exponential"},
        {"init": ("random", 0.5), "seed": 3},
    ],
)
@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_p_numba_equals_numpy(kw: dict, backend: str) -> None:  # type: ignore[type-arg]
    data = VALUES["cross"]
    if kw.get("head") == "relu":
        kw = {**kw, **head_kwargs("relu", data.d_values)}
    a, b = (sg.train(data, param="p", n_steps=300, record_every=50, backend=be, **kw)
            for be in ("numpy", backend))  # fmt: skip
    assert a.status is b.status and a.n_steps == b.n_steps
    np.testing.assert_allclose(b.history.p, a.history.p, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.history.loss, a.history.loss, rtol=1e-10)


def test_p_ignores_the_queries_and_takes_every_init() -> None:
    cross = DATASETS["cross"]
    selfatt = sg.TokenData(np.asarray(cross.X), Y=np.asarray(cross.Y), v=cross.v, query=1)
    a = sg.train(cross, param="p", n_steps=50, backend="numpy")
    b = sg.train(selfatt, param="p", n_steps=50, backend="numpy")
    np.testing.assert_array_equal(a.p, b.p)
    assert a.p is not None and a.p.shape == (cross.d,) and np.linalg.norm(a.p) > 1.0
    r = sg.train(cross, param="p", init=("random", 0.2), seed=5, n_steps=3)
    assert r.history.p is not None
    np.testing.assert_allclose(r.history.p[0], np.random.default_rng(5).normal(0, 0.2, cross.d))
    batch = sg.train_batch([cross, cross], param="p", n_steps=10, init=np.ones((2, cross.d)))
    assert batch.W is None and batch.p is not None and batch.p.shape == (2, cross.d)
    assert batch.history.p_norm is not None and batch[1].p is not None
    _, g = loss_and_grad(cross, np.zeros(cross.d))
    assert g.shape == (cross.d,)


@pytest.mark.parametrize(
    ("init", "match"),
    [(np.ones((5, 5)), r"init p must have shape \(5,\)"), (np.ones(4), r"init p must have shape")],
)
def test_p_bad_init(init: np.ndarray, match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        sg.train(DATASETS["cross"], param="p", init=init, n_steps=2)


def test_p_is_a_valid_param_and_others_are_not() -> None:
    with pytest.raises(sg.ProblemError, match="param"):
        sg.train(DATASETS["cross"], param="q", n_steps=2)
    assert rebuilt(DATASETS["cross"], v=DATASETS["cross"].v).v is not None
