# SPDX-License-Identifier: BSD-3-Clause
"""The svmgeo command line."""

from __future__ import annotations

import json
import warnings

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


@pytest.mark.parametrize("spelling", ["lp:1.5", "lp:1", "lp:inf"])
def test_solve_lp_json_equals_att_svm(capsys, spelling):
    # the l_p Att-SVM from the command line (issue #20): the same W, objective and status
    args = ["solve", "--n", "5", "--T", "4", "--d", "6", "--seed", "1", "--json"]
    assert main([*args, "--norm", spelling]) == 0
    out = json.loads(capsys.readouterr().out)
    p = float(spelling.partition(":")[2])
    res = sg.att_svm(sg.random_data(5, 4, 6, seed=1), norm=("lp", p))
    assert out["status"] == str(res.status) and out["norm"] == "lp"
    assert out["norm_p"] == (p if np.isfinite(p) else "inf")
    np.testing.assert_allclose(out["objective"], res.objective, rtol=1e-12)
    np.testing.assert_allclose(np.array(out["W"]), res.W, rtol=1e-12, atol=1e-14)
    assert out["certificate"]["passed"] is True


@pytest.mark.parametrize("norm", ["lp:0.5", "lp", "lq:2", "fro:2"])
def test_solve_refuses_a_bad_norm_in_one_line(capsys, norm):
    assert main(["solve", "--n", "3", "--T", "3", "--d", "4", "--norm", norm]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--norm" in err and "lp:P" in err


def test_cli_choices_come_from_the_tables():
    from svmgeo.cli import build_parser
    from svmgeo.gd import BACKENDS, LOSSES
    from svmgeo.solvers import NORMS

    text = build_parser().format_help()
    assert "solve" in text
    sub = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    solve_help = sub["solve"].format_help()
    for entry in NORMS.values():
        assert entry.spelling in solve_help
    train = {a.dest: a for a in sub["train"]._actions}
    assert tuple(train["loss"].choices) == tuple(LOSSES)
    assert tuple(train["backend"].choices) == tuple(BACKENDS)


def test_docs_cli_table_matches_the_parsers():
    # docs/cli.md advertised `support --norm spectral` (refused: invalid choice) and
    # `train --param W|KQ` (the parser also takes p)
    import re
    from pathlib import Path

    from svmgeo.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    text = (Path(__file__).parents[1] / "docs" / "cli.md").read_text()
    rows = re.findall(r"^\| `svmgeo (\w+) ([^`]*)`", text, flags=re.MULTILINE)
    assert {name for name, _ in rows} == set(sub)
    for name, usage in rows:
        options = {o for a in sub[name]._actions for o in a.option_strings}
        for option, values in re.findall(r"(--[\w-]+) ?([^\s\]]*)", usage):
            assert option in options, f"docs/cli.md: {name} has no {option}"
            spellings = values.replace("\\|", "|").split("|")
            if len(spellings) < 2:  # a placeholder (N, FILE, ...), not a list of choices
                continue
            for value in spellings:  # each documented choice is accepted ...
                try:
                    sub[name].parse_args([option, value.replace(":P", ":1.5")])
                except SystemExit:
                    pytest.fail(f"docs/cli.md: {name} refuses {option} {value}")
            choices = next(a.choices for a in sub[name]._actions if option in a.option_strings)
            if choices is not None:  # ... and each accepted choice documented
                assert set(spellings) == set(choices), f"docs/cli.md: {name} {option}"


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


def test_an_undecided_feasibility_is_null_and_exits_1(tmp_path, capsys):
    """Tokens collinear up to rounding (products s_t b, each rounded): INFEASIBLE_INACCURATE,
    undecided. It printed "feasible": false with certificate rows, and exit 0, as for a proved
    verdict."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 4, 1)) * rng.standard_normal(4)
    scores = np.array([[1.0, 0.0, -1.0, -2.0]] * 3)
    path = tmp_path / "d.npz"
    sg.TokenData(X, Z=rng.standard_normal((3, 4)), scores=scores).save(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        rc = main(["feasibility", "--data", str(path), "--alpha", "0,0,0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "infeasible_inaccurate"  # the case itself
    assert rc == 1 and out["feasible"] is None and "certificate_rows" not in out


def test_lots_marks_every_tied_optimal_selection(tmp_path, capsys):
    """Scores (1, 1, 0): selections 0 and 1 are both globally optimal (SPEC §2); the second
    was labelled "optimal": false (ties broken by the first index)."""
    X = np.array([[[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]]])  # either way token 2 is the support
    path = tmp_path / "ties.npz"
    sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[1.0, 1.0, 0.0]])).save(path)
    assert main(["lots", "--data", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    optimal = {lot["selection"]: lot["optimal"] for lot in out["lots"]}
    assert optimal == {"0": True, "1": True} and out["optimal_ties"] is True


def test_lots_refuses_a_norm_without_lots(capsys):
    assert main(["lots", "--n", "3", "--T", "3", "--d", "2", "--norm", "spectral"]) == 2
    assert "invalid choice: 'spectral'" in capsys.readouterr().err
    with pytest.raises(sg.ProblemError, match="takes 'fro' \\(Att-SVM\\) or 'nuc'"):
        sg.locally_optimal_selections(sg.random_data(3, 3, 2, seed=0), norm="spectral")


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


def test_solve_json_has_w_duals_support_and_save_round_trips(tmp_path, capsys):
    data = sg.random_data(4, 3, 6, seed=0)
    path = tmp_path / "d.npz"
    data.save(path)
    save = tmp_path / "sol"
    assert main(["solve", "--data", str(path), "--save", str(save), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    res = sg.att_svm(data)
    np.testing.assert_allclose(np.array(out["W"]), res.W, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.array(out["dual"]), res.dual, rtol=1e-12, atol=1e-14)
    sup = np.asarray(sg.support_tokens(data, sg.optimal_tokens(data)))
    listed = {(r["sequence"], r["token"]) for r in out["support_tokens"]}
    assert listed == {(int(i), int(t)) for i, t in zip(*np.nonzero(sup), strict=True)}
    with np.load(tmp_path / "sol.npz", allow_pickle=False) as f:
        np.testing.assert_array_equal(f["W"], np.array(out["W"]))
        assert str(f["status"]) == "optimal" and f["alpha"].tolist() == out["alpha"]


def test_save_path_is_checked_before_solving(tmp_path, capsys):
    code = main(["solve", "--n", "3", "--T", "3", "--d", "4", "--save", str(tmp_path / "no" / "x")])
    assert code == 2 and "does not exist" in capsys.readouterr().err


def test_support_reports_support_tokens_and_the_lot_verdict(tmp_path, capsys):
    data = sg.random_data(4, 3, 6, seed=0)
    path = tmp_path / "d.npz"
    data.save(path)
    for alpha in ("0,2,1,0", ",".join(map(str, sg.optimal_tokens(data)))):
        assert main(["support", "--data", str(path), "--alpha", alpha, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        lot = sg.is_locally_optimal(data, np.array([int(a) for a in alpha.split(",")]))
        assert out["locally_optimal"] == bool(lot)
        mask = np.asarray(lot.support)
        for row in out["support_tokens"]:
            assert row["tokens"] == np.flatnonzero(mask[row["sequence"]]).tolist()
        assert len(out["violations"]) == len(lot.violations)


def test_study_writes_the_report_files(tmp_path, capsys):
    data = sg.random_data(4, 3, 6, seed=0)
    path = tmp_path / "d.npz"
    data.save(path)
    np.savez(tmp_path / "w.npz", W=3.0 * sg.att_svm(data).W)
    out_dir = tmp_path / "report"
    args = ["study", str(path), "--weights", str(tmp_path / "w.npz"), "--out", str(out_dir)]
    assert main([*args, "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["trained"]["is_optimal"] is True and out["lots"]["count"] >= 1
    for name in ("study.md", "study.json", "margins.png", "attention.png"):
        assert (out_dir / name).stat().st_size > 0
    assert main(["study", str(path), "--out", str(path)]) == 2  # a file is no report directory
    assert "is a file" in capsys.readouterr().err
    assert main(["study", str(path), "--weights", str(path), "--out", str(out_dir)]) == 2
    assert "none of the arrays W, K, Q" in capsys.readouterr().err


def test_atlas_refuses_an_unwritable_target_before_its_runs(tmp_path, capsys, monkeypatch):
    """'svmgeo atlas --write nodir/atlas.md' ran every atlas run (about 20 s), then failed on
    the path; output paths are checked first, as the other commands do."""
    import svmgeo.atlas

    def runs_nothing() -> str:
        raise AssertionError("the atlas ran before its output path was checked")

    monkeypatch.setattr(svmgeo.atlas, "atlas_markdown", runs_nothing)
    assert main(["atlas", "--write", str(tmp_path / "nodir" / "atlas.md")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["atlas", "--write", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_a_closed_stdout_is_not_reported_as_bad_input(monkeypatch, capsys):
    """'svmgeo solve --json | head -c 10': the reader closing the pipe printed 'error: [Errno
    32] Broken pipe' and exited 2, the status of bad input."""
    import svmgeo.cli as cli

    def closed_pipe(args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli, "_cmd_solve", closed_pipe)
    assert main(["solve"]) == 1
    assert "error" not in capsys.readouterr().err


