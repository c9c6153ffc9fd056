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
undecided answer stays. Review of 3bff3d2: rows parallel in floats only no longer hide an
exact pair (rows are grouped by exact direction), a zero row that asks for something is
proved alone, equality rows parallel with a positive factor are paired too, and the undecided
message names float64's range only where a search stopped there. Every Farkas vector and
point is checked in exact rationals from the tokens and queries (Python ``Fraction``).
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
    assert _exact._opposite_rows(cs) == []


def test_equality_rows_scaled_by_a_negative_factor_are_paired(monkeypatch) -> None:
    """Two equality rows, the second -2 times the first (z and 2z): y = 1 and -2y = 1 are
    inconsistent, lam = (2, 1) / (2 * 1 + 1) exactly (rounded: fl(2/3) = 2 fl(1/3))."""
    X, Z = [[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]
    cs, rows = _hand_rows(X, Z, [(0, 0, 1), (1, 1, 0)], (1.0, 1.0), kind=EQUALITY)
    out = _proved_from_a_bogus_farkas(cs, [1.0, 0.0], monkeypatch)
    assert out.status is Status.INFEASIBLE and out.proof == "exact", out.message
    np.testing.assert_array_equal(out.farkas, [float(Fraction(2, 3)), float(Fraction(1, 3))])
    _assert_farkas_identity(cs, rows.__getitem__, out.farkas)


def test_rows_parallel_only_in_floats_are_no_farkas_pair(monkeypatch) -> None:
    r"""fl(1 - 2^-60) = 1: the float rows :math:`(1, 1)z^\top` and :math:`(-1, -1)z^\top` are
    opposite, the exact ones :math:`(1 - 2^{-60}, 1)z^\top` and :math:`(-1, -1)z^\top` are
    not, and an exact point meets both (checked in Fractions). ``prove_verdict`` answers
    undecided, never INFEASIBLE, its message without a word of float64's range (no search
    stopped there). A guard of main's behaviour (main tried the pair and its exact proof
    failed; now the exact directions drop it first), through ``prove_verdict``; 3bff3d2 fails
    it by its message, which named float64's range always."""
    X = [[1.0, 1.0], [2.0**-60, 0.0], [-1.0, -1.0], [0.0, 0.0]]
    cs, rows = _hand_rows(X, [[1.0, 2.0]], [(0, 0, 1), (0, 2, 3)], (1.0, 1.0))
    np.testing.assert_array_equal(cs.A[0], -cs.A[1])  # opposite in floats
    out = _proved_from_a_bogus_farkas(cs, [1.0, 0.0], monkeypatch)
    assert out.status is Status.INFEASIBLE_INACCURATE and out.proof is None
    assert out.message.startswith("undecided") and "float64" not in out.message
    # an exact point: W = u z^T / |z|^2 with u . (1 - 2^-60, 1) = 1, u . (-1, -1) = 1
    u = (Fraction(-2) * 2**60, Fraction(2) * 2**60 - 1)
    W = [u[i] * zj / 5 for i in range(2) for zj in (1, 2)]
    assert all(sum(w * g for w, g in zip(W, row, strict=True)) >= 1 for row in rows)


def _float_key(b: np.ndarray) -> tuple[float, ...]:
    """``b`` divided by its entry of largest magnitude, in floats."""
    return tuple(b / b[np.argmax(np.abs(b))] + 0.0)


def _shadowed(n: int, seed: int) -> tuple[sg.TokenData, sg.ConstraintSet]:
    r"""``_row_and_negation(n, seed)``'s draw (sequence 0 appended, selecting
    :math:`q = (p + 1) \bmod 3`: a row and its exact negation) with sequence 0 appended twice
    more: selecting q with query :math:`\mathrm{fl}(s_2z)`, and p with
    :math:`\mathrm{fl}(s_3z)`; :math:`s_2, s_3` the first scales of
    ``linspace(0.3, 0.9, 6001)`` whose rounded query has z's float direction
    (:func:`_float_key`) but is no exact multiple of z (nor :math:`\mathrm{fl}(s_3z)` of
    :math:`\mathrm{fl}(s_2z)`): rows parallel to the first pair in floats only, with larger
    bounds per unit (the review's ``shadow.py``)."""
    data, alpha, _ = _row_and_negation(n, seed)
    z = data.queries[0, 0]

    def multiple(x: np.ndarray, y: np.ndarray) -> bool:
        ratios = {Fraction(float(b)) / Fraction(float(a)) for a, b in zip(x, y, strict=True)}
        return len(ratios) == 1

    scaled = [z * s for s in np.linspace(0.3, 0.9, 6001)]
    scaled = [y for y in scaled if _float_key(y) == _float_key(z) and not multiple(z, y)]
    y2 = scaled[0]
    y3 = next(y for y in scaled[1:] if not multiple(y2, y))
    X = np.concatenate([data.X, data.X[:1], data.X[:1]])
    Z = np.concatenate([data.queries[:, 0], y2[None], y3[None]])
    longer = sg.TokenData(X, v=data.v, Z=Z)
    p = int(alpha[0])
    return longer, sg.att_svm_constraints(longer, np.append(alpha, [(p + 1) % 3, p]))


@pytest.mark.parametrize(("n", "seed"), [(500, 0), (500, 1)])
def test_a_row_and_its_negation_are_found_beside_rows_parallel_in_floats_only(n, seed) -> None:
    """Review of 3bff3d2 (``shadow.py``): each row was paired with one partner of its float
    group (the largest bound per unit), here a copy whose query is parallel in floats only;
    its exact test failed and the exact negation in the same group was never tried:
    ``INFEASIBLE_INACCURATE``, proof None (main: ``INFEASIBLE``, exact). Now the rows of a
    float group are grouped by their exact directions, and the row and its negation are
    proved infeasible (checked in Fractions from the tokens)."""
    data, cs = _shadowed(n, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = check_feasibility(cs)
    assert res.status is Status.INFEASIBLE and res.proof == "exact", res.message
    _assert_farkas_identity(cs, lambda r: _exact_rows(data, cs, r), res.farkas)


@pytest.mark.parametrize(
    ("kind", "rhs"),
    [
        ((EQUALITY, EQUALITY), (1.0, 1.0)),  # y = 1 and 2y = 1
        ((MARGIN, EQUALITY), (1.0, 1.0)),  # y >= 1 and 2y = 1
        ((EQUALITY, MARGIN), (1.0, 3.0)),  # y = 1 and 2y >= 3
    ],
)
def test_equality_rows_parallel_with_a_positive_factor_are_paired(kind, rhs, monkeypatch):
    r"""Rows :math:`a z^\top` and :math:`a (2z)^\top`, at least one an equality row, whose
    bounds on :math:`y = a^\top Wz` contradict each other: with
    :math:`a_1b_1^\top = 2\,a_0b_0^\top` the only Farkas vector on them is
    :math:`(-2, 1)/(c_1 - 2c_0)` (closed form), negative on an equality row. Before (main and
    3bff3d2): undecided, only rows of opposite signs were paired."""
    X, Z = [[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]
    cs, rows = _hand_rows(X, Z, [(0, 0, 1), (1, 0, 1)], rhs, kind=np.array(kind))
    assert [2 * x for x in rows[0]] == rows[1]
    scale = 1 / (Fraction(rhs[1]) - 2 * Fraction(rhs[0]))
    out = _proved_from_a_bogus_farkas(cs, [1.0, 0.0], monkeypatch)
    assert out.status is Status.INFEASIBLE and out.proof == "exact", out.message
    assert [Fraction(float(x)) for x in out.farkas] == [-2 * scale, scale]
    _assert_farkas_identity(cs, rows.__getitem__, out.farkas)


@pytest.mark.parametrize(
    ("kind", "rhs"),
    [
        ((MARGIN, MARGIN), (1.0, 2.0)),  # one zero row, c = 2 > 0
        ((MARGIN, EQUALITY), (1.0, -0.5)),  # one zero equality row, c = -0.5 != 0
        ((MARGIN, MARGIN, MARGIN), (1.0, 0.5, -0.25)),  # two zero rows: main paired them
    ],
)
def test_a_zero_row_that_asks_for_something_is_proved(kind, rhs, monkeypatch) -> None:
    r"""Row 1 with :math:`a_1 = x_0 - x_2 = 0` and :math:`c_1 > 0` (margin) or
    :math:`\ne 0` (equality): :math:`e_1/c_1` is a Farkas vector. Review of 3bff3d2: zero
    rows were no longer paired, so ``prove_verdict`` on a hand-made verdict left undecided
    what main proved by pairing two zero rows (the last case; main proves neither of the
    first two, where one zero row has no partner). Now the search tries
    ``zero_row_farkas``'s vector first."""
    X = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
    pairs = [(0, 0, 1), (0, 0, 2), (0, 2, 0)][: len(rhs)]
    cs, rows = _hand_rows(X, [[1.0, 2.0]], pairs, rhs, kind=np.array(kind))
    assert all(x == 0 for row in rows[1:] for x in row)
    out = _proved_from_a_bogus_farkas(cs, np.eye(len(rhs))[0], monkeypatch)
    assert out.status is Status.INFEASIBLE and out.proof == "exact", out.message
    _assert_farkas_identity(cs, rows.__getitem__, out.farkas)


def test_a_zero_row_that_asks_for_nothing_proves_nothing(monkeypatch) -> None:
    """A zero margin row with c = -1 beside a nonzero row: feasible exactly (W = e_1 z^T / 5
    meets row 0 with 1, checked in Fractions), so no Farkas proof. A guard (main too)."""
    X = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
    cs, rows = _hand_rows(X, [[1.0, 2.0]], [(0, 0, 1), (0, 0, 2)], (1.0, -1.0))
    W = [Fraction(1, 5), Fraction(2, 5), Fraction(0), Fraction(0)]
    assert [sum(w * g for w, g in zip(W, row, strict=True)) for row in rows] == [1, 0]
    out = _proved_from_a_bogus_farkas(cs, [1.0, 0.0], monkeypatch)
    assert out.feasible or out.proof is None, out.message


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


@pytest.mark.parametrize("scale", [3.0, 7.0])
def test_a_query_scaled_with_rounding_can_leave_the_rows_feasible_exactly(scale) -> None:
    """fl(t z) != t z at (500, seed 1) for t = 3 and 7: no exact multiple, and an exact point
    meets every row (found by an exact simplex, checked row by row in Fractions), so the float
    solve's INFEASIBLE cannot be proved: the undecided answer is the right one."""
    data, _, cs = _row_and_negation(500, 1, query_scale=scale)
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


@pytest.mark.parametrize(("n", "seed"), [(100, 0), (500, 0), (500, 1)])
def test_a_query_scaled_with_rounding_can_leave_the_rows_infeasible_exactly(n, seed) -> None:
    r"""fl(0.1 z) != 0.1 z at these draws: no exact multiple, yet 0 is in the convex hull of
    the exact rows (the exact simplex finds no point; Gordan), so a Farkas vector exists,
    on at most :math:`d^2 + 1 = 5` rows (Carathéodory), which no search of svmgeo finds
    yet. A guard: whatever ``check_feasibility`` answers is no feasible verdict, and a proved
    INFEASIBLE carries a Farkas vector that checks in Fractions."""
    data, _, cs = _row_and_negation(n, seed, query_scale=0.1)
    z, scaled = data.queries[0, 0], data.queries[n, 0]
    ratios = {Fraction(float(y)) / Fraction(float(x)) for x, y in zip(z, scaled, strict=True)}
    assert len(ratios) == 2  # not parallel exactly
    rows = [_exact_rows(data, cs, j) for j in range(cs.N)]
    assert _gordan_point(rows) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = check_feasibility(cs)
    assert not res.feasible, res.message
    if res.proof == "exact":
        _assert_farkas_identity(cs, rows.__getitem__, res.farkas)


@pytest.mark.parametrize("rhs", [(5e-324, 0.0), (5e-324, 5e-324), (1e-310, 0.0)])
@pytest.mark.parametrize("status", [Status.INFEASIBLE, Status.NUMERICAL_ERROR])
def test_a_farkas_vector_beyond_float64_is_undecided_not_an_overflow(rhs, status) -> None:
    r"""A row :math:`a^\top Wz \ge c_0` and its negation :math:`\ge c_1` with
    subnormal bounds: the only Farkas vector, :math:`(1, 1)/(c_0 + c_1)`, is beyond float64
    (checked in Fractions). ``check_feasibility`` refuses bounds that are all this small (its
    Farkas vector would pass float64's range; beside a bound of ordinary size it takes them:
    ``test_the_zero_row_with_the_largest_bound_is_blamed_beside_a_subnormal_one``);
    ``prove_verdict`` on a
    hand-made verdict raised OverflowError (``_farkas_in_null_space``'s scale
    :math:`2^{1074}`, ``_farkas_on_support``'s rounding) and now answers undecided, its
    message saying that a search stopped at float64's range (and only then: see
    ``test_rows_parallel_only_in_floats_are_no_farkas_pair``)."""
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
        assert out.message.startswith("undecided") and "beyond float64's range" in out.message


def test_the_zero_row_with_the_largest_bound_is_blamed_beside_a_subnormal_one() -> None:
    r"""120 rows (random bounds in [-2, -1]) and two zero rows, tokens 0 and 5 equal, with
    bounds :math:`c = 5\cdot10^{-324}` (first) and 6: :math:`e_{121}/6` is a Farkas vector,
    :math:`1/c_{120}` overflows. Review of 72dcae3: the search tried the first unmet zero
    row only and left the verdict undecided (``INFEASIBLE_INACCURATE``) where main proved it
    by pairing both zero rows; ``check_feasibility`` blamed row 120 (main too, with an
    overflow warning). Now row 121 is blamed and proved."""
    rng = np.random.default_rng(0)
    T, d, N = 6, 3, 120
    X = rng.normal(size=(1, T, d))
    X[0, 5] = X[0, 0]
    data = sg.TokenData(X, Z=rng.normal(size=(1, 1, d)))
    p = np.r_[np.zeros(N, int), [0, 0]]
    q = np.r_[rng.integers(1, 5, size=N), [5, 5]]
    rhs = np.r_[rng.uniform(-2, -1, size=N), [5e-324, 6.0]]
    zeros = np.zeros(N + 2, int)
    cs = pair_constraints(data, zeros, zeros, p, q, kind=MARGIN, rhs=rhs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = check_feasibility(cs)
    assert res.status is Status.INFEASIBLE and res.proof == "exact", res.message
    assert "row 121" in res.message and "row 120" not in res.message
    _assert_farkas_identity(cs, lambda j: _exact_rows(data, cs, j), res.farkas)


def test_a_pair_whose_float_bounds_tie_is_proved_exactly(monkeypatch) -> None:
    r"""Rows :math:`3w \ge 1` and :math:`-w \ge -\mathrm{fl}(1/3)` (d = 1): infeasible
    exactly, :math:`1/3 > \mathrm{fl}(1/3)`, while the float bounds per unit tie (both
    :math:`\mathrm{fl}(1/3)`) and the float weights :math:`(t, 1)/(t c_0 + c_1)` divide by
    :math:`\mathrm{fl}(1/3) - \mathrm{fl}(1/3) = 0`. Review of 72dcae3: the group was
    skipped (undecided, main too); now tied groups are candidates and the weights are
    computed in rationals: :math:`\lambda = (1, 3)/(1 - 3\,\mathrm{fl}(1/3)) = (1, 3)\cdot
    2^{54}` (checked in Fractions)."""
    third = 1 / 3
    cs, rows = _hand_rows([[1.0], [0.0]], [[3.0], [1.0]], [(0, 0, 1), (1, 1, 0)], (1.0, -third))
    assert rows == [[3], [-1]] and 3 * Fraction(third) < 1
    out = _proved_from_a_bogus_farkas(cs, [1.0, 0.0], monkeypatch)
    assert out.status is Status.INFEASIBLE and out.proof == "exact", out.message
    s = 1 - 3 * Fraction(third)
    assert [Fraction(float(x)) for x in out.farkas] == [1 / s, 3 / s]
    _assert_farkas_identity(cs, rows.__getitem__, out.farkas)


@pytest.mark.parametrize(
    ("pairs", "rhs", "lam"),
    [
        ([(0, 0, 1), (0, 1, 0)], (5e-324, 0.0), [1.0, 0.0]),  # the pair search's weights
        ([(0, 0, 1), (0, 1, 0)], (5e-324, 0.0), [1.0, 1.0]),
        ([(0, 0, 1), (0, 0, 2)], (0.25, 5e-324), [1.0, 0.0]),  # zero row 1: 1/c_1 = inf
    ],
)
def test_every_search_stopped_at_float64s_range_says_so(pairs, rhs, lam, monkeypatch) -> None:
    r"""A row and its negation with bounds :math:`(5\cdot10^{-324}, 0)` (Farkas vector
    :math:`(1, 1)/c_0`), or a zero row with a subnormal bound (:math:`e_1/c_1`): beyond
    float64, so undecided, and the message says why. Review of 72dcae3: the pair search and
    the zero row stopped there without the note (only the exact solves had it)."""
    X = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
    cs, _ = _hand_rows(X, [[1.0, 2.0]], pairs, rhs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the float solve's own overflow
        out = _proved_from_a_bogus_farkas(cs, lam, monkeypatch)
    assert out.status is Status.INFEASIBLE_INACCURATE and out.proof is None
    assert "beyond float64's range" in out.message, out.message


def test_a_pair_whose_float_weights_overflowed_is_proved(monkeypatch) -> None:
    r"""A row and its negation, both with :math:`c = 1.5\cdot10^{308}`: :math:`c_0 + c_1`
    overflows in floats, so the float weights were :math:`1/\infty = 0` and the pair no
    candidate (main: undecided). Computed in rationals the weights are
    :math:`1/(3\cdot10^{308})`, subnormal and nonzero, and the pair is proved."""
    X, Z = [[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0]]
    cs, rows = _hand_rows(X, Z, [(0, 0, 1), (0, 1, 0)], (1.5e308, 1.5e308))
    out = _proved_from_a_bogus_farkas(cs, [1.0, 0.0], monkeypatch)
    assert out.status is Status.INFEASIBLE and out.proof == "exact", out.message
    assert out.farkas.tolist() == [float(1 / (2 * Fraction(1.5e308)))] * 2
    _assert_farkas_identity(cs, rows.__getitem__, out.farkas)
