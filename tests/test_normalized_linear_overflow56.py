# SPDX-License-Identifier: BSD-3-Clause
"""Normalized linear attention at finite logits whose sum overflows (session 56).

Before: ``phi([1e308, 1e308])`` (and its Jacobian and Hessian) was refused with "undefined
where the visible logits of a query sum to 0 ... its rounding error can reach inf", and
``lipschitz``'s certificate overflowed in ``v * e / e2`` for tokens times W beyond about 1e150
("u (the logits) must be finite"). Now only a query whose sum overflows is evaluated at
:math:`2^{-k} u` (its own row; u / 1^T u is scale invariant), every other query as before, bit
for bit. The references are exact rationals (rounded once) and the naive formulas of the maps.
"""

from __future__ import annotations

import math
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
from svmgeo import ProblemError
from svmgeo.analysis import lipschitz
from svmgeo.attention_maps import ATTENTION_MAPS, UNIT_ROUNDOFF

NL = ATTENTION_MAPS["normalized_linear"]


def _naive(u: np.ndarray, g: np.ndarray, vis: np.ndarray) -> tuple[np.ndarray, ...]:
    """phi, J and H by the textbook formulas, in the map's order of operations (its values
    where every sum is within range)."""
    m = vis.astype(float)
    S = np.sum(np.where(vis, u, 0.0), axis=-1, keepdims=True)
    a = np.where(vis, u, 0.0) / S
    eye = m[..., :, None] * np.eye(u.shape[-1])
    J = (eye - a[..., :, None] * m[..., None, :]) / S[..., None]
    gm = g * m
    gu = np.sum(gm * u, axis=-1, keepdims=True)[..., None]
    S3 = S[..., None]
    O1 = gm[..., :, None] * m[..., None, :]
    Om = m[..., :, None] * m[..., None, :]
    H = -(O1 + np.swapaxes(O1, -1, -2)) / S3**2 + 2.0 * gu * Om / S3**3
    return a, J, H


def _exact(u: np.ndarray, g: np.ndarray, vis: np.ndarray) -> tuple[np.ndarray, ...]:
    r"""phi, J and H of one query in exact rationals, each entry rounded once:
    :math:`\varphi = u/S`, :math:`J_{ts} = (\delta_{ts} - a_t)/S`, :math:`H_{ts} =
    (2 q - g_t - g_s)/S^2` (q = g^T a) on the visible keys, 0 elsewhere."""
    T = u.shape[0]
    uf = [Fraction(float(x)) if v else Fraction(0) for x, v in zip(u, vis, strict=True)]
    gf = [Fraction(float(x)) if v else Fraction(0) for x, v in zip(g, vis, strict=True)]
    S = sum(uf)
    a = [x / S for x in uf]
    q = sum(gt * at for gt, at in zip(gf, a, strict=True))
    phi = np.array([float(x) for x in a])
    J = np.zeros((T, T))
    H = np.zeros((T, T))
    for t in range(T):
        for s in range(T):
            if vis[t] and vis[s]:
                J[t, s] = float((Fraction(int(t == s)) - a[t]) / S)
                H[t, s] = float((2 * q - gf[t] - gf[s]) / S**2)
    return phi, J, H


# rows: a sum beyond float64's range; an ordinary row with a huge hidden key (review R2's
# case: it stayed [0.3, 0.7, 0]); a row with a subnormal visible key beside huge ones; huge
# weights g (the Hessian's halves keep them in range); an ordinary row
U = np.array(
    [
        [1e308, 1e308, 5.0],
        [3e-15, 7e-15, 1e308],
        [1e308, 1.5e308, 1e-310],
        [1.2e308, 9e307, -3e307],
        [0.3, -0.1, 2.5],
    ]
)
VIS = np.array([[1, 1, 1], [1, 1, 0], [1, 1, 1], [1, 1, 1], [1, 0, 1]], dtype=bool)
G = np.array(
    [
        [1e300, -3e299, 2.0],
        [1.0, 2.0, 3.0],
        [1e308, 1.0, -1.0],
        [1.5e308, -1.7e308, 0.5],
        [1.0, -2.0, 0.25],
    ]
)
OVER = [0, 2, 3]  # the rows whose sum (or its bound) overflows


