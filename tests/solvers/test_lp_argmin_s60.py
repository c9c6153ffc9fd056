# SPDX-License-Identifier: BSD-3-Clause
"""The nearly exact adjoint behind the l_p minimizer check, against exact fractions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from svmgeo.constraints import MARGIN, ConstraintSet
from svmgeo.solvers._lp_norm import _accurate_adjoint, _plain_adjoint

U = 2.0**-53


def _rows(A: np.ndarray, B: np.ndarray) -> ConstraintSet:
    N = A.shape[0]
    return ConstraintSet(
        A=A, B=B, rhs=np.ones(N), kind=np.full(N, MARGIN), seq=np.arange(N),
        query=np.zeros(N, dtype=int), pref=np.zeros(N, dtype=int), comp=np.arange(N) % 2 + 1,
        n=N, K=1, T=3,
    )  # fmt: skip


def _adjoint(cs: ConstraintSet, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every entry by the nearly exact sum, as a (d, d) matrix."""
    K, L = np.indices((cs.d, cs.d)).reshape(2, -1)
    values, err = _accurate_adjoint(cs, lam, K, L)
    return values.reshape(cs.d, cs.d), err.reshape(cs.d, cs.d)


def _exact(lam: np.ndarray, A: np.ndarray, B: np.ndarray) -> list[list[Fraction]]:
    d = A.shape[1]
    return [
        [
            sum((Fraction(x) * Fraction(y) * Fraction(z) for x, y, z in zip(lam, A[:, k], B[:, l], strict=True)),
                Fraction(0))
            for l in range(d)
        ]
        for k in range(d)
    ]  # fmt: skip


@pytest.mark.parametrize("seed", range(4))
def test_every_entry_is_within_its_bound_and_the_bound_is_tight(seed: int) -> None:
    """Random rows, and rows built to cancel: entry (0, 0) is the sum of two products of
    size ~1 that agree to ~1e-12, plus small ones. The plain float sum is off by up to
    ~1e-16 absolute there, 1e-4 of the entry; the nearly exact one by a few u of it."""
    rng = np.random.default_rng(seed)
    N, d = 9, 3
    A, B, lam = rng.normal(size=(N, d)), rng.normal(size=(N, d)), rng.random(N)
    A[1, 0] = -A[0, 0] * (1 + 1e-12) * lam[0] / lam[1] * B[0, 0] / B[1, 0]
    A[2:, 0] *= 1e-12
    Lam, err = _adjoint(_rows(A, B), lam)
    exact = _exact(lam, A, B)
    top = np.abs(np.einsum("j,jk,jl->jkl", lam, A, B)).max(axis=0)  # the largest product
    for k in range(d):
        for l in range(d):
            gap = abs(Fraction(float(Lam[k, l])) - exact[k][l])
            assert gap <= Fraction(float(err[k, l]))
            # u of the entry, and m^3 u^2 of its largest product (m = 4N parts; 16 m^3 u^2 is
            # 1e-26: below the plain sum's N u, 1e-15, by eleven orders)
            m = 4 * N
            assert err[k, l] <= 4 * U * abs(float(exact[k][l])) + 16 * m**3 * U**2 * top[k, l]
    plain = np.einsum("j,jk,jl->kl", lam, A, B)
    assert abs(Fraction(float(plain[0, 0])) - exact[0][0]) > 0  # the plain sum is off here


def test_a_column_of_zero_products_is_exact_with_bound_zero() -> None:
    """Every b_j = e_1 (one query): the second column of Λ is exactly 0, with bound 0, so
    that g(0) = 0 has no uncertainty at large p (its (bound)^(q-1) would be O(1))."""
    A = np.array([[1.0, 0.0], [2.0 / 3.0, 2.0 / 3.0]])
    B = np.array([[1.0, 0.0], [1.0, 0.0]])
    Lam, err = _adjoint(_rows(A, B), np.array([1.0, 1e-30]))
    np.testing.assert_array_equal(Lam[:, 1], 0.0)
    np.testing.assert_array_equal(err[:, 1], 0.0)


@pytest.mark.parametrize("seed", range(4))
def test_the_float_sum_is_within_its_bound(seed: int) -> None:
    """The first pass: the plain float adjoint and its gamma_(N+2) bound, against fractions,
    on the cancelling rows above (where the bound is far looser than the nearly exact one)."""
    rng = np.random.default_rng(seed)
    N, d = 9, 3
    A, B, lam = rng.normal(size=(N, d)), rng.normal(size=(N, d)), rng.random(N)
    A[1, 0] = -A[0, 0] * (1 + 1e-12) * lam[0] / lam[1] * B[0, 0] / B[1, 0]
    Lam, err = _plain_adjoint(_rows(A, B), lam)
    exact = _exact(lam, A, B)
    for k in range(d):
        for l in range(d):
            assert abs(Fraction(float(Lam[k, l])) - exact[k][l]) <= Fraction(float(err[k, l]))
