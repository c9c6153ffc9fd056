# SPDX-License-Identifier: BSD-3-Clause
"""sg.from_transformers reproduces a Hugging Face model's own attention probabilities.

Tiny randomly initialised float64 models built from their configurations (no downloaded
weights), eager attention, every layer and head; skipped without torch or transformers.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import svmgeo as sg

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from svmgeo import from_transformers  # noqa: E402

N, T, VOCAB = 3, 6, 23


def _eager64(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: object,
) -> tuple[torch.Tensor, torch.Tensor]:
    """LLaMA's eager attention with its softmax in float64 (the model's runs in float32).

    The model's own query and key states (after its rotary embedding), grouped-query
    expansion (its ``repeat_kv``), scale and mask; only the softmax precision differs.
    """
    from transformers.models.llama.modeling_llama import repeat_kv

    groups = getattr(module, "num_key_value_groups", 1)
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    logits = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        logits = logits + attention_mask
    weights = torch.softmax(logits, dim=-1)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


transformers.AttentionInterface.register("svmgeo_eager64", _eager64)
transformers.masking_utils.AttentionMaskInterface.register(
    "svmgeo_eager64", transformers.masking_utils.eager_mask
)  # the same additive mask as "eager"


def _perturb_biases(model: torch.nn.Module) -> None:
    """Nonzero biases (transformers initialises them to 0), so their handling is tested."""
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") and "norm" not in name.lower() and "ln" not in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))


def _inputs(pad: bool) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, VOCAB, (N, T), generator=g)
    mask = torch.ones(N, T, dtype=torch.long)
    if pad:  # right padding of two sequences
        mask[1, 4:] = 0
        mask[2, 5:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def _svmgeo_probs(data: sg.TokenData, W: np.ndarray) -> np.ndarray:
    m = np.arange(data.T)  # query positions (every token a query)
    if W.ndim == 3:  # one W per offset n - m (rotary models)
        offsets = np.arange(data.T)[None, :] - m[:, None] + data.T - 1
        logits = np.einsum("ntd,ktde,nke->nkt", data.X, W[offsets], data.queries)
    elif W.ndim == 4:  # one W per position pair (m, n)
        logits = np.einsum("ntd,ktde,nke->nkt", data.X, W, data.queries)
    else:
        logits = np.einsum("ntd,de,nke->nkt", data.X, W, data.queries)
    logits = np.where(data.visible, logits, -np.inf)
    p = np.exp(logits - logits.max(axis=2, keepdims=True))
    return p / p.sum(axis=2, keepdims=True)


def _model(kind: str, **extra: object) -> torch.nn.Module:
    torch.manual_seed(0)
    if kind == "gpt2":
        cfg = transformers.GPT2Config(
            n_embd=12,
            n_layer=2,
            n_head=3,
            vocab_size=VOCAB,
            n_positions=16,
            bos_token_id=0,
            eos_token_id=0,
            **extra,
        )
        model = transformers.GPT2Model(cfg)
    elif kind == "bert":
        cfg = transformers.BertConfig(
            hidden_size=12,
            num_hidden_layers=2,
            num_attention_heads=3,
            intermediate_size=20,
            vocab_size=VOCAB,
            max_position_embeddings=16,
            **extra,
        )
        model = transformers.BertModel(cfg)
    else:
        model = _decoder("LlamaConfig", "LlamaModel", num_hidden_layers=2, num_attention_heads=4,
                         max_position_embeddings=16, **extra)  # fmt: skip
        cfg = model.config
    # GPT-2 and BERT's eager attention is float64 throughout; LLaMA's softmax is float32
    cfg._attn_implementation = "svmgeo_eager64" if kind == "llama" else "eager"
    model = model.double().eval()
    _perturb_biases(model)
    return model


def _decoder(config: str, model: str, **extra: object) -> torch.nn.Module:
    """A tiny LLaMA-style decoder of ``transformers.<model>`` (width 16, 2 key heads),
    ``extra`` overriding the defaults; skipped where this transformers lacks ``config``."""
    if not hasattr(transformers, config):
        pytest.skip(f"this transformers has no {config}")
    torch.manual_seed(0)
    sizes: dict[str, object] = {
        "hidden_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "intermediate_size": 24,
        "vocab_size": VOCAB,
        "max_position_embeddings": 32,
    }
    return getattr(transformers, model)(getattr(transformers, config)(**{**sizes, **extra}))


def _reference(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> list[np.ndarray]:
    with torch.no_grad():
        out = model(**inputs, output_attentions=True)
    return [a.numpy() for a in out.attentions]


def _check_all_heads(
    model: torch.nn.Module, inputs: dict, atol: float = 1e-10, **kw: object
) -> None:
    ref = _reference(model, inputs)
    for layer, probs in enumerate(ref):
        for head in range(probs.shape[1]):
            data, W = from_transformers(model, inputs, layer=layer, head=head, **kw)
            got = _svmgeo_probs(data, W)
            # queries that are padding tokens are compared too (the model attends from them)
            np.testing.assert_allclose(got, probs[:, head], atol=atol, rtol=0)


@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize(
    "extra",
    [{}, {"scale_attn_by_inverse_layer_idx": True}, {"scale_attn_weights": False}],
    ids=["default", "inverse_layer_idx", "unscaled"],
)
def test_gpt2_every_layer_and_head(pad: bool, extra: dict) -> None:
    _check_all_heads(_model("gpt2", **extra), _inputs(pad))


@pytest.mark.parametrize("pad", [False, True])
def test_bert_every_layer_and_head(pad: bool) -> None:
    _check_all_heads(_model("bert"), _inputs(pad))


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("pad", [False, True])
def test_llama_positions_every_layer_and_grouped_head(bias: bool, pad: bool) -> None:
    _check_all_heads(_model("llama", attention_bias=bias), _inputs(pad), rope="positions")


@pytest.mark.parametrize("bias", [False, True])
def test_llama_offsets_agree_to_the_models_float32_angles(bias: bool) -> None:
    """The model's angles p * theta are float32: offsets reproduce it to that rounding."""
    _check_all_heads(_model("llama", attention_bias=bias), _inputs(True), 1e-6, rope="offsets")


