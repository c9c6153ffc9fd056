# SPDX-License-Identifier: BSD-3-Clause
"""The sweep runner: grids, local processes, Dask, resume after SIGKILL, errors, the table."""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.cli import add_sweep_arguments, sweep_options
from svmgeo.experiments import (
    SweepError,
    expand_grid,
    read_results,
    sweep,
    trial_id,
    trial_seed,
)
from svmgeo.experiments._store import ResultStore, format_cell, parse_cell

from . import _trials

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
SVM_GRID = {"n": [3, 4], "T": [3], "d": [4, 6], "seed": [0, 1]}


def _values(rows, drop=("elapsed",)):
    """Rows without the columns that vary between runs (timings)."""
    return [{k: v for k, v in r.items() if k not in drop} for r in rows]


def _run_quiet(fn, grid, **kw):
    kw.setdefault("progress", False)
    return sweep(fn, grid, **kw)


# --------------------------------------------------------------------------------------
# grids, ids, seeds, cells
# --------------------------------------------------------------------------------------
def test_expand_grid_is_the_cartesian_product_in_order():
    trials = expand_grid({"a": [1, 2], "b": ["x", "y", "z"]})
    assert trials == [{"a": a, "b": b} for a in (1, 2) for b in ("x", "y", "z")]
    # numpy values become plain Python scalars (they are JSON-hashed and written to CSV)
    t = expand_grid({"d": np.arange(2), "r": np.array([0.5])})
    assert t == [{"d": 0, "r": 0.5}, {"d": 1, "r": 0.5}]
    assert all(type(x["d"]) is int and type(x["r"]) is float for x in t)
    explicit = [{"a": 2, "b": "q"}, {"a": 1, "b": "p"}]
    assert expand_grid(explicit) == explicit


@pytest.mark.parametrize(
    ("grid", "match"),
    [
        ({}, "empty"),
        ([], "empty"),
        ({"a": []}, "empty list"),
        ({"a": 3}, "must be lists"),
        ({"a": "abc"}, "must be lists"),
        ({"a": [np.zeros(2)]}, "ndarray"),
        ({"a": ["x\ny"]}, "line break"),
        ({"not valid": [1]}, "identifiers"),
        ({"status": [1]}, "bookkeeping"),
        ([{"a": 1}, {"b": 2}], "same parameters"),
        ([{"a": 1}, {"a": 1}], "twice"),
        ([{"a": 1}, 5], "dicts"),
        (42, "dict of parameter name"),
    ],
)
def test_bad_grids_raise_problem_error(grid, match):
    with pytest.raises(sg.ProblemError, match=match):
        expand_grid(grid)


def test_trial_id_depends_on_values_only():
    a = trial_id({"n": 3, "d": 4})
    assert a == trial_id({"d": 4, "n": 3})  # key order does not matter
    assert len(a) == 17 and a[0] == "t" and int(a[1:], 16) >= 0
    assert a != trial_id({"n": 3, "d": 5})
    assert trial_id({"x": 1}) != trial_id({"x": 1.0}) != trial_id({"x": True})
    # a trial keeps its id whatever grid it belongs to
    small = {trial_id(t) for t in expand_grid({"n": [3], "d": [4]})}
    big = {trial_id(t) for t in expand_grid({"n": [3, 5], "d": [4, 7]})}
    assert small <= big and len(big) == 4


def test_trial_ids_never_read_back_as_numbers(tmp_path):
    # 16 hex digits are all decimal digits, or digits around one "e", once in ~700 trials:
    # such ids must still read back as the same text (a resume compares them)
    ids = [trial_id({"seed": s}) for s in range(5000)]
    assert len(set(ids)) == 5000
    assert all(parse_cell(t) == t for t in ids)
    out = tmp_path / "ids.csv"
    out.write_text(
        "trial_id,k,part,n_parts,status,elapsed,error\n"
        "1234e56789012345,1,0,1,ok,0.5,\n"
        "0123456789012345,2,0,1,error,0.5,123\n"
    )
    rows = read_results(out)
    assert [r["trial_id"] for r in rows] == ["1234e56789012345", "0123456789012345"]
    assert rows[1]["error"] == "123" and rows[0]["error"] is None
    assert rows[0]["elapsed"] == 0.5 and rows[0]["k"] == 1


