# SPDX-License-Identifier: BSD-3-Clause
r"""Batched problem arrays: B datasets of equal sizes stacked for the kernels.

A :class:`Problem` holds, for B instances with the same :math:`(n, T, d, K)`, the attention
tokens ``X`` (B, n, T, d), the head features ``U`` (B, n, T, d_u) (the data's ``values``; the
very array ``X`` when no instance has values, so nothing is copied), queries ``Z``
(B, n, K, d), or ones of shape (B, n, K, 1) for prompt attention ``param="p"``, labels ``Y`` (B, n, K), visibility ``vis`` (B, n, K, T) and the head's
parameters:

* linear / concave: ``hv`` (B, d_u) is :math:`v`, ``lam`` (B,) is :math:`\lambda`
  (0 for linear);
* relu: ``hV`` (B, d_u, p) is :math:`V` and ``hw`` (B, p) the output weights :math:`v`;
* given scores (``head_id == SCORES_HEAD``, the linear head of data built with
  ``scores=`` and no ``v``): ``C`` (B, n, K, T) holds :math:`Y_{ik}\gamma_{ikt}`, so that
  :math:`f_{ik} = \sum_t s_t C_{ikt}` and :math:`Y_{ik} f_{ik} = \sum_t s_t \gamma_{ikt}`.

Unused head arrays have a zero-size trailing axis so that compiled kernels see one
signature.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import ProblemError
from .._validation import check_array, check_real
from ..data import TokenData

__all__ = [
    "ATTENTION_IDS",
    "CONCAVE_HEAD",
    "CORRELATION_LOSS",
    "EXPONENTIAL_LOSS",
    "HEAD_IDS",
    "LINEAR_HEAD",
    "LOGISTIC_LOSS",
    "LOSS_IDS",
    "NORM_LIMIT",
    "RELU_HEAD",
    "SCORES_HEAD",
    "SOFTMAX_ATT",
    "Problem",
    "make_problem",
    "unstack",
]

# integer ids of the losses and heads, as the compiled kernels read them
LOGISTIC_LOSS, EXPONENTIAL_LOSS, CORRELATION_LOSS = 0, 1, 2
LOSS_IDS = {
    "logistic": LOGISTIC_LOSS,
    "exponential": EXPONENTIAL_LOSS,
    "correlation": CORRELATION_LOSS,
}
LINEAR_HEAD, RELU_HEAD, CONCAVE_HEAD = 0, 1, 2
HEAD_IDS = {"linear": LINEAR_HEAD, "relu": RELU_HEAD, "concave": CONCAVE_HEAD}
SCORES_HEAD = 3  # the linear head read from given scores (TokenData(scores=...) without v)
# integer ids of the attention maps (the order of svmgeo.attention_maps.ATTENTION_MAPS)
SOFTMAX_ATT, LINEAR_ATT, NORMALIZED_ATT, SIGMOID_ATT, RELU_ATT = 0, 1, 2, 3, 4
ATTENTION_IDS = {
    "softmax": SOFTMAX_ATT,
    "linear": LINEAR_ATT,
    "normalized_linear": NORMALIZED_ATT,
    "sigmoid": SIGMOID_ATT,
    "relu": RELU_ATT,
}

# Largest parameter norm the engine represents: ||W||_F^2 (and a d x d sum of squares) stays
# below float64's maximum (1.8e308), and so does every logit x^T W z (bounded by LOGIT_LIMIT).
NORM_LIMIT = 1e150
LOGIT_LIMIT = 1e300


@dataclass(frozen=True, eq=False)
class Problem:
    """Stacked arrays of B instances (see the module docstring)."""

    X: np.ndarray
    U: np.ndarray
    Z: np.ndarray
    Y: np.ndarray
    vis: np.ndarray
    head_id: int
    hv: np.ndarray
    hV: np.ndarray
    hw: np.ndarray
    lam: np.ndarray
    C: np.ndarray
    single_query: bool = False  # every dataset has one query per sequence (K axis dropped)
    att_id: int = SOFTMAX_ATT  # the attention map (ATTENTION_IDS)

    @property
    def B(self) -> int:
        return int(self.X.shape[0])

    @property
    def n(self) -> int:
        return int(self.X.shape[1])

    @property
    def T(self) -> int:
        return int(self.X.shape[2])

    @property
    def d(self) -> int:
        return int(self.X.shape[3])

    @property
    def K(self) -> int:
        return int(self.Z.shape[2])

    @property
    def d_u(self) -> int:
        return int(self.U.shape[3])

    @property
    def max_norm(self) -> np.ndarray:
        r"""Per instance, the largest :math:`\|W\|_F` a step may reach (shape (B,)):
        ``NORM_LIMIT``, lowered so that :math:`\|W\|_F \max\|x\| \max\|z\| \le`
        ``LOGIT_LIMIT`` bounds every logit."""
        with np.errstate(over="ignore", divide="ignore"):
            xz = np.max(np.linalg.norm(self.X, axis=-1), axis=(1, 2)) * np.max(
                np.linalg.norm(self.Z, axis=-1), axis=(1, 2)
            )
            return np.where(xz > 0.0, np.minimum(NORM_LIMIT, LOGIT_LIMIT / xz), NORM_LIMIT)


def _per_instance(value: Any, name: str, B: int, shape: tuple[int, ...], hint: str) -> np.ndarray:
    """Accept ``shape`` (shared by all instances) or ``(B, *shape)``; return ``(B, *shape)``."""
    arr = check_array(value, name, ndim=(len(shape), len(shape) + 1), hint=hint)
    if arr.ndim == len(shape):
        if arr.shape != shape:
            raise ProblemError(
                f"{name} must have shape {shape} or {(B, *shape)}; got {arr.shape}. {hint}"
            )
        return np.array(np.broadcast_to(arr, (B, *shape)), order="C")
    if arr.shape != (B, *shape):
        raise ProblemError(
            f"{name} must have shape {shape} or {(B, *shape)}; got {arr.shape}. {hint}"
        )
    return arr


_LAM_HINT = "lam is the concave head's finite λ >= 0: one float, or one per instance (B,)."


def _stacked(datasets: Sequence[TokenData], name: str) -> np.ndarray:
    """The attribute ``name`` of every dataset, stacked (C-contiguous); a ProblemError that
    one of several datasets raises (a prompt dataset has no queries) says which one."""
    parts = []
    for j, data in enumerate(datasets):
        try:
            parts.append(np.asarray(getattr(data, name)))
        except ProblemError as exc:
            if len(datasets) == 1:
                raise
            raise ProblemError(f"dataset {j}: {exc}") from None
    return np.ascontiguousarray(np.stack(parts))


def make_problem(
    datasets: Sequence[TokenData],
    head: str,
    *,
    v: Any = None,
    V: Any = None,
    lam: Any = None,
    param: str = "W",
    train_head: bool = False,
    attention: str = "softmax",
) -> Problem:
    r"""Stack ``datasets`` (equal sizes) and resolve the head parameters.

    For ``param="p"`` the queries become the scalar 1 (``Z`` of shape (B, n, K, 1)): the
    trained matrix is then :math:`p \in \mathbb{R}^{d\times 1}` and every logit is
    :math:`x_{it}^\top p \cdot 1`, exactly the prompt-attention score. With ``train_head``
    ``hv`` is the initial head: ``v``, else each dataset's ``v``, else zero. ``attention``
    names the attention map (a key of :data:`ATTENTION_IDS`, already validated).
    """
    if len(datasets) == 0:
        raise ProblemError("train_batch needs at least one dataset; got an empty sequence.")
    for j, data in enumerate(datasets):
        if not isinstance(data, TokenData):
            raise ProblemError(
                f"dataset {j} must be a svmgeo.TokenData; got {type(data).__name__}. "
                "Build one with svmgeo.TokenData(X, Y=..., v=..., Z=... or query=...)."
            )
    first = datasets[0]
    sizes = (first.n, first.T, first.d, first.K, first.d_values)
    for j, data in enumerate(datasets):
        if (data.n, data.T, data.d, data.K, data.d_values) != sizes:
            raise ProblemError(
                "train_batch needs datasets of equal sizes (n, T, d, K, d_u); dataset 0 has "
                f"{sizes} but dataset {j} has "
                f"{(data.n, data.T, data.d, data.K, data.d_values)}. "
                "Group instances by size and call train_batch once per group."
            )
    B = len(datasets)
    du = first.d_values
    X = _stacked(datasets, "X")
    U = _stacked(datasets, "values") if any(dd.has_values for dd in datasets) else X
    if param == "p":  # prompt attention: the same p scores every key, queries unused
        Z = np.ones((B, first.n, first.K, 1))
    else:
        Z = _stacked(datasets, "queries")
    Y = _stacked(datasets, "labels")
    vis = _stacked(datasets, "visible")
    hv = np.zeros((B, 0))
    hV = np.zeros((B, du, 0))
    hw = np.zeros((B, 0))
    lam_arr = np.zeros(B)
    C = np.zeros((*Y.shape, 0))
    head_id = HEAD_IDS[head]
    given = [j for j, dd in enumerate(datasets) if dd.scores is not None]
    if given and head != "linear":
        raise ProblemError(
            f"dataset {given[0]} has explicit scores (TokenData(scores=...)), which define the "
            f"linear head's token scores only; head={head!r} cannot use them. Train with "
            "head='linear', or build the data with values=/v= instead of scores=."
        )
    scored = [j for j in given if datasets[j].v is None]
    if head in ("linear", "concave"):
        if V is not None:
            raise ProblemError(f"V applies to head='relu' only; got V with head={head!r}.")
        if scored and (v is not None or len(scored) < B):
            raise ProblemError(
                f"dataset {scored[0]} gives its scores (scores=, no v), which the linear head "
                "reads directly; "
                + (
                    "do not pass v= as well (it would define other scores)."
                    if v is not None
                    else "every dataset of the batch must then give scores without v."
                )
            )
        if scored and train_head:
            raise ProblemError(
                f"train_head=True trains v, but dataset {scored[0]} gives its scores "
                "(scores=, no v), which fix the head. Build the data with v= (and values=) "
                "instead of scores=."
            )
        if scored:  # gamma given: f = sum_t s_t Y gamma_t, so that Y f = sum_t s_t gamma_t
            head_id = SCORES_HEAD
            C = Y[:, :, :, None] * np.stack([np.asarray(dd.scores) for dd in datasets])
        elif v is None:
            missing = [j for j, dd in enumerate(datasets) if dd.v is None]
            if missing and not train_head:
                raise ProblemError(
                    f"head={head!r} needs v: dataset {missing[0]} has no v. Pass v=... of "
                    f"shape ({du},) to train, or build the data with TokenData(..., v=...)."
                )
            # with train_head the initial head: data.v, else zero
            hv = np.stack([np.zeros(du) if dd.v is None else np.asarray(dd.v) for dd in datasets])
        else:
            hint = "v is the linear head, one weight per head feature (values, else X)."
            hv = _per_instance(v, "v", B, (du,), hint)
        if head == "concave":
            if lam is None:
                raise ProblemError(
                    "head='concave' needs lam, the λ of h(x) = vᵀx − λ‖x‖²; pass lam=0.1 e.g."
                )
            if np.ndim(lam) == 0:
                lam_arr = np.full(B, check_real(lam, "lam", low=0.0, high_open=True, where="train"))
            else:  # one per instance (train_batch)
                lam_arr = check_array(lam, "lam", ndim=1, shape=(B,), hint=_LAM_HINT)
                if np.any(lam_arr < 0.0):
                    raise ProblemError(f"lam must be >= 0 per instance. {_LAM_HINT}")
        elif lam is not None:
            raise ProblemError(f"lam applies to head='concave' only; got lam with head={head!r}.")
    else:  # relu
        if lam is not None:
            raise ProblemError("lam applies to head='concave' only; got lam with head='relu'.")
        if V is None:
            raise ProblemError(
                f"head='relu' needs V of shape ({du}, p): h(u) = vᵀReLU(Vᵀu) with V fixed "
                "(u the head features: values, else X)."
            )
        Va = check_array(V, "V", ndim=(2, 3), hint=f"V must be ({du}, p) or (B, {du}, p).")
        p = Va.shape[-1]
        if p < 1:
            raise ProblemError(f"V must have at least one column; got shape {Va.shape}.")
        hV = _per_instance(Va, "V", B, (du, p), "V maps head features to the p hidden units.")
        hw = (
            np.ones((B, p))
            if v is None
            else _per_instance(v, "v", B, (p,), "With head='relu', v weights the p ReLU units.")
        )
    # writeable C arrays: one compiled signature for every call (no read-only broadcast views)
    c = [np.require(a, requirements=["C", "W"]) for a in (X, Z, Y, vis, hv, hV, hw, lam_arr, C)]
    Uc = c[0] if U is X else np.require(U, requirements=["C", "W"])
    single = all(dd.single_query for dd in datasets)
    return Problem(
        c[0], Uc, c[1], c[2], c[3], head_id, c[4], c[5], c[6], c[7], c[8], single,
        ATTENTION_IDS[attention],
    )  # fmt: skip


_STACKED = ("X", "Y", "Z", "v", "query", "mask", "values", "scores")


def unstack(arrays: Mapping[str, Any]) -> list[TokenData]:
    """Datasets from stacked arrays: ``X`` (B, n, T, d); ``Y`` (B, n) or (B, n, K); ``Z``
    (B, n, d) or (B, n, K, d); ``v`` (d_u,) shared or (B, d_u); ``query`` shared; ``mask``
    ``"causal"``, (K, T) shared or (B, n, K, T); ``values`` (B, n, T, d_u); ``scores``
    (B, n, T) or (B, n, K, T)."""
    unknown = sorted(set(arrays) - set(_STACKED))
    if unknown:
        raise ProblemError(
            f"stacked datasets take the keys {', '.join(_STACKED)}; got unknown {unknown}."
        )
    X = check_array(arrays.get("X"), "X", ndim=4, hint="Stacked X has shape (B, n, T, d).")
    B = X.shape[0]
    mask = arrays.get("mask")
    if isinstance(mask, np.ndarray | list | tuple) and np.ndim(mask) not in (2, 4):
        raise ProblemError(
            f"stacked mask must be (K, T), shared by every instance, or (B, n, K, T), one per "
            f"instance; got shape {np.shape(mask)}. A 3-D mask is ambiguous (one (K, T) mask "
            "per instance, or one (n, K, T) mask for all): pass np.broadcast_to(mask, (B, n, "
            "K, T)) for the latter."
        )

    def part(key: str, shared_ndim: int | None, b: int) -> Any:
        value = arrays.get(key)
        if value is None or isinstance(value, (str, int)):
            return value
        value = np.asarray(value)
        if shared_ndim is not None and value.ndim == shared_ndim:
            return value
        if value.ndim == 0 or value.shape[0] != B:
            raise ProblemError(
                f"stacked {key} must have a leading axis of length B = {B}; got {value.shape}."
            )
        return value[b]

    return [
        TokenData(
            X[b],
            Y=part("Y", None, b),
            Z=part("Z", None, b),
            v=part("v", 1, b),
            query=arrays.get("query"),
            mask=part("mask", 2, b),
            values=part("values", None, b),
            scores=part("scores", None, b),
        )
        for b in range(B)
    ]
