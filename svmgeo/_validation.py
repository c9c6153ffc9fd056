# SPDX-License-Identifier: BSD-3-Clause
"""Validators used at the public boundary.

Each returns a cleaned value and raises :class:`~svmgeo.ProblemError` with the
argument's name, what was expected, what came, and how to fix it.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable
from typing import Any, Literal

import numpy as np

from ._errors import ProblemError

__all__ = [
    "MAX_ITERATIONS",
    "MAX_SCALE",
    "available_bytes",
    "check_array",
    "check_bool",
    "check_float_array",
    "check_int",
    "check_iterations",
    "check_option",
    "check_real",
    "check_scale",
    "check_seed",
    "check_width",
    "max_row_norm",
]

# Largest scale s of an array svmgeo squares: the row norm max ||a|| of one array (head features,
# embeddings), or the product max ||x|| max ||z|| of two read as x^T W z (tokens and queries).
# The solvers' Gram entries are squares of such scales (up to 4e302 for token differences), and
# sums of up to ~1e5 of them stay below float64's 1.8e308.
MAX_SCALE = 1e151

MAX_ITERATIONS = 2**31 - 1
"""Largest iteration limit (``max_iter``, ``max_rounds``) the solvers take: scipy's SLSQP
counts in a 32-bit int (a limit of 2**32 + 5 ran 5 iterations, 2**31 none, 2**63 raised a bare
``SystemError``) and Clarabel's ``max_iter`` is unsigned 32-bit."""


def _shape_text(shape: Iterable[Any]) -> str:
    items = [str(s) for s in shape]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def check_array(
    value: Any,
    name: str,
    *,
    ndim: int | tuple[int, ...],
    shape: tuple[int | None, ...] | None = None,
    dtype: type = np.float64,
    finite: bool = True,
    hint: str = "",
) -> np.ndarray:
    """Convert ``value`` to a C-contiguous array and check its rank, shape and finiteness.

    ``shape`` entries that are ``None`` are free. ``ndim`` may be a tuple of allowed ranks;
    when ``shape`` is given it applies to arrays of rank ``len(shape)`` only.
    """
    if value is None:
        raise ProblemError(f"{name} is required but got None. {hint}".strip())
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - numpy accepts nearly anything
        raise ProblemError(f"{name} could not be converted to an array: {exc}") from exc
    if arr.dtype == object:
        flat = arr.ravel()
        if flat.size and all(isinstance(x, int) for x in flat):  # Python ints numpy cannot hold
            big = max(flat, key=abs)
            raise ProblemError(
                f"{name} must be a numeric array; got the integer {big} (beyond 64 bits, so "
                f"numpy made an object array). {hint}".strip()
            )
        raise ProblemError(
            f"{name} must be a numeric array; got an object array (ragged nested lists?). {hint}"
        )
    if np.iscomplexobj(arr):
        raise ProblemError(
            f"{name} must be real; got complex dtype {arr.dtype}. Pass np.real({name}) if the "
            "imaginary part is meant to be zero."
        )
    numeric = np.issubdtype(arr.dtype, np.number) and arr.dtype.kind != "m"  # not timedelta64
    if dtype is np.float64:
        if not (numeric or arr.dtype == bool):
            raise ProblemError(f"{name} must be numeric; got dtype {arr.dtype}. {hint}".strip())
        converted = np.asarray(arr, dtype=np.float64, order="C")
        _check_exact_cast(arr, converted, name)
        arr = converted
    elif dtype is bool:
        if arr.dtype != bool:
            if not numeric or not np.all((arr == 0) | (arr == 1)):
                raise ProblemError(
                    f"{name} must be a boolean array (or 0/1); got dtype {arr.dtype}. {hint}".strip()
                )
        arr = np.asarray(arr, dtype=bool, order="C")
    elif dtype is np.int64:
        if arr.dtype == bool or not numeric:
            raise ProblemError(
                f"{name} must be an integer array; got dtype {arr.dtype}. {hint}".strip()
            )
        if not np.issubdtype(arr.dtype, np.integer):
            if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
                raise ProblemError(f"{name} must hold integers; got non-integer values. {hint}")
        if (
            arr.size
            and arr.dtype != np.int64
            and not (np.all(arr >= -(2.0**63)) and np.all(arr < 2.0**63))
        ):  # the cast would wrap around (2**63 -> -2**63)
            big = arr.flat[int(np.argmax(np.abs(arr.astype(float))))]
            raise ProblemError(
                f"{name} must hold 64-bit integers; got {big.item()!r}. {hint}".strip()
            )
        arr = np.asarray(arr, dtype=np.int64, order="C")
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if arr.ndim not in ndims:
        expected = " or ".join(f"{k}-D" for k in ndims)
        raise ProblemError(
            f"{name} must be a {expected} array; got a {arr.ndim}-D array of shape "
            f"{_shape_text(arr.shape)} instead. {hint}".strip()
        )
    if shape is not None and arr.ndim == len(shape):
        for got, want in zip(arr.shape, shape, strict=True):
            if want is not None and got != want:
                want_text = _shape_text("?" if s is None else s for s in shape)
                raise ProblemError(
                    f"{name} must have shape {want_text}; got {_shape_text(arr.shape)}. {hint}".strip()
                )
    if finite and arr.dtype == np.float64 and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ProblemError(
            f"{name} must be finite; found {arr[tuple(bad)]} at index {tuple(int(b) for b in bad)}. "
            "Remove or impute non-finite entries."
        )
    return arr


