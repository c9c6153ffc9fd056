# SPDX-License-Identifier: BSD-3-Clause
"""Public solver API: dispatch, the cvxpy path, status mapping and input validation."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo._validation import check_int
from svmgeo.solvers import STATUS_MAP, Status, _norms, solve_svm
from svmgeo.solvers._lowrank import solve_lowrank
from svmgeo.testing import assert_farkas, assert_feasible_point


@pytest.fixture
def data() -> sg.TokenData:
    return sg.random_data(4, 4, 6, seed=7)


@pytest.fixture
def cs(data: sg.TokenData) -> sg.ConstraintSet:
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


def test_public_names_exported():
    for name in (
        "att_svm",
        "feasibility",
        "solve_svm",
        "check_feasibility",
        "Status",
        "SVMResult",
        "FeasibilityResult",
        "Certificate",
    ):
        assert name in sg.__all__ and hasattr(sg, name)


def test_att_svm_defaults_to_optimal_tokens(data, cs):
    res = sg.att_svm(data)
    ref = solve_svm(cs)
    assert res.success and res.norm == "fro" and res.solver.startswith("svmgeo")
    np.testing.assert_allclose(res.W, ref.W, atol=1e-12 * np.linalg.norm(ref.W))
    assert res.extras["feasibility"].feasible
    assert res.solve_time > 0


def test_att_svm_ties_raise():
    X = np.zeros((1, 3, 2))
    X[0, 0] = X[0, 1] = [1.0, 0.0]  # two optimal tokens
    X[0, 2] = [0.0, 1.0]
    data = sg.TokenData(X, Z=np.ones((1, 2)), v=np.array([1.0, 0.0]))
    with pytest.raises(sg.TieError):
        sg.att_svm(data)


def test_cvxpy_method_matches_and_its_duals_are_converted(cs):
    fast = solve_svm(cs, method="fast")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = solve_svm(cs, method="cvxpy")
    assert ref.solver == "cvxpy-clarabel"
    assert ref.status.has_solution and ref.certificate is not None
    np.testing.assert_allclose(ref.W, fast.W, atol=1e-6 * np.linalg.norm(fast.W))
    # the QP model's multipliers are lambda itself: W = sum lambda_j a_j b_j^T
    assert ref.certificate.stationarity <= 1e-5
    np.testing.assert_allclose(ref.dual, fast.dual, atol=1e-4 * fast.dual.max())


def test_cvxpy_nuclear_norm_path(cs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solve_svm(cs, norm="nuc", method="cvxpy")
    fro = solve_svm(cs)
    assert res.status.has_solution and res.norm == "nuc"
    assert_feasible_point(cs, res.W, rtol=1e-7)
    np.testing.assert_allclose(res.objective, np.linalg.norm(res.W, "nuc"))
    # the Frobenius optimum is feasible, so the nuclear optimum cannot exceed its nuclear norm
    assert res.objective <= np.linalg.norm(fro.W, "nuc") * (1 + 1e-6)


def test_unknown_cvxpy_status_is_a_solver_error(cs, monkeypatch):
    def fake(cs, norm, *, solver, **opts):
        return np.zeros((cs.d, cs.d)), np.zeros(cs.N), "mystery_status", 0.0, 0.0

    monkeypatch.setattr(_norms, "solve_reference", fake)
    res = solve_svm(cs, method="cvxpy")
    # the solver's error is in the message; the rows are feasible, so the answer is the
    # verified feasibility point as an upper bound rather than no W
    assert "unknown" in res.message and "a point was verified" in res.message
    assert res.status is Status.OPTIMAL_INACCURATE
    np.testing.assert_array_equal(res.W, res.extras["feasibility"].point)
    assert "mystery_status" not in STATUS_MAP
    assert STATUS_MAP["optimal_inaccurate"] is Status.OPTIMAL_INACCURATE


def test_auto_falls_back_to_cvxpy_when_fast_path_fails(cs, monkeypatch):
    real = _norms.frobenius

    def broken(cs, **kw):
        res = real(cs, **kw)
        return dataclasses.replace(res, status=Status.MAX_ITER, message="forced failure")

    monkeypatch.setattr(_norms, "frobenius", broken)
    assert solve_svm(cs, method="fast").status is Status.MAX_ITER
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = solve_svm(cs, method="auto", tol=1e-4)  # a tolerance Clarabel's answer meets
    assert auto.success and auto.solver.startswith("cvxpy")
    assert "forced failure" in auto.message


def test_infeasible_problem_returns_certificate_not_exception():
    X = np.array([[[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.3]]), v=np.ones(2))
    for method in ("fast", "cvxpy", "auto"):
        res = sg.att_svm(data, np.array([0]), method=method)
        assert res.status is Status.INFEASIBLE and not res.success
        assert res.W is None and res.objective is None
        assert_farkas(res.constraints, res.farkas)
        assert "admit no W" in res.message


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"norm": "l1"}, "'fro', 'nuc'"),
        ({"method": "magic"}, "'auto', 'fast', 'cvxpy'"),
        ({"norm": "nuc", "rank": 0}, "rank"),
        ({"tol": -1e-3}, "tol"),
        ({"tol": 0.0}, "tol"),
        ({"rank": 2}, "norm='nuc'"),
        ({"norm": "nuc", "rank": 1, "method": "cvxpy"}, "nonconvex"),
        ({"norm": "nuc", "rank": 1, "n_restarts": -1}, r"'n_restarts' parameter .* in \[0, inf\]"),
        ({"norm": "nuc", "rank": 1, "max_iter": 0}, "'max_iter' parameter"),
        ({"solver": 3}, "solver"),
    ],
)
def test_bad_options_raise_problem_error(cs, kwargs, match):
    with pytest.raises(sg.ProblemError, match=match):
        solve_svm(cs, **kwargs)


IGNORED_OPTIONS = [
    ({"norm": "nuc", "max_iter": 50}, "max_iter"),
    ({"norm": "fro", "method": "cvxpy", "max_iter": 50}, "max_iter"),
    ({"norm": "fro", "solver": "SCS"}, "solver"),
    ({"norm": "fro", "method": "fast", "solver": "CLARABEL"}, "solver"),
    ({"norm": "fro", "seed": 0}, "seed"),
    ({"norm": "nuc", "n_restarts": 3}, "n_restarts"),
    # the l_p entry checks its options like the others (issue #21: they were ignored)
    ({"norm": ("lp", 1.5), "max_iter": 50}, "max_iter"),
    ({"norm": ("lp", 1.5), "seed": 0}, "seed"),
    ({"norm": ("lp", 3.0), "n_restarts": 3}, "n_restarts"),
    ({"norm": ("lp", 1.5), "method": "fast", "solver": "CLARABEL"}, "solver"),
    ({"norm": ("lp", 1.0), "solver": "CLARABEL"}, "solver"),
]


@pytest.mark.parametrize(("kwargs", "name"), IGNORED_OPTIONS)
def test_options_the_path_ignores_are_errors_naming_the_function(data, cs, kwargs, name):
    """An option the chosen path would silently ignore is a ProblemError naming the argument
    and the function the user called."""
    with pytest.raises(sg.ProblemError, match=f"'{name}' parameter of solve_svm has no effect"):
        solve_svm(cs, **kwargs)
    with pytest.raises(sg.ProblemError, match=f"'{name}' parameter of att_svm has no effect"):
        sg.att_svm(data, **kwargs)


def test_options_the_path_uses_are_accepted(cs):
    # max_iter reaches the rank-bounded solver: one SLSQP iteration per start reaches no
    # feasible rank-1 point here, the default 300 do; every start stopped at the limit, so the
    # status says so (it said infeasible_inaccurate: "may be infeasible")
    short = solve_svm(cs, norm="nuc", rank=1, seed=0, n_restarts=1, max_iter=1)
    full = solve_svm(cs, norm="nuc", rank=1, seed=0, n_restarts=1)
    assert full.status.has_solution, full.message
    assert short.status is Status.MAX_ITER, short.message
    assert "each stopped at its limit of max_iter = 1" in short.message
    # the cvxpy path takes a cvxpy solver name
    scs = solve_svm(cs, method="cvxpy", solver="SCS")
    assert scs.solver == "cvxpy-scs"


def test_zero_restarts_run_the_svd_start_alone(cs):
    """n_restarts counts the random starts beyond the truncated-SVD start in solve_svm as in
    solve_lowrank, which takes 0 (that start alone); solve_svm refused 0 ("must be an int in
    [1, inf]")."""
    direct = solve_lowrank(cs, 1, n_restarts=0)
    assert direct.W is not None, direct.message
    for seed in (0, 5):  # no random start, so the seed changes nothing
        res = solve_svm(cs, norm="nuc", rank=1, n_restarts=0, seed=seed)
        assert res.status is direct.status, res.message
        np.testing.assert_allclose(res.W, direct.W, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("limit", [2**31, 2**32 + 1, 2**63])
def test_iteration_limits_beyond_32_bits_are_errors(cs, limit):
    """SLSQP counts its iterations in 32 bits: max_iter=2**32 + 1 ran 1 iteration per start
    and reported MAX_ITER "at its limit of max_iter = 4294967297", 2**31 ran none, 2**63 raised
    a bare SystemError; Clarabel's limit is unsigned 32-bit (a bare OverflowError)."""
    match = (
        r"'max_iter' parameter of solve_svm must be an int in \[1, 2147483647\]\. Got \d+ "
        r"instead\. The solvers count iterations in 32 bits .*; pass max_iter=2147483647 or less"
    )
    with pytest.raises(sg.ProblemError, match=match):
        solve_svm(cs, norm="nuc", rank=1, seed=0, n_restarts=1, max_iter=limit)
    for name in ("max_iter", "max_rounds"):
        with pytest.raises(sg.ProblemError, match=f"'{name}' parameter of solve_frobenius"):
            sg.solvers.solve_frobenius(cs, **{name: limit})


def test_check_int_gives_its_reason_only_above_the_high_bound(cs):
    """check_int(above_high=...) ends the message of a value above ``high`` (check_iterations's
    32-bit reason, which repeated check_int's integer test to add it); a value below ``low``
    or not an int keeps the plain message."""
    reason = "The limit is why; pass 10 or less."
    with pytest.raises(sg.ProblemError) as above:
        check_int(11, "k", low=1, high=10, where="f", above_high=reason)
    assert str(above.value).endswith(f"Got 11 instead. {reason}")
    for bad in (0, 2.5, True):
        with pytest.raises(sg.ProblemError, match=r"'k' parameter of f must be an int") as err:
            check_int(bad, "k", low=1, high=10, where="f", above_high=reason)
        assert reason not in str(err.value)
    with pytest.raises(sg.ProblemError) as low:
        solve_svm(cs, norm="nuc", rank=1, max_iter=0)
    assert "32 bits" not in str(low.value)


def test_wrong_shape_warm_start_is_an_error(cs):
    with pytest.raises(sg.ProblemError, match=r"'warm_start' parameter of solve_frobenius"):
        sg.solvers.solve_frobenius(cs, warm_start=np.zeros(cs.N + 1))
    good = sg.solvers.solve_frobenius(cs, warm_start=np.zeros(cs.N))
    assert good.success and good.solver == "svmgeo-warm-start"


def test_not_a_constraint_set():
    with pytest.raises(sg.ProblemError, match="ConstraintSet"):
        solve_svm(np.zeros((3, 3)))


def test_bad_selection_through_att_svm(data):
    with pytest.raises(sg.ProblemError, match="shape"):
        sg.att_svm(data, np.zeros((4, 2), dtype=int))
    with pytest.raises(sg.ProblemError, match="token indices"):
        sg.att_svm(data, np.array([0, 1, 2, 4]))
    causal = sg.random_data(2, 3, 4, seed=0, query="all", mask="causal")
    alpha = np.zeros((2, 3), dtype=int)
    alpha[0, 0] = 2  # query 0 sees only token 0
    with pytest.raises(sg.ProblemError, match="mask hides"):
        sg.att_svm(causal, alpha)
    with pytest.raises(sg.ProblemError, match=r"ConstraintSet|TokenData"):
        sg.feasibility(np.zeros((2, 3, 4)))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"norm": "nuc", "tol": 2.0}, r"'tol' parameter of att_svm must be a float in \(0, 1\]"),
        ({"norm": "nuc", "solver": "mosek"}, "'solver' parameter of att_svm"),
        ({"rank": 2}, "'rank' parameter of att_svm"),
        ({"n_iters": 3}, "att_svm got unknown keyword argument"),
    ],
)
def test_att_svm_errors_name_att_svm(data, kwargs, match):
    with pytest.raises(sg.ProblemError, match=match) as info:
        sg.att_svm(data, **kwargs)
    assert "solve_nuclear" not in str(info.value) and "of solve_svm" not in str(info.value)


