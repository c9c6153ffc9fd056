# SPDX-License-Identifier: BSD-3-Clause
"""Session 57 (H): errors and notes of ``svmgeo reproduce`` and ``svmgeo study`` in the
command line's terms: a study of tied data hints the commands taking --alpha, not
``optimal_tokens(data, ties='first')`` (the dead worker's "--workers 0" is in
tests/experiments/test_registry_audit57.py)."""

from __future__ import annotations

import json

import numpy as np

import svmgeo as sg
from svmgeo.cli import main


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
