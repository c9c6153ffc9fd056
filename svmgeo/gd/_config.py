# SPDX-License-Identifier: BSD-3-Clause
r"""Configuration and stop vocabulary of the gradient-descent engine.

:class:`GDConfig` holds every hyper-parameter of a run; :class:`StopStatus` says why a run
ended. Both are plain data: the loop lives in :mod:`svmgeo.gd._engine`.
"""

from __future__ import annotations

import enum
import inspect
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import ProblemError
from .._validation import check_bool, check_int, check_option, check_real
from ..attention_maps import ATTENTION_MAPS
from ..losses import LOSS_SPECS, LossSpec, get_loss

__all__ = [
    "ATTENTIONS",
    "BACKENDS",
    "BATCH_RECORDS",
    "DEFAULT_BACKEND",
    "HEADS",
    "LOSSES",
    "NTP_LOSSES",
    "OPTIMIZERS",
    "PARAMS",
    "POLYAK",
    "RECORDS",
    "REFERENCE_BACKEND",
    "RISKS",
    "RULE_FIELDS",
    "STEEPEST_RULES",
    "GDConfig",
    "Optimizer",
    "StopStatus",
    "check_exponent",
    "check_rule_option",
    "eps_block_names",
    "keyword_options",
    "parse_optimizer",
    "random_init",
    "refuse_unknown_options",
    "resolve_loss",
    "resolve_optimizer",
]


def _names_random(init: Any) -> bool:
    """Does ``init`` name the random start, a tuple or list whose first entry is
    ``"random"`` (of any length: the init check names a wrong one)?"""
    return (
        isinstance(init, (tuple, list))
        and len(init) > 0
        and isinstance(init[0], str)
        and init[0] == "random"
    )


def random_init(init: Any) -> bool:
    """Is ``init`` a random start, ``("random", scale)`` (the one that ``seed`` seeds)?"""
    return _names_random(init) and len(init) == 2


MAX_STEPS = 2**62
"""Largest ``n_steps`` and ``record_every``: the kernels count steps in int64 (beyond any run
that ends)."""
PARAMS = ("W", "KQ", "p")
LOSSES = ("logistic", "exponential", "correlation")
HEADS = ("linear", "relu", "concave")
#: The attention maps training takes (``attention=``), the keys of
#: :data:`svmgeo.attention_maps.ATTENTION_MAPS`.
ATTENTIONS = tuple(ATTENTION_MAPS)
BACKENDS = ("numba", "numpy", "cupy")
#: The backend every training entry point uses unless told otherwise (``optimizer="mirror"``
#: keeps the numpy reference kernels, see :data:`OPTIMIZERS`).
DEFAULT_BACKEND = "numba"
#: The readable numpy kernels: the default of the single evaluations (``loss_and_grad``,
#: ``RiskOracle``) and of ``optimizer="mirror"``, whose numbers were computed with them.
REFERENCE_BACKEND = "numpy"
#: Losses of the next-token risk (:func:`svmgeo.ntp.train_ntp`): cross-entropy through the
#: embeddings, or the log-probability that attention retrieves the label.
NTP_LOSSES = ("ce", "retrieval")
#: The risks the loop trains, each with its loss vocabulary: softmax attention on
#: :class:`~svmgeo.TokenData` (any head, loss, parameterization) and the next-token risk.
RISKS = {"attention": LOSSES, "next_token": NTP_LOSSES}
RECORDS = (
    "loss",
    "grad_norm",
    "W_norm",
    "max_prob",
    "selected",
    "probs",
    "W",
    "p",
    "p_norm",
    "v",
    "v_norm",
)
BATCH_RECORDS = ("loss", "grad_norm", "W_norm", "p_norm", "v_norm", "max_prob", "selected")


