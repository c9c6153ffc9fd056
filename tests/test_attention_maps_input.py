# SPDX-License-Identifier: BSD-3-Clause
"""The public attention maps (``svmgeo.ATTENTION_MAPS``) refuse non-finite logits of the keys a
query sees, and a non-finite Hessian weight ``g``, naming the argument and the entry (session
55: NaN, +inf and -inf came back as NaN, inf or a silent 0), while the logits of hidden keys
stay ignored, -inf and NaN included."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg

MAPS = sorted(sg.ATTENTION_MAPS)
U = np.array([[0.4, -1.3, 2.0, 0.7], [1.1, 0.2, -0.5, 0.9]])  # 1^T u far from 0 per row
VIS = np.array([[True, False, True, True], [True, True, True, False]])


def _calls(amap: sg.AttentionMap, u: np.ndarray, vis: np.ndarray | None) -> list[np.ndarray]:
    g = np.linspace(-1.0, 1.0, u.shape[-1])
    return [amap.phi(u, vis), amap.jacobian(u, vis), amap.hessian(u, g, vis)]


@pytest.mark.parametrize("name", MAPS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("fn", ["phi", "jacobian", "hessian"])
def test_a_non_finite_visible_logit_is_refused(name: str, bad: float, fn: str) -> None:
    # before: NaN rows (softmax, normalized linear), NaN/inf entries (linear, ReLU, sigmoid's
    # NaN), a silent weight of 0 (softmax, sigmoid, ReLU at -inf), or normalized linear's
    # "rounding error" message, which blamed W's hyperplane
    amap = sg.ATTENTION_MAPS[name]
    u = U.copy()
    u[1, 2] = bad
    args = (u, np.ones(4), VIS) if fn == "hessian" else (u, VIS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way to the error
        with pytest.raises(
            sg.ProblemError,
            match=r"u \(the logits\) must be finite on the visible keys; found (nan|-?inf) at "
            r"index \(1, 2\)\..*visible=np.isfinite\(u\)",
        ):
            getattr(amap, fn)(*args)


@pytest.mark.parametrize("name", MAPS)
@pytest.mark.parametrize("bad", [np.nan, -np.inf, np.inf])
def test_hidden_keys_logits_are_ignored_whatever_they_are(name: str, bad: float) -> None:
    # a PyTorch-style -inf on a key hidden by ``visible`` (or any value there) changes nothing;
    # before, normalized linear attention's Hessian was NaN there (0 * -inf); for the other maps
    # a guard that the new check refuses only the visible keys' logits
    amap = sg.ATTENTION_MAPS[name]
    u = np.where(VIS, U, bad)
    for got, want in zip(
        _calls(amap, u, VIS), _calls(amap, np.where(VIS, U, 0.0), VIS), strict=True
    ):
        assert np.all(np.isfinite(got))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", MAPS)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_hessian_weight_is_refused(name: str, bad: float) -> None:
    amap = sg.ATTENTION_MAPS[name]
    g = np.ones(4)
    g[3] = bad
    with pytest.raises(sg.ProblemError, match=r"g must be finite; found (nan|inf) at index \(3,\)"):
        amap.hessian(U[0], g)


def test_logits_that_are_not_numbers_are_refused() -> None:
    with pytest.raises(sg.ProblemError, match="u must be a real numeric array; got dtype <U"):
        sg.ATTENTION_MAPS["linear"].phi(np.array(["1", "2"]))


def test_finite_logits_and_integer_logits_are_taken_as_before() -> None:
    # a guard (passed before): lists and integer arrays go through the check unchanged
    soft = sg.ATTENTION_MAPS["softmax"]
    e = np.exp(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(soft.phi([1, 2, 3]), e / e.sum(), rtol=1e-15)
    np.testing.assert_array_equal(sg.ATTENTION_MAPS["relu"].phi(np.array([-2, 0, 5])), [0, 0, 5])
