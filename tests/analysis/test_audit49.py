# SPDX-License-Identifier: BSD-3-Clause
"""Regressions of session 49's audit of the newer families: Gen-SVM's and the Graph-SVM's
statuses (an undecided directional problem was called infeasible with an unproved Farkas
vector; uncertified answers were returned without a word), and Gen-SVM's head options
without a head."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg


def _near_duplicate_tokens(seed: int, draws: int, exponents: tuple[int, int]) -> sg.TokenData:
    """Token 2 = token 1 plus a tiny offset (the audit's generator: the ``draws``-th draw)."""
    rng = np.random.default_rng(seed)
    for _ in range(draws):
        n, T, d = int(rng.integers(1, 4)), int(rng.integers(3, 5)), int(rng.integers(2, 4))
        X = rng.normal(size=(n, T, d))
        X[:, 2] = X[:, 1] + 10.0 ** -rng.integers(*exponents) * rng.normal(size=(n, d))
        Z = rng.normal(size=(n, d))
    return sg.TokenData(X, Z=Z)


def _first_two(data: sg.TokenData) -> np.ndarray:
    S = np.zeros((data.n, data.T), bool)
    S[:, :2] = True
    return S


def test_gen_svm_undecided_is_not_called_infeasible_with_an_unproved_farkas() -> None:
    """The directional rows are feasible in exact arithmetic (the audit's rational check);
    the solve is undecided (infeasible_inaccurate). gen_svm said feasible=False with a
    'Farkas' vector whose sum of lambda_j a_j b_j^T is 6e-13, not 0."""
    data = _near_duplicate_tokens(2, 12, (6, 16))
    with pytest.warns(sg.InaccurateSolutionWarning, match="gen_svm returned infeasible_inacc"):
        g = sg.gen_svm(data, _first_two(data))
    assert g.svm.status is sg.Status.INFEASIBLE_INACCURATE
    assert g.status is sg.Status.INFEASIBLE_INACCURATE and g.message.startswith("directional")
    assert not g.feasible and g.farkas is None and g.W_dir is None


def test_gen_svm_says_when_its_direction_is_not_certified() -> None:
    """W_dir misses its equality rows by 5e7 (optimal_inaccurate): gen_svm returned it with no
    status and no warning. Whether the directional solve ends optimal_inaccurate (OpenBLAS's
    SkylakeX kernels) or with only a feasible point, which gen_svm refuses (its Haswell
    kernels), depends on the BLAS's rounding; either way it is said."""
    data = _near_duplicate_tokens(1, 1, (4, 9))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            g = sg.gen_svm(data, _first_two(data))
        except sg.SolverError as refused:
            assert "Gen-SVM directional solve failed" in str(refused)
            return
    assert any(
        issubclass(w.category, sg.InaccurateSolutionWarning)
        and "gen_svm returned optimal_inaccurate" in str(w.message)
        for w in caught
    ), [str(w.message) for w in caught]
    assert g.feasible and g.W_dir is not None
    assert g.status is sg.Status.OPTIMAL_INACCURATE and "directional SVM" in g.message
    assert "optimal_inaccurate" in g.summary()


def test_gen_svm_certified_answer_and_a_proved_infeasibility() -> None:
    data = sg.random_data(4, 5, 6, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = sg.gen_svm(data, _first_two(data))
    assert g.status is sg.Status.OPTIMAL and g.message == "directional SVM certified optimal"
    # the same selected set twice in one sequence with opposite queries: a d = 1 instance
    X = np.array([[[1.0], [2.0], [0.0]], [[1.0], [2.0], [0.0]]])
    Z = np.array([[1.0], [-1.0]])
    S = np.array([[True, False, False], [True, False, False]])
    g = sg.gen_svm(sg.TokenData(X, Z=Z), S)
    assert g.status is sg.Status.INFEASIBLE and not g.feasible
    cs = g.svm.constraints
    assert g.farkas is not None
    np.testing.assert_allclose(np.einsum("j,ja,jb->ab", g.farkas, cs.A, cs.B), 0.0, atol=1e-12)


@pytest.mark.parametrize(
    "options",
    [
        {"v": np.ones(3)},
        {"V": np.ones((2, 3))},
        {"lam": 0.1},
        {"kink_tol": 1e-3},
        {"zero_tol": 1e-3},
    ],
)
def test_gen_svm_refuses_head_options_without_a_head(options: dict) -> None:  # type: ignore[type-arg]
    data = sg.random_data(3, 4, 3, seed=0)
    name = next(iter(options))
    with pytest.raises(sg.ProblemError, match=f"gen_svm got {name} without head="):
        sg.gen_svm(data, _first_two(data), **options)


def _ntp_near_duplicate_embeddings() -> sg.NextTokenData:
    base = sg.random_next_token_data(20, 4, 5, 6, tier_size=1, seed=28, orthonormal=False)
    E = base.embeddings.copy()
    E[1] = E[0] + 1e-8 * np.random.default_rng(0).normal(size=6)
    return sg.NextTokenData([base.tokens[i][base.valid[i]] for i in range(base.n)], base.labels, E)


def test_graph_svm_and_verify_ntp_claim_no_w_svm_that_misses_its_rows() -> None:
    """graph_svm returned optimal_inaccurate (margins -2 on rows >= 1) without a warning, and
    verify_ntp measured corr_svm and R against it silently (session 49: then warned). Since
    session 57 a W whose margins miss rows at every scale is no solution: graph_svm says
    numerical_error without W (the rejected one in extras["unmet_W"]), and verify_ntp, with no
    direction to compare with, refuses naming the failure, not a conflict of rows (the rows
    are feasible: no Farkas vector to weigh)."""
    data = _ntp_near_duplicate_embeddings()
    g = sg.graph_svm(data)
    assert g.status is sg.Status.NUMERICAL_ERROR and g.W is None and g.objective is None
    unmet = np.asarray(g.extras["unmet_W"])
    margins = g.constraints.apply(unmet)[g.constraints.rhs > 0]
    assert margins.min() <= 0.0, margins.min()  # the rejected W misses a row at every scale
    assert sg.check_feasibility(g.constraints).status is sg.Status.OPTIMAL  # feasible rows
    with pytest.raises(sg.ProblemError, match=r"no solution \(numerical_error") as info:
        sg.verify_ntp(data, np.zeros((6, 6)), loss="retrieval")
    assert "farkas" not in str(info.value) and "solver failed on these rows" in str(info.value)


def test_graph_svm_with_near_dependent_rows_is_proved() -> None:
    """The exact repair made every nearly tight row tight; a Graph-SVM's rows (x_i - x_j) b^T,
    rounded differences of embeddings, are nearly dependent through the graph's cycles, and
    one row was then moved to -4.6: the feasibility verdict stayed undecided and the solve
    optimal_inaccurate (0.7 s). Rows whose signs decide now first make only the equality
    rows tight."""
    data = sg.random_next_token_data(200, 6, 10, 16, tier_size=2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = sg.graph_svm(data)
    assert g.status is sg.Status.OPTIMAL and g.proof == "exact"
    assert g.extras["feasibility"].proof == "exact"


def test_tensor_svm_does_not_call_an_unproved_optimum_solved() -> None:
    """Seven rows in R^4 with a margin row and an equality row ~1e-11 apart: the NNLS's w
    meets every row but is 3.7e-5 above the optimum (an exact rational point is lower), with
    a dual residual of 3e16; tensor_svm said "solved" on primal feasibility alone. Never
    "solved" now: with OpenBLAS's SkylakeX kernels the w meets every row ("feasible, not proved
    optimal"), with its Haswell kernels it misses one in floats (undecided, the rows proved
    feasible); both are honest."""
    from svmgeo.analysis import TensorRows

    rng = np.random.default_rng(7)
    for trial in range(231):  # the audit's generator, draw 230
        N = int(rng.integers(2, 9))
        base = rng.normal(size=(3, 4))
        U = base[rng.integers(3, size=N)] + rng.normal(size=(N, 4)) * 10.0 ** rng.integers(-14, -2)
        kind = np.where(rng.random(N) < 0.2, sg.EQUALITY, sg.MARGIN).astype(np.int8)
        c = (np.where(kind == sg.EQUALITY, rng.normal(size=N) * 0.1, 1.0) if trial % 2
             else np.ones(N) * (kind == sg.MARGIN))  # fmt: skip
    res = sg.tensor_svm(TensorRows(U=U, kind=kind, rhs=c, d=2))
    assert not res.message.startswith("solved"), res.message
    if res.feasible:
        assert res.dual_residual > 1e10
        assert res.message.startswith("feasible, not proved optimal"), res.message
    else:
        assert res.farkas is None and res.message.startswith("undecided"), res.message
    good = sg.tensor_svm(sg.att_svm_constraints(sg.random_data(4, 5, 4, seed=0),
                                                sg.optimal_tokens(sg.random_data(4, 5, 4, seed=0))))  # fmt: skip
    assert good.message.startswith("solved"), good.message
