# SPDX-License-Identifier: BSD-3-Clause
r"""The registry of experiments and :func:`reproduce`, which runs one of them.

An experiment is one module of :mod:`svmgeo.experiments` (``paths2d.py``, ``rank.py``, ...)
that defines its trial, grid, summary and figure and calls :func:`register` with an
:class:`Experiment`; the package imports those modules in the paper's order. Adding an
experiment is adding such a module and its import line in ``svmgeo/experiments/__init__.py``.
"""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import ProblemError
from .._summary import html_summary
from .._validation import check_bool, check_option
from ._rows import Rows, ok_rows
from ._store import data_frame, parse_cell
from ._sweep import SweepError, SweepResult, check_scheduler, check_timeout, sweep

__all__ = [
    "EXPERIMENTS",
    "Experiment",
    "ReproduceResult",
    "list_experiments",
    "register",
    "reproduce",
]


@dataclass(frozen=True)
class Experiment:
    """One paper experiment: its trials, grid, summary and figure.

    ``trial(**params)`` runs one seeded trial (a module-level function, so that worker
    processes can import it) and returns a dict of scalars or a list of them (one per recorded
    step); ``grid(quick)`` gives the sweep grid; ``summarize(rows)`` takes the finished trial
    rows and returns ``(headline, summary_rows)``; ``plot(rows, summary_rows, path)`` draws
    the figure into ``path`` and returns the paths written.
    """

    name: str
    title: str
    trial: Callable[..., Any]
    grid: Callable[[bool], Any]
    summarize: Callable[[Rows], tuple[dict[str, Any], Rows]]
    plot: Callable[[Rows, Rows, Path], list[Path]]

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


#: The summary table's last column: the trials of the sweep that raised or timed out, which no
#: row of the summary counts (the trial table holds their errors).
FAILED_TRIALS = "failed_trials"

#: The registered experiments by name, in registration (the paper's) order.
EXPERIMENTS: dict[str, Experiment] = {}


def register(experiment: Experiment) -> Experiment:
    """Add ``experiment`` to :data:`EXPERIMENTS` (a name may be registered once) and return it."""
    if experiment.name in EXPERIMENTS:
        raise ProblemError(
            f"An experiment named {experiment.name!r} is registered already; choose another name."
        )
    EXPERIMENTS[experiment.name] = experiment
    return experiment


@dataclass(frozen=True, eq=False)
class ReproduceResult:
    """What :func:`reproduce` wrote and measured.

    Attributes
    ----------
    name : str
    quick : bool
    tables : tuple of Path
        The trial table (one row per trial or recorded step; the sweep's resumable CSV) and the
        summary table (the numbers behind the figure, from the trials that finished; its last
        column, ``failed_trials``, is :attr:`n_errors` on every row).
    figures : tuple of Path
    headline : dict
        The headline numbers (printed by ``str(result)``).
    n_errors : int
        Trials that raised or ran past the timeout (their rows have ``status="error"`` or
        ``"timeout"``).
    sweep : SweepResult
    """

    name: str
    quick: bool
    tables: tuple[Path, ...]
    figures: tuple[Path, ...]
    headline: dict[str, Any]
    n_errors: int
    sweep: SweepResult = field(repr=False)

    def __str__(self) -> str:
        lines = [f"{self.name} ({'quick' if self.quick else 'full'}): {self.sweep.n_trials} trials"]
        for key, value in self.headline.items():
            text = f"{value:.4g}" if isinstance(value, float) else str(value)
            lines.append(f"  {key}: {text}")
        lines += [f"  table: {p}" for p in self.tables]
        lines += [f"  figure: {p}" for p in self.figures]
        if self.n_errors:
            lines.append(f"  ERRORS: {self.n_errors} trial(s) failed; see the 'error' column")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Jupyter's rich display: the fields as a table, then ``str(self)``."""
        return html_summary(self)

    def summary(self) -> str:
        """The headline, tables and figures (``str(self)``)."""
        return str(self)

    def to_pandas(self, table: str = "trials") -> Any:
        """The trial table (one row per trial or recorded step, as
        :meth:`SweepResult.to_pandas`) or the summary table, as a :class:`pandas.DataFrame`.

        Parameters
        ----------
        table : {"trials", "summary"}, default "trials"
            ``"trials"``: the sweep's rows (:attr:`sweep`); ``"summary"``: the numbers behind the
            figure, read back from ``tables[1]`` (cells converted as by
            :func:`~svmgeo.read_results`), with the column ``failed_trials``.

        Raises
        ------
        BackendError
            pandas is not installed.
        """
        table = check_option(table, "table", ("trials", "summary"), where="to_pandas")
        if table == "trials":
            return self.sweep.to_pandas()
        with self.tables[1].open(newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, [])
            rows = [dict(zip(header, map(parse_cell, cells), strict=True)) for cells in reader]
        return data_frame(
            rows,
            header,
            where="to_pandas",
            hint=f"The summary table is the CSV file {str(self.tables[1])!r}.",
        )


def list_experiments() -> list[str]:
    r"""Names of the experiments :func:`reproduce` runs, in the order of the paper's story.

    .. math::

        \{\texttt{paths2d}, \texttt{rank}, \texttt{local}, \texttt{global},
        \texttt{gensvm}, \texttt{concave}\}

    then the later papers' (``mirror``, ``ntp``) and the companion paper's
    (``companion_single``, ``companion_multi``, ``companion_joint``, ``companion_losses``),
    then ``optimizers`` (issue #23), ``stability`` and ``variants`` (issue #22).

    Returns
    -------
    list of str
        One name per experiment (``svmgeo reproduce --list`` prints them one per line).
    """
    return list(EXPERIMENTS)


