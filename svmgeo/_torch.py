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

PyTorch *adds* a float ``attn_mask`` to the logits. svmgeo's model,
:math:`\mathrm{softmax}(x_t^\top W z)` over the visible keys, has no fixed additive bias: a
bias could only enter as extra coordinates of the tokens and queries, which would make it a
trainable block of :math:`W` and change every SVM. So a float mask must hold only 0 (visible)
and :math:`-\infty` (hidden), read as a boolean mask; finite nonzero biases are refused.

A ``MultiheadAttention`` built with ``batch_first=False`` (PyTorch's default) takes tensors of
shape (seq, batch, embed); svmgeo's are (batch, seq, embed). A 3-D tensor of shape (a, b, E)
reads either way (a sequences of b tokens, or b sequences of a tokens: no shape check fails when
a = b, or when no mask or queries pin the sizes), so for such a module ``from_torch`` asks which
layout its tensors are in (``batch_first=``) rather than guess, and transposes them when told.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from ._errors import ProblemError, SolverNotFound
from ._validation import check_array, check_bool, check_query, check_real
from .data import TokenData

__all__ = ["from_torch"]


def _numpy(x: Any, name: str) -> np.ndarray:
    """A tensor or array as a real float64 array (finite values are not checked here)."""
    try:
        if hasattr(x, "detach"):
            x = x.detach().cpu()
            x = x.resolve_conj().numpy() if x.is_complex() else x.double().numpy()
    except Exception as exc:  # a foreign object: say what came
        raise ProblemError(
            f"from_torch: {name} must be a tensor or array; got {type(x).__name__}."
        ) from exc
    try:
        return check_array(x, name, ndim=(0, 1, 2, 3, 4), finite=False)
    except ProblemError as exc:
        raise ProblemError(f"from_torch: {exc}") from None


def _one_head(head: Any, H: int) -> int:
    """``head`` checked against H heads (None: the only one)."""
    if head is None:
        if H > 1:
            raise ProblemError(
                f"from_torch: the module has num_heads={H}; pass head=0..{H - 1} "
                "(each head has its own W = W_K W_Q^T)."
            )
        return 0
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < H:
        raise ProblemError(f"from_torch: head must be in 0..{H - 1}; got {head!r}.")
    return int(head)


def _batch_first(module: Any, batch_first: Any, shape: tuple[int, ...]) -> bool:
    """Whether the 3-D tensors given (``inputs`` of ``shape``) are (batch, seq, embed):
    ``batch_first`` when given, else the module's own ``batch_first`` where it is True or
    absent; a module with ``batch_first=False`` and no ``batch_first=`` is refused (both
    readings fit the shapes)."""
    if batch_first is not None:
        return check_bool(batch_first, "batch_first", where="from_torch")
    own = getattr(module, "batch_first", None)
    if own is None or bool(own):
        return True
    a, b = shape[:2]
    readings = (
        f"both of its first axes have length {a}"
        if a == b
        else f"{a} sequences of {b} tokens batch first, or {b} sequences of {a} tokens in the "
        "module's layout"
    )
    raise ProblemError(
        f"from_torch: the module ({type(module).__name__}) has batch_first=False: it takes "
        "tensors of shape (seq, batch, embed), while svmgeo's are (batch, seq, embed). inputs of "
        f"shape {shape} read either way ({readings}), so from_torch does not guess. Pass "
        "batch_first=False if inputs and queries are in the module's layout, (T, n, E) and "
        "(K, n, E), or batch_first=True if they are (n, T, E) and (n, K, E)."
    )


def _forward_parameters(module: Any) -> set[str]:
    """The parameter names of ``module.forward`` (empty where they cannot be read)."""
    import inspect

    try:
        return set(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        return set()


def check_bilinear(attn: Any, config: Any, where: str) -> None:
    """A ProblemError where the attention maps its queries and keys nonlinearly (norms,
    clamping) or caps its logits: then no W reproduces the logits."""
    for name in ("q_norm", "k_norm", "q_layernorm", "k_layernorm"):
        if getattr(attn, name, None) is not None:
            raise ProblemError(
                f"{where}: the attention normalizes queries/keys ({name}), a nonlinear map: "
                "the logit is not bilinear in the tokens, so no W exists."
            )
    if getattr(config, "clip_qkv", None):
        raise ProblemError(
            f"{where}: clip_qkv clamps the queries and keys, a nonlinear map: the logit is "
            "not bilinear in the tokens, so no W exists."
        )
    if getattr(config, "attn_logit_softcapping", None):
        raise ProblemError(
            f"{where}: attn_logit_softcapping applies tanh to the logits; no W reproduces them."
        )


def _head_maps(
    module: Any, head: int | None
) -> tuple[np.ndarray, np.ndarray, Any, Any, float, int]:
    """(W_q, W_k, b_q, b_k, scale, head) of one head: W_q, W_k of shape (h, E)."""
    import torch

    if isinstance(module, torch.nn.MultiheadAttention):
        if not module._qkv_same_embed_dim or module.bias_k is not None or module.add_zero_attn:
            raise ProblemError(
                "from_torch: MultiheadAttention with kdim/vdim != embed_dim, add_bias_kv=True "
                "or add_zero_attn=True is not supported (keys must be the tokens, in the "
                "queries' space, with no added key)."
            )
        H, E = module.num_heads, module.embed_dim
        head = _one_head(head, H)
        hd = E // H
        w = _numpy(module.in_proj_weight, "in_proj_weight")
        rows = slice(head * hd, (head + 1) * hd)
        Wq, Wk = w[:E][rows], w[E : 2 * E][rows]
        bq = bk = None
        if module.in_proj_bias is not None:
            b = _numpy(module.in_proj_bias, "in_proj_bias")
            bq, bk = b[:E][rows], b[E : 2 * E][rows]
        return Wq, Wk, bq, bk, 1.0 / np.sqrt(hd), head
    q, k = getattr(module, "q_proj", None), getattr(module, "k_proj", None)
    if isinstance(q, torch.nn.Linear) and isinstance(k, torch.nn.Linear):
        check_bilinear(module, getattr(module, "config", None), "from_torch")
        if "position_embeddings" in _forward_parameters(module) and getattr(
            module, "use_rope", True
        ):
            raise ProblemError(
                f"from_torch: {type(module).__name__} applies rotary position embeddings (its "
                "forward takes position_embeddings): the logit of query position m over key "
                "position n depends on the pair, so no single W exists, and from_torch reads "
                "no rotation. Read the model with sg.from_transformers(model, inputs, "
                "layer=..., head=..., rope='offsets' or 'positions')."
            )
        Wq, Wk = _numpy(q.weight, "q_proj.weight"), _numpy(k.weight, "k_proj.weight")
        bq = None if q.bias is None else _numpy(q.bias, "q_proj.bias")
        bk = None if k.bias is None else _numpy(k.bias, "k_proj.bias")
        # the heads: num_heads, or, where Hugging Face's modules keep only head_dim and the
        # config (transformers >= 4.48), config.num_attention_heads
        config_heads = getattr(getattr(module, "config", None), "num_attention_heads", None)
        H = int(getattr(module, "num_heads", None) or config_heads or 1)
        hd = int(getattr(module, "head_dim", None) or Wq.shape[0] // H)
        head = _one_head(head, H)
        if H == 1 and hd == Wq.shape[0]:
            if Wq.shape != Wk.shape:
                raise ProblemError(
                    f"from_torch: q_proj and k_proj must map to the same width; got {Wq.shape} "
                    f"and {Wk.shape}."
                )
            rq = rk = slice(None)
        else:
            # several heads in one projection (Hugging Face's layout): rows h*hd..(h+1)*hd,
            # the key rows of the head's group when keys are shared (grouped queries)
            groups = Wk.shape[0] // hd if hd else 0
            if hd * H != Wq.shape[0] or groups * hd != Wk.shape[0] or not groups or H % groups:
                raise ProblemError(
                    f"from_torch: q_proj ({Wq.shape[0]} rows) and k_proj ({Wk.shape[0]} rows) "
                    f"do not split into num_heads={H} heads of width {hd}; slice one head's "
                    "rows yourself and pass a module with those q_proj/k_proj."
                )
            rq = slice(head * hd, (head + 1) * hd)
            kv = head // (H // groups)
            rk = slice(kv * hd, (kv + 1) * hd)
        scale = float(getattr(module, "scaling", None) or 1.0 / np.sqrt(hd))
        return (
            Wq[rq],
            Wk[rk],
            None if bq is None else bq[rq],
            None if bk is None else bk[rk],
            scale,
            head,
        )
    raise ProblemError(
        "from_torch: module must be a torch.nn.MultiheadAttention or have torch.nn.Linear "
        f"attributes q_proj and k_proj; got {type(module).__name__}."
    )


def _hidden_keys(attn_mask: Any, name: str = "attn_mask") -> np.ndarray:
    """PyTorch's ``attn_mask`` (or ``key_padding_mask``, ``name``) as a boolean array, True
    where the key is hidden.

    A bool mask is PyTorch's "True = may not attend"; a float mask is added to the logits, so
    only 0 (visible) and -inf (hidden) have a boolean meaning (module notes); 0/1 integers are
    read as a bool mask.
    """
    if hasattr(attn_mask, "detach"):
        import torch

        if attn_mask.dtype == torch.bool:
            kind, arr = "bool", attn_mask.detach().cpu().numpy()
        else:
            kind = "float" if attn_mask.is_floating_point() else "int"
            arr = _numpy(attn_mask, name)
    else:
        arr = np.asarray(attn_mask)
        if arr.dtype == bool:
            kind = "bool"
        elif np.issubdtype(arr.dtype, np.floating):
            kind = "float"
        elif np.issubdtype(arr.dtype, np.integer):
            kind = "int"
        else:
            raise ProblemError(
                f"from_torch: {name} must be a bool or float tensor/array (PyTorch's "
                f"convention); got dtype {arr.dtype}."
            )
    if kind == "bool":
        return np.asarray(arr, dtype=bool)
    if kind == "int":
        if not np.all((arr == 0) | (arr == 1)):
            raise ProblemError(
                f"from_torch: an integer {name} must hold 0/1 (1 = the key is hidden, as "
                "PyTorch's bool masks); pass a bool mask, or a float mask of 0 and -inf."
            )
        return np.asarray(arr != 0)
    soft = ~((arr == 0) | (arr == -np.inf))
    if np.any(soft):
        where = tuple(int(b) for b in np.argwhere(soft)[0])
        raise ProblemError(
            f"from_torch: {name} is a float mask with the entry {float(arr[where])!r} at "
            f"index {where}. PyTorch adds a float mask to the logits; svmgeo's attention "
            "softmax(x^T W z) has no fixed additive bias (folded into W it would become a "
            "trained part of W and change the SVMs), so only 0 (visible) and -inf (hidden) are "
            "read (a large negative number such as torch.finfo(dtype).min is a bias too). Pass "
            "a bool mask (True = hidden) or a float mask of 0 and -inf."
        )
    return np.asarray(arr == -np.inf)


def _hidden_of_head(
    hidden: np.ndarray,
    n: int,
    T: int,
    K: int,
    H: int,
    head: int,
    query: int | str | None,
    query_given: Any,
    strict: bool = False,
) -> np.ndarray:
    """The keys hidden from each of the ``K`` queries of ``n`` sequences of ``T`` tokens,
    shape (K, T) or (n, K, T), read from ``hidden`` (PyTorch's ``attn_mask`` as
    :func:`_hidden_keys` gives it) for head ``head`` of ``H``.

    ``hidden`` may be (K, T), (n, K, T) or, with ``H`` > 1, MultiheadAttention's per-head
    (n * H, K, T); with an int ``query`` (position ``query``, as passed ``query_given``;
    K = 1) also the full self-attention mask (T, T), (n, T, T) or (n * H, T, T), of which
    row ``query`` is read. Shapes TokenData does not know (per head, full, not 2-D or 3-D) are
    checked here against every accepted one, and every shape when ``strict`` (a
    ``key_padding_mask`` is merged in); TokenData checks the others.
    """
    q = query if isinstance(query, int) else None
    per_query = q is not None
    if per_query or H > 1 or strict or hidden.ndim not in (2, 3):
        shapes = {(K, T): "every sequence's", (n, K, T): "per sequence"}
        if H > 1:
            shapes.setdefault((n * H, K, T), "per sequence and head, MultiheadAttention's layout")
        full: dict[tuple[int, ...], str] = {}
        if per_query:
            full = {(T, T): "every sequence's", (n, T, T): "per sequence"}
            if H > 1:
                full[(n * H, T, T)] = "per sequence and head"
            full = {shape: what for shape, what in full.items() if shape not in shapes}
        if hidden.shape not in shapes and hidden.shape not in full:
            listed = ", ".join(f"{s} ({what})" for s, what in shapes.items())
            if full:
                listed += (
                    f"; or the full self-attention mask, of which query={query_given} reads "
                    f"row {q}: " + ", ".join(f"{s} ({what})" for s, what in full.items())
                )
            # with a key_padding_mask given (strict), no advice to pass one
            there = (
                "hide those keys in the key_padding_mask= given"
                if strict
                else "pass it as key_padding_mask="
            )
            if hidden.ndim == 1:
                keys = (
                    "MultiheadAttention takes no 1-D attn_mask; keys hidden from every query of "
                    f"a sequence are its key_padding_mask, of shape (n, T) = ({n}, {T}) (one "
                    f"row for every sequence: np.broadcast_to(mask, (n, T))): {there}"
                )
            else:
                keys = f"A key_padding_mask (n, T) is no attn_mask: {there}"
            raise ProblemError(
                f"from_torch: attn_mask must have one of the shapes {listed}; got "
                f"{hidden.shape} (n = {n} sequences of T = {T} tokens, K = {K} queries per "
                f"sequence, num_heads = {H}). {keys}."
            )
    per_head = hidden.ndim == 3 and H > 1 and hidden.shape[0] == n * H
    if per_head:  # this head's masks
        hidden = hidden.reshape(n, H, *hidden.shape[1:])[:, head]
    if q is None:
        return hidden
    row = 0
    if hidden.shape[-2] == T:  # the full self-attention mask: query q reads row q
        row = q
        hidden = hidden[..., row : row + 1, :]

    def attn_mask_words(i: int) -> tuple[str, str]:
        if hidden.ndim == 2:
            in_sequence, mask_named = "", "attn_mask"
        else:
            in_sequence = f" of sequence {i}" + (f" in head {head}" if per_head else "")
            mask_named = f"attn_mask[{i * H + head}]" if per_head else f"attn_mask[{i}]"
        return in_sequence, (
            f"row {row} of {mask_named} hides every key. Pass query= a position that sees at "
            "least one key, or a mask whose row for it leaves one visible."
        )

    _refuse_blind(hidden, q, query_given, attn_mask_words)
    return hidden


def _refuse_blind(
    hidden: np.ndarray,
    query: int | str | None,
    query_given: Any,
    words: Callable[[int], tuple[str, str]],
) -> None:
    """A ProblemError for the first query that ``hidden`` (True = hidden, shape (K, T) or
    (n, K, T)) hides every key from, if any: its softmax is over no key.

    The query is named as the user gave it (``query=-1 (position 5)`` for an int ``query``,
    else ``query k``); ``words(i)``, for its sequence ``i`` (0 for a 2-D mask), gives
    ``(in_sequence, cause)``: the words after the query (e.g. " of sequence 1") and those
    after "sees no key: ".
    """
    blind = np.argwhere(hidden.all(axis=-1))
    if not blind.size:
        return
    *sequence, k = (int(x) for x in blind[0])  # sequence: [i], or [] for a 2-D mask
    said = f"query {k}"
    if isinstance(query, int):
        said = f"query={query_given}" + (f" (position {query})" if query_given != query else "")
    in_sequence, cause = words(sequence[0] if sequence else 0)
    raise ProblemError(f"from_torch: {said}{in_sequence} sees no key: {cause}")


def _padding(key_padding_mask: Any, n: int, T: int) -> np.ndarray:
    """MultiheadAttention's ``key_padding_mask`` as the keys hidden in each sequence, (n, T)."""
    hidden = _hidden_keys(key_padding_mask, "key_padding_mask")
    if hidden.shape != (n, T):
        raise ProblemError(
            f"from_torch: key_padding_mask must have shape (n, T) = ({n}, {T}), one row per "
            "sequence (True, or -inf in a float mask, where the key is padding), in either "
            f"batch_first (PyTorch's layout too); got {hidden.shape} (n = {n} sequences of "
            f"T = {T} tokens)."
        )
    return hidden


def from_torch(
    module: Any,
    inputs: Any,
    *,
    queries: Any = None,
    query: int | Literal["all"] | None = None,
    attn_mask: Any = None,
    key_padding_mask: Any = None,
    head: int | None = None,
    scale: float | None = None,
    batch_first: bool | None = None,
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
        ``q_proj`` and ``k_proj`` linear layers: one head, or, with ``num_heads`` > 1 (an
        attribute, else the module's ``config.num_attention_heads``), Hugging Face's layout
        (head h in rows h·hd..(h+1)·hd, ``head_dim`` hd, keys shared by groups of heads when
        ``k_proj`` is narrower). The logit scale is the module's ``scaling`` when it has one
        (one head or several). Refused: a module whose ``forward`` takes
        ``position_embeddings`` (rotary: use :func:`~svmgeo.from_transformers`), query/key
        norms, ``clip_qkv`` and logit soft-capping (no W reproduces their logits).
    inputs : tensor or array of shape (n, T, E), or (T, n, E) with ``batch_first=False``
        The key tokens of every sequence.
    queries : tensor or array, optional
        Given queries (cross-attention): shape (n, E), one per sequence (either layout), or
        ``K`` per sequence, (n, K, E), or (K, n, E) with ``batch_first=False``. Exclusive
        with ``query``.
    query : int or "all", optional
        Self-attention: token ``query`` of each sequence is the query (an int in
        ``[-T, T - 1]``, negative positions counting from the end as Python's indexing:
        ``-1`` is the last token; stored as ``query % T``), or every token.
        Default: ``"all"`` when ``queries`` is None.
    attn_mask : bool or float tensor/array, optional
        PyTorch's convention, shape (K, T), (n, K, T) or MultiheadAttention's per-head
        (n * num_heads, K, T), of which ``head``'s masks are read: a bool mask marks with True a key
        the query may NOT attend to (``MultiheadAttention``'s convention;
        ``torch.nn.functional.scaled_dot_product_attention`` reads True as "may attend": pass
        its mask negated); a float mask is added to the logits and must hold only
        0 and :math:`-\infty` (svmgeo's model has no additive bias: module notes). Converted
        to svmgeo's visibility mask (True = visible). With ``query=q`` (an int), ``K`` is 1,
        or the module's own self-attention mask, (T, T), (n, T, T) or (n * num_heads, T, T),
        of which only row ``q`` is read: the keys query ``q`` sees. A ``key_padding_mask``
        (n, T) is not an ``attn_mask``: pass it as ``key_padding_mask=``. An (n, T) array
        given as ``attn_mask`` is read as the (T, T) mask when ``n == T``, or the (K, T)
        mask when ``n == K``, shared by every sequence (the shapes cannot be told apart),
        and refused otherwise; so is any shape not listed here, a 1-D one included
        (MultiheadAttention takes none).
    key_padding_mask : bool or float tensor/array of shape (n, T), optional
        MultiheadAttention's ``key_padding_mask``, its convention: True (bool) or
        :math:`-\infty` (float) where token ``t`` of sequence ``i`` is padding, hidden from
        every query of that sequence; one row per sequence in either ``batch_first``
        (PyTorch's layout too). Merged with ``attn_mask`` as MultiheadAttention merges them,
        by adding the two as float masks: a key is hidden where either hides it, in every
        head. A float mask must hold only 0 and :math:`-\infty`, as ``attn_mask``. Read for
        any module (the keys hidden in each sequence).
    head : int, optional
        Which head (required when the module has several).
    scale : float, optional
        The logit scale :math:`s`, finite and > 0; default the module's ``scaling``, else
        :math:`1/\sqrt{h}` with :math:`h` the head width (PyTorch's scaled dot product).
    batch_first : bool, optional
        The layout of ``inputs`` and 3-D ``queries``: True for (batch, seq, embed), False for
        (seq, batch, embed) (transposed here). Default: the module's own ``batch_first``
        when it is True or the module has none (Hugging Face's modules: batch first); a
        module with ``batch_first=False`` (``MultiheadAttention``'s default) needs it given,
        since a 3-D tensor reads either way (module notes). ``attn_mask`` has the same layout
        in both (PyTorch's).
    **data_kwargs
        Passed to :class:`~svmgeo.TokenData` (``Y``, ``v``, ``scores``, ...), in svmgeo's
        order: one entry per sequence first.

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
        An unsupported module (rotary, nonlinear query/key maps), inconsistent shapes or
        heads, a ``query`` outside ``[-T, T - 1]`` or whose mask row hides every key, a
        ``scale`` that is not finite and positive, a module with ``batch_first=False`` and no
        ``batch_first=``, non-finite weights, a float ``attn_mask`` or ``key_padding_mask``
        with entries other than 0 and :math:`-\infty`, a ``key_padding_mask`` of another
        shape than (n, T), or one that (with ``attn_mask``) hides every key from a query.
    """
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        raise SolverNotFound(
            'from_torch needs PyTorch, which is not installed: pip install "svmgeo[torch]".'
        ) from exc
    Wq, Wk, bq, bk, default_scale, head = _head_maps(module, head)
    s = default_scale
    if scale is not None:
        s = check_real(scale, "scale", low=0.0, low_open=True, high_open=True, where="from_torch")
    for key, ours in (("mask", "attn_mask"), ("Z", "queries"), ("query", "query")):
        if key in data_kwargs:
            raise ProblemError(
                f"from_torch: pass {ours}= (PyTorch's convention), not {key}=; the TokenData "
                "is built from inputs, queries/query and attn_mask."
            )
    X = _numpy(inputs, "inputs")
    if X.ndim != 3 or X.shape[2] != Wq.shape[1]:
        raise ProblemError(
            f"from_torch: inputs must have shape (n, T, E) with E = {Wq.shape[1]}, or (T, n, E) "
            f"with batch_first=False (one axis for the sequences, one for the tokens); got "
            f"{X.shape}."
        )
    first = _batch_first(module, batch_first, X.shape)
    if queries is not None and query is not None:
        raise ProblemError("from_torch: give queries (cross-attention) or query (self), not both.")
    Z = None if queries is None else _numpy(queries, "queries")
    if not first:  # (seq, batch, embed) -> svmgeo's (batch, seq, embed)
        X = X.transpose(1, 0, 2)
        if Z is not None and Z.ndim == 3:
            Z = Z.transpose(1, 0, 2)
    T = X.shape[1]
    query_given = query
    if Z is None:
        query = check_query("all" if query is None else query, T, "from_torch")
    E0 = X.shape[2]
    W = s * Wk.T @ Wq
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
    if not np.all(np.isfinite(W)):
        raise ProblemError(
            "from_torch: W = s W_K^T W_Q (with its bias row and column) is not finite: the "
            "module's query/key weights or biases hold NaN or inf, or are too large for float64. "
            "Check the module's parameters (e.g. torch.isfinite(p).all() for each)."
        )
    n = X.shape[0]
    if Z is None:
        K = T if query == "all" else 1
    else:
        K = Z.shape[1] if Z.ndim == 3 else 1  # another Z is TokenData's to refuse
    hidden = None
    if attn_mask is not None:
        H = int(getattr(module, "num_heads", 1))
        strict = key_padding_mask is not None
        hidden = _hidden_of_head(
            _hidden_keys(attn_mask), n, T, K, H, head, query, query_given, strict
        )
    if key_padding_mask is not None:  # MultiheadAttention adds it to attn_mask: either hides
        padding = _padding(key_padding_mask, n, T)[:, None, :]
        hidden = np.broadcast_to(padding if hidden is None else hidden | padding, (n, K, T))
        merged = "" if attn_mask is None else " with attn_mask"
        _refuse_blind(
            hidden,
            query,
            query_given,
            lambda i: (
                f" of sequence {i}",
                f"key_padding_mask[{i}]{merged} hides every key (MultiheadAttention returns "
                "NaN for it). Leave one key of the sequence visible, or drop the sequence.",
            ),
        )
    mask = None if hidden is None else ~hidden
    try:
        if Z is not None:
            data = TokenData(X, Z=Z, mask=mask, **data_kwargs)
        else:
            data = TokenData(X, query=query, mask=mask, **data_kwargs)
    except ProblemError as exc:
        raise ProblemError(
            f"from_torch: {exc} (X holds the inputs, Z the queries, mask the negated attn_mask"
            + ("" if key_padding_mask is None else " with key_padding_mask merged in")
            + (", with the constant coordinate of the query bias" if X.shape[2] > E0 else "")
            + ("" if first else ", inputs and 3-D queries transposed to batch first")
            + ")"
        ) from exc
    return data, W
