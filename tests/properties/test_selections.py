# SPDX-License-Identifier: BSD-3-Clause
"""Selections: opt is a LOT, the LOT enumeration, and Gen-SVM with singleton sets."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import svmgeo as sg
from svmgeo.testing import (
    Case,
    assert_agree,
    cases,
    examples,
    feasibility_verdict,
    is_support_lot,
    selections,
    verdict,
    well_conditioned,
)

SMALL = {"n_range": (1, 3), "T_range": (2, 4), "d_range": (1, 5)}


def _opt_or_none(data: sg.TokenData) -> np.ndarray | None:
    try:
        return sg.optimal_tokens(data)
    except sg.TieError:
        return None


@settings(max_examples=examples(2))
@given(case=cases(), norm=st.sampled_from(("fro", "nuc")))
def test_opt_is_locally_optimal_whenever_feasible(case: Case, norm: str) -> None:
    """α = opt is a LOT when Att-SVM(opt) is feasible (every other token scores lower, even
    by 1e-10 in the near-tie variant); when infeasible it is not a LOT."""
    data = case.data
    opt = _opt_or_none(data)
    assume(opt is not None)
    feasible = feasibility_verdict(sg.feasibility(data, opt))
    try:
        lot = sg.is_locally_optimal(data, opt, norm=norm)
    except sg.SolverError:  # the Att-SVM solve failed: acceptable only when ill-conditioned
        assert not well_conditioned(sg.att_svm_constraints(data, opt))
        return
    if feasible is None or verdict(lot.support.svm) is None:
        return  # ill-conditioned (checked)
    assert_agree(bool(lot), feasible, lot.support.svm.constraints)
    assert lot.violations == ()


def _small_space(data: sg.TokenData) -> int:
    return math.prod(int(c) for c in np.asarray(data.visible).sum(axis=2).ravel())


@settings(max_examples=examples(1))
@given(case=cases(**SMALL))
def test_lot_enumeration_contains_opt_and_only_lots(case: Case) -> None:
    """The enumeration lists opt when Att-SVM(opt) is feasible, and every listed selection
    passes the LOT test recomputed here from its W^mm margins; on small spaces it equals
    brute force over all selections (no unsound pruning)."""
    data = case.data
    total = _small_space(data)
    assume(total <= 256)
    lots = sg.locally_optimal_selections(data)
    assert lots.total == total
    assert lots.examined + lots.pruned == total
    listed = {tuple(np.asarray(a).ravel()) for a in lots.selections}
    # a failed Att-SVM solve (no W at all) leaves that selection's LOT verdict undecided, as an
    # inaccurate one does: acceptable only on an ill-conditioned problem (feasible with
    # ||W^mm|| ~ 1/eps, e.g. tokens collinear up to rounding), and never compared below
    failed = {tuple(np.asarray(a).ravel()) for a in lots.failed}
    for alpha in lots.failed:
        assert not well_conditioned(sg.att_svm_constraints(data, alpha))
    opt = _opt_or_none(data)
    decided = not failed and lots.infeasible == 0
    if opt is not None and tuple(opt.ravel()) not in failed:
        feasible = feasibility_verdict(sg.feasibility(data, opt))
        decided = decided and feasible is not None
        if feasible is not None:
            assert (tuple(opt.ravel()) in listed) == feasible
    for alpha, lot in zip(lots.selections, lots.results, strict=True):
        res = lot.support.svm
        if verdict(res) == "optimal":
            assert is_support_lot(data, alpha, res, tol=1e-6)
        else:
            decided = False  # an inaccurate solve of an ill-conditioned problem (checked)
    if total <= 64 and decided and lots.inaccurate == 0:
        vis = np.asarray(data.visible)
        choices = [np.flatnonzero(vis[i, k]) for i in range(data.n) for k in range(data.K)]
        brute = set()
        for combo in itertools.product(*choices):
            alpha = np.asarray(combo).reshape(data.selection_shape)
            res = sg.att_svm(data, alpha)
            v = verdict(res)
            if v is None:
                return  # ill-conditioned (checked): the LOT test is not decidable here
            if v == "infeasible":
                continue
            if is_support_lot(data, alpha, res, tol=1e-6):
                brute.add(tuple(int(x) for x in combo))
        assert listed == brute


@settings(max_examples=examples(2))
@given(case=cases(), draw=st.data(), norm=st.sampled_from(("fro", "nuc")))
def test_gen_svm_with_singleton_sets_is_att_svm(case: Case, draw: st.DataObject, norm: str) -> None:
    """O_ik = {α_ik}: Gen-SVM's directional problem is Att-SVM(α) (same feasibility, same W
    for Frobenius, same optimal value for nuclear) and its finite component is W = 0."""
    data = case.data
    alpha = draw.draw(selections(data), label="alpha")
    a = np.asarray(alpha).reshape(data.n, data.K)
    S = np.zeros((data.n, data.K, data.T), dtype=bool)
    np.put_along_axis(S, a[:, :, None], True, axis=2)
    selected = S[:, 0] if data.single_query else S
    probs = np.where(np.asarray(data.visible), 1e-9, 0.0)
    np.put_along_axis(probs, a[:, :, None], 0.0, axis=2)
    np.put_along_axis(probs, a[:, :, None], 1.0 - probs.sum(axis=2, keepdims=True), axis=2)
    try:
        gen = sg.gen_svm(
            data, selected, probs=probs[:, 0] if data.single_query else probs, norm=norm
        )
    except sg.SolverError:  # a failed solve, or only a feasible point: ill-conditioned only
        assert not well_conditioned(sg.att_svm_constraints(data, alpha))
        return
    att = sg.att_svm(data, alpha, norm=norm)
    assert gen.W_fin is not None
    np.testing.assert_array_equal(gen.W_fin, 0.0)
    vg, va = verdict(gen.svm), verdict(att)
    if vg is None or va is None:
        return  # ill-conditioned (checked)
    assert_agree(vg, va, att.constraints)
    assert gen.feasible == (vg == "optimal")
    if vg != va:
        return
    if vg == "infeasible":
        np.testing.assert_array_equal(gen.farkas, gen.svm.farkas)
        return
    assert gen.W_dir is not None and att.W is not None
    np.testing.assert_allclose(gen.svm.objective, att.objective, rtol=1e-6)
    if norm == "fro":
        np.testing.assert_allclose(
            gen.W_dir, att.W, atol=1e-6 * max(1.0, float(np.linalg.norm(att.W)))
        )