def check_float_array(
    value: Any, name: str, *, ndim: int | tuple[int, ...], hint: str = ""
) -> np.ndarray:
    """:func:`check_array`'s checks (float64, finite, of rank ``ndim``) for a function that
    computed on ``np.asarray(value)`` before it checked: a float64 ndarray comes back as it
    is, in its own memory layout, so that its sums add in the same order as before (a
    Fortran-ordered copy made C-contiguous would change their last bits)."""
    arr = check_array(value, name, ndim=ndim, hint=hint)
    return value if isinstance(value, np.ndarray) and value.dtype == np.float64 else arr


def _check_exact_cast(arr: np.ndarray, converted: np.ndarray, name: str) -> None:
    """A ProblemError when the float64 ``converted`` is not ``arr`` exactly (integers beyond
    2^53, long doubles): svmgeo computes, and proves, on the float64 numbers, and a proof about
    rounded input would not be one about the user's."""
    if arr.dtype.kind in "iu" and arr.size:
        wide = np.flatnonzero(((arr > 2**53) | (arr < -(2**53))).ravel())
        bad = [int(v) for v in arr.ravel()[wide] if int(float(v)) != int(v)]
        value = bad[0] if bad else None
    elif arr.dtype.kind == "f" and arr.dtype.itemsize > 8:
        same = (converted.astype(arr.dtype) == arr) | np.isnan(arr)
        value = None if np.all(same) else arr.ravel()[np.argmin(same.ravel())]
    else:
        return
    if value is not None:
        raise ProblemError(
            f"{name} holds values that float64 cannot represent exactly (e.g. {value!r} "
            f"becomes {float(value)!r}): svmgeo computes, and proves its verdicts, in float64. "
            f"Round them yourself (np.asarray({name}, dtype=np.float64)) to accept the "
            "rounding, or rescale them."
        )


