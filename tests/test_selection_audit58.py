# SPDX-License-Identifier: BSD-3-Clause
"""Session 58: logit ties judged with the products that underflow, against exact rationals.

Before (f315a3c) ``largest_logits`` called logits tied by their magnitudes alone, so a W (or
prompt vector) whose products :math:`x_{itd} W_{de}` land below float64's smallest normal had
its logits ranked on round-off: an exact tie read strict, and a key below the exact maximum
was selected. The same held for logits whose terms cancel (2^53 + 1 - 2^53), at any scale:
logits now have the sizes of their terms with the underflow term (``logit_sizes``). The
oracle is the exact logits, :class:`fractions.Fraction` on the same floats: every exact
maximizer must be among a query's top keys (:func:`logit_selection`'s mask).
"""

from __future__ import annotations

import importlib
from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.attention_maps import gamma

selection = importlib.import_module("svmgeo.selection")

TINY = 2.0**-1074  # float64's smallest subnormal


def _exact_logits(data: sg.TokenData, theta: np.ndarray) -> list[list[list[Fraction]]]:
    """The logits x^T W z (or x^T p) of every query and key in exact rationals."""
    X, n, K, T, d = np.asarray(data.X), data.n, data.K, data.T, data.d
    if theta.ndim == 1:
        weights = [[Fraction(float(q)) for q in theta]] * K
        return [
            [[sum(Fraction(float(X[i, t, a])) * weights[k][a] for a in range(d)) for t in range(T)]
             for k in range(K)]
            for i in range(n)
        ]  # fmt: skip
    Z = np.asarray(data.queries)
    out = []
    for i in range(n):
        rows = []
        for k in range(K):
            wz = [sum(Fraction(float(theta[a, e])) * Fraction(float(Z[i, k, e])) for e in range(d))
                  for a in range(d)]  # fmt: skip
            rows.append(
                [sum(Fraction(float(X[i, t, a])) * wz[a] for a in range(d)) for t in range(T)]
            )
        out.append(rows)
    return out


def _check_against_exact(data: sg.TokenData, theta: np.ndarray) -> tuple[int, int]:
    """Every exact maximizer of each query is among its top keys, and a selection, when
    there is one, is the exact argmax; returns (queries with one top key, exact ties)."""
    exact = _exact_logits(data, theta)
    with np.errstate(under="ignore"):
        if theta.ndim == 1:
            logits = selection.prompt_logits(data, theta)
        else:
            logits = selection.weight_logits(data, theta)
        alpha, tied, non_finite, top = selection.logit_selection(data, logits, theta)
        ref = selection.largest_logits(data, theta)
    assert ref[1:] == (tied, non_finite) and (ref[0] is None) == (alpha is None)
    assert non_finite == []
    single, ties = 0, 0
    for i, k in np.ndindex(data.n, data.K):
        best = max(exact[i][k])
        argmax = [t for t in range(data.T) if exact[i][k][t] == best]
        keys = np.flatnonzero(top[i, k]).tolist()
        assert set(argmax) <= set(keys), (i, k, argmax, keys, exact[i][k], logits[i, k])
        single += len(keys) == 1
        ties += len(argmax) > 1
    if alpha is not None:
        full = np.asarray(alpha).reshape(data.n, data.K)
        for i, k in np.ndindex(data.n, data.K):
            assert exact[i][k][full[i, k]] == max(exact[i][k])
    return single, ties


def test_prompt_logits_ranked_on_round_off_select_no_token():
    """Keys (1.5, 0, 0, 0) and (0.46875, ...) under p = 2^-1074 ones: exactly 1.5 and 1.875
    subnormal units, computed 2 and 0 units; key 0 was selected (strictly) over the exact
    maximum, key 1. Now the two tie (their difference is round-off)."""
    X = np.array([[[1.5, 0.0, 0.0, 0.0], [0.46875] * 4]])
    data = sg.TokenData(X, scores=np.zeros((1, 2)))
    p = np.full(4, TINY)
    alpha, tied, non_finite = selection.largest_logits(data, p)
    assert (alpha, tied, non_finite) == (None, ["sequence 0: tokens [0, 1]"], [])
    _check_against_exact(data, p)


