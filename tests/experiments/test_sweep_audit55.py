# SPDX-License-Identifier: BSD-3-Clause
"""Session 55: grid values keep the types the grid gave, the derived seed of every trial is in
its row, and a per-trial timeout (local worker processes) ends a hung trial as a row."""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
import time
import types

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.cli import add_sweep_arguments, sweep_options
from svmgeo.experiments import SweepError, read_results, sweep

from . import _trials


def _values(rows: list[dict]) -> list[dict]:
    """Rows without the seconds a trial took (they vary between runs)."""
    return [{k: v for k, v in r.items() if k != "elapsed"} for r in rows]


NUMBER_LIKE = ["1e3", "007", "inf", "-0", "True", "", "nan"]
"""Strings that the table's cell rule (``parse_cell``) reads as other values."""


def _type_of(tag: str, seed: int) -> dict:
    return {"kind": type(tag).__name__, "length": len(tag)}


@pytest.mark.parametrize("out", [False, True], ids=["in-memory", "csv-table"])
def test_string_grid_values_keep_their_type(tmp_path, out: bool) -> None:
    """Regression: the rows came back through the CSV cell rule, so the string parameter
    "1e3" was the float 1000.0 in the result (and "007" the int 7, "" None), while trial_fn
    had received the strings: a row said another trial than the one that ran."""
    path = tmp_path / "t.csv" if out else None
    grid = {"tag": NUMBER_LIKE, "seed": [0]}
    res = sweep(_type_of, grid, out=path, workers=0, progress=False)
    assert res.column("tag") == NUMBER_LIKE
    assert all(type(v) is str for v in res.column("tag"))
    # what trial_fn received, measured in the trial: str, of the given length
    assert res.column("kind") == ["str"] * len(NUMBER_LIKE)
    assert res.column("length") == [len(t) for t in NUMBER_LIKE]
    if out:  # resumed rows are read from the CSV text: they must not differ from new ones
        again = sweep(_type_of, grid, out=path, workers=0, progress=False)
        assert again.n_resumed == len(NUMBER_LIKE) and again.n_run == 0
        assert again.column("tag") == NUMBER_LIKE
        assert all(type(v) is str for v in again.column("tag"))


def test_mixed_types_that_write_alike_stay_apart(tmp_path) -> None:
    """1, "1", 1.0 and True are one CSV text each ("1", "1", "1.0", "True") and four trials; each
    row carries its own trial's value and type, on the first run and on resume."""
    grid = {"a": [1, "1", 1.0, True, "True", None, ""], "seed": [0]}
    path = tmp_path / "m.csv"
    for _ in range(2):
        res = sweep(lambda a, seed: {"t": type(a).__name__}, grid, out=path, workers=0,
                    progress=False)  # fmt: skip
        got = res.column("a")
        assert [(type(v), v) for v in got] == [(type(v), v) for v in grid["a"]]
        assert res.column("t") == [type(v).__name__ for v in grid["a"]]
    # the table's own reader has only the text: read_results keeps its documented rule
    assert sorted(map(repr, (r["a"] for r in read_results(path)))) == sorted(
        ["1", "1", "1.0", "True", "True", "None", "None"]
    )


# --------------------------------------------------------------------------------------
# the derived seed of every trial is in its row
# --------------------------------------------------------------------------------------
def _seed_echo(a: int, seed: int) -> dict:
    """What trial_fn received as its seed, and a draw from it."""
    return {"got": seed, "draw": float(np.random.default_rng(seed).random())}


def _odd_fails(a: int, seed: int) -> dict:
    if a % 2:
        raise ValueError(f"odd a={a}")
    return {"got": seed}


