# SPDX-License-Identifier: BSD-3-Clause
"""Regressions of session 58 (solve_svm's leftovers of session 57): the objective of a failed
solve whose W meets a row far short of its bound, the message of a W taken away, the
Cauchy-Schwarz exponent, and the fallback's verdict on its point computed once."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
import svmgeo.solvers._api as api
from svmgeo.constraints import ConstraintSet, rows_without_tokens
from svmgeo.testing import exact_margins

from .test_audit57_f import _quiet

Status = sg.Status
_NORMS = ["fro", "nuc", ("lp", 1.5)]


def _far_row() -> ConstraintSet:
    r"""Rows :math:`a_0 = b_0 = (1, 0)`, bound 1, and :math:`a_1 = (10^{-300}, 0)`,
    :math:`b_1 = (10^{-10}, 0)`, bound :math:`10^{-300}`: both read :math:`W_{00} \ge` a
    constant, the second :math:`W_{00} \ge 1/\mathrm{fl}(10^{-10}) \approx 10^{10}`; in each
    norm here the optimum is :math:`W = W_{00} e_0 e_0^\top` of that value."""
    return rows_without_tokens(
        np.array([[1.0, 0.0], [1e-300, 0.0]]),
        np.array([[1.0, 0.0], [1e-10, 0.0]]),
        np.zeros(2, np.int8),
        np.array([1.0, 1e-300]),
    )


@pytest.mark.parametrize("norm", _NORMS)
def test_a_failed_w_far_short_of_a_row_reports_a_proved_bound(norm: object) -> None:
    """Item 1: the solve leaves row 1 at margin 1e-310 against its bound 1e-300 (positive, so
    no multiple is ruled out, and above 2^-52 of the bound) and returned OPTIMAL_INACCURATE
    with objective 1 while the optimum is 1e10. A failed W meeting a row by less than half
    its bound is no approximate optimum: the result is the proved bound, a W whose exact
    margins meet every row, its objective no less than the exact optimum."""
    cs = _far_row()
    res = _quiet(sg.solve_svm, cs, norm=norm)
    optimum = 1 / Fraction(1e-10)  # the exact optimum of W_00 (rows 0 and 1 above)
    assert res.status.has_solution, (res.status, res.message)
    W = np.asarray(res.W)
    margins = exact_margins(cs, W)
    assert all(m >= Fraction(float(c)) for m, c in zip(margins, cs.rhs, strict=True))
    value = {"fro": np.linalg.norm(W), "nuc": np.linalg.norm(W, "nuc")}.get(
        str(norm), float(np.sum(np.abs(W) ** 1.5) ** (1 / 1.5))
    )
    np.testing.assert_allclose(res.objective, value, rtol=1e-12)
    assert res.objective >= float(optimum) * (1 - 1e-15), (res.objective, res.message)
    # and it is the least multiple found (exact_multiple's 1 + 2^-40 of margin), not far above
    np.testing.assert_allclose(res.objective, float(optimum), rtol=1e-9)
    assert res.extras.get("feasible_point_only") is True
    assert "upper bound" in res.message


def _overflow_data() -> sg.TokenData:
    """Session 57's case: x_0 - x_1 = (1e-308, 0, 0) against z (norm 0.504), so every feasible
    W has ||W||_2 >= 1 / (1e-308 ||z||) = 2^1024.14... (Cauchy-Schwarz)."""
    X = np.array(
        [
            [
                [0.0, -2.5556650313141818, 0.41809884672577885],
                [-1e-308, -2.5556650313141818, 0.41809884672577885],
                [-2.019986129147251, -0.23193237764418947, -0.8652130762749417],
            ]
        ]
    )
    z = np.array([0.22578661322792176, -0.3526307943415954, -0.2812874181513504])
    return sg.TokenData(X, Z=z[None, :], scores=np.array([[3.0, 2.0, 1.0]]))


@pytest.mark.parametrize("norm", _NORMS)
def test_a_w_taken_away_leaves_no_nan_residuals_and_a_true_exponent(norm: object) -> None:
    """Items 2 and 3: the fallback's point (norm beyond float64) was certified before being
    taken away, and the message carried "stationarity nan"; the Cauchy-Schwarz note printed
    2^1024 (a .0f format) for 2^1024.14. Now the message says what was established, with no
    NaN residuals and no certificate of a W that is not returned, and the exponent as it is
    (rounded down to two decimals), derived here in exact arithmetic."""
    data = _overflow_data()
    res = _quiet(sg.att_svm, data, [0], norm=norm)
    assert res.status is Status.NUMERICAL_ERROR and res.W is None, (res.status, res.message)
    assert "nan" not in res.message and res.certificate is None, res.message
    assert "no W with a norm in float64 was proved to meet the rows" in res.message
    X, z = data.X[0], data.Z[0]
    gap = [Fraction(float(p)) - Fraction(float(q)) for p, q in zip(X[0], X[1], strict=True)]
    norm_sq = sum(g * g for g in gap) * sum(Fraction(float(v)) ** 2 for v in z)
    # log2(1 / (||a|| ||b||)) = -log2(||a||^2 ||b||^2) / 2, from the exact integers
    need = (math.log2(norm_sq.denominator) - math.log2(norm_sq.numerator)) / 2
    assert 1024.1 < need < 1024.2, need  # away from a rounding boundary of two decimals
    assert f"2^{math.floor(100 * need) / 100:.2f} (Cauchy-Schwarz)" in res.message, res.message


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bytes]]:
    """Record each call of ``exact_multiple`` and ``_unmet_rows`` in ``solvers._api`` by the W
    it was given; a W that ``exact_multiple`` returned counts as given to it too (its
    verdict on that W is known: it meets every row)."""
    calls: list[tuple[str, bytes]] = []
    exact, unmet = api.exact_multiple, api._unmet_rows

    def counted_exact(cs: ConstraintSet, W: np.ndarray) -> np.ndarray | None:
        calls.append(("exact_multiple", np.asarray(W, dtype=float).tobytes()))
        M = exact(cs, W)
        if M is not None and not np.array_equal(M, W):
            calls.append(("exact_multiple", np.asarray(M).tobytes()))
        return M

    def counted_unmet(cs: ConstraintSet, W: np.ndarray, margins: np.ndarray) -> np.ndarray:
        calls.append(("_unmet_rows", np.asarray(W).tobytes()))
        return unmet(cs, W, margins)

    monkeypatch.setattr(api, "exact_multiple", counted_exact)
    monkeypatch.setattr(api, "_unmet_rows", counted_unmet)
    return calls


def _beyond_data() -> sg.TokenData:
    """Session 57's rows 1e-318 apart: the feasibility point's float rounding misses row 0
    (margin 2.6e-318 against 1) and no multiple of it is proved: taken away."""
    X = np.array(
        [
            [
                [-0.865637773, 0.0, -0.0491614146],
                [-0.865637773, -1e-318, -0.0491614146],
                [-1.71609833, -1.34218515, -0.464943525],
            ]
        ]
    )
    return sg.TokenData(X, Z=np.array([[1.0, 0.0, 1.0]]), scores=np.array([[3.0, 2.0, 1.0]]))


def _collinear_data() -> sg.TokenData:
    """Session 57's collinear tokens: the proved multiple's float margins cancel (-2.92)."""
    import svmgeo.testing

    return svmgeo.testing.build_case("cross", "collinear", n=1, T=3, d=3, K=1, seed=0).data


@pytest.mark.parametrize(
    ("case", "alpha", "status"),
    [
        (_beyond_data, [0], Status.NUMERICAL_ERROR),
        (_collinear_data, [2], Status.OPTIMAL_INACCURATE),
    ],
)
def test_the_fallback_judges_its_point_once(
    monkeypatch: pytest.MonkeyPatch, case, alpha: list[int], status: Status
) -> None:
    """Item 4: on a point with no proved multiple, the fallback ran ``exact_multiple`` and
    ``_unmet_rows`` on it and ``_unmet_claim`` ran both again on the same W; on a proved
    multiple whose float margins cancel, ``_unmet_claim`` ran ``exact_multiple`` again on
    the multiple it had returned. Each verdict on a W is now reached once."""
    data = case()
    calls = _counted(monkeypatch)
    res = _quiet(sg.att_svm, data, alpha)
    assert res.status is status, (res.status, res.message)
    repeated = [name for name, count in _tally(calls).items() if count > 1]
    assert not repeated, repeated


def _tally(calls: list[tuple[str, bytes]]) -> dict[tuple[str, bytes], int]:
    tally: dict[tuple[str, bytes], int] = {}
    for call in calls:
        tally[call] = tally.get(call, 0) + 1
    return tally


# Session 58's review (S2): a W short of a row by more than half, with no proved bound to put
# in its place, and the callers of a feasible point put in place of a failed solve.


def _equality_rows() -> ConstraintSet:
    """The review's selected-set rows: four margin rows and two equality rows of random
    tokens (seed 3), feasible; an exact check never proves a float W meets the equalities."""
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    kind = np.array([0, 0, 0, 0, 1, 1], np.int8)
    return rows_without_tokens(A, B, kind, np.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.0]))


def _stopping_solver(monkeypatch: pytest.MonkeyPatch, scale: float | None) -> list[np.ndarray]:
    """Make the Frobenius solve (no fallback) stop at MAX_ITER with ``scale`` times its W (no
    W for None); returns the Ws it handed back."""
    import dataclasses

    from svmgeo.solvers import _norms
    from svmgeo.solvers._result import replaced

    entry, handed = _norms.NORMS["fro"], []

    def stop(req, geo, feas):  # type: ignore[no-untyped-def]
        res = entry.solve(req, geo, feas)
        W = None if scale is None or res.W is None else np.asarray(res.W) * scale
        handed.append(W)
        return replaced(
            res, status=Status.MAX_ITER, W=W, objective=None, margins=None, message="stopped"
        )

    monkeypatch.setitem(_norms.NORMS, "fro", dataclasses.replace(entry, solve=stop, fallback=None))
    return handed


def test_a_w_short_of_a_row_keeps_its_status_where_no_bound_is_proved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A MAX_ITER W of 0.4 times the optimum (every margin row at 0.4 of its bound) on rows
    with equalities, where no multiple of the feasibility point is proved: the previous
    commit put that point in its place as OPTIMAL_INACCURATE (a solution status, objective
    1.07, the optimum 0.53, no bound proved), so gen_svm took it for its direction. Only a
    proved bound replaces such a W; here the solver's result stands, as before session 58."""
    from svmgeo.solvers._exact import exact_multiple

    cs = _equality_rows()
    feas = sg.check_feasibility(cs)
    assert feas.feasible and exact_multiple(cs, np.asarray(feas.point)) is None
    handed = _stopping_solver(monkeypatch, 0.4)
    res = _quiet(sg.solve_svm, cs, method="fast")
    (W,) = handed
    assert W is not None and np.min(cs.apply(W)[:4]) < 0.5  # short by more than half
    assert res.status is Status.MAX_ITER and not res.status.has_solution, res.message
    assert "feasible_point_only" not in res.extras
    np.testing.assert_array_equal(res.W, W)


