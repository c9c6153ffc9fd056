# SPDX-License-Identifier: BSD-3-Clause
"""Normalized linear attention at finite logits whose sum overflows (session 56).

Before: ``phi([1e308, 1e308])`` (and its Jacobian and Hessian) was refused with "undefined
where the visible logits of a query sum to 0 ... its rounding error can reach inf", and
``lipschitz``'s certificate overflowed in ``v * e / e2`` for tokens times W beyond about 1e150
("u (the logits) must be finite"). Now only a query whose sum overflows is evaluated at
:math:`2^{-k} u` (its own row; u / 1^T u is scale invariant), every other query as before, bit
for bit. The references are exact rationals and the naive formulas of the maps, within the
rounding error bounds of :func:`_tolerances` (derived below from the maps' operations).

Review of the above: partial sums of both signs that overflow (inf - inf in numpy's pairwise
sum) warned; the Hessian at finite sums whose S^2 or S^3 leaves float64's range was inf, NaN or
wrong; float32 sums were refused by float64's rounding error bound.
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
from svmgeo.attention_maps import ATTENTION_MAPS, UNIT_ROUNDOFF, undetermined_sum_message

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
    r"""phi, J and H of one query in exact rationals (object arrays of Fractions):
    :math:`\varphi = u/S`, :math:`J_{ts} = (\delta_{ts} - a_t)/S`, :math:`H_{ts} =
    (2 q - g_t - g_s)/S^2` (q = g^T a) on the visible keys, 0 elsewhere."""
    T = u.shape[0]
    uf = [Fraction(float(x)) if v else Fraction(0) for x, v in zip(u, vis, strict=True)]
    gf = [Fraction(float(x)) if v else Fraction(0) for x, v in zip(g, vis, strict=True)]
    S = sum(uf)
    a = [x / S for x in uf]
    q = sum(gt * at for gt, at in zip(gf, a, strict=True))
    J = np.full((T, T), Fraction(0), dtype=object)
    H = np.full((T, T), Fraction(0), dtype=object)
    for t in range(T):
        for s in range(T):
            if vis[t] and vis[s]:
                J[t, s] = (Fraction(int(t == s)) - a[t]) / S
                H[t, s] = (2 * q - gf[t] - gf[s]) / S**2
    return np.array(a, dtype=object), J, H


ULP = Fraction(2) ** -1074  # float64's smallest subnormal: its absolute ulp there
U64 = Fraction(2) ** -53


def _gamma(n: int, u: Fraction = U64) -> Fraction:
    return n * u / (1 - n * u)


def _tolerances(
    u: np.ndarray, g: np.ndarray, vis: np.ndarray, textbook: bool
) -> tuple[np.ndarray, ...]:
    r"""Bounds on the errors of phi, J and H of one query (T <= 64), exact rationals.

    Write :math:`\sigma = \mathbf 1^\top u` (exact), :math:`\hat\sigma` = 2^k S the
    sum the maps divide by, each operation :math:`\mathrm{fl}(x) = x(1 + \delta) + \eta`
    with :math:`|\delta| \le u` and :math:`|\eta| \le` ULP/2 (nonzero only in the subnormal
    range; an addition's is 0; ldexp's :math:`\delta` is 0). The sum: :math:`|\hat\sigma -
    \sigma| \le \gamma_{T_v - 1} \sum |u| + T_v 2^{k-1075}` (its ldexp's), k <= 7 for
    T <= 64, so :math:`|\sigma / \hat\sigma - 1| \le \theta = \epsilon / (1 - \epsilon)`,
    :math:`\epsilon` that bound over :math:`|\sigma|`. :math:`|S| \ge s = \min(|\sigma|
    (1 - \epsilon), 2^{900})` (S = :math:`\hat\sigma` where k = 0, else above
    :math:`\gamma_1 2^{1000}`), so an :math:`\eta` divided by S after is at most
    :math:`\eta / s`. With :math:`a = u / \sigma`, :math:`\tilde g = g / \sigma`:

    - phi = fl(2^-k u / S): :math:`((1 + \theta)(1 + u) - 1)|a| + \eta(1 + 1/s)`;
    - J = fl(fl(2^-k fl(\delta_{ts} - a_t)) / S): :math:`((1 + \theta)(1 + u)^2 - 1)|J| +
      (1 + \theta)(1 + u)^2 e_\varphi / |\sigma| + \eta(1 + 1/s)`;
    - H, either formula: the terms :math:`(|g_t| + |g_s|)/\sigma^2` and
      :math:`2 \sum |g u| / |\sigma|^3` (M) pass through at most :math:`T_v + 5` roundings and
      three divisions by :math:`\hat\sigma`: :math:`((1 + \theta)^3 (1 + \gamma_{T_v + 5})
      - 1) M`. Absolute terms of the formula the query takes (``textbook``:
      :func:`_textbook_in_range`): the textbook formula's two divisions, :math:`2\eta` (its
      products :math:`g_t u_t` and their sum are 0 or normal numbers there: no absolute
      error); the scaled one's
      :math:`\tilde g` and a (errors :math:`\eta_1 = \eta(1 + 1/s)` each) in
      :math:`w = 2 \tilde g^\top a - \tilde g_t - \tilde g_s`, :math:`2 \sum_t (
      (|a_t| + |\tilde g_t|)\eta_1 + \eta_1^2 + \eta) + 2 \eta_1`, divided by
      :math:`\hat\sigma`, then :math:`\eta(1 + 1/s)` of 2^-k w / S.
    """
    T = u.shape[0]
    uf = [Fraction(float(x)) if v else Fraction(0) for x, v in zip(u, vis, strict=True)]
    gf = [Fraction(float(x)) if v else Fraction(0) for x, v in zip(g, vis, strict=True)]
    n = int(np.sum(vis))
    sigma = sum(uf)
    eps = (_gamma(n - 1) * sum(abs(x) for x in uf) + n * Fraction(2) ** (7 - 1075)) / abs(sigma)
    assert eps < Fraction(1, 2)  # the map's own refusal leaves such sums out
    theta = eps / (1 - eps)
    s_min = min(abs(sigma) * (1 - eps), Fraction(2) ** 900)
    eta = ULP / 2
    eta1 = eta * (1 + 1 / s_min)
    a = [abs(x / sigma) for x in uf]
    gt = [abs(x / sigma) for x in gf]
    tol_phi = np.array([((1 + theta) * (1 + U64) - 1) * x + eta1 for x in a], dtype=object)
    tol_J = np.full((T, T), Fraction(0), dtype=object)
    tol_H = np.full((T, T), Fraction(0), dtype=object)
    rel_J = (1 + theta) * (1 + U64) ** 2
    rel_H = (1 + theta) ** 3 * (1 + _gamma(n + 5)) - 1
    gu = 2 * sum(abs(x * y) for x, y in zip(gf, uf, strict=True)) / abs(sigma) ** 3
    w_abs = 2 * sum((x + y) * eta1 + eta1**2 + eta for x, y in zip(a, gt, strict=True)) + 2 * eta1
    abs_H = 2 * eta if textbook else w_abs * (1 + theta) / abs(sigma) + eta1
    for t in range(T):
        for s in range(T):
            if vis[t] and vis[s]:
                J_ts = abs((Fraction(int(t == s)) - uf[t] / sigma) / sigma)
                tol_J[t, s] = (rel_J - 1) * J_ts + rel_J * tol_phi[t] / abs(sigma) + eta1
                M = (abs(gf[t]) + abs(gf[s])) / sigma**2 + gu
                tol_H[t, s] = rel_H * M + abs_H
    return tol_phi, tol_J, tol_H


BIGGEST = Fraction(float(np.finfo(np.float64).max))


def _assert_within(have: np.ndarray, exact: np.ndarray, tol: np.ndarray, what: str) -> None:
    """Each entry within ``tol`` of the exact one; an infinity only where the exact value
    (plus ``tol``) reaches beyond float64's largest number, with its sign."""
    for idx in np.ndindex(exact.shape):
        h, x, e = float(have[idx]), exact[idx], tol[idx]
        if math.isinf(h):
            ok = abs(x) + e > BIGGEST and (h > 0) == (x > 0)
        else:
            ok = not math.isnan(h) and abs(Fraction(h) - x) <= e
        assert ok, f"{what}{idx}: {h!r}, exact {_show(x)}, error bound {_show(e)}"


