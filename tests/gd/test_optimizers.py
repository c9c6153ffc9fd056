# SPDX-License-Identifier: BSD-3-Clause
"""The update rules sign, ("steepest", q), spectral (Muon) and Adam, and the Polyak step:
each against a step computed by hand, numba = numpy, log-domain safety, option errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.cli import main
from svmgeo.gd import (
    AdamMoments,
    RiskOracle,
    adam_direction,
    loss_and_grad,
    spectral_direction,
    steepest_direction,
)

from .conftest import FAST_BACKENDS

DATA = sg.random_data(3, 4, 5, seed=1)
W0 = 0.3 * np.random.default_rng(0).normal(size=(5, 5))
G_HAND = np.array([[3.0, -1.0], [0.0, 2.0]])


def grad(W: np.ndarray) -> np.ndarray:
    """The true-scale gradient, from the public single evaluation (numpy kernels)."""
    return loss_and_grad(DATA, W)[1]


def run(optimizer: object, n: int, **kw: object) -> sg.GDRun:
    kw.setdefault("init", W0)
    return sg.train(DATA, optimizer=optimizer, n_steps=n, record_every=1, backend="numpy", **kw)


# -- the directions --------------------------------------------------------------------------


def test_steepest_direction_by_hand() -> None:
    D, dual = steepest_direction(G_HAND, math.inf)
    np.testing.assert_array_equal(D, np.sign(G_HAND))
    np.testing.assert_allclose(dual, 6.0)  # ||G||_1
    D, dual = steepest_direction(G_HAND, 2.0)
    np.testing.assert_allclose(D, G_HAND / math.sqrt(14.0), rtol=1e-15)
    np.testing.assert_allclose(dual, math.sqrt(14.0), rtol=1e-15)
    D, dual = steepest_direction(G_HAND, 1.0)
    np.testing.assert_array_equal(D, [[1.0, 0.0], [0.0, 0.0]])  # the largest entry alone
    np.testing.assert_allclose(dual, 3.0)  # ||G||_inf
    D, _ = steepest_direction(np.array([[2.0, -2.0], [1.0, 0.0]]), 1.0)
    np.testing.assert_array_equal(D, [[0.5, -0.5], [0.0, 0.0]])  # ties share the unit mass


@pytest.mark.parametrize("q", [1.2, 1.5, 3.0, 7.0])
def test_steepest_direction_is_the_dual_norm_maximiser(q: float) -> None:
    G = np.random.default_rng(1).normal(size=(4, 3))
    D, dual = steepest_direction(G, q)
    qs = q / (q - 1.0)
    np.testing.assert_allclose(np.sum(np.abs(D) ** q) ** (1 / q), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.vdot(G, D), dual, rtol=1e-12)
    np.testing.assert_allclose(dual, np.sum(np.abs(G) ** qs) ** (1 / qs), rtol=1e-12)
    # no unit vector of l_q does better (Hölder)
    rng = np.random.default_rng(2)
    E = rng.normal(size=(500, 4, 3))
    E /= np.sum(np.abs(E) ** q, axis=(1, 2), keepdims=True) ** (1 / q)
    assert np.max(np.einsum("kl,bkl->b", G, E)) <= dual
    # scale-free: the direction of a tiny gradient is the same
    np.testing.assert_allclose(steepest_direction(1e-300 * G, q)[0], D, rtol=1e-12)


def test_spectral_direction_by_hand() -> None:
    G = np.random.default_rng(3).normal(size=(4, 4))
    U, s, Vt = np.linalg.svd(G)
    D, dual = spectral_direction(G)
    np.testing.assert_allclose(D, U @ Vt, atol=1e-14)
    np.testing.assert_allclose(dual, s.sum(), rtol=1e-14)
    # rank one: u v^T, not an arbitrary completion
    u, v = np.array([1.0, 2.0, 2.0]) / 3.0, np.array([0.6, 0.8, 0.0])
    D, dual = spectral_direction(5.0 * np.outer(u, v))
    np.testing.assert_allclose(D, np.outer(u, v), atol=1e-14)
    np.testing.assert_allclose(dual, 5.0, rtol=1e-14)
    np.testing.assert_array_equal(spectral_direction(np.zeros((2, 3)))[0], np.zeros((2, 3)))


def test_adam_direction_in_the_log_domain() -> None:
    G = np.random.default_rng(4).normal(size=(3, 3))
    zero = np.zeros_like(G)
    start = AdamMoments(zero, -math.inf, zero, -math.inf, 0)
    # first step with eps = 0 is sign(g), even where g itself underflows float64
    for M in (0.0, -400.0, -2000.0):
        D, _ = adam_direction(G, M, start, 0.9, 0.999, 0.0)
        np.testing.assert_allclose(D, np.sign(G), rtol=1e-12)
    # where float64 holds the plain formula, it is that formula (two steps)
    b1, b2, eps, M = 0.9, 0.999, 1e-8, -17.0
    g1, g2 = math.exp(M) * G, math.exp(M) * G[::-1]
    m = (1 - b1) * g1
    v = (1 - b2) * g1**2
    m, v = b1 * m + (1 - b1) * g2, b2 * v + (1 - b2) * g2**2
    want = (m / (1 - b1**2)) / (np.sqrt(v / (1 - b2**2)) + eps)
    _, mom = adam_direction(G, M, start, b1, b2, eps)
    D, _ = adam_direction(G[::-1].copy(), M, mom, b1, b2, eps)
    np.testing.assert_allclose(D, want, rtol=1e-12)
    # far below eps the step is m_hat / eps, finite and tiny, not 0 / 0
    D, _ = adam_direction(G, -400.0, start, b1, b2, eps)
    np.testing.assert_allclose(D, math.exp(-400.0) * G / eps, rtol=1e-9)


def test_adam_direction_beyond_the_exponential_range() -> None:
    """Where e^(a - b/2) alone overflows, the step is e^(a - b/2) m_hat / sqrt(v_hat) all the
    same: finite where that is, +-inf where float64 cannot hold it (it raised OverflowError)."""
    m, v = np.array([[1e-10, -1.0]]), np.ones((1, 2))
    # no new gradient (M = -inf): m_hat = e^712 m, v_hat = 1 at t = 1 with beta = 0.5
    D, _ = adam_direction(
        np.zeros((1, 2)), -math.inf, AdamMoments(m, 712.0, v, 0.0, 0), 0.5, 0.5, 0.0
    )
    np.testing.assert_allclose(D[0, 0], math.exp(712.0 + math.log(1e-10)), rtol=1e-12)
    assert D[0, 1] == -math.inf
    # e^709.5 fits, e^709.5 * 2 does not, e^709.5 * 2 / sqrt(4) does (it read inf)
    m, v = np.array([[2.0, 1e-10]]), np.array([[4.0, 1.0]])
    D, _ = adam_direction(
        np.zeros((1, 2)), -math.inf, AdamMoments(m, 709.5, v, 0.0, 0), 0.5, 0.5, 0.0
    )
    np.testing.assert_allclose(D, [[math.exp(709.5), math.exp(709.5) * 1e-10]], rtol=1e-12)


def test_adam_whose_direction_leaves_float64_stops_overflow() -> None:
    """Adam with adam_eps = 0 and adam_beta2 = 0 (step m_hat / |g|) blows up on this run; it
    stops OVERFLOW with a message naming Adam's options (it raised a bare OverflowError)."""
    data = sg.random_data(6, 8, 10, seed=0)
    r = sg.train(data, optimizer="adam", adam_beta2=0.0, adam_eps=0.0, n_steps=300)
    assert r.status == sg.StopStatus.OVERFLOW
    assert "adam_eps" in r.message and "adam_beta2" in r.message
    assert np.all(np.isfinite(r.W))


