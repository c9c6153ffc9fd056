# SPDX-License-Identifier: BSD-3-Clause
"""Experiment results and sweep tables as pandas data frames; pandas stays optional."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import svmgeo as sg
from svmgeo.experiments import _registry

pd = pytest.importorskip("pandas")


def square_trial(k: int, seed: int) -> dict[str, Any]:
    return {"value": float(k * k + seed), "even": k % 2 == 0, "note": None if k else "zero"}


def _summarize(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    total = sum(r["value"] for r in rows)
    return {"total": total}, [{"k": r["k"], "value": r["value"], "tag": None} for r in rows]


def _plot(rows: Any, summary: Any, path: Path) -> list[Path]:
    path.write_bytes(b"not a real figure")
    return [path]


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> sg.ReproduceResult:
    experiment = _registry.Experiment(
        name="tiny_frames",
        title="tiny",
        trial=square_trial,
        grid=lambda quick: {"k": [0, 1, 2], "seed": [5]},
        summarize=_summarize,
        plot=_plot,
    )
    monkeypatch.setitem(_registry.EXPERIMENTS, experiment.name, experiment)
    return sg.reproduce("tiny_frames", quick=True, out=tmp_path, workers=0, progress=False)


def test_reproduce_result_to_pandas_is_the_sweeps_frame(tiny: sg.ReproduceResult) -> None:
    df = tiny.to_pandas()
    pd.testing.assert_frame_equal(df, tiny.sweep.to_pandas())
    assert list(df.columns) == tiny.sweep.columns and len(df) == 3
    assert df["value"].tolist() == [square_trial(k, 5)["value"] for k in (0, 1, 2)]


def test_reproduce_result_summary_table_as_frame(tiny: sg.ReproduceResult) -> None:
    df = tiny.to_pandas("summary")
    _, expected = _summarize(tiny.sweep.rows)
    assert list(df.columns) == ["k", "value", "tag", "failed_trials"]
    assert df[["k", "value"]].to_dict("records") == [
        {"k": r["k"], "value": r["value"]} for r in expected
    ]
    assert df["tag"].isna().all() and (df["failed_trials"] == 0).all()
    with pytest.raises(sg.ProblemError, match="'table' parameter"):
        tiny.to_pandas("figure")


def test_read_results_as_frame_matches_the_dicts(tiny: sg.ReproduceResult) -> None:
    path = tiny.tables[0]
    rows = sg.read_results(path)
    df = sg.read_results(path, as_frame=True)
    assert isinstance(df, pd.DataFrame) and list(df.columns) == list(rows[0])
    pd.testing.assert_frame_equal(df, pd.DataFrame(rows, columns=list(rows[0])))
    assert df["value"].tolist() == [r["value"] for r in rows]
    with pytest.raises(sg.ProblemError, match="as_frame must be True or False"):
        sg.read_results(path, as_frame="yes")  # type: ignore[arg-type]


def test_read_results_of_an_empty_table_is_an_empty_frame(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("")
    df = sg.read_results(path, as_frame=True)
    assert isinstance(df, pd.DataFrame) and df.empty


def test_html_repr_of_a_reproduce_result(tiny: sg.ReproduceResult) -> None:
    markup = tiny._repr_html_()
    assert "<table>" in markup and "tiny_frames" in markup and "total" in markup


def test_missing_pandas_is_named(monkeypatch: pytest.MonkeyPatch, tiny: sg.ReproduceResult) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import raises ImportError
    with pytest.raises(sg.BackendError, match=r"needs pandas.*pip install pandas"):
        sg.read_results(tiny.tables[0], as_frame=True)
    with pytest.raises(sg.BackendError, match=r"needs pandas.*pip install pandas"):
        tiny.to_pandas()
    with pytest.raises(sg.BackendError, match=r"needs pandas.*pip install pandas"):
        tiny.to_pandas("summary")
    rows = sg.read_results(tiny.tables[0])  # the list of dicts needs no pandas
    assert [r["value"] for r in rows] == [r["value"] for r in tiny.sweep.rows]


@pytest.mark.parametrize(
    ("n", "q", "expected"),
    [(10, 0.1, 1.0), (100, 0.1, 10.0), (30, 0.1, 3.0), (10, 0.0, 1.0), (10, 1.0, 10.0),
     (7, 0.5, 4.0)],
)  # fmt: skip
def test_the_lower_quantile_is_the_ceil_q_n_th_smallest(n: int, q: float, expected: float) -> None:
    """quantile(range(1, 11), 0.1) was 2.0, the second smallest (an optimistic q10)."""
    from svmgeo.experiments._rows import quantile

    assert quantile(range(1, n + 1), q) == expected
