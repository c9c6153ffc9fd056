# SPDX-License-Identifier: BSD-3-Clause
"""Session 57 (H): errors and notes of ``svmgeo reproduce`` and ``svmgeo study`` in the
command line's terms: a dead worker's "workers=0" reads "--workers 0"; a study of tied data
hints the commands taking --alpha, not ``optimal_tokens(data, ties='first')``."""

from __future__ import annotations

import json

import numpy as np

import svmgeo as sg
from svmgeo.cli import main
from svmgeo.experiments import Experiment
from svmgeo.experiments._registry import EXPERIMENTS  # registered for one test, then removed
from tests.experiments import _trials


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


def _tied_data() -> tuple[sg.TokenData, list[int]]:
    """random_data(3, 4, 6, seed=0) with sequence 0's optimal token copied to the next index:
    the two tie; the lowest-index choice, from the untied data's optimal tokens."""
    data = sg.random_data(3, 4, 6, seed=0)
    opt = [int(t) for t in sg.optimal_tokens(data)]
    X = np.array(data.X)
    other = (opt[0] + 1) % data.T
    X[0, other] = X[0, opt[0]]
    return sg.TokenData(X, Y=data.Y, v=data.v, Z=data.Z), [min(opt[0], other), *opt[1:]]


def test_study_of_tied_data_hints_cli_options(tmp_path, capsys) -> None:
    """Regression: the report's note on tied optimal tokens, in study.md, study.json and the
    printed summary, told the command line's user to call optimal_tokens(data, ties='first');
    it now names the commands that take --alpha on this file, with the lowest tied tokens.
    In Python the note keeps the library's wording."""
    data, lowest = _tied_data()
    path = tmp_path / "tied.npz"
    data.save(path)
    out = tmp_path / "report"
    code = main(["study", str(path), "--out", str(out), "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0
    alpha = "--alpha " + ",".join(map(str, lowest))
    texts = {
        "stdout": printed,
        "study.md": (out / "study.md").read_text(),
        "study.json": "\n".join(json.loads((out / "study.json").read_text())["notes"]),
    }
    for where, text in texts.items():
        assert "ties='first'" not in text and "alpha=" not in text, (where, text)
        assert f"svmgeo solve (or support, feasibility) --data {path}" in text, (where, text)
        assert alpha in text and "tokens [" in text, (where, text)
    notes = sg.study(data, progress=False).notes
    assert any("optimal_tokens(data, ties='first')" in note for note in notes), notes
