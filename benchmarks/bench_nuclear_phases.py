# SPDX-License-Identifier: BSD-3-Clause
"""Where a small Att-SVM⋆ solve spends its CPU time: ``solve_nuclear(cs)`` by phase (issue 25).

Each phase function of ``svmgeo.solvers._nuclear`` / ``_nuclear_factored`` is wrapped by a
timer (``time.process_time``; no cProfile, whose overhead would distort the many small calls of
phase 1), and ``solve_nuclear`` runs warm (after one call per instance, which also fills the
ConstraintSet's ``compress`` cache) ``--rounds`` times over the seeds. Printed: the import of
svmgeo and the first call in this fresh process, the mean warm CPU time per solve and each
phase's share. A phase that the code at hand does not have (e.g. before issue 25) is skipped.

Run:  PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python benchmarks/bench_nuclear_phases.py
      [--size 10,10,20] [--seeds 0,1,2,3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import collections
import time
from collections.abc import Callable
from typing import Any

PHASES = [
    ("_nuclear", "check_feasibility", "float feasibility check"),
    ("_nuclear_factored", "compress", "compress (cached per ConstraintSet after issue 25)"),
    ("_nuclear", "compress", "compress (cached per ConstraintSet after issue 25)"),
    ("_nuclear_factored", "_lbfgs", "phase 1: L-BFGS subproblems"),
    ("_nuclear_factored", "_escape", "phase 1: escape / widen checks"),
    ("_nuclear_factored", "_widen", "phase 1: escape / widen checks"),
    ("_nuclear_factored", "_polish_active_set", "KKT polish (checkpoint tries + final)"),
    ("_nuclear_factored", "_closes_gap", "compressed gap screen of a checkpoint try"),
    ("_nuclear_factored", "polish_nuclear", "polish_nuclear (dual spectral norm)"),
    ("_nuclear_factored", "nuclear_certificate", "nuclear_certificate"),
    ("_nuclear_factored", "finish", "result assembly (finish)"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="10,10,20", help="n,T,d")
    parser.add_argument("--seeds", default="0,1,2,3")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    wall, cpu = time.perf_counter(), time.process_time()
    import svmgeo as sg
    from svmgeo.solvers import _nuclear, _nuclear_factored

    imported = (time.perf_counter() - wall, time.process_time() - cpu)
    modules = {"_nuclear": _nuclear, "_nuclear_factored": _nuclear_factored}
    spent: dict[str, float] = collections.defaultdict(float)

    def timed(f: Callable[..., Any], label: str) -> Callable[..., Any]:
        def wrapper(*a: Any, **k: Any) -> Any:
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                spent[label] += time.process_time() - t

        return wrapper

    for module, name, label in PHASES:
        if hasattr(modules[module], name):
            setattr(modules[module], name, timed(getattr(modules[module], name), label))

    n, T, d = (int(v) for v in args.size.split(","))
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    for seed in seeds:
        data = sg.random_data(n, T, d, seed=seed)
        rows.append(sg.att_svm_constraints(data, sg.optimal_tokens(data)))
    wall, cpu = time.perf_counter(), time.process_time()
    _nuclear.solve_nuclear(rows[0])
    first = (time.perf_counter() - wall, time.process_time() - cpu)
    for cs in rows[1:]:
        _nuclear.solve_nuclear(cs)
    spent.clear()
    total = 0.0
    for _ in range(args.rounds):
        for cs in rows:
            t = time.process_time()
            res = _nuclear.solve_nuclear(cs)
            total += time.process_time() - t
            if not res.success:
                raise RuntimeError(f"solve_nuclear: {res.status}: {res.message}")
    count = args.rounds * len(rows)
    print(
        f"(n, T, d) = {(n, T, d)}, seeds {seeds}, {args.rounds} rounds; import svmgeo "
        f"{imported[0]:.2f} s wall / {imported[1]:.2f} s CPU; first solve_nuclear "
        f"{first[0] * 1e3:.0f} ms wall / {first[1] * 1e3:.0f} ms CPU"
    )
    print(f"warm solve_nuclear, mean CPU per solve: {total / count * 1e3:.1f} ms")
    accounted = 0.0
    for label, value in spent.items():
        accounted += value
        print(f"  {label:55s} {value / count * 1e3:8.2f} ms {100 * value / total:6.1f} %")
    rest = total - accounted
    print(f"  {'the rest (validation, compression glue, Python)':55s} {rest / count * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
