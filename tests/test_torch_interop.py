# SPDX-License-Identifier: BSD-3-Clause
"""sg.from_torch reads a PyTorch attention head exactly (skipped without torch)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