def _show(x: Fraction) -> str:
    return repr(float(x)) if abs(x) <= BIGGEST else f"{'-' if x < 0 else ''}beyond 1.8e308"


def _check_exact(
    got: tuple[np.ndarray, ...], u: np.ndarray, g: np.ndarray, vis: np.ndarray, what: str
) -> None:
    """phi, J and H of each query of ``u`` (..., T) against exact rationals."""
    textbook = _textbook_in_range(u, g, vis)
    for i in np.ndindex(u.shape[:-1]):
        want = _exact(u[i], g[i], vis[i])
        tols = _tolerances(u[i], g[i], vis[i], bool(textbook[i]))
        for name, have, x, e in zip(("phi", "J", "H"), got, want, tols, strict=True):
            _assert_within(have[i], x, e, f"{what} query {i} {name}")


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
    _check_exact(got, U, G, VIS, "U")  # within the rounding error bounds of _tolerances
    np.testing.assert_allclose(got[0][1], [0.3, 0.7, 0.0], rtol=1e-15)  # was [0.27, 0.73, 0]
    with np.errstate(all="ignore"):  # the naive formulas overflow on the OVER rows
        naive = _naive(U, G, VIS)
    rows = [i for i in range(U.shape[0]) if i not in OVER]
    for have, want in zip(got, naive, strict=True):  # the other rows: bit for bit
        np.testing.assert_array_equal(have[rows], want[rows])


