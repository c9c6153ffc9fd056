# SPDX-License-Identifier: BSD-3-Clause
"""The contiguous-loop softmax kernel (:func:`svmgeo.gd._numba._grad_soft`, run for instances
with an inner loop of 16 or more) agrees with the scalar kernel to 1e-14 (the same bits in the runs compared)
(:func:`svmgeo.gd._numba._grad_one`, the arithmetic of svmgeo 0.1), and the norm bound of the
step's overflow test never undercuts the norm."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import _numba
from svmgeo.gd._backend import _prob
from svmgeo.gd._problem import make_problem

CASES = [
    # (n, T, d, data options, head options)
    (3, 9, 17, {"n_queries": 2}, {}),
    (4, 20, 5, {}, {}),
    (2, 18, 18, {"query": "all", "mask": "causal"}, {}),
    (3, 16, 21, {}, {"head": "relu", "V": np.random.default_rng(5).normal(size=(21, 4))}),
    (2, 17, 16, {}, {"head": "concave", "lam": 0.3}),
]


def _instance(n: int, T: int, d: int, data_kw: dict, head_kw: dict, seed: int) -> tuple:
    data = sg.random_data(n, T, d, seed=seed, **data_kw)
    head = head_kw.get("head", "linear")
    prob = make_problem([data], head, **{k: v for k, v in head_kw.items() if k != "head"})
    return tuple(x[0] for x in _prob(prob)), data


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("scale", [0.3, 40.0, 3e3])  # 3e3: saturated softmax (log domain)
def test_vector_kernel_matches_the_scalar_kernel(case: tuple, scale: float) -> None:
    n, T, d, data_kw, head_kw = case
    assert _numba._vectorize(T, d, d)
    for seed in range(3):
        inst, _ = _instance(n, T, d, data_kw, head_kw, seed)
        rng = np.random.default_rng(seed)
        W = np.ascontiguousarray(rng.normal(0.0, scale / d, (d, d)))
        K, dz, du = inst[2].shape[1], inst[2].shape[2], inst[1].shape[2]
        for loss_id in (0, 1):
            for log_domain in (True, False):
                out = []
                for vector in (False, True):
                    G, Gv = np.empty((d, dz)), np.empty(du)
                    ws = _numba._workspace(n, K, T, d, du)
                    if vector:
                        sw = _numba._soft_workspace(n, K, T, d, dz)
                        Xt, Ut = _numba._transposed(inst)
                        Wt = np.ascontiguousarray(W.T)
                        M = _numba._grad_soft(
                            W, Wt, Xt, Ut, inst, 0, loss_id, log_domain, G, ws, sw, True, Gv
                        )
                    else:
                        M = _numba._grad_one(W, inst, 0, loss_id, log_domain, G, ws, True, Gv)
                    out.append((np.array(M), G, Gv))
                for a, b in zip(out[0], out[1], strict=True):
                    # same bits in the runs compared (docs/performance.md); one fresh compile
                    # gave M 1 ulp apart (cause not found), hence 1e-14
                    np.testing.assert_allclose(a, b, rtol=1e-14, atol=0.0)


@pytest.mark.parametrize("shape", [(3, 8, 20), (2, 24, 6)])
def test_vector_runs_match_the_numpy_backend(shape: tuple) -> None:
    """Trajectories through run_one's vector path agree with the numpy reference backend."""
    data = sg.random_data(*shape, seed=1)
    kw = dict(n_steps=300, record_every=100, record=("loss",))
    fast = sg.train(data, backend="numba", **kw)  # type: ignore[arg-type]
    ref = sg.train(data, backend="numpy", **kw)  # type: ignore[arg-type]
    np.testing.assert_allclose(fast.W, ref.W, rtol=1e-10, atol=1e-12)


def test_norm_bound_is_an_upper_bound() -> None:
    rng = np.random.default_rng(0)
    for size in (1, 3, 64, 1000):
        for scale in (1e-300, 1.0, 1e150):
            A = rng.normal(0.0, scale, size)
            assert _numba._norm(A) <= _numba._norm_bound(A) * (1.0 + 1e-12)
            assert 2.0 * _numba._norm_bound(A) >= _numba._norm(A)
    assert np.isnan(_numba._norm_bound(np.array([1.0, np.nan])))
    assert _numba._norm_bound(np.array([1.0, np.inf])) == np.inf
