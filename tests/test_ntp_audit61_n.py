# SPDX-License-Identifier: BSD-3-Clause
"""Regression of audit 61 (n): next-token prediction's documented options match the code.

N3: graph_svm documents every norm it accepts ("spectral" was missing). N4: verify_ntp says
what it checks of a given svm (not "graph_svm(data) with its defaults"). N5: docs/beyond.md
tells the two quick modes apart. N6: graph_svm_constraints(graphs=...) was checked, then
ignored; it is deprecated. N7: NextTokenData refused its own padded ``tokens`` without saying
why (-1 padding) or how to pass ragged sequences."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.experiments.ntp import grid

BEYOND = Path(__file__).resolve().parent.parent / "docs" / "beyond.md"


def test_graph_svm_documents_every_norm_it_accepts() -> None:
    data = sg.random_next_token_data(20, 4, 5, 8, seed=0)
    with pytest.raises(sg.ProblemError, match="'norm' parameter of graph_svm") as info:
        sg.graph_svm(data, norm="x")  # type: ignore[arg-type]
    accepted = re.findall(r"'(\w+)'", str(info.value).split("must be one of")[1].split(";")[0])
    assert accepted == ["fro", "nuc", "spectral", "lp"], info.value
    doc = sg.graph_svm.__doc__ or ""
    line = next(x for x in doc.splitlines() if x.strip().startswith("norm :"))
    for name in accepted:
        assert f'"{name}"' in line, (name, line)
    small = sg.random_next_token_data(8, 3, 4, 4, seed=0)
    for norm in ("fro", "nuc", "spectral", ("lp", 1.5)):
        assert sg.graph_svm(small, norm=norm).status is sg.Status.OPTIMAL, norm  # type: ignore[arg-type]
    assert (
        '"spectral"' in BEYOND.read_text(encoding="utf-8").split("* `sg.graph_svm(data, ")[1][:60]
    )


def test_verify_ntp_says_what_it_checks_of_a_given_svm() -> None:
    """A Frobenius, unbounded, globally optimal Graph-SVM of the data is taken whatever its
    other options (tol here); a nuclear one is refused by what is checked."""
    data = sg.random_next_token_data(20, 4, 5, 8, tier_size=2, seed=0)
    W = sg.train_ntp(data, loss="retrieval", n_steps=50).W
    loose = sg.graph_svm(data, tol=1e-6)
    sg.verify_ntp(data, W, svm=loose, loss="retrieval")  # not graph_svm's default tol: taken
    with pytest.raises(sg.ProblemError) as info:
        sg.verify_ntp(data, W, svm=sg.graph_svm(data, norm="nuc"), loss="retrieval")
    text = str(info.value)
    assert "with its defaults" not in text, text
    assert "Frobenius (norm='fro'), no rank bound, globally optimal" in text, text
    doc = sg.verify_ntp.__doc__ or ""
    assert "with its defaults" not in doc
    assert "Frobenius, with no\n        rank bound, globally optimal" in doc
    assert "with its\n    defaults" not in BEYOND.read_text(encoding="utf-8")


def test_beyond_md_tells_the_two_quick_modes_apart() -> None:
    quick = grid(True)
    seeds = sorted({row["seed"] for row in quick})
    steps = {row["n_steps"] for row in quick}
    assert (seeds, steps) == ([0, 1], {1000})
    text = BEYOND.read_text(encoding="utf-8")
    assert "`svmgeo reproduce ntp --quick` runs seeds 0–1\nand 1000 plain GD steps" in text
    assert "`examples/ntp_graph_svm.py --quick` runs seeds 0–2 and 1500 steps" in text
    script = (BEYOND.parent.parent / "examples" / "ntp_graph_svm.py").read_text(encoding="utf-8")
    assert "seeds = [0, 1, 2] if args.quick" in script
    assert "(1500 if args.quick else 6000)" in script


def test_graph_svm_constraints_graphs_is_deprecated() -> None:
    data = sg.random_next_token_data(20, 4, 5, 8, tier_size=2, seed=0)
    ref = sg.graph_svm_constraints(data)
    with pytest.warns(DeprecationWarning, match=r"not used.*graph_svm_constraints\(data\)"):
        given = sg.graph_svm_constraints(data, graphs=sg.token_priority_graphs(data))
    for f in ("A", "B", "kind", "rhs", "seq", "query", "pref", "comp"):
        np.testing.assert_array_equal(getattr(given, f), getattr(ref, f))


def test_next_token_data_explains_its_own_padding() -> None:
    """Ragged data: its ``tokens`` is padded with -1; passing it back is refused with the
    reason and the fix, and the fix gives the same data."""
    data = sg.NextTokenData([[0, 1, 2], [3, 2, 1, 0], [1]], [1, 3, 1], np.eye(4))
    assert data.tokens[0].tolist() == [-1, 0, 1, 2]
    with pytest.raises(
        sg.ProblemError,
        match=r"sequences\[0\] holds token ids outside \[0, 4\).*\[-1, 0, 1, 2\]\. -1 is the "
        r"left padding of NextTokenData\.tokens, which only load_next_token_data reads back.*"
        r"\[row\[row >= 0\] for row in data\.tokens\]",
    ):
        sg.NextTokenData(data.tokens, data.labels, data.embeddings)
    back = sg.NextTokenData([row[row >= 0] for row in data.tokens], data.labels, data.embeddings)
    np.testing.assert_array_equal(back.tokens, data.tokens)
    # other ids out of range: no word of padding
    with pytest.raises(sg.ProblemError, match=r"outside \[0, 4\).*\[0, 7\]\.$"):
        sg.NextTokenData([[0, 7]], [0], np.eye(4))
