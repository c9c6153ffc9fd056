# SPDX-License-Identifier: BSD-3-Clause
"""Every non-solver result prints as one short line and has a readable summary()."""

from __future__ import annotations

import base64
import dataclasses
import html
import importlib
import pkgutil
import re
from html.parser import HTMLParser

import numpy as np
import pytest

import svmgeo as sg
from svmgeo._summary import _fields, brief, summarized
from svmgeo._summary import _repr as _summary_repr
from svmgeo._summary import _summary as _summary_fields

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
        **_more_results(),
    }


def _more_results() -> dict[str, object]:
    """Results that printed every array in full before session 46 (no ``@summarized``)."""
    from svmgeo.solvers import optimal_face_alignment, optimum_uniqueness

    nd = sg.random_next_token_data(4, 3, 5, 6, tier_size=2, seed=0)
    svm = sg.graph_svm(nd)
    assert svm.W is not None
    small = sg.random_data(4, 5, 6, seed=1)
    res = sg.solve_svm(sg.att_svm_constraints(small, sg.optimal_tokens(small)))
    return {
        "good_initial_gradient": sg.good_initial_gradient(DATA),
        "certificate": res.certificate,
        "finite_component": sg.finite_component(nd),
        "token_priority_graphs": next(iter(sg.token_priority_graphs(nd).values())),
        "verify_ntp": sg.verify_ntp(nd, svm.W),
        "optimal_face_alignment": optimal_face_alignment(res, np.eye(6)),
        "optimum_uniqueness": optimum_uniqueness(res),
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
        for obj in (getattr(sg, name) for name in sg.__all__)  # loads the lazy names too
        if isinstance(obj, type) and getattr(obj, "__repr__", None) is _summary_repr
    ]
    assert summarized_classes  # the decorator is in use
    for cls in summarized_classes:
        assert callable(getattr(cls, "_repr_html_", None)), cls.__name__


# -- issue 24: every public result has an HTML repr ------------------------------------------


def _public_dataclasses() -> list[type]:
    """The dataclasses named in ``svmgeo.__all__`` and in each public subpackage's ``__all__``."""
    modules = [sg] + [
        importlib.import_module(f"svmgeo.{m.name}")
        for m in pkgutil.iter_modules(sg.__path__)
        if not m.name.startswith("_")
    ]
    found = {
        obj
        for module in modules
        for name in getattr(module, "__all__", ())
        if isinstance(obj := getattr(module, name, None), type) and dataclasses.is_dataclass(obj)
    }
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))


HOSTILE = "<script>alert('x')</script> & \"q\""


def _real_instances() -> dict[type, object]:
    """Real instances of the classes whose HTML includes a summary() of their own."""
    from svmgeo.experiments import ReproduceResult, SweepResult

    data = sg.random_data(3, 4, 5, seed=1)
    opt = sg.optimal_tokens(data)
    svm = sg.att_svm(data, opt)
    X = np.array([[[0, 0], [1, 1]], [[0, 0], [1, -1]], [[0, 0], [0.5, 1.5]]])
    joint = sg.TokenData(X, Y=[1, -1, 1], v=[0.0, 1.0], Z=np.ones((3, 2)))
    sweep = SweepResult([{"status": "ok", "a": HOSTILE}], ["a"], None, 1, 1, 0, 0, 0.0)
    out: dict[type, object] = {
        sg.SVMResult: svm,
        type(svm.constraints): svm.constraints,
        sg.FeasibilityResult: sg.feasibility(data, opt),
        type(sg.joint_svm(joint)): sg.joint_svm(joint),
        type(sg.locally_optimal_selections(SMALL)): sg.locally_optimal_selections(SMALL),
        ReproduceResult: ReproduceResult(HOSTILE, True, (), (), {"h": HOSTILE}, 0, sweep),
        SweepResult: sweep,
        sg.StudyReport: sg.study(data, W=5.0 * svm.W, progress=False),
        type(sg.verify(data, n_steps=20, backend="numpy")): sg.verify(
            data, n_steps=20, backend="numpy"
        ),
    }
    from svmgeo.ntp import verify_ntp_training

    nd = sg.random_next_token_data(4, 3, 5, 6, tier_size=2, seed=0)
    out[sg.NTPReport] = verify_ntp_training(nd, n_steps=20)
    if svm.certificate is not None:
        out[type(svm.certificate)] = svm.certificate
    return out


