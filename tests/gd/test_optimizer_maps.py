# SPDX-License-Identifier: BSD-3-Clause
"""The rules sign, ("steepest", q), spectral and Adam on other attention maps (MapRisk), and
the command-line spelling ``--optimizer steepest:q`` (issue #23)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.cli import main
from svmgeo.constraints import map_svm_constraints
from svmgeo.gd import MapRisk, loss_and_grad, parse_optimizer

from .conftest import FAST_BACKENDS

DATA = sg.random_data(3, 4, 5, seed=1)
W0 = 0.3 * np.random.default_rng(0).normal(size=(5, 5))


def linear_grad(W: np.ndarray, loss: str = "exponential") -> np.ndarray:
    r"""By hand: linear attention makes :math:`Y f_j = \langle A_j, W\rangle`, with
    :math:`A_j = a_j b_j^\top` the rows of its SVM, so :math:`\nabla L = \frac1n\sum_j
    \ell'(\langle A_j, W\rangle) A_j`."""
    cs = map_svm_constraints(DATA, "linear")
    A = np.einsum("ji,jk->jik", cs.A, cs.B)
    u = np.einsum("jkl,kl->j", A, W)
    dl = -np.exp(-u) if loss == "exponential" else -1.0 / (1.0 + np.exp(u))
    return np.einsum("j,jkl->kl", dl, A) / DATA.n


def test_map_risk_gradient_is_the_linear_models() -> None:
    G, M = MapRisk(DATA, "linear", loss="exponential").log_grad(W0)
    np.testing.assert_allclose(math.exp(M) * G, linear_grad(W0), rtol=1e-12, atol=1e-15)
    _, g = loss_and_grad(DATA, W0, attention="linear", loss="logistic")
    G, M = MapRisk(DATA, "linear").log_grad(W0)
    np.testing.assert_allclose(math.exp(M) * G, g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(math.exp(M) * G, linear_grad(W0, "logistic"), rtol=1e-12)


def test_map_risk_value_by_finite_differences() -> None:
    risk = MapRisk(DATA, "sigmoid")
    E = np.random.default_rng(3).normal(size=(5, 5))
    h = 1e-6
    fd = (risk.value(W0 + h * E) - risk.value(W0 - h * E)) / (2 * h)
    G, M = risk.log_grad(W0)
    np.testing.assert_allclose(fd, math.exp(M) * float(np.sum(G * E)), rtol=1e-6)


@pytest.mark.parametrize("optimizer", ["sign", ("steepest", 1.5), "spectral"])
def test_rules_on_linear_attention_two_steps_by_hand(optimizer: object) -> None:
    eta = 0.05

    def direction(g: np.ndarray) -> np.ndarray:
        if optimizer == "sign":
            return np.sign(g)
        if optimizer == "spectral":
            U, s, Vt = np.linalg.svd(g)
            r = int(np.sum(s > 1e-10 * s[0]))
            return U[:, :r] @ Vt[:r]
        qs = 3.0  # q = 1.5
        D = np.sign(g) * np.abs(g) ** (qs - 1.0)
        return D / np.sum(np.abs(D) ** 1.5) ** (1 / 1.5)

    W = W0
    for _ in range(2):
        W = W - eta * direction(linear_grad(W))
    run = sg.train(DATA, attention="linear", optimizer=optimizer, loss="exponential", init=W0,
                   n_steps=2, step_size=eta, backend="numpy")  # fmt: skip
    np.testing.assert_allclose(run.W, W, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_adam_on_linear_attention_numba_equals_numpy(backend: str) -> None:
    kw = dict(attention="linear", optimizer="adam", n_steps=30, init=W0)
    a = sg.train(DATA, backend=backend, **kw)  # type: ignore[arg-type]
    b = sg.train(DATA, backend="numpy", **kw)  # type: ignore[arg-type]
    np.testing.assert_allclose(a.W, b.W, rtol=1e-10, atol=1e-13)


def test_rules_refuse_normalized_linear_and_the_polyak_step_of_a_map() -> None:
    with pytest.raises(sg.ProblemError, match="normalized_linear"):
        sg.train(DATA, attention="normalized_linear", optimizer="sign", n_steps=2)
    with pytest.raises(sg.ProblemError, match="got attention='linear'"):
        sg.train(DATA, attention="linear", optimizer="sign", step_size="polyak", n_steps=2)


@pytest.mark.parametrize(
    ("text", "value"),
    [("sign", "sign"), ("gd", "gd"), ("steepest:1.5", ("steepest", 1.5)),
     ("steepest:inf", ("steepest", math.inf)), ("steepest:1", ("steepest", 1.0))],
)  # fmt: skip
def test_parse_optimizer(text: str, value: object) -> None:
    assert parse_optimizer(text) == value


@pytest.mark.parametrize("text", ["steepest", "steepest:x", "steepest:0.5", "lp:2", "newton"])
def test_parse_optimizer_refuses(text: str) -> None:
    with pytest.raises(sg.ProblemError, match="--optimizer"):
        parse_optimizer(text)


def test_cli_train_steepest_q(capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["train", "--n", "3", "--T", "4", "--d", "5", "--seed", "1", "--steps", "20"]
    assert main([*args, "--optimizer", "steepest:1.5", "--backend", "numpy", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = sg.train(sg.random_data(3, 4, 5, seed=1), optimizer=("steepest", 1.5), n_steps=20,
                    backend="numpy")  # fmt: skip
    assert out["status"] == want.status.value and out["steps"] == 20
    np.testing.assert_allclose(out["final_loss"], want.history.loss[-1], rtol=1e-12)


def test_cli_train_refuses_a_bad_optimizer(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["train", "--optimizer", "steepest:0.5", "--steps", "2"]) == 2
    assert "steepest:Q" in capsys.readouterr().err
