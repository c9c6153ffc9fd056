# SPDX-License-Identifier: BSD-3-Clause
r"""The verify report: :class:`VerifyReport`, its table, its JSON, and :func:`assemble`, the
one place a report is built from a run, a verdict and a comparison.

A report's curves are named by the predictions of the run (:class:`~svmgeo.verify.Prediction`):
the curve of prediction ``name`` is the field ``corr_<name>`` and its target the field of
:data:`TARGET_FIELDS`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import ProblemError
from .._summary import summarized
from ..analysis import GenSVMResult, LocalOptimality, argmin_doubt
from ..gd import GDRun
from ..selection import first_five, query_name
from ..solvers import JointSVMResult, Status, SVMResult
from ._judge import Verdict
from ._protocol import Comparison, Prediction
from ._runs import Trajectory

__all__ = ["TARGET_FIELDS", "VerifyReport", "assemble", "svm_prediction"]

# float arrays that may be absent from a report (None)
_OPTIONAL_ARRAYS = (
    "farkas", "W_eq", "W_dir", "W_fin", "corr_eq", "corr_dir",
    "W_lp", "corr_lp", "v", "v_mm", "corr_v", "W_relax", "corr_relax", "W_own", "corr_own",
    "W_l1", "corr_l1", "W_linf", "corr_linf", "W_spectral", "corr_spectral",
)  # fmt: skip
# fields of runs with another attention map: left out of a softmax report's JSON (as before)
_MAP_FIELDS = ("attention", "W_own", "corr_own", "own_status")
# fields of runs of the other optimizers (verify(optimizer="sign", ...)): left out of the JSON
# of GD and mirror-descent reports (as before)
_OPTIMIZER_FIELDS = (
    "W_l1", "corr_l1", "W_linf", "corr_linf", "W_spectral", "corr_spectral", "face_corr",
    "face_lower_bounds",
)  # fmt: skip
# objects, not serialized
_FIELDS_OUT = (
    "svm_fro", "svm_nuc", "svm_lp", "lot", "gen", "run", "mirror_run", "joint", "svm_own",
    "svm_l1", "svm_linf", "svm_spectral", "rates",
)  # fmt: skip


def _f(x: Any) -> float | None:
    """A float for JSON: None for NaN/inf/None."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _list(a: np.ndarray | None) -> Any:
    if a is None:
        return None
    arr = np.asarray(a)
    if arr.dtype == bool or np.issubdtype(arr.dtype, np.integer):
        return arr.tolist()
    return [_list(r) for r in arr] if arr.ndim > 0 else _f(arr)


def _array(x: Any, dtype: Any = float) -> np.ndarray | None:
    if x is None:
        return None
    if dtype is float:
        return np.array(_nan(x), dtype=float)
    return np.array(x, dtype=dtype)


def _nan(x: Any) -> Any:
    if isinstance(x, list):
        return [_nan(y) for y in x]
    return math.nan if x is None else x


