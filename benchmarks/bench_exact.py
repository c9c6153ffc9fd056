# SPDX-License-Identifier: BSD-3-Clause
"""Cost of the exact proof of a feasibility verdict against the float check, in the same run.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_exact.py           # README sizes
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_exact.py --quick   # small sizes only

For each (n, T, d) of the README benchmark (Att-SVM of ``random_data(n, T, d, seed)`` at the
optimal tokens) it prints the float check (``check_feasibility(cs, exact=False)``), the same
call with the exact proof (``exact=True``), their ratio, the exact step alone
(``extras["exact_seconds"]``) and (float + step) / float, each the best of ``--repeats``
interleaved runs, for every seed in ``--seeds``. On a loaded machine the last ratio is the
steadier one (the float solve's own time varies between the two calls).

``--arith`` adds, at the two small sizes, the exact margins :math:`a_j^\\top W b_j` of the
verdict's point computed three ways: svmgeo's limb arithmetic (float64 BLAS on integer
digits), python-flint ``fmpz_mat`` and ``fractions.Fraction``, to justify the choice.
"""

from __future__ import annotations

import argparse
import os
import time
from fractions import Fraction

import flint
import numpy as np

import svmgeo as sg
from svmgeo.solvers import check_feasibility
from svmgeo.solvers._exact import ExactRows


def _best(fn, repeats: int):  # type: ignore[no-untyped-def]
    best, out = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def _fraction_margins(cs: sg.ConstraintSet, W: np.ndarray) -> list[Fraction]:
    X = np.asarray(cs.tokens.X)  # type: ignore[union-attr]
    Qs = np.asarray(cs.tokens.queries)  # type: ignore[union-attr]
    Wf = [[Fraction(float(x)) for x in row] for row in W]
    out = []
    for j in range(cs.N):
        i = cs.seq[j]
        a = [
            Fraction(float(p)) - Fraction(float(q))
            for p, q in zip(X[i, cs.pref[j]], X[i, cs.comp[j]], strict=True)
        ]
        b = [Fraction(float(x)) for x in Qs[i, cs.query[j]]]
        u = [sum((w * y for w, y in zip(row, b, strict=True)), Fraction(0)) for row in Wf]
        out.append(sum((x * y for x, y in zip(a, u, strict=True)), Fraction(0)))
    return out


def _flint_margins(cs: sg.ConstraintSet, W: np.ndarray) -> list[Fraction]:
    X = np.asarray(cs.tokens.X)  # type: ignore[union-attr]
    Qs = np.asarray(cs.tokens.queries)  # type: ignore[union-attr]
    d = cs.d
    Wq = flint.fmpq_mat(
        d, d, [flint.fmpq(*Fraction(float(x)).as_integer_ratio()) for x in W.ravel()]
    )
    out = []
    for j in range(cs.N):
        i = cs.seq[j]
        a = [
            Fraction(float(p)) - Fraction(float(q))
            for p, q in zip(X[i, cs.pref[j]], X[i, cs.comp[j]], strict=True)
        ]
        A = flint.fmpq_mat(1, d, [flint.fmpq(*x.as_integer_ratio()) for x in a])
        B = flint.fmpq_mat(
            d, 1, [flint.fmpq(*Fraction(float(x)).as_integer_ratio()) for x in Qs[i, cs.query[j]]]
        )
        v = (A * Wq * B)[0, 0]
        out.append(Fraction(int(v.p), int(v.q)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--repeats", type=int, default=3, help="repeats per timing (best kept)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arith", action="store_true", help="also compare exact arithmetics")
    args = parser.parse_args()
    sizes = [(20, 10, 20), (50, 20, 40)] + ([] if args.quick else [(200, 20, 1000)])
    threads = os.environ.get("OPENBLAS_NUM_THREADS") or "default"
    print(f"# cores visible: {os.cpu_count()}, BLAS threads: {threads}")
    print(
        f"{'(n, T, d)':>16} {'seed':>4} {'N':>5} {'float [s]':>10} {'exact [s]':>10} "
        f"{'ratio':>6} {'proof step [s]':>14} {'(float+step)/float':>6}  verdict"
    )
    for n, T, d in sizes:
        for seed in args.seeds:
            data = sg.random_data(n, T, d, seed=seed)
            cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
            reps = args.repeats if d < 1000 else max(1, min(args.repeats, 2))
            t_float = t_exact = step = np.inf
            for _ in range(reps):  # interleaved, so both see the same machine load
                start = time.perf_counter()
                f0 = check_feasibility(cs, exact=False)
                t_float = min(t_float, time.perf_counter() - start)
                start = time.perf_counter()
                f1 = check_feasibility(cs, exact=True)
                t_exact = min(t_exact, time.perf_counter() - start)
                step = min(step, f1.extras.get("exact_seconds", np.nan))
            print(
                f"{(n, T, d)!s:>16} {seed:>4} {cs.N:>5} {t_float:>10.4f} {t_exact:>10.4f} "
                f"{t_exact / t_float:>5.2f}x {step:>14.4f} {(t_float + step) / t_float:>5.2f}x"
                f"  {f1.status} proof={f1.proof} (float: {f0.status})"
            )
    if args.arith:
        print("\n# exact margins of the verdict's point, three arithmetics (seed 0)")
        print(f"{'(n, T, d)':>16} {'limbs [s]':>10} {'flint [s]':>10} {'Fraction [s]':>12} agree")
        for n, T, d in sizes[:2]:
            data = sg.random_data(n, T, d, seed=0)
            cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
            W = check_feasibility(cs, exact=False).point
            assert W is not None
            rows = ExactRows.build(cs)
            t_l, m = _best(lambda rows=rows, W=W: rows.margins(W).ints(), 1)
            e = rows.margins(W).exp
            t_q, mq = _best(lambda cs=cs, W=W: _flint_margins(cs, W), 1)
            t_f, mf = _best(lambda cs=cs, W=W: _fraction_margins(cs, W), 1)
            limbs = [Fraction(int(x)) * Fraction(2) ** e for x in m]
            agree = limbs == mf == mq
            print(f"{(n, T, d)!s:>16} {t_l:>10.4f} {t_q:>10.3f} {t_f:>12.3f} {agree}")


if __name__ == "__main__":
    main()
