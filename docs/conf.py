# SPDX-License-Identifier: BSD-3-Clause
"""Sphinx configuration of svmgeo's documentation site.

Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html`` (``docs/build.sh`` does it and
then opens every page in headless Chromium, ``docs/check_site.py``).

The API pages are generated from the package at every build: :func:`write_api_pages` lists
``__all__`` of ``svmgeo`` and of its public subpackages into ``docs/api/*.rst`` (autosummary
directives), and autosummary writes one page per name from its docstring (numpydoc). A new public
name appears on the site without an edit here.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import svmgeo  # noqa: E402

project = "svmgeo"
author = "svmgeo developers"
copyright = "svmgeo developers, BSD-3-Clause"
release = version = getattr(svmgeo, "__version__", "dev")

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/README.md", "figures"]
templates_path = ["_templates"]

# -- MyST: the markdown pages (theory, tutorial, guides) ------------------------------------
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# -- API: autosummary + numpydoc ----------------------------------------------------------
PACKAGES = {
    "svmgeo": "import svmgeo as sg: every name below is sg.NAME",
    "svmgeo.solvers": "Att-SVM solvers and their certificates",
    "svmgeo.gd": "gradient descent on attention",
    "svmgeo.analysis": "token-selection analysis: support tokens, LOTs, cones, Gen-SVM, paths",
    "svmgeo.verify": "GD against the SVM predictions",
    "svmgeo.ntp": "next-token prediction: token-priority graphs and Graph-SVM",
    "svmgeo.experiments": "the paper's experiments, sweeps and stored results",
    "svmgeo.testing": "hypothesis strategies, oracles and certificate checks",
    "svmgeo.atlas": "the atlas of correspondences: statuses, citations and the generated page",
}
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False


def _public(module: str) -> list[str]:
    mod = importlib.import_module(module)
    return sorted(n for n in getattr(mod, "__all__", []) if not n.startswith("_"))


def write_api_pages(out: Path = DOCS / "api") -> list[str]:
    """Write ``api/index.rst`` and one ``api/<package>.rst`` per public package from ``__all__``.

    Names a subpackage re-exports from ``svmgeo`` get a line pointing at ``svmgeo.NAME`` instead of
    a second page. The folder is generated: it is emptied first. Returns the packages written
    (those that import).
    """
    shutil.rmtree(out, ignore_errors=True)  # generated: no stale page of a removed name
    out.mkdir()
    top = set(_public("svmgeo"))
    written = []
    for package, blurb in PACKAGES.items():
        try:
            names = _public(package)
        except ImportError:  # a subpackage that does not exist (yet)
            continue
        own = names if package == "svmgeo" else [n for n in names if n not in top]
        shared = [n for n in names if n in top] if package != "svmgeo" else []
        title = f"``{package}``"
        lines = [title, "=" * len(title), "", f".. currentmodule:: {package}", "", blurb + ".", ""]
        if own:
            lines += [
                ".. autosummary::",
                "   :toctree: generated",
                "",
                *(f"   {n}" for n in own),
                "",
            ]
        if shared:
            refs = ", ".join(f":obj:`svmgeo.{n}`" for n in shared)
            lines += [
                f"Also importable from ``{package}`` (documented under ``svmgeo``): {refs}.",
                "",
            ]
        (out / f"{package}.rst").write_text("\n".join(lines), encoding="utf-8")
        written.append(package)
    index = ["API reference", "=============", "",
             "Generated from the docstrings of the public names (``__all__``) at each build.", "",
             ".. toctree::", "   :maxdepth: 1", "", *(f"   {p}" for p in written), ""]  # fmt: skip
    (out / "index.rst").write_text("\n".join(index), encoding="utf-8")
    return written


# -- gallery: sphinx-gallery runs examples/gallery/plot_*.py (quick) and shows their figures --
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples" / "gallery"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "show_memory": False,
    "within_subsection_order": "FileNameSortKey",
    "write_computation_times": False,  # its page needs jQuery, which Sphinx no longer ships
}

# -- HTML ---------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "svmgeo"
html_theme_options = {
    "navigation_with_keys": False,
    "show_prev_next": True,
}
html_context = {"default_mode": "light"}
html_static_path: list[str] = []
html_show_sourcelink = False


def _constant_docstring(app, what, name, obj, options, lines):
    """A module constant has no docstring of its own: show its value's type, not the type's help."""
    if what == "data" and lines and type(obj).__doc__ and lines[0] in type(obj).__doc__:
        lines[:] = [f"Constant of type ``{type(obj).__name__}``: ``{name.rsplit('.', 1)[-1]}``."]


_TEXT_PERIOD = re.compile(r"(\\text\{[^}]*?\.) ")


def _text_periods(app, what, name, obj, options, lines):
    r"""``\text{ s.t. rows}`` -> ``\text{ s.t.}\text{ rows}`` (same rendering).

    autosummary ends a summary at a period followed by a space, even inside ``:math:``.
    """
    lines[:] = [_TEXT_PERIOD.sub(r"\1}\\text{ ", line) for line in lines]


def setup(app):
    # as soon as the configuration is read: before Sphinx lists the source files
    app.connect("config-inited", lambda app, config: write_api_pages())
    app.connect("autodoc-process-docstring", _constant_docstring)
    app.connect("autodoc-process-docstring", _text_periods)
