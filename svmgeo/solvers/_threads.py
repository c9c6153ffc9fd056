# SPDX-License-Identifier: BSD-3-Clause
"""One BLAS thread for the small dense solves (threadpoolctl, as scikit-learn does).

The solvers factor matrices of a few hundred rows many times. There, a multithreaded BLAS
(OpenBLAS's default: one thread per core) spends more time waking and synchronising its
threads than computing, and on a busy machine its spinning threads slow every call by
10-100x. :func:`blas_threads` limits BLAS to one thread while a small problem is solved, so
users get that speed without setting ``OPENBLAS_NUM_THREADS``; larger problems keep the
caller's setting. The limit is restored on exit, and a caller's own, stricter limit wins.

A BLAS thread pool is usually one per process (OpenBLAS with pthreads, MKL, BLIS), shared by
every Python thread: the blocks open in all threads share one limit, which every block
sets as it opens (when the pool runs more than one thread) and the last to close gives back,
whichever threads those are (a count under a lock; :class:`blas_threads` says what is given
back when other threads set the pool meanwhile). OpenBLAS built on OpenMP keeps a count per
calling thread: each thread's outermost block sets and gives back its own.
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


_Counted = tuple[tuple[Any, Callable[[], Any]], ...]
"""BLAS libraries of threadpoolctl with the function that returns each one's thread count."""


@lru_cache(maxsize=1)
def _libraries_for(n_modules: int) -> tuple[_Counted, _Counted]:
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()
    blas = [lib for lib in controller.lib_controllers if lib.user_api == "blas"]
    shared = tuple((lib, _count(lib)) for lib in blas if not _per_thread(lib))
    per_thread = tuple((lib, _count(lib)) for lib in blas if _per_thread(lib))
    return shared, per_thread


def _scan() -> tuple[_Counted, _Counted]:
    """The BLAS libraries threadpoolctl finds loaded, with their thread-count functions
    (:func:`_count`): those with one pool for the process, then those with a count per
    calling thread (:func:`_per_thread`)."""
    # scanning the loaded libraries costs ~10 ms: scan again only after an import (which may
    # have loaded another BLAS)
    return _libraries_for(len(sys.modules))


def _per_thread(lib: Any) -> bool:
    """True for a BLAS library whose thread count is per calling thread: OpenBLAS on OpenMP
    (threadpoolctl sets it by ``omp_set_num_threads``). threadpoolctl sets OpenBLAS on
    pthreads, MKL (``mkl_set_num_threads``: the global count) and BLIS for the process."""
    return lib.internal_api == "openblas" and getattr(lib, "threading_layer", "") == "openmp"


def _count(lib: Any) -> Callable[[], Any]:
    """The function that returns the thread count of threadpoolctl's BLAS library ``lib``:
    OpenBLAS's own C function where threadpoolctl finds it (one ctypes call, without the
    Python method threadpoolctl wraps around it), else ``lib.get_num_threads``."""
    if lib.internal_api == "openblas" and not _per_thread(lib):
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


def _set(lib: Any, num_threads: int) -> None:
    """Set threadpoolctl's library ``lib`` to ``num_threads`` threads, from any thread.

    threadpoolctl (3.8) lets one thread at a time set the process-wide pool of an OpenBLAS
    on pthreads (the first to set it, until it leaves a ``threadpool_limits`` block) and
    silently ignores the others. Its documented
    ``OpenBLASController.clear_controlling_thread(force=True)`` hands control to whichever
    thread sets next (this one); ``clear_controlling_thread()`` gives it up again, so that
    the caller's next limit, from any thread, takes effect. Older versions have neither: every
    thread sets the pool there.
    """
    release = None if _per_thread(lib) else getattr(lib, "clear_controlling_thread", None)
    if release is None:
        lib.set_num_threads(num_threads)
        return
    release(force=True)
    try:
        lib.set_num_threads(num_threads)
    finally:
        release()


