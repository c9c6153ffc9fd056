# SPDX-License-Identifier: BSD-3-Clause
"""l_p mirror descent: the gradient it uses, p = 2 is GD, log-domain safety, implicit bias."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import RiskOracle, inverse_mirror_map, mirror_map, train_mirror

from .conftest import FAST_BACKENDS


def test_gradient_matches_finite_differences() -> None:
    data = sg.random_data(3, 4, 5, seed=1)
    oracle = RiskOracle(data)
    W = np.random.default_rng(0).normal(size=(5, 5))
    r = oracle(W)
    grad = np.exp(r.M) * r.G
    h = 1e-6
    fd = np.zeros_like(W)
    for k in range(5):
        for l in range(5):
            E = np.zeros_like(W)
            E[k, l] = h
            fd[k, l] = (oracle(W + E).loss - oracle(W - E).loss) / (2 * h)
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, fd, atol=1e-8, rtol=1e-6)


@pytest.mark.parametrize("p", [1.1, 1.5, 3.0])
def test_mirror_map_is_the_gradient_of_the_potential_and_inverts(p: float) -> None:
    W = np.random.default_rng(2).normal(size=(4, 4))
    h = 1e-6
    psi = lambda A: np.sum(np.abs(A) ** p) / p  # noqa: E731
    fd = np.zeros_like(W)
    for k in range(4):
        for l in range(4):
            E = np.zeros_like(W)
            E[k, l] = h
            fd[k, l] = (psi(W + E) - psi(W - E)) / (2 * h)
    np.testing.assert_allclose(mirror_map(W, p), fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(inverse_mirror_map(mirror_map(W, p), p), W, rtol=1e-12)


@pytest.mark.parametrize("normalized", [False, True])
def test_p2_is_plain_gradient_descent(normalized: bool) -> None:
    data = sg.random_data(4, 5, 6, seed=0)
    md = train_mirror(data, exponent=2.0, step_size=0.5, n_steps=150, normalized=normalized)
    gd = sg.train(data, normalized=normalized, step_size=0.5, n_steps=150, backend="numpy")
    np.testing.assert_allclose(md.W, gd.W, atol=1e-12 * np.abs(gd.W).max())


def test_huge_norms_stay_finite() -> None:
    data = sg.random_data(3, 4, 6, seed=0)
    svm = sg.att_svm(data, norm=("lp", 1.5))  # type: ignore[arg-type]
    assert svm.W is not None
    W0 = 1e6 * svm.W
    plain = train_mirror(data, exponent=1.5, step_size=1.0, n_steps=20, init=W0)
    assert np.all(np.isfinite(plain.W))
    assert plain.status in (sg.StopStatus.MAX_STEPS, sg.StopStatus.GRADIENT_UNDERFLOW)
    normed = train_mirror(data, exponent=1.5, step_size=1.0, n_steps=20, init=W0, normalized=True)
    assert np.all(np.isfinite(normed.W)) and normed.status is sg.StopStatus.MAX_STEPS
    assert np.abs(normed.W - W0).max() > 0  # normalized steps keep moving far out
    assert np.all(np.isfinite(normed.history.loss))


def test_converges_to_the_lp_svm_direction() -> None:
    """A measurement of a conjecture: normalized mirror descent -> the l_p Att-SVM in
    direction, on an instance where the run selects the optimal tokens. Julistiono, Tarzanagh,
    Azizan 2024 state it for their plain l_p-AttGD, with hypotheses not checked here; these
    normalized steps are not their algorithm (docs/atlas.md, row 3)."""
    data = sg.random_data(4, 5, 10, seed=0)
    run = train_mirror(data, exponent=1.5, step_size=0.1, n_steps=2000, normalized=True)
    sel = RiskOracle(data)(run.W).selected.reshape(-1)
    svm = sg.att_svm(data, sel, norm=("lp", 1.5))  # type: ignore[arg-type]
    assert svm.success and svm.W is not None
    assert 1 - sg.correlation(run.W, svm.W) < 1e-3
    fro = sg.att_svm(data, sel)
    assert fro.W is not None  # and it is the l_p SVM, not the Frobenius one, that it finds
    assert 1 - sg.correlation(run.W, fro.W) > 10 * (1 - sg.correlation(run.W, svm.W))


@pytest.mark.parametrize("p", [1.0, 0.5, float("inf")])
def test_bad_exponent_is_a_clear_error(p: float) -> None:
    with pytest.raises(sg.ProblemError, match="'exponent'"):
        train_mirror(sg.random_data(2, 3, 4, seed=0), exponent=p)


def test_old_spelling_p_names_exponent() -> None:
    with pytest.raises(sg.ProblemError, match=r"p= \(renamed exponent"):
        train_mirror(sg.random_data(2, 3, 4, seed=0), p=1.5)


def test_run_is_a_gdrun_with_the_contract_fields() -> None:
    """The fields other modules (verify) read of a mirror run."""
    data = sg.random_data(3, 4, 5, seed=0)
    run = train_mirror(data, exponent=1.5, n_steps=30, record_every=10)
    assert isinstance(run, sg.GDRun)
    h = run.history
    R = h.step.shape[0]
    assert run.W.shape == (5, 5) and h.W.shape == (R, 5, 5)
    for name in ("loss", "W_norm", "W_norm_lp", "log_theta_scale"):
        assert getattr(h, name).shape == (R,)
    np.testing.assert_array_equal(h.step, [0, 10, 20, 30])
    np.testing.assert_allclose(h.W_norm, np.linalg.norm(h.W, axis=(1, 2)), rtol=1e-13)
    lp = np.sum(np.abs(h.W) ** 1.5, axis=(1, 2)) ** (1 / 1.5)
    np.testing.assert_allclose(h.W_norm_lp, lp, rtol=1e-12)
    np.testing.assert_array_equal(h.W[-1], run.W)
    assert run.n_steps == 30 and run.solve_time > 0 and run.message == "took all 30 steps"
    assert run.config.optimizer == "mirror" and run.config.exponent == 1.5


def test_overflow_ends_with_a_status_not_an_exception() -> None:
    """Regression (issue #21): p = 1.0001 with normalized steps raised a bare OverflowError
    (W = e^{c/(p-1)} ...); it now stops with OVERFLOW, the last W finite."""
    data = sg.random_data(3, 4, 5, seed=0)
    run = train_mirror(data, exponent=1.0001, normalized=True, step_size=1.0, n_steps=500)
    assert run.status is sg.StopStatus.OVERFLOW
    assert "past the largest norm" in run.message and "exponent" in run.message
    assert np.all(np.isfinite(run.W)) and np.all(np.isfinite(run.history.loss))
    assert 0 < run.n_steps < 500 and run.history.step[-1] == run.n_steps


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_numba_and_numpy_kernels_agree(normalized: bool, backend: str) -> None:
    data = sg.random_data(3, 4, 6, seed=4)
    runs = [
        train_mirror(
            data, exponent=1.5, step_size=0.3, n_steps=200, normalized=normalized, backend=b
        )
        for b in ("numpy", backend)
    ]
    # one-ulp differences of the kernels grow through the mirror map over 200 steps to
    # ~4e-10 of max|W| (at 50 steps they are 4e-16)
    np.testing.assert_allclose(runs[1].W, runs[0].W, rtol=0, atol=2e-9 * np.abs(runs[0].W).max())


def test_train_optimizer_mirror_is_train_mirror() -> None:
    data = sg.random_data(3, 4, 5, seed=1)
    a = sg.train(data, optimizer="mirror", exponent=1.5, n_steps=40, step_size=0.2)
    b = train_mirror(data, exponent=1.5, n_steps=40, step_size=0.2)
    assert isinstance(a, sg.GDRun) and a.status is b.status
    np.testing.assert_array_equal(a.history.W, b.history.W)
    c = sg.train(
        data, optimizer="mirror", exponent=3.0, n_steps=40, normalized=True, backend="numba"
    )
    d = train_mirror(data, exponent=3.0, n_steps=40, normalized=True, backend="numba")
    np.testing.assert_array_equal(c.W, d.W)
    assert np.abs(c.W - a.W).max() > 1e-3 * np.abs(a.W).max()  # the normalized run differs


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"optimizer": "mirror"}, "needs exponent="),
        ({"optimizer": "mirror", "exponent": 1.5, "param": "KQ"}, "another optimizer"),
        (
            {"optimizer": "mirror", "exponent": 1.5, "train_head": True, "ridge": 0.1},
            "ridge, train_head|train_head, ridge",
        ),
        ({"exponent": 1.5}, "l_p exponent of optimizer='mirror'.*param='p'"),
        ({"optimizer": "nesterov"}, "'optimizer' parameter of train"),
        ({"optimizer": "mirror", "exponent": 1.0}, "'exponent' parameter of train"),
        ({"method": "mirror"}, r"method= \(renamed optimizer"),
        ({"p": 1.5}, r"p= \(renamed exponent"),
        ({"tol": 1e-3}, r"tol= \(renamed grad_tol"),
    ],
)
def test_train_optimizer_bad_combinations(kw: dict, match: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(sg.ProblemError, match=match):
        sg.train(sg.random_data(3, 4, 5, seed=1), n_steps=2, **kw)


def test_start_beyond_the_limit_stops_at_once() -> None:
    """As GD: an init past the representable norms is an OVERFLOW run of 0 steps."""
    data = sg.random_data(3, 4, 5, seed=0)
    W0 = np.full((5, 5), 1e200)
    run = train_mirror(data, exponent=1.5, init=W0, n_steps=10)
    assert run.status is sg.StopStatus.OVERFLOW and run.n_steps == 0
    assert "initial" in run.message
    np.testing.assert_array_equal(run.W, W0)


def test_a_start_whose_mirror_image_leaves_float64_is_kept() -> None:
    """Regression: |W0|^(p-1) overflowing (p = 200, W0 = 50 I) restarted the run from Theta = 0;
    underflowing (W0 = 0.01 I) read the start as zero. Now formed in log space. And with one
    scale for all coordinates, the zero entries beside 50^199 could not move and the run
    stopped at step 0, though the exact step moves them by |eta g|^(1/199) ~ 0.97; each
    coordinate now has its own exponent."""
    from svmgeo.gd import RiskOracle

    data = sg.random_data(3, 4, 5, seed=0)
    p, eta = 200.0, 0.1
    for W0 in (50.0 * np.eye(5), 0.01 * np.eye(5)):
        run = train_mirror(data, exponent=p, n_steps=1, init=W0, step_size=eta)
        G, M = RiskOracle(data).log_grad(W0)
        g = np.exp(M) * G
        # Theta0 = 50^199 I: its diagonal is far above the step's rounding, the zeros take the
        # step; Theta0 = 1e-398 I is below float64 and below the step's rounding
        moved = np.sign(-g) * np.abs(eta * g) ** (1.0 / (p - 1.0))
        exact = np.where(np.eye(5) > 0, W0, moved) if W0[0, 0] == 50.0 else moved
        assert run.status is sg.StopStatus.MAX_STEPS
        np.testing.assert_allclose(run.W, exact, rtol=1e-14, atol=0)
    # every coordinate 50^199: the step is below each one's rounding, no step moves them
    ones = train_mirror(data, exponent=p, n_steps=3, init=np.full((5, 5), 50.0), step_size=eta)
    assert ones.status is sg.StopStatus.GRADIENT_UNDERFLOW and ones.n_steps == 0
    np.testing.assert_array_equal(ones.W, 50.0)


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_exactly_zero_gradient_stops_stationary_with_w_unchanged(
    normalized: bool, backend: str
) -> None:
    """Regression: an order-one G that is exactly zero at a finite scale M (every query z = 0)
    made normalized mirror steps divide by ||G|| = 0 (W reset to 0, log_theta_scale NaN) and
    plain ones "take" steps that moved nothing (MAX_STEPS). Both stop with STATIONARY, as
    train's other rules do."""
    base = sg.random_data(3, 4, 5, seed=0)
    data = sg.TokenData(base.X, v=base.v, Z=np.zeros((3, 5)))
    W0 = np.eye(5)
    G, M = sg.gd.RiskOracle(data).log_grad(W0)
    assert np.isfinite(M)
    np.testing.assert_array_equal(G, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 0/0
        run = train_mirror(
            data, exponent=1.5, init=W0, normalized=normalized, n_steps=4, record_every=1,
            backend=backend,
        )  # fmt: skip
    assert run.status is sg.StopStatus.STATIONARY and run.n_steps == 0
    assert "exactly zero" in run.message
    np.testing.assert_array_equal(run.W, W0)
    np.testing.assert_array_equal(run.history.log_theta_scale, [0.0])
    via_train = sg.train(data, optimizer="mirror", exponent=1.5, init=W0, n_steps=4)
    assert via_train.status is sg.StopStatus.STATIONARY
