# SPDX-License-Identifier: BSD-3-Clause
"""Session 59: a sweep's rows do not depend on the order its trials finish in (the result
columns are the keys of the first successful trial in grid order), and a sweep on an
in-process Dask client leaves the caller's thread settings as they were."""

from __future__ import annotations

import functools
import itertools
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from threadpoolctl import threadpool_info

from svmgeo import ProblemError
from svmgeo.experiments import read_results, sweep

_WAIT_S = 30.0  # a guard against a hang only: the trials waited for finish at once


def _wait_for(paths: list[Path]) -> None:
    deadline = time.monotonic() + _WAIT_S
    while not all(p.exists() for p in paths):
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {_WAIT_S} s for {paths}")
        time.sleep(0.01)


def keyed_trial(a: int, seed: int, sync: str | None = None) -> dict:
    """a == 0 returns one key, every other a two. With ``sync`` (a directory) a == 0 finishes
    last: it waits until trials 1 and 2 have left their marks there."""
    if a == 0:
        if sync is not None:
            _wait_for([Path(sync) / "1", Path(sync) / "2"])
        return {"x": 1.0}
    if sync is not None:
        (Path(sync) / str(a)).touch()
    return {"x": 2.0, "y": float(a)}


_GRID = {"a": [0, 1, 2], "seed": [0]}


def _table(rows: list[dict]) -> list[dict]:
    """The rows without the measured seconds, in trial-id order (a file's lines are in the
    order trials finished)."""
    return sorted(
        ({k: v for k, v in r.items() if k != "elapsed"} for r in rows),
        key=lambda r: (r["trial_id"], r["part"]),
    )


def _check_grid_order_rule(res, out: Path) -> None:
    """Trial a=0 comes first in grid order and succeeds with the key x alone: x is the one
    result column, and the trials returning x and y are error rows naming y."""
    assert res.columns[3:5] == ["x", "part"]
    assert [(r["a"], r["status"]) for r in res.rows] == [(0, "ok"), (1, "error"), (2, "error")]
    assert res.rows[0]["x"] == 1.0
    for r in res.rows[1:]:
        assert "extra keys ['y']" in r["error"]
        assert "['x']" in r["error"]
    assert _table(read_results(out)) == _table(res.rows)


def test_rows_do_not_depend_on_the_order_trials_finish_in(tmp_path: Path) -> None:
    """Regression: the first trial to FINISH fixed the result columns. Trial a=0 returns {x}
    and finishes last; a=1, 2 return {x, y}: workers=0 gave [ok, error, error], workers=2
    [error, ok, ok]. The first successful trial in grid order fixes them now, whatever the
    workers, and the table on disk (rewritten when the columns changed) holds the same rows."""
    serial = sweep(keyed_trial, _GRID, out=tmp_path / "serial.csv", workers=0, progress=False)
    _check_grid_order_rule(serial, tmp_path / "serial.csv")

    sync = tmp_path / "sync"
    sync.mkdir()
    trial = functools.partial(keyed_trial, sync=str(sync))
    out = tmp_path / "parallel.csv"
    parallel = sweep(trial, _GRID, out=out, workers=2, progress=False)
    _check_grid_order_rule(parallel, out)
    assert _table(parallel.rows) == _table(serial.rows)
    assert (parallel.n_run, parallel.n_errors) == (3, 2)

    again = sweep(trial, _GRID, out=out, workers=2, progress=False)  # resumes: nothing to run
    assert (again.n_run, again.n_resumed) == (0, 3)
    assert _table(again.rows) == _table(parallel.rows)


def test_rows_on_an_in_process_dask_client_follow_grid_order(tmp_path: Path) -> None:
    """The same with Dask's threads (an in-process client), which gave [error, ok, ok]."""
    distributed = pytest.importorskip("distributed")
    serial = sweep(keyed_trial, _GRID, workers=0, progress=False)
    sync = tmp_path / "sync"
    sync.mkdir()
    trial = functools.partial(keyed_trial, sync=str(sync))
    out = tmp_path / "dask.csv"
    with distributed.Client(
        processes=False, n_workers=1, threads_per_worker=3, dashboard_address=None
    ) as client:
        res = sweep(trial, _GRID, out=out, scheduler=client, progress=False)
    _check_grid_order_rule(res, out)
    assert _table(res.rows) == _table(serial.rows)


_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def probe_trial(k: int) -> dict:
    """The thread settings a trial sees."""
    blas = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    return {
        "blas_max": max(blas, default=-1),
        "omp": os.environ.get("OMP_NUM_THREADS"),
        "mkl": os.environ.get("MKL_NUM_THREADS"),
    }


