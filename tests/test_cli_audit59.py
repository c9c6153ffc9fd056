# SPDX-License-Identifier: BSD-3-Clause
"""Session 59: ``svmgeo train`` reports its final selection for every optimizer, by the
library's rule (the key of each query's largest logit at the final W; none on a tie)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.cli import main

# every rule of --optimizer but gd (whose selection the CLI printed already), with the options
# each needs; numpy kernels keep the runs short (no compilation)
OPTIMIZERS = [
    ["--optimizer", "adam"],
    ["--optimizer", "sign"],
    ["--optimizer", "spectral"],
    ["--optimizer", "steepest:1.5"],
    ["--optimizer", "mirror", "--exponent", "1.5"],
    ["--optimizer", "adam", "--param", "KQ"],
]
IDS = ["adam", "sign", "spectral", "steepest", "mirror", "adam-KQ"]


def _train(argv: list[str], capsys, as_json: bool) -> tuple[dict | list[str], np.ndarray]:
    """The run's output (JSON, or the summary's lines) and its saved final W."""
    save = argv[argv.index("--save") + 1]
    assert main(["train", *argv, *(["--json"] if as_json else [])]) == 0
    out = capsys.readouterr().out
    with np.load(save) as f:
        W = f["W"]
    return (json.loads(out) if as_json else out.splitlines()), W


def _summary_value(lines: list[str], key: str) -> str | None:
    """The value of ``key`` in the text summary (``key   value``), or None where absent."""
    found = [m[1] for line in lines if (m := re.fullmatch(rf"{key} +(.*)", line))]
    assert len(found) <= 1
    return found[0] if found else None


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
@pytest.mark.parametrize("optimizer", OPTIMIZERS, ids=IDS)
def test_train_reports_the_selection_of_every_optimizer(optimizer, as_json, tmp_path, capsys):
    """Regression: with --optimizer adam, sign, spectral, steepest:Q or mirror, train printed no
    selection at all (the run's history records GD's argmax only for gd). Expected: each
    query's argmax of the naive logits x_t^T W z at the saved final W, checked to be strict by
    far more than rounding (so it is the selection by any tie rule)."""
    data = sg.random_data(4, 5, 3, seed=3)
    path = tmp_path / "d.npz"
    data.save(path)
    argv = ["--data", str(path), "--steps", "80", "--backend", "numpy"]
    out, W = _train([*argv, *optimizer, "--save", str(tmp_path / "w.npz")], capsys, as_json)
    logits = np.einsum("ntd,de,ne->nt", np.asarray(data.X), W, np.asarray(data.queries)[:, 0])
    top2 = np.sort(logits, axis=1)[:, -2:]
    assert np.all(top2[:, 1] - top2[:, 0] > 1e-6 * np.abs(logits).max())  # untied, clearly
    expected = ",".join(map(str, np.argmax(logits, axis=1)))
    if as_json:
        assert isinstance(out, dict)
        assert out["selection"] == expected and "tied" not in out and "non_finite" not in out
    else:
        assert isinstance(out, list)
        assert _summary_value(out, "selection") == expected
        assert _summary_value(out, "tied") is None


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
@pytest.mark.parametrize("optimizer", OPTIMIZERS, ids=IDS)
def test_train_reports_no_selection_on_a_tie_for_every_optimizer(
    optimizer, as_json, tmp_path, capsys
):
    """Regression: on identical tokens (every W gives them equal logits, so every query's keys
    all tie) train printed no selection and no tied queries for these optimizers, where gd
    says ``"selection": null`` and lists the tied queries. Expected: the same for every rule,
    each query with all its keys (identical rows: tied by construction, whatever W is)."""
    X = np.ones((2, 3, 2))
    path = tmp_path / "d.npz"
    sg.TokenData(X, v=[1.0, 0.0], Y=[1.0, -1.0], query=0).save(path)
    argv = ["--data", str(path), "--steps", "30", "--backend", "numpy"]
    out, _ = _train([*argv, *optimizer, "--save", str(tmp_path / "w.npz")], capsys, as_json)
    tied = [f"sequence {i}: tokens [0, 1, 2]" for i in range(2)]
    if as_json:
        assert isinstance(out, dict)
        assert out["selection"] is None and out["tied"] == tied and "non_finite" not in out
    else:
        assert isinstance(out, list)
        assert _summary_value(out, "selection") == "none"
        assert _summary_value(out, "tied") == "; ".join(tied)