def check_real(
    value: Any,
    name: str,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
    where: str = "",
) -> float:
    """Check that ``value`` is a finite real number in the given interval.

    The message follows one template: "The 'step_size' parameter of train must be a float
    in (0, inf). Got -1 instead." (formatted only when the check fails).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ProblemError(_real_message(value, name, low, high, low_open, high_open, where))
    try:
        x = float(value)
    except OverflowError:  # an int beyond float64 (10**400)
        raise ProblemError(
            _real_message(value, name, low, high, low_open, high_open, where)
        ) from None
    if (
        (not math.isfinite(x) and not (x == high == math.inf or x == low == -math.inf))
        or (x < low)
        or (low_open and x == low)
        or (x > high)
        or (high_open and x == high)
    ):
        raise ProblemError(_real_message(value, name, low, high, low_open, high_open, where))
    return x


def _real_message(
    value: Any, name: str, low: float, high: float, low_open: bool, high_open: bool, where: str
) -> str:
    """:func:`check_real`'s message."""
    left = "(" if low_open else "["
    right = ")" if high_open else "]"
    interval = f"{left}{low:g}, {high:g}{right}"
    owner = f" of {where}" if where else ""
    return f"The {name!r} parameter{owner} must be a float in {interval}. Got {value!r} instead."


def check_int(
    value: Any,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
    where: str = "",
    above_high: str = "",
) -> int:
    """Check that ``value`` is an integer in ``[low, high]`` (bounds optional).

    ``above_high`` ends the message of an integer above ``high``: why the bound, and the fix.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ProblemError(_int_message(value, name, low, high, where))
    x = int(value)
    if low is not None and x < low:
        raise ProblemError(_int_message(value, name, low, high, where))
    if high is not None and x > high:
        reason = f" {above_high}" if above_high else ""
        raise ProblemError(_int_message(value, name, low, high, where) + reason)
    return x


def check_query(query: Any, T: int, where: str) -> int | Literal["all"]:
    """A self-attention query position of sequences of ``T`` tokens: ``"all"``, or an int in
    ``[-T, T - 1]`` read as Python indexes a sequence (``-1`` the last token), returned in
    ``0..T-1``; a ProblemError naming ``query`` and ``where`` otherwise."""
    if isinstance(query, str) and query == "all":
        return "all"
    try:
        q = check_int(query, "query", low=-T, high=T - 1, where=where)
    except ProblemError as exc:
        raise ProblemError(
            f"{exc} The sequences have {T} tokens: query is a token position, negative ones "
            "counting from the end (-1 the last token), or 'all' (every token a query)."
        ) from None
    return q % T


def check_iterations(value: Any, name: str, *, where: str) -> int:
    """Check that ``value`` is an iteration limit: an int in [1, :data:`MAX_ITERATIONS`]."""
    return check_int(
        value,
        name,
        low=1,
        high=MAX_ITERATIONS,
        where=where,
        above_high=(
            "The solvers count iterations in 32 bits (scipy's SLSQP, Clarabel); pass "
            f"{name}={MAX_ITERATIONS} or less."
        ),
    )


def _int_message(value: Any, name: str, low: int | None, high: int | None, where: str) -> str:
    """:func:`check_int`'s message."""
    owner = f" of {where}" if where else ""
    lo = "-inf" if low is None else str(low)
    hi = "inf" if high is None else str(high)
    return f"The {name!r} parameter{owner} must be an int in [{lo}, {hi}]. Got {value!r} instead."


def check_bool(value: Any, name: str, *, where: str = "") -> bool:
    """Check that ``value`` is True or False (numpy bools included; not 0/1 or strings)."""
    if not isinstance(value, (bool, np.bool_)):
        owner = f" of {where}" if where else ""
        raise ProblemError(
            f"The {name!r} parameter{owner} must be True or False. Got {value!r} instead."
        )
    return bool(value)


def check_option(value: Any, name: str, options: Iterable[str], *, where: str = "") -> str:
    """Check that ``value`` is one of ``options`` and list them when it is not."""
    opts = tuple(options)
    if not isinstance(value, str) or value not in opts:
        owner = f" of {where}" if where else ""
        listed = ", ".join(repr(o) for o in opts)
        raise ProblemError(
            f"The {name!r} parameter{owner} must be one of {listed}. Got {value!r} instead."
        )
    return value