class StopStatus(enum.StrEnum):
    r"""Why a run stopped.

    * ``MAX_STEPS``: ``n_steps`` were taken.
    * ``GRADIENT_UNDERFLOW``: the step is no longer representable: the gradient (plain steps,
      or normalized steps with ``log_domain=False``) fell below ``1e-292``, where float64
      loses bits to denormals, or, with ``log_domain=False``, is zero in float64 at a finite
      scale (the direct formula forms the weights at their true scale, so such a zero may be
      an underflow: it is reported as one, even where the log domain would find it exactly
      zero); or, with ``normalize_eps`` > 0, every block's step
      :math:`\eta\|g\|/(\|g\| + \varepsilon)` is below float64's range; or, for
      :func:`svmgeo.ntp.train_ntp` (a risk without a log-domain scale), every entry of the
      gradient is zero in float64 while some attention weight or output probability is small
      enough for it to have underflowed. The iterate is the last finite one.
    * ``STATIONARY``: the gradient is exactly zero, not merely too small: no query has a
      non-zero weight (:math:`M = -\infty`: ``K = Q = 0``, one visible key per query,
      exactly tied scores), or the log-domain direction :math:`G` (:math:`\nabla L = e^M G`,
      its largest weight one, so that nothing in it underflows) is zero in float64, its
      contributions zero or cancelling exactly (queries ``Z = 0``, mirrored sequences whose
      terms cancel); for ``train_ntp``, a zero gradient in float64 with every attention
      weight and output probability above 1.5e-154, so nothing underflowed. Every update rule
      and backend, ``train_batch`` included, tells the two apart this way in the log domain
      (``log_domain=True``, the default); with ``log_domain=False`` only
      :math:`M = -\infty` is ``STATIONARY`` (see ``GRADIENT_UNDERFLOW``).
    * ``CONVERGED``: the gradient norm fell to ``grad_tol`` or below (never with
      ``grad_tol=0``).
    * ``SATURATED``: at a record point every softmax had its maximum probability at or above
      ``1 - saturation_tol``.
    * ``CALLBACK``: the callback raised :class:`StopIteration`.
    * ``OVERFLOW``: a step would have taken the parameters beyond the largest norm the
      engine represents (:math:`\|W\|_F` above ``1e150``, or above ``1e300 / (max_t \|x_t\|
      \max_k \|z_k\|)`` when the data are large, so that neither :math:`\|W\|_F^2` nor a
      logit overflows float64), or the gradient at the iterate is not finite (an entry, or
      its scale, overflowed float64: huge data, a trained head grown that far, or, in the
      log-domain weights, a query whose only weights are denormal rounding residues of
      exactly tied keys), or Adam's direction left float64 (``adam_eps=0`` with an entry
      whose second moment is 0 while its first is not, or with a gradient that shrinks
      faster than :math:`\hat v` forgets it); the step was not taken and the parameters stay
      finite. Lower ``step_size``, or rescale ``init`` (or the data); raise ``adam_eps``.
    * ``NON_FINITE``: a step would have produced NaN; it was not taken (a bug guard: no known
      input reaches it).
    """

    MAX_STEPS = "max_steps"
    GRADIENT_UNDERFLOW = "gradient_underflow"
    STATIONARY = "stationary"
    CONVERGED = "converged"
    SATURATED = "saturated"
    CALLBACK = "callback"
    NON_FINITE = "non_finite"
    OVERFLOW = "overflow"


# integer codes used by the compiled kernels (0 = still running)
RUNNING = 0
STATUS_CODES = {
    1: StopStatus.MAX_STEPS,
    2: StopStatus.GRADIENT_UNDERFLOW,
    3: StopStatus.STATIONARY,
    4: StopStatus.CONVERGED,
    5: StopStatus.SATURATED,
    6: StopStatus.CALLBACK,
    7: StopStatus.NON_FINITE,
    8: StopStatus.OVERFLOW,
}
CODE_OF = {status: code for code, status in STATUS_CODES.items()}


def eps_block_names(param: str, train_head: bool) -> tuple[str, str, str]:
    """Names of the three step blocks the kernels know, "" where the run has none: the
    attention's first factor ("W", "K" or "p"), its second ("Q"), the head ("v")."""
    first = {"W": "W", "KQ": "K", "p": "p"}[param]
    return first, "Q" if param == "KQ" else "", "v" if train_head else ""


@dataclass(frozen=True)
class Optimizer:
    r"""One update rule of the training loop (an entry of :data:`OPTIMIZERS`).

    Attributes
    ----------
    name : str
        The ``optimizer=`` spelling.
    summary : str
        The update, in words.
    default_backend : str
        The kernels used when ``backend`` is not given.
    default_normalized : bool
        Whether steps are normalized when ``normalized`` is not given.
    options : tuple of str
        The options of :func:`svmgeo.train` the rule takes (others are a ProblemError).
    min_steps : int
        Smallest ``n_steps`` accepted: 1 for every rule and risk (a run takes at least one
        step; the start alone is an evaluation, :func:`svmgeo.gd.loss_and_grad` or
        :func:`svmgeo.ntp_loss_and_grad`).
    messages : dict
        Stop messages of the rule where they differ from the loop's (``{n}``: steps taken).
    """

    name: str
    summary: str
    default_backend: str
    default_normalized: bool
    options: tuple[str, ...]
    min_steps: int
    messages: Mapping[StopStatus | tuple[StopStatus, bool], str] = field(default_factory=dict)

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


_SHARED = ("loss", "head", "v", "V", "lam", "step_size", "normalized", "n_steps",
           "record_every", "init", "backend")  # fmt: skip

