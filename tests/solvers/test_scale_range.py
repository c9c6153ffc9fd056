# SPDX-License-Identifier: BSD-3-Clause
"""Scale range (session 51): the SVMs, the feasibility check, the optimal-face problems and
the tensor SVM are scale-covariant, so rows
and bounds of any size give the unit-scale answer rescaled, or a ProblemError that names
'rhs' and the rows 'A', 'B' where float64 cannot hold that answer; never a NaN certificate,
a bare OverflowError or an inf.

Bounds c times t scale W by t; rows a_j times t scale W by 1/t and the multipliers by 1/t^k
(k = 2 for the Frobenius dual, 1 for a norm's dual). Powers of two scale exactly.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Callable

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.analysis import TensorSVM
from svmgeo.solvers import FaceAlignment, FaceUniqueness, solve_frobenius
from svmgeo.solvers._certificates import FRO

NORMS = ["fro", "nuc", "spectral", ("lp", 1.0), ("lp", 1.5), ("lp", np.inf)]
UNIQUE = ["fro", ("lp", 1.5)]
"""The norms whose optimum is unique (strictly convex): W itself is compared."""
FLOAT_MAX = float(np.finfo(float).max)


def _rows(rhs: float = 1.0, rows: float = 1.0) -> sg.ConstraintSet:
    """Att-SVM's rows of random_data(4, 4, 6, seed=0) through pair_constraints, with every
    bound ``rhs`` and the rows a_j times ``rows`` (a ConstraintSet of its own: TokenData keeps
    its tokens within 1e+-151)."""
    data = sg.random_data(4, 4, 6, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    cs = sg.pair_constraints(data, cs.seq, cs.query, cs.pref, cs.comp, rhs=rhs)
    return cs if rows == 1.0 else dataclasses.replace(cs, A=cs.A * rows, tokens=None)


def _quiet(call: Callable[[], object]) -> object:
    """``call()`` with every RuntimeWarning (an overflow, an invalid value) an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return call()


@pytest.fixture(scope="module")
def unit() -> dict[str, sg.SVMResult]:
    """The optimum of every norm at unit scale."""
    return {str(norm): sg.solve_svm(_rows(), norm=norm) for norm in NORMS}


def _assert_scaled(res: sg.SVMResult, ref: sg.SVMResult, t: float, norm: object) -> None:
    """``res`` is ``ref`` with W times t: optimal, certified with finite residuals."""
    assert res.status is sg.Status.OPTIMAL, (norm, t, res.message)
    cert = res.certificate
    assert cert is not None and cert.passed and np.isfinite(cert.worst), (norm, t, cert)
    assert res.objective is not None and ref.objective is not None and res.W is not None
    np.testing.assert_allclose(res.objective / t, ref.objective, rtol=1e-8)
    if norm in UNIQUE:
        assert ref.W is not None
        np.testing.assert_allclose(res.W / t, ref.W, rtol=1e-7, atol=1e-9 * ref.objective)


def test_large_bounds_give_the_scaled_optimum_for_every_norm(
    unit: dict[str, sg.SVMResult],
) -> None:
    """Regression: pair_constraints(..., rhs=1e200) gave the Frobenius solve a NaN certificate
    (||W||^2 = 1e400 in its duality gap), OPTIMAL_INACCURATE at the optimum; at 1e300 too."""
    for c in (1e150, 1e200, 1e300):
        for norm in NORMS:
            res = _quiet(lambda: sg.solve_svm(_rows(c), norm=norm))  # noqa: B023
            assert isinstance(res, sg.SVMResult)
            _assert_scaled(res, unit[str(norm)], c, norm)
        feas = _quiet(lambda: sg.check_feasibility(_rows(c)))  # noqa: B023
        assert isinstance(feas, sg.FeasibilityResult) and feas.feasible
        assert feas.proof == "exact", feas.message


