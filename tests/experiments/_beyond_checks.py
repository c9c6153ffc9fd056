# SPDX-License-Identifier: BSD-3-Clause
"""Checks of the quick runs of ``mirror`` and ``ntp`` (issue #13), run by test_paper.py's
``test_quick_run_writes_figure_and_table`` from its quick-run tables and printed output."""

from __future__ import annotations

import numpy as np

import svmgeo as sg
from svmgeo.experiments.mirror import PS, STEP_SIZES
from svmgeo.experiments.ntp import STEP_SIZE
from svmgeo.gd import RiskOracle, sparsity

Rows = list[dict[str, str]]

BEYOND_COLUMNS = {
    "mirror": {"seed", "p", "steps", "step", "one_minus_corr", "one_minus_corr_p1_5",
               "sparsity_W", "sparsity_svm", "alpha_is_opt", "alpha_is_lot"},
    "ntp": {"seed", "setting", "loss", "step", "corr_svm", "fin_error", "composition_error",
            "top_mass", "R", "acyclic", "n_equality_rows", "fin_success", "fin_at_boundary"},
}  # fmt: skip


def _last(rows: Rows, keys: tuple[str, ...]) -> dict[tuple[str, ...], dict[str, str]]:
    """The last recorded row of each trial, by ``keys``."""
    return {tuple(r[k] for k in keys): r for r in rows}


def _check_mirror(rows: Rows, out: str) -> None:
    last = {(s, float(p), k): r for (s, p, k), r in _last(rows, ("seed", "p", "steps")).items()}
    assert {(p, k) for _, p, k in last} == {(p, k) for p in PS for k in STEP_SIZES}
    for (_, p, _), r in last.items():
        own = float(r["one_minus_corr"])
        # the run's own l_p SVM is one of the four columns, and the same number
        np.testing.assert_allclose(own, float(r["one_minus_corr_p" + f"{p:g}".replace(".", "_")]))
        assert 0.0 <= own <= 1.0
    # recompute one trial independently: normalized MD, p = 1.5, seed 0
    r = last["0", 1.5, "normalized"]
    data = sg.random_data(4, 5, 10, seed=0)
    run = sg.train_mirror(data, exponent=1.5, step_size=STEP_SIZES["normalized"], normalized=True,
                          n_steps=int(r["n_steps"]))  # fmt: skip
    alpha = RiskOracle(data)(run.W).selected.reshape(-1)
    W_p = sg.att_svm(data, alpha, norm=("lp", 1.5)).W
    np.testing.assert_allclose(float(r["one_minus_corr"]), 1 - sg.correlation(run.W, W_p),
                               rtol=1e-7, atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(float(r["sparsity_W"]), sparsity(run.W))
    assert (r["alpha_is_opt"] == "True") == bool(np.array_equal(alpha, sg.optimal_tokens(data)))
    # the headline lists every seed's final value, in seed order
    final = [float(last[s, 1.5, "normalized"]["one_minus_corr"]) for s in ("0", "1")]
    assert (
        f"normalized p=1.5: 1-corr(W_T, W_mm_p), seeds 0-1: {final[0]:.1e}, {final[1]:.1e}" in out
    )
    # svmgeo's measurement of the paper's sparsity claim, with a wide margin at this size:
    # p = 1.1 leaves most entries of W below 1e-3 max|W|, p = 2 almost none
    for s in ("0", "1"):
        assert float(last[s, 1.1, "normalized"]["sparsity_W"]) > 0.4
        assert float(last[s, 2.0, "normalized"]["sparsity_W"]) < 0.1


def _check_ntp(rows: Rows, out: str) -> None:
    last = _last(rows, ("seed", "setting", "loss"))
    for (_, setting, _), r in last.items():
        if setting == "acyclic":  # S_fin = {0}: no equality rows, W_fin = 0
            assert r["acyclic"] == "True" and r["n_equality_rows"] == "0"
            assert r["fin_success"] == "True" and r["fin_at_boundary"] == "False"
            assert float(r["fin_error"]) == 0.0
        else:
            assert r["acyclic"] == "False" and int(r["n_equality_rows"]) > 0
        assert 0.0 <= float(r["top_mass"]) <= 1.0 and -1.0 <= float(r["corr_svm"]) <= 1.0
    # recompute one trial independently: cyclic, retrieval loss, seed 0
    r = last["0", "cyclic", "retrieval"]
    data = sg.random_next_token_data(60, 5, 6, 10, tier_size=2, seed=0)
    run = sg.train_ntp(data, loss="retrieval", step_size=STEP_SIZE, normalized=False,
                       n_steps=int(r["n_steps"]))  # fmt: skip
    ref = sg.verify_ntp(data, run.W, loss="retrieval")
    np.testing.assert_allclose(
        [float(r[k]) for k in ("corr_svm", "fin_error", "composition_error", "R")],
        [ref.corr_svm, ref.fin_error, ref.composition_error, ref.R],
        rtol=1e-9,
    )
    final = [float(last[s, "acyclic", "ce"]["corr_svm"]) for s in ("0", "1")]
    assert f"acyclic ce: corr(W_T, W_svm), seeds 0-1: {final[0]:.5f}, {final[1]:.5f}" in out


BEYOND_CHECKS = {"mirror": _check_mirror, "ntp": _check_ntp}
