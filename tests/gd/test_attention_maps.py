# SPDX-License-Identifier: BSD-3-Clause
"""Training with every attention map (issue #22): central finite differences of the risk for
each map x loss x head x parameterization x mask, the gradient against the table's Jacobian,
numba against numpy to round-off, numerical safety at large norms, and the refusals."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.attention_maps import ATTENTION_MAPS
from svmgeo.gd import ATTENTIONS, HEADS, LOSSES, loss_and_grad
from svmgeo.gd._problem import ATTENTION_IDS

from .conftest import ALL_BACKENDS, DATASETS, FAST_BACKENDS, head_kwargs, with_values

OTHER_MAPS = [a for a in ATTENTIONS if a != "softmax"]


def _start(data: sg.TokenData, param: str, seed: int = 0) -> np.ndarray | tuple:
    rng = np.random.default_rng(seed)
    if param == "W":
        return rng.normal(0.0, 0.5, (data.d, data.d))
    if param == "p":
        return rng.normal(0.0, 0.5, data.d)
    return rng.normal(0.0, 0.5, (data.d, 3)), rng.normal(0.0, 0.5, (data.d, 3))


def _dot(a: object, b: object) -> float:
    if isinstance(a, tuple):
        return sum(_dot(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    return float(np.sum(np.asarray(a) * np.asarray(b)))


def _shift(params: object, direction: object, h: float) -> object:
    if isinstance(params, tuple):
        return tuple(p + h * q for p, q in zip(params, direction, strict=True))  # type: ignore[arg-type]
    return params + h * direction  # type: ignore[operator]


def test_vocabulary_is_the_table() -> None:
    assert ATTENTIONS == tuple(ATTENTION_MAPS) == tuple(ATTENTION_IDS)
    assert [ATTENTION_IDS[a] for a in ATTENTIONS] == list(range(len(ATTENTIONS)))


@pytest.mark.parametrize("param", ["W", "KQ", "p"])
@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_gradient_matches_central_finite_differences(
    attention: str, loss: str, head: str, param: str
) -> None:
    for name in ("cross", "masked"):
        data = DATASETS[name]
        params = _start(data, param)
        kw = dict(loss=loss, head=head, attention=attention, **head_kwargs(head, data.d))
        _, grad = loss_and_grad(data, params, **kw)
        rng = np.random.default_rng(1)
        direction = (
            tuple(rng.normal(size=p.shape) for p in params)
            if isinstance(params, tuple)
            else rng.normal(size=np.shape(params))
        )
        # u / 1^T u has curvature ~ 1 / (1^T u)^3 (the risk reaches 1e60 here with the
        # exponential loss and the concave head): a smaller step, a looser tolerance
        h, rtol = (1e-6, 2e-4) if attention == "normalized_linear" else (1e-5, 1e-6)
        numeric = (
            loss_and_grad(data, _shift(params, direction, h), **kw)[0]
            - loss_and_grad(data, _shift(params, direction, -h), **kw)[0]
        ) / (2 * h)
        np.testing.assert_allclose(_dot(grad, direction), numeric, rtol=rtol, atol=1e-8)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_gradient_is_the_table_jacobian_contracted(attention: str) -> None:
    r"""Linear head: :math:`\nabla L = \frac1n\sum_i \ell'(Y_i f_i) Y_i X_i^\top
    J_\varphi(u_i)^\top X_i v\, z_i^\top` with the Jacobian of :mod:`svmgeo.attention_maps`."""
    data = DATASETS["cross"]
    W = _start(data, "W", 3)
    _, grad = loss_and_grad(data, W, attention=attention, loss="exponential")
    X, Z, Y = np.asarray(data.X), np.asarray(data.queries)[:, 0], np.asarray(data.labels)[:, 0]
    v = np.asarray(data.v)
    amap = ATTENTION_MAPS[attention]
    want = np.zeros_like(W)
    for i in range(data.n):
        u = X[i] @ W @ Z[i]
        f = v @ (X[i].T @ amap.phi(u))
        dl = -np.exp(-Y[i] * f)
        want += dl * Y[i] * np.outer(X[i].T @ (amap.jacobian(u).T @ (X[i] @ v)), Z[i])
    np.testing.assert_allclose(grad, want / data.n, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("attention", OTHER_MAPS)
@pytest.mark.parametrize("case", ["W", "KQ", "p", "values", "train_head", "relu", "plain"])
@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_numba_equals_numpy(attention: str, case: str, backend: str) -> None:
    data = DATASETS["masked"] if case != "values" else with_values(DATASETS["cross"])
    kw: dict[str, object] = dict(attention=attention, n_steps=60, step_size=0.05)
    kw["init"] = ("random", 0.3) if case != "KQ" else ("random", 0.5)
    kw["seed"] = 4
    if case in ("KQ", "p"):
        kw["param"] = case
    if case == "train_head":
        kw["train_head"] = True
    if case == "relu":
        kw.update(head="relu", **head_kwargs("relu", data.d))
    if case == "plain":
        kw.update(normalized=False, loss="exponential")
    ref = sg.train(data, backend="numpy", **kw)  # type: ignore[arg-type]
    fast = sg.train(data, backend=backend, **kw)  # type: ignore[arg-type]
    assert fast.status == ref.status
    assert fast.n_steps == ref.n_steps
    for key in ("W", "p", "K", "Q", "v"):
        a, b = getattr(ref, key), getattr(fast, key)
        assert (a is None) == (b is None), key
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12, err_msg=key)
    np.testing.assert_allclose(fast.history.loss, ref.history.loss, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("attention", OTHER_MAPS)
@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_numba_gradient_equals_numpy_in_both_domains(attention: str, backend: str) -> None:
    data = DATASETS["causal"]
    W = _start(data, "W", 5)
    for loss in LOSSES:
        _, ref = loss_and_grad(data, W, attention=attention, loss=loss)
        _, fast = loss_and_grad(data, W, attention=attention, loss=loss, backend=backend)
        np.testing.assert_allclose(fast, ref, rtol=1e-10, atol=1e-15)


def test_softmax_by_name_is_the_default_bit_for_bit() -> None:
    data = DATASETS["cross"]
    for backend in ("numba", "numpy"):
        a = sg.train(data, n_steps=50, backend=backend)
        b = sg.train(data, n_steps=50, backend=backend, attention="softmax")
        np.testing.assert_array_equal(a.W, b.W)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_linear_attention_stays_finite_at_large_norm(backend: str) -> None:
    """Linear attention's Y f grows like ||W||: the losses use log(1 + e^{-u}) and log|l'|
    stably, so loss, direction and steps stay finite when u is of order 1e6."""
    data = sg.random_data(6, 8, 10, seed=0)
    rng = np.random.default_rng(0)
    W0 = rng.normal(size=(10, 10))
    W0 *= 1e6 / np.linalg.norm(W0)
    run = sg.train(data, attention="linear", init=W0, n_steps=20, backend=backend)
    assert run.status == sg.StopStatus.MAX_STEPS
    assert np.all(np.isfinite(run.history.loss)) and np.all(np.isfinite(run.W))
    L, g = loss_and_grad(data, W0, attention="linear")
    assert np.isfinite(L) and np.all(np.isfinite(g))


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_sigmoid_direction_survives_saturation(backend: str) -> None:
    """sigma'(u) ~ e^{-|u|} underflows past |u| ~ 745; the log-domain weights keep a unit step."""
    data = DATASETS["cross"]
    rng = np.random.default_rng(2)
    W0 = rng.normal(size=(data.d, data.d))
    W0 *= 5e3 / np.linalg.norm(W0)
    run = sg.train(data, attention="sigmoid", init=W0, n_steps=10, backend=backend)
    assert run.status == sg.StopStatus.MAX_STEPS
    np.testing.assert_allclose(np.linalg.norm(run.W - W0), 10 * 0.1, rtol=0.5)


