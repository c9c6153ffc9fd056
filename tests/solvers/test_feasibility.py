# SPDX-License-Identifier: BSD-3-Clause
"""Exact feasibility: verified points, verified Farkas certificates, the hard cases."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.constraints import EQUALITY, pair_constraints
from svmgeo.solvers import Status, check_feasibility, farkas_residual
from svmgeo.testing import assert_farkas, assert_feasible_point, exact_margins


def _hull_data() -> sg.TokenData:
    # the selected token (the origin) lies inside the convex hull of the others
    X = np.array([[[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]])
    return sg.TokenData(X, Z=np.array([[1.0, 0.3]]), v=np.ones(2))


def test_selection_inside_convex_hull_is_infeasible_with_certificate():
    data = _hull_data()
    res = sg.feasibility(data, np.array([0]))
    assert not res and res.status is Status.INFEASIBLE
    assert res.point is None
    assert_farkas(res.constraints, res.farkas)
    assert res.residual <= 1e-9
    # the vertex token is fine
    ok = sg.feasibility(data, np.array([1]))
    assert ok.feasible and ok.status is Status.OPTIMAL
    assert_feasible_point(ok.constraints, ok.point, rtol=0.0, atol=1e-12)


def test_zero_query_is_infeasible_with_certificate_on_its_row():
    data = sg.random_data(3, 4, 5, seed=0)
    Z = data.Z.copy()
    Z[1] = 0.0
    data = sg.TokenData(data.X, Z=Z, v=data.v, Y=data.Y)
    res = sg.att_svm(data)
    assert res.status is Status.INFEASIBLE and res.W is None
    cs = res.constraints
    assert_farkas(cs, res.farkas)
    support = np.flatnonzero(res.farkas)
    assert np.all(cs.seq[support] == 1)
    assert "a_j b_j^T = 0" in res.message


def test_duplicate_of_selected_token_is_infeasible_with_certificate():
    data = sg.random_data(3, 4, 5, seed=1)
    alpha = sg.optimal_tokens(data)
    X = data.X.copy()
    other = (alpha[0] + 1) % 4
    X[0, other] = X[0, alpha[0]]
    dup = sg.TokenData(X, Z=data.Z, v=data.v, Y=data.Y)
    res = sg.feasibility(dup, alpha)
    assert res.status is Status.INFEASIBLE
    cs = res.constraints
    assert_farkas(cs, res.farkas)
    j = int(np.flatnonzero(res.farkas)[0])
    assert cs.seq[j] == 0 and cs.comp[j] == other


@pytest.mark.parametrize("seed", range(6))
def test_theorem1_overparameterized_is_feasible_for_every_selection(seed):
    # d >= max(T - 1, n): feasible for almost every dataset and every alpha
    n, T = 4, 5
    data = sg.random_data(n, T, max(T - 1, n) + seed % 2, seed=seed)
    alpha = np.random.default_rng(seed).integers(0, T, size=n)
    res = sg.feasibility(data, alpha)
    assert res.feasible and res.status is Status.OPTIMAL
    assert_feasible_point(res.constraints, res.point, rtol=0.0, atol=1e-12)
    m = res.constraints.apply(res.point)
    # rescaled so that the smallest margin is 1 in svmgeo's own arithmetic (the proof is that
    # every margin is positive); numpy's products here may sum in another order (OpenBLAS picks
    # its kernels by CPU) and read a few ulps lower
    assert 1.0 - 1e-14 <= m.min() <= 1.0 + 1e-9


@pytest.mark.parametrize("seed", range(12))
def test_small_d_verdicts_are_certified(seed):
    # d < T: both verdicts occur; each must carry a certificate that verifies independently
    data = sg.random_data(3, 6, 2, seed=seed, query=0 if seed % 2 else None)
    alpha = np.random.default_rng(seed).integers(1 if seed % 2 else 0, 6, size=3)
    res = sg.feasibility(data, alpha)
    if res.feasible:
        assert res.status is Status.OPTIMAL
        assert_feasible_point(res.constraints, res.point, rtol=0.0, atol=1e-12)
    else:
        assert res.status is Status.INFEASIBLE, res.message
        assert_farkas(res.constraints, res.farkas)
        np.testing.assert_allclose(
            res.residual, farkas_residual(res.constraints, res.farkas), atol=1e-15
        )


@pytest.mark.parametrize("factor", [2.0, 1.0])
def test_dependent_rows_go_through_the_lp_and_stay_feasible(factor):
    # a second query z' = factor * z per sequence: dependent rows, singular Gram matrix, still
    # feasible; factor 2 goes through the LP, factor 1 (copies of rows) is decided on the
    # distinct rows
    base = sg.random_data(3, 4, 6, seed=4)
    Z = np.stack([base.Z, factor * base.Z], axis=1)
    data = sg.TokenData(base.X, Z=Z, v=base.v, Y=base.Y)
    alpha = np.repeat(sg.optimal_tokens(base)[:, None], 2, axis=1)
    res = sg.feasibility(data, alpha)
    copies = factor == 1.0
    assert res.feasible and res.solver == ("svmgeo-cholesky" if copies else "highs")
    assert res.extras.get("identical_rows") == (res.constraints.N // 2 if copies else None)
    assert_feasible_point(res.constraints, res.point, rtol=0.0, atol=1e-12)
    sol = sg.att_svm(data, alpha)
    assert sol.success, sol.message
    ref = sg.att_svm(base)
    np.testing.assert_allclose(sol.W, ref.W, atol=1e-9 * np.linalg.norm(ref.W))


def test_inconsistent_equalities_get_a_free_sign_certificate():
    data = sg.random_data(1, 3, 4, seed=3)
    # rows (x0-x1), (x1-x2), (x0-x2) all = 1 is impossible: the first two add up to the third
    cs = pair_constraints(
        data, [0, 0, 0], [0, 0, 0], [0, 1, 0], [1, 2, 2], kind=EQUALITY, rhs=[1.0, 1.0, 1.0]
    )
    res = check_feasibility(cs)
    assert res.status is Status.INFEASIBLE
    assert_farkas(cs, res.farkas)
    assert np.any(res.farkas < 0)


def test_no_rows_is_feasible():
    data = sg.TokenData(np.ones((2, 1, 3)), Z=np.ones((2, 3)), v=np.ones(3))
    res = sg.feasibility(data)
    assert res.feasible and res.constraints.N == 0
    np.testing.assert_array_equal(res.point, np.zeros((3, 3)))


def test_unverified_farkas_vector_is_reported_inaccurate(monkeypatch):
    from svmgeo.solvers import _feasibility

    def sloppy(cs, fac, lam):
        lam = np.where(cs.is_margin, np.maximum(lam, 0.0), lam)
        return lam / (cs.rhs @ lam), 1e-3

    monkeypatch.setattr(_feasibility, "_polish_farkas", sloppy)
    # the float path (exact=True re-proves the vector: tests/solvers/test_exact.py)
    res = sg.feasibility(_hull_data(), np.array([0]), exact=False)
    assert not res.feasible and res.status is Status.INFEASIBLE_INACCURATE
    assert "Farkas residual" in res.message
    sol = sg.att_svm(_hull_data(), np.array([0]), exact=False)
    assert sol.status is Status.INFEASIBLE_INACCURATE and sol.W is None


def _gaussian_data(n: int, T: int, d: int, seed: int) -> tuple[sg.TokenData, np.ndarray]:
    """Gaussian tokens (some inside the hull of the others) and a random selection."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, T, d))
    data = sg.TokenData(X, Z=rng.standard_normal((n, d)), v=np.ones(d))
    return data, rng.integers(0, T, n)