def test_each_norm_entry_judges_its_own_optimum(cs):
    # every entry of the norm table: its solver's W has its objective and passes its certificate
    norms = [
        (name, None if entry.parameter is None else 1.5) for name, entry in _norms.NORMS.items()
    ]
    for name, parameter in norms:
        spec = _norms.NORMS[name].geometry(parameter)
        norm = name if parameter is None else (name, parameter)
        res = solve_svm(cs, norm=norm, method="fast")
        assert res.success and res.norm == name, res.message
        np.testing.assert_allclose(res.objective, spec.value(res.W), rtol=1e-10)
        cert = spec.certificate(cs, res.W, res.dual, 1e-8, cs.apply(res.W))
        assert cert.passed, cert.failures
        # the other norms' certificates fail on this optimum (the table is not one function)
        for other_name, other_parameter in norms:
            if other_name != name:
                other = _norms.NORMS[other_name].geometry(other_parameter)
                assert not other.certificate(cs, res.W, res.dual, 1e-8, cs.apply(res.W)).passed


def test_feasibility_result_carries_its_farkas_vector_under_one_name():
    X = np.array([[[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.3]]), v=np.ones(2))
    res = sg.feasibility(data, np.array([0]))
    assert not res.feasible and res.farkas is not None
    assert_farkas(res.constraints, res.farkas)
    assert not hasattr(res, "certificate")  # the deprecated alias is gone (never released)
    assert res.solve_time > 0


