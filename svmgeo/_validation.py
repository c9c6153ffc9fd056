# SPDX-License-Identifier: BSD-3-Clause
"""Validators used at the public boundary.

Each returns a cleaned value and raises :class:`~svmgeo.ProblemError` with the
argument's name, what was expected, what came, and how to fix it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ._errors import ProblemError

__all__ = [
    "check_array",
    "check_int",
    "check_option",
    "check_real",
]


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
        raise ProblemError(
            f"{name} must be a numeric array; got an object array (ragged nested lists?). {hint}"
        )
    if np.iscomplexobj(arr):
        raise ProblemError(
            f"{name} must be real; got complex dtype {arr.dtype}. Pass np.real({name}) if the "
            "imaginary part is meant to be zero."
        )
    if dtype is np.float64:
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise ProblemError(f"{name} must be numeric; got dtype {arr.dtype}. {hint}".strip())
        arr = np.ascontiguousarray(arr, dtype=np.float64)
    elif dtype is bool:
        if arr.dtype != bool:
            if not np.issubdtype(arr.dtype, np.number) or not np.all((arr == 0) | (arr == 1)):
                raise ProblemError(
                    f"{name} must be a boolean array (or 0/1); got dtype {arr.dtype}. {hint}".strip()
                )
        arr = np.ascontiguousarray(arr, dtype=bool)
    elif dtype is np.int64:
        if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
            raise ProblemError(f"{name} must be an integer array; got dtype {arr.dtype}. {hint}")
        if not np.issubdtype(arr.dtype, np.integer):
            if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
                raise ProblemError(f"{name} must hold integers; got non-integer values. {hint}")
        arr = np.ascontiguousarray(arr, dtype=np.int64)
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
    in (0, inf). Got -1 instead."
    """
    left = "(" if low_open else "["
    right = ")" if high_open else "]"
    interval = f"{left}{low:g}, {high:g}{right}"
    owner = f" of {where}" if where else ""
    template = (
        f"The {name!r} parameter{owner} must be a float in {interval}. Got {value!r} instead."
    )
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ProblemError(template)
    x = float(value)
    if not math.isfinite(x) and not (x == high == math.inf or x == low == -math.inf):
        raise ProblemError(template)
    if (x < low) or (low_open and x == low) or (x > high) or (high_open and x == high):
        raise ProblemError(template)
    return x


def check_int(
    value: Any, name: str, *, low: int | None = None, high: int | None = None, where: str = ""
) -> int:
    """Check that ``value`` is an integer in ``[low, high]`` (bounds optional)."""
    owner = f" of {where}" if where else ""
    lo = "-inf" if low is None else str(low)
    hi = "inf" if high is None else str(high)
    template = (
        f"The {name!r} parameter{owner} must be an int in [{lo}, {hi}]. Got {value!r} instead."
    )
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ProblemError(template)
    x = int(value)
    if (low is not None and x < low) or (high is not None and x > high):
        raise ProblemError(template)
    return x


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
