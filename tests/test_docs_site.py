# SPDX-License-Identifier: BSD-3-Clause
"""The documentation site's own tools: the API pages list every public name (docs/conf.py), and
the browser check (docs/check_site.py) fails on a page with errors or an image that does not
render (skipped where Debian's chromium is not installed)."""

from __future__ import annotations

import base64
import importlib
import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_svmgeo_docs_{name}", DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_api_pages_list_every_public_name(tmp_path):
    conf = _load("conf")
    written = conf.write_api_pages(tmp_path / "api")
    assert written[0] == "svmgeo"
    index = (tmp_path / "api" / "index.rst").read_text(encoding="utf-8")
    top = set(importlib.import_module("svmgeo").__all__)
    for package in written:
        page = (tmp_path / "api" / f"{package}.rst").read_text(encoding="utf-8")
        assert f"   {package}\n" in index
        for name in importlib.import_module(package).__all__:
            if name.startswith("_"):  # __version__: not a page
                continue
            shared = package != "svmgeo" and name in top
            entry = f":obj:`svmgeo.{name}`" if shared else f"\n   {name}\n"
            assert entry in page, (package, name)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_browser_check_fails_on_errors_and_broken_images(tmp_path, capsys):
    check_site = _load("check_site")
    (tmp_path / "ok.png").write_bytes(PNG_1PX)
    (tmp_path / "good.html").write_text('<html><body><img src="ok.png"></body></html>')
    assert check_site.check(tmp_path, shutil.which("chromium"), timeout=20.0) == 0
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bad.html").write_text(
        '<html><body><img src="missing.png"><script>console.error("boom"); nope();</script>'
        "</body></html>"
    )
    capsys.readouterr()
    assert check_site.check(tmp_path, shutil.which("chromium"), timeout=20.0) == 1
    out = capsys.readouterr().out
    assert "FAIL sub/bad.html" in out and "FAIL good.html" not in out
    for problem in ("image not rendered: missing.png", "console.error: boom", "ReferenceError"):
        assert problem in out