#: The update rules of the loop, by ``optimizer=`` name. A new rule (sign, Adam, spectral
#: steps, ...) is a new entry here and a rule class with ``init_state`` / ``advance`` /
#: ``observe`` (see :mod:`svmgeo.gd._loop`).
OPTIMIZERS: dict[str, Optimizer] = {
    "gd": Optimizer(
        name="gd",
        summary="gradient descent: W <- W - eta g / ||g||_F (normalized) or W - eta g",
        default_backend=DEFAULT_BACKEND,
        default_normalized=True,
        options=(
            *_SHARED,
            "param",
            "m",
            "record",
            "ridge",
            "seed",
            "log_domain",
            "grad_tol",
            "saturation_tol",
            "train_head",
            "normalize_eps",
            "callback",
            "attention",
        ),
        min_steps=1,
    ),
    "mirror": Optimizer(
        name="mirror",
        summary="l_p mirror descent: grad psi(W) <- grad psi(W) - eta g, psi = ||W||_p^p / p",
        # the numpy reference kernels, as before the loop was shared: the compiled ones differ
        # in the last bits, and mirror results stay what they were
        default_backend=REFERENCE_BACKEND,
        default_normalized=False,  # the paper's algorithm
        options=(*_SHARED, "exponent"),
        min_steps=1,
        messages={
            StopStatus.STATIONARY: "stopped after {n} steps: the gradient is exactly zero",
            # keyed by (status, normalized): stop_message (svmgeo.gd._results) looks there first
            (StopStatus.GRADIENT_UNDERFLOW, False): (
                "stopped after {n} steps: the step eta*|grad L| fell below the rounding of "
                "every mirror coordinate Theta = sign(W)|W|^(p-1), so it no longer changes "
                "them; W is the last iterate. A normalized step (normalized=True), of "
                "length eta whatever the gradient, may go on where the gradient itself "
                "underflowed"
            ),
            (StopStatus.GRADIENT_UNDERFLOW, True): (
                "stopped after {n} steps: the normalized step eta fell below the rounding of "
                "every mirror coordinate Theta = sign(W)|W|^(p-1) (|W|^(p-1), set by the "
                "init), so it no longer changes them; W is the last iterate. Start from a "
                "smaller init or take a larger step_size"
            ),
            StopStatus.OVERFLOW: (
                "stopped after {n} steps: the next mirror step would have taken ||W||_F (or the "
                "initial ||W||_F is) past the largest norm float64 represents here (1e150, less "
                "for large data), or the gradient there is not finite; it was not taken. Lower step_size, use plain steps, or raise the exponent (W grows like "
                "|Theta|^(1/(p-1)))"
            ),
        },
    ),
}

# the rules of svmgeo.gd._steepest: W or (K, Q) through RiskOracle's log-domain gradient
_RULE = ("loss", "head", "v", "V", "lam", "step_size", "n_steps", "record_every", "init",
         "backend", "param", "m", "seed", "attention")  # fmt: skip


def _rule(
    name: str,
    summary: str,
    *own: str,
    messages: Mapping[StopStatus | tuple[StopStatus, bool], str] | None = None,
) -> Optimizer:
    """An entry for a rule of :mod:`svmgeo.gd._steepest` (numba kernels, options ``_RULE``)."""
    rule_options = (*_RULE, *own)
    return Optimizer(name, summary, DEFAULT_BACKEND, True, rule_options, 1, dict(messages or {}))


_ADAM_OVERFLOW = (
    "stopped after {n} steps: the next step would have taken the weights (or the initial "
    "weights are) past the largest norm float64 represents here (||W||_F <= 1e150, less for "
    "large data), or the gradient there is not finite, or Adam's direction m_hat / "
    "(sqrt(v_hat) + adam_eps) left float64 (with adam_eps = 0: an entry whose second moment "
    "is 0 while its first is not, or a gradient that shrinks faster than v_hat forgets it, "
    "adam_beta2 below adam_beta1); the step was not taken. Lower step_size, or raise "
    "adam_eps or adam_beta2"
)


OPTIMIZERS.update(
    {
        "sign": _rule(
            "sign",
            "sign descent (normalized steepest descent for entrywise l_inf): W <- W - eta sign(g)",
        ),
        "steepest": _rule(
            "steepest",
            "normalized steepest descent for entrywise l_q, optimizer=('steepest', q): "
            "W <- W - eta sign(g)|g|^(q*-1) / ||g||_q*^(q*-1)",
        ),
        "spectral": _rule(
            "spectral",
            "spectral descent: W <- W - eta U V^T of the gradient's SVD (Muon, "
            "orthogonalizing B <- mu B + g, with spectral_momentum mu)",
            "spectral_momentum",
        ),
        "adam": _rule(
            "adam",
            "Adam (Kingma & Ba): W <- W - eta m_hat / (sqrt(v_hat) + eps)",
            "adam_beta1",
            "adam_beta2",
            "adam_eps",
            messages={StopStatus.OVERFLOW: _ADAM_OVERFLOW},
        ),
    }
)

#: The update rules of :mod:`svmgeo.gd._steepest` (the rest of :data:`OPTIMIZERS` is "gd",
#: "mirror").
STEEPEST_RULES = ("sign", "steepest", "spectral", "adam")
#: The :class:`GDConfig` fields of those rules alone (not options of ``train_batch``).
RULE_FIELDS = ("steepest_q", "adam_beta1", "adam_beta2", "adam_eps", "spectral_momentum")
#: The highest value of each rule option in :data:`RULE_FIELDS` but ``steepest_q`` (all are
#: >= 0; the highest is excluded): Adam's decays and Muon's momentum in [0, 1), ``adam_eps``
#: in [0, inf).
RULE_OPTION_HIGH = {"adam_beta1": 1.0, "adam_beta2": 1.0, "adam_eps": math.inf,
                    "spectral_momentum": 1.0}  # fmt: skip


