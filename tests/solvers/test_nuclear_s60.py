# SPDX-License-Identifier: BSD-3-Clause
"""``solve_nuclear`` on rows far from unit size, and ``att_svm(norm="nuc")`` on copies of rows
(session 60, task N).

Keys times 1e-8: ``solve_nuclear`` solved the rows as given, where the backends' absolute
tolerances gave uncertified answers (``OPTIMAL_INACCURATE``: a feasible W up to 24 % above the
optimum, or Clarabel's answer missing rows), while ``att_svm`` / ``solve_svm``, which rescale the
rows first, were right. It now solves on rows of unit size as they do. Objectives are compared
with the naive model :math:`\\min \\|W\\|_*` s.t. :math:`a_j^\\top W b_j \\ge 1` on the full
:math:`d \\times d` matrix, solved by cvxpy + Clarabel on the rows before the keys were scaled
(``test_nuclear_audit57._oracle``), an independent oracle: scaling the keys by :math:`s`
scales every :math:`a_j` by :math:`s` (self-attention: :math:`b_j` too), so the optimum by
:math:`1/s` (:math:`1/s^2`), up to the rounding of the scaled keys.
"""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import Status, check_feasibility
from svmgeo.solvers._nuclear import solve_nuclear

from .test_nuclear_audit56 import assert_certificate_from_definitions
from .test_nuclear_audit57 import _oracle

KEYS = 1e-8
"""The keys' scale: :math:`\\max|a|\\max|b|` about 1e-8 (cross-attention) or 1e-16
(self-attention), far outside the :math:`2^{\\pm 20}` band of ``unit_rows``."""


def _rows(data: sg.TokenData) -> sg.ConstraintSet:
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


def _tiny(
    n: int, T: int, d: int, seed: int, query: int | None
) -> tuple[sg.ConstraintSet, sg.ConstraintSet, float]:
    """The rows of ``random_data(n, T, d, seed, query)`` with keys times :data:`KEYS`, the rows
    of the same data unscaled (same optimal tokens), and the factor from the unscaled optimum
    to the scaled one."""
    data = sg.random_data(n, T, d, seed=seed, query=query)
    if query is None:
        tiny = sg.TokenData(data.X * KEYS, Y=data.Y, v=data.v, Z=data.queries[:, 0])
        factor = 1.0 / KEYS
    else:
        tiny = sg.TokenData(data.X * KEYS, Y=data.Y, v=data.v, query=query)
        factor = 1.0 / KEYS**2
    cs, plain = _rows(tiny), _rows(data)
    np.testing.assert_array_equal(cs.pref, plain.pref)  # the same rows, scaled
    np.testing.assert_array_equal(cs.comp, plain.comp)
    return cs, plain, factor


CASES = [
    pytest.param(3, 4, 6, 0, 0, id="self-3-4-6-seed0"),
    pytest.param(4, 5, 6, 1, 0, id="self-4-5-6-seed1"),
    pytest.param(6, 6, 8, 2, 0, id="self-6-6-8-seed2"),
    pytest.param(3, 4, 6, 2, None, id="cross-3-4-6-seed2"),
    pytest.param(4, 5, 6, 0, None, id="cross-4-5-6-seed0"),
    pytest.param(8, 8, 10, 1, None, id="cross-8-8-10-seed1"),
]


@pytest.mark.parametrize(("n", "T", "d", "seed", "query"), CASES)
def test_solve_nuclear_on_tiny_keys_is_the_optimum(
    n: int, T: int, d: int, seed: int, query: int | None
) -> None:
    """Before (main at bf3d1c6): ``OPTIMAL_INACCURATE`` on each case. Self-attention (rows
    of size 1e-16): both SDP backends called the feasible rows infeasible and the Frobenius
    bracket was returned, 8-21 % above the optimum; cross-attention: Clarabel's answer,
    uncertified, 2e-5 to 4e-4 relative off."""
    cs, plain, factor = _tiny(n, T, d, seed, query)
    res = solve_nuclear(cs)
    assert res.status is Status.OPTIMAL and res.certificate.passed, res.message
    assert res.extras["row_scale"] != 1.0  # solved on rows of unit size
    np.testing.assert_allclose(res.objective, _oracle(plain) * factor, rtol=1e-7)
    assert_certificate_from_definitions(cs, res)
    # the SVM, which rescales the same way, gives the same answer
    np.testing.assert_allclose(res.objective, sg.solve_svm(cs, norm="nuc").objective, rtol=1e-12)