def test_result_reprs_are_short_and_summaries_name_the_residuals():
    data = sg.random_data(30, 8, 12, seed=0)  # N = 210 rows: arrays must not be printed
    res = sg.att_svm(data)
    text = repr(res)
    assert len(text.splitlines()) <= 4 and len(text) < 400, text
    assert "status=optimal" in text and f"objective={res.objective:.6g}" in text
    assert "W=(12, 12)" in text and "certificate passed" in text
    summary = res.summary()
    for word in ("primal", "dual", "stationarity", "complementarity", "gap", res.message):
        assert word in summary
    feas = res.extras["feasibility"]
    text = repr(feas)
    assert len(text.splitlines()) <= 3 and len(text) < 300, text
    assert "feasible=True" in text and "point=(12, 12)" in text
    assert "verdict  feasible" in feas.summary()


def test_infeasible_result_repr_names_the_farkas_vector():
    X = np.array([[[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.3]]), v=np.ones(2))
    res = sg.att_svm(data, np.array([0]))
    assert "status=infeasible" in repr(res) and "farkas=(4,)" in repr(res)
    assert "rows blamed" in res.summary()
    assert "a Farkas vector on" in res.extras["feasibility"].summary()


def test_replaced_copies_a_result_as_dataclasses_replace_does(cs):
    from svmgeo.solvers._result import replaced

    res = solve_svm(cs)
    for result in (res, res.extras["feasibility"]):
        changes = {"message": "changed", "solve_time": 1.5}
        ours, theirs = replaced(result, **changes), dataclasses.replace(result, **changes)
        assert type(ours) is type(theirs)
        for f in dataclasses.fields(result):
            assert getattr(ours, f.name) is getattr(theirs, f.name), f.name
        assert result.message != "changed"  # the original is left as it was
        with pytest.raises(TypeError, match="no_such_field"):
            replaced(result, no_such_field=1)


