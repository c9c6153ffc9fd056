# SPDX-License-Identifier: BSD-3-Clause
"""The doctest examples of docs/gd.md (values, param="p", train_head, normalize_eps) run,
and the engine's docstrings hold together (cross-references, sections)."""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "gd.md"


def test_gd_doc_examples() -> None:
    result = doctest.testfile(
        str(DOC), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted >= 15 and result.failed == 0, result


def _resolves(path: str) -> bool:
    """Does the dotted ``path`` (``svmgeo.gd.loss_and_grad``) name an object?"""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for name in parts[i:]:
                obj = getattr(obj, name)
        except AttributeError:
            return False
        return True
    return False


def test_gd_docstrings_cross_references_resolve() -> None:
    """Regression: Optimizer's docstring pointed to svmgeo.loss_and_grad, which does not exist
    (it is svmgeo.gd.loss_and_grad)."""
    import svmgeo.gd

    modules = [svmgeo.gd] + [
        importlib.import_module(f"svmgeo.gd.{m.name}")
        for m in pkgutil.iter_modules(svmgeo.gd.__path__)
    ]
    broken = []
    checked = 0
    for module in modules:
        objects: list[object] = [module]
        for value in vars(module).values():
            if getattr(value, "__module__", None) == module.__name__ and callable(value):
                objects.append(value)
                if inspect.isclass(value):
                    objects.extend(v for v in vars(value).values() if inspect.isfunction(v))
        for obj in objects:
            for ref in re.findall(r":(?:func|class|data|mod|meth|attr):`~?(svmgeo[\w.]*)`",
                                  obj.__doc__ or ""):  # fmt: skip
                checked += 1
                if not _resolves(ref):
                    broken.append((module.__name__, getattr(obj, "__qualname__", ""), ref))
    assert checked > 50 and broken == []


def test_loss_and_grad_docstring_sections() -> None:
    """Regression: ``attention`` sat under Returns and took the sentence of ``grad``."""
    from svmgeo.gd import loss_and_grad

    doc = inspect.getdoc(loss_and_grad) or ""
    params, rest = doc.split("\nReturns\n-------\n")
    returns = rest.split("\nRaises\n------\n")[0]
    assert re.findall(r"^(\w+) : ", params, re.M)[-2:] == ["train_head", "attention"]
    assert re.findall(r"^(\w+) : ", returns, re.M) == ["loss", "grad"]
    assert "true scale" in returns.split("grad : ")[1]
