# SPDX-License-Identifier: BSD-3-Clause
"""sg.from_torch reads a PyTorch attention head exactly (skipped without torch)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import svmgeo as sg

torch = pytest.importorskip("torch")


def _svmgeo_attention(data: sg.TokenData, W: np.ndarray) -> np.ndarray:
    logits = np.einsum("ntd,de,nke->nkt", data.X, W, data.queries)
    logits = np.where(data.visible, logits, -np.inf)
    p = np.exp(logits - logits.max(axis=2, keepdims=True))
    return p / p.sum(axis=2, keepdims=True)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("heads", [1, 2])
def test_multihead_attention_weights_are_reproduced(bias: bool, heads: int) -> None:
    torch.manual_seed(0)
    E, n, T = 6, 3, 5
    mha = torch.nn.MultiheadAttention(E, heads, bias=bias, batch_first=True).double()
    if bias:  # nonzero biases (PyTorch initializes them to 0)
        with torch.no_grad():
            mha.in_proj_bias.normal_()
    X = torch.randn(n, T, E, dtype=torch.float64)
    Z = torch.randn(n, 2, E, dtype=torch.float64)
    mask = torch.zeros(2, T, dtype=torch.bool)
    mask[1, 0] = True  # query 1 may not attend to token 0
    _, ref = mha(Z, X, X, attn_mask=mask, need_weights=True, average_attn_weights=False)
    for h in range(heads):
        data, W = sg.from_torch(mha, X, queries=Z, attn_mask=mask, head=h if heads > 1 else None)
        assert W.shape == ((E + 1, E + 1) if bias else (E, E))
        np.testing.assert_allclose(
            _svmgeo_attention(data, W), ref[:, h].detach().numpy(), atol=1e-12
        )
        assert not data.visible[0, 1, 0] and data.visible[0, 0, 0]


def test_q_proj_k_proj_module_self_attention() -> None:
    torch.manual_seed(1)
    E, h = 4, 3
    module = torch.nn.Module()
    module.q_proj = torch.nn.Linear(E, h).double()
    module.k_proj = torch.nn.Linear(E, h).double()
    X = torch.randn(2, 5, E, dtype=torch.float64)
    data, W = sg.from_torch(module, X, query="all")
    logits = torch.einsum("nth,nsh->nst", module.k_proj(X), module.q_proj(X)) / h**0.5
    ref = torch.softmax(logits, dim=2).detach().numpy()
    np.testing.assert_allclose(_svmgeo_attention(data, W), ref, atol=1e-12)


def test_bad_modules_and_heads_are_clear_errors() -> None:
    X = torch.randn(2, 3, 4, dtype=torch.float64)
    with pytest.raises(sg.ProblemError, match="q_proj and k_proj"):
        sg.from_torch(torch.nn.Linear(4, 4), X)
    mha = torch.nn.MultiheadAttention(4, 2, batch_first=True)
    with pytest.raises(sg.ProblemError, match=r"pass head=0\.\.1"):
        sg.from_torch(mha, X)
    with pytest.raises(sg.ProblemError, match=r"head must be in 0\.\.1"):
        sg.from_torch(mha, X, head=2)
    with pytest.raises(sg.ProblemError, match=r"shape \(n, T, E\) with E = 4"):
        sg.from_torch(mha, X[0], head=0)


def test_digits_example_quick(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    script = Path(__file__).resolve().parents[1] / "examples" / "torch_digits.py"
    out = subprocess.run(
        [sys.executable, str(script), "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "training accuracy" in out.stdout and "Theorem 1 condition" in out.stdout
    for name in ("study.md", "study.json", "margins.png", "attention.png"):
        assert (tmp_path / name).stat().st_size > 0
    # the command line on the saved real dataset and trained weights writes the same report
    from svmgeo.cli import main

    cli_out = tmp_path / "cli"
    args = ["study", str(tmp_path / "digits.npz"), "--weights", str(tmp_path / "weights.npz")]
    assert main([*args, "--out", str(cli_out), "--no-progress"]) == 0
    for name in ("study.md", "study.json", "margins.png", "attention.png"):
        assert (cli_out / name).stat().st_size > 0
    import json

    a, b = (json.loads((d / "study.json").read_text()) for d in (cli_out, tmp_path))
    a.pop("timings"), b.pop("timings")
    assert a == b  # the same findings (the wall times differ)


def _mha_and_inputs(heads: int = 1) -> tuple[Any, Any, Any]:
    torch.manual_seed(2)
    E, n, T = 4, 3, 5
    mha = torch.nn.MultiheadAttention(E, heads, batch_first=True).double()
    return mha, torch.randn(n, T, E, dtype=torch.float64), torch.randn(n, 2, E, dtype=torch.float64)


def test_float_mask_of_zero_and_minus_inf_matches_torch() -> None:
    mha, X, Z = _mha_and_inputs()
    blocked = torch.zeros(2, 5, dtype=torch.bool)
    blocked[0, 1] = blocked[1, 3] = blocked[1, 4] = True
    float_mask = torch.zeros(2, 5, dtype=torch.float64).masked_fill(blocked, -torch.inf)
    _, ref = mha(Z, X, X, attn_mask=float_mask, need_weights=True)
    data, W = sg.from_torch(mha, X, queries=Z, attn_mask=float_mask)
    np.testing.assert_allclose(_svmgeo_attention(data, W), ref.detach().numpy(), atol=1e-12)
    as_bool, _ = sg.from_torch(mha, X, queries=Z, attn_mask=blocked)
    np.testing.assert_array_equal(data.visible, as_bool.visible)
    np.testing.assert_array_equal(data.visible[0], ~blocked.numpy())
    # the same mask as a numpy array, and as 0/1 integers (1 = hidden, as True)
    for other in (float_mask.numpy(), blocked.numpy().astype(int)):
        again, _ = sg.from_torch(mha, X, queries=Z, attn_mask=other)
        np.testing.assert_array_equal(again.visible, data.visible)


@pytest.mark.parametrize("as_numpy", [False, True])
def test_soft_float_mask_is_refused_not_read_as_blocked(as_numpy: bool) -> None:
    # issue 21: PyTorch ADDS a float mask; reading -0.5/+0.7 as "blocked" gave attention
    # weights off from torch's own forward pass with no error
    mha, X, Z = _mha_and_inputs()
    soft = torch.zeros(2, 5, dtype=torch.float64)
    soft[0, 1], soft[1, 2] = -0.5, 0.7
    _, ref = mha(Z, X, X, attn_mask=soft, need_weights=True)
    _, plain = mha(Z, X, X, need_weights=True)
    assert float((ref - plain).abs().max().detach()) > 1e-3  # torch itself reads the biases
    with pytest.raises(sg.ProblemError, match=r"attn_mask is a float mask.*-0\.5.*additive bias"):
        sg.from_torch(mha, X, queries=Z, attn_mask=soft.numpy() if as_numpy else soft)


@pytest.mark.parametrize(
    ("mask", "match"),
    [
        (np.full((2, 5), np.nan), "float mask with the entry nan"),
        (np.full((2, 5), np.inf), "float mask with the entry inf"),
        (np.full((2, 5), 2), "integer attn_mask must hold 0/1"),
        (np.full((2, 5), "a"), "bool or float"),
    ],
    ids=["nan", "plus-inf", "int-2", "strings"],
)
def test_bad_attn_masks_are_clear_errors(mask: np.ndarray, match: str) -> None:
    mha, X, Z = _mha_and_inputs()
    with pytest.raises(sg.ProblemError, match=match):
        sg.from_torch(mha, X, queries=Z, attn_mask=mask)


@pytest.mark.parametrize("scale", [math.nan, math.inf, 0.0, -1.0, "0.5", None, True])
def test_scale_must_be_finite_and_positive(scale: Any) -> None:
    mha, X, _ = _mha_and_inputs()
    if scale is None:  # the default, PyTorch's 1/sqrt(head width)
        _, W = sg.from_torch(mha, X)
        assert np.all(np.isfinite(W))
        return
    with pytest.raises(sg.ProblemError, match="'scale' parameter of from_torch"):
        sg.from_torch(mha, X, scale=scale)


def test_explicit_scale_matches_torch_scaled_logits() -> None:
    torch.manual_seed(3)
    module = torch.nn.Module()
    module.q_proj = torch.nn.Linear(4, 3, bias=False).double()
    module.k_proj = torch.nn.Linear(4, 3, bias=False).double()
    X = torch.randn(2, 5, 4, dtype=torch.float64)
    data, W = sg.from_torch(module, X, query="all", scale=0.3)
    logits = 0.3 * torch.einsum("nth,nsh->nst", module.k_proj(X), module.q_proj(X))
    ref = torch.softmax(logits, dim=2).detach().numpy()
    np.testing.assert_allclose(_svmgeo_attention(data, W), ref, atol=1e-12)


def test_non_finite_weights_and_bad_head_are_clear_errors() -> None:
    mha, X, _ = _mha_and_inputs(heads=2)
    with pytest.raises(sg.ProblemError, match=r"head must be in 0\.\.1; got 1\.5"):
        sg.from_torch(mha, X, head=1.5)
    with torch.no_grad():
        mha.in_proj_weight[0, 0] = torch.nan
    with pytest.raises(sg.ProblemError, match=r"W = s W_K\^T W_Q .* is not finite"):
        sg.from_torch(mha, X, head=0)


def test_per_head_mask_of_multihead_attention_matches_torch() -> None:
    mha, X, Z = _mha_and_inputs(heads=2)
    blocked = torch.zeros(3 * 2, 2, 5, dtype=torch.bool)  # (n * num_heads, K, T)
    blocked[0, 0, 1] = blocked[3, 1, 2] = blocked[4, 0, 0] = True
    _, ref = mha(Z, X, X, attn_mask=blocked, need_weights=True, average_attn_weights=False)
    for h in range(2):
        data, W = sg.from_torch(mha, X, queries=Z, attn_mask=blocked, head=h)
        np.testing.assert_allclose(
            _svmgeo_attention(data, W), ref[:, h].detach().numpy(), atol=1e-12
        )
        np.testing.assert_array_equal(data.visible, ~blocked.numpy().reshape(3, 2, 2, 5)[:, h])


def test_multihead_attention_with_a_zero_key_is_refused() -> None:
    """add_zero_attn=True appends a key of logit 0 that svmgeo's model has not: it was read
    silently (0.06-0.31 off the module's probabilities)."""
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True, add_zero_attn=True)
    with pytest.raises(sg.ProblemError, match="add_zero_attn=True"):
        sg.from_torch(mha, torch.randn(2, 5, 8), head=0)


