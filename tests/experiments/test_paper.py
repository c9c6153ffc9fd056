# SPDX-License-Identifier: BSD-3-Clause
"""The paper's experiments in --quick mode, through the CLI and the Python API."""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.cli import main
from svmgeo.experiments.global_ import KQ_INIT_SCALE
from svmgeo.experiments.rank import numerical_rank

from ._beyond_checks import BEYOND_CHECKS, BEYOND_COLUMNS

NAMES = ["paths2d", "rank", "local", "global", "gensvm", "concave", "mirror", "ntp"]
# the companion paper's experiments (tested in test_companion.py), registered after NAMES
COMPANION = ["companion_single", "companion_multi", "companion_joint", "companion_losses"]
# issue #23's, registered last (tested in test_optimizers_exp.py)
LATER = ["optimizers", "optimizers_linear", "stability", "variants"]

COLUMNS = {
    "paths2d": {"seed", "param", "step", "w00", "w11", "corr_fro", "corr_nuc"},
    "rank": {"n", "T", "d", "seed", "feasible", "rank_fro", "rank_nuc", "rank_nuc_scs"},
    "local": {"seed", "param", "protocol", "step", "corr_fro", "corr_nuc", "softmax_alpha"},
    "global": {
        "d",
        "seed",
        "param",
        "feasible",
        "b1",
        "corr",
        "reached",
        "norm_ratio",
        "init_scale",
    },
    "gensvm": {"d", "seed", "step", "one_minus_corr_eq", "one_minus_corr_svm", "gamma"},
    "concave": {"lam", "tau", "seed", "mean_selected", "max_selected", "corr_eq"},
}
COLUMNS.update(BEYOND_COLUMNS)