_Recorded = dict[Any, tuple[int, Callable[[], Any]]]
"""Libraries set to one thread, in the order set, each with the count to give back and its
count function (:func:`_count`)."""


def _limit(libs: _Counted, recorded: _Recorded) -> None:
    """Set each library of ``libs`` that runs more than one thread to one, first recording in
    ``recorded`` the count it ran (so that a set that is interrupted is still given back);
    one ctypes call each for those that run one already (no ``info()``, nothing set).

    A library recorded already that runs more than one thread again was set by someone else
    since the one thread was set: its record becomes that newer count.
    """
    for lib, count in libs:
        before = count()
        if isinstance(before, int) and before > 1:
            recorded[lib] = (before, count)
            _set(lib, 1)


def _give_back(recorded: _Recorded) -> None:
    """Give each library of ``recorded`` its recorded count, the last set first, if it still
    runs the one thread it was set to; one that runs another count was set by someone else
    since, and keeps that newer count. Each record is dropped once done. An exception (a
    ``KeyboardInterrupt`` in a set) is raised once all are given back; a second one is raised
    at once, leaving the rest recorded for the next give-back."""
    error: BaseException | None = None
    while recorded:
        lib = next(reversed(recorded))
        before, count = recorded[lib]
        try:
            if count() == 1:
                _set(lib, before)
            del recorded[lib]
        except BaseException as caught:  # tried again (found given back: just dropped)
            if error is not None:
                raise
            error = caught
    if error is not None:
        raise error


_state = threading.local()
# ``limited``: 0 (or unset) outside the outermost block of this thread, 1 inside one that
# set nothing (:func:`_already_one_thread`), 2 from the start of the entry of one counted in
# ``_open`` to the end of its exit: a block that a signal handler opens in this thread
# meanwhile is nested in it (and sets nothing), as one opened in its body is

_lock = threading.RLock()
"""Guards the two below; every set of a library by a block is made under it. Reentrant for
a signal handler that interrupts its thread while it holds the lock (a block the handler
opens is nested and does not take it, see ``limited``)."""
_open = 0
"""Outermost blocks (:class:`blas_threads`) open in all threads that count in the shared
limit."""
_shared: _Recorded = {}
"""The process-wide libraries the open blocks set to one thread, with the counts the last to
close gives back."""


def _take_lock() -> BaseException | None:
    """Take :data:`_lock`, also when an exception of a signal handler (Ctrl-C's
    ``KeyboardInterrupt``) interrupts the wait or lands right after it: returns that
    exception, for the caller to raise once it has released the lock, or None."""
    interrupt: BaseException | None = None
    while True:
        try:
            _lock.acquire()
            return interrupt
        except BaseException as exc:  # raised by a signal handler, in or after the wait
            interrupt = exc
            if _lock._is_owned():  # type: ignore[attr-defined]  # acquired before it landed
                return interrupt


def _before_fork() -> None:
    # no fork while a block sets a library (threadpoolctl's lock held, a library set and not
    # yet recorded, ...) or updates the count: the fork waits for the lock
    _lock.acquire()


def _after_fork_in_parent() -> None:
    _lock.release()


def _after_fork_in_child() -> None:
    """A forked child runs only the forking thread, which held the lock over the fork (no set
    half done), and the other threads' blocks never close there: start with a new lock, and
    the count of this thread's own open block (0 or 1). The counts recorded by the parent's
    blocks stay recorded: the child's last block to close gives them back."""
    global _lock, _open
    _lock = threading.RLock()
    _open = 1 if getattr(_state, "limited", 0) == 2 else 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )


