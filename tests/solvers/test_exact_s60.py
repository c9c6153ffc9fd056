# SPDX-License-Identifier: BSD-3-Clause
"""Exact Farkas proofs on rows opposite up to a positive factor; subnormal bounds (session 60, P).

Sequence 0 twice (``test_feasibility_audit59._row_and_negation``), the copy selecting another
token and its query scaled by ``t``: the rows :math:`(x_p - x_q)^\\top W z \\ge 1` and
:math:`(x_q - x_p)^\\top W\\,\\mathrm{fl}(tz) \\ge 1`. Where :math:`\\mathrm{fl}(tz) = tz`
exactly (t a power of two; t = 3 where the rounding happens to be exact), the second row is
:math:`-t` times the first, infeasible with :math:`\\lambda = (t, 1)/(1 + t)`. Before (main,
bf3d1c6): ``INFEASIBLE_INACCURATE``, proof None (the search for opposite rows knew t = 1
only). Where :math:`\\mathrm{fl}(3z) \\ne 3z` the rows are no exact multiples, and at
(500, seed 1) the rows are feasible in exact arithmetic (an exact point, checked here): the
undecided answer stays. Every Farkas vector and point is checked in exact rationals from the
tokens and queries (Python ``Fraction``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
from svmgeo import ProblemError
from svmgeo.constraints import EQUALITY, MARGIN, pair_constraints
from svmgeo.solvers import FeasibilityResult, Status, check_feasibility

from .test_feasibility_audit59 import _exact_rows, _row_and_negation

_LARGEST = Fraction(float(np.finfo(np.float64).max))


def _assert_farkas_identity(
    cs: sg.ConstraintSet, row: Callable[[int], list[Fraction]], lam
) -> None:
    r""":math:`\lambda \ge 0` on margin rows, :math:`\sum_j\lambda_j\,\mathrm{vec}(a_jb_j^\top)
    = 0` and :math:`c^\top\lambda > 0`, in Fractions (``row(j)``: row j's exact entries)."""
    support = [int(j) for j in np.flatnonzero(lam)]
    weights = {j: Fraction(float(lam[j])) for j in support}
    assert all(weights[j] >= 0 for j in support if cs.kind[j] == MARGIN)
    entries = {j: row(j) for j in support}
    total = [sum(weights[j] * entries[j][t] for j in support) for t in range(cs.d**2)]
    assert total == [0] * cs.d**2
    assert sum(weights[j] * Fraction(float(cs.rhs[j])) for j in support) > 0


def _hand_rows(X, Z, pairs, rhs, kind=0) -> tuple[sg.ConstraintSet, list[list[Fraction]]]:
    """Rows (query k, tokens p, q) of one sequence, and their exact entries."""
    data = sg.TokenData(np.asarray(X, dtype=float)[None], Z=np.asarray(Z, dtype=float)[None])
    k, p, q = (np.array(v) for v in zip(*pairs, strict=True))
    cs = pair_constraints(data, np.zeros_like(k), k, p, q, kind=kind, rhs=np.asarray(rhs))
    return cs, [_exact_rows(data, cs, j) for j in range(cs.N)]


def _hand_made(cs: sg.ConstraintSet, status: Status, lam) -> FeasibilityResult:
    """An infeasible verdict as a float solve might hand it to ``prove_verdict``."""
    farkas = None if lam is None else np.asarray(lam, dtype=float)
    return FeasibilityResult(
        feasible=False, status=status, message="hand-made", constraints=cs, farkas=farkas
    )


def _proved_from_a_bogus_farkas(cs: sg.ConstraintSet, lam, monkeypatch) -> FeasibilityResult:
    """prove_verdict of a hand-made INFEASIBLE verdict with only the search for opposite rows
    able to prove it (the LP over the exact null space of every row switched off)."""
    from svmgeo.solvers import _exact

    monkeypatch.setattr(_exact, "_ALL_ROWS", 0)
    return _exact.prove_verdict(_hand_made(cs, Status.INFEASIBLE, lam))


@pytest.mark.parametrize(
    ("scale", "n", "seed"),
    [
        (3.0, 500, 0),
        (2.0, 500, 0),
        (2.0, 500, 1),
        (2.0**-30, 100, 0),
        (2.0**-30, 500, 0),
        (2.0**-30, 2000, 1),
    ],
)
def test_a_row_and_a_scaled_negation_are_proved_infeasible_exactly(
    scale: float, n: int, seed: int
) -> None:
    """Before: ``INFEASIBLE_INACCURATE``, proof None, for each of these draws."""
    data, _, cs = _row_and_negation(n, seed, query_scale=scale)
    z, scaled = data.queries[0, 0], data.queries[n, 0]
    assert [Fraction(float(y)) for y in scaled] == [scale * Fraction(float(x)) for x in z]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no InaccurateSolutionWarning
        res = check_feasibility(cs)
    assert res.status is Status.INFEASIBLE and res.proof == "exact", res.message
    assert res.point is None and res.residual == 0.0
    support = np.flatnonzero(res.farkas)
    assert sorted(cs.seq[support]) == [0, n]  # the row and its scaled negation
    j, k = int(support[cs.seq[support] == 0][0]), int(support[cs.seq[support] == n][0])
    # lam_j / lam_k = t: lam_j a b^T + lam_k (-a)(t b)^T = 0
    assert Fraction(float(res.farkas[j])) / Fraction(float(res.farkas[k])) == Fraction(scale)
    _assert_farkas_identity(cs, lambda r: _exact_rows(data, cs, r), res.farkas)


@pytest.mark.parametrize("norm", ["nuc", "fro"])
def test_att_svm_answers_infeasible_on_a_scaled_negation(norm: str) -> None:
    """Before: ``att_svm`` answered ``INFEASIBLE_INACCURATE`` here, both norms."""
    data, alpha, cs = _row_and_negation(500, 0, query_scale=2.0)
    res = sg.att_svm(data, alpha, norm=norm)
    assert res.status is Status.INFEASIBLE and res.proof == "exact", res.message
    assert res.W is None and res.farkas is not None
    _assert_farkas_identity(cs, lambda r: _exact_rows(data, cs, r), res.farkas)


@pytest.mark.parametrize(
    ("rhs", "lam"),
    [
        ((1.0, 1.0), (Fraction(3, 4), Fraction(1, 4))),  # t = 3: (t, 1) / (t + 1)
        ((1.0, -2.5), (Fraction(6), Fraction(2))),  # y >= 1, -3y >= -2.5: (t, 1) / (t - 2.5)
        ((-0.25, 1.0), (Fraction(12), Fraction(4))),  # y >= -1/4, -3y >= 1: (t, 1) / (1 - t/4)
    ],
)
def test_the_bounds_of_a_scaled_pair_are_weighed_by_its_factor(rhs, lam, monkeypatch) -> None:
    r"""Rows :math:`a z^\top` and :math:`-a(3z)^\top` (3z exact): with :math:`y = a^\top W z`,
    :math:`y \ge c_0` and :math:`-3y \ge c_1`, infeasible iff :math:`3c_0 + c_1 > 0`, with
    :math:`\lambda = (3, 1)/(3c_0 + c_1)`. The second bound pair: :math:`c_0 + c_1 < 0`, so a
    pairing blind to the factor would reject it. Before: undecided."""
    X, Z = [[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [3.0, 6.0]]
    cs, rows = _hand_rows(X, Z, [(0, 0, 1), (1, 1, 0)], rhs)
    out = _proved_from_a_bogus_farkas(cs, [1.0, 0.0], monkeypatch)
    assert out.status is Status.INFEASIBLE and out.proof == "exact", out.message
    assert [Fraction(float(x)) for x in out.farkas] == list(lam)
    _assert_farkas_identity(cs, rows.__getitem__, out.farkas)


@pytest.mark.parametrize("rhs", [(1.0, -3.5), (-0.5, 1.5), (-1.0, 3.0)])
def test_a_scaled_pair_whose_bounds_meet_is_no_candidate(rhs) -> None:
    r""":math:`3c_0 + c_1 \le 0`: :math:`y = c_0` meets both rows exactly (checked in
    Fractions), so no Farkas vector exists on the pair and none is tried, also where
    :math:`c_0 + c_1 > 0` (the bound of two rows opposite without a factor). A guard (main
    pairs none of these rows either)."""
    from svmgeo.solvers import _exact

    X, Z = [[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [3.0, 6.0]]
    cs, _ = _hand_rows(X, Z, [(0, 0, 1), (1, 1, 0)], rhs)
    c0, c1 = (Fraction(c) for c in rhs)
    assert -3 * c0 >= c1  # y = c0 meets row 0 with equality, and row 1: -3 y >= c1
    assert _exact._opposite_rows(cs).tolist() == []


def test_equality_rows_scaled_by_a_negative_factor_are_paired(monkeypatch) -> None:
    """Two equality rows, the second -2 times the first (z and 2z): y = 1 and -2y = 1 are
    inconsistent, lam = (2, 1) / (2 * 1 + 1) exactly (rounded: fl(2/3) = 2 fl(1/3))."""
    X, Z = [[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]
    cs, rows = _hand_rows(X, Z, [(0, 0, 1), (1, 1, 0)], (1.0, 1.0), kind=EQUALITY)
    out = _proved_from_a_bogus_farkas(cs, [1.0, 0.0], monkeypatch)
    assert out.status is Status.INFEASIBLE and out.proof == "exact", out.message
    np.testing.assert_array_equal(out.farkas, [float(Fraction(2, 3)), float(Fraction(1, 3))])
    _assert_farkas_identity(cs, rows.__getitem__, out.farkas)


def test_rows_parallel_only_in_floats_are_no_farkas_pair() -> None:
    r"""fl(1 - 2^-60) = 1: the float rows :math:`(1, 1)z^\top` and :math:`(-1, -1)z^\top` are
    opposite, the exact ones :math:`(1 - 2^{-60}, 1)z^\top` and :math:`(-1, -1)z^\top` are
    not, and an exact point meets both (checked in Fractions). The float keys pick the pair;
    the exact test (:func:`_exact_ratio`) drops it."""
    from svmgeo.solvers import _exact

    X = [[1.0, 1.0], [2.0**-60, 0.0], [-1.0, -1.0], [0.0, 0.0]]
    cs, rows = _hand_rows(X, [[1.0, 2.0]], [(0, 0, 1), (0, 2, 3)], (1.0, 1.0))
    assert _exact._opposite_rows(cs).tolist() == [[0, 1]]
    exact = _exact.ExactRows.build(cs)
    assert _exact._exact_ratio(exact, 0, 1) is None
    assert _exact._farkas_from_opposite_rows(exact) is None
    # an exact point: W = u z^T / |z|^2 with u . (1 - 2^-60, 1) = 1, u . (-1, -1) = 1
    u = (Fraction(-2) * 2**60, Fraction(2) * 2**60 - 1)
    W = [u[i] * zj / 5 for i in range(2) for zj in (1, 2)]
    assert all(sum(w * g for w, g in zip(W, row, strict=True)) >= 1 for row in rows)


def _gordan_point(rows: list[list[Fraction]]) -> list[Fraction] | None:
    r"""An exact W with :math:`\mathrm{vec}(a_jb_j^\top)^\top W \ge 1` for every row, or None
    when 0 is in the convex hull of the rows (Gordan): a phase-1 simplex in Fractions on
    :math:`\sum_j\lambda_j g_j = 0,\ \sum_j\lambda_j = 1,\ \lambda \ge 0` (Bland's rule), whose
    optimal dual, where the optimum is positive, is :math:`-W` (up to the positive scale
    :math:`y_{\mathrm{last}}`)."""
    N, m = len(rows), len(rows[0]) + 1
    table = [
        [g[i] for g in rows] + [Fraction(int(i == r)) for r in range(m)] + [Fraction(0)]
        for i in range(m - 1)
    ]
    table.append([Fraction(1)] * N + [Fraction(int(r == m - 1)) for r in range(m)] + [Fraction(1)])
    basis = [N + i for i in range(m)]
    while True:
        cost = [Fraction(int(b >= N)) for b in basis]
        enter = next(
            (
                col
                for col in range(N + m)
                if col not in basis
                and int(col >= N) - sum(cost[i] * table[i][col] for i in range(m)) < 0
            ),
            None,
        )
        if enter is None:
            break
        ratios = [
            (table[i][-1] / table[i][enter], basis[i], i) for i in range(m) if table[i][enter] > 0
        ]
        r = min(ratios)[2]
        pivot = table[r][enter]
        table[r] = [x / pivot for x in table[r]]
        for i in range(m):
            if i != r and table[i][enter] != 0:
                f = table[i][enter]
                table[i] = [x - f * y for x, y in zip(table[i], table[r], strict=True)]
        basis[r] = enter
    if sum(table[i][-1] for i in range(m) if basis[i] >= N) == 0:
        return None
    cost = [Fraction(int(b >= N)) for b in basis]
    y = [sum(cost[r] * table[r][N + i] for r in range(m)) for i in range(m)]
    return [-v / y[-1] for v in y[:-1]]


def test_a_query_scaled_with_rounding_can_leave_the_rows_feasible_exactly() -> None:
    """fl(3 z) != 3 z at (500, seed 1): no exact multiple, and an exact point meets every
    row (found by an exact simplex, checked row by row in Fractions), so the float solve's
    INFEASIBLE cannot be proved: the undecided answer is the right one."""
    data, _, cs = _row_and_negation(500, 1, query_scale=3.0)
    z, scaled = data.queries[0, 0], data.queries[500, 0]
    ratios = {Fraction(float(y)) / Fraction(float(x)) for x, y in zip(z, scaled, strict=True)}
    assert len(ratios) == 2  # not parallel exactly
    rows = [_exact_rows(data, cs, j) for j in range(cs.N)]
    W = _gordan_point(rows)
    assert W is not None
    assert all(sum(w * g for w, g in zip(W, row, strict=True)) >= 1 for row in rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = check_feasibility(cs)
    assert res.status is not Status.INFEASIBLE and not (res.proof == "exact" and not res.feasible)


@pytest.mark.parametrize("rhs", [(5e-324, 0.0), (5e-324, 5e-324), (1e-310, 0.0)])
@pytest.mark.parametrize("status", [Status.INFEASIBLE, Status.NUMERICAL_ERROR])
def test_a_farkas_vector_beyond_float64_is_undecided_not_an_overflow(rhs, status) -> None:
    r"""A row :math:`a^\top Wz \ge c_0` and its negation :math:`\ge c_1` with
    subnormal bounds: the only Farkas vector, :math:`(1, 1)/(c_0 + c_1)`, is beyond float64
    (checked in Fractions). ``check_feasibility`` refuses the bounds; ``prove_verdict`` on a
    hand-made verdict raised OverflowError (``_farkas_in_null_space``'s scale
    :math:`2^{1074}`, ``_farkas_on_support``'s rounding) and now answers undecided."""
    from svmgeo.solvers import _exact

    X, Z = [[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0]]
    cs, rows = _hand_rows(X, Z, [(0, 0, 1), (0, 1, 0)], rhs)
    assert [a + b for a, b in zip(*rows, strict=True)] == [0] * 4  # a row and its negation
    assert 1 / (Fraction(rhs[0]) + Fraction(rhs[1])) > _LARGEST
    with pytest.raises(ProblemError, match="rhs"):
        check_feasibility(cs)
    assert _exact._farkas_in_null_space(_exact.ExactRows.build(cs), np.arange(2)) is None
    hand = _hand_made(cs, status, np.ones(2) if status is Status.INFEASIBLE else None)
    out = _exact.prove_verdict(hand)
    assert out.proof is None and not out.feasible
    assert out.status is (
        Status.INFEASIBLE_INACCURATE if status is Status.INFEASIBLE else Status.NUMERICAL_ERROR
    )
    if status is Status.INFEASIBLE:
        assert out.message.startswith("undecided")