def _read(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def _floats(rows: list[dict[str, str]], key: str) -> np.ndarray:
    return np.array([float(r[key]) for r in rows if r[key] not in ("", "nan")])


QuickRun = Callable[[str], tuple[Path, str]]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> QuickRun:
    """``quick_run(name)``: ``svmgeo reproduce NAME --quick`` with default worker processes,
    run once per module into its own directory; returns (directory, stdout).

    Every test that reads an experiment's files asks for them here, so no test depends on
    another having run first.
    """
    done: dict[str, tuple[Path, str]] = {}

    def run(name: str) -> tuple[Path, str]:
        if name not in done:
            outdir = tmp_path_factory.mktemp(f"reproduce-{name}")
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = main(["reproduce", name, "--quick", "--out", str(outdir), "--no-progress"])
            assert rc == 0, buf.getvalue()
            done[name] = (outdir, buf.getvalue())
        return done[name]

    return run


def test_list_prints_one_name_per_line(capsys):
    assert main(["reproduce", "--list"]) == 0
    assert (
        capsys.readouterr().out.split("\n")[:-1]
        == sg.list_experiments()
        == NAMES + COMPANION + LATER
    )


def test_unknown_name_fails_and_lists_names(capsys, tmp_path):
    assert main(["reproduce", "nope", "--quick", "--out", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert "nope" in err and all(name in err for name in NAMES)
    with pytest.raises(sg.ProblemError, match="'rank'"):
        sg.reproduce("nope", quick=True, out=tmp_path)


@pytest.mark.parametrize("name", NAMES)
def test_quick_run_writes_figure_and_table(name, quick_run):
    # default workers (local processes): the trial functions must travel to workers
    outdir, out = quick_run(name)
    assert out.startswith(f"{name} (quick)")
    png = outdir / f"{name}-quick.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = _read(outdir / f"{name}-quick.csv")
    assert rows and COLUMNS[name] <= set(rows[0])
    assert {r["status"] for r in rows} == {"ok"}
    assert _read(outdir / f"{name}-quick_summary.csv")
    CHECKS[name](rows, out)


def _check_rank(rows, out):
    feas = [r for r in rows if r["feasible"] == "True"]
    assert feas, "quick grid has feasible instances at d = 8 (d >= max(T - 1, n))"
    for r in feas:
        n, d = int(r["n"]), int(r["d"])
        assert int(r["rank_fro"]) <= min(n, d) and int(r["rank_nuc"]) <= min(n, d)  # Lemma 1
    for r in rows:
        if r["feasible"] == "False":
            assert r["rank_fro"] == r["rank_nuc"] == ""
    assert "sigma_k > 1e-06 sigma_1" in out


def _check_local(rows, out):
    last = {(r["seed"], r["param"], r["protocol"]): r for r in rows}  # last step of each trial
    assert {p for _, _, p in last} == {"cone", "paper"}
    cone = {(seed, param): r for (seed, param, p), r in last.items() if p == "cone"}
    for (_, param), r in cone.items():
        matching = float(r["corr_fro" if param == "W" else "corr_nuc"])
        assert matching > 0.85  # started in the cone, stays there
        assert 0 <= float(r["softmax_alpha"]) <= 1
    w = [float(r["corr_fro"]) for (_, p), r in cone.items() if p == "W"]
    assert np.median(w) > 0.98
    for r in last.values():
        if r["alpha_is_opt"] == "True":  # opt is a LOT whenever it is feasible
            assert r["alpha_is_lot"] == "True"
    # paper protocol: alpha is GD's final selection; recompute one trial independently
    r = last["0", "W", "paper"]
    data = sg.random_data(6, 8, 10, seed=0)
    run = sg.train(data, step_size=0.1, n_steps=int(r["n_steps"]), init="zero")
    alpha = run.history.selected[-1].reshape(data.selection_shape)
    W_mm = sg.att_svm(data, alpha).W
    np.testing.assert_allclose(float(r["corr_fro"]), sg.correlation(run.W, W_mm), rtol=1e-9)
    assert (r["alpha_is_opt"] == "True") == bool(np.array_equal(alpha, sg.optimal_tokens(data)))
    # the headline's curve is the mean over seeds of the table's rows at those steps
    paper_w = [x for x in rows if x["protocol"] == "paper" and x["param"] == "W"]
    means = [
        np.mean([float(x["corr_fro"]) for x in paper_w if x["step"] == k]) for k in ("100", "200")
    ]
    assert f"paper W: mean corr_fro at steps 100, 200: {means[0]:.4f}, {means[1]:.4f}" in out


def _check_global(rows, out):
    assert {r["param"] for r in rows} == {"W", "KQ", "none"}
    for r in rows:
        if r["param"] == "none":  # B.1 only, no GD
            assert r["corr"] == "" and r["reached"] == "False"
        elif r["feasible"] == "True":
            assert (r["reached"] == "True") == (float(r["corr"]) >= 0.99)
            assert r["b1"] in ("True", "False")
            if r["norm_ratio"]:  # a feasible point rescaled to margin 1 cannot beat the optimum
                assert float(r["norm_ratio"]) >= 1 - 1e-6
        else:
            assert r["reached"] == "False" and r["corr"] == ""
    # (K, Q) start from the documented random scale; W from zero
    scales = {(r["param"], float(r["init_scale"])) for r in rows if r["param"] != "none"}
    assert scales == {("W", 0.0), ("KQ", KQ_INIT_SCALE)}
    assert "% reached" in out and "% norm within 1%" in out


def _check_gensvm(rows, out):
    # the headline counts and medians are those of the final rows of the table
    final = [r for r in rows if int(r["part"]) == int(r["n_parts"]) - 1]
    for d in sorted({r["d"] for r in final}):
        g = [r for r in final if r["d"] == d]
        eq = [1 - float(r["one_minus_corr_eq"]) for r in g if r["one_minus_corr_eq"] != "nan"]
        assert f"v=ones d={d}: Gen-SVM defined / trials: {len(eq)}/{len(g)}" in out
        if eq:
            assert f"v=ones d={d}: median corr(W, W_eq): {np.median(eq):.4g}" in out


def _check_concave(rows, out):
    # the paper's observation, measured: the linear head (lambda = 0) ends on one token per
    # sequence, the concave head (lambda = 1) keeps more
    at = {
        (float(r["lam"]), float(r["tau"])): float(r["mean_selected"])
        for r in rows
        if r["seed"] == "0"
    }
    for tau in (0.1, 0.01, 0.001):
        assert at[0.0, tau] == 1.0
        assert at[1.0, tau] > 1.0
    assert "lam=0: mean #tokens with s>=0.01: 1\n" in out


def _check_paths2d(rows, out):
    last = {(r["seed"], r["param"]): r for r in rows}
    for (_, param), r in last.items():
        # each parameterization ends closer to its own SVM direction than to the other's
        own, other = ("corr_fro", "corr_nuc") if param == "W" else ("corr_nuc", "corr_fro")
        assert float(r[own]) > float(r[other])


CHECKS = {
    "rank": _check_rank,
    "local": _check_local,
    "global": _check_global,
    "gensvm": _check_gensvm,
    "concave": _check_concave,
    "paths2d": _check_paths2d,
}
CHECKS.update(BEYOND_CHECKS)


def test_python_api_resumes_from_the_table(tmp_path):
    first = sg.reproduce("rank", quick=True, out=tmp_path, workers=0, progress=False)
    assert first.sweep.n_run == first.sweep.n_trials > 0
    again = sg.reproduce("rank", quick=True, out=tmp_path, workers=0, progress=False)
    assert again.sweep.n_run == 0 and again.sweep.n_resumed == again.sweep.n_trials
    assert again.headline == first.headline
    assert all(p.exists() for p in (*again.tables, *again.figures))
    assert "rank (quick)" in str(again)


def test_numerical_rank_uses_relative_threshold():
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    W = U @ np.diag([3.0, 1.0, 1e-3, 1e-7, 0.0, 0.0]) @ U.T
    assert numerical_rank(W) == 3  # 1e-7 < 1e-6 * 3
    assert numerical_rank(np.zeros((3, 3))) == 0
    assert numerical_rank(None) is None


@pytest.mark.slow
def test_dask_scheduler_gives_the_local_table(quick_run, tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    outdir, _ = quick_run("paths2d")
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    )
    try:
        argv = ["reproduce", "paths2d", "--quick", "--out", str(tmp_path), "--no-progress"]
        assert main([*argv, "--scheduler", cluster.scheduler_address]) == 0
    finally:
        cluster.close()
    assert "paths2d (quick)" in capsys.readouterr().out
    local = sorted(_read(outdir / "paths2d-quick.csv"), key=lambda r: (r["trial_id"], r["part"]))
    remote = sorted(_read(tmp_path / "paths2d-quick.csv"), key=lambda r: (r["trial_id"], r["part"]))
    drop = {"elapsed"}
    assert [{k: v for k, v in r.items() if k not in drop} for r in remote] == [
        {k: v for k, v in r.items() if k not in drop} for r in local
    ]


def test_missing_matplotlib_names_the_extra(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    argv = ["reproduce", "paths2d", "--quick", "--out", str(tmp_path), "--workers", "0"]
    assert main([*argv, "--no-progress"]) == 2
    assert "pip install 'svmgeo[plot]'" in capsys.readouterr().err
    table = tmp_path / "paths2d-quick.csv"  # the trials are kept for the rerun, and ran
    rows = [r for r in csv.DictReader(table.open(newline="")) if r.get("trial_id")]
    assert rows and all(r["status"] == "ok" for r in rows), rows


def test_bad_out_and_scheduler_exit_2_before_any_trial(
    tmp_path, unwritable_dir, capsys, monkeypatch
):
    import svmgeo.experiments._registry as registry

    def no_sweep(*args, **kwargs):
        raise AssertionError("a trial ran before the arguments were checked")

    monkeypatch.setattr(registry, "sweep", no_sweep)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    cases = [
        (["--out", str(a_file)], "is a file"),
        (["--out", str(a_file / "sub")], "cannot write"),
        (["--out", str(unwritable_dir / "results")], "cannot write"),
    ]
    if importlib.util.find_spec("distributed") is not None:
        cases.append((["--out", str(tmp_path / "ok"), "--scheduler", "not a url"], "address"))
    for extra, match in cases:
        assert main(["reproduce", "paths2d", "--quick", "--no-progress", *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("svmgeo reproduce: error: ") and err.count("\n") == 1 and match in err
    # a missing directory (and its missing parents) is created
    with pytest.raises(AssertionError, match="a trial ran"):
        sg.reproduce("paths2d", quick=True, out=tmp_path / "new" / "dir", progress=False)
    assert (tmp_path / "new" / "dir").is_dir()


def test_a_new_experiment_is_one_registered_module(tmp_path, monkeypatch):
    # what a new module of svmgeo/experiments does: define trial, grid, summary, figure and
    # register them; reproduce and --list then know it
    from svmgeo.experiments import Experiment, register
    from svmgeo.experiments._registry import EXPERIMENTS

    from . import _trials

    def summarize(rows):
        total = sum(r["total"] for r in rows)
        return {"sum of totals": total}, [{"trials": len(rows), "total": total}]

    def plot(rows, summary, path):
        path.write_bytes(b"figure")
        return [path]

    monkeypatch.setattr("svmgeo.experiments._registry.EXPERIMENTS", dict(EXPERIMENTS))
    toy = Experiment(
        "toy",
        "a toy experiment",
        _trials.arith_trial,
        lambda quick: {"a": [1, 2] if quick else [1, 2, 3], "b": [0.5], "seed": [0]},
        summarize,
        plot,
    )
    assert register(toy) is toy
    with pytest.raises(sg.ProblemError, match="registered already"):
        register(toy)
    assert sg.list_experiments() == [*NAMES, *COMPANION, *LATER, "toy"]
    res = sg.reproduce("toy", quick=True, out=tmp_path, workers=0, progress=False)
    assert res.headline == {"sum of totals": 1.5 + 2.5}
    assert res.figures == (tmp_path / "toy-quick.png",) and res.sweep.n_trials == 2
    assert _read(tmp_path / "toy-quick_summary.csv") == [
        {"trials": "2", "total": "4.0", "failed_trials": "0"}
    ]
