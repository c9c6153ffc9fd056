# SPDX-License-Identifier: BSD-3-Clause
r"""Train a tiny GPT-2 on a token-selection task, then read its heads with svmgeo.

The task: every sequence holds ``T - 2`` noise tokens, one *marked* token (``+`` or ``-``) at a
random position and a fixed query token at the end; the label is the sign of the marked token.
A one-block GPT-2 (built from its configuration, randomly initialised, float64, offline) with a
linear read-out of the last position is trained with the logistic loss (Adam). svmgeo then reads
every head of the block at the query position (``sg.from_transformers``: the hidden states after
``ln_1``, the fused ``c_attn`` weights, the causal mask, a constant coordinate for the biases) and
measures, per head:

* the attention mass on the marked token and on the top-1, 2, 3 tokens (a measurement);
* Att-SVM(alpha) (``sg.att_svm``) for two selections alpha: the marked token, and the token the
  head itself attends to most; for each, the correlation of the trained :math:`W P_Z` with the
  SVM solution (:math:`P_Z` projects on the queries' span; every Att-SVM solution satisfies
  :math:`W = W P_Z`) and the margin ratio :math:`\min_{i,t}(x_{i\alpha_i} - x_{it})^\top W z_i
  \,\|W_{svm}\| / \|W\|` (1 at the SVM direction, negative when the head prefers another token
  somewhere).

    python examples/tiny_gpt2.py --seeds 0,1,2           # full size (about a minute per seed)
    python examples/tiny_gpt2.py --quick                 # seconds (CI)

Needs torch and transformers: pip install "svmgeo[transformers]".
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

import svmgeo as sg

NOISE, PLUS, MINUS, QUERY = 10, 10, 11, 12  # noise tokens 0..9, then the three special ones


def make_task(
    n: int, T: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token ids (n, T), labels (n,) in {-1, +1} and the marked positions (n,)."""
    ids = rng.integers(0, NOISE, size=(n, T))
    y = rng.choice([-1, 1], size=n)
    where = rng.integers(0, T - 1, size=n)
    ids[np.arange(n), where] = np.where(y > 0, PLUS, MINUS)
    ids[:, -1] = QUERY
    return ids, y, where


def train(args: argparse.Namespace, seed: int) -> tuple[Any, Any, dict[str, float]]:
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.GPT2Config(
        vocab_size=QUERY + 1,
        n_positions=args.T,
        n_embd=args.width,
        n_layer=1,
        n_head=args.heads,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=QUERY,
        eos_token_id=QUERY,
    )
    config._attn_implementation = "eager"
    model = transformers.GPT2Model(config).double()
    readout = torch.nn.Linear(args.width, 1).double()
    rng = np.random.default_rng(seed)
    ids, y, _ = make_task(args.n_train, args.T, rng)
    ids_t, y_t = torch.from_numpy(ids), torch.from_numpy(y).double()
    params = list(model.parameters()) + list(readout.parameters())
    opt = torch.optim.Adam(params, lr=args.lr)
    for _ in range(args.steps):
        opt.zero_grad()
        out = readout(model(input_ids=ids_t).last_hidden_state[:, -1])[:, 0]
        loss = torch.nn.functional.softplus(-y_t * out).mean()
        loss.backward()
        opt.step()
    with torch.no_grad():
        out = readout(model(input_ids=ids_t).last_hidden_state[:, -1])[:, 0]
    stats = {
        "train_loss": float(torch.nn.functional.softplus(-y_t * out).mean()),
        "train_accuracy": float((torch.sign(out) == y_t).double().mean()),
    }
    return model, readout, stats


