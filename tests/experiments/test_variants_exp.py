# SPDX-License-Identifier: BSD-3-Clause
"""The ``variants`` experiment (issue #22) in --quick mode, against independent computations:
the SVMs in cvxpy (naive formulations), stuck keys counted from the signs of the final logits."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.experiments import variants as exp

from . import _map_oracles as oracle
from ._quick import quick_summary, run_quick


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``svmgeo reproduce variants --quick`` in this process, once per module."""
    return run_quick("variants", tmp_path_factory)


def _summary(out: Path) -> list[dict[str, str]]:
    return quick_summary(out, "variants")


def _f(cell: str) -> float:
    return math.nan if cell in ("", "nan") else float(cell)


def test_grid_every_map_and_seed():
    full, short = exp.grid(False), exp.grid(True)
    assert {p["seed"] for p in full} == set(range(6)) and {p["seed"] for p in short} == {0, 1}
    assert {p["attention"] for p in full} == set(exp.MAPS) == set(sg.attention_maps.ATTENTION_MAPS)
    assert len(full) == 6 * len(exp.MAPS) and {p["n_steps"] for p in full} == {20_000}


def test_quick_lists_every_seed_and_the_closest_is_the_largest(quick):
    out, stdout = quick
    rows = _summary(out)
    assert {(r["attention"], r["seed"]) for r in rows} == {
        (a, str(s)) for a in exp.MAPS for s in (0, 1)
    }
    for r in rows:
        corr = {k: _f(r[f"corr_{k}"]) for k in exp.SVMS}
        assert r["closest"] == exp.closest(corr)
        own = exp.OWN[r["attention"]]
        assert r["own"] == (own or "none")
        if own is not None and not math.isnan(corr[own]):
            np.testing.assert_allclose(_f(r["corr_own"]), corr[own])
        if r["attention"] != "sigmoid":
            assert r["stuck"] == "" and math.isnan(_f(r["n_stuck"]))
    for a in exp.MAPS:
        assert f"{a}, seeds 0-1: closest" in stdout
    assert (out / "variants-quick.png").stat().st_size > 0


@pytest.mark.parametrize("attention", ["linear", "sigmoid"])
def test_trial_correlations_match_cvxpy_svms(attention):
    """Seed 0, 2,000 steps: every correlation against the naive SVM in cvxpy at what W ends on."""
    row = exp.trial(seed=0, attention=attention, n_steps=2000)
    data = sg.random_data(6, 8, 10, seed=0)
    W = np.asarray(exp.train_map(data, attention, 2000).W)
    u = oracle.logits(data, W)
    alpha = np.argmax(u, axis=1)
    ref = {
        "fro": oracle.svm(*oracle.att_svm_rows(data, alpha)),
        "nuc": oracle.svm(*oracle.att_svm_rows(data, alpha), norm="nuc"),
        "linear": oracle.svm(*oracle.linear_rows(data)),
        "sigmoid": oracle.svm(*oracle.sigmoid_rows(data, np.sign(u))),
    }
    for k, Wk in ref.items():
        np.testing.assert_allclose(row[f"corr_{k}"], sg.correlation(W, Wk), atol=1e-5)
    assert row["closest"] == exp.OWN[attention]
    np.testing.assert_allclose(row["loss"], oracle.risk(data, W, attention), rtol=1e-9)


@pytest.mark.parametrize("seed", [2, 3])
def test_stuck_sigmoid_key_is_counted_and_judged_from_its_margin(seed):
    """20,000 steps (the docs' measurement: one stuck key on seeds 2 and 3): the count equals
    the keys whose final logit has the sign against sign(gamma); the verdict "stays" equals a
    margin > 1 at the cvxpy SVM of the final sign pattern."""
    row = exp.trial(seed=seed, attention="sigmoid", n_steps=20_000)
    data = sg.random_data(6, 8, 10, seed=seed)
    W = np.asarray(exp.train_map(data, "sigmoid", 20_000).W)
    signs = np.sign(oracle.logits(data, W))
    gamma = sg.token_scores(data)
    against = np.argwhere(signs != np.sign(gamma))
    assert row["n_stuck"] == len(against) >= 1
    W_pi = oracle.svm(*oracle.sigmoid_rows(data, signs))
    margins = (signs * oracle.logits(data, W_pi))[tuple(against.T)]
    for (i, t), m in zip(against, margins, strict=True):
        assert f"{i}:{t} m={m:.3f}" in row["stuck"]
    want = "stays" if np.all(margins > 1 + 1e-6) else "flips"
    assert row["stuck_verdict"] == want
