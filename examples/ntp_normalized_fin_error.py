# SPDX-License-Identifier: BSD-3-Clause
"""Normalized GD with a fixed step on next-token prediction: the fin error
||P_fin W_t - W^fin|| / max(1, ||W^fin||) at several step counts, every seed, for each step
size eta. Is it O(eta) and flat in t?

Measures the statement of docs/beyond.md (NTP section) that a fixed normalized step leaves an
O(eta) error in the finite directions S_fin (Li, Huang, Ildiz, Rawat, Oymak,
arXiv:2403.08081, predict W_t ~ W^fin + R_t W^svm for plain GD). Data: the cyclic setting
of docs/beyond.md, ``random_next_token_data(60, 5, 6, 10, tier_size=2, seed)``, seeds 0-9,
retrieval loss (the one with a finite W^fin), normalized GD from W = 0 via
``svmgeo.ntp.verify_ntp_training(data, loss="retrieval", step_size=eta, normalized=True)``.
One run per (eta, seed) to the largest step count, recording at every step count asked.

Run: ``PYTHONPATH=. python examples/ntp_normalized_fin_error.py [--etas 0.1 0.05]
[--steps 3000 6000 12000 24000] [--quick]``. Default: eta 0.1 and 0.05, steps 3000, 6000,
12000, 24000 (about 2 min of CPU, 4-10 min on a shared 2-core machine; ``--steps 3000 6000
12000`` halves it). The third digit of fin error / eta depends on rounding (docs/beyond.md). ``--quick``: seed 0, 3000 steps (a few seconds). Prints one row per (eta, seed) and fin error / eta over seeds per eta.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import svmgeo as sg
from svmgeo.ntp import verify_ntp_training

N, T, V, D = 60, 5, 6, 10


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--etas", type=float, nargs="+", default=[0.1, 0.05])
    ap.add_argument("--steps", type=int, nargs="+", default=[3000, 6000, 12000, 24000])
    ap.add_argument("--quick", action="store_true", help="seed 0, 3000 steps")
    args = ap.parse_args()
    seeds = [0] if args.quick else list(range(10))
    steps = [3000] if args.quick else sorted(args.steps)
    every = math.gcd(*steps)
    print(f"data: random_next_token_data({N}, {T}, {V}, {D}, tier_size=2, seed); "
          "loss=retrieval; normalized GD from W = 0")  # fmt: skip
    print(f"{'eta':>5} {'seed':>4} {'W_fin ok':>8} "
          + " ".join(f"{'fin@' + str(s):>10}" for s in steps) + f" {'last/eta':>8}")  # fmt: skip
    for eta in args.etas:
        ratios, drift = [], []
        for seed in seeds:
            data = sg.random_next_token_data(N, T, V, D, tier_size=2, seed=seed)
            rep = verify_ntp_training(data, loss="retrieval", step_size=eta, normalized=True,
                                      n_steps=steps[-1], record_every=every)  # fmt: skip
            at = [int(np.flatnonzero(rep.steps == s)[0]) for s in steps]
            fin = rep.fin_error[at]
            ratios.append(fin[-1] / eta)
            drift.append(abs(fin[-1] / fin[0] - 1))
            ok = rep.fin_success and not rep.fin_at_boundary  # BFGS converged to a finite W^fin
            print(f"{eta:>5g} {seed:>4} {ok!s:>8} " + " ".join(f"{f:>10.3e}" for f in fin)
                  + f" {fin[-1] / eta:>8.3f}")  # fmt: skip
        print(f"eta={eta:g}: fin error / eta at step {steps[-1]}, seeds {seeds[0]}-{seeds[-1]}: "
              f"{min(ratios):.3f}-{max(ratios):.3f}; largest relative change from step "
              f"{steps[0]}: {max(drift):.1e}")  # fmt: skip


if __name__ == "__main__":
    main()