@pytest.mark.parametrize(
    ("w", "z"),
    [(TINY, 2.0**300), (2.0**-1000, 2.0**-74)],
    ids=["x W underflows, z multiplies it", "(x W) z underflows"],
)
def test_an_exact_tie_of_underflowed_products_reads_tied(w, z):
    """Keys (1.5, 0) and (1.25, 0.25) under W with first column (w, w) and z = (z, 0): both
    logits exactly 1.5 * w * z, computed 2 and 1 times w * z / 1.5 rounded (x_d W_de on
    the subnormal grid, then times 2^300: normal logits near 2^-773; or x_d W_de normal and
    their products with 2^-74 on the grid). Read strict before, with key 0 selected; the
    first also with an underflow term d_u mu alone (without z's norm), the second with one
    of z's norm alone (without d^2 mu for the products with z)."""
    X = np.array([[[1.5, 0.0], [1.25, 0.25]]])
    W = np.array([[w, 0.0], [w, 0.0]])
    data = sg.TokenData(X, Z=np.array([[z, 0.0]]), scores=np.zeros((1, 2)))
    logits = selection.weight_logits(data, W)[0, 0]
    assert logits[0] == 2 * logits[1]  # round-off alone tells them apart
    alpha, tied, _ = selection.largest_logits(data, W)
    assert (alpha, tied) == (None, ["sequence 0: tokens [0, 1]"])
    assert _check_against_exact(data, W)[1] == 1


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("bits", [0, 40])
@pytest.mark.parametrize("scale", [0, 300, -20])
def test_random_subnormal_W_never_misses_an_exact_maximizer(seed, bits, scale):
    """Dyadic keys (eighths in [0, 2)) and queries (integers 1..3 times 2^scale) with W and p
    of integers below 2^(bits+2) times 2^-1074: products x_d W_de round to the subnormal grid
    (and with scale -20 so do their products with z). Every exact maximizer is a top key and
    a selection is the exact argmax; with W near 2^(bits-1074) = 2^-1034 and z not shrinking
    them, the rule still tells queries apart (one top key)."""
    rng = np.random.default_rng(seed)
    n, T, d = 6, 5, 3
    X = rng.integers(0, 16, size=(n, T, d)) / 8.0
    Z = rng.integers(1, 4, size=(n, d)) * 2.0**scale
    data = sg.TokenData(X, Z=Z, scores=np.zeros((n, T)))
    W = rng.integers(0, 2 ** (bits + 2), size=(d, d)).astype(float) * TINY
    single, _ = _check_against_exact(data, W)
    p = rng.integers(0, 2 ** (bits + 2), size=d).astype(float) * TINY
    single_p, _ = _check_against_exact(data, p)
    if bits and scale >= 0:
        assert single >= n // 2 and single_p >= n // 2  # not all tied: the rule still ranks


@pytest.mark.parametrize("seed", range(4))
def test_normal_scale_logits_keep_their_exact_order(seed):
    """The same dyadic data with W of integers times 2^-20 (no product underflows, every
    product and sum exact): the top keys are exactly the exact maximizers, as before."""
    rng = np.random.default_rng(seed)
    n, T, d = 6, 5, 3
    X = rng.integers(0, 16, size=(n, T, d)) / 8.0
    data = sg.TokenData(X, Z=rng.integers(1, 4, size=(n, d)) * 1.0, scores=np.zeros((n, T)))
    W = rng.integers(0, 4, size=(d, d)) * 2.0**-20
    exact = _exact_logits(data, W)
    _, _, _, top = selection.logit_selection(data, selection.weight_logits(data, W))
    for i in range(n):
        best = max(exact[i][0])
        np.testing.assert_array_equal(top[i, 0], [x == best for x in exact[i][0]])


@pytest.mark.parametrize("exponent", [-530, -520, 0])
def test_self_term_sizes_bound_the_squares(exponent):
    """term_sizes(U), the size of each u's square ||u||^2 with its d_u products that may
    underflow (the concave head's), bounds the round-off of the computed squares against
    exact rationals, at 2^-530 too, where u_i^2 lands below float64's smallest normal; and
    it is ||u||^2 + d_u mu."""
    rng = np.random.default_rng(exponent + 1000)
    U = rng.normal(size=(4, 6, 5)) * 2.0**exponent
    with np.errstate(under="ignore"):
        squares = np.sum(U * U, axis=2)
        sizes = selection.term_sizes(U)
    np.testing.assert_array_equal(sizes, squares + 5 * selection.SMALLEST_NORMAL)
    for i, t in np.ndindex(4, 6):
        exact = sum(Fraction(float(x)) ** 2 for x in U[i, t])
        error = abs(Fraction(float(squares[i, t])) - exact)
        assert error <= Fraction(gamma(6)) * Fraction(float(sizes[i, t]))


