# SPDX-License-Identifier: BSD-3-Clause
"""A user's own loss in training (issue #22): ``train(data, loss=LossSpec(...))`` on every
backend, against the built-in kernels (a user logistic loss), central finite differences of
the risk (a smooth hinge, a polynomial tail, the square loss whose l' changes sign), and bad
input (clear errors naming ``loss``)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo import LossSpec, ProblemError
from svmgeo.gd import cupy_available, loss_and_grad
from svmgeo.losses import LossWarning

from .conftest import ALL_BACKENDS

numba = pytest.importorskip("numba")

DATA = sg.random_data(6, 8, 10, seed=0)


def _logistic_user(log_abs: bool = False) -> LossSpec:
    """The logistic loss written by a user: value and l' = -sigma(-u) through tanh."""
    return LossSpec(
        "my-logistic",
        lambda u: np.logaddexp(0.0, -u),
        lambda u: -0.5 * (1.0 + np.tanh(-0.5 * u)),
        log_abs_d1=(lambda u: -np.logaddexp(0.0, u)) if log_abs else None,
    )


SOFT_HINGE = LossSpec(  # softplus(4(1 - u)) / 4, a smooth hinge
    "soft-hinge",
    lambda u: np.logaddexp(0.0, 4.0 * (1.0 - u)) / 4.0,
    lambda u: -0.5 * (1.0 + np.tanh(2.0 * (1.0 - u))),
)
POLY_TAIL = LossSpec(  # sqrt(1 + u^2) - u: l' = u / sqrt(1 + u^2) - 1 < 0, tail ~ 1 / (2u)
    "poly-tail", lambda u: np.sqrt(1.0 + u * u) - u, lambda u: u / np.sqrt(1.0 + u * u) - 1.0
)
SQUARE = sg.LOSS_SPECS["square"]  # l' = 2(u - 1) changes sign at u = 1


def _rel(A: np.ndarray, B: np.ndarray) -> float:
    return float(np.max(np.abs(A - B)) / np.max(np.abs(B)))


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_user_logistic_is_the_builtin_trajectory(backend: str) -> None:
    """The same iterates, risks and gradient norms as loss="logistic", to round-off."""
    opts = dict(n_steps=400, record_every=100, step_size=0.2, backend=backend)
    ref = sg.train(DATA, loss="logistic", **opts)
    run = sg.train(DATA, loss=_logistic_user(), **opts)
    assert run.status == ref.status
    np.testing.assert_allclose(run.W, ref.W, rtol=1e-12, atol=1e-12 * np.abs(ref.W).max())
    np.testing.assert_allclose(run.history.loss, ref.history.loss, rtol=1e-12)
    np.testing.assert_allclose(run.history.grad_norm, ref.history.grad_norm, rtol=1e-10)


def test_user_log_abs_d1_is_the_builtin_bit_for_bit_on_numpy() -> None:
    """With log_abs_d1 the numpy kernels form the built-in's very weights (flip = 1.0)."""
    opts = dict(n_steps=300, record_every=100, backend="numpy", param="KQ", m=4,
                init=("random", 0.1), seed=3)  # fmt: skip
    ref = sg.train(DATA, **opts)
    run = sg.train(DATA, loss=_logistic_user(log_abs=True), **opts)
    np.testing.assert_array_equal(run.K, ref.K)
    np.testing.assert_array_equal(run.Q, ref.Q)


def test_numba_functions_run_on_both_backends() -> None:
    """numba.njit callables of a float: compiled into the numba kernels, mapped over arrays
    by the numpy backend; both equal the built-in exponential loss to round-off."""
    value = numba.njit(lambda u: math.exp(-u))
    d1 = numba.njit(lambda u: -math.exp(-u))
    spec = LossSpec("my-exp", value, d1)
    for backend in ("numba", "numpy"):
        opts = dict(n_steps=200, record_every=100, backend=backend)
        ref = sg.train(DATA, loss="exponential", **opts)
        run = sg.train(DATA, loss=spec, **opts)
        np.testing.assert_allclose(run.W, ref.W, rtol=1e-12, atol=1e-12 * np.abs(ref.W).max())
        np.testing.assert_allclose(run.history.loss, ref.history.loss, rtol=1e-12)


