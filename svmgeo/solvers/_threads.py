# SPDX-License-Identifier: BSD-3-Clause
"""One BLAS thread for the small dense solves (threadpoolctl, as scikit-learn does).

The solvers factor matrices of a few hundred rows many times. There, a multithreaded BLAS
(OpenBLAS's default: one thread per core) spends more time waking and synchronising its
threads than computing, and on a busy machine its spinning threads slow every call by
10-100x. :func:`blas_threads` limits BLAS to one thread while a small problem is solved, so
users get that speed without setting ``OPENBLAS_NUM_THREADS``; larger problems keep the
caller's setting. The limit is restored on exit, and a caller's own, stricter limit wins.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, ParamSpec, TypeVar

from ..constraints import ConstraintSet
from ._geometry import dense_dimension

__all__ = ["ONE_THREAD_UP_TO", "blas_threads", "one_blas_thread_when_small"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

ONE_THREAD_UP_TO = 2000
"""Largest dense dimension (rows of the Gram matrix or of the compressed features) solved
with one BLAS thread; measured by ``benchmarks/bench_blas_threads.py``."""


@lru_cache(maxsize=1)
def _controller_for(n_modules: int) -> tuple[Any, tuple[Callable[[], Any], ...]]:
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()
    counts = tuple(_count(lib) for lib in controller.lib_controllers if lib.user_api == "blas")
    return controller, counts


def _scan() -> tuple[Any, tuple[Callable[[], Any], ...]]:
    """threadpoolctl's controller of the loaded libraries and the thread-count functions of
    its BLAS libraries (:func:`_count`)."""
    # scanning the loaded libraries costs ~10 ms, limiting through a controller ~40 us: scan
    # again only after an import (which may have loaded another BLAS)
    return _controller_for(len(sys.modules))


def _controller() -> Any:
    return _scan()[0]


def _count(lib: Any) -> Callable[[], Any]:
    """The function that returns the thread count of threadpoolctl's BLAS library ``lib``:
    OpenBLAS's own C function where threadpoolctl finds it (one ctypes call, without the
    Python method threadpoolctl wraps around it), else ``lib.get_num_threads``."""
    if lib.internal_api == "openblas" and getattr(lib, "threading_layer", "") != "openmp":
        symbol = getattr(lib, "_get_symbol", None)  # threadpoolctl's lookup, affixes included
        try:  # private to threadpoolctl: any surprise falls back to its public method
            function = None if symbol is None else symbol("openblas_get_num_threads")
        except (TypeError, AttributeError, OSError):
            function = None
        if callable(function):
            return function
    return lib.get_num_threads


_BLAS_THREAD_VARIABLES = {
    "openblas": ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"),
    "mkl": ("MKL_NUM_THREADS", "OMP_NUM_THREADS"),
    "blis": ("BLIS_NUM_THREADS", "OMP_NUM_THREADS"),
}
"""The variables each BLAS reads for its thread count when loaded, the first set one wins."""


@lru_cache(maxsize=1)
def _dense_blas() -> tuple[str, ...] | None:
    """The BLAS kinds (keys of :data:`_BLAS_THREAD_VARIABLES`) numpy and scipy were built
    with, each once (both OpenBLAS: one kind, one lookup of its variables), or None when one
    is unknown."""
    import numpy.__config__
    import scipy.__config__

    kinds = []
    for config in (numpy.__config__, scipy.__config__):
        try:
            name = str(config.CONFIG["Build Dependencies"]["blas"]["name"]).lower()
        except (AttributeError, KeyError, TypeError):
            return None
        kind = next((kind for kind in _BLAS_THREAD_VARIABLES if kind in name), None)
        if kind is None:
            return None
        kinds.append(kind)
    return tuple(dict.fromkeys(kinds))


def _one_thread_in(environ: Mapping[str, str], kinds: tuple[str, ...]) -> bool:
    for kind in kinds:  # the first variable of each kind that is set decides (one lookup each)
        value = None
        for name in _BLAS_THREAD_VARIABLES[kind]:
            value = environ.get(name)
            if value is not None:
                break
        if value is None or value.strip() != "1":
            return False
    return True


@lru_cache(maxsize=1)
def _started_with_one_thread(kinds: tuple[str, ...]) -> bool:
    # the environment the process started with (Linux), which the BLAS read when loaded
    try:
        with open("/proc/self/environ", "rb") as file:
            raw = file.read()
    except OSError:
        return False
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    environ = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}
    return _one_thread_in(environ, kinds)


def _already_one_thread() -> bool:
    """True when numpy's and scipy's BLAS run with one thread without a limit: the process
    started with one thread in the environment for their BLAS (and still has it), and
    threadpoolctl, which could have raised the count since, was never imported. Then
    :func:`blas_threads` skips the threadpoolctl import and the scan of the loaded
    libraries."""
    if "threadpoolctl" in sys.modules or "MKL_DOMAIN_NUM_THREADS" in os.environ:
        return False
    kinds = _dense_blas()
    return (
        kinds is not None and _one_thread_in(os.environ, kinds) and _started_with_one_thread(kinds)
    )


def _at_one_thread() -> bool:
    """True when every BLAS library threadpoolctl finds runs one thread now (one ctypes call
    each, :func:`_count`): then :func:`blas_threads` has no limit to set, and skips
    threadpoolctl's ``limit`` (its ``info()`` of every library, the limits set and restored:
    ~40 us warm, several times that when the caches are cold)."""
    return all(count() == 1 for count in _scan()[1])


def _one_thread_limit() -> Any:
    """threadpoolctl's limit of the BLAS libraries to one thread (a context manager, set
    already), or None when they run one thread without it (:func:`_already_one_thread`, then
    :func:`_at_one_thread`)."""
    if _already_one_thread() or _at_one_thread():
        return None
    return _controller().limit(limits=1, user_api="blas")


_state = threading.local()


class blas_threads:  # a context manager named as the function it replaced
    """One BLAS thread inside the block when ``dimension`` <= :data:`ONE_THREAD_UP_TO`.

    Nested blocks cost nothing (the outermost one sets and restores the limit), and neither
    does a block in a process that already runs BLAS on one thread (started with
    ``OPENBLAS_NUM_THREADS=1`` or ``OMP_NUM_THREADS=1``, see :func:`_already_one_thread`).
    When threadpoolctl was imported (by the caller, scikit-learn, ...), a block whose BLAS
    libraries all run one thread already asks each its count and sets nothing
    (:func:`_at_one_thread`). A class rather than a generator: every small solve enters one,
    and ``contextlib.contextmanager`` adds a generator and its frames to each.
    """

    __slots__ = ("_dimension", "_limit", "_outermost")

    def __init__(self, dimension: int) -> None:
        self._dimension = dimension
        self._limit: Any = None
        self._outermost = False

    def __enter__(self) -> None:
        if self._dimension <= ONE_THREAD_UP_TO and not getattr(_state, "limited", False):
            # one thread already: no limit to set, but nested blocks skip the check
            self._limit = _one_thread_limit()
            self._outermost = _state.limited = True

    def __exit__(self, *exc: object) -> None:
        if self._outermost:
            _state.limited = False
            if self._limit is not None:
                self._limit.restore_original_limits()


def one_blas_thread_when_small(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a solver whose first argument is a :class:`ConstraintSet` under
    :func:`blas_threads` of its :func:`~._geometry.dense_dimension`."""

    @functools.wraps(func)
    def limited(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        cs = args[0] if args else kwargs.get("cs")
        if not isinstance(cs, ConstraintSet) or getattr(_state, "limited", False):
            return func(*args, **kwargs)  # the solver's own check raises; or nested: no-op
        with blas_threads(dense_dimension(cs)):
            return func(*args, **kwargs)

    return limited