# Session 58, after review: terms that cancel. Sizes of the logits' magnitudes with the
# underflow term did not bound the round-off where a logit's terms cancel (as on f315a3c).


@pytest.mark.parametrize(
    ("X", "Z", "W"),
    [
        ([[2.0**53, 1.0, -(2.0**53)], [0.5, 0.0, 0.0]], [1.0, 1.0, 1.0], np.eye(3)),
        ([[1.0 + 2.0**-52, 1.0], [2.1e-16, 0.0]], [1.0, 1.0], np.diag([1e16, -1e16])),
    ],
    ids=["2**53 + 1 - 2**53", "diag(1e16, -1e16)"],
)
def test_logits_whose_terms_cancel_are_not_ranked_on_round_off(X, Z, W):
    """Keys (2^53, 1, -2^53) and (0.5, 0, 0) under W = I, z = (1, 1, 1): exact logits 1 and
    0.5, computed 0 and 0.5; keys (1 + 2^-52, 1) and (2.1e-16, 0) under diag(1e16, -1e16),
    z = (1, 1): exact 2.2204... and 2.1000..., computed 2 and 2.1. Key 1 was selected
    strictly over the exact maximum, key 0; now the two tie (their difference is below the
    round-off of the terms 2^53, 1e16 that cancel)."""
    data = sg.TokenData(np.array([X]), Z=np.array([Z]), scores=np.zeros((1, 2)))
    exact = _exact_logits(data, W)[0][0]
    assert exact[0] > exact[1]  # key 0 is the exact maximum
    logits = selection.weight_logits(data, W)[0, 0]
    assert logits[0] < logits[1]  # computed, key 1 is above it
    alpha, tied, non_finite = selection.largest_logits(data, W)
    assert (alpha, tied, non_finite) == (None, ["sequence 0: tokens [0, 1]"], [])
    _check_against_exact(data, W)


@pytest.mark.parametrize("seed", range(12))
def test_random_cancelling_terms_never_miss_an_exact_maximizer(seed):
    """Keys (a, b, -a) with a = +-2^50..2^60 and b = +-1..8 under queries and a W (p) of
    nonzero integers +-1..3 whose rows 0 and 2 agree (p_0 = p_2): the terms of a cancel
    exactly, so the exact logits are the small integers b (W z)_1 (b p_1), but their
    computed sums round at the scale of a, whose ulp is above them. Every exact maximizer is
    a top key and a selection is the exact argmax. (With a from 2^0 and zeros among b, z, W,
    as in 132ae7c, half of these seeds missed an exact maximizer on f315a3c; now all 12
    do, ad hoc.)"""
    rng = np.random.default_rng(seed)
    n, T, d = 8, 4, 3

    def signed(low, high, size):
        return rng.choice([-1.0, 1.0], size=size) * rng.integers(low, high, size=size)

    X = rng.choice([-1.0, 1.0], size=(n, T, d)) * 2.0 ** rng.integers(50, 61, size=(n, T, d))
    X[:, :, 1] = signed(1, 9, (n, T))
    X[:, :, 2] = -X[:, :, 0]
    data = sg.TokenData(X, Z=signed(1, 4, (n, d)), scores=np.zeros((n, T)))
    W = signed(1, 4, (d, d))
    W[2] = W[0]
    _check_against_exact(data, W)
    p = signed(1, 4, d)
    p[2] = p[0]
    _check_against_exact(data, p)


def test_logit_selection_of_prompt_logits_needs_no_flag():
    """logit_selection of a prompt vector's logits without theta or prompt, on data built
    without queries: its default (prompt when the data have no queries) gives the selection
    of largest_logits. After f46f92c it read the data's queries and raised."""
    data = sg.TokenData(np.array([[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]]), v=np.array([1.0, 0.0]))
    p = np.array([1.0, 0.0])
    alpha, tied, non_finite, top = selection.logit_selection(data, selection.prompt_logits(data, p))
    np.testing.assert_array_equal(alpha, [0])
    assert (tied, non_finite) == ([], [])
    np.testing.assert_array_equal(top, [[[True, False, False]]])
    np.testing.assert_array_equal(selection.largest_logits(data, p)[0], alpha)


