# SPDX-License-Identifier: BSD-3-Clause
r"""Train a one-layer attention classifier on scikit-learn's digits, then study it with svmgeo.

Each 8x8 image is a sequence of T = 8 tokens (its rows, 8 pixels each, scaled to [0, 1]); the
query is the image's mean row. The model is the paper's f(X) = v^T X^T softmax(X W z) with
W = s W_k^T W_q learned through q_proj / k_proj linear layers (PyTorch, float64), trained with the
logistic loss on two digit classes (Y = +1 / -1). svmgeo then reads the layer (sg.from_torch),
writes the feasibility-study report (sg.study) and continues training from the model's W with its
own normalized GD (sg.train), reporting the correlation with the SVM of the trained selection.

    python examples/torch_digits.py --out digits-study            # full size
    python examples/torch_digits.py --quick --out /tmp/digits      # seconds (CI)

Needs torch and scikit-learn: pip install "svmgeo[torch]" scikit-learn.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import svmgeo as sg


class AttentionClassifier:  # built lazily so the module imports without torch
    @staticmethod
    def make(E: int, h: int, seed: int):  # type: ignore[no-untyped-def]
        import torch

        torch.manual_seed(seed)

        class Model(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.q_proj = torch.nn.Linear(E, h, bias=False)
                self.k_proj = torch.nn.Linear(E, h, bias=False)
                self.head = torch.nn.Linear(E, 1, bias=False)

            def forward(self, X, z):  # type: ignore[no-untyped-def]
                logits = torch.einsum("nth,nh->nt", self.k_proj(X), self.q_proj(z)) / h**0.5
                s = torch.softmax(logits, dim=1)
                return self.head(torch.einsum("nt,nte->ne", s, X))[:, 0]

        return Model().double()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run for CI (seconds)")
    parser.add_argument("--out", default="digits-study", help="report directory")
    parser.add_argument("--digits", default="3,8", help="the two classes, e.g. 3,8")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch
    from sklearn.datasets import load_digits

    a, b = (int(c) for c in args.digits.split(","))
    digits = load_digits()
    keep = np.isin(digits.target, (a, b))
    X = digits.images[keep] / 16.0  # (n, 8, 8): 8 tokens of 8 pixels
    Y = np.where(digits.target[keep] == a, 1.0, -1.0)
    n = 40 if args.quick else X.shape[0]
    steps = 200 if args.quick else 3000
    rng = np.random.default_rng(args.seed)
    idx = rng.permutation(X.shape[0])[:n]
    X, Y = X[idx], Y[idx]
    Z = X.mean(axis=1)

    t0 = time.perf_counter()
    model = AttentionClassifier.make(8, 8, args.seed)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    Xt, Zt, Yt = torch.tensor(X), torch.tensor(Z), torch.tensor(Y)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.softplus(-Yt * model(Xt, Zt)).mean()
        loss.backward()
        opt.step()
    acc = float(((model(Xt, Zt) > 0).double() * 2 - 1 == Yt).double().mean())
    train_s = time.perf_counter() - t0
    print(
        f"trained on {n} images of digits {a} vs {b}: {steps} Adam steps, "
        f"loss {loss.item():.4f}, training accuracy {acc:.3f} ({train_s:.1f} s)"
    )

    v = model.head.weight.detach().double().numpy()[0]
    data, W = sg.from_torch(model, X, queries=Z, Y=Y, v=v)
    t0 = time.perf_counter()
    rep = sg.study(data, W=W, max_lot_selections=4096, progress=not args.quick)
    study_s = time.perf_counter() - t0
    print(rep.summary())
    print(f"study wall time: {study_s:.1f} s")

    run = sg.train(data, init=W, n_steps=2000 if args.quick else 20000)
    sel = run.history.selected[-1].reshape(-1)
    res = sg.att_svm(data, sel)
    corr = None if res.W is None else sg.correlation(run.W, res.W)
    print(
        f"svmgeo GD from the model's W: {run.n_steps} steps, corr with W^mm of its selection {corr}"
    )

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data.save(out / "digits.npz")  # for `svmgeo study digits.npz --weights weights.npz --out ...`
    np.savez(out / "weights.npz", W=W)
    rep.to_markdown(out / "study.md")
    rep.to_json(out / "study.json")
    for p in rep.figures(out):
        print(f"wrote {p}")
    print(f"wrote {out / 'study.md'} and {out / 'study.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
