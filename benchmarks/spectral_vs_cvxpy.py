# SPDX-License-Identifier: BSD-3-Clause
r"""The table of docs/spectral.md ("Measured example"): svmgeo's spectral Att-SVM against the
naive cvxpy model.

For each instance ``random_data(6, 8, 10, **kw)`` at the optimal tokens (the five
``INSTANCES`` of ``tests/solvers/test_spectral.py``, which asserts the same comparison),
svmgeo's compressed SDP (``sg.att_svm(..., norm="spectral")``) and the naive ``sigma_max``
model of :func:`svmgeo.solvers.solve_naive_cvxpy_duals`, solved by Clarabel at 1e-10 (the
test's ``REFERENCE`` options), give

.. math::

    \text{vs cvxpy (rel.)} = \frac{|\|W\|_2 - \mathrm{OPT}_{\text{cvxpy}}|}{\mathrm{OPT}_{\text{cvxpy}}},

beside the rows N, the compressed shape :math:`(r_1, r_2)`, :math:`\|W\|_2`, svmgeo's duality
gap and worst certificate residual, and the seconds of each (svmgeo's first includes cvxpy's
import; cvxpy's is the ``solve_time`` it reports, canonicalization included).

    OPENBLAS_NUM_THREADS=1 python benchmarks/spectral_vs_cvxpy.py [--instances 0 1 2 3 4]

A few seconds on one core.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import svmgeo as sg
from svmgeo.solvers import solve_naive_cvxpy_duals
from tests.solvers.test_spectral import INSTANCES, REFERENCE


def rows(instances: list[int]) -> list[str]:
    """The markdown table, header first: one row per chosen index into the test's
    ``INSTANCES``."""
    out = [
        "| `kw` | rows N | (r₁, r₂) | ‖W‖₂ | vs cvxpy (rel.) | gap | worst residual "
        "| svmgeo s | cvxpy s | cvxpy status |",
        "|---" * 10 + "|",
    ]
    for kw in (list(INSTANCES.values())[i] for i in instances):
        label = ", ".join(f"{key}={value!r}" for key, value in kw.items())
        data = sg.random_data(6, 8, 10, **kw)  # type: ignore[arg-type]
        alpha = sg.optimal_tokens(data, ties="first")
        start = time.perf_counter()
        res = sg.att_svm(data, alpha, norm="spectral")
        seconds = time.perf_counter() - start
        assert res.certificate is not None, res.message
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Solution may be inaccurate")
            _, _, status, value, cvxpy_seconds = solve_naive_cvxpy_duals(
                res.constraints,
                "spectral",
                **REFERENCE,  # type: ignore[arg-type]
            )
        r1, r2 = res.extras["compressed"]
        cert = res.certificate
        out.append(
            f"| `{label}` | {res.constraints.N} | ({r1}, {r2}) | {res.objective:.10f} "
            f"| {abs(res.objective - value) / value:.1e} | {cert.duality_gap:.1e} "
            f"| {cert.worst:.1e} | {seconds:.2f} | {cvxpy_seconds:.2f} | {status} |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, nargs="+", default=[0, 1, 2, 3, 4],
                        help="indices into the test's INSTANCES (default: all five)")  # fmt: skip
    args = parser.parse_args(argv)
    print("\n".join(rows(args.instances)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
