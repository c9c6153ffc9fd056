# SPDX-License-Identifier: BSD-3-Clause
"""Independent checks shared by the solver tests (written from the maths, not from svmgeo)."""

from __future__ import annotations

import numpy as np

from svmgeo.constraints import MARGIN, ConstraintSet


def assert_farkas(cs: ConstraintSet, lam: np.ndarray, *, rtol: float = 1e-9) -> None:
    r"""λ ≥ 0 on margin rows, Σ λ_j a_j b_jᵀ = 0 (relative), cᵀλ = 1."""
    lam = np.asarray(lam, dtype=float)
    assert lam.shape == (cs.N,)
    margin = cs.kind == MARGIN
    assert np.all(lam[margin] >= 0.0), lam[margin].min()
    S = np.einsum("j,ja,jb->ab", lam, cs.A, cs.B)
    scale = np.sum(np.abs(lam) * np.linalg.norm(cs.A, axis=1) * np.linalg.norm(cs.B, axis=1))
    assert scale > 0.0 or np.abs(lam @ cs.rhs) > 0
    assert np.linalg.norm(S) <= rtol * max(scale, 1e-300)
    np.testing.assert_allclose(lam @ cs.rhs, 1.0, rtol=1e-12)


def assert_feasible_point(cs: ConstraintSet, W: np.ndarray, *, rtol: float = 1e-12) -> None:
    """Every margin row ≥ c_j and every equality row = c_j, up to round-off."""
    m = np.einsum("ja,ab,jb->j", cs.A, W, cs.B)
    margin = cs.kind == MARGIN
    scale = max(1.0, float(np.abs(cs.rhs).max(initial=0.0)))
    assert np.all(m[margin] >= cs.rhs[margin] - rtol * scale), (m - cs.rhs)[margin].min()
    np.testing.assert_allclose(m[~margin], cs.rhs[~margin], atol=1e-9 * scale)
