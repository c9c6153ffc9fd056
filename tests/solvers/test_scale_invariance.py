# SPDX-License-Identifier: BSD-3-Clause
"""Scale (issue #21): certificates are scale-invariant and the solvers are right at every scale.

Scaling the tokens by s scales the rows a_j by s, the optimum W* by 1/s and the multipliers by
1/s^2 (Frobenius) or 1/s (nuclear): the rescaled objective s * ||W*|| is the same problem's
optimum at every s, and a certificate must judge (W, lambda) at scale s exactly as it judges
(s W, s^k lambda) at scale 1.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import NORMS, solve_naive_cvxpy
from svmgeo.solvers._certificates import FRO, NUC

# the bad-input corpus's case: 3 rows in d = 2, queries e1; at 1e10 a wrong W (||W|| 4.6 times
# the optimum) was certified OPTIMAL by absolute tolerances
A = np.array([[0.18851919, -0.63319409], [0.75460579, -1.68910745], [0.16100958, -0.58552882]])
SCALES = [1e-150, 1e-10, 1.0, 1e10, 1e150]
CERT_SCALES = [1e-10, 1e-5, 1.0, 1e5, 1e10]


def _few_rows(s: float) -> sg.TokenData:
    X = np.zeros((3, 2, 2))
    X[:, 0] = A * s
    return sg.TokenData(X, Z=np.tile([1.0, 0.0], (3, 1)), v=[1.0, 0.0])


def _quiet(call):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return call()


@pytest.fixture(scope="module")
def unit() -> dict[str, sg.SVMResult]:
    """The unit-scale optima, one per norm."""
    return {norm: sg.att_svm(_few_rows(1.0), [0, 0, 0], norm=norm) for norm in ("fro", "nuc")}


@pytest.mark.parametrize("norm", ["fro", "nuc"])
@pytest.mark.parametrize("s", SCALES, ids=[f"{s:g}" for s in SCALES])
def test_few_rows_give_the_rescaled_optimum_at_every_scale(
    norm: str, s: float, unit: dict[str, sg.SVMResult]
) -> None:
    ref = unit[norm]
    res = _quiet(lambda: sg.att_svm(_few_rows(s), [0, 0, 0], norm=norm))
    assert res.status == sg.Status.OPTIMAL, res.message
    assert ref.objective is not None and res.objective is not None and res.W is not None
    np.testing.assert_allclose(res.objective * s, ref.objective, rtol=1e-9)
    np.testing.assert_allclose(res.W * s, ref.W, rtol=1e-7, atol=1e-9 * ref.objective)
    assert res.certificate is not None and res.certificate.passed


@pytest.mark.parametrize("norm", ["fro", "nuc"])
def test_few_rows_agree_with_the_cvxpy_reference(norm: str, unit: dict[str, sg.SVMResult]) -> None:
    cs = sg.att_svm_constraints(_few_rows(1.0), [0, 0, 0])
    W, status, value, _ = solve_naive_cvxpy(cs, norm)  # type: ignore[arg-type]
    assert status == "optimal" and W is not None
    for s in SCALES:
        res = sg.att_svm(_few_rows(s), [0, 0, 0], norm=norm)
        assert res.objective is not None
        np.testing.assert_allclose(res.objective * s, value, rtol=1e-6)
    np.testing.assert_allclose(unit[norm].objective, value, rtol=1e-6)


@pytest.mark.parametrize("s", [1e-100, 1e-8, 1e8, 1e100], ids=["1e-100", "1e-8", "1e8", "1e100"])
@pytest.mark.parametrize("seed", [0, 3])
def test_random_data_give_the_rescaled_optimum(s: float, seed: int) -> None:
    data = sg.random_data(6, 4, 5, seed=seed)
    big = sg.TokenData(np.asarray(data.X) * s, v=data.v, Z=data.Z)
    alpha = sg.optimal_tokens(data)
    ref = sg.att_svm(data, alpha)
    res = _quiet(lambda: sg.att_svm(big, alpha))
    assert ref.success and res.success, res.message
    assert ref.objective is not None and res.objective is not None
    np.testing.assert_allclose(res.objective * s, ref.objective, rtol=1e-9)


@pytest.mark.parametrize("s", [1e-150, 1e150], ids=["1e-150", "1e150"])
def test_no_runtime_warning_leaks_at_extreme_scales(s: float) -> None:
    # numpy's overflow / invalid-value warnings from the interior point (_qp.py) used to leak
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for norm in ("fro", "nuc"):
            assert sg.att_svm(_few_rows(s), [0, 0, 0], norm=norm).success


def _pair(res: sg.SVMResult, s: float, degree: int) -> tuple[np.ndarray, np.ndarray]:
    """The unit-scale optimum mapped exactly to scale s (powers of two: exact)."""
    assert res.W is not None and res.dual is not None
    return res.W / s, res.dual / s**degree


@pytest.mark.parametrize("e", [-33, -16, 0, 16, 33])  # 2^±33 ~ 1e±10
@pytest.mark.parametrize("norm", ["fro", "nuc"])
def test_certificate_fails_a_wrong_answer_at_every_scale(
    e: int, norm: str, unit: dict[str, sg.SVMResult]
) -> None:
    s = 2.0**e
    geometry, degree = (FRO, 2) if norm == "fro" else (NUC, 1)
    ref = unit[norm]
    cs = sg.att_svm_constraints(_few_rows(s), [0, 0, 0])
    W, lam = _pair(ref, s, degree)
    tol = 1e-8
    true = geometry.certificate(cs, W, lam, tol)
    assert true.passed, true.failures
    # the same residuals as at scale 1: the certificate is scale-invariant
    unit_cert = ref.certificate
    assert unit_cert is not None
    np.testing.assert_allclose(true.worst, unit_cert.worst, atol=1e-12)
    wrong = {
        "suboptimal W, feasible": (1.01 * W, lam),
        "W of the wrong direction": (W + 1e-3 * np.linalg.norm(W) * np.eye(2)[::-1], lam),
        "no multipliers": (W, np.zeros_like(lam)),
        "multipliers off": (W, 1.01 * lam),
        "the wrong answer of the corpus (4.6 times the norm)": (4.565 * W, 4.565**degree * lam),
    }
    for what, (Wx, lx) in wrong.items():
        cert = geometry.certificate(cs, Wx, lx, tol)
        assert not cert.passed, f"{what} certified at scale 2^{e}: {cert}"


def test_certificate_of_zero_rows_is_relative() -> None:
    # no rows: only W = 0 is optimal; a tiny W below any absolute tolerance must fail
    cs = sg.att_svm_constraints(_few_rows(1.0), [0, 0, 0])
    empty = cs.subset(np.zeros(cs.N, dtype=bool))
    assert FRO.certificate(empty, np.zeros((2, 2)), np.zeros(0), 1e-8).passed
    assert not FRO.certificate(empty, 1e-12 * np.eye(2), np.zeros(0), 1e-8).passed


def test_joint_svm_norm_error_comes_from_the_table_of_norms() -> None:
    with pytest.raises(sg.ProblemError, match="'norm' parameter of joint_svm") as info:
        sg.joint_svm(sg.random_data(3, 3, 4, seed=0), norm="l1")
    for name, entry in NORMS.items():  # every entry of the table is offered
        assert (f"('{name}', p)" if entry.parameter else f"'{name}'") in str(info.value)


@pytest.mark.parametrize("s", [1e-10, 1e10], ids=["1e-10", "1e10"])
def test_rank_bounded_nuclear_is_the_rescaled_answer(s: float) -> None:
    # a binding rank bound used to answer "optimal" at 1e10 with a lower bound 2e9 times its
    # objective (the convex relaxation solved on unscaled rows)
    data = sg.random_data(6, 4, 5, seed=0)
    big = sg.TokenData(np.asarray(data.X) * s, v=data.v, Z=data.Z)
    alpha = sg.optimal_tokens(data)
    ref = sg.att_svm(data, alpha, norm="nuc", rank=1, seed=0)
    res = _quiet(lambda: sg.att_svm(big, alpha, norm="nuc", rank=1, seed=0))
    assert res.status == ref.status, res.message
    assert res.objective is not None and ref.objective is not None
    assert res.lower_bound is not None and ref.lower_bound is not None
    np.testing.assert_allclose(res.objective * s, ref.objective, rtol=1e-8)
    np.testing.assert_allclose(res.lower_bound * s, ref.lower_bound, rtol=1e-8)
    assert res.K is not None and res.Q is not None and res.W is not None
    np.testing.assert_allclose(res.K @ res.Q.T, res.W, rtol=1e-12, atol=1e-14 * np.abs(res.W).max())
    assert res.certificate is not None and ref.certificate is not None
    assert res.certificate.passed == ref.certificate.passed


def test_the_wrong_answer_of_the_corpus_is_downgraded_at_1e10(
    unit: dict[str, sg.SVMResult],
) -> None:
    from svmgeo.solvers._result import finish

    s = 2.0**33
    cs = sg.att_svm_constraints(_few_rows(s), [0, 0, 0])
    W, lam = _pair(unit["fro"], s, 2)
    res = finish(
        cs, 4.565 * W, 4.565**2 * lam, norm=FRO, tol=1e-8, status=sg.Status.OPTIMAL,
        message="solved", solver="test",
    )  # fmt: skip
    assert res.status is sg.Status.OPTIMAL_INACCURATE and not res.success
    assert "certificate check failed" in res.message


SMALL_BOUND_NORMS = ["fro", "nuc", "spectral", ("lp", 1), ("lp", 1.5), ("lp", np.inf)]


def _att_rows_with_bounds(rhs: np.ndarray | float, kind: np.ndarray | None = None):  # type: ignore[no-untyped-def]
    """Att-SVM's rows of random_data(4, 4, 6, seed=0) with the bounds ``rhs`` (and kinds)."""
    data = sg.random_data(4, 4, 6, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    kinds = {} if kind is None else {"kind": kind}
    return sg.pair_constraints(data, cs.seq, cs.query, cs.pref, cs.comp, rhs=rhs, **kinds)


def _oracle_value(cs: sg.ConstraintSet, norm: str | tuple[str, float]) -> float:
    """min ||W|| on the rows of cs, one cvxpy constraint per row, solved by Clarabel."""
    import cvxpy as cp

    W = cp.Variable((cs.d, cs.d))
    rows = [cs.A[j] @ W @ cs.B[j] for j in range(cs.N)]
    cons = [r >= c if m else r == c for r, c, m in zip(rows, cs.rhs, cs.is_margin, strict=True)]
    if norm == "fro":
        objective = cp.norm(W, "fro")
    elif norm == "nuc":
        objective = cp.normNuc(W)
    elif norm == "spectral":
        objective = cp.sigma_max(W)
    else:
        objective = cp.pnorm(cp.vec(W, order="C"), norm[1])
    problem = cp.Problem(cp.Minimize(objective), cons)
    problem.solve(solver="CLARABEL")
    assert problem.status == "optimal"
    return float(problem.value)


@pytest.mark.parametrize("norm", SMALL_BOUND_NORMS, ids=str)
@pytest.mark.parametrize("c", [1e-7, 1e-10, 1e-12])
def test_small_bounds_give_the_scaled_optimum(norm: str | tuple[str, float], c: float) -> None:
    """Rows a_j W b_j >= c with a small c are the c = 1 rows with W scaled by c: the optimum is
    c times the c = 1 optimum (cvxpy + Clarabel on the naive model), certified. The solvers'
    absolute tolerances used to drown such bounds: p = 1 missed c = 1e-10 by 83 % (then
    downgraded by the certificate, never solved) and gave W = 0 at c = 1e-12."""
    small = _att_rows_with_bounds(c)
    res = _quiet(lambda: sg.solve_svm(small, norm=norm))
    assert res.status is sg.Status.OPTIMAL, res.message
    assert res.certificate is not None and res.certificate.passed
    assert res.objective is not None and res.margins is not None
    assert res.margins.min() >= c * (1 - 1e-8)
    np.testing.assert_allclose(
        res.objective / c, _oracle_value(_att_rows_with_bounds(1.0), norm), rtol=1e-6
    )


@pytest.mark.parametrize("norm", ["fro", "nuc", ("lp", 2.5)], ids=str)
def test_small_margin_and_equality_bounds_give_the_scaled_optimum(
    norm: str | tuple[str, float],
) -> None:
    """Margin rows c = 1e-9 and an equality row 0.3e-9: c times the c = 1 optimum (oracle)."""
    n_rows = _att_rows_with_bounds(1.0).N
    kind = np.zeros(n_rows, np.int8)
    kind[3] = sg.EQUALITY
    rhs = np.ones(n_rows)
    rhs[3] = 0.3
    res = _quiet(lambda: sg.solve_svm(_att_rows_with_bounds(1e-9 * rhs, kind), norm=norm))
    assert res.status is sg.Status.OPTIMAL, res.message
    assert res.objective is not None and res.margins is not None
    np.testing.assert_allclose(res.margins[3], 0.3e-9, rtol=1e-8)
    oracle = _oracle_value(_att_rows_with_bounds(rhs, kind), norm)
    np.testing.assert_allclose(res.objective / 1e-9, oracle, rtol=1e-6)


def test_rank_bounded_nuclear_with_small_bounds_is_the_scaled_answer() -> None:
    """K, Q and the lower bound map back with the bounds' scale too (K Q^T = W)."""
    unit = sg.solve_svm(_att_rows_with_bounds(1.0), norm="nuc", rank=1, seed=0)
    res = _quiet(lambda: sg.solve_svm(_att_rows_with_bounds(1e-10), norm="nuc", rank=1, seed=0))
    assert res.status is unit.status, res.message
    assert res.objective is not None and unit.objective is not None
    assert res.lower_bound is not None and unit.lower_bound is not None
    np.testing.assert_allclose(res.objective / 1e-10, unit.objective, rtol=1e-8)
    np.testing.assert_allclose(res.lower_bound / 1e-10, unit.lower_bound, rtol=1e-8)
    assert res.K is not None and res.Q is not None and res.W is not None
    np.testing.assert_allclose(res.K @ res.Q.T, res.W, rtol=1e-12, atol=1e-14 * np.abs(res.W).max())


def test_bounds_of_ordinary_size_are_not_rescaled() -> None:
    """The rows of Att-SVM (c = 1) and bounds within 2^-20 ... 2^20 go to the solvers untouched
    (their answers bit for bit); smaller and larger ones are divided by a power of two,
    exactly (larger ones since session 46)."""
    from svmgeo.solvers import unit_rows
    from svmgeo.solvers._scale import SCALE_BAND

    def row_scale(cs: sg.ConstraintSet) -> tuple[sg.ConstraintSet, float, float]:
        """The rows of unit size and the factors (s, gamma) that took ``cs`` there."""
        rows, scale = unit_rows(cs, "test")
        return rows, scale.s, scale.gamma

    for c in (1.0, 1e3, SCALE_BAND, 1.0 / SCALE_BAND):
        cs = _att_rows_with_bounds(c)
        assert row_scale(cs) == (cs, 1.0, 1.0)
    for low, high in ((1e-10, 2e-10), (1e12, 3e12)):
        cs = _att_rows_with_bounds(np.linspace(low, high, cs.N))
        rows, s, gamma = row_scale(cs)
        assert s == 1.0 and gamma == 2.0 ** round(np.log2(high))
        assert np.array_equal(rows.rhs * gamma, cs.rhs) and rows.A is cs.A and rows.B is cs.B
    # large bounds beside small ones stay: scaled, the small ones would drown
    wide = np.ones(cs.N)
    wide[:2] = 2e6, 1e-9
    assert row_scale(_att_rows_with_bounds(wide))[1:] == (1.0, 1.0)


def _mixed_bound_rows(scale: float) -> sg.ConstraintSet:
    """Integer rows with bounds (1, 2, 0.5, -1) times ``scale`` and a zero row (session 46's
    fuzz, seed 1043)."""
    A = [[-3, 0, -1, -3], [1, -2, -1, 3], [3, 3, -3, -2], [0, 0, 0, 0]]
    B = [[2, -1, -1, 0], [2, -3, 0, 3], [2, -3, -2, 3], [0.56, 2.47, 0.74, -2.61]]
    z = np.zeros(4, int)
    return sg.ConstraintSet(
        np.asarray(A, float), np.asarray(B, float), np.zeros(4, np.int8),
        np.array([1.0, 2.0, 0.5, -1.0]) * scale, z, z, np.full(4, -1), np.full(4, -1),
        n=1, K=1, T=1,
    )  # fmt: skip


@pytest.mark.parametrize("norm", SMALL_BOUND_NORMS, ids=str)
@pytest.mark.parametrize("exponent", [21, 30, 60])
def test_large_bounds_give_the_scaled_optimum(norm: str | tuple[str, float], exponent: int) -> None:
    """Bounds times 2^k are the same problem with W times 2^k. Before session 46 bounds were
    only scaled down: at 2^30 the factored nuclear path raised ValueError (a reshape of an empty
    support), and the certificate judged rows c >= 1 absolutely, so the margins' rounding
    (~1e-7 at 2^30) failed it (an audit: 923 of 1,617 OPTIMAL answers became
    OPTIMAL_INACCURATE at 2^30). Now OPTIMAL, at 2^k times the unscaled optimum."""
    unit = sg.solve_svm(_mixed_bound_rows(1.0), norm=norm)
    res = sg.solve_svm(_mixed_bound_rows(2.0**exponent), norm=norm)
    assert unit.status is sg.Status.OPTIMAL and res.status is sg.Status.OPTIMAL, res.message
    assert res.objective is not None and unit.objective is not None
    np.testing.assert_allclose(res.objective / 2.0**exponent, unit.objective, rtol=1e-9)


def test_the_primal_residual_does_not_change_when_bounds_and_w_scale_together() -> None:
    """primal_infeasibility(c t, m t, W t) = primal_infeasibility(c, m, W) for t = 2^k, large
    and small (before session 46: only for t <= 1)."""
    from svmgeo.solvers._certificates import primal_infeasibility

    W = np.random.default_rng(1).standard_normal((4, 4))
    unit = _mixed_bound_rows(1.0)
    base = primal_infeasibility(unit, unit.apply(W), W)
    assert base > 0.0
    for k in (-40, -3, 3, 30, 90):
        cs = _mixed_bound_rows(2.0**k)
        value = primal_infeasibility(cs, cs.apply(W * 2.0**k), W * 2.0**k)
        np.testing.assert_allclose(value, base, rtol=1e-15)


def test_an_infeasible_pair_of_small_bounds_is_never_optimal() -> None:
    """Rows 2e-9 <= m and -m >= -1e-9 ask 2e-9 <= m <= 1e-9: no W meets both."""
    data = sg.random_data(2, 4, 3, seed=0)
    cs = sg.pair_constraints(
        data, [0, 0, 1, 1, 1], [0] * 5, [0, 1, 0, 0, 0], [1, 0, 1, 2, 3],
        rhs=[2e-9, -1e-9, 1, 1, 1],
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        res = sg.solve_svm(cs)
    assert res.status is not sg.Status.OPTIMAL
    if res.W is not None:
        assert res.certificate.primal_infeasibility > 0.1  # a fraction of the bound 2e-9


@pytest.mark.parametrize("exponent", [-20, -19, -18, 4, 18])
@pytest.mark.parametrize("norm", [("lp", np.inf), "spectral"], ids=["linf", "spectral"])
def test_lp_and_spectral_rows_inside_the_default_band_are_scaled(norm, exponent: int) -> None:
    """Regression: tokens scaled by 2^-19 or 2^-20 (max|a| max|b| inside 2^±20, so not
    rescaled) reached the l_inf LP and the spectral SDP as they were, and their absolute
    tolerances left the answer uncertified (l_inf: primal infeasibility 3e-4). Those entries now
    scale rows outside 2^±4; the optimum is W/s, certified, at every scale."""
    data = (
        sg.random_data(2, 3, 3, seed=5, n_queries=2)
        if norm != "spectral"
        else sg.random_data(3, 4, 4, seed=0)
    )
    alpha = sg.optimal_tokens(data)
    s = 2.0**exponent
    unit = sg.att_svm(data, alpha, norm=norm)
    scaled = sg.att_svm(
        sg.TokenData(np.asarray(data.X) * s, Y=data.Y, v=data.v, Z=data.Z), alpha, norm=norm
    )
    assert unit.status is sg.Status.OPTIMAL and scaled.status is sg.Status.OPTIMAL, scaled.message
    np.testing.assert_allclose(scaled.objective * s, unit.objective, rtol=1e-8)


def _mixed_bound_sets(count: int) -> list[sg.ConstraintSet]:
    """Two to five rows of random_data(2, 3, 2) with bounds in {1, -1, 0, 0.5} (some
    negative: no row normalization applies) and every fifth row or so an equality."""
    from svmgeo.constraints import EQUALITY, MARGIN, pair_constraints

    data = sg.random_data(2, 3, 2, seed=0)
    rng = np.random.default_rng(1)
    sets = []
    for _ in range(count):
        k = int(rng.integers(2, 6))
        seq, p = rng.integers(0, 2, k), rng.integers(0, 3, k)
        q = (p + rng.integers(1, 3, k)) % 3
        rhs = rng.choice([1.0, -1.0, 0.0, 0.5], k)
        kind = rng.choice([MARGIN, EQUALITY], k, p=[0.8, 0.2])
        sets.append(pair_constraints(data, seq, [0] * k, p, q, kind=kind, rhs=rhs))
    return sets


@pytest.mark.parametrize("s", [2.0**-664, 2.0**-66, 2.0**66, 2.0**664])
def test_feasibility_of_mixed_bounds_is_the_same_at_every_bound_scale(s: float) -> None:
    """Regression: {W : a_j^T W b_j >= s c_j} is s {W : ... >= c_j}, so the verdict cannot
    depend on s. Before, bounds of 2^-66 (~1e-20) met HiGHS's absolute tolerances with W = 0
    and gave NUMERICAL_ERROR ("Phase-1 LP value -0 > 0") on feasible and infeasible sets
    alike; bounds of 2^66 (~1e20, HiGHS's infinity) failed HiGHS ("Model error"). The
    Phase-1 LP now runs on bounds scaled by a power of two to [1, 2), and a point's tolerance
    uses a scaled norm (numpy's sum of squares is 0 for a W of 1e-200, inf for 1e200)."""
    import dataclasses

    for cs in _mixed_bound_sets(40):
        unit = sg.check_feasibility(cs)
        assert unit.proof == "exact", unit.message  # the scale-1 verdicts are all proved
        scaled = sg.check_feasibility(dataclasses.replace(cs, rhs=cs.rhs * s))
        assert (scaled.status, scaled.proof) == (unit.status, "exact"), scaled.message
        if scaled.feasible:
            m = scaled.constraints.apply(scaled.point)
            margin = cs.kind == sg.MARGIN
            # up to the rounding of the rows (c_j < 0 rows cannot be lifted by scaling)
            assert np.all(m[margin] >= (cs.rhs[margin] - 1e-9) * s)
            np.testing.assert_allclose(m[~margin], cs.rhs[~margin] * s, rtol=1e-9, atol=1e-9 * s)
