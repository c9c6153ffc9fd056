# SPDX-License-Identifier: BSD-3-Clause
"""Gen-SVM and selected sets: hand-derived cases, reduction to Att-SVM, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.testing import assert_farkas

from ._cases import E1

# One sequence, z = e_1, u = W e_1. Tokens x_0 = (1, 0), x_1 = (0, 1), x_2 = (−1, −1).
# O = {0, 1}, Ō = {2}: equality (x_0 − x_1)·u = 0 ⇒ u_0 = u_1 = c; margins (2, 1)·u ≥ 1 and
# (1, 2)·u ≥ 1 ⇒ 3c ≥ 1 ⇒ W_dir = u e_1ᵀ with u = (1/3, 1/3).
PAIR_X = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
PAIR_O = np.array([[True, True, False]])


def _pair_data() -> sg.TokenData:
    return sg.TokenData(PAIR_X, Z=E1, v=np.ones(2))


def test_directional_component_by_hand() -> None:
    gen = sg.gen_svm(_pair_data(), PAIR_O)
    assert gen.feasible and gen.certificate is None
    np.testing.assert_allclose(gen.W_dir, [[1 / 3, 0.0], [1 / 3, 0.0]], atol=1e-10)
    np.testing.assert_array_equal(gen.masked, [[False, False, True]])
    assert gen.W_fin is None and gen.R is None and gen.W_eq is None and gen.gamma is None


def test_finite_component_r_and_gamma_by_hand() -> None:
    # W_fin: (x_0 − x_1)·u = u_0 − u_1 = log(s_0/s_1), min ‖u‖ ⇒ u = (ℓ/2, −ℓ/2), ℓ = log(5/3).
    # fit_to = W_fin + 3 W_dir + E with ⟨E, W_dir⟩ = 0 ⇒ R = 3. Γ = s_2 = 0.2.
    s = np.array([[0.5, 0.3, 0.2]])
    ell = math.log(0.5 / 0.3)
    W_fin = np.array([[ell / 2, 0.0], [-ell / 2, 0.0]])
    W_dir = np.array([[1 / 3, 0.0], [1 / 3, 0.0]])
    E = np.array([[0.0, 1.0], [0.0, 0.0]])
    gen = sg.gen_svm(_pair_data(), PAIR_O, probs=s, fit_to=W_fin + 3.0 * W_dir + E)
    np.testing.assert_allclose(gen.W_fin, W_fin, atol=1e-10)
    assert gen.R == pytest.approx(3.0, rel=1e-9)
    np.testing.assert_allclose(gen.W_eq, W_fin + 3.0 * W_dir, atol=1e-9)
    assert gen.gamma == pytest.approx(0.2)
    F = W_fin + 3.0 * W_dir + E
    expected_corr = np.vdot(gen.W_eq, F) / (np.linalg.norm(gen.W_eq) * np.linalg.norm(F))
    assert gen.fit_correlation == pytest.approx(expected_corr, rel=1e-12)
    # a fit_to pointing against W_dir clips R at 0
    clipped = sg.gen_svm(_pair_data(), PAIR_O, probs=s, fit_to=W_fin - 5.0 * W_dir)
    assert clipped.R == 0.0
    np.testing.assert_allclose(clipped.W_eq, clipped.W_fin, atol=0)


@pytest.mark.parametrize(
    "data",
    [
        sg.random_data(4, 5, 6, seed=0),
        sg.random_data(3, 4, 6, seed=1, query=0),
        sg.random_data(3, 4, 6, seed=2, query="all", mask="causal"),
    ],
    ids=["cross", "self", "causal"],
)
def test_singleton_selected_sets_equal_att_svm(data: sg.TokenData) -> None:
    alpha = sg.optimal_tokens(data)
    full = np.zeros((data.n, data.K, data.T), dtype=bool)
    np.put_along_axis(full, alpha.reshape(data.n, data.K, 1), True, axis=2)
    selected = full[:, 0] if data.single_query else full
    gen = sg.gen_svm(data, selected)
    ref = sg.att_svm(data, alpha)
    np.testing.assert_allclose(gen.W_dir, ref.W, atol=1e-8)
    cs_gen = sg.selected_set_constraints(data, selected)
    cs_att = sg.att_svm_constraints(data, alpha)
    np.testing.assert_array_equal(cs_gen.A, cs_att.A)
    np.testing.assert_array_equal(cs_gen.B, cs_att.B)
    assert cs_gen.n_margin == cs_gen.N


def test_equalities_hold_inside_every_selected_set() -> None:
    data = sg.random_data(3, 5, 8, seed=4)
    O = np.zeros((3, 5), dtype=bool)
    O[0, [0, 2, 3]] = O[1, [1, 4]] = O[2, [2]] = True
    gen = sg.gen_svm(data, O)
    logits = np.einsum("itd,de,ie->it", data.X, gen.W_dir, data.Z)
    for i in range(3):
        inside, outside = logits[i, O[i]], logits[i, ~O[i]]
        np.testing.assert_allclose(inside, inside[0], atol=1e-9)  # all pairwise equalities
        assert inside.min() - outside.max() >= 1.0 - 1e-9


def test_infeasible_gen_svm_has_certificate() -> None:
    # x_2 = (x_0 + x_1)/2: the margin rows (x_0 − x_2)·u ≥ 1 and (x_1 − x_2)·u ≥ 1 add up to
    # (x_0 + x_1 − 2 x_2)·u = 0 ≥ 2, impossible.
    X = np.array([[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]])
    data = sg.TokenData(X, Z=E1, v=np.ones(2))
    gen = sg.gen_svm(data, PAIR_O, probs=[[0.6, 0.4 - 1e-7, 1e-7]], fit_to=np.eye(2))
    assert not gen.feasible and gen.W_dir is None
    assert_farkas(gen.svm.constraints, gen.certificate)
    # the finite component does not depend on the margin rows: u = (ℓ/2, −ℓ/2) as above
    ell = math.log(0.6 / (0.4 - 1e-7))
    np.testing.assert_allclose(gen.W_fin, [[ell / 2, 0.0], [-ell / 2, 0.0]], atol=1e-12)
    assert gen.R is None and gen.W_eq is None


def test_selected_derived_from_probs() -> None:
    gen = sg.gen_svm(_pair_data(), probs=[[0.6, 0.4 - 1e-8, 1e-8]])
    np.testing.assert_array_equal(gen.selected, PAIR_O)
    assert gen.gamma == pytest.approx(1e-8)


def test_selected_sets_thresholds() -> None:
    probs = np.array([[0.5, 0.5 - 1e-3 - 1e-6, 1e-3, 1e-6], [0.9, 0.1 - 2e-6, 1e-6, 1e-6]])
    sel = sg.selected_sets(probs)
    np.testing.assert_array_equal(sel.selected, [[1, 1, 1, 0], [1, 1, 0, 0]])
    np.testing.assert_array_equal(sel.masked, [[0, 0, 0, 1], [0, 0, 1, 1]])
    assert not sel.any_ambiguous


def test_selected_sets_flags_ambiguous() -> None:
    probs = np.array([[0.7, 0.3 - 1e-4, 1e-4]])
    with pytest.warns(UserWarning, match="neither selected nor masked"):
        sel = sg.selected_sets(probs)
    np.testing.assert_array_equal(sel.ambiguous, [[False, False, True]])
    assert sel.any_ambiguous
    custom = sg.selected_sets(probs, selected_tol=1e-5)
    np.testing.assert_array_equal(custom.selected, [[True, True, True]])


@pytest.mark.parametrize(
    ("probs", "match"),
    [
        ([[0.5, 0.6, -0.1]], "nonnegative"),
        ([[0.5, 0.4, 0.0]], "sum to 1"),
        ([0.5, 0.5], "2-D or 3-D"),
        ([[0.5, np.nan, 0.5]], "finite"),
    ],
)
def test_probs_must_be_distributions(probs: object, match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        sg.selected_sets(probs)
    with pytest.raises(sg.ProblemError, match=match):
        sg.gen_svm(_pair_data(), PAIR_O, probs=probs)


def test_sum_tolerance() -> None:
    sg.selected_sets([[0.5, 0.5 + 5e-7]])  # within 1e-6
    with pytest.raises(sg.ProblemError, match="sum to 1"):
        sg.selected_sets([[0.5, 0.5 + 5e-6]])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"selected_tol": 0.0}, "selected_tol"),
        ({"masked_tol": -1.0}, "masked_tol"),
        ({"masked_tol": 1e-3, "selected_tol": 1e-4}, "below selected_tol"),
    ],
)
def test_selected_sets_bad_thresholds(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        sg.selected_sets([[0.5, 0.5]], **kwargs)


@pytest.mark.parametrize(
    ("selected", "match"),
    [
        (np.array([[False, False, False]]), "empty"),
        (np.array([[True, True, True]]), "every visible token"),
        (np.array([[1, 0, 0]]), "boolean"),
        (np.array([[True, False]]), "shape"),
    ],
)
def test_bad_selected_sets(selected: np.ndarray, match: str) -> None:
    with pytest.raises(sg.ProblemError, match=r"selected.*" + match):
        sg.gen_svm(_pair_data(), selected)


def test_bad_gen_svm_arguments() -> None:
    with pytest.raises(sg.ProblemError, match="fit_to needs probs"):
        sg.gen_svm(_pair_data(), PAIR_O, fit_to=np.eye(2))
    with pytest.raises(sg.ProblemError, match="selected="):
        sg.gen_svm(_pair_data())
    with pytest.raises(sg.ProblemError, match="probs must have shape"):
        sg.gen_svm(_pair_data(), PAIR_O, probs=[[0.5, 0.5]])
    with pytest.raises(sg.ProblemError, match="fit_to"):
        sg.gen_svm(_pair_data(), PAIR_O, probs=[[0.5, 0.3, 0.2]], fit_to=np.eye(3))
    with pytest.raises(sg.ProblemError, match="probs is 0 at a selected token"):
        sg.gen_svm(_pair_data(), PAIR_O, probs=[[1.0, 0.0, 0.0]])


def test_several_queries_with_probabilities() -> None:
    data = sg.random_data(2, 3, 5, seed=0, n_queries=2)
    row = [0.7, 0.3 - 1e-8, 1e-8]
    probs = np.array([[row, row[::-1]], [row, row]])  # (n, K, T)
    gen = sg.gen_svm(data, probs=probs)
    expected = np.array([[[1, 1, 0], [0, 1, 1]], [[1, 1, 0], [1, 1, 0]]], dtype=bool)
    np.testing.assert_array_equal(gen.selected, expected)
    assert gen.gamma == pytest.approx(1e-8)
    logits = np.einsum("itd,de,ike->ikt", data.X, gen.W_fin, data.queries)
    for i in range(2):
        for k in range(2):
            O = np.flatnonzero(expected[i, k])
            # W_fin reproduces the log-probability ratio inside O_ik
            np.testing.assert_allclose(
                logits[i, k, O[0]] - logits[i, k, O[1]],
                np.log(probs[i, k, O[0]] / probs[i, k, O[1]]),
                atol=1e-9,
            )