def check_seed(seed: Any, *, where: str) -> np.random.Generator:
    """A random generator from ``seed``: None (fresh entropy), a non-negative int, or a
    :class:`numpy.random.Generator` (used as it is)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (
        isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0
    ):
        return np.random.default_rng(seed)
    raise ProblemError(
        f"The 'seed' parameter of {where} must be None, a non-negative int or a "
        f"numpy.random.Generator. Got {seed!r} instead."
    )


def max_row_norm(arr: np.ndarray) -> float:
    """Largest Euclidean norm along the last axis, scaled first (no overflow for finite input)."""
    top = float(np.max(np.abs(arr), initial=0.0))
    if top == 0.0:
        return 0.0
    return top * float(np.max(np.linalg.norm(arr / top, axis=-1)))


def check_scale(
    array: np.ndarray,
    name: str,
    where: str = "",
    *,
    times: tuple[np.ndarray, str] | None = None,
) -> None:
    r"""Check that an array svmgeo squares is small enough for float64.

    The scale is :math:`s = \max_i \|a_i\|` over the rows :math:`a_i` (last axis) of
    ``array``, or :math:`s = \max_i \|a_i\| \max_j \|b_j\|` with ``times=(b, b_name)`` for
    arrays read as the product :math:`a^\top W b` (tokens and queries; pass the same array
    twice for :math:`\max\|a\|^2`). A nonzero scale must satisfy
    :math:`10^{-151} \le s \le` :data:`MAX_SCALE` :math:`= 10^{151}`: Gram matrices and
    logits hold squares of such scales (which overflow above, and underflow below).

    Parameters
    ----------
    array : ndarray
        A finite float array (run :func:`check_array` first).
    name : str
        The argument's name, used in the message (``"values"``, ``"embeddings"``).
    where : str, optional
        The function or class that received it.
    times : (ndarray, str), optional
        The partner array of a product and its name.

    Raises
    ------
    ProblemError
        When :math:`s > 10^{151}` or :math:`0 < s < 10^{-151}`; the message names the
        argument(s) to rescale.
    """
    s = max_row_norm(array)
    if times is None:
        t, what, fix = 1.0, f"max ||{name}||", name
    else:
        other, other_name = times
        t = max_row_norm(other)
        same = other_name == name
        what = f"max ||{name}||^2" if same else f"max ||{name}|| * max ||{other_name}||"
        fix = name if same else f"{name} or {other_name}"
    if s == 0.0 or t == 0.0:
        return
    log_s = math.log10(s) + math.log10(t)
    if -math.log10(MAX_SCALE) <= log_s <= math.log10(MAX_SCALE):
        return
    owner = f" ({where})" if where else ""
    large = log_s > 0.0
    raise ProblemError(
        f"the data are too {'large' if large else 'small'} for float64{owner}: {what} = "
        f"10^{log_s:.1f} (row norms) is outside [{1 / MAX_SCALE:.0e}, {MAX_SCALE:.0e}], and "
        f"svmgeo squares such scales (Gram matrices, logits{'' if large else ', which underflow'})."
        f" Rescale {fix} (e.g. {name} / np.abs({name}).max()): positive scaling changes no "
        "optimal token and no SVM direction, only the norms."
    )


def available_bytes() -> float:
    """MemAvailable from /proc/meminfo (Linux), else free physical pages; read at most once a
    second (thousands of small solves would otherwise read the file each time)."""
    now = time.monotonic()
    if now - _MEMORY_READ[0] > 1.0:
        _MEMORY_READ[:] = [now, _read_available_bytes()]
    return _MEMORY_READ[1]


_MEMORY_READ = [-np.inf, 0.0]
"""(when, bytes) of the last reading of :func:`available_bytes`."""


def _read_available_bytes() -> float:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:  # pragma: no cover - not Linux
        pass
    return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def check_width(m: Any, d: int, arrays: float, where: str) -> int:
    """The width ``m`` of factors ``K``, ``Q`` of shape (d, m) (``W = K Q^T``): an int >= 1,
    and when ``m > d`` one whose ``arrays`` float64 arrays of shape (d, m) (the working set of
    the caller, measured) fit in the available memory. ``m > d`` is allowed (an
    overparameterized W), but it adds no rank beyond d, and a width that cannot be allocated
    would hang the machine or be killed, never raise."""
    m = check_int(m, "m", low=1, where=where)
    need = 8.0 * arrays * d * m
    if m > d and need > available_bytes():
        raise ProblemError(
            f"The 'm' parameter of {where} asks for factors K, Q of shape ({d}, {m}): about "
            f"{need:.3g} bytes of working arrays, more than the {available_bytes():.3g} bytes "
            f"of memory available. A width m > d = {d} is allowed but adds no rank to "
            f"W = K Q^T: pass a smaller m (e.g. m={d})."
        )
    return m


def npz_path(name: str) -> str:
    """The file a path names for reading an ``.npz`` archive: ``name + ".npz"`` when ``name``
    lacks the suffix and that file exists (``numpy.savez`` and :func:`~svmgeo.save_data` append
    it, so what they wrote is read back, even beside an unrelated file ``name``), else ``name``."""
    if not name.endswith(".npz") and os.path.exists(f"{name}.npz"):
        return f"{name}.npz"
    return name


def read_only_view(A: Any) -> Any:
    """A view of the array ``A`` that cannot be written (the base stays writeable); numpy
    scalars, which cannot be written anyway, as they are."""
    if not isinstance(A, np.ndarray):
        return A
    out = A.view()
    out.flags.writeable = False
    return out


def read_only_state(obj: object, state: dict[str, Any]) -> None:
    """``__setstate__`` of an immutable holder of arrays (:class:`~svmgeo.TokenData`,
    :class:`~svmgeo.ConstraintSet`): the unpickled arrays, cached ones and those inside tuples
    included, read-only again (pickle returns writeable copies, and a write would leave the
    values cached from them stale)."""

    def freeze(value: Any) -> None:
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        elif isinstance(value, tuple):
            for item in value:
                freeze(item)

    for value in state.values():
        freeze(value)
    obj.__dict__.update(state)


def npz_entry(archive: Any, key: str, what: str, fix: str = "") -> np.ndarray:
    """Member ``key`` of an archive from :func:`open_npz`, every failure a ProblemError that
    ``what`` opens and ``fix`` ends: an object array (it needs pickle: never loaded) or a
    truncated or corrupt member (numpy raises ValueError for both; its pickle message names
    ``allow_pickle``)."""
    try:
        return np.asarray(archive[key])
    except Exception as exc:
        if isinstance(exc, ValueError) and "allow_pickle" in str(exc):
            raise ProblemError(
                f"{what}: entry {key!r} is a pickled object array; it must be a plain numeric "
                f"array, and svmgeo never unpickles.{fix}"
            ) from exc
        raise ProblemError(f"{what}: entry {key!r} is damaged ({exc}).{fix}") from exc


def open_npz(name: str, what: str, kind: str, fix: str = "") -> Any:
    """``np.load(name)`` as an ``.npz`` archive (a ``numpy.lib.npyio.NpzFile``, no pickles),
    every failure a ProblemError: ``what`` opens the message, ``kind`` says what the archive
    should be, ``fix`` ends it."""
    not_ours = f"{what}: not {kind}"
    try:
        archive = np.load(name, allow_pickle=False)
    except OSError as exc:
        if exc.strerror:  # permission and other system errors
            raise ProblemError(f"{what}: cannot read the file: {exc.strerror}.{fix}") from exc
        raise ProblemError(f"{not_ours}; it is neither .npz nor .npy data.{fix}") from exc
    except ValueError as exc:  # numpy's "pickled data" message for any other file
        raise ProblemError(f"{not_ours}; it is neither .npz nor .npy data.{fix}") from exc
    except Exception as exc:  # BadZipFile, EOFError, ...: a damaged archive
        raise ProblemError(f"{not_ours}; the archive is damaged ({exc}).{fix}") from exc
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ProblemError(f"{not_ours}; it holds one .npy array, not an .npz archive.{fix}")
    return archive
