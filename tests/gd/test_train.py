# SPDX-License-Identifier: BSD-3-Clause
"""train / train_batch: results, histories, initializations, stops and callbacks."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import StopStatus

from .conftest import ALL_BACKENDS, DATASETS


def test_history_has_every_record_at_the_cadence() -> None:
    data = DATASETS["cross"]
    run = sg.train(data, n_steps=95, record_every=10, backend="numpy")
    h = run.history
    np.testing.assert_array_equal(h.step, [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95])
    R = h.step.size
    n, T, d = data.n, data.T, data.d
    assert data.single_query  # one query per sequence: no K axis, as a selection
    assert h.W.shape == (R, d, d) and h.probs.shape == (R, n, T)
    assert h.max_prob.shape == h.selected.shape == (R, n)
    assert h.selected[-1].shape == sg.optimal_tokens(data).shape == data.selection_shape
    for field in (h.loss, h.log_loss_gap, h.grad_norm, h.log_grad_norm, h.W_norm):
        assert field.shape == (R,)
    np.testing.assert_array_equal(h.W[-1], run.W)
    np.testing.assert_allclose(h.W_norm, np.linalg.norm(h.W, axis=(1, 2)), rtol=1e-14)
    np.testing.assert_allclose(h.probs.sum(axis=-1), 1.0, rtol=1e-14)
    np.testing.assert_array_equal(h.selected, h.probs.argmax(axis=-1))
    np.testing.assert_allclose(h.max_prob, h.probs.max(axis=-1), rtol=1e-14)
    np.testing.assert_allclose(h.grad_norm, np.exp(h.log_grad_norm), rtol=1e-12)
    assert run.status is StopStatus.MAX_STEPS and run.n_steps == 95
    # the loss decreases under small normalized steps from zero
    assert np.all(np.diff(h.loss) < 0)


def test_recorded_values_match_direct_evaluation() -> None:
    data = DATASETS["masked"]
    run = sg.train(data, n_steps=40, record_every=20, backend="numba", step_size=0.05)
    for r in range(run.history.step.size):
        W = run.history.W[r]
        value, grad = sg.gd.loss_and_grad(data, W)
        np.testing.assert_allclose(run.history.loss[r], value, rtol=1e-13)
        np.testing.assert_allclose(run.history.grad_norm[r], np.linalg.norm(grad), rtol=1e-12)
        logits = np.einsum("ntd,de,nke->nkt", data.X, W, data.queries)
        logits = np.where(data.visible, logits, -np.inf)
        p = np.exp(logits - logits.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(run.history.probs[r], p / p.sum(-1, keepdims=True), rtol=1e-12)


def test_record_subset_keeps_memory_bounded() -> None:
    run = sg.train(DATASETS["cross"], n_steps=1000, record=("loss",), backend="numba")
    h = run.history
    assert h.W is None and h.probs is None and h.grad_norm is None
    assert h.step.size == 101  # default cadence n_steps // 100
    assert h.loss.shape == (101,) and h.log_loss_gap.shape == (101,)


def test_log_loss_gap_equals_direct_gap_while_resolvable() -> None:
    data = DATASETS["cross"]
    run = sg.train(data, n_steps=30, record_every=10, backend="numpy", step_size=0.1)
    sel = run.history.selected[-1].reshape(data.n, data.K)
    Xm = np.take_along_axis(data.X, sel[:, :, None], axis=1)
    f_sel = np.einsum("nkd,d->nk", Xm, data.v)
    L_sel = np.sum(np.logaddexp(0.0, -data.labels * f_sel)) / data.n
    gap = run.history.loss[-1] - L_sel
    assert gap > 0
    np.testing.assert_allclose(run.history.log_loss_gap[-1], np.log(gap), rtol=1e-8)


def test_log_loss_gap_stays_informative_after_loss_saturates() -> None:
    data = DATASETS["cross"]
    run = sg.train(data, n_steps=4000, record_every=500, step_size=0.5, record=("loss",))
    gap = run.history.log_loss_gap
    assert np.all(np.isfinite(gap[1:]))
    assert gap[-1] < -100  # far below float64 resolution of the loss itself
    assert np.all(np.diff(gap[1:]) < 0)
    np.testing.assert_array_equal(run.history.loss[-1], run.history.loss[-2])  # loss is flat


@pytest.mark.parametrize("m", [2, 7])
def test_kq_run_reports_factors_and_their_product(m: int) -> None:
    data = DATASETS["cross"]
    run = sg.train(data, param="KQ", m=m, init=("random", 0.1), seed=0, n_steps=200)
    assert run.K.shape == run.Q.shape == (data.d, m)
    np.testing.assert_allclose(run.W, run.K @ run.Q.T, rtol=1e-14)
    again = sg.train(data, param="KQ", m=m, init=("random", 0.1), seed=0, n_steps=200)
    np.testing.assert_array_equal(again.W, run.W)
    other = sg.train(data, param="KQ", m=m, init=("random", 0.1), seed=1, n_steps=200)
    assert np.abs(other.K - run.K).max() > 1e-3 * np.abs(run.K).max()  # another seed, another start


def test_given_initialization_is_used() -> None:
    data = DATASETS["self"]
    rng = np.random.default_rng(0)
    K0, Q0 = rng.normal(size=(data.d, 3)), rng.normal(size=(data.d, 3))
    one = sg.train(data, param="KQ", init=(K0, Q0), n_steps=1, step_size=1e-3, record_every=1)
    np.testing.assert_allclose(one.history.W[0], K0 @ Q0.T, rtol=1e-14)
    W0 = rng.normal(size=(data.d, data.d))
    run = sg.train(data, init=W0, n_steps=1, normalized=False, step_size=1e-3, record_every=1)
    _, grad = sg.gd.loss_and_grad(data, W0)
    np.testing.assert_allclose(run.W, W0 - 1e-3 * grad, rtol=1e-13)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
@pytest.mark.parametrize("mode", [{}, {"normalized": False}, {"log_domain": False}])
def test_exactly_zero_gradients_are_stationary_not_underflow(
    backend: str, mode: dict[str, bool]
) -> None:
    run = sg.train(DATASETS["cross"], param="KQ", init="zero", n_steps=10, backend=backend, **mode)
    assert run.status is StopStatus.STATIONARY and run.n_steps == 0
    assert "stationary" in run.message
    np.testing.assert_array_equal(run.W, 0.0)
    one_token = sg.random_data(3, 1, 4, seed=0)  # nothing to select: the risk is constant
    run = sg.train(one_token, n_steps=10, backend=backend, **mode)
    assert run.status is StopStatus.STATIONARY and run.n_steps == 0
    assert "no start helps" in run.message  # T = 1: every W is stationary, init is no cure


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_plain_steps_stop_cleanly_when_the_gradient_underflows(backend: str) -> None:
    data = DATASETS["cross"]
    run = sg.train(
        data, normalized=False, step_size=1e8, n_steps=50, record_every=1, backend=backend
    )
    assert run.status is StopStatus.GRADIENT_UNDERFLOW
    assert 0 < run.n_steps < 50
    assert np.linalg.norm(run.W) >= 1e6
    assert np.all(np.isfinite(run.history.W)) and np.all(np.isfinite(run.history.loss))
    # the stop is where the true gradient is below float64's normal range
    assert run.history.log_grad_norm[-1] < np.log(1e-292) < run.history.log_grad_norm[-2]


@pytest.mark.parametrize("param", ["W", "KQ"])
@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_huge_steps_never_produce_nan(param: str, backend: str) -> None:
    """Normalized steps of size 1e5 (so ||W|| >= 1e6, and 1e10 and beyond for KQ): the
    log-domain direction keeps going, the direct formula stops with a status."""
    data = DATASETS["causal"]
    kw = dict(param=param, step_size=1e5, n_steps=30, record_every=5, backend=backend)
    kw.update(init=("random", 1.0), seed=0)
    run = sg.train(data, **kw)  # type: ignore[arg-type]
    assert run.status is StopStatus.MAX_STEPS
    assert np.linalg.norm(run.W) >= 1e6
    for field in ("W", "loss", "log_grad_norm", "probs", "max_prob"):
        assert np.all(np.isfinite(getattr(run.history, field))), field
    # the gap to the hard selection is NaN only where it is negative (random start)
    assert np.all(np.isfinite(run.history.log_loss_gap[1:]))
    direct = sg.train(data, log_domain=False, **kw)  # type: ignore[arg-type]
    assert direct.status is StopStatus.GRADIENT_UNDERFLOW and direct.n_steps < 30
    assert "underflowed" in direct.message
    assert np.all(np.isfinite(direct.history.W)) and np.all(np.isfinite(direct.history.loss))


def test_tol_stops_with_converged() -> None:
    run = sg.train(DATASETS["cross"], normalized=False, step_size=1.0, n_steps=5000, grad_tol=1e-2)
    assert run.status is StopStatus.CONVERGED and run.n_steps < 5000
    assert run.history.grad_norm[-1] <= 1e-2 < run.history.grad_norm[-2]


def test_saturation_tol_stops_with_saturated() -> None:
    run = sg.train(DATASETS["cross"], n_steps=5000, record_every=50, saturation_tol=1e-12)
    assert run.status is StopStatus.SATURATED and run.n_steps < 5000
    assert run.history.max_prob[-1].min() >= 1 - 1e-12
    assert run.history.max_prob[-2].min() < 1 - 1e-12


def test_callback_sees_each_record_and_can_stop() -> None:
    seen: list[int] = []

    def stop_when_sharp(state: sg.gd.Intermediate) -> None:
        seen.append(int(state.step))
        assert state.W.shape == (5, 5) and state.probs.shape == (3, 4)
        if state.max_prob.min() > 0.9:
            raise StopIteration

    run = sg.train(DATASETS["cross"], n_steps=2000, record_every=10, callback=stop_when_sharp)
    assert run.status is StopStatus.CALLBACK
    assert seen == list(range(10, run.n_steps + 1, 10))
    assert run.history.max_prob[-1].min() > 0.9 >= run.history.max_prob[-2].min()


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_batch_equals_separate_runs(backend: str) -> None:
    datasets = [sg.random_data(3, 4, 5, seed=s) for s in range(4)]
    kw = dict(param="KQ", m=3, init=("random", 0.2), n_steps=300, record_every=100, backend=backend)
    batch = sg.train_batch(datasets, seed=5, **kw)  # type: ignore[arg-type]
    assert len(batch) == 4 and batch.W.shape == (4, 5, 5) and batch.history.loss.shape == (4, 4)
    assert batch.history.W is None and batch.history.probs is None  # light records by default
    first = sg.train(datasets[0], seed=5, **kw)  # type: ignore[arg-type]
    np.testing.assert_allclose(batch[0].W, first.W, rtol=1e-12)
    np.testing.assert_allclose(batch[0].history.loss, first.history.loss, rtol=1e-12)
    for b, run in enumerate(batch):
        K0 = batch[b].K
        init = (np.asarray(K0), np.asarray(batch[b].Q))
        assert run.status is StopStatus.MAX_STEPS and init[0].shape == (5, 3)
    # instances train independently: a given per-instance init reproduces each run alone
    W0 = np.stack([0.1 * np.eye(5) * (b + 1) for b in range(4)])
    batch_w = sg.train_batch(datasets, init=W0, n_steps=200, backend=backend)
    for b in range(4):
        alone = sg.train(datasets[b], init=W0[b], n_steps=200, backend=backend)
        np.testing.assert_allclose(batch_w.W[b], alone.W, rtol=1e-12)


def test_batch_instances_stop_independently() -> None:
    datasets = [DATASETS["cross"], sg.random_data(3, 4, 5, seed=9)]
    batch = sg.train_batch(
        datasets, param="KQ", init=(np.zeros((2, 5, 5)), np.ones((2, 5, 5))), n_steps=50
    )
    # K = 0 with Q != 0 is not stationary (grad_K = grad L Q); both run
    assert batch.status == (StopStatus.MAX_STEPS, StopStatus.MAX_STEPS)
    mixed = sg.train_batch(
        datasets,
        normalized=False,
        step_size=1e8,
        init=np.stack([np.zeros((5, 5)), np.zeros((5, 5))]),
        n_steps=50,
        record_every=5,
    )
    assert all(s is StopStatus.GRADIENT_UNDERFLOW for s in mixed.status)
    runs = list(mixed)
    for b, run in enumerate(runs):
        assert run.history.step[-1] == run.n_steps == mixed.n_steps[b]
        assert np.all(np.diff(run.history.step) > 0)


def test_batch_from_stacked_arrays_equals_batch_from_datasets() -> None:
    datasets = [sg.random_data(3, 4, 5, seed=s, query="all", mask="causal") for s in range(3)]
    stacked = {
        "X": np.stack([d.X for d in datasets]),
        "Y": np.stack([d.Y for d in datasets]),
        "v": np.stack([d.v for d in datasets]),
        "query": "all",
        "mask": "causal",
    }
    a = sg.train_batch(stacked, n_steps=50, backend="numpy")
    b = sg.train_batch(datasets, n_steps=50, backend="numpy")
    np.testing.assert_array_equal(a.W, b.W)
    cross = [sg.random_data(2, 3, 4, seed=s, n_queries=2) for s in range(2)]
    c = sg.train_batch(
        {
            "X": [d.X for d in cross],
            "Z": [d.Z for d in cross],
            "Y": [d.Y for d in cross],
            "v": cross[0].v,
        },
        n_steps=20,
    )
    assert c.W.shape == (2, 4, 4)
    with pytest.raises(sg.ProblemError, match="leading axis of length B = 2"):
        sg.train_batch({"X": [d.X for d in cross], "Z": cross[0].Z[:1], "v": cross[0].v}, n_steps=2)
    with pytest.raises(sg.ProblemError, match="unknown \\['W'\\]"):
        sg.train_batch({"X": [d.X for d in cross], "W": 1}, n_steps=2)


@pytest.mark.parametrize("name", ["cross", "self", "causal", "masked"])
def test_final_selection_has_the_shape_of_optimal_tokens(name: str) -> None:
    data = DATASETS[name]
    run = sg.train(data, n_steps=20, backend="numpy")
    opt = sg.optimal_tokens(data, ties="first")
    assert run.history.selected is not None
    assert run.history.selected[-1].shape == opt.shape == data.selection_shape
    batch = sg.train_batch([data, data], n_steps=20, backend="numpy")
    assert batch.history.selected is not None
    assert batch.history.selected.shape[2:] == data.selection_shape


def _halve_w(info: sg.gd.Intermediate) -> None:
    np.multiply(info.W, 0.5, out=info.W)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
@pytest.mark.parametrize(
    "kw",
    [
        {"param": "KQ", "m": 3, "init": ("random", 0.3), "seed": 0},
        {"param": "p", "train_head": True},
    ],
)
def test_callback_cannot_change_the_run(backend: str, kw: dict[str, object]) -> None:
    """The callback's arrays are read-only views: writing raises ValueError and the run (its
    iterate and its history) equals the run without a callback bit for bit. (They were views
    of the live iterate and of the history: halving info.W changed run.W by 0.6.)"""
    data = DATASETS["cross"]
    opts = dict(n_steps=20, record_every=5, backend=backend, **kw)
    ref = sg.train(data, **opts)  # type: ignore[arg-type]
    written: list[str] = []

    def write_everything(info: sg.gd.Intermediate) -> None:
        for name in ("W", "K", "Q", "p", "v", "probs", "max_prob", "selected", "step", "loss"):
            A = getattr(info, name)
            if isinstance(A, np.ndarray) and A.ndim > 0:
                with pytest.raises(ValueError, match="read-only"):
                    A[...] = 0
                written.append(name)

    run = sg.train(data, callback=write_everything, **opts)  # type: ignore[arg-type]
    arrays = {"W", "K", "Q"} if kw["param"] == "KQ" else {"p", "v"}
    assert set(written) == arrays | {"probs", "max_prob", "selected"}
    assert len(written) == 4 * len(set(written))  # every record point after the start
    for name in ("W", "K", "Q", "p", "v"):
        a, b = getattr(run, name), getattr(ref, name)
        assert (a is None) == (b is None), name
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg=name)
    for name in ("W", "p", "v", "probs", "loss", "max_prob"):
        a, b = getattr(run.history, name), getattr(ref.history, name)
        if b is not None:
            np.testing.assert_array_equal(a, b, err_msg=name)
    if run.W is not None:
        assert run.W.flags.writeable  # the results stay the caller's to modify


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_callback_writing_into_w_raises(backend: str) -> None:
    data = DATASETS["cross"]
    with pytest.raises(ValueError, match="read-only"):
        sg.train(data, n_steps=20, record_every=5, backend=backend, callback=_halve_w)
    datasets = [sg.random_data(3, 4, 5, seed=s) for s in range(3)]
    opts = dict(n_steps=20, record_every=5, record=sg.gd.RECORDS, backend=backend)
    ref = sg.train_batch(datasets, **opts)  # type: ignore[arg-type]
    calls: list[int] = []

    def zero_history(info: sg.gd.Intermediate) -> None:
        calls.append(1)
        for A in (info.probs, info.W, info.step, info.loss, info.max_prob):
            with pytest.raises(ValueError, match="read-only"):
                A[...] = 0

    batch = sg.train_batch(datasets, callback=zero_history, **opts)  # type: ignore[arg-type]
    assert len(calls) == 4
    np.testing.assert_array_equal(batch.W, ref.W)
    np.testing.assert_array_equal(batch.history.probs, ref.history.probs)
    np.testing.assert_array_equal(batch.history.W, ref.history.W)
    np.testing.assert_array_equal(batch.history.loss, ref.history.loss)


#: Two datasets whose gradient is exactly zero at W = 0 with a finite log-domain scale M:
#: every query z = 0 (each contribution is zero), and two mirrored sequences whose
#: contributions cancel exactly.
ZERO_Z = sg.TokenData(DATASETS["cross"].X, v=DATASETS["cross"].v, Z=np.zeros((3, 5)))
_X1 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.5]])
_Z1 = np.array([0.3, 0.7])
MIRRORED = sg.TokenData(np.stack([_X1, _X1]), v=np.array([1.0, 0.2]), Z=np.stack([_Z1, -_Z1]))


@pytest.mark.parametrize("backend", ALL_BACKENDS)
@pytest.mark.parametrize("mode", [{}, {"normalized": False}, {"normalize_eps": 0.1}])
@pytest.mark.parametrize("name", ["zero_z", "mirrored"])
def test_gradients_summing_to_exactly_zero_are_stationary(
    backend: str, mode: dict[str, object], name: str
) -> None:
    """STATIONARY, not GRADIENT_UNDERFLOW, where the log-domain direction G (largest weight
    one) is exactly zero at a finite scale M, as the other rules (sign, adam, spectral) and
    mirror descent report it."""
    data = ZERO_Z if name == "zero_z" else MIRRORED
    W0 = np.zeros((data.d, data.d))
    G, M = sg.gd.RiskOracle(data).log_grad(W0)
    assert np.isfinite(M)  # not the M = -inf of a query without weights
    np.testing.assert_array_equal(G, 0.0)
    run = sg.train(data, n_steps=5, backend=backend, **mode)  # type: ignore[arg-type]
    assert run.status is StopStatus.STATIONARY and run.n_steps == 0, run.status
    assert "exactly zero" in run.message
    np.testing.assert_array_equal(run.W, W0)
    batch = sg.train_batch([data, data], n_steps=5, backend=backend, **mode)  # type: ignore[arg-type]
    assert batch.status == (StopStatus.STATIONARY,) * 2
    if not mode:
        for rule in ("sign", "adam", "spectral"):
            assert sg.train(data, optimizer=rule, n_steps=5).status is StopStatus.STATIONARY


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_direct_formula_reports_a_zero_gradient_as_underflow(backend: str) -> None:
    """With log_domain=False the weights are formed at their true scale, so a gradient that is
    zero in float64 may have underflowed: it stays GRADIENT_UNDERFLOW (documented)."""
    run = sg.train(ZERO_Z, n_steps=5, log_domain=False, backend=backend)
    assert run.status is StopStatus.GRADIENT_UNDERFLOW and run.n_steps == 0
