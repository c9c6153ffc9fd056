# SPDX-License-Identifier: BSD-3-Clause
"""Correlation cone C_{μ,R} and score cone C_ε(α)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import svmgeo as sg

from ._cases import triangle


def test_in_cone_angle_and_radius() -> None:
    W_ref = np.array([[1.0, 0.0], [0.0, 0.0]])
    theta = 0.3
    W = 2.0 * np.array([[math.cos(theta), math.sin(theta)], [0.0, 0.0]])  # correlation cos θ
    gap = 1.0 - math.cos(theta)
    assert sg.in_cone(W, W_ref, mu=gap + 1e-9)
    assert not sg.in_cone(W, W_ref, mu=gap - 1e-9)
    # ||W||_F = 2 up to rounding (the computed norm may be 2 - 1 ulp): test R just inside/outside
    assert sg.in_cone(W, W_ref, mu=gap + 1e-9, R=2.0 - 1e-9)
    assert not sg.in_cone(W, W_ref, mu=gap + 1e-9, R=2.0 + 1e-9)
    assert not sg.in_cone(-W_ref, W_ref, mu=1.5)  # correlation −1 < −0.5
    assert sg.in_cone(-W_ref, W_ref, mu=2.0)  # μ = 2 admits every direction


def test_in_cone_around_svm_direction() -> None:
    data = sg.random_data(3, 4, 5, seed=0)
    W = sg.att_svm(data).W
    assert sg.in_cone(7.0 * W, W, mu=1e-12, R=np.linalg.norm(W))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mu": 0.0}, "'mu'"),
        ({"mu": 2.5}, "'mu'"),
        ({"mu": -0.1}, "'mu'"),
        ({"mu": 0.1, "R": -1.0}, "'R'"),
    ],
)
def test_in_cone_bad_parameters(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        sg.in_cone(np.eye(2), np.eye(2), **kwargs)


def test_in_cone_bad_matrices() -> None:
    with pytest.raises(sg.ProblemError, match="W_ref"):
        sg.in_cone(np.eye(2), np.eye(3), mu=0.1)
    with pytest.raises(sg.ProblemError, match="nonzero"):
        sg.in_cone(np.eye(2), np.zeros((2, 2)), mu=0.1)


def test_score_cone_margin_by_hand() -> None:
    # triangle, scores (3, 1, 2), α = 2: T⁻ = {1}, T⁺ = {0}. With u = W e_1 = (a, b):
    # margin = (x_1 − x_0)ᵀ u = −a + b.  W = [[1, 0], [3, 0]] ⇒ margin 2, ‖W‖_F = √10.
    data = triangle([3.0, 1.0, 2.0])
    W = np.array([[1.0, 0.0], [3.0, 0.0]])
    assert sg.score_cone_margin(data, [2], W) == pytest.approx(2.0, rel=1e-14)
    assert sg.in_score_cone(data, [2], W, eps=2.0 / math.sqrt(10.0) - 1e-9)
    assert not sg.in_score_cone(data, [2], W, eps=2.0 / math.sqrt(10.0) + 1e-9)


def test_score_cone_margin_infinite_cases() -> None:
    data = triangle([3.0, 1.0, 2.0])
    W = np.array([[1.0, 0.0], [3.0, 0.0]])
    assert sg.score_cone_margin(data, [0], W) == math.inf  # α = opt: no high-score token
    assert sg.in_score_cone(data, [0], W, eps=10.0)
    assert sg.score_cone_margin(data, [1], W) == -math.inf  # the lowest token: T⁻ empty
    assert not sg.in_score_cone(data, [1], W, eps=1e-3)


def _margin_by_loops(data: sg.TokenData, alpha: np.ndarray, W: np.ndarray) -> float:
    S = sg.token_scores(data).reshape(data.n, data.K, data.T)
    a = np.asarray(alpha).reshape(data.n, data.K)
    best = math.inf
    for i in range(data.n):
        for k in range(data.K):
            vis = np.flatnonzero(data.visible[i, k])
            sel = S[i, k, a[i, k]]
            low = [t for t in vis if S[i, k, t] < sel]
            high = [t for t in vis if t != a[i, k] and S[i, k, t] >= sel]
            if not high:
                continue
            z = data.queries[i, k]
            inner = [min((data.X[i, t] - data.X[i, tau]) @ W @ z for tau in high) for t in low]
            best = min(best, max(inner, default=-math.inf))
    return best


@pytest.mark.parametrize(
    "data",
    [sg.random_data(4, 5, 4, seed=1), sg.random_data(3, 4, 4, seed=2, query="all", mask="causal")],
    ids=["cross", "causal"],
)
def test_score_cone_margin_matches_loops(data: sg.TokenData) -> None:
    rng = np.random.default_rng(0)
    W = rng.standard_normal((data.d, data.d))
    for _ in range(4):
        alpha = rng.integers(0, data.T, size=data.selection_shape)
        if not data.single_query:
            alpha = np.minimum(alpha, np.arange(data.T))  # visible under the causal mask
        np.testing.assert_allclose(
            sg.score_cone_margin(data, alpha, W), _margin_by_loops(data, alpha, W), rtol=1e-12
        )


@pytest.mark.parametrize("eps", [0.0, -1.0, math.inf])
def test_score_cone_bad_eps(eps: float) -> None:
    with pytest.raises(sg.ProblemError, match="'eps'"):
        sg.in_score_cone(triangle([3.0, 1.0, 2.0]), [2], np.eye(2), eps=eps)


def test_score_cone_bad_w_shape() -> None:
    with pytest.raises(sg.ProblemError, match=r"\(2, 2\)"):
        sg.score_cone_margin(triangle([3.0, 1.0, 2.0]), [2], np.eye(3))


def test_a_matrix_is_in_its_own_cone_and_correlations_stay_in_bounds() -> None:
    """corr(A, c A) is 1 up to rounding, which took it past 1 (docstring: in [-1, 1]) or
    below 1 - mu for a tiny mu."""
    rng = np.random.default_rng(0)
    for A in rng.normal(size=(200, 4, 4)):
        assert -1.0 <= sg.correlation(A, 3.7 * A) <= 1.0
        assert sg.correlation(A, -3.7 * A) >= -1.0
        assert sg.in_cone(A, 3.7 * A, 1e-300)


def test_in_score_cone_names_itself_in_errors() -> None:
    data = sg.random_data(3, 4, 3, seed=0)
    with pytest.raises(sg.ProblemError, match="in_score_cone"):
        sg.in_score_cone(data, sg.optimal_tokens(data), np.eye(2), 0.1)


def test_scale_invariant_answers_hold_at_huge_and_tiny_scales() -> None:
    """||W||_F overflowed (numpy's sum of squares) from about 1e154: in_score_cone's cone
    turned False at 1e155 W, robustness_radius (invariant under W -> cW, as documented)
    returned 0 at 1e200 I, and study reported the trained norm as inf."""
    import warnings

    data = sg.random_data(3, 4, 3, seed=2)
    alpha = np.array([2, 3, 1])
    W = sg.att_svm(data, alpha).W
    eps = 0.5 * sg.score_cone_margin(data, alpha, W) / np.linalg.norm(W)
    assert all(sg.in_score_cone(data, alpha, c * W, eps=eps) for c in (1.0, 1e155, 1e160))
    d0 = sg.random_data(2, 3, 3, seed=0)
    ref = sg.robustness_radius(d0, np.eye(3)).radius
    for c in (1e200, 1e-200):
        np.testing.assert_allclose(sg.robustness_radius(d0, c * np.eye(3)).radius, ref, rtol=1e-14)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = sg.study(data, W=1e200 * W, progress=False)
    np.testing.assert_allclose(
        rep.to_dict()["trained"]["norm"], 1e200 * np.linalg.norm(W), rtol=1e-14
    )
