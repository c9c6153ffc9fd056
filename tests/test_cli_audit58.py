# SPDX-License-Identifier: BSD-3-Clause
"""Session 58: the command line says which cause of a tied final selection applies (with its
remedy), a stationary stop in its own terms, and what a study of tied data can do."""

from __future__ import annotations

import json

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.cli import main

TINY = ["--n", "2", "--T", "2", "--d", "1", "--steps", "50", "--backend", "numpy"]


def _symmetric(path) -> str:
    """One sequence whose two top-score tokens (1, 1) and (1, -1) are mirror images in e2,
    as the third token (-1, 0) and the query e1 are: GD from W = 0 keeps W's e2 row zero, so
    their logits stay exactly equal, and a random start breaks the symmetry."""
    X = np.array([[[1.0, 1.0], [1.0, -1.0], [-1.0, 0.0]]])
    sg.TokenData(X, v=np.array([1.0, 0.0]), Z=np.array([[1.0, 0.0]])).save(path)
    return str(path)


def _identical(data: sg.TokenData, i: int, tokens: list[int]) -> bool:
    return bool(np.all(np.asarray(data.X)[i, tokens] == np.asarray(data.X)[i, tokens[0]]))


def test_tie_of_identical_tokens_hints_other_data_not_another_start(capsys) -> None:
    """Regression: verify's tie hint listed both causes, "identical tokens, or a stationary
    start such as K = Q = 0", and hinted "start elsewhere (e.g. --init-scale 0.1)", though
    here the tied tokens are identical (checked on the data) and every W ties them."""
    data = sg.random_data(2, 2, 1, seed=0)
    assert _identical(data, 1, [0, 1]) and not _identical(data, 0, [0, 1])
    assert main(["verify", *TINY]) == 2
    err = capsys.readouterr().err
    assert "sequence 1: tokens [0, 1] (identical tokens: every W gives" in err
    assert "use other data (e.g. another --seed); another start ties them again" in err
    assert "stationary start" not in err and "start elsewhere" not in err


def test_tie_of_distinct_tokens_hints_a_start_that_unties_them(tmp_path, capsys) -> None:
    """Regression: on mirror-image tokens (distinct) the hint named identical tokens too. It
    names distinct tokens that the final W does not separate, and the start it suggests
    unties them (verify then answers)."""
    path = _symmetric(tmp_path / "sym.npz")
    argv = ["verify", "--data", path, "--steps", "200", "--backend", "numpy"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "(distinct tokens that the final W gives equal logits)" in err
    assert "identical" not in err and "K = Q = 0" not in err
    assert "start elsewhere (e.g. --init-scale 0.1), or use perturbed data" in err
    assert main([*argv, "--init-scale", "0.1"]) == 0
    assert "error" not in capsys.readouterr().err


def test_tie_with_both_causes_names_each_query(capsys) -> None:
    """Regression: from linear attention's stationary zero start, sequence 0's distinct tokens
    and sequence 1's identical ones tie (checked on the data); the hint said both causes
    for all. It names each query's cause and what helps there."""
    data = sg.random_data(2, 2, 1, seed=0)
    assert _identical(data, 1, [0, 1]) and not _identical(data, 0, [0, 1])
    assert main(["verify", *TINY, "--attention", "linear"]) == 2
    err = capsys.readouterr().err
    assert "identical tokens at sequence 1, tied by every W" in err
    assert "distinct tokens that W = 0 gives equal logits at sequence 0" in err
    assert "the only fix at sequence 1; starting elsewhere (e.g. --init-scale 0.1)" in err


def test_tie_of_a_zero_query_hints_other_data(tmp_path, capsys) -> None:
    """Regression: with zero queries x^T W z = 0 for every W (and every key); the hint said
    "identical tokens, or a stationary start" and to start elsewhere, which cannot help."""
    X = np.array([[[1.0, 1.0], [1.0, -1.0]], [[1.0, 0.0], [0.0, 1.0]]])
    path = tmp_path / "zero.npz"
    sg.TokenData(X, v=np.array([1.0, 0.0]), Z=np.zeros((2, 2))).save(path)
    for start in ([], ["--init-scale", "0.1"]):
        assert main(["verify", "--data", str(path), "--steps", "20", *start]) == 2
        err = capsys.readouterr().err
        assert "(a zero query: every W gives the tied tokens equal logits)" in err
        assert "use perturbed data; another start ties them again" in err


@pytest.mark.parametrize(
    ("argv", "cause"),
    [
        (["--attention", "linear"], "a stationary point (W = 0); start elsewhere (e.g. --init-scale 0.1)"),
        (["--T", "1"], "every query sees a single key (T = 1 or the data's mask), so every W is stationary"),
        (["--param", "KQ", "--init-scale", "0"], "K = Q = 0 of --param KQ, which --init-scale 0.1 avoids"),
    ],
)  # fmt: skip
def test_train_says_a_stationary_stop_in_options(argv, cause, capsys) -> None:
    """Regression: svmgeo train's message of a stationary stop was the library's, "(e.g.
    K = Q = 0 with param='KQ', which init=('random', 0.1) avoids; where every query sees a
    single key, ... no start helps)", Python terms and both cases at once. It says the case
    that applies in options; Python callers keep the library's message."""
    assert main(["train", *TINY[:6], "--steps", "5", "--backend", "numpy", *argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "stationary"
    assert out["message"].startswith("stopped after 0 steps: the gradient is exactly zero")
    assert cause in out["message"]
    assert "param=" not in out["message"] and "init=" not in out["message"]
    run = sg.train(sg.random_data(2, 2, 1, seed=0), attention="linear", n_steps=5)
    assert "param='KQ'" in run.message  # the library's message, for Python callers


def _tied_study_data() -> sg.TokenData:
    """random_data(3, 4, 6, seed=0) with sequence 0's optimal token copied to the next index."""
    data = sg.random_data(3, 4, 6, seed=0)
    t = int(sg.optimal_tokens(data)[0])
    X = np.array(data.X)
    X[0, (t + 1) % data.T] = X[0, t]
    return sg.TokenData(X, Y=data.Y, v=data.v, Z=data.Z)


def test_study_of_tied_data_says_what_a_study_user_can_do(tmp_path) -> None:
    """Regression: study's note hinted "pass alpha=sg.optimal_tokens(...)", though study takes
    no alpha, and its markdown row "Att-SVM(opt)" read "no optimal selection (tie): " with
    nothing after. The note names the calls that take a selection; the row says why."""
    data = _tied_study_data()
    rep = sg.study(data, progress=False)
    assert rep.opt is None and rep.status == "no optimal selection (tie)"
    (note,) = [n for n in rep.notes if "not unique" in n]
    assert "alpha=" not in note
    assert "sg.att_svm(data, alpha)" in note and "optimal_tokens(data, ties='first')" in note
    (row,) = [r for r in rep.to_markdown().splitlines() if r.startswith("| Att-SVM(opt) |")]
    said = row.split("no optimal selection (tie):", 1)[1].strip(" |")
    assert said.startswith("Att-SVM(opt) is not studied") and "see notes" in said
    # the call the note suggests takes the lowest tied tokens and answers: infeasible (proved),
    # as the selected token's identical twin gives the row (x_a - x_b)^T W z = 0 >= 1
    alpha = sg.optimal_tokens(data, ties="first")
    assert sg.att_svm(data, alpha).status.is_infeasible
