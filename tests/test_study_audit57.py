# SPDX-License-Identifier: BSD-3-Clause
"""Session 57: ``study`` computes the trained W's logits and their tied maxima once.

Before (4e19dee) it computed the logits :math:`x^\\top W z` three times (its overflow check,
``largest_logits``, the trained attention) and the tied maxima twice (``largest_logits``, the
pruning mask); ``logit_selection`` now takes the logits and returns the mask too. The
results are bit for bit as before (an ad hoc comparison of base and branch, in the commit).
"""

from __future__ import annotations

import importlib
import traceback

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.selection import TIE_RTOL

selection = importlib.import_module("svmgeo.selection")
study_module = importlib.import_module("svmgeo.study")  # svmgeo.study is the function


def _naive_top(logits: np.ndarray, visible: np.ndarray) -> np.ndarray:
    """Each query's keys within TIE_RTOL of its largest logit, relative to the larger of the
    two magnitudes, by a loop (none at a query with a non-finite visible logit)."""
    top = np.zeros(logits.shape, dtype=bool)
    for i, k in np.ndindex(*logits.shape[:2]):
        row, seen = logits[i, k], visible[i, k]
        if not np.all(np.isfinite(row[seen])):
            continue
        best = max(row[seen])
        sizes = [abs(x) for x in row[seen] if x == best]
        for t in np.flatnonzero(seen):
            top[i, k, t] = row[t] >= best - TIE_RTOL * max(abs(row[t]), max(sizes))
    return top


def _naive_selection(data: sg.TokenData, logits: np.ndarray) -> tuple:
    """largest_logits' rule by a loop over the queries: the one top key of each query (by
    :func:`_naive_top`), else the query listed as tied (its top keys) or as non-finite."""
    top = _naive_top(logits, np.asarray(data.visible))
    alpha = np.zeros(logits.shape[:2], dtype=np.int64)
    tied, non_finite = [], []
    for i, k in np.ndindex(*logits.shape[:2]):
        keys = [t for t in range(logits.shape[2]) if top[i, k, t]]
        if not keys:
            non_finite.append(f"{selection.query_label(data, i, k)}: non-finite logits")
        elif len(keys) > 1:
            tied.append(f"{selection.query_label(data, i, k)}: tokens {keys}")
        else:
            alpha[i, k] = keys[0]
    if tied or non_finite:
        return None, tied, non_finite
    return (alpha[:, 0] if data.single_query else alpha), [], []


@pytest.mark.parametrize("seed", range(6))
def test_logit_selection_is_largest_logits_with_its_mask(seed):
    """logit_selection of weight_logits gives the selection, tied and non-finite lists of a
    naive loop over the queries (and of largest_logits, which wraps it), and its mask is
    every key within TIE_RTOL of the top (the loop's)."""
    from svmgeo.selection import logit_selection

    rng = np.random.default_rng(seed)
    data = sg.random_data(4, 5, 3, seed=seed, query="all" if seed % 2 else None)
    W = [np.zeros((3, 3)), np.round(rng.normal(size=(3, 3))), rng.normal(size=(3, 3))][seed % 3]
    if seed == 5:
        W[0, 0] = np.inf  # non-finite logits
    with np.errstate(invalid="ignore", over="ignore"):
        logits = selection.weight_logits(data, W)
    alpha, tied, non_finite, top = logit_selection(data, logits)
    for ref in (_naive_selection(data, logits), selection.largest_logits(data, W)):
        assert (tied, non_finite) == (ref[1], ref[2])
        assert (alpha is None) == (ref[0] is None)
        if alpha is not None:
            np.testing.assert_array_equal(alpha, ref[0])
    np.testing.assert_array_equal(top, _naive_top(logits, np.asarray(data.visible)))


@pytest.mark.parametrize("tied", [False, True])
def test_study_computes_the_trained_logits_and_their_ties_once(monkeypatch, tied):
    """weight_logits runs once on the trained W and tied_maxima once on its logits (before:
    3 and 2 times)."""
    data = sg.random_data(3, 4, 3, seed=1)
    W = np.zeros((3, 3)) if tied else np.random.default_rng(1).normal(size=(3, 3))
    calls = {"logits": 0, "ties": 0}
    logits_of, ties_of = selection.weight_logits, selection.tied_maxima
    trained = logits_of(data, W)

    def counted_logits(d, theta):
        if np.array_equal(np.asarray(theta), W):
            calls["logits"] += 1
        return logits_of(d, theta)

    def counted_ties(S, *args, **kwargs):  # on the trained logits (not the token scores)
        # robustness_radius decides the ties of its own doubtful rows by verify's rule (since
        # session 59, on every row at W = 0): its calls are its own, not study's repeats
        radius = any(f.filename.endswith("_stability.py") for f in traceback.extract_stack())
        if S.shape == trained.shape and np.array_equal(S, trained) and not radius:
            calls["ties"] += 1
        return ties_of(S, *args, **kwargs)

    for module in (selection, study_module):
        monkeypatch.setattr(module, "weight_logits", counted_logits, raising=False)
    monkeypatch.setattr(selection, "tied_maxima", counted_ties)
    monkeypatch.setattr(study_module, "tied_maxima", counted_ties, raising=False)
    rep = sg.study(data, W=W, progress=False)
    assert (rep.trained["selection"] is None) == tied
    assert calls == {"logits": 1, "ties": 1}
