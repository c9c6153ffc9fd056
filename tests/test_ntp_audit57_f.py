# SPDX-License-Identifier: BSD-3-Clause
"""Regression of audit 57 (F3): graph_svm names a row in next-token terms in every form the
generic solver's message takes, the round-off note's "e.g. sequence i, query k, tokens p vs q"
included."""

from __future__ import annotations

import warnings

import numpy as np

import svmgeo as sg


def test_the_round_off_note_names_a_row_by_its_last_token_and_edge() -> None:
    """One sequence [0, 1, 2] with next token 0: its rows are edges 0 -> 1 and 0 -> 2 of last
    token 2. Token 1's embedding is token 0's up to 1e-100, so the row of edge 0 -> 1 is at the
    round-off level of the other, and the note names it: before session 57 as "sequence 2,
    query 0, tokens 0 vs 1" (there is one sequence; 2 is the last token)."""
    E = np.array([[1.0, 0.0], [1.0, 1e-100], [0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        res = sg.graph_svm(sg.NextTokenData([[0, 1, 2]], [0], E))
    assert "rows at the round-off level" in res.message, res.message
    assert "e.g. last token 2, edge 0 -> 1:" in res.message, res.message
    assert "sequence" not in res.message, res.message
