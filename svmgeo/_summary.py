# SPDX-License-Identifier: BSD-3-Clause
"""Short ``repr`` and a readable ``summary()`` for svmgeo's result classes.

Results hold arrays with hundreds of entries; printing one must not flood the terminal. The
class decorator :func:`summarized` (placed above ``@dataclass``) gives a result class a one-line
``repr`` (arrays as their dtype and shape, nested results by class name) and, unless it has its
own, a ``summary()`` with one field per line and small arrays written out, and, unless it has
its own, ``_repr_html_`` (Jupyter's rich display): :func:`html_summary`, a table of the same
fields (every text escaped) followed by the class's own ``summary()`` when it has one, and
for reports with figures (:func:`html_figures`) the figures as embedded PNG images.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import html
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

__all__ = ["brief", "html_figures", "html_summary", "summarized"]

C = TypeVar("C", bound=type)

_SMALL = 12  # arrays up to this many entries are written out in summary()
_TEXT = 60  # strings longer than this are cut in the repr


def _fields(obj: Any) -> list[tuple[str, Any]]:
    if dataclasses.is_dataclass(obj):
        return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.repr]
    return list(vars(obj).items())


def brief(value: Any, *, full: bool = False) -> str:
    """One short line for ``value``; ``full`` writes out small arrays and whole strings."""
    if isinstance(value, np.ndarray):
        if full and value.size <= _SMALL:
            return np.array2string(value, precision=6, separator=", ").replace("\n", "")
        return f"array({value.dtype}, shape={value.shape})"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    if isinstance(value, str):
        return repr(value if full or len(value) <= _TEXT else value[: _TEXT - 3] + "...")
    if isinstance(value, (list, tuple)) and len(value) > (_SMALL if full else 3):
        return f"{type(value).__name__} of {len(value)}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(brief(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if value is None or isinstance(value, (bool, int, np.integer)):
        return repr(value)
    text = repr(value)
    return text if len(text) <= _TEXT and "\n" not in text else f"{type(value).__name__}(...)"


def _repr(self: Any) -> str:
    inner = ", ".join(f"{name}={brief(value)}" for name, value in _fields(self))
    return f"{type(self).__name__}({inner})"


def _summary(self: Any) -> str:
    lines = [type(self).__name__]
    items = _fields(self)
    width = max((len(name) for name, _ in items), default=0)
    lines += [f"  {name:<{width}}  {brief(value, full=True)}" for name, value in items]
    return "\n".join(lines)


def html_figures(draw: Callable[[Path], Iterable[Any]]) -> list[str]:
    """PNG figures as ``data:`` URIs: ``draw(directory)`` writes them and returns their paths.

    Empty when matplotlib is missing (or drawing fails): the HTML is then text only.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            paths = [Path(p) for p in draw(Path(tmp))]
        except (ImportError, OSError, ValueError):
            return []
        return [
            "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode("ascii")
            for p in paths
            if p.suffix == ".png" and p.is_file()
        ]


def html_summary(obj: Any, *, figures: Iterable[str] = ()) -> str:
    """An HTML table of ``obj``'s fields (name, :func:`brief` value), every text escaped.

    When the class has a ``summary()`` of its own (not the field list), its text follows in a
    ``<pre>`` block, so that the notebook shows what ``print(obj.summary())`` prints; then each
    of ``figures`` (``data:`` URIs from :func:`html_figures`) as an ``<img>``.
    """
    name = html.escape(type(obj).__name__)
    rows = "".join(
        f'<tr><th style="text-align:left">{html.escape(field)}</th>'
        f'<td style="text-align:left"><code>{html.escape(brief(value, full=True))}</code></td></tr>'
        for field, value in _fields(obj)
    )
    parts = [
        f'<div class="svmgeo-result"><table><caption style="text-align:left"><b>{name}</b>'
        f"</caption><tbody>{rows}</tbody></table>"
    ]
    own = getattr(type(obj), "summary", None)
    if callable(own) and own is not _summary:
        parts.append(f"<pre>{html.escape(str(obj.summary()))}</pre>")
    parts += [
        f'<img src="{html.escape(uri)}" alt="{name} figure" style="max-width:100%">'
        for uri in figures
    ]
    parts.append("</div>")
    return "".join(parts)


def _repr_html(self: Any) -> str:
    return html_summary(self)


def summarized(cls: C) -> C:
    """Give ``cls`` the short ``__repr__`` and, unless it defines them, ``summary()`` and
    ``_repr_html_``."""
    cls.__repr__ = _repr  # type: ignore[assignment]
    if "summary" not in vars(cls):
        cls.summary = _summary  # type: ignore[attr-defined]
    if "_repr_html_" not in vars(cls):
        cls._repr_html_ = _repr_html  # type: ignore[attr-defined]
    return cls
