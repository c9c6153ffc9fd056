# SPDX-License-Identifier: BSD-3-Clause
"""Run one benchmark instance in a fresh process, so that its peak memory is its own.

A script calls :func:`run_isolated` for each instance; that runs the script again as
``python SCRIPT --one n,T,d,seed,path``, and the script answers with :func:`answer_one`, which
prints the figures of its ``one(n, T, d, seed, path)`` as one JSON line.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from typing import Any


def run_isolated(script: str, n: int, T: int, d: int, seed: int, path: str) -> dict[str, Any]:
    """The JSON figures the script printed for one instance, or ``{"status": "crashed: ..."}``."""
    cmd = [sys.executable, script, "--one", f"{n},{T},{d},{seed},{path}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, env=os.environ.copy())
    if out.returncode != 0:
        tail = out.stderr.strip().splitlines()[-1:] or [f"exit {out.returncode}"]
        return {"status": f"crashed: {tail[0][:80]}"}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def answer_one(spec: str, one: Callable[[int, int, int, int, str], dict[str, Any]]) -> None:
    """Answer ``--one n,T,d,seed,path``: print ``one(...)`` as JSON."""
    n, T, d, seed, path = spec.split(",")
    print(json.dumps(one(int(n), int(T), int(d), int(seed), path)))


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def solve_figures(cs: Any, res: Any, wall: float, cpu: float) -> dict[str, Any]:
    """The figures every solver benchmark reports for one solve of the rows ``cs``: size,
    status, wall and CPU seconds, peak memory, objective, and svmgeo's recomputed gap and
    primal infeasibility (NaN without a certificate)."""
    c = res.certificate
    return {
        "N": cs.N,
        "status": res.status.value,
        "wall": wall,
        "cpu": cpu,
        "rss_mb": peak_rss_mb(),
        "objective": res.objective,
        "gap": c.duality_gap if c else float("nan"),
        "primal_inf": c.primal_infeasibility if c else float("nan"),
    }
