# SPDX-License-Identifier: BSD-3-Clause
"""The examples the docs run (docs/beyond.md) run, quickly: two of them had fallen behind the
API (``run.W_history``, ``train_mirror(p=...)``) with nothing to notice it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(
    "args",
    [
        ["ntp_graph_svm.py", "--quick", "--steps", "60", "--loss", "retrieval"],
        ["mirror_descent.py", "--quick"],
    ],
    ids=["ntp_graph_svm", "mirror_descent"],
)
def test_example_runs_and_draws_its_figure(args: list[str], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    script, *rest = args
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *rest, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    figures = list(tmp_path.glob("*.png"))
    assert figures and all(f.stat().st_size > 0 for f in figures), out.stdout


def test_the_gen_svm_search_runs_and_finds_seed_8() -> None:
    """docs/verify.md §6's search on one seed: seed 8 of (2, 3, 4) counts (|O| = (2, 1)), and
    dropping the margin rows of its mixing sequence recovers GD's direction (corr > 0.9999)."""
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "gen_svm_search.py"), "--seeds", "8-8"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith("(2, 3, 4)")]
    seed8 = [r for r in rows if r[3] == "8"]
    assert len(seed8) == 1, out.stdout
    assert float(seed8[0][-2]) > 0.9999


BENCHMARKS = EXAMPLES.parent / "benchmarks"


