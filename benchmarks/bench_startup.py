# SPDX-License-Identifier: BSD-3-Clause
"""Benchmark of start-up (issue 25): `import svmgeo`, and the first call's numba compile.

1. Import time as a whole process (``python -c "import svmgeo"``), the median of ``--repeats``
   fresh processes, beside ``python -c "pass"``, ``import numpy``, ``import scipy`` and
   ``from svmgeo import *`` (every public name's module: scipy, the solvers, the analysis) run
   interleaved in the same rounds; the ratios to numpy and scipy are printed.
2. The first ``solve_svm`` (the Frobenius Att-SVM of ``random_data(12, 10, 20, seed=0)``, N =
   108 rows: the compiled small path's kernels), the first ``train`` (one (6, 8, 10)
   instance, seed 0, 100 steps) and the first
   ``train_batch`` (1000 such instances, seeds 0-999, 200 steps recorded every 20: the steps run
   on several threads, svmgeo.gd._backend.in_threads), each in a fresh process: cold
   (an empty compiled-kernel cache, ``SVMGEO_CACHE_DIR`` a new temporary directory) and warm
   (a second process on the cache the cold one wrote). Each process also times a second,
   identical call, so that first - second is the compile (or the cache load, with the import of
   numba and of the modules it pulls in, which ``import svmgeo`` no longer pays). Wall and CPU
   seconds are printed: the compile runs on one thread, so its CPU time is the figure to compare
   on a shared machine.

With ``--trees DIR,DIR,... --rounds R`` only the cold first calls run, alternating between
the checkouts (``PYTHONPATH=DIR``) round by round, so that "before" and "after" see the same
load (every round is printed).

Run:  PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python benchmarks/bench_startup.py [--repeats 7]
      [--no-compile] [--first solve,train,batch] [--trees DIR,DIR --rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

IMPORTS = {
    "python -c pass": "pass",
    "import numpy": "import numpy",
    "import scipy": "import scipy",
    "import svmgeo": "import svmgeo",
    "from svmgeo import *": "from svmgeo import *",
}

FIRST_CALL = r"""
import json, sys, time
import svmgeo as sg
what = sys.argv[1]
train, train_batch = sg.train, sg.train_batch  # their modules imported before the clock starts
if what == "solve":
    data = sg.random_data(12, 10, 20, seed=0)
    args = (sg.att_svm_constraints(data, sg.optimal_tokens(data)),)
    run = lambda: sg.solve_svm(*args)
elif what == "train":
    args = (sg.random_data(6, 8, 10, seed=0),)
    run = lambda: train(*args, n_steps=100)
else:
    args = ([sg.random_data(6, 8, 10, seed=s) for s in range(1000)],)
    run = lambda: train_batch(*args, n_steps=200, record_every=20)
out = {}
for key in ("first", "second"):
    c, t = time.process_time(), time.perf_counter()
    run()
    out[key] = (time.perf_counter() - t, time.process_time() - c)
print(json.dumps(out))
"""


def load() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def wall(code: str, env: dict[str, str]) -> float:
    """Seconds a fresh ``python -c code`` takes, start to exit."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return time.perf_counter() - t


def import_times(repeats: int, env: dict[str, str]) -> dict[str, list[float]]:
    """Every command of :data:`IMPORTS` ``repeats`` times, interleaved round by round."""
    times: dict[str, list[float]] = {k: [] for k in IMPORTS}
    for code in IMPORTS.values():  # one untimed round: the files in the page cache
        wall(code, env)
    for _ in range(repeats):
        for name, code in IMPORTS.items():
            times[name].append(wall(code, env))
    return times


def first_call(what: str, cache: str, env: dict[str, str]) -> dict[str, tuple[float, float]]:
    """``{"first": (wall, cpu), "second": (wall, cpu)}`` of ``what`` in a fresh process."""
    env = {**env, "SVMGEO_CACHE_DIR": cache}
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run(
        [sys.executable, "-c", FIRST_CALL, what],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    )
    return {k: tuple(v) for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


def alternate(trees: list[str], rounds: int, firsts: list[str], env: dict[str, str]) -> None:
    """Cold first calls of ``firsts``, each checkout of ``trees`` in turn, ``rounds`` times."""
    print("cold first call, fresh process and cache each: wall s / CPU s (second call)")
    for r in range(rounds):
        for what in firsts:
            for tree in trees:
                with tempfile.TemporaryDirectory(prefix="svmgeo-cache-") as cache:
                    res = first_call(what, cache, {**env, "PYTHONPATH": tree})
                (fw, fc), (sw, sc) = res["first"], res["second"]
                print(
                    f"  round {r} {what:5s} {tree}: first {fw:6.2f} / {fc:6.2f}"
                    f"   [second {sw:6.3f} / {sc:6.3f}]   load {load()}",
                    flush=True,
                )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7, help="fresh processes per import command")
    ap.add_argument("--no-compile", action="store_true", help="skip the first-call compile runs")
    ap.add_argument(
        "--first",
        default="solve,train,batch",
        help="comma-separated first calls to time: solve, train, batch",
    )
    ap.add_argument("--trees", help="comma-separated checkouts: cold first calls alternate")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds with --trees")
    args = ap.parse_args()
    env = {**os.environ, "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
    print(f"python {sys.version.split()[0]}; load average at the start: {load()}")
    if args.trees:
        alternate(args.trees.split(","), args.rounds, args.first.split(","), env)
        return

    times = import_times(args.repeats, env)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\nimport time, whole process, median of {args.repeats} (every run listed), s")
    for name, runs in times.items():
        print(f"  {name:22s} {med[name]:6.3f}   ({', '.join(f'{x:.3f}' for x in runs)})")
    sv = med["import svmgeo"]
    print(
        f"  import svmgeo / import numpy = {sv / med['import numpy']:.2f}, "
        f"/ import scipy = {sv / med['import scipy']:.2f}; "
        f"from svmgeo import * / import svmgeo = {med['from svmgeo import *'] / sv:.2f}"
    )
    print(f"  load average: {load()}")

    if args.no_compile:
        return
    print("\nfirst call, fresh process each: wall s / CPU s (second call in brackets)")
    labels = {
        "solve": "solve_svm N = 108",
        "train": "train (6, 8, 10), 100 steps",
        "batch": "train_batch 1000 x 200",
    }
    for what in args.first.split(","):
        label = labels[what]
        with tempfile.TemporaryDirectory(prefix="svmgeo-cache-") as cache:
            for state in ("cold", "warm"):
                r = first_call(what, cache, env)
                (fw, fc), (sw, sc) = r["first"], r["second"]
                print(
                    f"  {label:28s} {state}: first {fw:6.2f} / {fc:6.2f}"
                    f"   [second {sw:6.3f} / {sc:6.3f}]   load {load()}"
                )


if __name__ == "__main__":
    main()
