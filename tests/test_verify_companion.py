# SPDX-License-Identifier: BSD-3-Clause
"""sg.verify for prompt attention p and joint (head, attention) training (issue #14)."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.experiments._companion import joint_data, single_input_data


@pytest.fixture(scope="module")
def joint_reports() -> dict[bool, sg.VerifyReport]:
    return {
        tight: sg.verify(joint_data(tight), param="p", train_head=True, n_steps=1000)
        for tight in (True, False)
    }


def test_joint_training_tight_data_reaches_both_predictions(joint_reports):
    rep = joint_reports[True]
    pred = sg.joint_svm(joint_data(True), [1, 1, 1], param="p")
    np.testing.assert_array_equal(rep.selection, [1, 1, 1])
    assert rep.train_head and rep.is_optimal and rep.is_lot
    np.testing.assert_array_equal(rep.support, [True, True, True])
    np.testing.assert_allclose(rep.v_mm, pred.v, atol=1e-12)
    np.testing.assert_allclose(rep.W_relax, pred.p, atol=1e-12)
    # every input is a support vector: the relaxed SVM is the p-SVM of the selection
    np.testing.assert_allclose(rep.W_relax, rep.W_fro, atol=1e-9)
    assert rep.corr_relax[-1] >= 0.9999 and rep.corr_v[-1] >= 0.9999
    assert rep.converged_to == "relax"
    np.testing.assert_allclose(rep.corr_v[-1], sg.correlation(rep.v, pred.v), rtol=1e-12)
    np.testing.assert_allclose(rep.corr_relax[-1], sg.correlation(rep.W, pred.p), rtol=1e-12)
    np.testing.assert_allclose(rep.norm_W[-1], np.linalg.norm(rep.W), rtol=1e-12)
    assert "corr(v, v_mm)" in str(rep) and "corr(p, p_relax)" in str(rep)


def test_joint_training_non_tight_data_follows_the_relaxed_svm(joint_reports):
    rep = joint_reports[False]
    np.testing.assert_array_equal(rep.support, [True, True, False])
    # the relaxed SVM drops input 3's margin row, so it differs from the p-SVM
    assert sg.correlation(rep.W_relax, rep.W_fro) < 0.99
    assert rep.converged_to == "relax"
    assert rep.corr_relax[-1] > rep.corr_fro[-1] + 0.005
    assert rep.corr_v[-1] >= 0.9999


def test_joint_report_json_round_trip(joint_reports):
    rep = joint_reports[False]
    back = sg.VerifyReport.from_json(rep.to_json())
    assert back.train_head and back.joint is None and back.run is None
    for name in ("v", "v_mm", "corr_v", "W_relax", "corr_relax", "W", "W_fro", "corr_fro"):
        np.testing.assert_allclose(getattr(back, name), getattr(rep, name), rtol=1e-15)
    np.testing.assert_array_equal(back.support, rep.support)
    assert back.support.dtype == bool and back.converged_to == rep.converged_to
    assert str(back) == str(rep)


def test_prompt_verify_fixed_head_global_and_local():
    # one input (the companion paper's single-input data): the start decides the token
    glob = sg.verify(single_input_data(0.9), param="p", n_steps=600, init=np.array([0, -1.5, 0]))
    loc = sg.verify(single_input_data(0.0), param="p", n_steps=600, init=np.array([0, -1.5, 0]))
    for rep, token in ((glob, 0), (loc, 1)):
        np.testing.assert_array_equal(rep.selection, [token])
        p_mm = sg.att_svm(single_input_data(0.9 if token == 0 else 0.0), [token], param="p").p
        np.testing.assert_allclose(rep.W_fro, p_mm, atol=1e-9)
        assert rep.W.shape == (3,) and rep.W_nuc is None and np.isnan(rep.corr_nuc).all()
        assert rep.converged_to == "fro" and rep.corr_fro[-1] > 0.99 and not rep.train_head
    assert glob.is_optimal and not loc.is_optimal and loc.is_lot
    assert "corr(p, p_mm)" in str(loc) and "corr(W, W_mm nuc)" not in str(loc)


def test_prompt_verify_rejects_what_it_cannot_compare():
    data = joint_data(True)
    with pytest.raises(sg.ProblemError, match="param='KQ'"):
        sg.verify(data, param="KQ", train_head=True, n_steps=5)
    with pytest.raises(sg.ProblemError, match="linear head"):
        sg.verify(data, param="p", head="concave", lam=0.1, n_steps=5)
    with pytest.raises(sg.ProblemError, match="init='cone'"):
        sg.verify(data, param="p", init="cone", alpha=[1, 1, 1], n_steps=5)


def test_w_with_queries_e1_and_train_head_is_the_prompt_report(joint_reports):
    # with every query e1, W-training is p-training (W = p e1^T) and the relaxed W-SVM is
    # p_relax e1^T: the two reports must agree
    data = joint_data(False)
    rep_w = sg.verify(data, param="W", train_head=True, n_steps=1000)
    rep_p = joint_reports[False]
    assert rep_w.W.shape == (2, 2) and rep_w.W_nuc is not None
    np.testing.assert_allclose(rep_w.W_relax[:, 0], rep_p.W_relax, atol=1e-9)
    np.testing.assert_allclose(rep_w.W_relax[:, 1], 0.0, atol=1e-9)
    np.testing.assert_allclose(rep_w.corr_relax, rep_p.corr_relax, rtol=1e-9)
    np.testing.assert_allclose(rep_w.corr_v, rep_p.corr_v, rtol=1e-9)
    assert rep_w.converged_to == "relax" and "corr(W, W_relax)" in str(rep_w)


def test_fixed_head_verify_scores_the_values_not_the_attention_features():
    # attention reads coordinates 1-2 (the third is zeroed), the head reads coordinate 3;
    # scores taken from the attention features would tie every token and call any selection
    # optimal
    data = single_input_data(0.0)
    W0 = np.zeros((3, 3))
    W0[:, 0] = [0.0, -1.5, 0.0]
    rep = sg.verify(data, param="W", init=W0, n_steps=600)
    np.testing.assert_array_equal(rep.selection, [1])
    assert not rep.is_optimal and rep.is_lot
    p_local = sg.att_svm(data, [1], param="p").p
    np.testing.assert_allclose(rep.W_fro[:, 0], p_local, atol=1e-9)