def test_llama_plain_eager_attention_agrees_to_its_float32_softmax() -> None:
    model = _model("llama")
    model.config._attn_implementation = "eager"
    _check_all_heads(model, _inputs(True), 1e-6, rope="positions")


def test_llama_grouped_query_heads_share_their_key_head() -> None:
    """Query heads 0, 1 read key head 0 and 2, 3 key head 1 (4 query heads, 2 key heads)."""
    model = _model("llama")
    inputs = _inputs(False)
    k = model.layers[0].self_attn.k_proj.weight.detach().numpy()
    hd = model.layers[0].self_attn.head_dim
    q = model.layers[0].self_attn.q_proj.weight.detach().numpy()
    for h in range(4):
        _, W = from_transformers(model, inputs, layer=0, head=h, rope="offsets")
        g = h // 2
        s = hd**-0.5
        # offset 0: R_0^T R_0 = I (cos 0 = 1, sin 0 = 0), so W_0 = s W_K^T W_Q of the heads
        np.testing.assert_allclose(
            W[T - 1], s * k[g * hd : (g + 1) * hd].T @ q[h * hd : (h + 1) * hd], atol=1e-12
        )


def test_llama_rope_is_refused_with_the_reason() -> None:
    with pytest.raises(sg.ProblemError, match=r"rotary position embeddings.*position pair"):
        from_transformers(_model("llama"), _inputs(False), layer=0, head=0)


def test_llama_attention_module_is_refused_by_from_torch() -> None:
    """LlamaAttention has q_proj/k_proj but applies RoPE: from_torch read it as one W
    without rotation (and, having no num_heads attribute, its two heads as one head)."""
    attn = _decoder("LlamaConfig", "LlamaModel").layers[0].self_attn  # 2 heads, no groups
    with pytest.raises(sg.ProblemError, match=r"from_torch: LlamaAttention applies rotary"):
        sg.from_torch(attn, torch.randn(N, T, attn.q_proj.in_features), head=0)


def test_llama_custom_positions_are_refused_for_offsets() -> None:
    model = _model("llama")
    spread = {**_inputs(False), "position_ids": torch.tensor([[0, 1, 3, 4, 8, 9]] * N)}
    with pytest.raises(sg.ProblemError, match="offset alone"):
        from_transformers(model, spread, layer=1, head=0, rope="offsets")
    _check_all_heads(model, spread, rope="positions")  # exact at any positions
    mixed = {
        **_inputs(False),
        "position_ids": torch.tensor([list(range(T))] * (N - 1) + [[0, 2, 4, 6, 8, 10]]),
    }
    with pytest.raises(sg.ProblemError, match="different rotary positions"):
        from_transformers(model, mixed, layer=1, head=0, rope="positions")


