# SPDX-License-Identifier: BSD-3-Clause
r"""The sweep runner: a grid of trials → one row per trial, locally or on a Dask cluster.

.. math::

    \text{grid} = P_1 \times P_2 \times \dots \times P_k \ \longrightarrow\
    \{\,\text{params} \cup \text{trial\_fn}(\text{params})\,\}_{\text{params} \in \text{grid}}

Trials run in local worker processes (default), in this process (``workers=0``), or on a
``dask.distributed`` cluster (``scheduler=ADDRESS``). Every finished trial is appended to a
CSV table and ``fsync``'d before the next is recorded, so a sweep killed at any point resumes
without recomputing or losing finished trials.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import itertools
import json
import math
import multiprocessing as mp
import os
import pickle
import sys
import threading
import time
import traceback
import types
import uuid
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_ready
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from .._errors import BackendError, ProblemError, SvmgeoError
from .._validation import check_bool, check_int, check_real
from ._store import (
    META_AFTER,
    PARAM_TYPES,
    ResultStore,
    data_frame,
    format_cell,
    param_types,
    parse_cell,
    sidecar,
)

__all__ = [
    "SweepError",
    "SweepResult",
    "check_scheduler",
    "check_timeout",
    "expand_grid",
    "sweep",
    "trial_id",
    "trial_seed",
]

_SCALARS = (type(None), bool, int, float, str)
_THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
_MAX_ERROR = 2000
_SEED_COLUMN = "trial_seed"
"""The column that holds the seed passed to ``trial_fn`` when :func:`sweep` derives it."""

_Outcome = tuple[list[dict[str, Any]] | None, float, str | None]
"""What a worker sends back for one trial: (rows or None, seconds in trial_fn, error text)."""

_Finished = tuple[str, _Outcome, bool]
"""What a runner yields for one trial: (trial id, outcome, whether it was stopped at the
timeout)."""


class SweepError(SvmgeoError, RuntimeError):
    """A sweep could not go on (a worker process died); finished rows are saved."""


# ---------------------------------------------------------------------------------------
# parameters, ids and seeds
# ---------------------------------------------------------------------------------------
def _scalar(value: Any, what: str) -> Any:
    """``value`` as a plain Python scalar, or a ``TypeError`` naming ``what``."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        value = value.item()
    if not isinstance(value, _SCALARS):
        raise TypeError(
            f"{what} is a {type(value).__name__}; table cells hold None, bool, int, float or "
            "str. Save arrays to files and return their paths, or return summary numbers."
        )
    if isinstance(value, str) and ("\n" in value or "\r" in value):
        raise TypeError(f"{what} is a string with a line break; table cells are one line.")
    return value


def _canonical(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"), allow_nan=True)


def trial_id(params: Mapping[str, Any]) -> str:
    """Stable id of a trial: ``"t"`` and the first 16 hex digits of SHA-1 of its canonical JSON.

    The JSON has sorted keys, so the id depends on the parameter values only, not on their
    order or on the grid around them. ``1`` and ``1.0`` are different values (and ids). The
    leading ``t`` keeps ids such as ``1234e56789012345`` from being read as numbers by CSV
    readers (pandas, spreadsheets).
    """
    return "t" + hashlib.sha1(_canonical(params).encode()).hexdigest()[:16]


def trial_seed(params: Mapping[str, Any]) -> int:
    """A 63-bit seed derived from a trial's parameters (SHA-256 of the canonical JSON).

    Trials that differ in any parameter get unrelated seeds; the same parameters always get
    the same seed. Used by :func:`sweep` with ``derive_seeds=True``, which records it in each
    row's ``trial_seed`` column.
    """
    digest = hashlib.sha256(_canonical(params).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


MAX_TRIALS = 10**7
"""The most trials a grid may expand to (each trial is a dict held in memory, and a row of the
table)."""


def expand_grid(grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]]) -> list[dict]:
    """The trials of a grid, in their deterministic order.

    Parameters
    ----------
    grid : dict of str → list, or list of dict
        A dict gives the cartesian product of its value lists (keys in the dict's order, the
        last key varying fastest, as :func:`itertools.product`). A list of dicts is taken as
        the trials themselves; every dict must have the same keys.

    Returns
    -------
    list of dict
        One dict of parameters per trial; values are plain ``None``/``bool``/``int``/
        ``float``/``str`` (numpy scalars are converted).

    Raises
    ------
    ProblemError
        Empty grid, a value that is not a list, a non-scalar value, mismatched keys, the
        same trial twice, or more than ``MAX_TRIALS`` trials.
    """
    if isinstance(grid, Mapping):
        if not grid:
            raise ProblemError(
                "The grid is empty; give at least one parameter, e.g. {'seed': [0]}."
            )
        names = list(grid)
        lists = []
        for name in names:
            _check_name(name)
            values = grid[name]
            if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
                if isinstance(values, (set, frozenset)):
                    fix = f"pass a sorted list: {{{name!r}: sorted(...)}} (a set has no order)"
                elif isinstance(values, Iterable) and not isinstance(values, (str, bytes)):
                    fix = f"pass a list: {{{name!r}: list(...)}}"
                else:
                    fix = f"wrap a single value in a list: {{{name!r}: [{values!r}]}}"
                raise ProblemError(
                    f"Grid values must be lists; got {type(values).__name__} for {name!r}; {fix}."
                )
            if len(values) == 0:
                raise ProblemError(f"Grid parameter {name!r} has an empty list; the grid is empty.")
            lists.append(list(values))
        size = math.prod(len(values) for values in lists)
        if size > MAX_TRIALS:
            raise ProblemError(
                f"The grid has {size:.3g} trials ({' x '.join(str(len(v)) for v in lists)}), "
                f"more than MAX_TRIALS = {MAX_TRIALS:.0e} that one sweep builds; split it into "
                "several sweeps or use fewer values."
            )
        trials = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*lists)]
    elif isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        trials = [dict(t) if isinstance(t, Mapping) else t for t in grid]
        if not trials:
            raise ProblemError("The grid is an empty list of trials; give at least one dict.")
        for k, t in enumerate(trials):
            if not isinstance(t, dict):
                raise ProblemError(
                    f"A grid given as a list must hold dicts of parameters; item {k} is a "
                    f"{type(t).__name__}."
                )
            if list(t) != list(trials[0]):
                raise ProblemError(
                    f"Every trial must have the same parameters in the same order; trial 0 has "
                    f"{list(trials[0])} and trial {k} has {list(t)}."
                )
        for name in trials[0]:
            _check_name(name)
    else:
        raise ProblemError(
            f"grid must be a dict of parameter name → list of values, or a list of dicts; got "
            f"{type(grid).__name__}."
        )
    clean = []
    for t in trials:
        try:
            clean.append({k: _scalar(v, f"grid value {k}={v!r}") for k, v in t.items()})
        except TypeError as exc:
            raise ProblemError(str(exc)) from None
    seen: dict[str, dict] = {}
    for t in clean:
        tid = trial_id(t)
        if tid in seen:
            raise ProblemError(f"The grid holds the trial {t} twice; remove the duplicate.")
        seen[tid] = t
    return clean


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise ProblemError(
            f"Parameter names must be Python identifiers (they are passed as keyword "
            f"arguments); got {name!r}."
        )
    if name in ("trial_id", *META_AFTER):
        raise ProblemError(f"{name!r} is a bookkeeping column of the table; rename the parameter.")


