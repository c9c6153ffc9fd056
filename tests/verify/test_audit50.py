# SPDX-License-Identifier: BSD-3-Clause
"""Session 50's audit of `sg.verify`: an undecided LOT test and tied optimal tokens must each
be reported as what they are (SPEC §2, MATH-NOTES §5).

Each test failed on the tree before the fix (3fe92e8): the report printed "neither optimal
nor locally optimal" for an undecided test and "optimal (global)" for a tied optimum.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import svmgeo as sg


def _line(report: sg.VerifyReport, key: str) -> str:
    """The value of the headline row ``key`` of ``str(report)``."""
    rows = [r.strip() for r in str(report).splitlines() if r.strip().startswith(key + " ")]
    assert len(rows) == 1, str(report)
    return rows[0][len(key) :].strip()


# ---- (1) an undecided LOT test ----------------------------------------------------------------
# Token 2 scores above the selected token 0 and sits at margin 1 + 1e-8: active within the
# support tolerance, with a zero multiplier, so whether it is a support token (a violation) is
# not settled (/tmp/s50/audit_verify/t3.py).
NEAR = sg.TokenData(
    np.array([[[2.0, 0.0], [1.0, 0.0], [1.0 - 1e-8, 5.0]]]),
    Z=np.array([[1.0, 0.0]]),
    scores=np.array([[3.0, 1.0, 4.0]]),
)


@pytest.fixture(scope="module")
def undecided() -> sg.VerifyReport:
    W0 = np.array([[50.0, 0.0], [0.0, 0.0]])
    return sg.verify(NEAR, init=W0, n_steps=5, step_size=1e-3, backend="numpy")


def test_an_undecided_lot_test_is_reported_undecided_not_neither(
    undecided: sg.VerifyReport,
) -> None:
    assert undecided.lot is not None and not undecided.lot.decided  # the premise
    assert (undecided.is_optimal, undecided.is_lot, undecided.lot_decided) == (False, False, False)
    verdict = _line(undecided, "verdict")
    assert "neither" not in verdict
    assert verdict == (
        "not optimal; LOT test undecided: whether these tokens are support tokens is not settled"
    )
    assert _line(undecided, "LOT test").startswith("undecided: ")


def test_the_json_says_the_lot_test_was_undecided(undecided: sg.VerifyReport) -> None:
    fields = json.loads(undecided.to_json())
    assert (fields["is_lot"], fields["lot_decided"]) == (False, False)
    back = sg.VerifyReport.from_json(undecided.to_json())
    assert back.lot_decided is False
    assert _line(back, "verdict") == _line(undecided, "verdict")


def test_a_decided_report_and_an_old_json_say_decided() -> None:
    rep = sg.verify(sg.random_data(2, 3, 4, seed=0), n_steps=20, backend="numpy")
    assert rep.lot_decided is True and rep.to_dict()["lot_decided"] is True
    raw = rep.to_dict()
    for name in ("lot_decided", "optimal_ties"):
        del raw[name]  # a report written before session 50
    old = sg.VerifyReport.from_json(json.dumps(raw))
    assert (old.lot_decided, old.optimal_ties) == (True, None)
    assert _line(old, "verdict") == _line(rep, "verdict")


# ---- (2) tied optimal tokens --------------------------------------------------------------------
# Sequence 0: tokens 0 and 1 both score 3 (tied optimal); sequence 1: token 2 alone.
TIED = sg.TokenData(
    np.array([[[1.0, 0.0], [0.0, 2.0], [-1.0, -1.0]], [[1.0, 1.0], [0.0, -1.0], [2.0, 0.5]]]),
    Z=np.array([[1.0, 1.0], [1.0, 0.0]]),
    scores=np.array([[3.0, 3.0, 0.0], [1.0, 0.0, 2.0]]),
)


def test_an_optimal_selection_with_a_tie_names_the_tie() -> None:
    rep = sg.verify(TIED, n_steps=50, backend="numpy")
    np.testing.assert_array_equal(rep.selection, [0, 2])
    assert rep.is_optimal
    assert rep.optimal_ties == ((0, 0, (0, 1)),)
    assert _line(rep, "verdict") == "optimal (global; tied with token 1 in sequence 0)"
    fields = json.loads(rep.to_json())
    assert fields["optimal_ties"] == [[0, 0, [0, 1]]]
    back = sg.VerifyReport.from_json(rep.to_json())
    assert back.optimal_ties == rep.optimal_ties
    assert _line(back, "verdict") == _line(rep, "verdict")


def test_tied_optima_lists_every_tied_query_of_several_queries() -> None:
    from svmgeo.verify._report import tied_optima

    sets = np.zeros((2, 3, 4), dtype=bool)
    sets[0, :, 0] = True  # unique
    sets[1, 2, [1, 3]] = True  # tied
    sets[1, 0, [0, 1, 2]] = True  # tied
    sets[1, 1, 2] = True
    assert tied_optima(sets) == ((1, 0, (0, 1, 2)), (1, 2, (1, 3)))
    assert tied_optima(sets[:, 0]) == ((1, 0, (0, 1, 2)),)  # (n, T): one query per sequence
    assert tied_optima(np.eye(3, dtype=bool)) == ()
