# SPDX-License-Identifier: BSD-3-Clause
"""Head features apart from attention tokens (``values``) and given scores (``scores=``) in GD:
finite differences, numba = numpy, and the scores path against the equivalent head v."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import HEADS, LOSSES, loss_and_grad

from .conftest import ALL_BACKENDS, VALUES, head_kwargs, rebuilt


def _fd_check(data: sg.TokenData, params, **kw) -> None:  # type: ignore[no-untyped-def]
    """Central differences of the risk along two random directions, rtol 1e-6."""
    _, grad = loss_and_grad(data, params, **kw)
    rng = np.random.default_rng(1)
    h = 1e-5
    flat = list(params) if isinstance(params, tuple) else [params]
    gflat = list(grad) if isinstance(grad, tuple) else [grad]
    for _ in range(2):
        dirs = [rng.normal(size=P.shape) for P in flat]

        def at(sign: float, dirs=dirs):  # type: ignore[no-untyped-def]
            moved = [P + sign * h * D for P, D in zip(flat, dirs, strict=True)]
            return loss_and_grad(
                data, tuple(moved) if isinstance(params, tuple) else moved[0], **kw
            )[0]

        numeric = (at(1.0) - at(-1.0)) / (2 * h)
        analytic = sum(float(np.sum(g * D)) for g, D in zip(gflat, dirs, strict=True))
        np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_gradient_matches_finite_differences(name: str, loss: str, head: str) -> None:
    data = VALUES[name]
    assert data.d_values != data.d
    rng = np.random.default_rng(0)
    kw = dict(loss=loss, head=head, **head_kwargs(head, data.d_values))
    _fd_check(data, rng.normal(size=(data.d, data.d)), **kw)
    K, Q = rng.normal(size=(data.d, 2)), rng.normal(size=(data.d, 2))
    _fd_check(data, (K, Q), ridge=0.01, **kw)


def test_values_change_the_risk_and_equal_x_when_u_is_x() -> None:
    """Plausible bugs: the head reading X instead of U, or U ignored."""
    data = VALUES["cross"]
    W = np.random.default_rng(3).normal(size=(data.d, data.d))
    same = sg.TokenData(np.asarray(data.X), Z=np.asarray(data.Z), Y=np.asarray(data.Y),
                        values=np.asarray(data.X), v=np.ones(data.d))  # fmt: skip
    plain = sg.TokenData(np.asarray(data.X), Z=np.asarray(data.Z), Y=np.asarray(data.Y),
                         v=np.ones(data.d))  # fmt: skip
    a, ga = loss_and_grad(same, W)
    b, gb = loss_and_grad(plain, W)
    np.testing.assert_allclose(a, b, rtol=1e-14)
    np.testing.assert_allclose(ga, gb, rtol=1e-13, atol=1e-15)
    # by hand: f_i = v^T U_i^T softmax(X_i W z_i), logistic loss
    logits = np.einsum("ntd,de,ne->nt", data.X, W, data.Z)
    s = np.exp(logits - logits.max(1, keepdims=True))
    s /= s.sum(1, keepdims=True)
    f = np.einsum("nt,ntd,d->n", s, data.values, data.v)
    risk = float(np.mean(np.logaddexp(0.0, -data.Y * f)))
    np.testing.assert_allclose(loss_and_grad(data, W)[0], risk, rtol=1e-13)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("param", ["W", "KQ"])
def test_values_numba_equals_numpy(param: str, head: str) -> None:
    data = VALUES["masked"]
    kw = dict(head=head, **head_kwargs(head, data.d_values), n_steps=200, record_every=50)
    if param == "KQ":
        kw.update(param="KQ", m=3, init=("random", 0.1), seed=0, step_size=0.02)
    if head == "concave":
        kw.update(normalized=False, step_size=0.5)  # see test_backends: chaotic when normalized
    a, b = (sg.train(data, backend=be, **kw) for be in ("numpy", "numba"))  # type: ignore[arg-type]
    assert a.status is b.status and a.n_steps == b.n_steps
    np.testing.assert_allclose(b.history.W, a.history.W, rtol=1e-10, atol=1e-10 * np.abs(a.W).max())
    np.testing.assert_allclose(b.history.loss, a.history.loss, rtol=1e-10)


def _as_scores(data: sg.TokenData) -> sg.TokenData:
    """The same problem with the linear head's scores given (gamma = Y v^T u) and no v."""
    gamma = np.asarray(data.labels)[:, :, None] * (np.asarray(data.values) @ data.v)[:, None, :]
    return rebuilt(data, scores=gamma[:, 0] if data.single_query else gamma)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
@pytest.mark.parametrize("name", sorted(VALUES))
@pytest.mark.parametrize("loss", LOSSES)
def test_given_scores_run_equals_the_equivalent_head(name: str, loss: str, backend: str) -> None:
    data = VALUES[name]
    scored = _as_scores(data)
    assert scored.v is None and scored.scores is not None
    kw = dict(loss=loss, n_steps=150, record_every=50, backend=backend)
    a = sg.train(data, **kw)  # type: ignore[arg-type]
    b = sg.train(scored, **kw)  # type: ignore[arg-type]
    np.testing.assert_allclose(b.history.W, a.history.W, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(b.history.loss, a.history.loss, rtol=1e-11)
    np.testing.assert_allclose(b.history.log_loss_gap, a.history.log_loss_gap, rtol=1e-8)
    W = np.random.default_rng(4).normal(size=(data.d, data.d))
    np.testing.assert_allclose(loss_and_grad(scored, W)[1], loss_and_grad(data, W)[1], rtol=1e-11)


def test_given_scores_with_other_heads_or_v_are_refused() -> None:
    scored = _as_scores(VALUES["cross"])
    with pytest.raises(sg.ProblemError, match="head='relu' cannot use them"):
        sg.train(scored, head="relu", V=np.ones((3, 2)), n_steps=2)
    with pytest.raises(sg.ProblemError, match="do not pass v="):
        sg.train(scored, v=np.ones(3), n_steps=2)


def test_values_width_is_checked() -> None:
    data = VALUES["cross"]
    with pytest.raises(sg.ProblemError, match=r"v must have shape \(3,\)"):
        sg.train(data, v=np.ones(data.d), n_steps=2)
    with pytest.raises(sg.ProblemError, match=r"V must have shape \(3, 2\)"):
        sg.train(data, head="relu", V=np.ones((data.d, 2)), n_steps=2)


def test_unstack_reads_values_and_scores() -> None:
    data = VALUES["masked"]
    stacked = {"X": np.stack([data.X] * 2), "Z": np.stack([data.queries] * 2),
               "Y": np.stack([data.labels] * 2), "values": np.stack([data.values] * 2),
               "v": data.v, "mask": np.stack([data.visible] * 2)}  # fmt: skip
    batch = sg.train_batch(stacked, n_steps=20, backend="numpy")
    one = sg.train(data, n_steps=20, backend="numpy")
    np.testing.assert_allclose(batch.W[1], one.W, rtol=1e-12, atol=1e-14)
    gamma = np.asarray(data.labels)[:, :, None] * (np.asarray(data.values) @ data.v)[:, None, :]
    del stacked["v"]
    stacked["scores"] = np.stack([gamma] * 2)
    batch = sg.train_batch(stacked, n_steps=20, backend="numpy")
    np.testing.assert_allclose(batch.W[0], one.W, rtol=1e-11, atol=1e-13)