def test_an_in_process_dask_sweep_leaves_the_callers_threads_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: each trial ran threadpool_limits(1) outside a context manager and set
    OMP_NUM_THREADS etc. to "1" in the caller's process, so after a sweep on
    Client(processes=False) the caller's OpenBLAS ran one thread (2 before) for good. The
    limit is process-wide, so trials in the caller's process (as with workers=0) now run
    with the caller's settings, and the caller has them unchanged afterwards."""
    distributed = pytest.importorskip("distributed")
    for var in _VARS:
        monkeypatch.setenv(var, "2")
    monkeypatch.delenv("MKL_NUM_THREADS")
    before = [(lib["filepath"], lib["num_threads"]) for lib in threadpool_info()]
    blas_before = max(
        (lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"),
        default=-1,
    )
    with distributed.Client(
        processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None
    ) as client:
        res = sweep(probe_trial, {"k": [0, 1]}, scheduler=client, threads=1, progress=False)
    after = [(lib["filepath"], lib["num_threads"]) for lib in threadpool_info()]
    assert res.column("status") == ["ok", "ok"], res.errors
    assert res.column("omp") == [2, 2]  # the caller's settings, inside the trials too
    assert res.column("mkl") == [None, None]
    assert res.column("blas_max") == [blas_before, blas_before]
    assert after == before
    assert {var: os.environ.get(var) for var in _VARS} == {
        var: None if var == "MKL_NUM_THREADS" else "2" for var in _VARS
    }


def numba_import_trial(a: int) -> dict:
    """a == 0 imports numba (the first import, which takes a while); the others run meanwhile."""
    if a == 0:
        import numba  # noqa: F401
    else:
        time.sleep(0.02)
    return {"x": 1.0}


def test_in_process_dask_trials_run_while_one_imports_numba() -> None:
    """Regression (d1756ff, which held the limit per trial in the caller's process): a trial
    starting while another was importing numba read the partially initialized module from
    sys.modules and called numba.get_num_threads(): AttributeError in trials 1-5, and the
    limit's count stuck, so OMP_NUM_THREADS etc. stayed "1" for the session. Run in a fresh
    interpreter, where numba is not imported yet."""
    pytest.importorskip("distributed")
    pytest.importorskip("numba")
    root = Path(__file__).resolve().parents[2]
    script = textwrap.dedent(
        """
        import json, os, sys
        import distributed
        from svmgeo.experiments import sweep
        from tests.experiments.test_sweep_audit59 import numba_import_trial
        fresh = "numba" not in sys.modules
        os.environ["OMP_NUM_THREADS"] = "2"
        with distributed.Client(processes=False, n_workers=1, threads_per_worker=2,
                                dashboard_address=None) as client:
            res = sweep(numba_import_trial, {"a": [0, 1, 2, 3, 4, 5]}, scheduler=client,
                        threads=1, progress=False)
        print(json.dumps([fresh, res.column("status"), res.column("error"),
                          os.environ.get("OMP_NUM_THREADS")]))
        """
    )
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", script], cwd=root,
                          env={**os.environ, "PYTHONPATH": path}, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    fresh, status, errors, omp = json.loads(proc.stdout.splitlines()[-1])
    assert fresh, "numba was imported before the sweep: the case is not exercised"
    assert status == ["ok"] * 6, errors
    assert omp == "2"


def test_a_stale_temporary_table_is_removed_when_the_table_is_opened(tmp_path: Path) -> None:
    """A rewrite stopped between writing <table>.tmp and moving it over the table left the
    temporary file behind for good; the sweep that next takes the table's lock removes it
    (the table itself is whole: os.replace had not run). A sweep refused the lock leaves it."""
    from svmgeo.experiments._store import ResultStore

    out = tmp_path / "t.csv"
    first = sweep(keyed_trial, _GRID, out=out, workers=0, progress=False)
    stale = tmp_path / "t.csv.tmp"
    holder = ResultStore(out, ["a", "seed"])
    holder.open(resume=True)
    try:
        stale.write_text("trial_id,a\n")
        with pytest.raises(ProblemError, match="being written by another sweep"):
            sweep(keyed_trial, _GRID, out=out, workers=0, progress=False)
        assert stale.exists()
    finally:
        holder.close()
    stale.write_text("trial_id,a\n")
    again = sweep(keyed_trial, _GRID, out=out, workers=0, progress=False)
    assert not stale.exists()
    assert (again.n_run, again.n_resumed) == (0, 3)
    assert _table(again.rows) == _table(first.rows)


def clash_trial(a: int) -> dict:
    """a == 0 returns a key named like the parameter a; any other a the key x."""
    return {"a": 5} if a == 0 else {"x": float(a)}


def test_a_key_clashing_with_a_parameter_is_named_so_in_any_order() -> None:
    """A key named like a parameter was called a clash when no trial had succeeded yet and
    'extra keys' once one had, so the error text hung on which trial finished first: both
    orders say clash now."""
    texts = []
    for grid in ([{"a": 0}, {"a": 1}], [{"a": 1}, {"a": 0}]):
        res = sweep(clash_trial, grid, workers=0, progress=False)
        (row,) = [r for r in res.rows if r["a"] == 0]
        assert row["status"] == "error"
        texts.append(row["error"])
    assert texts[0] == texts[1]
    assert "clash with parameter or bookkeeping column names" in texts[0]


_OUTCOMES = {
    "x": ([{"x": 1.0}], 0.5, None),
    "xy": ([{"x": 2.0, "y": 3.0}], 0.5, None),
    "yx": ([{"y": 4.0, "x": 5.0}], 0.5, None),
    "two": ([{"x": 6.0}, {"x": 7.0}], 0.5, None),
    "raise": (None, 0.5, "ValueError: no"),
}


@pytest.mark.parametrize(
    "kinds",
    [
        ("xy", "x", "x"),
        ("raise", "x", "xy", "x"),
        ("raise", "yx", "xy", "two"),
        ("x", "raise", "xy", "two"),
        ("raise", "raise", "xy"),
    ],
)
def test_every_finishing_order_gives_the_rows_of_grid_order(tmp_path: Path, kinds) -> None:
    """The columns and rows recorded for trials finishing in each order are those of the
    trials finishing in grid order (as with workers=0), in memory and in the table on disk;
    the count of error rows follows the rewrites."""
    from svmgeo.experiments._store import ResultStore
    from svmgeo.experiments._sweep import _Recorder

    tids = [f"t{k}" for k in range(len(kinds))]
    params_of = {tid: {"k": k} for k, tid in enumerate(tids)}

    def record(order: tuple[int, ...], path: Path) -> tuple[list[str], list[dict]]:
        store = ResultStore(path, ["k"])
        store.open(resume=False)
        recorder = _Recorder(store, params_of, tids)
        for k in order:
            recorder.record(tids[k], _OUTCOMES[kinds[k]], False)
        store.close()
        assert recorder.n_errors == sum(1 for r in store.rows if r["status"] != "ok")
        rows = _table([{h: r.get(h) for h in store.header} for r in store.rows])
        assert _table(read_results(path)) == rows
        return store.header, rows

    expected = record(tuple(range(len(kinds))), tmp_path / "grid.csv")
    for n, order in enumerate(itertools.permutations(range(len(kinds)))):
        assert record(order, tmp_path / f"{n}.csv") == expected, order


@pytest.mark.skipif(sys.platform == "win32", reason="the table lock is fcntl's")
def test_a_rewritten_table_is_locked_the_moment_it_is_in_place(tmp_path, monkeypatch) -> None:
    """A rewrite moved the new file over the table and only then reopened and locked it: in
    between, another sweep could open and lock the table, and the first then failed with
    "being written by another sweep" mid-run (review of the session-59 sweep fixes, which
    rewrite more often). The new file is now locked before it is moved into place."""
    import fcntl

    from svmgeo.experiments import _store
    from svmgeo.experiments._store import ResultStore

    path = tmp_path / "t.csv"
    free_after_replace = []
    real_replace = os.replace

    def replace(src, dst):
        real_replace(src, dst)
        with open(dst) as other:  # another sweep, right after the move
            try:
                fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                free_after_replace.append(True)
            except OSError:
                free_after_replace.append(False)

    store = ResultStore(path, ["k"])
    store.open(resume=False)
    try:
        monkeypatch.setattr(_store.os, "replace", replace)
        store.replace(["x"], [{"trial_id": "t0", "k": 0, "x": 1.0, "status": "ok"}])
        monkeypatch.undo()
        assert free_after_replace == [False]
        store.append([{"trial_id": "t1", "k": 1, "x": 2.0, "status": "ok"}])
    finally:
        store.close()
    assert [r["x"] for r in read_results(path)] == [1.0, 2.0]  # later rows in the new file


@pytest.mark.skipif(sys.platform == "win32", reason="the table lock is fcntl's")
def test_a_table_replaced_after_it_was_opened_is_not_locked(tmp_path) -> None:
    """A sweep that opened the table just before another's rewrite moved a new file over it
    locked the old, unlinked file and wrote its rows there, lost; the lock now checks that
    the file it holds is still the table."""
    from svmgeo.experiments._store import ResultStore

    path = tmp_path / "t.csv"
    path.write_text("")
    late = ResultStore(path, ["k"])
    late._fh = open(path, "a", encoding="utf-8", newline="")  # opened before the rewrite
    replacement = tmp_path / "new.csv"
    replacement.write_text("")
    os.replace(replacement, path)  # the other sweep's rewrite
    with pytest.raises(ProblemError, match="was replaced or removed while this sweep opened"):
        late._take_lock()
    assert late._fh is None
