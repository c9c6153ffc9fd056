# SPDX-License-Identifier: BSD-3-Clause
"""InaccurateSolutionWarning: emitted once by every public solver whose answer is inaccurate,
at the caller's line; never for a certified answer; never twice through an analysis wrapper."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import Status, _feasibility, _norms


def _hull_data() -> sg.TokenData:
    # the selected token (the origin) lies inside the convex hull of the others: infeasible
    X = np.array([[[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]])
    return sg.TokenData(X, Z=np.array([[1.0, 0.3]]), v=np.ones(2))


@pytest.fixture
def sloppy_farkas(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Farkas vector that fails its check by 1e-3: the verdict is INFEASIBLE_INACCURATE."""

    def sloppy(cs: Any, fac: Any, lam: np.ndarray) -> tuple[np.ndarray, float]:
        lam = np.where(cs.is_margin, np.maximum(lam, 0.0), lam)
        return lam / (cs.rhs @ lam), 1e-3

    monkeypatch.setattr(_feasibility, "_polish_farkas", sloppy)


@pytest.fixture
def inaccurate_fro(monkeypatch: pytest.MonkeyPatch) -> None:
    """svmgeo's Frobenius path answers OPTIMAL_INACCURATE (its W is the true optimum)."""
    spec = _norms.NORMS["fro"]

    def solve(req: Any, geo: Any, feas: Any) -> sg.SVMResult:
        res = spec.solve(req, geo, feas)
        return dataclasses.replace(res, status=Status.OPTIMAL_INACCURATE, message="patched")

    # no cvxpy fallback either: the answer stays inaccurate
    monkeypatch.setitem(_norms.NORMS, "fro", dataclasses.replace(spec, solve=solve, fallback=None))


@pytest.fixture
def recorded() -> Iterator[list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def _inaccurate(caught: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in caught if issubclass(w.category, sg.InaccurateSolutionWarning)]


CALLS: dict[str, Callable[[], Any]] = {
    "feasibility": lambda: sg.feasibility(_hull_data(), np.array([0]), exact=False),
    "check_feasibility": lambda: sg.check_feasibility(
        sg.att_svm_constraints(_hull_data(), np.array([0])), exact=False
    ),
    "att_svm": lambda: sg.att_svm(_hull_data(), np.array([0]), exact=False),
    "solve_svm": lambda: sg.solve_svm(
        sg.att_svm_constraints(_hull_data(), np.array([0])), exact=False
    ),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_public_solver_warns_once_at_the_caller(
    name: str, sloppy_farkas: None, recorded: list[warnings.WarningMessage]
) -> None:
    res = CALLS[name]()
    assert res.status is Status.INFEASIBLE_INACCURATE, res.message
    caught = _inaccurate(recorded)
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert caught[0].filename == __file__  # stacklevel: the line that called the solver
    assert str(caught[0].message).startswith(f"{name} returned infeasible_inaccurate")
    assert "Farkas residual" in str(caught[0].message)


@pytest.mark.parametrize("call", [sg.solve_svm, sg.att_svm])
def test_optimal_inaccurate_warns(
    call: Callable[..., sg.SVMResult],
    inaccurate_fro: None,
    recorded: list[warnings.WarningMessage],
) -> None:
    data = sg.random_data(3, 4, 5, seed=0)
    arg = data if call is sg.att_svm else sg.att_svm_constraints(data, sg.optimal_tokens(data))
    res = call(arg)
    assert res.status is Status.OPTIMAL_INACCURATE
    caught = _inaccurate(recorded)
    assert len(caught) == 1 and caught[0].filename == __file__
    assert "optimal_inaccurate: patched" in str(caught[0].message)


def test_certified_answers_do_not_warn(recorded: list[warnings.WarningMessage]) -> None:
    data = sg.random_data(3, 4, 5, seed=0)
    assert sg.att_svm(data).success
    assert sg.att_svm(data, norm="nuc").success
    assert sg.feasibility(data).feasible
    assert sg.att_svm(_hull_data(), np.array([0])).status is Status.INFEASIBLE
    assert not _inaccurate(recorded)


def test_locally_optimal_is_not_inaccurate_and_does_not_warn(
    recorded: list[warnings.WarningMessage],
) -> None:
    # a rank-1 bound on a problem whose convex optimum has rank > 1: a local answer
    data = sg.random_data(5, 4, 8, seed=1)
    res = sg.att_svm(data, norm="nuc", rank=1, seed=0)
    assert res.status in (Status.LOCALLY_OPTIMAL, Status.OPTIMAL), res.message
    assert not res.status.is_inaccurate
    assert not _inaccurate(recorded)


def test_support_tokens_warns_once_not_twice(
    inaccurate_fro: None, recorded: list[warnings.WarningMessage]
) -> None:
    data = sg.random_data(3, 4, 5, seed=0)
    sup = sg.support_tokens(data, sg.optimal_tokens(data))
    assert sup.svm.status is Status.OPTIMAL_INACCURATE
    caught = _inaccurate(recorded)
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert caught[0].filename == __file__
    assert "support tokens" in str(caught[0].message)


def test_an_experiment_trial_is_warned_like_a_user_script(
    inaccurate_fro: None, recorded: list[warnings.WarningMessage]
) -> None:
    """A paper experiment uses a solver's W as a user's script does and reports nothing of its
    own, so an inaccurate solve inside a trial warns at the trial's line (it was silent: the
    caller is in svmgeo); an analysis wrapper still reports once, in its own terms."""
    from svmgeo.experiments import variants

    data = sg.random_data(6, 8, 10, seed=0)
    variants.svm_solutions(data, np.eye(data.d))
    caught = _inaccurate(recorded)
    assert caught and {w.filename for w in caught} == {variants.__file__}
    assert all("att_svm returned optimal_inaccurate: patched" in str(w.message) for w in caught)
