# SPDX-License-Identifier: BSD-3-Clause
"""``att_svm`` / ``solve_svm(norm="nuc")`` on rows that Clarabel answers first (session 59,
task N; issue 25).

On the ``bench_svm_nuclear.py --parallel-queries`` rows at (n, T, d) = (2000, 3, 2) (4000
margin rows, :math:`\\min(r_1, r_2) = 1`) the SVM's feasibility check spent more in its
Phase-1 LP (HiGHS on 4000 rows, about 0.025 s, ad hoc) than Clarabel's SDP, which
``solve_nuclear`` now runs first there (``_sdp_first``). Now the SVM runs that SDP first and
the check proves its certified W a feasible point before any LP: with every Phase-1 LP of the
check made to raise, the SVM still answers, OPTIMAL and proved exactly (before: the LP ran,
and raised). Objectives are compared with ``solve_nuclear`` and with
the naive full-matrix model by cvxpy + Clarabel (``test_nuclear_audit57._oracle``), an
independent oracle; the certificate is recomputed from the definitions and the feasible
point's margins in exact rationals from the tokens. Rows that take the old way (infeasible
rows, copies of rows, rows far from unit size) keep their verdicts and objectives.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.constraints import rows_without_tokens
from svmgeo.solvers import Status, farkas_residual
from svmgeo.solvers._lowrank import solve_lowrank
from svmgeo.solvers._nuclear import solve_nuclear

from .test_nuclear_audit56 import _parallel_queries, assert_certificate_from_definitions
from .test_nuclear_audit57 import _oracle


def _parallel_data(n: int, T: int, d: int, seed: int) -> sg.TokenData:
    """The data of ``_parallel_queries(n, T, d, seed)``: the same draw, as a dataset."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=d)
    X = rng.normal(size=(n, T, d))
    Z = np.tile(rng.normal(size=d), (n, 1)) * rng.uniform(0.5, 2.0, size=(n, 1))
    return sg.TokenData(X, v=v, Z=Z)


def _without_phase1_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every Phase-1 LP of the feasibility check raise: the dual LP on rank(G) rows, its
    primal fallback and the null-space LP (``svmgeo.solvers._feasibility``)."""
    import svmgeo.solvers._feasibility as feasibility_module

    def never(*args: Any, **kw: Any) -> None:
        raise AssertionError("the feasibility check ran its Phase-1 LP")

    for name in ("_solve_dual_lp", "_solve_lp", "_solve_null_lp"):
        monkeypatch.setattr(feasibility_module, name, never)


def _objective(res: sg.SVMResult) -> float:
    """The objective of an ``OPTIMAL`` ``res`` whose certificate passed."""
    assert res.status is Status.OPTIMAL and res.objective is not None, res.message
    assert res.certificate is not None and res.certificate.passed, res.message
    return res.objective


def _exact_margins_positive(data: sg.TokenData, cs: sg.ConstraintSet, W: np.ndarray) -> bool:
    r"""Every :math:`(x_{ip} - x_{iq})^\top W z_i > 0` in exact rationals from the tokens
    (then a positive multiple of W meets every row :math:`\ge 1`)."""
    Wf = [[Fraction(float(w)) for w in row] for row in W]
    X, Z = data.X, data.queries[:, 0]
    for i, p, q in zip(cs.seq, cs.pref, cs.comp, strict=True):
        a = [Fraction(float(x)) - Fraction(float(y)) for x, y in zip(X[i, p], X[i, q], strict=True)]
        b = [Fraction(float(z)) for z in Z[i]]
        if sum(a[r] * Wf[r][s] * b[s] for r in range(len(a)) for s in range(len(b))) <= 0:
            return False
    return True


@pytest.mark.parametrize("seed", [0, 1])
def test_svm_answers_without_the_phase1_lp_on_clarabel_first_rows(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before (main, c20d809): the check's HiGHS LP ran on these rows (the monkeypatched LP
    raised in both ``att_svm`` and ``solve_svm``)."""
    data = _parallel_data(2000, 3, 2, seed)
    cs = _parallel_queries(2000, 3, 2, seed)
    np.testing.assert_array_equal(sg.att_svm_constraints(data, sg.optimal_tokens(data)).A, cs.A)
    np.testing.assert_array_equal(sg.att_svm_constraints(data, sg.optimal_tokens(data)).B, cs.B)
    alone = solve_nuclear(cs)  # before the LP is taken away: its own check may use it
    oracle = _oracle(cs)
    _without_phase1_lp(monkeypatch)
    results = [sg.att_svm(data, norm="nuc"), sg.solve_svm(cs, norm="nuc")]
    for res in results:
        assert res.proof == "exact", res.message
        np.testing.assert_allclose(_objective(res), _objective(alone), rtol=1e-6)
        np.testing.assert_allclose(_objective(res), oracle, rtol=1e-6)
        assert_certificate_from_definitions(cs, res)
        feas = res.extras["feasibility"]
        assert feas.feasible and feas.status is Status.OPTIMAL and feas.proof == "exact"
        assert np.einsum("ja,ab,jb->j", cs.A, feas.point, cs.B).min() >= 1.0 - 1e-12
    assert _exact_margins_positive(data, cs, results[0].extras["feasibility"].point)


