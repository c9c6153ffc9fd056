# SPDX-License-Identifier: BSD-3-Clause
"""Exact Farkas proofs of rows that hold a row and its negation (session 59, task P).

Sequence 0 twice, once selecting its optimal token p and once another token q, on the
``_parallel_queries`` draw of ``test_nuclear_audit56`` (queries :math:`s_i z`, parallel up to
rounding): the rows :math:`(x_p - x_q)^\\top W z \\ge 1` and :math:`(x_q - x_p)^\\top W z \\ge 1`,
infeasible with :math:`\\lambda = (1/2, 1/2)` on them. Before (main, 9c8d709): the Phase-1 LP's
Farkas vector (16 to 75 rows, a float certificate of rows dependent only up to rounding) had no
exact Farkas vector on its support, and ``check_feasibility`` / ``att_svm`` answered
``INFEASIBLE_INACCURATE`` ("not exact on its support"). Every Farkas vector here is checked in
exact rationals from the tokens and queries (an independent oracle: Python ``Fraction``).
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import Status, check_feasibility


def _row_and_negation(
    n: int, seed: int, query_scale: float = 1.0
) -> tuple[sg.TokenData, np.ndarray, sg.ConstraintSet]:
    """``_parallel_queries(n, 3, 2, seed)``'s draw with sequence 0 appended again (its query
    times ``query_scale``), selecting token :math:`(p + 1) \\bmod 3` there."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=2)
    X = rng.normal(size=(n, 3, 2))
    Z = np.tile(rng.normal(size=2), (n, 1)) * rng.uniform(0.5, 2.0, size=(n, 1))
    base = sg.TokenData(X, v=v, Z=Z)
    alpha = sg.optimal_tokens(base)
    data = sg.TokenData(np.concatenate([X, X[:1]]), v=v, Z=np.concatenate([Z, Z[:1] * query_scale]))
    alpha = np.append(alpha, (alpha[0] + 1) % 3)
    return data, alpha, sg.att_svm_constraints(data, alpha)


def _exact_rows(data: sg.TokenData, cs: sg.ConstraintSet, j: int) -> list[Fraction]:
    r"""vec(:math:`a_jb_j^\top`) of row ``j`` in exact rationals from the tokens and the query."""
    i, p, q = int(cs.seq[j]), int(cs.pref[j]), int(cs.comp[j])
    a = [
        Fraction(float(x)) - Fraction(float(y))
        for x, y in zip(data.X[i, p], data.X[i, q], strict=True)
    ]
    b = [Fraction(float(z)) for z in data.queries[i, int(cs.query[j])]]
    return [x * y for x in a for y in b]


def _null_space(columns: list[list[Fraction]]) -> list[list[Fraction]]:
    """A basis of the null space of the matrix with these columns (Gauss-Jordan, exact)."""
    rows = [list(r) for r in zip(*columns, strict=True)]
    ncol, pivots, r = len(columns), [], 0
    for col in range(ncol):
        piv = next((k for k in range(r, len(rows)) if rows[k][col] != 0), None)
        if piv is None:
            continue
        rows[r], rows[piv] = rows[piv], rows[r]
        rows[r] = [x / rows[r][col] for x in rows[r]]
        for k in range(len(rows)):
            if k != r and rows[k][col] != 0:
                rows[k] = [x - rows[k][col] * y for x, y in zip(rows[k], rows[r], strict=True)]
        pivots.append(col)
        r += 1
    basis = []
    for free in (c for c in range(ncol) if c not in pivots):
        vec = [Fraction(0)] * ncol
        vec[free] = Fraction(1)
        for k, col in enumerate(pivots):
            vec[col] = -rows[k][free]
        basis.append(vec)
    return basis


def _assert_exact_farkas(data: sg.TokenData, cs: sg.ConstraintSet, farkas: np.ndarray) -> None:
    r"""``farkas`` is a Farkas vector of the exact rows, or the correctly rounded one: on its
    support the exact null space of :math:`[\mathrm{vec}(a_jb_j^\top)]_j` (from the tokens)
    is one vector, of one sign, with :math:`c^\top\lambda = 1` after scaling, and
    ``farkas`` is its float rounding."""
    support = np.flatnonzero(farkas)
    assert support.size >= 2 and farkas.min() >= 0.0 and np.all(cs.kind[support] == 0)
    columns = [_exact_rows(data, cs, int(j)) for j in support]
    null = _null_space(columns)
    assert len(null) == 1  # a vertex: the exact Farkas vector on this support is unique
    c = [Fraction(float(cs.rhs[j])) for j in support]
    ctl = sum(x * y for x, y in zip(c, null[0], strict=True))
    assert ctl != 0
    lam = [x / ctl for x in null[0]]  # c^T lam = 1 exactly
    assert all(x > 0 for x in lam)
    np.testing.assert_array_equal(farkas[support], [float(x) for x in lam])  # rounded
    total = [sum(w * col[t] for w, col in zip(lam, columns, strict=True)) for t in range(4)]
    assert total == [0, 0, 0, 0]


