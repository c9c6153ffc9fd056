# SPDX-License-Identifier: BSD-3-Clause
"""Session 56: read_results reads parameters with their grid's types (recorded in the
sidecar), resume messages name ``trial_seed`` a derived column, and ``reproduce`` passes
``timeout`` to its sweep."""

from __future__ import annotations

import functools
import json
import math
import os
import time

import pytest

import svmgeo as sg
from svmgeo.experiments import Experiment, read_results, reproduce, sweep
from svmgeo.experiments._registry import EXPERIMENTS  # registered for one test, then removed


def _echo(tag: object, seed: int) -> dict:
    return {"kind": type(tag).__name__}


def _typed(rows: list[dict], name: str) -> list[tuple[type, object]]:
    return [(type(r[name]), r[name]) for r in rows]


# --------------------------------------------------------------------------------------
# read_results: the grid's types
# --------------------------------------------------------------------------------------
STRINGS = ["007", "1e3", "-0", "inf", "nan", "True", "", "x"]
"""String grid values that the CSV cell rule (``parse_cell``) reads as other values (all but
``"x"``)."""


def test_read_results_reads_string_parameters_as_strings(tmp_path) -> None:
    """Regression: read_results read every cell by the CSV rule, so the string parameter "007"
    came back as the int 7, "1e3" as 1000.0 and "" as None, while trial_fn had received the
    strings (and sweep's own rows said so)."""
    out = tmp_path / "s.csv"
    res = sweep(_echo, {"tag": STRINGS, "seed": [0]}, out=out, workers=0, progress=False)
    assert res.column("kind") == ["str"] * len(STRINGS)  # what the trials received
    rows = read_results(out)  # workers=0: file order is grid order
    assert _typed(rows, "tag") == [(str, t) for t in STRINGS]
    assert [r["seed"] for r in rows] == [0] * len(STRINGS)  # an int parameter stays an int
    json.loads((tmp_path / "s.csv.sweep.json").read_text())  # the record is JSON


def test_strings_that_another_type_writes_alike_read_by_the_csv_rule(tmp_path) -> None:
    """In a parameter whose grid mixes strings and other types, a cell is the string unless a
    value of another of its types writes the same text: "007" (no int writes it) is the
    string, 7 and "7" are both the cell 7 and read as the int (documented)."""
    grid = {"tag": ["007", 7, "7", "x", None, 2.5, "2.50"], "seed": [0]}
    out = tmp_path / "m.csv"
    res = sweep(_echo, grid, out=out, workers=0, progress=False)
    assert _typed(res.rows, "tag") == _typed([{"tag": v} for v in grid["tag"]], "tag")
    want = ["007", 7, 7, "x", None, 2.5, "2.50"]  # "2.50": repr(2.5) is "2.5", not "2.50"
    assert _typed(read_results(out), "tag") == [(type(v), v) for v in want]


def test_a_resumed_table_reads_with_the_types_of_every_sweep_that_wrote_it(tmp_path) -> None:
    """The int 5 written by a first sweep stays the int 5 after a resumed sweep over strings
    only (whose own grid would read the cell "5" as a string)."""
    out = tmp_path / "r.csv"
    sweep(_echo, {"tag": [5], "seed": [0]}, out=out, workers=0, progress=False)
    sweep(_echo, {"tag": ["x", "08"], "seed": [0]}, out=out, workers=0, progress=False)
    assert _typed(read_results(out), "tag") == [(int, 5), (str, "x"), (str, "08")]
    # resume=False starts the record afresh with the table
    sweep(_echo, {"tag": ["5"], "seed": [0]}, out=out, workers=0, progress=False, resume=False)
    assert _typed(read_results(out), "tag") == [(str, "5")]


def test_tables_without_the_record_read_as_before(tmp_path) -> None:
    """No sidecar, or one written before it recorded types (no "param_types"): every cell by
    the CSV rule, as before; resuming such a table records no types either (its old rows'
    types are unknown)."""
    out = tmp_path / "o.csv"
    side = tmp_path / "o.csv.sweep.json"
    sweep(_echo, {"tag": ["007"], "seed": [0]}, out=out, workers=0, progress=False)
    settings = json.loads(side.read_text())
    del settings["param_types"]
    side.write_text(json.dumps(settings))
    assert read_results(out)[0]["tag"] == 7
    sweep(_echo, {"tag": ["007", "09"], "seed": [0]}, out=out, workers=0, progress=False)
    assert "param_types" not in json.loads(side.read_text())
    assert [r["tag"] for r in read_results(out)] == [7, 9]
    side.unlink()
    assert [r["tag"] for r in read_results(out)] == [7, 9]
    side.write_text("[not a mapping")  # unreadable: as without one
    assert [r["tag"] for r in read_results(out)] == [7, 9]


def test_a_refused_sweep_leaves_the_recorded_types(tmp_path) -> None:
    """Regression (review of session 56): the record was widened by the grid's types before
    the row-id check, so a resume refused for a clash (the int 7 and the string "7" write
    one cell) made the string rows read back as ints. The refusal names the row as the table
    holds it: the string "7"."""
    out = tmp_path / "c.csv"
    sweep(_echo, {"tag": ["7", "x"], "seed": [0]}, out=out, workers=0, progress=False)
    with pytest.raises(sg.ProblemError, match="under trial id") as info:
        sweep(_echo, {"tag": [7], "seed": [0]}, out=out, workers=0, progress=False)
    assert _typed(read_results(out), "tag") == [(str, "7"), (str, "x")]
    assert "with parameters {'tag': '7', 'seed': 0} under" in str(info.value)


