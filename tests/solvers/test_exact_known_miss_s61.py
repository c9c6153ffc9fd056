# SPDX-License-Identifier: BSD-3-Clause
"""A well-conditioned infeasible instance whose exact Farkas proof svmgeo misses (session 61).

Found by the property suite's random ("dev") profile: ``test_scaling_the_bounds_scales_the_optimum``
on ``build_case("causal", "collinear", n=2, T=4, d=2, K=4, seed=1952799)``, selection
``[[0, 0, 1, 2], [0, 0, 1, 2]]``: the float LP's max-min margin is -7.7e-4, far from 0, yet
every norm answers INFEASIBLE_INACCURATE ("its Farkas vector is not exact on its support and
no exact point was found"). An exact Farkas vector exists, on rows (0, 3, 4, 7, 9), with row
0's weight 4.1e-18 of the largest (a vertex search in rationals over subsets of d² + 1 rows,
checked below): the float LP's support drops that row, and the search on its support misses
the vertex. Undecided is honest (never a wrong verdict); a proof is what is missing.
"""

from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.testing import build_case

ALPHA = np.array([[0, 0, 1, 2], [0, 0, 1, 2]])


def _data() -> sg.TokenData:
    return build_case("causal", "collinear", n=2, T=4, d=2, K=4, seed=1952799).data


def _exact_rows() -> list[list[Fraction]]:
    cs = sg.att_svm_constraints(_data(), ALPHA)
    return [
        [Fraction(float(x)) * Fraction(float(y)) for x in cs.A[j] for y in cs.B[j]]
        for j in range(cs.N)
    ]


def test_the_instance_is_infeasible_in_exact_arithmetic() -> None:
    """y >= 0 on rows (0, 3, 4, 7, 9) with sum_j y_j a_j b_j^T = 0 exactly and c^T y > 0
    (every bound is 1): the one-dimensional null space of those five rows, in rationals."""
    rows = _exact_rows()
    support = (0, 3, 4, 7, 9)
    # solve sum_{j != 9} y_j M_j = -M_9 exactly (y_9 = 1): 4 equations, 4 unknowns
    A = [[rows[j][t] for j in support[:-1]] + [-rows[support[-1]][t]] for t in range(4)]
    for c in range(4):  # Gauss-Jordan in rationals
        p = next(i for i in range(c, 4) if A[i][c] != 0)
        A[c], A[p] = A[p], A[c]
        A[c] = [x / A[c][c] for x in A[c]]
        for i in range(4):
            if i != c and A[i][c] != 0:
                A[i] = [x - A[i][c] * y for x, y in zip(A[i], A[c], strict=True)]
    y = [A[i][4] for i in range(4)] + [Fraction(1)]
    assert all(v > 0 for v in y)
    assert all(sum(y[k] * rows[j][t] for k, j in enumerate(support)) == 0 for t in range(4))
    assert float(y[0] / max(y)) < 1e-17  # the weight the float LP cannot see


@pytest.mark.parametrize("norm", ["fro", "nuc", ("lp", 1.5)])
def test_svmgeo_never_calls_it_feasible(norm: object) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        res = sg.att_svm(_data(), ALPHA, norm=norm)  # type: ignore[arg-type]
    assert res.status in (sg.Status.INFEASIBLE, sg.Status.INFEASIBLE_INACCURATE), res.message
    assert res.W is None


@pytest.mark.xfail(
    strict=True,
    reason="known miss (session 61): the exact Farkas vertex has a weight of 4e-18 on a row "
    "the float LP's support drops; remove this mark when svmgeo proves it",
)
def test_svmgeo_proves_it_infeasible() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        res = sg.att_svm(_data(), ALPHA)
    assert res.status is sg.Status.INFEASIBLE


def test_no_smaller_support_proves_it() -> None:
    """No exact Farkas vector on 4 rows or fewer (so the vertex above is a minimal proof)."""
    rows = _exact_rows()
    for k in range(1, 5):
        for S in itertools.combinations(range(len(rows)), k):
            M = np.array([[float(rows[j][t]) for j in S] for t in range(4)])
            if np.linalg.matrix_rank(M) == k:  # independent in floats: no null vector at all
                continue
            # dependent in floats: check that no exact nonnegative null vector exists
            assert not _has_nonnegative_null_vector([rows[j] for j in S])


def _has_nonnegative_null_vector(cols: list[list[Fraction]]) -> bool:
    m = len(cols)
    A = [[cols[j][t] for j in range(m)] for t in range(4)]
    pivots: list[int] = []
    r = 0
    for c in range(m):
        p = next((i for i in range(r, 4) if A[i][c] != 0), None)
        if p is None:
            continue
        A[r], A[p] = A[p], A[r]
        A[r] = [x / A[r][c] for x in A[r]]
        for i in range(4):
            if i != r and A[i][c] != 0:
                A[i] = [x - A[i][c] * y for x, y in zip(A[i], A[r], strict=True)]
        pivots.append(c)
        r += 1
    free = [c for c in range(m) if c not in pivots]
    if len(free) != 1:
        return bool(free)  # a larger null space: not decided here (none occurs)
    y = [Fraction(0)] * m
    y[free[0]] = Fraction(1)
    for i, c in enumerate(pivots):
        y[c] = -A[i][free[0]]
    return all(v >= 0 for v in y) or all(v <= 0 for v in y)
