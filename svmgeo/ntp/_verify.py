# SPDX-License-Identifier: BSD-3-Clause
r"""Next-token verification: a trained W against :math:`W^{\mathrm{fin}} + R\,W^{\mathrm{svm}}`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import ProblemError
from .._linalg import correlation
from .._summary import summarized
from .._validation import check_option
from ..constraints import EQUALITY, MARGIN
from ..gd import NTP_LOSSES, GDRun
from ..solvers import Status, SVMResult, report_inaccurate
from ._data import NextTokenData, check_data, check_weights
from ._finite import BOUNDARY, FiniteComponent, finite_component, top_positions
from ._graphs import token_priority_graphs
from ._risk import _risk, forward
from ._svm import constraint_rows, graph_svm, ntp_message
from ._train import run_next_token

__all__ = ["NTPReport", "NTPVerification", "verify_ntp", "verify_ntp_training"]


@summarized
@dataclass(frozen=True, eq=False)
class NTPVerification:
    r"""How a trained W compares with :math:`W^{\mathrm{fin}} + R\,W^{\mathrm{svm}}`.

    Attributes
    ----------
    corr_svm : float
        :math:`\langle W, W^{\mathrm{svm}}\rangle / (\|W\|\|W^{\mathrm{svm}}\|)`; NaN when
        :math:`W^{\mathrm{svm}} = 0` (the graphs have no edge between different SCCs, so no
        direction is predicted; then ``R = 0``), and 0 when :math:`W = 0` (no direction:
        :func:`svmgeo.correlation`'s convention, e.g. step 0 of a run from zero).
    fin_error : float
        :math:`\|P_{\mathrm{fin}}W - W^{\mathrm{fin}}\|_F / \max(1, \|W^{\mathrm{fin}}\|_F)`.
    composition_error : float
        Largest total-variation distance between each sequence's attention under W and the
        predicted one (softmax of :math:`W^{\mathrm{fin}}` on its top tokens, 0 elsewhere).
    top_mass : float
        Smallest attention mass a sequence puts on its top-priority tokens under W.
    R : float
        Least-squares :math:`R \ge 0` in :math:`W \approx W^{\mathrm{fin}} + R W^{\mathrm{svm}}`.
    """

    corr_svm: float
    fin_error: float
    composition_error: float
    top_mass: float
    R: float

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


def verify_ntp(
    data: NextTokenData,
    W: Any,
    *,
    svm: SVMResult | None = None,
    fin: FiniteComponent | None = None,
    loss: str | None = None,
) -> NTPVerification:
    r"""Compare a trained W with the prediction :math:`W^{\mathrm{fin}} + R\,W^{\mathrm{svm}}`.

    .. math::

        \mathrm{corr}(W, W^{\mathrm{svm}}),\qquad
        \frac{\|P_{S_{\mathrm{fin}}} W - W^{\mathrm{fin}}\|_F}{\max(1, \|W^{\mathrm{fin}}\|_F)},
        \qquad \max_i \mathrm{TV}\big(s_i(W), s_i^{\mathrm{top}}(W^{\mathrm{fin}})\big).

    Parameters
    ----------
    data : NextTokenData
    W : array of shape (d, d)
    svm : SVMResult, optional
        The Frobenius Graph-SVM :math:`W^{\mathrm{svm}}` of ``data``, e.g.
        ``graph_svm(data)`` (computed that way when omitted). Checked: its constraint rows
        are those of :func:`graph_svm_constraints` of ``data``, and it is Frobenius, with no
        rank bound, globally optimal (not ``locally_optimal``); other options of
        :func:`graph_svm` (``tol``, ``method``, ...) are not checked.
    fin : FiniteComponent, optional
        :func:`finite_component` of ``data`` (computed when omitted; checked: its shape, its
        top-priority positions and its loss must be those of ``data``).
    loss : {"ce", "retrieval"}, optional
        The loss of ``fin``: ``fin.loss_name`` when ``fin`` is given (another one is refused),
        else ``"ce"``.

    Returns
    -------
    NTPVerification

    Raises
    ------
    ProblemError
        Invalid arguments, ``svm`` or ``fin`` of other data (or ``fin`` of another loss), an
        ``svm`` of another norm or a rank bound, or a Graph-SVM without a solution.

    Warns
    -----
    InaccurateSolutionWarning
        When the Graph-SVM computed here is not certified (``optimal_inaccurate``):
        ``corr_svm`` and ``R`` are then measured against an uncertified :math:`W^{\mathrm{svm}}`.
    """
    where = "verify_ntp"
    data = check_data(data, where)
    W = check_weights(W, data, where)
    if loss is not None or fin is None:
        loss = check_option("ce" if loss is None else loss, "loss", NTP_LOSSES, where=where)
    graphs = token_priority_graphs(data)
    if svm is not None:
        rows = constraint_rows(data, graphs)
        if not (isinstance(svm, SVMResult) and _same_rows(svm, rows)):
            raise ProblemError(
                f"The 'svm' parameter of verify_ntp must be the SVMResult of graph_svm(data); "
                f"got {type(svm).__name__}"
                + (
                    " with other constraint rows (an SVM of other data?)"
                    if isinstance(svm, SVMResult)
                    else ""
                )
                + ". Omit it to compute it here."
            )
        check_frobenius(svm)
    if fin is not None:
        check_finite_component(fin, data, top_positions(data, graphs), loss)
    computed = svm is None
    svm = graph_svm(data) if svm is None else svm
    Ws = solution(svm, where, data)  # refused before any warning that it is measured against
    if computed and svm.status.is_inaccurate:  # (one passed in was warned about by graph_svm)
        report_inaccurate(
            f"verify_ntp: W_svm = graph_svm(data) is {svm.status.value}, not certified; "
            f"corr_svm and R are measured against it ({svm.message})",
            2,
        )
    fin = finite_component(data, loss=loss or "ce") if fin is None else fin
    return _compare(data, W, Ws, fin)


def _same_rows(svm: SVMResult, rows: Any) -> bool:
    """Whether the SVM was solved on these constraint rows."""
    cs = svm.constraints
    return cs is not None and all(
        np.shape(getattr(cs, f)) == np.shape(getattr(rows, f))
        and np.array_equal(getattr(cs, f), getattr(rows, f))
        for f in ("A", "B", "kind", "rhs")
    )


def check_frobenius(svm: SVMResult) -> None:
    """A ProblemError unless ``svm`` is the Frobenius Graph-SVM without a rank bound, solved
    to a global optimum (certified, or ``optimal_inaccurate`` as :func:`graph_svm` itself may
    return), or with no solution (told by :func:`solution`)."""
    got = []
    if svm.norm != "fro":
        p = svm.extras.get("p")
        got.append(
            f"norm=('lp', {p:g})" if svm.norm == "lp" and p is not None else f"norm={svm.norm!r}"
        )
    if svm.rank is not None:
        got.append(f"rank={svm.rank}")
    if svm.status is Status.LOCALLY_OPTIMAL:
        got.append(f"status {svm.status.value!r} (a KKT point, not a global optimum)")
    if got:
        raise ProblemError(
            "The 'svm' parameter of verify_ntp must be the Frobenius Graph-SVM W^svm of the "
            "data: Frobenius (norm='fro'), no rank bound, globally optimal (not "
            f"'locally_optimal'); got one with {', '.join(got)}. Pass graph_svm(data), or omit "
            "svm to compute it here."
        )


def check_finite_component(
    fin: Any, data: NextTokenData, keep: np.ndarray, loss: str | None
) -> None:
    """A ProblemError unless ``fin`` is the :func:`finite_component` of ``data`` (its shape,
    top-priority positions ``keep`` and loss value), of ``loss`` when given."""
    head = "The 'fin' parameter of verify_ntp must be the FiniteComponent of finite_component(data"
    fix = "Omit it to compute it here."
    if not isinstance(fin, FiniteComponent):
        raise ProblemError(f"{head}); got {type(fin).__name__}. {fix}")
    if loss is not None and fin.loss_name != loss:
        raise ProblemError(
            f"{head}, loss={loss!r}); got one of loss={fin.loss_name!r}. Pass "
            f"loss={fin.loss_name!r}, or omit fin to compute it here."
        )
    own = (
        np.shape(fin.W) == (data.d, data.d)
        and np.shape(fin.keep) == keep.shape
        and np.array_equal(fin.keep, keep)
        and math.isclose(_risk(data, fin.W, fin.loss_name, keep)[0], fin.loss, rel_tol=1e-9)
    )
    if not own:
        raise ProblemError(
            f"{head}); got one whose W, top-priority positions or loss differ from those of "
            f"these data (d = {data.d}, (n, T) = ({data.n}, {data.T})): a FiniteComponent of "
            f"other data? {fix}"
        )


def solution(svm: SVMResult, where: str, data: NextTokenData) -> np.ndarray:
    r"""The Graph-SVM's W where it is a solution (``status.has_solution``, not
    ``extras["feasible_point_only"]``), else a ProblemError naming ``where`` with the fixes
    (in next-token terms: :func:`~svmgeo.ntp._svm.ntp_message`). A feasible point put in
    place of a failed solve, or a W the solver stopped at (``MAX_ITER``), is not the
    direction :math:`W^{\mathrm{svm}}` (before session 58 its W was compared with)."""
    point_only = bool(svm.extras.get("feasible_point_only"))
    if svm.W is not None and svm.status.has_solution and not point_only:
        return svm.W
    message, edge = ntp_message(data, svm)
    if edge is not None:
        fix = edge[1]
    elif svm.status.is_infeasible:
        fix = (
            "Raise the embedding dimension d or use orthonormal embeddings "
            "(random_next_token_data(..., orthonormal=True) needs d >= V); "
            "graph_svm(data).farkas weighs the margin rows that conflict."
        )
    else:  # feasible (or undecided) rows the solver failed on: no conflict to weigh
        fix = (
            "The solver failed on these rows (its message says why; nearly dependent rows, "
            "e.g. near-duplicate embeddings, are the usual cause): separate the embeddings "
            "(random_next_token_data(..., orthonormal=True) needs d >= V)."
        )
    what = (
        " (its W is only a feasible point in place of a failed solve)"
        if point_only
        else ("" if svm.W is None else " (its W is where the solver stopped)")
    )
    raise ProblemError(
        f"{where}: the Graph-SVM has no solution ({svm.status}{what}: {message}), so there "
        f"is no direction to compare with. {fix}"
    )


def _compare(
    data: NextTokenData, W: np.ndarray, Ws: np.ndarray, fin: FiniteComponent
) -> NTPVerification:
    """:func:`verify_ntp` on checked arguments."""
    _, _, s = forward(data, W)
    _, _, s_pred = forward(data, fin.W, fin.keep)
    tv = 0.5 * np.sum(np.abs(s - s_pred), axis=1)
    size = float(np.sum(Ws * Ws))
    # W_svm = 0 (no edge between different SCCs, e.g. every token of every sample is its
    # label): the prediction is W_fin alone, with no direction to correlate with
    R = max(0.0, float(np.sum((W - fin.W) * Ws)) / size) if size > 0.0 else 0.0
    return NTPVerification(
        corr_svm=correlation(W, Ws) if size > 0.0 else math.nan,
        fin_error=float(np.linalg.norm(fin.project(W) - fin.W))
        / max(1.0, float(np.linalg.norm(fin.W))),
        composition_error=float(tv.max()),
        top_mass=float(np.min(np.sum(np.where(fin.keep, s, 0.0), axis=1))),
        R=R,
    )


@summarized
@dataclass(frozen=True, eq=False)
class NTPReport:
    r"""What :func:`verify_ntp_training` found: GD's trajectory against
    :math:`W^{\mathrm{fin}} + R\,W^{\mathrm{svm}}`.

    Curves have one entry per recorded step (``steps``); each is the matching field of
    :func:`verify_ntp` at that step's W.

    Attributes
    ----------
    loss : {"ce", "retrieval"}
    normalized : bool
    step_size : float
    steps : ndarray of int, shape (R,)
    train_loss : ndarray of shape (R,)
        :math:`L(W_t)`.
    corr_svm, fin_error, composition_error, top_mass, R : ndarray of shape (R,)
        As in :class:`NTPVerification`.
    acyclic : bool
        Every token-priority graph is acyclic (no equality rows: pure retrieval predicted).
    n_margin_rows, n_equality_rows : int
        Rows of the Graph-SVM.
    fin_success : bool
        Whether :func:`finite_component`'s BFGS reached its tolerance
        (:attr:`FiniteComponent.success`).
    fin_at_boundary : bool
        Whether it found no finite :math:`W^{\mathrm{fin}}`: a top-priority token's attention
        below 1e-6 at its last point (:attr:`FiniteComponent.at_boundary`, svmgeo's
        heuristic, not a proof). ``fin_error`` is measured against that last point either way.
    fin_message : str
    W, W_svm, W_fin : ndarray of shape (d, d)
        GD's final W, :math:`W^{\mathrm{svm}}` (Frobenius) and :math:`W^{\mathrm{fin}}`.
    svm, fin, run : objects
        The Graph-SVM solve, the finite component and the GD run (a :class:`~svmgeo.GDRun`)
        behind the report. When ``svm.status`` is not ``optimal`` (``optimal_inaccurate``:
        svmgeo's certificate did not pass) the printed report says so in a ``W_svm`` line:
        ``corr_svm`` and ``R`` are then measured against an uncertified
        :math:`W^{\mathrm{svm}}`.
    """

    loss: str
    normalized: bool
    step_size: float
    steps: np.ndarray
    train_loss: np.ndarray
    corr_svm: np.ndarray
    fin_error: np.ndarray
    composition_error: np.ndarray
    top_mass: np.ndarray
    R: np.ndarray
    acyclic: bool
    n_margin_rows: int
    n_equality_rows: int
    fin_success: bool
    fin_at_boundary: bool
    fin_message: str
    W: np.ndarray
    W_svm: np.ndarray
    W_fin: np.ndarray
    svm: SVMResult = field(repr=False)
    fin: FiniteComponent = field(repr=False)
    run: GDRun = field(repr=False)

    @property
    def final(self) -> NTPVerification:
        """:func:`verify_ntp` of the final W."""
        return NTPVerification(
            corr_svm=float(self.corr_svm[-1]),
            fin_error=float(self.fin_error[-1]),
            composition_error=float(self.composition_error[-1]),
            top_mass=float(self.top_mass[-1]),
            R=float(self.R[-1]),
        )

    def _fin_verdict(self) -> str:
        if self.fin_at_boundary:
            return (
                "no finite minimizer found (heuristic: a top-priority token's attention is "
                f"below {BOUNDARY:g} at BFGS's last point)"
            )
        return "finite" if self.fin_success else "finite (BFGS did not reach its tolerance)"

    def _svm_line(self) -> list[str]:
        """One line when W_svm is not certified (status other than optimal), else none."""
        if self.svm.status is Status.OPTIMAL:
            return []
        return [
            f"  W_svm            {self.svm.status}: not certified; corr(W,Wsvm) and R below "
            f"are measured against this uncertified W_svm ({self.svm.message})"
        ]

    def summary(self) -> str:
        """The report as printed (``print(report)``), the SVM's status line included."""
        return str(self)

    def __str__(self) -> str:
        kind = "normalized" if self.normalized else "plain"
        graphs = "acyclic (pure retrieval)" if self.acyclic else "cyclic (soft composition)"
        lines = [
            f"svmgeo NTP verify report ({self.loss} loss)",
            f"  GD               {kind}, step {self.step_size:g}, {int(self.steps[-1])} steps",
            f"  run              {self.run.status}: {self.run.message}",
            f"  graphs           {graphs}; Graph-SVM rows: {self.n_margin_rows} margin, "
            f"{self.n_equality_rows} equality",
            *self._svm_line(),
            f"  W_fin            {self._fin_verdict()}: {self.fin_message}",
            "",
            f"  {'step':>8} {'loss':>10} {'corr(W,Wsvm)':>12} {'fin err':>9} {'comp err':>9} "
            f"{'top mass':>9} {'R':>9}",
        ]
        for j in sorted({int(j) for j in np.linspace(0, len(self.steps) - 1, 6).round()}):
            lines.append(
                f"  {int(self.steps[j]):>8} {self.train_loss[j]:>10.3e} {self.corr_svm[j]:>12.6f} "
                f"{self.fin_error[j]:>9.2e} {self.composition_error[j]:>9.2e} "
                f"{self.top_mass[j]:>9.6f} {self.R[j]:>9.4g}"
            )
        return "\n".join(lines)


def verify_ntp_training(
    data: NextTokenData,
    *,
    loss: str = "ce",
    step_size: float = 0.1,
    normalized: bool = True,
    n_steps: int = 2000,
    record_every: int | None = None,
) -> NTPReport:
    r"""Train W by GD from zero and compare every recorded iterate with the prediction.

    .. math::

        W_t \approx W^{\mathrm{fin}} + R_t\,W^{\mathrm{svm}}:\qquad
        \mathrm{corr}(W_t, W^{\mathrm{svm}}) \to 1,\qquad
        P_{S_{\mathrm{fin}}} W_t \to W^{\mathrm{fin}}

    (:func:`train_ntp`, then :func:`verify_ntp` at each record, with one
    :func:`graph_svm` and one :func:`finite_component` solve). For ``loss="retrieval"`` the
    convergence is the result of [1]_ as its abstract states it, for plain GD on its log-loss,
    which svmgeo reads as this loss with orthonormal embeddings (:math:`d \ge V`); the
    paper's hypotheses are not stated here and not checked, so it is treated as a conjecture,
    measured (``docs/beyond.md``). With the default ``normalized=True`` (a fixed normalized
    step) the error in :math:`S_{\mathrm{fin}}` does not vanish: it stays :math:`O(\eta)`
    (fin error 0.42η-0.51η over the 10 cyclic seeds of ``docs/beyond.md``, flat from step
    3000 to 24000; measured by ``examples/ntp_normalized_fin_error.py``, whose third digit
    depends on rounding); use
    ``normalized=False`` for :math:`W^{\mathrm{fin}}`. For ``loss="ce"`` (the issue's
    statement, not the paper's loss) it is a conjecture, measured here:
    :math:`W^{\mathrm{fin}}` has no finite minimizer on most cyclic data.

    Parameters
    ----------
    data : NextTokenData
    loss, step_size, normalized, n_steps, record_every
        As in :func:`train_ntp` (``n_steps`` defaults to 2000 here).

    Returns
    -------
    NTPReport

    Raises
    ------
    ProblemError
        Invalid options, or a Graph-SVM without a solution (found before training).

    References
    ----------
    .. [1] Y. Li, Y. Huang, M. E. Ildiz, A. S. Rawat, S. Oymak, "Mechanics of Next Token
       Prediction with Self-Attention", AISTATS 2024, arXiv:2403.08081.

    Examples
    --------
    >>> import svmgeo as sg
    >>> data = sg.random_next_token_data(30, 4, 5, 8, tier_size=2, seed=0)
    >>> rep = sg.ntp.verify_ntp_training(data, loss="retrieval", n_steps=200)
    >>> rep.final.corr_svm > 0.9
    True
    """
    where = "verify_ntp_training"
    data = check_data(data, where)
    check_option(loss, "loss", NTP_LOSSES, where=where)
    svm = graph_svm(data)
    Ws = solution(svm, where, data)  # before training: an infeasible Graph-SVM fails fast
    run = run_next_token(
        data, loss=loss, step_size=step_size, normalized=normalized, n_steps=n_steps,
        record_every=record_every, caller=where,
    )  # fmt: skip
    fin = finite_component(data, loss=loss)
    h = run.history
    assert run.W is not None and h.W is not None and h.loss is not None  # train_ntp records them
    checks = [_compare(data, W, Ws, fin) for W in h.W]
    kind = svm.constraints.kind

    def curve(name: str) -> np.ndarray:
        return np.array([getattr(c, name) for c in checks], dtype=float)

    return NTPReport(
        loss=loss,
        normalized=bool(normalized),
        step_size=float(step_size),
        steps=h.step,
        train_loss=h.loss,
        corr_svm=curve("corr_svm"),
        fin_error=curve("fin_error"),
        composition_error=curve("composition_error"),
        top_mass=curve("top_mass"),
        R=curve("R"),
        acyclic=not np.any(kind == EQUALITY),
        n_margin_rows=int(np.count_nonzero(kind == MARGIN)),
        n_equality_rows=int(np.count_nonzero(kind == EQUALITY)),
        fin_success=fin.success,
        fin_at_boundary=fin.at_boundary,
        fin_message=fin.message,
        W=run.W,
        W_svm=Ws,
        W_fin=fin.W,
        svm=svm,
        fin=fin,
        run=run,
    )