def test_single_query_and_labels_reach_token_data() -> None:
    model = _model("gpt2")
    inputs = _inputs(False)
    ref = _reference(model, inputs)[1]
    data, W = from_transformers(model, inputs, layer=1, head=2, query=T - 1, v=np.ones(13))
    assert data.single_query and data.d == 13  # a query bias appends a coordinate
    np.testing.assert_allclose(_svmgeo_probs(data, W)[:, 0], ref[:, 2, T - 1], atol=1e-10)


def test_left_padding_with_causal_mask_is_refused() -> None:
    inputs = _inputs(False)
    inputs["attention_mask"][0, :2] = 0
    with pytest.raises(sg.ProblemError, match="Pad on the right"):
        from_transformers(_model("gpt2"), inputs, layer=0, head=0)


def test_model_mode_is_restored_and_bad_arguments_name_themselves() -> None:
    model = _model("gpt2").train()
    from_transformers(model, _inputs(False)["input_ids"], layer=0, head=0)
    assert model.training
    with pytest.raises(sg.ProblemError, match=r"head must be in 0\.\.2"):
        from_transformers(model, _inputs(False), layer=0, head=3)
    with pytest.raises(sg.ProblemError, match=r"layer must be in 0\.\.1"):
        from_transformers(model, _inputs(False), layer=2, head=0)
    with pytest.raises(sg.ProblemError, match="inputs must be a mapping"):
        from_transformers(model, [1, 2], layer=0, head=0)
    with pytest.raises(sg.ProblemError, match="GPT-2, BERT or LLaMA-style"):
        from_transformers(torch.nn.Linear(2, 2), _inputs(False), layer=0, head=0)


def test_missing_transformers_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # import raises ImportError
    with pytest.raises(sg.SolverNotFound, match=r"svmgeo\[transformers\]"):
        from_transformers(_model("gpt2"), _inputs(False), layer=0, head=0)