def check_rule_option(value: Any, option: str, where: str, name: str | None = None) -> float:
    """``value`` of the rule option ``option`` (a key of :data:`RULE_OPTION_HIGH`) as a float
    in its range, or a ProblemError that names ``name`` (default ``option``: ``adam_direction``
    calls ``adam_beta1`` ``beta1``) and ``where``."""
    high = RULE_OPTION_HIGH[option]
    return check_real(value, name or option, low=0.0, high=high, high_open=True, where=where)


#: ``step_size="polyak"``: the Polyak step, for the rules without memory (W only).
POLYAK = "polyak"


def resolve_optimizer(optimizer: Any, where: str) -> tuple[str, float | None]:
    r"""``(name, q)`` of an ``optimizer=`` spelling: a name of :data:`OPTIMIZERS`, or
    ``("steepest", q)`` with :math:`1 \le q \le \infty` (q is None for the others)."""
    if isinstance(optimizer, tuple):
        if len(optimizer) != 2 or optimizer[0] != "steepest":
            raise ProblemError(
                f"The 'optimizer' parameter of {where} must be a name among "
                f"{', '.join(map(repr, OPTIMIZERS))} or a pair ('steepest', q); got {optimizer!r}."
            )
        q = optimizer[1]
        if isinstance(q, bool) or not isinstance(q, int | float) or not q >= 1.0:
            raise ProblemError(
                f"optimizer=('steepest', q) takes the entrywise norm's exponent q, a float in "
                f"[1, inf] (q = 2: normalized GD, q = inf: sign descent); got q={q!r}."
            )
        return "steepest", float(q)
    check_option(optimizer, "optimizer", tuple(OPTIMIZERS), where=where)
    if optimizer == "steepest":
        raise ProblemError(
            "optimizer='steepest' needs its exponent: pass optimizer=('steepest', q) with q in "
            "[1, inf], e.g. ('steepest', 1.5)."
        )
    return optimizer, None


def resolve_loss(loss: Any, where: str) -> str | LossSpec:
    """A built-in loss's name, or a user loss (a LossSpec, or ``(value, d1[, d2])``
    callables) as a :class:`~svmgeo.LossSpec`; a built-in's own LossSpec
    (``LOSS_SPECS["logistic"]``) is its name, so it runs the built-in kernels."""
    if isinstance(loss, str):
        return loss
    callables = isinstance(loss, tuple) and len(loss) in (2, 3) and all(map(callable, loss))
    if not (isinstance(loss, LossSpec) or callables):
        raise ProblemError(
            f"The 'loss' parameter of {where} must be a name among "
            f"{', '.join(map(repr, LOSSES))}, a svmgeo.LossSpec (the square loss is "
            "svmgeo.LOSS_SPECS['square']), or a tuple (value, derivative[, second "
            f"derivative]) of callables u -> array; got {loss!r}."
        )
    spec = get_loss(loss, where)
    for name in LOSSES:
        if spec is LOSS_SPECS[name]:
            return name
    return spec


def check_loss_name(loss: str, where: str) -> str:
    """``loss``, a name among :data:`LOSSES` (a ProblemError otherwise); a built-in of
    :data:`~svmgeo.LOSS_SPECS` without compiled kernels (``"square"``) is pointed to the
    LossSpec it runs as."""
    if loss in LOSS_SPECS and loss not in LOSSES:
        raise ProblemError(
            f"The 'loss' parameter of {where} must be one of {', '.join(map(repr, LOSSES))}, "
            f"the losses with compiled kernels; got {loss!r}. The {loss} loss runs as a user "
            f"loss: pass loss=svmgeo.LOSS_SPECS[{loss!r}]."
        )
    return check_option(loss, "loss", LOSSES, where=where)


def parse_optimizer(text: str, where: str = "--optimizer") -> str | tuple[str, float]:
    r"""The ``optimizer=`` value of a command-line spelling: a name of :data:`OPTIMIZERS`
    (``"sign"``), or ``"steepest:q"`` for ``("steepest", q)`` (``steepest:1.5``,
    ``steepest:inf``), as ``lp:1.5`` spells the norm ``("lp", 1.5)``; checked by
    :func:`resolve_optimizer` (a ProblemError naming ``where`` otherwise)."""
    spellings = ", ".join(n if n != "steepest" else "steepest:q" for n in OPTIMIZERS)
    if not isinstance(text, str):
        raise ProblemError(
            f"{where}: the optimizer text must be a str; got {type(text).__name__} ({text!r}). "
            f"It spells one of {spellings} (e.g. 'steepest:1.5'); in Python, pass optimizer= "
            "to train itself (a name, or the pair ('steepest', q))."
        )
    name, colon, tail = text.partition(":")
    try:
        if not colon:
            return resolve_optimizer(text, where)[0]
        return resolve_optimizer((name, float(tail)), where)[0], float(tail)
    except (ProblemError, ValueError):
        raise ProblemError(
            f"{where} takes one of {spellings}, with 1 <= q <= inf for steepest descent in the "
            f"entrywise l_q norm (e.g. steepest:1.5, steepest:inf); got {text!r}."
        ) from None