# ---------------------------------------------------------------------------------------
# the code that runs in a worker
# ---------------------------------------------------------------------------------------
def _limit_threads(threads: int | None) -> None:
    """Cap BLAS / OpenMP / numba threads of this worker at ``threads`` (None: leave alone).

    The environment variables reach the libraries loaded later; threadpoolctl sets the thread
    count of those loaded already (a forkserver that preloaded numpy, a long-lived Dask
    worker); numba's pool may be running, so its count is set, not its variable.
    """
    if threads is None:
        return
    for var in _THREAD_VARS:
        os.environ[var] = str(threads)
    if "numba" in sys.modules:
        import numba

        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    else:
        os.environ["NUMBA_NUM_THREADS"] = str(threads)
    threadpool_limits(threads)


_PROCESS_TOKEN = uuid.uuid4().hex
"""Drawn when this module is imported: with the process id it tells the sweep's own process
from a worker process (forked ones share the token, processes on other machines may share
the id)."""


def _process_key() -> tuple[int, str]:
    """This process's key, which :func:`_run_trial` compares with the sweep's (``home``)."""
    return os.getpid(), _PROCESS_TOKEN


def _exit_with_parent(parent_alive: Connection) -> None:
    """End this worker process as soon as the sweep's process is gone.

    ``parent_alive`` is the read end of a pipe whose only write end the sweep's process
    holds: reading returns EOF once that process has exited, however it ended (``kill -9``
    included), and a daemon thread then ends this worker, so no orphan goes on computing.
    """

    def watch() -> None:
        try:
            parent_alive.recv_bytes()
        except (EOFError, OSError):
            pass
        os._exit(1)

    threading.Thread(target=watch, name="svmgeo-parent-watch", daemon=True).start()


def _init_worker(threads: int | None, parent_alive: Connection, start_method: str) -> None:
    """Initializer of a local worker process: thread limits, the parent watch, and the
    sweep's process's default start method (``start_method``), as trials have with
    ``workers=0``.

    A process of the forkserver context defaults to forkserver, and a lock made with the
    default context is then a named semaphore that the resource tracker holds until the
    process ends cleanly: numba's threading layer makes one on its first parallel call, so
    each worker killed at a timeout leaked one ("There appear to be 6 leaked semaphore
    objects to clean up at shutdown" from ``svmgeo reproduce global --quick --timeout 2``).
    With the fork default (Linux before Python 3.14) such a lock is unlinked as it is made.
    Where the default is forkserver or spawn (Python 3.14 on Linux, macOS, Windows, or a
    caller's ``mp.set_start_method``), a killed worker's lock is still left to the resource
    tracker, which unlinks it at shutdown with that warning (killing a worker lets it run no
    clean-up: its trial may be in native code).
    """
    _exit_with_parent(parent_alive)
    _limit_threads(threads)
    mp.set_start_method(start_method, force=True)


def _clean_results(out: Any) -> list[dict[str, Any]]:
    """A trial's return value as a list of rows of plain scalars (``TypeError`` otherwise)."""
    rows = [out] if isinstance(out, Mapping) else out
    if not isinstance(rows, (list, tuple)) or not all(isinstance(r, Mapping) for r in rows):
        raise TypeError(
            f"trial_fn must return a dict of results (or a list of dicts, one per row); it "
            f"returned {type(out).__name__}."
        )
    if not rows:
        raise TypeError("trial_fn returned an empty list: a trial must give at least one row.")
    clean = []
    for r in rows:
        if list(r) != list(rows[0]):
            raise TypeError(
                f"the rows returned by one trial must have the same keys; got {list(rows[0])} "
                f"and {list(r)}."
            )
        row = {}
        for k, v in r.items():
            if not isinstance(k, str):
                raise TypeError(f"result keys must be strings; got {k!r}.")
            row[k] = _scalar(v, f"result {k!r}")
        clean.append(row)
    return clean


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        f = frames[-1]
        text += f" (at {Path(f.filename).name}:{f.lineno} in {f.name})"
    text = " | ".join(line for line in text.splitlines() if line.strip())
    return text[:_MAX_ERROR]


def _run_trial(
    fn: Callable[..., Any],
    kwargs: dict[str, Any],
    threads: int | None,
    home: tuple[int, str] | None = None,
) -> _Outcome:
    """Run one trial; return (rows, seconds, error text). Exceptions become error text.

    ``threads`` caps the threads of a worker process for the rest of its life; it is not
    applied when the trial runs in the sweep's own process (its key is ``home``: an
    in-process Dask client), since the limit is process-wide and would reach the caller's
    own threads (as with ``workers=0``, the trial runs with the caller's settings).
    """
    if home != _process_key():
        _limit_threads(threads)
    start = time.perf_counter()
    try:
        rows = _clean_results(fn(**kwargs))
    except Exception as exc:
        return None, time.perf_counter() - start, _error_text(exc)
    return rows, time.perf_counter() - start, None


