# SPDX-License-Identifier: BSD-3-Clause
r"""Read a trained PyTorch attention layer as svmgeo data and its key-query product.

A head with query and key maps :math:`q = W_q z + b_q`, :math:`k = W_k x + b_k` and scale
:math:`s` computes logits

.. math::

    s\,(W_k x_t + b_k)^\top (W_q z + b_q)
    = x_t^\top \underbrace{s W_k^\top W_q}_{W} z + s\, x_t^\top W_k^\top b_q + c(z),

where :math:`c(z)` does not depend on the key and cancels in the softmax. Without biases the
layer is exactly svmgeo's :math:`x_t^\top W z`. With a query bias the key-dependent term
:math:`s\,x_t^\top W_k^\top b_q` is represented exactly by appending a constant coordinate 1 to
every token and query (``d = E + 1``) and the column :math:`s W_k^\top b_q` (and, for fidelity of
the logits, the row :math:`s\, b_k^\top W_q` and corner :math:`s\, b_k^\top b_q`) to :math:`W`.
torch is imported only when this function is called (``pip install "svmgeo[torch]"``).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from ._errors import ProblemError, SolverNotFound
from .data import TokenData

__all__ = ["from_torch"]


def _numpy(x: Any, name: str) -> np.ndarray:
    try:
        arr = x.detach().cpu().double().numpy() if hasattr(x, "detach") else np.asarray(x)
    except Exception as exc:  # a foreign object: say what came
        raise ProblemError(
            f"from_torch: {name} must be a tensor or array; got {type(x).__name__}."
        ) from exc
    return np.asarray(arr, dtype=float)


def _head_maps(module: Any, head: int | None) -> tuple[np.ndarray, np.ndarray, Any, Any, float]:
    """(W_q, W_k, b_q, b_k, scale) of one head: W_q, W_k of shape (h, E)."""
    import torch

    if isinstance(module, torch.nn.MultiheadAttention):
        if not module._qkv_same_embed_dim or module.bias_k is not None:
            raise ProblemError(
                "from_torch: MultiheadAttention with kdim/vdim != embed_dim or add_bias_kv=True "
                "is not supported (keys must be the same tokens as the queries' space)."
            )
        H, E = module.num_heads, module.embed_dim
        if head is None:
            if H > 1:
                raise ProblemError(
                    f"from_torch: the module has num_heads={H}; pass head=0..{H - 1} "
                    "(each head has its own W = W_K W_Q^T)."
                )
            head = 0
        if not 0 <= head < H:
            raise ProblemError(f"from_torch: head must be in 0..{H - 1}; got {head}.")
        hd = E // H
        w = _numpy(module.in_proj_weight, "in_proj_weight")
        rows = slice(head * hd, (head + 1) * hd)
        Wq, Wk = w[:E][rows], w[E : 2 * E][rows]
        bq = bk = None
        if module.in_proj_bias is not None:
            b = _numpy(module.in_proj_bias, "in_proj_bias")
            bq, bk = b[:E][rows], b[E : 2 * E][rows]
        return Wq, Wk, bq, bk, 1.0 / np.sqrt(hd)
    q, k = getattr(module, "q_proj", None), getattr(module, "k_proj", None)
    if isinstance(q, torch.nn.Linear) and isinstance(k, torch.nn.Linear):
        if head is not None:
            raise ProblemError(
                "from_torch: head= applies to torch.nn.MultiheadAttention; a module with "
                "q_proj/k_proj is read as one head (slice its weights for more)."
            )
        Wq, Wk = _numpy(q.weight, "q_proj.weight"), _numpy(k.weight, "k_proj.weight")
        if Wq.shape != Wk.shape:
            raise ProblemError(
                f"from_torch: q_proj and k_proj must map to the same width; got {Wq.shape} "
                f"and {Wk.shape}."
            )
        bq = None if q.bias is None else _numpy(q.bias, "q_proj.bias")
        bk = None if k.bias is None else _numpy(k.bias, "k_proj.bias")
        return Wq, Wk, bq, bk, 1.0 / np.sqrt(Wq.shape[0])
    raise ProblemError(
        "from_torch: module must be a torch.nn.MultiheadAttention or have torch.nn.Linear "
        f"attributes q_proj and k_proj; got {type(module).__name__}."
    )


def from_torch(
    module: Any,
    inputs: Any,
    *,
    queries: Any = None,
    query: int | Literal["all"] | None = None,
    attn_mask: Any = None,
    head: int | None = None,
    scale: float | None = None,
    **data_kwargs: Any,
) -> tuple[TokenData, np.ndarray]:
    r"""Tokens, queries, mask and :math:`W = s\,W_K^\top W_Q` of one attention head.

    .. math::

        \mathrm{softmax}_t\big(s\,(W_k x_{it} + b_k)^\top (W_q z_{ik} + b_q)\big)
        = \mathrm{softmax}_t\big(\tilde x_{it}^\top W \tilde z_{ik}\big)

    (:math:`\tilde x = x`, :math:`\tilde z = z` without a query bias; with one, a constant
    coordinate 1 is appended to both, see the module notes).

    Parameters
    ----------
    module : torch.nn.MultiheadAttention or torch.nn.Module
        A MultiheadAttention (``in_proj_weight``; one head at a time) or a module with
        ``q_proj`` and ``k_proj`` linear layers.
    inputs : tensor or array of shape (n, T, E)
        The key tokens of every sequence (batch first).
    queries : tensor or array of shape (n, E) or (n, K, E), optional
        Given queries (cross-attention). Exclusive with ``query``.
    query : int or "all", optional
        Self-attention: token ``query`` of each sequence is the query, or every token.
        Default: ``"all"`` when ``queries`` is None.
    attn_mask : bool tensor/array, optional
        PyTorch's convention: True marks a key the query may NOT attend to; shape (K, T) or
        (n, K, T). Converted to svmgeo's visibility mask (True = visible).
    head : int, optional
        Which head of a MultiheadAttention (required when it has several).
    scale : float, optional
        The logit scale :math:`s`; default :math:`1/\sqrt{h}` with :math:`h` the head width
        (PyTorch's scaled dot product).
    **data_kwargs
        Passed to :class:`~svmgeo.TokenData` (``Y``, ``v``, ``scores``, ...).

    Returns
    -------
    data : TokenData
    W : ndarray of shape (d, d)
        With ``d = E`` (no query bias) or ``E + 1``.

    Raises
    ------
    SolverNotFound
        torch is not installed.
    ProblemError
        An unsupported module or inconsistent shapes.
    """
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        raise SolverNotFound(
            'from_torch needs PyTorch, which is not installed: pip install "svmgeo[torch]".'
        ) from exc
    Wq, Wk, bq, bk, default_scale = _head_maps(module, head)
    s = default_scale if scale is None else float(scale)
    X = _numpy(inputs, "inputs")
    if X.ndim != 3 or X.shape[2] != Wq.shape[1]:
        raise ProblemError(
            f"from_torch: inputs must have shape (n, T, E) with E = {Wq.shape[1]}; got "
            f"{X.shape}. Pass the batch first."
        )
    if queries is not None and query is not None:
        raise ProblemError("from_torch: give queries (cross-attention) or query (self), not both.")
    W = s * Wk.T @ Wq
    Z = None if queries is None else _numpy(queries, "queries")
    if bq is not None and np.any(bq != 0):
        E = X.shape[2]
        Wt = np.zeros((E + 1, E + 1))
        Wt[:E, :E] = W
        Wt[:E, E] = s * Wk.T @ bq
        Wt[E, :E] = 0.0 if bk is None else s * bk @ Wq
        Wt[E, E] = 0.0 if bk is None else s * float(bk @ bq)
        W = Wt
        X = np.concatenate([X, np.ones((*X.shape[:2], 1))], axis=2)
        if Z is not None:
            Z = np.concatenate([Z, np.ones((*Z.shape[:-1], 1))], axis=-1)
    mask = None
    if attn_mask is not None:
        mask = ~np.asarray(_numpy(attn_mask, "attn_mask"), dtype=bool)
    if Z is not None:
        data = TokenData(X, Z=Z, mask=mask, **data_kwargs)
    else:
        data = TokenData(X, query="all" if query is None else query, mask=mask, **data_kwargs)
    return data, W