def _write_csv(path: Path, rows: Rows) -> None:
    columns: list[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in columns})


def _writable_dir(out: str | os.PathLike[str]) -> Path:
    """``out`` as a directory that exists and takes new files (created if missing).

    Checked before any trial runs, so that no computation is lost to a bad output path.
    """
    if not isinstance(out, (str, os.PathLike)):
        raise ProblemError(
            f"reproduce: 'out' must be a directory path (str or pathlib.Path); got {out!r} of "
            f"type {type(out).__name__}. E.g. out='svmgeo-results'."
        )
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise ProblemError(
            f"reproduce: 'out' must be a directory; {str(out_dir)!r} is a file. Pass a "
            "directory path (it is created if missing)."
        )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        # a real write: permission bits alone say nothing for root or a read-only mount
        with tempfile.TemporaryFile(dir=out_dir):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ProblemError(
            f"reproduce: cannot write to 'out' directory {str(out_dir)!r} ({reason}). Pass a "
            "directory you may create and write in."
        ) from None
    return out_dir


def _no_summary(result: SweepResult, timeout: float | None) -> str:
    """Why a sweep gave nothing to summarize: its trials counted by status (each trial's
    ``part`` 0 row), the table that holds their rows, and more time where trials timed out."""
    trials = [r["status"] for r in result.rows if r["part"] == 0]
    counts = [
        f"{trials.count(status)} {said}"
        for status, said in (("timeout", "timed out"), ("error", "raised"), ("ok", "finished"))
        if status in trials
    ]
    head = "no trial finished" if "ok" not in trials else "nothing to summarize"
    more = (
        f"; give each trial more time than timeout={timeout:g} s"
        if "timeout" in trials and timeout is not None
        else ""
    )
    held = "their errors are" if set(trials) - {"ok"} else "the rows are"
    return f"{head} ({', '.join(counts)}); {held} in {result.path}{more}"


def reproduce(
    name: str,
    *,
    quick: bool = False,
    out: str | Path = "svmgeo-results",
    scheduler: Any = None,
    workers: int | None = None,
    progress: bool = True,
    resume: bool = True,
    timeout: float | None = None,
) -> ReproduceResult:
    r"""Run one of the paper's experiments: trials, tables, figure and headline numbers.

    .. math::

        \text{grid}(\text{quick}) \xrightarrow{\ \text{sweep}\ } \text{trial table}
        \xrightarrow{\ \text{summarize}\ } (\text{headline}, \text{summary table})
        \xrightarrow{\ \text{plot}\ } \text{figure}

    Parameters
    ----------
    name : str
        One of :func:`list_experiments`.
    quick : bool, default False
        Reduced grid (seconds, for CI); the default is the full size (minutes).
    out : str or Path, default "svmgeo-results"
        Directory for ``NAME.csv`` (or ``NAME-quick.csv``; the trial table, resumable),
        ``NAME_summary.csv`` and ``NAME.png``; created if missing.
    scheduler : str or distributed.Client, optional
        Dask scheduler address (or client) to run the trials on; default local processes.
    workers : int, optional
        Local worker processes (``0``: in this process); default one per core.
    progress, resume : bool
        Passed to :func:`~svmgeo.experiments.sweep`.
    timeout : float, optional
        Seconds one trial may run, passed to :func:`~svmgeo.experiments.sweep`: a trial still
        running then has its worker process killed and becomes a row with
        ``status="timeout"``, counted in ``n_errors`` and left out of the summary. Local
        worker processes only: refused with ``workers=0`` and with ``scheduler``, as by
        :func:`~svmgeo.experiments.sweep`. Default None: no limit.

    Returns
    -------
    ReproduceResult

    Raises
    ------
    ProblemError
        Unknown ``name``; ``quick`` not a bool; ``out`` not a path, a file, under a file or
        not writable; a malformed ``scheduler`` address; ``timeout`` not a number in
        (0, inf), or given with ``workers=0`` or ``scheduler``. All checked before any trial
        runs.
    SweepError
        No trial finished (each one raised or ran past ``timeout``; the message counts each,
        the sweep's CSV holds their errors), or a worker died. No summary is written.
    """
    name = check_option(name, "name", EXPERIMENTS, where="reproduce")
    quick = check_bool(quick, "quick", where="reproduce")
    exp = EXPERIMENTS[name]
    check_scheduler(scheduler)
    timeout = check_timeout(timeout, workers, scheduler, where="reproduce")
    out_dir = _writable_dir(out)
    stem = f"{name}-quick" if quick else name
    result = sweep(
        exp.trial,
        exp.grid(quick),
        out=out_dir / f"{stem}.csv",
        scheduler=scheduler,
        workers=workers,
        progress=progress,
        resume=resume,
        timeout=timeout,
        desc=name,
    )
    rows = ok_rows(result.rows)
    headline, summary = exp.summarize(rows)
    if not summary:  # the trials ran and failed: no answer (not bad input), nothing summarized
        raise SweepError(f"experiment {name!r}: {_no_summary(result, timeout)}")
    summary_path = out_dir / f"{stem}_summary.csv"
    # the table alone says whether it leaves trials out (their rows are in the trial table)
    _write_csv(summary_path, [{**row, FAILED_TRIALS: result.n_errors} for row in summary])
    figures = exp.plot(rows, summary, out_dir / f"{stem}.png")
    assert result.path is not None
    return ReproduceResult(
        name=name,
        quick=quick,
        tables=(result.path, summary_path),
        figures=tuple(figures),
        headline=headline,
        n_errors=result.n_errors,
        sweep=result,
    )