# -- each rule against its step by hand -------------------------------------------------------


def test_sign_descent_two_steps_by_hand() -> None:
    eta = 0.05
    W1 = W0 - eta * np.sign(grad(W0))
    W2 = W1 - eta * np.sign(grad(W1))
    r = run("sign", 2, step_size=eta)
    np.testing.assert_allclose(r.history.W[1], W1, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(r.W, W2, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("q", [1.0, 1.5, 2.0, 4.0])
def test_steepest_descent_two_steps_by_hand(q: float) -> None:
    eta = 0.05
    W = W0
    for _ in range(2):
        g = grad(W)
        if q == 1.0:
            D = np.sign(g) * (np.abs(g) == np.abs(g).max())
        else:
            qs = q / (q - 1.0)
            D = np.sign(g) * np.abs(g) ** (qs - 1.0)
            D /= np.sum(np.abs(D) ** q) ** (1.0 / q)
        W = W - eta * D
    np.testing.assert_allclose(run(("steepest", q), 2, step_size=eta).W, W, rtol=1e-12, atol=1e-14)


def test_steepest_two_is_normalized_gd() -> None:
    a = run(("steepest", 2), 50)
    b = sg.train(DATA, n_steps=50, record_every=1, backend="numpy", init=W0)
    np.testing.assert_allclose(a.W, b.W, rtol=1e-12)


def test_spectral_descent_and_muon_by_hand() -> None:
    eta, mu = 0.05, 0.8

    def orth(A: np.ndarray) -> np.ndarray:
        """U_r V_r^T over the nonzero singular values (the gradient has rank 3 here)."""
        U, s, Vt = np.linalg.svd(A)
        r = int(np.sum(s > 1e-10 * s[0]))
        return U[:, :r] @ Vt[:r]

    assert np.linalg.matrix_rank(grad(W0)) < 5  # the truncation matters

    g0 = grad(W0)
    W1 = W0 - eta * orth(g0)
    W2 = W1 - eta * orth(grad(W1))
    np.testing.assert_allclose(run("spectral", 2, step_size=eta).W, W2, rtol=1e-12, atol=1e-14)
    W1 = W0 - eta * orth(g0)
    B = mu * g0 + grad(W1)
    W2 = W1 - eta * orth(B)
    got = run("spectral", 2, step_size=eta, spectral_momentum=mu).W
    np.testing.assert_allclose(got, W2, rtol=1e-12, atol=1e-14)


def test_adam_three_steps_by_hand() -> None:
    eta, b1, b2, eps = 0.02, 0.8, 0.95, 1e-3
    W, m, v = W0, np.zeros_like(W0), np.zeros_like(W0)
    for t in range(1, 4):
        g = grad(W)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        W = W - eta * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    got = run("adam", 3, step_size=eta, adam_beta1=b1, adam_beta2=b2, adam_eps=eps).W
    np.testing.assert_allclose(got, W, rtol=1e-12, atol=1e-14)


def test_polyak_step_by_hand() -> None:
    oracle = RiskOracle(DATA)
    W = W0
    for _ in range(2):
        g = grad(W)
        W = W - (oracle.value(W) - oracle.optimal_risk) / np.sum(g * g) * g
    r = sg.train(DATA, step_size="polyak", n_steps=2, backend="numpy", init=W0)
    np.testing.assert_allclose(r.W, W, rtol=1e-9)
    # the sign-descent Polyak step: (L - L*) / ||grad||_1 along sign(grad)
    g = grad(W0)
    W1 = W0 - (oracle.value(W0) - oracle.optimal_risk) / np.abs(g).sum() * np.sign(g)
    r = sg.train(DATA, optimizer="sign", step_size="polyak", n_steps=1, backend="numpy", init=W0)
    np.testing.assert_allclose(r.W, W1, rtol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_polyak_step_needs_its_target_to_be_the_infimum(seed: int) -> None:
    """L* = (1/n) sum l(gamma_opt) is the infimum of L only when Att-SVM(opt) is feasible
    (TF-SVM Lemma 2): the Polyak step is refused where it is not (there it overshot and
    overflowed), and runs where it is."""
    data = sg.random_data(6, 4, 2, seed=seed)  # d = 2 < n: Att-SVM(opt) often infeasible
    feasible = sg.feasibility(data, sg.optimal_tokens(data)).feasible
    assert RiskOracle(data).infimum_attained is feasible
    if feasible:
        assert sg.train(data, step_size="polyak", n_steps=3).n_steps == 3
    else:
        with pytest.raises(sg.ProblemError, match="Lemma 2"):
            sg.train(data, step_size="polyak", n_steps=3)
    with pytest.raises(sg.ProblemError, match="step_size='polyak'"):
        sg.train(data, step_size="polyak", head="concave", lam=0.1, n_steps=3)


def test_polyak_overflow_message_names_the_polyak_step() -> None:
    """Where the infimum is attained but L stays above L* (random_data(6, 4, 2, seed=2),
    docs/optimizers.md), the Polyak step overflows after a few steps; its message told the
    user to lower a step_size the run does not have."""
    run = sg.train(sg.random_data(6, 4, 2, seed=2), step_size="polyak", n_steps=3000)
    assert run.status is sg.StopStatus.OVERFLOW
    assert "Polyak step" in run.message and "Pass a float step_size" in run.message
    assert "Lower step_size" not in run.message
    plain = sg.train(sg.random_data(6, 4, 2, seed=2), step_size=1e300, n_steps=3)
    assert plain.status is sg.StopStatus.OVERFLOW and "Lower step_size" in plain.message


def test_kq_factors_step_on_their_own_gradients() -> None:
    rng = np.random.default_rng(5)
    K0, Q0 = 0.3 * rng.normal(size=(5, 3)), 0.3 * rng.normal(size=(5, 3))
    eta = 0.05
    _, (gK, gQ) = loss_and_grad(DATA, (K0, Q0))
    K1, Q1 = K0 - eta * np.sign(gK), Q0 - eta * np.sign(gQ)
    r = sg.train(DATA, optimizer="sign", param="KQ", init=(K0, Q0), n_steps=1, step_size=eta,
                 backend="numpy")  # fmt: skip
    np.testing.assert_allclose(r.K, K1, rtol=1e-14)
    np.testing.assert_allclose(r.Q, Q1, rtol=1e-14)
    np.testing.assert_allclose(r.W, K1 @ Q1.T, rtol=1e-14)


# -- backends, long runs -----------------------------------------------------------------------


@pytest.mark.parametrize("optimizer", ["sign", ("steepest", 1.5), "spectral", "adam"])
def test_kq_at_zero_is_stationary_for_every_rule(optimizer: object) -> None:
    """SPEC §1: K = Q = 0 is stationary (its factors' gradients G Q and G^T K vanish where
    dL/dW does not). Regression: these rules took 50 zero-length steps and said MAX_STEPS."""
    data = sg.random_data(3, 4, 5, seed=0)
    run = sg.train(data, optimizer=optimizer, param="KQ", init="zero", n_steps=50)
    gd = sg.train(data, optimizer="gd", param="KQ", init="zero", n_steps=50)
    assert run.status is gd.status is sg.StopStatus.STATIONARY
    assert run.n_steps == gd.n_steps == 0
    np.testing.assert_array_equal(run.W, np.zeros((5, 5)))


RULES = [
    ("sign", {}),
    (("steepest", 1.5), {}),
    ("spectral", {}),
    ("spectral", {"spectral_momentum": 0.9}),
    ("adam", {"step_size": 0.01}),
    ("gd", {"step_size": "polyak"}),
    ("adam", {"step_size": 0.01, "param": "KQ", "init": ("random", 0.1), "seed": 0}),
    # U V^T is ill-conditioned in small singular values: the factors' runs agree to 1e-15 for
    # 100 steps, to 2e-4 after 300 (the oscillation amplifies round-off)
    ("spectral", {"param": "KQ", "m": 3, "init": ("random", 0.1), "seed": 0, "n_steps": 100}),
]


@pytest.mark.parametrize("backend", FAST_BACKENDS)
@pytest.mark.parametrize(("optimizer", "kw"), RULES, ids=lambda x: str(x))
def test_numba_equals_numpy(optimizer: object, kw: dict[str, object], backend: str) -> None:
    runs = [
        sg.train(
            sg.random_data(3, 4, 5, seed=2),
            optimizer=optimizer,
            backend=b,
            **{"n_steps": 300, **kw},
        )
        for b in ("numpy", backend)
    ]
    assert runs[0].status == runs[1].status
    np.testing.assert_allclose(runs[1].W, runs[0].W, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(runs[1].history.loss, runs[0].history.loss, rtol=1e-9)


def test_rules_step_where_the_gradient_underflows() -> None:
    data = sg.random_data(3, 4, 5, seed=1)
    far = 40.0 * sg.train(data, optimizer="sign", n_steps=300).W
    G, M = RiskOracle(data).log_grad(far)
    assert M < -745.0  # e^M underflows: the true-scale gradient is exactly zero in float64
    np.testing.assert_array_equal(loss_and_grad(data, far)[1], np.zeros_like(far))
    for optimizer, want in (
        ("sign", np.sign(G)),
        (("steepest", 3.0), steepest_direction(G, 3.0)[0]),
        ("spectral", spectral_direction(G)[0]),
    ):
        r = sg.train(data, optimizer=optimizer, init=far, n_steps=1, step_size=0.5)
        np.testing.assert_allclose(r.W, far - 0.5 * want, rtol=1e-12, atol=1e-12)
    # Adam's first step with eps = 0 is sign(g) at any scale
    r = sg.train(data, optimizer="adam", init=far, n_steps=1, step_size=0.5, adam_eps=0.0)
    np.testing.assert_allclose(r.W, far - 0.5 * np.sign(G), rtol=1e-12, atol=1e-12)


# -- option errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"optimizer": "adam", "adam_beta1": 1.0}, "adam_beta1"),
        ({"optimizer": "adam", "adam_beta2": -0.1}, "adam_beta2"),
        ({"optimizer": "adam", "adam_eps": -1.0}, "adam_eps"),
        ({"optimizer": "sign", "adam_beta1": 0.5}, "adam_beta1"),
        ({"optimizer": "gd", "adam_eps": 0.1}, "adam_eps"),
        ({"optimizer": "spectral", "spectral_momentum": 1.0}, "spectral_momentum"),
        ({"optimizer": "adam", "spectral_momentum": 0.5}, "spectral_momentum"),
        ({"optimizer": ("steepest", 0.5)}, "q"),
        ({"optimizer": ("steepest", "two")}, "q"),
        ({"optimizer": ("lp", 2)}, "steepest"),
        ({"optimizer": "steepest"}, "('steepest', q)"),
        ({"optimizer": "sign", "normalized": False}, "normalized"),
        ({"optimizer": "sign", "param": "p"}, "param"),
        ({"optimizer": "sign", "train_head": True}, "train_head"),
        ({"optimizer": "adam", "step_size": "polyak"}, "polyak"),
        ({"optimizer": "spectral", "step_size": "polyak", "spectral_momentum": 0.5}, "polyak"),
        ({"step_size": "polyak", "param": "KQ"}, "param"),
        ({"step_size": "fast"}, "step_size"),
    ],
)
def test_bad_options_name_the_argument(kw: dict[str, object], words: str) -> None:
    with pytest.raises(sg.ProblemError, match=None) as err:
        sg.train(DATA, n_steps=2, **kw)  # type: ignore[arg-type]
    assert words in str(err.value)


@pytest.mark.parametrize(
    ("kw", "named"),
    [
        ({"optimizer": "sign", "exponent": 1.5}, "exponent"),
        ({"optimizer": "adam", "exponent": 1.5}, "exponent"),
        ({"step_size": "polyak", "exponent": 1.5}, "exponent"),
        ({"step_size": "polyak", "train_head": True}, "train_head"),
        ({"step_size": "polyak", "normalized": False}, "normalized=False"),
    ],
)
def test_options_of_other_rules_are_refused_naming_what_was_asked(
    kw: dict[str, object], named: str
) -> None:
    """The steepest rules ignored mirror's ``exponent``; GD's Polyak step (run by
    ``('steepest', 2)``) blamed ``optimizer='steepest'``, which the user never named."""
    with pytest.raises(sg.ProblemError) as err:
        sg.train(DATA, n_steps=2, **kw)  # type: ignore[arg-type]
    message = str(err.value)
    assert named in message
    if kw.get("step_size") == "polyak":
        assert message.startswith("step_size='polyak'") and "optimizer='steepest'" not in message


@pytest.mark.parametrize("optimizer", ["sign", "spectral", "adam"])
def test_cli_train_takes_the_new_optimizers(optimizer: str, capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["train", "--n", "3", "--T", "4", "--d", "5", "--seed", "1", "--steps", "20"]
    assert main([*args, "--optimizer", optimizer, "--backend", "numpy", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = sg.train(sg.random_data(3, 4, 5, seed=1), optimizer=optimizer, n_steps=20,
                    backend="numpy")  # fmt: skip
    assert out["status"] == want.status.value and out["steps"] == 20
    np.testing.assert_allclose(out["final_loss"], want.history.loss[-1], rtol=1e-12)


def test_config_refuses_a_q_without_steepest() -> None:
    with pytest.raises(sg.ProblemError, match=r"steepest_q=2\.0 is the exponent"):
        sg.GDConfig(optimizer="sign", steepest_q=2.0)
    assert sg.GDConfig(optimizer=("steepest", 3)).steepest_q == 3.0
    with pytest.raises(sg.ProblemError, match=r"unknown option.*'adam_beta1'"):
        sg.train_batch([DATA], adam_beta1=0.5, n_steps=2)


def test_the_excess_risk_counts_queries_with_hidden_keys() -> None:
    """Regression: a hidden key (gamma = -inf) made log_excess_risk's term NaN and dropped its
    query (here every query: -inf, "L = L*"), so the Polyak step stopped at once."""
    from svmgeo.gd import RiskOracle

    rng = np.random.default_rng(0)
    X, Z, v = rng.normal(size=(4, 3, 2)), rng.normal(size=(4, 2)), rng.normal(size=2)
    data = sg.TokenData(X, v=v, Z=Z, mask=np.array([[True, True, False]]))
    oracle = RiskOracle(data)
    W = np.array([[0.3, -0.2], [0.1, 0.4]])
    np.testing.assert_allclose(
        np.exp(oracle.log_excess_risk(W)), oracle.value(W) - oracle.optimal_risk, rtol=1e-12
    )
    run = sg.train(data, step_size="polyak", n_steps=50, backend="numpy")
    assert run.status is sg.StopStatus.MAX_STEPS and run.n_steps == 50
