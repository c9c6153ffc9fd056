# SPDX-License-Identifier: BSD-3-Clause
"""Session 51: local, global and companion_single report a tied final selection (SPEC §2:
ties are reported, never broken) instead of taking the first tied key of an argmax, as
variants, stability and optimizers do (experiments._selection.final_selection)."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.experiments import companion_single, global_, local
from svmgeo.experiments._companion import PromptPath, single_input_data

from ._ties import tied_final_iterate as _tied

TIE = "sequence 0: tokens [3, 5]"


def _run(data: sg.TokenData, W: np.ndarray, steps: tuple[int, ...]) -> types.SimpleNamespace:
    """A stand-in for train's run that ends at W, with the history train records (``selected``
    as the engine's argmax would: the first tied key)."""
    logits = np.einsum("ntd,de,nd->nt", np.asarray(data.X), W, np.asarray(data.Z))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    R = len(steps)
    history = types.SimpleNamespace(
        step=np.array(steps),
        W=np.array([W] * R),
        probs=np.array([probs] * R),
        selected=np.array([np.argmax(logits, axis=1)] * R),
        loss=np.full(R, 0.5),
    )
    return types.SimpleNamespace(W=W, history=history)


def test_local_paper_protocol_takes_no_alpha_from_a_tied_final_iterate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: α took token 3 (the argmax's first) and Att-SVM(α) was solved and correlated."""
    data, W = _tied()
    monkeypatch.setattr(local, "random_data", lambda *a, **k: data)
    monkeypatch.setattr(local, "train", lambda *a, **k: _run(data, W, (0, 20)))
    rows = local.trial(6, 8, 10, seed=0, param="W", n_steps=20, protocol="paper")
    assert {r["tied"] for r in rows} == {TIE}
    assert all(math.isnan(r["corr_fro"]) and math.isnan(r["corr_nuc"]) for r in rows)
    assert all(math.isnan(r["softmax_alpha"]) for r in rows)
    assert rows[-1]["alpha_is_opt"] is None and rows[-1]["alpha_is_lot"] is None
    tagged = [dict(r, protocol="paper", param="W", seed=0, part=k, n_parts=len(rows))
              for k, r in enumerate(rows)]  # fmt: skip
    headline, _ = local.summarize(tagged)
    assert headline["paper W: tied final selection (no alpha)"] == f"seed 0: {TIE}"
    counts = "paper W: alpha != opt, alpha not a LOT, LOT test undecided, Att-SVM(alpha) infeasible"
    assert headline[counts] == "0, 0, 0, 0 of 1"  # a tie is none of these


def test_local_cone_protocol_has_a_given_alpha_and_no_tie() -> None:
    rows = local.trial(6, 8, 10, seed=0, param="W", n_steps=4, protocol="cone", n_records=2)
    assert {r["tied"] for r in rows} == {""}
    assert all(math.isfinite(r["corr_fro"]) for r in rows)


def test_global_does_not_call_a_tied_final_selection_opt_or_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: selects_opt compared the argmax's first tied key with opt (True or False)."""
    data, W = _tied()
    monkeypatch.setattr(global_, "random_data", lambda *a, **k: data)
    monkeypatch.setattr(global_, "train", lambda *a, **k: _run(data, W, (10,)))
    row = global_.trial(6, 8, 10, seed=0, param="W", n_steps=10)
    assert row["tied"] == TIE and row["selects_opt"] is None
    assert math.isfinite(row["corr"])  # the correlation needs no selection
    headline, summary = global_.summarize([{"param": "W", "d": 10, "seed": 0, **row}])
    assert headline["W d=10: tied final selection (no selects-opt)"] == f"seed 0: {TIE}"
    assert math.isnan(summary[0]["pct_selects_opt"])  # no untied run to count


def test_companion_single_names_a_tied_softmax_over_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """p = (0, -1, 0) gives tokens 1 and 2 the same logit 0 (token 0's is -1). Before: the
    run was reported as selecting token 1, the argmax's first."""
    data = single_input_data(companion_single.GAMMA2["local"])
    p = np.array([0.0, -1.0, 0.0])
    logits = np.asarray(data.X)[0] @ p
    np.testing.assert_allclose(logits[1], logits[2], rtol=0, atol=0)
    probs = np.exp(logits) / np.exp(logits).sum()
    path = PromptPath(np.array([0]), p[None], probs[None, None], None)
    monkeypatch.setattr(companion_single, "prompt_path", lambda *a, **k: path)
    rows = companion_single.trial("local", start=4, eps=0.0, n_steps=1)
    assert rows[0]["selected"] is None and rows[0]["tied"] == "sequence 0: tokens [1, 2]"
    tagged = [dict(rows[0], setting="local", start=4, eps=0.0, part=0, n_parts=1)]
    headline, summary = companion_single.summarize(tagged)
    tag = "local (gamma2=0, eps=0)"
    assert headline[f"{tag}: tied final selection"] == "start 4: sequence 0: tokens [1, 2]"
    assert headline[f"{tag}: selected token per start"] == "tied"
    assert summary[0]["selected"] == "tied" and summary[0]["cos_selected"] is None


def test_the_prompt_vectors_tie_rule_is_that_of_w() -> None:
    """final_selection of a prompt vector p is that of W = p z^T with every query z = e_1."""
    from svmgeo.experiments._selection import final_selection

    data = single_input_data(companion_single.GAMMA2["global"])
    e1 = np.eye(data.d)[0]
    for p in (np.array([0.0, -1.0, 0.0]), np.array([0.3, 2.0, 0.0])):
        alpha, tied = final_selection(data, p)
        alpha_W, tied_W = final_selection(data, np.outer(p, e1))
        assert tied == tied_W
        assert (alpha is None) == (alpha_W is None)
        if alpha is not None:
            np.testing.assert_array_equal(alpha, alpha_W)