def test_tiny_gpt2_example_quick(tmp_path: Path) -> None:
    """The worked example trains, reads every head and solves the SVMs (its --quick mode)."""
    script = Path(__file__).resolve().parents[1] / "examples" / "tiny_gpt2.py"
    numbers = tmp_path / "tiny.json"
    out = subprocess.run(
        [sys.executable, str(script), "--quick", "--json", str(numbers)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "training accuracy" in out.stdout and "Att-SVM(own selection)" in out.stdout
    (run,) = json.loads(numbers.read_text())
    assert run["seed"] == 0 and len(run["heads"]) == 2
    for head in run["heads"]:
        assert head["mass_top1"] <= head["mass_top2"] <= head["mass_top3"] <= 1.0 + 1e-12
        assert head["svm_own"]["status"] == "optimal"


@pytest.mark.parametrize("kind", ["gpt2", "bert"])
@pytest.mark.parametrize("pad", [False, True])
def test_sdpa_masks_are_read_as_the_eager_ones(kind: str, pad: bool) -> None:
    """Under SDPA the model may pass no mask (causal flag) or a bool one; the reading is the same."""
    model = _model(kind)
    inputs = _inputs(pad)
    eager = [from_transformers(model, inputs, layer=1, head=h) for h in range(3)]
    model.config._attn_implementation = "sdpa"
    for h, (data_eager, W_eager) in enumerate(eager):
        data, W = from_transformers(model, inputs, layer=1, head=h)
        np.testing.assert_array_equal(data.visible, data_eager.visible)
        np.testing.assert_allclose(W, W_eager, rtol=0, atol=0)


def test_task_heads_are_read_through_their_base_model() -> None:
    """GPT2LMHeadModel, BertForSequenceClassification, LlamaForCausalLM: the same blocks."""
    inputs = _inputs(True)
    for kind, wrapper in (
        ("gpt2", transformers.GPT2LMHeadModel),
        ("bert", transformers.BertForSequenceClassification),
        ("llama", transformers.LlamaForCausalLM),
    ):
        base = _model(kind)
        model = wrapper(base.config).double().eval()
        model.base_model.load_state_dict(base.state_dict())
        kw = {"rope": "positions"} if kind == "llama" else {}
        for head in (0, 2):
            data, W = from_transformers(model, inputs, layer=1, head=head, **kw)
            data_b, W_b = from_transformers(base, inputs, layer=1, head=head, **kw)
            np.testing.assert_allclose(W, W_b, rtol=0, atol=0)
            np.testing.assert_allclose(data.X, data_b.X, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_an_eager_mask_of_any_float_dtype_blocks_at_its_most_negative_number(dtype: str) -> None:
    """transformers fills blocked keys with torch.finfo(dtype).min: -65504 in float16, which
    the -1e30 test took for a finite bias ("no W reproduces them")."""
    from svmgeo._transformers import _visible

    kind = getattr(torch, dtype)
    causal = torch.tril(torch.ones(3, 3, dtype=torch.bool))
    mask = torch.zeros(1, 1, 3, 3, dtype=kind).masked_fill(~causal, torch.finfo(kind).min)
    np.testing.assert_array_equal(_visible(mask, 1, 3, False)[0], causal.numpy())


def _tiny(config: str, model: str, **extra: object) -> torch.nn.Module:
    """A one-block model of another family, float64, eager attention."""
    built = _decoder(config, model, initializer_range=0.5, **extra)
    built.config._attn_implementation = "eager"
    return built.double().eval()


@pytest.mark.parametrize(
    ("config", "model", "extra", "match"),
    [
        ("OlmoConfig", "OlmoModel", {"clip_qkv": 0.05}, "clip_qkv clamps"),
        ("PhiConfig", "PhiModel", {"qk_layernorm": True, "partial_rotary_factor": 1.0},
         r"normalizes queries/keys \(q_layernorm\)"),
        ("CohereConfig", "CohereModel", {"use_qk_norm": False}, "another layout than LLaMA"),
    ],
    ids=["olmo-clip-qkv", "phi-qk-layernorm", "cohere-interleaved-rope"],
)  # fmt: skip
def test_nonlinear_query_key_maps_and_other_rope_layouts_are_refused(
    config: str, model: str, extra: dict, match: str
) -> None:
    """Each was read as a plain W (or LLaMA's rotate-half RoPE): the probabilities rebuilt
    from it were off the model's by 0.5-0.8."""
    with pytest.raises(sg.ProblemError, match=match):
        from_transformers(_tiny(config, model, **extra), _inputs(False), layer=0, head=0,
                          rope="positions")  # fmt: skip


def test_a_nope_layer_is_read_without_rotary_embeddings() -> None:
    """SmolLM3's NoPE layers are handed (cos, sin) but do not apply them: they were read as
    rotated (0.3 off the model's probabilities), and rope='raise' refused a layer with one W."""
    model = _tiny("SmolLM3Config", "SmolLM3Model", no_rope_layers=[0], use_sliding_window=False,
                  pad_token_id=0)  # fmt: skip
    ref = _reference(model, _inputs(False))[0]
    for rope in ("raise", "positions"):
        data, W = from_transformers(model, _inputs(False), layer=0, head=1, rope=rope)
        assert W.ndim == 2
        np.testing.assert_allclose(_svmgeo_probs(data, W), ref[:, 1], atol=1e-6, rtol=0)


def test_look_alikes_of_a_family_layout_are_refused_by_name() -> None:
    """GPTBigCode (an nn.Linear c_attn) and RoFormer (BERT's layout, rotary inside) raised
    bare AttributeErrors."""
    bigcode = transformers.GPTBigCodeModel(transformers.GPTBigCodeConfig(
        n_embd=12, n_layer=1, n_head=3, vocab_size=VOCAB, n_positions=16))  # fmt: skip
    with pytest.raises(sg.ProblemError, match="not GPT-2's fused"):
        from_transformers(bigcode, torch.tensor([[1, 2, 3]]), layer=0, head=0)
    roformer = transformers.RoFormerModel(transformers.RoFormerConfig(
        hidden_size=12, embedding_size=12, num_hidden_layers=1, num_attention_heads=3,
        intermediate_size=20, vocab_size=VOCAB, max_position_embeddings=16))  # fmt: skip
    with pytest.raises(sg.ProblemError, match="layout of a bert block but not its attention"):
        from_transformers(roformer, torch.tensor([[1, 2, 3]]), layer=0, head=0)
    with pytest.raises(sg.ProblemError, match="the model refused inputs before the attention"):
        from_transformers(_model("gpt2"), torch.tensor([[1, 2, VOCAB + 5]]), layer=0, head=0)
    with pytest.raises(sg.ProblemError, match=r"^from_transformers: Y must have shape"):
        from_transformers(_model("gpt2"), torch.tensor([[1, 2, 3]]), layer=0, head=0, Y=[1, 1])


def test_hugging_face_multi_head_q_proj_modules_are_read_one_head_at_a_time() -> None:
    """OPTAttention (q_proj/k_proj holding 2 heads) was read as one fused head: every head's
    products summed, scale 1/sqrt(width); head= was refused, and a per-head mask crashed."""
    cfg = transformers.OPTConfig(hidden_size=8, num_attention_heads=2, ffn_dim=16,
                                 num_hidden_layers=1, vocab_size=20, max_position_embeddings=16,
                                 word_embed_proj_dim=8, init_std=0.5)  # fmt: skip
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    attn = transformers.OPTModel(cfg).double().eval().decoder.layers[0].self_attn
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    with torch.no_grad():
        ref = attn(x, attention_mask=None, output_attentions=True)[1].numpy()
    for head in (0, 1):
        data, W = sg.from_torch(attn, x, head=head)
        # OPT's eager softmax runs in float32
        np.testing.assert_allclose(_svmgeo_probs(data, W), ref[:, head], atol=1e-6, rtol=0)
    with pytest.raises(sg.ProblemError, match=r"num_heads=2; pass head=0\.\.1"):
        sg.from_torch(attn, x)


def _single_query_probs(data: sg.TokenData, W: np.ndarray, m: int) -> np.ndarray:
    """Probabilities of query position m (one per sequence) over the keys, for one W or one
    W per position pair (rotary, rope="positions")."""
    Wm = W[m] if W.ndim == 4 else np.broadcast_to(W, (data.T, *W.shape))
    logits = np.einsum("ntd,tde,ne->nt", data.X, Wm, data.queries[:, 0])
    logits = np.where(data.visible[:, 0], logits, -np.inf)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
@pytest.mark.parametrize("query", [-1, -T, 2 - T])
def test_negative_query_counts_from_the_end(kind: str, query: int) -> None:
    """query=-1 is the last token, as in from_torch (Python's indexing); it was refused
    ("query must be in 0..5")."""
    model = _model(kind)
    inputs = _inputs(True)
    kw = {"rope": "positions"} if kind == "llama" else {}
    ref = _reference(model, inputs)[1]
    data, W = from_transformers(model, inputs, layer=1, head=2, query=query, **kw)
    m = query % T
    assert data.query == m and data.single_query
    np.testing.assert_allclose(
        _single_query_probs(data, W, m),
        ref[:, 2, m],
        atol=1e-10 if kind == "gpt2" else 1e-6,
        rtol=0,
    )


@pytest.mark.parametrize("query", [T, -T - 1, 1.0, "last"])
def test_query_outside_the_sequence_is_named(query: object) -> None:
    with pytest.raises(
        sg.ProblemError,
        match=rf"^The 'query' parameter of from_transformers .*\[-{T}, {T - 1}\].*{T} tokens",
    ):
        from_transformers(_model("gpt2"), _inputs(False), layer=0, head=0, query=query)


def test_a_blind_single_query_is_named_by_its_position() -> None:
    """Left padding hides every key from positions 0 and 1 of sequence 0 (causal mask): the
    error for query=1 said "query 0" (the row of the one query kept), and query=-5 is the same
    position."""
    inputs = _inputs(False)
    inputs["attention_mask"][0, :2] = 0
    for query in (1, 1 - T):
        with pytest.raises(sg.ProblemError, match="query 1 of sequence 0 sees no key"):
            from_transformers(_model("gpt2"), inputs, layer=0, head=0, query=query)


def _padding_hidden() -> np.ndarray:
    """The keys _inputs(True) pads, shape (n, T): True where hidden."""
    return _inputs(True)["attention_mask"].numpy() == 0


@pytest.mark.parametrize("kind", ["gpt2", "bert", "llama"])
@pytest.mark.parametrize("shape", ["n11T", "11TT"])
def test_a_4d_mask_given_to_the_model_is_read_as_the_attention_broadcasts_it(
    kind: str, shape: str
) -> None:
    """Session 57: transformers hands a 4-D attention_mask given to the model on to the
    attention as it is, and eager attention broadcasts it: a padding mask (n, 1, 1, T) hides
    its keys from every query, a (1, 1, T, T) mask is every sequence's. svmgeo refused the
    masks with one query row, (n or 1, 1, 1, T) ("expected (n, 1, T, T)"); (1, 1, T, T) was
    read before too, and is kept here as a check. The model's own probabilities (every layer,
    head and query) are the oracle; no causal pattern is added (the model adds none to a 4-D
    mask)."""
    model = _model(kind)
    inputs = _inputs(False)
    if shape == "n11T":  # transformers' 4.x extended mask: finfo.min where padded
        hidden = _padding_hidden()[:, None, None, :]
        fill = torch.finfo(torch.float64).min
    else:  # a scattered pattern, the diagonal visible, hidden with -inf
        hidden = np.random.default_rng(5).random((1, 1, T, T)) < 0.4
        hidden[0, 0, np.arange(T), np.arange(T)] = False
        fill = -torch.inf
    mask = torch.zeros(hidden.shape, dtype=torch.float64).masked_fill(
        torch.from_numpy(hidden), fill
    )
    inputs["attention_mask"] = mask
    kw = {"rope": "positions"} if kind == "llama" else {}
    _check_all_heads(model, inputs, **kw)
    data, _ = from_transformers(model, inputs, layer=1, head=0, **kw)
    np.testing.assert_array_equal(data.visible, np.broadcast_to(~hidden[:, 0], (N, T, T)))


def test_sdpa_reads_a_bool_4d_padding_mask_as_eager_reads_the_float_one() -> None:
    """The same padding as a bool (n, 1, 1, T) mask (True = attend, sdpa's convention) under
    sdpa and as a float one under eager: the model's outputs agree (so the masks mean the
    same), and so do svmgeo's readings."""
    model = _model("bert")
    hidden = torch.from_numpy(_padding_hidden())[:, None, None, :]
    eager = {**_inputs(False), "attention_mask": torch.zeros(hidden.shape).double()}
    eager["attention_mask"].masked_fill_(hidden, -torch.inf)
    sdpa = {**_inputs(False), "attention_mask": ~hidden}
    with torch.no_grad():
        out_eager = model(**eager).last_hidden_state.numpy()
    data_eager, W_eager = from_transformers(model, eager, layer=1, head=2)
    model.config._attn_implementation = "sdpa"
    with torch.no_grad():
        out_sdpa = model(**sdpa).last_hidden_state.numpy()
    np.testing.assert_allclose(out_sdpa, out_eager, atol=1e-10, rtol=0)
    data, W = from_transformers(model, sdpa, layer=1, head=2)
    np.testing.assert_array_equal(data.visible, data_eager.visible)
    np.testing.assert_allclose(W, W_eager, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
@pytest.mark.parametrize("rows", [1, T])
def test_a_bool_mask_under_an_attention_that_adds_it_is_refused(kind: str, rows: int) -> None:
    """Eager attention adds its mask to the logits: a bool mask given to the model adds 1
    where it is True and hides nothing (the model's own probabilities on the padded keys are
    not 0). svmgeo read it as a visibility mask, hiding keys the model attends to; then
    refused it under the implementation named "eager" only, and still read it under LLaMA's
    "svmgeo_eager64" (registered with eager_mask: probabilities off by 0.078). Bool masks are
    read under "sdpa" only."""
    model = _model(kind)  # LLaMA: "svmgeo_eager64"; BERT, GPT-2: "eager"
    visible = torch.from_numpy(~_padding_hidden())[:, None, None, :].expand(N, 1, rows, T)
    inputs = {**_inputs(False), "attention_mask": visible}
    probs = _reference(model, inputs)[0]
    assert probs[1, 0, T - 1, 4] > 0.01  # sequence 1's padded key 4 is attended
    kw = {"rope": "positions"} if kind == "llama" else {}
    implementation = model.config._attn_implementation
    with pytest.raises(
        sg.ProblemError,
        match=rf"\(attn_implementation='{implementation}'\) a bool mask; svmgeo reads bool "
        r"masks under sdpa attention only.*add 1 where it is True and hide no key",
    ):
        from_transformers(model, inputs, layer=0, head=0, **kw)


@pytest.mark.parametrize("rows", [1, T])
def test_an_integer_4d_mask_is_refused_naming_its_dtype(rows: int) -> None:
    """Review of session 57: a 4-D integer attention_mask (1 = attend, as the 2-D one) reaches
    the attention as it is, which adds it to the logits (the padded keys are attended);
    svmgeo crashed in torch.finfo (TypeError), for (n, 1, T, T) on the base already."""
    model = _model("bert")
    attend = torch.from_numpy(~_padding_hidden())[:, None, None, :].expand(N, 1, rows, T)
    inputs = {**_inputs(False), "attention_mask": attend.long()}
    assert _reference(model, inputs)[0][1, 0, 0, 4] > 0.01  # padded key 4 attended
    with pytest.raises(
        sg.ProblemError,
        match=r"a mask of dtype torch\.int64; .* Pass a float mask of 0 \(visible\) and -inf.*"
        r"or a bool mask \(True = visible\) under sdpa attention",
    ):
        from_transformers(model, inputs, layer=0, head=0)


def _flash_mask_attention(*args: object, **kwargs: object) -> None:
    raise AssertionError("svmgeo stops the forward pass before the attention runs")


transformers.AttentionInterface.register("svmgeo_flash_mask", _flash_mask_attention)
transformers.masking_utils.AttentionMaskInterface.register(
    "svmgeo_flash_mask", transformers.masking_utils.flash_attention_mask
)  # flash attention's 2-D padding mask, on CPU
transformers.AttentionInterface.register("svmgeo_flash_kernel", _flash_mask_attention)
transformers.masking_utils.AttentionMaskInterface.register(
    "svmgeo_flash_kernel", transformers.masking_utils.sdpa_mask
)  # as transformers registers some hub flash kernels: sdpa's mask


_KERNEL = r"attn_implementation='{}', flash or flex attention.*set_attn_implementation\('sdpa'\)"


@pytest.mark.parametrize("kind", ["gpt2", "bert"])
def test_flash_and_flex_masks_are_refused_naming_the_implementation(kind: str) -> None:
    """Flash attention's mask is the 2-D padding (n, T) (its kernel applies the causal
    pattern), flex attention's a BlockMask: svmgeo refused the first by its shape alone and
    crashed on the second (AttributeError: no detach)."""
    model = _model(kind)
    for name in ("svmgeo_flash_mask", "flex_attention"):
        model.config._attn_implementation = name
        with pytest.raises(sg.ProblemError, match=_KERNEL.format(name)):
            from_transformers(model, _inputs(True), layer=0, head=0)


def test_flash_attention_is_refused_when_nothing_is_padded() -> None:
    """Review of session 57: flash attention's mask is None when no token is padded, and
    svmgeo read None as the plain causal mask, while the kernel applies the sliding window
    (Mistral, sliding_window=2: the eager model's row 5 sees keys 4 and 5 only; svmgeo read
    all six). Flash and flex are refused by their name, or by the mask registered for them,
    whatever mask they are handed."""
    model = _decoder("MistralConfig", "MistralModel", sliding_window=2).double().eval()
    ids = _inputs(False)["input_ids"]
    model.config._attn_implementation = "eager"
    seen = _reference(model, {"input_ids": ids})[0][:, :, T - 1] > 0
    np.testing.assert_array_equal(seen, np.broadcast_to(np.arange(T) >= T - 2, seen.shape))
    model.config._attn_implementation = "svmgeo_flash_mask"  # registered with flash's mask
    with pytest.raises(sg.ProblemError, match=_KERNEL.format("svmgeo_flash_mask")):
        from_transformers(model, {"input_ids": ids}, layer=0, head=0, rope="positions")
    model.config._attn_implementation = "svmgeo_flash_kernel"  # by its name: sdpa's mask
    with pytest.raises(sg.ProblemError, match=_KERNEL.format("svmgeo_flash_kernel")):
        from_transformers(model, {"input_ids": ids}, layer=0, head=0, rope="positions")


def test_a_2d_mask_is_refused_naming_the_implementation_in_use() -> None:
    """Review of session 57: the 2-D mask refusal blamed flash attention whatever the
    implementation. Flash and flex are now refused before the forward pass, so a 2-D mask
    comes from another attention: here a hook hands eager attention the 2-D padding."""
    model = _model("gpt2")
    attn = model.h[0].attn
    pad = _inputs(True)["attention_mask"].bool()

    def two_d(_: object, args: tuple, kwargs: dict) -> tuple:
        return args, {**kwargs, "attention_mask": pad}

    handle = attn.register_forward_pre_hook(two_d, with_kwargs=True)
    try:
        with pytest.raises(sg.ProblemError) as info:
            from_transformers(model, _inputs(True), layer=0, head=0)
    finally:
        handle.remove()
    text = str(info.value)
    assert "(attn_implementation='eager') was passed a 2-D mask of shape (3, 6)" in text
    assert "flash" not in text


transformers.AttentionInterface.register("svmgeo_no_mask", _eager64)  # and no mask registered


@pytest.mark.parametrize("name", ["svmgeo_no_mask", "paged|eager"])
@pytest.mark.parametrize("kind", ["gpt2", "bert", "llama"])
def test_an_attention_with_no_registered_mask_is_refused(kind: str, name: str) -> None:
    """Review of session 58: transformers hands an attention with no mask registered in
    AttentionMaskInterface no mask (None), whatever attention_mask the model is given: one
    registered with AttentionInterface alone, and transformers' own "paged|eager", which
    model.set_attn_implementation accepts. svmgeo read None as the causal (GPT-2, LLaMA) or
    all-visible (BERT) mask. These eager attentions, handed nothing, attend every key: the
    padded ones (BERT's reading counted them as visible, the padding given to the model
    ignored) and, in GPT-2 and LLaMA, the later ones that svmgeo's causal reading hid."""
    model = _model(kind)
    inputs = _inputs(True)
    if name == "paged|eager":
        model.set_attn_implementation(name)
    else:
        model.config._attn_implementation = name
    probs = _reference(model, inputs)[0]
    assert probs[1, 0, 0, 4] > 0.01  # query 0 attends padded key 4 (a later key, too)
    kw = {"rope": "positions"} if kind == "llama" else {}
    quoted = re.escape(repr(name))
    with pytest.raises(
        sg.ProblemError,
        match=rf"^from_transformers: the model runs attn_implementation={quoted}, which "
        r"has no attention mask registered .*set_attn_implementation\('sdpa'\).*"
        rf"AttentionMaskInterface\.register\({quoted}, ",
    ):
        from_transformers(model, inputs, layer=0, head=0, **kw)


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_no_implementation_and_an_unregistered_one_are_refused_as_such(kind: str) -> None:
    """Review of session 58: with config._attn_implementation None transformers runs eager
    attention handed no mask (query 0 attends later, padded keys; svmgeo read the causal
    mask); a name that is not a registered attention ("sdpa_paged") makes the model raise
    KeyError, while svmgeo, which stops the forward pass before the attention runs, read it.
    Each is refused in its own words, not with advice to register a mask for None."""
    model = _model(kind)
    inputs = _inputs(True)
    kw = {"rope": "positions"} if kind == "llama" else {}
    model.config._attn_implementation = None
    assert _reference(model, inputs)[0][1, 0, 0, 4] > 0.01  # query 0 sees later padded key 4
    with pytest.raises(
        sg.ProblemError,
        match=r"^from_transformers: the model has no attention implementation set "
        r"\(config\._attn_implementation is None\).*"
        r"Call model\.set_attn_implementation\('sdpa'\)",
    ) as info:
        from_transformers(model, inputs, layer=0, head=0, **kw)
    assert "register" not in str(info.value)
    model.config._attn_implementation = "sdpa_paged"
    with pytest.raises(KeyError, match="sdpa_paged"):  # the model cannot run it
        _reference(model, inputs)
    with pytest.raises(
        sg.ProblemError,
        match=r"^from_transformers: the model runs attn_implementation='sdpa_paged', which is "
        r"not a registered attention implementation .*set_attn_implementation\('sdpa'\)",
    ):
        from_transformers(model, inputs, layer=0, head=0, **kw)


def test_a_local_flash_mask_override_is_refused() -> None:
    """Review of session 58: transformers makes an implementation's mask with the mask
    mapping's own (local) entry first; a local override to flash attention's mask hands the
    attention flash's 2-D padding mask. The branch's first fix looked the maker up in the
    class-wide mapping only and missed it (then refused the 2-D mask with no word of flash)."""
    model = _model("llama")  # runs "svmgeo_eager64", registered with eager's mask
    registry = transformers.masking_utils.ALL_MASK_ATTENTION_FUNCTIONS
    registry["svmgeo_eager64"] = transformers.masking_utils.flash_attention_mask
    try:
        with pytest.raises(sg.ProblemError, match=_KERNEL.format("svmgeo_eager64")):
            from_transformers(model, _inputs(True), layer=0, head=0, rope="positions")
    finally:
        del registry["svmgeo_eager64"]
