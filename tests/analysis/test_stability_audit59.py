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
from svmgeo.analysis import _stability, robustness_radius
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


def _spy_on_verify_logits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of sequences of each call of verify's logits from robustness_radius."""
    calls: list[int] = []
    real = _stability._verify_logits

    def spy(X: np.ndarray, W: np.ndarray, Z: np.ndarray, vis: np.ndarray) -> np.ndarray:
        calls.append(len(X))
        return real(X, W, Z, vis)

    monkeypatch.setattr(_stability, "_verify_logits", spy)
    return calls


def test_verify_rule_runs_only_on_the_sequences_in_doubt(monkeypatch: pytest.MonkeyPatch) -> None:
    # before: verify's logits (an n K T d^2 einsum) on every query, 16x main's time on
    # random_data(500, 32, 32, n_queries=4); now only where the gaps leave its key in doubt
    calls = _spy_on_verify_logits(monkeypatch)
    data = sg.random_data(12, 6, 4, seed=3, n_queries=3)
    W = np.random.default_rng(3).normal(size=(4, 4))
    rad = robustness_radius(data, W, svm=False)
    assert calls == []
    chosen, tied, _ = largest_logits(data, W)  # verify's rule, on all the data
    assert chosen is not None and not tied
    np.testing.assert_array_equal(rad.selected, chosen)
    # a common component 1e13 in sequence 5: its gaps are within the bound of verify's
    # tolerance, so verify's rule reads that sequence (alone), and it ties its keys
    X = np.array(data.X)
    X[5, :, 0] += 1e13
    near = sg.TokenData(X, v=np.ones(4), Z=np.asarray(data.queries))
    rad_near = robustness_radius(near, W, svm=False)
    assert calls == [1]
    chosen, tied, _ = largest_logits(near, W)
    assert chosen is None and tied and all(t.startswith("sequence 5, query") for t in tied)
    rest = np.arange(12) != 5  # the other sequences as before, bit for bit
    np.testing.assert_array_equal(rad_near.selected[rest], rad.selected[rest])
    np.testing.assert_array_equal(rad_near.per_query[rest], rad.per_query[rest])


def test_sequence_in_doubt_reads_as_on_its_own() -> None:
    # guard: the sequence verify's rule reads alone gets the result it gets as the only
    # sequence, mask included, and the exact radius (which fails on main: a tie there)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(4, 3, 3))
    X[2] = [[1e13, *ROWS[t]] for t in (2, 0, 1)]  # _case(1e13), its tokens in another order
    Z = rng.normal(size=(4, 2, 3))
    Z[2] = [[0.0, 1.0, 0.5], [0.0, 1.0, 0.5]]
    mask = np.ones((4, 2, 3), dtype=bool)
    mask[2, 1, 0] = False  # query 1 of sequence 2 does not see (1e13, -1, 0.1)
    W = np.eye(3)
    W[0, 1] = 0.7
    rad = robustness_radius(sg.TokenData(X, v=np.ones(3), Z=Z, mask=mask), W, svm=False)
    alone = robustness_radius(
        sg.TokenData(X[2:3], v=np.ones(3), Z=Z[2:3], mask=mask[2:3]), W, svm=False
    )
    np.testing.assert_array_equal(rad.selected[2], alone.selected[0])
    np.testing.assert_array_equal(rad.per_query[2], alone.per_query[0])
    for k, keys in ((0, [0, 1, 2]), (1, [1, 2])):  # the exact radius of each query
        alpha, tau, r = _exact(X[2][keys], W, Z[2, k])
        assert (rad.selected[2, k], rad.competitor[2, k]) == (keys[alpha], keys[tau])
        np.testing.assert_allclose(rad.per_query[2, k], r, rtol=1e-12)


@pytest.mark.parametrize("tiny", ["tokens", "query"])
def test_tiny_sequence_in_doubt_of_valid_data_is_read(tiny: str) -> None:
    # before: verify's rule read the sequence in doubt as a TokenData of its own, whose
    # checks raised "the data are too small for float64 ... Rescale X" on data that pass them
    # (max ||X|| max ||Z|| = 1 here): sequence 1's tokens, or its query, of size 1e-160
    X = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [1.0, 0.0]]])
    Z = np.array([[[1.0, 0.5]], [[1.0, 0.0]]])
    if tiny == "tokens":
        X[1] *= 1e-160
    else:
        Z[1, 0, 0] = 1e-160
    data = sg.TokenData(X, v=np.ones(2), Z=Z)
    chosen, tied, _ = largest_logits(data, np.eye(2))  # verify: sequence 1's keys tie
    assert chosen is None and tied == ["sequence 1, query 0: tokens [0, 1]"]
    rad = robustness_radius(data, np.eye(2), svm=False)
    alpha, tau, r = _exact(X[0], np.eye(2), Z[0, 0])  # gap 1/2, ||W z|| = sqrt(5)/2
    assert (alpha, tau) == (0, 1)
    np.testing.assert_array_equal(rad.selected, [[0], [0]])  # sequence 1: its first top key
    np.testing.assert_array_equal(rad.competitor, [[1], [1]])
    np.testing.assert_allclose(rad.radius, [r, 0.0], rtol=1e-15, atol=0.0)
    np.testing.assert_allclose(r, math.sqrt(0.1), rtol=1e-15)  # 1/2 / (sqrt 2 sqrt(5)/2)


def test_key_of_verify_beaten_by_the_differences_is_a_tie(monkeypatch: pytest.MonkeyPatch) -> None:
    # guard, not reached with verify's own logits (its tolerance exceeds their round-off):
    # logits that put key 1 of _case(1e13) 100 above the others, beyond verify's tolerance
    # (1e-12 of 7e12), whose exact gap to key 0 is -0.85, gave the negative radius
    # -0.85 / (sqrt 2 ||W z||); now a tie (radius 0) with key 0
    real = _stability._verify_logits

    def key_1(X: np.ndarray, W: np.ndarray, Z: np.ndarray, vis: np.ndarray) -> np.ndarray:
        return real(X, W, Z, vis) + np.array([0.0, 100.0, 0.0])

    monkeypatch.setattr(_stability, "_verify_logits", key_1)
    data, W = _case(1e13)
    rad = robustness_radius(data, W, svm=False)
    assert (int(rad.selected[0, 0]), int(rad.competitor[0, 0])) == (1, 0)
    np.testing.assert_array_equal(rad.radius, [0.0])
