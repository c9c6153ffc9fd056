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

import contextlib
import functools
import sys
import threading
from collections.abc import Callable, Iterator
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
def _controller_for(n_modules: int) -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _controller() -> Any:
    # scanning the loaded libraries costs ~10 ms, limiting through a controller ~40 us: scan
    # again only after an import (which may have loaded another BLAS)
    return _controller_for(len(sys.modules))


_state = threading.local()


@contextlib.contextmanager
def blas_threads(dimension: int) -> Iterator[None]:
    """One BLAS thread inside the block when ``dimension`` <= :data:`ONE_THREAD_UP_TO`.

    Nested blocks cost nothing (the outermost one sets and restores the limit).
    """
    if dimension > ONE_THREAD_UP_TO or getattr(_state, "limited", False):
        yield
        return
    with _controller().limit(limits=1, user_api="blas"):
        _state.limited = True
        try:
            yield
        finally:
            _state.limited = False


def one_blas_thread_when_small(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a solver whose first argument is a :class:`ConstraintSet` under
    :func:`blas_threads` of its :func:`~._geometry.dense_dimension`."""

    @functools.wraps(func)
    def limited(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        cs = args[0] if args else kwargs.get("cs")
        if not isinstance(cs, ConstraintSet):  # the solver's own check raises the error
            return func(*args, **kwargs)
        with blas_threads(dense_dimension(cs)):
            return func(*args, **kwargs)

    return limited
