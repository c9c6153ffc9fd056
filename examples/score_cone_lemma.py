# SPDX-License-Identifier: BSD-3-Clause
"""Where "α is a LOT" and "W^mm_α lies in a score cone" disagree, over every selection.

docs/theory.md ("The score cone"). For each seed, ``random_data(3, 4, 3, seed)`` and each of its
4^3 = 64 selections α: when Att-SVM(α) is feasible (``att_svm(data, alpha).W`` is not None),
the LOT test ``is_locally_optimal(data, alpha)`` and the score-cone margin
``score_cone_margin(data, alpha, W^mm_α) / ‖W^mm_α‖`` (ε_max: W^mm_α ∈ C_ε(α) for every
0 < ε ≤ ε_max; −inf means the cone is empty: some sequence has high-scoring tokens but no
low-scoring one). A non-LOT has ε_max = 0 in exact arithmetic (a support token ties the best
low-scoring one), which float64 rounds to ±1e-15, so "W^mm_α in a cone" reads ε_max > 1e-9.
It prints each selection where the two disagree, with its sequences that have no support token
(``support_tokens(data, alpha).mask``), and the totals.

TF-SVM's §5.4 lemma (as reconstructed in docs/theory.md) says a LOT α has W^mm_α in C_ε(α) for
small ε. The disagreements found here are LOTs with a sequence that has no support token (the
LOT test passes vacuously there): svmgeo's measurement, not a theorem.

    OPENBLAS_NUM_THREADS=1 python examples/score_cone_lemma.py [--seeds 0,1,2,3,4,5]

Runtime about 10 s.
"""

from __future__ import annotations

import argparse
import itertools
import warnings

import numpy as np

import svmgeo as sg

IN_CONE = 1e-9  # eps_max above float64's round-off of an exact 0 (about 1e-15 here)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2,3,4,5", help="comma-separated seeds")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    feasible = disagree = 0
    print("seed  alpha      LOT    eps_max     sequences without a support token")
    for seed in seeds:
        data = sg.random_data(3, 4, 3, seed=seed)
        for alpha in itertools.product(range(data.T), repeat=data.n):
            a = np.array(alpha)
            with warnings.catch_warnings():
                warnings.simplefilter("error", sg.InaccurateSolutionWarning)
                W = sg.att_svm(data, a).W
            if W is None:
                continue
            feasible += 1
            lot = sg.is_locally_optimal(data, a)
            if not lot.decided:
                raise SystemExit(f"seed {seed}, alpha {list(alpha)}: LOT test undecided")
            eps_max = sg.score_cone_margin(data, a, W) / float(np.linalg.norm(W))
            if bool(lot) != (eps_max > IN_CONE):
                disagree += 1
                bare = np.flatnonzero(~sg.support_tokens(data, a).mask.any(axis=1)).tolist()
                print(f"{seed:4d}  {list(alpha)!s:9s}  {bool(lot)!s:5s}  {eps_max:<10.4g}  {bare}")
    print(f"{feasible} feasible selections over {len(seeds)} seeds; "
          f"{disagree} where 'LOT' and 'eps_max > 1e-9' disagree")  # fmt: skip


if __name__ == "__main__":
    main()
