# SPDX-License-Identifier: BSD-3-Clause
"""Next-token prediction: GD vs Graph-SVM and the finite component (Li, Huang, Ildiz, Rawat,
Oymak, arXiv:2403.08081).

Two synthetic settings from ``sg.random_next_token_data``: ``tier_size=1`` (acyclic
token-priority graphs: pure retrieval) and ``tier_size=2`` (cycles inside tiers: soft
composition). For every seed: normalized (or, ``--plain``, plain) GD (``sg.train_ntp``) from
W = 0, and along the run
corr(W_t, W^svm), the error of the finite component ||P_fin W_t - W^fin|| / max(1, ||W^fin||),
and the composition error (largest total-variation distance between GD's attention and the
prediction of W^fin on the top-priority tokens). Also says whether W^fin is finite (the
restricted loss can be minimized on the boundary of the simplex: then the prediction has no
finite W^fin, reported, not hidden).

Normalized steps of fixed size oscillate at O(eta) in the finite directions, so the finite
component is measured with ``--plain`` (the fin error then decays like 1/t).

Run: ``PYTHONPATH=. python examples/ntp_graph_svm.py [--quick] [--loss ce|retrieval] [--plain]
[--eta ETA] [--steps N] [--out DIR]``.
Prints every seed and writes ``ntp_graph_svm.png`` to DIR (default: a temporary directory).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

import svmgeo as sg
from svmgeo.plot import pyplot


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--loss", choices=("ce", "retrieval"), default="ce")
    ap.add_argument("--plain", action="store_true", help="plain GD steps (default normalized)")
    ap.add_argument("--eta", type=float, default=None, help="step size (0.1 normalized, 5 plain)")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    n, T, V, d = 60, 5, 6, 10
    seeds = [0, 1, 2] if args.quick else list(range(10))
    steps = args.steps or (1500 if args.quick else 6000)
    eta = args.eta or (5.0 if args.plain else 0.1)
    kind = "plain" if args.plain else "normalized"
    print(f"data: random_next_token_data({n}, {T}, {V}, {d}, tier_size, seed); loss={args.loss}; "
          f"{steps} {kind} GD steps, eta={eta}")  # fmt: skip
    print(f"{'setting':>8} {'seed':>4} {'eq rows':>7} {'finite?':>8} {'corr(W,Wsvm)':>12} "
          f"{'fin err':>8} {'comp err':>8} {'top mass':>8}")  # fmt: skip
    curves: dict[str, list[np.ndarray]] = {"acyclic": [], "cyclic": []}
    steps_rec = np.array([0])
    for name, tier in (("acyclic", 1), ("cyclic", 2)):
        for seed in seeds:
            data = sg.random_next_token_data(n, T, V, d, tier_size=tier, seed=seed)
            svm = sg.graph_svm(data)
            assert svm.success, svm.message
            fin = sg.finite_component(data, loss=args.loss)
            run = sg.train_ntp(
                data, loss=args.loss, step_size=eta, n_steps=steps, normalized=not args.plain
            )
            reports = [sg.verify_ntp(data, W, svm=svm, fin=fin) for W in run.history.W]
            curves[name].append(np.array([1 - r.corr_svm for r in reports]))
            steps_rec = run.history.step
            r = reports[-1]
            n_eq = int(np.count_nonzero(svm.constraints.kind == sg.EQUALITY))
            print(f"{name:>8} {seed:>4} {n_eq:>7} {not fin.at_boundary!s:>8} {r.corr_svm:>12.5f} "
                  f"{r.fin_error:>8.1e} {r.composition_error:>8.1e} {r.top_mass:>8.5f}")  # fmt: skip
    for name, cs in curves.items():
        print(f"median 1 - corr at the end, {name}: {np.median([c[-1] for c in cs]):.2e}")
    out = args.out or Path(tempfile.mkdtemp(prefix="svmgeo-ntp-"))
    out.mkdir(parents=True, exist_ok=True)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name, cs in curves.items():
        ax.semilogy(steps_rec, np.median(np.vstack(cs), axis=0), label=name)
    ax.set_xlabel("GD step")
    ax.set_ylabel("median 1 - corr(W_t, W^svm)")
    ax.legend()
    fig.tight_layout()
    path = out / "ntp_graph_svm.png"
    fig.savefig(path, dpi=120)
    print(f"figure: {path}")


if __name__ == "__main__":
    main()
