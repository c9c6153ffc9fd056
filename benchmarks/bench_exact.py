# SPDX-License-Identifier: BSD-3-Clause
"""Cost of the exact proof of a feasibility verdict against the float check, in the same run.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_exact.py           # README sizes
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_exact.py --quick   # small sizes only
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_exact.py --farkas  # infeasible verdicts

For each (n, T, d) of the README benchmark (Att-SVM of ``random_data(n, T, d, seed)`` at the
optimal tokens) it prints the float check (``check_feasibility(cs, exact=False)``), the same
call with the exact proof (``exact=True``), their ratio, the exact step alone
(``extras["exact_seconds"]``) and (float + step) / float, each the best of ``--repeats``
interleaved runs, for every seed in ``--seeds``. On a loaded machine the last ratio is the
steadier one (the float solve's own time varies between the two calls).

``--farkas`` times instead the proof of infeasible verdicts: Att-SVMs of ``random_data`` with
more rows than :math:`d^2` unknowns (two or three queries per sequence, or every causal query),
where the proof solves for the exact Farkas vector on the float certificate's support S. For
each instance it prints the float check, the exact check, and the three routes of
:func:`~svmgeo.solvers._exact._farkas_on_support` on the same S in the same run: the basis
route (``basis``: λ kept off d² + 1 rows, one square solve; taken first since session 41), the
projection through the d² + 1 rows of the outer products (``by rows``, taken when they are
independent) and the one through the null space of :math:`G_{SS}` (``null space``, the route
before session 35, kept as the fallback), the ratio by rows / basis, and whether the two projections'
points agree exactly. ``--large`` adds (200, 11, 20) (N = 2000, |S| ≈ 450), without the null
space route.

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
from svmgeo.solvers._exact import (
    ExactRows,
    _point_by_basis,
    _projection_by_null_space,
    _projection_by_rows,
    as_fractions,
)

FARKAS_CASES = (
    (40, 6, 4, {}),
    (5, 8, 3, {"query": "all", "mask": "causal"}),
    (20, 8, 5, {"n_queries": 3}),
    (30, 10, 10, {"n_queries": 2}),
)
"""(n, T, d, options of ``random_data``) of ``--farkas``: infeasible at the optimal tokens."""
LARGE_FARKAS_CASE = (200, 11, 20, {})
"""``--farkas --large``: d² = 400, |S| ≈ 450 (the null space route is not timed there)."""


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


def farkas(seeds: list[int], large: bool) -> None:
    """The ``--farkas`` table (see the module docstring)."""
    print(
        f"{'(n, T, d), options':>44} {'seed':>4} {'N':>5} {'|S|':>4} {'float [s]':>9} "
        f"{'exact [s]':>9} {'basis [s]':>9} {'by rows [s]':>11} {'null space [s]':>14} "
        f"{'rows/basis':>10} same"
    )
    for n, T, d, options in FARKAS_CASES + ((LARGE_FARKAS_CASE,) if large else ()):
        for seed in seeds:
            data = sg.random_data(n, T, d, seed=seed, **options)
            cs = sg.att_svm_constraints(data, sg.optimal_tokens(data, ties="first"))
            t_float, f0 = _best(lambda cs=cs: check_feasibility(cs, exact=False), 1)
            t_exact, f1 = _best(lambda cs=cs: check_feasibility(cs, exact=True), 1)
            lam = f0.farkas
            assert lam is not None, f"{(n, T, d)} seed {seed}: {f0.status}"
            S = np.flatnonzero(np.abs(lam) > 1e-12 * np.abs(lam).max())
            rows = ExactRows.build(cs)
            t_basis, _ = _best(lambda r=rows, x=lam, s=S: _point_by_basis(r, x, s), 1)
            t_rows, by_rows = _best(lambda r=rows, x=lam, s=S: _projection_by_rows(r, x, s), 1)
            if (n, T, d, options) == LARGE_FARKAS_CASE:
                null, same = "-", "-"
            else:
                t_null, by_null = _best(
                    lambda r=rows, x=lam, s=S: _projection_by_null_space(r, x, s), 1
                )
                null, same = f"{t_null:.3f}", str(as_fractions(by_rows) == as_fractions(by_null))
            case = f"{(n, T, d)!s} {options}"
            print(
                f"{case:>44} {seed:>4} {cs.N:>5} {S.size:>4} {t_float:>9.3f} {t_exact:>9.3f} "
                f"{t_basis:>9.3f} {t_rows:>11.3f} {null:>14} {t_rows / t_basis:>9.1f}x {same}"
                f"  {f1.status} proof={f1.proof}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--repeats", type=int, default=3, help="repeats per timing (best kept)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arith", action="store_true", help="also compare exact arithmetics")
    parser.add_argument("--farkas", action="store_true", help="infeasible verdicts instead")
    parser.add_argument("--large", action="store_true", help="--farkas: also (200, 11, 20)")
    args = parser.parse_args()
    if args.farkas:
        farkas(args.seeds, args.large)
        return
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
                f"{t_exact / t_float:>5.2f}x {step:>14.6f} {(t_float + step) / t_float:>5.2f}x"
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
