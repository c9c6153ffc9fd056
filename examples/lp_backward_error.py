# SPDX-License-Identifier: BSD-3-Clause
r"""The ℓp minimizer check is a backward-error check; the forward radius settles the verdict.

docs/analysis.md ("One optimum does not mean the solver returned it"). One sequence, one query
z = e1, selection α = 0, u = W e1; the rows are

    u1 >= 1,   u1 + 1e-10 u2 >= 1,   u1 + 5 u2 >= 1,

and the third competing token scores 2 against the selected token's 1. For every p > 1 the
unique ℓp minimizer is u* = (1, 0) (u1 >= 1 is forced and u2 = 0 then meets the other rows), with
all three margins exactly 1, so a high-scoring token is a support token and α is not a LOT
(SPEC §5; svmgeo's own Frobenius answer there is undecided: an active margin with a zero
multiplier). The printed rows show, for each p, the returned u2 (0 at u*), whether
``res.extras["argmin"]`` shows W to be the minimizer (a backward error: W is the exact
minimizer of rows moved by ~1e-15, the second row's slack 1e-10·u2, not of these rows), its
forward radius (a bound on ||W - W*||_p / ||W||_p, Clarkson's inequalities), the third row's
slack at W and the LOT verdict. The slack is below what the radius lets W*'s margin differ
by, so the token is not proved slack at W* and the verdict is undecided (before session 61
it was decided LOT = True, a wrong verdict).

    OPENBLAS_NUM_THREADS=1 python examples/lp_backward_error.py [--p 3,10,20,100]

Runtime about 2 s.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import svmgeo as sg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--p", default="3,10,20,100", help="comma-separated exponents p > 1")
    args = parser.parse_args()
    X = np.array([[[0.0, 0.0], [-1.0, 0.0], [-1.0, -1e-10], [-1.0, -5.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[1.0, 0.0, 0.0, 2.0]]))
    print("closed form: u* = (1, 0) for every p > 1, all margins 1: not a LOT")
    print(
        f"{'p':>6}  {'status':<18} {'u2':>10}  shown  {'radius':>9}  {'slack3':>9}  LOT    decided"
    )
    for p in (float(s) for s in args.p.split(",")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
            res = sg.att_svm(data, [0], norm=("lp", p))
            lot = sg.is_locally_optimal(data, [0], norm=("lp", p))
        check = res.extras["argmin"]
        u2 = float(res.W[1, 0])
        slack = float(res.margins[2] - 1.0)
        print(
            f"{p:>6g}  {res.status.value:<18} {u2:>10.3g}  {check.shown!s:<5}  "
            f"{check.radius:>9.3g}  {slack:>9.3g}  {bool(lot)!s:<5}  {lot.decided}"
        )


if __name__ == "__main__":
    main()
