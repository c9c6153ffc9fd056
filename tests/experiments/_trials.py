# SPDX-License-Identifier: BSD-3-Clause
"""Module-level trial functions for the sweep tests (worker processes import this module)."""

from __future__ import annotations

import os
import time

import numpy as np

import svmgeo as sg


def svm_trial(n: int, T: int, d: int, seed: int) -> dict:
    """Solve a tiny Att-SVM; report what the table should hold."""
    data = sg.random_data(n, T, d, seed=seed)
    res = sg.att_svm(data)
    return {
        "status_svm": str(res.status),
        "objective": float(res.objective) if res.W is not None else None,
        "n_rows": int(res.constraints.N),
    }


def arith_trial(a: int, b: float, seed: int) -> dict:
    """Cheap deterministic trial with numpy scalars and a derived random draw."""
    rng = np.random.default_rng(seed)
    return {"total": np.float64(a + b), "draw": rng.random(), "label": f"a{a}", "even": a % 2 == 0}


def logged_trial(k: int, log: str, sleep: float = 0.0) -> dict:
    """Append this call to ``log`` (one line per call), sleep, then return k² and k/3."""
    with open(log, "a") as fh:
        fh.write(f"{k}\n")
        fh.flush()
        os.fsync(fh.fileno())
    time.sleep(sleep)
    return {"square": k * k, "third": k / 3}


def failing_trial(k: int) -> dict:
    """Raise for odd k."""
    if k % 2:
        raise ValueError(f"odd k={k}\nsecond line")
    return {"half": k // 2}


def multi_row_trial(k: int) -> list[dict]:
    """k + 1 rows per trial."""
    return [{"j": j, "kj": k * j} for j in range(k + 1)]


def drifting_trial(k: int) -> dict:
    """Returns an extra key for k >= 2 (a trial_fn bug the runner must report)."""
    out = {"k2": 2 * k}
    if k >= 2:
        out["extra"] = 1.0
    return out


def array_trial(k: int) -> dict:
    """Returns an array (not a table cell)."""
    return {"W": np.ones((2, 2)) * k}


def crash_trial(k: int) -> dict:
    """Kills its own process for k == 1."""
    if k == 1:
        os._exit(3)
    return {"k_out": k}


def threads_trial(k: int) -> dict:
    """Threads this worker's numba and numpy OpenBLAS would use (-1 where unknown)."""
    import ctypes

    import numba

    blas = -1
    with open("/proc/self/maps") as fh:
        paths = {line.split()[-1] for line in fh if "numpy.libs" in line and "openblas" in line}
    for path in paths:
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads"):
            getter = getattr(lib, name, None)
            if getter is not None:
                blas = int(getter())
                break
    return {"numba_threads": numba.get_num_threads(), "blas_threads": blas}