def attention(data: sg.TokenData, W: np.ndarray) -> np.ndarray:
    """softmax over the visible keys of x_t^T W z, shape (n, T) for the one query."""
    logits = np.einsum("ntd,de,ne->nt", data.X, W, data.queries[:, 0])
    logits = np.where(data.visible[:, 0], logits, -np.inf)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def svm_fit(data: sg.TokenData, W: np.ndarray, alpha: np.ndarray) -> dict[str, Any]:
    """Att-SVM(alpha) and where the trained head stands: correlation and relative margin."""
    svm = sg.att_svm(data, alpha)
    out: dict[str, Any] = {"status": str(svm.status.value)}
    if svm.W is None:
        return out
    WP = W @ sg.query_projector(data.queries)
    logits = np.einsum("ntd,de,ne->nt", data.X, WP, data.queries[:, 0])
    rows = np.arange(data.n)
    chosen = logits[rows, alpha]
    logits[rows, alpha] = -np.inf
    logits = np.where(data.visible[:, 0], logits, -np.inf)
    # min_i (x_alpha - x_t)^T W z over ||W||, in units of the SVM's margin 1 / ||W_svm||
    gap = float((chosen - logits.max(axis=1)).min())
    out["corr"] = sg.correlation(WP, svm.W)
    out["margin_ratio"] = gap * float(np.linalg.norm(svm.W)) / float(np.linalg.norm(WP))
    return out


def study_head(
    model: Any, ids: np.ndarray, y: np.ndarray, where: np.ndarray, head: int
) -> dict[str, Any]:
    import torch

    T = ids.shape[1]
    data, W = sg.from_transformers(model, torch.from_numpy(ids), layer=0, head=head, query=T - 1)
    probs = attention(data, W)
    top = np.sort(probs, axis=1)[:, ::-1]
    marked = probs[np.arange(len(ids)), where]
    own = probs.argmax(axis=1)  # the token the head selects
    return {
        "head": head,
        "mass_marked_pos": float(marked[y > 0].mean()),
        "mass_marked_neg": float(marked[y < 0].mean()),
        **{f"mass_top{k}": float(top[:, :k].sum(axis=1).mean()) for k in (1, 2, 3)},
        "selects_marked": float((own == where).mean()),
        "svm_marked": svm_fit(data, W, where),
        "svm_own": svm_fit(data, W, own),
    }


def _fit_text(fit: dict[str, Any]) -> str:
    if "corr" not in fit:
        return fit["status"]
    return f"{fit['status']}, corr {fit['corr']:.3f}, margin ratio {fit['margin_ratio']:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run for CI (seconds)")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds, e.g. 0,1,2")
    parser.add_argument("--json", default=None, help="also write the numbers to this file")
    args = parser.parse_args(argv)
    args.T, args.width, args.heads = 8, 16, 2
    args.n_train, args.steps, args.lr = (128, 150, 0.02) if args.quick else (512, 600, 0.01)
    n_eval = 64 if args.quick else 256

    import torch

    torch.set_num_threads(1)
    results = []
    for seed in (int(s) for s in args.seeds.split(",")):
        t0 = time.perf_counter()
        model, _, stats = train(args, seed)
        ids, y, where = make_task(n_eval, args.T, np.random.default_rng(10_000 + seed))
        heads = [study_head(model, ids, y, where, h) for h in range(args.heads)]
        results.append({"seed": seed, **stats, "heads": heads})
        print(
            f"seed {seed}: training loss {stats['train_loss']:.4f}, training accuracy "
            f"{stats['train_accuracy']:.3f} ({time.perf_counter() - t0:.1f} s)"
        )
        for r in heads:
            print(
                f"  head {r['head']}: mass on the marked token {r['mass_marked_pos']:.3f} (label +1), "
                f"{r['mass_marked_neg']:.3f} (label -1); top-1 {r['mass_top1']:.3f}, top-2 "
                f"{r['mass_top2']:.3f}, top-3 {r['mass_top3']:.3f}; selects the marked token in "
                f"{r['selects_marked']:.0%}\n"
                f"    Att-SVM(marked): {_fit_text(r['svm_marked'])}\n"
                f"    Att-SVM(own selection): {_fit_text(r['svm_own'])}"
            )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
