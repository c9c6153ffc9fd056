# SPDX-License-Identifier: BSD-3-Clause
"""The public testing kit: strategies honour their arguments, failing examples print a call
that rebuilds them, the oracles agree with svmgeo, and the checks catch broken proofs."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import svmgeo as sg
import svmgeo.testing as sgt


@settings(max_examples=10)
@given(sgt.token_data(kind="self", d=st.integers(8, 12), n=(2, 3), T=4))
def test_token_data_honours_kind_and_sizes(data: sg.TokenData) -> None:
    assert data.is_self_attention and data.single_query
    assert 8 <= data.d <= 12 and data.n in (2, 3) and data.T == 4


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"kind": "selff"}, "kind must be among"), ({"d": 2.5}, "d must be an int")],
)
def test_token_data_rejects_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    @settings(max_examples=1)
    @given(sgt.token_data(**kwargs))  # type: ignore[arg-type]
    def prop(data: sg.TokenData) -> None:
        pass

    with pytest.raises(sg.ProblemError, match=match):
        prop()


def test_case_repr_rebuilds_the_dataset() -> None:
    case = sgt.build_case("masked", "collinear", n=3, T=4, d=5, K=2, seed=11)
    rebuilt = eval(repr(case), {"svmgeo": sys.modules["svmgeo"]})
    np.testing.assert_array_equal(rebuilt.data.X, case.data.X)
    np.testing.assert_array_equal(rebuilt.data.visible, case.data.visible)


@pytest.mark.parametrize("kind", sgt.KINDS)
def test_case_K_is_the_datas_and_the_repr_still_rebuilds_it(kind: str) -> None:
    # build_case("masked", ..., K=2, seed=0) picks query="all" (T = 5 queries): Case.K read 2
    # while case.data.K was 5; likewise cross/self (1) and causal (T).
    expected = {"cross": 1, "self": 1, "multi": 2, "causal": 5}
    seen = set()
    for seed in range(4):
        case = sgt.build_case(kind, "generic", n=2, T=5, d=3, K=2, seed=seed)
        assert case.K == case.data.K
        if kind in expected:
            assert case.K == expected[kind]
        seen.add(case.K)
        rebuilt = eval(repr(case), {"svmgeo": sys.modules["svmgeo"]})
        assert rebuilt == case
        for name in ("X", "Y", "v", "queries", "visible"):
            np.testing.assert_array_equal(getattr(rebuilt.data, name), getattr(case.data, name))
    if kind == "masked":  # both branches: K = 2 given queries and query="all" (T = 5)
        assert seen == {2, 5}
    b2 = sgt.build_b2_case(kind, n=2, T=5, d=3, K=2, seed=0)
    assert b2.K == b2.data.K
    rebuilt_b2 = eval(repr(b2), {"svmgeo": sys.modules["svmgeo"]})
    np.testing.assert_array_equal(rebuilt_b2.data.X, b2.data.X)


PLANTED = """
from hypothesis import given, settings
from svmgeo import testing as sgt

@settings(max_examples=200, derandomize=True, database=None)
@given(sgt.{strategy})
def test_planted_counterexample(x):
    data = getattr(x, "data", x)
    assert data.n * data.T < 12  # false: the strategy draws n up to 5 and T up to 6
