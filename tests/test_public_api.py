# SPDX-License-Identifier: BSD-3-Clause
"""The public API: every exported name exists and is documented, numpydoc style."""

from __future__ import annotations

import inspect

import pytest

import svmgeo as sg

PUBLIC = sorted(n for n in sg.__all__ if not n.startswith("_"))


def test_all_names_exist_and_are_unique():
    assert len(PUBLIC) == len(set(PUBLIC))
    for name in PUBLIC:
        assert hasattr(sg, name), name


@pytest.mark.parametrize("name", [n for n in PUBLIC if inspect.isfunction(getattr(sg, n))])
def test_functions_have_numpydoc_docstrings(name):
    doc = inspect.getdoc(getattr(sg, name))
    assert doc, f"{name} has no docstring"
    params = [
        p
        for p in inspect.signature(getattr(sg, name)).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if params:
        assert "Parameters\n----------" in doc, f"{name}: no numpydoc Parameters section"
    assert "Returns\n-------" in doc or "Yields\n------" in doc, f"{name}: no Returns section"


@pytest.mark.parametrize("name", [n for n in PUBLIC if inspect.isclass(getattr(sg, n))])
def test_classes_have_docstrings(name):
    assert inspect.getdoc(getattr(sg, name)), f"{name} has no docstring"


def test_version_is_one_number_everywhere():
    """``svmgeo.__version__``, pyproject.toml and CITATION.cff name the same version."""
    import re
    from pathlib import Path

    import svmgeo as sg

    root = Path(__file__).resolve().parents[1]
    pyproject = re.search(r'^version = "([^"]+)"', (root / "pyproject.toml").read_text(), re.M)
    citation = re.search(r"^version: (\S+)", (root / "CITATION.cff").read_text(), re.M)
    assert pyproject is not None and citation is not None
    assert sg.__version__ == pyproject.group(1) == citation.group(1)
