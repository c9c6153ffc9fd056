# SPDX-License-Identifier: BSD-3-Clause
"""Normalized linear attention u / 1^T u where 1^T u is within its own rounding error of 0
(session 54): the map, ``lipschitz`` and the training engine refuse such a sum as they refuse
an exact zero, instead of dividing by a float sum that can be off by any factor. References
are exact rationals (``fractions.Fraction``) of the stored floats."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.analysis import lipschitz
from svmgeo.attention_maps import ATTENTION_MAPS
from svmgeo.gd._engine import GradientDescent

NORMALIZED = ATTENTION_MAPS["normalized_linear"]


def _exact_sum(u: np.ndarray) -> Fraction:
    return sum((Fraction(float(x)) for x in u), Fraction(0))


def test_the_map_refuses_a_sum_that_rounding_decides() -> None:
    """phi([0.1, 0.2, -0.3]) divided by the float sum 5.55e-17, twice the exact 2.78e-17."""
    u = np.array([0.1, 0.2, -0.3])
    exact = _exact_sum(u)
    assert abs(float(np.sum(u)) / float(exact) - 1.0) > 0.5  # the float sum is off by 2x
    with pytest.raises(sg.ProblemError, match=r"1\^T u = 5.55e-17.*rounding error"):
        NORMALIZED.phi(u)
    with pytest.raises(sg.ProblemError, match="not determined by float64"):
        NORMALIZED.jacobian(u)
    batch = np.stack([np.array([0.1, 0.2, -0.4]), u])
    with pytest.raises(sg.ProblemError, match="index 1 has"):
        NORMALIZED.phi(batch)


def test_the_map_is_unchanged_where_the_sum_is_determined() -> None:
    u = np.array([0.1, 0.2, -0.4])
    exact = _exact_sum(u)
    np.testing.assert_allclose(
        NORMALIZED.phi(u), [float(Fraction(float(x)) / exact) for x in u], rtol=4e-16
    )
    np.testing.assert_array_equal(NORMALIZED.phi(u), u / np.sum(u))


def _on_the_hyperplane(seed: int) -> tuple[sg.TokenData, np.ndarray]:
    """The audit's W: W z orthogonal to sum_t x_t, so 1^T X W z = 0 up to rounding."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(1, 3, 2))
    z = np.array([1.0, 0.0])
    e = X[0].sum(axis=0)
    W = np.outer(np.array([e[1], -e[0]]), z)
    return sg.TokenData(X, Y=np.ones(1), v=np.ones(2), Z=z[None]), W


def _exact_logits(data: sg.TokenData, W: np.ndarray) -> list[Fraction]:
    X, z = np.asarray(data.X[0]), np.asarray(data.queries[0, 0])
    Wz = [sum(Fraction(float(W[a, b])) * Fraction(float(z[b])) for b in range(2)) for a in range(2)]
    return [sum(Fraction(float(X[t, a])) * Wz[a] for a in range(2)) for t in range(X.shape[0])]


def _exact_constant(data: sg.TokenData, W: np.ndarray) -> float:
    r""":math:`\|X^\top J X\|_2 \|z\|` with J = (I - a 1^T) / 1^T u from exact rationals."""
    u = _exact_logits(data, W)
    S = sum(u, Fraction(0))
    T = len(u)
    J = np.array([[float(((t == s) - u[t] / S) / S) for s in range(T)] for t in range(T)])
    X = np.asarray(data.X[0])
    return float(np.linalg.norm(X.T @ J @ X, 2) * np.linalg.norm(data.queries[0, 0]))


@pytest.mark.parametrize("seed", [3, 5, 7])
def test_lipschitz_refuses_where_the_audit_read_a_wrong_constant(seed: int) -> None:
    """Before: 2.96e31, 1.27e32, 4.4e31 against exact 5.9e31, 6.9e32, 1.8e32."""
    data, W = _on_the_hyperplane(seed)
    S = float(sum(_exact_logits(data, W), Fraction(0)))
    u = np.asarray(data.X[0]) @ (W @ np.asarray(data.queries[0, 0]))
    assert abs(float(np.sum(u)) / S - 1.0) > 0.2  # the premise: the float sum is far off
    with pytest.raises(sg.ProblemError, match=r"sequence 0, query 0 has 1\^T u = .*hyperplane"):
        lipschitz(data, W, "normalized_linear", wrt="W")
    with pytest.raises(sg.ProblemError, match="not determined by float64"):
        sg.analysis.attention_jacobian(data, W, 0, attention="normalized_linear")