# rows of 8 keys and more with partial sums of both signs beyond float64's range: numpy's
# pairwise sum adds +inf and -inf halves (NaN, "invalid value encountered in reduce": weights
# all NaN before session 56), or only the bound's sum of |u| overflows; padded with hidden keys
U8 = np.array(
    [
        [1e308, 1e308, 0.0, 0.0, -1e308, -1e308, 0.0, 0.5e308, 7.0],
        [-1.5e308, -1e308, 0.25, 0.0, 1.7e308, 1.6e308, -3e307, 1e-300, 0.0],
        [1e308, -1.5e308, 1e308, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1e308, -1e308, 1e308, -1e308, 1e308, -1e308, 1e308, -0.5e308, 3.0],
    ]
)
VIS8 = np.ones(U8.shape, dtype=bool)
VIS8[0, 8] = VIS8[1, 8] = False
VIS8[2, 3:] = False
G8 = np.array(
    [
        [1e300, -2e300, 3.0, 0.5, 1.7e308, -1e308, 2.0, 1.0, -4.0],
        [1.0, -1.0, 2.0, 0.0, 1e308, 3e307, -5.0, 1e-300, 9.0],
        [1.7e308, -1.7e308, 1e300, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [2.0, 1.0, -1.0, 3.0, 1e300, -1e300, 0.5, 0.25, -2.0],
    ]
)


def test_partial_sums_of_both_signs_that_overflow_are_evaluated_quietly() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # was: "invalid value encountered in reduce"
        got = (NL.phi(U8, VIS8), NL.jacobian(U8, VIS8), NL.hessian(U8, G8, VIS8))
        one = (NL.phi(U8[0, :8]), NL.hessian(U8[0, :8], G8[0, :8]))  # the review's own row
    _check_exact(got, U8, G8, VIS8, "U8")
    np.testing.assert_array_equal(one[0], [2.0, 2.0, 0.0, 0.0, -2.0, -2.0, 0.0, 1.0])  # exact
    np.testing.assert_array_equal(one[1], got[2][0][:8, :8])


def _textbook_in_range(u: np.ndarray, g: np.ndarray, vis: np.ndarray) -> np.ndarray:
    """The queries where the textbook Hessian stays in float64's range: S^2 and S^3 normal
    numbers, every entry finite, each product g_t u_t of nonzero factors and g^T u 0 or a
    normal number (the map computes those by it, bit for bit)."""
    tiny = np.finfo(float).tiny
    with np.errstate(all="ignore"):
        S = np.sum(np.where(vis, u, 0.0), axis=-1)
        H = _naive(u, g, vis)[2]
        normal = (np.abs(S) ** 2 >= tiny) & (np.abs(S) ** 3 >= tiny) & np.isfinite(S**3)
        gu = np.where(vis, g * u, 0.0)
        gsum = np.sum(gu, axis=-1)
    small = (gu != 0) & (np.abs(gu) < tiny) | vis & (g != 0) & (u != 0) & (gu == 0)
    small = np.any(small, axis=-1) | (gsum != 0) & (np.abs(gsum) < tiny)
    return normal & ~small & np.all(np.isfinite(H), axis=(-2, -1))


def test_ordinary_inputs_are_bit_for_bit_the_textbook_formulas() -> None:
    """phi and J everywhere, H on the queries where the textbook formula stays in range;
    the other queries' H (where S^2 or S^3 leaves float64's range: it was inf, NaN, or
    finite and wrong, e.g. 2 g^T u / S^3 = 0 with S^3 = inf) within the rounding error bounds
    of the exact values (an infinity only beyond float64's range, at scale 1e-300)."""
    rng = np.random.default_rng(56)
    kept = 0
    for scale in (1e-300, 1e-120, 1e-50, 1e-3, 1.0, 1e50, 1e120, 1e150, 1e300):
        u = rng.normal(size=(4, 3, 6)) * scale
        vis = rng.random((4, 3, 6)) < 0.6
        vis[..., 0] = True
        u[~vis] *= 1e5  # hidden keys far out: no say in the sums
        g = rng.normal(size=(4, 3, 6))
        with np.errstate(all="ignore"):  # H beyond float64's range at 1e-300
            got = (NL.phi(u, vis), NL.jacobian(u, vis), NL.hessian(u, g, vis))
        with np.errstate(all="ignore"):
            want = _naive(u, g, vis)
        for have, ref in zip(got[:2], want[:2], strict=True):
            np.testing.assert_array_equal(have, ref)
        ok = _textbook_in_range(u, g, vis)
        kept += int(np.sum(ok))
        np.testing.assert_array_equal(got[2][ok], want[2][ok])
        rest = ~ok
        _check_exact((got[0][rest], got[1][rest], got[2][rest]), u[rest], g[rest], vis[rest],
                     f"scale {scale:g}")  # fmt: skip
    # scales 1e-50 to 1e50 (at 1e-120 S^3 ~ 1e-360 underflows, at 1e120 it overflows)
    assert kept == 4 * 12


@pytest.mark.parametrize(
    ("u", "g"),
    [
        ([1e-110, 3e-110], [1.0, -1.0]),  # S^3 = 0: was -inf (exact -1.9e219)
        ([1e-108, 3e-108], [1.0, -1.0]),  # S^3 subnormal: was finite, a few % off
        ([1e150, 3e150], [1.0, -1.0]),  # S^3 = inf: was finite, 2 g^T u / S^3 lost
        ([1e200, 3e200], [1e300, -1e300]),  # S^2 = inf: was NaN (exact -1.9e-101)
        ([1e308, 3e307], [1e300, -1e300]),  # was NaN; the result is subnormal
        ([1e-160, -3e-160, 5e-161], [1e-300, 2e-300, -1e-300]),  # S^2 = 0: was NaN
        # products g_t u_t below the normal range, S^3 normal: 1.2% off, and of the wrong sign
        ([1e-103, 2e-103], [1e-220, -1e-220]),
        ([1e-103, 2e-103], [1e-222, 3e-222]),  # was H00 = -2.2e-17, exact +2.96e-17
        # the scaled formula's own steps beyond the range (2 g~^T a): was inf, NaN; H11 is
        # beyond it (exact 2.55e308), H00 and H01 are not (0.85e308, 1.7e308)
        ([3.0, -1.0], [1.7e308, -1.7e308]),
        ([1.0, -0.5], [1.7e308, 1.7e308]),  # exact 0 (g constant)
        ([1.0, -0.5], [1.7e308, 1.6e308]),  # was NaN; exact [[0.8, 1.2], [1.2, 1.6]] 1e308
    ],
)
def test_the_hessian_where_s2_or_s3_leaves_float64s_range(u: list, g: list) -> None:
    uu, gg = np.array(u), np.array(g)
    vis = np.ones(uu.shape, dtype=bool)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        H = NL.hessian(uu, gg)
    textbook = bool(_textbook_in_range(uu, gg, vis))
    want, tol = _exact(uu, gg, vis)[2], _tolerances(uu, gg, vis, textbook)[2]
    _assert_within(H, want, tol, "H")  # an infinity only where the exact H is beyond range
    in_range = np.vectorize(lambda x, e: abs(x) + e <= BIGGEST, otypes=[bool])(want, tol)
    assert np.all(np.isfinite(H[in_range]))


def test_float32_logits_keep_their_dtype() -> None:
    got = NL.phi(np.array([3e38, 3e38, 1.0], dtype=np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [0.5, 0.5, 1.0 / (2.0 * float(np.float32(3e38)))], rtol=1e-6)


@pytest.mark.parametrize(
    ("dtype", "top", "unit"), [(np.float32, 2**24, 2**-24), (np.float16, 2**11, 2**-11)]
)
def test_float32_and_float16_sums_are_refused_by_their_own_rounding_error(
    dtype: type, top: int, unit: float
) -> None:
    """u = [2^p, 3, -2^p] (p + 1 the precision's significand bits) sums to 3 exactly; in
    that precision 2^p + 3 rounds to 2^p + 4 (a tie, to even), so the computed sum may be 4
    (float32's) or 3 (numpy accumulates float16 in float32), and its rounding error bound
    gamma_2 (2^(p+1) + 3), with the precision's unit roundoff, is about 4: both within it.
    Before: float64's bound (1e-8) let float32's 4 pass, [4194304, 0.75, -4194304] where the
    exact weights are [5592405.3, 1, -5592405.3]."""
    u = np.array([top, 3, -top], dtype=dtype)
    exact_sum = sum(Fraction(float(x)) for x in u)
    bound = _gamma(2, Fraction(unit)) * sum(abs(Fraction(float(x))) for x in u)
    assert exact_sum == 3 and 4 < bound < 4 + Fraction(1, 100)
    name = np.dtype(dtype).name
    for f in (NL.phi, NL.jacobian, lambda x: NL.hessian(x, np.ones(3, dtype=dtype))):
        with pytest.raises(ProblemError, match=f"not determined by {name} .* has 1\\^T u = [34],"):
            f(u)
    # float64: its own bound, its own (exact) sum 3, the weights rounded once, as before
    u64 = u.astype(np.float64)
    np.testing.assert_array_equal(
        NL.phi(u64), [float(Fraction(top, 3)), 1.0, -float(Fraction(top, 3))]
    )
    # a float32 sum well away from 0 passes; each weight within (1 + theta)(1 + u) - 1 of the
    # exact one relatively, theta = e / (|sigma| - e), e the float32 bound of the sum
    v = np.array([1.5, -0.25, 3.0, 1e-3], dtype=dtype)
    sigma = sum(Fraction(float(x)) for x in v)
    e = _gamma(3, Fraction(unit)) * sum(abs(Fraction(float(x))) for x in v)
    rel = (1 + e / (abs(sigma) - e)) * (1 + Fraction(unit)) - 1
    got = NL.phi(v)
    assert got.dtype == dtype
    for have, x in zip(got, v, strict=True):
        want = Fraction(float(x)) / sigma
        assert abs(Fraction(float(have)) - want) <= rel * abs(want), (have, float(want))


def test_the_hessian_where_g_tilde_times_a_overflows() -> None:
    """hessian([1e23, -1e23 + 1e8], g=[1e308, -1e308]) was inf; g~^T a is about 1e315, H
    about 3.92e307. The sum is exact here (Sterbenz), so _tolerances' bound on it (gamma_1
    2e23) is no use; the other steps at 2^-1024 g (g~, a, g~^T a, 2 q - g~_t - g~_s, the
    division) are 6 roundings without cancellation: relative error below 6u (1e-14 kept)."""
    u, g = np.array([1e23, -1e23 + 1e8]), np.array([1e308, -1e308])
    H = NL.hessian(u, g)
    want = _exact(u, g, np.ones(2, dtype=bool))[2]
    np.testing.assert_allclose(H, want.astype(float), rtol=1e-14)


def test_float16_rows_beyond_1024_visible_keys_are_summed_in_float64() -> None:
    """gamma_n = n u / (1 - n u) holds while n u < 1: float16's u = 2^-11 made it inf at
    2049 keys (refused as an "overflow") and negative beyond (nothing refused: a sum of
    exactly 0 gave [inf, -inf, ...] with a divide-by-zero warning). Such a row's sum is now
    float64's, with float64's bound; the other rows are float16's, bit for bit."""
    zero = np.tile(np.float16([1.0, -1.0]), 1100)  # sums to 0 exactly
    with pytest.raises(ProblemError, match=r"not determined by float64 .* has 1\^T u = 0,"):
        NL.phi(zero)
    long = np.tile(np.float16([1.0, -1.0]), 1025)[:-1]  # 2049 keys, sum 1: phi = u exactly
    short = np.float16([1.5, -0.25, 3.0, 1e-3] + [0.0] * 2045)
    vis = np.ones((2, 2049), dtype=bool)
    vis[1, 4:] = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = NL.phi(np.stack([long, short]), vis)
        J = NL.jacobian(long)
        H = NL.hessian(long, np.arange(2049.0).astype(np.float16))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got[0], long)
    np.testing.assert_array_equal(got[1], NL.phi(short[:4]).tolist() + [0.0] * 2045)
    # J = (I - a 1^T) / 1^T u and H = 2 g^T a - g_t - g_s (1^T u = 1, a = u): exact in float64
    a = long.astype(np.float64)
    np.testing.assert_array_equal(J, np.eye(2049) - a[:, None])
    gg = np.arange(2049.0).astype(np.float16).astype(np.float64)
    np.testing.assert_array_equal(H, 2.0 * (gg @ a) - gg[:, None] - gg[None, :])


def _float64_passes(u: np.ndarray) -> bool:
    """Does float64's sum of ``u`` pass float64's check, |1^T u| > gamma_{n-1} sum|u|? Exact
    rationals: every partial sum of the inputs below is a float64 number, so float64's
    computed sum is the exact one."""
    terms = [Fraction(float(x)) for x in u]
    return abs(sum(terms)) > _gamma(len(terms) - 1) * sum(abs(t) for t in terms)


_PASS64 = r"Pass float64 logits, u\.astype\(np\.float64\)"


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_float32_or_float16_refusal_says_pass_float64_where_float64_passes(dtype: type) -> None:
    """[2^p, 3, -2^p] (p + 1 the significand bits) sums to 3, within float32's (float16's)
    rounding error of 0 but not float64's; [m, -m'] (m the largest number, m' the one below)
    sums to m's ulp, within the rounding error of the narrow sum taken at 2^-k u."""
    top = 2 ** (np.finfo(dtype).nmant + 1)
    big = np.finfo(dtype).max
    for u in (
        np.array([top, 3, -top], dtype=dtype),
        np.array([big, -np.nextafter(big, dtype(0))], dtype=dtype),
    ):
        assert _float64_passes(u)
        with pytest.raises(ProblemError, match=r"sign\. " + _PASS64):
            NL.phi(u)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_no_float64_advice_where_float64_refuses_too(dtype: type) -> None:
    """Sums of exactly 0 (also float64's, which refuses them): before, "Pass float64 logits"
    was offered for [1, -1], [1, 2, -3] and [m, -m] in float32 and float16."""
    big = np.finfo(dtype).max
    name = np.dtype(dtype).name
    for u in (
        np.array([1.0, -1.0], dtype=dtype),
        np.array([1.0, 2.0, -3.0], dtype=dtype),
        np.array([big, -big], dtype=dtype),
    ):
        assert not _float64_passes(u)
        with pytest.raises(ProblemError, match=f"not determined by {name} ") as info:
            NL.phi(u)
        assert "Pass float64" not in str(info.value), str(info.value)
        with pytest.raises(ProblemError, match="not determined by float64 "):
            NL.phi(u.astype(np.float64))


def test_a_short_float16_row_beside_a_float64_summed_one_names_float16() -> None:
    """A float16 batch with a row of 1100 visible keys (summed in float64) and a row of 2,
    [1, -1], refused: before, the short row's message said "not determined by float64" with
    float16's bound gamma_1(2^-11) * 2; now float16, as when the row comes alone."""
    u = np.ones((2, 1100), np.float16)
    u[0, :2] = [1, -1]
    vis = np.ones((2, 1100), dtype=bool)
    vis[0, 2:] = False
    with pytest.raises(ProblemError) as batch:
        NL.phi(u, vis)
    with pytest.raises(ProblemError) as alone:
        NL.phi(u[:1], vis[:1])
    msg = str(batch.value)
    assert "not determined by float16 " in msg and "Pass float64" not in msg, msg
    bound = float(_gamma(1, Fraction(2**-11)) * 2)
    assert f"can reach {bound:.3g} " in msg, msg
    assert msg == str(alone.value)


@pytest.mark.parametrize(
    "u",
    [[1.0, -1.0], [1.0, 2.0, -3.0], [2.0**53, 1.0, -(2.0**53)], [0.5, -0.25, -0.25]],
)
def test_float64_refusals_name_float64_and_the_derived_sum_and_bound(u: list[float]) -> None:
    """Float64 messages as before session 56's change: the default message of the computed
    sum (exact rationals here, every partial sum a float64 number, but 2^53 + 1 which rounds
    to 2^53) and of gamma_{n-1} sum|u|, with no float64 advice."""
    x = np.array(u)
    terms = [Fraction(t) for t in u]
    partial = Fraction(0)
    for t in terms:  # numpy's sum of fewer than 8 terms adds left to right
        partial = Fraction(float(partial + t))
    bound = float(_gamma(len(u) - 1) * sum(abs(t) for t in terms))
    with pytest.raises(ProblemError) as info:
        NL.phi(x)
    assert str(info.value) == undetermined_sum_message(float(partial), bound, "the query")
    assert "not determined by float64 " in str(info.value)
    assert "Pass float64" not in str(info.value)


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
