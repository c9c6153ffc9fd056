# SPDX-License-Identifier: BSD-3-Clause
"""The ``optimizers`` experiment (issue #23) in --quick mode, and its helpers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.experiments import optimizers as exp
from svmgeo.solvers import optimal_face_alignment

from ._quick import quick_summary, run_quick


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``svmgeo reproduce optimizers --quick`` in this process, once per module."""
    return run_quick("optimizers", tmp_path_factory)


def _summary(out: Path) -> list[dict[str, str]]:
    return quick_summary(out, "optimizers")


def test_grid_seeds_optimizers_and_params():
    full, short = exp.grid(False), exp.grid(True)
    assert {p["seed"] for p in full} == set(range(10))
    assert {p["seed"] for p in short} == {0, 1}
    assert {p["optimizer"] for p in full if p["param"] == "W"} == set(exp.OPTIMIZERS)
    assert {p["optimizer"] for p in full if p["param"] == "KQ"} == set(exp.KQ_OPTIMIZERS)
    assert len(full) == 10 * (len(exp.OPTIMIZERS) + len(exp.KQ_OPTIMIZERS))


def test_quick_lists_every_seed_and_the_closest_is_the_largest(quick):
    out, stdout = quick
    rows = _summary(out)
    assert len(rows) == len(exp.grid(True))
    for r in rows:
        corr = {k: float(r[f"corr_{k}"]) for k in exp.SVMS}
        assert r["closest"] == exp.closest(corr, exp.face_lower_bounds(r) or frozenset())
        for k in exp.FACE_SVMS:  # the face's best is at least the returned solution's
            assert float(r[f"corr_{k}"]) >= float(r[f"returned_corr_{k}"]) - 1e-6
    for param, names in (("W", exp.OPTIMIZERS), ("KQ", exp.KQ_OPTIMIZERS)):
        for name in names:
            assert f"{param} {name}: closest, seeds 0-1" in stdout


def test_quick_gd_and_sign_end_at_their_own_svm(quick):
    """GD on W at the Frobenius SVM, sign descent at the l_inf SVM (measured, both seeds)."""
    rows = _summary(quick[0])
    own = {("W", "gd"): "fro", ("W", "sign"): "linf", ("W", "mirror 1.5"): "l1.5"}
    for r in rows:
        if (r["param"], r["optimizer"]) in own:
            assert r["closest"] == own[(r["param"], r["optimizer"])]


def test_trial_matches_a_direct_computation():
    """corr_fro is corr(W_T, Att-SVM(alpha)); corr_linf the best over the optimal face."""
    row = exp.trial(seed=0, param="W", optimizer="sign", n_steps=200)
    data = sg.random_data(6, 8, 10, seed=0)
    run = sg.train(data, optimizer="sign", n_steps=200, step_size=exp.STEP)
    alpha = sg.gd.RiskOracle(data)(run.W).selected.reshape(data.selection_shape)
    res = sg.att_svm(data, alpha)
    np.testing.assert_allclose(row["corr_fro"], sg.correlation(run.W, res.W), rtol=1e-9)
    res_inf = sg.att_svm(data, alpha, norm=("lp", math.inf))
    face = optimal_face_alignment(res_inf, run.W)
    np.testing.assert_allclose(row["corr_linf"], face.correlation, rtol=1e-6)
    np.testing.assert_allclose(row["returned_corr_linf"], sg.correlation(run.W, res_inf.W))


def test_without_face_the_correlation_is_with_the_returned_solution():
    data = sg.random_data(6, 8, 10, seed=1)
    W, alpha, tied = exp.final_run(data, "gd", n_steps=100)
    assert tied == "" and alpha is not None
    norms = {"linf": ("lp", math.inf)}
    plain, returned = exp.svm_correlations(data, W, alpha, norms, face=frozenset())
    assert returned == {}
    with_face, returned = exp.svm_correlations(data, W, alpha, norms)
    np.testing.assert_allclose(plain["linf"], returned["linf"])
    assert with_face["linf"] >= plain["linf"] - 1e-6


def test_closest_skips_nan():
    assert exp.closest({"fro": math.nan, "nuc": 0.5, "l1": 0.7}) == "l1"
    assert exp.closest({"fro": 0.9, "nuc": 0.9}) == "fro"
    assert exp.closest({"fro": math.nan, "nuc": math.nan}) == "none"  # was "fro"