def test_rows_whose_sum_overflows_are_evaluated_on_their_own_scale() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = (NL.phi(U, VIS), NL.jacobian(U, VIS), NL.hessian(U, G, VIS))
    for i in range(U.shape[0]):
        for name, have, want in zip(
            ("phi", "J", "H"), (x[i] for x in got), _exact(U[i], G[i], VIS[i]), strict=True
        ):
            # a few roundings off the exact value (a subnormal: its absolute ulps)
            np.testing.assert_allclose(have, want, rtol=1e-13, atol=2e-323,
                                       err_msg=f"row {i}, {name}")  # fmt: skip
    np.testing.assert_allclose(got[0][1], [0.3, 0.7, 0.0], rtol=1e-15)  # was [0.27, 0.73, 0]
    with np.errstate(all="ignore"):  # the naive formulas overflow on the OVER rows
        naive = _naive(U, G, VIS)
    rows = [i for i in range(U.shape[0]) if i not in OVER]
    for have, want in zip(got, naive, strict=True):  # the other rows: bit for bit
        np.testing.assert_array_equal(have[rows], want[rows])


def test_ordinary_inputs_are_bit_for_bit_the_textbook_formulas() -> None:
    rng = np.random.default_rng(56)
    for scale in (1e-300, 1e-3, 1.0, 1e150, 1e300):
        u = rng.normal(size=(4, 3, 6)) * scale
        vis = rng.random((4, 3, 6)) < 0.6
        vis[..., 0] = True
        u[~vis] *= 1e5  # hidden keys far out: no say in the sums
        g = rng.normal(size=(4, 3, 6))
        with np.errstate(all="ignore"):  # 1/S^3 of sums near 1e-300: inf there, in both
            got = (NL.phi(u, vis), NL.jacobian(u, vis), NL.hessian(u, g, vis))
            want = _naive(u, g, vis)
        for have, ref in zip(got, want, strict=True):
            np.testing.assert_array_equal(have, ref)


def test_float32_logits_keep_their_dtype() -> None:
    got = NL.phi(np.array([3e38, 3e38, 1.0], dtype=np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [0.5, 0.5, 1.0 / (2.0 * float(np.float32(3e38)))], rtol=1e-6)


def test_a_cancelling_sum_beyond_range_stays_refused_and_says_so() -> None:
    u = np.array([[1.0, 2.0, 3.0], [1e308, -1e308, 1.0]])
    with pytest.raises(ProblemError) as info:
        NL.phi(u)
    msg = str(info.value)
    assert "index 1" in msg and "beyond float64's range" in msg and "2^" in msg, msg
    # the bound said is gamma_2 sum|u| at the true scale (printed to 3 digits), not inf
    reach = float(re.search(r"can reach ([0-9.e+]+)", msg).group(1))  # type: ignore[union-attr]
    gamma2 = Fraction(2) * Fraction(UNIT_ROUNDOFF) / (1 - 2 * Fraction(UNIT_ROUNDOFF))
    want = float(gamma2 * (2 * Fraction(1e308) + 1))
    np.testing.assert_allclose(reach, want, rtol=5e-3)
    assert math.isfinite(reach)


def _large_tokens() -> sg.TokenData:
    rng = np.random.default_rng(0)
    return sg.TokenData(rng.normal(size=(2, 3, 2)) * 1e150, Z=rng.normal(size=(2, 2)), v=np.ones(2))


@pytest.mark.parametrize("wrt", ["W", "X"])
def test_lipschitz_certificate_for_tokens_times_w_beyond_1e150(wrt: str) -> None:
    """Tokens of 1e150 and max|W| = 2^200 (kept as it is: within [2^-256, 2^256]). The family
    of the reference W_s = 2^-200 W, times 2^200, is W's; its constants carry over as
    L^W(cW) = L^W(W) / c and L^X(cW) = L^X(W) (degree 0)."""
    data = _large_tokens()
    Ws = np.random.default_rng(3).normal(size=(2, 2))
    Ws /= 2.0 ** math.ceil(math.log2(np.abs(Ws).max()))
    W = np.ldexp(Ws, 200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = lipschitz(data, W, "normalized_linear", wrt)
    ref = lipschitz(data, Ws, "normalized_linear", wrt)
    assert got.certificate is not None and ref.certificate is not None
    assert (got.certificate.seq, got.certificate.query) == (ref.certificate.seq,
                                                            ref.certificate.query)  # fmt: skip
    np.testing.assert_allclose(got.certificate.Ws, np.ldexp(ref.certificate.Ws, 200), rtol=1e-12)
    f = -200 if wrt == "W" else 0
    np.testing.assert_allclose(
        got.certificate.constants, np.ldexp(ref.certificate.constants, f), rtol=1e-9
    )
    assert np.all(np.diff(got.certificate.constants) > 0.0)