def test_history_of_other_maps() -> None:
    data = DATASETS["cross"]
    run = sg.train(data, attention="sigmoid", n_steps=20, backend="numpy")
    u = np.einsum("ntd,de,ne->nt", data.X, run.W, np.asarray(data.queries)[:, 0])
    np.testing.assert_allclose(run.history.probs[-1], ATTENTION_MAPS["sigmoid"].phi(u), rtol=1e-12)
    np.testing.assert_array_equal(run.history.selected[-1], np.argmax(u, axis=1))
    assert np.all(np.isnan(run.history.log_loss_gap))


def test_refusals() -> None:
    data = DATASETS["cross"]
    with pytest.raises(sg.ProblemError, match=r"attention.*must be one of"):
        sg.train(data, attention="tanh")
    with pytest.raises(sg.ProblemError, match="undefined where the visible logits"):
        sg.train(data, attention="normalized_linear")
    with pytest.raises(sg.ProblemError, match="saturation_tol"):
        sg.train(data, attention="linear", saturation_tol=1e-3)
    with pytest.raises(sg.ProblemError, match="another optimizer"):
        sg.train(data, optimizer="mirror", exponent=1.5, attention="linear")
    run = sg.train(data, attention="normalized_linear", init=("random", 0.3), seed=0, n_steps=5)
    assert run.n_steps == 5


