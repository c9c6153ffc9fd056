# SPDX-License-Identifier: BSD-3-Clause
"""The compiled small Frobenius path gives the Python path's results (issue 25)."""

from __future__ import annotations

import dataclasses
import pickle
import time
import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

import svmgeo as sg
from svmgeo.solvers import _feasibility, _geometry, solve_svm
from svmgeo.solvers import _frobenius_small as small
from svmgeo.solvers._geometry import RowGeometry, _gram, cho_factor, cho_solve


def _att(n: int, T: int, d: int, seed: int, **kw: Any) -> sg.ConstraintSet:
    data = sg.random_data(n, T, d, seed=seed, **kw)
    return sg.att_svm_constraints(data, sg.optimal_tokens(data, ties="first"))


def _tied(seed: int, *, proportional: bool = False) -> sg.ConstraintSet:
    """Two identical competing tokens per sequence: identical rows, a singular G; with
    ``proportional``, x_q' = 2 x_q - x_alpha instead: rows a and 2a, a singular G, no copies."""
    base = sg.random_data(6, 6, 10, seed=seed)
    X = base.X.copy()
    alpha = sg.optimal_tokens(base)
    for i in range(X.shape[0]):
        q = X[i, (alpha[i] + 1) % 6]
        X[i, (alpha[i] + 2) % 6] = 2.0 * q - X[i, alpha[i]] if proportional else q
    return sg.att_svm_constraints(sg.TokenData(X, Z=base.Z, v=base.v, Y=base.Y), alpha)


def _fortran(cs: sg.ConstraintSet) -> sg.ConstraintSet:
    """The same rows held in Fortran order (the kernels' BLAS calls read C-ordered copies)."""
    A, B = np.asfortranarray(cs.A), np.asfortranarray(cs.B)
    A.flags.writeable = B.flags.writeable = False
    return dataclasses.replace(cs, A=A, B=B)


CASES = {
    "(12, 10, 20)": lambda: _att(12, 10, 20, 0),
    "(20, 10, 20) seed 1": lambda: _att(20, 10, 20, 1),
    "(6, 8, 10)": lambda: _att(6, 8, 10, 2),
    "n_queries 3": lambda: _att(6, 6, 12, 3, n_queries=3),
    "causal, every query": lambda: _att(4, 6, 10, 4, query="all", mask="causal"),
    "rows without tokens": lambda: dataclasses.replace(_att(8, 6, 12, 5), tokens=None),
    "rows in Fortran order": lambda: _fortran(_att(8, 6, 12, 8)),
    "low d (some infeasible)": lambda: _att(12, 6, 3, 6),
    "tied tokens (singular G)": lambda: _tied(7),
    "proportional rows (singular G)": lambda: _tied(7, proportional=True),
}


def _python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """No set is small enough for the compiled route: the Python path decides everything."""
    monkeypatch.setattr(_geometry, "COMPILED_UP_TO", 0)


def _same_results(a: sg.SVMResult, b: sg.SVMResult) -> None:
    """Every field equal, W, λ, margins, the objective and the point to round-off."""
    for name in ("status", "message", "solver", "n_iter", "rank", "proof", "norm"):
        assert getattr(a, name) == getattr(b, name), name
    assert (a.certificate is None) == (b.certificate is None)
    if a.certificate is not None and b.certificate is not None:
        assert a.certificate.passed == b.certificate.passed
    for name in ("W", "dual", "margins", "farkas"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12 * np.abs(y).max(), err_msg=name)
    if a.objective is not None:
        np.testing.assert_allclose(a.objective, b.objective, rtol=1e-13)
    fa, fb = a.extras.get("feasibility"), b.extras.get("feasibility")
    assert (fa is None) == (fb is None)
    assert {k for k in a.extras} == {k for k in b.extras}
    for key in set(a.extras) - {"feasibility"}:
        assert a.extras[key] == b.extras[key], key
    if fa is not None and fb is not None:
        for name in ("feasible", "status", "message", "solver", "proof", "residual"):
            assert getattr(fa, name) == getattr(fb, name), name
        assert set(fa.extras) == set(fb.extras)
        assert fa.extras.get("exact_rows") == fb.extras.get("exact_rows")
        if fa.point is not None:
            scale = np.abs(fb.point).max()
            np.testing.assert_allclose(fa.point, fb.point, rtol=1e-12, atol=1e-12 * scale)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("exact", [True, False])
