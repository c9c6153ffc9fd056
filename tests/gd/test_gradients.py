# SPDX-License-Identifier: BSD-3-Clause
"""Gradients: finite differences for every loss x head x parameterization x mask, the log
domain against the direct formula, the numba kernel against the numpy reference, and
(optionally) PyTorch autograd."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import HEADS, LOSSES, loss_and_grad

from .conftest import DATASETS, head_kwargs


def _params(
    data: sg.TokenData, param: str, seed: int, m: int
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    d = data.d
    if param == "W":
        return rng.normal(size=(d, d))
    return rng.normal(size=(d, m)), rng.normal(size=(d, m))


def _directional_fd(data, params, direction, h=1e-5, **kw):  # type: ignore[no-untyped-def]
    if isinstance(params, tuple):
        plus = (params[0] + h * direction[0], params[1] + h * direction[1])
        minus = (params[0] - h * direction[0], params[1] - h * direction[1])
    else:
        plus, minus = params + h * direction, params - h * direction
    return (loss_and_grad(data, plus, **kw)[0] - loss_and_grad(data, minus, **kw)[0]) / (2 * h)


@pytest.mark.parametrize("param", ["W", "KQ"])
@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("name", sorted(DATASETS))
def test_gradient_matches_finite_differences(name: str, loss: str, head: str, param: str) -> None:
    data = DATASETS[name]
    m = 3 if name != "cross" else data.d + 2  # m < d and m > d
    params = _params(data, param, 0, m)
    kw = dict(
        loss=loss, head=head, ridge=0.01 if param == "KQ" else 0.0, **head_kwargs(head, data.d)
    )
    _, grad = loss_and_grad(data, params, **kw)
    rng = np.random.default_rng(1)
    for _ in range(2):
        if param == "W":
            direction = rng.normal(size=params.shape)  # type: ignore[union-attr]
            analytic = float(np.sum(grad * direction))
        else:
            direction = (rng.normal(size=params[0].shape), rng.normal(size=params[1].shape))  # type: ignore[index]
            analytic = float(np.sum(grad[0] * direction[0]) + np.sum(grad[1] * direction[1]))
        numeric = _directional_fd(data, params, direction, **kw)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


def test_kq_gradient_is_chain_rule_of_w_gradient() -> None:
    data = DATASETS["cross"]
    K, Q = _params(data, "KQ", 3, 4)
    _, (gK, gQ) = loss_and_grad(data, (K, Q))
    _, gW = loss_and_grad(data, K @ Q.T)
    np.testing.assert_allclose(gK, gW @ Q, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gQ, gW.T @ K, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("name", sorted(DATASETS))
def test_log_domain_equals_direct_formula_and_numba_equals_numpy(
    name: str, loss: str, head: str
) -> None:
    """(G, M) with grad = e^M G: log domain vs direct (M = 0) and numba vs numpy, <= 1e-10."""
    from svmgeo.gd._backend import get_kernels
    from svmgeo.gd._problem import LOSS_IDS, make_problem

    data = DATASETS[name]
    problem = make_problem([data], head, **head_kwargs(head, data.d))  # type: ignore[arg-type]
    W = 3.0 * np.random.default_rng(5).normal(size=(1, data.d, data.d))
    full = {}
    for backend in ("numpy", "numba"):
        k = get_kernels(backend, problem)
        for log_domain in (True, False):
            G, M = k.grad(W, LOSS_IDS[loss], log_domain)
            full[backend, log_domain] = np.exp(M)[:, None, None] * G
            if not log_domain:
                np.testing.assert_array_equal(M, 0.0)
    ref = full["numpy", False]
    assert np.linalg.norm(ref) > 0
    for key, val in full.items():
        np.testing.assert_allclose(
            val, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max(), err_msg=str(key)
        )


def test_log_domain_direction_survives_where_direct_gradient_underflows() -> None:
    """Far out along a max-margin direction the direct gradient is exactly zero but the
    log-domain direction is finite and equals the direction computed at a nearby scale."""
    from svmgeo.gd._backend import get_kernels
    from svmgeo.gd._problem import make_problem

    data = DATASETS["cross"]
    problem = make_problem([data], "linear")
    run = sg.train(data, n_steps=300, step_size=0.1, record=("W",), backend="numpy")
    Wdir = run.W / np.linalg.norm(run.W)
    for backend in ("numpy", "numba"):
        k = get_kernels(backend, problem)
        G_direct, _ = k.grad(1e5 * Wdir[None], 0, False)
        np.testing.assert_array_equal(G_direct, 0.0)  # underflowed
        G_log, M_log = k.grad(1e5 * Wdir[None], 0, True)
        assert np.all(np.isfinite(G_log)) and np.isfinite(M_log[0]) and M_log[0] < -745
        assert np.linalg.norm(G_log) > 0.1


def test_gradient_matches_torch_autograd() -> None:
    torch = pytest.importorskip("torch")
    data = DATASETS["masked"]
    rng = np.random.default_rng(2)
    W = rng.normal(size=(data.d, data.d))
    V = rng.normal(size=(data.d, 3))
    w_out = rng.normal(size=3)
    X = torch.tensor(np.asarray(data.X))
    Zq = torch.tensor(np.asarray(data.queries))
    Y = torch.tensor(np.asarray(data.labels))
    vis = torch.tensor(np.asarray(data.visible))
    Wt = torch.tensor(W, requires_grad=True)
    logits = torch.einsum("ntd,de,nke->nkt", X, Wt, Zq).masked_fill(~vis, float("-inf"))
    s = torch.softmax(logits, dim=-1)
    r = torch.einsum("nkt,ntd->nkd", s, X)
    f = torch.relu(r @ torch.tensor(V)) @ torch.tensor(w_out)
    risk = torch.nn.functional.softplus(-Y * f).sum() / data.n
    risk.backward()
    value, grad = loss_and_grad(data, W, head="relu", V=V, v=w_out)
    np.testing.assert_allclose(value, float(risk.detach()), rtol=1e-12)
    np.testing.assert_allclose(grad, Wt.grad.numpy(), rtol=1e-10, atol=1e-14)