@summarized
@dataclass(frozen=True, eq=False)
class VerifyReport:
    r"""What :func:`verify` or :func:`verify_mirror` found: a run's selection and trajectory
    against the SVM predictions.

    .. math::

        \mathrm{corr}_{\mathrm{name}}(t) = \frac{\langle W(t), W^{\mathrm{name}}\rangle}
        {\|W(t)\|_F\,\|W^{\mathrm{name}}\|_F},\qquad
        \texttt{converged\_to} = \arg\max_{\mathrm{name\ certified}}\
        \mathrm{corr}_{\mathrm{name}}(T) \ \text{if it is} \ge \texttt{threshold}.

    Curves have one entry per recorded step (``steps``); the curve against prediction ``name``
    is the field ``corr_<name>``.

    Attributes
    ----------
    param, head : str
        Parameterization (``"W"`` or ``"KQ"``) and head of the run.
    selection : ndarray of int, shape (n,) or (n, K)
        GD's final selection :math:`\arg\max_t s_{ikt}`.
    is_optimal : bool
        Whether every selected token is an optimal token (ties: any of the tied tokens).
    is_lot : bool
        Whether the selection is proved locally optimal (:func:`~svmgeo.is_locally_optimal`);
        ``lot_reason`` says why. False also when the test is undecided (``lot_decided``).
    lot_decided : bool
        Whether the LOT test decided (a LOT or not a LOT). False: undecided, neither a LOT
        nor not a LOT (:class:`~svmgeo.LocalOptimality`), with the reason in ``lot_reason``;
        the verdict line says so. True on reports read from JSON written without it.
    optimal_ties : tuple of (int, int, tuple of int), or None
        ``(sequence, query, tokens)`` for every query whose optimal token is not unique under
        the run's scores (:func:`~svmgeo.optimal_token_sets`; ``query`` 0 for one query per
        sequence); empty without ties. SPEC §2: ties are reported, never broken; an optimal
        selection with a tie is one of several and need not be a LOT (MATH-NOTES §5), and the
        verdict names the tokens tied with the selected ones. None on reports read from JSON
        written without it.
    feasible : bool
        Whether Att-SVM(selection) is feasible; when not, ``farkas`` is its Farkas
        vector and the SVM fields are None.
    W_fro, W_nuc : ndarray of shape (d, d) or None
        :math:`W^{\mathrm{mm}}_\alpha` and :math:`W^{\mathrm{mm}\star}_\alpha` for GD's selection
        (nuclear with rank bound ``m`` for ``param="KQ"`` with ``m < d``).
    steps : ndarray of int, shape (R,)
    corr_fro, corr_nuc : ndarray of shape (R,)
        :math:`\mathrm{corr}(W(t), W^{\mathrm{mm}}_\alpha)` and with
        :math:`W^{\mathrm{mm}\star}_\alpha` (NaN when infeasible).
    max_softmax : ndarray of shape (R,)
        Saturation: :math:`\min_{i,k} \max_t s_{ikt}(t)`.
    norm_W : ndarray of shape (R,)
        :math:`\|W(t)\|_F`.
    converged_to : {"fro", "nuc", "eq"} or None
        The prediction (:math:`W^{\mathrm{mm}}_\alpha`, :math:`W^{\mathrm{mm}\star}_\alpha`,
        or for nonlinear heads :math:`W^{\mathrm{eq}}`) with the largest final correlation,
        when that is at least ``threshold``, among the predictions whose solve is certified
        (status ``optimal`` in ``svm_status``): a locally optimal, inaccurate or unfinished
        solve keeps its curve, is listed on the report's line "not certified"
        (:attr:`uncertified`), and is never named here.
    svm_status : dict of str to str or None
        The status (:class:`~svmgeo.Status` value) of the solve behind each prediction, by
        prediction name (``"fro"``, ``"nuc"``, ``"eq"``, ``"own"``, ``"lp"``, ``"l1"``, ...;
        only the solves that ran). A status other than ``"optimal"`` is printed with its
        prediction (e.g. ``nuc (rank <= 2, locally optimal, not certified global)``). None on
        reports read from JSON written without it.
    svm_value_only : tuple of str or None
        The predictions whose solve has a certified status but only certifies the value: an
        :math:`\ell_p` SVM whose W is not shown to be the unique minimizer
        (:func:`solve_certified`); listed under "not certified" (:attr:`uncertified`). None
        on reports read from JSON written without it (then read off ``svm_lp`` and
        ``svm_own`` where present).
    nuc_rank : int or None
        The rank bound of ``W_nuc`` (``m`` of ``param="KQ"`` with ``m < d``), None without.
    threshold : float
    W : ndarray of shape (d, d)
        GD's final W (:math:`KQ^\top` for ``param="KQ"``).
    status : str
        Why GD stopped (:class:`~svmgeo.StopStatus`).
    selected, masked : ndarray of bool or None
        Nonlinear heads: the sets :math:`O_{ik}` and :math:`\bar O_{ik}` read off the final
        probabilities (:func:`~svmgeo.selected_sets`); ``n_ambiguous`` tokens were neither.
    W_eq, W_dir, W_fin : ndarray or None
        Nonlinear heads: the Gen-SVM prediction fitted to the final W and its components.
    R : float or None
    gamma : float or None
        :math:`\Gamma`, the largest probability of a masked token.
    corr_eq, corr_dir : ndarray of shape (R,) or None
        :math:`\mathrm{corr}(W(t), W^{\mathrm{fin}} + R(t) W^{\mathrm{svm}})` with :math:`R(t)`
        fitted to :math:`W(t)` as in :func:`~svmgeo.gen_svm`, and with :math:`W^{\mathrm{svm}}`.
    gen_feasible : bool or None
    method : str
        The training algorithm (the ``optimizer``): ``"gd"``; ``"mirror"`` (:math:`\ell_p`
        mirror descent, :func:`verify_mirror`: ``is_lot``/``feasible`` are those of the
        :math:`\ell_p` Att-SVM, and ``converged_to`` may be ``"lp"``); or the command-line
        spelling of another rule (``"sign"``, ``"steepest:1.5"``, ``"spectral"``, ``"adam"``;
        ``converged_to`` may then be any certified SVM of ``face_corr``).
    mirror_p : float or None
        The exponent of a mirror-descent run (``verify_mirror(exponent=...)``).
    W_lp, corr_lp : ndarray or None
        Mirror descent: :math:`W^{\mathrm{mm}}_{p,\alpha}` (``sg.att_svm(data, alpha,
        norm=("lp", p))``) and :math:`\mathrm{corr}(W(t), W^{\mathrm{mm}}_{p,\alpha})`.
    svm_fro, svm_nuc, svm_lp, lot, gen, run, mirror_run : objects or None
        The solves, the local-optimality verdict, the Gen-SVM result and the GD (or mirror
        descent) run behind the report (not serialized; None after :meth:`from_json`).
    train_head : bool
        Whether the head v was trained with the attention (:func:`verify` with
        ``train_head=True``).
    v, v_mm : ndarray of shape (d_u,) or None
        ``train_head``: GD's final head and the head SVM :math:`v^{\mathrm{mm}}` of GD's
        selection (:func:`~svmgeo.joint_svm`).
    corr_v : ndarray of shape (R,) or None
        :math:`\mathrm{corr}(v(t), v^{\mathrm{mm}})`.
    support : ndarray of bool, shape (n,) or (n, K), or None
        The inputs on :math:`v^{\mathrm{mm}}`'s margin.
    W_relax : ndarray or None
        The relaxed SVM (margin 1 on ``support``, 0 elsewhere): :math:`p^{\mathrm{relax}}`
        (d,) for ``param="p"``, a (d, d) matrix for ``param="W"``.
    corr_relax : ndarray of shape (R,) or None
        :math:`\mathrm{corr}(p(t), p^{\mathrm{relax}})` (W(t) for ``param="W"``).
    joint : JointSVMResult or None
        The joint prediction behind ``v_mm`` and ``W_relax`` (not serialized).
    attention : str
        The attention map GD trained (``verify(attention=...)``; ``"softmax"`` otherwise).
    W_own, corr_own : ndarray or None
        Another map: its own SVM (``att_svm(data, attention=...)``, at GD's final pattern for
        sigmoid and ReLU) and :math:`\mathrm{corr}(W(t), W^{\mathrm{own}})`; None for softmax
        and where the map has no (feasible) SVM.
    own_status : str or None
        What the own prediction is: a theorem (whose, its hypotheses checked on this run),
        "measured" (with the hypothesis that fails or is not checked), a conjecture, or none.
    svm_own : SVMResult or None
        The solve behind ``W_own`` (not serialized).
    W_l1, W_linf, W_spectral : ndarray or None
        Another optimizer (``verify(optimizer="sign")``, ``("steepest", q)``, ``"spectral"``,
        ``"adam"``): the :math:`\ell_1`, :math:`\ell_\infty` and spectral-norm Att-SVMs of
        the run's selection (``W_lp`` the :math:`\ell_q` one of ``("steepest", q)``, q not 1,
        2 or inf), beside ``W_fro`` and ``W_nuc``.
    corr_l1, corr_linf, corr_spectral : ndarray of shape (R,) or None
        :math:`\mathrm{corr}(W(t), \cdot)` with the returned solutions.
    face_corr : dict of str to float or None
        Another optimizer: the final correlation with each SVM, the best over its optimal
        face for ``nuc`` (without a rank bound; since session 52), ``l1``, ``linf``,
        ``spectral`` (:func:`~svmgeo.solvers.optimal_face_alignment`: those optima need not be
        unique); ``converged_to`` is the largest of these.
    face_lower_bounds : tuple of str or None
        Another optimizer: the SVMs of ``face_corr`` whose face value is only a lower bound on
        the face's best (:attr:`~svmgeo.solvers.FaceAlignment.maximum` False: e.g. the face
        problem's point missed the face); the report prints them "≥ x".
    rates : dict of str to Rates or None
        :math:`\|W(t)\| \approx a + b\,t` (``growth="linear"``) or :math:`a + b\log t`
        (``growth="log"``), and
        :math:`\log(1 - \mathrm{corr}(W(t), \bar W)) \approx \log c - \kappa\log t`
        and :math:`\approx \log c' - \lambda\log\log t`: :func:`~svmgeo.fit_rates` of the
        run against each SVM prediction :math:`\bar W` (``"fro"``, ``"nuc"``, and ``"l1"``,
        ``"linf"``, ``"spectral"``, ``"lp"`` for another optimizer), each in its own norm, by
        least squares over the records with :math:`t \ge \max(3, \sqrt{t_{\max}})`. The
        norm is fitted against :math:`t` for steps of a fixed length, those of a constant
        step size that are normalized (GD's default) or of another rule (sign, :math:`\ell_q`
        steepest, spectral, Adam); against :math:`\log t` otherwise (GD with
        ``normalized=False``, the Polyak step). Both error lines are fitted under either
        growth, and the verdict reads the decay off :math:`\lambda` where its line fits, else
        off :math:`\kappa`. Each slope has a bootstrap interval and each line a lack-of-fit
        check (an added square of its abscissa: :math:`t^2` or :math:`(\log t)^2` for the
        norm, :math:`(\log t)^2` for :math:`\kappa`, :math:`(\log\log t)^2` for
        :math:`\lambda`); ``run_status`` is the run's :class:`~svmgeo.gd.StopStatus` value,
        and the verdict names a stop before ``n_steps``. None where the SVM has no solution
        or too few records were fitted; not serialized. W and (K, Q) runs of softmax
        attention.
    svm_l1, svm_linf, svm_spectral : SVMResult or None
        The solves behind those fields (not serialized).

    Notes
    -----
    For ``param="p"`` the W-named fields hold the prompt vector: ``W`` the final p (d,),
    ``W_fro`` the p-SVM of GD's selection (Att-SVM with every query :math:`z_i = e_1`),
    ``corr_fro`` :math:`\mathrm{corr}(p(t), p^{\mathrm{mm}})`, ``norm_W`` :math:`\|p(t)\|`;
    a vector has no nuclear SVM, so ``W_nuc`` is None and ``corr_nuc`` NaN.
    """

    param: str
    head: str
    selection: np.ndarray
    is_optimal: bool
    is_lot: bool
    lot_reason: str
    feasible: bool
    farkas: np.ndarray | None
    W_fro: np.ndarray | None
    W_nuc: np.ndarray | None
    steps: np.ndarray
    corr_fro: np.ndarray
    corr_nuc: np.ndarray
    max_softmax: np.ndarray
    norm_W: np.ndarray
    converged_to: str | None
    threshold: float
    W: np.ndarray
    status: str
    selected: np.ndarray | None = None
    masked: np.ndarray | None = None
    n_ambiguous: int | None = None
    gen_feasible: bool | None = None
    gen_note: str | None = None
    W_eq: np.ndarray | None = None
    W_dir: np.ndarray | None = None
    W_fin: np.ndarray | None = None
    R: float | None = None
    gamma: float | None = None
    corr_eq: np.ndarray | None = None
    corr_dir: np.ndarray | None = None
    method: str = "gd"
    mirror_p: float | None = None
    W_lp: np.ndarray | None = None
    corr_lp: np.ndarray | None = None
    train_head: bool = False
    v: np.ndarray | None = None
    v_mm: np.ndarray | None = None
    corr_v: np.ndarray | None = None
    support: np.ndarray | None = None
    W_relax: np.ndarray | None = None
    corr_relax: np.ndarray | None = None
    svm_fro: SVMResult | None = field(default=None, repr=False)
    svm_nuc: SVMResult | None = field(default=None, repr=False)
    svm_lp: SVMResult | None = field(default=None, repr=False)
    lot: LocalOptimality | None = field(default=None, repr=False)
    gen: GenSVMResult | None = field(default=None, repr=False)
    run: GDRun | None = field(default=None, repr=False)
    mirror_run: GDRun | None = field(default=None, repr=False)
    joint: JointSVMResult | None = field(default=None, repr=False)
    attention: str = "softmax"
    W_own: np.ndarray | None = None
    corr_own: np.ndarray | None = None
    own_status: str | None = None
    svm_own: SVMResult | None = field(default=None, repr=False)
    W_l1: np.ndarray | None = None
    corr_l1: np.ndarray | None = None
    W_linf: np.ndarray | None = None
    corr_linf: np.ndarray | None = None
    W_spectral: np.ndarray | None = None
    corr_spectral: np.ndarray | None = None
    face_corr: dict[str, float] | None = None
    face_lower_bounds: tuple[str, ...] | None = None
    rates: dict[str, Any] | None = field(default=None, repr=False)
    svm_l1: SVMResult | None = field(default=None, repr=False)
    svm_linf: SVMResult | None = field(default=None, repr=False)
    svm_spectral: SVMResult | None = field(default=None, repr=False)
    lot_decided: bool = True
    optimal_ties: tuple[tuple[int, int, tuple[int, ...]], ...] | None = None
    svm_status: dict[str, str] | None = None
    svm_value_only: tuple[str, ...] | None = None
    nuc_rank: int | None = None

    # -- final values ----------------------------------------------------------------------
    @property
    def final_corr_fro(self) -> float:
        return float(self.corr_fro[-1])

    @property
    def final_corr_nuc(self) -> float:
        return float(self.corr_nuc[-1])

    @property
    def final_corr_eq(self) -> float | None:
        return None if self.corr_eq is None else float(self.corr_eq[-1])

    @property
    def final_max_softmax(self) -> float:
        return float(self.max_softmax[-1])

    @property
    def final_norm_W(self) -> float:
        return float(self.norm_W[-1])

    @property
    def verdict(self) -> str:
        """The verdict on the selection in words (the ``verdict`` line of the report):
        optimal (naming tied optimal tokens), a LOT, undecided (with the LOT test's short
        reason) or neither."""
        return verdict_text(self)

    @property
    def uncertified(self) -> dict[str, str]:
        """The predictions whose solve is not certified (status other than ``"optimal"`` and
        a proved ``"infeasible"``), with a label for each: the status in words, e.g. ``"rank
        <= 2, locally optimal, not certified global"`` (what the report prints beside the
        name, on the line "not certified")."""
        out: dict[str, str] = {}
        for name, status in (self.svm_status or {}).items():
            if not certified(status):
                rank = f"rank <= {self.nuc_rank}, " if name == "nuc" and self.nuc_rank else ""
                out[name] = rank + _STATUS_WORDS.get(status, f"{status}, not certified")
        value_only = self.svm_value_only
        if value_only is None:
            value_only = value_only_solves({"lp": self.svm_lp, "own": self.svm_own})
        for name in value_only:
            out.setdefault(name, _VALUE_ONLY)
        return out

    # -- printing --------------------------------------------------------------------------
    def summary(self) -> str:
        """The report as a table (what ``print(report)`` shows)."""
        return str(self)

    def _repr_html_(self) -> str:
        """Jupyter: the field table, the report and its figure (a PNG; text only without
        matplotlib)."""
        from .._summary import html_figures, html_summary
        from ..plot import plot_verify

        return html_summary(self, figures=html_figures(lambda d: [plot_verify(self, d / "v.png")]))

    def __str__(self) -> str:
        def num(x: float | None, fmt: str = ".6f") -> str:
            if x is None or not math.isfinite(x):
                return "-"
            return format(x, fmt)

        sel = np.asarray(self.selection).tolist()
        prompt = self.param == "p"
        uncertified = self.uncertified
        certified_only = "certified " if uncertified else ""
        head = [
            ("selection", str(sel)),
            ("verdict", self.verdict),
            ("LOT test", self.lot_reason),
            ("GD stop", f"{self.status} after {int(self.steps[-1])} steps ({self.param} param)"),
            # one correlation at the last step: the closest prediction, not a proved limit
            (
                "closest SVM",
                f"{self.converged_to} (final corr >= {self.threshold:g})"
                if self.converged_to
                else f"none (no {certified_only}SVM with final corr >= {self.threshold:g})",
            ),
        ]
        if uncertified:  # their curves are measured; converged_to never names them
            head.append(("not certified", "; ".join(f"{k} ({v})" for k, v in uncertified.items())))
        head.append(("corr(p, p_mm)" if prompt else "corr(W, W_mm fro)", num(self.final_corr_fro)))
        if not prompt:
            head.append(("corr(W, W_mm nuc)", num(self.final_corr_nuc)))
        softmax = self.attention == "softmax"
        head += [
            # another map's max phi is no probability: 1 - it means nothing (as plot_verify)
            ("1 - min max softmax", num(1.0 - self.final_max_softmax, ".3e"))
            if softmax
            else (f"min max phi ({self.attention})", num(self.final_max_softmax, ".3e")),
            ("||p||" if prompt else "||W||_F", num(self.final_norm_W, ".6g")),
        ]
        if self.train_head:
            head += _joint_lines(self, num)
        if self.attention != "softmax":
            head += [
                ("attention", f"{self.attention} (selection: the largest logits)"),
                ("own SVM", str(self.own_status)),
                ("corr(W, W_own)", num(_last(self.corr_own))),
            ]
        if self.face_corr is not None:  # another optimizer: every SVM, faces included
            head[3] = ("stop", f"{self.status} after {int(self.steps[-1])} steps "
                       f"({self.method}, {self.param} param)")  # fmt: skip
            bounds = self.face_lower_bounds or ()
            head += [(f"corr(W, W_mm {k}{'' if k == 'lp' else ' face'})",
                      ("≥ " if k in bounds else "") + num(c))
                     for k, c in self.face_corr.items()
                     if k != "fro" and not (k == "nuc" and self.nuc_rank)]  # fmt: skip
        if self.mirror_p is not None and self.corr_lp is not None:  # mirror descent
            head[3] = ("MD stop", f"{self.status} after {int(self.steps[-1])} steps (p = "
                       f"{self.mirror_p:g} mirror descent)")  # fmt: skip
            fro_row = next(j for j, (k, _) in enumerate(head) if k == "corr(W, W_mm fro)")
            head.insert(
                fro_row, (f"corr(W, W_mm l{self.mirror_p:g})", num(float(self.corr_lp[-1])))
            )
        if not self.feasible:
            head.append(("Att-SVM", "infeasible (Farkas certificate in .farkas)"))
        if self.gen_note is not None:
            head.append(("Gen-SVM", self.gen_note))
        if self.W_eq is not None or self.gen_feasible is not None:
            head += [
                ("Gen-SVM status", "conjecture (the paper's proposed equivalence, measured)"),
                ("corr(W, W_eq)", num(self.final_corr_eq)),
                ("Gamma", num(self.gamma, ".3g")),
                ("R", num(self.R, ".6g")),
                ("|O_i|", str(np.asarray(self.selected).sum(axis=-1).tolist())),
                ("ambiguous tokens", str(self.n_ambiguous)),
            ]
        width = max(len(k) for k, _ in head)
        lines = ["svmgeo verify report (" + self.head + " head)"]
        lines += [f"  {k:<{width}}  {v}" for k, v in head]
        cols = [("step", self.steps.astype(float), ".0f"), ("corr_fro", self.corr_fro, ".6f")]
        if not prompt:
            cols.append(("corr_nuc", self.corr_nuc, ".6f"))
        for name in ("corr_own", "corr_eq", "corr_lp", "corr_l1", "corr_linf", "corr_spectral",
                     "corr_relax", "corr_v"):  # fmt: skip
            curve = getattr(self, name)
            if curve is not None:
                cols.append((name, curve, ".6f"))
        norm_name = "||p||" if prompt else "||W||_F"
        if self.attention == "softmax":
            cols.append(("1-max_softmax", 1.0 - self.max_softmax, ".3e"))
        else:
            cols.append(("max_phi", self.max_softmax, ".3e"))
        cols.append((norm_name, self.norm_W, ".6g"))
        R = len(self.steps)
        rows = sorted({0, R - 1} | {int(j) for j in np.linspace(0, R - 1, 6).round()})
        table = [[name for name, _, _ in cols]]
        table += [[num(float(c[j]), fmt) for _, c, fmt in cols] for j in rows]
        widths = [max(len(r[c]) for r in table) for c in range(len(cols))]
        lines.append("")
        lines += ["  " + "  ".join(f"{r[c]:>{widths[c]}}" for c in range(len(cols))) for r in table]
        return "\n".join(lines)

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain Python types (lists, floats, None for NaN/inf), without the solver objects
        (and, for softmax, without the fields of other attention maps, which are then
        defaults)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name in _FIELDS_OUT or (self.attention == "softmax" and f.name in _MAP_FIELDS):
                continue
            if self.method in ("gd", "mirror") and f.name in _OPTIMIZER_FIELDS:
                continue
            val = getattr(self, f.name)
            if isinstance(val, dict):
                out[f.name] = {str(k): x if isinstance(x, str) else _f(x) for k, x in val.items()}
            elif isinstance(val, np.ndarray):
                out[f.name] = _list(val)
            elif isinstance(val, float):
                out[f.name] = _f(val)
            elif isinstance(val, tuple) and all(isinstance(x, str) for x in val):
                out[f.name] = list(val)  # face_lower_bounds, svm_value_only
            elif isinstance(val, tuple):  # optimal_ties
                out[f.name] = [[i, k, list(tokens)] for i, k, tokens in val]
            elif isinstance(val, (bool, int, str)) or val is None:
                out[f.name] = val
            else:  # pragma: no cover - every field is one of the above
                raise TypeError(f"cannot serialize field {f.name} of type {type(val)}")
        return out

    def to_json(self, **kwargs: Any) -> str:
        """The report as a JSON string (see :meth:`to_dict`; NaN and inf become null)."""
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    @classmethod
    def from_json(cls, text: str) -> VerifyReport:
        """Rebuild a report from :meth:`to_json` (the solver objects are None)."""
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ProblemError("from_json needs the JSON object written by VerifyReport.to_json.")
        names = {f.name for f in dataclasses.fields(cls)} - set(_FIELDS_OUT)
        missing = sorted(
            names
            - set(raw)
            - {f.name for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
        )
        unknown = sorted(set(raw) - names)
        if missing or unknown:
            raise ProblemError(
                f"from_json: not a VerifyReport JSON (missing {missing}, unknown {unknown})."
            )
        kw: dict[str, Any] = dict(raw)
        for name in ("W_fro", "W_nuc", "corr_fro", "corr_nuc", "max_softmax", "norm_W", "W"):
            kw[name] = _array(raw[name])
        for name in _OPTIONAL_ARRAYS:
            kw[name] = _array(raw.get(name))
        kw["selection"] = _array(raw["selection"], np.int64)
        kw["steps"] = _array(raw["steps"], np.int64)
        for name in ("selected", "masked", "support"):
            kw[name] = _array(raw.get(name), bool)
        if raw.get("optimal_ties") is not None:
            kw["optimal_ties"] = tuple((i, k, tuple(t)) for i, k, t in raw["optimal_ties"])
        if raw.get("face_corr") is not None:
            kw["face_corr"] = {k: _nan(x) for k, x in raw["face_corr"].items()}
        if raw.get("svm_value_only") is not None:
            kw["svm_value_only"] = tuple(raw["svm_value_only"])
        if raw.get("face_lower_bounds") is not None:
            kw["face_lower_bounds"] = tuple(raw["face_lower_bounds"])
        return cls(**kw)


def verdict_text(report: VerifyReport) -> str:
    """The report's verdict on its selection, in words (its ``verdict`` line).

    Optimal (naming the selected tokens that tie with another optimal token), a LOT that is
    not optimal, undecided (with the short reason of the LOT test), or neither.
    """
    if report.is_optimal:
        sel = np.asarray(report.selection)
        single = sel.ndim == 1
        full = sel[:, None] if single else sel
        tied = []
        for i, k, tokens in report.optimal_ties or ():
            others = [str(t) for t in tokens if t != full[i, k]]
            plural = "s" if len(others) > 1 else ""
            tied.append(f"token{plural} {', '.join(others)} in {query_name(single, i, k)}")
        return "optimal (global" + (f"; tied with {first_five(tied)})" if tied else ")")
    if report.is_lot:
        return "locally optimal (LOT), not the optimal selection"
    if not report.lot_decided:
        return f"not optimal; LOT test undecided: {_short_reason(report.lot_reason)}"
    return "neither optimal nor locally optimal"


def tied_optima(sets: np.ndarray) -> tuple[tuple[int, int, tuple[int, ...]], ...]:
    """``(sequence, query, tokens)`` of every query with more than one optimal token, from
    :func:`~svmgeo.optimal_token_sets` (shape (n, T) or (n, K, T); ``query`` 0 for the
    first)."""
    full = sets[:, None, :] if sets.ndim == 2 else sets
    return tuple(
        (int(i), int(k), tuple(int(t) for t in np.flatnonzero(full[i, k])))
        for i, k in np.argwhere(full.sum(axis=2) > 1)
    )


def _short_reason(reason: str) -> str:
    """The first clause of an undecided LOT test's reason (``"undecided: <clause> (...)"`` or
    ``"undecided: <clause>: ..."``), for the verdict line; the whole reason stays on the LOT
    test line."""
    text = reason.removeprefix("undecided: ")
    cut = [j for j in (text.find(" ("), text.find(": ")) if j >= 0]
    return text[: min(cut)] if cut else text


#: How the report words a solve status other than ``optimal`` (the others: "<status>, not
#: certified").
_STATUS_WORDS = {
    "locally_optimal": "locally optimal, not certified global",
    "optimal_inaccurate": "inaccurate, not certified",
    "max_iter": "stopped at max_iter, not certified",
}


def certified(status: Status | str | None) -> bool:
    """Whether a solve of this status gives a certified answer: ``optimal`` (its target is
    the prediction), ``infeasible`` (proved: there is no target), or no solve (None)."""
    return status is None or str(status) in (Status.OPTIMAL.value, Status.INFEASIBLE.value)


_VALUE_ONLY = "optimal in value only, W not shown to be the unique l_p minimizer"
r"""How the report words an :math:`\ell_p` solve whose status is certified but whose W is not
shown to be the minimizer (:func:`solve_certified`)."""


def _status_of(result: Any) -> Status | str | None:
    return None if result is None else result.status


def solve_certified(result: Any) -> bool:
    r"""Whether the solve ``result`` backs a certified prediction: its status is
    (:func:`certified`), and an :math:`\ell_p` SVM's W is shown to be the unique minimizer
    (:func:`~svmgeo.analysis.argmin_doubt` is None): near p = 1 or at large p a W certified
    in value can be far from it."""
    if not certified(_status_of(result)):
        return False
    return not isinstance(result, SVMResult) or argmin_doubt(result) is None


def value_only_solves(solves: dict[str, Any]) -> tuple[str, ...]:
    r"""The names of the solves whose status is certified but not their W (:func:`certified`
    but not :func:`solve_certified`: an :math:`\ell_p` SVM certified in value only), the
    report's ``svm_value_only``."""
    return tuple(
        name
        for name, res in solves.items()
        if res is not None and certified(res.status) and not solve_certified(res)
    )


def svm_prediction(name: str, result: Any, target: Any = "W", **options: Any) -> Prediction:
    r"""The prediction ``name`` backed by the solve ``result`` (an object with ``status``;
    None when nothing was solved, and then no target): certified exactly when its status is
    ``optimal`` and, for an :math:`\ell_p` SVM, its W is shown to be the minimizer
    (:func:`solve_certified`), so that :func:`~svmgeo.verify.compare` never names an
    uncertified target as the closest.

    Parameters
    ----------
    name : str
    result : SVMResult, GenSVMResult, JointSVMResult or None
    target : ndarray, None or "W", default "W"
        The target; ``"W"`` takes ``result.W``.
    **options
        The other fields of :class:`~svmgeo.verify.Prediction` (``fit``, ``of``,
        ``candidate``).

    Returns
    -------
    Prediction
    """
    if isinstance(target, str):
        target = None if result is None else result.W
    return Prediction(name, target, certified=solve_certified(result), **options)


def solve_statuses(solves: dict[str, Any]) -> dict[str, str]:
    """``{name: status value}`` of the solves behind the predictions that ran (the report's
    ``svm_status``)."""
    return {name: str(res.status) for name, res in solves.items() if res is not None}


def _joint_lines(report: VerifyReport, num: Any) -> list[tuple[str, str]]:
    """The report lines of joint (head, attention) training."""
    name = "p" if report.param == "p" else "W"
    support = None if report.support is None else np.asarray(report.support).tolist()
    return [
        ("head", "trained with the attention (train_head=True)"),
        ("v_mm support inputs", str(support)),
        (f"corr({name}, {name}_relax)", num(_last(report.corr_relax))),
        ("corr(v, v_mm)", num(_last(report.corr_v))),
        ("||v||", num(None if report.v is None else float(np.linalg.norm(report.v)), ".6g")),
    ]


def _last(curve: np.ndarray | None) -> float | None:
    return None if curve is None else float(curve[-1])


TARGET_FIELDS = {
    "fro": "W_fro", "nuc": "W_nuc", "lp": "W_lp", "relax": "W_relax", "v": "v_mm", "own": "W_own",
    "l1": "W_l1", "linf": "W_linf", "spectral": "W_spectral",
}  # fmt: skip
"""The report field holding the target of each named prediction (its curve is ``corr_<name>``).

The Gen-SVM predictions ``"eq"`` and ``"dir"`` have no entry: their targets are reported with
the rest of the Gen-SVM result (``W_eq``, ``W_dir``, ``W_fin``, ``R``, ``gamma``, ``gen``)."""


def assemble(
    *,
    param: str,
    head: str,
    threshold: float,
    trajectory: Trajectory,
    verdict: Verdict,
    comparison: Comparison,
    svms: dict[str, SVMResult | None],
    method: str = "gd",
    exponent: float | None = None,
    train_head: bool = False,
    **extra: Any,
) -> VerifyReport:
    r"""The one construction of a :class:`VerifyReport`: a run, its verdict and its curves.

    .. math::

        \text{report} = (\text{run: } W(t),\ \text{steps, saturation, norm, status})
        \cup (\text{verdict on } \alpha) \cup \{\mathrm{corr}_{\mathrm{name}}(t),
        W^{\mathrm{name}}\}_{\text{predictions}} \cup \{\texttt{converged\_to}\}

    Parameters
    ----------
    param, head : str
        The parameterization and head of the run.
    threshold : float
        The threshold ``comparison`` was made with.
    trajectory : Trajectory
        The run as read by :mod:`svmgeo.verify._runs`.
    verdict : Verdict
        The run's selection, its optimality and its LOT test.
    comparison : Comparison
        :func:`~svmgeo.verify.compare` of the run with its predictions; must hold ``"fro"``
        and ``"nuc"`` (with a None target where there is no such SVM).
    svms : dict
        The solves behind the predictions, by name (``"fro"``, ``"nuc"``, ``"lp"``, ...);
        with ``svm_own``, ``gen`` and ``joint`` of ``extra`` their statuses are the report's
        ``svm_status``.
    method : str
        The optimizer (``"gd"``, ``"mirror"``, or the command-line spelling of another:
        ``"sign"``, ``"steepest:1.5"``, ...); a mirror-descent run is kept as ``mirror_run``,
        any other as ``run``.
    exponent : float, optional
        The exponent of a mirror-descent run (``mirror_p``).
    train_head : bool
        Whether the head was trained (``v`` is then the run's final head).
    **extra
        The remaining fields (Gen-SVM and joint-training results).

    Returns
    -------
    VerifyReport
    """
    fields: dict[str, Any] = {}
    for name, curve in comparison.curves.items():
        fields[f"corr_{name}"] = curve
        if name in TARGET_FIELDS:
            fields[TARGET_FIELDS[name]] = comparison.targets[name]
    mirror = method == "mirror"
    kept = trajectory.run
    joint = extra.get("joint")
    solves = {
        **svms,
        "own": extra.get("svm_own"),
        "eq": extra.get("gen"),
        "relax": None if joint is None else joint.attention,
        "v": None if joint is None else joint.head,
    }
    nuc = svms.get("nuc")
    return VerifyReport(
        param=param,
        head=head,
        selection=verdict.selection,
        is_optimal=verdict.is_optimal,
        is_lot=bool(verdict.lot),
        lot_decided=verdict.lot.decided,
        optimal_ties=tied_optima(verdict.optimal_sets),
        svm_status=solve_statuses(solves),
        svm_value_only=value_only_solves(solves),
        nuc_rank=None if nuc is None else nuc.rank,
        lot_reason=verdict.lot.reason,
        feasible=verdict.feasible,
        farkas=verdict.farkas,
        steps=trajectory.steps,
        max_softmax=trajectory.max_softmax,
        norm_W=trajectory.norm,
        converged_to=comparison.closest,
        threshold=threshold,
        W=trajectory.final,
        status=trajectory.status,
        method=method,
        mirror_p=exponent,
        train_head=train_head,
        v=trajectory.head,
        svm_fro=svms.get("fro"),
        svm_nuc=svms.get("nuc"),
        svm_lp=svms.get("lp"),
        svm_l1=svms.get("l1"),
        svm_linf=svms.get("linf"),
        svm_spectral=svms.get("spectral"),
        lot=verdict.lot,
        run=None if mirror else kept,
        mirror_run=kept if mirror else None,
        **fields,
        **extra,
    )
