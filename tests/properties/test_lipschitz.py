# SPDX-License-Identifier: BSD-3-Clause
"""Property: the exact local Lipschitz constant in W never exceeds the stated global bound
(issue #22), for every map that has one, on random data and W of any scale."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import svmgeo as sg
from svmgeo.analysis import lipschitz
from svmgeo.attention_maps import ATTENTION_MAPS

BOUNDED = tuple(m for m, a in ATTENTION_MAPS.items() if a.jacobian_bound is not None)


@given(
    seed=st.integers(0, 2**32 - 1),
    scale=st.one_of(st.just(0.0), st.floats(1e-3, 1e3)),
    name=st.sampled_from(BOUNDED),
    n_queries=st.integers(1, 2),
)
def test_local_constant_never_exceeds_the_global_bound(
    seed: int, scale: float, name: str, n_queries: int
) -> None:
    rng = np.random.default_rng(seed)
    data = sg.random_data(3, 4, 5, seed=rng, n_queries=n_queries)
    G = rng.normal(size=(5, 5))
    W = scale * G / np.linalg.norm(G)
    lip = lipschitz(data, W, name, wrt="W")
    assert lip.bound_per_query is not None and lip.bound_overall is not None
    assert np.all(lip.per_query <= lip.bound_per_query * (1 + 1e-12))
    assert lip.overall <= lip.bound_overall * (1 + 1e-12)


@given(seed=st.integers(0, 2**32 - 1), spread=st.floats(0.0, 50.0))
def test_softmax_jacobian_norm_at_most_half(seed: int, spread: float) -> None:
    u = spread * np.random.default_rng(seed).normal(size=7)
    J = ATTENTION_MAPS["softmax"].jacobian(u)
    assert np.linalg.norm(J, 2) <= 0.5 * (1 + 1e-12)