def test_derived_seeds_are_in_the_table_and_rerun_each_row_alone(tmp_path) -> None:
    """Regression: with derive_seeds=True the table held the grid's seed only, not the seed
    trial_fn received, so no row could be rerun on its own without recomputing the hash."""
    out = tmp_path / "d.csv"
    grid = {"a": [1, 2], "b": [0.5, 0.25], "seed": [0, 3]}
    res = sweep(_trials.arith_trial, grid, out=out, workers=0, progress=False, derive_seeds=True)
    assert res.columns[: res.columns.index("total")] == ["trial_id", "a", "b", "seed", "trial_seed"]
    assert [r["trial_seed"] for r in read_results(out)] == res.column("trial_seed")
    results = ["total", "draw", "label", "even"]
    for row in res.rows:
        params = {"a": row["a"], "b": row["b"], "seed": row["trial_seed"]}
        alone = _trials.arith_trial(**params)  # the trial rerun by hand from its row
        assert float(alone["total"]).hex() == row["total"].hex()
        assert alone["draw"].hex() == row["draw"].hex()
        assert (alone["label"], alone["even"]) == (row["label"], row["even"])
        # ... and as a one-trial sweep that passes the recorded seed as given
        again = sweep(_trials.arith_trial, [params], workers=0, progress=False)
        assert [again.rows[0][k] for k in results] == [row[k] for k in results]
        assert again.rows[0]["draw"].hex() == row["draw"].hex()
    assert len(set(res.column("trial_seed"))) == len(res.rows)  # unrelated streams


def test_the_seed_column_is_the_seed_trial_fn_received(tmp_path) -> None:
    """Measured in the trial, on error rows too, in new and resumed rows."""
    out = tmp_path / "e.csv"
    grid = {"a": [1, 2, 3], "seed": [5]}
    res = sweep(_seed_echo, grid, out=out, workers=0, progress=False, derive_seeds=True)
    assert res.column("got") == res.column("trial_seed")
    assert all(g != 5 for g in res.column("got"))  # derived, not the grid's
    again = sweep(_seed_echo, grid, out=out, workers=0, progress=False, derive_seeds=True)
    assert again.n_resumed == 3 and _values(again.rows) == _values(res.rows)
    errs = sweep(_odd_fails, grid, workers=0, progress=False, derive_seeds=True)
    assert errs.column("status") == ["error", "ok", "error"]
    assert errs.column("trial_seed") == res.column("trial_seed")  # error rows carry it too
    assert errs.rows[1]["got"] == errs.rows[1]["trial_seed"]
    # not derived: the grid's seed is the seed used; no second column
    plain = sweep(_seed_echo, grid, workers=0, progress=False)
    assert "trial_seed" not in plain.columns and plain.column("got") == [5, 5, 5]


def test_a_table_of_derived_seeds_without_the_column_is_refused(tmp_path) -> None:
    """A derive_seeds table written before the column existed: a clear refusal, not "holds a
    sweep over parameters [a, seed, got]"; a grid parameter with the column's name too."""
    out = tmp_path / "old.csv"
    out.write_text(
        "trial_id,a,seed,got,draw,part,n_parts,status,elapsed,error\n"
        "t0000000000000000,1,5,7,0.5,0,1,ok,0.1,\n"
    )
    with pytest.raises(sg.ProblemError, match="before tables recorded each trial's derived seed"):
        sweep(_seed_echo, {"a": [1], "seed": [5]}, out=out, workers=0, progress=False,
              derive_seeds=True)  # fmt: skip
    fresh = sweep(_seed_echo, {"a": [1], "seed": [5]}, out=out, workers=0, progress=False,
                  derive_seeds=True, resume=False)  # fmt: skip
    assert fresh.column("got") == fresh.column("trial_seed")
    with pytest.raises(sg.ProblemError, match="rename the grid parameter 'trial_seed'"):
        sweep(lambda trial_seed, seed: {}, {"trial_seed": [1], "seed": [0]}, workers=0,
              progress=False, derive_seeds=True)  # fmt: skip


# --------------------------------------------------------------------------------------
# a per-trial timeout
# --------------------------------------------------------------------------------------
def _sleepy(k: int, seed: int, log: str) -> dict:
    """Log this process and the seed received, sleep 2 s for k == 1, log the end."""
    with open(log, "a") as fh:
        fh.write(f"start {k} {os.getpid()} {seed}\n")
    if k == 1:
        time.sleep(2.0)
    with open(log, "a") as fh:
        fh.write(f"end {k}\n")
    return {"k2": 2 * k}