def test_train_batch_and_tuples() -> None:
    """A (value, derivative) tuple, as check_loss takes it, in train_batch: each instance is
    the train run of its dataset."""
    pair = (SOFT_HINGE.value, SOFT_HINGE.d1)
    sets = [sg.random_data(4, 5, 6, seed=s) for s in (1, 2)]
    runs = sg.train_batch(sets, loss=pair, n_steps=50, backend="numpy")
    for b, data in enumerate(sets):
        one = sg.train(data, loss=pair, n_steps=50, backend="numpy")
        np.testing.assert_allclose(runs.W[b], one.W, rtol=1e-13, atol=1e-15)


def _fd_grad(f, W: np.ndarray, h: float = 1e-6) -> np.ndarray:
    G = np.zeros_like(W)
    for idx in np.ndindex(W.shape):
        E = np.zeros_like(W)
        E[idx] = h
        G[idx] = (f(W + E) - f(W - E)) / (2.0 * h)
    return G


@pytest.mark.parametrize("backend", ALL_BACKENDS)
@pytest.mark.parametrize("spec", [SOFT_HINGE, POLY_TAIL, SQUARE], ids=lambda s: s.name)
@pytest.mark.parametrize("attention", ["softmax", "linear"])
def test_gradient_is_the_finite_difference(backend: str, spec: LossSpec, attention: str) -> None:
    """loss_and_grad's gradient in W and in the head v against central differences of its
    own risk value (the user's ``value``), for losses whose l' is negative (hinge, tail) or
    changes sign (square)."""
    data = sg.random_data(4, 5, 6, seed=7)
    rng = np.random.default_rng(7)
    W = rng.normal(scale=0.5, size=(6, 6))
    v = np.asarray(data.v)
    kw = dict(loss=spec, backend=backend, attention=attention)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LossWarning)
        _, (gW, gv) = loss_and_grad(data, W, train_head=True, v=v, **kw)
        fW = _fd_grad(lambda A: loss_and_grad(data, A, v=v, **kw)[0], W)
        fv = _fd_grad(lambda b: loss_and_grad(data, W, v=b, **kw)[0], v)
    scale = np.abs(fW).max()
    np.testing.assert_allclose(gW, fW, rtol=1e-6, atol=1e-7 * scale)
    np.testing.assert_allclose(gv, fv, rtol=1e-6, atol=1e-7 * np.abs(fv).max())


def test_square_loss_warns_and_trains() -> None:
    """l' = 2(u - 1) >= 0 inside the attained interval: a LossWarning (check_loss's verdict),
    and plain gradient descent with a small step still decreases the risk."""
    d = sg.random_data(6, 8, 10, seed=1)  # tokens x3: some min gamma < 1 < max gamma
    data = sg.TokenData(3.0 * np.asarray(d.X), Y=d.Y, v=d.v, Z=d.Z)
    chk = sg.check_loss("square", data)
    assert not chk.passed
    with pytest.warns(LossWarning, match="l'\\(u\\) >= 0") as record:
        run = sg.train(data, loss=SQUARE, normalized=False, step_size=0.05, n_steps=200,
                       record_every=10, backend="numpy")  # fmt: skip
    assert record[0].filename == __file__  # the warning points at the user's call
    loss = run.history.loss
    assert np.all(np.diff(loss) <= 1e-12)
    assert loss[-1] < loss[0]


def test_decreasing_loss_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", LossWarning)
        sg.train(DATA, loss=POLY_TAIL, n_steps=5, backend="numpy")


@pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device")
def test_cupy_runs_user_callables_on_device_arrays() -> None:
    opts = dict(n_steps=100, record_every=50)
    ref = sg.train(DATA, loss=SOFT_HINGE, backend="numpy", **opts)
    run = sg.train(DATA, loss=SOFT_HINGE, backend="cupy", **opts)
    np.testing.assert_allclose(run.W, ref.W, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# bad input: a ProblemError naming the argument, what was expected and how to fix it
def _raise(u: np.ndarray) -> np.ndarray:
    raise RuntimeError("boom")


BAD = [
    (42, "'loss' parameter of train must be a name"),
    ((np.exp,), "'loss' parameter of train must be"),
    ("hinge", "loss"),
    (LossSpec("sum", lambda u: np.sum(u), lambda u: -np.ones_like(u)), "must return an array"),
    (LossSpec("nan", lambda u: -u, lambda u: np.log(u)), "d1 callable .* is not finite"),
    (LossSpec("boom", lambda u: -u, _raise), "d1 callable .* failed .*RuntimeError: boom"),
    (LossSpec("2args", lambda u, w: -u, lambda u: -u), "value callable .* failed .*TypeError"),
]


@pytest.mark.parametrize(("loss", "match"), BAD, ids=range(len(BAD)))
def test_bad_losses_are_clear(loss: object, match: str) -> None:
    data = sg.TokenData(DATA.X, v=DATA.v + 0.01, Z=DATA.Z)  # scores never exactly 0
    with pytest.raises(ProblemError, match=match):
        sg.train(data, loss=loss, n_steps=5, backend="numpy")


def test_numba_backend_names_the_way_out() -> None:
    """A callable numba cannot compile: the message names loss, backend and backend='numpy'."""
    import scipy.special

    spec = LossSpec("expit", lambda u: np.logaddexp(0.0, -u), lambda u: -scipy.special.expit(-u))
    for backend in ("numba", None):
        with pytest.raises(ProblemError, match=r"'loss'.*backend='numba'.*backend='numpy'"):
            sg.train(DATA, loss=spec, n_steps=5, backend=backend)
    run = sg.train(DATA, loss=spec, n_steps=5, backend="numpy")
    assert run.n_steps == 5


@pytest.mark.parametrize(
    ("optimizer", "extra"),
    [("adam", {}), ("sign", {}), ("mirror", {"exponent": 1.5}), (("steepest", 1.5), {})],
    ids=["adam", "sign", "mirror", "steepest"],
)
def test_other_optimizers_take_user_losses(optimizer: object, extra: dict) -> None:
    """Every optimizer's risk (RiskOracle) takes the user loss: the built-in's iterates."""
    opts = dict(optimizer=optimizer, n_steps=100, backend="numpy", **extra)
    ref = sg.train(DATA, **opts)
    run = sg.train(DATA, loss=_logistic_user(), **opts)
    np.testing.assert_allclose(run.W, ref.W, rtol=1e-12, atol=1e-12 * np.abs(ref.W).max())


def test_verify_takes_the_user_loss() -> None:
    """verify trains with the user loss: the built-in's report, to round-off."""
    data = sg.random_data(6, 8, 10, seed=2, score_gap=0.05)
    ref = sg.verify(data, n_steps=500, backend="numpy")
    rep = sg.verify(data, loss=_logistic_user(), n_steps=500, backend="numpy")
    assert rep.converged_to == ref.converged_to
    np.testing.assert_allclose(rep.final_corr_fro, ref.final_corr_fro, rtol=1e-12)


def test_next_token_risk_refuses_clearly() -> None:
    data = sg.random_next_token_data(4, 5, 4, 6, seed=0)
    with pytest.raises(ProblemError, match="'loss' parameter of train_ntp: a user-defined"):
        sg.train_ntp(data, loss=SOFT_HINGE, n_steps=5)


def test_numba_kernels_take_the_loss_as_a_first_class_function() -> None:
    """One compiled kernel per function type (not per loss), cached in the user cache
    directory like the built-ins' (never in the package)."""
    from pathlib import Path

    from svmgeo._jit import cache_dir
    from svmgeo.gd import _numba

    other = LossSpec("other", POLY_TAIL.value, POLY_TAIL.d1)
    for spec in (SOFT_HINGE, other):
        sg.train(DATA, loss=spec, n_steps=3, backend="numba")
    # advance: the kernel train and train_batch run (run_one is inlined in it)
    user = [s for s in _numba.advance.signatures if "FunctionType" in str(s)]
    assert len(user) == 1
    path = Path(_numba.advance._cache._cache_path).resolve()
    assert path.is_relative_to(Path(cache_dir()).resolve())
    assert not path.is_relative_to(Path(_numba.__file__).resolve().parent)


def test_user_loss_trains_another_attention_map_with_a_steepest_rule():
    """A steepest rule on another map (MapRisk) takes a user loss like the built-in one."""
    data = sg.random_data(4, 5, 6, seed=1)
    user = (
        lambda u: np.logaddexp(0.0, -u),
        lambda u: -0.5 * (1.0 - np.tanh(0.5 * u)),  # -sigmoid(-u)
    )
    # a smooth rule: sign descent flips near-zero entries on round-off differences
    kw = dict(attention="linear", optimizer=("steepest", 1.5), n_steps=200, backend="numpy")
    ref = sg.train(data, loss="logistic", **kw)
    run = sg.train(data, loss=user, **kw)
    np.testing.assert_allclose(run.W, ref.W, rtol=1e-12, atol=1e-12)
