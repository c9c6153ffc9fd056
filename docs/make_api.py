# SPDX-License-Identifier: BSD-3-Clause
"""Build the API reference (docs/api.md) from the docstrings of svmgeo's public names.

Run: python docs/make_api.py            (writes docs/api.md)
     python docs/make_api.py --check    (exit 1 when docs/api.md is out of date)
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import svmgeo

OUT = Path(__file__).with_name("api.md")


def _section(name: str, obj: object) -> str:
    doc = inspect.getdoc(obj) or "(undocumented)"
    kind = "class" if inspect.isclass(obj) else ("function" if callable(obj) else "constant")
    try:
        sig = str(inspect.signature(obj)) if callable(obj) else ""  # type: ignore[arg-type]
    except (TypeError, ValueError):
        sig = ""
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        sig = ""
    head = f"### `{name}{sig}`" if kind != "constant" else f"### `{name}`"
    return f"{head}\n\n*{kind}*\n\n```text\n{doc}\n```\n"


def build() -> str:
    parts = [
        "# API reference\n",
        "Generated from the docstrings by `python docs/make_api.py`; every name is importable as "
        "`svmgeo.NAME` (`import svmgeo as sg`).\n",
    ]
    names = sorted(n for n in svmgeo.__all__ if not n.startswith("_"))
    parts.append("\n".join(f"- [`{n}`](#{n.lower()})" for n in names) + "\n")
    for name in names:
        parts.append(_section(name, getattr(svmgeo, name)))
    return "\n".join(parts)


def main() -> int:
    text = build()
    if "--check" in sys.argv:
        current = OUT.read_text() if OUT.exists() else ""
        if current != text:
            print("docs/api.md is out of date: run python docs/make_api.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(text)} characters, {len(svmgeo.__all__)} names)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