def test_trial_seed_is_deterministic_and_spread():
    seeds = [trial_seed({"n": n, "seed": s}) for n in (3, 4) for s in range(5)]
    assert len(set(seeds)) == len(seeds)
    assert all(0 <= s < 2**63 for s in seeds)
    assert seeds == [trial_seed({"seed": s, "n": n}) for n in (3, 4) for s in range(5)]


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -7,
        10**20,
        0.1,
        -0.0,
        1e-300,
        1.5e300,
        math.inf,
        -math.inf,
        "a,b",
        'q"uote',
    ],
)
def test_cells_round_trip(value):
    back = parse_cell(format_cell(value))
    assert type(back) is type(value)
    assert back == value
    if isinstance(value, float):
        assert math.copysign(1.0, back) == math.copysign(1.0, value)


def test_nan_cell_round_trips():
    assert math.isnan(parse_cell(format_cell(math.nan)))


# --------------------------------------------------------------------------------------
# local processes
# --------------------------------------------------------------------------------------
def test_local_processes_solve_every_trial(tmp_path):
    out = tmp_path / "svm.csv"
    res = _run_quiet(_trials.svm_trial, SVM_GRID, out=out, workers=2)
    trials = expand_grid(SVM_GRID)
    assert (res.n_trials, res.n_run, res.n_resumed, res.n_errors) == (8, 8, 0, 0)
    assert len(res) == 8
    assert [{k: r[k] for k in SVM_GRID} for r in res.rows] == trials  # grid order
    for r, t in zip(res.rows, trials, strict=True):
        assert r["trial_id"] == trial_id(t)
        assert r["status"] == "ok" and r["error"] is None and r["elapsed"] >= 0
        direct = sg.att_svm(sg.random_data(t["n"], t["T"], t["d"], seed=t["seed"]))
        assert r["status_svm"] == str(direct.status)
        np.testing.assert_allclose(r["objective"], direct.objective, rtol=1e-9)
        assert r["n_rows"] == t["n"] * (t["T"] - 1)
    # the file holds the same table (in completion order)
    assert sorted(_values(read_results(out)), key=str) == sorted(_values(res.rows), key=str)
    # in-process run: the same table
    serial = _run_quiet(_trials.svm_trial, SVM_GRID, workers=0)
    assert _values(serial.rows) == _values(res.rows)
    assert serial.columns == res.columns


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_workers_run_one_thread_each():
    res = _run_quiet(_trials.threads_trial, {"k": [0, 1]}, workers=2, threads=1)
    assert res.column("numba_threads") == [1, 1]
    blas = res.column("blas_threads")
    if blas[0] != -1:  # numpy's OpenBLAS found: it was loaded before the limit, and obeys it
        assert blas == [1, 1]


def test_unpicklable_trial_fn_is_refused_for_processes():
    with pytest.raises(sg.ProblemError, match="module level"):
        _run_quiet(lambda k: {"k": k}, {"k": [1]}, workers=2)

    def local(k):
        return {"k2": 2 * k}

    with pytest.raises(sg.ProblemError, match="module level"):
        _run_quiet(local, {"k": [1]}, workers=1)
    # in this process a closure is fine
    res = _run_quiet(local, {"k": [1, 2]}, workers=0)
    assert res.column("k2") == [2, 4]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"workers": -1}, "workers"),
        ({"workers": 2.5}, "workers"),
        ({"threads": 0}, "threads"),
        ({"workers": 1, "scheduler": "tcp://127.0.0.1:1"}, "not both"),
        ({"derive_seeds": True, "seed_key": "s"}, "derive_seeds"),
    ],
)
def test_bad_options_raise_problem_error(kwargs, match):
    with pytest.raises(sg.ProblemError, match=match):
        _run_quiet(_trials.failing_trial, {"k": [0]}, **kwargs)


