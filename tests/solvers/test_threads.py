# SPDX-License-Identifier: BSD-3-Clause
"""BLAS threads: one inside the small dense solves, the caller's setting outside and above."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import svmgeo as sg
from svmgeo.solvers import _api, _feasibility, _threads


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def two_threads():
    """The caller's setting: 2 BLAS threads where a library allows it; yields the counts."""
    if not _blas_threads():
        pytest.skip("no BLAS library visible to threadpoolctl")
    with threadpool_limits(limits=2, user_api="blas"):
        counts = _blas_threads()
        if 2 not in counts:
            pytest.skip("no BLAS library here runs more than one thread")
        yield counts


def _probe(monkeypatch) -> list[list[int]]:
    """Record the BLAS thread counts each time a solver builds the rows' geometry."""
    seen: list[list[int]] = []
    real = _feasibility.RowGeometry

    def recording(cs):
        seen.append(_blas_threads())
        return real(cs)

    monkeypatch.setattr(_feasibility, "RowGeometry", recording)
    monkeypatch.setattr(_api, "RowGeometry", recording)
    return seen


def test_a_small_solve_runs_with_one_blas_thread_and_restores_the_setting(two_threads, monkeypatch):
    seen = _probe(monkeypatch)
    data = sg.random_data(4, 4, 6, seed=0)
    res = sg.att_svm(data)
    assert res.success
    assert seen and all(n == 1 for counts in seen for n in counts), seen
    assert _blas_threads() == two_threads


def test_above_the_threshold_the_callers_setting_is_kept(two_threads, monkeypatch):
    seen = _probe(monkeypatch)
    monkeypatch.setattr(_threads, "ONE_THREAD_UP_TO", 0)
    cs = sg.att_svm_constraints(sg.random_data(4, 4, 6, seed=0), np.zeros(4, dtype=int))
    sg.check_feasibility(cs)
    assert seen == [two_threads]


def test_nested_limits_restore_the_outer_setting(two_threads):
    with _threads.blas_threads(10):
        assert set(_blas_threads()) == {1}
        with _threads.blas_threads(10):
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {1}
    assert _blas_threads() == two_threads


_FRESH = """
import sys
import svmgeo as sg
res = sg.att_svm(sg.random_data(4, 4, 6, seed=0))
scanned = "threadpoolctl" in sys.modules
from threadpoolctl import threadpool_info
counts = sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})
print(res.success, scanned, counts)
"""


def _fresh_process(**env: str) -> str:
    import os
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    run = subprocess.run(
        [sys.executable, "-c", _FRESH], env={**clean, **env}, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_a_process_started_with_one_blas_thread_skips_the_scan():
    # the BLAS already runs one thread: no threadpoolctl import, no scan of the libraries
    assert _fresh_process(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1") == "True False [1]"


def test_a_process_with_more_blas_threads_is_limited():
    out = _fresh_process(OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2")
    if out.endswith("[1]"):
        pytest.skip("no BLAS library here runs more than one thread")
    assert out == "True True [2]"


def test_blas_already_at_one_thread_is_not_limited_again(monkeypatch):
    # threadpoolctl imported (as here) and every BLAS at one thread: no limit set or restored
    if not _blas_threads():
        pytest.skip("no BLAS library visible to threadpoolctl")
    calls: list[int] = []
    real = _threads._set

    def recording(lib, num_threads):
        calls.append(num_threads)
        return real(lib, num_threads)

    monkeypatch.setattr(_threads, "_set", recording)
    with threadpool_limits(limits=1, user_api="blas"):
        assert sg.att_svm(sg.random_data(4, 4, 6, seed=0)).success
        assert calls == []
        with threadpool_limits(limits=2, user_api="blas"):
            at_two = _blas_threads().count(2)
            if at_two:
                with _threads.blas_threads(10):
                    assert set(_blas_threads()) == {1}
                assert calls == [1] * at_two + [2] * at_two  # set, then restored


def test_the_thread_counts_read_directly_are_threadpoolctls(two_threads):
    # _count: OpenBLAS's own C function in place of threadpoolctl's method, the same numbers
    from threadpoolctl import ThreadpoolController

    libs = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
    for limit in (1, 2):
        with threadpool_limits(limits=limit, user_api="blas"):
            assert [_threads._count(lib)() for lib in libs] == [
                lib.get_num_threads() for lib in libs
            ]


def test_the_thread_count_falls_back_to_threadpoolctls_method():
    # a threadpoolctl without the private symbol lookup, or one whose lookup fails
    class Lib:
        internal_api = "openblas"
        threading_layer = "pthreads"

        def get_num_threads(self):
            return 3

    class Failing(Lib):
        def _get_symbol(self, name, extra):  # another signature
            raise AssertionError("not called with this signature")

    for lib in (Lib(), Failing()):
        assert _threads._count(lib)() == 3
