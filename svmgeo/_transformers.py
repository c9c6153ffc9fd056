# SPDX-License-Identifier: BSD-3-Clause
r"""Read one head of a Hugging Face ``transformers`` model as svmgeo data and its W.

What svmgeo reads
-----------------
A forward pre-hook on the attention module of block ``layer`` captures, during one forward
pass of ``model(**inputs)`` in evaluation mode (stopped right there):

* the hidden states entering that attention module: GPT-2's and LLaMA's after the block's
  layer norm (``ln_1``, ``input_layernorm``), BERT's the previous block's output (BERT normalizes
  after the sublayer); these are the tokens :math:`x_{it}` (and queries, self-attention);
* the attention mask the model itself passes to that module (causal for GPT-2 and LLaMA, the
  ``attention_mask`` padding, sliding windows): a key is visible where the additive mask is 0,
  or where a bool mask (sdpa's) is True; a 4-D mask is read as the attention broadcasts it
  over (n, 1, T, T) (a 4-D ``attention_mask`` given to the model reaches the attention as it
  is: a padding mask (n, 1, 1, T) hides its keys from every query). A bool mask is read only
  under sdpa attention (torch's ``scaled_dot_product_attention`` reads True as visible); eager
  attention, and any other implementation that adds its mask to the logits, would add 1 where
  it is True and hide no key, so there it is refused, as is an integer mask. Flash and flex
  attention (an implementation whose name holds "flash" or "flex", or registered with
  transformers' flash or flex mask) are refused by name, whatever mask they are handed: their
  kernels apply the causal, sliding-window and padding patterns themselves; so is an
  implementation with no mask registered with transformers (``AttentionMaskInterface``), e.g.
  transformers' own "paged|eager" or one registered with ``AttentionInterface`` only, which
  transformers hands no mask at all, and a model with no implementation set or one that is not
  a registered attention;
* for rotary models the ``(cos, sin)`` position embeddings passed to the module.

Head ``h``'s query and key maps and the model's own scale :math:`s` are read from the weights:
GPT-2's fused ``c_attn`` (a ``Conv1D``, weight of shape ``(E, 3E)``, :math:`y = xA + b`), with
:math:`s = 1/\sqrt{h_d}` when ``scale_attn_weights`` and a further :math:`1/(\ell + 1)` when
``scale_attn_by_inverse_layer_idx``; BERT's ``query``/``key``; LLaMA-style ``q_proj``/``k_proj``
with ``module.scaling`` and grouped-query heads: query head :math:`h` uses key head
:math:`\lfloor h / (H / H_{kv}) \rfloor`. Biases are handled as in :func:`~svmgeo.from_torch`
(a constant coordinate 1 appended to every token when there is a query bias).

Rotary position embeddings
--------------------------
With RoPE the logit of query position :math:`m` over key position :math:`n` is
:math:`s\,(R_m q_m)^\top (R_n k_n) = s\, q_m^\top R_m^\top R_n k_n`: it depends on the
position pair, so no single :math:`W` over the token features exists and ``rope="raise"`` (the
default) refuses, saying so. Two exact readings instead (:math:`R_p` built from the
``(cos, sin)`` the model passes, LLaMA's rotate-half layout):

* ``rope="positions"``: ``W[m, n]`` :math:`= s\,\tilde W_K^\top R_n^\top R_m \tilde W_Q`, shape
  ``(T, T, d, d)``, with :math:`\text{logit}_{i,m,n} = \tilde x_{in}^\top W_{mn}\,\tilde x_{im}`.
  This reproduces the model to round-off (the same positions in every sequence are required).
* ``rope="offsets"``: ``W[T - 1 + delta]`` for the offset :math:`\delta = n - m`, shape
  ``(2T - 1, d, d)``, the theory's :math:`R_m^\top R_n = R_{n-m}`. The model computes its angles
  :math:`p\,\theta_j` in float32, so its rotations depend on the offset only up to float32
  rounding (relative :math:`\approx 10^{-7}` for short sequences); ``offsets`` takes the pair
  :math:`(\max(0,-\delta), \max(0,-\delta)+\delta)` and refuses when the pairs differ by more than
  :math:`10^{-6} T` (custom ``position_ids``).

With RoPE a key bias does not cancel (it is rotated with the key), so any bias appends the
constant coordinate.

transformers and torch are imported only when :func:`from_transformers` is called
(``pip install "svmgeo[transformers]"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np

from ._errors import ProblemError, SolverNotFound
from ._torch import check_bilinear, from_torch
from ._validation import check_query
from .data import TokenData

__all__ = ["from_transformers"]

_WHERE = "from_transformers"


class _Captured(Exception):
    """Raised by the pre-hook to stop the forward pass once the attention inputs are read."""


def _array(x: Any) -> np.ndarray:
    return np.asarray(x.detach().cpu().double().numpy(), dtype=float)


def _blocks(model: Any) -> tuple[str, Any]:
    """The family ("gpt2", "bert" or "llama") and the list of transformer blocks."""
    base = getattr(model, "base_model", model)
    if hasattr(base, "h"):
        return "gpt2", base.h
    encoder = getattr(base, "encoder", None)
    if encoder is not None and hasattr(encoder, "layer"):
        return "bert", encoder.layer
    if hasattr(base, "layers"):
        return "llama", base.layers
    raise ProblemError(
        f"{_WHERE}: model must be a Hugging Face GPT-2, BERT or LLaMA-style model (blocks in "
        f"base_model.h, base_model.encoder.layer or base_model.layers); got "
        f"{type(model).__name__}. Read other attention modules with sg.from_torch."
    )


def _check_index(value: Any, name: str, size: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ProblemError(f"{_WHERE}: {name} must be an int; got {type(value).__name__}.")
    if not 0 <= int(value) < size:
        raise ProblemError(f"{_WHERE}: {name} must be in 0..{size - 1} ({what}); got {value}.")
    return int(value)


def _head_maps(
    family: str, attn: Any, config: Any, layer: int, head: Any
) -> tuple[np.ndarray, np.ndarray, Any, Any, float]:
    """(W_q, W_k, b_q, b_k, scale) of query head ``head``: W_q, W_k of shape (h_d, E)."""
    if family == "gpt2":
        c_attn = getattr(attn, "c_attn", None)
        if c_attn is None or getattr(attn, "is_cross_attention", False):
            raise ProblemError(
                f"{_WHERE}: block {layer} has no GPT-2 self-attention with a fused c_attn; got "
                f"{type(attn).__name__}."
            )
        H, hd, E = attn.num_heads, attn.head_dim, attn.embed_dim
        h = _check_index(head, "head", H, f"the model has {H} heads")
        A = _array(c_attn.weight)  # Conv1D: (E, 3E), y = x A + b
        if A.shape != (E, 3 * E):  # e.g. GPTBigCode: an nn.Linear, multi-query keys
            raise ProblemError(
                f"{_WHERE}: block {layer}'s c_attn has weights of shape {A.shape}, not GPT-2's "
                f"fused (E, 3E) = ({E}, {3 * E}); read this attention with sg.from_torch."
            )
        b = _array(c_attn.bias)
        q, k = slice(h * hd, (h + 1) * hd), slice(E + h * hd, E + (h + 1) * hd)
        s = 1.0
        if attn.scale_attn_weights:
            s /= float(np.sqrt(hd))
        if attn.scale_attn_by_inverse_layer_idx:
            s /= float(layer + 1)
        return A[:, q].T, A[:, k].T, b[q], b[k], s
    if family == "bert":
        self_attn = attn
        query, key = getattr(self_attn, "query", None), getattr(self_attn, "key", None)
        if query is None or key is None:
            raise ProblemError(
                f"{_WHERE}: block {layer} has no BERT self-attention (attention.self.query/key)."
            )
        kind = getattr(config, "position_embedding_type", "absolute")
        if kind not in (None, "absolute"):
            raise ProblemError(
                f"{_WHERE}: position_embedding_type={kind!r} adds a term that depends on the "
                "position pair to every logit, so no single W exists; only 'absolute' is read."
            )
        H, hd = self_attn.num_attention_heads, self_attn.attention_head_size
        h = _check_index(head, "head", H, f"the model has {H} heads")
        rows = slice(h * hd, (h + 1) * hd)
        bq = None if query.bias is None else _array(query.bias)[rows]
        bk = None if key.bias is None else _array(key.bias)[rows]
        Wq, Wk = _array(query.weight)[rows], _array(key.weight)[rows]
        return Wq, Wk, bq, bk, float(self_attn.scaling)
    q_proj, k_proj = getattr(attn, "q_proj", None), getattr(attn, "k_proj", None)
    if q_proj is None or k_proj is None:
        raise ProblemError(
            f"{_WHERE}: block {layer} has no LLaMA-style self_attn.q_proj/k_proj; got "
            f"{type(attn).__name__}."
        )
    check_bilinear(attn, config, _WHERE)
    H, H_kv = config.num_attention_heads, config.num_key_value_heads
    hd = attn.head_dim
    h = _check_index(head, "head", H, f"the model has {H} query heads")
    g = h // (H // H_kv)  # grouped-query attention: the key head this query head reads
    q, k = slice(h * hd, (h + 1) * hd), slice(g * hd, (g + 1) * hd)
    bq = None if q_proj.bias is None else _array(q_proj.bias)[q]
    bk = None if k_proj.bias is None else _array(k_proj.bias)[k]
    return _array(q_proj.weight)[q], _array(k_proj.weight)[k], bq, bk, float(attn.scaling)


def _attention_module(family: str, block: Any) -> Any:
    if family == "gpt2":
        return getattr(block, "attn", block)
    if family == "bert":
        return getattr(getattr(block, "attention", None), "self", block)
    return getattr(block, "self_attn", block)


def _capture(model: Any, module: Any, inputs: Any) -> dict[str, Any]:
    """Hidden states, mask and position embeddings entering ``module`` in ``model(**inputs)``."""
    import torch

    seen: dict[str, Any] = {}

    def hook(_: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        seen["hidden"] = args[0] if args else kwargs["hidden_states"]
        seen["mask"] = kwargs.get("attention_mask")
        seen["rope"] = kwargs.get("position_embeddings")
        raise _Captured

    if isinstance(inputs, Mapping):
        call = dict(inputs)
    elif hasattr(inputs, "dim") and inputs.dim() == 2:
        call = {"input_ids": inputs}
    else:
        raise ProblemError(
            f"{_WHERE}: inputs must be a mapping of model inputs (input_ids, attention_mask, "
            f"...; a tokenizer's output) or an input_ids tensor of shape (n, T); got "
            f"{type(inputs).__name__}."
        )
    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    training = model.training
    model.eval()  # no dropout in the hidden states read
    try:
        with torch.no_grad():
            model(**call)
    except _Captured:
        pass
    except (TypeError, ValueError, IndexError, RuntimeError) as exc:  # the model's own check
        raise ProblemError(
            f"{_WHERE}: the model refused inputs before the attention ({type(exc).__name__}: "
            f"{exc}); pass its input_ids (ids below its vocab_size) or a tokenizer's output."
        ) from exc
    finally:
        handle.remove()
        model.train(training)
    if "hidden" not in seen:
        raise ProblemError(f"{_WHERE}: the forward pass never reached the attention module.")
    return seen


def _check_implementation(implementation: Any) -> None:
    """Refuse an attention whose mask does not say which keys each query sees.

    No implementation set (None), and a name that is not a registered attention (neither
    ``"eager"`` nor a name in ``AttentionInterface``; the model raises KeyError). Flash and
    flex attention, by name or by the mask transformers makes for them: their kernels apply the
    causal, sliding-window and padding patterns themselves and are handed a 2-D padding mask, a
    BlockMask, or None when no token is padded (which would read as a plain causal mask,
    whatever window the kernel applies). And an implementation with no mask registered
    (``AttentionMaskInterface``), e.g. transformers' own ``"paged|eager"`` or one registered
    with ``AttentionInterface`` only: transformers hands it no mask at all (None, whatever
    ``attention_mask`` the model was given; ``masking_utils._preprocess_mask_arguments``), so
    the patterns are its own too.
    """
    from transformers import masking_utils, modeling_utils

    switch = "model.set_attn_implementation('sdpa') first (or 'eager')"
    if implementation is None:
        raise ProblemError(
            f"{_WHERE}: the model has no attention implementation set "
            "(config._attn_implementation is None), and transformers hands its attention no "
            f"mask, whatever attention_mask the model was given. Call {switch}."
        )
    # transformers' own lookup (AttentionInterface.get_interface): "eager" is built in, and a
    # "paged|" prefix other than "paged|eager"'s is dropped (deprecated) before the lookup
    name = implementation
    if isinstance(name, str) and name.startswith("paged|") and name != "paged|eager":
        name = name.removeprefix("paged|")
    if not isinstance(name, str) or not (
        name == "eager" or name in modeling_utils.ALL_ATTENTION_FUNCTIONS
    ):
        raise ProblemError(
            f"{_WHERE}: the model runs attn_implementation={implementation!r}, which is not a "
            "registered attention implementation (neither 'eager' nor a name registered with "
            "transformers.AttentionInterface; the model itself raises KeyError). "
            f"Call {switch}, or register your attention with "
            "transformers.AttentionInterface.register and the mask it applies with "
            "transformers.AttentionMaskInterface.register."
        )
    registry = masking_utils.ALL_MASK_ATTENTION_FUNCTIONS
    # the mask the model makes: the instance's own (local) mapping first, as transformers' lookup
    maker = registry.get(implementation)
    # looked up by name: a transformers that renames them still refuses by the name test below
    kernel_masks = [
        f
        for f in (
            getattr(masking_utils, k, None) for k in ("flash_attention_mask", "flex_attention_mask")
        )
        if f is not None
    ]
    lowered = implementation.lower()
    if "flash" in lowered or "flex" in lowered or any(maker is f for f in kernel_masks):
        raise ProblemError(
            f"{_WHERE}: the model runs attn_implementation={implementation!r}, flash or flex "
            "attention: its kernel applies the causal, sliding-window and padding patterns "
            "itself and is handed a 2-D padding mask, a BlockMask or nothing, none of which says "
            f"which keys each query sees. Read the model with its sdpa attention: call {switch}."
        )
    # but whether a mask is made at all is decided by the class-wide mapping (registered with
    # AttentionMaskInterface.register): transformers hands no mask where the name is absent
    if implementation not in getattr(registry, "_global_mapping", registry):
        raise ProblemError(
            f"{_WHERE}: the model runs attn_implementation={implementation!r}, which has no "
            "attention mask registered with transformers (transformers.AttentionMaskInterface):"
            " transformers hands such an attention no mask, whatever attention_mask the model "
            "was given, and leaves the causal and padding patterns to it, so nothing says which "
            f"keys each query sees. Call {switch}, or register the mask your attention applies, "
            f"e.g. transformers.AttentionMaskInterface.register({implementation!r}, "
            "transformers.masking_utils.eager_mask) for eager's additive mask."
        )


def _visible(mask: Any, n: int, T: int, is_causal: bool, implementation: Any = None) -> np.ndarray:
    """svmgeo's visibility (n, T, T) from the mask the model passed to the attention.

    A 4-D mask is read as the attention broadcasts it over (n, 1, T, T): shape (n or 1, 1,
    T or 1, T). transformers builds (n, 1, T, T) masks for its eager and sdpa attention, and
    hands a 4-D ``attention_mask`` given to the model on as it is, e.g. a padding mask
    (n, 1, 1, T) that hides the same keys from every query. ``implementation`` is the model's
    ``config._attn_implementation`` (flash and flex refused before): a bool mask is read only
    under ``"sdpa"``; every other implementation is taken to add its mask to the logits.
    """
    import torch

    if mask is None:
        causal = np.tril(np.ones((T, T), dtype=bool))
        return np.broadcast_to(causal if is_causal else np.ones((T, T), dtype=bool), (n, T, T))
    switch = (
        "Read the model with its eager or sdpa attention: call "
        "model.set_attn_implementation('sdpa') (or 'eager') first."
    )
    if not isinstance(mask, torch.Tensor):  # e.g. a BlockMask, of an unknown implementation
        raise ProblemError(
            f"{_WHERE}: the model passed its attention a {type(mask).__name__}, not a tensor "
            f"mask (attn_implementation={implementation!r}); svmgeo reads the tensor masks "
            f"of the eager and sdpa attention. {switch}"
        )
    m = mask.detach().cpu()
    shape = tuple(m.shape)
    if m.dim() == 2:
        raise ProblemError(
            f"{_WHERE}: the model's attention (attn_implementation={implementation!r}) was "
            f"passed a 2-D mask of shape {shape}: a padding mask, which leaves the causal and "
            "sliding-window patterns to the attention itself, so it does not say which keys "
            f"each query sees. {switch}"
        )
    fits = m.dim() == 4 and shape[0] in (1, n) and shape[1] == 1
    if not (fits and shape[2] in (1, T) and shape[3] == T):
        raise ProblemError(
            f"{_WHERE}: the model passed its attention a mask of shape {shape}; expected "
            f"(n, 1, T, T) = ({n}, 1, {T}, {T}) or a shape that broadcasts to it over the "
            f"sequences and the queries, ({n} or 1, 1, {T} or 1, {T}) (a padding mask "
            f"(n, 1, 1, T) hides the same keys from every query)."
        )
    fix = (
        "Pass a float mask of 0 (visible) and -inf or torch.finfo(dtype).min (hidden), or a "
        "bool mask (True = visible) under sdpa attention (model.set_attn_implementation('sdpa'))."
    )
    if m.dtype == torch.bool:
        if implementation != "sdpa":
            raise ProblemError(
                f"{_WHERE}: the model passed its attention (attn_implementation="
                f"{implementation!r}) a bool mask; svmgeo reads bool masks under sdpa "
                "attention only (True = visible). Eager attention, and other implementations "
                "that add their mask to the logits, add 1 where it is True and hide no key, so "
                f"no visibility mask reproduces it. {fix}"
            )
        vis = m[:, 0].numpy()
    elif not m.is_floating_point():
        raise ProblemError(
            f"{_WHERE}: the model passed its attention (attn_implementation={implementation!r}) "
            f"a mask of dtype {m.dtype}; an attention that adds its mask to the logits adds "
            f"these integers (1 hides no key), so svmgeo reads float and bool masks only. {fix}"
        )
    else:
        a = m[:, 0].double().numpy()
        vis = a == 0
        # a blocked key: -inf, or the dtype's most negative number, which transformers' eager
        # masks use (-65504 in float16: below -1e30 only in float32 and wider types)
        blocked = (a <= float(torch.finfo(m.dtype).min)) | (a < -1e30)
        if not np.all(vis | blocked):
            raise ProblemError(
                f"{_WHERE}: the model's attention mask adds finite biases to the logits (values "
                "other than 0 and -inf); they depend on the position pair, so no W reproduces "
                "them."
            )
    return np.broadcast_to(vis, (n, T, T)).copy()


def _rotations(rope: Any, hd: int) -> np.ndarray:
    """Matrices M of shape (n', T, h_d, h_d) with rotated q = M q (LLaMA's rotate-half RoPE)."""
    cos, sin = (_array(x) for x in rope)
    if cos.shape[-1] != hd:
        raise ProblemError(
            f"{_WHERE}: rotary embeddings of width {cos.shape[-1]} on heads of width {hd} "
            "(partial rotary) are not read; only LLaMA's full rotate-half RoPE is."
        )
    half = hd // 2
    P = np.zeros((hd, hd))  # rotate_half(q) = P q = (-q2, q1)
    P[:half, half:] = -np.eye(half)
    P[half:, :half] = np.eye(half)
    eye = np.eye(hd)
    return cos[..., :, None] * eye + sin[..., :, None] * P


def _check_rotate_half(attn: Any, rope: Any, M: np.ndarray) -> None:
    """That the model's own ``apply_rotary_pos_emb`` (of the attention's module) rotates as
    ``M`` does, LLaMA's rotate-half layout, on a probe; else a ProblemError (other layouts, e.g.
    Cohere's interleaved pairs, would give a wrong W)."""
    import sys

    import torch

    apply = getattr(sys.modules.get(type(attn).__module__), "apply_rotary_pos_emb", None)
    if apply is None:
        raise ProblemError(
            f"{_WHERE}: cannot check the rotary layout of {type(attn).__name__} (its module has "
            "no apply_rotary_pos_emb); only LLaMA's rotate-half RoPE is read."
        )
    cos, sin = (torch.as_tensor(_array(x)) for x in rope)
    probe = torch.as_tensor(np.random.default_rng(0).standard_normal(M.shape[:3]))
    try:
        rotated = apply(probe[:, None], probe[:, None], cos, sin)[0][:, 0]
    except Exception as exc:  # a signature or shape this reading does not know
        raise ProblemError(
            f"{_WHERE}: cannot check the rotary layout of {type(attn).__name__} ({exc}); only "
            "LLaMA's rotate-half RoPE is read."
        ) from None
    mine = np.einsum("ntab,ntb->nta", M, probe.numpy())
    gap = float(np.max(np.abs(rotated.double().numpy() - mine), initial=0.0))
    if not gap <= 1e-9 * max(1.0, float(np.abs(mine).max(initial=0.0))):
        raise ProblemError(
            f"{_WHERE}: {type(attn).__name__} rotates its queries and keys in another layout "
            "than LLaMA's rotate-half RoPE (e.g. interleaved pairs); only that one is read."
        )