def test_non_callable_and_bad_seeds_raise():
    with pytest.raises(sg.ProblemError, match="trial_fn must be a function"):
        _run_quiet(42, {"k": [1]}, workers=0)
    with pytest.raises(sg.ProblemError, match="non-negative ints"):
        _run_quiet(_trials.arith_trial, {"a": [1], "b": [0.5], "seed": [0.5]}, workers=0)
    with pytest.raises(sg.ProblemError, match="non-negative ints"):
        _run_quiet(_trials.arith_trial, {"a": [1], "b": [0.5], "seed": [None]}, workers=0)


def test_worker_crash_raises_sweep_error_and_keeps_rows(tmp_path):
    out = tmp_path / "crash.csv"
    with pytest.raises(SweepError, match="rerun"):
        _run_quiet(_trials.crash_trial, {"k": [1]}, out=out, workers=1)
    assert read_results(out) == []
    # the good trials of the grid are recorded when run on their own
    res = _run_quiet(_trials.crash_trial, {"k": [0, 2]}, workers=0)
    assert res.column("status") == ["ok", "ok"] and res.column("k_out") == [0, 2]


def test_trial_fn_unimportable_in_workers_is_a_sweep_error(tmp_path):
    # picklable here (by reference to a module in sys.modules) but absent in the workers
    mod = types.ModuleType("svmgeo_phantom_trials")
    exec("def phantom(k):\n    return {'k2': 2 * k}\n", mod.__dict__)
    sys.modules[mod.__name__] = mod
    try:
        with pytest.raises(SweepError, match="could not import"):
            _run_quiet(mod.phantom, {"k": [1, 2]}, out=tmp_path / "p.csv", workers=1)
    finally:
        del sys.modules[mod.__name__]
    assert read_results(tmp_path / "p.csv") == []


def test_bad_out_path_is_a_problem_error_before_any_trial(tmp_path, unwritable_dir):
    log = tmp_path / "calls.log"
    a_file = tmp_path / "file.csv"
    a_file.write_text("x")
    for out in (tmp_path, a_file / "t.csv", unwritable_dir / "t.csv"):
        with pytest.raises(sg.ProblemError, match="'out'"):
            _run_quiet(_trials.logged_trial, {"k": [1], "log": [str(log)]}, out=out, workers=0)
    assert not log.exists()  # no trial ran


def test_read_results_of_a_non_table_is_a_problem_error(tmp_path):
    binary = tmp_path / "data.npz"
    binary.write_bytes(b"PK\x03\x04\xff\xfe\x00\x81" * 8 + b"\n")
    with pytest.raises(sg.ProblemError, match="not a svmgeo sweep table"):
        read_results(binary)
    text = tmp_path / "notes.csv"
    text.write_text("a,b\n1,2\n")
    with pytest.raises(sg.ProblemError, match="not a svmgeo sweep table"):
        read_results(text)
    # sweep refuses to append to it too
    with pytest.raises(sg.ProblemError, match="not a svmgeo sweep table"):
        _run_quiet(_trials.failing_trial, {"k": [0]}, out=binary, workers=0)


@pytest.mark.parametrize("content", [b"x", b"{bad", b"PK\x03\x04\xff\xfe\x00\x81"])
def test_read_results_of_a_one_line_non_table_is_a_problem_error(tmp_path, content):
    """Regression (session 50): a one-line file without a newline read as a table with a
    torn last line, so read_results returned []; only a torn header ('trial_id,...') is one."""
    path = tmp_path / "one.csv"
    path.write_bytes(content)
    with pytest.raises(sg.ProblemError, match="not a svmgeo sweep table: its only line"):
        read_results(path)
    for torn in (b"trial_id,k,sta", b"tri"):  # a writer killed inside the header: no rows
        path.write_bytes(torn)
        assert read_results(path) == []
    with pytest.raises(sg.ProblemError, match="'path' parameter of read_results"):
        read_results(5)


