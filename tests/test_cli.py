# SPDX-License-Identifier: BSD-3-Clause
"""The svmgeo command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

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


def test_verify_writes_report_and_figure(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    fig = tmp_path / "verify.png"
    args = ["verify", "--n", "6", "--T", "8", "--d", "10", "--seed", "2", "--steps", "2000"]
    assert main([*args, "--backend", "numpy", "--figure", str(fig), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["is_optimal"] is True and out["converged_to"] == "fro"
    assert out["corr_fro"][-1] > 0.99
    assert fig.stat().st_size > 10_000 and fig.read_bytes()[:4] == b"\x89PNG"


def test_train_kq_starts_off_the_stationary_origin(tmp_path, capsys):
    save = tmp_path / "w.npz"
    args = ["train", "--n", "4", "--T", "5", "--d", "6", "--seed", "1", "--param", "KQ"]
    assert main([*args, "--steps", "300", "--backend", "numpy", "--save", str(save), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] != "stationary" and out["norm_W"] > 1.0
    assert out["saved"] == str(save)
    with np.load(save) as f:
        np.testing.assert_allclose(np.linalg.norm(f["W"]), out["norm_W"], rtol=1e-12)
        np.testing.assert_allclose(f["K"] @ f["Q"].T, f["W"], rtol=1e-12, atol=1e-14)


def test_lots_lists_the_optimal_selection(capsys):
    assert main(["lots", "--n", "4", "--T", "3", "--d", "2", "--seed", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    opt = ",".join(str(t) for t in sg.optimal_tokens(sg.random_data(4, 3, 2, seed=0)))
    assert {"selection": opt, "optimal": True} in out["lots"]
    assert out["examined"] + out["pruned"] == out["selections_total"] == 81
