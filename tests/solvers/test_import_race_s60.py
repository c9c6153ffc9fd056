# SPDX-License-Identifier: BSD-3-Clause
"""The first small solves of a fresh process, started at once in several threads (a Dask
sweep's threads, a user's thread pool), each get their answer (session 60).

Before, :func:`svmgeo.solvers._feasibility.compiled_path` looked the compiled small path up
in ``sys.modules``, where a module sits from the start of its import: a thread that got
there while another was running the module's body read it without the functions it had not
yet defined (``AttributeError: partially initialized module
'svmgeo.solvers._frobenius_small' has no attribute 'tight_verdict'``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.testing import oracle_att_svm

pytest.importorskip("numba")

# (n, T, d, seed) of random_data: small sets the compiled path takes; (6, 6, 3, 0) infeasible
CASES = [(3, 4, 5, 0), (4, 4, 6, 1), (5, 4, 7, 2), (6, 6, 3, 0)]

SCRIPT = textwrap.dedent(
    """
    import importlib.machinery, json, sys, threading, time

    NAME = "svmgeo.solvers._frobenius_small"
    DELAY = float(sys.argv[2])


    class SlowBody:
        # runs the module's body DELAY seconds after the module enters sys.modules: the other
        # threads reach the first solve's lookup of the module while it is being imported
        def find_spec(self, name, path=None, target=None):
            if name != NAME:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            run = spec.loader.exec_module

            def exec_module(module):
                time.sleep(DELAY)
                run(module)

            spec.loader.exec_module = exec_module
            return spec


    if DELAY > 0:
        sys.meta_path.insert(0, SlowBody())

    import svmgeo as sg

    cases = json.loads(sys.argv[3])
    data = [sg.random_data(n, T, d, seed=seed) for n, T, d, seed in cases]
    alpha = [sg.optimal_tokens(x) for x in data]
    fresh = NAME not in sys.modules
    barrier = threading.Barrier(len(cases))
    out = [None] * len(cases)


    def solve(k):
        barrier.wait()
        try:
            out[k] = sg.att_svm(data[k], alpha[k])
        except Exception as exc:
            out[k] = f"{type(exc).__name__}: {exc}"


    threads = [threading.Thread(target=solve, args=(k,)) for k in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    from svmgeo.testing import assert_certified


    def record(res):
        if isinstance(res, str):
            return {"error": res}
        try:
            assert_certified(res)  # its proof, recomputed
            proof = None
        except AssertionError as exc:
            proof = str(exc)
        W = None if res.W is None else res.W.tolist()
        return {"status": res.status.value, "W": W, "proof": proof}


    with open(sys.argv[1], "w") as file:
        json.dump({"fresh": fresh, "results": [record(res) for res in out]}, file)
    """
)


@pytest.mark.parametrize("delay", [0.0, 1.0], ids=["as is", "slow module body"])
def test_first_small_solves_in_threads_at_once(tmp_path: Path, delay: float) -> None:
    """Four fresh threads start their first att_svm at once (a barrier): no exception, and each
    answer is the oracle's (cvxpy + Clarabel on the naive rows). ``slow module body``: an
    import hook in the subprocess delays the compiled path's module body by 1 s, so that the
    other threads surely ask for the module while it is being imported (on 020e29e the race
    was hit 3 of 3 runs without the delay too)."""
    root = Path(__file__).resolve().parents[2]
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out), str(delay), json.dumps(CASES)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    assert got["fresh"], "the compiled path was imported before the threads: not exercised"
    for (n, T, d, seed), res in zip(CASES, got["results"], strict=True):
        where = f"random_data({n}, {T}, {d}, seed={seed})"
        assert "error" not in res, (where, res.get("error"))
        data = sg.random_data(n, T, d, seed=seed)
        ref = oracle_att_svm(data, sg.optimal_tokens(data))
        assert ref.feasible is not None, (where, ref.status)
        assert res["proof"] is None, (where, res["proof"])
        if not ref.feasible:
            assert res["status"] == "infeasible" and res["W"] is None, (where, res["status"])
            continue
        assert res["status"] == "optimal", (where, res["status"])
        assert ref.W is not None
        np.testing.assert_allclose(
            np.array(res["W"]), ref.W, rtol=0, atol=1e-6 * np.linalg.norm(ref.W), err_msg=where
        )
