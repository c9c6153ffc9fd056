# SPDX-License-Identifier: BSD-3-Clause
"""Result objects returned by the SVM solvers and the feasibility check."""

from __future__ import annotations

import functools
import math
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, ParamSpec, Protocol, TypeVar

import numpy as np

from .._errors import InaccurateSolutionWarning
from .._summary import summarized
from ..constraints import ConstraintSet
from ._status import Status

__all__ = [
    "CONJECTURE",
    "EVERY_ROW_TIGHT",
    "POLISHED",
    "Certificate",
    "FeasibilityResult",
    "GenSVMResult",
    "JointSVMResult",
    "SVMResult",
    "better_answer",
    "downgrade",
    "finish",
    "finish_gen_svm",
    "finish_joint",
    "no_solution",
    "replaced",
    "report_inaccurate",
    "warns_if_inaccurate",
]


class _Judged(Protocol):
    """A result with a status and a message (what :func:`warns_if_inaccurate` reads)."""

    @property
    def status(self) -> Status: ...

    @property
    def message(self) -> str: ...


_P = ParamSpec("_P")
_R = TypeVar("_R", bound=_Judged)


@summarized
@dataclass(frozen=True)
class Certificate:
    r"""Optimality residuals recomputed by svmgeo from the problem data (SPEC §6).

    All entries are nonnegative; a residual that does not apply to a norm is 0. NaN: not
    computed, with a failure naming why (a W without multipliers, e.g. multipliers beyond
    float64, has its primal infeasibility only: :func:`~._certificates.primal_certificate`);
    such a certificate never passes and its ``worst`` is NaN.

    Attributes
    ----------
    primal_infeasibility : float
        :math:`\max_j (c_j - a_j^\top W b_j)_+` over margin rows and
        :math:`\max_j |a_j^\top W b_j - c_j|` over equality rows, each divided by
        :math:`|c_j|` when :math:`0 < |c_j| < 1` (a fraction of a small bound).
    dual_infeasibility : float
        Frobenius: :math:`\max_j (-\lambda_j)_+ / \max_j |\lambda_j|` over margin rows.
        Nuclear: :math:`(\|\sum_j \lambda_j a_j b_j^\top\|_2 - 1)_+` plus that sign violation.
    stationarity : float
        Frobenius: :math:`\|W - \Lambda\|_F / \max(\|W\|_F, \|\Lambda\|_F)` with
        :math:`\Lambda = \sum_j \lambda_j a_j b_j^\top`. Nuclear:
        :math:`|\langle \Lambda, W\rangle - \|W\|_*| / \|W\|_*` (Λ is a subgradient).
    complementarity : float
        :math:`\max_j |\lambda_j (a_j^\top W b_j - c_j)|` over margin rows, relative to
        :math:`\max_j |\lambda_j|` (Frobenius) or :math:`\|W\|` (the other norms).
    duality_gap : float
        Relative gap between the primal objective and the dual objective.
    tol : float
        The tolerance the residuals were judged against.
    failures : tuple of str
        One message per residual above ``tol``; empty when the certificate holds.
    """

    primal_infeasibility: float
    dual_infeasibility: float
    stationarity: float
    complementarity: float
    duality_gap: float
    tol: float
    failures: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def worst(self) -> float:
        """The largest residual (NaN when one is NaN: Python's ``max`` would skip it)."""
        residuals = (
            self.primal_infeasibility,
            self.dual_infeasibility,
            self.stationarity,
            self.complementarity,
            self.duality_gap,
        )
        return math.nan if any(math.isnan(r) for r in residuals) else max(residuals)

    def _line(self) -> str:
        verdict = "passed" if self.passed else f"FAILED ({'; '.join(self.failures)})"
        return f"{verdict}, worst residual {self.worst:.1e} (tol {self.tol:.0e})"

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


def _shape(x: np.ndarray | None) -> str:
    return "None" if x is None else str(tuple(np.shape(x)))


def _proof_text(proof: str | None) -> str:
    """How a verdict was checked (``proof``), in a summary's words."""
    return {"exact": "proved exactly", "float": "checked in floats"}.get(str(proof), "not proved")


def _value(x: float | None) -> str:
    return "None" if x is None else f"{x:.6g}"