@pytest.mark.parametrize(("n", "seed"), [(20, 0), (100, 1)])
def test_infeasible_rows_of_the_rule_keep_their_farkas_certificate(n: int, seed: int) -> None:
    """Sequence 0 twice, once selecting its optimal token p and once another token q: the
    rows :math:`(x_p - x_q)^\\top W z \\ge 1` and its negation. The SDP first finds no
    solution; the check decides as before, ``INFEASIBLE`` with a Farkas vector. (At n = 500
    the exact proof of the LP's Farkas vector fails, on main too: ``INFEASIBLE_INACCURATE``.)"""
    base = _parallel_data(n, 3, 2, seed)
    X = np.concatenate([base.X, base.X[:1]])
    data = sg.TokenData(X, v=base.v, Z=np.concatenate([base.queries[:, 0], base.queries[:1, 0]]))
    alpha = sg.optimal_tokens(base)
    alpha = np.append(alpha, (alpha[0] + 1) % 3)
    cs = sg.att_svm_constraints(data, alpha)
    for res in (sg.att_svm(data, alpha, norm="nuc"), sg.solve_svm(cs, norm="nuc")):
        assert res.status is Status.INFEASIBLE and res.W is None, res.message
        assert res.proof == "exact"
        lam = res.farkas
        assert lam is not None and lam.min() >= 0.0
        np.testing.assert_allclose(cs.rhs @ lam, 1.0)
        gram = np.einsum("j,ja,jb->ab", lam, cs.A, cs.B)  # sum_j lam_j a_j b_j^T
        np.testing.assert_allclose(gram, 0.0, atol=1e-10 * np.abs(lam).sum())
        assert farkas_residual(cs, lam) <= 1e-9
    assert solve_nuclear(cs).status is Status.INFEASIBLE


def _objective_agrees(cs: sg.ConstraintSet, data: sg.TokenData, expected: float) -> sg.SVMResult:
    """``att_svm`` and ``solve_svm`` on ``cs`` OPTIMAL, proved, certified, with the objective
    ``expected`` (rtol 1e-9); ``att_svm``'s result."""
    results = (sg.att_svm(data, norm="nuc"), sg.solve_svm(cs, norm="nuc"))
    for res in results:
        assert res.proof == "exact", res.message
        np.testing.assert_allclose(_objective(res), expected, rtol=1e-9)
    return results[0]


