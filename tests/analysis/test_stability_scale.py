# SPDX-License-Identifier: BSD-3-Clause
"""``lipschitz`` and ``attention_jacobian`` at W near float64's largest numbers (session 55).

Before: at max|W| = 1.7e308 (and 1e300 with tokens of 1e4, 1e100 with tokens of 1e75) the
logits X W z, W z or the Jacobians overflowed on the way, and the analyses raised a bare
numpy ``LinAlgError`` ("SVD did not converge"), returned NaN constants, or refused normalized
linear attention for a rounding error that was an overflow. The references below are the
constants at :math:`W_s = 2^{-e} W` (an exact power of two, in float64's middle range, where
the constants are checked against finite differences in test_stability.py), carried to W by
the maps' homogeneity: :math:`\\varphi(cu) = c^p\\varphi(u)` for c > 0 with p = 1 (linear,
ReLU) or 0 (normalized linear) gives :math:`L^W(cW) = c^{p-1} L^W(W)` and
:math:`L^X(cW) = c^p L^X(W)`."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.analysis import attention_jacobian, lipschitz

DEGREE = {"linear": 1, "relu": 1, "normalized_linear": 0}
CASES = [(1.0, 1.7e308), (1e4, 1e300), (1e75, 1e100)]  # (token scale, max|W|)


def _data(kind: str, scale: float) -> sg.TokenData:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2, 3, 2)) * scale
    if kind == "self":
        return sg.TokenData(X, query="all", v=np.ones(2))
    values = rng.normal(size=(2, 3, 2)) * scale if kind == "values" else None
    return sg.TokenData(X, Z=rng.normal(size=(2, 2)) * scale, values=values, v=np.ones(2))


def _W(top: float) -> tuple[np.ndarray, int]:
    """W with max|W| = top, and e with 2^-e W in [1/2, 1) (exact)."""
    W = np.random.default_rng(3).normal(size=(2, 2))
    W = W / np.abs(W).max() * top
    return W, math.frexp(top)[1]


@pytest.mark.parametrize("kind", ["cross", "values", "self"])
@pytest.mark.parametrize(("scale", "top"), CASES)
@pytest.mark.parametrize("name", sorted(DEGREE))
@pytest.mark.parametrize("wrt", ["W", "X"])
def test_homogeneous_maps_at_any_w(
    kind: str, scale: float, top: float, name: str, wrt: str
) -> None:
    data = _data(kind, scale)
    W, e = _W(top)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning on the way either
        got = lipschitz(data, W, name, wrt)
    ref = lipschitz(data, np.ldexp(W, -e), name, wrt)  # W_s, in range
    p = DEGREE[name]
    f = (p - 1) * e if wrt == "W" else p * e
    with np.errstate(over="ignore", under="ignore"):
        for field in ("per_query", "per_sequence", "overall"):
            want = np.ldexp(np.asarray(getattr(ref, field), dtype=float), f)
            have = np.asarray(getattr(got, field), dtype=float)
            assert not np.any(np.isnan(have)), field
            np.testing.assert_array_equal(np.isinf(have), np.isinf(want))  # beyond float64
            fin = np.isfinite(want)
            np.testing.assert_allclose(have[fin], want[fin], rtol=1e-12, err_msg=field)
    assert (got.certificate is None) == (ref.certificate is None)
    assert got.bound_reason == ref.bound_reason
    if got.bound_per_query is not None:  # linear and ReLU in W: the bound does not depend on W
        np.testing.assert_array_equal(got.bound_per_query, ref.bound_per_query)


def test_attention_jacobian_is_inf_exactly_where_an_entry_exceeds_float64() -> None:
    # linear attention in X, cross-attention without values: d y / d x_t = e_t-row of
    # (W z)^T plus u_t I, so entries reach |x||W z| and leave float64 at max|W| = 1.7e308
    data = _data("cross", 1.0)
    W, e = _W(1.7e308)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = attention_jacobian(data, W, 0, attention="linear", wrt="X")
    with np.errstate(over="ignore"):
        want = np.ldexp(
            attention_jacobian(data, np.ldexp(W, -e), 0, attention="linear", wrt="X"), e
        )
    assert np.any(np.isinf(want)) and np.any(np.isfinite(want) & (want != 0.0))
    np.testing.assert_array_equal(got, want)


def _largest_logit_log10(data: sg.TokenData, W: np.ndarray, i: int, k: int) -> float:
    """log10 of query (i, k)'s largest visible :math:`|x_t^\top W z|`, from exact rationals."""
    z = [Fraction(float(c)) for c in data.queries[i, k]]
    Wz = [sum(Fraction(float(w)) * zb for w, zb in zip(row, z, strict=True)) for row in W]
    best = max(
        abs(sum(Fraction(float(a)) * b for a, b in zip(data.X[i, t], Wz, strict=True)))
        for t in np.flatnonzero(data.visible[i, k])
    )
    return math.log10(best.numerator) - math.log10(best.denominator)


@pytest.mark.parametrize("kind", ["cross", "values", "self"])
@pytest.mark.parametrize("name", ["softmax", "sigmoid"])
@pytest.mark.parametrize("wrt", ["W", "X"])
@pytest.mark.parametrize("call", ["lipschitz", "attention_jacobian"])
def test_maps_that_are_not_homogeneous_refuse_logits_beyond_float64(
    kind: str, name: str, wrt: str, call: str
) -> None:
    data = _data(kind, 100.0)  # every query's largest logit beyond float64 (1.8e308)
    W, _ = _W(1.7e308)
    run = {
        "lipschitz": lambda: lipschitz(data, W, name, wrt),
        "attention_jacobian": lambda: attention_jacobian(data, W, 0, 0, attention=name, wrt=wrt),
    }[call]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(
            sg.ProblemError,
            match=rf"{call}: at this W the logits .* reach 10\^3\d\d\.\d, beyond float64's "
            r"largest number .*Rescale W",
        ) as err:
            run()
    for i in range(data.n):
        for k in range(data.K):
            assert _largest_logit_log10(data, W, i, k) > math.log10(np.finfo(float).max)
    reached = float(str(err.value).split("reach 10^")[1].split(",")[0])
    assert "sequence 0, query 0" in str(err.value)  # the first query, each query's too large
    assert _largest_logit_log10(data, W, 0, 0) - 0.05 <= reached
    assert reached <= _largest_logit_log10(data, W, 0, 0) + 0.05


def test_saturated_softmax_in_x_at_1e300_is_the_one_hot_weights_norm() -> None:
    # tokens of 1e4, max|W| = 1e300: logits ~1e307 with gaps far beyond 745, so s is one-hot,
    # J = 0 and d y / d x_t = s_t I: every constant is ||s||_2 = 1 (LinAlgError before: the
    # term U^T J e_t (W z)^T was 0 * inf)
    data = _data("cross", 1e4)
    W, _ = _W(1e300)
    lip = lipschitz(data, W, "softmax", "X")
    np.testing.assert_array_equal(lip.per_query, np.ones((data.n, data.K)))
    np.testing.assert_array_equal(lip.per_sequence, np.ones(data.n))