@pytest.mark.parametrize("seed", [3, 5, 7])
def test_lipschitz_off_the_hyperplane_is_the_exact_constant(seed: int) -> None:
    data, W = _on_the_hyperplane(seed)
    e = np.asarray(data.X[0]).sum(axis=0)
    W = W + np.outer(1e-6 * e / (e @ e), data.queries[0, 0])  # 1^T X W z ~ 1e-6
    res = lipschitz(data, W, "normalized_linear", wrt="W")
    np.testing.assert_allclose(res.per_query[0, 0], _exact_constant(data, W), rtol=1e-8)
    assert res.certificate is not None
    for Wk, c in zip(res.certificate.Ws, res.certificate.constants, strict=True):
        np.testing.assert_allclose(c, _exact_constant(data, Wk), rtol=1e-8)


def _data_and_bad_W() -> tuple[sg.TokenData, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2, 3, 2))
    Z = np.array([[1.0, 0.0], [1.0, 0.0]])
    data = sg.TokenData(X, Y=np.array([1.0, -1.0]), v=np.ones(2), Z=Z)
    e = X[1].sum(axis=0)
    return data, np.outer(np.array([e[1], -e[0]]), [1.0, 0.0])  # sequence 1 on the hyperplane


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_training_refuses_an_undetermined_sum_at_the_start_and_on_the_way(backend: str) -> None:
    data, W_bad = _data_and_bad_W()
    S = [float(sum(_exact_logits_seq(data, W_bad, i), Fraction(0))) for i in range(2)]
    assert abs(S[1]) < 1e-15 < abs(S[0])
    with pytest.raises(sg.ProblemError, match=r"sequence 1, query 0 has .*initial W"):
        sg.train(data, attention="normalized_linear", init=W_bad, backend=backend)
    # an iterate on the hyperplane during the run: the compiled kernels and the reference
    gd = GradientDescent(*_config(data, backend))
    state = gd.init_state()
    state = state._replace(P1=gd.kernels.asarray(W_bad[None].copy()))
    with pytest.raises(sg.ProblemError, match=r"instance 0, sequence 1, query 0 has 1\^T u"):
        gd.advance(state, 3)


def _exact_logits_seq(data: sg.TokenData, W: np.ndarray, i: int) -> list[Fraction]:
    one = sg.TokenData(np.asarray(data.X)[i : i + 1], Y=np.ones(1), v=np.ones(2),
                       Z=np.asarray(data.queries)[i : i + 1, 0])  # fmt: skip
    return _exact_logits(one, W)


def _config(data: sg.TokenData, backend: str) -> tuple[object, object]:
    from svmgeo.gd._config import GDConfig
    from svmgeo.gd._problem import make_problem

    W0 = np.array([[1.0, 0.5], [0.2, 1.0]])
    cfg = GDConfig(param="W", init=W0, backend=backend, attention="normalized_linear")
    problem = make_problem([data], "linear", v=np.ones(2), param="W", attention="normalized_linear")
    return cfg, problem


def test_the_kernels_own_sum_names_the_query_where_the_reference_passes() -> None:
    """The kernels add in their own order: where the reference sum at the same W is
    determined, the message gives the kernel's sum and bound."""
    from svmgeo.gd._backend import explain
    from svmgeo.gd._numba import UNDETERMINED_SUM

    data, _ = _data_and_bad_W()
    _, problem = _config(data, "numba")
    err = explain(sg.ProblemError(UNDETERMINED_SUM, 1, 0, 1e-17, 3e-16),
                  np.eye(2)[None], problem)  # fmt: skip
    assert "sequence 1, query 0 has 1^T u = 1e-17" in str(err) and "3e-16" in str(err)
    other = sg.ProblemError("something else")
    assert explain(other, np.eye(2)[None], problem) is other