#: Old spellings of options and what they are now (issue #20: one meaning per name).
RENAMED = {
    "method": "optimizer ('gd' or 'mirror'; 'method' is the solvers' solve method)",
    "p": "exponent (the l_p exponent of optimizer='mirror'; 'p' is the prompt vector of param='p')",
    "tol": "grad_tol (the gradient-norm stop; 'tol' is the solvers' certificate tolerance)",
}


def keyword_options(function: Callable[..., Any], *internal: str) -> tuple[str, ...]:
    """The options ``function`` takes: its keyword-only parameters, less ``internal`` ones."""
    return tuple(
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind is parameter.KEYWORD_ONLY and name not in internal
    )


def refuse_unknown_options(given: Mapping[str, Any], where: str, valid: Sequence[str]) -> None:
    """Raise a ProblemError when ``given`` (the keywords ``where`` does not take) is not empty:
    naming the new spelling of every renamed option (:data:`RENAMED`) if there is one, else
    naming the unknown options and listing ``valid``, the options ``where`` takes."""
    old = [name for name in given if name in RENAMED]
    if old:
        raise ProblemError(
            f"{where} no longer takes "
            + ", ".join(f"{name}= (renamed {RENAMED[name]})" for name in old)
            + "; pass the new name."
        )
    if given:
        raise ProblemError(
            f"{where} got unknown option(s) {', '.join(map(repr, sorted(given)))}; valid "
            f"options are {', '.join(valid)}."
        )


def check_exponent(value: Any, where: str, name: str = "exponent") -> float:
    """The exponent p of ``optimizer="mirror"`` as a float in (1, inf), or a ProblemError
    that names the range, the value and the fix (the one check of every mirror entry point:
    ``train``, ``train_mirror``, ``verify_mirror``, and of ``mirror_map``'s ``p``, which
    ``name`` names)."""
    try:
        return check_real(value, name, low=1.0, low_open=True, high_open=True, where=where)
    except ProblemError as exc:
        raise ProblemError(
            f"{exc} It is the p of the mirror potential ||W||_p^p / p, which has a mirror step "
            f"only for finite p > 1: pass one (e.g. {name}=1.5). For p = 1 or p = inf, solve "
            "the l_p Att-SVM itself with att_svm(data, norm=('lp', 1)) or "
            "att_svm(data, norm=('lp', inf))."
        ) from None