# --------------------------------------------------------------------------------------
# results: errors, shapes, seeds
# --------------------------------------------------------------------------------------
def test_trial_errors_become_rows_and_can_be_retried(tmp_path):
    out = tmp_path / "err.csv"
    res = _run_quiet(_trials.failing_trial, {"k": [1, 2, 3, 4]}, out=out, workers=0)
    assert res.n_errors == 2
    assert res.column("status") == ["error", "ok", "error", "ok"]
    assert res.column("half") == [None, 1, None, 2]
    err = res.errors[0]["error"]
    assert err.startswith("ValueError: odd k=1") and "failing_trial" in err and "\n" not in err
    # the first row was an error: the header was rewritten when the first result came
    assert _values(read_results(out)) == _values(res.rows)
    assert res.columns[:3] == ["trial_id", "k", "half"]
    # resume skips error rows by default, reruns them with retry_errors
    again = _run_quiet(_trials.failing_trial, {"k": [1, 2, 3, 4]}, out=out, workers=0)
    assert (again.n_run, again.n_resumed) == (0, 4)
    retry = _run_quiet(
        _trials.failing_trial, {"k": [1, 2, 3, 4]}, out=out, workers=0, retry_errors=True
    )
    assert (retry.n_run, retry.n_resumed, retry.n_errors) == (2, 2, 2)
    assert len(read_results(out)) == 4


def test_bad_results_become_error_rows():
    res = _run_quiet(_trials.drifting_trial, {"k": [0, 1, 2]}, workers=0)
    assert res.column("status") == ["ok", "ok", "error"]
    assert "extra keys ['extra']" in res.rows[2]["error"]
    res = _run_quiet(_trials.array_trial, {"k": [1]}, workers=0)
    assert res.rows[0]["status"] == "error" and "ndarray" in res.rows[0]["error"]
    res = _run_quiet(_trials.failing_trial, {"half": [0]}, workers=0)  # unexpected kwarg
    assert "TypeError" in res.rows[0]["error"]


def test_multi_row_trials_keep_all_parts(tmp_path):
    out = tmp_path / "multi.csv"
    res = _run_quiet(_trials.multi_row_trial, {"k": [2, 0, 1]}, out=out, workers=0)
    assert len(res) == 3 + 1 + 2
    assert res.column("k") == [2, 2, 2, 0, 1, 1]
    assert res.column("part") == [0, 1, 2, 0, 0, 1]
    assert res.column("n_parts") == [3, 3, 3, 1, 2, 2]
    assert res.column("kj") == [0, 2, 4, 0, 0, 1]
    # a trial whose rows were cut short by a kill is rerun, not half-kept
    lines = out.read_text().splitlines(keepends=True)
    k2 = [ln for ln in lines if ln.split(",")[1] == "2"]
    out.write_text("".join(ln for ln in lines if ln not in k2[1:]))
    again = _run_quiet(_trials.multi_row_trial, {"k": [2, 0, 1]}, out=out, workers=0)
    assert (again.n_run, again.n_resumed) == (1, 2)
    assert _values(again.rows) == _values(res.rows)


def test_seeds_given_or_derived():
    grid = {"a": [1, 2], "b": [0.5], "seed": [0, 3]}
    given = _run_quiet(_trials.arith_trial, grid, workers=0)
    derived = _run_quiet(_trials.arith_trial, grid, workers=0, derive_seeds=True)
    for g, d, t in zip(given.rows, derived.rows, expand_grid(grid), strict=True):
        assert g["seed"] == d["seed"] == t["seed"]  # the table records the grid's seed
        assert g["draw"] == np.random.default_rng(t["seed"]).random()
        assert d["draw"] == np.random.default_rng(trial_seed(t)).random()
        assert g["total"] == t["a"] + t["b"] and g["label"] == f"a{t['a']}"
        assert g["even"] is (t["a"] % 2 == 0)


# --------------------------------------------------------------------------------------
# resume
# --------------------------------------------------------------------------------------
_KILL_SCRIPT = textwrap.dedent(
    """
    import functools, sys
    from experiments import _trials
    from svmgeo.experiments import sweep

    if __name__ == "__main__":
        out, log = sys.argv[1], sys.argv[2]
        fn = functools.partial(_trials.logged_trial, log=log, sleep=0.25)
        sweep(fn, {"k": list(range(12))}, out=out, workers=2, progress=False)
    """
)