def _run_script(path: Path, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, str(path), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def _run_example(*args: str) -> str:
    return _run_script(EXAMPLES / args[0], *args[1:])


def _bench(*args: str) -> str:
    return _run_script(BENCHMARKS / args[0], *args[1:])


def _example_rows(*args: str) -> list[list[str]]:
    """The example's output lines split in words, run on the numpy backend."""
    return [line.split() for line in _run_example(*args, "--backend", "numpy").splitlines()]


def test_normalized_mirror_descent_beats_plain_at_the_same_budget() -> None:
    """docs/beyond.md's statement, quick form (seed 0, 400 steps): for every p, normalized
    steps end closer in direction to the l_p Att-SVM than plain ones."""
    stdout = _run_example("mirror_plain_vs_normalized.py", "--quick")
    rows = [line.split() for line in stdout.splitlines() if line.startswith("   0 ")]
    assert len(rows) == 4, stdout
    for _, _, normalized, plain, _ in rows:
        assert float(normalized) < float(plain), stdout


def test_normalized_ntp_fin_error_scales_with_the_step() -> None:
    """docs/beyond.md's O(eta) statement, quick form (seed 0, 3000 steps): halving the
    normalized step halves the fin error."""
    stdout = _run_example("ntp_normalized_fin_error.py", "--quick", "--etas", "0.1", "0.05")
    fin = {float(r[0]): float(r[3]) for r in (line.split() for line in stdout.splitlines())
           if len(r) == 5 and r[1] == "0"}  # fmt: skip
    assert set(fin) == {0.1, 0.05}, stdout
    np.testing.assert_allclose(fin[0.05] / fin[0.1], 0.05 / 0.1, rtol=0.05)


def test_attention_maps_seeds_reports_seed_1s_dead_relu_sequence() -> None:
    """docs/attention-maps.md's verify(attention=) measurement on seed 1: linear and sigmoid
    attention reach their own SVMs; ReLU attention leaves a sequence dead, so its own QP is
    infeasible and the row says so (converged_to None) rather than being dropped."""
    rows = {r[1]: r for r in _example_rows("attention_maps_seeds.py", "--seeds", "1-1")[1:4]}
    for attention in ("linear", "sigmoid"):
        assert rows[attention][2] == "own"
        assert float(rows[attention][3]) > 0.99
    assert rows["relu"][2] == "None" and rows["relu"][5:] == ["infeasible,", "1", "dead"]


def test_square_loss_holds_flagged_sequences_near_one_and_lags_logistic() -> None:
    """docs/attention-maps.md's square-loss measurement on seed 0, 10^4 steps: the flagged
    sequences' Y f is near the stationary value 1, and W aligns less with W^mm than the
    logistic loss's W does under the same protocol."""
    last = _example_rows("square_loss_limit.py", "--seeds", "0-0", "--steps", "10000")[-1]
    lo, hi = map(float, last[-5].split(".."))
    assert 0.9 < lo <= hi < 1.1
    corr, corr_logistic = float(last[-4]), float(last[-1])
    assert corr < corr_logistic


def test_backend_agreement_quick() -> None:
    """docs/gd.md, "Known limits": numba = numpy to 1e-12 on the quick W grid, and one step of
    each backend from the same K, Q agrees to rounding (the KQ gap is amplification)."""
    text = _bench("check_backend_agreement.py", "--quick")
    grid = next(line for line in text.splitlines() if line.startswith("grid:")).split()
    assert grid[1] == grid[3], text  # "grid: X of Y combinations agree ..."
    one = next(line for line in text.splitlines() if "one step of numba and of numpy" in line)
    steps = [float(part.split()[0]) for part in one.split("differs by ")[1].split(", ")]
    assert len(steps) == 3 and max(steps) <= 1e-14, one


def test_polyak_refusal_seed_0() -> None:
    """docs/optimizers.md: on random_data(6, 4, 2, seed=0) the Polyak step is refused and
    normalized GD stays above L* over its whole run."""
    text = _bench("polyak_refusal.py", "--seeds", "0")
    row = next(line for line in text.splitlines() if line.startswith("| 0 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "False" and cells[3].startswith("ProblemError"), row
    assert float(cells[-1]) > 0.0, row


def test_spectral_forms_seed_0() -> None:
    """docs/spectral.md: Clarabel's dual form is certified, and it is what solve_svm returns."""
    pytest.importorskip("cvxpy")
    text = _bench("spectral_forms.py", "--seeds", "0")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| 0 |")]  # fmt: skip
    dual = next(r for r in rows if r[1] == "clarabel" and r[2].startswith("dual"))
    assert dual[7] == "True" and dual[9].startswith("clarabel, dual"), dual


@pytest.mark.parametrize("phases", [False, True], ids=["calls", "phases"])
def test_profile_frobenius_small_runs(phases: bool) -> None:
    """benchmarks/profile_frobenius_small.py (docs/performance.md, issue 25) on one tiny size:
    each of its lines is printed, with every ratio or phase time a positive number (the script
    reaches the compiled path's private helpers, whose signatures change)."""
    if not phases:  # its interleaved calls run libsvm between svmgeo's
        pytest.importorskip("sklearn")
    text = _bench("profile_frobenius_small.py", "--sizes", "6,4,5", "--seeds", "0",
                  "--rounds", "1", "--loop", "2", *(["--phases"] if phases else []))  # fmt: skip
    line = next(line for line in text.splitlines() if line.startswith("(n, T, d) = (6, 4, 5)"))
    names = ("call", "gram", "copy+factor", "point", "screen", "polish", "solve_svm", "python")
    if phases:
        times = dict(part.rsplit(" ", 1) for part in line.split("us warm: ")[1].split(", "))
        assert set(times) == set(names) and all(float(t) > 0.0 for t in times.values()), line
    else:
        ratios = [
            float(w.strip("(x),")) for w in line.split() if w.endswith("x)") or w.endswith("x),")
        ]
        assert len(ratios) == 6 and all(r > 0.0 for r in ratios), line


def test_regpath_seeds_direction_on_seed_2() -> None:
    """docs/analysis.md's regularization-path measurement on seed 2: ||W^mm|| = 2.24, 1 - corr
    at R = 128 between 3e-4 and 4e-4 for each loss, falling more than twice per doubling of R
    from R = 4 on."""
    rows = [line.split() for line in _run_example("regpath_seeds.py", "--seeds", "2").splitlines()
            if line.startswith("   2 ")]  # fmt: skip
    assert [r[1] for r in rows] == ["logistic", "exponential", "correlation"], rows
    for r in rows:
        assert r[2] == "2.240", r
        assert 3e-4 < float(r[-3]) < 4e-4, r
        assert float(r[-1].split("-")[0]) > 2.0, r


def test_score_cone_lemma_disagreements_are_lots_without_support_tokens() -> None:
    """docs/theory.md ("The score cone"): over the 384 feasible selections of
    random_data(3, 4, 3), seeds 0-5, "alpha is a LOT" and "W^mm_alpha lies in a score cone"
    disagree on 4, and each is a LOT with a sequence that has no support token."""
    lines = _run_example("score_cone_lemma.py").splitlines()
    assert lines[-1].startswith("384 feasible selections over 6 seeds; 4 where"), lines
    assert len(lines) == 6, lines
    for line in lines[1:-1]:
        words = line.split("]", 1)[1].split(None, 2)
        lot, eps_max, bare = words
        assert lot == "True", line
        assert float(eps_max) < 0.0, line
        assert bare.startswith("[") and bare != "[]", line


def test_tiny_margin_verdicts() -> None:
    """docs/certificates.md: on the tiny-margin corpus the float-only check gives 78 wrong
    verdicts (feasible instances called infeasible), the exact check none, and no undecided.
    The float check's undecided count moves with the BLAS kernels' rounding (0 with
    OpenBLAS's SkylakeX kernels, 1 with its Haswell kernels), as the page says."""
    text = _bench("tiny_margin_verdicts.py")
    lines = {line.split(":")[0]: line for line in text.splitlines()}
    assert lines["float"].startswith("float: 294 instances, 78 wrong (78 feasible"), text
    assert re.search(r", [01] undecided", lines["float"]), text
    assert lines["exact"].startswith("exact: 294 instances, 0 wrong (0 feasible"), text
    assert "0 infeasible called feasible), 0 undecided" in lines["exact"], text


def _table_rows(text: str, first_cell: str) -> list[list[str]]:
    """The cells of the markdown rows of ``text`` whose first cell is ``first_cell``."""
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("|")]  # fmt: skip
    return [r for r in rows if r[0] == first_cell]


def test_spectral_vs_cvxpy_seed_1() -> None:
    """docs/spectral.md's table on its second instance: svmgeo's spectral SVM equals the naive
    cvxpy model's optimum to 1e-8, with svmgeo's own gap at most 1e-9."""
    pytest.importorskip("cvxpy")
    (row,) = _table_rows(_bench("spectral_vs_cvxpy.py", "--instances", "1"), "`seed=1`")
    assert row[1:3] == ["42", "(10, 6)"], row
    assert float(row[4]) <= 1e-8 and float(row[5]) <= 1e-9, row


def test_rates_calibration_short_run() -> None:
    """docs/optimizers.md's fit_rates calibration, its 2*10^4-step row: the fits converge, the
    norm slope is within 5 % of ||w_mm|| = 0.5 and the direction error decays (lambda > 0);
    2000 steps, the docs' pre-asymptotic case, read "fits converged" before session 54 and now
    name the drift of lambda (its window is too short for (log t)^-lambda)."""
    text = _bench("rates_calibration.py", "--steps", "2000", "20000")
    (row,) = _table_rows(text, "20000")
    np.testing.assert_allclose(float(row[2].split()[0]), 0.5, rtol=0.05)
    assert float(row[4].split()[0]) > 0.0 and row[-1] == "fits converged", row
    (short,) = _table_rows(text, "2000")
    assert short[-1].startswith("not converged: 1 - corr is neither a power of log t"), short


def test_global_details_agree_with_the_headline(tmp_path: Path) -> None:
    """docs/experiments.md's global details, on the quick run's table: one row per (param, d),
    each with the headline's % reached, % norm within 1 % and % selecting opt."""
    import svmgeo as sg

    res = sg.reproduce("global", quick=True, out=tmp_path, workers=0)
    text = _bench("global_details.py", "details", str(tmp_path / "global-quick.csv"))
    rows = _table_rows(text, "KQ") + _table_rows(text, "W")
    assert len(rows) == 4, text
    for param, _, _, d, *cells in rows:
        key = f"{param} d={d}: % reached, % norm within 1%, % selecting opt, (B.1 %)"
        assert res.headline[key].split(" (")[0] == ", ".join(cells[2:5]), (key, cells)


def test_optimizers_linear_table_rows(tmp_path: Path) -> None:
    """docs/optimizers.md's per-trial calibration table, from a two-trial table of the
    experiment's trial function: one row per trial, the own norm's ratio in bold and the same
    digits as the table, and --check names the row count that differs from the docs."""
    import svmgeo as sg
    from svmgeo.experiments.optimizers import SVMS, linear_trial

    grid = [{"seed": 0, "optimizer": name, "n_steps": 50} for name in ("gd", "sign")]
    trials = sg.sweep(linear_trial, grid, out=tmp_path / "t.csv", workers=0, progress=False)
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "optimizers_linear_table.py"), str(tmp_path / "t.csv"),
         "--check"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    assert "--check: 1 difference(s)" in out.stdout and "4 in the run" in out.stdout, out.stdout
    for trial, own in zip(trials.rows, ("fro", "linf"), strict=True):
        (row,) = _table_rows(out.stdout, trial["optimizer"])
        assert row[3 + list(SVMS).index(own)] == f"**{trial[f'ratio_{own}']:.4f}**", row