def test_gen_svm_refuses_a_feasible_point_for_its_direction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A directional solve that failed (no W) on feasible rows returns the feasibility point
    (OPTIMAL_INACCURATE, ``feasible_point_only``); gen_svm checked ``has_solution`` only and
    returned that point as W_dir, which is no minimum-norm direction. Now a SolverError, as
    support_from_result gives."""
    data = sg.TokenData(
        np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]]), Z=np.array([[1.0, 0.0]])
    )
    _stopping_solver(monkeypatch, None)
    directional = _quiet(sg.solve_svm, sg.selected_set_constraints(data, [[True, True, False]]))
    assert directional.extras.get("feasible_point_only") is True, directional.message
    with pytest.raises(sg.SolverError, match="only a feasible point"):
        _quiet(sg.gen_svm, data, [[True, True, False]])


def test_verify_ntp_refuses_a_feasible_point_for_w_svm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for the Graph-SVM: verify_ntp compared GD's W with a feasible point put in
    place of a failed solve as if it were W_svm."""
    data = sg.random_next_token_data(12, 4, 5, 6, tier_size=2, seed=3)
    _stopping_solver(monkeypatch, None)
    svm = _quiet(sg.graph_svm, data)
    assert svm.extras.get("feasible_point_only") is True, svm.message
    with pytest.raises(sg.ProblemError, match="only a feasible point"):
        sg.ntp.verify_ntp(data, np.eye(data.d), svm=svm)


