# SPDX-License-Identifier: BSD-3-Clause
"""Session 58: study judges the trained W's top logits by the rule of largest_logits.

Before (132ae7c), study called ``logit_selection`` without W, so it sized the logits by their
magnitudes alone, not by their terms' (``logit_sizes``): logits whose terms cancel were ranked
on round-off, and study made a selection where largest_logits and verify see a tie. The
oracle is the exact logits, :class:`fractions.Fraction` on the same floats.
"""

from __future__ import annotations

import importlib
from fractions import Fraction

import numpy as np

import svmgeo as sg

selection = importlib.import_module("svmgeo.selection")


def test_trained_logits_whose_terms_cancel_make_no_selection():
    """Keys (1 + 2^-52, 1) and (2.1e-16, 0) under W = diag(1e16, -1e16), z = (1, 1): exact
    logits 2^-52 1e16 = 2.22... and 2.1e-16 1e16 = 2.10..., computed 2 and 2.1: a plain
    argmax, and study before, selected key 1 (is_optimal True, scores (0, 1)) over the exact
    maximum, key 0. Their difference is below the round-off of
    the terms 1e16 that cancel: study, like largest_logits, sees a tie and makes no
    selection."""
    X = np.array([[[1.0 + 2.0**-52, 1.0], [2.1e-16, 0.0]]])
    W = np.diag([1e16, -1e16])
    data = sg.TokenData(X, Z=np.array([[1.0, 1.0]]), scores=np.array([[0.0, 1.0]]))
    exact = [
        Fraction(float(X[0, t, 0])) * Fraction(1e16) - Fraction(float(X[0, t, 1])) * Fraction(1e16)
        for t in range(2)
    ]
    assert exact[0] > exact[1]  # key 0 is the exact maximum
    logits = selection.weight_logits(data, W)[0, 0]
    assert logits[1] > logits[0]  # computed, key 1 is above it
    assert selection.largest_logits(data, W) == (None, ["sequence 0: tokens [0, 1]"], [])
    rep = sg.study(data, W=W, progress=False)
    assert rep.trained is not None
    assert rep.trained["selection"] is None and rep.trained["is_optimal"] is None
    assert rep.trained["tied"] == ["sequence 0: tokens [0, 1]"]
    assert any("ties the top logits of 1 of 1 queries" in note for note in rep.notes), rep.notes
