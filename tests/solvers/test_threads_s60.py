# SPDX-License-Identifier: BSD-3-Clause
"""One BLAS limit for the whole process: blocks in several threads share OpenBLAS's pool.

OpenBLAS on pthreads has one thread pool per process, and threadpoolctl (3.8) lets only one
Python thread at a time set it (other threads' limits silently do nothing). ``blas_threads``
counts the blocks open in all threads: the first to open sets one thread, the last to close
restores the counts, whichever threads those are. The counts are read through threadpoolctl's
own ``get_num_threads`` (not svmgeo's ``_count``).
"""

from __future__ import annotations

import threading
import time

import pytest
from threadpoolctl import ThreadpoolController, threadpool_info, threadpool_limits

from svmgeo.solvers import _threads


def _pthreads_openblas() -> list:
    """threadpoolctl's controllers of the OpenBLAS libraries with a process-wide pool."""
    paths = {
        lib["filepath"]
        for lib in threadpool_info()
        if lib["internal_api"] == "openblas" and lib.get("threading_layer") == "pthreads"
    }
    return [lib for lib in ThreadpoolController().lib_controllers if lib.filepath in paths]


def _counts(libs: list) -> list[int]:
    return [lib.get_num_threads() for lib in libs]


def _hand_over() -> None:
    """Let any thread set OpenBLAS again (threadpoolctl >= 3.8), whatever earlier tests did."""
    from threadpoolctl import OpenBLASController

    clear = getattr(OpenBLASController, "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


@pytest.fixture(params=["held by the main thread", "held by no thread"])
def two_threads(request):
    """OpenBLAS (pthreads) at 2 threads, set by a limit of this (the main) thread, which holds
    threadpoolctl's control of the pool while the test runs, or gives it up at once (then
    the first thread to set the pool takes it); yields the libraries."""
    libs = _pthreads_openblas()
    if not libs:
        pytest.skip("no OpenBLAS with a pthreads pool visible to threadpoolctl")
    _hand_over()
    with threadpool_limits(limits=2, user_api="blas"):
        if _counts(libs) != [2] * len(libs):
            pytest.skip("OpenBLAS does not run 2 threads here")
        if request.param == "held by no thread":
            _hand_over()
        yield libs
    _hand_over()


def _run(*targets, names: tuple[str, ...] = ()) -> None:
    """Run each target in a thread of its own, all at once; re-raise the first error."""
    errors: list[BaseException] = []

    def guarded(target):
        def run() -> None:
            try:
                target()
            except BaseException as error:  # re-raised in the test's thread
                errors.append(error)

        return run

    threads = [threading.Thread(target=guarded(target)) for target in targets]
    for thread, name in zip(threads, names, strict=False):
        thread.name = name
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    if errors:
        raise errors[0]


def _counts_in_another_thread(libs: list) -> list[int]:
    """The counts inside a block of a new thread."""
    seen: list[list[int]] = []

    def block() -> None:
        with _threads.blas_threads(10):
            seen.append(_counts(libs))

    _run(block)
    return seen[0]


def test_a_block_in_another_thread_sets_one_thread(two_threads):
    # on main: after a block in this thread (or while this thread holds a caller's limit),
    # threadpoolctl ignored the other thread's limit: 2 threads inside its block
    ones, twos = [1] * len(two_threads), [2] * len(two_threads)
    with _threads.blas_threads(10):
        assert _counts(two_threads) == ones
    assert _counts_in_another_thread(two_threads) == ones
    assert _counts(two_threads) == twos


def _overlapping(inside_a=lambda: None, inside_b_after_a=lambda: None) -> None:
    """Threads "A" and "B": A opens a block, B opens one, A closes, B closes; each callback
    runs inside its thread's block (B's once A has closed)."""
    a_open, b_open, a_closed = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with _threads.blas_threads(10):
            inside_a()
            a_open.set()
            assert b_open.wait(30)
        a_closed.set()

    def second() -> None:
        assert a_open.wait(30)
        with _threads.blas_threads(10):
            b_open.set()
            assert a_closed.wait(30)
            inside_b_after_a()

    _run(first, second, names=("A", "B"))


def test_the_last_block_to_close_restores_whichever_thread_opened_first(two_threads):
    # A opens, B opens, A closes (B still inside: one thread), B closes (restored)
    ones, twos = [1] * len(two_threads), [2] * len(two_threads)
    seen: dict[str, list[int]] = {}
    _overlapping(
        inside_a=lambda: seen.setdefault("a", _counts(two_threads)),
        inside_b_after_a=lambda: seen.setdefault("b after a closed", _counts(two_threads)),
    )
    assert seen == {"a": ones, "b after a closed": ones}
    assert _counts(two_threads) == twos


def _stress(libs: list, n_threads: int, rounds: int) -> list[list[int]]:
    """Each thread opens and closes ``rounds`` blocks (every third one nested, every block
    yielding the GIL inside); returns the counts seen inside blocks that were not one
    thread."""
    wrong: list[list[int]] = []
    start = threading.Barrier(n_threads)

    def work() -> None:
        start.wait()
        for i in range(rounds):
            with _threads.blas_threads(10):
                time.sleep(0)  # let another thread run inside this block
                if i % 3 == 0:
                    with _threads.blas_threads(10):
                        counts = _counts(libs)
                else:
                    counts = _counts(libs)
                if counts != [1] * len(libs):
                    wrong.append(counts)

    _run(*[work] * n_threads)
    return wrong


def test_concurrent_blocks_leave_the_process_as_they_found_it(two_threads):
    # on main: no block but the first thread's set anything (2 threads inside the others),
    # and a context-manager form could leave the process at one thread (session 59)
    twos = [2] * len(two_threads)
    for _ in range(3):
        assert _stress(two_threads, n_threads=4, rounds=200) == []
        assert _counts(two_threads) == twos
    assert _counts_in_another_thread(two_threads) == [1] * len(two_threads)
    assert _counts(two_threads) == twos


def test_a_callers_limit_of_one_thread_stays_while_threads_solve(two_threads):
    # the caller's own, stricter limit wins: the blocks find one thread and set nothing
    ones = [1] * len(two_threads)
    with threadpool_limits(limits=1, user_api="blas"):
        assert _counts(two_threads) == ones
        assert _stress(two_threads, n_threads=3, rounds=100) == []
        assert _counts(two_threads) == ones
    assert _counts(two_threads) == [2] * len(two_threads)


_FRESH = """
import threading
import time
import numpy  # loads OpenBLAS (svmgeo imports it lazily)
from threadpoolctl import threadpool_info, threadpool_limits
import svmgeo as sg

def count():
    return max(
        [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"],
        default=0,
    )

default = count()
sg.att_svm(sg.random_data(4, 4, 6, seed=0))  # a small solve in this thread
seen = []

def other():
    with threadpool_limits(limits=1, user_api="blas"):
        seen.append(count())

thread = threading.Thread(target=other)
thread.start()
thread.join()
print(default, seen[0], count())
"""


def test_a_small_solve_leaves_other_threads_free_to_limit_blas():
    # on main: the solve's limit kept this thread in control of the pool, and the other
    # thread's threadpool_limits(1) did nothing (2 threads inside it; session 59)
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", _FRESH], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    default, inside, after = map(int, out.stdout.split())
    if default <= 1:
        pytest.skip("BLAS runs one thread here by default: no limit to observe")
    assert (inside, after) == (1, default)


class _Lib:
    """A stand-in for threadpoolctl's library controller: records who set what."""

    internal_api = "openblas"

    def __init__(self, threading_layer: str, count: int, log: list) -> None:
        self.threading_layer = threading_layer
        self._shared = count
        self._local = threading.local()
        self._log = log

    def get_num_threads(self) -> int:
        if self.threading_layer == "openmp":
            return getattr(self._local, "count", self._shared)
        return self._shared

    def set_num_threads(self, n: int) -> None:
        self._log.append((self.threading_layer, threading.current_thread().name, n))
        if self.threading_layer == "openmp":
            self._local.count = n
        else:
            self._shared = n

    def clear_controlling_thread(self, force: bool = False) -> None:
        self._log.append((self.threading_layer, threading.current_thread().name, "clear", force))


def test_a_per_thread_library_is_set_by_each_thread_a_shared_one_once(monkeypatch):
    # OpenBLAS on OpenMP: omp_set_num_threads sets the calling thread's count only
    log: list = []
    shared, own = _Lib("pthreads", 4, log), _Lib("openmp", 4, log)
    libs = ((shared, shared.get_num_threads),), ((own, own.get_num_threads),)
    monkeypatch.setattr(_threads, "_scan", lambda: libs)
    monkeypatch.setattr(_threads, "_already_one_thread", lambda: False)
    _overlapping()
    assert [entry for entry in log if entry[0] == "openmp"] == [
        ("openmp", "A", 1),
        ("openmp", "B", 1),
        ("openmp", "A", 4),
        ("openmp", "B", 4),
    ]
    assert [entry for entry in log if entry[0] == "pthreads"] == [
        ("pthreads", "A", "clear", True),  # control handed to the thread that sets
        ("pthreads", "A", 1),
        ("pthreads", "A", "clear", False),  # and given up
        ("pthreads", "B", "clear", True),
        ("pthreads", "B", 4),
        ("pthreads", "B", "clear", False),
    ]
    assert shared.get_num_threads() == 4
    assert _threads._open == 0 and _threads._shared == ()


def _in_child(check) -> int:
    """Fork, run ``check()`` (True: exit 0) in the child, return its exit status; a child
    still running after 60 s (a lock left held by the fork) is killed: status -1."""
    import os
    import signal

    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 2
        try:
            code = 0 if check() else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return -1


def test_a_child_forked_while_the_count_is_locked_can_still_limit(two_threads):
    # the fork copies the lock as held; the child gets a new one (os.register_at_fork)
    ones, twos = [1] * len(two_threads), [2] * len(two_threads)

    def check() -> bool:
        with _threads.blas_threads(10):
            inside = _counts(two_threads)
        return inside == ones and _counts(two_threads) == twos

    with _threads._lock:
        status = _in_child(check)
    assert status == 0


def test_a_child_forked_inside_another_threads_block_restores_the_counts(two_threads):
    # the parent's other thread never closes its block in the child: the child's next block
    # restores the counts that thread's block recorded
    ones, twos = [1] * len(two_threads), [2] * len(two_threads)
    opened, close = threading.Event(), threading.Event()

    def hold() -> None:
        with _threads.blas_threads(10):
            opened.set()
            assert close.wait(60)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert opened.wait(30)

        def check() -> bool:
            before = _counts(two_threads)
            with _threads.blas_threads(10):
                inside = _counts(two_threads)
            return before == inside == ones and _counts(two_threads) == twos

        status = _in_child(check)
    finally:
        close.set()
        thread.join(60)
    assert status == 0
    assert _counts(two_threads) == twos