@dataclass(frozen=True, eq=False)
class GDConfig:
    r"""Hyper-parameters of a gradient-descent run on softmax attention.

    The risk is :math:`L = \frac1n \sum_i \sum_k \ell(Y_{ik} f_{ik})` with
    :math:`f_{ik} = h(U_i^\top \mathrm{softmax}(X_i W z_{ik}))` over visible keys
    (:math:`U_i` the head features, ``values``, else :math:`X_i`),
    :math:`W = KQ^\top` for ``param="KQ"``, and logits :math:`X_i p` for ``param="p"``. A
    normalized step is :math:`W \leftarrow W - \eta \nabla L / \|\nabla L\|_F` (each factor
    separately for ``(K, Q)``); a plain step is :math:`W \leftarrow W - \eta \nabla L`.

    Parameters
    ----------
    param : {"W", "KQ", "p"}
        Train :math:`W \in \mathbb{R}^{d\times d}`, the factors
        :math:`K, Q \in \mathbb{R}^{d\times m}`, or the prompt vector
        :math:`p \in \mathbb{R}^d` (score :math:`x_{it}^\top p` of every key for every
        query; the queries are not used).
    m : int, optional
        Width of ``K`` and ``Q`` (any ``m >= 1``, also ``m > d``, as long as the run's
        arrays of shape (d, m) fit in the available memory). Defaults to ``d``.
        ``param="KQ"`` only (a ProblemError otherwise).
    loss : {"logistic", "exponential", "correlation"} or LossSpec
        :math:`\log(1 + e^{-u})`, :math:`e^{-u}` or :math:`-u`, or a user's own loss (a
        :class:`~svmgeo.LossSpec`; ``(value, derivative[, second])`` callables are turned
        into one; every optimizer, not the next-token risk).
    head : {"linear", "relu", "concave"}
        :math:`v^\top x`, :math:`v^\top \mathrm{ReLU}(V^\top x)` or
        :math:`v^\top x - \lambda \|x\|^2`. See :func:`~svmgeo.train` for ``v``, ``V``, ``lam``.
    step_size : float or "polyak"
        :math:`\eta > 0`, or the Polyak step (the rules of :data:`STEEPEST_RULES` without
        memory, ``param="W"``).
    normalized : bool
        Normalized (default) or plain steps.
    n_steps : int
        Maximum number of steps, at least ``min_steps`` of the optimizer's
        :data:`OPTIMIZERS` entry (1 for every optimizer and risk).
    record_every : int, optional
        Record the history every this many steps (and at the start and the end). Defaults to
        ``max(1, n_steps // 100)``, so memory stays bounded.
    record : tuple of str, optional
        Which history fields to keep, among ``RECORDS``; default all.
    ridge : float
        :math:`\rho \ge 0`: adds :math:`\tfrac{\rho}{2}(\|K\|_F^2 + \|Q\|_F^2)` (or
        :math:`\tfrac{\rho}{2}\|W\|_F^2`) to the risk.
    init : "zero", ("random", scale), array, or (K, Q)
        Zero, i.i.d. :math:`\mathcal{N}(0, \text{scale}^2)` entries, or given arrays.
    seed : int, optional
        Seed of the random initialization ``init=("random", scale)``; with any other
        ``init`` a ProblemError (it would change nothing).
    backend : {"numba", "numpy", "cupy"}
        Compiled CPU kernels (:data:`DEFAULT_BACKEND`), the numpy reference, or CuPy on a GPU.
    log_domain : bool
        Compute the step direction in the log domain (default), so that normalized steps go
        on when :math:`\nabla L` itself underflows. ``False`` gives the direct formula.
    grad_tol : float
        Stop with ``CONVERGED`` once :math:`\|\nabla\|_F \le` ``grad_tol`` (0 disables).
    saturation_tol : float, optional
        Stop with ``SATURATED`` at a record point where every query's maximum softmax
        probability is at least ``1 - saturation_tol``.
    train_head : bool
        Train the linear head :math:`v` jointly with the attention (each block normalized
        separately); linear head only.
    normalize_eps : float or mapping of str to float
        :math:`\varepsilon \ge 0` of the normalized step
        :math:`\eta\, g / (\|g\| + \varepsilon)` per block (0: exactly normalized): one
        value for every block, or one per block name (``"W"``, ``"p"``, ``"K"``, ``"Q"``,
        ``"v"``; the blocks of the run, missing ones 0); normalized steps only.
        :attr:`eps_blocks` holds the values the kernels use.
    optimizer : str or ("steepest", q)
        The update rule (an entry of :data:`OPTIMIZERS`).
    exponent : float, optional
        ``optimizer="mirror"`` only (required there): the exponent :math:`1 < p < \infty` of
        the potential :math:`\|W\|_p^p/p`.
    risk : {"attention", "next_token"}
        The risk trained (an entry of :data:`RISKS`, which gives the ``loss`` vocabulary).
    steepest_q : float, optional
        ``optimizer="steepest"`` only (required there): the exponent :math:`1 \le q \le \infty`
        of the entrywise norm (``optimizer=("steepest", q)`` sets it).
    adam_beta1, adam_beta2, adam_eps : float
        ``optimizer="adam"``: the moment decays :math:`0 \le \beta_1, \beta_2 < 1` (0.9,
        0.999) and :math:`\varepsilon \ge 0` (1e-8) of Kingma & Ba.
    spectral_momentum : float
        ``optimizer="spectral"``: Muon's momentum :math:`0 \le \mu < 1` (0: spectral
        descent on the gradient itself).
    attention : {"softmax", "linear", "normalized_linear", "sigmoid", "relu"}
        The attention map :math:`\varphi` in :math:`f_{ik} = h(U_i^\top\varphi(X_i W z_{ik}))`
        (:data:`ATTENTIONS`; softmax by default); ``optimizer="gd"`` only, and without
        ``saturation_tol`` for maps other than softmax.
    caller : str
        The public function the options came from, named in error messages (``"train"``,
        ``"train_mirror"``, ``"train_ntp"``, ...); not part of the configuration.
    """

    param: str = "W"
    m: int | None = None
    loss: str | LossSpec = "logistic"
    head: str = "linear"
    step_size: float = 0.1
    normalized: bool = True
    n_steps: int = 1000
    record_every: int | None = None
    record: tuple[str, ...] = RECORDS
    ridge: float = 0.0
    init: Any = "zero"
    seed: int | None = None
    backend: str = DEFAULT_BACKEND
    log_domain: bool = True
    grad_tol: float = 0.0
    saturation_tol: float | None = None
    train_head: bool = False
    normalize_eps: float | Mapping[str, float] = 0.0
    optimizer: str = "gd"
    exponent: float | None = None
    risk: str = "attention"
    steepest_q: float | None = None
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    spectral_momentum: float = 0.0
    attention: str = "softmax"
    caller: str = field(default="train", repr=False, compare=False)
    #: ε of the blocks (first attention factor, second factor, head), from ``normalize_eps``.
    eps_blocks: tuple[float, float, float] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        where = self.caller
        init = self.init
        if isinstance(init, list) and len(init) == 2 and isinstance(init[0], str):
            object.__setattr__(self, "init", tuple(init))  # ["random", 0.1], as from JSON
        elif isinstance(init, np.ndarray):  # kept on the run: the caller may reuse the array
            object.__setattr__(self, "init", init.copy())
        if isinstance(self.seed, numbers.Integral) and not isinstance(self.seed, bool):
            object.__setattr__(self, "seed", int(self.seed))  # np.int64(0) as 0
        name, q = resolve_optimizer(
            ("steepest", self.steepest_q) if self.optimizer == "steepest" else self.optimizer,
            where,
        )
        if name != "steepest" and self.steepest_q is not None:
            raise ProblemError(
                f"steepest_q={self.steepest_q!r} is the exponent of optimizer=('steepest', q); "
                f"got it with optimizer={name!r}. Drop it or pass optimizer=('steepest', q)."
            )
        object.__setattr__(self, "optimizer", name)
        object.__setattr__(self, "steepest_q", q)
        self._check_rule_options(where)
        check_option(self.risk, "risk", tuple(RISKS), where=where)
        check_option(self.param, "param", PARAMS, where=where)
        object.__setattr__(self, "loss", resolve_loss(self.loss, where))
        if isinstance(self.loss, str) and self.risk == "attention":
            check_loss_name(self.loss, where)
        elif isinstance(self.loss, str):
            check_option(self.loss, "loss", RISKS[self.risk], where=where)
        elif self.risk != "attention":
            raise ProblemError(
                f"The 'loss' parameter of {where}: a user-defined loss ({self.loss.name!r}) "
                f"is a loss of the attention risk (train, train_batch, loss_and_grad); the "
                f"{self.risk!r} risk takes {', '.join(map(repr, RISKS[self.risk]))}."
            )
        check_option(self.head, "head", HEADS, where=where)
        check_option(self.backend, "backend", BACKENDS, where=where)
        check_option(self.attention, "attention", ATTENTIONS, where=where)
        steepest_map = self.optimizer in STEEPEST_RULES and self.attention != "normalized_linear"
        if self.attention != "softmax" and (
            (self.optimizer != "gd" and not steepest_map) or self.risk != "attention"
        ):
            raise ProblemError(
                f"attention={self.attention!r} is trained by optimizer='gd' (and, but for "
                "'normalized_linear', by the rules 'sign', ('steepest', q), 'spectral', 'adam') "
                f"on the attention risk; got optimizer={self.optimizer!r}, risk={self.risk!r}. "
                "Use one of those optimizers, or attention='softmax'."
            )
        if self.attention != "softmax" and self.saturation_tol is not None:
            raise ProblemError(
                f"saturation_tol stops when every softmax probability saturates; "
                f"attention={self.attention!r} has no such probabilities. Drop saturation_tol "
                "(stop with n_steps or grad_tol) or use attention='softmax'."
            )
        if not isinstance(self.step_size, str):
            check_real(self.step_size, "step_size", low=0.0, low_open=True, high_open=True,
                       where=where)  # fmt: skip
        check_int(self.n_steps, "n_steps", low=OPTIMIZERS[self.optimizer].min_steps,
                  high=MAX_STEPS, where=where)  # fmt: skip
        if self.optimizer == "mirror":
            if self.exponent is None:
                raise ProblemError(
                    "optimizer='mirror' (l_p mirror descent) needs exponent=, the p > 1 of the "
                    "potential ||W||_p^p / p; got none. E.g. exponent=1.5."
                )
            object.__setattr__(self, "exponent", check_exponent(self.exponent, where))
        elif self.exponent is not None:
            raise ProblemError(
                f"exponent={self.exponent!r} is the l_p exponent of optimizer='mirror'; "
                f"optimizer={self.optimizer!r} takes none. For prompt attention pass "
                "param='p'; for mirror descent pass optimizer='mirror'."
            )
        if self.m is not None:
            if self.param != "KQ":
                raise ProblemError(
                    f"The 'm' parameter of {where} is the width of K and Q and applies to "
                    f"param='KQ' only; got m={self.m!r} with param={self.param!r}. Drop m, or "
                    "pass param='KQ'."
                )
            check_int(self.m, "m", low=1, where=where)
        if self.record_every is not None:
            check_int(self.record_every, "record_every", low=1, high=MAX_STEPS, where=where)
        check_real(self.ridge, "ridge", low=0.0, high_open=True, where=where)
        check_real(self.grad_tol, "grad_tol", low=0.0, where=where)
        if self.saturation_tol is not None:
            check_real(self.saturation_tol, "saturation_tol", low=0.0, high=1.0, where=where)
        for flag in ("normalized", "log_domain", "train_head"):  # numpy bools as bools
            object.__setattr__(self, flag, check_bool(getattr(self, flag), flag, where=where))
        object.__setattr__(self, "eps_blocks", self._eps_blocks(where))
        if any(e > 0.0 for e in self.eps_blocks) and not self.normalized:
            raise ProblemError(
                f"normalize_eps={self.normalize_eps!r} applies to normalized steps "
                "eta g / (||g|| + eps); got it with normalized=False. Drop normalize_eps or "
                "use normalized=True."
            )
        if self.train_head and self.head != "linear":
            raise ProblemError(
                f"train_head=True trains the linear head v; got head={self.head!r}. Use "
                "head='linear' (the relu and concave heads stay fixed)."
            )
        if self.seed is not None and (
            isinstance(self.seed, bool)
            or not isinstance(self.seed, numbers.Integral)
            or self.seed < 0
        ):
            raise ProblemError(
                f"The 'seed' parameter of {where} must be None or a non-negative int (numpy's "
                f"seeds are); got {self.seed!r}."
            )
        if self.seed is not None and not _names_random(self.init):
            given = (
                repr(self.init) if isinstance(self.init, str) else f"<{type(self.init).__name__}>"
            )
            raise ProblemError(
                f"The 'seed' parameter of {where} seeds the random start init=('random', "
                f"scale) only; got seed={self.seed!r} with init={given}, which it would not "
                "change. Drop seed, or pass init=('random', 0.1)."
            )
        if isinstance(self.record, str) or not all(
            isinstance(r, str) and r in RECORDS for r in self.record
        ):
            raise ProblemError(
                f"record must be a tuple of names among {', '.join(map(repr, RECORDS))}; "
                f"got {self.record!r}."
            )

    def _check_rule_options(self, where: str) -> None:
        """The options of the rules of :data:`STEEPEST_RULES` and ``step_size="polyak"``."""
        rule = self.optimizer
        for name, default, owner in (("adam_beta1", 0.9, "adam"), ("adam_beta2", 0.999, "adam"),
                                     ("adam_eps", 1e-8, "adam"),
                                     ("spectral_momentum", 0.0, "spectral")):  # fmt: skip
            value = getattr(self, name)
            if rule != owner and value != default:
                raise ProblemError(
                    f"{name}={value!r} is an option of optimizer={owner!r}; got it with "
                    f"optimizer={rule!r}. Drop it or pass optimizer={owner!r}."
                )
            check_rule_option(value, name, where)
        if isinstance(self.step_size, str):
            memory = rule == "adam" or (rule == "spectral" and self.spectral_momentum > 0.0)
            if self.step_size != POLYAK or rule not in STEEPEST_RULES or memory:
                with_rule = "" if rule == "gd" else f" with optimizer={rule!r}"
                polyak = (
                    " ('polyak' is the Polyak step of train, for optimizer 'gd', 'sign', "
                    "('steepest', q) or 'spectral' without momentum.)"
                    if self.step_size == POLYAK
                    else ""
                )
                raise ProblemError(
                    f"The 'step_size' parameter of {where} must be a float in (0, inf); got "
                    f"step_size={self.step_size!r}{with_rule}.{polyak}"
                )
            if self.param != "W":
                raise ProblemError(
                    f"step_size='polyak' trains W only; got param={self.param!r}. Use "
                    "param='W' or a float step_size."
                )
        if rule in STEEPEST_RULES:
            if self.param not in ("W", "KQ"):
                raise ProblemError(
                    f"optimizer={rule!r} trains W or (K, Q); got param={self.param!r}. Use "
                    "param='W' or param='KQ'."
                )
            if not self.normalized:
                raise ProblemError(
                    f"optimizer={rule!r} takes no plain steps (its step has length step_size "
                    "in its own norm); got normalized=False. Drop normalized."
                )

    def _eps_blocks(self, where: str) -> tuple[float, float, float]:
        """Check ``normalize_eps`` and spread it over the blocks (copying a mapping)."""
        names = eps_block_names(self.param, self.train_head)
        eps = self.normalize_eps
        if not isinstance(eps, Mapping):
            try:
                e = check_real(eps, "normalize_eps", low=0.0, high_open=True, where=where)
            except ProblemError as exc:
                raise ProblemError(
                    f"{exc} Or pass a mapping of block names to such floats, e.g. "
                    "{'p': 1e-19, 'v': 1e-9}."
                ) from None
            return e, e, e
        have = [n for n in names if n]
        unknown = [k for k in eps if k not in have]
        if unknown:
            raise ProblemError(
                f"normalize_eps maps block names to eps; this run (param={self.param!r}, "
                f"train_head={self.train_head}) has the block(s) {', '.join(map(repr, have))}; "
                f'got {", ".join(map(repr, unknown))}. Use those names ("v" needs '
                "train_head=True), or one float for every block."
            )
        given = {
            k: check_real(v, f"normalize_eps[{k!r}]", low=0.0, high_open=True, where=where)
            for k, v in eps.items()
        }
        object.__setattr__(self, "normalize_eps", {n: given[n] for n in have if n in given})
        e1, e2, e3 = (given.get(n, 0.0) if n else 0.0 for n in names)
        return e1, e2, e3

    @property
    def cadence(self) -> int:
        """The record cadence actually used."""
        return self.record_every if self.record_every is not None else max(1, self.n_steps // 100)

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)
