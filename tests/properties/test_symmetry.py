# SPDX-License-Identifier: BSD-3-Clause
"""Equivariance of W^mm: rotations, permutations of tokens and sequences, scaling."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import svmgeo as sg
from svmgeo.testing import SOLVER_RTOL, Case, assert_agree, cases, examples, selections, verdict

W_RTOL = 1e-6


def _rebuild(data: sg.TokenData, X: np.ndarray, **changes: Any) -> sg.TokenData:
    """The same kind of dataset with new tokens (and any of Y, v, Z, query, mask replaced)."""
    kw: dict[str, Any] = {"Y": data.Y, "v": data.v, "mask": data.mask}
    if data.query is None:
        kw["Z"] = data.Z
    else:
        kw["query"] = data.query
    kw.update(changes)
    return sg.TokenData(X, **kw)


def _assert_maps(
    data: sg.TokenData,
    alpha: Any,
    data2: sg.TokenData,
    alpha2: Any,
    norm: str,
    transform: Callable[[np.ndarray], np.ndarray],
) -> None:
    """Att-SVM(α) on ``data`` and Att-SVM(α2) on ``data2`` agree through ``transform``:
    the same feasibility; Frobenius: W2 = transform(W1) (unique optimum); nuclear:
    transform(W1) is feasible for the second problem with the optimal value (solutions may
    form a set)."""
    r1 = sg.att_svm(data, alpha, norm=norm)
    r2 = sg.att_svm(data2, alpha2, norm=norm)
    v1, v2 = verdict(r1), verdict(r2)
    if v1 is None or v2 is None:  # ill-conditioned (checked by verdict)
        return
    assert_agree(v1, v2, r1.constraints)
    if v1 != "optimal" or v2 != "optimal":
        return
    assert r1.W is not None and r2.W is not None
    mapped = transform(r1.W)
    scale = max(1.0, float(np.linalg.norm(r2.W)))
    if norm == "fro":
        np.testing.assert_allclose(r2.W, mapped, atol=W_RTOL * scale)
    else:
        cs = r2.constraints
        m = np.einsum("ja,ab,jb->j", cs.A, mapped, cs.B)
        assert np.all(m >= 1 - SOLVER_RTOL * scale)
        np.testing.assert_allclose(np.linalg.norm(mapped, "nuc"), r2.objective, rtol=W_RTOL)


@settings(max_examples=examples(2))
@given(
    case=cases(),
    draw=st.data(),
    seed=st.integers(0, 2**32 - 1),
    norm=st.sampled_from(("fro", "nuc")),
)
def test_rotation_equivariance(case: Case, draw: st.DataObject, seed: int, norm: str) -> None:
    """X → XR, Z → ZR, v → Rᵀv (R orthogonal) maps W^mm to RᵀW^mm R (Frobenius: unique;
    nuclear: the optimal value is invariant and the mapped solution is optimal)."""
    data = case.data
    alpha = draw.draw(selections(data), label="alpha")
    R = np.linalg.qr(np.random.default_rng(seed).normal(size=(data.d, data.d)))[0]
    changes: dict[str, Any] = {"v": np.asarray(data.v) @ R}
    if data.query is None:
        changes["Z"] = np.asarray(data.Z) @ R
    data2 = _rebuild(data, np.asarray(data.X) @ R, **changes)
    np.testing.assert_allclose(sg.token_scores(data2), sg.token_scores(data), atol=1e-12)
    _assert_maps(data, alpha, data2, alpha, norm, lambda W: R.T @ W @ R)


def _permuted(
    data: sg.TokenData, alpha: np.ndarray, sp: np.ndarray, tp: np.ndarray
) -> tuple[sg.TokenData, np.ndarray]:
    """Sequences reordered by ``sp`` and tokens by ``tp`` (new position p holds old tp[p])."""
    inv = np.argsort(tp)
    X = np.asarray(data.X)[sp][:, tp]
    Y = np.asarray(data.labels)[sp]
    vis = np.asarray(data.visible)[sp][:, :, tp]
    a = np.asarray(alpha).reshape(data.n, data.K)[sp]
    kw: dict[str, Any] = {"v": data.v}
    if data.query == "all":  # the queries are the tokens: permute them as well
        Y, vis, a = Y[:, tp], vis[:, tp], a[:, tp]
        kw["query"] = "all"
    elif data.query is not None:
        kw["query"] = int(inv[data.query])
    else:
        kw["Z"] = np.asarray(data.Z)[sp]
    a = inv[a]
    if data.single_query:
        Y, a = Y[:, 0], a[:, 0]
    mask = None if data.mask is None else vis
    return sg.TokenData(X, Y=Y, mask=mask, **kw), a


@settings(max_examples=examples(2))
@given(case=cases(), draw=st.data(), norm=st.sampled_from(("fro", "nuc")))
def test_permutation_invariance(case: Case, draw: st.DataObject, norm: str) -> None:
    """Reordering the sequences and the tokens (with α, labels, masks and the query index
    mapped along) leaves W^mm unchanged; optimal tokens map along too."""
    data = case.data
    alpha = draw.draw(selections(data), label="alpha")
    sp = np.asarray(draw.draw(st.permutations(range(data.n)), label="sequence order"))
    tp = np.asarray(draw.draw(st.permutations(range(data.T)), label="token order"))
    data2, alpha2 = _permuted(data, alpha, sp, tp)
    np.testing.assert_array_equal(
        np.asarray(sg.optimal_token_sets(data2)).reshape(data.n, data2.K, data.T),
        _permuted_sets(data, sp, tp),
    )
    _assert_maps(data, alpha, data2, alpha2, norm, lambda W: W)


def _permuted_sets(data: sg.TokenData, sp: np.ndarray, tp: np.ndarray) -> np.ndarray:
    S = np.asarray(sg.optimal_token_sets(data)).reshape(data.n, data.K, data.T)[sp][:, :, tp]
    return S[:, tp] if data.query == "all" else S


@settings(max_examples=examples(2))
@given(
    case=cases(),
    draw=st.data(),
    c=st.one_of(st.floats(0.1, 10.0), st.floats(-10.0, -0.1)),
    norm=st.sampled_from(("fro", "nuc")),
)
def test_scaling_tokens_scales_wmm_inversely(
    case: Case, draw: st.DataObject, c: float, norm: str
) -> None:
    """X → cX with Z fixed gives W^mm/c (cross-attention); self-attention (Z = X scales too)
    gives W^mm/c². The selection α is held fixed (scores may flip sign with c < 0)."""
    data = case.data
    alpha = draw.draw(selections(data), label="alpha")
    data2 = _rebuild(data, c * np.asarray(data.X))
    power = 1 if data.query is None else 2
    _assert_maps(data, alpha, data2, alpha, norm, lambda W: W / c**power)


@settings(max_examples=examples(6))
@given(
    case=cases(),
    draw=st.data(),
    k=st.integers(-60, 60),
    norm=st.sampled_from(("fro", "nuc", ("lp", 1.5))),
)
def test_scaling_the_bounds_scales_the_optimum(
    case: Case, draw: st.DataObject, k: int, norm: Any
) -> None:
    """Rows a_j W b_j >= 2^k (instead of 1) are the same problem with W times 2^k: the same
    verdict, the optimum times 2^k (before session 46, bounds past 2^20 were judged absolutely
    and failed the certificate at the optimum)."""
    import dataclasses

    alpha = draw.draw(selections(case.data), label="alpha")
    cs = sg.att_svm_constraints(case.data, alpha)
    scaled = dataclasses.replace(cs, rhs=cs.rhs * 2.0**k)
    r1, r2 = sg.solve_svm(cs, norm=norm), sg.solve_svm(scaled, norm=norm)
    v1, v2 = verdict(r1), verdict(r2)
    if v1 is None or v2 is None:  # ill-conditioned (checked by verdict)
        return
    assert_agree(v1, v2, cs)
    if v1 == "optimal" and v2 == "optimal":
        assert r1.objective is not None and r2.objective is not None
        np.testing.assert_allclose(r2.objective / 2.0**k, r1.objective, rtol=W_RTOL)
