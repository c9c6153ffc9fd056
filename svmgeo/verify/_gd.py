# SPDX-License-Identifier: BSD-3-Clause
r""":func:`verify`: gradient descent on :class:`~svmgeo.TokenData` against the attention SVMs.

The steps: check the options, train (:mod:`._runs`), judge the selection (:mod:`._judge`),
build the named predictions (Att-SVM, Att-SVM⋆, Gen-SVM; the p-SVM, head SVM and relaxed SVM
of prompt attention and joint training), compare (:func:`~svmgeo.verify.compare`) and
assemble the report (:func:`~svmgeo.verify._report.assemble`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import numpy as np

from .._errors import ProblemError
from .._linalg import balanced_factors
from .._validation import MAX_SCALE, check_bool, check_option, check_real, check_seed
from ..analysis import fit_rates, gen_svm, selected_sets
from ..data import TokenData
from ..gd import ATTENTIONS, DEFAULT_BACKEND, HEADS, PARAMS, STEEPEST_RULES, resolve_optimizer
from ..ntp import NextTokenData
from ..solvers import Status, SVMResult, att_svm, faces, joint_svm, optimal_face_alignment
from ._judge import Scored, Verdict, judge, scored
from ._options import refuse_options
from ._protocol import Comparison, Prediction, closest, compare
from ._report import VerifyReport, assemble, svm_prediction
from ._runs import Trajectory, run_gd, run_steepest

__all__ = ["verify"]

# options of `train` that verify passes through unchanged (the others it sets itself)
_PASS_THROUGH = ("ridge", "log_domain", "grad_tol", "saturation_tol", "callback", "normalize_eps",
                 "adam_beta1", "adam_beta2", "adam_eps", "spectral_momentum")  # fmt: skip
# the options of GD alone (not of the other rules of the optimizer table)
_GD_ONLY = ("ridge", "log_domain", "grad_tol", "saturation_tol", "callback", "normalize_eps")
# the rules' own options (not GD's)
_RULE_ONLY = ("adam_beta1", "adam_beta2", "adam_eps", "spectral_momentum")
#: The SVMs another optimizer is compared with (label -> ``norm`` of att_svm), and those whose
#: optimum need not be unique (compared with their optimal face too).
OPTIMIZER_SVMS: dict[str, Any] = {
    "fro": "fro", "nuc": "nuc", "l1": ("lp", 1.0), "linf": ("lp", math.inf),
    "spectral": "spectral",
}  # fmt: skip
FACE_SVMS = faces(OPTIMIZER_SVMS)
_OWN = (
    "param", "m", "loss", "head", "v", "V", "lam", "step_size", "n_steps", "normalized", "init",
    "alpha", "cone_radius", "cone_noise", "backend", "seed", "record_every", "threshold",
    "train_head", "optimizer", "attention",
)  # fmt: skip
_MIRROR_HINT = "ℓp mirror descent is verified by sg.verify_mirror(data, exponent=...)."


def verify(
    data: TokenData,
    *,
    param: str = "W",
    m: int | None = None,
    loss: str | None = None,
    head: str = "linear",
    v: Any = None,
    V: Any = None,
    lam: float | None = None,
    step_size: float = 0.1,
    n_steps: int = 2000,
    normalized: bool = True,
    init: Any = "zero",
    alpha: Any = None,
    cone_radius: float = 10.0,
    cone_noise: float = 0.0,
    backend: str = DEFAULT_BACKEND,
    seed: int | None = None,
    record_every: int | None = None,
    threshold: float = 0.99,
    train_head: bool = False,
    optimizer: str = "gd",
    attention: str = "softmax",
    **train_options: Any,
) -> VerifyReport:
    r"""Run GD and the attention SVMs, and report how GD's direction compares with them.

    .. math::

        \alpha_{ik} = \arg\max_t s_{ikt}(W_{\mathrm{GD}}),\qquad
        \mathrm{corr}\big(W(t), W^{\mathrm{mm}}_\alpha\big),\quad
        \mathrm{corr}\big(W(t), W^{\mathrm{mm}\star}_\alpha\big),\qquad
        \mathrm{corr}(A, B) = \frac{\langle A, B\rangle}{\|A\|_F\|B\|_F}

    What is proved and what is measured (MATH-NOTES §5): for W, GD with :math:`\eta \le
    1/L_W` converges in direction to :math:`W^{\mathrm{mm}}_\alpha` of a locally optimal
    :math:`\alpha` when started in its cone :math:`C_{\mu,R}(W^{\mathrm{mm}}_\alpha)` with
    :math:`\mu = \mu(\alpha)`, :math:`R = R(\mu)`, under Assumption A and a linear head
    (*theorem*, TF-SVM Theorem 5), and towards :math:`W^{\mathrm{mm}}` of the optimal tokens
    under Theorem 4's good-initial-gradient condition if its iterates stay in that cone
    (:math:`\eta \le 1/L_W`, Assumption A, a linear head, unique optimal tokens, Att-SVM(opt)
    feasible; *theorem*, TF-SVM Theorem 4); GD from zero, normalized steps and (K, Q) runs
    approaching :math:`W^{\mathrm{mm}\star}_\alpha` (nuclear) are measured here, not proved
    (Theorem 2 is about the regularization path, not GD). For nonlinear heads
    the report adds the Gen-SVM prediction :math:`W^{\mathrm{eq}} = W^{\mathrm{fin}} + R
    W^{\mathrm{svm}}` for the selected sets of the final probabilities, and :math:`\Gamma`
    (a *conjecture*: the paper's proposed equivalence, measured here, not a theorem).

    Other runs have their own entry points: :math:`\ell_p` mirror descent is
    :func:`~svmgeo.verify_mirror`; a :class:`~svmgeo.NextTokenData` is verified by
    :func:`svmgeo.ntp.verify_ntp_training` (which returns an :class:`~svmgeo.NTPReport`).

    Parameters
    ----------
    data : TokenData
    param : {"W", "KQ", "p"}
        ``"p"``: prompt attention :math:`f = v^\top U^\top \mathrm{softmax}(X p)`, compared
        with the p-SVM of GD's selection (see the Notes of :class:`VerifyReport`).
    m : int, optional
        Width of K and Q (default d). With ``m < d`` the nuclear SVM carries the rank bound m.
    loss, head, v, V, lam, step_size, n_steps, normalized, backend, record_every
        As in :func:`~svmgeo.train` (``n_steps`` defaults to 2000 here, ``loss`` to
        ``"logistic"``); GD's ``step_size="polyak"`` runs, as in ``train``, as
        ``optimizer=("steepest", 2)`` and is reported as that rule.
    init : "zero", ("random", scale), array, (K, Q), or "cone"
        As in :func:`~svmgeo.train`, plus ``"cone"``: start in the cone around
        :math:`W^{\mathrm{mm}}_\alpha` of the selection ``alpha``,
        :math:`W_0 = R\,W^{\mathrm{mm}}_\alpha / \|W^{\mathrm{mm}}_\alpha\|_F` (``R =
        cone_radius``) plus a random perturbation of relative size ``cone_noise``; for (K, Q)
        the balanced factorization of :math:`W_0` (its top ``m`` singular directions).
    alpha : array of int, shape (n,) or (n, K), optional
        The selection whose cone ``init="cone"`` starts in (required then, unused otherwise).
    cone_radius : float
        :math:`R > 0` of the cone start, at most 1e151.
    cone_noise : float
        Relative size (in :math:`\|\cdot\|_F`) of the perturbation of the cone start, in
        [0, 1e151].
    seed : int, optional
        Seed of random initializations and of the cone perturbation.
    threshold : float
        ``converged_to`` names the best prediction when its final correlation is at least
        this, among the predictions whose solve is certified (status ``optimal``; the others,
        such as the locally optimal rank-bounded Att-SVM⋆ of ``param="KQ"`` with ``m < d``,
        keep their curves, and the report lists them as not certified).
    train_head : bool, default False
        Train the head v with the attention (``param="p"`` or ``"W"``, linear head, from
        ``v`` or ``data.v``) and compare with both predictions of :func:`~svmgeo.joint_svm`:
        :math:`v(t)` with the head SVM :math:`v^{\mathrm{mm}}`, the attention with the relaxed
        SVM (``converged_to="relax"``) and with the SVM of GD's selection (``"fro"``).
    optimizer : str or ("steepest", q), default "gd"
        The training algorithm: ``"gd"``, or a rule of the optimizer table
        (``"sign"``, ``("steepest", q)``, ``"spectral"``, ``"adam"``; ``param`` "W" or "KQ",
        softmax, the linear head, options ``adam_beta1``, ``adam_beta2``, ``adam_eps``,
        ``spectral_momentum`` in ``train_options``). Another rule is compared with every SVM
        of its selection: Frobenius, nuclear, :math:`\ell_1`, :math:`\ell_\infty` and spectral
        (and :math:`\ell_q` for ``("steepest", q)``), the last three also over their optimal
        face (``face_corr``, which ``converged_to`` reads). ``"mirror"`` is
        :func:`~svmgeo.verify_mirror` (an error here that names it).
    attention : {"softmax", "linear", "normalized_linear", "sigmoid", "relu"}, default "softmax"
        The attention map GD trains (:func:`~svmgeo.train`). For a map other than softmax
        (``param`` "W" or "KQ", the linear head, no ``train_head`` or cone start) the report
        compares GD with the map's own SVM (``"own"``: ``W_own``, ``corr_own``,
        :func:`~svmgeo.att_svm` with ``attention=``; sigmoid and ReLU at the sign / active
        pattern of GD's final W; nuclear for ``param="KQ"``, svmgeo's analogue of Att-SVM⋆,
        a conjecture) and with softmax's Att-SVM of the keys with the largest
        logits at the end (``"fro"``, ``"nuc"``; ``selection`` and the verdict are about
        those keys); ``own_status`` labels the own prediction (theorem of whom, conjecture).
        ReLU attention needs a non-zero start (:math:`W = 0` is stationary), normalized
        linear attention too (undefined there), and it has no SVM of its own.
    **train_options
        Passed to :func:`~svmgeo.train`: ``ridge``, ``log_domain``, ``grad_tol``,
        ``saturation_tol``, ``callback``, ``normalize_eps`` (GD's), ``adam_beta1``,
        ``adam_beta2``, ``adam_eps``, ``spectral_momentum`` (the rules'). Any other name is a
        :class:`~svmgeo.ProblemError` (the old spellings ``method``, ``p``, ``tol`` name
        their new ones).

    Returns
    -------
    VerifyReport

    Raises
    ------
    ProblemError
        Invalid options (including unknown ``train_options``), data that is not a
        TokenData (a NextTokenData: the message names the function to call),
        ``optimizer="mirror"`` (use :func:`~svmgeo.verify_mirror`), ``init="cone"`` without
        ``alpha`` or with an infeasible Att-SVM(alpha), data without scores for the head, or
        a head whose score terms overflow float64 (:math:`|v|^\top(|V|^\top|u|)` for ReLU;
        the tie rule cannot judge infinite sizes: scale ``V``, ``v`` or ``lam`` down).
    TieError
        When GD's final selection is tied (a query's largest final logit shared by several
        tokens: identical tokens, or a stationary run such as K = Q = 0).

    Examples
    --------
    >>> import svmgeo as sg
    >>> data = sg.random_data(6, 8, 10, seed=2, score_gap=0.05)
    >>> rep = sg.verify(data, n_steps=2000, backend="numpy")
    >>> bool(rep.is_optimal), rep.converged_to
    (True, 'fro')
    """
    threshold = _check_options(data, param, head, threshold, optimizer, train_options)
    loss = "logistic" if loss is None else loss
    check_seed(seed, where="verify")  # it reaches train only with a random start
    train_head = check_bool(train_head, "train_head", where="verify")  # 'yes' read as True
    rule, q = resolve_optimizer(optimizer, "verify")
    if rule == "gd" and isinstance(step_size, str) and step_size == "polyak":
        if normalized is not True:
            raise ProblemError(
                f"verify: step_size='polyak' takes normalized steps; got normalized="
                f"{normalized!r}. Drop normalized, or pass a float step_size."
            )
        rule, q = "steepest", 2.0  # GD's Polyak step, run as train runs it
    _refuse_unused(
        rule in STEEPEST_RULES, attention != "softmax" or param == "p" or bool(train_head),
        normalized, V, lam, init, (cone_radius, cone_noise),
    )  # fmt: skip
    if rule in STEEPEST_RULES:
        return _verify_optimizer(
            data, rule=rule, q=q, param=param, head=head, attention=attention,
            train_head=train_head, threshold=threshold, init=init, alpha=alpha,
            cone=(cone_radius, cone_noise),
            options=dict(m=m, loss=loss, v=v, step_size=step_size, n_steps=n_steps, seed=seed,
                         backend=backend, record_every=record_every, **train_options),
        )  # fmt: skip
    given_rule = sorted(k for k in train_options if k in _RULE_ONLY)
    if given_rule:
        raise ProblemError(
            f"{', '.join(given_rule)} are options of the rules 'adam' / 'spectral'; got them "
            "with optimizer='gd'. Drop them or pass that optimizer."
        )
    options: dict[str, Any] = dict(
        m=m, loss=loss, v=v, step_size=step_size, n_steps=n_steps, normalized=normalized,
        seed=seed, backend=backend, record_every=record_every, **train_options,
    )  # fmt: skip
    check_option(attention, "attention", ATTENTIONS, where="verify")
    if attention != "softmax":
        _check_map_options(attention, param, head, train_head, init, alpha)
        return _verify_map(
            data, attention=attention, param=param, threshold=threshold,
            options={**options, "init": init},
        )  # fmt: skip
    if param == "p" or train_head:
        _check_prompt_options(param, head, init, alpha)
        return _verify_prompt(
            data, param=param, train_head=bool(train_head), threshold=threshold,
            options={**options, "init": init},
        )  # fmt: skip
    sc = _scored(data, head, v, V, lam)
    width = data.d if m is None else m
    if isinstance(init, str) and init == "cone":
        init = _cone_start(sc.data, alpha, param, width, cone_radius, cone_noise, seed)
    elif alpha is not None:
        raise ProblemError("alpha is used only with init='cone'; got alpha with another init.")
    trajectory = run_gd(
        data, param=param, head=head, train_head=False,
        options={**options, "V": V, "lam": lam, "init": init},
    )  # fmt: skip
    verdict = judge(sc, trajectory.selection)
    predictions, svms = _svm_predictions(sc.data, verdict, rank=_rank(data, param, width))
    extra: dict[str, Any] = {}
    if head != "linear":
        extra, gen_predictions = _gen_svm_predictions(data, trajectory)
        predictions += gen_predictions
    comparison = compare({"theta": trajectory.iterates}, predictions, threshold)
    return assemble(
        param=param, head=head, threshold=threshold, trajectory=trajectory, verdict=verdict,
        comparison=comparison, svms=svms,
        rates=_rates(trajectory, svms, OPTIMIZER_SVMS, _fixed_length(options)),
        **extra,
    )  # fmt: skip


def _refuse_unused(
    other_rule: bool,
    linear_head_only: bool,
    normalized: Any,
    V: Any,
    lam: Any,
    init: Any,
    cone: tuple[float, float],
) -> None:
    """A :class:`ProblemError` for an option :func:`verify` would ignore: ``normalized`` with
    a rule other than GD (it takes its own steps), ``V`` / ``lam`` where only the linear head
    runs (the other rules, attention maps, ``param="p"``, ``train_head``), the cone's radius
    and noise without ``init="cone"``."""
    if other_rule and normalized is not True:
        raise ProblemError(
            f"verify: normalized={normalized!r} applies to optimizer='gd'; the other rules "
            "take their own steps. Drop normalized."
        )
    given = [name for name, value in (("V", V), ("lam", lam)) if value is not None]
    if (other_rule or linear_head_only) and given:
        raise ProblemError(
            f"verify: {' and '.join(given)} {'belongs' if len(given) == 1 else 'belong'} to "
            "head='relu' / 'concave', which this "
            "verification does not run (the other rules, attention maps, param='p' and "
            f"train_head use the linear head). Drop {', '.join(given)}."
        )
    if not (isinstance(init, str) and init == "cone") and cone != (10.0, 0.0):
        raise ProblemError(
            f"verify: cone_radius and cone_noise apply to init='cone' only; got "
            f"cone_radius={cone[0]!r}, cone_noise={cone[1]!r} with init={init!r}."
        )


def _fixed_length(options: dict[str, Any]) -> bool:
    """Whether the run's steps have a fixed length: normalized (the steepest rules always are)
    with a constant step size (not the Polyak step), so that ||W|| grows linearly in t."""
    return bool(options.get("normalized", True)) and not isinstance(options["step_size"], str)


def _rates(
    trajectory: Trajectory,
    svms: dict[str, SVMResult | None],
    norms: dict[str, Any],
    fixed_length: bool,
) -> dict[str, Any]:
    r""":func:`~svmgeo.fit_rates` of the run against each SVM of ``svms`` in its own norm
    (``norms``): norm growth against :math:`t` for steps of a fixed length (``fixed_length``:
    normalized or steepest steps of a constant size), against :math:`\log t` otherwise, and
    the decay of :math:`1 - \mathrm{corr}`; None where the SVM has no solution or the run
    recorded too few steps to fit. The engine's run is fitted (its recorded W(t), the
    trajectory's iterates), so each :class:`~svmgeo.Rates` carries its stop status
    (``run_status``) and the verdict names an early stop."""
    growth = "linear" if fixed_length else "log"
    out: dict[str, Any] = {}
    for name, res in svms.items():
        if res is None or res.W is None or name not in norms:
            out[name] = None
            continue
        try:
            out[name] = fit_rates(trajectory.run, res.W, norm=norms[name], growth=growth)
        except ProblemError:  # fewer than 3 records past sqrt(t_max)
            out[name] = None
    return out


def _verify_optimizer(
    data: TokenData,
    *,
    rule: str,
    q: float | None,
    param: str,
    head: str,
    attention: str,
    train_head: bool,
    threshold: float,
    init: Any,
    alpha: Any,
    cone: tuple[float, float],
    options: dict[str, Any],
) -> VerifyReport:
    r""":func:`verify` for the other rules of the optimizer table: the run against every SVM.

    .. math::

        \mathrm{corr}\big(W(t), W^{\mathrm{mm}}_{\|\cdot\|,\alpha}\big),\quad
        \|\cdot\| \in \{F, *, \ell_1, \ell_\infty, 2\}\ (\text{and } \ell_q),\qquad
        \max_{W' \in \mathcal F_{\|\cdot\|}} \mathrm{corr}(W_T, W')\ \text{(faces)}

    with α the run's final selection; ``converged_to`` is the certified SVM of largest final
    correlation (the face's for :math:`\ell_1, \ell_\infty`, spectral) when it is at least
    ``threshold``.
    """
    label = rule if q is None else f"steepest:{q:g}"
    refused = [
        name for name, bad in (
            ("param='p'", param == "p"), (f"head={head!r}", head != "linear"),
            (f"attention={attention!r}", attention != "softmax"),
            ("train_head=True", bool(train_head)),
        ) if bad
    ] + [k for k in options if k in _GD_ONLY]  # fmt: skip
    if refused:
        raise ProblemError(
            f"verify(optimizer={label!r}) compares softmax attention's W or (K, Q) with its "
            f"SVMs, with the linear head; got {', '.join(refused)}. Drop it, or verify GD "
            "(optimizer='gd')."
        )
    sc = scored(data, v=options["v"])
    width = data.d if options["m"] is None else options["m"]
    if isinstance(init, str) and init == "cone":
        init = _cone_start(sc.data, alpha, param, width, cone[0], cone[1], options["seed"])
    elif alpha is not None:
        raise ProblemError("alpha is used only with init='cone'; got alpha with another init.")
    train = {k: val for k, val in options.items() if val is not None or k == "v"}
    train["init"] = init
    trajectory = run_steepest(
        data, optimizer=rule if q is None else ("steepest", q), param=param, options=train
    )
    verdict = judge(sc, trajectory.selection)
    norms = dict(OPTIMIZER_SVMS)
    if q is not None and q not in (1.0, 2.0, math.inf):
        norms["lp"] = ("lp", q)
    rank = _rank(data, param, width)
    svms: dict[str, SVMResult | None] = {}
    for name, norm in norms.items():
        if not verdict.feasible:
            svms[name] = None
        elif name == "fro":
            svms[name] = verdict.lot.support.svm
        else:
            solved = att_svm(sc.data, verdict.selection, norm=norm,
                             rank=rank if name == "nuc" else None)  # fmt: skip
            svms[name] = solved if solved.W is not None else None
    predictions = [svm_prediction(name, s) for name, s in svms.items()]
    comparison = compare({"theta": trajectory.iterates}, predictions, threshold)
    face: dict[str, float] = {}
    bounds: list[str] = []  # face values that are lower bounds on the face's best
    for name, res in svms.items():
        if res is None:
            face[name] = math.nan
        elif name in FACE_SVMS and res.rank is None:  # a rank bound's optima: no convex face
            aligned = optimal_face_alignment(res, trajectory.final)
            face[name] = aligned.correlation
            if not aligned.maximum:
                bounds.append(name)
        else:
            face[name] = comparison.finals[name]
    certified = {p.name for p in predictions if p.certified}  # the closest is certified
    best = closest({k: c for k, c in face.items() if k in certified}, threshold)
    comparison = Comparison(comparison.curves, comparison.targets, comparison.finals, best,
                            threshold)  # fmt: skip
    return assemble(
        param=param, head="linear", threshold=threshold, trajectory=trajectory, verdict=verdict,
        comparison=comparison, svms=svms, method=label, face_corr=face,
        face_lower_bounds=tuple(bounds),
        rates=_rates(trajectory, svms, norms, _fixed_length({**options, "normalized": True})),
    )  # fmt: skip


# -- step 1: options --------------------------------------------------------------------------
def _check_options(
    data: Any,
    param: str,
    head: str,
    threshold: float,
    optimizer: str,
    train_options: dict[str, Any],
) -> float:
    """Refuse, by name, what :func:`verify` does not do; return the checked threshold."""
    where = "verify"
    if isinstance(data, NextTokenData):
        raise ProblemError(
            "verify takes one svmgeo.TokenData; a NextTokenData is verified by "
            "svmgeo.ntp.verify_ntp_training(data, loss=..., step_size=..., normalized=..., "
            "n_steps=..., record_every=...), which returns an NTPReport."
        )
    if not isinstance(data, TokenData):
        raise ProblemError(f"verify takes one svmgeo.TokenData; got {type(data).__name__}.")
    if resolve_optimizer(optimizer, where)[0] == "mirror":
        raise ProblemError(f"verify runs gradient descent (optimizer='gd'). {_MIRROR_HINT}")
    check_option(param, "param", PARAMS, where=where)
    check_option(head, "head", HEADS, where=where)
    threshold = check_real(threshold, "threshold", low=-1.0, high=1.0, where=where)
    refuse_options(
        {k: val for k, val in train_options.items() if k not in _PASS_THROUGH},
        where=where,
        takes=[*_OWN, *(f"{name} (passed to train)" for name in _PASS_THROUGH)],
        hints={"method": _MIRROR_HINT, "p": _MIRROR_HINT, "record": "record is set by verify."},
    )
    return threshold


def _check_prompt_options(param: str, head: str, init: Any, alpha: Any) -> None:
    """What prompt attention and joint training support: a linear head, no cone start, and
    (with ``train_head``) ``param`` "p" or "W"."""
    what = "param='p'" if param == "p" else "train_head=True"
    if param == "KQ":
        raise ProblemError(
            "verify(train_head=True) compares with the relaxed SVM of p or W; param='KQ' has "
            "none here. Pass param='p' or param='W'."
        )
    if head != "linear":
        raise ProblemError(
            f"verify with {what} needs the linear head (the head SVM v_mm is linear); got "
            f"head={head!r}."
        )
    if (isinstance(init, str) and init == "cone") or alpha is not None:
        raise ProblemError(
            f"init='cone' and alpha are not available with {what}; start from 'zero', "
            "('random', scale) or an array."
        )


def _scored(data: TokenData, head: str, v: Any, V: Any, lam: Any) -> Scored:
    """:func:`~svmgeo.verify._judge.scored` by the head GD trains, after checking the head has
    its parameters."""
    if head == "relu" and V is None:
        raise ProblemError(
            f"head='relu' needs V of shape ({data.d}, p): h(x) = vᵀReLU(Vᵀx) with V fixed."
        )
    if head == "concave" and lam is None:
        raise ProblemError("head='concave' needs lam, the λ of h(x) = vᵀx − λ‖x‖²; pass lam=0.1.")
    return scored(data, head, v, V, lam)


# -- step 2: the start of training -------------------------------------------------------------
def _cone_start(
    sdata: TokenData,
    alpha: Any,
    param: str,
    width: int,
    cone_radius: float,
    cone_noise: float,
    seed: int | None,
) -> Any:
    r"""The start ``init="cone"``: :math:`R\,W^{\mathrm{mm}}_\alpha/\|W^{\mathrm{mm}}_\alpha\|_F`
    plus a relative perturbation; for (K, Q) its balanced factorization
    :math:`K = U\Sigma^{1/2}, Q = V\Sigma^{1/2}` (top ``width``), each factor perturbed."""
    where = "verify"
    if alpha is None:
        raise ProblemError(
            "init='cone' needs alpha=, the selection whose cone around W^mm_alpha GD "
            "starts in (e.g. a locally optimal selection)."
        )
    # at most MAX_SCALE each: the start stays finite (it blamed init, which was not passed)
    radius = check_real(
        cone_radius, "cone_radius", low=0.0, low_open=True, high=MAX_SCALE, where=where
    )
    noise = check_real(cone_noise, "cone_noise", low=0.0, high=MAX_SCALE, where=where)
    rng = check_seed(seed, where=where)
    ref = att_svm(sdata, alpha)
    if ref.W is None:
        raise ProblemError(
            f"init='cone': Att-SVM(alpha) has no solution ({ref.message}); the cone around "
            "W^mm_alpha is undefined. Pick a feasible alpha (sg.feasibility(data, alpha))."
        )
    d = ref.W.shape[0]
    W0 = radius * ref.W / np.linalg.norm(ref.W)
    if param == "W":
        E = rng.standard_normal((d, d))
        return W0 + noise * radius * E / np.linalg.norm(E)
    K, Q = balanced_factors(W0, width)
    scale = math.sqrt(radius)
    EK, EQ = rng.standard_normal((d, width)), rng.standard_normal((d, width))
    K = K + noise * scale * EK / np.linalg.norm(EK)
    Q = Q + noise * scale * EQ / np.linalg.norm(EQ)
    return (K, Q)


# -- step 3: predictions ---------------------------------------------------------------------
def _rank(data: TokenData, param: str, width: int) -> int | None:
    """The rank bound of Att-SVM⋆: the width m of (K, Q) when ``m < d``."""
    return width if (param == "KQ" and width < data.d) else None


def _svm_predictions(
    sdata: TokenData, verdict: Verdict, *, rank: int | None
) -> tuple[list[Prediction], dict[str, SVMResult | None]]:
    r""":math:`W^{\mathrm{mm}}_\alpha` (from the LOT test) and :math:`W^{\mathrm{mm}\star}_\alpha`
    of GD's selection; None targets when Att-SVM(α) is infeasible. A solve that is not
    certified (``rank`` < d gives a locally optimal one) is a prediction that is never
    the closest (:func:`~svmgeo.verify._report.svm_prediction`)."""
    svm_fro = verdict.lot.support.svm if verdict.feasible else None
    svm_nuc = att_svm(sdata, verdict.selection, norm="nuc", rank=rank) if verdict.feasible else None
    svms = {"fro": svm_fro, "nuc": svm_nuc}
    return [svm_prediction(name, s) for name, s in svms.items()], svms


def _gen_svm_predictions(
    data: TokenData, trajectory: Trajectory
) -> tuple[dict[str, Any], list[Prediction]]:
    r"""Nonlinear heads: the selected sets of the final softmax, the Gen-SVM result and its
    predictions :math:`W^{\mathrm{fin}} + R(t)W^{\mathrm{svm}}` (``"eq"``, :math:`R(t)` fitted
    to each iterate as :func:`~svmgeo.gen_svm` fits it to the final W) and
    :math:`W^{\mathrm{svm}}` alone (``"dir"``, not a candidate)."""
    P = trajectory.probs
    if P is None:  # pragma: no cover - recorded for every nonlinear head
        raise RuntimeError("internal error: the run did not record probs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # counted in n_ambiguous instead
        sets = selected_sets(P)
    extra: dict[str, Any] = dict(
        selected=sets.selected, masked=sets.masked, n_ambiguous=int(sets.ambiguous.sum())
    )
    sel3 = sets.selected[:, None, :] if data.single_query else sets.selected
    vis = np.asarray(data.visible)
    full = (sel3 == vis).all(axis=2) & (vis.sum(axis=2) > 1)
    if np.any(full):
        i, k = (int(x) for x in np.argwhere(full)[0])
        extra["gen_note"] = (
            f"no Gen-SVM: the selected set of sequence {i}, query {k} holds every visible "
            "token (GD has not masked any of them; a finite optimum inside the simplex?)"
        )
        return extra, []
    gen = gen_svm(data, sets, probs=P, fit_to=trajectory.final)
    extra.update(
        gen_feasible=bool(gen.feasible), W_eq=gen.W_eq, W_dir=gen.W_dir, W_fin=gen.W_fin,
        R=gen.R, gamma=gen.gamma, gen=gen,
    )  # fmt: skip
    if gen.W_dir is None or gen.W_fin is None:
        return extra, []
    D, Fin = gen.W_dir, gen.W_fin
    dd = float(np.vdot(D, D))

    def fitted(Wt: np.ndarray) -> np.ndarray:
        return Fin + max(0.0, float(np.vdot(Wt - Fin, D)) / dd) * D

    return extra, [
        svm_prediction("eq", gen, gen.W_eq, fit=fitted),
        svm_prediction("dir", gen, D, candidate=False),
    ]


# -- prompt attention and joint training ------------------------------------------------------
def _verify_prompt(
    data: TokenData,
    *,
    param: str,
    train_head: bool,
    threshold: float,
    options: dict[str, Any],
) -> VerifyReport:
    r""":func:`verify` for prompt attention p and for joint (head, attention) training.

    GD's selection α is its final argmax. The predictions: the p-SVM of α (Att-SVM with
    :math:`z_i = e_1`; Att-SVM for ``param="W"``) and, with ``train_head``, the head SVM
    :math:`v^{\mathrm{mm}}` and the relaxed SVM of :func:`~svmgeo.joint_svm`; optimality and
    the LOT test score tokens with :math:`v^{\mathrm{mm}}` (GD's final head when the head SVM
    has no solution), with the fixed head otherwise.
    """
    key: Literal["p", "W"] = "p" if param == "p" else "W"
    trajectory = run_gd(data, param=param, head="linear", train_head=train_head, options=options)
    selection = trajectory.selection
    joint = joint_svm(data, selection, param=key) if train_head else None
    head_v = options["v"]
    if joint is not None:
        head_v = joint.v if joint.v is not None else trajectory.head
    sc = scored(data, v=head_v, prompt=param == "p")
    verdict = judge(sc, selection, prompt=param == "p")
    svm = verdict.lot.support.svm if verdict.feasible else None
    target = None if svm is None or svm.W is None else (svm.W[:, 0] if key == "p" else svm.W)
    svm_nuc = att_svm(sc.data, selection, norm="nuc") if verdict.feasible and key == "W" else None
    predictions = [svm_prediction("fro", svm, target), svm_prediction("nuc", svm_nuc)]
    extra: dict[str, Any] = {}
    trajectories = {"theta": trajectory.iterates}
    if joint is not None and trajectory.head_iterates is not None:
        relax = joint.p if key == "p" else joint.W
        predictions = [  # "relax" first: it wins ties with "fro"
            svm_prediction("relax", joint.attention, relax),
            *predictions,
            svm_prediction("v", joint.head, joint.v, of="v", candidate=False),
        ]
        trajectories["v"] = trajectory.head_iterates
        extra.update(support=joint.support, joint=joint)
    comparison = compare(trajectories, predictions, threshold)
    return assemble(
        param=param, head="linear", threshold=threshold, trajectory=trajectory,
        verdict=verdict, comparison=comparison, svms={"fro": svm, "nuc": svm_nuc},
        train_head=train_head, **extra,
    )  # fmt: skip


# -- other attention maps (issue #22) ----------------------------------------------------------
#: The losses with the exponential tail the implicit-bias theorems of linear and homogeneous
#: models assume (Soudry et al. 2018; Nacson et al. 2019; Lyu & Li 2020; Ji & Telgarsky 2020).
EXPONENTIAL_TAILS = ("logistic", "exponential")


def linear_step_limit(own: SVMResult, loss: str, W0: np.ndarray, n: int) -> float:
    r"""The smoothness :math:`\beta` of linear attention's risk that plain GD's step is held to,
    :math:`\eta < 2/\beta` (Soudry et al. 2018), for the logistic and exponential losses.

    .. math::

        L(W) = \frac1n \sum_j \ell(\langle A_j, W\rangle),\qquad
        \nabla^2 L = \frac1n \sum_j \ell''(\langle A_j, W\rangle)\,
        \mathrm{vec}A_j\,\mathrm{vec}A_j^\top,\qquad
        \beta = \begin{cases}
        \lambda_{\max}(G)/(4n) & \text{logistic } (\ell'' \le 1/4),\\
        L(W_0)\,\lambda_{\max}(G) & \text{exponential, on } \{L \le L(W_0)\},
        \end{cases}

    with :math:`A_j = a_j b_j^\top` the rows of the SVM ``own`` (``att_svm(data,
    attention="linear")``, one per query, labels included), n the number of sequences (the
    engine's risk is a mean over sequences of the sum over queries) and
    :math:`G_{jk} = \langle A_j, A_k\rangle = (a_j^\top a_k)(b_j^\top b_k)`. The exponential loss
    is not globally smooth; :math:`\ell'' = \ell` and each :math:`\ell(\langle A_j, W\rangle)
    \le n L(W)`, so :math:`\beta` bounds the Hessian on the sublevel set of the start
    :math:`W_0`, which plain GD with :math:`\eta < 2/\beta` does not leave (the descent lemma).
    """
    cs = own.constraints
    top = float(np.linalg.eigvalsh(cs.gram())[-1]) if cs.N else 0.0
    if loss == "logistic":
        return top / (4.0 * n)
    margins = cs.apply(np.asarray(W0, dtype=float))
    return float(np.sum(np.exp(-margins)) / n) * top


def own_status(
    attention: str,
    loss: Any,
    normalized: bool,
    param: str = "W",
    *,
    step_size: float | None = None,
    beta: float | None = None,
    separable: bool | None = None,
    ridge: float = 0.0,
) -> str:
    """What a map's own prediction in :func:`verify` is: a theorem (whose, under which
    hypotheses, checked), a conjecture, measured, or none, for this ``loss``, step and
    parameterization (the theorems below are about GD on W: for ``param="KQ"`` the model is
    bilinear in (K, Q), outside them, and the nuclear SVM of the map is svmgeo's analogue of
    Att-SVM⋆, a conjecture).

    Linear attention with plain steps is labelled a theorem (Soudry et al. 2018) only when its
    hypotheses are checked here: an exponentially tailed loss, ``separable`` rows (the map's
    SVM solved ``optimal``; False: certified infeasible; None: not decided), no ``ridge``,
    and ``step_size`` below ``2 / beta`` (:func:`linear_step_limit`); otherwise "measured:"
    with the hypotheses that fail or are not checked.
    """
    name = loss if isinstance(loss, str) else getattr(loss, "name", "a user loss")
    tailed = isinstance(loss, str) and loss in EXPONENTIAL_TAILS
    if param == "KQ" and attention in ("linear", "relu") and tailed:
        return (
            "conjecture (svmgeo's analogue of Att-SVM⋆): GD on (K, Q) is bilinear in its "
            "parameters, outside the theorems for GD on W (Soudry et al. 2018; Nacson et al. "
            "2019; Lyu & Li 2020); the map's nuclear-norm SVM is measured against"
        )
    if attention == "linear":
        if not tailed:
            return (
                f"none: Y f is linear in W, but the {name} loss is not exponentially tailed, "
                "which the max-margin theorems for linear models assume (Soudry et al. 2018; "
                "Nacson et al. 2019): the SVM is measured against, not predicted"
            )
        if normalized:
            return (
                "measured (the limit is a theorem for plain GD with η < 2/β, Soudry et al. "
                "2018, and for Nacson et al. 2019's step rule; constant-step normalized GD is "
                f"neither): Y f is linear in W; the {name} loss is exponentially tailed; the "
                "direction is compared with its hard-margin SVM"
            )
        return _linear_plain_status(name, step_size, beta, separable, ridge)
    if attention == "relu":
        if not tailed:
            return (
                f"none: f is homogeneous in W, but the {name} loss is not of exponential type, "
                "which Lyu & Li 2020 and Ji & Telgarsky 2020 assume: measured only"
            )
        steps = "normalized discrete GD" if normalized else "plain discrete GD"
        return (
            "conjecture, measured: a KKT point of min ||W||^2 s.t. Y f >= 1 (the convex QP at "
            "the final active pattern). f is positively 1-homogeneous in W and the "
            f"{name} loss is of exponential type, but the theorems (Lyu & Li 2020: gradient "
            "flow, and GD with small steps on smooth models; Ji & Telgarsky 2020: gradient "
            "flow) hold once the loss is below a threshold, which is not checked here, and "
            f"ReLU attention is not smooth while svmgeo runs {steps}"
        )
    if attention == "sigmoid":
        return "conjecture (svmgeo's): the SVM of the final sign pattern, measured"
    return "none: u / 1^T u is scale-invariant in W, no margin grows"


def _linear_plain_status(
    name: str, step_size: float | None, beta: float | None, separable: bool | None, ridge: float
) -> str:
    """:func:`own_status` of linear attention's plain GD on an exponentially tailed loss."""
    limit = None if beta is None or not beta > 0.0 else 2.0 / beta
    fails = []
    if separable is False:
        fails.append("the rows are not separable (the linear SVM is infeasible)")
    elif separable is None:
        fails.append("separability is not decided (the linear SVM's solve is not optimal)")
    if ridge > 0.0:
        fails.append(f"ridge = {ridge:g} > 0 (the regularized risk has a finite minimizer)")
    if step_size is None or limit is None:
        fails.append("the step size is not checked against 2/β")
    elif not step_size < limit:
        fails.append(f"the step η = {step_size:g} is not below 2/β = {limit:.4g}")
    if fails:
        return (
            f"measured: {'; '.join(fails)}. Soudry et al. 2018's theorem (separable rows, "
            "exponentially tailed loss, plain GD with η < 2/β) does not apply; the direction "
            "is compared with the hard-margin SVM of the rows"
        )
    beta_is = (
        "λmax(Σ_j vec A_j vec A_jᵀ)/(4n), the risk's smoothness"
        if name == "logistic"
        else "L(W_0) λmax(Σ_j vec A_j vec A_jᵀ), the risk's smoothness on its sublevel set "
        "{L ≤ L(W_0)}, which these steps do not leave"
    )
    return (
        "theorem (Soudry et al. 2018: separable rows, exponentially tailed loss, plain GD with "
        f"η < 2/β = {limit:.4g}; β = {beta_is}): Y f is linear in W, so the direction tends "
        f"to its hard-margin SVM (the {name} loss)"
    )


def _check_map_options(
    attention: str, param: str, head: str, train_head: bool, init: Any, alpha: Any
) -> None:
    """What verify supports for attention maps other than softmax."""
    what = f"verify(attention={attention!r})"
    if param not in ("W", "KQ") or head != "linear" or train_head:
        raise ProblemError(
            f"{what} compares W (or KQ^T) with the map's SVM, built on the linear head's scores; "
            f"got param={param!r}, head={head!r}, train_head={train_head}. Use param='W' or "
            "'KQ', head='linear', train_head=False."
        )
    if (isinstance(init, str) and init == "cone") or alpha is not None:
        raise ProblemError(
            f"{what}: init='cone' and alpha are softmax's (a selection's cone); start from "
            "'zero', ('random', scale) or an array."
        )
    if attention in ("relu", "normalized_linear") and isinstance(init, str) and init == "zero":
        raise ProblemError(
            f"{what} cannot start at W = 0 ("
            + ("every ReLU is off there: the gradient is 0" if attention == "relu"
               else "u / 1^T u is undefined there")
            + "); pass init=('random', 0.1) and a seed."
        )  # fmt: skip


def _verify_map(
    data: TokenData, *, attention: str, param: str, threshold: float, options: dict[str, Any]
) -> VerifyReport:
    r""":func:`verify` for an attention map other than softmax: GD with the map against its
    own SVM (:func:`~svmgeo.att_svm` with ``attention=``) and softmax's Att-SVM."""
    trajectory = run_gd(
        data, param=param, head="linear", train_head=False,
        options={**options, "attention": attention},
    )  # fmt: skip
    sc = scored(data, v=options["v"])
    verdict = judge(sc, trajectory.selection)
    rank = _rank(data, param, data.d if options["m"] is None else options["m"])
    predictions, svms = _svm_predictions(sc.data, verdict, rank=rank)
    own: SVMResult | None = None
    if attention != "normalized_linear":
        pattern = None if attention == "linear" else trajectory.final
        try:
            own = att_svm(
                sc.data, attention=attention, pattern=pattern,
                norm="nuc" if param == "KQ" else "fro", rank=rank if param == "KQ" else None,
            )  # fmt: skip
        except ProblemError:  # a key exactly at logit 0: no sign pattern to build on
            own = None
    target = None if own is None or own.status is Status.INFEASIBLE else own.W
    predictions = [svm_prediction("own", own, target), *predictions]  # "own" first: wins ties
    linear_w = attention == "linear" and param == "W"
    facts = _linear_facts(data, own, trajectory, options) if linear_w else {}
    comparison = compare({"theta": trajectory.iterates}, predictions, threshold)
    return assemble(
        param=param, head="linear", threshold=threshold, trajectory=trajectory,
        verdict=verdict, comparison=comparison, svms=svms,
        attention=attention, svm_own=own,
        own_status=own_status(
            attention, options["loss"], options["normalized"], param, **facts
        ),
    )  # fmt: skip


def _linear_facts(
    data: TokenData, own: SVMResult | None, trajectory: Trajectory, options: dict[str, Any]
) -> dict[str, Any]:
    """What :func:`own_status` checks for linear attention: the step, β of the risk
    (:func:`linear_step_limit`, logistic and exponential losses), separability (the map's SVM
    ``optimal``: separable; ``infeasible``, with its certificate: not) and the ridge."""
    separable = None  # no SVM, or a solve neither certified optimal nor infeasible
    if own is not None and own.status is Status.INFEASIBLE:
        separable = False
    elif own is not None and own.status is Status.OPTIMAL:
        separable = True
    loss = options["loss"]
    beta = None
    if own is not None and isinstance(loss, str) and loss in EXPONENTIAL_TAILS:
        beta = linear_step_limit(own, loss, trajectory.iterates[0], data.n)
    step = options["step_size"]
    return {
        "step_size": float(step) if isinstance(step, (int, float)) else None,
        "beta": beta,
        "separable": separable,
        "ridge": float(options.get("ridge") or 0.0),
    }