@pytest.mark.parametrize(
    ("n", "seed"), [(100, 0), (500, 0), (500, 1), (2000, 0), (2000, 1), (2000, 2), (2000, 3)]
)
def test_row_and_its_negation_are_proved_infeasible_exactly(n: int, seed: int) -> None:
    """Before: ``INFEASIBLE_INACCURATE``, proof None. Now ``INFEASIBLE``, proved, with a
    Farkas vector on the two opposite rows, checked in exact rationals from the tokens."""
    data, _, cs = _row_and_negation(n, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no InaccurateSolutionWarning
        res = check_feasibility(cs)
    assert res.status is Status.INFEASIBLE and res.proof == "exact", res.message
    assert res.point is None and res.residual == 0.0
    lam = res.farkas
    support = np.flatnonzero(lam)
    # the two rows: sequence 0 and its copy, the same two tokens swapped
    assert sorted(cs.seq[support]) == [0, n]
    assert {(int(cs.pref[j]), int(cs.comp[j])) for j in support} == {
        (int(cs.pref[support[0]]), int(cs.comp[support[0]])),
        (int(cs.comp[support[0]]), int(cs.pref[support[0]])),
    }
    rows = {int(j): _exact_rows(data, cs, int(j)) for j in support}
    weights = {int(j): Fraction(float(lam[j])) for j in support}
    total = [sum(weights[j] * rows[j][t] for j in rows) for t in range(4)]
    assert total == [0, 0, 0, 0]  # sum_j lam_j a_j b_j^T = 0 exactly
    assert all(w >= 0 for w in weights.values())
    assert sum(weights[j] * Fraction(float(cs.rhs[j])) for j in rows) > 0


@pytest.mark.parametrize("norm", ["nuc", "fro"])
@pytest.mark.parametrize(("n", "seed"), [(500, 0), (2000, 3)])
def test_att_svm_answers_infeasible_with_an_exact_farkas_vector(
    n: int, seed: int, norm: str
) -> None:
    """Before: ``att_svm`` answered ``INFEASIBLE_INACCURATE`` on these rows, both norms."""
    data, alpha, cs = _row_and_negation(n, seed)
    res = sg.att_svm(data, alpha, norm=norm)
    assert res.status is Status.INFEASIBLE and res.proof == "exact", res.message
    assert res.W is None and res.farkas is not None
    _assert_exact_farkas(data, cs, res.farkas)


@pytest.mark.parametrize(("n", "seed"), [(100, 0), (2000, 0)])
def test_scaled_negation_is_proved_on_a_vertex_of_the_lp_support(n: int, seed: int) -> None:
    """The copy's query times 3 (rounded: not an exact multiple of the other's), so no two
    rows are opposite; the exact null space of the LP's support has a vertex that is a Farkas
    vector (5 rows). Before: ``INFEASIBLE_INACCURATE``, proof None."""
    data, _, cs = _row_and_negation(n, seed, query_scale=3.0)
    res = check_feasibility(cs)
    assert res.status is Status.INFEASIBLE and res.proof == "exact", res.message
    _assert_exact_farkas(data, cs, res.farkas)


def test_opposite_rows_pair_each_row_with_the_largest_bound_opposite_to_it(monkeypatch):
    """Rows 0 and 2 have the same float row (c = -5 and 1), row 1 is their negation (c = 1):
    ``_opposite_rows`` paired row 1 with the first of its class only, row 0, whose sum
    -5 + 1 <= 0 is no candidate, and missed (1, 2), a Farkas vector (1/2, 1/2) (review of
    66d89c6). With the LP over every row off, only this search can prove it."""
    from svmgeo.constraints import pair_constraints
    from svmgeo.solvers import FeasibilityResult, _exact

    X = np.array([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 2.0]]))
    zero = np.zeros(3, dtype=int)
    rows = (np.array([0, 1, 0]), np.array([1, 0, 1]))
    cs = pair_constraints(data, zero, zero, *rows, rhs=np.array([-5.0, 1.0, 1.0]))
    assert [(j, k) for j, k, _ in _exact._opposite_rows(cs)] == [(1, 2)]
    monkeypatch.setattr(_exact, "_ALL_ROWS", 0)
    bogus = FeasibilityResult(
        feasible=False,
        status=Status.INFEASIBLE,
        message="infeasible",
        constraints=cs,
        farkas=np.array([1.0, 0.0, 0.0]),
    )
    out = _exact.prove_verdict(bogus)
    assert out.status is Status.INFEASIBLE and out.proof == "exact", out.message
    lam = [Fraction(x) for x in out.farkas]
    assert lam == [0, Fraction(1, 2), Fraction(1, 2)]
    # exactly: sum_j lam_j a_j b_j^T = 0 and c^T lam = 1 > 0, from the tokens
    a = [
        [Fraction(p) - Fraction(q) for p, q in zip(X[0, i], X[0, j], strict=True)]
        for i, j in zip(*rows, strict=True)
    ]
    z = [Fraction(1), Fraction(2)]
    assert (
        sum(lam[r] * a[r][u] * z[w] for r in range(3) for u in range(2) for w in range(2) if u == w)
        == 0
    )
    assert all(sum(lam[r] * a[r][u] for r in range(3)) == 0 for u in range(2))
    assert sum(lam[r] * Fraction(c) for r, c in enumerate((-5.0, 1.0, 1.0))) == 1


def test_opposite_rows_weigh_bounds_near_float64s_range_in_rationals():
    """c = 1.5e308 twice sums to inf in floats: 1/inf = 0 was no candidate (it wasted a
    try). Session 60 (P3): the weights are computed in rationals, 1/(3e308) each, subnormal
    and nonzero, so the pair is a candidate (and proved: test_exact_s60.py,
    -k float_weights_overflowed)."""
    from svmgeo.constraints import pair_constraints
    from svmgeo.solvers import _exact

    X = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 2.0]]))
    zero = np.zeros(2, dtype=int)
    cs = pair_constraints(
        data, zero, zero, np.array([0, 1]), np.array([1, 0]), rhs=np.array([1.5e308, 1.5e308])
    )
    ((j, k, ratio),) = _exact._opposite_rows(cs)
    np.testing.assert_array_equal(
        _exact._pair_farkas(cs, j, k, ratio), [float(1 / (2 * Fraction(1.5e308)))] * 2
    )