class blas_threads:  # a context manager named as the function it replaced
    """One BLAS thread inside the block when ``dimension`` <= :data:`ONE_THREAD_UP_TO`.

    A process-wide BLAS pool has one count for all threads' blocks. Under a lock, every
    outermost block that opens asks each library its count and sets one that runs more than
    one thread to one thread, recording the count it found; the last to close (the count of
    open blocks goes 1 -> 0) gives each recorded library back its count. So a block opened
    while others are open still sets one thread when another thread has set the pool since
    (a caller's ``threadpool_limits`` closing, a Dask worker's per-trial limit), and nested
    blocks in one thread cost nothing. What the last close gives back is the newest count
    set by anyone but the blocks, as far as they can see: a library that an opening block
    finds at more than one thread, though recorded already, was set by another thread since,
    and that count replaces the record; a library that the last close finds at a count other
    than one was set since the last block opened, and keeps it. The blocks cannot tell
    another thread's set to one thread from their own (the last close undoes it), nor a
    ``threadpool_limits(n)`` block that opens and closes among theirs from a set that stays
    (``n`` is given back); and a ``threadpool_limits`` block that opens while blocks are open
    and closes after the last records their one thread as its count before and sets it back
    (threadpoolctl's rule): the process keeps one thread until its count is set again. One
    pool, one count: blocks open while another thread sets the pool run at its count until
    they close.

    A library with a count per calling thread (OpenBLAS on OpenMP) is set and given back by
    each thread's outermost block. Neither costs anything in a process that already runs BLAS
    on one thread (started with ``OPENBLAS_NUM_THREADS=1`` or ``OMP_NUM_THREADS=1``, see
    :func:`_already_one_thread`); when threadpoolctl was imported (by the caller,
    scikit-learn, ...), a block whose BLAS libraries all run one thread asks each its count
    (one ctypes call) and sets nothing, so a caller's own limit of one thread stays as it is.
    A count is recorded before it is set and counted only once set, and the exit uncounts in
    a ``finally``: a ``KeyboardInterrupt`` inside a set leaves nothing behind (one between
    the end of the body and the exit's first line still can: Python runs a signal handler
    there). A class rather than a generator: every small solve enters one, and
    ``contextlib.contextmanager`` adds a generator and its frames to each.
    """

    __slots__ = ("_dimension", "_outermost", "_own")
    _own: _Recorded | None  # the per-thread libraries this block set, when outermost

    def __init__(self, dimension: int) -> None:
        self._dimension = dimension
        self._outermost = 0  # this thread's ``_state.limited`` inside it, when outermost

    def __enter__(self) -> None:
        global _open
        if self._dimension > ONE_THREAD_UP_TO or getattr(_state, "limited", False):
            return
        if _already_one_thread():  # no limit to set, but nested blocks skip the check
            self._outermost = _state.limited = 1
            return
        self._own = None
        try:
            # marked before the scan (~10 ms when an import has loaded modules since the
            # last): a signal handler's block that interrupts it nests, rather than scanning
            # in turn, to be interrupted by the next signal (a 1 ms timer recursed without end)
            _state.limited = 2
            shared, per_thread = _scan()
            with _lock:
                if per_thread:
                    own: _Recorded = {}
                    self._own = own
                    _limit(per_thread, own)
                _limit(shared, _shared)
                _open += 1
                self._outermost = 2
        except BaseException:  # a KeyboardInterrupt included: give back what was set
            self._outermost = self._outermost or 3  # 3: not counted
            self.__exit__()
            raise

    def __exit__(self, *exc: object) -> None:
        global _open
        outermost = self._outermost
        if not outermost:
            return
        interrupt: BaseException | None = None
        try:
            if outermost != 1:
                # given back before another block can open and record the counts; the lock
                # taken through a Ctrl-C in its wait, which would skip the uncount and leave
                # every later block at one thread
                interrupt = _take_lock()
                try:
                    if self._own:
                        _give_back(self._own)
                finally:
                    try:
                        if outermost == 2:
                            _open -= 1
                        if _open == 0 and _shared:
                            _give_back(_shared)
                    finally:
                        _lock.release()
        finally:
            self._outermost = _state.limited = 0
        if interrupt is not None:
            raise interrupt


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