@pytest.mark.parametrize(
    "size",
    [
        (5, 4, 10),  # Gram form (N = 16): G singular, no Cholesky; before the QP
        (1, 201, 150),  # features 201 x 150 (large): after the QP finds no point
    ],
)
def test_reversed_row_is_decided_on_the_null_space_with_an_exact_farkas_vector(size):
    # rows plus the reverse of row 0: G is singular, its null space the smaller side, and the
    # Phase-1 LP on that null space (not the rank(G)-row form) gives the certificate
    data = sg.random_data(*size, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    bad = pair_constraints(
        data,
        np.r_[cs.seq, cs.seq[0]],
        np.r_[cs.query, cs.query[0]],
        np.r_[cs.pref, cs.comp[0]],
        np.r_[cs.comp, cs.pref[0]],
    )
    res = check_feasibility(bad)
    assert res.status is Status.INFEASIBLE and res.proof == "exact", res.message
    assert res.solver == "highs-nullspace"
    assert_farkas(bad, res.farkas)
    # the certificate is row 0 and its reverse, in equal parts
    assert set(np.flatnonzero(np.abs(res.farkas) > 1e-12)) == {0, bad.N - 1}
    np.testing.assert_allclose(res.farkas[[0, -1]], [0.5, 0.5], rtol=1e-12)


@pytest.mark.parametrize("norm", ["fro", "nuc"])
def test_solve_svm_decides_feasibility_once_and_keeps_the_exact_proof(monkeypatch, norm):
    from svmgeo.solvers import _api, _feasibility, _nuclear

    calls = []

    def counted(cs, **kw):
        calls.append(kw.get("exact", True))
        return check_feasibility(cs, **kw)

    def counted_inside(cs, geometry, exact, **kw):  # solve_svm's own call, arguments checked
        calls.append(exact)
        return _feasibility.decide_feasibility(cs, geometry, exact, **kw)

    monkeypatch.setattr(_api, "check_feasibility", counted)
    monkeypatch.setattr(_api, "decide_feasibility", counted_inside)
    monkeypatch.setattr(_nuclear, "check_feasibility", counted)
    data, _ = _gaussian_data(2, 5, 2, seed=1)
    for alpha, feasible in ((np.array([1, 2]), True), (np.array([0, 1]), False)):
        assert sg.feasibility(data, alpha).feasible is feasible
        calls.clear()
        res = sg.att_svm(data, alpha, norm=norm)
        assert calls == [True], calls  # the exact check only, reused by the nuclear path
        assert res.proof == "exact"
        if feasible:
            assert res.status is Status.OPTIMAL, res.message
        else:
            assert res.status is Status.INFEASIBLE and res.W is None, res.message
            assert_farkas(res.constraints, res.farkas)


def test_feasibility_verdict_agrees_with_the_highs_oracle():
    from svmgeo.testing import oracle_feasibility

    verdicts, solvers = set(), set()
    for size in ((1, 5, 2), (2, 5, 2), (2, 6, 3), (3, 6, 2), (3, 4, 3)):
        for seed in range(6):
            data, alpha = _gaussian_data(*size, seed=seed)
            res = sg.feasibility(data, alpha)
            oracle = oracle_feasibility(data, alpha)
            assert res.proof == "exact" and not res.status.is_inaccurate, res.message
            # the oracle's max-min margin is positive iff feasible (0 when infeasible: W = 0)
            assert res.feasible is (oracle.feasible is True), (size, seed, res.message)
            if res.feasible:
                assert_feasible_point(res.constraints, res.point, rtol=0.0, atol=1e-9)
            else:
                assert_farkas(res.constraints, res.farkas)
            verdicts.add(res.feasible)
            solvers.add(res.solver)
    assert verdicts == {True, False}
    assert "highs-nullspace" in solvers and "highs" in solvers


def test_a_feasibility_verdict_on_other_rows_is_refused_by_solve_nuclear():
    from svmgeo.solvers._nuclear import solve_nuclear

    data, _ = _gaussian_data(2, 5, 2, seed=1)
    cs = sg.att_svm_constraints(data, np.array([1, 2]))
    other = check_feasibility(sg.att_svm_constraints(data, np.array([0, 1])), exact=False)
    with pytest.raises(sg.ProblemError, match="'feasibility' parameter of solve_nuclear"):
        solve_nuclear(cs, feasibility=other)


def test_the_verdict_is_none_where_undecided() -> None:
    """FeasibilityResult.verdict: feasible where verified or proved, None for an undecided
    (INFEASIBLE_INACCURATE) check of tokens collinear up to rounding (products s_t b, each
    rounded: infeasible were they exactly collinear, where sequence 0's selected scale is
    not the extreme one)."""
    import warnings

    feasible = sg.random_data(3, 4, 6, seed=0)
    assert sg.feasibility(feasible).verdict is True
    X = np.array([[[-1.0], [0.0], [1.0]]])
    line = sg.TokenData(X, Z=np.array([[1.0]]), Y=np.array([1.0]), v=np.array([1.0]))
    assert sg.feasibility(line, [1]).verdict is False
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 4, 1)) * rng.standard_normal(4)
    scores = np.array([[1.0, 0.0, -1.0, -2.0]] * 3)
    collinear = sg.TokenData(X, Z=rng.standard_normal((3, 4)), scores=scores)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        undecided = sg.feasibility(collinear, [0, 0, 0])
    assert undecided.status is sg.Status.INFEASIBLE_INACCURATE and undecided.verdict is None
    assert undecided.feasible is False  # the float answer, which verdict does not trust