@dataclass(frozen=True, repr=False, eq=False)
class SVMResult:
    r"""Solution of an attention SVM over a :class:`~svmgeo.ConstraintSet`.

    Attributes
    ----------
    W : ndarray of shape (d, d) or None
        The solution (None when there is none, e.g. infeasible).
    status : Status
    message : str
        Human-readable account of the status, including any downgrade.
    objective : float or None
        :math:`\|W\|_F` for ``norm="fro"``, :math:`\|W\|_*` for ``norm="nuc"``.
    dual : ndarray of shape (N,) or None
        Multipliers :math:`\lambda_j` of the rows (``W = Σ λ_j a_j b_jᵀ`` for Frobenius).
    margins : ndarray of shape (N,) or None
        :math:`a_j^\top W b_j`.
    constraints : ConstraintSet
    norm : {"fro", "nuc", "lp", "spectral"}
        The norm's name (``"lp"`` for ``norm=("lp", p)``, with ``extras["p"]``).
    rank : int or None
        The rank bound of a rank-constrained Att-SVM⋆, else None.
    solver : str
    n_iter : int
    solve_time : float
        Seconds, svmgeo's own work included.
    certificate : Certificate or None
    farkas : ndarray of shape (N,) or None
        Infeasibility certificate :math:`\lambda` (see :class:`FeasibilityResult`).
    K, Q : ndarray of shape (d, m) or None
        Factors :math:`W = KQ^\top` of a rank-constrained solution.
    lower_bound : float or None
        Convex lower bound on the objective (rank-constrained problems): the convex optimum
        when its solve is certified, else the weak-duality bound
        :math:`c^\top\lambda / \|\sum_j \lambda_j a_j b_j^\top\|_2` of its multipliers.
    extras : dict
        Raw native output of the backend; ``extras["feasible_point_only"]`` is True when W
        is only the verified feasibility point, an upper bound put in place of a failed
        solve (not an approximate optimum: its margins say nothing of the support); scaled
        where need be so that its *exact* margins meet every row
        (:func:`~._exact.exact_multiple`; else the message says the bound holds only as far
        as its float margins do).
    proof : {"exact", "float"} or None
        How the *feasibility verdict* behind this result was checked (as
        :attr:`FeasibilityResult.proof`); the optimality certificate is a floating-point check.
        None also on :func:`~svmgeo.solvers.solve_frobenius`'s results, which decide no
        verdict (an ``OPTIMAL`` there is the certificate alone).
    p : ndarray of shape (d,) or None
        The prompt vector of a p-SVM (``att_svm(..., param="p")``): :math:`p = W e_1`, the
        solution being :math:`W = p\,e_1^\top` (docs/companion.md). None for every other SVM.
    """

    W: np.ndarray | None
    status: Status
    message: str
    objective: float | None
    dual: np.ndarray | None
    margins: np.ndarray | None
    constraints: ConstraintSet
    norm: Literal["fro", "nuc", "lp", "spectral"]
    solver: str
    rank: int | None = None
    n_iter: int = 0
    solve_time: float = 0.0
    certificate: Certificate | None = None
    farkas: np.ndarray | None = None
    K: np.ndarray | None = None
    Q: np.ndarray | None = None
    lower_bound: float | None = None
    extras: dict[str, Any] = field(default_factory=dict, repr=False)
    proof: Literal["exact", "float"] | None = None
    p: np.ndarray | None = None

    @property
    def success(self) -> bool:
        """True when the status is :attr:`Status.OPTIMAL` (certified globally optimal).

        False for :attr:`Status.LOCALLY_OPTIMAL` (a rank-bounded KKT point above the convex
        bound), although ``status.has_solution`` is True there. See ``docs/statuses.md``.
        """
        return self.status.success

    @property
    def relative_gap(self) -> float | None:
        """(objective − lower_bound) / lower_bound for rank-constrained solves, else None."""
        if self.objective is None or self.lower_bound is None or self.lower_bound <= 0:
            return None
        return (self.objective - self.lower_bound) / self.lower_bound

    def __repr__(self) -> str:
        cert = "none" if self.certificate is None else self.certificate._line()
        rank = "" if self.rank is None else f", rank={self.rank}"
        p = "" if self.p is None else f", p={_shape(self.p)}"
        return (
            f"SVMResult(status={self.status.value}, norm={self.norm!r}{rank}, "
            f"objective={_value(self.objective)}, solver={self.solver!r},\n"
            f"          W={_shape(self.W)}{p}, rows N={self.constraints.N}, "
            f"farkas={_shape(self.farkas)}, solve_time={self.solve_time:.3g}s,\n"
            f"          certificate {cert})"
        )

    def summary(self) -> str:
        """A few lines for a human: status and message, what backs the feasibility verdict
        (``proof``), objective, the certificate's residuals."""
        q = self.extras.get("p") if self.norm == "lp" else None
        q_text = "q" if q is None else f"{q:g}"
        norm = {"fro": "||W||_F", "nuc": "||W||_*", "spectral": "||W||_2"}.get(
            self.norm, f"entrywise ||W||_{q_text}" if self.norm == "lp" else self.norm
        )
        # a vector SVM (p-SVM, head SVM) solved as W = w e1^T: ||W|| = ||w|| in each norm
        vector = "p" if self.p is not None else self.extras.get("param")
        name = {"p": "p-SVM", "v": "Head SVM"}.get(str(vector), "Att-SVM")
        if vector in ("p", "v"):
            two = f"||{vector}||_2"  # ||w e1^T|| = ||w||_2 in the three matrix norms
            norm = {"fro": two, "nuc": two, "spectral": two}.get(
                self.norm, f"||{vector}||_{q_text}"
            )
        head = self.norm if q is None else f"{self.norm}, q = {q_text}"
        lines = [
            f"{name} ({head}{'' if self.rank is None else f', rank <= {self.rank}'}) "
            f"over {self.constraints!r}",
            f"  status     {self.status.value} ({self.solver}, {self.solve_time:.3g} s, "
            f"{self.n_iter} iterations)",
            f"  message    {self.message}",
            f"  proof      feasibility verdict {_proof_text(self.proof)}",
            f"  objective  {norm} = {_value(self.objective)}",
        ]
        if self.lower_bound is not None:
            lines.append(f"  bound      convex lower bound {self.lower_bound:.6g}")
        if self.margins is not None and self.margins.size:
            lines.append(f"  margins    min {float(np.min(self.margins)):.6g}")
        if self.farkas is not None:
            lines.append(f"  farkas     {int(np.count_nonzero(self.farkas))} rows blamed")
        c = self.certificate
        if c is not None:
            lines.append(f"  certificate {c._line()}")
            lines.append(
                f"    primal {c.primal_infeasibility:.1e}  dual {c.dual_infeasibility:.1e}  "
                f"stationarity {c.stationarity:.1e}  complementarity {c.complementarity:.1e}  "
                f"gap {c.duality_gap:.1e}"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


@dataclass(frozen=True, repr=False, eq=False)
class FeasibilityResult:
    r"""Whether a constraint set admits a W, with a certificate either way.

    Feasible: ``point`` is a W with every margin row :math:`a_j^\top W b_j \ge c_j` (strictly
    positive margins) and every equality row satisfied. Infeasible: ``farkas`` is a Farkas
    vector :math:`\lambda` with :math:`\lambda_j \ge 0` on margin rows (free on equality rows),
    :math:`\sum_j \lambda_j a_j b_j^\top = 0` and :math:`\sum_j \lambda_j c_j = 1`
    (the same field name as :attr:`SVMResult.farkas`).

    Attributes
    ----------
    feasible : bool
    status : Status
    message : str
    constraints : ConstraintSet
    point : ndarray of shape (d, d) or None
        A feasible W, its margins checked in floating point (``residual``); with
        ``proof="exact"`` some positive multiple of it is proved to meet every row exactly,
        while the point itself can miss a row in exact arithmetic by a rounding error
        (docs/certificates.md). Except where the message calls the point "not itself
        proved": the verdict was proved by an exact rational point, of which ``point`` is
        the float rounding, and that rounding can miss a row by all of its bound (rows
        feasible only by a W beyond float64's range: margins (5e-324, 0) against bounds 1).
    farkas : ndarray of shape (N,) or None
        The Farkas vector of an infeasible set.
    residual : float
        Worst row residual of ``point``, or :func:`~svmgeo.solvers.farkas_residual` of ``farkas``.
    solver : str
        The method that decided.
    solve_time : float
        Wall time in seconds of the decision, before its exact proof (whose own wall time is
        ``extras["exact_seconds"]`` when the proof ran).
    extras : dict
        Native output of the LP (status, message, Phase-1 value).
    proof : {"exact", "float"} or None
        How the verdict was checked: ``"exact"`` — proved in rational arithmetic on the float
        input (the point's exact margins, or an exact Farkas vector; see
        ``docs/certificates.md``); ``"float"`` — checked in floating point only
        (``exact=False``); None — not proved (an ``*_INACCURATE`` or error status: the verdict
        is undecided).
    """

    feasible: bool
    status: Status
    message: str
    constraints: ConstraintSet
    point: np.ndarray | None = None
    farkas: np.ndarray | None = None
    residual: float = 0.0
    solver: str = ""
    solve_time: float = 0.0
    extras: dict[str, Any] = field(default_factory=dict, repr=False)
    proof: Literal["exact", "float"] | None = None

    def __bool__(self) -> bool:
        return self.feasible

    @property
    def verdict(self) -> bool | None:
        """``feasible`` where the verdict is decided: verified (``OPTIMAL``) or proved
        (``INFEASIBLE``); None where it is not (an ``*_INACCURATE`` or failed status)."""
        return self.feasible if self.status in (Status.OPTIMAL, Status.INFEASIBLE) else None

    def __repr__(self) -> str:
        return (
            f"FeasibilityResult(feasible={self.feasible}, status={self.status.value}, "
            f"solver={self.solver!r},\n"
            f"                  point={_shape(self.point)}, farkas={_shape(self.farkas)}, "
            f"residual={self.residual:.1e}, rows N={self.constraints.N}, "
            f"solve_time={self.solve_time:.3g}s)"
        )

    def summary(self) -> str:
        """A few lines for a human: the verdict ("undecided" when :attr:`verdict` is None),
        what backs it (``proof``: "exact", "float" or not proved) and the message."""
        how = _proof_text(self.proof)
        if self.verdict is None:
            verdict = (
                f"undecided (the float check leans {'feasible' if self.feasible else 'infeasible'})"
            )
        else:
            verdict = "feasible" if self.verdict else "infeasible"
        if self.feasible and self.point is not None:
            proof = f"{how}: a point W {_shape(self.point)}, worst row residual {self.residual:.1e}"
        elif not self.feasible and self.farkas is not None:
            n = int(np.count_nonzero(self.farkas))
            proof = f"{how}: a Farkas vector on {n} rows, relative residual {self.residual:.1e}"
        else:
            proof = f"{how}: no point and no Farkas vector"
        return "\n".join(
            [
                f"Feasibility of {self.constraints!r}",
                f"  verdict  {verdict} ({self.status.value}, {self.solver}, {self.solve_time:.3g} s)",
                f"  proof    {proof}",
                f"  message  {self.message}",
            ]
        )

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


class _Norm(Protocol):
    """What :func:`finish` reads of a norm (:class:`~._certificates.NormGeometry`)."""

    @property
    def name(self) -> str: ...

    def value(self, W: np.ndarray, /) -> float: ...

    def certificate(
        self,
        cs: ConstraintSet,
        W: np.ndarray,
        lam: np.ndarray,
        tol: float,
        margins: np.ndarray | None = None,
    ) -> Certificate: ...


_Result = TypeVar("_Result", "SVMResult", "FeasibilityResult")


def replaced(result: _Result, **changes: Any) -> _Result:
    """``dataclasses.replace`` for the result classes: a copy of ``result`` with ``changes``.

    The fields are copied as they are instead of passing through ``__init__`` again (one
    frozen assignment per field, at each step of a result's assembly in every solve); the
    result classes have no ``__post_init__`` and cache nothing, so the copy is the one
    ``replace`` makes. A name that is not a field raises ``TypeError``, as in
    ``replace``.
    """
    unknown = changes.keys() - result.__dataclass_fields__.keys()
    if unknown:
        raise TypeError(f"{type(result).__name__} has no fields {sorted(unknown)}")
    copy = object.__new__(type(result))
    copy.__dict__.update(result.__dict__)
    copy.__dict__.update(changes)
    return copy


def on_every_row(
    result: _Result, cs: ConstraintSet, classes: tuple[np.ndarray, np.ndarray], seconds: float
) -> _Result:
    r"""A result on the distinct rows of ``cs`` as the result on ``cs`` itself.

    ``classes`` = (first, position) of :func:`~._exact.identical_rows`: ``result`` was
    decided on ``cs.subset(first)``, and row j of ``cs`` is a copy of row
    ``first[position[j]]``. The point W is the same; a row's margin is its first row's;
    a multiplier (``farkas``, ``dual``, the max-margin QP's ``extras["qp_dual"]``) is shared
    equally by the k rows of its class, :math:`\lambda_j = \lambda_{\mathrm{first}}/k`, so
    that :math:`\sum_j \lambda_j a_j b_j^\top` and :math:`c^\top\lambda` are unchanged up to
    the rounding of that division (none when k is a power of two) and every copy of a
    support row is a support row. The certificate is the distinct rows' (the same
    constraints); a feasibility verdict in ``extras`` is mapped the same way.
    ``solve_time`` becomes ``seconds``; the message and ``extras["identical_rows"]`` say
    how many copies were set aside.
    """
    first, position = classes
    share = np.bincount(position, minlength=first.size)[position]  # k of each row's class

    def spread(lam: np.ndarray | None) -> np.ndarray | None:
        return None if lam is None else np.asarray(lam)[position] / share

    extras = dict(result.extras)
    if extras.get("qp_dual") is not None:
        extras["qp_dual"] = spread(extras["qp_dual"])
    if isinstance(extras.get("feasibility"), FeasibilityResult):
        extras["feasibility"] = on_every_row(extras["feasibility"], cs, classes, seconds)
    copies = cs.N - first.size
    extras["identical_rows"] = copies
    changes: dict[str, Any] = {}
    if isinstance(result, SVMResult):
        margins = result.margins
        changes = {
            "dual": spread(result.dual),
            "margins": None if margins is None else np.asarray(margins)[position],
        }
    return replaced(
        result,
        constraints=cs,
        farkas=spread(result.farkas),
        message=f"{result.message} (decided on the {first.size} distinct rows: {copies} "
        "copies of another row set aside)",
        solve_time=seconds,
        extras=extras,
        **changes,
    )


def better_answer(first: SVMResult, second: SVMResult) -> SVMResult:
    r"""Of two answers to one problem, the one that certifies, else the one whose certificate's
    largest residual (:attr:`Certificate.worst`) is smaller; ``first`` on a tie. An answer
    without a certificate, or with a NaN residual, loses to one with a certificate."""

    def worst(res: SVMResult) -> float:
        cert = res.certificate
        return math.inf if cert is None or not cert.worst >= 0.0 else cert.worst

    if first.success or (not second.success and worst(first) <= worst(second)):
        return first
    return second


def downgrade(result: SVMResult, certificate: Certificate) -> SVMResult:
    """Attach ``certificate``; when it fails, downgrade an optimal status and say why.

    ``OPTIMAL`` and ``LOCALLY_OPTIMAL`` become ``OPTIMAL_INACCURATE``, ``INFEASIBLE`` becomes
    ``INFEASIBLE_INACCURATE``; the message names each failed residual and its size.
    """
    status, message = _judged(result.status, result.message, certificate)
    return replaced(result, status=status, message=message, certificate=certificate)


def _judged(status: Status, message: str, certificate: Certificate) -> tuple[Status, str]:
    """The status and message :func:`downgrade` gives a result with ``certificate``."""
    if not certificate.passed:
        text = "svmgeo's certificate check failed: " + "; ".join(certificate.failures)
        if status in (Status.OPTIMAL, Status.LOCALLY_OPTIMAL):
            status = Status.OPTIMAL_INACCURATE
        elif status is Status.INFEASIBLE:
            status = Status.INFEASIBLE_INACCURATE
        message = f"{message}; {text}" if message else text
    return status, message


def finish(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray | None,
    *,
    norm: _Norm,
    tol: float,
    status: Status,
    message: str,
    solver: str,
    margins: np.ndarray | None = None,
    objective: float | None = None,
    certificate: Certificate | None = None,
    **fields: Any,
) -> SVMResult:
    r"""The one assembly of a solved :class:`SVMResult`: margins, objective and certificate
    recomputed from the data, the status downgraded when the certificate fails.

    .. math::

        m_j = a_j^\top W b_j,\qquad \text{objective} = \|W\|,\qquad
        \text{certificate} = \mathrm{KKT}_{\|\cdot\|}(W, \lambda)\ \text{at}\ \texttt{tol} .

    Parameters
    ----------
    cs : ConstraintSet
    W : ndarray of shape (d, d)
    lam : ndarray of shape (N,) or None
        The row multipliers (None: the certificate must be given).
    norm : NormGeometry
        The norm (``_certificates.FRO``, ``NUC``, ``lp_geometry(p)``): its ``name`` is the
        result's ``norm``, ``value`` its objective, ``certificate`` its KKT check.
    tol : float
        The certificate's tolerance.
    status, message, solver
        The solver's verdict before the check.
    margins, objective, certificate : optional
        Already computed by the caller from the same data (e.g. ``margins`` through a
        matrix-free product, ``objective`` from the factored iterate); recomputed otherwise.
    **fields
        Other :class:`SVMResult` fields (``n_iter``, ``solve_time``, ``extras``, ``K``, ...).

    Returns
    -------
    SVMResult
        :func:`downgrade` of the assembled result by its certificate.
    """
    margins = cs.apply(W) if margins is None else margins
    if certificate is None:
        if lam is None:
            raise ValueError("finish needs the multipliers lam or a certificate")
        certificate = norm.certificate(cs, W, lam, tol, margins)
    status, message = _judged(status, message, certificate)  # downgrade, in one construction
    return SVMResult(
        W=W,
        status=status,
        message=message,
        objective=norm.value(W) if objective is None else objective,
        dual=lam,
        margins=margins,
        constraints=cs,
        norm=norm.name,  # type: ignore[arg-type]
        solver=solver,
        certificate=certificate,
        **fields,
    )


def no_solution(
    cs: ConstraintSet, status: Status, message: str, *, norm: str, solver: str, **fields: Any
) -> SVMResult:
    """An :class:`SVMResult` without a solution (W, dual, margins and objective None)."""
    return SVMResult(
        W=None,
        status=status,
        message=message,
        objective=None,
        dual=None,
        margins=None,
        constraints=cs,
        norm=norm,  # type: ignore[arg-type]
        solver=solver,
        **fields,
    )


def report_inaccurate(text: str, stacklevel: int) -> None:
    """Emit :class:`~svmgeo.InaccurateSolutionWarning` with ``text`` at the line
    ``stacklevel`` frames above this call, unless that line is in svmgeo itself (an analysis
    function wrapping a solver reports once, in its own terms, e.g.
    :func:`~svmgeo.support_tokens`), so that no answer is warned about twice. The paper
    experiments (:mod:`svmgeo.experiments`) are the exception: their trials use solver
    results as a user's script does, and report nothing of their own."""
    caller = sys._getframe(stacklevel).f_globals.get("__name__", "")
    if caller.partition(".")[0] != "svmgeo" or caller.startswith("svmgeo.experiments."):
        warnings.warn(text, InaccurateSolutionWarning, stacklevel=stacklevel + 1)


def warns_if_inaccurate(where: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Decorate the public function ``where``: an inaccurate result (``status.is_inaccurate``)
    emits :class:`~svmgeo.InaccurateSolutionWarning` at the line that called it
    (:func:`report_inaccurate`)."""

    def decorate(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def public(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            result = fn(*args, **kwargs)
            if result.status.is_inaccurate:
                report_inaccurate(f"{where} returned {result.status.value}: {result.message}", 2)
            return result

        return public

    return decorate


# -- composite results: the joint SVM of the companion paper, the Gen-SVM (TF-SVM §6) --------
@summarized
@dataclass(frozen=True, eq=False)
class JointSVMResult:
    r"""The head SVM :math:`v^{\mathrm{mm}}` and the relaxed attention SVM it induces.

    Attributes
    ----------
    status : Status
        The worse of the two parts: a part without a solution gives its own status (the head
        first); otherwise ``OPTIMAL_INACCURATE`` when either part is inaccurate, else
        ``OPTIMAL``. ``message`` says which part.
    message : str
    param : {"p", "W"}
        The attention parameterization of the relaxed SVM.
    alpha : ndarray of int, shape (n,) or (n, K)
        The selection both SVMs were built on.
    head : SVMResult
        :math:`\min\|v\|` s.t. :math:`Y_{ik} v^\top u_{i\alpha_{ik}} \ge 1`, solved as rows
        :math:`Y_{ik} u_{i\alpha_{ik}}^\top W e_1 \ge 1` (so ``head.W`` is :math:`v\,e_1^\top`,
        ``head.dual`` the multipliers); infeasible head data give its Farkas vector there.
    v : ndarray of shape (d_u,) or None
        :math:`v^{\mathrm{mm}}` (``head.W[:, 0]``).
    head_margins : ndarray of shape (n,) or (n, K), or None
        :math:`Y_{ik}\, v^{\mathrm{mm}\top} u_{i\alpha_{ik}}` (1 on the support).
    support : ndarray of bool, shape (n,) or (n, K), or None
        The queries (inputs) on :math:`v^{\mathrm{mm}}`'s margin.
    support_proof : {"exact", "tolerance"} or None
        ``"exact"``: :math:`v^{\mathrm{mm}}` was proved optimal in rational arithmetic and the
        support is the set of rows with exact margin 1. ``"tolerance"``: the margin is within
        ``support_tol`` (relative) of 1 on the certified float solution.
    margin : ndarray of shape (n,) or (n, K), or None
        The right-hand sides :math:`c_{ik}` of the relaxed SVM: 1 on the support, 0 elsewhere.
    attention : SVMResult or None
        The relaxed SVM (its ``constraints`` hold the rows and right-hand sides); None when the
        head SVM has no solution.
    p : ndarray of shape (d,) or None
        :math:`p^{\mathrm{relax}}` for ``param="p"``.
    W : ndarray of shape (d, d) or None
        :math:`W^{\mathrm{relax}}` for ``param="W"``.
    """

    status: Status
    message: str
    param: str
    alpha: np.ndarray
    head: SVMResult
    v: np.ndarray | None
    head_margins: np.ndarray | None
    support: np.ndarray | None
    support_proof: Literal["exact", "tolerance"] | None
    margin: np.ndarray | None
    attention: SVMResult | None
    p: np.ndarray | None = None
    W: np.ndarray | None = None

    @property
    def success(self) -> bool:
        """True when both parts are certified optimal (``status`` is ``OPTIMAL``)."""
        return self.status.success

    def summary(self) -> str:
        """The joint verdict, the support, then the summaries of both SVMs."""
        lines = [f"Joint SVM (param={self.param!r}): {self.status.value}", f"  {self.message}"]
        if self.support is not None:
            n_sup = int(np.count_nonzero(self.support))
            lines.append(
                f"  support    {n_sup} of {self.support.size} queries on v^mm's margin "
                f"(decided: {self.support_proof})"
            )
        lines += ["Head SVM (v^mm):", _indent(self.head.summary())]
        if self.attention is not None:
            lines += ["Relaxed attention SVM:", _indent(self.attention.summary())]
        return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def _combined_status(head: SVMResult, attention: SVMResult | None) -> tuple[Status, str]:
    if not head.status.has_solution:
        return head.status, f"head SVM {head.status.value}: {head.message}"
    assert attention is not None  # solved whenever the head has a solution
    if not attention.status.has_solution:
        return attention.status, f"relaxed SVM {attention.status.value}: {attention.message}"
    bad = [
        f"{name} SVM {res.status.value}: {res.message}"
        for name, res in (("head", head), ("relaxed", attention))
        if not res.status.success
    ]
    if bad:
        return Status.OPTIMAL_INACCURATE, "; ".join(bad)
    return Status.OPTIMAL, "both SVMs certified optimal"


def finish_joint(
    head: SVMResult, attention: SVMResult | None, *, note: str = "", **fields: Any
) -> JointSVMResult:
    """The one assembly of a :class:`JointSVMResult`: its status and message from the two
    parts (the worse part decides), ``note`` appended; ``fields`` are the other fields."""
    status, message = _combined_status(head, attention)
    return JointSVMResult(
        status=status,
        message=f"{message}; {note}" if note else message,
        head=head,
        attention=attention,
        **fields,
    )


EVERY_ROW_TIGHT = "feasible: the point that makes every row tight (G factored) verified"
"""The feasibility verdict's message when the point of every row tight verifies (G's Cholesky
factor computed; that alone does not prove the rows independent: rows a b^T and -a b^T have a
singular G whose factor may succeed in floats): :func:`~._feasibility.check_feasibility` and
its compiled route."""
POLISHED = "solved: active set polished exactly"
"""The message of a Frobenius solve whose active set the polish settled (and whose certificate
holds): :func:`~._frobenius.solve_frobenius` and its compiled route."""
CONJECTURE = (
    "conjecture: Gen-SVM's W_eq = W_fin + R W_svm is the paper's *proposed* SVM equivalence "
    "for nonlinear heads (TF-SVM §6), not a theorem; agreement is measured, not guaranteed"
)


@summarized
@dataclass(frozen=True, eq=False)
class GenSVMResult:
    r"""Gen-SVM components for selected sets :math:`O_{ik}`.

    Attributes
    ----------
    status : Status
        The directional solve's status where it has no certified solution (``INFEASIBLE``,
        proved; ``INFEASIBLE_INACCURATE``, undecided; ``OPTIMAL_INACCURATE`` or
        ``LOCALLY_OPTIMAL``: ``W_dir`` is not certified); else ``OPTIMAL_INACCURATE`` when
        the finite component's solve is inaccurate, else ``OPTIMAL``. ``message`` says which
        part.
    message : str
    feasible : bool
        Whether the directional solve found a point (``W_dir``): False for a proved
        infeasibility (``farkas`` set) and for an undecided one (``farkas`` None; see
        ``status``).
    W_dir : ndarray of shape (d, d) or None
        :math:`W^{\mathrm{svm}}` (None without a point).
    farkas : ndarray or None
        Farkas vector over ``svm.constraints`` when the directional problem is proved
        infeasible (``status`` ``INFEASIBLE``).
    W_fin : ndarray or None
        :math:`W^{\mathrm{fin}}` (needs ``probs``; None without, or when its equalities are
        inconsistent, see ``fin``).
    R : float or None
        :math:`\max(0, \langle F - W^{\mathrm{fin}}, W^{\mathrm{svm}}\rangle / \|W^{\mathrm{svm}}\|_F^2)`
        with F = ``fit_to`` (needs ``fit_to``, ``probs``, a feasible directional problem and
        a finite component).
    W_eq : ndarray or None
        :math:`W^{\mathrm{fin}} + R\,W^{\mathrm{svm}}`.
    fit_correlation : float or None
        Correlation of ``W_eq`` with ``fit_to``.
    gamma : float or None
        :math:`\Gamma = \max_{i,k,\tau \in \bar O_{ik}} s_{ik\tau}` (needs ``probs``; None
        when every set holds every visible token).
    selected, masked : ndarray of bool, shape (n, T) or (n, K, T)
        :math:`O_{ik}` and :math:`\bar O_{ik}` (visible tokens outside :math:`O_{ik}`, SPEC's
        :math:`\bar O = [T] \setminus O`: tokens :func:`~svmgeo.selected_sets` calls
        ambiguous, between its two thresholds, are in ``masked`` here and get margin rows).
    svm, fin : SVMResult or None
        The solves behind ``W_dir`` and ``W_fin``.
    cost_fixed, cost_envelope : ndarray of shape (n, T) or (n, K, T), or None
        First-order cost of each masked token (NaN elsewhere; needs ``head`` and ``probs``):
        how fast :math:`Y h` falls when mass moves onto it, with the composition inside
        :math:`O_{ik}` held fixed, or re-optimized (see :func:`gen_svm`, Notes). NaN in
        ``cost_envelope`` where GD's composition is not locally optimal inside
        :math:`O_{ik}` (the envelope is then undefined).
    zero_cost : ndarray of bool or None
        Masked tokens whose cost is zero (``<= zero_tol`` times the sequence's score spread)
        under either method.
    dropped : ndarray of bool or None
        With ``drop_zero_cost=True``: the masked tokens whose margin rows were dropped
        (= ``zero_cost``); None otherwise.
    note : str
        The status of the prediction: always :data:`CONJECTURE` (plus "svmgeo's extension"
        when zero-cost rows were dropped).
    """

    status: Status
    message: str
    feasible: bool
    W_dir: np.ndarray | None
    farkas: np.ndarray | None
    W_fin: np.ndarray | None
    R: float | None
    W_eq: np.ndarray | None
    fit_correlation: float | None
    gamma: float | None
    selected: np.ndarray
    masked: np.ndarray
    svm: SVMResult
    fin: SVMResult | None
    cost_fixed: np.ndarray | None = None
    cost_envelope: np.ndarray | None = None
    zero_cost: np.ndarray | None = None
    dropped: np.ndarray | None = None
    note: str = CONJECTURE


def _gen_status(svm: SVMResult, fin: SVMResult | None) -> tuple[Status, str]:
    """A Gen-SVM's status and message from its directional and finite solves (see
    :class:`GenSVMResult`)."""
    if not svm.status.success:
        return svm.status, f"directional SVM {svm.status.value}: {svm.message}"
    if fin is not None and fin.status.is_inaccurate:
        return Status.OPTIMAL_INACCURATE, f"finite component {fin.status.value}: {fin.message}"
    finite = (
        ""
        if fin is None
        else "; finite component " + ("certified" if fin.status.success else "infeasible: no W_fin")
    )
    return Status.OPTIMAL, "directional SVM certified optimal" + finite


def finish_gen_svm(svm: SVMResult, fin: SVMResult | None, **fields: Any) -> GenSVMResult:
    """The one assembly of a :class:`GenSVMResult` from its two solves: ``status``,
    ``message``, ``feasible``, ``W_dir`` and ``farkas`` read off them (``farkas`` only for a
    proved infeasibility; ``W_fin`` off ``fin`` is the caller's, as it depends on the finite
    component's verdict)."""
    feasible = svm.status.has_solution
    status, message = _gen_status(svm, fin)
    return GenSVMResult(
        status=status,
        message=message,
        feasible=feasible,
        W_dir=svm.W if feasible else None,
        farkas=svm.farkas if svm.status is Status.INFEASIBLE else None,
        svm=svm,
        fin=fin,
        **fields,
    )
