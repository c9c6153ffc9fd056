# SPDX-License-Identifier: BSD-3-Clause
"""``svmgeo study``: the ``--weights`` file (damaged members, the W, K, Q that ``svmgeo train
--param KQ --save`` writes) and bad input refused before the report directory is created."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.cli import main


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "d.npz"
    sg.random_data(3, 4, 5, seed=0).save(path)
    return path


def _refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run the CLI; assert exit 2 with one line on stderr; return that line."""
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("damage", ["object", "truncated"])
def test_study_weights_with_an_unreadable_member_exits_2_in_one_line(
    tmp_path: Path, dataset: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    # an object array (never unpickled) or a truncated member: a traceback and exit 1 before
    weights = tmp_path / "w.npz"
    if damage == "object":
        np.savez(weights, W=np.array([[1, None]], dtype=object))
    else:
        np.savez(tmp_path / "good.npz", W=np.eye(5))
        member = zipfile.ZipFile(tmp_path / "good.npz").read("W.npy")
        with zipfile.ZipFile(weights, "w") as z:
            z.writestr("W.npy", member[:100])
    out = tmp_path / "report"
    err = _refused(["study", str(dataset), "--weights", str(weights), "--out", str(out)], capsys)
    what = "is a pickled object array" if damage == "object" else "is damaged (EOF"
    assert f"--weights {weights}: entry 'W' {what}" in err
    assert "numpy.savez" in err  # how to fix it
    assert not out.exists()


def test_study_reads_the_weights_train_kq_saves(
    tmp_path: Path, dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # train --param KQ --save writes W, K and Q; study --weights refused that file
    weights = tmp_path / "w.npz"
    train = ["train", "--data", str(dataset), "--param", "KQ", "--steps", "5"]
    assert main([*train, "--backend", "numpy", "--save", str(weights)]) == 0
    capsys.readouterr()
    out = tmp_path / "report"
    args = ["study", str(dataset), "--weights", str(weights), "--out", str(out)]
    assert main([*args, "--no-progress", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    with np.load(weights) as f:
        K, Q = f["K"], f["Q"]
    expected = sg.study(sg.load_data(dataset), K=K, Q=Q, progress=False).to_dict()
    assert report["trained"]["selection"] == expected["trained"]["selection"]
    np.testing.assert_allclose(
        report["trained"]["corr_fro"], expected["trained"]["corr_fro"], rtol=1e-12
    )
    assert (out / "study.md").stat().st_size > 0


def test_study_refuses_weights_whose_w_is_not_k_q_transpose(
    tmp_path: Path, dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(0)
    K, Q = rng.standard_normal((5, 2)), rng.standard_normal((5, 2))
    out = tmp_path / "report"
    weights = tmp_path / "w.npz"
    np.savez(weights, W=K @ Q.T + 1e-6, K=K, Q=Q)
    err = _refused(["study", str(dataset), "--weights", str(weights), "--out", str(out)], capsys)
    assert f"--weights {weights} holds K, Q, W" in err and "W differs from K Q^T" in err
    np.savez(weights, W=np.eye(4), K=K, Q=Q)  # shapes that do not fit W = K Q^T
    err = _refused(["study", str(dataset), "--weights", str(weights), "--out", str(out)], capsys)
    assert "do not fit W = K Q^T" in err and "(4, 4)" in err
    assert not out.exists()


def test_study_leaves_no_report_directory_on_bad_input(
    tmp_path: Path, dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # every refusal below exited 2 but left an empty --out directory behind
    np.savez(tmp_path / "w_shape.npz", W=np.ones((4, 4)))
    np.savez(tmp_path / "w_nan.npz", W=np.full((5, 5), np.nan))
    data = sg.random_data(3, 4, 5, seed=0)
    sg.TokenData(data.X, Z=data.Z).save(tmp_path / "no_head.npz")  # no v, no scores
    out = tmp_path / "report"
    cases = {
        "shape (d, d) = (5, 5)": [str(dataset), "--weights", str(tmp_path / "w_shape.npz")],
        "NaN or infinite": [str(dataset), "--weights", str(tmp_path / "w_nan.npz")],
        "no token scores": [str(tmp_path / "no_head.npz")],
    }
    for threshold in ("5", "-0.5", "nan"):
        cases[f"a number in [0, 1]; got '{threshold}'"] = [
            str(dataset),
            "--prune-threshold",
            threshold,
        ]
    for match, args in cases.items():
        err = _refused(["study", *args, "--out", str(out), "--no-progress"], capsys)
        assert match in err, err
        assert not out.exists(), match
    args = ["study", str(dataset), "--out", str(out), "--prune-threshold", "1", "--no-progress"]
    assert main(args) == 0
    assert (out / "study.md").is_file()


def test_a_truncated_dataset_member_is_damaged_not_pickled(tmp_path: Path, dataset: Path) -> None:
    """Regression: load_data read every ValueError of a member as an object array ("a pickled
    object array"); numpy raises ValueError for a truncated member's header too."""
    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(dataset) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.namelist():
            data = src.read(item)
            dst.writestr(item, data[:60] if item == "X.npy" else data)
    with pytest.raises(sg.ProblemError, match=r"entry 'X' is damaged \(EOF") as info:
        sg.load_data(bad)
    assert "pickled" not in str(info.value)
