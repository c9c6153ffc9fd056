# SPDX-License-Identifier: BSD-3-Clause
"""Session 58 (K): train's stop messages in the command line's terms, and its selection on a
tie by the library's rule (none, with the tied queries) rather than the engine's argmax."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.cli import build_parser, main
from svmgeo.gd import OPTIMIZERS, StopStatus

# the library's Python terms a command-line message must not name as options
PYTHON_TERMS = re.compile(r"(?<![-\w])(?:step_size|init|normalize_eps|log_domain)\b|normalized=")


def _separable(tmp_path) -> str:
    """One sequence, tokens e1 (score 1) and e2 (score 0), query e1: GD drives the logit
    gap x_1^T W z - x_2^T W z up, so the gradient (and a plain step) shrinks like e^-gap."""
    path = tmp_path / "sep.npz"
    sg.TokenData(np.eye(2)[None], v=[1.0, 0.0], Y=[1.0], query=0).save(path)
    return str(path)


def _train(argv: list[str], capsys) -> dict:
    assert main(["train", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("argv", "status", "says", "not_said"),
    [
        # the first plain step of 1e100 takes the gap past e^700: the next gradient underflows
        (
            ["--plain", "--step-size", "1e100", "--steps", "20"],
            "gradient_underflow",
            ["--normalize-eps EPS above 0", "neither --plain nor --normalize-eps above 0"],
            [],
        ),
        # eps = 1e308 against a gradient of order 0.1: eta g / (g + eps) underflows at once
        (
            ["--normalize-eps", "1e308", "--steps", "10"],
            "gradient_underflow",
            ["--normalize-eps EPS above 0", "(||g|| + EPS)"],
            [],
        ),
        # normalized steps of 1e149 from W = 0 reach the norm limit 1e150 after 10 steps
        (["--step-size", "1e149", "--steps", "50"], "overflow", ["Lower --step-size"], ["--init"]),
        # a random start of scale 1e160 is past the limit before any step
        (
            ["--init-scale", "1e160"],
            "overflow",
            ["Lower --step-size or --init-scale"],
            [],
        ),
        (
            ["--optimizer", "adam", "--step-size", "1e150", "--steps", "5"],
            "overflow",
            ["Lower --step-size (adam_eps and adam_beta2 have no option here", "in Python"],
            ["Lower step_size"],
        ),
        # W grows like |Theta|^(1/(p-1)) = |Theta|^100: ten steps of 10 pass 1e150
        (
            ["--optimizer", "mirror", "--exponent", "1.01", "--step-size", "10", "--steps", "200"],
            "overflow",
            ["Lower --step-size, use plain steps (--plain), or raise --exponent"],
            [],
        ),
        (
            ["--optimizer", "mirror", "--exponent", "1.01", "--plain", "--step-size", "1e100"],
            "overflow",
            ["Lower --step-size, or raise --exponent"],
            ["use plain steps"],  # the run's steps are plain already
        ),
        (
            ["--optimizer", "mirror", "--exponent", "1.01", "--plain", "--step-size", "10"],
            "gradient_underflow",
            ["A normalized step (without --plain)"],
            [],
        ),
    ],
)
def test_train_stop_messages_name_the_command_lines_options(
    argv, status, says, not_said, tmp_path, capsys
) -> None:
    """Regression: overflow said "Lower step_size or rescale init", gradient underflow
    "normalize_eps > 0", "(normalize_eps=0) with log_domain=True", mirror's "normalized=True",
    Adam's "raise adam_eps or adam_beta2" (no option sets them): Python keywords, not options."""
    out = _train(["--data", _separable(tmp_path), *argv], capsys)
    assert out["status"] == status
    message = out["message"]
    assert not PYTHON_TERMS.search(message), message
    for words in says:
        assert words in message, message
    for words in not_said:
        assert words not in message, message


def test_mirror_normalized_underflow_in_cli_terms() -> None:
    """Mirror descent's normalized underflow is out of the command line's reach (its start is
    W = 0 there, and a step of eta on coordinates grown by at most eta a step stays above
    their rounding for 2^53 steps, past --steps' 10^8), so its remedy is translated
    directly; "a smaller init" is no option there."""
    from svmgeo._cli_messages import _MIRROR_INIT, _MIRROR_SIZE, _stop_in_cli_terms

    library = OPTIMIZERS["mirror"].messages[(StopStatus.GRADIENT_UNDERFLOW, True)]
    assert _MIRROR_INIT in library and _MIRROR_SIZE in library
    args = build_parser().parse_args(["train", "--optimizer", "mirror", "--exponent", "1.5"])
    said = _stop_in_cli_terms(library.format(n=3), args)
    assert not PYTHON_TERMS.search(said) and said.endswith("Take a larger --step-size")


@pytest.mark.parametrize(
    ("X", "v", "Y", "tied"),
    [
        # every token identical: every W ties them (the stationary stop says so too)
        (np.ones((2, 3, 2)), [1.0, 0.0], [1.0, -1.0], [[0, 1, 2], [0, 1, 2]]),
        # distinct tokens scoring alike (v^T x = 1 each): W stays 0, whose logits all tie
        (np.eye(2)[None], [1.0, 1.0], [1.0], [[0, 1]]),
    ],
)
def test_train_reports_no_selection_on_a_tie(X, v, Y, tied, tmp_path, capsys) -> None:
    """Regression: train --json reported the engine's argmax ("0,0", "0") as the selection
    where every query's largest logits tie; the library's rule (largest_logits) makes no
    selection there. Expected tied keys: the visible keys with the largest logit at the
    saved W, computed here by the naive x^T W z (tied exactly: W = 0 or identical rows)."""
    path = tmp_path / "d.npz"
    sg.TokenData(X, v=v, Y=Y, query=0).save(path)
    save = str(tmp_path / "w.npz")
    out = _train(["--data", str(path), "--save", save], capsys)
    W = np.load(save)["W"]
    logits = np.einsum("ntd,de,ne->nt", X, W, X[:, 0])
    expected = [
        f"sequence {i}: tokens {np.flatnonzero(row == row.max()).tolist()}"
        for i, row in enumerate(logits)
    ]
    assert expected == [f"sequence {i}: tokens {t}" for i, t in enumerate(tied)]
    assert out["selection"] is None and out["tied"] == expected
    assert main(["train", "--data", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"selection +none", lines[-2]) and lines[-1].endswith("; ".join(expected))


def test_train_selection_off_ties_is_the_argmax(tmp_path, capsys) -> None:
    """Off ties the selection is each query's argmax of the naive logits x^T W z at the saved
    W, as before (no "tied" entry)."""
    save = str(tmp_path / "w.npz")
    argv = ["--n", "5", "--T", "4", "--d", "3", "--steps", "200", "--save", save]
    out = _train(argv, capsys)
    data = sg.random_data(5, 4, 3, seed=0)
    logits = np.einsum("ntd,de,ne->nt", data.X, np.load(save)["W"], data.queries[:, 0])
    assert out["selection"] == ",".join(map(str, np.argmax(logits, axis=1)))
    assert "tied" not in out


def test_verify_tie_after_an_overflow_names_the_options(capsys) -> None:
    """Regression: verify's refusal of a tie after an overflow stop quoted the run's message,
    "Lower step_size or rescale init", in Python terms. A first normalized step of 1e300 from
    W = 0 is past the norm limit: the run stops at W = 0, whose logits all tie."""
    argv = ["verify", "--n", "3", "--T", "4", "--d", "2", "--step-size", "1e300", "--steps", "5"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "status 'overflow'" in err and "Lower --step-size (only the direction" in err
    assert not PYTHON_TERMS.search(err), err