@pytest.mark.parametrize("k", [600, 1000])
def test_bounds_times_a_power_of_two_scale_w_exactly(k: int, unit: dict[str, sg.SVMResult]) -> None:
    """Bounds times 2^k are solved on the unit bounds: W times 2^k to the bit, and the same
    certificate (2^600 ~ 4e180 gave the Frobenius certificate NaN before)."""
    for norm in ("fro", "nuc", ("lp", 1.5)):
        ref = unit[str(norm)]
        res = _quiet(lambda: sg.solve_svm(_rows(2.0**k), norm=norm))  # noqa: B023
        assert isinstance(res, sg.SVMResult)
        _assert_scaled(res, ref, 2.0**k, norm)
        assert res.W is not None and ref.W is not None
        np.testing.assert_array_equal(res.W, np.ldexp(ref.W, k))
        assert res.certificate is not None and ref.certificate is not None
        np.testing.assert_allclose(res.certificate.worst, ref.certificate.worst, atol=1e-12)


def test_bounds_beyond_float64_are_refused_by_name(unit: dict[str, sg.SVMResult]) -> None:
    """Regression: rhs=1e308 raised a bare OverflowError ('cannot convert float infinity to
    integer', in the bound scale), and 1.7e308 another (2.0**1024). Now each norm answers
    the scaled optimum where float64 holds it, and otherwise refuses naming 'rhs'; a norm
    whose optimal value exceeds float64's largest number must refuse."""
    for c in (1e308, 1.7e308):
        for norm in NORMS:
            ref = unit[str(norm)]
            assert ref.objective is not None
            try:
                res = _quiet(lambda: sg.solve_svm(_rows(c), norm=norm))  # noqa: B023
            except sg.ProblemError as exc:
                text = str(exc)
                assert "'rhs'" in text and "'A'" in text and "2^1024" in text, text
                assert "power of two" in text, text
                continue
            assert ref.objective * c < FLOAT_MAX, f"{norm} answered {res} at {c:g}"
            assert isinstance(res, sg.SVMResult)
            _assert_scaled(res, ref, c, norm)


def test_feasibility_answers_or_refuses_where_the_point_leaves_float64() -> None:
    """Regression: at bounds 1.7e308 check_feasibility returned FEASIBLE with a point of norm
    0.6 (margins 0.5 against bounds 1.7e308: only a direction, its rescaling overflows). Now a
    ProblemError naming 'rhs'; at 1e308 the point it returns meets every row (its margins,
    computed by a power of two at a time, at least c_j)."""
    with pytest.raises(sg.ProblemError, match=r"feasible point W.*beyond.*'rhs'"):
        _quiet(lambda: sg.check_feasibility(_rows(1.7e308)))
    cs = _rows(1e308)
    res = _quiet(lambda: sg.check_feasibility(cs))
    assert isinstance(res, sg.FeasibilityResult) and res.point is not None
    assert res.feasible and res.proof == "exact", res.message
    margins = np.ldexp(cs.apply(np.ldexp(res.point, -1023)), 1023)
    assert np.all(margins >= cs.rhs)


@pytest.mark.parametrize("s", [2.0**-664, 1e-200], ids=["2^-664", "1e-200"])
def test_tiny_rows_give_the_scaled_optimum_or_refuse_the_multipliers(
    s: float, unit: dict[str, sg.SVMResult]
) -> None:
    """Regression: rows a_j of 1e-200 were 'round-off' to the feasibility check (numpy's row
    norms underflowed to 0), which answered INFEASIBLE_INACCURATE, undecided, for rows that
    are feasible at every scale. Now W is 1/s times the unit W; the Frobenius multipliers
    (1/s^2 = 1e400) are beyond float64: W comes without them, OPTIMAL_INACCURATE, the message
    naming them and the rows."""
    cs = _rows(rows=s)
    feas = _quiet(lambda: sg.check_feasibility(cs))
    assert isinstance(feas, sg.FeasibilityResult)
    assert feas.feasible and feas.proof == "exact", feas.message
    for norm in NORMS:
        if norm != "fro":
            res = _quiet(lambda: sg.solve_svm(cs, norm=norm))  # noqa: B023
            assert isinstance(res, sg.SVMResult)
            _assert_scaled(res, unit[str(norm)], 1.0 / s, norm)
    with pytest.warns(sg.InaccurateSolutionWarning):
        fro = _quiet(lambda: sg.solve_svm(cs, norm="fro"))
    assert isinstance(fro, sg.SVMResult) and fro.status is sg.Status.OPTIMAL_INACCURATE
    assert fro.dual is None and fro.W is not None and unit["fro"].W is not None
    assert re.search(
        r"multipliers lambda \(scaling like rhs / \(\|a_j\| \|b_j\|\)\^2\)", fro.message
    )
    assert "'A'" in fro.message, fro.message
    np.testing.assert_allclose(fro.W * s, unit["fro"].W, rtol=1e-7, atol=1e-9)
    assert fro.certificate is not None and fro.certificate.primal_infeasibility <= 1e-8