def test_logit_selection_refuses_a_theta_of_the_other_kind():
    """prompt=True with a W (or False with a p) contradicts theta's shape: refused, naming
    both; prompt that agrees, or left out, gives largest_logits' selection."""
    data = sg.TokenData(np.array([[[1.0, 0.0], [0.0, 1.0]]]), Z=np.array([[1.0, 0.0]]))
    W, p = np.eye(2), np.array([1.0, 0.0])
    for theta, prompt, logits in (
        (W, True, selection.weight_logits(data, W)),
        (p, False, selection.prompt_logits(data, p)),
    ):
        with pytest.raises(ValueError, match=r"prompt=.*theta has shape"):
            selection.logit_selection(data, logits, theta, prompt=prompt)
        alpha = selection.logit_selection(data, logits, theta, prompt=not prompt)[0]
        np.testing.assert_array_equal(alpha, [0])
        np.testing.assert_array_equal(selection.largest_logits(data, theta)[0], alpha)


# Session 58, second review: sizes that overflow while the logits are finite. 132ae7c summed
# |X| |W| over d before multiplying by |z| (inf * 0 = NaN: no top key at all), and sizes of
# terms near float64's largest that cancel overflowed (inf: every key tied).


def _exact_tolerances(data: sg.TokenData, theta: np.ndarray) -> list[list[list[Fraction]]]:
    """TIE_RTOL times the logits' sizes in exact rationals: sum |x| |W| |z| (|x| |p|) plus
    the underflow term mu (d ||z||_1 + d^2) (d mu)."""
    mu, d, rtol = Fraction(selection.SMALLEST_NORMAL), data.d, Fraction(selection.TIE_RTOL)
    queries = None if theta.ndim == 1 else np.abs(np.asarray(data.queries))
    absolute = sg.TokenData(
        np.abs(np.asarray(data.X)), Z=queries, scores=np.zeros((data.n, data.T))
    )
    terms = _exact_logits(absolute, np.abs(theta))
    under = [
        [d * mu if queries is None else mu * (d * sum(Fraction(float(e)) for e in queries[i, k]) + d * d)
         for k in range(data.K)]
        for i in range(data.n)
    ]  # fmt: skip
    return [[[rtol * (s + under[i][k]) for s in row] for k, row in enumerate(rows)]
            for i, rows in enumerate(terms)]  # fmt: skip


def test_an_exact_tie_whose_sizes_overflowed_reads_tied():
    """Two identical keys (1.5e150, 1.5e150) under W with rows (1e158, 1) and (-1e158, 1),
    z = (0, 1): logits exactly 3e150 each (the 1e158 terms meet z_0 = 0), but the sum of
    |x_d| |W_d0| over d is 3e308, inf, and inf * 0 is NaN: on 132ae7c both sizes were NaN,
    no key was a top key and the selection was key 0. Now the tie, and TIE_RTOL times the
    exact sizes."""
    X = np.array([[[1.5e150, 1.5e150], [1.5e150, 1.5e150]]])
    data = sg.TokenData(X, Z=np.array([[0.0, 1.0]]), scores=np.zeros((1, 2)))
    W = np.array([[1e158, 1.0], [-1e158, 1.0]])
    assert np.all(np.isfinite(selection.weight_logits(data, W)))
    assert selection.largest_logits(data, W) == (None, ["sequence 0: tokens [0, 1]"], [])
    assert _check_against_exact(data, W)[1] == 1
    exact = _exact_tolerances(data, W)[0][0]
    np.testing.assert_allclose(
        selection.logit_sizes(data, W, selection.TIE_RTOL)[0, 0], [float(e) for e in exact],
        rtol=1e-15,
    )  # fmt: skip


def test_sizes_beyond_float64_do_not_tie_a_whole_query():
    """Keys (1e150, 1e150), (1e150, 1e150 - 1e140), (-1e150, 0) under p = (1.5e158,
    -1.5e158): exact logits 0, about 1.5e298 and -1.5e308, sizes 3e308 (beyond float64),
    3e308 and 1.5e308. Key 1 is the exact maximum by 1.5e298, above TIE_RTOL times the
    exact sizes (3e296): the rule in exact arithmetic selects key 1 alone. On 132ae7c the
    sizes were inf and every key tied (the one at -1.5e308 too). TIE_RTOL times the sizes
    is finite and exact to rounding; the sizes themselves are beyond float64."""
    X = np.array([[[1e150, 1e150], [1e150, 1e150 - 1e140], [-1e150, 0.0]]])
    data = sg.TokenData(X, scores=np.zeros((1, 3)))
    p = np.array([1.5e158, -1.5e158])
    exact, tolerances = _exact_logits(data, p)[0][0], _exact_tolerances(data, p)[0][0]
    best = max(range(3), key=lambda t: exact[t])
    expected = [
        t for t in range(3) if exact[best] - exact[t] <= max(tolerances[t], tolerances[best])
    ]
    assert expected == [1]  # the rule, in exact arithmetic
    alpha, tied, non_finite = selection.largest_logits(data, p)
    np.testing.assert_array_equal(alpha, expected)
    assert (tied, non_finite) == ([], [])
    _check_against_exact(data, p)
    np.testing.assert_allclose(
        selection.logit_sizes(data, p, selection.TIE_RTOL)[0, 0], [float(e) for e in tolerances],
        rtol=1e-15,
    )  # fmt: skip
    assert np.all(np.isinf(selection.logit_sizes(data, p)[0, 0, :2]))  # beyond float64


