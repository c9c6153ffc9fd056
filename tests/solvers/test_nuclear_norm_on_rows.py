# SPDX-License-Identifier: BSD-3-Clause
"""``nuclear_norm_on_rows``: ‖W‖_* from U^T W V when W lies in the rows' spans (issue 25).

The nuclear certificate takes ‖W‖_* from the small matrix U^T W V when W = U M V^T up to
rounding (the solvers' answers); any other W, or a ConstraintSet without cached bases, gets
the full SVD of W, so the certificate of an arbitrary W is unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers._certificates import (
    adjoint_spectral_norm,
    norm_certificate,
    nuclear_certificate,
    nuclear_norm_on_rows,
)
from svmgeo.solvers._factored import compress
from svmgeo.solvers._nuclear import solve_nuclear


def _rows(seed: int) -> sg.ConstraintSet:
    # N = 5 * 3 = 15 token rows and 5 query rows in d = 60: both spans at most a quarter of d
    data = sg.random_data(5, 4, 60, seed=seed)
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


def _full(W: np.ndarray) -> float:
    return float(np.linalg.svd(W, compute_uv=False).sum())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_in_span_matches_full_svd_without_it(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    cs = _rows(seed)
    comp = compress(cs)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((comp.long.shape[1], comp.short.shape[1]))
    W = comp.to_W(X)
    expected = _full(W)
    shapes: list[tuple[int, ...]] = []
    svd = np.linalg.svd

    def recording_svd(a: np.ndarray, *args: object, **kwargs: object) -> object:
        shapes.append(np.shape(a))
        return svd(a, *args, **kwargs)

    monkeypatch.setattr(np.linalg, "svd", recording_svd)
    value = nuclear_norm_on_rows(cs, W)
    assert W.shape not in shapes  # the small matrix only
    np.testing.assert_allclose(value, expected, rtol=1e-13)


@pytest.mark.parametrize("seed", [0, 1])
def test_off_span_or_uncached_is_the_full_svd(seed: int) -> None:
    cs = _rows(seed)
    rng = np.random.default_rng(10 + seed)
    W = rng.standard_normal((cs.d, cs.d))
    assert nuclear_norm_on_rows(cs, W) == _full(W)  # not cached yet
    comp = compress(cs)
    X = rng.standard_normal((comp.long.shape[1], comp.short.shape[1]))
    # a component outside the spans of size 1e-9: the small matrix would miss it
    W_off = comp.to_W(X) + 1e-9 * W
    assert nuclear_norm_on_rows(cs, W_off) == _full(W_off)
    assert nuclear_norm_on_rows(cs, W_off) > float(
        np.linalg.svd(comp.U.T @ W_off @ comp.V, compute_uv=False).sum()
    )


def test_certificate_of_a_solve_is_that_of_the_full_svd() -> None:
    cs = _rows(3)
    res = solve_nuclear(cs)  # caches compress(cs)
    assert res.W is not None and res.dual is not None
    lam = np.asarray(res.dual)
    cert = nuclear_certificate(cs, res.W, lam, 1e-8)
    full = norm_certificate(cs, res.W, lam, _full(res.W), adjoint_spectral_norm(cs, lam), 1e-8)
    assert cert.passed and full.passed
    for name in ("stationarity", "complementarity", "duality_gap"):
        np.testing.assert_allclose(getattr(cert, name), getattr(full, name), rtol=0, atol=1e-13)
