# SPDX-License-Identifier: BSD-3-Clause
"""Session 59: a sweep's rows do not depend on the order its trials finish in (the result
columns are the keys of the first successful trial in grid order), and a sweep on an
in-process Dask client leaves the caller's thread settings as they were."""

from __future__ import annotations

import functools
import itertools
import os
import threading
import time
from pathlib import Path

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

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


def probe_trial(k: int, sync: str) -> dict:
    """The thread settings a trial sees; both trials wait until both have started, so that
    they run at once (one restoring the settings must not undo the other's limit)."""
    (Path(sync) / str(k)).touch()
    _wait_for([Path(sync) / "0", Path(sync) / "1"])
    blas = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    env = {var: os.environ.get(var) for var in _VARS}
    time.sleep(0.05)  # the other trial reads its settings before this one ends
    return {
        "blas_max": max(blas, default=-1),
        "omp": env["OMP_NUM_THREADS"],
        "mkl": env["MKL_NUM_THREADS"],
    }


def _blas_settable_from_a_thread() -> bool:
    """Whether a new thread's threadpoolctl limit reaches the BLAS libraries: threadpoolctl
    lets only the thread that set OpenBLAS's process-wide count change it (a test before
    this one may have made this thread that one), and then a trial's limit is not set."""
    seen: list[list[int]] = []

    def probe() -> None:
        with threadpool_limits(limits=1, user_api="blas"):
            seen.append([lib["num_threads"] for lib in threadpool_info()])

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    return all(n == 1 for n in seen[0])


def test_an_in_process_dask_sweep_leaves_the_callers_threads_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: each trial ran threadpool_limits(1) outside a context manager and set
    OMP_NUM_THREADS etc. to "1" in the caller's process, so after a sweep on
    Client(processes=False) the caller's OpenBLAS ran one thread (2 before) for good. The
    trials still run under threads=1; afterwards the variables are as they were (set or
    unset) and the BLAS libraries have their counts back, also when two trials overlap
    (the first to end must not restore them under the other)."""
    distributed = pytest.importorskip("distributed")
    for var in _VARS:
        monkeypatch.setenv(var, "2")
    monkeypatch.delenv("MKL_NUM_THREADS")
    sync = tmp_path / "sync"
    sync.mkdir()
    before = [(lib["filepath"], lib["num_threads"]) for lib in threadpool_info()]
    with distributed.Client(
        processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None
    ) as client:
        res = sweep(
            functools.partial(probe_trial, sync=str(sync)),
            {"k": [0, 1]},
            scheduler=client,
            threads=1,
            progress=False,
        )
    after = [(lib["filepath"], lib["num_threads"]) for lib in threadpool_info()]
    assert res.column("status") == ["ok", "ok"], res.errors
    assert res.column("omp") == [1, 1]  # the limit held inside the trials
    assert res.column("mkl") == [1, 1]
    if any(n > 1 for _, n in before) and _blas_settable_from_a_thread():
        assert res.column("blas_max") == [1, 1]
    assert after == before
    assert {var: os.environ.get(var) for var in _VARS} == {
        var: None if var == "MKL_NUM_THREADS" else "2" for var in _VARS
    }


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
