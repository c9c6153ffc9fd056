# SPDX-License-Identifier: BSD-3-Clause
"""`svmgeo train` with --param p, --train-head and --normalize-eps."""

from __future__ import annotations

import json

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.cli import main


def test_cli_train_p_jointly_with_the_head(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    save = tmp_path / "pv.npz"
    args = ["train", "--n", "3", "--T", "4", "--d", "5", "--seed", "1", "--param", "p"]
    opts = ["--steps", "60", "--train-head", "--normalize-eps", "0.01", "--backend", "numpy"]
    assert main([*args, *opts, "--save", str(save), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    with np.load(save) as f:
        assert set(f.files) == {"p", "v"}
        p, v = f["p"], f["v"]
    np.testing.assert_allclose(np.linalg.norm(p), out["norm_p"], rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(v), out["norm_v"], rtol=1e-12)
    data = sg.random_data(3, 4, 5, seed=1)
    ref = sg.train(data, param="p", n_steps=60, train_head=True, normalize_eps=0.01,
                   backend="numpy")  # fmt: skip
    np.testing.assert_allclose(p, ref.p, rtol=1e-12)
    np.testing.assert_allclose(v, ref.v, rtol=1e-12)


def test_cli_train_rejects_a_negative_eps(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["train", "--n", "3", "--T", "4", "--d", "5", "--normalize-eps", "-1"]) == 2
    assert "--normalize-eps: expected a finite number >= 0" in capsys.readouterr().err


def test_cli_train_from_a_huge_init_reports_overflow_without_a_warning(capsys) -> None:  # type: ignore[no-untyped-def]
    """Regression (issue #21): ||W_0|| ~ 1e200 stopped with OVERFLOW but leaked numpy's
    "overflow encountered in dot" (the summary's norm); the norm is now scaled."""
    import warnings

    args = ["train", "--n", "4", "--T", "5", "--d", "6", "--init-scale", "1e200", "--steps", "5"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "overflow"
    W0 = np.random.default_rng(0).normal(0.0, 1e200, (6, 6))  # the CLI's seeded init
    np.testing.assert_allclose(out["norm_W"], 1e200 * np.linalg.norm(W0 / 1e200), rtol=1e-12)


def test_cli_train_optimizer_mirror_is_train_mirror(capsys) -> None:  # type: ignore[no-untyped-def]
    """`svmgeo train --optimizer mirror --exponent P` is train(optimizer="mirror", ...) with
    the CLI's normalized steps and the optimizer's own (numpy) backend."""
    args = ["train", "--n", "3", "--T", "4", "--d", "5", "--seed", "1", "--steps", "40"]
    assert main([*args, "--optimizer", "mirror", "--exponent", "1.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ref = sg.train_mirror(sg.random_data(3, 4, 5, seed=1), exponent=1.5, n_steps=40,
                          normalized=True)  # fmt: skip
    assert out["status"] == str(ref.status) and out["steps"] == ref.n_steps
    np.testing.assert_allclose(out["norm_W"], np.linalg.norm(ref.W), rtol=1e-15)
    np.testing.assert_allclose(out["final_loss"], ref.history.loss[-1], rtol=1e-15)
    assert main([*args, "--optimizer", "mirror"]) == 2  # no exponent
    assert "needs --exponent," in capsys.readouterr().err
    assert main([*args, "--exponent", "1.5"]) == 2  # an exponent for GD
    assert "--optimizer gd does not take --exponent" in capsys.readouterr().err


def test_cli_train_does_not_blame_options_never_passed(capsys) -> None:  # type: ignore[no-untyped-def]
    """The command line's default seed is not passed to a rule that takes none: the error
    names only what the user gave (it named 'seed' too)."""
    args = ["train", "--n", "3", "--T", "4", "--d", "5", "--steps", "5"]
    assert main([*args, "--optimizer", "mirror", "--exponent", "1.5", "--param", "KQ"]) == 2
    err = capsys.readouterr().err
    assert "--param" in err and "seed" not in err


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        # mirror starts from zero or an array: a seeded random start is not one of its options
        (["--optimizer", "mirror", "--exponent", "1.5", "--init-scale", "0.1"], "--init-scale"),
        (["--optimizer", "mirror", "--exponent", "1.5", "--m", "2", "--train-head"],
         "--m, --train-head"),
        (["--optimizer", "sign", "--plain"], "--plain"),
        (["--optimizer", "steepest:1.5", "--exponent", "1.5"], "--exponent"),
    ],
)  # fmt: skip
def test_cli_train_names_foreign_options_as_the_command_line_spells_them(
    flags: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Options the chosen --optimizer does not take are refused as flags (the errors said
    'init must be numeric; got dtype <U32' for --init-scale, and named train's keywords)."""
    args = ["train", "--n", "3", "--T", "4", "--d", "5", "--steps", "5"]
    assert main([*args, *flags]) == 2
    err = capsys.readouterr().err
    assert f"does not take {named};" in err
    assert "dtype" not in err and "another optimizer" not in err


def test_cli_train_mirror_from_init_scale_zero_is_its_zero_start(capsys) -> None:  # type: ignore[no-untyped-def]
    """--init-scale 0 is the zero start, which mirror descent takes."""
    args = ["train", "--n", "3", "--T", "4", "--d", "5", "--seed", "1", "--steps", "5"]
    assert main([*args, "--optimizer", "mirror", "--exponent", "1.5", "--init-scale", "0"]) == 0


def test_cli_train_refuses_a_width_past_memory(capsys) -> None:  # type: ignore[no-untyped-def]
    """Regression (session 50): --m 1000000000 with --param KQ allocated factors of 10**9
    columns until the process was killed; it is one line naming 'm' and exit status 2."""
    args = ["train", "--n", "2", "--T", "3", "--d", "2", "--param", "KQ", "--steps", "3"]
    assert main([*args, "--m", str(10**15)]) == 2
    assert "--m asks for factors K, Q" in capsys.readouterr().err