@pytest.mark.parametrize("solver", ["clarabel", "scs"])
def test_each_backend_on_tiny_keys_is_the_optimum(solver: str) -> None:
    """A backend named explicitly solves the rows of unit size too."""
    cs, plain, factor = _tiny(4, 5, 6, 1, 0)
    res = solve_nuclear(cs, solver=solver)
    assert res.status is Status.OPTIMAL and res.certificate.passed, res.message
    np.testing.assert_allclose(res.objective, _oracle(plain) * factor, rtol=1e-7)
    assert_certificate_from_definitions(cs, res)


def test_a_verdict_on_tiny_keys_is_reused() -> None:
    """A feasibility verdict given on the caller's rows: a feasible one gives the optimum; an
    infeasible one answers ``INFEASIBLE`` with its Farkas vector, unchanged, on those rows."""
    cs, plain, factor = _tiny(4, 5, 6, 1, 0)
    verdict = check_feasibility(cs, exact=False)
    assert verdict.feasible, verdict.message
    res = solve_nuclear(cs, feasibility=verdict)
    assert res.status is Status.OPTIMAL and res.certificate.passed, res.message
    np.testing.assert_allclose(res.objective, _oracle(plain) * factor, rtol=1e-7)

    bad, _, _ = _tiny(10, 3, 3, 0, None)  # infeasible (the oracle below)
    verdict = check_feasibility(bad, exact=True)
    assert verdict.status is Status.INFEASIBLE, verdict.message
    for given in (verdict, None):
        res = solve_nuclear(bad, feasibility=given)
        assert res.status is Status.INFEASIBLE and res.W is None, res.message
        assert res.constraints is bad and res.farkas is not None
        if given is not None:
            assert res.farkas is verdict.farkas
        # from the definitions: lam >= 0, c^T lam = 1 > 0 and sum_j lam_j a_j b_j^T = 0, up
        # to rounding relative to the sum of the terms' sizes
        lam = res.farkas
        assert lam.min() >= 0.0
        np.testing.assert_allclose(bad.rhs @ lam, 1.0, rtol=1e-12)
        total = np.einsum("j,ja,jb->ab", lam, bad.A, bad.B)
        size = np.sum(lam * np.linalg.norm(bad.A, axis=1) * np.linalg.norm(bad.B, axis=1))
        assert np.linalg.norm(total) <= 1e-9 * size