"""


@pytest.mark.parametrize("strategy", ["cases()", "token_data()"])
def test_planted_counterexample_prints_a_runnable_reproducer(tmp_path: Path, strategy: str) -> None:
    """A user's property in a directory of their own (no svmgeo checkout on the path): the
    failure report contains a ``svmgeo.testing.build_case(...)`` call that rebuilds the
    falsifying dataset, and a ``reproduce:`` line that does so as printed in a fresh
    interpreter (issue 20: the bare call raised AttributeError after ``import svmgeo``)."""
    path = tmp_path / "test_mine.py"
    path.write_text(textwrap.dedent(PLANTED.format(strategy=strategy)))
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    calls = re.findall(r"svmgeo\.testing\.build_case\([^)]*\)", out.stdout)
    assert calls, out.stdout
    import svmgeo.testing  # noqa: F401  (the reproducer's namespace)

    data = eval(calls[-1], {"svmgeo": sys.modules["svmgeo"]}).data
    assert data.n * data.T >= 12  # the printed case really falsifies the claim
    lines = re.findall(r"reproduce: (import svmgeo\.testing; .*)$", out.stdout, re.MULTILINE)
    assert lines, out.stdout
    name = "case.data" if strategy == "cases()" else "data"
    check = f"{lines[-1]}\nprint({name}.n * {name}.T)"
    fresh = subprocess.run(
        [sys.executable, "-c", check], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert fresh.returncode == 0, fresh.stderr
    assert int(fresh.stdout.split()[-1]) >= 12  # the line as printed rebuilds the failing case


def test_oracles_agree_with_svmgeo() -> None:
    data = sg.random_data(4, 4, 5, seed=3)
    alpha = sg.optimal_tokens(data)
    res = sg.att_svm(data, alpha)
    sgt.assert_certified(res)
    fro = sgt.oracle_att_svm(data, alpha, "fro")
    assert fro.feasible
    np.testing.assert_allclose(fro.W, res.W, atol=1e-6 * np.linalg.norm(res.W))
    nuc = sgt.oracle_att_svm(data, alpha, "nuc")
    np.testing.assert_allclose(
        nuc.objective, sg.att_svm(data, alpha, norm="nuc").objective, rtol=1e-7
    )
    lp = sgt.oracle_feasibility(data, alpha)
    assert lp.feasible is True
    sgt.assert_feasible_point(res.constraints, lp.W)
    # an infeasible selection: two identical tokens, the duplicate selected
    X = np.array(data.X)
    X[0, 1] = X[0, 0]
    dup = sg.TokenData(X, Z=data.Z, v=data.v)
    assert sgt.oracle_feasibility(dup, np.array([0, 0, 0, 0])).feasible is False
    assert sgt.oracle_att_svm(dup, np.array([0, 0, 0, 0])).feasible is False
    sgt.assert_certified(sg.feasibility(dup, np.array([0, 0, 0, 0])))


def test_checks_catch_broken_proofs() -> None:
    data = sg.random_data(3, 4, 5, seed=0)
    res = sg.att_svm(data, sg.optimal_tokens(data))
    cs = res.constraints
    with pytest.raises(AssertionError):
        sgt.assert_feasible_point(cs, 0.5 * res.W)  # every margin is 1/2
    with pytest.raises(AssertionError):
        sgt.assert_farkas(cs, np.ones(cs.N) / cs.N)  # sum of rows is not zero
    with pytest.raises(AssertionError):
        sgt.assert_frobenius_kkt(
            sg.SVMResult(**{**res.__dict__, "W": 1.01 * res.W})  # feasible, not optimal
        )


def test_an_infeasible_problem_has_a_negative_margin_and_failures_on_it_are_caught() -> None:
    """Tokens -1, 0, 1 on a line, the middle one selected: infeasible, well conditioned. The
    max-min margin LP over the ball answered 0 (at W = 0) on every infeasible problem, so a
    failed solve, or a disagreement, on it passed as "ill-conditioned"; the HiGHS oracle
    called every infeasible selection undecided."""
    X = np.array([[[-1.0], [0.0], [1.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0]]), Y=np.array([1.0]), v=np.array([1.0]))
    alpha = np.array([1])
    feas = sg.feasibility(data, alpha)
    assert feas.feasible is False and feas.status is sg.Status.INFEASIBLE
    np.testing.assert_allclose(sgt.conditioning(feas.constraints), -1.0)  # -min over the sphere
    assert sgt.oracle_feasibility(data, alpha).feasible is False
    failed = dataclasses.replace(sg.att_svm(data, alpha), status=sg.Status.SOLVER_ERROR)
    with pytest.raises(AssertionError, match="max-min margin -1"):
        sgt.verdict(failed)
    with pytest.raises(AssertionError, match="well-conditioned"):
        sgt.assert_agree("infeasible", "optimal", feas.constraints)


@pytest.mark.parametrize("seed", range(3))
def test_the_signed_margin_is_the_ball_margin_where_feasible(seed: int) -> None:
    """Where some w has every g_j.w > 0 the sphere's max-min margin is the ball LP's."""
    G = np.random.default_rng(seed).standard_normal((3, 4))
    t, w = sgt.signed_margin(G)
    assert t > 0
    np.testing.assert_allclose(np.abs(w).max(), 1.0)
    np.testing.assert_allclose((G @ w).min(), t, rtol=1e-9)


def test_assumption_b_cases_print_a_runnable_reproducer() -> None:
    """Their repr called build_case(kind, "b2", ...), which refuses those variants."""
    for case in (
        sgt.build_b2_case("cross", n=3, T=4, d=5, K=2, seed=1),
        sgt.build_b1_case("cross", n=3, T=4, d=6, seed=0),
    ):
        assert case is not None
        namespace: dict[str, object] = {}
        exec(case.reproducer(), namespace)
        rebuilt = namespace["case"]
        assert isinstance(rebuilt, sgt.Case)
        np.testing.assert_array_equal(rebuilt.data.X, case.data.X)
    with pytest.raises(sg.ProblemError, match="build_b1_case, build_b2_case"):
        sgt.build_case("cross", "b2", n=3, T=4, d=5)


@settings(max_examples=40, database=None, deadline=None)
@given(sgt.cases(kinds=("causal",), overparameterized=True, d_range=(1, 3)))
def test_cases_keep_to_the_kinds_asked(case: sgt.Case) -> None:
    """Where no n fits Theorem 1's sizes, the strategy switched to cross-attention though
    the caller asked for causal cases only."""
    assert case.kind == "causal"


def test_a_rank_bounded_answer_is_checked_on_its_own_w() -> None:
    """The kit compared the result's own objective with its own lower bound: W tripled passed."""
    data = sg.random_data(4, 3, 4, seed=0)
    res = sg.att_svm(data, sg.optimal_tokens(data), norm="nuc", rank=2)
    sgt.assert_certified(res)
    with pytest.raises(AssertionError):
        sgt.assert_certified(dataclasses.replace(res, W=3.0 * res.W))


