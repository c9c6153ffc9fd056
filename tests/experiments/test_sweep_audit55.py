# SPDX-License-Identifier: BSD-3-Clause
"""Session 55: grid values keep the types the grid gave, the derived seed of every trial is in
its row, and a per-trial timeout (local worker processes) ends a hung trial as a row."""

from __future__ import annotations

import pytest

from svmgeo.experiments import read_results, sweep

NUMBER_LIKE = ["1e3", "007", "inf", "-0", "True", "", "nan"]
"""Strings that the table's cell rule (``parse_cell``) reads as other values."""


def _type_of(tag: str, seed: int) -> dict:
    return {"kind": type(tag).__name__, "length": len(tag)}


@pytest.mark.parametrize("out", [False, True], ids=["in-memory", "csv-table"])
def test_string_grid_values_keep_their_type(tmp_path, out: bool) -> None:
    """Regression: the rows came back through the CSV cell rule, so the string parameter
    "1e3" was the float 1000.0 in the result (and "007" the int 7, "" None), while trial_fn
    had received the strings: a row said another trial than the one that ran."""
    path = tmp_path / "t.csv" if out else None
    grid = {"tag": NUMBER_LIKE, "seed": [0]}
    res = sweep(_type_of, grid, out=path, workers=0, progress=False)
    assert res.column("tag") == NUMBER_LIKE
    assert all(type(v) is str for v in res.column("tag"))
    # what trial_fn received, measured in the trial: str, of the given length
    assert res.column("kind") == ["str"] * len(NUMBER_LIKE)
    assert res.column("length") == [len(t) for t in NUMBER_LIKE]
    if out:  # resumed rows are read from the CSV text: they must not differ from new ones
        again = sweep(_type_of, grid, out=path, workers=0, progress=False)
        assert again.n_resumed == len(NUMBER_LIKE) and again.n_run == 0
        assert again.column("tag") == NUMBER_LIKE
        assert all(type(v) is str for v in again.column("tag"))


def test_mixed_types_that_write_alike_stay_apart(tmp_path) -> None:
    """1, "1", 1.0 and True are one CSV text each ("1", "1", "1.0", "True") and four trials; each
    row carries its own trial's value and type, on the first run and on resume."""
    grid = {"a": [1, "1", 1.0, True, "True", None, ""], "seed": [0]}
    path = tmp_path / "m.csv"
    for _ in range(2):
        res = sweep(lambda a, seed: {"t": type(a).__name__}, grid, out=path, workers=0,
                    progress=False)  # fmt: skip
        got = res.column("a")
        assert [(type(v), v) for v in got] == [(type(v), v) for v in grid["a"]]
        assert res.column("t") == [type(v).__name__ for v in grid["a"]]
    # the table's own reader has only the text: read_results keeps its documented rule
    assert sorted(map(repr, (r["a"] for r in read_results(path)))) == sorted(
        ["1", "1", "1.0", "True", "True", "None", "None"]
    )
