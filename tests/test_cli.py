# SPDX-License-Identifier: BSD-3-Clause
"""The svmgeo command line."""

from __future__ import annotations

import json

import numpy as np

import svmgeo as sg
from svmgeo.cli import main


def test_solve_json_matches_python_api(capsys):
    assert main(["solve", "--n", "5", "--T", "4", "--d", "6", "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    res = sg.att_svm(sg.random_data(5, 4, 6, seed=1))
    assert out["status"] == "optimal"
    np.testing.assert_allclose(out["objective"], res.objective, rtol=1e-10)
    assert out["certificate"]["passed"] is True


def test_feasibility_reports_certificate_rows_on_saved_data(tmp_path, capsys):
    # the selected token 0 duplicates token 1: infeasible, certified by that row
    X = np.random.default_rng(0).normal(size=(2, 3, 4))
    X[1, 1] = X[1, 0]
    path = tmp_path / "d.npz"
    sg.TokenData(X, v=np.ones(4), Z=np.ones((2, 4))).save(path)
    assert main(["feasibility", "--data", str(path), "--alpha", "0,0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["feasible"] is False
    assert {(r["sequence"], r["competing"]) for r in out["certificate_rows"]} == {(1, 1)}


def test_bad_input_is_a_clean_error(capsys):
    assert main(["solve", "--n", "2", "--T", "3", "--d", "2", "--alpha", "0,7"]) == 2
    assert "token indices in [0, 2]" in capsys.readouterr().err
