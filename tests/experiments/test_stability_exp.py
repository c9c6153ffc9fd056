# SPDX-License-Identifier: BSD-3-Clause
"""The ``stability`` experiment (issue #22) in --quick mode, against independent computations:
central-difference Lipschitz constants, the radius formula written out, the one-row SVM of
linear attention in cvxpy, the risk written out."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.experiments import stability as exp

from . import _map_oracles as oracle
from ._quick import quick_summary, run_quick


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``svmgeo reproduce stability --quick`` in this process, once per module."""
    return run_quick("stability", tmp_path_factory)


def _summary(out: Path) -> list[dict[str, str]]:
    return quick_summary(out, "stability")


def test_grid_seeds_and_maps():
    full, short = exp.grid(False), exp.grid(True)
    assert {p["seed"] for p in full} == set(range(4)) and {p["seed"] for p in short} == {0, 1}
    assert {p["attention"] for p in full} == set(exp.MAPS) == {"softmax", "linear",
                                                               "normalized_linear"}  # fmt: skip
    assert len(full) == 4 * len(exp.MAPS) and exp.marks(False)[-1] == 20_000


def test_quick_lists_every_seed_map_and_step(quick):
    out, stdout = quick
    rows = _summary(out)
    want = {(a, str(s), str(t)) for a in exp.MAPS for s in (0, 1) for t in exp.marks(True)}
    assert {(r["attention"], r["seed"], r["step"]) for r in rows} == want
    assert len(rows) == len(want)
    for a in exp.MAPS:
        assert f"{a} at step 2000, seeds 0-1: L_X" in stdout
    assert (out / "stability-quick.png").stat().st_size > 0
    for r in rows:  # the global W-bound holds wherever there is one
        if r["lip_W_bound"] not in ("", "nan"):
            assert float(r["lip_W"]) <= float(r["lip_W_bound"]) * (1 + 1e-12)
        else:
            assert r["attention"] == "normalized_linear"


@pytest.mark.parametrize("attention", exp.MAPS)
def test_trial_rows_match_independent_computations(attention):
    """Step 250 and 500 rows of seed 0: Lipschitz constants against central differences,
    radii against the formula written out, loss against the written-out risk, and linear
    attention's radius limit at the cvxpy one-row SVM."""
    rows = {r["step"]: r for r in exp.trial(seed=0, attention=attention, quick=True)}
    data = sg.random_data(6, 8, 10, seed=0)
    run = exp.train_map(data, attention, 500, seed=0)
    hist = {int(t): W for t, W in zip(run.history.step, run.history.W, strict=True)}
    for step in (250, 500):
        W, r = np.asarray(hist[step]), rows[step]
        lw, lx = oracle.lipschitz_fd(data, W, attention)
        np.testing.assert_allclose(r["lip_W"], lw, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(r["lip_X"], lx, rtol=1e-6)
        np.testing.assert_allclose(r["radius_min"], oracle.radius(data, W).min(), rtol=1e-9)
        np.testing.assert_allclose(r["loss"], oracle.risk(data, W, attention), rtol=1e-9,
                                   atol=1e-300)  # fmt: skip
        np.testing.assert_allclose(r["W_norm"], np.linalg.norm(W), rtol=1e-12)
    if attention == "linear":
        W_svm = oracle.svm(*oracle.linear_rows(data))
        r_svm = oracle.radius(data, W_svm)
        final = rows[exp.marks(True)[-1]]
        np.testing.assert_allclose(final["radius_svm_min"], r_svm.min(), atol=1e-6)  # cvxpy ~1e-8
        W_T = np.asarray(exp.train_map(data, attention, exp.marks(True)[-1]).W)
        np.testing.assert_allclose(final["corr_limit"], sg.correlation(W_T, W_svm), atol=1e-6)
        gap = np.abs(oracle.radius(data, W_T) - r_svm).max()
        np.testing.assert_allclose(final["radius_gap"], gap, atol=1e-6)
    if attention == "normalized_linear":
        assert all(math.isnan(r["corr_limit"]) for r in rows.values())


def test_softmax_bound_is_half_the_product_of_norms():
    """The reported global W-bound of softmax: (sum_i (||X_i||_2^2 ||z_i|| / 2)^2)^(1/2)."""
    data = sg.random_data(6, 8, 10, seed=1)
    (row, *_) = exp.trial(seed=1, attention="softmax", quick=True)
    X, Z = np.asarray(data.X), np.asarray(data.Z)
    b = [0.5 * np.linalg.norm(X[i], 2) ** 2 * np.linalg.norm(Z[i]) for i in range(6)]
    np.testing.assert_allclose(row["lip_W_bound"], np.sqrt(np.sum(np.square(b))), rtol=1e-12)
