# SPDX-License-Identifier: BSD-3-Clause
r"""LOT enumeration on masked multi-query data whose tokens are collinear up to rounding.

In the "subspace" variant of svmgeo.testing every token lies on one line, so for most
selections the rows :math:`a_j^\top W b_j \ge 1` disagree in sign and Att-SVM(α) would be
infeasible in exact arithmetic on the *intended* data. The float tokens are off the line by
rounding, so the rank-one matrices :math:`a_j b_j^\top` of the float rows are linearly
independent: every selection is feasible (each row can be made tight), with
:math:`\|W^{mm}\|_F \sim 1/\epsilon`. No Farkas vector exists, and no double-precision
:math:`W` can be certified (the rounding of each computed margin exceeds the margin): the
solve fails, and the selection's LOT verdict is undecided. The enumeration must report it
(``.failed``, the warning), never count it as a proved non-LOT, and stay exact on the rest.
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.testing import (
    assert_exact_point,
    build_case,
    conditioning,
    exact_rows,
    is_support_lot,
    oracle_att_svm,
    verdict,
    well_conditioned,
)

# the failing example of tests/properties/test_selections.py::
# test_lot_enumeration_contains_opt_and_only_lots
REPRO = {"n": 2, "T": 2, "d": 2, "K": 2, "seed": 2}
# further masked K > 1 cases with failed solves (found by a sweep over small sizes and seeds)
# and one generic case (every selection decided)
MASKED = [
    ("subspace", REPRO),
    ("subspace", {"n": 2, "T": 3, "d": 3, "K": 2, "seed": 0}),
    ("collinear", {"n": 2, "T": 3, "d": 3, "K": 2, "seed": 0}),
    ("generic", {"n": 3, "T": 2, "d": 2, "K": 2, "seed": 0}),
]


def _dot(u: list[Fraction], v: list[Fraction]) -> Fraction:
    return sum((x * y for x, y in zip(u, v, strict=True)), Fraction(0))


def _rank_one_matrices_independent(cs: sg.ConstraintSet) -> bool:
    r"""Are the :math:`a_j b_j^\top` of the float rows linearly independent, exactly?

    Rank of the Gram matrix :math:`G_{jk} = (a_j^\top a_k)(b_j^\top b_k)` by Gaussian
    elimination in :class:`fractions.Fraction`. Full rank ⇒ :math:`G\mu = \mathbf 1` has a
    solution and :math:`W = \sum_j \mu_j a_j b_j^\top` makes every row tight: feasible, and no
    Farkas vector (:math:`\sum_j \lambda_j a_j b_j^\top = 0`, :math:`\mathbf 1^\top\lambda = 1`)
    can exist.
    """
    rows = exact_rows(cs)
    M = [[_dot(a, a2) * _dot(b, b2) for a2, b2 in rows] for a, b in rows]
    n = len(M)
    for c in range(n):
        p = next((r for r in range(c, n) if M[r][c] != 0), None)
        if p is None:
            return False
        M[c], M[p] = M[p], M[c]
        for r in range(c + 1, n):
            f = M[r][c] / M[c][c]
            M[r] = [x - f * y for x, y in zip(M[r], M[c], strict=True)]
    return True


def _selections(data: sg.TokenData) -> list[np.ndarray]:
    vis = np.asarray(data.visible)
    choices = [np.flatnonzero(vis[i, k]) for i in range(data.n) for k in range(data.K)]
    return [np.asarray(c).reshape(data.selection_shape) for c in itertools.product(*choices)]


def test_rounding_feasible_selections_are_reported_not_pruned() -> None:
    data = build_case("masked", "subspace", **REPRO).data
    with pytest.warns(sg.InaccurateSolutionWarning, match="failed") as caught:
        lots = sg.locally_optimal_selections(data)
    if lots.infeasible:  # examined, solve said infeasible, but not proved: reported too
        assert any(f"{lots.infeasible} unproved infeasible" in str(w.message) for w in caught)
    every = _selections(data)
    assert lots.total == len(every)
    assert lots.examined + lots.pruned == lots.total
    # every selection is feasible in exact arithmetic on the float rows (derived above), so
    # nothing may be pruned by a certificate or reported as a proved infeasibility
    for alpha in every:
        assert _rank_one_matrices_independent(sg.att_svm_constraints(data, alpha))
    assert lots.pruned == 0
    failed = {tuple(a.ravel()) for a in lots.failed}
    assert failed  # the reproducer: the solves of W^mm ~ 1/eps fail
    for alpha in lots.failed:
        cs = sg.att_svm_constraints(data, alpha)
        assert abs(conditioning(cs)) < 1e-12  # far beyond what a double-precision W certifies
        feas = sg.feasibility(data, alpha)  # proved feasible in exact arithmetic
        assert feas.feasible and feas.proof == "exact"
        assert_exact_point(cs, feas.point)
        with pytest.raises(sg.SolverError, match="could not be solved"):
            sg.is_locally_optimal(data, alpha)  # documented: the support tokens are undefined
    # an undecided selection is not listed as a LOT
    assert not failed & {tuple(a.ravel()) for a in lots.selections}


@pytest.mark.filterwarnings("ignore::svmgeo.InaccurateSolutionWarning")  # the brute force's
@pytest.mark.parametrize(("variant", "size"), MASKED, ids=[f"{v}-{s['seed']}" for v, s in MASKED])
def test_masked_enumeration_matches_brute_force_and_oracle(variant: str, size: dict) -> None:
    data = build_case("masked", variant, **size).data
    assert data.K > 1 and not np.all(np.asarray(data.visible))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lots = sg.locally_optimal_selections(data)
    listed = {tuple(a.ravel()) for a in lots.selections}
    failed = {tuple(a.ravel()) for a in lots.failed}
    unproved = lots.inaccurate + lots.infeasible + len(failed)
    # every verdict that is not a proof is reported, and only then
    assert any(issubclass(w.category, sg.InaccurateSolutionWarning) for w in caught) == (
        unproved > 0
    )
    assert variant != "generic" or unproved == 0
    # the rounding-dependent variants leave some verdict unproved; whether it is a failed
    # solve or an inaccurate one depends on the platform's rounding of the tokens (both
    # seen: failed on one CPU, inaccurate on another), so either counts here
    assert variant == "generic" or unproved > 0
    for alpha in _selections(data):
        key = tuple(int(x) for x in alpha.ravel())
        res = sg.att_svm(data, alpha)
        v = verdict(res)  # checks the proof; None only on an ill-conditioned problem
        if key in failed:  # undecided, though feasible by an exact proof (no Farkas vector)
            assert v is None and key not in listed
            feas = sg.feasibility(data, alpha)
            assert feas.feasible and feas.proof == "exact"
            assert_exact_point(feas.constraints, feas.point)
        if v is None:
            continue
        if v == "infeasible":
            assert key not in listed
            continue
        lot = is_support_lot(data, alpha, res, tol=1e-6)
        assert (key in listed) == lot, key
        if well_conditioned(res.constraints):
            # the naive cvxpy model agrees on the optimum and on the LOT verdict
            ref = oracle_att_svm(data, alpha)
            assert ref.feasible and ref.W is not None and ref.objective is not None
            np.testing.assert_allclose(np.linalg.norm(res.W), ref.objective, rtol=1e-5)
            assert is_support_lot(data, alpha, dataclasses.replace(res, W=ref.W), tol=1e-6) == lot