def test_the_cauchy_schwarz_exponent_never_overstates() -> None:
    """``floor(100 x) / 100`` in floats printed 2^1024.01 for a row whose need
    :math:`c / (\\|a\\|\\,\\|b\\|) = c\\,2^{1022}`, c = 4.0278222002268750, is below
    :math:`2^{1024.01}` (the float logarithm and 100 x round up). The printed exponent h/100
    is checked here in integers: :math:`2^{2h} \\le (c^2 / (\\|a\\|^2 \\|b\\|^2))^{100}`, and
    the next hundredth is not (rounded down, by less than 0.01)."""
    c, s = 4.0278222002268750, 2.0**-511
    cs = rows_without_tokens(
        np.array([[s, 0.0]]), np.array([[s, 0.0]]), np.zeros(1, np.int8), np.array([c])
    )
    note = api._beyond_note(cs)
    printed = note.split(">= 2^")[1].split(" ")[0]
    h = int(printed.replace(".", ""))
    assert len(printed.split(".")[1]) == 2, note
    need_200 = (Fraction(c) ** 2 / Fraction(s) ** 4) ** 100  # (c / (||a|| ||b||))^200
    assert Fraction(2) ** (2 * h) <= need_200, note
    assert Fraction(2) ** (2 * (h + 1)) > need_200, note


