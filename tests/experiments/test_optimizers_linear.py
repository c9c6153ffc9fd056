# SPDX-License-Identifier: BSD-3-Clause
"""The calibration ``optimizers_linear`` (issue #23): on linear attention each steepest descent
ends at its own norm's SVM (measured; the limit is a theorem there: Gunasekar, Lee, Soudry,
Srebro 2018)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.constraints import map_svm_constraints
from svmgeo.experiments import optimizers as exp

from ._quick import quick_summary, run_quick


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, str]], str]:
    """``svmgeo reproduce optimizers_linear --quick`` in this process, once per module."""
    out, stdout = run_quick("optimizers_linear", tmp_path_factory)
    return quick_summary(out, "optimizers_linear"), stdout


def test_grid() -> None:
    full, short = exp.linear_grid(False), exp.linear_grid(True)
    assert {p["seed"] for p in full} == set(range(10)) and {p["seed"] for p in short} == {0, 1}
    assert {p["optimizer"] for p in full} == set(exp.LINEAR_OPTIMIZERS)
    assert len(full) == 10 * len(exp.LINEAR_OPTIMIZERS)


def test_quick_every_steepest_descent_ends_at_its_own_svm(quick) -> None:  # type: ignore[no-untyped-def]
    rows, stdout = quick
    assert len(rows) == len(exp.linear_grid(True))
    for r in rows:
        own, theorem = exp.LINEAR_OPTIMIZERS[r["optimizer"]][1:]
        ratios = {k: float(r[f"ratio_{k}"]) for k in exp.SVMS}
        assert all(v <= 1.0 + 1e-6 for v in ratios.values())  # no W beats the max margin
        assert r["closest_margin"] == exp.closest(ratios)
        if theorem:  # the theorem's runs, both seeds, by margin and by correlation
            assert r["closest_margin"] == own and r["closest"] == own, r
            assert float(r["own_ratio_tenth"]) < ratios[own]  # the margin is still rising
    for name in exp.LINEAR_OPTIMIZERS:
        assert f"{exp.linear_tag(name)}: measured closest by margin, seeds 0-1" in stdout


def test_margin_ratio_is_one_at_each_svm_and_below_elsewhere() -> None:
    data = sg.random_data(6, 8, 10, seed=3)
    rows = exp.linear_rows(data)
    svms = {k: sg.att_svm(data, attention="linear", norm=n) for k, n in exp.SVMS.items()}
    for k, res in svms.items():
        np.testing.assert_allclose(
            exp.margin_ratio(rows, res.W, exp.SVMS[k], float(res.objective)), 1.0, rtol=1e-6
        )
    res = svms["linf"]
    W = svms["fro"].W
    by_hand = np.min(np.einsum("jkl,kl->j", rows, W)) / np.abs(W).max() * np.abs(res.W).max()
    np.testing.assert_allclose(exp.margin_ratio(rows, W, ("lp", math.inf), res.objective),
                               by_hand, rtol=1e-12)  # fmt: skip
    assert by_hand < 1.0 - 1e-3


def test_linear_step_by_hand() -> None:
    data = sg.random_data(6, 8, 10, seed=0)
    cs = map_svm_constraints(data, "linear")
    res = sg.att_svm(data, attention="linear")
    B = max(np.linalg.norm(a) * np.linalg.norm(b) for a, b in zip(cs.A, cs.B, strict=True))
    want = exp.LINEAR_STEP_FRACTION / (np.linalg.norm(res.W) * B**2)
    np.testing.assert_allclose(exp.linear_step(exp.linear_rows(data), res, "fro"), want,
                               rtol=1e-9)  # fmt: skip
    res = sg.att_svm(data, attention="linear", norm=("lp", math.inf))
    B = max(np.abs(a).sum() * np.abs(b).sum() for a, b in zip(cs.A, cs.B, strict=True))
    want = exp.LINEAR_STEP_FRACTION / (np.abs(res.W).max() * B**2)
    np.testing.assert_allclose(exp.linear_step(exp.linear_rows(data), res, ("lp", math.inf)),
                               want, rtol=1e-9)  # fmt: skip


def test_trial_matches_a_direct_computation() -> None:
    row = exp.linear_trial(seed=1, optimizer="sign", n_steps=200)
    data = sg.random_data(6, 8, 10, seed=1)
    res = sg.att_svm(data, attention="linear", norm=("lp", math.inf))
    run = sg.train(data, attention="linear", optimizer="sign", loss="exponential",
                   step_size=row["step"], n_steps=200)  # fmt: skip
    fro = sg.att_svm(data, attention="linear")
    np.testing.assert_allclose(row["corr_fro"], sg.correlation(run.W, fro.W), rtol=1e-9)
    u = np.einsum("jkl,kl->j", exp.linear_rows(data), run.W)
    want = u.min() / np.abs(run.W).max() * np.abs(res.W).max()
    np.testing.assert_allclose(row["ratio_linf"], want, rtol=1e-9)


@pytest.mark.parametrize("name", ["fro", "nuc", "l1", "l1.5", "linf", "spectral"])
def test_linear_svms_match_a_naive_cvxpy_model(name: str) -> None:
    """att_svm(attention="linear", norm=...) for every norm of the calibration against
    min ||W|| s.t. <A_j, W> >= 1, written directly in cvxpy (Clarabel)."""
    cp = pytest.importorskip("cvxpy")
    data = sg.random_data(6, 8, 10, seed=2)
    rows = exp.linear_rows(data)
    W = cp.Variable((data.d, data.d))
    objective = {
        "fro": cp.norm(W, "fro"), "nuc": cp.normNuc(W), "l1": cp.sum(cp.abs(W)),
        "l1.5": cp.pnorm(cp.vec(W, order="F"), 1.5), "linf": cp.max(cp.abs(W)),
        "spectral": cp.sigma_max(W),
    }[name]  # fmt: skip
    cons = [cp.sum(cp.multiply(A, W)) >= 1 for A in rows]
    cp.Problem(cp.Minimize(objective), cons).solve(solver="CLARABEL")
    res = sg.att_svm(data, attention="linear", norm=exp.SVMS[name])
    np.testing.assert_allclose(res.objective, objective.value, rtol=1e-6)
