# SPDX-License-Identifier: BSD-3-Clause
"""l_p mirror descent on softmax attention vs the l_p Att-SVM (Julistiono, Tarzanagh, Azizan,
arXiv:2410.14581).

For p in {1.1, 1.5, 2, 3} and every seed: run ``sg.train_mirror`` (normalized steps, svmgeo's
option; ``--plain`` for the paper's plain steps) from W = 0 on ``sg.random_data(n, T, d)``, solve
the l_p Att-SVM of the tokens the run selects at the end, and record 1 - corr(W_t, W^mm_p)
along the run, 1 - corr with the *other* p's SVMs at the end (is it the l_p one that MD finds?),
and the sparsity of W (fraction of entries below 1e-3 max|W|), against that of W^mm_p.

Run: ``PYTHONPATH=. python examples/mirror_descent.py [--quick] [--out DIR]``. Prints every seed
and writes ``mirror_descent.png`` to DIR (default: a new temporary directory).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

import svmgeo as sg
from svmgeo.gd._mirror import sparsity
from svmgeo.gd._oracle import RiskOracle
from svmgeo.plot import pyplot

PS = (1.1, 1.5, 2.0, 3.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--plain", action="store_true", help="plain (unnormalized) mirror steps")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    n, T, d = 4, 5, 10
    seeds = [0, 1, 2] if args.quick else list(range(10))
    steps = 1000 if args.quick else 4000
    eta = 2.0 if args.plain else 0.1
    print(f"data: random_data({n}, {T}, {d}, seed); {steps} steps, eta={eta}, "
          f"normalized={not args.plain}")  # fmt: skip
    print(f"{'seed':>4} {'p':>4} {'opt?':>5} {'1-corr(W,W_p)':>13} "
          + " ".join(f"{'vs p=' + format(q, 'g'):>9}" for q in PS)
          + f" {'sparse W':>8} {'sparse W_p':>10}")  # fmt: skip
    curves: dict[float, list[np.ndarray]] = {p: [] for p in PS}
    record_steps = np.array([0])
    finals: dict[float, list[float]] = {p: [] for p in PS}
    for seed in seeds:
        data = sg.random_data(n, T, d, seed=seed)
        oracle = RiskOracle(data)
        opt = sg.optimal_tokens(data).reshape(-1)
        for p in PS:
            run = sg.train_mirror(data, exponent=p, step_size=eta, n_steps=steps,
                                  normalized=not args.plain)  # fmt: skip
            sel = oracle(run.W).selected.reshape(-1)
            svms = {q: sg.att_svm(data, sel, norm=("lp", q)) for q in PS}  # type: ignore[arg-type]
            Wp = svms[p].W
            assert Wp is not None and svms[p].success, svms[p].message
            gap = np.array([1 - sg.correlation(W, Wp) if np.any(W) else 1.0
                            for W in run.history.W])  # fmt: skip
            curves[p].append(gap)
            record_steps = run.history.step
            finals[p].append(float(gap[-1]))
            others = " ".join(
                f"{1 - sg.correlation(run.W, svms[q].W):>9.1e}"
                for q in PS  # type: ignore[arg-type]
            )
            print(f"{seed:>4} {p:>4g} {bool(np.all(sel == opt))!s:>5} {gap[-1]:>13.2e} {others} "
                  f"{sparsity(run.W):>8.2f} {sparsity(Wp):>10.2f}")  # fmt: skip
    print("\nmedian 1 - corr(W_T, W^mm_p) over seeds: "
          + ", ".join(f"p={p:g}: {np.median(finals[p]):.2e}" for p in PS))  # fmt: skip
    out = args.out or Path(tempfile.mkdtemp(prefix="svmgeo-mirror-"))
    out.mkdir(parents=True, exist_ok=True)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for p in PS:
        med = np.median(np.vstack(curves[p]), axis=0)
        ax.semilogy(record_steps, np.maximum(med, 1e-16), label=f"p = {p:g}")
    ax.set_xlabel("mirror-descent step")
    ax.set_ylabel("median 1 - corr(W_t, W^mm_p)")
    ax.legend()
    fig.tight_layout()
    path = out / "mirror_descent.png"
    fig.savefig(path, dpi=120)
    print(f"figure: {path}")


if __name__ == "__main__":
    main()