# ---------------------------------------------------------------------------------------
# the result
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, eq=False)
class SweepResult:
    """The table of a sweep, in grid order, and what this call did.

    Attributes
    ----------
    rows : list of dict
        One dict per row, every row with all ``columns``; rows of this grid's trials only,
        sorted by grid order (then ``part``). The parameters are the grid's values, of the
        types the grid gave (the string ``"007"`` stays a string, in new and resumed rows
        alike); the other columns read back exactly as :func:`read_results` gives them.
    columns : list of str
        ``trial_id``, the parameters, ``trial_seed`` (with ``derive_seeds=True`` only: the
        seed passed to ``trial_fn``), the results, ``part``, ``n_parts``, ``status``
        (``"ok"``, ``"error"`` or ``"timeout"``), ``elapsed`` (seconds in ``trial_fn``),
        ``error``.
    path : Path or None
        The CSV table (None when ``out=None``).
    n_trials, n_run, n_resumed, n_errors : int
        Trials in the grid; run by this call; found finished in the table; with status
        ``"error"`` or ``"timeout"``.
    elapsed : float
        Wall-clock seconds of this call.
    """

    rows: list[dict[str, Any]]
    columns: list[str]
    path: Path | None
    n_trials: int
    n_run: int
    n_resumed: int
    n_errors: int
    elapsed: float

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The rows with status ``"error"`` or ``"timeout"``."""
        return [r for r in self.rows if r["status"] != "ok"]

    def column(self, name: str) -> list[Any]:
        """The values of one column, in row order."""
        if name not in self.columns:
            raise ProblemError(f"No column {name!r}; the columns are {self.columns}.")
        return [r[name] for r in self.rows]

    def to_pandas(self) -> Any:
        """The rows as a :class:`pandas.DataFrame` (needs pandas)."""
        return data_frame(
            self.rows,
            self.columns,
            where="to_pandas",
            hint="The rows are also available as a list of dicts in .rows.",
        )

    def __repr__(self) -> str:
        where = f", path={str(self.path)!r}" if self.path else ""
        return (
            f"SweepResult(n_trials={self.n_trials}, n_run={self.n_run}, "
            f"n_resumed={self.n_resumed}, n_errors={self.n_errors}, "
            f"elapsed={self.elapsed:.3g}{where})"
        )

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


# ---------------------------------------------------------------------------------------
# the runner
# ---------------------------------------------------------------------------------------
def _default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def check_timeout(timeout: Any, workers: int | None, scheduler: Any, *, where: str) -> float | None:
    """``timeout`` (seconds a trial may run, or None) checked for :func:`sweep` with
    ``workers`` local processes (None: the default, one per core) or a Dask ``scheduler``: a
    number in (0, inf), refused with ``workers=0`` or ``scheduler`` (neither can stop a
    running trial); a ProblemError naming the parameter of ``where`` otherwise."""
    if timeout is None:
        return None
    timeout = check_real(timeout, "timeout", low=0.0, low_open=True, high_open=True, where=where)
    # spelled in the forms the command line's options translate ("workers=4", "drop timeout")
    if scheduler is not None:
        bound = " and bound the work inside trial_fn" if where == "sweep" else ""
        raise ProblemError(
            f"The 'timeout' parameter of {where} is not available with a Dask scheduler: Dask "
            "cannot stop a running task (cancelling its future leaves it running, and the "
            "worker queues later trials behind it), so a timed-out trial would go on "
            "holding its worker. Drop scheduler to run on local worker processes, which can "
            f"be stopped (one per core, or e.g. workers=4), or drop timeout{bound}."
        )
    if workers == 0:
        raise ProblemError(
            f"The 'timeout' parameter of {where} needs worker processes: with workers=0 the "
            "trials run in this process, where a running trial cannot be stopped. Pass "
            "workers=1 or more, or drop workers (one per core)."
        )
    return timeout


def _check_picklable(fn: Callable[..., Any]) -> None:
    hint = (
        "Define trial_fn with `def` at module level in an importable module (not a lambda, a "
        "nested function or a function typed into `python -c`/a notebook), or pass workers=0 "
        "to run trials in this process."
    )
    try:
        pickle.dumps(fn)
    except Exception as exc:
        raise ProblemError(
            f"trial_fn {getattr(fn, '__qualname__', fn)!r} cannot be sent to worker processes "
            f"(pickling failed: {exc}). {hint}"
        ) from None
    if getattr(fn, "__module__", None) == "__main__":
        main = sys.modules.get("__main__")
        if getattr(main, "__file__", None) is None:
            raise ProblemError(
                f"trial_fn {fn.__qualname__!r} lives in an interactive __main__ that worker "
                f"processes cannot import. {hint}"
            )


def _mp_context() -> Any:
    methods = mp.get_all_start_methods()
    return mp.get_context("forkserver" if "forkserver" in methods else "spawn")


def _start_method() -> str:
    """This process's default start method, without fixing it (the first of
    :func:`multiprocessing.get_all_start_methods` until one is set)."""
    return mp.get_start_method(allow_none=True) or mp.get_all_start_methods()[0]


def _worker_died() -> SweepError:
    """The error of a local worker process that ended while it held a trial."""
    return SweepError(
        "A worker process died abruptly: it was killed, ran out of memory, crashed "
        "in native code, or could not import trial_fn's module (worker processes "
        "import it by name, so it must be on sys.path / PYTHONPATH; the worker's "
        "traceback is on stderr). The rows of finished trials are saved; rerun the "
        "same sweep to resume. A trial that crashes its process every time must be "
        "fixed or left out of the grid (workers=0 runs it in this process)."
    )


def _worker_cannot_run(error: str) -> SweepError:
    """The error of a local worker process that could not load trial_fn (``error``)."""
    return SweepError(
        f"A worker process could not run trial_fn: {error}. Worker "
        "processes import trial_fn's module by name: make sure it is importable "
        "(on sys.path / PYTHONPATH) and defined at module level."
    )


def _run_local(
    fn: Callable[..., Any],
    tasks: list[tuple[str, dict[str, Any]]],
    workers: int,
    threads: int | None,
) -> Generator[_Finished, None, None]:
    if workers == 0:
        for tid, kwargs in tasks:
            yield tid, _run_trial(fn, kwargs, None), False
        return
    ctx = _mp_context()
    parent_alive, alive = ctx.Pipe(duplex=False)  # workers read; only this process writes
    ex = ProcessPoolExecutor(
        max_workers=min(workers, len(tasks)),
        mp_context=ctx,
        initializer=_init_worker,
        initargs=(threads, parent_alive, _start_method()),
    )
    finished = False
    try:
        futures = {ex.submit(_run_trial, fn, kwargs, threads): tid for tid, kwargs in tasks}
        for fut in as_completed(futures):
            try:
                out = fut.result()
            except BrokenProcessPool as exc:
                raise _worker_died() from exc
            except Exception as exc:  # trial errors are caught in _run_trial: this is setup
                raise _worker_cannot_run(_error_text(exc)) from exc
            yield futures[fut], out, False
        finished = True
    finally:
        # every trial done: the idle workers exit cleanly; stopped early (an error, an
        # interrupt): cancel the queued trials and end the running ones now
        ex.shutdown(wait=finished, cancel_futures=not finished)
        alive.close()  # EOF: a worker still running a trial ends now
        parent_alive.close()


def _serve_trials(
    conn: Connection, threads: int | None, parent_alive: Connection, start_method: str
) -> None:
    """Main of a worker process of a sweep with a ``timeout``: run the trials sent on
    ``conn`` one at a time, saying when each starts (its clock starts then, not while the
    worker starts up or imports trial_fn's module) and what it gave. EOF on ``conn``: done."""
    _init_worker(threads, parent_alive, start_method)
    while True:
        try:
            fn, kwargs = conn.recv()
        except EOFError:
            return
        except Exception as exc:  # unpickling trial_fn: its module does not import here
            conn.send(("setup", _error_text(exc)))
            return
        conn.send(("start", None))
        conn.send(("done", _run_trial(fn, kwargs, threads)))


@dataclasses.dataclass(eq=False)
class _Worker:
    """One worker process of a sweep with a ``timeout``, and the trial it runs."""

    process: Any
    conn: Connection
    tid: str = ""  # "" while idle
    started: float | None = None  # time.monotonic() when its trial began
    served: int = 0  # trials it finished: 0 while its first trial runs


def _start_worker(ctx: Any, threads: int | None, parent_alive: Connection) -> _Worker:
    conn, child = ctx.Pipe()
    process = ctx.Process(
        target=_serve_trials,
        args=(child, threads, parent_alive, _start_method()),
        name="svmgeo-sweep-worker",
    )
    process.start()
    child.close()  # the worker holds the only other end: its exit is EOF here
    return _Worker(process, conn)


#: What a timeout on a fresh worker's first trial adds: its time counts one-time work.
_FIRST_TRIAL = (
    ". It was the first trial of a fresh worker process, whose time counts the work done once "
    "per process on first use (imports, loading or compiling the numba kernels the trial "
    "calls: seconds to a minute on a busy machine), which the fresh worker taking the next "
    "trial does again; a timeout above that lets the trials after it run without it"
)


def _run_local_timeout(
    fn: Callable[..., Any],
    tasks: list[tuple[str, dict[str, Any]]],
    workers: int,
    threads: int | None,
    timeout: float,
) -> Generator[_Finished, None, None]:
    """:func:`_run_local` with a limit of ``timeout`` seconds per trial.

    ``ProcessPoolExecutor`` cannot stop one task (killing a worker breaks the whole pool), so
    these workers are processes of their own, one pipe each: a trial still running
    ``timeout`` seconds after it started has its process killed (native code included) and
    a fresh worker takes the next trial.
    """
    ctx = _mp_context()
    parent_alive, alive = ctx.Pipe(duplex=False)  # workers read; only this process writes
    queue = tasks[::-1]
    pool: list[_Worker] = []
    finished = False
    try:
        pool = [_start_worker(ctx, threads, parent_alive) for _ in range(min(workers, len(tasks)))]
        while True:
            for w in pool:
                if not w.tid and queue:
                    w.tid, kwargs = queue.pop()
                    try:
                        w.conn.send((fn, kwargs))
                    except OSError as exc:  # it died idle
                        raise _worker_died() from exc
            busy = [w for w in pool if w.tid]
            if not busy:
                break
            ends = [w.started + timeout for w in busy if w.started is not None]
            wait_s = max(0.0, min(ends) - time.monotonic()) if ends else None
            ready = wait_ready([w.conn for w in busy], timeout=wait_s)
            for w in busy:
                if w.conn in ready:
                    try:
                        kind, value = w.conn.recv()
                    except (EOFError, OSError) as exc:
                        raise _worker_died() from exc
                    if kind == "setup":
                        raise _worker_cannot_run(value)
                    if kind == "start":
                        w.started = time.monotonic()
                        continue
                    tid, w.tid, w.started = w.tid, "", None
                    w.served += 1
                    yield tid, value, False
                elif w.started is not None and time.monotonic() - w.started >= timeout:
                    elapsed = time.monotonic() - w.started
                    w.process.kill()
                    w.process.join()
                    w.conn.close()
                    pool.remove(w)
                    if queue:
                        pool.append(_start_worker(ctx, threads, parent_alive))
                    error = (
                        f"timed out: trial_fn ran {elapsed:.3g} s, past timeout={timeout:g} s; "
                        f"its worker process was killed{'' if w.served else _FIRST_TRIAL}"
                    )
                    yield w.tid, (None, elapsed, error), True
        finished = True
    finally:
        # every trial done: the idle workers read EOF and exit; stopped early (an error, an
        # interrupt): the running trials end now
        for w in pool:
            if not finished:
                w.process.kill()
            w.conn.close()
        for w in pool:
            w.process.join()
        alive.close()
        parent_alive.close()


def check_scheduler(scheduler: Any) -> None:
    """Check ``scheduler`` (None, a ``distributed.Client`` or an address) before any work.

    An address must read ``[SCHEME://]HOST:PORT`` with a scheme dask knows (``tcp``,
    ``tls``, ...); a malformed one is a :class:`ProblemError` at once, not a connection
    attempt that times out.

    Raises
    ------
    ProblemError
        ``scheduler`` is neither None, a Client nor a well-formed address.
    BackendError
        dask.distributed is not installed.
    """
    if scheduler is None:
        return
    try:
        from distributed import Client
        from distributed.comm import get_address_host_port, parse_address, registry
    except ImportError as exc:
        raise BackendError(
            "scheduler= needs dask.distributed, which is not installed: pip install 'svmgeo[dask]'."
        ) from exc
    if isinstance(scheduler, Client):
        return
    example = "Give it as tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786 (`dask scheduler` prints it)."
    if not isinstance(scheduler, str):
        raise ProblemError(
            f"scheduler must be a Dask scheduler address or a distributed.Client; got "
            f"{type(scheduler).__name__}. {example}"
        )
    try:
        if not scheduler or any(c.isspace() for c in scheduler):
            raise ValueError("empty or contains spaces")
        scheme, _ = parse_address(scheduler)
        registry.get_backend(scheme)  # an unknown scheme is a ValueError
        if scheme in ("tcp", "tls", "ws", "wss"):
            get_address_host_port(scheduler)  # a missing or non-numeric port is a ValueError
    except ValueError as exc:
        raise ProblemError(
            f"scheduler={scheduler!r} is not a Dask scheduler address ({exc}). {example}"
        ) from None


def _connect(scheduler: Any) -> tuple[Any, bool]:
    check_scheduler(scheduler)
    from distributed import Client

    if isinstance(scheduler, Client):
        return scheduler, False
    try:
        client = Client(
            scheduler, set_as_default=False
        )  # timeout: distributed.comm.timeouts.connect
    except (OSError, TimeoutError) as exc:
        raise BackendError(
            f"Could not connect to a Dask scheduler at {scheduler!r}: {exc}. Start one with "
            "`dask scheduler` and workers with `dask worker ADDRESS`, and check the address."
        ) from exc
    return client, True


def _run_dask(
    fn: Callable[..., Any],
    tasks: list[tuple[str, dict[str, Any]]],
    scheduler: Any,
    threads: int | None,
) -> Generator[_Finished, None, None]:
    from distributed import as_completed as dask_completed

    client, own = _connect(scheduler)
    tag = uuid.uuid4().hex[:8]
    try:
        futures = {}
        for tid, kwargs in tasks:
            fut = client.submit(
                _run_trial,
                fn,
                kwargs,
                threads,
                _process_key(),
                key=f"svmgeo-trial-{tid}-{tag}",
                pure=False,
            )
            futures[fut.key] = (tid, fut)
        for fut in dask_completed([f for _, f in futures.values()], loop=client.loop):
            tid = futures[fut.key][0]
            try:
                out = fut.result()
            except Exception as exc:  # e.g. KilledWorker: the trial took its workers down
                out = (None, math.nan, _error_text(exc))
            fut.release()
            yield tid, out, False
    finally:
        for _, fut in futures.values():
            fut.cancel()
        if own:
            client.close()


def _rows_of(
    tid: str,
    params: dict[str, Any],
    out: _Outcome,
    store: ResultStore,
    timed_out: bool,
) -> list[dict[str, Any]]:
    """The rows of one finished trial; ``params`` are the table's parameter columns (the
    grid's, and the derived seed's column when there is one)."""
    results, elapsed, error = out
    base = {"trial_id": tid, **params}
    if results is not None:
        error = store.check_results(results[0])
    if results is None or error is not None:
        status = "timeout" if timed_out else "error"
        return [
            {**base, "part": 0, "n_parts": 1, "status": status, "elapsed": elapsed, "error": error}
        ]
    n = len(results)
    return [
        {**base, **r, "part": k, "n_parts": n, "status": "ok", "elapsed": elapsed, "error": None}
        for k, r in enumerate(results)
    ]


class _Recorder:
    """Appends the rows of each trial to ``store`` as it finishes, under the result columns
    of the first successful trial in grid order (``order``: the trial ids to run, in grid
    order), whatever order the trials finish in.

    Until the table has result columns (a fresh table, or one of error rows only), the first
    trial to succeed fixes them provisionally, and every finished trial is still appended at
    once (a sweep stopped now resumes without rerunning it). The outcomes are kept in memory
    until every trial before the one whose keys are the columns has finished: a trial before
    it that succeeds with other keys (or the same keys in another order) takes its place,
    and the rows of the kept trials are derived again under its columns and the table
    rewritten. A table that has result columns keeps them (resumed rows stay as they were).
    """

    def __init__(
        self, store: ResultStore, params_of: dict[str, dict[str, Any]], order: Sequence[str]
    ) -> None:
        self.store = store
        self.params_of = params_of
        self.position = {tid: k for k, tid in enumerate(order)}
        self.finished = [False] * len(order)
        self.first_open = 0  # position of the first trial not finished
        self.fixer: int | None = None  # position of the trial whose keys are the columns
        # tid -> (outcome, timed out, whether its rows are errors), while the columns may change
        self.kept: dict[str, tuple[_Outcome, bool, bool]] | None = (
            None if store.results is not None else {}
        )
        self.n_errors = 0  # trials recorded by this call whose rows are errors

    def record(self, tid: str, outcome: _Outcome, timed_out: bool) -> None:
        """Append the rows of the finished trial ``tid``."""
        pos = self.position[tid]
        self.finished[pos] = True
        while self.first_open < len(self.finished) and self.finished[self.first_open]:
            self.first_open += 1
        results = outcome[0]
        keys = None if results is None else list(results[0])
        if (
            self.kept is not None
            and keys is not None
            and self.fixer is not None
            and pos < self.fixer
            and keys != self.store.results
            and self.store.clash(keys) is None
        ):
            self.fixer = pos
            self.kept[tid] = (outcome, timed_out, False)
            self._refix(keys, self.kept)
        else:
            failed = self._append(tid, outcome, timed_out)
            if self.kept is not None:
                self.kept[tid] = (outcome, timed_out, failed)
                if not failed and (self.fixer is None or pos < self.fixer):
                    self.fixer = pos
        if self.kept is not None and self.fixer is not None and self.first_open > self.fixer:
            self.kept = None  # every trial before it has finished: the columns are final

    def _append(self, tid: str, outcome: _Outcome, timed_out: bool) -> bool:
        """Append the rows of ``tid`` under the current columns; whether they are errors."""
        rows = _rows_of(tid, self.params_of[tid], outcome, self.store, timed_out)
        self.store.append(rows)
        failed = rows[0]["status"] != "ok"
        self.n_errors += failed
        return failed

    def _refix(self, keys: list[str], kept: dict[str, tuple[_Outcome, bool, bool]]) -> None:
        """Make ``keys`` the result columns and derive the ``kept`` trials' rows again."""
        self.store.results = keys  # the columns _rows_of checks the results against
        rows = []
        for tid, (outcome, timed_out, failed) in kept.items():
            redone = _rows_of(tid, self.params_of[tid], outcome, self.store, timed_out)
            now = redone[0]["status"] != "ok"
            self.n_errors += now - failed
            kept[tid] = (outcome, timed_out, now)
            rows.extend(redone)
        self.store.replace(keys, rows)


def trial_digest(fn: Any) -> str:
    """A digest of what the trial function computes, as far as Python lets it be told: its
    bytecode, constants and names (nested functions' included), its defaults, and, for a
    :func:`functools.partial`, the function it wraps and its bound arguments (pickled). Two
    lambdas, or two partials of one function with other arguments, get different digests;
    the functions a trial calls are not followed. ``"?"`` when nothing can be read (a
    builtin)."""
    h = hashlib.sha256()
    if not _digest_into(fn, h):
        return "?"
    return h.hexdigest()[:16]


def _digest_into(fn: Any, h: Any) -> bool:
    """Feed ``fn``'s digest parts into ``h``; False when ``fn`` has no code to read."""
    if isinstance(fn, functools.partial):
        h.update(b"partial")
        _digest_into(fn.func, h)
        h.update(_pickled((fn.args, fn.keywords)))
        return True
    code = getattr(fn, "__code__", None)
    if code is None:  # a callable object: its class's __call__ and its state
        code = getattr(getattr(type(fn), "__call__", None), "__code__", None)  # noqa: B004
        if code is None:
            return False
        h.update(_pickled(fn))
    _code_into(code, h)
    h.update(_pickled((getattr(fn, "__defaults__", None), getattr(fn, "__kwdefaults__", None))))
    return True


def _code_into(code: types.CodeType, h: Any) -> None:
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_into(const, h)
        elif isinstance(const, frozenset):  # its repr's order follows string hashing
            h.update(repr(sorted(map(repr, const))).encode())
        else:
            h.update(repr(const).encode())


def _pickled(value: Any) -> bytes:
    """``value`` pickled, or its type's name when it does not pickle."""
    try:
        return pickle.dumps(value, protocol=4)
    except Exception:  # unpicklable bound arguments: only their types tell partials apart
        return repr(type(value)).encode()


def _settings(
    trial_fn: Callable[..., Any], seed_key: str | None, derive_seeds: bool, params: list[str]
) -> dict[str, Any]:
    """What ``<out>.sweep.json`` records of a sweep (see :func:`_check_settings`)."""
    name = f"{getattr(trial_fn, '__module__', '?')}.{getattr(trial_fn, '__qualname__', '?')}"
    return {
        "trial_fn": name,
        "trial_digest": trial_digest(trial_fn),
        "seed_key": seed_key,
        "derive_seeds": derive_seeds,
        "params": params,
    }


def _check_settings(out: Path, settings: dict[str, Any]) -> None:
    """Refuse to resume the table ``out`` with other settings than it was written with (a
    sidecar ``<out>.sweep.json``: the trial function's name and :func:`trial_digest`,
    ``seed_key``, ``derive_seeds`` and the grid's parameter names), which trial ids and the
    header alone do not tell apart
    (a table over parameters (a, seed) read by a grid over (a) takes ``seed`` for a result).
    A sidecar written before a setting was recorded is not checked on it."""
    side = sidecar(out)
    if side.is_file():
        try:
            stored = json.loads(side.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            stored = None
        if not isinstance(stored, dict):
            stored = {}
        changed = ", ".join(
            f"{key} {stored[key]!r} -> {value!r}"
            for key, value in settings.items()
            if key in stored and stored[key] != value
        )
        if changed:
            if "trial_digest" in changed:
                changed += " (the trial function's code, defaults or bound arguments differ)"
            raise ProblemError(
                f"{out} was written by a sweep with other settings ({changed}); its rows would "
                "be resumed as if they were this sweep's. Pass resume=False to rerun every "
                "trial, or another 'out'."
            )


def _record_settings(
    out: Path, settings: dict[str, Any], types: dict[str, set[str]] | None
) -> None:
    """Write ``settings`` to the sidecar of ``out`` (atomically), with the type names of
    each parameter's values in the table (``types``; left out when unknown), which
    :func:`~svmgeo.experiments.read_results` reads and resuming does not check (a grid may
    grow by values of another type)."""
    side = sidecar(out)
    tmp = side.with_name(side.name + ".tmp")
    recorded = dict(settings)
    if types is not None:
        recorded[PARAM_TYPES] = {name: sorted(kinds) for name, kinds in types.items()}
    tmp.write_text(json.dumps(recorded), encoding="utf-8")
    os.replace(tmp, side)


def _kept_types(out: Path, names: list[str], resumed: bool) -> dict[str, set[str]] | None:
    """The type names of each parameter's values in the table ``out`` as opened: none for a
    table started afresh, those its sidecar records for the rows kept from earlier sweeps
    (``resumed``); None when those rows' types are not recorded (a sidecar written before
    this version recorded them)."""
    if not resumed:
        return {name: set() for name in names}
    stored = param_types(out)
    if stored is None or not set(names) <= set(stored):
        return None
    return {name: set(stored[name]) for name in names}


def _widen_types(types: dict[str, set[str]], trial: dict[str, Any]) -> bool:
    """Add the type names of ``trial``'s values to ``types``; whether any was new."""
    new = False
    for name, kinds in types.items():
        kind = type(trial[name]).__name__
        if kind not in kinds:
            kinds.add(kind)
            new = True
    return new


def _refuse_table_without_seeds(out: Path, settings: dict[str, Any]) -> None:
    """Raise a :class:`ProblemError` that says why a table of a ``derive_seeds=True`` sweep
    cannot be resumed when its header lacks the seed column (nothing when it has it): it was
    written by another sweep (the sidecar says which setting differs) or before tables
    recorded the derived seed."""
    try:
        with out.open(newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return
    names = settings["params"]
    if header[1 : 1 + len(names)] != names or _SEED_COLUMN in header:
        return
    _check_settings(out, settings)  # derive_seeds False -> True: say so
    raise ProblemError(
        f"{out} was written by a sweep with derive_seeds=True before tables recorded each "
        f"trial's derived seed (the {_SEED_COLUMN!r} column, svmgeo 0.2.0); resuming it would "
        "leave its rows without it. Pass resume=False to rerun every trial, or another 'out'."
    )


def sweep(
    trial_fn: Callable[..., Any],
    grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
    *,
    out: str | os.PathLike[str] | None = None,
    workers: int | None = None,
    scheduler: Any = None,
    progress: bool = True,
    resume: bool = True,
    retry_errors: bool = False,
    seed_key: str | None = "seed",
    derive_seeds: bool = False,
    threads: int | None = 1,
    timeout: float | None = None,
    desc: str = "sweep",
) -> SweepResult:
    r"""Run ``trial_fn`` on every trial of a grid; one row per trial, saved as each finishes.

    .. math::

        \text{rows} = \{\, (\text{trial\_id}(p),\ p,\ \text{trial\_fn}(**p),\ \text{status},
        \ \text{elapsed}) : p \in \text{grid} \,\}

    (with ``derive_seeds=True``, ``trial_fn`` gets the seed :math:`\text{trial\_seed}(p)`,
    recorded in the row beside :math:`p`).

    Each finished trial is appended to the CSV table ``out`` (flushed and ``fsync``'d). With
    ``resume=True`` (default) trials already in the table are not run again, so an
    interrupted sweep is finished by calling it again with the same arguments. A trial that
    raises becomes a row with ``status="error"`` and the exception in ``error``, one that
    runs past ``timeout`` a row with ``status="timeout"``; the sweep goes on.

    Parameters
    ----------
    trial_fn : callable
        ``trial_fn(**params) -> dict`` of scalar results (or a list of dicts: several rows,
        numbered by ``part``). Every trial must return the same keys (the keys of the first
        successful trial in grid order fix the table's result columns, whatever order the
        trials finish in; a resumed table keeps the result columns it has; others make an
        error row). With worker processes or Dask it must be a module-level function of an
        importable module.
    grid : dict of str → list, or list of dict
        Parameters; see :func:`expand_grid`.
    out : str or PathLike, optional
        The CSV table. None keeps the rows in memory only (nothing to resume from).
    workers : int, optional
        Local worker processes; default: the CPU cores this process may use. ``0`` runs the
        trials one by one in this process (no pickling; for debugging). Not with
        ``scheduler``.
    scheduler : str or distributed.Client, optional
        Run on a Dask cluster instead: the scheduler's address (``"tcp://host:8786"``) or a
        connected client. Workers must be able to import svmgeo and ``trial_fn``'s module.
    progress : bool, default True
        Show a tqdm progress bar with the ETA on stderr.
    resume : bool, default True
        Keep the rows already in ``out`` and run only the missing trials. ``False`` replaces
        the file.
    retry_errors : bool, default False
        With ``resume``, run trials whose stored row is an error again (their rows are
        removed first).
    seed_key : str or None, default "seed"
        The grid parameter that holds the replicate seed. Its values must be ints
        (a resumable sweep cannot use seeds drawn from the clock or the OS).
    derive_seeds : bool, default False
        Pass ``seed_key=trial_seed(params)`` to ``trial_fn`` instead of the grid's value, so
        that trials differing in any parameter get unrelated random streams. The table
        records the grid's value under ``seed_key`` and the seed passed in the column
        ``trial_seed`` (after the parameters, error rows included): ``trial_fn(**{**params,
        seed_key: row["trial_seed"]})`` reruns a row on its own. A grid parameter may not
        be named ``trial_seed`` then.
    threads : int or None, default 1
        Threads per worker for numba, OpenMP and BLAS (set in workers before the trials
        import them, so that ``workers`` processes do not oversubscribe the cores). None
        leaves the workers' defaults. Not applied to trials that run in this process:
        ``workers=0``, and an in-process Dask client (``Client(processes=False)``), whose
        trials run with the caller's thread settings (the limit is process-wide and would
        stay on the caller's own threads).
    timeout : float or None, default None
        Seconds one trial may run (from its start in a worker, not counting the worker's
        start-up); None: no limit. A trial still running then has its worker process killed
        and becomes a row with ``status="timeout"`` (its parameters, ``trial_seed`` when
        derived, ``elapsed`` and why in ``error``); the sweep goes on with a fresh worker.
        Local worker processes only: refused with ``workers=0`` (a trial running in this
        process cannot be stopped) and with ``scheduler`` (Dask cannot stop a running task:
        cancelling its future leaves it running on the worker). Only the worker process is
        killed: processes the trial started itself (``subprocess``) keep running.
    desc : str, default "sweep"
        Label of the progress bar.

    Returns
    -------
    SweepResult
        The rows of this grid's trials in grid order (resumed and new alike).

    Raises
    ------
    ProblemError
        Bad grid, a non-callable or unpicklable ``trial_fn``, non-integer seeds, a table at
        ``out`` holding another sweep's parameters, or one being written by another sweep;
        ``timeout`` not a number in (0, inf), or given with ``workers=0`` or ``scheduler``.
    BackendError
        ``scheduler`` given but dask.distributed missing, or no scheduler at the address.
    SweepError
        A local worker process died; finished rows are saved, rerun to resume.

    Examples
    --------
    In this process (``workers=0`` accepts any callable):

    >>> from svmgeo.experiments import sweep
    >>> res = sweep(lambda a, b: {"sum": a + b}, {"a": [1, 2], "b": [10]}, workers=0,
    ...             progress=False)
    >>> res.column("sum"), res.column("status")
    ([11, 12], ['ok', 'ok'])

    In worker processes, resumable (``trial`` defined at module level):

    >>> res = sweep(trial, {"n": [10, 20], "seed": range(5)}, out="r.csv")  # doctest: +SKIP
    """
    start = time.perf_counter()
    if not callable(trial_fn):
        raise ProblemError(
            f"trial_fn must be a function trial_fn(**params) -> dict; got "
            f"{type(trial_fn).__name__}."
        )
    if out is not None and not isinstance(out, (str, os.PathLike)):
        raise ProblemError(
            f"The 'out' parameter of sweep must be a file path (str or pathlib.Path) or None "
            f"(rows kept in memory); got {out!r} of type {type(out).__name__}."
        )
    trials = expand_grid(grid)
    if scheduler is not None and workers is not None:
        raise ProblemError(
            "Give workers (local processes) or scheduler (a Dask cluster), not both; a "
            "cluster's workers are started with `dask worker`."
        )
    check_scheduler(scheduler)
    n_workers = _default_workers() if workers is None else check_int(workers, "workers", low=0)
    if threads is not None:
        check_int(threads, "threads", low=1, where="sweep")
    timeout = check_timeout(timeout, n_workers, scheduler, where="sweep")
    for name, flag in (
        ("progress", progress),
        ("resume", resume),
        ("retry_errors", retry_errors),
        ("derive_seeds", derive_seeds),
    ):
        check_bool(flag, name, where="sweep")  # resume="no" is truthy: it would resume
    if seed_key is not None and not isinstance(seed_key, str):
        raise ProblemError(
            f"The 'seed_key' parameter of sweep must be the name (a str) of the grid's seed "
            f"parameter, or None; got {seed_key!r}."
        )
    names = list(trials[0])
    if seed_key is not None and seed_key in names:
        bad = [t[seed_key] for t in trials if type(t[seed_key]) is not int or t[seed_key] < 0]
        if bad:
            raise ProblemError(
                f"Seeds ({seed_key!r}) must be non-negative ints so that every trial can be "
                f"reproduced and resumed; got {bad[0]!r}. Use e.g. {{{seed_key!r}: range(10)}}."
            )
    elif derive_seeds:
        if seed_key is None:
            raise ProblemError(
                "derive_seeds=True derives each trial's seed from the grid's seed parameter, "
                "named by seed_key; got seed_key=None. Pass seed_key='seed' (the default) or "
                "the name of your seed parameter."
            )
        raise ProblemError(
            f"derive_seeds=True needs a {seed_key!r} parameter in the grid (seed_key="
            f"{seed_key!r}); the grid has {names}."
        )
    if derive_seeds and _SEED_COLUMN in names:
        raise ProblemError(
            f"With derive_seeds=True the table records each trial's derived seed in the column "
            f"{_SEED_COLUMN!r}; rename the grid parameter {_SEED_COLUMN!r}."
        )
    if scheduler is None and n_workers > 0:
        _check_picklable(trial_fn)

    ids = [trial_id(t) for t in trials]
    # the table's parameter columns: the grid's, then the seed trial_fn gets when derived
    columns_of = [{**t, _SEED_COLUMN: trial_seed(t)} for t in trials] if derive_seeds else trials
    params_of = dict(zip(ids, columns_of, strict=True))
    table = None if out is None else Path(out)
    settings = {} if table is None else _settings(trial_fn, seed_key, derive_seeds, names)
    types: dict[str, set[str]] | None = None  # of the parameters' values in the table
    store = ResultStore(table, list(columns_of[0]), [_SEED_COLUMN] if derive_seeds else [])
    try:
        store.open(resume=resume)
    except ProblemError:
        if table is not None and resume and derive_seeds:
            _refuse_table_without_seeds(table, settings)
        raise
    try:
        if table is not None:  # under the table's lock
            resumed = resume and bool(store.rows)
            if resumed:
                _check_settings(table, settings)
            # the types of the rows in the table, widened below only as rows are written: a
            # sweep refused or stopped before its first row leaves them as they were
            types = _kept_types(table, names, resumed)
            _record_settings(table, settings, types)
        store.check_ids(columns_of, ids)
        done = store.done_ids(retry_errors=retry_errors)
        tasks = []
        for tid, t in zip(ids, columns_of, strict=True):
            if tid in done:
                continue
            kwargs = {k: t[k] for k in names}
            if derive_seeds and seed_key is not None:
                kwargs[seed_key] = t[_SEED_COLUMN]
            tasks.append((tid, kwargs))
        n_resumed = len(trials) - len(tasks)
        n_run = 0
        if tasks:
            from tqdm.auto import tqdm

            bar = tqdm(
                total=len(trials),
                initial=n_resumed,
                desc=desc,
                unit="trial",
                disable=not progress,
                file=sys.stderr,
                dynamic_ncols=True,
            )
            recorder = _Recorder(store, params_of, [tid for tid, _ in tasks])
            if scheduler is not None:
                runs = _run_dask(trial_fn, tasks, scheduler, threads)
            elif timeout is not None:
                runs = _run_local_timeout(trial_fn, tasks, n_workers, threads, timeout)
            else:
                runs = _run_local(trial_fn, tasks, n_workers, threads)
            try:
                for tid, result, timed_out in runs:
                    if (
                        table is not None
                        and types is not None
                        and _widen_types(types, params_of[tid])
                    ):
                        # before the rows: the record may hold more types than the table
                        # (read_results then falls back to the CSV rule), never fewer
                        _record_settings(table, settings, types)
                    n_err = recorder.n_errors
                    recorder.record(tid, result, timed_out)
                    n_run += 1
                    if recorder.n_errors != n_err:
                        bar.set_postfix(errors=recorder.n_errors, refresh=False)
                    bar.update(1)
            finally:
                runs.close()  # stops the workers or cancels the cluster's futures now
                bar.close()
    finally:
        store.close()

    columns = store.header
    order = {tid: k for k, tid in enumerate(ids)}
    mine = [r for r in store.rows if r["trial_id"] in order]
    mine.sort(key=lambda r: (order[r["trial_id"]], r["part"]))
    # results read as the table gives them; parameters as the grid gave them (a cell cannot
    # tell the string "007" from the int 7, but the trial id, a hash of the typed values, can)
    rows = [
        {h: parse_cell(format_cell(r.get(h))) for h in columns} | params_of[r["trial_id"]]
        for r in mine
    ]
    return SweepResult(
        rows=rows,
        columns=columns,
        path=table,
        n_trials=len(trials),
        n_run=n_run,
        n_resumed=n_resumed,
        n_errors=sum(1 for r in rows if r["status"] != "ok" and r["part"] == 0),
        elapsed=time.perf_counter() - start,
    )
