# SPDX-License-Identifier: BSD-3-Clause
"""The atlas of correspondences (issue #23): the table, the page and ``svmgeo atlas``."""

from __future__ import annotations

from pathlib import Path

import pytest

from svmgeo import atlas
from svmgeo._errors import ProblemError
from svmgeo.cli import main
from svmgeo.experiments.optimizers import SVMS, grid

DOC = Path(__file__).resolve().parents[1] / "docs" / "atlas.md"


def _fake_rows() -> list[dict[str, object]]:
    """The quick grid's rows with made-up correlations (the closest: the seed's SVM)."""
    labels = list(SVMS)
    rows = []
    for k, params in enumerate(grid(True)):
        corr = {f"corr_{s}": (0.9 if j == k % len(labels) else 0.1) for j, s in
                enumerate(labels)}  # fmt: skip
        rows.append(dict(params, **corr, closest=labels[k % len(labels)]))
    return rows


def test_every_correspondence_is_on_the_page_with_its_status():
    page = atlas.atlas_markdown(_fake_rows())
    for k, c in enumerate(atlas.CORRESPONDENCES, 1):
        assert f"| {k} | {c.attention} | {c.param} | {c.optimizer} |" in page
        assert f"**{c.status}**" in page
        assert c.status in atlas.STATUSES
    assert {c.status for c in atlas.CORRESPONDENCES} >= {"theorem", "conjecture", "refuted"}


def test_every_run_of_the_evidence_is_listed_per_seed():
    rows = _fake_rows()
    page = atlas.atlas_markdown(rows)
    evidence = page.split("## Evidence")[1]
    for k, c in enumerate(atlas.CORRESPONDENCES, 1):
        for param, name in c.evidence:
            for r in rows:
                if (r["param"], r["optimizer"]) == (param, name):
                    assert f"| {k} | {param} | {name} | {r['seed']} |" in evidence
    n = sum(1 for line in evidence.splitlines() if line.startswith("| ") and "---" not in line)
    runs = {run for c in atlas.CORRESPONDENCES for run in c.evidence}
    expected = sum(1 for r in rows if (r["param"], r["optimizer"]) in runs)
    assert n - 1 == expected  # minus the header


def test_face_correlations_that_are_lower_bounds_are_marked():
    """A face correlation that is only a lower bound on the face's best (the row's
    face_lower_bounds) reads "≥ x" in the evidence, as in verify and the experiment's headline
    (it read as the best before session 51)."""
    rows = _fake_rows()
    sign = next(r for r in rows if (r["param"], r["optimizer"]) == ("W", "sign"))
    sign["face_lower_bounds"] = "spectral"
    evidence = atlas.atlas_markdown(rows).split("## Evidence")[1]
    line = next(ln for ln in evidence.splitlines() if f"| W | sign | {sign['seed']} |" in ln)
    cells = [c.strip() for c in line.split("|")[5:-3]]
    labels = list(SVMS)
    want = [("≥ " if s == "spectral" else "") + f"{sign[f'corr_{s}']:.3f}" for s in labels]
    assert cells == want


def test_missing_runs_name_the_argument():
    rows = [r for r in _fake_rows() if r["optimizer"] != "sign"]
    with pytest.raises(ProblemError, match="'rows'"):
        atlas.atlas_markdown(rows)


def test_a_bad_status_is_refused():
    with pytest.raises(ValueError, match="status"):
        atlas.Correspondence("softmax", "W", "gd", "fro", "rows", "proved", "here", "cmd")


def test_cli_write_then_check(tmp_path, monkeypatch, capsys):
    page = atlas.atlas_markdown(_fake_rows())
    monkeypatch.setattr(atlas, "atlas_markdown", lambda: page)
    path = tmp_path / "atlas.md"
    assert main(["atlas", "--check", str(path)]) == 1  # missing
    assert main(["atlas", "--write", str(path)]) == 0
    assert path.read_text() == page
    assert main(["atlas", "--check", str(path)]) == 0
    path.write_text(page + "edited by hand\n")
    assert main(["atlas", "--check", str(path)]) == 1
    assert "not what generation gives now" in capsys.readouterr().err
    assert main(["atlas"]) == 0
    assert capsys.readouterr().out == page


def test_docs_atlas_is_current():
    """The committed page is what generation gives now, to the machine-to-machine spread of
    the evidence (the CI line `svmgeo atlas --check`)."""
    assert atlas.page_differences(DOC.read_text(), atlas.atlas_markdown()) == []


def test_page_differences_allow_the_measured_spread_only():
    page = atlas.atlas_markdown(_fake_rows())
    assert atlas.page_differences(page, page) == []
    line = next(k for k, ln in enumerate(page.splitlines()) if "| 0.900 |" in ln)
    lines = page.splitlines()

    def edited(new: str) -> str:
        return "\n".join([*lines[:line], new, *lines[line + 1 :]]) + "\n"

    near = lines[line].replace("| 0.900 |", f"| {0.9 + atlas.ATLAS_TOLERANCE / 2:.3f} |", 1)
    far = lines[line].replace("| 0.900 |", f"| {0.9 + 2 * atlas.ATLAS_TOLERANCE:.3f} |", 1)
    renamed = lines[line].replace(" W ", " KQ ", 1)
    assert atlas.page_differences(page, edited(near)) == []
    assert [d[0] for d in atlas.page_differences(page, edited(far))] == [line + 1]
    assert [d[0] for d in atlas.page_differences(page, edited(renamed))] == [line + 1]
    assert atlas.page_differences(page, page + "one more line\n") != []
