# SPDX-License-Identifier: BSD-3-Clause
"""Plain GD before and after a change, side by side: ``bench_gd.py --quick`` of two checkouts,
interleaved, with CPU time beside wall time (issue #23: new optimizers must not slow plain GD).

Each round runs, for each checkout in turn (the order alternates between rounds, so a drift of
the machine's load hits both), in a fresh process with ``OPENBLAS_NUM_THREADS=1``:

1. ``benchmarks/bench_gd.py --quick`` of that checkout (wall-clock steps/s, as it prints);
2. a probe: ``train(random_data(6, 8, 10), n_steps=20000)`` (normalized GD on W, numba, one
   thread), best of 3, as steps per wall second (``time.perf_counter``) and per CPU second
   (``time.process_time``, which a busy machine does not inflate).

The load average (``os.getloadavg``) is printed beside every run. A warm-up run per checkout
fills numba's cache first (not counted).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_gd_compare.py BEFORE AFTER [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

PROBE = """
import time, numba, svmgeo as sg
numba.set_num_threads(1)
data = sg.random_data(6, 8, 10, seed=0)
kw = dict(n_steps=20000, record_every=20000, record=("loss",), backend="numba")
sg.train(data, n_steps=10, record_every=10, record=("loss",))
best_wall = best_cpu = 0.0
for _ in range(3):
    w, c = time.perf_counter(), time.process_time()
    sg.train(data, **kw)
    w, c = time.perf_counter() - w, time.process_time() - c
    best_wall, best_cpu = max(best_wall, 20000 / w), max(best_cpu, 20000 / c)
print(f"probe wall {best_wall:.0f} cpu {best_cpu:.0f}")
"""
#: The lines of bench_gd.py's output kept in the table (label -> regular expression).
FIELDS = {
    "W": r"svmgeo numba :\s+([\d,]+) steps/s",
    "p": r'param="p"\s+:\s+([\d,]+) steps/s',
    "head": r"train_head=True\s+:\s+([\d,]+) steps/s",
    "numpy": r"svmgeo numpy :\s+([\d,]+) steps/s",
    "batch1": r"numba, 1 thread\(s\):\s+([\d,]+) instance-steps/s",
}


def run(tree: Path, args: list[str]) -> tuple[str, float, float, float]:
    """Output, wall seconds, CPU seconds of the child, 1-minute load before it started."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(tree)}
    load = os.getloadavg()[0]
    before = os.times()
    wall = time.perf_counter()
    out = subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    wall = time.perf_counter() - wall
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return out, wall, cpu, load


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    a = parser.parse_args()
    trees = {"before": a.before.resolve(), "after": a.after.resolve()}
    for tree in trees.values():  # warm numba's cache
        run(tree, ["-c", PROBE])
    cols = ["round", "tree", *FIELDS, "probe wall", "probe cpu", "bench wall s", "bench cpu s",
            "load"]  # fmt: skip
    print("| " + " | ".join(cols) + " |")
    print("|---" * len(cols) + "|")
    for r in range(a.rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for name in order:
            out, wall, cpu, load = run(trees[name], ["benchmarks/bench_gd.py", "--quick"])
            vals = []
            for pattern in FIELDS.values():
                m = re.search(pattern, out)
                vals.append(m.group(1) if m else "-")
            probe, _, _, load2 = run(trees[name], ["-c", PROBE])
            m = re.search(r"probe wall (\d+) cpu (\d+)", probe)
            pw, pc = (f"{int(m.group(1)):,}", f"{int(m.group(2)):,}") if m else ("-", "-")
            print(f"| {r} | {name} | " + " | ".join(vals)
                  + f" | {pw} | {pc} | {wall:.1f} | {cpu:.1f} | {load:.2f}, {load2:.2f} |",
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