def test_the_compiled_route_gives_the_python_paths_result(
    name: str, exact: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    cs = CASES[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = solve_svm(cs, exact=exact)
        _python_path(monkeypatch)
        python = solve_svm(cs, exact=exact)
    _same_results(compiled, python)


def test_the_compiled_route_is_taken_where_it_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    cs = _att(12, 10, 20, 0)
    calls: list[str] = []
    for name in ("tight_verdict", "polished"):
        real = getattr(small, name)

        def spy(*args: Any, _real: Any = real, _name: str = name) -> Any:
            out = _real(*args)
            calls.append(f"{_name}: {'taken' if out is not None else 'declined'}")
            return out

        monkeypatch.setattr(small, name, spy)
    res = solve_svm(cs)
    assert res.success and res.proof == "exact"
    assert calls == ["tight_verdict: taken", "polished: taken"]
    calls.clear()
    solve_svm(_tied(7, proportional=True))  # G singular: the Python path decides and solves
    assert calls == ["tight_verdict: declined", "polished: declined"]
    calls.clear()
    solve_svm(_tied(7))  # copies of rows: decided once, then solved, on the distinct rows
    assert calls == ["tight_verdict: declined", "tight_verdict: taken", "polished: taken"]


def test_the_adopted_gram_factor_and_tight_point_are_the_python_paths() -> None:
    cs = _att(20, 10, 20, 1)
    geo = RowGeometry(cs)
    assert geo.compiled
    assert small.tight_verdict(geo, True, 0.0) is not None
    G = _gram(cs)
    np.testing.assert_allclose(geo.gram(), G, rtol=1e-15)
    np.testing.assert_array_equal(geo.gram(), geo.gram().T)
    lam = cho_solve(cho_factor(G), np.ones(cs.N))
    np.testing.assert_allclose(geo.tight(), lam, rtol=1e-10)
    np.testing.assert_allclose(G @ geo.tight(), np.ones(cs.N), atol=1e-11)


def test_rows_outside_the_common_case_are_left_to_the_python_path() -> None:
    cs = _att(8, 6, 12, 5)
    for rows in (
        dataclasses.replace(cs, rhs=np.full(cs.N, 2.0)),  # c_j != 1
        dataclasses.replace(cs, A=np.vstack([cs.A[:-1], np.zeros(cs.d)])),  # a zero row
    ):
        assert small.tight_verdict(RowGeometry(rows), True, 0.0) is None
        assert small.polished(RowGeometry(rows), 1e-8, 0.0, {}) is None


def test_the_compiled_route_stays_below_the_gradient_route() -> None:
    # from GRADIENT_FROM rows the Python path's feasibility check takes another route first
    assert _geometry.COMPILED_UP_TO < _feasibility.GRADIENT_FROM


def test_the_solves_polish_runs_in_the_feasibility_call_with_the_same_bits() -> None:
    """solve_svm asks the compiled check to polish (``polish_tol``): the answer kept on the
    geometry is the one polish_and_certify gives on its own, bit for bit, and is taken once."""
    cs = _att(20, 10, 20, 1)
    asked = RowGeometry(cs)
    asked.polish_tol = 1e-8
    assert small.tight_verdict(asked, True, 0.0) is not None
    kept = asked.__dict__[small._POLISH_KEY]
    assert kept[0] == 1e-8 and kept[1][0] > 0
    alone = RowGeometry(cs)
    assert small.tight_verdict(alone, True, 0.0) is not None
    assert small._POLISH_KEY not in alone.__dict__  # not asked: no polish
    A, Q, inv, grouped = small._rows(cs)
    fresh = small.polish_and_certify(
        A, Q, inv, grouped, cs._margin_rows, cs.rhs, alone.G, alone.tight(), 1e-8, small._ULPS
    )
    assert fresh[0] == kept[1][0]
    for x, y in zip(fresh[1:], kept[1][1:], strict=True):
        np.testing.assert_array_equal(x, y)
    res = small.polished(asked, 1e-8, 0.0, {})
    assert res is not None and res.success
    np.testing.assert_array_equal(res.W, fresh[1])
    assert small._POLISH_KEY not in asked.__dict__  # taken once
    other = RowGeometry(cs)  # asked at another tolerance: polished computes its own
    other.polish_tol = 1e-6
    assert small.tight_verdict(other, True, 0.0) is not None
    res6 = small.polished(other, 1e-8, 0.0, {})
    assert res6 is not None
    np.testing.assert_array_equal(res6.W, fresh[1])


@pytest.mark.parametrize("exact", [True, False])
def test_the_compiled_route_times_its_decision_and_its_proof(exact: bool) -> None:
    cs = _att(12, 10, 20, 0)
    start = time.perf_counter()
    feas = sg.check_feasibility(cs, exact=exact)
    total = time.perf_counter() - start
    assert feas.solver == "svmgeo-cholesky"
    assert 0.0 < feas.solve_time <= total
    if exact:
        assert 0.0 < feas.extras["exact_seconds"] <= total
        assert feas.solve_time + feas.extras["exact_seconds"] <= total
    else:
        assert "exact_seconds" not in feas.extras


def test_sets_from_tokens_rows_and_pickles_share_one_compiled_signature() -> None:
    """Rows built from tokens, the same rows without their tokens (the exact proof reads
    cs.A then), and either set pickled and loaded again (its cached arrays come back
    read-only) are solved by one specialization of the kernel, with the same results: four
    specializations before (~7 s of compiling each on its first use)."""
    solve_svm(CASES["(12, 10, 20)"]())
    compiled = set(small.tight_route.signatures)
    for name in ("(12, 10, 20)", "rows without tokens", "n_queries 3"):
        cs = CASES[name]()
        for exact in (True, False):
            first = solve_svm(cs, exact=exact)
            _same_results(solve_svm(pickle.loads(pickle.dumps(cs)), exact=exact), first)
    assert set(small.tight_route.signatures) == compiled
