# SPDX-License-Identifier: BSD-3-Clause
"""Session 59's audit of ``robustness_radius``: gaps of tokens with a large common component.

The gaps :math:`(x_\\alpha - x_\\tau)^\\top W z` were differences of the rounded logits and
tied below :math:`10^{-12} \\max_t |u_t|`: tokens ``(big, 1, 0), (big, 0, 0.3),
(big, -1, 0.1)`` (exact gaps 0.85 and 1.95) read as a tie at ``big = 1e13`` (radius 0, no
Att-SVM) and lost digits from ``1e6`` on. The oracle is the radius in exact rationals of the
same floats (:class:`fractions.Fraction`), its :math:`W z` exact too."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.analysis import robustness_radius
from svmgeo.selection import largest_logits

ROWS = [(1.0, 0.0), (0.0, 0.3), (-1.0, 0.1)]  # the tokens' last two coordinates


def _case(big: float, order: tuple[int, ...] = (0, 1, 2)) -> tuple[sg.TokenData, np.ndarray]:
    X = np.array([[[big, *ROWS[t]] for t in order]])
    W = np.eye(3)
    W[0, 1] = 0.7  # W z has a component along the common direction e_1
    return sg.TokenData(X, v=np.array([0.0, 1.0, 0.0]), Z=np.array([[0.0, 1.0, 0.5]])), W


def _exact(X: np.ndarray, W: np.ndarray, z: np.ndarray) -> tuple[int, int, float]:
    """(alpha, tau, r) of one query in exact rationals: the largest logit, the key of the
    smallest gap m and r = m / (sqrt 2 ||W z||), rounded once at the end."""
    d = len(z)
    g = [sum(Fraction(W[a, b]) * Fraction(z[b]) for b in range(d)) for a in range(d)]
    u = [sum(Fraction(x[a]) * g[a] for a in range(d)) for x in X]
    alpha = max(range(len(u)), key=lambda t: u[t])
    tau = min((t for t in range(len(u)) if t != alpha), key=lambda t: u[alpha] - u[t])
    m = u[alpha] - u[tau]
    return alpha, tau, math.sqrt(m * m / (2 * sum(c * c for c in g)))


@pytest.mark.parametrize("big", [1e6, 1e8, 1e13])
def test_radius_of_tokens_with_a_large_common_component_is_exact(big: float) -> None:
    # before: relative errors 2.7e-11 (1e6) and 7.0e-9 (1e8), and 0 (a tie) at 1e13
    data, W = _case(big)
    alpha, tau, r = _exact(data.X[0], W, data.queries[0, 0])
    rad = robustness_radius(data, W, svm=False)
    assert (int(rad.selected[0, 0]), int(rad.competitor[0, 0])) == (alpha, tau)
    np.testing.assert_allclose(rad.radius, [r], rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(rad.perturbation[0]), r, rtol=1e-12)
    chosen, tied, _ = largest_logits(data, W)  # verify's rule: the same key where it selects
    if chosen is not None:
        assert int(chosen[0]) == alpha
    else:  # 1e13: the logits agree to 1e-12 of their size, their differences do not
        assert tied == ["sequence 0: tokens [0, 1, 2]"]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_radius_finds_the_largest_exact_logit_past_rounded_logits(order: tuple[int, ...]) -> None:
    # at big = 2^56 the three logits round to one float, whose first key was taken (the
    # worst key for order (2, ...)) and the query read as a tie (radius 0)
    data, W = _case(2.0**56, order)
    alpha, tau, r = _exact(data.X[0], W, data.queries[0, 0])
    assert alpha == order.index(0)  # ROWS[0] has the largest exact logit
    rad = robustness_radius(data, W, svm=False)
    assert (int(rad.selected[0, 0]), int(rad.competitor[0, 0])) == (alpha, tau)
    np.testing.assert_allclose(rad.radius, [r], rtol=1e-12)


def test_svm_limit_is_solved_where_only_the_rounded_logits_tie() -> None:
    # before: "Att-SVM not solved: W's largest logit ties on 1 query", svm_radius NaN
    data, W = _case(1e13)
    rad = robustness_radius(data, W)
    assert rad.W_mm is not None and "ties" not in rad.message
    W_mm = np.asarray(rad.W_mm)
    margins = [(data.X[0, 0] - data.X[0, t]) @ W_mm @ data.queries[0, 0] for t in (1, 2)]
    assert min(margins) >= 1.0 - 1e-6  # Att-SVM of token 0 (the exact argmax)
    _, _, r_mm = _exact(data.X[0], W_mm, data.queries[0, 0])
    np.testing.assert_allclose(rad.svm_radius, [r_mm], rtol=1e-9)


def test_exact_tie_of_tokens_with_a_large_common_component_is_a_tie() -> None:
    # guard (passes on the base too): gaps computed from differences still report a tie
    # where the difference is orthogonal to W z: (0, 1, -0.5) . (0.7, 1, 2) = 0 exactly
    X = np.array([[[1e13, 1.0, 0.0], [1e13, 0.0, 0.5], [1e13, -1.0, 0.0]]])
    W = np.eye(3)
    W[0, 1], W[2, 2] = 0.7, 4.0
    data = sg.TokenData(X, v=np.ones(3), Z=np.array([[0.0, 1.0, 0.5]]))
    rad = robustness_radius(data, W)
    np.testing.assert_array_equal(rad.radius, [0.0])
    np.testing.assert_array_equal(rad.perturbation, np.zeros((1, 3, 3)))
    assert "ties on 1 query" in rad.message and rad.W_mm is None