def test_cli_attention_option(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """`svmgeo train/verify/solve --attention`: the same runs and SVMs as the API."""
    from svmgeo.cli import main

    gen = ["--n", "4", "--T", "5", "--d", "6", "--seed", "2"]
    save = tmp_path / "w.npz"
    args = ["train", *gen, "--attention", "sigmoid", "--steps", "80", "--backend", "numpy"]
    assert main([*args, "--save", str(save), "--json"]) == 0
    capsys.readouterr()
    data = sg.random_data(4, 5, 6, seed=2)
    ref = sg.train(data, attention="sigmoid", n_steps=80, backend="numpy")
    with np.load(save) as f:
        np.testing.assert_allclose(f["W"], ref.W, rtol=1e-12)
    # relu starts from a random W (its zero start is stationary)
    assert main(["train", *gen, "--attention", "relu", "--steps", "50", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == 50
    assert main(["verify", *gen, "--attention", "linear", "--steps", "500", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["attention"] == "linear" and rep["W_own"] is not None
    assert main(["solve", *gen, "--attention", "linear", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(out["W"], sg.att_svm(data, attention="linear").W, rtol=1e-12)
    assert main(["solve", *gen, "--attention", "linear", "--alpha", "0,0,0,0"]) == 2
    assert "Drop --alpha" in capsys.readouterr().err


@pytest.mark.parametrize("attention", ["linear", "relu"])
def test_batch_of_other_maps_equals_single_runs(attention: str) -> None:
    """train_batch (prange over instances when B * n_steps >= 10,000 and numba has two
    threads) runs each instance as train does; numba as numpy on a short batch."""
    datasets = [sg.random_data(3, 4, 5, seed=s) for s in range(4)]
    W0 = np.random.default_rng(1).normal(0.0, 0.3, (5, 5))
    kw: dict[str, object] = dict(attention=attention, init=W0)
    batch = sg.train_batch(datasets, backend="numba", n_steps=2_500, **kw)  # type: ignore[arg-type]
    for b in range(4):
        one = sg.train(datasets[b], backend="numba", n_steps=2_500, **kw)  # type: ignore[arg-type]
        np.testing.assert_allclose(batch.W[b], one.W, rtol=1e-9, atol=1e-12)
    ref = sg.train_batch(datasets, backend="numpy", n_steps=50, **kw)  # type: ignore[arg-type]
    fast = sg.train_batch(datasets, backend="numba", n_steps=50, **kw)  # type: ignore[arg-type]
    np.testing.assert_allclose(fast.W, ref.W, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(sg.ATTENTION_MAPS))
def test_an_additive_mask_is_refused_not_read_inverted(name: str) -> None:
    """A 0 / -inf mask (PyTorch's additive convention) read as a truth mask keeps exactly the
    hidden keys (softmax gave [0, 1, 0]); only a boolean mask, or a list of bools, is taken."""
    amap = sg.ATTENTION_MAPS[name]
    u = np.array([1.0, 2.0, 3.0])
    with pytest.raises(sg.ProblemError, match="visible must be a boolean mask"):
        amap.phi(u, np.array([0.0, -np.inf, 0.0]))
    np.testing.assert_array_equal(
        amap.phi(u, [True, False, True]), amap.phi(u, np.array([True, False, True]))
    )


def test_the_public_maps_name_bad_logits_and_masks() -> None:
    """A mask of the wrong shape (numpy's broadcast ValueError), a mask hiding every key (a
    silent 0/0 NaN), no key at all (numpy's zero-size reduction error) and a list of logits in
    a Hessian (AttributeError) reached the user as they came."""
    soft, linear = sg.ATTENTION_MAPS["softmax"], sg.ATTENTION_MAPS["linear"]
    with pytest.raises(sg.ProblemError, match=r"of u's shape \(3,\).*got shape \(4,\)"):
        soft.phi(np.zeros(3), visible=np.ones(4, bool))
    with pytest.raises(sg.ProblemError, match="hides every key of some query"):
        soft.phi(np.zeros((2, 3)), visible=np.array([[True, False, True], [False] * 3]))
    with pytest.raises(sg.ProblemError, match="at least one key"):
        soft.phi(np.zeros(0))
    np.testing.assert_array_equal(
        linear.hessian([1.0, 2.0, 3.0], [1.0, 1.0, 1.0]), np.zeros((3, 3))
    )
    np.testing.assert_allclose(
        soft.phi(np.zeros((2, 3)), visible=np.array([True, False, True])), [[0.5, 0, 0.5]] * 2
    )


def test_sigmoid_map_keeps_relative_accuracy_far_out() -> None:
    """sigma, sigma' and sigma'' of the map table to a few ulps at |u| up to 700, and the tensor
    form's sigmoid direction at a large norm (the form (1 + tanh(u/2))/2 made sigma' exactly 0
    from |u| ~ 38.1 on, so ``TensorData.direction`` called W = 1000 w0 a stationary point)."""
    sig = ATTENTION_MAPS["sigmoid"]
    u = np.array([-700.0, -100.0, -40.0, -1.0, 0.0, 2.0, 40.0, 100.0, 700.0])
    a = np.exp(-np.abs(u))  # sigma(-|u|) = a / (1 + a): every closed form below is exact-ish
    low = a / (1.0 + a)
    np.testing.assert_allclose(sig.phi(u), np.where(u < 0, low, 1.0 - low), rtol=1e-14)
    np.testing.assert_allclose(np.diag(sig.jacobian(u)), a / (1.0 + a) ** 2, rtol=1e-14)
    g = np.linspace(0.5, 1.5, u.size)
    second = a / (1.0 + a) ** 2 * np.sign(-u) * (1.0 - a) / (1.0 + a)
    np.testing.assert_allclose(np.diag(sig.hessian(u, g)), g * second, rtol=1e-14, atol=0.0)
    data = sg.random_data(3, 3, 3, seed=5)
    w0 = np.random.default_rng(1).normal(size=9)
    W = (1000.0 * w0 / np.linalg.norm(w0)).reshape(3, 3)
    ten = sg.tensorize(data)
    step = ten.direction(W, "logistic", "sigmoid")
    grad = loss_and_grad(data, W, attention="sigmoid")[1]
    np.testing.assert_allclose(step, -grad.ravel() / np.linalg.norm(grad), rtol=1e-10)


@pytest.mark.parametrize("attention", ["linear", "relu"])
def test_an_overflowing_readout_is_the_overflow_stop_without_numpy_warnings(attention: str) -> None:
    """Unnormalized weights of logits near 1e300 overflow the head's read-out: the run stops
    with OVERFLOW, and numpy's 'overflow/invalid value encountered' warnings (four per run on
    the numpy backend) no longer leak to the user beside that status."""
    data = sg.random_data(3, 4, 5, seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = sg.train(
            data, attention=attention, backend="numpy", init=np.full((5, 5), 1e300), n_steps=3
        )
    assert run.status is sg.StopStatus.OVERFLOW
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("attention", ["linear", "relu", "sigmoid"])
def test_logits_that_overflow_at_the_start_are_the_overflow_stop(
    attention: str, backend: str
) -> None:
    """The engine evaluates the maps without their finite-logit check (UNCHECKED_PHI): a start
    whose logits overflow stops with OVERFLOW, as before the user-facing maps refused
    non-finite logits (they raised 'u (the logits) must be finite' here, blaming logits the
    user never passed)."""
    run = sg.train(
        sg.random_data(3, 4, 3, seed=0),
        attention=attention,
        backend=backend,
        init=np.full((3, 3), 1e308),
        n_steps=5,
    )
    assert run.status is sg.StopStatus.OVERFLOW