def test_copies_of_rows_keep_the_objective_of_solve_nuclear() -> None:
    """Every sequence twice (repeated sequences): the SVM solves the distinct rows, and
    ``solve_nuclear`` both the rows as given and the single copy, to the same optimum."""
    base = _parallel_data(500, 3, 2, seed=1)
    once = solve_nuclear(sg.att_svm_constraints(base, sg.optimal_tokens(base)))
    Z = np.concatenate([base.queries[:, 0]] * 2)
    data = sg.TokenData(np.concatenate([base.X, base.X]), v=base.v, Z=Z)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    assert cs.N == 2000
    twice = _objective(solve_nuclear(cs))
    np.testing.assert_allclose(twice, _objective(once), rtol=1e-9)
    assert_certificate_from_definitions(cs, _objective_agrees(cs, data, twice))


def test_rows_far_from_unit_size_keep_the_objective_of_solve_nuclear() -> None:
    """Keys times 1e-8 (the SVM solves rows scaled to unit size, and scales W back): the
    nuclear norm of the solution is 1e8 times ``solve_nuclear``'s on the unscaled rows."""
    base = _parallel_data(500, 3, 2, seed=2)
    unscaled = _objective(solve_nuclear(sg.att_svm_constraints(base, sg.optimal_tokens(base))))
    data = sg.TokenData(base.X * 1e-8, v=base.v, Z=base.queries[:, 0])
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    _objective_agrees(cs, data, unscaled * 1e8)


@pytest.mark.parametrize(("eps", "delta"), [(1e-3, 1e-8), (1e-2, 1e-8), (3e-3, 3e-9), (3e-4, 3e-9)])
def test_rows_infeasible_by_a_hair_stay_infeasible_after_clarabel_first(
    eps: float, delta: float
) -> None:
    r"""d = 2, N = 6 (inside ``_sdp_first``'s rule): :math:`W_{11} \ge 1`,
    :math:`-W_{11} + \epsilon W_{21} \ge 1` and :math:`-W_{21} \ge -K` with
    :math:`\epsilon K = 2 - \delta`, plus three random rows with right-hand side -10K.
    The first two give :math:`\epsilon W_{21} \ge 2 > \epsilon K`: infeasible, by the
    Farkas vector :math:`(1, 1, \epsilon, 0, 0, 0)/\delta` (checked below in exact
    rationals). Before (d6f1559): Clarabel ran before the float check and its certified W,
    which misses the third row by about 5e-9 relative, was kept: ``solve_nuclear`` and
    ``solve_lowrank`` said OPTIMAL where the check (and main, c20d809) proves INFEASIBLE."""
    K = (2 - delta) / eps
    e1, e2 = np.eye(2)
    rng = np.random.default_rng(0)
    A = np.array([e1, -e1 + eps * e2, -e2, *rng.normal(size=(3, 2))])
    B = np.array([e1, e1, e1, *rng.normal(size=(3, 2))])
    rhs = np.array([1.0, 1.0, -K, -10 * K, -10 * K, -10 * K])
    cs = rows_without_tokens(A, B, np.zeros(6, np.int8), rhs)
    # the oracle: sum_j lam_j a_j b_j^T = 0 and rhs . lam > 0 in exact rationals
    lam = [Fraction(1), Fraction(1), Fraction(eps), 0, 0, 0]
    fa = [[Fraction(float(x)) for x in a] for a in A]
    fb = [[Fraction(float(x)) for x in b] for b in B]
    gram = [
        [sum(lam[j] * fa[j][r] * fb[j][s] for j in range(6)) for s in range(2)] for r in range(2)
    ]
    assert gram == [[0, 0], [0, 0]]
    assert sum(lam[j] * Fraction(float(rhs[j])) for j in range(6)) > 0
    for res in (solve_nuclear(cs), solve_lowrank(cs, 1, seed=0)):
        assert res.status is Status.INFEASIBLE and res.W is None, res.message
        assert res.farkas is not None and res.farkas.min() >= 0.0
        # the float sum cancels terms of size about 2 / delta = 7e8 (times |y|): its rounding
        # alone is about 4 u / delta, 1.5e-7 relative at delta = 3e-9 (1.2e-7 was seen)
        np.testing.assert_allclose(cs.rhs @ res.farkas, 1.0, rtol=16 * 2.0**-53 / delta)
        assert farkas_residual(cs, res.farkas) <= 1e-9
