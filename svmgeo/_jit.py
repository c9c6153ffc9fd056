# SPDX-License-Identifier: BSD-3-Clause
r"""svmgeo's ``numba.njit``: compiled code cached in a user cache directory.

Every compiled kernel of svmgeo (the training engine's, the batched LOT search's) is cached on
disk in a user cache directory, never inside the installed package (a cache there outlives
``pip uninstall`` and shadows a later install): ``$SVMGEO_CACHE_DIR/numba`` when set, else numba's own ``NUMBA_CACHE_DIR`` when set, else ``~/.cache/svmgeo/numba``
(``$XDG_CACHE_HOME``, ``%LOCALAPPDATA%`` or ``~/Library/Caches`` where those apply), in a
subdirectory named by a digest of svmgeo's Python sources (:func:`source_fingerprint`). When
that directory cannot be written the kernels are compiled anew in each process.

The digest is what keeps a cache current: numba checks only the file that defines a kernel,
not the files of the helpers it inlines or calls. In an editable checkout where a pull
changed ``gd/_numba.py`` (a step helper) but not ``gd/_numba_lanes.py`` (which inlines it),
the batched lanes kernel was loaded from the cache with the old helper.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numba
import numpy as np
from numba import types

__all__ = ["cache_dir", "njit", "seconds", "source_fingerprint"]

_config: Any = numba.config  # numba's settings module (untyped for mypy)


def source_fingerprint(root: Path | None = None) -> str:
    """The first 16 hex digits of the SHA-1 of svmgeo's Python sources (each file's path in
    the package and its bytes, in sorted order; ``root``: the package directory, this one's
    by default): about 4 ms, once per process."""
    root = Path(__file__).resolve().parent if root is None else root
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_dir() -> str:
    """The directory of svmgeo's compiled-kernel cache (see the module docstring)."""
    own = os.environ.get("SVMGEO_CACHE_DIR", "").strip()
    if own:
        base = os.path.join(os.path.expanduser(own), "numba")
    elif _config.CACHE_DIR:  # the user's NUMBA_CACHE_DIR
        base = str(_config.CACHE_DIR)
    else:
        if sys.platform == "win32":
            root = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~/AppData/Local")
        elif sys.platform == "darwin":
            root = os.path.expanduser("~/Library/Caches")
        else:
            root = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache")
        base = os.path.join(root, "svmgeo", "numba")
    return os.path.join(base, _FINGERPRINT)


def _writable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


_FINGERPRINT = source_fingerprint()
_CACHE_DIR = cache_dir()
_CACHE = _writable(_CACHE_DIR)


@contextlib.contextmanager
def _cache_location() -> Iterator[None]:
    """Point numba's cache at :data:`_CACHE_DIR` while a kernel is declared (numba fixes a
    function's cache path then), and restore the caller's setting."""
    before = _config.CACHE_DIR
    _config.CACHE_DIR = _CACHE_DIR
    try:
        yield
    finally:
        _config.CACHE_DIR = before


def njit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit`` with svmgeo's cache directory (no cache when it is not writable)."""

    def declare(func: Callable[..., Any]) -> Any:
        with _cache_location():
            return numba.njit(cache=_CACHE, **options)(func)

    return declare


_MONOTONIC = getattr(time, "CLOCK_MONOTONIC", None)
"""The POSIX clock of ``time.perf_counter`` on Linux (None where the platform has no
``clock_gettime``)."""
_CLOCK_GETTIME: Any = types.ExternalFunction(
    "clock_gettime", types.int32(types.int32, types.voidptr)
)


@njit()
def _posix_seconds():  # pragma: no cover - compiled
    """``clock_gettime(CLOCK_MONOTONIC)`` in seconds (``struct timespec``: two 64-bit words)."""
    spec = np.zeros(2, dtype=np.int64)
    _CLOCK_GETTIME(_MONOTONIC, spec.ctypes)
    return spec[0] + 1e-9 * spec[1]


@njit()
def _portable_seconds():  # pragma: no cover - compiled
    """``time.perf_counter()`` through the interpreter (platforms without ``clock_gettime``)."""
    with numba.objmode(now="float64"):
        now = time.perf_counter()
    return now


seconds = _posix_seconds if _MONOTONIC is not None else _portable_seconds
"""A monotonic clock in seconds for compiled code, to time the steps of one compiled call
(differences only: its origin need not be ``time.perf_counter``'s)."""
