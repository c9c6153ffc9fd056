# SPDX-License-Identifier: BSD-3-Clause
"""The results table of a sweep: a tidy CSV file appended one finished trial at a time.

Layout: one header line, then one physical line per row (every cell is a scalar and no cell
holds a line break, so a process killed mid-write leaves at most one incomplete last line,
which :class:`ResultStore` drops when it reopens the file). Columns, in order:

``trial_id``, the parameters (grid order; then ``trial_seed``, the seed passed to the trial,
when ``sweep(..., derive_seeds=True)`` derives it), the results (fixed by the first successful
trial in grid order), ``part``, ``n_parts``, ``status`` (``"ok"``, ``"error"`` or
``"timeout"``), ``elapsed``, ``error``.

Cells are written with :func:`repr` for floats (exact round trip), ``True``/``False`` for
booleans and an empty cell for ``None``; :func:`read_results` converts them back by the rule
in :func:`parse_cell`, except the cells of a string parameter that no other type of that
parameter's grid values writes alike (the sidecar ``<out>.sweep.json``, :func:`sidecar`, records
those types: :func:`typed_cell`).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

from .._errors import BackendError, ProblemError

__all__ = [
    "META_AFTER",
    "PARAM_TYPES",
    "ResultStore",
    "data_frame",
    "format_cell",
    "param_types",
    "parse_cell",
    "read_results",
    "sidecar",
    "typed_cell",
]

META_AFTER = ("part", "n_parts", "status", "elapsed", "error")
"""Columns that follow the results in every table (``trial_id`` comes first)."""

_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z|[+-]?(?:nan|inf)\Z")


def format_cell(value: Any) -> str:
    """Text of one cell: ``repr`` for floats, ``True``/``False``, empty for ``None``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def parse_cell(text: str) -> Any:
    """Value of one cell, the inverse of :func:`format_cell`.

    An empty cell is ``None``; an integer literal is an ``int``; a decimal or scientific
    literal (or ``nan``, ``inf``, ``-inf``) is a ``float``; ``True``/``False`` are booleans;
    anything else stays a ``str``. A string parameter that looks like a number (``"10"``)
    therefore reads back as a number. The columns ``trial_id``, ``status`` and ``error``
    are always text.
    """
    if text == "":
        return None
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if text == "True":
        return True
    if text == "False":
        return False
    return text


def typed_cell(text: str, kinds: Collection[str]) -> Any:
    """Value of one cell of a parameter whose grid values had the types named ``kinds``
    (``type(v).__name__``: ``"str"``, ``"int"``, ``"float"``, ``"bool"``, ``"NoneType"``).

    A value of any of these types but ``str`` round-trips exactly through
    :func:`format_cell` and :func:`parse_cell`, so such a type writes the text ``c`` exactly
    when ``parse_cell(c)`` is of that type and ``format_cell(parse_cell(c)) == c``. The cell
    is that value when ``str`` is not among ``kinds`` or such a type is (the text cannot tell
    the string ``"7"`` from the int 7: :func:`parse_cell`'s rule), and the text itself
    otherwise (``"007"`` of a grid of strings, or of strings and ints, is the string).
    """
    value = parse_cell(text)
    if "str" in kinds and not (type(value).__name__ in kinds and format_cell(value) == text):
        return text
    return value


_TEXT_COLUMNS = ("trial_id", "status", "error")


def _row(
    header: list[str], cells: list[str], types: Mapping[str, Collection[str]] | None = None
) -> dict[str, Any]:
    """One row as a dict; the bookkeeping text columns are never read as numbers, the
    parameters in ``types`` by :func:`typed_cell`."""
    types = types or {}
    row = {
        h: parse_cell(c) if h not in types else typed_cell(c, types[h])
        for h, c in zip(header, cells, strict=True)
    }
    for h in _TEXT_COLUMNS:
        row[h] = cells[header.index(h)] or None
    return row


