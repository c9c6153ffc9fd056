# SPDX-License-Identifier: BSD-3-Clause
"""Verify beyond GD on TokenData: l_p mirror descent (sg.verify_mirror) and next-token data
(svmgeo.ntp.verify_ntp_training; sg.verify refuses both and names the function to call)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from scipy.special import softmax

import svmgeo as sg
from svmgeo.gd import DEFAULT_BACKEND, OPTIMIZERS, RiskOracle
from svmgeo.ntp import verify_ntp_training


@pytest.fixture(scope="module")
def data() -> sg.TokenData:
    return sg.random_data(4, 5, 10, seed=1)


@pytest.fixture(scope="module")
def mirror_report(data: sg.TokenData) -> sg.VerifyReport:
    return sg.verify_mirror(data, exponent=1.5, n_steps=1500, record_every=100, backend="numpy")


def test_mirror_report_is_recomputed_from_its_parts(data, mirror_report):
    rep = mirror_report
    # the run: train_mirror with the same options, from zero
    run = sg.train_mirror(data, exponent=1.5, step_size=0.1, normalized=True, n_steps=1500,
                          record_every=100)  # fmt: skip
    np.testing.assert_allclose(rep.W, run.W, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(rep.steps, run.history.step)
    # the selection: the most probable key at the final W
    sel = RiskOracle(data)(run.W).selected.reshape(-1)
    np.testing.assert_array_equal(rep.selection, sel)
    assert rep.is_optimal == bool(np.array_equal(sel, sg.optimal_tokens(data)))
    # the l_p SVM of that selection, and the correlation curve against it
    svm = sg.att_svm(data, sel, norm=("lp", 1.5))
    np.testing.assert_allclose(rep.W_lp, svm.W, rtol=1e-9, atol=1e-12)
    expected = [sg.correlation(W, svm.W) for W in run.history.W]
    np.testing.assert_allclose(rep.corr_lp, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(rep.corr_fro[-1], sg.correlation(run.W, sg.att_svm(data, sel).W))
    # LOT in the l_p norm
    assert rep.is_lot == bool(sg.is_locally_optimal(data, sel, norm=("lp", 1.5)))
    # saturation: min over sequences of the largest softmax probability, at the last W
    logits = np.einsum("ntd,de,ne->nt", data.X, run.W, data.Z)
    np.testing.assert_allclose(rep.final_max_softmax, softmax(logits, axis=1).max(axis=1).min())
    assert rep.method == "mirror" and rep.mirror_p == 1.5 and rep.mirror_run is not None


def test_mirror_run_prefers_its_own_lp_svm(mirror_report):
    # the theorem's prediction for this instance: W_t aligns with W^mm_p, not W^mm_2
    rep = mirror_report
    assert rep.converged_to == "lp"
    assert rep.corr_lp[-1] > 0.999 > rep.corr_fro[-1]
    assert 1 - rep.corr_lp[-1] < 0.1 * (1 - rep.corr_lp[len(rep.steps) // 3])


def test_p2_mirror_verify_is_gd_verify(data):
    # psi = |W|^2/2 makes mirror descent plain (normalized) GD, and the l_2 SVM the Frobenius one
    md = sg.verify_mirror(data, exponent=2.0, n_steps=300, record_every=30, backend="numpy")
    gd = sg.verify(data, n_steps=300, record_every=30, backend="numpy")
    np.testing.assert_array_equal(md.steps, gd.steps)
    np.testing.assert_allclose(md.W, gd.W, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(md.W_lp, gd.W_fro, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(md.corr_lp, gd.corr_fro, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(md.corr_nuc, gd.corr_nuc, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(md.max_softmax, gd.max_softmax, rtol=1e-12)
    np.testing.assert_array_equal(md.selection, gd.selection)


def test_mirror_report_prints_and_round_trips(mirror_report):
    text = str(mirror_report)
    assert "corr(W, W_mm l1.5)" in text and "corr_lp" in text and "p = 1.5 mirror descent" in text
    back = sg.VerifyReport.from_json(mirror_report.to_json())
    assert back.method == "mirror" and back.mirror_p == 1.5
    np.testing.assert_allclose(back.corr_lp, mirror_report.corr_lp)
    np.testing.assert_allclose(back.W_lp, mirror_report.W_lp)
    gd_json = sg.VerifyReport.from_json(sg.verify(sg.random_data(2, 3, 4, seed=0), n_steps=20,
                                                  backend="numpy").to_json())  # fmt: skip
    assert gd_json.method == "gd" and gd_json.corr_lp is None and gd_json.mirror_p is None


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"p": 1.5}, "'p' .* was renamed 'exponent'"),
        ({"exponent": 1.5, "method": "mirror"}, "'method' .* was renamed 'optimizer'"),
        ({"exponent": 1.5, "tol": 1e-3}, "renamed 'grad_tol'; verify_mirror takes neither"),
        ({"exponent": 1.5, "param": "KQ"}, "unknown option.*'param'.*drop param"),
        ({"exponent": 1.5, "ridge": 0.1}, r"unknown option\(s\) \['ridge'\]"),
        ({"exponent": 1.5, "seed": 3, "m": 2}, r"unknown option\(s\) \['m', 'seed'\]"),
        ({"exponent": 1.5, "head": "concave"}, "linear head"),
        ({"exponent": 1.5, "init": "cone"}, "init='cone'"),
        ({"exponent": 1.0}, "'exponent' parameter of verify_mirror"),
        ({"exponent": float("inf")}, r"verify_mirror must be a float in \(1, inf\)\. Got inf"),
        ({"exponent": 1.5, "threshold": 2.0}, "'threshold' parameter of verify_mirror"),
    ],
)
def test_mirror_bad_options_are_named(data, options, match):
    with pytest.raises(sg.ProblemError, match=match):
        sg.verify_mirror(data, n_steps=5, **options)


def test_verify_mirror_needs_its_exponent(data):
    with pytest.raises(sg.ProblemError, match="verify_mirror needs exponent="):
        sg.verify_mirror(data, n_steps=5)


def test_verify_mirror_rejects_other_data():
    with pytest.raises(sg.ProblemError, match=r"verify_mirror takes one svmgeo\.TokenData"):
        sg.verify_mirror(np.zeros((2, 3, 4)), exponent=1.5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"optimizer": "mirror"}, r"verify_mirror\(data, exponent="),
        ({"method": "mirror"}, r"'method' .* renamed 'optimizer'.*verify_mirror\(data, exponent="),
        ({"p": 1.5}, r"'p' .* renamed 'exponent'.*verify_mirror\(data, exponent="),
        ({"optimizer": "newton"}, "'optimizer' parameter"),
    ],
)
def test_verify_sends_mirror_descent_to_verify_mirror(data, options, match):
    with pytest.raises(sg.ProblemError, match=match):
        sg.verify(data, n_steps=5, **options)


# ---------------------------------------------------------------------- next-token data


@pytest.fixture(scope="module")
def ntp_data() -> sg.NextTokenData:
    return sg.random_next_token_data(40, 4, 5, 8, tier_size=2, seed=3)


def test_verify_ntp_training_is_recomputed_from_its_parts(ntp_data):
    rep = verify_ntp_training(ntp_data, loss="retrieval", step_size=2.0, normalized=False,
                              n_steps=400, record_every=50)  # fmt: skip
    assert isinstance(rep, sg.NTPReport)
    run = sg.train_ntp(ntp_data, loss="retrieval", step_size=2.0, normalized=False,
                       n_steps=400, record_every=50)  # fmt: skip
    np.testing.assert_array_equal(rep.steps, run.history.step)
    np.testing.assert_allclose(rep.W, run.W, rtol=1e-12, atol=0)
    np.testing.assert_allclose(rep.train_loss, run.history.loss, rtol=1e-12)
    svm = sg.graph_svm(ntp_data)
    fin = sg.finite_component(ntp_data, loss="retrieval")
    for j in (1, len(rep.steps) - 1):
        ref = sg.verify_ntp(ntp_data, run.history.W[j], svm=svm, fin=fin)
        np.testing.assert_allclose(
            [rep.corr_svm[j], rep.fin_error[j], rep.composition_error[j], rep.top_mass[j],
             rep.R[j]],
            [ref.corr_svm, ref.fin_error, ref.composition_error, ref.top_mass, ref.R],
            rtol=1e-9, atol=1e-12,
        )  # fmt: skip
    assert rep.final.corr_svm == rep.corr_svm[-1]
    graphs = sg.token_priority_graphs(ntp_data)
    assert rep.acyclic == all(g.is_acyclic for g in graphs.values())
    kinds = svm.constraints.kind
    assert rep.n_equality_rows == np.count_nonzero(kinds == sg.EQUALITY) > 0
    assert rep.n_margin_rows == np.count_nonzero(kinds == sg.MARGIN)
    assert rep.fin_success == fin.success
    # GD moves toward the prediction along the run
    assert rep.corr_svm[-1] > rep.corr_svm[1] and rep.fin_error[-1] < rep.fin_error[1]
    text = str(rep)
    assert "NTP verify report (retrieval loss)" in text and "cyclic (soft composition)" in text


def test_ntp_verify_defaults_to_cross_entropy(ntp_data):
    rep = verify_ntp_training(ntp_data, n_steps=30)
    assert rep.loss == "ce" and rep.normalized and rep.step_size == 0.1
    run = sg.train_ntp(ntp_data, loss="ce", n_steps=30)
    np.testing.assert_allclose(rep.W, run.W, rtol=1e-12, atol=0)


def test_acyclic_ntp_has_no_finite_component():
    data = sg.random_next_token_data(40, 4, 5, 8, tier_size=1, seed=0)
    rep = verify_ntp_training(data, loss="retrieval", n_steps=50)
    assert rep.acyclic and rep.n_equality_rows == 0 and rep.fin_success
    np.testing.assert_array_equal(rep.W_fin, np.zeros((8, 8)))
    np.testing.assert_array_equal(rep.fin_error, 0.0)


@pytest.mark.parametrize("options", [{}, {"loss": "retrieval", "n_steps": 5}])
def test_verify_names_the_ntp_entry_point(ntp_data, options):
    # one return type: verify refuses next-token data and names the function to call
    with pytest.raises(sg.ProblemError, match=r"svmgeo\.ntp\.verify_ntp_training\(data"):
        sg.verify(ntp_data, **options)  # type: ignore[arg-type]


def test_ntp_bad_loss_is_named(ntp_data):
    with pytest.raises(sg.ProblemError, match="'loss'"):
        verify_ntp_training(ntp_data, loss="logistic", n_steps=5)


def test_verify_defaults_take_the_training_default_backend() -> None:
    """The default backend is decided once (svmgeo.gd.DEFAULT_BACKEND); verify_mirror keeps
    the compiled kernels (as verify), train_mirror the reference ones of its OPTIMIZERS entry."""
    for verifier in (sg.verify, sg.verify_mirror):
        assert inspect.signature(verifier).parameters["backend"].default == DEFAULT_BACKEND
    train_default = inspect.signature(sg.train_mirror).parameters["backend"].default
    assert train_default == OPTIMIZERS["mirror"].default_backend
