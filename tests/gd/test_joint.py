# SPDX-License-Identifier: BSD-3-Clause
"""Joint training of the linear head (``train_head=True``) and the step's epsilon
(``normalize_eps``): finite differences in v, numba = numpy, the per-block step by hand."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import LOSSES, loss_and_grad

from .conftest import ALL_BACKENDS, DATASETS, VALUES
from .test_values import _fd_check


def _attention(data: sg.TokenData, param: str, seed: int = 0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    if param == "p":
        return rng.normal(size=data.d)
    if param == "W":
        return rng.normal(size=(data.d, data.d))
    return rng.normal(size=(data.d, 2)), rng.normal(size=(data.d, 2))


@pytest.mark.parametrize("param", ["p", "W", "KQ"])
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_head_gradient_matches_finite_differences(name: str, loss: str, param: str) -> None:
    """d/dv by central differences in v (the attention fixed), with values of width 3 != d."""
    data = VALUES[name]
    params = _attention(data, param)
    v = np.random.default_rng(9).normal(size=data.d_values)
    kw = dict(loss=loss, ridge=0.01, train_head=True)
    _, grads = loss_and_grad(data, params, v=v, **kw)
    gv = grads[-1]
    assert gv.shape == (data.d_values,)
    h = 1e-5
    rng = np.random.default_rng(1)
    for _ in range(2):
        e = rng.normal(size=v.shape)
        plus = loss_and_grad(data, params, v=v + h * e, **kw)[0]
        minus = loss_and_grad(data, params, v=v - h * e, **kw)[0]
        np.testing.assert_allclose(float(gv @ e), (plus - minus) / (2 * h), rtol=1e-6, atol=1e-9)
    # the attention blocks are those of the fixed-head gradient (plus nothing)
    _, fixed = loss_and_grad(data, params, v=v, loss=loss, ridge=0.01)
    for a, b in zip(grads[:-1], fixed if isinstance(fixed, tuple) else (fixed,), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    _fd_check(data, params, v=v, loss=loss, ridge=0.01)


def _agree(data: sg.TokenData, n_steps: int = 200, **kw) -> sg.GDRun:  # type: ignore[no-untyped-def]
    a, b = (sg.train(data, n_steps=n_steps, record_every=n_steps // 4, backend=be, **kw)
            for be in ("numpy", "numba"))  # fmt: skip
    assert a.status is b.status and a.n_steps == b.n_steps
    for key in ("v", "v_norm", "loss", "p", "W", "grad_norm"):
        x, y = getattr(a.history, key), getattr(b.history, key)
        assert (x is None) == (y is None), key
        if x is not None:
            np.testing.assert_allclose(y, x, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(x).max()))
    return b


@pytest.mark.parametrize(
    "kw",
    [
        {"param": "p"},
        {"param": "p", "normalized": False, "step_size": 0.5, "loss": "exponential"},
        {"param": "p", "normalize_eps": 1e-2, "log_domain": False},
        {"param": "W", "normalize_eps": 0.5, "ridge": 1e-3},
        {"param": "KQ", "m": 3, "init": ("random", 0.1), "seed": 0, "step_size": 0.02},
        {"param": "p", "normalize_eps": {"p": 1e-19, "v": 0.05}},
        {
            "param": "KQ",
            "m": 3,
            "init": ("random", 0.1),
            "seed": 0,
            "step_size": 0.02,
            "normalize_eps": {"K": 0.2, "v": 1e-3},
            "log_domain": False,
        },
    ],
)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_joint_training_numba_equals_numpy(name: str, kw: dict) -> None:  # type: ignore[type-arg]
    """On "masked" the joint risk has a finite optimum: after ~55 normalized steps of fixed
    size the iterate bounces around it and amplifies rounding ~4x per step (measured from
    1e-15 at step 53 to 1e-7 at step 65, as the concave head in test_backends), so that
    instance is compared over the first 40 steps."""
    run = _agree(VALUES[name], n_steps=200 if name == "cross" else 40, train_head=True, **kw)
    assert run.v is not None and run.v.shape == (VALUES[name].d_values,)
    assert run.history.v is not None and run.history.v_norm is not None
    np.testing.assert_allclose(run.history.v[-1], run.v, rtol=1e-15)
    moved = np.abs(run.v - VALUES[name].v).max() / np.abs(VALUES[name].v).max()
    assert moved > 1e-3, moved  # the head moved
    np.testing.assert_allclose(run.history.v_norm, np.linalg.norm(run.history.v, axis=1))


def test_normalize_eps_numba_equals_numpy_without_head() -> None:
    for kw in (
        {"normalize_eps": 0.3},
        {"normalize_eps": 1e-3, "param": "p"},
        {"normalize_eps": {"Q": 0.3}, "param": "KQ", "init": ("random", 0.1), "seed": 1},
    ):
        _agree(DATASETS["masked"], **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ALL_BACKENDS)
@pytest.mark.parametrize("log_domain", [True, False])
def test_one_step_with_an_eps_per_block(backend: str, log_domain: bool) -> None:
    """K, Q and v each move by eta g / (||g|| + eps of that block); a block the mapping
    leaves out (Q) takes the exactly normalized step."""
    data = VALUES["cross"]
    K0, Q0 = _attention(data, "KQ", seed=5)
    v0 = np.asarray(data.v)
    eta = 0.3
    _, (gK, gQ, gv) = loss_and_grad(data, (K0, Q0), v=v0, train_head=True)
    # each eps of the order of its block's gradient norm, so that it visibly shrinks the step
    eps = {"K": 0.5 * np.linalg.norm(gK), "v": 2.0 * np.linalg.norm(gv)}
    run = sg.train(data, param="KQ", m=2, train_head=True, init=(K0, Q0), v=v0, n_steps=1,
                   step_size=eta, normalize_eps=eps, backend=backend,
                   log_domain=log_domain, record=("W",))  # fmt: skip
    K1 = K0 - eta * gK / (np.linalg.norm(gK) + eps["K"])
    Q1 = Q0 - eta * gQ / np.linalg.norm(gQ)
    np.testing.assert_allclose(run.v, v0 - eta * gv / (np.linalg.norm(gv) + eps["v"]),
                               rtol=1e-12)  # fmt: skip
    assert run.history.W is not None
    np.testing.assert_allclose(run.history.W[-1], K1 @ Q1.T, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_float_eps_is_the_mapping_with_that_eps_on_every_block(backend: str) -> None:
    data = VALUES["masked"]
    kw = dict(param="KQ", m=3, init=("random", 0.1), seed=0, step_size=0.02, train_head=True,
              n_steps=60, record_every=20, backend=backend)  # fmt: skip
    one = sg.train(data, normalize_eps=0.01, **kw)  # type: ignore[arg-type]
    per = sg.train(data, normalize_eps={"K": 0.01, "Q": 0.01, "v": 0.01}, **kw)  # type: ignore[arg-type]
    some = sg.train(data, normalize_eps={"K": 0.01, "v": 0.01}, **kw)  # type: ignore[arg-type]
    for key in ("W", "v", "grad_norm"):
        np.testing.assert_array_equal(getattr(per.history, key), getattr(one.history, key))
    assert np.abs(some.history.W[-1] - one.history.W[-1]).max() > 1e-6  # Q's eps matters
    cfg = sg.gd.GDConfig(param="p", normalize_eps={"p": 1e-19, "v": 1e-9}, train_head=True)
    assert cfg.eps_blocks == (1e-19, 0.0, 1e-9)
    assert sg.gd.GDConfig(param="KQ", normalize_eps=0.5).eps_blocks == (0.5, 0.5, 0.5)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
@pytest.mark.parametrize("log_domain", [True, False])
def test_one_step_moves_each_block_by_eta_g_over_norm_plus_eps(
    backend: str, log_domain: bool
) -> None:
    data = VALUES["masked"]
    p0 = np.random.default_rng(3).normal(size=data.d)
    v0 = np.asarray(data.v)
    eta, eps = 0.7, 0.05
    _, (gp, gv) = loss_and_grad(data, p0, v=v0, train_head=True)
    run = sg.train(data, param="p", train_head=True, init=p0, v=v0, n_steps=1, step_size=eta,
                   normalize_eps=eps, backend=backend, log_domain=log_domain)  # fmt: skip
    np.testing.assert_allclose(run.p, p0 - eta * gp / (np.linalg.norm(gp) + eps), rtol=1e-12)
    np.testing.assert_allclose(run.v, v0 - eta * gv / (np.linalg.norm(gv) + eps), rtol=1e-12)
    plain = sg.train(data, param="p", train_head=True, init=p0, v=v0, n_steps=1, step_size=eta,
                     normalized=False, backend=backend)  # fmt: skip
    np.testing.assert_allclose(plain.p, p0 - eta * gp, rtol=1e-12)
    np.testing.assert_allclose(plain.v, v0 - eta * gv, rtol=1e-12)


def test_zero_head_start_and_default_eps_are_the_old_runs() -> None:
    """v defaults to data.v, and to zero without one; normalize_eps=0 is the exact step."""
    data = VALUES["cross"]
    no_v = sg.TokenData(np.asarray(data.X), Z=np.asarray(data.Z), Y=np.asarray(data.Y),
                        values=np.asarray(data.values))  # fmt: skip
    zero = sg.train(no_v, param="p", train_head=True, n_steps=30, record_every=1)
    assert zero.history.v is not None and zero.history.p is not None
    np.testing.assert_array_equal(zero.history.v[0], 0.0)
    np.testing.assert_array_equal(zero.history.p[1], 0.0)  # at v = 0 attention has no gradient
    assert np.linalg.norm(zero.history.v[1]) == pytest.approx(0.1)  # one normalized step
    assert np.linalg.norm(zero.p) > 0.1
    a = sg.train(data, n_steps=100)
    b = sg.train(data, n_steps=100, normalize_eps=0.0)
    np.testing.assert_array_equal(a.history.W, b.history.W)
    assert a.v is None and a.history.v is None


def test_tiny_gradients_give_tiny_steps_with_eps_in_the_log_domain() -> None:
    """Far along a max-margin direction: at ||grad|| ~ e^-400 the step eta ||g|| / (||g|| + eps)
    is ~e^-393, tiny but taken, and the run goes on; at ||grad|| ~ e^-1200 (far below float64)
    even eps / ||g|| overflows, the step is zero and the run stops with GRADIENT_UNDERFLOW,
    its iterate finite. Exactly normalized steps (eps = 0) keep moving by eta."""
    data = DATASETS["cross"]
    base = sg.train(data, n_steps=300, record=("W",))
    unit = base.W / np.linalg.norm(base.W)  # type: ignore[operator]
    for backend in ("numpy", "numba"):
        W0 = 700.0 * unit
        run = sg.train(data, init=W0, n_steps=20, normalize_eps=1e-3, backend=backend,
                       record=("W", "grad_norm"))  # fmt: skip
        assert run.status is sg.StopStatus.MAX_STEPS
        lg = run.history.log_grad_norm
        assert lg is not None and np.all((lg < -300) & (lg > -700)), lg
        assert run.W is not None and np.all(np.isfinite(run.W))
        np.testing.assert_allclose(run.W, W0, rtol=1e-12)
        far = sg.train(data, init=3.0 * W0, n_steps=20, normalize_eps=1e-3, backend=backend,
                       record=("W", "grad_norm"))  # fmt: skip
        assert far.status is sg.StopStatus.GRADIENT_UNDERFLOW and far.n_steps == 0
        assert far.history.log_grad_norm is not None and far.history.log_grad_norm[0] < -1000
        assert "normalize_eps" in far.message
        np.testing.assert_array_equal(far.W, 3.0 * W0)
        free = sg.train(data, init=3.0 * W0, n_steps=20, backend=backend, record=("W",))
        assert free.W is not None and free.status is sg.StopStatus.MAX_STEPS
        np.testing.assert_allclose(np.linalg.norm(free.W - 3.0 * W0), 2.0, rtol=0.05)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"train_head": True, "head": "relu", "V": np.ones((3, 2))}, "train_head=True trains"),
        ({"train_head": 1}, "'train_head' parameter of .* must be True or False"),
        ({"normalize_eps": -1.0}, "'normalize_eps' parameter of train"),
        ({"normalize_eps": float("nan")}, "'normalize_eps' parameter of train"),
        ({"normalize_eps": 0.1, "normalized": False}, "applies to normalized steps"),
        ({"train_head": True, "v": np.ones(5)}, r"v must have shape \(3,\)"),
        ({"normalize_eps": "1e-9"}, "Or pass a mapping of block names"),
        ({"normalize_eps": {"v": 1e-9}}, r"has the block\(s\) 'W'; got 'v'.*train_head=True"),
        ({"param": "p", "normalize_eps": {"W": 1e-9}}, r"has the block\(s\) 'p'; got 'W'"),
        (
            {"param": "KQ", "train_head": True, "normalize_eps": {"K": 0.1, "x": 0.1, 3: 0.1}},
            r"has the block\(s\) 'K', 'Q', 'v'; got 'x', 3",
        ),
        (
            {"param": "p", "normalize_eps": {"p": -1.0}},
            r"\"normalize_eps\['p'\]\" parameter of train",
        ),
        ({"param": "p", "normalize_eps": {"p": None}}, r"normalize_eps\['p'\]"),
        (
            {"param": "p", "normalize_eps": {"p": 0.1}, "normalized": False},
            "applies to normalized steps",
        ),
    ],
)
def test_bad_joint_options(kw: dict, match: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(sg.ProblemError, match=match):
        sg.train(VALUES["cross"], n_steps=2, **kw)


def test_train_head_refuses_given_scores() -> None:
    data = VALUES["cross"]
    gamma = np.asarray(data.Y)[:, None] * (np.asarray(data.values) @ data.v)
    scored = sg.TokenData(np.asarray(data.X), Z=np.asarray(data.Z), Y=np.asarray(data.Y),
                          scores=gamma)  # fmt: skip
    with pytest.raises(sg.ProblemError, match="which fix the head"):
        sg.train(scored, train_head=True, n_steps=2)


def _same_history(dev: sg.GDRun, ref: sg.GDRun) -> None:
    """The device run's W, p, v and loss histories are numpy arrays equal to the reference's."""
    for key in ("W", "p", "v", "loss"):
        x, y = getattr(ref.history, key), getattr(dev.history, key)
        assert (x is None) == (y is None)
        if x is not None:
            assert type(y) is np.ndarray
            np.testing.assert_allclose(y, x, rtol=1e-10, atol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_cupy_code_path_with_values_p_and_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cupy path (on a numpy stand-in namespace, see test_backends) against numba."""
    from svmgeo.gd import _backend

    from .test_backends import _NumpyAsDevice

    monkeypatch.setattr(_backend, "get_cupy", lambda: _NumpyAsDevice())
    data = VALUES["cross"]
    for kw in (
        {"param": "p", "train_head": True, "normalize_eps": 0.01},
        {"param": "p", "train_head": True, "normalize_eps": {"p": 1e-19, "v": 0.05}},
        {"param": "W", "train_head": True, "normalized": False, "step_size": 0.5},
        {"param": "KQ", "m": 3, "init": ("random", 0.1), "seed": 0, "step_size": 0.02},
    ):
        dev = sg.train(data, n_steps=100, record_every=25, backend="cupy", **kw)  # type: ignore[arg-type]
        ref = sg.train(data, n_steps=100, record_every=25, backend="numba", **kw)  # type: ignore[arg-type]
        _same_history(dev, ref)


