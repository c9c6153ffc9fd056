# SPDX-License-Identifier: BSD-3-Clause
"""Session 57 (H): reproduce's error where no trial finished counts the trials that timed out
and those that raised (it said "each one raised" of trials that had all timed out)."""

from __future__ import annotations

import time

import pytest

from svmgeo.cli import main
from svmgeo.experiments import Experiment, SweepError, reproduce
from svmgeo.experiments._registry import EXPERIMENTS  # registered for one test, then removed

from . import _trials


def _raise_or_hang(k: int) -> dict:
    """k == 0 raises at once; every other k sleeps far past the tests' timeout."""
    if k == 0:
        raise ValueError("k=0 raises")
    time.sleep(120.0)
    return {"k2": 2 * k}


def _experiment() -> Experiment:
    return Experiment(
        name="_audit57_hang",
        title="one trial raises, two hang",
        trial=_raise_or_hang,
        grid=lambda quick: {"k": [0, 1, 2]},
        summarize=lambda rows: ({"finished": len(rows)}, [{"k": r["k"]} for r in rows]),
        plot=lambda rows, summary, path: [],
    )


def test_no_trial_finished_counts_timeouts_and_errors(tmp_path, monkeypatch) -> None:
    """Regression: two trials stopped at the timeout and one that raised were reported as
    "no trial finished (each one raised)"; the message now counts each status, as the trial
    table records them, and asks for more time than the timeout given."""
    exp = _experiment()
    monkeypatch.setitem(EXPERIMENTS, exp.name, exp)
    with pytest.raises(SweepError) as info:
        reproduce(exp.name, quick=True, out=tmp_path, workers=2, progress=False, timeout=2.0)
    message = str(info.value)
    assert "no trial finished (2 timed out, 1 raised)" in message, message
    assert "each one raised" not in message and "more time than timeout=2 s" in message, message
    with (tmp_path / f"{exp.name}-quick.csv").open() as fh:
        table = fh.read()
    assert table.count(",timeout,") == 2 and table.count(",error,") == 1, table
    assert not (tmp_path / f"{exp.name}-quick_summary.csv").exists()


def test_cli_says_the_timeout_as_its_option(tmp_path, monkeypatch, capsys) -> None:
    """The command line prints the same count, the timeout as --timeout (exit 1: the trials
    ran and none finished)."""
    exp = _experiment()
    monkeypatch.setitem(EXPERIMENTS, exp.name, exp)
    code = main(["reproduce", exp.name, "--quick", "--out", str(tmp_path), "--workers", "2",
                 "--timeout", "2", "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err
    assert "(2 timed out, 1 raised)" in err and "more time than --timeout 2 s" in err, err
    assert "timeout=" not in err, err


def test_reproduce_worker_died_names_the_workers_option(tmp_path, monkeypatch, capsys) -> None:
    """Regression: reproduce printed the SweepError of a dead worker as the library wrote it,
    "(workers=0 runs it in this process)"; it now reads "--workers 0", as other errors do."""
    exp = Experiment(
        name="_audit57_crash",
        title="trial k=1 kills its process",
        trial=_trials.crash_trial,
        grid=lambda quick: {"k": [1]},
        summarize=lambda rows: ({}, []),
        plot=lambda rows, summary, path: [],
    )
    monkeypatch.setitem(EXPERIMENTS, exp.name, exp)
    code = main(["reproduce", exp.name, "--quick", "--out", str(tmp_path), "--workers", "1",
                 "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err
    assert "worker process died" in err and "(--workers 0 runs it in this process)" in err, err
    assert "workers=0" not in err, err
