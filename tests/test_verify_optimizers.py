# SPDX-License-Identifier: BSD-3-Clause
"""``sg.verify(data, optimizer=...)`` for sign, ("steepest", q), spectral and Adam: every SVM,
the optimal faces, the closest one, and ``rep.rates`` (issue #23)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import optimal_face_alignment
from svmgeo.verify._gd import FACE_SVMS

DATA = sg.random_data(6, 8, 10, seed=0)
NORMS = {"fro": "fro", "nuc": "nuc", "l1": ("lp", 1.0), "linf": ("lp", math.inf),
         "spectral": "spectral"}  # fmt: skip


@pytest.fixture(scope="module")
def sign() -> sg.VerifyReport:
    return sg.verify(DATA, optimizer="sign", n_steps=400, backend="numpy", threshold=0.5)


def test_sign_is_compared_with_every_svm(sign: sg.VerifyReport) -> None:
    run = sg.train(DATA, optimizer="sign", n_steps=400, backend="numpy")
    np.testing.assert_allclose(sign.W, run.W, rtol=1e-12)
    assert sign.method == "sign" and set(sign.face_corr or {}) == set(NORMS)
    for name, norm in NORMS.items():
        res = sg.att_svm(DATA, sign.selection, norm=norm)
        target = getattr(sign, f"W_{name}")
        np.testing.assert_allclose(target, res.W, rtol=1e-6, atol=1e-8)
        curve = getattr(sign, f"corr_{name}")
        np.testing.assert_allclose(curve[-1], sg.correlation(sign.W, res.W), rtol=1e-6)
        face = (sign.face_corr or {})[name]
        if name in FACE_SVMS:  # nuc, l1, linf, spectral: optima need not be unique
            want = optimal_face_alignment(res, sign.W).correlation
            np.testing.assert_allclose(face, want, rtol=1e-6)
            assert face >= curve[-1] - 1e-6  # the face's best is at least the returned one's
        else:
            np.testing.assert_allclose(face, curve[-1], rtol=1e-12)
    faces = sign.face_corr or {}
    assert sign.converged_to == max(faces, key=lambda k: faces[k])
    assert sign.converged_to == "linf"  # measured: sign descent ends at the l_inf SVM


def test_rates_are_fit_rates_in_each_norm(sign: sg.VerifyReport) -> None:
    assert sign.rates is not None and set(sign.rates) == set(NORMS)
    for name, norm in NORMS.items():
        target = getattr(sign, f"W_{name}")
        want = sg.fit_rates((sign.steps, sign.run.history.W), target, norm=norm, growth="linear")  # type: ignore[union-attr]
        got = sign.rates[name]
        np.testing.assert_allclose(got.norm_slope, want.norm_slope, rtol=1e-12)
        np.testing.assert_allclose(got.norm_slope_ci, want.norm_slope_ci, rtol=1e-12)
        np.testing.assert_allclose(got.error_power, want.error_power, rtol=1e-12)
        assert got.verdict == want.verdict


def test_report_json_round_trip(sign: sg.VerifyReport) -> None:
    back = sg.VerifyReport.from_json(sign.to_json())
    assert back.method == "sign" and back.converged_to == sign.converged_to
    np.testing.assert_allclose(back.corr_linf, sign.corr_linf)  # type: ignore[arg-type]
    for k, v in (sign.face_corr or {}).items():
        np.testing.assert_allclose((back.face_corr or {})[k], v)
    assert "corr(W, W_mm linf face)" in str(sign)


def test_gd_reports_have_rates_and_an_unchanged_json() -> None:
    rep = sg.verify(DATA, n_steps=300, backend="numpy")
    assert rep.rates is not None and set(rep.rates) == {"fro", "nuc"}
    # normalized steps of a constant size: ||W|| grows linearly in t
    want = sg.fit_rates((rep.steps, rep.run.history.W), rep.W_fro, growth="linear")  # type: ignore[union-attr]
    np.testing.assert_allclose(rep.rates["fro"].norm_slope, want.norm_slope, rtol=1e-12)
    keys = set(json.loads(rep.to_json()))
    assert not keys & {"W_l1", "corr_linf", "face_corr", "rates", "W_spectral"}


def test_steepest_q_adds_its_own_lq_svm() -> None:
    rep = sg.verify(DATA, optimizer=("steepest", 1.5), n_steps=300, backend="numpy")
    assert rep.method == "steepest:1.5"
    res = sg.att_svm(DATA, rep.selection, norm=("lp", 1.5))
    np.testing.assert_allclose(rep.W_lp, res.W, rtol=1e-6, atol=1e-8)  # type: ignore[arg-type]
    assert rep.rates is not None and rep.rates["lp"] is not None
    assert "lp" in (rep.face_corr or {})


def test_adam_options_pass_through() -> None:
    rep = sg.verify(DATA, optimizer="adam", adam_eps=0.0, n_steps=50, backend="numpy")
    run = sg.train(DATA, optimizer="adam", adam_eps=0.0, n_steps=50, backend="numpy")
    np.testing.assert_allclose(rep.W, run.W, rtol=1e-12)


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"optimizer": "sign", "attention": "linear"}, "attention='linear'"),
        ({"optimizer": "sign", "param": "p"}, "param='p'"),
        ({"optimizer": "spectral", "train_head": True}, "train_head=True"),
        ({"optimizer": "sign", "ridge": 0.1}, "ridge"),
        ({"optimizer": "gd", "adam_eps": 0.0}, "adam_eps"),
        ({"optimizer": "mirror"}, "verify_mirror"),
        ({"optimizer": ("steepest", 0.5)}, "q"),
    ],
)
def test_bad_options_name_the_argument(kw: dict[str, object], words: str) -> None:
    with pytest.raises(sg.ProblemError) as err:
        sg.verify(DATA, n_steps=5, **kw)  # type: ignore[arg-type]
    assert words in str(err.value)


@pytest.mark.parametrize(
    "kw",
    [
        {"optimizer": "adam", "adam_beta1": 2.0},
        {"optimizer": "sign", "init": ("random", -1.0)},
        {"step_size": "fast"},
        {"loss": 42},
        {"init": ("random", -1.0)},
    ],
    ids=["adam_beta1", "rule-init", "step_size", "loss", "gd-init"],
)
def test_errors_name_verify_not_train(kw: dict[str, object]) -> None:
    """verify trains through train; the errors of the options it passes on named train."""
    with pytest.raises(sg.ProblemError) as err:
        sg.verify(DATA, n_steps=5, **kw)  # type: ignore[arg-type]
    assert "of verify" in str(err.value) and "train" not in str(err.value)


def test_gd_polyak_is_verified_as_train_runs_it() -> None:
    """verify(step_size="polyak") ran GD's path, whose records train's Polyak rule (run as
    ("steepest", 2)) refused as "option(s) record of another optimizer", never passed by the
    user; it is now that rule's verification, on train's own run."""
    data = sg.random_data(4, 3, 4, seed=1)  # Att-SVM(opt) feasible: Polyak's target attained
    rep = sg.verify(data, step_size="polyak", n_steps=40, backend="numpy")
    run = sg.train(data, step_size="polyak", n_steps=40, backend="numpy")
    assert rep.method == "steepest:2"
    np.testing.assert_allclose(rep.W, run.W, rtol=1e-12)
    with pytest.raises(sg.ProblemError, match="step_size='polyak' takes normalized steps"):
        sg.verify(data, step_size="polyak", normalized=False, n_steps=5)


def test_the_figure_draws_every_prediction_of_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """plot_verify drew only the Frobenius, nuclear and Gen-SVM curves: a sign run's closest
    prediction (l_inf) and linear attention's own SVM were missing."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from svmgeo.plot import plot_verify

    drawn: list[list[str]] = []
    monkeypatch.setattr(
        Figure, "savefig",
        lambda fig, path, **kw: drawn.append([line.get_label() for line in fig.axes[0].lines]),
    )  # fmt: skip
    rep = sg.verify(DATA, optimizer="sign", n_steps=100, backend="numpy")
    plot_verify(rep, "unused.png")
    assert "$\\ell_\\infty$ SVM" in drawn[-1] and "spectral SVM" in drawn[-1]
    linear = sg.verify(DATA, attention="linear", n_steps=100, backend="numpy")
    plot_verify(linear, "unused.png")
    assert "its own SVM (linear)" in drawn[-1]


def test_a_report_of_another_map_does_not_read_its_max_phi_as_a_softmax() -> None:
    """The text report printed '1 - min max softmax' = 14.2 for a linear map, whose max phi is
    no probability; it now prints the map's min max phi, as plot_verify labels it."""
    data = sg.random_data(3, 3, 4, seed=0)
    rep = sg.verify(data, attention="linear", loss="correlation", n_steps=50)
    text = str(rep)
    assert "softmax" not in text and "min max phi (linear)" in text and "max_phi" in text
    assert f"{rep.final_max_softmax:.3e}" in text
    assert "1 - min max softmax" in str(sg.verify(data, n_steps=50))