def _mixed_sets() -> list[sg.ConstraintSet]:
    """Forty sets of two to five rows of random_data(2, 3, 2) with bounds in {1, -1, 0, 0.5}
    and some equality rows, feasible and infeasible (test_scale_invariance's)."""
    data = sg.random_data(2, 3, 2, seed=0)
    rng = np.random.default_rng(1)
    sets = []
    for _ in range(40):
        k = int(rng.integers(2, 6))
        seq, p = rng.integers(0, 2, k), rng.integers(0, 3, k)
        q = (p + rng.integers(1, 3, k)) % 3
        rhs = rng.choice([1.0, -1.0, 0.0, 0.5], k)
        kind = rng.choice([sg.MARGIN, sg.EQUALITY], k, p=[0.8, 0.2])
        sets.append(sg.pair_constraints(data, seq, [0] * k, p, q, kind=kind, rhs=rhs))
    return sets


@pytest.mark.parametrize("k", [-600, 600])
def test_feasibility_of_rows_far_from_unit_size_agrees_with_unit_size(k: int) -> None:
    """Regression: rows a_j times 2^-600 had row norms of 0 (numpy's sum of squares
    underflowed) and were all 'round-off' (INFEASIBLE_INACCURATE, undecided); times 2^600 the
    Gram matrix overflowed. Now decided on rows of unit size and proved on the rows given: an
    infeasible set is proved so by its Farkas vector, and no verdict contradicts the unit
    one (a feasible set may stay undecided where its float point is not proved)."""
    from svmgeo.solvers._certificates import FARKAS_TOL

    for cs in _mixed_sets():
        unit = sg.check_feasibility(cs)
        assert unit.proof == "exact", unit.message
        scaled = dataclasses.replace(cs, A=np.ldexp(cs.A, k), tokens=None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
            res = _quiet(lambda: sg.check_feasibility(scaled))  # noqa: B023
        assert isinstance(res, sg.FeasibilityResult)
        if not unit.feasible:
            assert res.status is sg.Status.INFEASIBLE and res.proof == "exact", res.message
            assert res.residual <= FARKAS_TOL
        else:
            assert res.status in (sg.Status.OPTIMAL, sg.Status.OPTIMAL_INACCURATE), res.message
            assert res.proof == "exact" or res.status is sg.Status.OPTIMAL_INACCURATE


def test_rows_whose_outer_products_leave_float64_are_refused() -> None:
    """Regression: a_j and b_j of 1e-200 each (entries of a_j b_j^T of 1e-400) gave an
    undecided INFEASIBLE_INACCURATE blaming round-off; 1e200 each the same, with overflow
    warnings. Now a ProblemError naming the rows."""
    for size in (1e-200, 1e200):
        base = _rows()
        cs = dataclasses.replace(base, A=base.A * size, B=base.B * size, tokens=None)
        for call in (lambda: sg.check_feasibility(cs), lambda: sg.solve_svm(cs, norm="nuc")):  # noqa: B023
            with pytest.raises(sg.ProblemError, match=r"a_j b_j\^T.*'A'.*'B'"):
                _quiet(call)


def test_solve_frobenius_rescales_as_solve_svm_does(unit: dict[str, sg.SVMResult]) -> None:
    """Regression: solve_frobenius solved rows and bounds as given: bounds of 1e200 gave a NaN
    certificate, rows of 1e150 an uncertified answer (OPTIMAL_INACCURATE, residual 0.4) and
    bounds of 1e308 NUMERICAL_ERROR asking whether the problem was infeasible. Now the answer
    of solve_svm, or the same refusal."""
    ref = unit["fro"]
    for c, rows in ((1e200, 1.0), (1.0, 1e150), (1e-300, 1.0)):
        res = _quiet(lambda: solve_frobenius(_rows(c, rows)))  # noqa: B023
        assert isinstance(res, sg.SVMResult)
        _assert_scaled(res, ref, c / rows, "fro")
    with pytest.raises(sg.ProblemError, match="'rhs'"):
        _quiet(lambda: solve_frobenius(_rows(1e308)))


@pytest.mark.parametrize("k", [-700, 700])
def test_frobenius_certificate_is_the_unit_one_at_every_size_of_w(
    k: int, unit: dict[str, sg.SVMResult]
) -> None:
    """Regression: the Frobenius certificate squared W's size (||W||^2 / 2, c^T lambda):
    at W of 2^700 ~ 5e210 every residual but the primal one was NaN, and at 2^-700 the gap
    was 0/0. It judges (2^k W, 2^k lambda) on bounds 2^k c exactly as (W, lambda) on c: the
    optimum passes, a wrong answer fails."""
    ref = unit["fro"]
    assert ref.W is not None and ref.dual is not None and ref.certificate is not None
    cs = _rows(2.0**k)
    W, lam = np.ldexp(ref.W, k), np.ldexp(ref.dual, k)
    cert = _quiet(lambda: FRO.certificate(cs, W, lam, 1e-8))
    assert isinstance(cert, sg.Certificate) and cert.passed, cert
    np.testing.assert_allclose(cert.worst, ref.certificate.worst, atol=1e-12)
    wrong = _quiet(lambda: FRO.certificate(cs, 1.01 * W, lam, 1e-8))
    assert isinstance(wrong, sg.Certificate) and not wrong.passed


FACE_NORMS = ["fro", ("lp", np.inf)]
"""A strictly convex norm and one with a face of optima (an LP)."""
SIZES = [("rhs", 1e150), ("rhs", 1e200), ("rhs", 1e300), ("rows", 2.0**600), ("rows", 2.0**-600)]


def _scaled_rows(which: str, t: float) -> tuple[sg.ConstraintSet, float]:
    """The rows of :func:`_rows` with bounds or rows times t, and the factor of W (t or 1/t)."""
    return (_rows(rhs=t), t) if which == "rhs" else (_rows(rows=t), 1.0 / t)


def _faces(res: sg.SVMResult, direction: np.ndarray | None = None) -> tuple[object, object]:
    """optimum_uniqueness and optimal_face_alignment (towards ``direction``, res.W when None)
    of ``res``, with every RuntimeWarning an error."""
    from svmgeo.solvers import optimal_face_alignment, optimum_uniqueness

    D = res.W if direction is None else direction
    return (
        _quiet(lambda: optimum_uniqueness(res, n_directions=1)),
        _quiet(lambda: optimal_face_alignment(res, D)),
    )


@pytest.mark.parametrize("k", [600, 1000])
def test_face_problems_at_bounds_times_a_power_of_two_are_the_unit_ones_scaled(
    k: int, unit: dict[str, sg.SVMResult]
) -> None:
    """Regression: optimum_uniqueness and optimal_face_alignment solved the face problem at
    the raw scale: at bounds 2^600 a SolverError 'the optimal-face problem failed ... Try
    another seed or tol', or cvxpy's bare ValueError (NaN or Inf in the problem data). Now
    solved on the unit rows: the unit answers, their points times 2^k to the bit (towards
    one direction: its own scale is taken to 1 by another power of two)."""
    for norm in FACE_NORMS:
        res = sg.solve_svm(_rows(2.0**k), norm=norm)
        assert res.W is not None and unit[str(norm)].W is not None
        np.testing.assert_array_equal(res.W, np.ldexp(unit[str(norm)].W, k))
        D = np.random.default_rng(0).standard_normal(res.W.shape)
        (uniq, face), (ref_uniq, ref_face) = _faces(res, D), _faces(unit[str(norm)], D)
        assert isinstance(uniq, FaceUniqueness) and isinstance(ref_uniq, FaceUniqueness)
        assert isinstance(face, FaceAlignment) and isinstance(ref_face, FaceAlignment)
        assert (uniq.unique, uniq.width, uniq.threshold) == (
            ref_uniq.unique,
            ref_uniq.width,
            ref_uniq.threshold,
        )
        np.testing.assert_array_equal(uniq.W_max, np.ldexp(ref_uniq.W_max, k))
        np.testing.assert_array_equal(uniq.W_min, np.ldexp(ref_uniq.W_min, k))
        assert (face.correlation, face.returned_correlation, face.maximum) == (
            ref_face.correlation,
            ref_face.returned_correlation,
            ref_face.maximum,
        )
        np.testing.assert_array_equal(face.W, np.ldexp(ref_face.W, k))
        assert face.value == np.ldexp(ref_face.value, k)


# the Frobenius W at rows 2^+-600 comes without its multipliers (OPTIMAL_INACCURATE, warned)
@pytest.mark.filterwarnings("ignore::svmgeo.InaccurateSolutionWarning")
@pytest.mark.parametrize("which,t", SIZES, ids=[f"{w}={t:.3g}" for w, t in SIZES])
def test_face_problems_far_from_unit_scale_agree_with_unit_scale(
    which: str, t: float, unit: dict[str, sg.SVMResult]
) -> None:
    """Regression: at bounds 1e200 (rows 2^+-600) optimum_uniqueness raised SolverError 'the
    optimal-face problem failed' (or gave a point 1e88 x OPT, 'not in the face'), and
    optimal_face_alignment a bare ValueError from cvxpy. Now the unit-scale answers: the
    width and correlations (scale-invariant) to the solvers' accuracy across the two solve
    paths (res.W itself agrees to ~1e-9 there), the face's points times the factor of W."""
    cs, factor = _scaled_rows(which, t)
    for norm in FACE_NORMS:
        res = _quiet(lambda: sg.solve_svm(cs, norm=norm))  # noqa: B023
        assert isinstance(res, sg.SVMResult) and res.W is not None
        (uniq, face), (ref_uniq, ref_face) = _faces(res), _faces(unit[str(norm)])
        assert isinstance(uniq, FaceUniqueness) and isinstance(ref_uniq, FaceUniqueness)
        assert isinstance(face, FaceAlignment) and isinstance(ref_face, FaceAlignment)
        assert uniq.unique is ref_uniq.unique
        np.testing.assert_allclose(uniq.width, ref_uniq.width, atol=1e-8)
        top = float(np.abs(ref_uniq.W_max).max())
        np.testing.assert_allclose(uniq.W_max / factor, ref_uniq.W_max, rtol=0, atol=1e-6 * top)
        np.testing.assert_allclose(uniq.W_min / factor, ref_uniq.W_min, rtol=0, atol=1e-6 * top)
        np.testing.assert_allclose(face.correlation, ref_face.correlation, atol=1e-10)
        np.testing.assert_allclose(face.value / factor, ref_face.value, rtol=2e-6)  # 2 tau
        assert face.maximum is ref_face.maximum


def _tensor_fields(out: TensorSVM) -> tuple[object, ...]:
    return (out.feasible, out.w, out.dual, out.margins, out.primal_residual, out.message)


def test_tensor_svm_at_bounds_times_a_power_of_two_is_the_unit_one_scaled() -> None:
    """Regression: tensor_svm at bounds 2^600 ran its NNLS at the raw scale: 'undecided: the
    NNLS gave no w meeting every row'. Now w times 2^k and the multipliers too (w = U^T
    lambda: lambda scales like the bounds / s^2), to the bit; an infeasible set's Farkas
    vector over 2^k (c^T y unchanged)."""
    from svmgeo.analysis import tensor_svm

    ref = tensor_svm(_rows())
    for k in (600, 1000):
        out = _quiet(lambda: tensor_svm(_rows(2.0**k)))  # noqa: B023
        assert isinstance(out, TensorSVM) and out.feasible, out.message
        assert out.message == ref.message and out.dual_residual == ref.dual_residual
        assert out.w is not None and ref.w is not None
        np.testing.assert_array_equal(out.w, np.ldexp(ref.w, k))
        np.testing.assert_array_equal(out.dual, np.ldexp(ref.dual, k))
        np.testing.assert_array_equal(out.margins, np.ldexp(ref.margins, k))
    data = sg.random_data(2, 3, 2, seed=0)
    for rhs in (1.0, 2.0**600):  # a_1^T W b_1 >= c and -a_1^T W b_1 >= c: no W
        cs = sg.pair_constraints(data, [0, 0], [0, 0], [0, 1], [1, 0], rhs=rhs)
        out = tensor_svm(cs)
        assert not out.feasible and out.farkas is not None, out.message
        np.testing.assert_allclose(float(cs.rhs @ out.farkas), 1.0, rtol=1e-12)


@pytest.mark.parametrize("which,t", SIZES, ids=[f"{w}={t:.3g}" for w, t in SIZES])
def test_tensor_svm_far_from_unit_scale_agrees_with_unit_scale(which: str, t: float) -> None:
    """Regression: tensor_svm at bounds 1e200 (rows 2^+-600) answered 'undecided'. Now the
    unit w times the factor of W; at rows 2^+-600 the multipliers (2^-+1200 times the unit
    ones) are beyond float64: w without them (dual None), said in the message."""
    from svmgeo.analysis import tensor_svm

    cs, factor = _scaled_rows(which, t)
    ref = tensor_svm(_rows())
    out = _quiet(lambda: tensor_svm(cs))
    assert isinstance(out, TensorSVM) and out.feasible, out.message
    assert out.w is not None and ref.w is not None and out.margins is not None
    np.testing.assert_allclose(out.w / factor, ref.w, rtol=1e-9, atol=1e-12 * np.abs(ref.w).max())
    assert np.all(out.margins >= cs.rhs * (1 - 1e-9))
    if which == "rhs":
        assert out.message == ref.message and out.dual is not None and ref.dual is not None
        np.testing.assert_allclose(out.dual / t, ref.dual, rtol=1e-9, atol=1e-12 * ref.dual.max())
    else:
        assert out.dual is None and "dual None" in out.message and "'A'" in out.message


def test_tensor_svm_refuses_a_w_beyond_float64_by_name() -> None:
    """At bounds 1.7e308 the answer is beyond float64 (the margins of the rows not active
    at the optimum, above their bound at unit scale, exceed 2^1024): a ProblemError naming
    'rhs' (it answered 'undecided' before)."""
    from svmgeo.analysis import tensor_svm

    ref = tensor_svm(_rows())
    assert ref.margins is not None and float(ref.margins.max()) * 1.7e308 > FLOAT_MAX
    rows = _rows(1.7e308)
    pattern = r"tensor_svm cannot return its answer.*2\^1024.*'rhs'.*divide 'rhs'"
    with pytest.raises(sg.ProblemError, match=pattern):
        tensor_svm(rows)


def _random_rows(N: int, d: int, rows: float, rhs: float, seed: int = 0) -> sg.ConstraintSet:
    """N random rows a_j (times ``rows``), b_j of dimension d, every bound ``rhs``."""
    from svmgeo.constraints import rows_without_tokens

    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((N, d)), rng.standard_normal((N, d))
    return rows_without_tokens(A * rows, B, np.zeros(N, dtype=np.int64), np.full(N, rhs))


@pytest.mark.parametrize("rows", [1e-200, 1e200])
def test_the_feasibility_qps_multipliers_are_a_hint_not_an_answer(rows: float) -> None:
    """A session-51 review: from 450 rows on the feasibility check keeps the max-margin QP's
    multipliers (extras['qp_dual'], degree 2); mapped to rows of 1e-200 they leave float64,
    and check_feasibility and solve_svm raised about them though the verdict and W fit."""
    from svmgeo.solvers._feasibility import GRADIENT_FROM

    cs = _random_rows(GRADIENT_FROM + 10, 30, rows, 1.0)
    feas = sg.check_feasibility(cs)
    assert feas.feasible and feas.proof == "exact", feas.message
    with pytest.warns(sg.InaccurateSolutionWarning, match="multipliers lambda"):
        res = sg.solve_svm(cs, norm="fro")
    unit = sg.solve_svm(_random_rows(GRADIENT_FROM + 10, 30, 1.0, 1.0), norm="fro")
    assert res.status is sg.Status.OPTIMAL_INACCURATE and res.dual is None, res.message
    np.testing.assert_allclose(res.W * rows, unit.W, rtol=1e-12, atol=1e-12 * np.abs(unit.W).max())


def test_no_fallback_runs_when_the_multipliers_leave_float64() -> None:
    """A session-51 review: rows of 1e-160 leave W's Frobenius multipliers beyond float64;
    the result was then handed to the cvxpy fallback, which cannot certify it either and
    replaced svmgeo's exact answer with a worse one (1 - relative error 7.5e-10)."""
    cs = _random_rows(3, 4, 1e-160, 1.0)
    with pytest.warns(sg.InaccurateSolutionWarning, match="multipliers lambda"):
        res = sg.solve_svm(cs, norm="fro")
    unit = sg.solve_svm(_random_rows(3, 4, 1.0, 1.0), norm="fro")
    assert res.solver.startswith("svmgeo"), res.solver
    assert res.extras["dual_beyond_float64"] > 1024
    np.testing.assert_allclose(res.W * 1e-160, unit.W, rtol=1e-13)


def test_a_farkas_vector_below_the_normal_range_is_kept() -> None:
    """A session-51 review: at bounds of 1e308 the Farkas vector (c^T lambda = 1) is about
    5e-309, subnormal but a certificate (as before session 51); it was refused."""
    from svmgeo.constraints import rows_without_tokens

    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    A, B = np.vstack([A, -A[:1]]), np.vstack([B, B[:1]])  # rows 0 and 3 contradict
    cs = rows_without_tokens(A, B, np.zeros(4, dtype=np.int64), np.full(4, 1e308))
    for res in (sg.check_feasibility(cs), sg.solve_svm(cs, norm="fro")):
        assert res.status is sg.Status.INFEASIBLE and res.proof == "exact", res.message
        assert res.farkas is not None and 0.0 < np.abs(res.farkas).max() < 1e-307


def test_copies_of_rows_are_set_aside_at_every_scale() -> None:
    """A session-51 review: rows far from unit size were decided at unit size without passing
    on the copies they found, so the solvers ran on every copy (singular factors)."""
    from svmgeo.constraints import rows_without_tokens

    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((6, 4)), rng.standard_normal((6, 4))
    A, B = np.vstack([A, A[:3]]), np.vstack([B, B[:3]])
    unit = rows_without_tokens(A, B, np.zeros(9, dtype=np.int64), np.ones(9))
    for t in (2.0**40, 2.0**-40):
        cs = rows_without_tokens(A, B, np.zeros(9, dtype=np.int64), np.full(9, t))
        for norm in ("fro", "nuc"):
            res, ref = sg.solve_svm(cs, norm=norm), sg.solve_svm(unit, norm=norm)
            assert res.extras.get("identical_rows") == 3, res.message
            assert res.status is sg.Status.OPTIMAL and res.proof == "exact", res.message
            np.testing.assert_allclose(res.objective, t * ref.objective, rtol=1e-7)


def test_a_warm_start_of_the_wrong_scale_is_dropped_not_refused() -> None:
    """A session-51 review: solve_frobenius mapped a warm start to the unit rows and raised
    when it left float64 there (naming the unit rows' sizes); it is only a hint."""
    cs = _random_rows(6, 4, 1e200, 1.0)
    res = solve_frobenius(cs, warm_start=np.ones(6))
    ref = solve_frobenius(cs)
    np.testing.assert_allclose(res.W, ref.W, rtol=1e-12)


def _not_computed(cert: sg.Certificate | None, why: str) -> None:
    """``cert`` checked W's rows only: the residuals that need the multipliers are NaN, it
    fails, with a failure saying they were not computed and ``why``."""
    assert cert is not None
    unknown = (cert.dual_infeasibility, cert.stationarity, cert.complementarity, cert.duality_gap)
    assert all(np.isnan(r) for r in unknown), cert
    assert cert.primal_infeasibility <= cert.tol, cert
    assert not cert.passed and np.isnan(cert.worst), cert
    assert any("not computed" in f and why in f for f in cert.failures), cert.failures
    assert cert._line().startswith("FAILED"), cert._line()


def test_a_certificate_without_multipliers_does_not_pass() -> None:
    """A session-52 review: at rows of 1e-160 the Frobenius multipliers are beyond float64;
    W's certificate, computed without them, read 0 for dual infeasibility, stationarity,
    complementarity and the gap, passed and printed 'passed'. Now they are NaN (not
    computed), and the certificate fails, naming the multipliers."""
    cs = _random_rows(3, 4, 1e-160, 1.0)
    with pytest.warns(sg.InaccurateSolutionWarning, match="not computed"):
        res = sg.solve_svm(cs, norm="fro")
    assert res.status is sg.Status.OPTIMAL_INACCURATE and res.dual is None, res.message
    _not_computed(res.certificate, "multipliers lambda are beyond float64")
    direct = solve_frobenius(cs)  # the solver itself (no warning of its own)
    assert direct.status is sg.Status.OPTIMAL_INACCURATE, direct.message
    _not_computed(direct.certificate, "multipliers lambda are beyond float64")


def test_the_reference_model_without_multipliers_is_not_certified(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session-52 review: a cvxpy solver that returns no multipliers left the reference
    model's W OPTIMAL, on a certificate of its rows alone that passed. Now the residuals that
    need the multipliers are NaN (not computed): OPTIMAL_INACCURATE."""
    from svmgeo.solvers import _norms

    reference = _norms.solve_reference

    def without_multipliers(*args: object, **kwargs: object) -> tuple[object, ...]:
        W, _, status, value, seconds = reference(*args, **kwargs)  # type: ignore[arg-type]
        return W, None, status, value, seconds

    monkeypatch.setattr(_norms, "solve_reference", without_multipliers)
    with pytest.warns(sg.InaccurateSolutionWarning, match="not computed"):
        res = sg.solve_svm(_rows(), norm="fro", method="cvxpy")
    assert res.status is sg.Status.OPTIMAL_INACCURATE and res.dual is None, res.message
    _not_computed(res.certificate, "returned no multipliers")


def test_a_face_problem_refusing_res_names_the_callers_rows() -> None:
    """A session-52 review: a res whose W is far from the size of an answer on its rows (2^-1030
    times the optimum, below float64 on the rows of unit size) was refused with the sizes of
    those unit rows (max|a_j| = 1.35, the caller's being 1.6e-271) and told to rescale the
    rows, which changes nothing. Now the message names the caller's rows and what to pass."""
    from svmgeo.solvers import optimal_face_alignment, optimum_uniqueness

    cs = _rows(rows=2.0**-900)
    with pytest.warns(sg.InaccurateSolutionWarning):  # the Frobenius multipliers leave float64
        res = sg.solve_svm(cs, norm="fro")
    assert res.W is not None and res.objective is not None
    off = dataclasses.replace(
        res, W=np.ldexp(res.W, -1030), objective=float(np.ldexp(res.objective, -1030))
    )
    top_a, top_b = np.abs(cs.A).max(), np.abs(cs.B).max()
    sizes = f"max|a_j| = {top_a:.3g} in 'A' and max|b_j| = {top_b:.3g} in 'B'"
    calls = (
        lambda: optimum_uniqueness(off, n_directions=1),
        lambda: optimal_face_alignment(off, np.eye(cs.d)),
    )
    for call in calls:
        with pytest.raises(sg.ProblemError) as info:
            call()
        message = str(info.value)
        assert sizes in message and "res.W" in message, message
        assert "rhs' by a power of two" not in message, message