def _pair_products(M: np.ndarray) -> np.ndarray:
    """B[m, n] = M_n^T M_m for query position m and key position n (one set of positions)."""
    if M.shape[0] > 1 and np.any(M != M[:1]):
        raise ProblemError(
            f"{_WHERE}: the sequences have different rotary positions (per-sequence "
            "position_ids); the rotary readings need the same positions in every sequence."
        )
    return np.einsum("nab,mac->mnbc", M[0], M[0])


def _offset_products(B: np.ndarray) -> np.ndarray:
    """B_delta = M_(m+delta)^T M_m, checked to depend on the offset delta only.

    The model computes its rotation angles in float32, so pairs at one offset agree only to
    float32 rounding of the angles (about ``T`` times the float32 epsilon); more is refused.
    """
    T = B.shape[0]
    out = np.empty((2 * T - 1, *B.shape[2:]))
    tol = 1e-6 * T * max(1.0, float(np.abs(B).max()))
    for delta in range(-(T - 1), T):
        m = np.arange(max(0, -delta), min(T, T - delta))
        pairs = B[m, m + delta]
        out[T - 1 + delta] = pairs[0]
        if np.abs(pairs - pairs[0]).max() > tol:
            raise ProblemError(
                f"{_WHERE}: the rotary rotations do not depend on the position offset alone "
                "(custom position_ids); rope='offsets' needs the default positions 0..T-1. "
                "rope='positions' reads them exactly."
            )
    return out


