# SPDX-License-Identifier: BSD-3-Clause
"""Session 58: the command line says which cause of a tied final selection applies (with its
remedy), a stationary stop in its own terms, and what a study of tied data can do."""

from __future__ import annotations

import json

import numpy as np
import pytest

import svmgeo as sg
from svmgeo._cli_messages import _LIBRARY_TIE_CAUSES, _LIBRARY_TIE_HINT, _tie_causes
from svmgeo.cli import main
from svmgeo.selection import TIE_RTOL, largest_logits

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
    assert (
        "use other data (e.g. another --seed); under any start they tie again whenever they win"
        in err
    )
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
    assert "use other data (e.g. another --seed) at sequence 1, whose tied tokens tie again" in err
    assert "whenever they win; starting elsewhere (e.g. --init-scale 0.1) may untie" in err


def test_tie_of_a_zero_query_hints_other_data(tmp_path, capsys) -> None:
    """Regression: with zero queries x^T W z = 0 for every W (and every key); the hint said
    "identical tokens, or a stationary start" and to start elsewhere, which cannot help."""
    X = np.array([[[1.0, 1.0], [1.0, -1.0]], [[1.0, 0.0], [0.0, 1.0]]])
    path = tmp_path / "zero.npz"
    sg.TokenData(X, v=np.array([1.0, 0.0]), Z=np.zeros((2, 2))).save(path)
    for start in ([], ["--init-scale", "0.1"]):
        assert main(["verify", "--data", str(path), "--steps", "20", *start]) == 2
        err = capsys.readouterr().err
        assert "(a zero query: every W gives them equal logits)" in err
        assert "use perturbed data; under any start they tie again whenever they win" in err


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


# Session 58, after review: one rule (cli._tied_by_every_w) for the ties that no start undoes,
# shared by train's stationary message and verify's tie hint; tokens equal within the tie
# tolerance.


