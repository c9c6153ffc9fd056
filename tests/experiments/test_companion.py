# SPDX-License-Identifier: BSD-3-Clause
"""The companion paper's four experiments (Tarzanagh, Li, Zhang, Oymak 2023) in quick mode:
headline numbers against the published ones and against independent computations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.experiments import _companion as companion
from svmgeo.experiments.companion_losses import limit_offset
from svmgeo.experiments.companion_single import STARTS

Run = Callable[[str], sg.ReproduceResult]


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """``quick(name)``: ``sg.reproduce(name, quick=True)`` in this process, once per module."""
    done: dict[str, sg.ReproduceResult] = {}
    out = tmp_path_factory.mktemp("companion")

    def run(name: str) -> sg.ReproduceResult:
        if name not in done:
            done[name] = sg.reproduce(name, quick=True, out=out, workers=0, progress=False)
            assert done[name].n_errors == 0
        return done[name]

    return run


def _last(res: sg.ReproduceResult) -> list[dict]:
    rows = [r for r in res.sweep.rows if r["status"] == "ok"]
    return [r for r in rows if r["part"] == r["n_parts"] - 1]


def _normalized_gd(data: sg.TokenData, p0, n_steps: int, loss: str = "logistic") -> np.ndarray:
    """An independent float64 reference: normalized GD on p for a fixed linear head,
    f_i = v^T U_i^T softmax(X_i p), written from the model's definition."""
    X, U = np.asarray(data.X), np.asarray(data.values)
    Y, h = np.asarray(data.Y, dtype=float), np.asarray(data.values) @ np.asarray(data.v)
    p = np.array(p0, dtype=float)
    for _ in range(n_steps):
        a = X @ p
        s = np.exp(a - a.max(axis=1, keepdims=True))
        s /= s.sum(axis=1, keepdims=True)
        f = (s * h).sum(axis=1)
        # h_t - f = sum_tau s_tau (h_t - h_tau): no cancellation once the softmax saturates
        h_minus_f = ((h[:, :, None] - h[:, None, :]) * s[:, None, :]).sum(axis=2)
        dl = -Y / (1 + np.exp(Y * f)) if loss == "logistic" else -Y
        g = np.einsum("i,itd,it->d", dl / len(Y), X, s * h_minus_f)
        p -= 0.1 * g / np.linalg.norm(g)
    assert U.shape[2] == 3
    return p


def test_single_input_published_optima_and_convergence(quick):
    res = quick("companion_single")
    # the p-SVM optima: (-0.1, 1)/1.01 and (1, 0), i.e. 1/2|p|^2 = 50/101 and 1/2
    h = res.headline
    np.testing.assert_allclose(
        float(h["p-SVM(token 0) 1/2|p|^2 (published 0.49505)"]), 50 / 101, 1e-6
    )
    np.testing.assert_allclose(
        float(h["p-SVM(token 0) 1/2|p|^2 (published 0.49505)"]), 0.49505, 1e-5
    )
    assert float(h["p-SVM(token 1) 1/2|p|^2 (published 0.5)"]) == pytest.approx(0.5, abs=1e-6)
    last = _last(res)
    glob = [r for r in last if r["setting"] == "global"]
    loc = [r for r in last if r["setting"] == "local"]
    assert len(glob) == len(loc) == len(STARTS)
    # gamma2 = 0.9: token 1 is not locally optimal, every start selects token 0
    assert not glob[0]["token1_is_lot"] and {r["selected"] for r in glob} == {0}
    # gamma2 = 0: token 1 is locally optimal and some start converges to it
    assert loc[0]["token1_is_lot"] and {r["selected"] for r in loc} == {0, 1}
    for r in last:
        assert r[f"cos_{r['selected']}"] > 0.99
        assert r[f"prob_{r['selected']}"] > 0.99
    # one run against the independent reference (values read by the head, not by attention)
    r = next(x for x in loc if x["start"] == 0)
    data = companion.single_input_data(0.0)
    p = _normalized_gd(data, [0.0, STARTS[0], 0.0], r["step"])
    np.testing.assert_allclose([r["p1"], r["p2"], r["p3"]], p, rtol=1e-7, atol=1e-9)


def test_multi_input_published_optimum_and_ngd_faster(quick):
    pytest.importorskip("torch")
    res = quick("companion_multi")
    h = res.headline
    key = "seed 0: p-SVM 1/2|p|^2 over 3 coordinates (published 0.31319)"
    np.testing.assert_allclose(float(h[key]), 0.31319, atol=5e-6)
    # the published SVM and the SVM of the attention features share their (p1, p2) direction
    assert h["seed 0: cos of the two SVM directions in (p1, p2)"] == pytest.approx(1.0, abs=1e-9)
    rows = [r for r in res.sweep.rows if r["step"] == 200 and r["start"] == 2]
    ngd = next(r for r in rows if r["method"] == "ngd")
    gd = next(r for r in rows if r["method"] == "gd")
    assert ngd["prob_opt"] > gd["prob_opt"] and ngd["norm_p"] > 2 * gd["norm_p"]
    np.testing.assert_allclose(ngd["norm_p"], 20.0, rtol=0.05)  # 200 steps of length 0.1
    for r in _last(res):
        if r["method"] == "ngd":
            assert r["cos_mm"] > 0.99


