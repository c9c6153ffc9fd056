# SPDX-License-Identifier: BSD-3-Clause
"""l_p mirror descent: the gradient it uses, p = 2 is GD, log-domain safety, implicit bias."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd._mirror import inverse_mirror_map, mirror_map, train_mirror
from svmgeo.gd._oracle import RiskOracle


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
    md = train_mirror(data, p=2.0, step_size=0.5, n_steps=150, normalized=normalized)
    gd = sg.train(data, normalized=normalized, step_size=0.5, n_steps=150, backend="numpy")
    np.testing.assert_allclose(md.W, gd.W, atol=1e-12 * np.abs(gd.W).max())


def test_huge_norms_stay_finite() -> None:
    data = sg.random_data(3, 4, 6, seed=0)
    svm = sg.att_svm(data, norm=("lp", 1.5))  # type: ignore[arg-type]
    assert svm.W is not None
    W0 = 1e6 * svm.W
    plain = train_mirror(data, p=1.5, step_size=1.0, n_steps=20, init=W0)
    assert np.all(np.isfinite(plain.W))
    assert plain.status in (sg.StopStatus.MAX_STEPS, sg.StopStatus.GRADIENT_UNDERFLOW)
    normed = train_mirror(data, p=1.5, step_size=1.0, n_steps=20, init=W0, normalized=True)
    assert np.all(np.isfinite(normed.W)) and normed.status is sg.StopStatus.MAX_STEPS
    assert np.abs(normed.W - W0).max() > 0  # normalized steps keep moving far out
    assert np.all(np.isfinite(normed.loss))


def test_converges_to_the_lp_svm_direction() -> None:
    """An example of the paper's theorem (MD -> l_p Att-SVM in direction), on an instance
    where the run selects the optimal tokens; the theorem's assumptions are not checked."""
    data = sg.random_data(4, 5, 10, seed=0)
    run = train_mirror(data, p=1.5, step_size=0.1, n_steps=2000, normalized=True)
    sel = RiskOracle(data)(run.W).selected.reshape(-1)
    svm = sg.att_svm(data, sel, norm=("lp", 1.5))  # type: ignore[arg-type]
    assert svm.success and svm.W is not None
    assert 1 - sg.correlation(run.W, svm.W) < 1e-3
    fro = sg.att_svm(data, sel)
    assert fro.W is not None  # and it is the l_p SVM, not the Frobenius one, that it finds
    assert 1 - sg.correlation(run.W, fro.W) > 10 * (1 - sg.correlation(run.W, svm.W))


@pytest.mark.parametrize("p", [1.0, 0.5, float("inf")])
def test_bad_p_is_a_clear_error(p: float) -> None:
    with pytest.raises(sg.ProblemError, match="'p'"):
        train_mirror(sg.random_data(2, 3, 4, seed=0), p=p)


@pytest.mark.parametrize("normalized", [False, True])
def test_numba_and_numpy_kernels_agree(normalized: bool) -> None:
    data = sg.random_data(3, 4, 6, seed=4)
    runs = [
        train_mirror(data, p=1.5, step_size=0.3, n_steps=200, normalized=normalized, backend=b)
        for b in ("numpy", "numba")
    ]
    # one-ulp differences of the kernels grow through the mirror map over 200 steps to
    # ~4e-10 of max|W| (at 50 steps they are 4e-16)
    np.testing.assert_allclose(runs[1].W, runs[0].W, rtol=0, atol=2e-9 * np.abs(runs[0].W).max())


def test_train_method_mirror_is_train_mirror() -> None:
    data = sg.random_data(3, 4, 5, seed=1)
    a = sg.train(data, method="mirror", p=1.5, n_steps=40, step_size=0.2)
    b = train_mirror(data, p=1.5, n_steps=40, step_size=0.2)
    assert isinstance(a, sg.MirrorRun) and a.status is b.status
    np.testing.assert_array_equal(a.W_history, b.W_history)
    c = sg.train(data, method="mirror", p=3.0, n_steps=40, normalized=True, backend="numba")
    d = train_mirror(data, p=3.0, n_steps=40, normalized=True, backend="numba")
    np.testing.assert_array_equal(c.W, d.W)
    assert not np.allclose(c.W, a.W)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"method": "mirror"}, "needs p=.*got no p"),
        ({"method": "mirror", "p": 1.5, "param": "KQ"}, "gradient-descent option.*param"),
        (
            {"method": "mirror", "p": 1.5, "train_head": True, "ridge": 0.1},
            "train_head, ridge|ridge.*train_head",
        ),
        ({"p": 1.5}, "l_p exponent of method='mirror'.*param='p'"),
        ({"method": "adam"}, "'method' parameter of train"),
        ({"method": "mirror", "p": 1.0}, "'p' parameter of train_mirror"),
    ],
)
def test_train_method_bad_combinations(kw: dict, match: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(sg.ProblemError, match=match):
        sg.train(sg.random_data(3, 4, 5, seed=1), n_steps=2, **kw)