def test_meet_margins_keeps_a_point_whose_scaling_breaks_a_negative_bound() -> None:
    """Doubling W lifts a short positive-bound row and doubles a negative margin too: a row
    tight at c = -1 would read -2. The point is then returned as it is (found by an audit)."""
    from svmgeo.solvers._exact import meet_margins

    data = sg.TokenData(np.array([[[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]]), Z=np.array([[1.0, 1.0]]))
    # rows: x0 - x1 (margin W11 + W12) >= 2, x0 - x2 >= -1
    cs = pair_constraints(data, [0, 0], [0, 0], [0, 0], [1, 2], rhs=[2.0, -1.0])
    W = np.array([[0.5, 0.5], [1.0, 1.0]])  # margins (1, -1): the first short by a factor 2
    np.testing.assert_allclose(cs.apply(W), [1.0, -1.0])
    assert meet_margins(cs, W) is W
    cs_pos = pair_constraints(data, [0, 0], [0, 0], [0, 0], [1, 2], rhs=[2.0, 0.0])
    W_pos = np.array([[0.5, 0.5], [0.0, 0.0]])  # margins (1, 1): doubling meets both rows
    np.testing.assert_allclose(meet_margins(cs_pos, W_pos), 2.0 * W_pos)


def test_meet_margins_whose_power_of_two_overflows_warns_nothing() -> None:
    """Regression (session 50): a margin of 1e-300 against c = 1 asks for 2^997, which
    overflows the other rows' margins and W; numpy's "overflow encountered in ldexp" leaked.
    The point is returned as it is, silently."""
    from svmgeo.solvers._exact import meet_margins

    data = sg.TokenData(np.array([[[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]]), Z=np.array([[1.0, 1.0]]))
    cs = pair_constraints(data, [0, 0], [0, 0], [0, 0], [1, 2], rhs=[1.0, -1.0])
    W = np.array([[1e-300, 0.0], [-1e10, 0.0]])  # margins (1e-300, 1e10)
    np.testing.assert_allclose(cs.apply(W), [1e-300, 1e10])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert meet_margins(cs, W) is W


def test_feasible_point_meets_mixed_sign_bounds_to_its_residual() -> None:
    """Bounds 2.5, 1e-3 and -1: the point meets every margin row up to the reported residual,
    which is the point's own largest violation (the point was doubled past the -1 row)."""
    X = np.array(
        [[[-0.24947345008514368, -0.1456363774327925, 0.778255903674282],
          [2.1698338318657964, -0.10630506528992473, 1.3247079550450271],
          [0.37041557013123794, 0.756495271107219, -0.4486969354407436]],
         [[-0.6872261648937884, -0.18156942627104783, -0.7536617148527954],
          [0.009123672628446803, -1.037537227525783, 0.023145682776247976],
          [0.19463421346064694, 1.833901634970986, 1.7419975764219133]]]
    )  # fmt: skip
    Z = np.array(
        [[[0.5283176292541396, -0.48369688761546414, 0.6267964932087111],
          [0.8358477573655989, -0.17668025360390052, -0.8293713415874506]],
         [[-1.7712765667292065, -0.01900007581263784, 1.9416769432809233],
          [-0.1866835638930086, 0.40568642115121056, 0.38567680397421855]]]
    )  # fmt: skip
    rhs = np.array([2.5, 1e-3, -1.0])
    cs = pair_constraints(sg.TokenData(X, Z=Z), [1, 1, 0], [1, 0, 0], [2, 0, 0], [0, 1, 2], rhs=rhs)
    res = check_feasibility(cs)
    assert res.feasible and res.proof == "exact" and res.point is not None
    shortfall = np.maximum(rhs - cs.apply(res.point), 0.0)
    assert shortfall.max() <= 1e-12
    np.testing.assert_allclose(res.residual, shortfall.max(), rtol=0, atol=1e-15)


def test_check_feasibility_names_a_geometry_that_is_not_one() -> None:
    data = sg.random_data(2, 3, 3, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    with pytest.raises(
        sg.ProblemError, match=r"'geometry' parameter of check_feasibility.*got int"
    ):
        check_feasibility(cs, geometry=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sequences_at_far_apart_scales_are_decided_and_solved(seed: int) -> None:
    """One sequence's tokens at 1e8, another's at 1e-8: rows 1e-16 apart in size, which the
    check called round-off and left undecided (INFEASIBLE_INACCURATE, found by a differential
    fuzz). They are decided and proved on the floats as given, solved and certified; the
    message notes the rows at the round-off level."""
    base = sg.random_data(4, 5, 6, seed=seed)
    X = np.array(base.X)
    X[0] *= 1e8
    X[1] *= 1e-8
    data = sg.TokenData(X, Y=base.Y, v=base.v, Z=base.Z)
    alpha = sg.optimal_tokens(data)
    cs = sg.att_svm_constraints(data, alpha)
    feas = sg.check_feasibility(cs)
    assert feas.status is sg.Status.OPTIMAL and feas.proof == "exact"
    assert "round-off level" in feas.message and feas.extras["roundoff_rows"].size > 0
    assert np.all(cs.seq[feas.extras["roundoff_rows"]] == 1)  # the 1e-8 sequence's rows
    res = sg.att_svm(data, alpha)
    assert res.status is sg.Status.OPTIMAL and res.certificate.passed
    assert np.min(exact_margins(cs, res.W)) >= 1 - 1e-9
    assert "round-off level" in res.message


def test_tokens_equal_up_to_rounding_are_decided_as_given_with_a_note() -> None:
    """Two tokens one ulp apart: the rows are feasible as given (a W of norm ~1e16 meets
    them), proved; the note names the row and its tokens, which as identical tokens would be
    infeasible (it was an undecided INFEASIBLE_INACCURATE)."""
    base = sg.random_data(4, 5, 6, seed=0)
    X = np.array(base.X)
    X[0, 2] = X[0, 1] * (1 + 2.0**-52)
    data = sg.TokenData(X, Y=base.Y, v=base.v, Z=base.Z)
    alpha = np.array(sg.optimal_tokens(data, ties="first"))
    alpha[0] = 1
    feas = sg.check_feasibility(sg.att_svm_constraints(data, alpha))
    assert feas.feasible and feas.proof == "exact"
    assert "tokens 1 vs 2" in feas.message and "meant identical" in feas.message
    X[0, 2] = X[0, 1]  # identical: an exact zero row, infeasible, and no round-off note
    same = sg.check_feasibility(sg.att_svm_constraints(sg.TokenData(X, Z=base.Z), alpha))
    assert same.status is sg.Status.INFEASIBLE and "round-off" not in same.message


@pytest.mark.parametrize("infeasible", [False, True])
def test_a_round_off_row_among_copies_is_noted_once(infeasible: bool) -> None:
    """Rows with copies (decided on the distinct rows) and a row at the round-off level: one
    note, and extras["roundoff_rows"] naming every copy (the distinct rows' note counted 1
    row, the SVM's added a second note counting 2, found by a review)."""
    from svmgeo.constraints import rows_without_tokens

    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((6, 4)), rng.standard_normal((6, 4))
    A[5] *= 1e-15
    if infeasible:  # a row that contradicts row 0
        A, B = np.vstack([A, -A[:1]]), np.vstack([B, B[:1]])
    A, B = np.vstack([A, A[:6]]), np.vstack([B, B[:6]])  # copies of the first six rows
    N = A.shape[0]
    cs = rows_without_tokens(A, B, np.zeros(N, dtype=np.int64), np.ones(N))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        feas = sg.check_feasibility(cs)
        res = sg.solve_svm(cs, norm="fro")
    assert feas.feasible is not infeasible
    copies = [5, N - 1]
    for answer in (feas, res):
        assert answer.message.count("round-off level") == 1
        np.testing.assert_array_equal(answer.extras["roundoff_rows"], copies)


def _exact_farkas_holds(cs: sg.ConstraintSet, lam: np.ndarray) -> bool:
    """Σ λ_j a_j b_jᵀ = 0, cᵀλ > 0 and λ ≥ 0 on margin rows, in fractions on the float rows
    (rows without tokens: a_j, b_j are exactly the floats of A, B)."""
    from fractions import Fraction

    lamf = [Fraction(float(x)) for x in lam]
    total = [
        sum((lamf[j] * Fraction(float(cs.A[j, p])) * Fraction(float(cs.B[j, q]))
             for j in range(cs.N)), Fraction(0))
        for p in range(cs.d)
        for q in range(cs.d)
    ]  # fmt: skip
    ctl = sum((lamf[j] * Fraction(float(cs.rhs[j])) for j in range(cs.N)), Fraction(0))
    signs = all(lamf[j] >= 0 for j in range(cs.N) if cs.kind[j] == sg.MARGIN)
    return all(x == 0 for x in total) and ctl > 0 and signs


def _ulp_inconsistent(family: str) -> sg.ConstraintSet:
    """Rows that a combination with weights of one sign cancels exactly, whose bounds that
    combination exceeds by one ulp: infeasible in exact arithmetic (λ ∝ (1, 1) or (1, 1, 1)),
    met by floating-point solvers (W₁₁ ≥ 1, −W₁₁ ≥ −1 + 2⁻⁵², say)."""
    from svmgeo.constraints import rows_without_tokens

    e1 = np.array([1.0, 0.0])
    a = np.array([1.0, 0.3, -0.7])
    b = np.array([0.2, 1.0, 0.5])
    a1, a2 = np.array([0.5, 0.25, -0.75]), np.array([0.25, -0.5, 1.0])
    below = np.nextafter(-1.0, 0.0)
    kind = np.full(3, sg.MARGIN, dtype=np.int8)
    rows = {
        "W11": ([e1, -e1], [e1, e1], [1.0, -1.0 + 2.0**-52]),
        "W11 half ulp": ([e1, -e1], [e1, e1], [1.0, -1.0 + 2.0**-53]),
        "W11 ulp above": ([e1, -e1], [e1, e1], [1.0 + 2.0**-52, -1.0]),
        "rows at 1e100": ([1e100 * e1, -1e100 * e1], [e1, e1], [1e-100, np.nextafter(-1e-100, 0)]),
        "bounds at 1e200": ([e1, -e1], [e1, e1], [1e200, np.nextafter(-1e200, 0.0)]),
        "negation": ([a, -a], [b, b], [1.0, below]),
        "scaled negation": ([a, -2.0 * a], [b, b / 2.0], [1.0, below]),
        "equality": ([a, -a], [b, b], [1.0, below]),
        "three rows": ([a1, a2, -(a1 + a2)], [b, b, b], [1.0, 1.0, np.nextafter(-2.0, 0.0)]),
    }[family]
    N = len(rows[0])
    kinds = kind[:N].copy()
    if family == "equality":
        kinds[0] = EQUALITY
    return rows_without_tokens(np.array(rows[0]), np.array(rows[1]), kinds, np.array(rows[2]))


@pytest.mark.parametrize(
    "family",
    ["W11", "W11 half ulp", "W11 ulp above", "rows at 1e100", "bounds at 1e200", "negation",
     "scaled negation", "equality", "three rows"],
)  # fmt: skip
def test_rows_inconsistent_by_one_ulp_are_proved_infeasible(family: str) -> None:
    """The float solves meet these rows (a point verified in floats), whose exact proof
    fails; the Farkas vector λ ∝ (1, 1) proves them infeasible exactly. The check answered
    OPTIMAL_INACCURATE, undecided, and looked for no Farkas vector (session 53's audit)."""
    cs = _ulp_inconsistent(family)
    assert check_feasibility(cs, exact=False).feasible  # what the floats say
    res = check_feasibility(cs)
    assert res.status is Status.INFEASIBLE and res.proof == "exact", res.message
    assert res.verdict is False and res.point is None and res.residual == 0.0
    assert _exact_farkas_holds(cs, res.farkas)
    assert_farkas(cs, res.farkas)
    assert "failed in exact arithmetic" in res.message


def test_rows_inconsistent_by_one_ulp_among_many_are_proved_on_the_tight_rows() -> None:
    """N > 100 (no exact null space of every row): the Farkas vector is sought on the rows
    the float point holds tight, which hold its support. 148 rows met by a planted W and a
    pair W-inconsistent by one ulp."""
    from svmgeo.constraints import rows_without_tokens

    rng = np.random.default_rng(4)
    N, d = 150, 4
    planted = rng.standard_normal((d, d))
    A, B = rng.standard_normal((N, d)), rng.standard_normal((N, d))
    margins = np.einsum("jd,de,je->j", A, planted, B)
    A *= (np.sign(margins) * (1.0 + rng.random(N)) / np.abs(margins))[:, None]
    c = np.ones(N)
    A[1], B[1], c[1] = -A[0], B[0], np.nextafter(-1.0, 0.0)
    cs = rows_without_tokens(A, B, np.full(N, sg.MARGIN, dtype=np.int8), c)
    assert check_feasibility(cs, exact=False).feasible
    res = check_feasibility(cs)
    assert res.status is Status.INFEASIBLE and res.proof == "exact", res.message
    assert _exact_farkas_holds(cs, res.farkas)
    np.testing.assert_array_equal(np.flatnonzero(res.farkas), [0, 1])
    # without row 1's ulp the rows are feasible, and stay proved so
    c[1] = -1.0
    ok = check_feasibility(rows_without_tokens(A, B, cs.kind, c))
    assert ok.status is Status.OPTIMAL and ok.proof == "exact", ok.message