def _hostile_instance(cls: type) -> object:
    """An instance whose every field is a string needing escapes (no __init__ runs)."""
    obj = object.__new__(cls)
    for f in dataclasses.fields(cls):
        object.__setattr__(obj, f.name, HOSTILE)
    return obj


def _own_summary(cls: type) -> bool:
    own = getattr(cls, "summary", None)
    return callable(own) and own is not _summary_fields


def test_every_public_result_has_a_well_formed_escaped_html_repr() -> None:
    classes = _public_dataclasses()
    assert sg.StudyReport in classes and sg.SVMResult in classes  # the walk finds them
    real = _real_instances()
    missing = [c.__name__ for c in classes if not callable(getattr(c, "_repr_html_", None))]
    assert missing == []
    needs_real = [c.__name__ for c in classes if _own_summary(c) and c not in real]
    assert needs_real == []  # an own summary() needs a real instance here
    for cls in classes:
        obj = real[cls] if cls in real else _hostile_instance(cls)
        markup = obj._repr_html_()  # type: ignore[attr-defined]
        text = _parsed(markup)  # well formed: every tag closed in order
        assert markup.startswith('<div class="svmgeo-result">'), cls.__name__
        assert type(obj).__name__ in text
        assert "<script>" not in markup, cls.__name__  # escaped, whatever the fields hold
        if cls not in real:
            assert markup.count("<tr>") == len(_fields(obj)), cls.__name__
            assert "&lt;script&gt;" in markup and "<script>" in text


@pytest.mark.parametrize("which", ["study", "verify"])
def test_study_and_verify_html_embed_their_figure(which: str) -> None:
    pytest.importorskip("matplotlib")
    data = sg.random_data(3, 4, 5, seed=1)
    if which == "study":
        W = sg.att_svm(data, sg.optimal_tokens(data)).W
        rep: object = sg.study(data, W=5.0 * W, progress=False)
        n_figures = 2  # margins and attention
    else:
        rep = sg.verify(data, n_steps=20, backend="numpy")
        n_figures = 1
    markup = rep._repr_html_()  # type: ignore[attr-defined]
    _parsed(markup)
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', markup)
    assert len(images) == n_figures
    for b64 in images:
        assert base64.b64decode(b64).startswith(b"\x89PNG\r\n\x1a\n")
    assert html.escape(rep.summary()) in markup  # type: ignore[attr-defined]


def test_html_is_text_only_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    data = sg.random_data(3, 4, 5, seed=1)
    rep = sg.study(data, W=np.eye(5), progress=False)
    markup = rep._repr_html_()
    assert "<img" not in markup and html.escape(rep.summary()) in markup
    _parsed(markup)


@pytest.mark.parametrize("param", ["W", "p"])
def test_lp_summary_names_q(param: str) -> None:
    """norm=("lp", q): the summary read "Att-SVM (lp)" and "objective  lp = ..." (p-SVM:
    "||p||_q"), without q; it names q, and the objective is the entrywise q-norm."""
    q = 1.5
    res = sg.att_svm(SMALL, sg.optimal_tokens(SMALL), param=param, norm=("lp", q))
    assert res.success
    x = res.p if param == "p" else res.W
    value = float(np.sum(np.abs(np.asarray(x)) ** q) ** (1 / q))
    np.testing.assert_allclose(res.objective, value, rtol=1e-9)
    lines = res.summary().splitlines()
    name = "p-SVM" if param == "p" else "Att-SVM"
    assert lines[0].startswith(f"{name} (lp, q = 1.5) over ")
    label = "||p||_1.5" if param == "p" else "entrywise ||W||_1.5"
    (objective,) = [ln for ln in lines if ln.startswith("  objective  ")]
    assert objective.startswith(f"  objective  {label} = ")
    np.testing.assert_allclose(float(objective.split(" = ")[1]), value, rtol=1e-5)