def _q_k_module(E: int, width: int, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    module = torch.nn.Module()
    module.q_proj = torch.nn.Linear(E, width).double()
    module.k_proj = torch.nn.Linear(E, width).double()
    return module


def test_module_scaling_is_the_logit_scale_of_a_single_head() -> None:
    """A one-head module's own ``scaling`` was ignored for 1/sqrt(width) (W 5.8x too large
    here), although several heads read it."""
    module = _q_k_module(4, 3, seed=4)
    module.scaling = 0.1
    X = torch.randn(2, 5, 4, dtype=torch.float64)
    data, W = sg.from_torch(module, X, query="all")
    logits = 0.1 * torch.einsum("nth,nsh->nst", module.k_proj(X), module.q_proj(X))
    ref = torch.softmax(logits, dim=2).detach().numpy()
    np.testing.assert_allclose(_svmgeo_attention(data, W), ref, atol=1e-12)


def test_heads_are_read_from_the_config_without_num_heads() -> None:
    """Hugging Face's attention modules keep head_dim and config.num_attention_heads, not
    num_heads (transformers >= 4.48): the two heads were read as one head of width 8, the
    sum of both heads' products at scale 1/sqrt(8), and head=1 was refused."""
    from types import SimpleNamespace

    module = _q_k_module(6, 8, seed=5)
    module.head_dim, module.scaling = 4, 0.5
    module.config = SimpleNamespace(num_attention_heads=2)
    X = torch.randn(2, 5, 6, dtype=torch.float64)
    q = module.q_proj(X).reshape(2, 5, 2, 4)
    k = module.k_proj(X).reshape(2, 5, 2, 4)
    for h in range(2):
        data, W = sg.from_torch(module, X, query="all", head=h)
        logits = 0.5 * torch.einsum("nth,nsh->nst", k[:, :, h], q[:, :, h])
        ref = torch.softmax(logits, dim=2).detach().numpy()
        np.testing.assert_allclose(_svmgeo_attention(data, W), ref, atol=1e-12)
    with pytest.raises(sg.ProblemError, match=r"pass head=0\.\.1"):
        sg.from_torch(module, X)


def test_nonlinear_query_key_maps_are_refused_by_from_torch() -> None:
    """A module that normalizes its queries (Qwen3's q_norm) was read as the bilinear W."""
    module = _q_k_module(4, 4, seed=6)
    module.q_norm = torch.nn.LayerNorm(4)
    with pytest.raises(sg.ProblemError, match=r"from_torch: .*\(q_norm\), a nonlinear map"):
        sg.from_torch(module, torch.randn(2, 5, 4))


def _seq_first_mha_and_inputs() -> tuple[Any, Any, Any, Any]:
    """MultiheadAttention with batch_first=False (PyTorch's default), 2 heads, nonzero biases,
    and tensors in its layout (seq, batch, embed) with n = T = K = 3: both readings fit."""
    torch.manual_seed(7)
    E, n, T = 4, 3, 3
    mha = torch.nn.MultiheadAttention(E, 2).double()
    assert not mha.batch_first
    with torch.no_grad():
        mha.in_proj_bias.normal_()
    X = torch.randn(T, n, E, dtype=torch.float64)
    Z = torch.randn(T, n, E, dtype=torch.float64)  # K = 3 queries per sequence
    blocked = torch.zeros(n * 2, T, T, dtype=torch.bool)  # per head: (n * num_heads, K, T)
    blocked[0, 0, 1] = blocked[3, 2, 0] = blocked[5, 1, 2] = True
    return mha, X, Z, blocked


@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_seq_first_multihead_attention_is_read_in_its_own_layout(cross: bool) -> None:
    """batch_first=False reads (T, n, E) tensors as the module does: the weights equal the
    module's own per-head ones, given in its layout (batch_first=False) or transposed
    (batch_first=True)."""
    mha, X, Z, blocked = _seq_first_mha_and_inputs()
    q = Z if cross else X
    _, ref = mha(q, X, X, attn_mask=blocked, need_weights=True, average_attn_weights=False)
    for h in range(2):
        want = ref[:, h].detach().numpy()  # (n, K, T), batch first
        for first, x, z in ((False, X, Z), (True, X.transpose(0, 1), Z.transpose(0, 1))):
            kw = {"queries": z} if cross else {}
            data, W = sg.from_torch(mha, x, attn_mask=blocked, head=h, batch_first=first, **kw)
            np.testing.assert_allclose(_svmgeo_attention(data, W), want, atol=1e-12, rtol=0)
            np.testing.assert_allclose(data.X[:, :, :4], X.transpose(0, 1).numpy(), rtol=0, atol=0)


def test_seq_first_multihead_attention_without_a_layout_is_refused() -> None:
    """from_torch read every 3-D tensor batch first: a batch_first=False module's own (T, n, E)
    tensors were read as T sequences of n tokens with no error (here T = n: head 0's weights
    0.33 off the module's); now it asks for batch_first=."""
    mha, X, _, _ = _seq_first_mha_and_inputs()
    with pytest.raises(sg.ProblemError, match=r"batch_first=False.*\(3, 3, 4\).*does not guess"):
        sg.from_torch(mha, X, head=0)
    _, ref = mha(X, X, X, need_weights=True, average_attn_weights=False)
    misread, W = sg.from_torch(mha, X, head=0, batch_first=True)  # the old reading
    gap = np.abs(_svmgeo_attention(misread, W) - ref[:, 0].detach().numpy()).max()
    assert gap > 0.1
    with pytest.raises(sg.ProblemError, match=r"'batch_first' parameter of from_torch"):
        sg.from_torch(mha, X, head=0, batch_first=0)
    # a batch-first module keeps its reading without the argument
    first = torch.nn.MultiheadAttention(4, 2, batch_first=True).double()
    a, W_a = sg.from_torch(first, X, head=1)
    b, W_b = sg.from_torch(first, X, head=1, batch_first=True)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(W_a, W_b)


@pytest.mark.parametrize("query", [-1, -3, 2, 0, -5])
def test_negative_query_counts_from_the_end(query: int) -> None:
    """query=q in [-T, T - 1] is Python's index of a token (-1 the last), as in
    from_transformers; the weights are the module's own row q % T."""
    mha, X, _ = _mha_and_inputs()  # T = 5
    _, ref = mha(X, X, X, need_weights=True)
    data, W = sg.from_torch(mha, X, query=query)
    assert data.query == query % 5 and data.single_query
    np.testing.assert_allclose(
        _svmgeo_attention(data, W)[:, 0], ref[:, query].detach().numpy(), atol=1e-12, rtol=0
    )


@pytest.mark.parametrize("query", [5, -6, 1.0, True, "last"])
def test_query_outside_the_sequence_names_from_torch(query: Any) -> None:
    """Out of range, the error named TokenData's parameter (an argument the caller never
    passed) instead of from_torch's."""
    mha, X, _ = _mha_and_inputs()
    with pytest.raises(
        sg.ProblemError, match=r"^The 'query' parameter of from_torch .*\[-5, 4\].*5 tokens"
    ):
        sg.from_torch(mha, X, query=query)


def _self_attention_masks(T: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A causal and a random (T, T) bool mask (True = hidden, MultiheadAttention's
    convention), every row leaving at least its own key visible."""
    rng = np.random.default_rng(seed)
    causal = np.triu(np.ones((T, T), dtype=bool), 1)
    scattered = rng.random((T, T)) < 0.5
    np.fill_diagonal(scattered, False)
    return causal, scattered


@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("pattern", ["causal", "scattered"])
@pytest.mark.parametrize("query", [0, 2, -1])
def test_full_self_attention_mask_is_read_at_the_query_row(
    kind: str, pattern: str, query: int
) -> None:
    """query=q with the module's own (T, T) self-attention mask was refused ("mask must have
    shape (1, 5) or (3, 1, 5)"), although query q reads only row q; the weights now equal the
    module's own row q, for a bool mask (True = hidden) and a float mask of 0 and -inf."""
    torch.manual_seed(3)
    n, T, E, H = 3, 5, 4, 2
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_bias.normal_()
    X = torch.randn(n, T, E, dtype=torch.float64)
    causal, scattered = _self_attention_masks(T, seed=3)
    hidden = causal if pattern == "causal" else scattered
    mask = torch.from_numpy(hidden)
    if kind == "float":
        mask = torch.zeros(T, T, dtype=torch.float64).masked_fill(mask, -torch.inf)
    _, ref = mha(X, X, X, attn_mask=mask, need_weights=True, average_attn_weights=False)
    for h in range(H):
        data, W = sg.from_torch(mha, X, query=query, attn_mask=mask, head=h)
        assert data.single_query and data.query == query % T
        np.testing.assert_array_equal(data.visible[:, 0], np.broadcast_to(~hidden[query], (n, T)))
        np.testing.assert_allclose(
            _svmgeo_attention(data, W)[:, 0], ref[:, h, query].detach().numpy(), atol=1e-12, rtol=0
        )


@pytest.mark.parametrize("heads", [1, 2])
def test_full_mask_with_key_padding_merged_is_read_at_the_query_row(heads: int) -> None:
    """A per-sequence (n, T, T) or per-head (n * num_heads, T, T) mask, the module's attn_mask
    with its key_padding_mask merged in (True where either hides the key), read at row q: the
    module, given the two masks apart, is the oracle."""
    torch.manual_seed(4)
    n, T, E = 3, 5, 4
    mha = torch.nn.MultiheadAttention(E, heads, batch_first=True).double()
    X = torch.randn(n, T, E, dtype=torch.float64)
    # (n * heads, T, T): head h of sequence i at index i * heads + h (PyTorch's layout)
    per_head = np.stack([_self_attention_masks(T, seed=10 + s)[1] for s in range(n * heads)])
    padding = np.zeros((n, T), dtype=bool)
    padding[0, 3:] = padding[2, 4] = True  # sequence 0 has 3 tokens, sequence 2 has 4
    attn = per_head if heads > 1 else per_head[:n]
    _, ref = mha(
        X,
        X,
        X,
        attn_mask=torch.from_numpy(attn),
        key_padding_mask=torch.from_numpy(padding),
        need_weights=True,
        average_attn_weights=False,
    )
    merged = attn | np.repeat(padding, heads, axis=0)[:, None, :]
    query = 1  # sees itself in every sequence: no padded query, no row hiding every key
    for h in range(heads):
        data, W = sg.from_torch(
            mha, X, query=query, attn_mask=merged, head=h if heads > 1 else None
        )
        np.testing.assert_allclose(
            _svmgeo_attention(data, W)[:, 0], ref[:, h, query].detach().numpy(), atol=1e-12, rtol=0
        )
        own = attn.reshape(n, heads, T, T)[:, h, query] | padding
        np.testing.assert_array_equal(data.visible[:, 0], ~own)


def test_query_row_hiding_every_key_names_the_query() -> None:
    """query=q whose row of the (T, T) mask hides every key: an error naming query q and the
    row (TokenData's own message would name query 0, the stored row)."""
    mha, X, _ = _mha_and_inputs()
    mask = np.zeros((5, 5), dtype=bool)
    mask[3] = True
    with pytest.raises(
        sg.ProblemError,
        match=r"^from_torch: query=-2 \(position 3\) sees no key: row 3 of attn_mask hides",
    ):
        sg.from_torch(mha, X, query=-2, attn_mask=mask)
    per_sequence = np.zeros((3, 5, 5), dtype=bool)
    per_sequence[1, 3] = True
    with pytest.raises(
        sg.ProblemError, match=r"query=3 of sequence 1 sees no key: row 3 of attn_mask\[1\] "
    ):
        sg.from_torch(mha, X, query=3, attn_mask=per_sequence)
    data, _ = sg.from_torch(mha, X, query=2, attn_mask=per_sequence)  # other rows do not matter
    assert data.visible.all()


def test_query_row_hiding_every_key_of_a_head_names_the_head() -> None:
    """Review of session 56: with a per-head (n * num_heads, T, T) mask the error named the
    sequence alone; it now names the head and the mask's own index, i * num_heads + head.
    The same for a per-head (n * num_heads, 1, T) mask (row 0), which TokenData had
    refused as "query 0" (the stored row, not query 3)."""
    mha, X, _ = _mha_and_inputs(heads=2)
    full = np.zeros((6, 5, 5), dtype=bool)
    full[2 * 2 + 1, 3] = True  # sequence 2, head 1, row 3
    with pytest.raises(
        sg.ProblemError,
        match=r"^from_torch: query=3 of sequence 2 in head 1 sees no key: row 3 of "
        r"attn_mask\[5\] hides every key",
    ):
        sg.from_torch(mha, X, query=3, attn_mask=full, head=1)
    data, _ = sg.from_torch(mha, X, query=3, attn_mask=full, head=0)  # head 0 sees every key
    assert data.visible.all()
    one_row = np.zeros((6, 1, 5), dtype=bool)
    one_row[1 * 2 + 0] = True  # sequence 1, head 0
    with pytest.raises(
        sg.ProblemError,
        match=r"^from_torch: query=-2 \(position 3\) of sequence 1 in head 0 sees no key: "
        r"row 0 of attn_mask\[2\]",
    ):
        sg.from_torch(mha, X, query=-2, attn_mask=one_row, head=0)


@pytest.mark.parametrize(
    ("shape", "heads"),
    [((2, 5, 5), 2), ((5, 6), 2), ((3, 5), 2), ((4, 5, 5), 1), ((5,), 1), ((3, 2, 5), 2)],
)
def test_wrong_mask_shape_with_an_int_query_names_the_shape_given(
    shape: tuple[int, ...], heads: int
) -> None:
    """Review of session 56: the mask was cut to row q before its shape was checked, so a
    (2, 5, 5) mask (n = 3, T = 5, num_heads = 2, query=1) was refused as "got (2, 1, 5)" and
    a (5, 6) one as "got (1, 6)", with two of the six accepted shapes listed. The error names
    the shape passed and lists every accepted one (per head only with num_heads > 1); a
    key_padding_mask passed as is, (n, T) = (3, 5), or a 1-D one, is told to pass it as
    key_padding_mask=."""
    mha, X, _ = _mha_and_inputs(heads=heads)
    n, T, H = 3, 5, heads
    accepted = [(1, T), (n, 1, T), (T, T), (n, T, T)]
    if H > 1:
        accepted += [(n * H, 1, T), (n * H, T, T)]
    with pytest.raises(sg.ProblemError) as info:
        sg.from_torch(mha, X, query=1, attn_mask=np.zeros(shape, dtype=bool), head=0)
    text = str(info.value)
    assert text.startswith("from_torch: attn_mask must have one of the shapes ")
    assert f"; got {shape} (n = 3 sequences of T = 5 tokens" in text
    listed = text.split("; got")[0]
    for ok in accepted:
        assert str(ok) in listed
    assert (str((n * 2, 1, T)) in listed) == (H > 1)  # no per-head shape with one head
    assert "; or the full self-attention mask, of which query=1 reads row 1: (5, 5)" in text
    told = "MultiheadAttention takes no 1-D" if len(shape) == 1 else "(n, T) is no attn_mask"
    assert told in text and "pass it as key_padding_mask=" in text


def test_an_n_by_T_mask_with_n_equal_to_T_reads_as_the_self_attention_mask() -> None:
    """Documented: with n == T an (n, T) array has the (T, T) shape and is read as the
    self-attention mask (row q, every sequence), not per sequence; the module, given it as
    its attn_mask, agrees."""
    torch.manual_seed(6)
    n = T = 4
    mha = torch.nn.MultiheadAttention(4, 1, batch_first=True).double()
    X = torch.randn(n, T, 4, dtype=torch.float64)
    hidden = np.zeros((n, T), dtype=bool)
    hidden[2, [0, 3]] = True  # as a key_padding_mask: sequence 2 pads keys 0 and 3
    data, W = sg.from_torch(mha, X, query=2, attn_mask=hidden)
    np.testing.assert_array_equal(data.visible[:, 0], np.broadcast_to(~hidden[2], (n, T)))
    _, ref = mha(X, X, X, attn_mask=torch.from_numpy(hidden), need_weights=True)
    np.testing.assert_allclose(
        _svmgeo_attention(data, W)[:, 0], ref[:, 2].detach().numpy(), atol=1e-12, rtol=0
    )


def _key_padding(n: int, T: int) -> np.ndarray:
    """Right padding (True = padding, MultiheadAttention's convention): sequence 0 has 3
    tokens, sequence 2 has 4, sequence 1 none padded."""
    padding = np.zeros((n, T), dtype=bool)
    padding[0, 3:] = padding[2, 4] = True
    return padding


def _as_float(hidden: np.ndarray) -> Any:
    return torch.zeros(hidden.shape, dtype=torch.float64).masked_fill(
        torch.from_numpy(hidden), -torch.inf
    )


@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("attn", [None, "shared", "per-head", "queries"])
@pytest.mark.parametrize("batch_first", [True, False])
def test_key_padding_mask_is_merged_as_multihead_attention_merges_it(
    heads: int, kind: str, attn: str | None, batch_first: bool
) -> None:
    """Session 57: key_padding_mask= (n, T), MultiheadAttention's own argument, merged with
    attn_mask as the module merges them (added as float masks: a key hidden where either
    hides it, in every head). The module, given both, is the oracle: its per-head and its
    head-averaged weights, every query (padded ones too), self- and cross-attention
    (attn="queries": K = 2 given queries per sequence) and batch_first=False (its (T, n, E)
    inputs, the (n, T) padding in either layout). from_torch took no key_padding_mask."""
    torch.manual_seed(8)
    n, T, E = 3, 5, 4
    mha = torch.nn.MultiheadAttention(E, heads, batch_first=batch_first).double()
    with torch.no_grad():
        mha.in_proj_bias.normal_()
    X = torch.randn(n, T, E, dtype=torch.float64)
    Z = torch.randn(n, 2, E, dtype=torch.float64) if attn == "queries" else X
    K = Z.shape[1]
    padding = _key_padding(n, T)
    rng = np.random.default_rng(9)
    hidden = None  # attn_mask, True = hidden, key 0 (never padded) visible in every row
    if attn == "shared" or attn == "queries":
        hidden = rng.random((K, T)) < 0.5
    elif attn == "per-head":
        hidden = rng.random((n * heads, K, T)) < 0.5
    if hidden is not None:
        hidden[..., 0] = False
    mask = None if hidden is None else torch.from_numpy(hidden)
    kpm = torch.from_numpy(padding) if kind == "bool" else _as_float(padding)
    if kind == "float" and mask is not None:
        mask = _as_float(hidden)
    # the module's layout: (T, n, E) without batch_first; key_padding_mask (n, T) in both
    q, x = (Z, X) if batch_first else (Z.transpose(0, 1), X.transpose(0, 1))
    outs = {
        avg: mha(q, x, x, attn_mask=mask, key_padding_mask=kpm, average_attn_weights=avg)[1]
        for avg in (False, True)
    }
    per_head, averaged = outs[False].detach().numpy(), outs[True].detach().numpy()
    probs = []
    for h in range(heads):
        kw: dict[str, Any] = {"queries": q} if attn == "queries" else {"query": "all"}
        data, W = sg.from_torch(
            mha, x, attn_mask=mask, key_padding_mask=kpm, head=h if heads > 1 else None,
            batch_first=batch_first, **kw,
        )  # fmt: skip
        p = _svmgeo_attention(data, W)
        np.testing.assert_allclose(p, per_head[:, h], atol=1e-12, rtol=0)
        expected = padding[:, None, :] | (
            np.zeros((K, T), dtype=bool)
            if hidden is None
            else hidden
            if hidden.ndim == 2
            else hidden.reshape(n, heads, K, T)[:, h]
        )
        np.testing.assert_array_equal(data.visible, ~np.broadcast_to(expected, (n, K, T)))
        probs.append(p)
    np.testing.assert_allclose(np.mean(probs, axis=0), averaged, atol=1e-12, rtol=0)


@pytest.mark.parametrize("query", [1, -1])
def test_key_padding_mask_with_an_int_query_reads_the_row_it_merges_into(query: int) -> None:
    """query=q with the module's (T, T) attn_mask and a key_padding_mask: row q of their
    merge; the module is the oracle."""
    mha, X, _ = _mha_and_inputs(heads=2)
    n, T = 3, 5
    causal, _ = _self_attention_masks(T, seed=1)
    padding = _key_padding(n, T)
    _, ref = mha(
        X, X, X, attn_mask=torch.from_numpy(causal), key_padding_mask=torch.from_numpy(padding),
        average_attn_weights=False,
    )  # fmt: skip
    for h in range(2):
        data, W = sg.from_torch(
            mha, X, query=query, attn_mask=causal, key_padding_mask=padding, head=h
        )
        np.testing.assert_array_equal(data.visible[:, 0], ~(causal[query] | padding))
        np.testing.assert_allclose(
            _svmgeo_attention(data, W)[:, 0], ref[:, h, query].detach().numpy(), atol=1e-12
        )


@pytest.mark.parametrize(
    "shape", [(5, 3), (5,), (3, 5, 1), (6, 5), (1, 5)], ids=lambda s: "x".join(map(str, s))
)
def test_key_padding_mask_of_a_wrong_shape_names_the_shape_passed_and_the_one_accepted(
    shape: tuple[int, ...],
) -> None:
    """(T, n) (a batch_first=False habit), (T,), (n, T, 1), per head (n * H, T), one row:
    refused naming key_padding_mask, the shape passed and (n, T) = (3, 5)."""
    mha, X, _ = _mha_and_inputs(heads=2)
    with pytest.raises(sg.ProblemError) as info:
        sg.from_torch(mha, X, key_padding_mask=np.zeros(shape, dtype=bool), head=0)
    text = str(info.value)
    assert text.startswith("from_torch: key_padding_mask must have shape (n, T) = (3, 5)")
    assert f"; got {shape}" in text


def test_key_padding_mask_hiding_every_key_or_holding_a_bias_is_refused() -> None:
    """A sequence padded throughout: the module returns NaN for its queries, svmgeo refuses
    naming the query, the sequence and key_padding_mask; a float key_padding_mask holding a
    finite bias is refused as attn_mask's is."""
    mha, X, Z = _mha_and_inputs()
    padding = np.zeros((3, 5), dtype=bool)
    padding[1] = True
    _, ref = mha(X, X, X, key_padding_mask=torch.from_numpy(padding))
    assert torch.isnan(ref[1]).all() and not torch.isnan(ref[0]).any()
    with pytest.raises(
        sg.ProblemError,
        match=r"^from_torch: query 0 of sequence 1 sees no key: key_padding_mask\[1\] hides",
    ):
        sg.from_torch(mha, X, key_padding_mask=padding)
    causal, _ = _self_attention_masks(5, seed=1)  # query 0 sees key 0 only
    padding = np.zeros((3, 5), dtype=bool)
    padding[2, 0] = True
    with pytest.raises(
        sg.ProblemError,
        match=r"^from_torch: query=-5 \(position 0\) of sequence 2 sees no key: "
        r"key_padding_mask\[2\] with attn_mask hides every key",
    ):
        sg.from_torch(mha, X, query=-5, attn_mask=causal, key_padding_mask=padding)
    with pytest.raises(
        sg.ProblemError, match=r"^from_torch: query 1 of sequence 2 sees no key: key_padding_"
    ):
        sg.from_torch(mha, X, queries=Z, attn_mask=np.array([[0, 0, 1, 1, 1], [0, 1, 1, 1, 1]], dtype=bool),
                      key_padding_mask=padding)  # fmt: skip
    biased = np.zeros((3, 5))
    biased[0, 2] = -1.0
    with pytest.raises(
        sg.ProblemError, match=r"key_padding_mask is a float mask with the entry -1\.0 at index"
    ):
        sg.from_torch(mha, X, key_padding_mask=biased)


@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("kw", ["all", "int", "queries"])
def test_a_1d_attn_mask_is_refused_pointing_to_key_padding_mask(heads: int, kw: str) -> None:
    """MultiheadAttention takes no 1-D attn_mask, nor does from_torch; with one head and
    query="all" or given queries TokenData refused it as "mask must be a 2-D or 3-D array"
    ((K, T) = (5, 5) ...), naming neither attn_mask nor key_padding_mask."""
    mha, X, Z = _mha_and_inputs(heads=heads)
    extra: dict[str, Any] = {"all": {}, "int": {"query": 1}, "queries": {"queries": Z}}[kw]
    with pytest.raises(sg.ProblemError) as info:
        sg.from_torch(mha, X, attn_mask=np.zeros(5, dtype=bool), head=0, **extra)
    text = str(info.value)
    assert text.startswith("from_torch: attn_mask must have one of the shapes ")
    assert "; got (5,) (n = 3 sequences of T = 5 tokens" in text
    assert "MultiheadAttention takes no 1-D attn_mask" in text
    assert "pass it as key_padding_mask=" in text


@pytest.mark.parametrize("shape", [(3, 5), (5,)])
def test_a_wrong_attn_mask_with_a_key_padding_mask_given_is_not_told_to_pass_one(
    shape: tuple[int, ...],
) -> None:
    """Review of session 57: with key_padding_mask= given, an attn_mask of the shape (n, T)
    or (T,) was refused telling the user to "pass it as key_padding_mask=", the argument
    they had passed. The message now says to hide those keys in the key_padding_mask given."""
    mha, X, _ = _mha_and_inputs(heads=2)
    with pytest.raises(sg.ProblemError) as info:
        sg.from_torch(
            mha,
            X,
            attn_mask=np.zeros(shape, dtype=bool),
            key_padding_mask=_key_padding(3, 5),
            head=0,
        )
    text = str(info.value)
    assert text.startswith("from_torch: attn_mask must have one of the shapes ")
    assert f"; got {shape} (n = 3 sequences of T = 5 tokens" in text
    assert "pass it as key_padding_mask=" not in text
    assert text.endswith("hide those keys in the key_padding_mask= given.")