@pytest.mark.parametrize(
    ("param", "queries"), [("W", {"query": 0}), ("KQ", {"query": 0}), ("p", {})]
)
def test_train_says_no_start_helps_where_every_query_sees_identical_keys(
    param, queries, tmp_path, capsys
) -> None:
    """Regression (review): on tokens all equal, every W (or p) gives equal logits, so every
    start is stationary; train said "start elsewhere (e.g. --init-scale 0.1)", then 1, 10,
    ... with 0 steps each time. It says no start changes that, checked from two starts."""
    path = tmp_path / "same.npz"
    sg.TokenData(np.ones((2, 3, 2)), v=[1, 0], Y=[1, -1], **queries).save(path)
    for scale in ("0.1", "10"):
        argv = ["train", "--data", str(path), "--steps", "5", "--param", param]
        assert main([*argv, "--init-scale", scale, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["status"] == "stationary" and out["steps"] == 0
        said = "W" if param != "p" else "p"
        assert out["message"].endswith(
            f"every query sees identical keys, so every {said} is stationary and no start "
            "changes that"
        )
        assert "start elsewhere" not in out["message"]


def _near(path) -> str:
    """One sequence of tokens (1, 1) and (1, 1 + 1e-15), each entry within TIE_RTOL of the
    other's (relative): their logits under any W differ by at most TIE_RTOL times the size of
    their terms, which the selection reads as tied except where the terms cancel."""
    X = np.array([[[1.0, 1.0], [1.0, 1.0 + 1e-15]]])
    assert np.all(np.abs(X[0, 0] - X[0, 1]) <= TIE_RTOL * np.abs(X[0]).max(axis=0))
    assert np.any(X[0, 0] != X[0, 1])
    sg.TokenData(X, v=np.array([1.0, 0.0]), Z=np.array([[1.0, 0.0]])).save(path)
    return str(path)


def test_tie_of_tokens_equal_within_the_tie_tolerance_hints_other_data(tmp_path, capsys) -> None:
    """Regression (review): tokens equal up to the tie tolerance but not exactly were called
    "distinct tokens" with "start elsewhere", forever (two starts checked here); the hint is
    other data, and train's stationary message says no start helps."""
    path = _near(tmp_path / "near.npz")
    for start in ([], ["--init-scale", "0.1"]):
        assert main(["verify", "--data", path, "--steps", "50", *start]) == 2
        err = capsys.readouterr().err
        assert (
            "(tokens equal within the tie tolerance: every W ties them, except where their "
            "terms cancel). A selection is one token per query: use perturbed data; under any "
            "start they tie again whenever they win. Tokens equal within the tie tolerance: "
            "each entry within TIE_RTOL = 1e-12 of the other's (relative)" in err
        )
        assert "round-off" not in err
        assert "start elsewhere" not in err and "distinct" not in err
    assert main(["train", "--data", path, "--steps", "5", "--json"]) == 0
    message = json.loads(capsys.readouterr().out)["message"]
    assert "every query sees keys equal within the tie tolerance (TIE_RTOL = 1e-12" in message
    assert "reads as tied except where the terms cancel: another start does not separate" in message
    assert "round-off" not in message and "stationary and" not in message
    assert "start elsewhere" not in message


def test_tie_of_identical_tokens_among_distinct_ones_says_which_fix_helps_which(
    tmp_path, capsys
) -> None:
    """Regression (review): tied tokens {a, a, b} (at W = 0) were "distinct ... start
    elsewhere", though a start can only let b win: twins that win tie again."""
    X = np.array([[[1.0, 1.0], [1.0, 1.0], [1.0, -1.0]]])
    path = tmp_path / "mixed.npz"
    sg.TokenData(X, v=np.array([1.0, 0.0]), Z=np.array([[1.0, 0.0]])).save(path)
    assert main(["verify", "--data", str(path), "--steps", "50"]) == 2
    err = capsys.readouterr().err
    assert (
        "sequence 0: tokens [0, 1, 2] (identical tokens among distinct ones at sequence 0 " in err
    )
    assert "(tokens [0, 1]): every W ties the equal ones, and W = 0 leaves" in err
    assert "identical tokens that win tie again: use perturbed data for those" in err


def test_tie_causes_sorts_each_query_by_what_can_untie_it() -> None:
    """Regression (review): _tie_causes sorted {a, a, b} as distinct. At W = 0 every visible
    key ties; by construction sequence 0 is {a, a, b}, 1 three distinct tokens, 2 {a, a, b}
    again, 3 identical tokens and 4 a zero query."""
    X = np.array(
        [[[1, 1], [1, 1], [1, -1]], [[1, 1], [1, -1], [-1, 0]], [[1, 0], [1, 0], [0, 1]],
         [[1, 0], [1, 0], [1, 0]], [[1, 1], [1, -1], [-1, 0]]],
        dtype=float,
    )  # fmt: skip
    Z = np.array([[1.0, 0.0]] * 4 + [[0.0, 0.0]])
    forced, mixed, distinct, near = _tie_causes(sg.TokenData(X, v=[1, 0], Z=Z), np.zeros((2, 2)))
    assert forced == {"sequence 3": "identical tokens", "sequence 4": "a zero query"}
    assert mixed == {"sequence 0": [[0, 1]], "sequence 2": [[0, 1]]}
    assert distinct == ["sequence 1"] and not near


def test_tie_of_distinct_tokens_after_a_random_start_names_ten_times_its_scale(
    tmp_path, capsys
) -> None:
    """Review: the hint's start (ten times the run's random scale, or another --seed) was
    checked on _other_start alone. Tokens (1, 1e-13), (1, -1e-13) differ far beyond the tie tolerance
    (W = e2 e1^T gives them logits +-1e-13, checked), but the random start's final W ties them
    up to TIE_RTOL: the hint names a start the run did not have."""
    X = np.array([[[1.0, 1e-13], [1.0, -1e-13], [-1.0, 0.0]]])
    W = np.array([[0.0, 0.0], [1.0, 0.0]])
    logits = X[0] @ W @ np.array([1.0, 0.0])
    assert logits[0] > logits[1] + TIE_RTOL * np.abs(logits).max()
    path = tmp_path / "close.npz"
    sg.TokenData(X, v=np.array([1.0, 0.0]), Z=np.array([[1.0, 0.0]])).save(path)
    for scale in (0.1, 0.5):
        argv = ["verify", "--data", str(path), "--steps", "50", "--init-scale", str(scale)]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "(distinct tokens that the final W gives equal logits)" in err
        assert f"start elsewhere (e.g. --init-scale {10 * scale:g} or another --seed)" in err


def test_the_library_tie_messages_still_say_what_the_cli_cuts_at(capsys) -> None:
    """The CLI cuts the library's tie messages at fixed phrases to drop their Python terms;
    this fails when a rewording of the library loses a phrase (the CLI would then show the
    Python terms). The CLI's messages of the same ties carry no Python terms."""
    data = sg.random_data(2, 2, 1, seed=0)  # sequence 1's two tokens are identical
    with pytest.raises(sg.TieError) as tie:
        sg.optimal_tokens(data)
    assert _LIBRARY_TIE_HINT in str(tie.value) and "ties='first'" in str(tie.value)
    with pytest.raises(sg.TieError) as final:
        sg.verify(data, n_steps=20, backend="numpy")
    assert _LIBRARY_TIE_CAUSES in str(final.value) and "init=(" in str(final.value)
    for argv, said in ((["solve", *TINY[:6]], "optimal tokens are not unique for 1 query"),
                       (["verify", *TINY], "GD's final selection is tied for 1 query")):  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert said in err and "sequence 1: tokens [0, 1]" in err
        assert "ties=" not in err and "init=" not in err and "gen_svm" not in err


# Session 58, second review: ties grouped without a call per pair of tokens; data whose keys
# score alike make every W stationary under softmax; near-equal tokens are not said to be
# equal "up to round-off" under "every W".


def test_tie_causes_checks_the_tied_tokens_without_a_call_per_pair(monkeypatch) -> None:
    """Regression (review): grouping a query's tied tokens called tied_maxima once per token
    and group, O(T^2) calls per query (verify --n 10 --T 300 took 16 s, 0.8 s before session
    58). 300 distinct tokens tied at W = 0 are checked with a few calls per query."""
    import svmgeo.selection as selection

    calls = []
    tied_maxima = selection.tied_maxima
    monkeypatch.setattr(
        selection, "tied_maxima", lambda *a, **k: calls.append(1) or tied_maxima(*a, **k)
    )
    data = sg.random_data(2, 300, 4, seed=0)
    assert len(np.unique(np.asarray(data.X)[0], axis=0)) == 300  # distinct tokens
    forced, mixed, distinct = _tie_causes(data, np.zeros((4, 4)))[:3]
    assert forced == {} and mixed == {} and distinct == ["sequence 0", "sequence 1"]
    assert len(calls) <= 1 + 3 * 2  # one for the selection at W, at most three per query


def test_train_says_every_w_is_stationary_where_each_query_s_keys_score_alike(
    tmp_path, capsys
) -> None:
    """Regression (review): distinct tokens whose scores v^T x are equal within each query
    (1 and 1 here, checked) give softmax's output v^T X^T s = 1 at every W, so the loss does
    not depend on W; train said "start elsewhere (e.g. --init-scale 0.1)", then 1, 10, ...
    It says every W is stationary, from two starts; not under --attention relu, whose
    weights do not sum to 1 (the run moves)."""
    X = np.array([[[1.0, 0.0], [1.0, 1.0]], [[1.0, 2.0], [1.0, -1.0]]])
    v = np.array([1.0, 0.0])
    assert np.all(X @ v == 1.0)
    path = tmp_path / "eqscore.npz"
    sg.TokenData(X, v=v, Y=[1, -1], Z=[[1, 0], [0, 1]]).save(path)
    argv = ["train", "--data", str(path), "--steps", "5", "--json"]
    for extra in ([], ["--init-scale", "0.1"], ["--param", "KQ"]):
        assert main([*argv, *extra]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["status"] == "stationary" and out["steps"] == 0
        assert out["message"].endswith(
            "every query's visible keys score alike (equal v^T x) and softmax's weights sum to "
            "1, so the output, hence the loss, is the same at every W: every W is stationary "
            "and no start changes that"
        )
    assert main([*argv, "--attention", "relu"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] != "stationary" and "score alike" not in out["message"]


def test_keys_score_alike_by_their_values_not_their_tokens(tmp_path, capsys) -> None:
    """Regression (final reread): the scores that make softmax's output constant are
    Y v^T u, u the values where given; _scores_alike read v^T x. Tokens whose v^T x differ
    (0 and 1, checked) with values whose v^T u are equal (1 and 1, checked): the output, hence
    the loss, is the same at every W; train said "start elsewhere (e.g. --init-scale 0.1)"."""
    X = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]])
    U = np.array([[[1.0, 0.0], [1.0, 5.0]], [[1.0, -2.0], [1.0, 3.0]]])
    v = np.array([1.0, 0.0])
    assert np.all(U @ v == 1.0) and not np.all(X @ v == (X @ v)[:, :1])
    path = tmp_path / "alike_values.npz"
    sg.TokenData(X, values=U, v=v, Y=[1, -1], Z=[[1, 1], [1, -1]]).save(path)
    assert main(["train", "--data", str(path), "--steps", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "stationary" and out["steps"] == 0
    assert out["message"].endswith(
        "every query's visible keys score alike (equal v^T u, u the values) and softmax's "
        "weights sum to 1, so the output, hence the loss, is the same at every W: every W is "
        "stationary and no start changes that"
    )


def test_tie_causes_reads_the_ties_verify_refused() -> None:
    """Regression (final reread): _tie_causes recomputed the tied keys without W, so by the
    logits' magnitudes alone, not by the sizes of their terms as verify's final selection
    (largest_logits) does. Keys (2^53, 1, -2^53) and (0.5, 0, 0) under W = I, z = (1, 1, 1):
    exact logits 1 and 0.5, computed 0 and 0.5; verify reads them tied, _tie_causes found no
    tied query and the hint named no cause."""
    data = sg.TokenData(
        np.array([[[2.0**53, 1.0, -(2.0**53)], [0.5, 0.0, 0.0]]]),
        v=np.array([1.0, 0.0, 0.0]),
        Z=np.ones((1, 3)),
    )
    W = np.eye(3)
    alpha, tied, _ = largest_logits(data, W)
    assert alpha is None and len(tied) == 1
    assert _tie_causes(data, W) == ({}, {}, ["sequence 0"], False)