def _line(cells: Sequence[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(cells)
    return buf.getvalue()


def _read_raw(path: Path) -> tuple[list[str] | None, list[list[str]], bool]:
    """Header, rows (cells as text) and whether an incomplete last line was found."""
    data = path.read_bytes()
    truncated = bool(data) and not data.endswith(b"\n")
    if truncated:
        torn_header = data.startswith(b"trial_id") or b"trial_id".startswith(data)
        if b"\n" not in data and not torn_header:  # not a header torn anywhere either
            raise ProblemError(
                f"{path} is not a svmgeo sweep table: its only line, {data[:40]!r}, is not "
                "a header starting with 'trial_id'. Pass the 'out' path of a sweep."
            )
        data = data[: data.rfind(b"\n") + 1]
    try:
        lines = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ProblemError(
            f"{path} is not a svmgeo sweep table (a CSV text file): {exc}. Pass the 'out' path "
            "of a sweep."
        ) from None
    if not lines:
        return None, [], truncated
    header = lines[0]
    if not header or header[0] != "trial_id" or tuple(header[-len(META_AFTER) :]) != META_AFTER:
        raise ProblemError(
            f"{path} is not a svmgeo sweep table: its header is {header[:8]!r}... but should start "
            f"with 'trial_id' and end with {', '.join(META_AFTER)}. Pass another 'out' path."
        )
    rows = lines[1:]
    for k, row in enumerate(rows):
        if len(row) != len(header):
            raise ProblemError(
                f"{path} line {k + 2} has {len(row)} cells but the header has {len(header)}; the "
                "file was edited or written by something else. Repair it or pass another 'out'."
            )
    return header, rows, truncated


PARAM_TYPES = "param_types"
"""The sidecar's key for the type names of each parameter's values (:func:`param_types`)."""


def sidecar(path: Path) -> Path:
    """The settings file ``<table>.sweep.json`` that :func:`~svmgeo.sweep` writes beside its
    table ``path``."""
    return path.with_name(path.name + ".sweep.json")


def param_types(path: Path) -> dict[str, list[str]] | None:
    """The type names (``type(v).__name__``) of each parameter's values over the sweeps that
    wrote the table ``path``, as its sidecar records them; None where it records none (no
    sidecar, one written before this version recorded them, or one that does not read as
    such a mapping)."""
    try:
        stored = json.loads(sidecar(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    types = stored.get(PARAM_TYPES) if isinstance(stored, dict) else None
    if not isinstance(types, dict) or not all(
        isinstance(v, list) and all(isinstance(k, str) for k in v) for v in types.values()
    ):
        return None
    return types


def data_frame(rows: list[dict[str, Any]], columns: Sequence[str], *, where: str, hint: str) -> Any:
    """``rows`` as a :class:`pandas.DataFrame` with ``columns`` in order (pandas is optional).

    Raises :class:`~svmgeo.BackendError` naming pandas when it is not installed.
    """
    try:
        import pandas as pd
    except ImportError as exc:
        raise BackendError(
            f"{where} needs pandas, which is not installed: pip install pandas. {hint}"
        ) from exc
    return pd.DataFrame(rows, columns=list(columns))


@overload
def read_results(
    path: str | os.PathLike[str], *, as_frame: Literal[False] = False
) -> list[dict[str, Any]]: ...


@overload
def read_results(path: str | os.PathLike[str], *, as_frame: Literal[True]) -> Any: ...


def read_results(path: str | os.PathLike[str], *, as_frame: bool = False) -> Any:
    """Load a sweep table written by :func:`~svmgeo.sweep`, one dict per row in file order.

    Cells are converted back to ``None``/``int``/``float``/``bool``/``str`` (see
    :func:`parse_cell`). The parameters are read with the types of the grid's values where
    the sidecar ``<path>.sweep.json`` records them (sweeps written by this version on): a
    string parameter reads back as the string written (``"007"``, not 7) unless another type
    among that parameter's values in the table writes the same text (the grid ``[7, "7"]``:
    the cell ``7`` is read by :func:`parse_cell`'s rule, as it is in every cell of a table
    without such a sidecar). Results are read by :func:`parse_cell`'s rule (their types are not recorded).
    An incomplete last line (a killed writer) is ignored; the file is not modified.

    Parameters
    ----------
    path : str or PathLike
        The CSV file.
    as_frame : bool, default False
        Return a :class:`pandas.DataFrame` (the same rows and columns, in file order; pandas
        is an optional dependency) instead of a list of dicts.

    Returns
    -------
    list of dict, or pandas.DataFrame with ``as_frame=True``
        Column name → value, columns in file order.

    Raises
    ------
    ProblemError
        The file does not exist or is not a sweep table.
    BackendError
        ``as_frame=True`` without pandas installed.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ProblemError(
            f"The 'path' parameter of read_results must be a file path (str or os.PathLike); "
            f"got {type(path).__name__}. Pass the 'out' path of a sweep."
        )
    p = Path(path)
    if not isinstance(as_frame, bool):
        raise ProblemError(
            f"read_results: as_frame must be True or False; got {type(as_frame).__name__}."
        )
    if not p.is_file():
        raise ProblemError(f"No sweep table at {str(p)!r}. Check the path (the 'out' of sweep).")
    header, rows, _ = _read_raw(p)
    types = param_types(p)
    records = [] if header is None else [_row(header, row, types) for row in rows]
    if as_frame:
        return data_frame(
            records,
            header or [],
            where="read_results(as_frame=True)",
            hint="Without it, read_results(path) returns the rows as a list of dicts.",
        )
    return records


def _same_file(fh: io.TextIOWrapper, path: Path) -> bool:
    """Whether the open ``fh`` is the file at ``path`` now (device and inode)."""
    try:
        now = os.stat(path)
    except OSError:
        return False
    held = os.fstat(fh.fileno())
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def _temporary(path: Path) -> Path:
    """The temporary file a table is rewritten into before it is moved over the table."""
    return path.with_name(path.name + ".tmp")


class ResultStore:
    """Append-only CSV writer for one sweep (``path=None`` keeps rows in memory only).

    Every :meth:`append` writes whole lines, flushes and ``fsync``\\ s before returning. The
    result columns are fixed by the first successful row appended, or set anew by
    :meth:`replace` (:func:`~svmgeo.sweep` makes them the keys of the first successful trial
    in grid order); while only error rows exist the file is rewritten (atomically, via a
    temporary file ``<table>.tmp`` and :func:`os.replace`; one that a stopped rewrite left is
    removed when the table is opened) once a successful row arrives. ``params`` are the
    columns before the results: the grid's parameters, then the ``derived`` ones among them
    (``trial_seed``, computed from the parameters), which messages name apart.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        params: Sequence[str],
        derived: Sequence[str] = (),
    ) -> None:
        self.path = None if path is None else Path(path)
        self.params = list(params)
        self.derived = list(derived)
        self.results: list[str] | None = None
        self.rows: list[dict[str, Any]] = []
        self._fh: io.TextIOWrapper | None = None

    # -- columns -------------------------------------------------------------------------
    @property
    def header(self) -> list[str]:
        return ["trial_id", *self.params, *(self.results or []), *META_AFTER]

    def _grid_params(self) -> str:
        """This sweep's parameter columns in words: the grid's, then the derived ones."""
        grid = [p for p in self.params if p not in self.derived]
        text = f"parameters {grid!r}"
        for name in self.derived:
            text += (
                f", then the column {name!r} (each trial's seed, derived from its parameters "
                "with derive_seeds=True)"
            )
        return text

    def _split_header(self, header: list[str]) -> None:
        n_meta = len(META_AFTER)
        stored = header[1 : len(header) - n_meta]
        if stored[: len(self.params)] != self.params:
            raise ProblemError(
                f"{self.path} holds a sweep whose columns after trial_id start "
                f"{stored[: len(self.params)]!r}, but this sweep has {self._grid_params()}. "
                "Pass another 'out', or resume=False to replace the file."
            )
        res = stored[len(self.params) :]
        self.results = res or None

    # -- opening -------------------------------------------------------------------------
    def open(self, *, resume: bool) -> None:
        """Open the file; with ``resume`` load its rows and drop an incomplete last line."""
        if self.path is None:
            return
        if self.path.exists() and not self.path.is_file():
            raise ProblemError(f"'out' must be a file path; {str(self.path)!r} is a directory.")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8", newline="")
        except OSError as exc:
            raise ProblemError(
                f"Cannot write the sweep table {str(self.path)!r} "
                f"({exc.strerror or type(exc).__name__}). Pass an 'out' path in a directory "
                "you may create and write in."
            ) from None
        self._take_lock()  # before reading, so that two sweeps never share a table
        try:
            # a rewrite interrupted before its os.replace left this; only the lock's holder
            # writes it, and the table itself is whole
            stale = _temporary(self.path)
            if stale.is_file():
                stale.unlink(missing_ok=True)
            header, raw, truncated = _read_raw(self.path) if resume else (None, [], False)
            if header is None or not raw:  # nothing, or a header alone: start afresh
                self._fh.truncate(0)
                return
            self._split_header(header)
            types = param_types(self.path)  # the rows' parameters as read_results reads them
            self.rows = [_row(header, row, types) for row in raw]
            if truncated:
                self._rewrite()
        except BaseException:
            self.close()
            raise

    def _take_lock(self) -> None:
        if sys.platform == "win32" or self._fh is None:  # pragma: no cover
            return
        import fcntl

        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self._fh.close()
            self._fh = None
            raise ProblemError(
                f"{self.path} is being written by another sweep (file lock held). Wait for it "
                "to finish or pass another 'out'."
            ) from exc
        if self.path is not None and not _same_file(self._fh, self.path):
            # another sweep's rewrite moved a new file over the one opened here (or the table
            # was removed): its lock would guard a file that is no longer the table
            self.close()
            raise ProblemError(
                f"{self.path} was replaced or removed while this sweep opened it (another "
                "sweep rewrote it?). Run again, or pass another 'out'."
            )

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()  # closing releases the flock
            self._fh = None

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- state ---------------------------------------------------------------------------
    def check_ids(self, trials: Sequence[dict[str, Any]], ids: Sequence[str]) -> None:
        """Refuse a table whose rows have this grid's parameter values under other ids.

        That happens when the table was written by a sweep over more parameters whose names
        start like this grid's (the header alone cannot tell parameters from results).
        """
        grid_ids = set(ids)
        key_of: dict[tuple[str, ...], str] = {}  # a trial's cells as written (1 and "1" alike)
        for t, tid in zip(trials, ids, strict=True):
            key_of.setdefault(tuple(format_cell(t[p]) for p in self.params), tid)
        for row in self.rows:
            if row["trial_id"] in grid_ids:  # one of this grid's trials
                continue
            known = key_of.get(tuple(format_cell(row[p]) for p in self.params))
            if known is not None:
                raise ProblemError(
                    f"{self.path} has a row with parameters "
                    f"{ {p: row[p] for p in self.params if p not in self.derived} } under "
                    f"trial id {row['trial_id']}, "
                    f"but this grid gives that trial the id {known}: the table was written by a "
                    "sweep over other parameters (its columns are "
                    f"{self.header}). Pass another 'out', or resume=False to replace the file."
                )

    def done_ids(self, *, retry_errors: bool) -> set[str]:
        """Trial ids whose rows are all present (and, with ``retry_errors``, not errors).

        Rows of incomplete or retried trials are removed from the file.
        """
        parts: dict[str, list[dict[str, Any]]] = {}
        for row in self.rows:
            parts.setdefault(row["trial_id"], []).append(row)
        done = set()
        for tid, rows in parts.items():
            complete = sorted(r["part"] for r in rows) == list(range(rows[0]["n_parts"]))
            failed = any(r["status"] != "ok" for r in rows)
            if complete and not (retry_errors and failed):
                done.add(tid)
        if len(done) != len(parts):
            self.rows = [r for r in self.rows if r["trial_id"] in done]
            self._rewrite()
        return done

    # -- writing -------------------------------------------------------------------------
    def clash(self, keys: Iterable[str]) -> str | None:
        """``None`` when no key of ``keys`` is a parameter or bookkeeping column, else the
        reason (such keys can be no table's result columns)."""
        clash = sorted(set(keys) & ({"trial_id", *self.params, *META_AFTER}))
        if clash:
            return (
                f"trial_fn returned keys {clash} that clash with parameter or bookkeeping "
                "column names; rename them"
            )
        return None

    def check_results(self, keys: Iterable[str]) -> str | None:
        """``None`` when ``keys`` fit the table's result columns, else the reason they do not."""
        keys = list(keys)
        clash = self.clash(keys)
        if clash is not None or self.results is None:
            return clash
        extra = [k for k in keys if k not in self.results]
        missing = [k for k in self.results if k not in keys]
        if not extra and not missing:
            return None
        text = []
        if extra:
            text.append(f"extra keys {extra}")
        if missing:
            text.append(f"missing keys {missing}")
        return (
            f"trial_fn returned {' and '.join(text)}; every trial must return the keys of the "
            f"first successful trial in grid order, {self.results}"
        )

    def append(self, rows: list[dict[str, Any]]) -> None:
        """Append the rows of one finished trial (all at once) and make them durable."""
        new_columns = self.results is None and any(r["status"] == "ok" for r in rows)
        if new_columns:
            ok = next(r for r in rows if r["status"] == "ok")
            fixed = {"trial_id", *self.params, *META_AFTER}
            self.results = [k for k in ok if k not in fixed]
        had_rows = bool(self.rows)
        self.rows.extend(rows)
        if new_columns and had_rows:
            self._rewrite()  # the error rows written so far lack the result columns
        else:
            self._write_lines([] if had_rows else [self.header], rows)

    def replace(self, results: list[str], rows: list[dict[str, Any]]) -> None:
        """Take ``results`` as the result columns and ``rows`` in place of the rows of their
        trials, and rewrite the table (atomically)."""
        tids = {r["trial_id"] for r in rows}
        self.results = list(results)
        self.rows = [r for r in self.rows if r["trial_id"] not in tids] + rows
        self._rewrite()

    def _cells(self, row: dict[str, Any]) -> list[str]:
        return [format_cell(row.get(h)) for h in self.header]

    def _write_lines(self, headers: list[list[str]], rows: list[dict[str, Any]]) -> None:
        if self._fh is None:
            return
        text = "".join(_line(h) for h in headers) + "".join(_line(self._cells(r)) for r in rows)
        self._fh.write(text)
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def _rewrite(self) -> None:
        """Write header and all rows to a temporary file and move it over the table."""
        if self.path is None:
            return
        tmp = _temporary(self.path)
        fh = open(tmp, "w", encoding="utf-8", newline="")
        try:
            if self._fh is not None and sys.platform != "win32":
                import fcntl

                # the new file is locked before it becomes the table: no moment in which
                # another sweep could open and lock the table (reopening after os.replace
                # left one); only the holder of the table's lock writes <table>.tmp
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            if self.rows:
                fh.write(_line(self.header))
                fh.write("".join(_line(self._cells(r)) for r in self.rows))
            fh.flush()
            os.fsync(fh.fileno())
            if sys.platform == "win32":  # pragma: no cover - Windows renames no open file
                fh.close()
            os.replace(tmp, self.path)
        except BaseException:
            fh.close()
            raise
        if self._fh is None:
            fh.close()
        elif sys.platform == "win32":  # pragma: no cover - reopen, as before (no lock there)
            self._fh.close()
            self._fh = open(self.path, "a", encoding="utf-8", newline="")
        else:  # the old handle points at the replaced file: later rows go to the new one
            self._fh.close()
            self._fh = fh
