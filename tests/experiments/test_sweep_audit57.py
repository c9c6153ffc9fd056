# SPDX-License-Identifier: BSD-3-Clause
"""Session 57: a sweep with a timeout leaks no semaphore of a killed worker, its refusals
read in both spellings, and a timeout on a fresh worker's first trial says that the trial's
time counts one-time work."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import svmgeo as sg
from svmgeo.experiments import sweep

from . import _trials


def locking_trial(k: int) -> dict:
    """What numba's threading layer does on its first parallel call (a lock of the default
    context); k == 0 gives this process's default start method, k == 1 hangs."""
    lock = mp.get_context().RLock()
    with lock:
        pass
    if k == 1:
        time.sleep(60.0)
    return {"method": mp.get_start_method()}


def slow_trial(k: int) -> dict:
    """k == 0 returns at once; any other k hangs."""
    if k:
        time.sleep(60.0)
    return {"k2": 2 * k}


@pytest.mark.skipif(
    mp.get_all_start_methods()[0] != "fork",
    reason="holds where the default start method is fork (Linux before Python 3.14): with a "
    "forkserver or spawn default a killed worker's lock is a tracked semaphore, which the "
    "resource tracker unlinks at shutdown with a warning",
)
def test_a_killed_worker_leaks_no_semaphore() -> None:
    """Regression: a worker of the forkserver context defaulted to forkserver, so the lock
    numba makes was a named semaphore held by the resource tracker; killing the worker at the
    timeout left it, and at exit the tracker warned "There appear to be 6 leaked semaphore
    objects" (svmgeo reproduce global --quick --timeout 2). Workers take the sweep process's
    default start method, as trials have with workers=0; with a fork default such a lock is
    unlinked as it is made (the subprocess below keeps the platform's default)."""
    root = Path(__file__).resolve().parents[2]
    script = textwrap.dedent(
        """
        import json
        from svmgeo.experiments import sweep
        from tests.experiments.test_sweep_audit57 import locking_trial
        res = sweep(locking_trial, {"k": [0, 1]}, workers=1, timeout=1.0, progress=False)
        here = sweep(locking_trial, {"k": [0]}, workers=0, progress=False)
        print(json.dumps([res.column("status"), res.column("method")[0], here.column("method")[0]]))
        """
    )
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", script], cwd=root,
                          env={**os.environ, "PYTHONPATH": path}, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "leaked semaphore" not in proc.stderr
    status, worker, parent = json.loads(proc.stdout)
    assert status == ["ok", "timeout"]
    assert worker == parent  # the trial saw the start method it has in this process


def test_a_timeout_on_a_first_trial_says_its_time_counts_one_time_work(tmp_path) -> None:
    """A fresh worker's first trial pays the process's one-time work (numba compiling the
    kernels: 'reproduce global --quick --timeout 5' timed out trials that way); its timeout
    row says so, a later trial's on the same worker does not."""
    res = sweep(slow_trial, {"k": [0, 1, 2]}, workers=1, timeout=1.0, progress=False)
    assert res.column("status") == ["ok", "timeout", "timeout"]
    second, third = res.rows[1]["error"], res.rows[2]["error"]
    assert "killed" in second and "first trial" not in second  # the worker had finished k=0
    assert "first trial of a fresh worker process" in third and "numba" in third


def test_timeout_refusal_in_python_names_keywords() -> None:
    """The refusal with a scheduler names the keywords (Python) and trial_fn for sweep only."""
    pytest.importorskip("distributed")
    with pytest.raises(sg.ProblemError) as info:
        sweep(_trials.failing_trial, {"k": [0]}, scheduler="tcp://127.0.0.1:1", timeout=1.0,
              progress=False)  # fmt: skip
    text = str(info.value)
    assert "Drop scheduler" in text and "workers=4" in text and "drop timeout" in text
    assert "trial_fn" in text
    with pytest.raises(sg.ProblemError) as info:
        sg.experiments.reproduce("global", quick=True, scheduler="tcp://127.0.0.1:1", timeout=1.0)
    assert "trial_fn" not in str(info.value)  # reproduce's trials are not the caller's