@pytest.mark.parametrize("prompt", [True, False])
def test_sizes_summed_again_at_d_beyond_1024(prompt):
    """The sizes summed again in chunks of about 2^20 products: at d = 1025 a W's size has
    more (d^2 > 2^20), and 7488983 split the overflowed sizes into more chunks than sizes
    and crashed on an empty one (ValueError: cannot reshape). The overflowing cases above,
    padded with zeros to d = 1025, keep their d = 2 answers."""
    d = 1025
    if prompt:
        X = np.zeros((1, 3, d))
        X[0, :2, :2] = [[1e150, 1e150], [1e150, 1e150 - 1e140]]
        X[0, 2, 0] = -1e150
        data = sg.TokenData(X, scores=np.zeros((1, 3)))
        theta = np.zeros(d)
        theta[:2] = [1.5e158, -1.5e158]
        expected = selection.largest_logits(
            sg.TokenData(X[:, :, :2], scores=np.zeros((1, 3))), theta[:2]
        )
    else:
        X = np.zeros((1, 2, d))
        X[0, :, :2] = 1.5e150
        Z = np.zeros((1, d))
        Z[0, 1] = 1.0
        data = sg.TokenData(X, v=np.eye(d)[0], Z=Z)
        theta = np.zeros((d, d))
        theta[:2, :2] = [[1e158, 1.0], [-1e158, 1.0]]
        expected = selection.largest_logits(
            sg.TokenData(X[:, :, :2], v=[1.0, 0.0], Z=Z[:, :2]), theta[:2, :2]
        )
    alpha, tied, non_finite = selection.largest_logits(data, theta)
    if prompt:  # key 1 alone, as at d = 2
        np.testing.assert_array_equal(expected[0], [1])
        np.testing.assert_array_equal(alpha, [1])
    else:  # the exact tie, as at d = 2
        assert expected[0] is None and alpha is None
    assert (tied, non_finite) == (expected[1], expected[2])
    assert np.all(np.isfinite(selection.logit_sizes(data, theta, selection.TIE_RTOL)))


@pytest.mark.parametrize("seed", range(6))
def test_random_sizes_near_float64s_largest_stay_finite(seed):
    """Keys of +-2^496..2^498 (TokenData's largest scale) and W (p) of +-2^523..2^525 with
    queries of 0 and +-1: products up to 2^1023 of float64's 2^1024, their sums over d (and
    the sizes) often beyond it, the logits often not. Wherever a query's logits are finite,
    TIE_RTOL times its sizes is finite and that of exact rationals to rounding, and every
    exact maximizer is a top key."""
    rng = np.random.default_rng(seed)
    n, T, d = 6, 4, 3

    def big(low, size):
        return rng.choice([-1.0, 1.0], size=size) * 2.0 ** rng.integers(low, low + 3, size=size)

    data = sg.TokenData(big(496, (n, T, d)), Z=rng.integers(-1, 2, size=(n, d)) * 1.0,
                        scores=np.zeros((n, T)))  # fmt: skip
    for theta in (big(523, (d, d)), big(523, d)):
        with np.errstate(over="ignore", invalid="ignore"):
            logits = (selection.prompt_logits if theta.ndim == 1 else selection.weight_logits)(
                data, theta
            )
        top = selection.logit_selection(data, logits, theta)[3]
        exact, exact_tol = _exact_logits(data, theta), _exact_tolerances(data, theta)
        finite = np.all(np.isfinite(logits), axis=2)
        assert finite.any()
        for i, k in np.argwhere(finite):
            best = max(exact[i][k])
            argmax = {t for t in range(T) if exact[i][k][t] == best}
            assert argmax <= set(np.flatnonzero(top[i, k]).tolist())
        tolerances = selection.logit_sizes(data, theta, selection.TIE_RTOL)
        for i, k in np.argwhere(finite):
            np.testing.assert_allclose(
                tolerances[i, k], [float(e) for e in exact_tol[i][k]], rtol=1e-14
            )