@pytest.mark.parametrize("value", ["no", 1, None])
def test_exact_must_be_a_bool_everywhere(value: object) -> None:
    data = sg.random_data(4, 4, 6, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    for call, name in (
        (lambda: sg.check_feasibility(cs, exact=value), "check_feasibility"),
        (lambda: sg.feasibility(data, exact=value), "of feasibility"),
        (lambda: sg.solve_svm(cs, exact=value), "solve_svm"),
    ):
        with pytest.raises(sg.ProblemError, match=name):
            call()


@pytest.mark.parametrize("norm", ["fro", "nuc", "spectral", ("lp", 1), ("lp", 1.5), ("lp", np.inf)])
@pytest.mark.parametrize("c", [None, -1.0, 0.0])
def test_zero_is_the_optimum_where_it_meets_every_row(norm, c) -> None:  # type: ignore[no-untyped-def]
    """No rows (c None), or rows W = 0 meets (c_j <= 0): W = 0 is optimal for every norm,
    certified (l_p crashed on no rows; nuc and l_p were OPTIMAL_INACCURATE with a warning)."""
    data = sg.random_data(4, 4, 6, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    if c is None:
        rows = sg.pair_constraints(data, [], [], [], [])
    else:
        rows = sg.pair_constraints(data, cs.seq, cs.query, cs.pref, cs.comp, rhs=c)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.InaccurateSolutionWarning)
        res = sg.solve_svm(rows, norm=norm)
    assert res.status is sg.Status.OPTIMAL and res.certificate.passed
    np.testing.assert_array_equal(res.W, 0.0)


def test_a_vacuous_rank_gives_factors_with_the_reference_model_too() -> None:
    """The rank docstring: a vacuous bound still returns K, Q and lower_bound; method='cvxpy'
    returned neither."""
    data = sg.random_data(4, 4, 6, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    for method in ("auto", "cvxpy"):
        res = sg.solve_svm(cs, norm="nuc", rank=50, method=method)
        assert res.K is not None and res.Q is not None and res.K.shape == (cs.d, 50)
        np.testing.assert_allclose(res.K @ res.Q.T, res.W, atol=1e-12 * np.abs(res.W).max())
        assert res.lower_bound == res.objective
