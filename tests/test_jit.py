# SPDX-License-Identifier: BSD-3-Clause
"""Every compiled kernel of svmgeo caches in the user cache directory, never in the package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

import svmgeo
from svmgeo._jit import cache_dir

COMPILED_MODULES = {
    "svmgeo.gd._numba": 5,
    "svmgeo.gd._numba_lanes": 10,
    "svmgeo.analysis._enumerate_fast": 5,
    "svmgeo._active_set": 6,
    "svmgeo.solvers._frobenius_small": 14,
}
"""Each compiled module and the fewest kernels it declares."""


def _dispatchers(module_name: str) -> dict[str, object]:
    import importlib

    from numba.core.registry import CPUDispatcher

    module = importlib.import_module(module_name)
    found = {name: obj for name, obj in vars(module).items() if isinstance(obj, CPUDispatcher)}
    return found


@pytest.mark.parametrize(("module_name", "n_kernels"), COMPILED_MODULES.items())
def test_kernels_cache_in_the_user_cache_directory_not_the_package(
    module_name: str, n_kernels: int
) -> None:
    package = Path(svmgeo.__file__).resolve().parent
    kernels = _dispatchers(module_name)
    assert len(kernels) >= n_kernels, sorted(kernels)  # the module's kernels were found
    for name, kernel in kernels.items():
        path = Path(kernel._cache._cache_path).resolve()  # type: ignore[attr-defined]
        assert path.is_relative_to(Path(cache_dir()).resolve()), (name, path)
        assert not path.is_relative_to(package), (name, path)


@pytest.mark.parametrize(
    ("module_name", "kernel"),
    [
        ("svmgeo.gd._numba", "advance"),
        ("svmgeo.gd._numba_lanes", "advance_lanes"),
        ("svmgeo.analysis._enumerate_fast", "leaf_batch"),
        ("svmgeo._active_set", "active_set"),
        ("svmgeo.solvers._frobenius_small", "feasible_point"),
    ],
)
def test_cache_directory_follows_svmgeo_cache_dir(
    tmp_path: Path, module_name: str, kernel: str
) -> None:
    code = f"import {module_name} as m; print(m.{kernel}._cache._cache_path)"
    env = {**os.environ, "SVMGEO_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert Path(out).is_relative_to(tmp_path / "numba"), out


def test_no_module_declares_its_own_numba_cache() -> None:
    """A kernel declared with ``numba.njit(cache=True)`` would cache next to its source file,
    inside the installed package; every kernel goes through :func:`svmgeo._jit.njit`."""
    package = Path(svmgeo.__file__).resolve().parent
    offenders = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "cache=True" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


@pytest.mark.parametrize("clock", ["_posix_seconds", "_portable_seconds"])
def test_the_compiled_clocks_measure_perf_counters_seconds(clock: str) -> None:
    """Both compiled clocks (clock_gettime, and perf_counter through the interpreter where
    the platform has no clock_gettime) advance with time.perf_counter."""
    import time

    from svmgeo import _jit

    if clock == "_posix_seconds" and _jit._MONOTONIC is None:
        pytest.skip("no clock_gettime on this platform")
    now = getattr(_jit, clock)
    now()  # compiled
    start, first = time.perf_counter(), now()
    time.sleep(0.05)
    elapsed, measured = time.perf_counter() - start, now() - first
    # the measured interval lies inside perf_counter's, which holds the 50 ms sleep
    assert 0.049 <= measured <= elapsed + 1e-3, (measured, elapsed)


def test_cache_directory_is_keyed_by_the_sources(tmp_path: Path) -> None:
    """numba checks only a kernel's own file, not the files of the helpers it inlines: with
    gd/_numba.py changed and gd/_numba_lanes.py not, the lanes kernel came from the cache
    with the old helper. The cache directory is now named by a digest of the sources, so a
    changed tree reads none of an older tree's kernels."""
    import shutil

    from svmgeo._jit import source_fingerprint

    package = Path(svmgeo.__file__).resolve().parent
    assert Path(cache_dir()).name == source_fingerprint()
    copy = tmp_path / "svmgeo"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert source_fingerprint(copy) == source_fingerprint(package)  # the bytes, not the mtimes
    helper = copy / "gd" / "_numba.py"
    helper.write_text(helper.read_text() + "\n# a changed helper\n")
    assert source_fingerprint(copy) != source_fingerprint(package)
