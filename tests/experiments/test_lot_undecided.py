# SPDX-License-Identifier: BSD-3-Clause
"""The `local` and `mirror` experiments count an undecided LOT test apart (session 50's
audit): it is neither a LOT nor not a LOT (`sg.LocalOptimality`), and before the fix both
counted it as "not a LOT" (`bool(verdict)` is False for an undecided verdict).

The undecided verdicts are forced by replacing the LOT test (an undecided test needs
floating-point coincidences that random data does not give in a short run).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import pytest

import svmgeo as sg
from svmgeo.experiments import local, mirror

VERIFY = importlib.import_module("svmgeo.verify")  # the package (sg.verify is the function)


def _undecided(lot: sg.LocalOptimality) -> sg.LocalOptimality:
    return dataclasses.replace(
        lot, locally_optimal=False, decided=False, reason="undecided: forced by the test"
    )


def _as_sweep(rows: list[dict[str, Any]], **params: Any) -> list[dict[str, Any]]:
    """The rows as a sweep stores them: the trial's parameters, part and n_parts added."""
    return [dict(r, **params, part=j, n_parts=len(rows)) for j, r in enumerate(rows)]


def test_local_counts_an_undecided_lot_test_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    real = local.is_locally_optimal
    monkeypatch.setattr(local, "is_locally_optimal", lambda *a, **k: _undecided(real(*a, **k)))
    params = dict(n=6, T=8, d=10, seed=0, param="W", n_steps=40, protocol="paper")
    rows = local.trial(**params)
    assert {r["alpha_is_lot"] for r in rows} == {None}
    headline, _ = local.summarize(_as_sweep(rows, **params))
    key = "paper W: alpha != opt, alpha not a LOT, LOT test undecided, Att-SVM(alpha) infeasible"
    opt = "0" if rows[-1]["alpha_is_opt"] else "1"
    assert headline[key] == f"{opt}, 0, 1, 0 of 1"


def test_mirror_rows_keep_an_undecided_lot_test(monkeypatch: pytest.MonkeyPatch) -> None:
    real = VERIFY.verify_mirror

    def undecided_mirror(*args: Any, **kwargs: Any) -> sg.VerifyReport:
        rep = real(*args, **kwargs)
        assert rep.lot is not None
        return dataclasses.replace(rep, lot=_undecided(rep.lot), is_lot=False)

    monkeypatch.setattr(VERIFY, "verify_mirror", undecided_mirror)
    rows = mirror.trial(4, 5, 10, seed=0, p=1.5, steps="normalized", n_steps=20)
    assert {r["alpha_is_lot"] for r in rows} == {None}


def test_mirror_summary_says_undecided_not_not_a_lot() -> None:
    def row(seed: int, is_lot: bool | None) -> dict[str, Any]:
        values = {mirror._key(q): 0.1 for q in mirror.PS}
        return dict(
            values, steps="normalized", p=1.5, seed=seed, step=20, part=0, n_parts=1,
            one_minus_corr=0.01, sparsity_W=0.0, sparsity_svm=0.0, alpha_is_opt=False,
            alpha_is_lot=is_lot,
        )  # fmt: skip

    headline, _ = mirror.summarize([row(0, None), row(1, False), row(2, True)])
    assert headline["normalized p=1.5: seeds whose final selection is not opt"] == (
        "0 (LOT test undecided), 1 (not a LOT), 2"
    )
