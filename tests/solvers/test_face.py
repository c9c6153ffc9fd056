# SPDX-License-Identifier: BSD-3-Clause
"""The optimal face (svmgeo.solvers._face): every returned point is checked to be in F_tau,
where no point of the face has a positive correlation too, and at large l_p exponents."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.constraints import MARGIN, ConstraintSet
from svmgeo.solvers import _face, optimal_face_alignment, optimum_uniqueness


def _assert_in_face(res: sg.SVMResult, W: np.ndarray, tol: float) -> None:
    """W meets the rows and ||W|| <= (1 + tol) OPT, both recomputed here by svmgeo, to the
    module's stated tolerance (1e-5: the SDP of nuc ends 'optimal_inaccurate' 2e-6 above)."""
    cs = res.constraints
    excess = _face._geometry(res, "test").value(W) / res.objective - (1.0 + tol)
    np.testing.assert_allclose(np.minimum(cs.apply(W) - cs.rhs, 0.0), 0.0, atol=_face.CHECK_TOL)
    np.testing.assert_allclose(max(excess, 0.0), 0.0, atol=_face.CHECK_TOL)


def _data_and_direction(norm: Any, kind: str) -> tuple[sg.SVMResult, np.ndarray]:
    data = sg.random_data(3, 3, 3, seed=0)
    res = sg.att_svm(data, norm=norm)
    noise = np.random.default_rng(1).standard_normal((3, 3))
    if kind == "random":  # correlation -0.25 / -0.22 / -0.10 with the optimum
        return res, noise
    assert res.W is not None
    return res, -res.W / np.linalg.norm(res.W) + 0.3 * noise / np.linalg.norm(noise)


@pytest.mark.parametrize("kind", ["random", "negative"])
@pytest.mark.parametrize("norm", ["fro", "nuc", ("lp", 1.0)])
def test_no_positive_correlation_returns_a_point_of_the_face(norm: Any, kind: str) -> None:
    """Regression: where no point of the face has a positive correlation with D, the
    Charnes-Cooper optimum is its apex (Y, s) -> (0, 0) and Y / s the solver's error,
    amplified: a W off the face (norm 1.06 OPT, a margin 0.98 for Frobenius) whose correlation
    +0.06 was reported as the best, against -0.25 for the returned (unique) optimum."""
    res, D = _data_and_direction(norm, kind)
    face = optimal_face_alignment(res, D)
    _assert_in_face(res, face.W, face.tol)
    np.testing.assert_allclose(face.value, _face._geometry(res, "test").value(face.W), rtol=1e-12)
    np.testing.assert_allclose(face.correlation, sg.correlation(D, face.W), rtol=1e-12)
    assert face.returned_correlation < 0
    # these optima are unique: the best correlation is the returned one's, up to O(sqrt tau)
    assert optimum_uniqueness(res).unique
    np.testing.assert_allclose(
        face.correlation, face.returned_correlation, atol=10 * np.sqrt(face.tol)
    )
    assert face.correlation >= face.returned_correlation - 1e-7  # res.W is in the face
    assert not face.maximum  # no point of the face has a positive correlation: a lower bound
    positive = optimal_face_alignment(res, res.W)  # the face problem's maximizer, checked
    assert positive.maximum and positive.correlation > 0


def test_negative_correlation_on_a_face_of_optima() -> None:
    # min ||W||_2 s.t. W_11 >= 1: the face {diag(1, w), |w| <= 1}; D = diag(-1, 0.3) has
    # correlation (0.3 w - 1) / (|D| sqrt(1 + w^2)) < 0 on it, largest at w = 1
    e = np.eye(2)
    cs = ConstraintSet(
        A=e[:1].copy(), B=e[:1].copy(), kind=np.full(1, MARGIN, dtype=np.int8), rhs=np.ones(1),
        seq=np.zeros(1, dtype=np.int64), query=np.zeros(1, dtype=np.int64),
        pref=np.zeros(1, dtype=np.int64), comp=np.ones(1, dtype=np.int64), n=1, K=1, T=2,
    )  # fmt: skip
    res = sg.solve_svm(cs, norm="spectral")
    D = np.diag([-1.0, 0.3])
    face = optimal_face_alignment(res, D)
    _assert_in_face(res, face.W, face.tol)
    np.testing.assert_allclose(face.W, np.eye(2), atol=1e-5)
    np.testing.assert_allclose(face.correlation, -0.7 / np.sqrt(2 * 1.09), atol=1e-6)


def test_a_point_off_the_face_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A face solver whose every point misses the face: svmgeo's own check refuses it. The
    alignment then keeps the returned solution (in the face: a lower bound on the best
    correlation, its status says why); before, it raised SolverError, which failed a trial of
    `svmgeo reproduce optimizers` (KQ, sign, seed 8: Clarabel's 'optimal_inaccurate' point
    missed the rows by 4.1e-6). The uniqueness measurement has no such fallback and raises."""
    res = sg.att_svm(sg.random_data(3, 3, 3, seed=0))
    assert res.W is not None
    outside = 1.5 * res.W  # meets the rows, norm 1.5 OPT
    monkeypatch.setattr(_face, "_solve_face", lambda *args, **kw: (outside, "optimal"))
    face = optimal_face_alignment(res, res.W)
    np.testing.assert_array_equal(face.W, res.W)
    assert face.status.startswith("the returned solution") and "not in the face" in face.status
    np.testing.assert_allclose(face.correlation, face.returned_correlation, rtol=0, atol=0)
    # a lower bound, said so (it read as the face's best: the spectral face of sign descent's
    # seed 2 in docs/optimizers.md's Adam table, 0.687 against a best near 0.756)
    assert not face.maximum
    with pytest.raises(sg.SolverError, match="not in the face"):
        optimum_uniqueness(res)


@pytest.mark.parametrize("p", [2000.0, 1e4, 1e5])
def test_face_at_a_large_lp_exponent(p: float) -> None:
    """Regression: cvxpy's value of pnorm(W, p) underflows for p >~ 1000 (0 at the optimum
    for p = 2000), which emptied the face (SolverError 'infeasible') and sent the scaled
    problem to cp.perspective (a bare NotImplementedError)."""
    res = sg.att_svm(sg.random_data(3, 3, 3, seed=0), norm=("lp", p))
    assert res.status.value == "optimal"
    assert res.W is not None
    face = optimal_face_alignment(res, res.W)
    _assert_in_face(res, face.W, face.tol)
    np.testing.assert_allclose(face.correlation, 1.0, atol=1e-6)
    verdict = optimum_uniqueness(res)
    for W in (verdict.W_max, verdict.W_min):
        _assert_in_face(res, W, verdict.tol)
    assert verdict.unique


@pytest.mark.parametrize("face_function", [optimal_face_alignment, optimum_uniqueness])
def test_a_feasible_point_only_defines_no_face(face_function: Any) -> None:
    """Before: a failed solve's fallback (a feasible point, its value an upper bound) was taken
    as the optimum, and the 'face' {||W|| <= (1 + tau) * that bound} is no optimal face."""
    import dataclasses

    data = sg.random_data(4, 5, 6, seed=0)
    res = sg.att_svm(data, sg.optimal_tokens(data), norm=("lp", 1.0))
    fallback = dataclasses.replace(
        res, status=sg.Status.OPTIMAL_INACCURATE, extras={**res.extras, "feasible_point_only": True}
    )
    args = (fallback, res.W) if face_function is optimal_face_alignment else (fallback,)
    with pytest.raises(sg.ProblemError, match="only a feasible point"):
        face_function(*args)