def _augment(W: np.ndarray, b: Any) -> np.ndarray:
    """[W, b]: the map of a token with a constant coordinate 1 appended."""
    col = np.zeros(W.shape[0]) if b is None else b
    return np.concatenate([W, col[:, None]], axis=1)


def from_transformers(
    model: Any,
    inputs: Any,
    *,
    layer: int,
    head: int,
    query: int | Literal["all"] = "all",
    rope: Literal["raise", "offsets", "positions"] = "raise",
    **data_kwargs: Any,
) -> tuple[TokenData, np.ndarray]:
    r"""Tokens, mask and :math:`W = s\,W_K^\top W_Q` of one head of a Hugging Face model.

    .. math::

        \mathrm{softmax}_t\big(s\,(W_K x_{it} + b_K)^\top (W_Q x_{ik} + b_Q)\big)
        = \mathrm{softmax}_t\big(\tilde x_{it}^\top W \tilde x_{ik}\big),

    where :math:`x_{it}` are the hidden states entering the attention of block ``layer`` and
    :math:`s` the model's own scale (see the module notes for what is read, and for rotary
    position embeddings).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A GPT-2 (``GPT2Model``, ``GPT2LMHeadModel``, ...), BERT or LLaMA-style model.
    inputs : mapping or tensor
        What ``model(**inputs)`` takes (a tokenizer's output: ``input_ids``,
        ``attention_mask``, ...), or an ``input_ids`` tensor of shape (n, T).
    layer : int
        The block (0-based).
    head : int
        The (query) head of that block.
    query : int or "all", default "all"
        Every token is a query (:math:`K = T`), or only token ``query`` of each sequence: an
        int in ``[-T, T - 1]``, negative positions counting from the end as Python's indexing
        (``-1`` is the last token, padding included); stored as ``query % T``, as
        :func:`~svmgeo.from_torch` reads it.
    rope : {"raise", "offsets", "positions"}, default "raise"
        For models with rotary position embeddings: refuse (no single W exists), or return
        one W per position offset or per position pair (module notes). Models without
        rotary embeddings always give one W of shape (d, d).
    **data_kwargs
        Passed to :class:`~svmgeo.TokenData` (``Y``, ``v``, ``scores``, ...).

    Returns
    -------
    data : TokenData
        Tokens of shape (n, T, d) with ``d = E`` (no bias) or ``E + 1``; the mask the model
        applies (causal, padding).
    W : ndarray of shape (d, d); (2T - 1, d, d) with ``rope="offsets"``, (T, T, d, d) with
        ``rope="positions"`` (rotary models only)

    Raises
    ------
    SolverNotFound
        torch or transformers is not installed.
    ProblemError
        An unsupported model or head, a rotary model with ``rope="raise"``, a mask that hides
        every key from a query (left padding with a causal mask: pad on the right), flash or
        flex attention, an attention implementation with no mask registered with
        transformers (e.g. "paged|eager"), none set, or one not registered (read the model
        after ``model.set_attn_implementation("sdpa")``), a mask that is not read (a bool mask
        under any attention but sdpa, an integer mask, a 2-D mask, a shape that does not
        broadcast to (n, 1, T, T)).

    Examples
    --------
    >>> import torch, transformers, svmgeo as sg  # doctest: +SKIP
    >>> config = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=8)  # doctest: +SKIP
    >>> model = transformers.GPT2Model(config)  # doctest: +SKIP
    >>> ids = torch.tensor([[1, 2, 3]])  # doctest: +SKIP
    >>> data, W = sg.from_transformers(model, ids, layer=0, head=1)  # doctest: +SKIP
    >>> data.T, W.shape  # doctest: +SKIP
    (3, (8, 8))
    """
    taken = sorted(set(data_kwargs) & {"mask", "Z", "attn_mask"})
    if taken:
        raise ProblemError(
            f"{_WHERE} reads the query tokens and the mask from the model (its self-attention "
            f"and the mask it passes); got {', '.join(taken)}. Drop them (pad with the model's "
            "attention_mask input instead)."
        )
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise SolverNotFound(
            f"{_WHERE} needs torch and transformers, which are not both installed: "
            'pip install "svmgeo[transformers]".'
        ) from exc
    if rope not in ("raise", "offsets", "positions"):
        raise ProblemError(
            f"{_WHERE}: rope must be 'raise', 'offsets' or 'positions'; got {rope!r}."
        )
    family, blocks = _blocks(model)
    layer = _check_index(layer, "layer", len(blocks), f"the model has {len(blocks)} blocks")
    config = getattr(model, "config", None)
    attn = _attention_module(family, blocks[layer])
    try:
        Wq, Wk, bq, bk, s = _head_maps(family, attn, config, layer, head)
    except AttributeError as exc:  # a look-alike of the family's layout (RoFormer, GPTBigCode)
        raise ProblemError(
            f"{_WHERE}: {type(attn).__name__} has the layout of a {family} block but not its "
            f"attention ({exc}); this architecture is not read. Read its attention with "
            "sg.from_torch."
        ) from None
    implementation = getattr(config, "_attn_implementation", None)
    _check_implementation(implementation)
    seen = _capture(model, attn, inputs)
    X = _array(seen["hidden"])
    n, T, _ = X.shape
    visible = _visible(seen["mask"], n, T, bool(getattr(attn, "is_causal", False)), implementation)
    query = check_query(query, T, _WHERE)
    if query != "all":
        visible = visible[:, query : query + 1]
    blind = np.argwhere(~visible.any(axis=2))
    if blind.size:
        i, k = blind[0]
        position = k if query == "all" else query  # the token's position, not its row
        raise ProblemError(
            f"{_WHERE}: query {position} of sequence {i} sees no key under the model's mask (left "
            "padding with a causal mask). Pad on the right (tokenizer.padding_side='right') or "
            "pass query= a position every sequence fills."
        )
    if not getattr(attn, "use_rope", True):
        seen["rope"] = None  # a NoPE layer: handed the position embeddings, it does not apply them
    if seen["rope"] is None:
        module = torch.nn.Module()
        module.q_proj = _linear(torch, Wq, bq)
        module.k_proj = _linear(torch, Wk, bk)
        try:
            return from_torch(module, X, query=query, attn_mask=~visible, scale=s, **data_kwargs)
        except ProblemError as exc:  # name the function the user called
            raise ProblemError(str(exc).replace("from_torch:", f"{_WHERE}:", 1)) from None
    if rope == "raise":
        raise ProblemError(
            f"{_WHERE}: this model applies rotary position embeddings: the logit of query "
            "position m over key position n is s q_m^T R_(n-m) k_n, which depends on the "
            "position pair, so no single W over the token features reproduces it. Pass "
            "rope='offsets' for one W per offset n - m, or rope='positions' for one W per "
            "position pair (m, n)."
        )
    M = _rotations(seen["rope"], Wq.shape[0])
    _check_rotate_half(attn, seen["rope"], M)
    B = _pair_products(M)
    if rope == "offsets":
        B = _offset_products(B)
    if bq is not None or bk is not None:
        Wq, Wk = _augment(Wq, bq), _augment(Wk, bk)
        X = np.concatenate([X, np.ones((n, T, 1))], axis=2)
    Ws = s * np.einsum("ha,...hg,gb->...ab", Wk, B, Wq)
    data = TokenData(X, query=query, mask=visible, **data_kwargs)
    return data, Ws


def _linear(torch: Any, W: np.ndarray, b: Any) -> Any:
    """A torch.nn.Linear computing ``W x + b`` (float64), for :func:`from_torch`."""
    lin = torch.nn.Linear(W.shape[1], W.shape[0], bias=b is not None).double()
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(W))
        if b is not None:
            lin.bias.copy_(torch.from_numpy(b))
    return lin