def test_a_hung_trial_becomes_a_timeout_row_and_the_others_finish(tmp_path) -> None:
    """Regression: there was no per-trial limit, so one hung trial held the sweep forever.
    With timeout=0.5 the trial sleeping 2 s is killed after 0.5 s and recorded, with its seed;
    the other trials' rows are all there."""
    log = tmp_path / "log"
    out = tmp_path / "t.csv"
    fn = functools.partial(_sleepy, log=str(log))
    grid = {"k": [0, 1, 2, 3], "seed": [7]}
    res = sweep(fn, grid, out=out, workers=2, timeout=0.5, derive_seeds=True, progress=False)
    assert res.column("status") == ["ok", "timeout", "ok", "ok"]
    assert res.column("k2") == [0, None, 4, 6] and res.n_errors == 1
    hung = res.rows[1]
    assert 0.5 <= hung["elapsed"] < 2.0  # stopped at the limit, before the trial's end
    assert "timeout=0.5 s" in hung["error"] and "killed" in hung["error"]
    lines = log.read_text().split("\n")
    start = next(ln.split() for ln in lines if ln.startswith("start 1 "))
    assert "end 1" not in lines
    assert int(start[3]) == hung["trial_seed"]  # the seed the hung trial received
    with pytest.raises(ProcessLookupError):  # its worker is gone, not left sleeping
        os.kill(int(start[2]), 0)
    assert [r["status"] for r in read_results(out)].count("timeout") == 1
    # resumed like an error row: kept, not rerun (retry_errors=True would rerun it)
    again = sweep(fn, grid, out=out, workers=2, timeout=0.5, derive_seeds=True, progress=False)
    assert (again.n_run, again.n_resumed) == (0, 4)
    assert _values(again.rows) == _values(res.rows)


@pytest.mark.parametrize("value", [0, -1.0, math.nan, math.inf, "1", True])
def test_timeout_values_are_checked(value) -> None:
    with pytest.raises(sg.ProblemError, match=r"'timeout' parameter of sweep must be a float"):
        sweep(_trials.failing_trial, {"k": [0]}, workers=1, timeout=value, progress=False)


def test_timeout_is_refused_where_a_trial_cannot_be_stopped() -> None:
    with pytest.raises(sg.ProblemError, match="needs worker processes: with workers=0"):
        sweep(_trials.failing_trial, {"k": [0]}, workers=0, timeout=1.0, progress=False)
    pytest.importorskip("distributed")
    with pytest.raises(sg.ProblemError, match="not available with a Dask scheduler"):
        sweep(_trials.failing_trial, {"k": [0]}, scheduler="tcp://127.0.0.1:1", timeout=1.0,
              progress=False)  # fmt: skip


def test_timeout_workers_that_die_or_cannot_import_are_sweep_errors(tmp_path) -> None:
    """The timeout's own worker processes keep the runner's contract: a worker that dies is a
    SweepError with the finished rows saved; trial_fn's module missing there is one too."""
    out = tmp_path / "crash.csv"
    with pytest.raises(SweepError, match="died abruptly"):
        sweep(_trials.crash_trial, {"k": [0, 1]}, out=out, workers=1, timeout=30.0,
              progress=False)  # fmt: skip
    assert [r["k_out"] for r in read_results(out)] == [0]
    mod = types.ModuleType("svmgeo_phantom_trials55")
    exec("def phantom(k):\n    return {'k2': 2 * k}\n", mod.__dict__)
    sys.modules[mod.__name__] = mod
    try:
        with pytest.raises(SweepError, match="trial_fn's module"):
            sweep(mod.phantom, {"k": [1]}, workers=1, timeout=30.0, progress=False)
    finally:
        del sys.modules[mod.__name__]


def test_timeout_on_the_command_line(capsys) -> None:
    parser = argparse.ArgumentParser()
    add_sweep_arguments(parser)
    assert sweep_options(parser.parse_args(["--timeout", "2.5"]))["timeout"] == 2.5
    assert sweep_options(parser.parse_args([]))["timeout"] is None
    for bad in ("0", "-1", "inf", "nan", "soon"):
        with pytest.raises(SystemExit):
            parser.parse_args(["--timeout", bad])
        assert "--timeout: expected a finite number of seconds > 0" in capsys.readouterr().err
    # timeout=False leaves --timeout out (for a command whose runner takes none)
    quiet = argparse.ArgumentParser()
    add_sweep_arguments(quiet, timeout=False)
    assert sweep_options(quiet.parse_args([]))["timeout"] is None
    with pytest.raises(SystemExit):
        quiet.parse_args(["--timeout", "1"])