def test_batched_parallel_joint_runs_equal_single_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads over instances (advance, grad_batch) with values, p, train_head and eps."""
    import numba

    from svmgeo.gd import _backend

    from .conftest import with_values

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    datasets = [with_values(sg.random_data(3, 4, 5, seed=s), seed=s) for s in range(4)]
    monkeypatch.setattr(_backend, "_PARALLEL_WORK", 0)
    numba.set_num_threads(2)
    for eps in (0.01, {"p": 1e-19, "v": 0.05}):
        kw = dict(param="p", train_head=True, normalize_eps=eps, n_steps=100)
        batch = sg.train_batch(datasets, record=sg.gd.RECORDS, **kw)  # type: ignore[arg-type]
        assert batch.v is not None and batch.p is not None and batch.W is None
        for b, data in enumerate(datasets):
            one = sg.train(data, **kw)  # type: ignore[arg-type]
            np.testing.assert_array_equal(batch[b].p, one.p)
            np.testing.assert_array_equal(batch[b].v, one.v)
            np.testing.assert_array_equal(batch.history.grad_norm[b], one.history.grad_norm)


@pytest.mark.skipif(not sg.gd.cupy_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.gpu
def test_cupy_equals_numba_with_values_p_and_head() -> None:
    data = VALUES["cross"]
    for kw in (
        {"param": "p", "train_head": True, "normalize_eps": 0.01},
        {"param": "p", "train_head": True, "normalize_eps": {"p": 1e-19, "v": 0.05}},
        {"param": "W"},
    ):
        dev = sg.train(data, n_steps=200, record_every=50, backend="cupy", **kw)  # type: ignore[arg-type]
        ref = sg.train(data, n_steps=200, record_every=50, backend="numba", **kw)  # type: ignore[arg-type]
        _same_history(dev, ref)