def _parallel_data(n: int, T: int, d: int, seed: int, copies: int) -> sg.TokenData:
    """``benchmarks/bench_svm_nuclear.py --parallel-queries``'s rows (``_parallel_queries``),
    every sequence ``copies`` times."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=d)
    X = rng.normal(size=(n, T, d))
    Z = np.tile(rng.normal(size=d), (n, 1)) * rng.uniform(0.5, 2.0, size=(n, 1))
    return sg.TokenData(np.concatenate([X] * copies), v=v, Z=np.concatenate([Z] * copies))


@pytest.mark.parametrize("copies", [2, 3])
def test_att_svm_on_copies_of_rows_runs_clarabel_once(
    monkeypatch: pytest.MonkeyPatch, copies: int
) -> None:
    """Rows inside the Clarabel-first rule with every sequence repeated: ``att_svm`` solves
    the distinct rows, by one Clarabel SDP. Before (main at bf3d1c6) it ran the SDP on every
    row first and threw that answer away (two runs). The optimum is cvxpy + Clarabel's on
    the distinct rows, and the multipliers are shared by the copies."""
    from svmgeo.solvers import _backends

    runs: list[int] = []
    solve = _backends.ClarabelBackend.solve_conic.__func__  # type: ignore[attr-defined]

    def counted(cls: type, *args: object, **kw: object) -> object:
        runs.append(1)
        return solve(cls, *args, **kw)

    monkeypatch.setattr(_backends.ClarabelBackend, "solve_conic", classmethod(counted))
    data = _parallel_data(300, 3, 2, seed=4, copies=copies)
    once = _rows(_parallel_data(300, 3, 2, seed=4, copies=1))
    res = sg.att_svm(data, norm="nuc")
    assert res.status is Status.OPTIMAL and res.proof == "exact", res.message
    assert res.extras["identical_rows"] == (copies - 1) * once.N
    assert len(runs) == 1
    monkeypatch.undo()
    np.testing.assert_allclose(res.objective, _oracle(once), rtol=1e-7)
    cs = res.constraints
    assert_certificate_from_definitions(cs, res)
    # the copies of a row share its multiplier equally
    np.testing.assert_array_equal(
        res.dual.reshape(copies, -1), np.tile(res.dual[: once.N], (copies, 1))
    )


def _contradictory(keys: float, bounds: float) -> sg.ConstraintSet:
    """The rows of ``random_data(10, 3, 3, seed=0)`` (cross-attention), keys times ``keys``,
    with the first row's opposite added (pref and comp swapped: :math:`a_j^\\top W b_j \\ge 1`
    and :math:`-a_j^\\top W b_j \\ge 1`, infeasible by construction), bounds times
    ``bounds``."""
    data = sg.random_data(10, 3, 3, seed=0)
    tiny = sg.TokenData(data.X * keys, Y=data.Y, v=data.v, Z=data.queries[:, 0])
    cs = _rows(tiny)
    rows = np.column_stack([cs.seq, cs.query, cs.pref, cs.comp])
    rows = np.vstack([rows, rows[0, [0, 1, 3, 2]]])  # the first row, pref and comp swapped
    return sg.pair_constraints(tiny, *rows.T, rhs=bounds)


@pytest.mark.parametrize(
    ("keys", "bounds"),
    [
        pytest.param(KEYS, 1.0, id="keys-1e-8"),
        pytest.param(1.0, 1e-10, id="rhs-1e-10"),
        pytest.param(KEYS, 1e10, id="keys-1e-8-rhs-1e10"),
    ],
)
def test_the_feasibility_verdict_of_rescaled_infeasible_rows_is_on_the_callers_rows(
    keys: float, bounds: float
) -> None:
    """Infeasible rows far from unit size, no verdict given: ``solve_nuclear`` decides on the
    rows of unit size, and its ``extras["feasibility"]`` is the verdict on the caller's rows
    (as on main, which checked those rows), with a Farkas vector meeting the definitions there
    (:math:`\\lambda \\ge 0`, :math:`c^\\top\\lambda = 1`, :math:`\\sum_j \\lambda_j a_j b_j^\\top
    = 0`). Before (s60-n at 2af4c72): the unit rows' verdict, its Farkas vector off by the
    bounds' scale (:math:`c^\\top\\lambda` = 1.16e-10 for bounds times 1e-10)."""
    bad = _contradictory(keys, bounds)
    res = solve_nuclear(bad)
    assert res.status is Status.INFEASIBLE and res.W is None, res.message
    assert res.extras["row_scale"] != 1.0 or res.extras["rhs_scale"] != 1.0  # rescaled
    feas = res.extras["feasibility"]
    assert feas.constraints is bad and feas.status is Status.INFEASIBLE, feas.message
    for lam in (res.farkas, feas.farkas):
        assert lam.min() >= 0.0
        np.testing.assert_allclose(bad.rhs @ lam, 1.0, rtol=1e-12)
        total = np.einsum("j,ja,jb->ab", lam, bad.A, bad.B)
        size = np.sum(lam * np.linalg.norm(bad.A, axis=1) * np.linalg.norm(bad.B, axis=1))
        assert np.linalg.norm(total) <= 1e-9 * size
