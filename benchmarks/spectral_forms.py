# SPDX-License-Identifier: BSD-3-Clause
r"""The spectral Att-SVM's compressed SDP in its dual and its primal form (docs/spectral.md,
"Solver and certificate"): the duality gap and worst residual of svmgeo's own certificate for
each form and SDP backend.

On the self-attention rows of ``random_data(6, 8, 10, seed, query="all")`` (every query on its
optimal token, ``att_svm_constraints(data, optimal_tokens(data))``), seeds 0-4 by default,
each of Clarabel and SCS solves the compressed SDP in the form and at the tolerance that
``svmgeo.solve_svm(cs, norm="spectral")`` tries (dual at 1e-12, primal at 1e-10; SCS at 1e-10
for both), and svmgeo's certificate (tolerance 1e-8) is recomputed from the data for each
answer. The last column of each seed's first row says which answer ``solve_svm`` returned.
This reaches the private ``svmgeo.solvers._spectral`` functions that ``solve_svm`` runs: the
public API runs the primal form only when the dual one is not certified to 1e-9.

    OPENBLAS_NUM_THREADS=1 python benchmarks/spectral_forms.py [--seeds 0 1 2 3 4]

About 15 s on one core (cvxpy's compile time included).
"""

from __future__ import annotations

import argparse
import sys
import time

import svmgeo as sg
from svmgeo.solvers._spectral import _ATTEMPTS, _certified, _compressed_sdp

TOL = 1e-8  # solve_spectral's default certificate tolerance


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    a = parser.parse_args(argv)
    print("| seed | backend | form (tol) | cvxpy status | iterations | duality gap | worst "
          "residual | certified (1e-8) | seconds | solve_svm returned |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for seed in a.seeds:
        data = sg.random_data(6, 8, 10, seed=seed, query="all")
        cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
        chosen = sg.solve_svm(cs, norm="spectral")
        assert chosen.certificate is not None
        picked = (f"{chosen.solver.rpartition('/')[2]}, {chosen.extras.get('form')}, gap "
                  f"{chosen.certificate.duality_gap:.1e}")  # fmt: skip
        for backend in ("clarabel", "scs"):
            for form, tol in _ATTEMPTS:
                tol_shown = max(tol, 1e-10) if backend == "scs" else tol  # SCS: at most 1e-10
                start = time.perf_counter()
                W, lam, native, n_iter, _ = _compressed_sdp(cs, backend, form, tol)
                if W is None or lam is None:
                    print(f"| {seed} | {backend} | {form} ({tol_shown:g}) | {native} | {n_iter} | - | "
                          f"- | no answer | {time.perf_counter() - start:.2f} | {picked} |")  # fmt: skip
                    picked = ""
                    continue
                res = _certified(cs, W, lam, TOL, label=f"spectral-forms/{backend}",
                                 native=native, n_iter=n_iter, extras={"form": form})  # fmt: skip
                cert = res.certificate
                assert cert is not None
                print(f"| {seed} | {backend} | {form} ({tol_shown:g}) | {native} | {n_iter} | "
                      f"{cert.duality_gap:.1e} | {cert.worst:.1e} | {cert.passed} | "
                      f"{time.perf_counter() - start:.2f} | {picked} |", flush=True)  # fmt: skip
                picked = ""
    return 0


if __name__ == "__main__":
    sys.exit(main())
