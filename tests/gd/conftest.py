# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures of the GD-engine tests: datasets for every attention type and the W^mm oracle."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import cupy_available

#: Skips a test where ``backend="cupy"`` cannot run (no CuPy, or no CUDA device).
requires_cupy = pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device")
#: The cupy backend as a test parameter: runs on a machine with a GPU, skips elsewhere.
CUPY = pytest.param("cupy", marks=(requires_cupy, pytest.mark.gpu))
#: The backends compared with the numpy reference (``backend="numpy"``).
FAST_BACKENDS = ("numba", CUPY)
#: Every backend, for properties each must have.
ALL_BACKENDS = ("numpy", "numba", CUPY)


def w_mm(data: sg.TokenData, alpha: np.ndarray, norm: str = "fro") -> np.ndarray:
    """The Att-SVM(alpha) solution (Frobenius, or nuclear with norm="nuc"), certified by svmgeo.

    The one place the GD tests reach the solvers.
    """
    res = sg.att_svm(data, alpha, norm=norm)  # type: ignore[arg-type]
    assert res.success and res.W is not None, (res.status, res.message)
    return res.W


def _general_mask(K: int, T: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mask = rng.random((K, T)) < 0.6
    mask[np.arange(K), rng.integers(0, T, K)] = True
    return mask


def make_datasets() -> dict[str, sg.TokenData]:
    """Small instances of each attention type and mask (n, T, d small: fast kernels)."""
    return {
        "cross": sg.random_data(3, 4, 5, seed=1),
        "self": sg.random_data(3, 4, 5, seed=2, query=0),
        "causal": sg.random_data(2, 4, 5, seed=3, query="all", mask="causal"),
        "masked": sg.random_data(2, 5, 4, seed=4, n_queries=3, mask=_general_mask(3, 5, 4)),
    }


DATASETS = make_datasets()


@pytest.fixture(params=sorted(DATASETS))
def any_data(request: pytest.FixtureRequest) -> sg.TokenData:
    return DATASETS[request.param]


def head_kwargs(head: str, d: int) -> dict[str, object]:
    """Parameters of each head for feature dimension d."""
    if head == "relu":
        rng = np.random.default_rng(7)
        return {"V": rng.normal(size=(d, 3)), "v": rng.normal(size=3)}
    if head == "concave":
        return {"lam": 0.3}
    return {}


def optimal_instance(seed: int) -> tuple[sg.TokenData, np.ndarray]:
    """A random (6, 8, 10) instance whose optimal tokens are unique (d >= max(T-1, n))."""
    data = sg.random_data(6, 8, 10, seed=seed, score_gap=0.05)
    return data, sg.optimal_tokens(data)


def rebuilt(data: sg.TokenData, **head: object) -> sg.TokenData:
    """The attention problem of ``data`` (tokens, labels, queries as Z, mask) with another
    head: ``values=``, ``v=`` or ``scores=``."""
    Z = np.asarray(data.queries)
    return sg.TokenData(
        np.asarray(data.X),
        Y=np.asarray(data.labels),
        Z=Z[:, 0] if data.single_query else Z,
        mask=None if data.mask is None else np.asarray(data.mask),
        **head,  # type: ignore[arg-type]
    )


def with_values(data: sg.TokenData, d_u: int = 3, seed: int = 11) -> sg.TokenData:
    """``data`` with random head features ``values`` of width ``d_u`` (!= d) and a head v."""
    rng = np.random.default_rng(seed)
    return rebuilt(data, values=rng.normal(size=(data.n, data.T, d_u)), v=rng.normal(size=d_u))


# attention features != head features: cross (K = 1) and masked (K = 3) instances
VALUES = {name: with_values(DATASETS[name]) for name in ("cross", "masked")}