# Session 58's second review (S3): a max_iter Graph-SVM, the warning before a refusal, the
# Cauchy-Schwarz note decided by its exact exponent, and gen_svm's hint.


def test_verify_ntp_refuses_a_graph_svm_stopped_at_max_iter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Graph-SVM solve stopped at MAX_ITER with 0.9 times its W (every margin row above half
    its bound, so the W stays as the solver returned it): before session 58 verify_ntp
    compared GD's W with it as W_svm (corr_svm 0.104), and verify_ntp_training trained
    against it. Both now refuse it before any measuring (or training)."""
    data = sg.random_next_token_data(12, 4, 5, 6, tier_size=2, seed=3)
    handed = _stopping_solver(monkeypatch, 0.9)
    svm = _quiet(sg.graph_svm, data)
    assert svm.status is Status.MAX_ITER and svm.W is not None, (svm.status, svm.message)
    np.testing.assert_array_equal(svm.W, handed[-1])
    for call in (
        lambda: sg.ntp.verify_ntp(data, np.eye(data.d), svm=svm),
        lambda: sg.ntp.verify_ntp(data, np.eye(data.d)),
        lambda: sg.ntp.verify_ntp_training(data, n_steps=5),
    ):
        with pytest.raises(sg.ProblemError, match="its W is where the solver stopped"):
            _quiet(call)


def test_verify_ntp_does_not_warn_before_refusing(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``svm`` omitted and a Graph-SVM that is only a feasible point in place of a failed
    solve (OPTIMAL_INACCURATE), verify_ntp warned "corr_svm and R are measured against it"
    and then refused it: now the refusal alone."""
    import warnings

    data = sg.random_next_token_data(12, 4, 5, 6, tier_size=2, seed=3)
    _stopping_solver(monkeypatch, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(sg.ProblemError, match="its W is only a feasible point"):
            sg.ntp.verify_ntp(data, np.eye(data.d))
    measured = [str(w.message) for w in caught if "measured against it" in str(w.message)]
    assert not measured, measured


def test_the_cauchy_schwarz_note_is_decided_by_its_exact_exponent() -> None:
    """The note decided "beyond 2^1024" with the float logarithm and printed the exact
    exponent: c the largest float64 (below 2^1024) and a = b = (1, 0) read log2 1024.0 and
    printed ">= 2^1023.99 ... beyond float64's range". Now no note there; c = 2^1023 with
    a = (1/2, 0), b = (1, 0) needs exactly 2^1024, which is beyond, printed 2^1024.00."""
    one = np.array([[1.0, 0.0]])

    def note(a: list[float], c: float) -> str:
        return api._beyond_note(rows_without_tokens(np.array([a]), one, np.zeros(1, np.int8), [c]))

    largest = float(np.nextafter(np.inf, 0.0))
    assert Fraction(largest) < 2**1024
    assert note([1.0, 0.0], largest) == ""
    assert ">= 2^1024.00 (Cauchy-Schwarz)" in note([0.5, 0.0], 2.0**1023)


def test_gen_svm_hints_at_a_fix_that_works() -> None:
    """gen_svm's SolverError on session 57's collinear tokens (only a feasible point) advised
    "Try method='cvxpy' or another solver=", which returns the same point there. It now
    advises perturbing the data, which is checked to work here: tokens moved by 1e-8 give
    an optimal Gen-SVM direction."""
    data = _collinear_data()
    selected = np.array([[False, False, True]])
    probs = np.array([[1e-9, 1e-9, 1.0 - 2e-9]])
    with pytest.raises(sg.SolverError, match="only a feasible point") as err:
        _quiet(sg.gen_svm, data, selected, probs=probs)
    assert "method='cvxpy'" not in str(err.value) and "perturb the data" in str(err.value)
    moved = np.random.default_rng(0).normal(size=data.X.shape)
    perturbed = sg.TokenData(data.X + 1e-8 * moved, Z=data.Z, scores=data.scores)
    gen = _quiet(sg.gen_svm, perturbed, selected, probs=probs)
    assert gen.svm.status is Status.OPTIMAL, (gen.svm.status, gen.svm.message)
