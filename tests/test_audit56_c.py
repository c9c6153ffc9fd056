# SPDX-License-Identifier: BSD-3-Clause
"""Session 56 audit (task C): the command line names its own options, load_data's format
message, negative --alpha lists, mean_loss with an infinite term, study of a tied W."""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.cli import _in_cli_terms, build_parser, main
from svmgeo.gd._xp import mean_loss

M = float(np.finfo(float).max)
SIZES = ["--n", "3", "--T", "3", "--d", "4"]


# -- 1. library errors in the command line's terms ------------------------------------------
@pytest.mark.parametrize("command", ["solve", "support", "feasibility", "lots", "train", "verify"])
@pytest.mark.parametrize("query", ["5", "-4"])
def test_an_out_of_range_query_names_the_option_and_its_range(capsys, command, query):
    # before: "The 'query' parameter of random_data must be an int in [-3, 2]"
    assert main([command, *SIZES, "--query", query]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    # and, since the option takes it too (review of 1e3c3ff), "or all"
    assert f"--query must be an int in [-3, 2] or all. Got {query} instead." in err
    assert "random_data" not in err and "parameter" not in err


def test_m_without_kq_names_the_options(capsys):
    # before: "The 'm' parameter of train ... applies to param='KQ' only; got m=3 with
    # param='p'. Drop m, or pass param='KQ'."
    assert main(["train", *SIZES, "--param", "p", "--m", "3"]) == 2
    err = capsys.readouterr().err
    assert "--m is the width of K and Q and applies to --param KQ only" in err
    assert "got --m 3 with --param p. Drop --m, or pass --param KQ." in err
    assert "param=" not in err and "parameter" not in err


def test_generator_sizes_beyond_its_limit_name_the_options(capsys):
    assert main(["solve", "--n", "100000", "--T", "1000", "--d", "1000"]) == 2
    err = capsys.readouterr().err
    assert "--n 100000, --T 1000, --d 1000 would hold about" in err and "random_data" not in err


# review of 1e3c3ff: a keyword is rewritten only into a value its option takes, and a
# message that cannot be said in the command line's terms throughout stays in library terms
def test_a_value_the_option_does_not_take_stays_in_library_terms(tmp_path, capsys):
    # before: "... or use --param p" from svmgeo verify, whose --param takes W or KQ only
    rng = np.random.default_rng(0)
    sg.TokenData(rng.standard_normal((3, 4, 5)), v=rng.standard_normal(5)).save(tmp_path / "q")
    assert main(["verify", "--data", str(tmp_path / "q.npz"), "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "this TokenData has no queries" in err and "or use param='p'." in err
    assert "use --param p" not in err


def test_none_reads_drop_the_option_never_option_none(capsys):
    # before: "pass --rank 4 or --rank None", and the parser refuses --rank None
    argv = ["solve", *SIZES, "--norm", "nuc", "--rank", "1000000000000"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--rank None" not in err and "rank=None" not in err
    assert "pass --rank 4 or drop --rank." in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        # before: "got it with normalized=False. Drop --normalize-eps or use normalized=True."
        (
            ["--normalize-eps", "1", "--plain"],
            "got it with --plain. Drop --normalize-eps or drop --plain.",
        ),
        # before: "optimizer='sign' trains W or (K, Q); got --param p"
        (
            ["--param", "p", "--optimizer", "sign"],
            "--optimizer sign trains W or (K, Q); got --param p. Use --param W or --param KQ.",
        ),
        # before: "train needs exponent=, the p > 1 ...; e.g. --exponent 1.5."
        (["--optimizer", "mirror"], "train needs --exponent, the p > 1 of the potential"),
    ],
)
def test_train_messages_are_said_in_options_throughout(capsys, argv, said):
    assert main(["train", *SIZES, "--steps", "1", *argv]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert re.search(r"\b(normalized|optimizer|exponent|param)=", err) is None


def test_a_message_with_a_keyword_of_no_option_is_left_whole():
    # before: "got --seed 3 with init='zero'": half in each spelling
    args = build_parser().parse_args(["train"])
    text = "got seed=3 with init='zero'. Drop seed, or pass init=('random', 0.1)."
    assert _in_cli_terms(text, args) == text
    assert _in_cli_terms("got seed=3. Drop seed.", args) == "got --seed 3. Drop --seed."


# -- 2. load_data: a format below the first is not "upgrade svmgeo" -------------------------
@pytest.mark.parametrize("version", [0, -3])
def test_a_format_below_the_first_says_damaged_not_upgrade(tmp_path, version):
    path = tmp_path / "old.npz"
    np.savez(path, svmgeo_format=np.array(version), X=np.ones((2, 3, 4)), v=np.ones(4))
    with pytest.raises(sg.ProblemError) as info:
        sg.load_data(path)
    text = str(info.value)
    assert f"format version {version}, which no svmgeo writes" in text
    assert "TokenData.save" in text and "pip install" not in text and "pgrade" not in text


def test_a_newer_format_still_says_upgrade(tmp_path):
    path = tmp_path / "new.npz"
    np.savez(path, svmgeo_format=np.array(2), X=np.ones((2, 3, 4)), v=np.ones(4))
    with pytest.raises(sg.ProblemError, match=r"written by a newer svmgeo.*pip install -U"):
        sg.load_data(path)


# -- 3. a list that starts with a minus sign is a value -------------------------------------
@pytest.mark.parametrize("form", [["--alpha", "-1,0,0,0"], ["--alpha=-1,0,0,0"]])
def test_a_negative_alpha_list_reaches_the_selection_check(capsys, form):
    # before: "argument --alpha: expected one argument" for the first form
    assert main(["support", "--n", "4", "--T", "3", "--d", "6", *form]) == 2
    err = capsys.readouterr().err
    assert "--alpha must hold token indices in [0, 2]; got -1" in err


@pytest.mark.parametrize(
    ("argv", "option"), [(["--alpha"], "--alpha"), (["--alpha", "--norm", "nuc"], "--alpha")]
)
def test_a_missing_value_says_how_to_pass_one_that_starts_with_a_minus(capsys, argv, option):
    # review of 1e3c3ff: "a value that starts with '-' is passed as --alpha=VALUE" claimed a
    # negative value where none was given (the value is just missing); now conditional
    assert main(["support", *SIZES, *argv]) == 2
    err = capsys.readouterr().err
    assert "expected one argument" in err
    assert f"if the value starts with '-', pass it as {option}=VALUE" in err
    assert "a value that starts with" not in err


def test_a_missing_generator_size_hint_is_conditional(capsys):
    assert main(["solve", "--n"]) == 2
    err = capsys.readouterr().err
    assert "if the value starts with '-', pass it as --n=VALUE" in err


# -- 4. mean_loss ---------------------------------------------------------------------------
def _base_mean_loss(values: np.ndarray, n: int) -> np.ndarray:
    """mean_loss as it was before session 56 (the reference its finite results keep)."""
    total = np.sum(values, axis=1) / n
    over = np.isinf(total) & np.all(np.isfinite(values), axis=1)
    if np.any(over):
        total = np.where(over, np.sum(values / n, axis=1), total)
    return total


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        ([M, M, -math.inf], -math.inf),  # before: NaN
        ([-M, -M, math.inf], math.inf),  # before: NaN
        ([1.0, -math.inf], -math.inf),
        ([math.inf, -math.inf], math.nan),  # no mean
        ([M, M, math.nan, -math.inf], math.nan),
    ],
)
def test_mean_loss_with_infinite_terms(terms, expected):
    with np.errstate(all="ignore"):
        got = mean_loss(np.array([terms]), 1, np)
    np.testing.assert_array_equal(got, [expected])


@pytest.mark.parametrize(
    "terms", [[M, M, -M], [M, M, -M, -M, 1.0], [M, 0.5 * M, -M, M, -0.75 * M, 3.0]]
)
def test_mean_loss_is_finite_where_the_mean_is_with_n_1(terms):
    # n = 1: dividing the terms by n does not help; before: inf
    exact = float(sum(map(Fraction, terms), Fraction(0)))
    with np.errstate(all="ignore"):
        got = mean_loss(np.array([terms]), 1, np)
    np.testing.assert_allclose(got, [exact], rtol=4 * np.finfo(float).eps)


def test_mean_loss_of_a_pairwise_sum_reading_nan():
    # review of 1e3c3ff: numpy's pairwise sum adds every 8th term first, M + M = inf and
    # -M - M = -inf, then NaN, though the terms are finite and their mean is 0 (base too)
    values = np.zeros((1, 16))
    values[0, [0, 8]], values[0, [1, 9]] = M, -M
    with np.errstate(all="ignore"):
        assert np.isnan(np.sum(values, axis=1)[0])  # the case is real on this numpy
        np.testing.assert_array_equal(mean_loss(values, 1, np), [0.0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_mean_loss_of_finite_terms_is_the_exact_mean_within_summation_error():
    rng = np.random.default_rng(560)
    rescued = 0
    for _ in range(200):
        N = int(rng.integers(9, 60))
        n = int(rng.integers(1, 4))
        values = rng.choice([-1.0, 1.0], (1, N)) * rng.uniform(0.5, 1.0, (1, N)) * M
        got = float(mean_loss(values, n, np)[0])
        rescued += int(np.isnan(np.sum(values, axis=1)[0]))
        terms = [Fraction(float(x)) for x in values[0]]
        exact = sum(terms, Fraction(0)) / n
        if abs(exact) > Fraction(M):  # a mean beyond float64: inf of its sign
            assert got == (math.inf if exact > 0 else -math.inf)
            continue
        # N - 1 additions and a division (or N quotients), each rounded once: error at most
        # (N + 1) eps sum |terms| / n (the scalings by 2^-k are exact)
        bound = (N + 1) * Fraction(2) ** -52 * sum(map(abs, terms), Fraction(0)) / n
        assert math.isfinite(got)
        assert abs(Fraction(got) - exact) <= bound
    assert rescued > 20  # the NaN rows tried


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_mean_loss_keeps_every_finite_result_bit_for_bit():
    rng = np.random.default_rng(56)
    overflowed = 0
    for _ in range(200):
        B, N = int(rng.integers(1, 6)), int(rng.integers(1, 40))
        n = int(rng.integers(1, N + 1))
        # rows at any scale, half of them within 10^3 of float64's largest
        exponent = np.where(rng.random((B, 1)) < 0.5, rng.uniform(-3, 0, (B, 1)), -300.0)
        values = rng.uniform(-0.3, 1.0, (B, N)) * (M * 10.0**exponent)
        base = _base_mean_loss(values, n)
        got = mean_loss(values, n, np)
        finite = np.isfinite(base)
        overflowed += int(np.sum(finite & np.isinf(np.sum(values, axis=1))))
        np.testing.assert_array_equal(got[finite], base[finite])
    assert overflowed > 10  # base's second path (the sum overflowed, the mean did not) tried


# -- 5. study of a W that ties its top logits -----------------------------------------------
def _logits(data: sg.TokenData, W: np.ndarray) -> np.ndarray:
    return np.einsum("ntd,de,nd->nt", data.X, W, data.Z)


def test_study_of_a_zero_w_reports_no_selection_and_undetermined_verdicts(tmp_path, capsys):
    # before: selection [0, 0, 0] (the first tied key), optimal False, LOT False
    data = sg.random_data(3, 4, 5, seed=1)
    rep = sg.study(data, W=np.zeros((5, 5)), progress=False)
    t = rep.trained
    assert t is not None and t["selection"] is None
    assert t["is_optimal"] is None and t["is_lot"] is None
    assert t["corr_fro"] is None and t["corr_nuc"] is None
    assert t["tied"] == [f"sequence {i}: tokens [0, 1, 2, 3]" for i in range(3)]
    assert "undetermined (tied) / undetermined (tied)" in rep.to_markdown()
    assert "no selection" in rep.summary() and "optimal=False" not in rep.summary()
    # the command line's JSON says the same (null, not false)
    data.save(tmp_path / "d.npz")
    np.savez(tmp_path / "w.npz", W=np.zeros((5, 5)))
    argv = ["study", str(tmp_path / "d.npz"), "--weights", str(tmp_path / "w.npz")]
    assert main([*argv, "--out", str(tmp_path / "r"), "--json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)["trained"]
    assert out["selection"] is None and out["is_optimal"] is None and out["is_lot"] is None
    saved = json.loads((tmp_path / "r" / "study.json").read_text())["trained"]
    assert saved["is_lot"] is None and len(saved["tied"]) == 3


def test_study_with_one_tied_query_makes_no_selection():
    data = sg.random_data(3, 4, 5, seed=1)
    X = np.array(data.X)
    X[1, 2] = X[1, 0]  # sequence 1's tokens 0 and 2 equal: their logits tie under every W
    tied = sg.TokenData(X, Z=data.Z, v=data.v)
    W = np.outer(X[1, 0], data.Z[1])  # token 0 (= 2) on top in sequence 1: |x_t| = 1
    logits = _logits(tied, W)
    assert set(np.flatnonzero(logits[1] == logits[1].max())) == {0, 2}
    top2 = -np.sort(-logits[[0, 2]], axis=1)[:, :2]
    assert np.all(top2[:, 0] - top2[:, 1] > 1e-6 * np.abs(top2[:, 0]))  # the others untied
    rep = sg.study(tied, W=W, progress=False)
    assert rep.trained is not None and rep.trained["selection"] is None
    assert rep.trained["tied"] == ["sequence 1: tokens [0, 2]"]
    assert rep.trained["is_lot"] is None and rep.trained["is_optimal"] is None


def test_study_wording_of_one_tied_query_and_of_no_selection():
    # review of 1e3c3ff: "tie at 1 queries", and "measured numerical ranks (trained
    # selection)" printed where W makes no selection
    data = sg.random_data(3, 4, 5, seed=1)
    X = np.array(data.X)
    X[1, 2] = X[1, 0]
    tied = sg.TokenData(X, Z=data.Z, v=data.v)
    rep = sg.study(tied, W=np.outer(X[1, 0], data.Z[1]), progress=False)
    assert rep.trained is not None and len(rep.trained["tied"]) == 1
    summary, markdown = rep.summary(), rep.to_markdown()
    assert "tie at 1 query;" in summary and "tie at 1 query (see notes)" in markdown
    for text in (summary, markdown):
        assert "1 queries" not in text and "(trained selection)" not in text
        assert "measured numerical rank: trained W " in text and "(no selection" in text


def test_study_of_an_untied_w_selects_the_argmax():
    data = sg.random_data(3, 4, 5, seed=1)
    W = np.random.default_rng(0).standard_normal((5, 5))
    rep = sg.study(data, W=W, progress=False)
    assert rep.trained is not None and rep.trained["tied"] == []
    assert rep.trained["selection"] == _logits(data, W).argmax(axis=1).tolist()
    lot = sg.is_locally_optimal(data, np.array(rep.trained["selection"]))
    assert rep.trained["is_lot"] == lot.answer
