# SPDX-License-Identifier: BSD-3-Clause
r"""The gradient-descent engine on softmax attention: its update rule and entry points.

:class:`GradientDescent` is the update rule of ``optimizer="gd"`` on softmax attention
(``init_state`` / ``advance`` / ``observe``) for the one loop,
:func:`svmgeo.gd._loop.run_loop`; the per-backend kernels live in :mod:`svmgeo.gd._xp`
(numpy, cupy) and :mod:`svmgeo.gd._numba`. :func:`train` (any optimizer of
:data:`~svmgeo.gd.OPTIMIZERS`) and :func:`train_batch` are the public entry points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any, NamedTuple

import numpy as np

from .._errors import ProblemError
from .._linalg import entrywise_norm
from .._validation import check_array, check_real, check_width, read_only_view
from ..data import TokenData
from ..losses import LossSpec
from . import _xp
from ._backend import Kernels, check_loss_for, get_kernels
from ._config import (
    BATCH_RECORDS,
    CODE_OF,
    OPTIMIZERS,
    RECORDS,
    REFERENCE_BACKEND,
    RULE_FIELDS,
    RUNNING,
    STEEPEST_RULES,
    GDConfig,
    StopStatus,
    keyword_options,
    refuse_unknown_options,
    resolve_loss,
    resolve_optimizer,
)
from ._loop import Risk, run_loop
from ._mirror import run_mirror_descent
from ._oracle import RiskOracle
from ._problem import Problem, make_problem, unstack
from ._results import BatchRun, GDRun, Intermediate
from ._steepest import MapRisk, SteepestDescent

__all__ = ["GDState", "GradientDescent", "loss_and_grad", "train", "train_batch"]


class GDState(NamedTuple):
    """Iterate of a batch of runs.

    ``P1`` is W (B, d, d), K (B, d, m) or p (B, d, 1); ``P2`` is Q (B, d, m) or a (B, 1, 1)
    placeholder; ``step`` counts loop steps; ``steps`` (B,) the steps each instance took;
    ``status`` (B,) the stop codes (0 while running); ``head`` (B, 1, d_u) the head v the
    kernels read (trained with ``train_head``, else the problem's own).
    """

    P1: Any
    P2: Any
    step: int
    steps: np.ndarray
    status: np.ndarray
    head: Any = None


_KQ_ARRAYS = 8
"""Arrays of shape (d, m) per run that param="KQ" holds at its peak (measured with tracemalloc:
8.0 for GD and Adam, d = 3, m = 10**6)."""


def _init_params(cfg: GDConfig, B: int, d: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Initial (P1, P2) and the width m."""
    init = cfg.init
    kq = cfg.param == "KQ"
    if isinstance(init, (tuple, list)) and init and isinstance(init[0], str) and len(init) != 2:
        raise ProblemError(
            f"init=(name, scale) takes two entries, e.g. ('random', 0.1); got {tuple(init)!r}."
        )
    pair = isinstance(init, (tuple, list)) and len(init) == 2
    if kq and pair and not isinstance(init[0], str):
        hint = "init=(K, Q) needs two arrays of shape (d, m) or (B, d, m)."
        K = check_array(init[0], "init K", ndim=(2, 3), hint=hint)
        Q = check_array(init[1], "init Q", ndim=(2, 3), hint=hint)
        m = cfg.m if cfg.m is not None else K.shape[-1]
        want = (d, m)
        for name, A in (("K", K), ("Q", Q)):
            if A.shape[-2:] != want or (A.ndim == 3 and A.shape[0] != B):
                raise ProblemError(
                    f"init {name} must have shape {want} or {(B, *want)} (d = {d}, m = {m}); "
                    f"got {A.shape}. Match m to the factors' width."
                )
        return (
            np.array(np.broadcast_to(K, (B, d, m)), order="C"),
            np.array(np.broadcast_to(Q, (B, d, m)), order="C"),
            m,
        )
    m = (cfg.m if cfg.m is not None else d) if kq else (1 if cfg.param == "p" else d)
    if kq:  # K, Q, their gradients and the step's temporaries: 7-8 arrays (d, m) per run
        check_width(m, d, _KQ_ARRAYS * B, cfg.caller)
    shape = (B, d, m)
    if isinstance(init, str):
        if init != "zero":
            raise ProblemError(
                f"init must be 'zero', ('random', scale), an array or (K, Q); got {init!r}."
            )
        P1 = np.zeros(shape)
        P2 = np.zeros(shape) if kq else np.zeros((B, 1, 1))
        return P1, P2, m
    if isinstance(init, tuple) and len(init) == 2 and isinstance(init[0], str):
        if init[0] != "random":
            raise ProblemError(f"init=(name, scale) supports name 'random'; got {init[0]!r}.")
        try:
            scale = check_real(
                init[1], "init scale", low=0.0, low_open=True, high_open=True, where=cfg.caller
            )
        except ProblemError as exc:
            raise ProblemError(
                f"{exc} init=('random', scale) draws N(0, scale^2) entries: pass a finite "
                "scale > 0, e.g. init=('random', 0.1)."
            ) from None
        rng = np.random.default_rng(cfg.seed)
        P1 = np.empty(shape)
        P2 = np.empty(shape) if kq else np.zeros((B, 1, 1))
        for b in range(B):
            P1[b] = rng.normal(0.0, scale, (d, m))
            if kq:
                P2[b] = rng.normal(0.0, scale, (d, m))
        return P1, P2, m
    if kq:
        raise ProblemError(
            "param='KQ' takes init='zero', ('random', scale) or a pair (K, Q) of arrays of "
            f"shape ({d}, m); got {type(init).__name__}."
        )
    if pair and isinstance(init, tuple):  # (K, Q), which train_batch read as two starts
        raise ProblemError(
            f"init=(K, Q), a pair of factors, needs param='KQ'; {cfg.caller} got it with "
            f"param={cfg.param!r}. Pass param='KQ', or the start as one array (train_batch: "
            "np.stack(starts) for one start per instance)."
        )
    # train and its entry points take one start (their errors say so; a leading axis of
    # length 1 passes here as before, for the rules train hands over before its own check)
    batched = cfg.caller == "train_batch"
    any_ndim = tuple(range(65))  # the rank is checked with the shape, in one message
    if cfg.param == "p":
        hint = f"init p must be ({d},) or (B, {d})."
        p0 = check_array(init, "init", ndim=(1, 2) if batched else any_ndim, hint=hint)
        if p0.ndim not in (1, 2) or p0.shape[-1] != d or (p0.ndim == 2 and p0.shape[0] != B):
            raise ProblemError(
                f"init p must have shape ({d},) or ({B}, {d}); got {p0.shape}."
                if batched
                else _single_init_text("p", (d,), p0.shape, cfg.caller)
            )
        return np.array(np.broadcast_to(p0[..., None], shape), order="C"), np.zeros((B, 1, 1)), 1
    hint = f"init W must be ({d}, {d}) or (B, {d}, {d})."
    W0 = check_array(init, "init", ndim=(2, 3) if batched else any_ndim, hint=hint)
    if W0.ndim not in (2, 3) or W0.shape[-2:] != (d, d) or (W0.ndim == 3 and W0.shape[0] != B):
        raise ProblemError(
            f"init W must have shape ({d}, {d}) or ({B}, {d}, {d}); got {W0.shape}."
            if batched
            else _single_init_text("W", (d, d), W0.shape, cfg.caller)
        )
    return np.array(np.broadcast_to(W0, shape), order="C"), np.zeros((B, 1, 1)), m


def _check_single_init(cfg: GDConfig, d: int) -> None:
    """A ProblemError for an init array of one run that is not (d, d) (W) or (d,) (p): the
    stacked (1, d, d) of train_batch is not a start of train ((K, Q) pairs: _init_params)."""
    if isinstance(cfg.init, (str, tuple)) or cfg.param == "KQ":
        return
    W0 = np.asarray(cfg.init)
    if cfg.param == "p" and W0.ndim != 1:
        raise ProblemError(_single_init_text("p", (d,), W0.shape, cfg.caller))
    if cfg.param != "p" and W0.ndim != 2:
        raise ProblemError(_single_init_text("W", (d, d), W0.shape, cfg.caller))


def _single_init_text(name: str, want: tuple[int, ...], got: tuple[int, ...], caller: str) -> str:
    """The error for an init array of the wrong shape given to one run (train, verify)."""
    d = want[0]
    return (
        f"init {name} must have shape {want} (d = {d}, the data's feature dimension); got "
        f"{got}. {caller} takes one start: pass an array of shape {want} (train_batch takes one "
        f"start per instance, stacked as (B, {', '.join(map(str, want))}))."
    )


class GradientDescent:
    """Gradient descent on softmax attention for a batch of problems; see :class:`GDConfig`.

    The update rule of ``optimizer="gd"`` on the softmax-attention risk, for the loop of
    :func:`~svmgeo.gd._loop.run_loop`: ``init_state`` builds the initial :class:`GDState`,
    ``advance`` runs compiled chunks of steps (numba, numpy or cupy kernels), ``observe``
    makes a record; ``run`` runs the loop.
    """

    def __init__(self, config: GDConfig, problem: Problem) -> None:
        self.config = config
        self.problem = problem
        self.kernels: Kernels | None = None
        keys = ("step", *_record_keys(config))
        if "loss" in config.record:
            keys = (*keys, "log_loss_gap")
        if "grad_norm" in config.record:
            keys = (*keys, "log_grad_norm")
        self.keys = keys

    def init_state(self) -> GDState:
        cfg = self.config
        problem = self.problem
        self.kernels = get_kernels(cfg.backend, problem)
        P1, P2, _ = _init_params(cfg, problem.B, problem.d)
        k = self.kernels
        B = problem.B
        is_kq = cfg.param == "KQ"
        params = [P1, P2] if is_kq else [P1]
        with np.errstate(over="ignore", invalid="ignore"):
            W0 = np.einsum("bdm,bem->bde", P1, P2) if is_kq else P1
        if not np.all(np.isfinite(W0)):
            raise ProblemError(
                "init gives W = K Q^T with non-finite entries (the factors' norms multiply past "
                "float64's range); rescale init so that ||K||_F ||Q||_F <= 1e150."
            )
        if cfg.attention == "normalized_linear":
            _check_normalized_start(W0, problem)
        # a start beyond the representable norms stops at once, with status OVERFLOW
        outside = ~_xp.within_limit(params, is_kq, problem.max_norm, np)
        status = np.where(outside, CODE_OF[StopStatus.OVERFLOW], RUNNING).astype(np.int64)
        head = np.array(problem.hv[:, None, :], dtype=np.float64, order="C")
        return GDState(
            k.asarray(P1), k.asarray(P2), 0, np.zeros(B, np.int64), status, k.asarray(head)
        )

    def advance(self, state: GDState, n_steps: int = 1) -> GDState:
        """Advance every running instance by up to ``n_steps`` steps."""
        cfg = self.config
        assert self.kernels is not None, "call init_state first"  # internal invariant
        status = state.status.copy()
        steps = state.steps.copy()
        P1, P2, head = self.kernels.advance(
            state.P1, state.P2, state.head, status, steps, n_steps, cfg
        )
        return GDState(P1, P2, state.step + n_steps, steps, status, head)

    def observe(self, state: GDState) -> dict[str, np.ndarray]:
        """Everything a record holds, as numpy arrays with a leading B axis."""
        cfg = self.config
        k = self.kernels
        assert k is not None, "call init_state first"  # internal invariant
        is_kq = cfg.param == "KQ"
        loss_id = _xp.loss_key(cfg.loss)
        W = k.weights(state.P1, state.P2, is_kq)
        obs = _xp.observe(W, k.problem, _xp.with_head(k.arrays, state.head), loss_id, k.xp)
        G, M, hb = k.grads(W, state.head, loss_id, cfg.log_domain, cfg.train_head)
        G, M = k.asarray(G), k.asarray(M)
        head = None if hb is None else (state.head, *(k.asarray(x) for x in hb))
        glog = _xp.param_log_grad_norm(
            _xp.factor_grads(state.P1, state.P2, G, M, is_kq, cfg.ridge, k.xp, head), k.xp
        )
        out = {key: k.to_numpy(val) for key, val in obs.items()}
        if cfg.train_head:
            out["v"] = k.to_numpy(state.head)[:, 0, :]
            out["v_norm"] = np.linalg.norm(out["v"], axis=1)
        out["log_grad_norm"] = k.to_numpy(glog)
        with np.errstate(over="ignore"):  # inf past float64; the log holds the value
            out["grad_norm"] = np.exp(out["log_grad_norm"])
        out["W"] = k.to_numpy(W)
        out["W_norm"] = _xp.frobenius(out["W"], np)  # scaled: finite for every finite W
        if cfg.param == "p":  # p is the (d, 1) matrix of the kernels
            out["p"], out["p_norm"] = out.pop("W")[:, :, 0], out.pop("W_norm")
        out["step"] = state.steps.copy()
        if k.problem.single_query:  # one query per sequence: (B, n) like a selection
            for key in ("max_prob", "selected", "probs"):
                out[key] = out[key][:, :, 0]
        return out

    def run(
        self, callback: Callable[[Intermediate], Any] | None = None, *, squeeze: bool = False
    ) -> BatchRun:
        """Run the loop (:func:`~svmgeo.gd._loop.run_loop`) with this rule."""
        return run_loop(self, callback, squeeze=squeeze)

    def finals(self, state: GDState, obs: dict[str, np.ndarray]) -> dict[str, Any]:
        """The final W (or p), K, Q and head of the batch."""
        k = self.kernels
        assert k is not None  # internal invariant
        is_kq = self.config.param == "KQ"
        return {
            "W": obs.get("W"),
            "p": obs.get("p"),
            "v": obs.get("v"),
            "K": k.to_numpy(state.P1) if is_kq else None,
            "Q": k.to_numpy(state.P2) if is_kq else None,
        }

    def intermediate(
        self, obs: dict[str, np.ndarray], state: GDState, squeeze: bool
    ) -> Intermediate:
        """What the callback receives: read-only views
        (:func:`~svmgeo._validation.read_only_view`) of the record ``obs`` and of the
        iterate's factors, so that a callback that writes into them gets a ValueError instead
        of changing the run or its history."""
        k = self.kernels
        assert k is not None  # internal invariant
        is_kq = self.config.param == "KQ"
        sel = 0 if squeeze else slice(None)

        def view(A: Any) -> Any:
            return None if A is None else read_only_view(A[sel])

        return Intermediate(
            step=view(obs["step"]),
            W=view(obs.get("W")),
            p=view(obs.get("p")),
            v=view(obs.get("v")),
            K=view(k.to_numpy(state.P1)) if is_kq else None,
            Q=view(k.to_numpy(state.P2)) if is_kq else None,
            **{
                key: view(obs[key])
                for key in (
                    "loss",
                    "log_loss_gap",
                    "grad_norm",
                    "log_grad_norm",
                    "max_prob",
                    "selected",
                    "probs",
                )
            },
        )


def _check_normalized_start(W0: np.ndarray, problem: Problem) -> None:
    """Refuse a start where normalized linear attention u / (1^T u) is undefined, or not
    determined by float64 (:func:`svmgeo.gd._xp.check_normalized_sums`)."""
    a = _xp.arrays(problem, np)
    _xp.check_normalized_sums(
        W0, _xp.map_logits(W0, a, np), a, np,
        fix="This is the initial W (init='zero' always gives 1^T u = 0): start from "
        "init=('random', 0.1) (with a seed) or an array W off the hyperplane "
        "1^T X_i W z_ik = 0.",
    )  # fmt: skip


def _record_keys(cfg: GDConfig) -> tuple[str, ...]:
    """History fields recorded for ``cfg.record``: for ``param="p"``, ``"W"`` and ``"p"`` both
    mean p and ``"W_norm"``/``"p_norm"`` its norm. Fields of other parameters, and the head's
    without ``train_head``, are dropped from the default lists and a ProblemError when asked
    for by name."""
    if cfg.param == "p":
        alias = {"W": "p", "W_norm": "p_norm"}
        names = [alias.get(r, r) for r in cfg.record]
    else:
        _refuse_by_name(
            cfg, ("p", "p_norm"), f"the prompt vector p is trained by param='p'; this run trains "
            f"param={cfg.param!r}. Record 'W' and 'W_norm' instead (or pass param='p').",
        )  # fmt: skip
        names = [r for r in cfg.record if r not in ("p", "p_norm")]
    if not cfg.train_head:  # the head is fixed
        _refuse_by_name(
            cfg, ("v", "v_norm"), "the head v is trained only with train_head=True; this run "
            "keeps it fixed (the v it was given, or the data's). Pass train_head=True, or leave "
            "'v' and 'v_norm' out of record.",
        )  # fmt: skip
        names = [r for r in names if r not in ("v", "v_norm")]
    return tuple(dict.fromkeys(names))


def _refuse_by_name(cfg: GDConfig, fields: tuple[str, ...], why: str) -> None:
    """A ProblemError when ``cfg.record`` names any of ``fields`` (the run cannot record them):
    asked for by name, not through the default lists, which drop them."""
    asked = [r for r in cfg.record if r in fields]
    if asked and cfg.record not in (RECORDS, BATCH_RECORDS):
        raise ProblemError(f"record {tuple(asked)!r} of {cfg.caller}: {why}")


def _record_names(record: Any, where: str) -> tuple[str, ...]:
    """``record`` as a tuple (a ProblemError for a string or what is not a sequence; the
    names themselves are checked by :class:`GDConfig`)."""
    if isinstance(record, str):
        raise ProblemError(
            f"The 'record' parameter of {where} takes a sequence of names, e.g. ({record!r},); "
            f"got the string {record!r}."
        )
    try:
        return tuple(record)
    except TypeError:
        raise ProblemError(
            f"The 'record' parameter of {where} takes a sequence of names among "
            f"{', '.join(map(repr, RECORDS))}, e.g. ('loss', 'W'); got {record!r}. Leave it "
            "out for the default fields."
        ) from None


def _check_callback(callback: Any, where: str) -> None:
    """Refuse a ``callback`` that is neither None nor callable, before any step runs."""
    if callback is not None and not callable(callback):
        name = " (pass the function itself, not its name)" if isinstance(callback, str) else ""
        raise ProblemError(
            f"The 'callback' parameter of {where} must be None or a callable taking an "
            f"svmgeo.gd.Intermediate; got {callback!r} of type {type(callback).__name__}{name}. "
            "E.g. callback=lambda info: print(info.step, info.loss)."
        )


def _make_config(options: dict[str, Any]) -> GDConfig:
    valid = sorted(
        f.name
        for f in fields(GDConfig)
        if f.init and f.name not in ("optimizer", "exponent", "risk", "caller", *RULE_FIELDS)
    )
    refuse_unknown_options(
        {name: value for name, value in options.items() if name not in valid},
        "train_batch",
        [*valid, "v", "V", "lam", "callback"],
    )
    if "record" in options:
        options = {**options, "record": _record_names(options["record"], "train_batch")}
    return GDConfig(**options, caller="train_batch")


def train_batch(
    datasets: Sequence[TokenData] | Mapping[str, Any],
    *,
    v: Any = None,
    V: Any = None,
    lam: float | None = None,
    callback: Callable[[Intermediate], Any] | None = None,
    **options: Any,
) -> BatchRun:
    r"""Train attention on B independent datasets of equal sizes in one call.

    .. math::

        W^{(b)} \leftarrow W^{(b)} - \eta\, \frac{\nabla L_b(W^{(b)})}{\|\nabla L_b(W^{(b)})\|_F},
        \qquad b = 1, \dots, B,

    each instance exactly as :func:`train` would run it.

    Parameters
    ----------
    datasets : sequence of TokenData or mapping of stacked arrays
        See below.
    v, V, lam : optional
        Head parameters, shared or with a leading B axis.
    callback : callable, optional
        Called with the intermediate state of the whole batch (an :class:`Intermediate` of
        read-only arrays with a leading B axis); raise ``StopIteration`` to stop.
    **options
        Keyword options of :func:`train`.

    Notes
    -----
    ``datasets`` is a sequence of :class:`~svmgeo.TokenData`, or a mapping of stacked arrays:
    ``X`` (B, n, T, d), ``Y`` (B, n) or (B, n, K), ``Z`` (B, n, d) or (B, n, K, d), ``v``
    (d,) or (B, d), ``query`` (shared), ``mask`` ("causal", (K, T) shared, or (B, n, K, T)).

    Takes the keyword options of :func:`train` (``param``, ``m``, ``loss``, ``head``,
    ``step_size``, ``normalized``, ``n_steps``, ``record_every``, ``record``, ``ridge``,
    ``init``, ``seed``, ``backend``, ``log_domain``, ``grad_tol``, ``saturation_tol``,
    ``train_head``, ``normalize_eps``; not ``optimizer``); ``record``
    defaults to the light fields ``BATCH_RECORDS`` (no W snapshots or full probabilities:
    pass ``record=RECORDS`` for them, at B times the memory of one run). ``v``,
    ``V`` and ``init`` arrays may carry a leading B axis (one per instance) or be shared. With
    ``backend="numba"`` instances run in parallel (as many threads as
    :func:`numba.get_num_threads` gives: ``NUMBA_NUM_THREADS`` / :func:`numba.set_num_threads`). Random initializations are drawn
    from one generator seeded by ``seed``, instance by instance, so instance 0 matches
    :func:`train` with the same seed.

    Returns
    -------
    BatchRun
        ``runs.W`` (B, d, d), histories (B, R, ...), ``runs[b]`` a :class:`GDRun`.
    """
    _check_callback(callback, "train_batch")
    cfg = _make_config({"record": BATCH_RECORDS, **options})
    if isinstance(datasets, TokenData):
        raise ProblemError("train_batch takes a sequence of TokenData; use train for one dataset.")
    items = unstack(datasets) if isinstance(datasets, Mapping) else list(datasets)
    problem = make_problem(
        items, cfg.head, v=v, V=V, lam=lam, param=cfg.param, train_head=cfg.train_head,
        attention=cfg.attention,
    )  # fmt: skip
    check_loss_for(cfg.loss, problem, cfg.caller, cfg.backend, cfg.train_head)
    return GradientDescent(cfg, problem).run(callback)


def train(
    data: TokenData,
    *,
    optimizer: str = "gd",
    exponent: float | None = None,
    param: str = "W",
    m: int | None = None,
    loss: str | LossSpec | tuple[Any, ...] = "logistic",
    head: str = "linear",
    v: Any = None,
    V: Any = None,
    lam: float | None = None,
    step_size: float = 0.1,
    normalized: bool | None = None,
    n_steps: int = 1000,
    record_every: int | None = None,
    record: tuple[str, ...] = RECORDS,
    ridge: float = 0.0,
    init: Any = "zero",
    seed: int | None = None,
    backend: str | None = None,
    log_domain: bool = True,
    grad_tol: float = 0.0,
    saturation_tol: float | None = None,
    train_head: bool = False,
    normalize_eps: float | Mapping[str, float] = 0.0,
    attention: str = "softmax",
    callback: Callable[[Intermediate], Any] | None = None,
    adam_beta1: float | None = None,
    adam_beta2: float | None = None,
    adam_eps: float | None = None,
    spectral_momentum: float | None = None,
    caller: str = "train",
    **renamed: Any,
) -> GDRun:
    r"""Train softmax attention by (normalized) gradient descent.

    .. math::

        L(W) = \frac1n \sum_{i=1}^n \sum_{k=1}^K \ell\big(Y_{ik}\,
            h(X_i^\top \mathrm{softmax}(X_i W z_{ik}))\big) + \tfrac{\rho}{2}\|\theta\|^2,
        \qquad W \leftarrow W - \eta\, \frac{\nabla L(W)}{\|\nabla L(W)\|_F}

    with the softmax over the keys each query sees, :math:`W = KQ^\top` for
    ``param="KQ"`` (each factor's gradient normalized separately), and plain steps
    :math:`W \leftarrow W - \eta\nabla L` when ``normalized=False``. Gradients use the
    formulation relative to the most probable key and, by default, log-domain weights, so
    the direction stays exact as :math:`\|W\| \to \infty` (see :mod:`svmgeo.gd._xp`).

    Parameters
    ----------
    data : TokenData
        Tokens, labels, queries (cross, self, or K per sequence) and mask.
    optimizer : {"gd", "mirror", "sign", "spectral", "adam"} or ("steepest", q), default "gd"
        The update rule, an entry of :data:`~svmgeo.gd.OPTIMIZERS`: gradient descent, or
        :math:`\ell_p` mirror descent (``optimizer="mirror"``: :func:`~svmgeo.train_mirror`
        with ``exponent=`` and its options ``loss``, ``head``, ``v``, ``V``, ``lam``,
        ``step_size``, ``normalized``, ``n_steps``, ``record_every``, ``init``, ``backend``
        and its defaults; other options raise a ProblemError). Formerly ``method``. The
        rules of :mod:`svmgeo.gd._steepest` (``param`` "W" or "KQ", per factor; options
        ``loss``, ``head``, ``v``, ``V``, ``lam``, ``step_size``, ``n_steps``,
        ``record_every``, ``init``, ``param``, ``m``, ``seed``, ``backend`` and their own):
        ``"sign"`` (:math:`W \leftarrow W - \eta\,\mathrm{sign}(\nabla L)`),
        ``("steepest", q)`` (normalized steepest descent for entrywise :math:`\ell_q`,
        :math:`1 \le q \le \infty`), ``"spectral"`` (:math:`U V^\top` of the gradient's SVD;
        Muon with ``spectral_momentum``) and ``"adam"`` (Kingma & Ba, ``adam_beta1``,
        ``adam_beta2``, ``adam_eps``); see docs/optimizers.md.
    exponent : float, optional
        ``optimizer="mirror"`` only: the exponent :math:`p > 1` of the mirror potential
        :math:`\|W\|_p^p/p` (formerly ``p``, which now names only the prompt vector of
        ``param="p"``).
    param : {"W", "KQ", "p"}
        Train W, K and Q of width ``m`` (default d), or the prompt vector
        :math:`p \in \mathbb{R}^d` of the companion paper (Tarzanagh, Li, Zhang, Oymak,
        arXiv:2306.13596): key :math:`t` scores :math:`x_{it}^\top p`, the same :math:`p` for
        every query of every sequence, so the queries of ``data`` are not used (masks and
        per-query labels still are). This is a native path: p is held as a
        :math:`d \times 1` matrix and the query as the scalar 1, so the kernels do
        :math:`O(d)` work per key (not the :math:`O(d^2)` of W with :math:`z_i = e_1`, which
        gives the same iterates: its first column is p). Measured by
        ``benchmarks/bench_prompt_param.py``: 2000 steps on ``random_data(6, 8, 100, seed=0)``
        take 2.5x longer through W with :math:`z = e_1` (1.0x at d = 10). The result has
        ``run.p`` and ``run.W = None``; the history records ``p`` and ``p_norm`` (see
        :class:`History`).
    m : int, optional
        Width of K and Q (``m >= 1``; ``m > d`` allowed); ``param="KQ"`` only (with
        ``param="W"`` or ``"p"`` a ProblemError).
    loss : {"logistic", "exponential", "correlation"}, LossSpec or tuple of callables
        A built-in, or a user's own loss as :func:`~svmgeo.check_loss` takes it: a
        :class:`~svmgeo.LossSpec` or ``(value, derivative[, second derivative])`` callables
        ``u -> array``, on every backend and optimizer (numba compiles ``d1``, or
        ``log_abs_d1`` when given, for a float ``u``; where it cannot, a ProblemError points
        to ``backend="numpy"``). Checked before the first step (finite arrays of the input's
        shape; a :class:`~svmgeo.losses.LossWarning` where :math:`\ell' \ge 0` on the
        attained interval). See docs/attention-maps.md, "A user's own loss".
    head : {"linear", "relu", "concave"}
        :math:`v^\top x` (``v`` defaults to ``data.v``), :math:`v^\top\mathrm{ReLU}(V^\top x)`
        (``V`` of shape (d_u, p) required, ``v`` of shape (p,) defaults to ones), or
        :math:`v^\top x - \lambda\|x\|^2` (``lam`` required), applied to
        :math:`x = U_i^\top s` with :math:`U_i` the head features ``data.values`` (width
        :math:`d_u`; ``X`` when the data have no values). Data built with ``scores=`` and no
        ``v`` train the linear head from the given :math:`\gamma_{ikt}` (labels included):
        :math:`Y_{ik} f_{ik} = \sum_t s_t \gamma_{ikt}`, which is all the linear head needs;
        other heads, ``v=`` and ``train_head`` are refused for such data.
    v, V, lam : optional
        Head parameters, fixed during training (with ``train_head=True``, ``v`` is the
        initial head: default ``data.v``, else zero).
    step_size : float
        :math:`\eta > 0`.
    normalized : bool, optional
        Normalized (default for ``optimizer="gd"``) or plain steps (default for
        ``optimizer="mirror"``, the paper's algorithm).
    n_steps : int
        Maximum number of steps, at least 1 (for every optimizer: the start alone is
        :func:`loss_and_grad`).
    record_every : int, optional
        History cadence; default ``max(1, n_steps // 100)``.
    record : tuple of str
        History fields among ``RECORDS`` (``"loss", "grad_norm", "W_norm", "max_prob",
        "selected", "probs", "W", "p", "p_norm", "v", "v_norm"``); default all. Fields that
        do not apply to the run stay None (see :class:`History`); asked for by name, the
        prompt's on a W or (K, Q) run and the head's without ``train_head`` are refused.
    ridge : float
        :math:`\rho \ge 0` (the paper's experiments use a tiny one on (K, Q)).
    init : "zero", ("random", scale), array of shape (d, d) (shape (d,) for ``param="p"``), or (K, Q)
        Initialization; random entries are :math:`\mathcal{N}(0, \text{scale}^2)`.
    seed : int, optional
        Seed of the random initialization ``init=("random", scale)``; with any other
        ``init`` a ProblemError (it would change nothing).
    backend : {"numba", "numpy", "cupy"}, optional
        Compiled CPU kernels (:data:`~svmgeo.gd.DEFAULT_BACKEND`, the default for
        ``optimizer="gd"``), the readable numpy reference (the default for
        ``optimizer="mirror"``), or CuPy (``pip install svmgeo[gpu]``).
    log_domain : bool
        Log-domain step direction (default True).
    grad_tol : float
        Stop when the gradient norm is at most ``grad_tol`` (0: never); formerly ``tol``.
    saturation_tol : float, optional
        Stop at a record point, the start included, where every max softmax probability is
        :math:`\ge 1 -` ``saturation_tol``.
    train_head : bool, default False
        Train the linear head :math:`v \in \mathbb{R}^{d_u}` jointly with the attention
        (``param`` "p", "W" or "KQ"), as in the companion paper's joint :math:`(v, p)`
        training: the risk is :math:`\frac1n\sum_i \ell(Y_i f_i)` with
        :math:`\nabla_v L = \frac1n \sum_i \ell'(Y_i f_i)\, Y_i U_i^\top s_i`
        (sum over queries too), computed in the log domain like the attention gradient.
        Normalized steps normalize each block separately,
        :math:`v \leftarrow v - \eta \nabla_v L / \|\nabla_v L\|` and
        :math:`p \leftarrow p - \eta \nabla_p L / \|\nabla_p L\|` (K and Q each their
        own block); plain steps are plain; ``ridge`` applies to v as well. ``run.v`` is the
        final head and the history records ``v`` and ``v_norm``. Linear head only, and not
        for data with given ``scores`` (a ProblemError says so).
    normalize_eps : float or mapping of str to float, default 0
        :math:`\varepsilon \ge 0`: normalized steps become
        :math:`\eta\, g / (\|g\| + \varepsilon)` for each block :math:`g`, as in published
        code whose dynamics depend on it (a norm plateau, a frozen head). One float for every
        block, or a mapping from the run's block names to their ε (``"W"``, ``"p"``, ``"K"``,
        ``"Q"``, and ``"v"`` with ``train_head``; blocks left out get 0), e.g.
        ``{"p": 1e-19, "v": 1e-9}``; other names are a ProblemError. 0 is the exact
        normalized step (the same iterates as before this option existed). Computed stably in
        the log domain, :math:`(g/\|g\|)/(1 + \varepsilon/\|g\|)` with :math:`\|g\|` kept as
        a logarithm, so tiny gradients give tiny steps rather than underflow. Normalized steps
        only.
    attention : {"softmax", "linear", "normalized_linear", "sigmoid", "relu"}, default "softmax"
        The attention map :math:`\varphi` of :mod:`svmgeo.attention_maps`:
        :math:`f_{ik} = h(U_i^\top \varphi(X_i W z_{ik}))` with :math:`\varphi` over the keys
        the query sees (hidden keys get weight 0). Every param, loss, head and backend;
        ``optimizer="gd"`` only, no ``saturation_tol`` for maps other than softmax (their
        weights are not probabilities: the history's ``probs`` and ``max_prob`` hold
        :math:`\varphi(u)` and its largest entry, ``log_loss_gap`` is NaN). Normalized
        linear attention :math:`u/\mathbf 1^\top u` is undefined at :math:`W = 0`: start it
        from ``init=("random", scale)`` or an array. Each map's own SVM is
        :func:`~svmgeo.att_svm` with the same ``attention=``; see docs/attention-maps.md.
    callback : callable, optional
        Called with an :class:`Intermediate` at each record point after the start; raise
        :class:`StopIteration` to stop. Its arrays are read-only views (writing raises
        ValueError), so the callback cannot change the run. A value that is not callable is
        a ProblemError before the first step.
    adam_beta1, adam_beta2, adam_eps : float, optional
        ``optimizer="adam"``: :math:`\beta_1` (0.9), :math:`\beta_2` (0.999) in [0, 1) and
        :math:`\varepsilon \ge 0` (1e-8).
    spectral_momentum : float, optional
        ``optimizer="spectral"``: Muon's momentum :math:`\mu \in [0, 1)` (default 0).
    caller : str, default "train"
        The public function named in error messages: a function that trains through this one
        (:func:`~svmgeo.verify`) passes its own name, so the errors name what the user called.

    Returns
    -------
    GDRun
        For every optimizer (see :class:`GDRun` for what each records).

    Raises
    ------
    ProblemError
        For invalid parameters (each message names the argument and the valid values), for
        the old spellings ``method``, ``p`` and ``tol`` (the message names the new one), and
        for an option train does not take (the message lists those it takes).
    BackendError
        For ``backend="cupy"`` without CuPy or a CUDA device.

    Examples
    --------
    >>> import svmgeo as sg
    >>> data = sg.random_data(4, 5, 8, seed=0)
    >>> run = sg.train(data, n_steps=200, record_every=50, backend="numpy")
    >>> run.status, run.history.W.shape
    (<StopStatus.MAX_STEPS: 'max_steps'>, (5, 8, 8))
    """
    if not isinstance(data, TokenData):
        # by name: svmgeo.ntp imports svmgeo.gd
        ntp = type(data).__name__ == "NextTokenData"
        raise ProblemError(
            f"{caller} takes one svmgeo.TokenData; got {type(data).__name__}. "
            + (
                "Train next-token data with sg.train_ntp(data, loss=...)."
                if ntp
                else "Use train_batch for a sequence of datasets."
            )
        )
    refuse_unknown_options(renamed, caller, _TRAIN_OPTIONS)
    optimizer, q = resolve_optimizer(optimizer, caller)
    loss = resolve_loss(loss, caller)
    if isinstance(step_size, str) and step_size != "polyak":
        raise ProblemError(
            f"The 'step_size' parameter of {caller} must be a positive float or 'polyak'. Got "
            f"{step_size!r} instead."
        )
    record = _record_names(record, caller)
    _check_callback(callback, caller)
    if optimizer == "gd" and isinstance(step_size, str):  # the Polyak step of GD
        if normalized is False:
            raise ProblemError(
                "step_size='polyak' takes normalized steps, W <- W - eta_t g / ||g||_F; got "
                "normalized=False. Drop normalized, or pass a float step_size."
            )
        optimizer, q = "steepest", 2.0
        asked = "step_size='polyak' (GD's Polyak step, run by optimizer=('steepest', 2))"
    else:
        asked = f"optimizer={optimizer!r} ({OPTIMIZERS[optimizer].summary})"
    rule = OPTIMIZERS[optimizer]
    rule_options = dict(
        adam_beta1=adam_beta1, adam_beta2=adam_beta2, adam_eps=adam_eps,
        spectral_momentum=spectral_momentum,
    )  # fmt: skip
    given = dict(
        param=(param, "W"), m=(m, None), record=(tuple(record), RECORDS), ridge=(ridge, 0.0),
        seed=(seed, None), log_domain=(log_domain, True), grad_tol=(grad_tol, 0.0),
        saturation_tol=(saturation_tol, None), train_head=(train_head, False),
        normalize_eps=(normalize_eps, 0.0), callback=(callback, None),
        attention=(attention, "softmax"),
        **{name: (value, None) for name, value in rule_options.items()},
        # GDConfig refuses gd's exponent with its own hint; the other rules never see it
        **({} if optimizer == "gd" else {"exponent": (exponent, None)}),
    )  # fmt: skip
    foreign = [name for name, (value, default) in given.items()
               if value != default and name not in rule.options]  # fmt: skip
    if foreign:
        raise ProblemError(
            f"{asked} takes {', '.join(rule.options)}; got the option(s) {', '.join(foreign)} "
            "of another optimizer."
        )
    normalized = rule.default_normalized if normalized is None else normalized
    backend = rule.default_backend if backend is None else backend
    if optimizer in STEEPEST_RULES:
        cfg = GDConfig(
            optimizer=optimizer, steepest_q=q, param=param, m=m, loss=loss, head=head,
            step_size=step_size, normalized=normalized, n_steps=n_steps,
            record_every=record_every, init=init, seed=seed, backend=backend,
            record=("loss", "W", "W_norm"), attention=attention, caller=caller,
            **{name: value for name, value in rule_options.items() if value is not None},  # type: ignore[arg-type]
        )  # fmt: skip
        _check_single_init(cfg, data.d)
        P1, P2, _ = _init_params(cfg, 1, data.d)
        risk: Risk = (
            RiskOracle(data, loss=loss, head=head, v=v, V=V, lam=lam, backend=backend)
            if attention == "softmax"
            else MapRisk(data, attention, loss=loss, head=head, v=v, V=V, lam=lam, backend=backend)
        )
        factors = (P1[0], P2[0]) if param == "KQ" else (P1[0],)
        return run_loop(SteepestDescent(cfg, risk, factors))[0]
    if optimizer == "mirror":
        return run_mirror_descent(
            data, caller=caller, exponent=exponent, loss=loss, head=head, v=v, V=V, lam=lam,
            step_size=step_size, normalized=normalized, n_steps=n_steps,
            record_every=record_every, init=init, backend=backend,
        )  # fmt: skip
    cfg = GDConfig(
        param=param, m=m, loss=loss, head=head, step_size=step_size, normalized=normalized,
        n_steps=n_steps, record_every=record_every, record=tuple(record), ridge=ridge, init=init,
        seed=seed, backend=backend, log_domain=log_domain, grad_tol=grad_tol,
        saturation_tol=saturation_tol, train_head=train_head, normalize_eps=normalize_eps,
        optimizer=optimizer, exponent=exponent, attention=attention, caller=caller,
    )  # fmt: skip
    _check_single_init(cfg, data.d)
    problem = make_problem(
        [data], head, v=v, V=V, lam=lam, param=param, train_head=train_head, attention=attention
    )
    check_loss_for(cfg.loss, problem, cfg.caller, cfg.backend, cfg.train_head)
    return GradientDescent(cfg, problem).run(callback, squeeze=True)[0]


_TRAIN_OPTIONS = keyword_options(train, "caller")

_LOG_FLOAT_MAX = math.log(np.finfo(float).max)


def _at_true_scale(D: Any, c: Any, xp: Any) -> Any:
    r""":math:`e^{c_b} D_b` for each instance b, finite wherever the product is: for
    :math:`c_b` beyond ``LOG_EXP_MAX`` the power of two of :math:`e^{c_b}` is applied last
    (``ldexp``), so that :math:`e^{c_b}` alone does not overflow (e.g. a ridge near float64's
    largest)."""
    n = xp.where(c > _xp.LOG_EXP_MAX, xp.floor(c / math.log(2.0)), 0.0)
    with np.errstate(over="ignore"):  # an entry beyond float64 is inf, refused by the caller
        return xp.ldexp(
            xp.exp(c - n * math.log(2.0))[:, None, None] * D, n.astype(np.int64)[:, None, None]
        )


def _ridge_term(ridge: float, P: list[np.ndarray]) -> float:
    r""":math:`\frac{\rho}{2}\sum_A \|A\|_F^2` over the trained blocks P, finite wherever it is
    (a block's square may overflow on its own: ``inf`` only when the term does)."""
    with np.errstate(over="ignore"):
        sq = sum(float(np.sum(A * A)) for A in P)
    if math.isfinite(sq):
        return 0.5 * ridge * sq
    log_term = math.log(0.5 * ridge) + _log_squared_norm(P)
    return math.exp(log_term) if log_term < _LOG_FLOAT_MAX else math.inf


def _log_squared_norm(P: list[np.ndarray]) -> float:
    r""":math:`\log \sum_A \|A\|_F^2` over non-zero blocks P, without overflow."""
    norms = [entrywise_norm(A, 2.0) for A in P]
    top = max(norms)
    return 2.0 * math.log(top) + math.log(sum((x / top) ** 2 for x in norms))


def _ridge_beyond_float64(ridge: float, P: list[np.ndarray]) -> ProblemError:
    """The error of :func:`loss_and_grad` when its ridge term (or gradient) overflows."""
    log_sq = _log_squared_norm(P)
    largest = max(float(np.max(np.abs(A), initial=0.0)) for A in P)
    # half the largest ridge whose term rho ||theta||^2 / 2 and gradient rho theta are finite
    log_limit = min(math.log(2.0) - log_sq, -math.log(largest)) + _LOG_FLOAT_MAX - math.log(2.0)
    limit = math.exp(min(log_limit, _LOG_FLOAT_MAX))
    return ProblemError(
        f"loss_and_grad: ridge={ridge!r} puts the objective beyond float64's range at these "
        f"parameters (||theta||_F = {math.exp(0.5 * log_sq):.3g}): the ridge term ridge "
        f"||theta||_F^2 / 2, or its gradient ridge theta, exceeds {np.finfo(float).max:.3g}. "
        f"Pass a ridge in [0, {limit:.3g}] for these parameters, or smaller parameters."
    )


def _checked_params(params: Any, d: int) -> np.ndarray:
    """``params`` of :func:`loss_and_grad` that is not a (K, Q) tuple: W (d, d) or p (d,)."""
    hint = (
        f"params is W of shape ({d}, {d}), p of shape ({d},) or a tuple (K, Q) of arrays of "
        f"shape ({d}, m) (a list of two arrays reads as one array)."
    )
    arr = check_array(params, "params of loss_and_grad", ndim=(1, 2), hint=hint)
    if arr.shape != ((d,) if arr.ndim == 1 else (d, d)):
        raise ProblemError(f"got params of shape {arr.shape} in loss_and_grad; {hint}")
    return arr


def _checked_factors(params: tuple[Any, ...], d: int) -> tuple[np.ndarray, np.ndarray]:
    """``params`` of :func:`loss_and_grad` given as a tuple: the pair (K, Q) of finite arrays
    of one shape (d, m) whose product W = K Q^T is finite (ProblemErrors naming params)."""
    hint = (
        f"params=(K, Q) takes two arrays of shape ({d}, m) with the same m (W = K Q^T); pass W "
        f"of shape ({d}, {d}) or p of shape ({d},) as an array, not a tuple."
    )
    if len(params) != 2:
        raise ProblemError(f"params of loss_and_grad is a tuple of length {len(params)}; {hint}")
    K = check_array(params[0], "params K of loss_and_grad", ndim=2, hint=hint)
    Q = check_array(params[1], "params Q of loss_and_grad", ndim=2, hint=hint)
    if K.shape[0] != d or Q.shape != K.shape:
        raise ProblemError(
            f"params of loss_and_grad: got K of shape {K.shape} and Q of shape {Q.shape} for "
            f"d = {d}; {hint}"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        W = np.einsum("dm,em->de", K, Q)
    if not np.all(np.isfinite(W)):
        raise ProblemError(
            "params (K, Q) of loss_and_grad give W = K Q^T with non-finite entries (the "
            "factors' norms multiply past float64's range); rescale K and Q so that "
            "||K||_F ||Q||_F <= 1e150 (a positive scale changes no selection)."
        )
    return K, Q


def loss_and_grad(
    data: TokenData,
    params: Any,
    *,
    loss: str | LossSpec | tuple[Any, ...] = "logistic",
    head: str = "linear",
    v: Any = None,
    V: Any = None,
    lam: float | None = None,
    ridge: float = 0.0,
    backend: str = REFERENCE_BACKEND,
    train_head: bool = False,
    attention: str = "softmax",
) -> tuple[float, Any]:
    r"""The risk and its gradient at W, or at (K, Q), as :func:`train` computes them.

    .. math::

        L = \frac1n \sum_{i,k} \ell(Y_{ik} f_{ik}) + \tfrac{\rho}{2}\|\theta\|_F^2,
        \qquad \nabla_K = \nabla L(KQ^\top) Q, \quad \nabla_Q = \nabla L(KQ^\top)^\top K

    Parameters
    ----------
    data : TokenData
        The dataset.
    params : ndarray, or tuple of two ndarrays
        W of shape (d, d), the prompt vector p of shape (d,) (prompt attention), or a pair
        ``(K, Q)`` of arrays of shape (d, m) with :math:`W = KQ^\top` (a tuple: a list of
        two arrays reads as one array).
    loss, head, v, V, lam, ridge, backend
        As in :func:`train`.
    train_head : bool, default False
        Also return the gradient in the linear head v (and include :math:`\rho\|v\|^2/2`
        in the ridge term), as :func:`train` with ``train_head=True`` uses them.
    attention : str, default "softmax"
        The attention map, as in :func:`train`.

    Returns
    -------
    loss : float
        The risk including the ridge term.
    grad : ndarray of shape (d, d) or (d,), or a pair of arrays of shape (d, m)
        The gradient at its true scale (it may underflow to zero far out; :func:`train`
        normalizes in the log domain instead). With ``train_head=True``, a tuple of the
        attention gradient(s) followed by the head's gradient of shape (d_u,):
        ``(gW, gv)``, ``(gp, gv)`` or ``(gK, gQ, gv)``.

    Raises
    ------
    ProblemError
        For invalid input, each message naming the argument: ``params`` of the wrong shape
        or not finite, a pair (K, Q) whose product overflows, a W beyond the largest norm
        the engine represents for the data, a ``ridge`` whose term
        :math:`\rho\|\theta\|_F^2/2` or gradient :math:`\rho\theta` is beyond float64 at
        ``params`` (the message names the ridges that fit), or an option :func:`train`
        refuses.
    """
    if not isinstance(data, TokenData):
        raise ProblemError(f"loss_and_grad takes one svmgeo.TokenData; got {type(data).__name__}.")
    loss = resolve_loss(loss, "loss_and_grad")
    is_kq = isinstance(params, tuple)
    init = _checked_factors(params, data.d) if is_kq else _checked_params(params, data.d)
    param = "KQ" if is_kq else ("p" if np.ndim(init) == 1 else "W")
    cfg = GDConfig(
        param=param, loss=loss, head=head, ridge=ridge, init=init, backend=backend,
        train_head=train_head, attention=attention, caller="loss_and_grad",
    )  # fmt: skip
    problem = make_problem(
        [data], head, v=v, V=V, lam=lam, param=param, train_head=train_head, attention=attention
    )
    check_loss_for(cfg.loss, problem, cfg.caller, cfg.backend, cfg.train_head)
    gd = GradientDescent(cfg, problem)
    state = gd.init_state()
    k = gd.kernels
    assert k is not None  # internal invariant
    W = k.weights(state.P1, state.P2, is_kq)
    size = entrywise_norm(k.to_numpy(W)[0], 2.0) if param != "p" else 0.0
    if not size <= (limit := float(problem.max_norm[0])):  # beyond: the logits leave range
        raise ProblemError(
            f"loss_and_grad: ||W||_F = {size:.3g} is beyond the largest norm the engine "
            f"represents for these data, {limit:.3g} (train stops there with OVERFLOW); "
            "rescale W (a positive scale changes no selection)."
        )
    key = _xp.loss_key(cfg.loss)
    obs = _xp.observe(W, problem, _xp.with_head(k.arrays, state.head), key, k.xp)
    G, M, hb = k.grads(W, state.head, key, True, train_head)
    G, M = k.asarray(G), k.asarray(M)
    hd = None if hb is None else (state.head, *(k.asarray(x) for x in hb))
    grads = _xp.factor_grads(state.P1, state.P2, G, M, is_kq, ridge, k.xp, hd)
    out = [k.to_numpy(_at_true_scale(D, c, k.xp))[0] for D, c in grads]
    value = float(k.to_numpy(obs["loss"])[0])
    if ridge > 0.0:  # (0 * an overflowed ||K||^2 was NaN)
        P = [k.to_numpy(B)[0] for B in (state.P1, *([state.P2] if is_kq else []),
                                         *([state.head] if train_head else []))]  # fmt: skip
        term = _ridge_term(ridge, P)
        value += term
        with np.errstate(over="ignore"):
            ridge_finite = math.isfinite(term) and all(np.all(np.isfinite(ridge * A)) for A in P)
        if not ridge_finite:  # the ridge's own term or gradient overflows (the loss's may not)
            raise _ridge_beyond_float64(ridge, P)
    if param == "p":
        out[0] = out[0][:, 0]
    if train_head:
        out[-1] = out[-1][0]
    return value, tuple(out) if len(out) > 1 else out[0]