@pytest.mark.parametrize("scale", [1e-4, 1.0, 1e4, 1e5])
@pytest.mark.parametrize("norm", ["fro", "nuc"])
def test_the_kit_catches_twice_the_optimum_at_every_scale(scale: float, norm: str) -> None:
    """Regression: the KKT checks had absolute floors (max(1, ||W||), atol = rtol), so once the
    tokens were ~1e4 (||W^mm||_F ~ 4e-8) a W twice the optimum passed assert_certified for
    both norms. Every tolerance is now relative to the solution's own scale."""
    base = sg.random_data(4, 4, 6, seed=1)
    data = sg.TokenData(np.asarray(base.X) * scale, Y=base.Y, v=base.v,
                        Z=np.asarray(base.Z) * scale)  # fmt: skip
    res = sg.att_svm(data, sg.optimal_tokens(data), norm=norm)
    sgt.assert_certified(res)
    wrong = dataclasses.replace(res, W=2.0 * res.W, objective=2.0 * res.objective)
    with pytest.raises(AssertionError):
        sgt.assert_certified(wrong)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: sgt.build_case("cross", "generic", n=0, T=2, d=2), "'n' parameter of build_case"),
        (
            lambda: sgt.build_case("cross", "generic", n=2.5, T=2, d=2),
            "'n' parameter of build_case",
        ),
        (lambda: sgt.build_case("cross", "generic", n=2, T=2, d=2, seed=-1), "'seed' parameter"),
        (
            lambda: sgt.build_case("cross", "generic", n=2, T=2, d=2, sigma=-1.0),
            "'sigma' parameter",
        ),
        (lambda: sgt.build_case("cross", "duplicate", n=2, T=1, d=2), "relates two tokens"),
        (lambda: sgt.build_b1_case("multi", n=2, T=3, d=4), "one query per sequence"),
        (lambda: sgt.cases(n_range=(3, 1)).example(), "'n_range' parameter of cases"),
        (lambda: sgt.assert_feasible_point(_CS, np.eye(2), rtol=-1.0), "'rtol' parameter"),
    ],
)
@pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
def test_the_kit_names_bad_arguments(call, match) -> None:
    """Regression: the builders raised numpy's or Python's own errors (high <= 0, not enough
    values to unpack at T = 1, negative seeds), accepted sigma < 0, and a negative rtol failed
    a correct point with a misleading margin."""
    with pytest.raises(sg.ProblemError, match=match):
        call()


_CS = sgt.margin_rows(np.eye(2), np.eye(2))


def test_build_case_takes_one_token_per_sequence() -> None:
    """T = 1 is a valid size (every row set is empty); build_case crashed on it."""
    case = sgt.build_case("cross", "generic", n=3, T=1, d=2, seed=0)
    assert case.data.T == 1 and sg.att_svm_constraints(case.data, np.zeros(3, int)).N == 0
