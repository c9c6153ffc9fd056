# SPDX-License-Identifier: BSD-3-Clause
"""Review of the l_p minimizer check (session 60): a false alarm on a row just over the slack
allowance, the verify_mirror report's 'not certified' line, and the message of an answer whose
certificate check failed."""

from __future__ import annotations

import json
import warnings

import cvxpy as cp
import numpy as np

import svmgeo as sg
from svmgeo.solvers import Status


def _rnd_selection(data: sg.TokenData, seed: int, draw: int = 0) -> np.ndarray:
    """The review's random selection (its ``draw``-th from the seed's generator): each query's
    optimal token, or token 0 with chance 1/2."""
    rng = np.random.default_rng(1000 + seed)
    opt = np.asarray(sg.optimal_tokens(data))
    for _ in range(draw + 1):
        sel = opt.copy()
        flat = sel.reshape(-1)
        for i in range(flat.size):
            if rng.random() < 0.5:
                flat[i] = 0
    return sel


def _oracle(cs: sg.ConstraintSet, p: float) -> np.ndarray:
    """min ||W||_p over the rows, naive model, cvxpy + Clarabel at tight tolerances."""
    W = cp.Variable((cs.d, cs.d))
    M = np.einsum("jk,jl->jkl", cs.A, cs.B)
    rows = [cp.sum(cp.multiply(W, M[j])) >= cs.rhs[j] for j in range(cs.N)]
    cp.Problem(cp.Minimize(cp.pnorm(cp.vec(W, order="C"), p)), rows).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500
    )
    return np.asarray(W.value)


def test_a_row_just_over_the_slack_allowance_is_kept_tight() -> None:
    """Seed 30, p = 10: the smooth dual's W is 1.2e-9 (relative) from the oracle's, but one row
    with slack 1.4e-8, just over tol * s, and 37 % of the largest multiplier was dropped from
    T: residual 1.07, not shown, and the (right) decided verdict became undecided. Its slack is
    far below tol ||a_j b_j^T||_q ||W||_p, the scale of rho: now kept, W shown."""
    data = sg.random_data(3, 4, 3, n_queries=2, seed=30)
    sel = _rnd_selection(data, 30)
    res = sg.att_svm(data, sel, norm=("lp", 10.0))
    W_oracle = _oracle(res.constraints, 10.0)
    np.testing.assert_allclose(res.W, W_oracle, rtol=0, atol=1e-6 * np.abs(W_oracle).max())
    check = res.extras["argmin"]
    assert check.shown, check.reason
    assert "not shown" not in res.message


def test_verify_mirror_lists_an_unproved_lp_target_as_not_certified() -> None:
    """Exponent 100, the large-p data of test_lp_extreme_s60: lp is kept out of converged_to;
    the report says why instead of 'closest SVM none' beside a correlation of 0.97."""
    X = np.array([[[0.0, 0.0], [-1.0, 0.0], [-2.0 / 3.0, -2.0 / 3.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[3.0, 0.0, 2.0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = sg.verify_mirror(data, exponent=100.0, n_steps=300, backend="numpy", threshold=0.96)
    assert rep.svm_lp is not None and rep.svm_lp.status is Status.OPTIMAL
    assert not rep.svm_lp.extras["argmin"].shown
    assert rep.converged_to != "lp"
    assert "lp" in rep.uncertified and "not shown" in rep.uncertified["lp"]
    assert "not certified" in str(rep) and "lp (" in str(rep)


def test_the_not_certified_line_survives_a_json_round_trip() -> None:
    """The same report written and read back (solver objects None): 'lp' still listed as
    certified in value only (it vanished: the state was read off svm_lp), the same text."""
    from svmgeo.verify import VerifyReport

    X = np.array([[[0.0, 0.0], [-1.0, 0.0], [-2.0 / 3.0, -2.0 / 3.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[3.0, 0.0, 2.0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = sg.verify_mirror(data, exponent=100.0, n_steps=300, backend="numpy", threshold=0.96)
    back = VerifyReport.from_json(rep.to_json())
    assert back.svm_lp is None
    assert "lp" in rep.uncertified
    assert back.uncertified == rep.uncertified
    assert str(back) == str(rep)
    old = rep.to_dict()  # a JSON written before the field: read, lp then judged by its status
    del old["svm_value_only"]
    assert VerifyReport.from_json(json.dumps(old)).uncertified == {}


def test_value_only_is_said_of_optimal_answers_only() -> None:
    """Seed 14, keys times 1e8, p = 7: an OPTIMAL_INACCURATE answer (svmgeo's certificate
    check failed) whose W is not shown: its message must not call W 'certified in value'."""
    d0 = sg.random_data(3, 4, 3, n_queries=2, seed=14)
    data = sg.TokenData(np.asarray(d0.X) * 1e8, Y=d0.Y, v=d0.v, Z=d0.Z)
    sel = _rnd_selection(data, 14, draw=2)  # the review's third draw (scales 1, 1e-8, 1e8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sg.att_svm(data, sel, norm=("lp", 7.0))
    assert res.status is Status.OPTIMAL_INACCURATE
    assert not res.extras["argmin"].shown
    assert "certificate check failed" in res.message and "not shown" in res.message
    assert "value only" not in res.message