def test_killed_sweep_resumes_without_recomputing(tmp_path):
    out, log = tmp_path / "resume.csv", tmp_path / "calls.log"
    script = tmp_path / "run_sweep.py"
    script.write_text(_KILL_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(TESTS)]))
    proc = subprocess.Popen(
        [sys.executable, str(script), str(out), str(log)], env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists() and out.read_text().count("\n") >= 1 + 3:
                break
            assert proc.poll() is None, "the sweep ended before it could be killed"
            time.sleep(0.02)
        else:
            pytest.fail("the sweep wrote no rows within 60 s")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the parent and its worker processes
        proc.wait()
    before = read_results(out)
    assert 3 <= len(before) < 12
    done_before = {r["k"] for r in before}
    # a kill during a write leaves a partial line: simulate one on top
    with open(out, "a") as fh:
        fh.write("0123456789abcdef,11,12")

    # the killed sweep's own trial function: a partial with other bound arguments (even a
    # shorter sleep) has another digest, and the table would not be resumed
    fn = functools.partial(_trials.logged_trial, log=str(log), sleep=0.25)
    res = _run_quiet(fn, {"k": list(range(12))}, out=out, workers=2)
    assert res.n_resumed == len(before) and res.n_run == 12 - len(before)
    calls = [int(x) for x in log.read_text().split()]
    for k in done_before:
        assert calls.count(k) == 1  # finished trials were not recomputed
    assert sorted(set(calls)) == list(range(12))

    final = read_results(out)
    assert len(final) == 12 and len({r["trial_id"] for r in final}) == 12
    assert out.read_text().endswith("\n")
    reference = _run_quiet(
        functools.partial(_trials.logged_trial, log=str(tmp_path / "ref.log")),
        {"k": list(range(12))},
        workers=0,
    )
    assert _values(res.rows) == _values(reference.rows)
    assert sorted(_values(final), key=str) == sorted(_values(reference.rows), key=str)
    for r in res.rows:
        assert r["square"] == r["k"] ** 2
        np.testing.assert_allclose(r["third"], r["k"] / 3, rtol=0, atol=0)


def _processes_with(marker: str) -> list[int]:
    """Pids of the processes whose environment holds ``marker`` (Linux /proc)."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if marker.encode() in fh.read().split(b"\0"):
                    pids.append(int(name))
        except OSError:  # ended meanwhile, or not ours to read
            continue
    return pids


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
def test_killing_the_sweep_process_ends_its_workers(tmp_path):
    # kill -9 of the sweep's process alone: its workers, the forkserver and the resource
    # tracker must not go on (each trial would compute for 60 s)
    out, log = tmp_path / "orphans.csv", tmp_path / "calls.log"
    script = tmp_path / "run_sweep.py"
    script.write_text(_KILL_SCRIPT.replace("sleep=0.25", "sleep=60.0"))
    marker = f"SVMGEO_ORPHAN_TEST={os.getpid()}-{time.monotonic_ns()}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(TESTS)]))
    env[marker.split("=")[0]] = marker.split("=")[1]
    proc = subprocess.Popen(
        [sys.executable, str(script), str(out), str(log)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and len(log.read_text().split()) >= 2):  # both workers busy
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "the workers started no trial within 60 s"
            time.sleep(0.05)
        assert len(_processes_with(marker)) >= 3  # the sweep, its 2 workers (+ helpers)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 5
        while _processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _processes_with(marker) == [], "processes of the killed sweep still run"
    finally:
        for pid in _processes_with(marker):  # clean up after a failure
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _text_of(a, seed):
    return {"y": repr(a)}


def test_values_written_alike_resume(tmp_path):
    """Regression: 1 and "1" (True and "True", None and "") are written as the same CSV text;
    resuming such a grid said the table "was written by a sweep over other parameters"."""
    out = tmp_path / "alike.csv"
    grid = {"a": [1, "1", True, "True"], "seed": [0]}
    first = _run_quiet(_text_of, grid, out=out, workers=0)
    again = _run_quiet(_text_of, grid, out=out, workers=0)
    assert (first.n_run, again.n_run, again.n_resumed) == (4, 0, 4)
    assert sorted(str(r["y"]) for r in read_results(out)) == sorted(["1", "'1'", "True", "'True'"])


def test_resume_checks_the_table(tmp_path):
    out = tmp_path / "t.csv"
    _run_quiet(_trials.failing_trial, {"k": [0, 2]}, out=out, workers=0)
    with pytest.raises(sg.ProblemError, match="parameters"):
        _run_quiet(_trials.arith_trial, {"a": [1], "b": [1.0], "seed": [0]}, out=out, workers=0)
    # a table over more parameters whose names start like the grid's is refused too
    more = tmp_path / "more.csv"
    _run_quiet(_trials.arith_trial, {"a": [1], "b": [0.5], "seed": [0]}, out=more, workers=0)
    with pytest.raises(sg.ProblemError, match=r"params \['a', 'b', 'seed'\] -> \['a', 'b'\]"):
        _run_quiet(_trials.arith_trial, {"a": [1], "b": [0.5]}, out=more, workers=0)
    # ... also where no parameter value is shared (regression: every trial ran and became an
    # error row, "missing keys ['seed']", appended to the other sweep's table)
    with pytest.raises(sg.ProblemError, match="other settings"):
        _run_quiet(_trials.arith_trial, {"a": [7], "b": [0.25]}, out=more, workers=0)
    assert len(read_results(more)) == 1
    # without the sidecar (a table of an older svmgeo) the rows' ids still tell
    (tmp_path / "more.csv.sweep.json").unlink()
    with pytest.raises(sg.ProblemError, match="other parameters"):
        _run_quiet(_trials.arith_trial, {"a": [1], "b": [0.5]}, out=more, workers=0)
    # a header alone (killed right after writing it) is a fresh start
    alone = tmp_path / "alone.csv"
    alone.write_text(out.read_text().splitlines(keepends=True)[0])
    res = _run_quiet(_trials.failing_trial, {"k": [0, 2]}, out=alone, workers=0)
    assert res.n_run == 2 and len(read_results(alone)) == 2
    assert alone.read_text().count("trial_id") == 1
    # a bigger grid over the same parameters runs only the new trials
    res = _run_quiet(_trials.failing_trial, {"k": [0, 2, 4]}, out=out, workers=0)
    assert (res.n_run, res.n_resumed) == (1, 2)
    # resume=False replaces the table
    res = _run_quiet(_trials.failing_trial, {"k": [6]}, out=out, workers=0, resume=False)
    assert [r["k"] for r in read_results(out)] == [6]
    (tmp_path / "junk.csv").write_text("a,b\n1,2\n")
    with pytest.raises(sg.ProblemError, match="not a svmgeo sweep table"):
        _run_quiet(_trials.failing_trial, {"k": [0]}, out=tmp_path / "junk.csv", workers=0)
    with pytest.raises(sg.ProblemError, match="No sweep table"):
        read_results(tmp_path / "missing.csv")


def test_a_table_in_use_is_locked(tmp_path):
    out = tmp_path / "locked.csv"
    holder = ResultStore(out, ["k"])
    holder.open(resume=True)
    try:
        with pytest.raises(sg.ProblemError, match="another sweep"):
            _run_quiet(_trials.failing_trial, {"k": [0]}, out=out, workers=0)
    finally:
        holder.close()
    assert _run_quiet(_trials.failing_trial, {"k": [0]}, out=out, workers=0).n_run == 1


# --------------------------------------------------------------------------------------
# Dask
# --------------------------------------------------------------------------------------
def test_dask_local_cluster_gives_the_local_table(tmp_path):
    distributed = pytest.importorskip("distributed")
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):  # for crash_trial
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        )
    try:
        out = tmp_path / "dask.csv"
        res = _run_quiet(_trials.svm_trial, SVM_GRID, out=out, scheduler=cluster.scheduler_address)
        assert res.n_run == 8 and res.n_errors == 0
        local = _run_quiet(_trials.svm_trial, SVM_GRID, workers=0)
        assert _values(res.rows) == _values(local.rows)
        assert sorted(_values(read_results(out)), key=str) == sorted(_values(local.rows), key=str)
        # errors on the cluster become rows too
        err = _run_quiet(_trials.failing_trial, {"k": [1, 2]}, scheduler=cluster.scheduler_address)
        assert err.column("status") == ["error", "ok"]
        assert "odd k=1" in err.rows[0]["error"]
        # a trial that kills its worker process is an error row (KilledWorker), not a crash
        crash = _run_quiet(_trials.crash_trial, {"k": [0, 1]}, scheduler=cluster.scheduler_address)
        assert crash.column("status") == ["ok", "error"] and crash.rows[0]["k_out"] == 0
        assert crash.rows[1]["error"].startswith("KilledWorker")
    finally:
        cluster.close()


@pytest.mark.parametrize(
    ("address", "match"),
    [
        ("not a url", "spaces"),
        ("tcp://127.0.0.1", "port"),
        ("tcp://127.0.0.1:abc", "invalid literal"),
        ("foo://h:1", "unknown address scheme"),
        ("", "empty"),
    ],
)
def test_malformed_scheduler_address_fails_at_once(address, match, tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "never.csv"
    start = time.monotonic()
    with pytest.raises(sg.ProblemError, match=match) as info:
        sweep(_trials.failing_trial, {"k": [0]}, scheduler=address, out=out, progress=False)
    assert time.monotonic() - start < 5  # no connection attempt, no timeout
    assert "tcp://" in str(info.value) and "\n" not in str(info.value)
    assert not out.exists()  # refused before the table is opened


def test_unreachable_scheduler_is_a_backend_error():
    pytest.importorskip("distributed")
    import dask

    with (
        dask.config.set({"distributed.comm.timeouts.connect": "1s"}),
        pytest.raises(sg.BackendError, match="Dask scheduler"),
    ):
        sweep(_trials.failing_trial, {"k": [0]}, scheduler="tcp://127.0.0.1:9", progress=False)


# --------------------------------------------------------------------------------------
# progress and command-line helpers
# --------------------------------------------------------------------------------------
def test_progress_bar_reports_count(capsys):
    _run_quiet(_trials.failing_trial, {"k": [0, 2, 4]}, workers=0, progress=True)
    err = capsys.readouterr().err
    assert "3/3" in err and "trial" in err
    _run_quiet(_trials.failing_trial, {"k": [0, 2, 4]}, workers=0, progress=False)
    assert capsys.readouterr().err == ""


def test_cli_helpers():
    p = argparse.ArgumentParser()
    add_sweep_arguments(p, default_out="r.csv")
    opts = sweep_options(p.parse_args([]))
    assert opts == {
        "out": "r.csv",
        "workers": None,
        "scheduler": None,
        "resume": True,
        "retry_errors": False,
        "timeout": None,
        "progress": True,
    }
    opts = sweep_options(
        p.parse_args(["--scheduler", "tcp://h:8786", "--no-resume", "--no-progress"])
    )
    assert opts["scheduler"] == "tcp://h:8786" and not opts["resume"] and not opts["progress"]


def test_public_names_and_pandas():
    assert sg.sweep is sweep and sg.read_results is read_results
    assert sg.SweepError is SweepError and issubclass(SweepError, sg.SvmgeoError)
    res = _run_quiet(_trials.failing_trial, {"k": [0, 1]}, workers=0)
    assert res.n_errors == 1 and len(res.errors) == 1
    with pytest.raises(sg.ProblemError, match="No column"):
        res.column("nope")
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(sg.BackendError, match="pip install pandas"):
            res.to_pandas()
    else:
        df = res.to_pandas()
        assert list(df.columns) == res.columns and len(df) == 2


def _gaussian(seed):
    return {"x": float(np.random.default_rng(seed).standard_normal())}


def test_resume_refuses_other_seed_settings(tmp_path):
    """Trial ids do not record derive_seeds: resuming with derive_seeds=True returned the
    first run's (underived) rows as this sweep's."""
    out = tmp_path / "t.csv"
    grid = {"seed": [0, 1, 2]}
    first = sweep(_gaussian, grid, workers=0, progress=False, out=out)
    again = sweep(_gaussian, grid, workers=0, progress=False, out=out)
    assert again.column("x") == first.column("x")  # same settings: resumed
    with pytest.raises(sg.ProblemError, match=r"derive_seeds False -> True"):
        sweep(_gaussian, grid, workers=0, progress=False, out=out, derive_seeds=True)
    fresh = sweep(_gaussian, grid, workers=0, progress=False, out=out, derive_seeds=True,
                  resume=False)  # fmt: skip
    assert fresh.column("x") != first.column("x")


def test_reproduce_where_no_trial_finishes_writes_no_summary_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every trial raising left an empty summary CSV and a ProblemError, which the command
    line reported as bad input (exit 2): the computation ran and found no answer (exit 1)."""
    from svmgeo.cli import main
    from svmgeo.experiments import _registry

    failing = _registry.Experiment(
        "always_fails",
        "every trial raises",
        _trials.failing_trial,
        lambda quick: {"k": [1, 3]},
        lambda rows: ({"n": len(rows)}, []),
        lambda rows, summary, path: [],
    )
    monkeypatch.setitem(_registry.EXPERIMENTS, "always_fails", failing)
    with pytest.raises(SweepError, match="no trial finished"):
        sg.reproduce("always_fails", quick=True, out=str(tmp_path / "a"), workers=0, progress=False)
    assert not (tmp_path / "a" / "always_fails-quick_summary.csv").exists()
    code = main(["reproduce", "always_fails", "--quick", "--out", str(tmp_path / "b"),
                 "--workers", "0", "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "no trial finished" in err, err


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("resume", "no"),
        ("retry_errors", 1),
        ("derive_seeds", "yes"),
        ("progress", None),
        ("seed_key", 3),
    ],
)
def test_sweep_flags_are_checked(tmp_path, option, value):
    """Regression: the flags were read by truthiness, so resume="no" resumed the table; each is
    now a named ProblemError, and the table is left as it was."""
    out = tmp_path / "t.csv"
    _run_quiet(lambda k: {"k2": 2 * k}, {"k": [1, 2]}, workers=0, out=out)
    before = out.read_text()
    with pytest.raises(sg.ProblemError, match=f"'{option}' parameter of sweep"):
        _run_quiet(lambda k: {"k2": 2 * k}, {"k": [1, 2]}, workers=0, out=out, **{option: value})
    assert out.read_text() == before


def test_reproduce_summary_counts_the_trials_that_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary CSV alone said nothing of trials that raised (it summarizes the finished
    ones): every row now carries the sweep's count of them, ``failed_trials``."""
    import csv

    from svmgeo.experiments import _registry

    def summarize(rows: list[dict]) -> tuple[dict, list[dict]]:
        return {"n": len(rows)}, [{"k": r["k"], "half": r["half"]} for r in rows]

    some_fail = _registry.Experiment(
        "some_fail", "odd k raises", _trials.failing_trial, lambda quick: {"k": [1, 2, 3, 4]},
        summarize, lambda rows, summary, path: [],
    )  # fmt: skip
    monkeypatch.setitem(_registry.EXPERIMENTS, "some_fail", some_fail)
    res = sg.reproduce("some_fail", quick=True, out=tmp_path, workers=0, progress=False)
    with res.tables[1].open() as fh:
        rows = list(csv.DictReader(fh))
    assert res.n_errors == 2 and "ERRORS: 2 trial(s)" in str(res)
    assert rows == [{"k": "2", "half": "1", "failed_trials": "2"},
                    {"k": "4", "half": "2", "failed_trials": "2"}]  # fmt: skip
