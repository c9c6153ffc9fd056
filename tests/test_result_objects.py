# SPDX-License-Identifier: BSD-3-Clause
"""Result objects as users keep them: stored across a loop, pickled (Dask), compared and
printed. Regressions of an audit of session 45; each failed before."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import FeasibilityResult, Status


def test_results_keep_their_own_copies_of_the_callers_arrays() -> None:
    """A loop that reuses one buffer for alpha, radii or init rewrote the results it had
    already stored (support_tokens, is_locally_optimal, joint_svm, regularization_path,
    train's config)."""
    data = sg.random_data(4, 5, 4, seed=1)
    alpha = sg.optimal_tokens(data)
    kept = alpha.copy()
    results = (
        sg.support_tokens(data, alpha),
        sg.is_locally_optimal(data, alpha),
        sg.joint_svm(data, alpha),
    )
    alpha[0] = (alpha[0] + 1) % data.T
    for res in results:
        np.testing.assert_array_equal(res.alpha, kept)
    radii = np.array([1.0, 2.0])
    path = sg.regularization_path(data, radii)
    radii *= 10.0
    np.testing.assert_array_equal(path.radii, [1.0, 2.0])
    W0 = 0.1 * np.eye(4)
    run = sg.train(data, init=W0, n_steps=5, backend="numpy")
    W0[:] = 0.0
    np.testing.assert_array_equal(run.config.init, 0.1 * np.eye(4))


def test_unpickled_data_and_rows_stay_read_only() -> None:
    """pickle returned writeable arrays; one write made the values cached on the set stale
    (cs.apply read the old row norms' and query groups' data)."""
    data = sg.random_data(3, 4, 3, seed=0)
    res = sg.att_svm(data)
    back = pickle.loads(pickle.dumps(res))
    cs, tokens = back.constraints, back.constraints.tokens
    assert tokens is not None
    for array in (cs.A, cs.B, cs.rhs, tokens.X, cs._row_norms[0]):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0


def test_results_with_arrays_compare_by_identity_and_hash() -> None:
    """SVMResult, FeasibilityResult, StudyReport and FaceAlignment compared their arrays
    field by field: `r == copy` raised ValueError (ambiguous truth value) and hash(r)
    TypeError, as other results (eq=False) do not."""
    data = sg.random_data(3, 4, 3, seed=0)
    res = sg.att_svm(data)
    feas = sg.feasibility(data, sg.optimal_tokens(data))
    for r in (res, feas, sg.study(data, progress=False)):
        copy = pickle.loads(pickle.dumps(r))
        assert r == r and not (r == copy)
        assert len({r, copy}) == 2


def test_an_undecided_feasibility_summary_says_so() -> None:
    """summary() printed "verdict infeasible" and "proof a Farkas vector ..." for an
    undecided verdict (verdict None, proof None)."""
    cs = sg.att_svm_constraints(sg.random_data(3, 4, 3, seed=0), [0, 0, 0])
    undecided = FeasibilityResult(
        feasible=False, status=Status.NUMERICAL_ERROR, message="borderline", constraints=cs
    )
    text = undecided.summary()
    assert "verdict  undecided" in text and "not proved: no point and no Farkas vector" in text
    proved = sg.feasibility(sg.random_data(3, 4, 3, seed=0), [0, 0, 0])
    assert proved.proof == "exact" and "proved exactly" in proved.summary()


def test_the_lot_summary_names_failed_and_inaccurate_solves() -> None:
    """The one-line summary left out `failed` and `inaccurate` (only warned at the call)."""
    data = sg.random_data(3, 3, 2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lots = sg.locally_optimal_selections(data)
    clean = lots.summary()
    assert "failed" not in clean and "inaccurate" not in clean
    doubtful = type(lots)(**{**lots.__dict__, "failed": np.array([[2, 2, 2]]), "inaccurate": 2})
    assert "1 failed solve(s), 2 inaccurate solve(s)" in doubtful.summary()


def test_the_ntp_report_summary_and_html_flag_an_uncertified_graph_svm() -> None:
    """summary() was the generic field list (svm hidden) and the notebook display had no
    report text: neither said that W_svm was not certified, which print() does."""
    import dataclasses

    from svmgeo.ntp import verify_ntp_training

    nd = sg.random_next_token_data(4, 3, 5, 6, tier_size=2, seed=0)
    rep = verify_ntp_training(nd, n_steps=50)
    bad_svm = dataclasses.replace(rep.svm, status=Status.OPTIMAL_INACCURATE, message="...")
    bad = dataclasses.replace(rep, svm=bad_svm)
    assert "not certified" in bad.summary() and "not certified" in bad._repr_html_()


def test_svm_summary_says_what_backs_its_verdict() -> None:
    """Before: SVMResult.summary() had no proof line, so a verdict proved exactly, one checked
    in floats (exact=False) and solve_frobenius's (no verdict) read the same."""
    from svmgeo.solvers import solve_frobenius

    data = sg.random_data(4, 5, 6, seed=0)
    alpha = sg.optimal_tokens(data)
    lines = {
        "proved exactly": sg.att_svm(data, alpha).summary(),
        "checked in floats": sg.att_svm(data, alpha, exact=False).summary(),
        "not proved": solve_frobenius(sg.att_svm_constraints(data, alpha)).summary(),
    }
    for how, text in lines.items():
        assert f"\n  proof      feasibility verdict {how}\n" in text