def test_reproduce_passes_timeout_on(monkeypatch, tmp_path, capsys) -> None:
    """`svmgeo reproduce` had no --timeout (an argparse usage error) though
    sg.reproduce(timeout=) has one: now --timeout SECONDS reaches reproduce, and no
    --timeout passes None (no limit), as before."""
    import svmgeo.experiments as experiments

    seen: list[dict] = []

    class _Done:
        n_errors = 0

    def fake(name: str, **kwargs):  # the library itself is tested in tests/experiments
        seen.append({"name": name, **kwargs})
        return _Done()

    monkeypatch.setattr(experiments, "reproduce", fake)
    out = str(tmp_path / "r")
    assert main(["reproduce", "global", "--quick", "--out", out, "--timeout", "2.5"]) == 0
    assert main(["reproduce", "global", "--quick", "--out", out, "--workers", "2"]) == 0
    assert [(s["name"], s["timeout"], s["workers"]) for s in seen] == [
        ("global", 2.5, None),
        ("global", None, 2),
    ]
    capsys.readouterr()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--timeout", "0"], "argument --timeout: expected a finite number of seconds > 0"),
        (["--timeout", "nan"], "argument --timeout: expected a finite number of seconds > 0"),
        (
            ["--timeout", "1", "--workers", "0"],
            "--timeout needs worker processes: with --workers 0",
        ),
        (["--timeout", "1", "--scheduler", "tcp://127.0.0.1:1"], "--timeout is not available"),
    ],
)
def test_reproduce_refuses_a_bad_timeout_naming_it(tmp_path, capsys, args, said) -> None:
    """Refused before any trial runs (exit 2, one line naming --timeout); no table written."""
    out = tmp_path / "r"
    assert main(["reproduce", "global", "--quick", "--out", str(out), *args]) == 2
    assert said in capsys.readouterr().err
    assert not out.exists()