def test_multi_input_data_are_the_papers_draw():
    torch = pytest.importorskip("torch")
    data = companion.multi_input_data(0)
    gen = torch.Generator()
    gen.manual_seed(0)
    noise = (torch.randn((3, 7, 3), generator=gen) * 0.2).double().numpy()
    U = np.asarray(data.values)
    np.testing.assert_allclose(U[:, 0, :2] - [1.0, 0.0], noise[:, 0, :2], atol=1e-6)
    np.testing.assert_allclose(U[:, 1:4, :2] - [-1.0, 1.0], noise[:, 1:4, :2], atol=1e-6)
    assert np.all(U[:, 0, 2] == 1.0) and np.all(U[:, 1:, 2] == 0.5)
    np.testing.assert_array_equal(np.asarray(data.X)[..., 2], 0.0)  # attention ignores scores


def test_joint_training_reaches_both_predictions(quick):
    res = quick("companion_joint")
    h = res.headline
    np.testing.assert_allclose(float(h["tight: p_opt 1/2|p|^2 (published 0.94444)"]), 17 / 18, 1e-6)
    np.testing.assert_allclose(float(h["non-tight: p_relax 1/2|p|^2 (published 0.5)"]), 0.5, 1e-6)
    assert h["tight: inputs on v_mm's margin"] == "3 of 3"
    assert h["non-tight: inputs on v_mm's margin"] == "2 of 3"
    last = {r["tight"]: r for r in _last(res)}
    tight, loose = last[True], last[False]
    assert tight["step"] == 1000
    # the acceptance: tight data, cos >= 0.9999 for both blocks
    assert tight["cos_p_opt"] >= 0.9999 and tight["cos_v_mm"] >= 0.9999
    # non-tight: p goes to the relaxed SVM, not to p_opt
    assert loose["cos_p_relax"] >= 0.999 and loose["cos_p_relax"] > loose["cos_p_opt"] + 0.005
    assert loose["cos_v_mm"] >= 0.9999


def test_losses_converge_to_the_p_svm_direction_with_the_derived_offset(quick):
    res = quick("companion_losses")
    last = _last(res)
    assert {(r["loss"], r["C"]) for r in last} == {
        (loss, C) for loss in ("correlation", "logistic") for C in (1.0, 10.0, 100.0)
    }
    # the balance offsets: (1/2) log C, and (1/2) log(C (1 + e) / (1 + e^C)) for logistic
    assert limit_offset("correlation", 100.0) == pytest.approx(0.5 * np.log(100.0), rel=1e-12)
    expected = 0.5 * np.log(10 * (1 + np.e) / (1 + np.exp(10.0)))
    assert limit_offset("logistic", 10.0) == pytest.approx(expected, rel=1e-12)
    for r in last:
        assert r["p1"] > 0 and r["prob_2"] > 0.99
        if r["loss"] == "logistic" and r["C"] == 100.0:
            # the limit offset is -47: after 300 steps (|p| = 30) p still heads down along
            # (1, -1), which leaves input 1 (already f = 50 at p = 0) near s = 1/2
            assert r["p2"] < -15 and r["p2_limit"] < -45 and r["prob_1"] < 0.9
            continue
        assert r["cos_mm"] > 0.99 and r["prob_1"] > 0.99
        np.testing.assert_allclose(r["p2"], r["p2_limit"], atol=0.01)
    # p_mm = (1, 0, 0) whatever C; one run against the independent reference
    r = next(x for x in last if x["loss"] == "correlation" and x["C"] == 10.0)
    p = _normalized_gd(companion.losses_data(10.0), np.zeros(3), r["step"], loss="correlation")
    np.testing.assert_allclose([r["p1"], r["p2"]], p[:2], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize(
    "name", ["companion_single", "companion_multi", "companion_joint", "companion_losses"]
)
def test_quick_run_writes_tables_and_figure(name, quick):
    if name == "companion_multi":
        pytest.importorskip("torch")
    res = quick(name)
    assert [Path(p).name for p in res.figures] == [f"{name}-quick.png"]
    assert res.figures[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert all(Path(p).exists() for p in res.tables)
    assert str(res).startswith(f"{name} (quick)")


def test_multi_input_without_torch_names_the_extra_before_any_trial(tmp_path, capsys, monkeypatch):
    import sys

    from svmgeo.cli import main

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    argv = ["reproduce", "companion_multi", "--quick", "--out", str(tmp_path), "--workers", "0"]
    assert main([*argv, "--no-progress"]) == 2
    assert "pip install 'svmgeo[torch]'" in capsys.readouterr().err
    assert not (tmp_path / "companion_multi-quick.csv").exists()