def _interrupted(tag: object, seed: int) -> dict:
    """Ctrl-C on the int values (a KeyboardInterrupt is not a trial error: it stops sweep)."""
    if isinstance(tag, int):
        raise KeyboardInterrupt
    return {"kind": type(tag).__name__}


def test_a_sweep_stopped_before_a_row_of_a_new_type_leaves_the_recorded_types(tmp_path) -> None:
    """Types are recorded as rows are written: a sweep over ["7", 5] stopped (Ctrl-C) after
    the row of "7", before any int row, records only str, so "7" reads back as the string
    (with int recorded too it would read as the int 7); so does resuming it, stopped again."""
    out = tmp_path / "k.csv"
    for _ in range(2):
        with pytest.raises(KeyboardInterrupt):
            sweep(_interrupted, {"tag": ["7", 5], "seed": [0]}, out=out, workers=0,
                  progress=False)  # fmt: skip
        assert _typed(read_results(out), "tag") == [(str, "7")]
    side = json.loads((tmp_path / "k.csv.sweep.json").read_text())
    assert side["param_types"] == {"tag": ["str"], "seed": ["int"]}


# --------------------------------------------------------------------------------------
# resume messages: trial_seed is a derived column, not a parameter
# --------------------------------------------------------------------------------------
def test_resume_message_names_trial_seed_a_derived_column(tmp_path) -> None:
    """Regression: a derive_seeds table resumed by a grid with other parameters read "this
    grid has parameters ['a', 'b', 'seed', 'trial_seed']": trial_seed is no grid parameter
    (a grid parameter of that name is refused with derive_seeds=True)."""
    out = tmp_path / "d.csv"
    sweep(lambda a, seed: {"x": a}, {"a": [1], "seed": [0]}, out=out, workers=0,
          progress=False, derive_seeds=True)  # fmt: skip
    with pytest.raises(sg.ProblemError) as info:
        sweep(lambda a, b, seed: {"x": a}, {"a": [1], "b": [2], "seed": [0]}, out=out,
              workers=0, progress=False, derive_seeds=True)  # fmt: skip
    text = str(info.value)
    assert "this sweep has parameters ['a', 'b', 'seed'], then the column 'trial_seed'" in text
    assert "derived from its parameters with derive_seeds=True" in text
    assert "'seed', 'trial_seed']" not in text.split("but")[1]  # not in the grid's list


# --------------------------------------------------------------------------------------
# reproduce(timeout=...)
# --------------------------------------------------------------------------------------
def _sleepy(k: int, seed: int) -> dict:
    """Sleep 2 s for k == 1."""
    if k == 1:
        time.sleep(2.0)
    return {"k2": 2 * k, "pid": os.getpid()}


def _summarize(rows: list[dict]) -> tuple[dict, list[dict]]:
    return {"finished": len(rows)}, [{"k": r["k"], "k2": r["k2"]} for r in rows]


def _sleepy_experiment() -> Experiment:
    return Experiment(
        name="_audit56_sleepy",
        title="a trial that hangs",
        trial=_sleepy,
        grid=lambda quick: {"k": [0, 1, 2], "seed": [0]},
        summarize=_summarize,
        plot=lambda rows, summary, path: [],
    )


def test_reproduce_passes_timeout_to_its_sweep(tmp_path, monkeypatch) -> None:
    """Regression: reproduce took no timeout, so one hung trial held an experiment forever;
    now the trial sleeping 2 s is stopped at 0.5 s, a timeout row, and the summary has the
    others."""
    exp = _sleepy_experiment()
    monkeypatch.setitem(EXPERIMENTS, exp.name, exp)
    res = reproduce(exp.name, quick=True, out=tmp_path, workers=2, progress=False, timeout=0.5)
    assert res.sweep.column("status") == ["ok", "timeout", "ok"]
    assert res.n_errors == 1 and res.headline == {"finished": 2}
    hung = res.sweep.rows[1]
    assert 0.5 <= hung["elapsed"] < 2.0 and "timeout=0.5 s" in hung["error"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"timeout": -1.0}, r"'timeout' parameter of reproduce"),
        ({"timeout": math.nan}, r"'timeout' parameter of reproduce"),
        ({"timeout": "1"}, r"'timeout' parameter of reproduce"),
        ({"timeout": 1.0, "workers": 0}, r"'timeout' parameter of reproduce needs worker"),
    ],
)
def test_reproduce_checks_timeout_before_any_work(tmp_path, kwargs, match) -> None:
    """As sweep's checks, named for reproduce, before 'out' is created."""
    out = tmp_path / "new"
    with pytest.raises(sg.ProblemError, match=match):
        reproduce("rank", quick=True, out=out, progress=False, **kwargs)
    assert not out.exists()


def test_reproduce_refuses_timeout_with_a_scheduler(tmp_path) -> None:
    pytest.importorskip("distributed")
    with pytest.raises(sg.ProblemError, match=r"'timeout' parameter of reproduce is not avail"):
        reproduce("rank", quick=True, out=tmp_path / "new", scheduler="tcp://127.0.0.1:1",
                  timeout=1.0)  # fmt: skip
    assert not (tmp_path / "new").exists()


def test_sweep_keeps_its_own_timeout_messages() -> None:
    with pytest.raises(sg.ProblemError, match=r"'timeout' parameter of sweep needs worker"):
        sweep(functools.partial(_sleepy, seed=0), {"k": [0]}, workers=0, timeout=1.0,
              progress=False)  # fmt: skip
