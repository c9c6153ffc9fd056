# SPDX-License-Identifier: BSD-3-Clause
"""Every non-solver result prints as one short line and has a readable summary()."""

from __future__ import annotations

import dataclasses
from html.parser import HTMLParser

import numpy as np
import pytest

import svmgeo as sg
from svmgeo._summary import _fields, brief, summarized
from svmgeo._summary import _repr as _summary_repr

DATA = sg.random_data(20, 10, 20, seed=0)
ALPHA = sg.optimal_tokens(DATA)
SMALL = sg.random_data(3, 3, 2, seed=0)


def _results() -> dict[str, object]:
    run = sg.train(DATA, n_steps=20, backend="numpy")
    return {
        "support_tokens": sg.support_tokens(DATA, ALPHA),
        "is_locally_optimal": sg.is_locally_optimal(DATA, ALPHA),
        "locally_optimal_selections": sg.locally_optimal_selections(SMALL),
        "selected_sets": sg.selected_sets(np.full((20, 10), 0.1)),
        "train": run,
        "history": run.history,
        "train_batch": sg.train_batch([DATA, DATA], n_steps=20, backend="numpy"),
    }


@pytest.mark.parametrize(("name", "result"), list(_results().items()))
def test_repr_is_one_short_line_and_summary_names_every_field(name: str, result: object) -> None:
    text = repr(result)
    assert "\n" not in text and len(text) < 700, (name, len(text))
    assert text.startswith(type(result).__name__ + "(")
    summary = result.summary()  # type: ignore[attr-defined]
    assert isinstance(summary, str) and summary.count("\n") < 40
    # no array of hundreds of entries is written out
    assert len(summary) < 3000


def test_brief_writes_small_arrays_and_shapes_of_large_ones() -> None:
    assert brief(np.arange(3), full=True) == "[0, 1, 2]"
    assert brief(np.zeros((20, 10))) == "array(float64, shape=(20, 10))"
    assert brief("x" * 100).endswith("...'") and len(brief("x" * 100)) <= 62


def test_verify_report_summary_is_its_table() -> None:
    rep = sg.verify(sg.random_data(4, 5, 6, seed=1), n_steps=50, backend="numpy")
    assert rep.summary() == str(rep)
    assert "\n" not in repr(rep) and len(repr(rep)) < 1500


class _Tags(HTMLParser):
    """Checks that every opened tag is closed in order (the HTML is well formed)."""

    VOID = frozenset({"br", "hr", "img"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack.pop() == tag, tag

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parsed(markup: str) -> str:
    parser = _Tags()
    parser.feed(markup)
    parser.close()
    assert parser.stack == []
    return "".join(parser.text)


@pytest.mark.parametrize(("name", "result"), list(_results().items()))
def test_html_repr_is_a_table_of_every_field(name: str, result: object) -> None:
    markup = result._repr_html_()  # type: ignore[attr-defined]
    text = _parsed(markup)
    assert markup.count("<tr>") == len(_fields(result)), name
    for field, value in _fields(result):
        assert field in text and brief(value, full=True) in text, (name, field)


def test_html_repr_escapes_text_and_shows_an_own_summary() -> None:
    @summarized
    @dataclasses.dataclass
    class Odd:
        label: str
        n: int

        def summary(self) -> str:
            return f"Odd <{self.label}> & more"

    markup = Odd("<script>alert(1)</script>", 3)._repr_html_()  # type: ignore[attr-defined]
    assert "<script>" not in markup and "&lt;script&gt;" in markup
    text = _parsed(markup)
    assert "Odd <<script>alert(1)</script>> & more" in text  # the own summary, unescaped back
    assert "'<script>alert(1)</script>'" in text


def test_verify_report_html_holds_its_table() -> None:
    rep = sg.verify(sg.random_data(4, 5, 6, seed=1), n_steps=50, backend="numpy")
    assert str(rep) in _parsed(rep._repr_html_())


def test_every_summarized_public_class_has_an_html_repr() -> None:
    summarized_classes = [
        obj
        for obj in vars(sg).values()
        if isinstance(obj, type) and getattr(obj, "__repr__", None) is _summary_repr
    ]
    assert summarized_classes  # the decorator is in use
    for cls in summarized_classes:
        assert callable(getattr(cls, "_repr_html_", None)), cls.__name__
