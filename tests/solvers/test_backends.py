# SPDX-License-Identifier: BSD-3-Clause
"""Backend adapters as data: status maps, svec layouts, wrapped backend exceptions."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import Status, _backends, _frobenius, solve_frobenius
from svmgeo.solvers._backends import (
    CONIC_BACKENDS,
    ClarabelBackend,
    CvxpyBackend,
    HiGHSBackend,
    SCSBackend,
)

ALMOST_UNBOUNDED = [
    (ClarabelBackend, "AlmostDualInfeasible"),
    (SCSBackend, -6),
    (CvxpyBackend, "unbounded_inaccurate"),
]


@pytest.mark.parametrize(("backend", "native"), ALMOST_UNBOUNDED)
def test_an_almost_unbounded_verdict_is_inaccurate_not_exact(backend, native):
    status = backend.status(native)
    assert status is Status.UNBOUNDED_INACCURATE
    assert status.is_inaccurate and not status.has_solution


@pytest.mark.parametrize("backend", [ClarabelBackend, SCSBackend, CvxpyBackend, HiGHSBackend])
def test_unknown_native_codes_are_solver_errors_and_no_almost_code_is_exact(backend):
    assert backend.status("never-heard-of-it") is Status.SOLVER_ERROR
    assert backend.status(12345) is Status.SOLVER_ERROR
    for native, status in backend.STATUS_MAP.items():
        if "almost" in str(native).lower() or "inaccurate" in str(native).lower():
            assert status.is_inaccurate, (backend.name, native)


@pytest.mark.parametrize("backend", list(CONIC_BACKENDS.values()))
@pytest.mark.parametrize("s", [1, 2, 5])
def test_svec_index_is_a_bijection_onto_the_triangle_in_the_declared_order(backend, s):
    p, q = np.tril_indices(s)
    pos = backend.svec_index(p, q, s)
    np.testing.assert_array_equal(np.sort(pos), np.arange(s * (s + 1) // 2))
    np.testing.assert_array_equal(backend.svec_index(q, p, s), pos)  # symmetric
    # the declared layout: stacking by columns the upper (row <= col) or lower triangle
    rows, cols = np.triu_indices(s) if backend.svec == "upper-columns" else np.tril_indices(s)
    order = np.lexsort((rows, cols))
    np.testing.assert_array_equal(
        backend.svec_index(rows[order], cols[order], s), np.arange(pos.size)
    )


def test_the_layouts_differ_so_the_adapter_not_the_name_decides():
    assert ClarabelBackend.svec != SCSBackend.svec
    s = 3
    assert not np.array_equal(
        ClarabelBackend.svec_index(np.array([0]), np.array([2]), s),
        SCSBackend.svec_index(np.array([0]), np.array([2]), s),
    )


def test_is_installed_does_not_import():
    import sys

    before = "cvxpy" in sys.modules
    assert CvxpyBackend.is_installed()
    assert ("cvxpy" in sys.modules) == before


def test_a_highs_exception_is_a_solver_error_with_its_cause(monkeypatch):
    import scipy.optimize

    def broken(*args, **kwargs):
        raise RuntimeError("HiGHS exploded")

    monkeypatch.setattr(scipy.optimize, "linprog", broken)
    with pytest.raises(sg.SolverError, match="HiGHS failed on the dual Phase-1 LP") as info:
        HiGHSBackend.linprog(np.zeros(2), "the dual Phase-1 LP", bounds=[(0, 1)] * 2)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_frobenius_message_names_the_method_that_failed_and_why(monkeypatch):
    # d small, many rows: the compressed primal, where only the QP methods run (no Gram
    # fast path, no warm start)
    data = sg.random_data(10, 6, 3, seed=1)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data, ties="first"))
    assert sg.check_feasibility(cs).feasible

    def no_ipm(geo, *, solver_tol, max_iter):
        return np.full(geo.cs.N, np.nan), 3, False

    def clarabel_panics(*args, **kwargs):
        raise sg.SolverError("Clarabel failed on the Frobenius QP: PanicException: boom")

    monkeypatch.setattr(_frobenius, "interior_point", no_ipm)
    monkeypatch.setattr(_backends.ClarabelBackend, "run", classmethod(clarabel_panics))
    res = solve_frobenius(cs)
    assert res.extras["representation"] == "primal"
    assert res.status is Status.MAX_ITER and not res.success
    assert "the interior-point method: non-finite multipliers after 3 iterations" in res.message
    assert "Clarabel's QP: Clarabel failed on the Frobenius QP: PanicException: boom" in res.message
    assert "diverged" not in res.message
    assert res.extras["clarabel_error"].startswith("Clarabel failed")


def test_import_svmgeo_loads_no_backend_package():
    # the backends are imported when a solve needs them, never by `import svmgeo`
    import subprocess
    import sys

    code = (
        "import sys, svmgeo\n"
        "loaded = [m for m in ('cvxpy', 'clarabel', 'scs', 'highspy') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
