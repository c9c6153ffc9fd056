# SPDX-License-Identifier: BSD-3-Clause
r"""The one adapter between verify and the training engine (:mod:`svmgeo.gd`).

Every call into gd that verify makes (:func:`~svmgeo.train`, :func:`~svmgeo.train_mirror`,
the risk oracle) and every read of a run object is here; the rest of :mod:`svmgeo.verify`
sees a :class:`Trajectory`:

.. math::

    \big(t_r,\ \theta(t_r),\ \min_{i,k}\max_t s_{ikt}(t_r),\ \|\theta(t_r)\|\big)_{r=1..R},
    \qquad \alpha_{ik} = \arg\max_t s_{ikt}(\theta_{\mathrm{final}}).

Every run of the engine is a :class:`~svmgeo.GDRun` (GD and mirror descent alike, from the one
loop of :mod:`svmgeo.gd`); verify's option spellings (``grad_tol``, ``exponent``) are the
engine's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from .._errors import ProblemError, TieError
from ..data import TokenData
from ..gd import GDRun, StopStatus, random_init, run_mirror_descent, train
from ..selection import first_five, largest_logits, weight_logits

__all__ = ["Trajectory", "run_gd", "run_mirror", "run_steepest"]


@dataclass(frozen=True, eq=False)
class Trajectory:
    r"""A training run as verify reads it.

    Attributes
    ----------
    steps : ndarray of int, shape (R,)
        The recorded steps.
    iterates : ndarray of shape (R, d, d) or (R, d)
        :math:`W(t)` (:math:`KQ^\top` for ``param="KQ"``) or the prompt vector :math:`p(t)`.
    final : ndarray of shape (d, d) or (d,)
        The final W (or p).
    selection : ndarray of int, shape (n,) or (n, K)
        The final argmax selection, in the shape of a selection (``data.selection_shape``).
    max_softmax : ndarray of shape (R,)
        :math:`\min_{i,k}\max_t s_{ikt}(t)`.
    norm : ndarray of shape (R,)
        :math:`\|W(t)\|_F` (or :math:`\|p(t)\|`).
    status : str
        Why the run stopped.
    run : GDRun
        The engine's run object.
    probs : ndarray or None
        The final softmax probabilities (recorded for nonlinear heads).
    head_iterates, head : ndarray or None
        Joint training: :math:`v(t)`, shape (R, d_u), and the final v.
    """

    steps: np.ndarray
    iterates: np.ndarray
    final: np.ndarray
    selection: np.ndarray
    max_softmax: np.ndarray
    norm: np.ndarray
    status: str
    run: GDRun
    probs: np.ndarray | None = None
    head_iterates: np.ndarray | None = None
    head: np.ndarray | None = None


def _recorded(value: np.ndarray | None, name: str) -> np.ndarray:
    if value is None:  # pragma: no cover - verify always asks train to record it
        raise RuntimeError(f"internal error: train did not record {name!r}")
    return value


def _selection(data: TokenData, final: np.ndarray, run: GDRun) -> np.ndarray:
    r"""The token of each query's largest final logit (:math:`x_{it}^\top W z_{ik}`, or
    :math:`x_{it}^\top p` for the prompt vector p) as a selection: (n,) for one query per
    sequence, else (n, K) (:func:`~svmgeo.selection.largest_logits`).

    Raises
    ------
    ProblemError
        Where a query's final logits are not finite (NaN or ±inf: parameters with such
        entries, or logits beyond float64): no token is the largest, and an argmax would be
        a guess.
    TieError
        Where a query's largest logit is shared (:func:`~svmgeo.selection.tied_maxima`'s rule,
        that of :func:`~svmgeo.optimal_tokens`): identical tokens, or a stationary run such as
        K = Q = 0. A selection is one token per query; SPEC §2: ties are reported, never
        broken silently.

    Either message opens with why ``run`` stopped early, if it did (a run stopped at its
    start by an overflow ends tied at W = 0); the TieError carries ``run`` (its ``run``
    attribute), for a caller that reports a tied run rather than fails on it.
    """
    stopped = _early_stop(run)
    alpha, tied, non_finite = largest_logits(data, final)
    if non_finite:
        raise ProblemError(
            f"{stopped}GD's final parameters give non-finite logits (NaN or inf) for "
            f"{_queries(non_finite)}: {first_five(non_finite)}, so they select no token "
            "(an argmax over them would be a guess). The final W (or p) has NaN or inf "
            "entries, or its logits exceed float64: rescale the data (e.g. TokenData(X / s)) "
            "or take fewer or smaller steps."
        )
    if alpha is None:
        raise TieError(
            f"{stopped}GD's final selection is tied for {_queries(tied)}: {first_five(tied)} "
            "(equal largest logits at the final parameters: identical tokens, or a stationary "
            "start such as K = Q = 0). A selection is one token per query: merge or perturb "
            "identical tokens, start elsewhere (e.g. init=('random', 0.1)), or compare with "
            "gen_svm's selected sets.",
            run=run,
        )
    return alpha


def _queries(listed: list[str]) -> str:
    """``"1 query"`` or ``"N queries"``: how many ``listed`` names."""
    return f"{len(listed)} quer{'y' if len(listed) == 1 else 'ies'}"


def _seeded(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` for :func:`~svmgeo.train`: verify's ``seed`` seeds its cone perturbation
    as well, train's only a random start (anything else is refused), so it is passed on with
    ``init=("random", scale)`` only."""
    if "seed" in options and not random_init(options.get("init", "zero")):
        return {**options, "seed": None}
    return options


def run_gd(
    data: TokenData, *, param: str, head: str, train_head: bool, options: dict[str, Any]
) -> Trajectory:
    r"""Train with :func:`~svmgeo.train` and read the run.

    Parameters
    ----------
    data : TokenData
    param : {"W", "KQ", "p"}
    head : str
    train_head : bool
    options : dict
        The other options of :func:`~svmgeo.train`, in verify's spelling (``grad_tol``).

    Returns
    -------
    Trajectory
        For ``param="p"`` or ``train_head`` the iterates are p(t) (or W(t)) and the norm is
        computed from them; otherwise the engine's ``W_norm`` record.
    """
    joint = param == "p" or train_head
    key = "p" if param == "p" else "W"
    if joint:
        record = (key, "max_prob", "selected") + (("v",) if train_head else ())
    else:
        record = ("W_norm", "max_prob", "selected", "W") + (("probs",) if head != "linear" else ())
    run = train(
        data,
        param=param,
        head=head,
        train_head=train_head,
        record=record,
        caller="verify",
        **_seeded(options),
    )
    hist = run.history
    steps = np.asarray(hist.step, dtype=np.int64)
    max_prob = _recorded(hist.max_prob, "max_prob")
    if joint:
        iterates = np.asarray(_recorded(getattr(hist, key), key), dtype=float)
        norm = np.linalg.norm(iterates.reshape(len(iterates), -1), axis=1)
        final = np.asarray(run.p if key == "p" else run.W)
    else:
        iterates = _recorded(hist.W, "W")
        norm = np.asarray(_recorded(hist.W_norm, "W_norm"), dtype=float)
        final = _recorded(run.W, "W")
    return Trajectory(
        steps=steps,
        iterates=iterates,
        final=final,
        selection=_selection(data, np.asarray(final, dtype=float), run),
        max_softmax=max_prob.reshape(len(hist.step), -1).min(axis=1),
        norm=norm,
        status=str(run.status),
        run=run,
        probs=None if hist.probs is None else hist.probs[-1],
        head_iterates=np.asarray(_recorded(hist.v, "v"), dtype=float) if train_head else None,
        head=run.v if train_head else None,
    )


def _early_stop(run: Any) -> str:
    """The opening of a tie's message for a run that stopped on a failure (overflow,
    non-finite values, a stationary or underflowing gradient): its status and message."""
    if str(run.status) in _EARLY_STOPS:
        return f"The run stopped with status {str(run.status)!r} ({run.message}). "
    return ""


_EARLY_STOPS = frozenset(
    str(s)
    for s in (
        StopStatus.OVERFLOW,
        StopStatus.NON_FINITE,
        StopStatus.STATIONARY,
        StopStatus.GRADIENT_UNDERFLOW,
    )
)
"""Stops after which a tied final selection says more about the run than about the data."""


def _min_max_softmax(data: TokenData, Ws: np.ndarray) -> np.ndarray:
    r""":math:`\min_{i,k}\max_t s_{ikt}(W)` for each W of ``Ws`` (R, d, d), in log-sum-exp."""
    logits = weight_logits(data, Ws)
    log_top = logits.max(axis=-1) - logsumexp(logits, axis=-1)
    return np.exp(log_top.reshape(len(Ws), -1).min(axis=1))


def run_mirror(data: TokenData, *, exponent: float, options: dict[str, Any]) -> Trajectory:
    r"""Train with :math:`\ell_p` mirror descent (:func:`~svmgeo.train_mirror`) and read the run.

    Parameters
    ----------
    data : TokenData
    exponent : float
        The exponent p of the potential :math:`\|W\|_p^p/p`.
    options : dict
        ``loss``, ``v``, ``step_size``, ``normalized``, ``n_steps``, ``record_every``, ``init``,
        ``backend``.

    Returns
    -------
    Trajectory
        The selection is read off the final W (its largest logits); saturation and
        norm are computed from the recorded W(t).
    """
    run = run_mirror_descent(
        data,
        caller="verify_mirror",
        exponent=exponent,
        head="linear",
        V=None,
        lam=None,
        **options,
    )
    return _weight_trajectory(data, run, options)


def _weight_trajectory(data: TokenData, run: GDRun, options: dict[str, Any]) -> Trajectory:
    """A run that recorded W(t) only: the selection read off the final W (:func:`_selection`),
    saturation and norm computed from the recorded W(t)."""
    Ws = _recorded(run.history.W, "W")
    final = _recorded(run.W, "W")
    return Trajectory(
        steps=np.asarray(run.history.step, dtype=np.int64),
        iterates=Ws,
        final=final,
        selection=_selection(data, np.asarray(final, dtype=float), run),
        max_softmax=_min_max_softmax(data, Ws),
        norm=np.array([float(np.linalg.norm(W)) for W in Ws]),
        status=str(run.status),
        run=run,
    )


def run_steepest(
    data: TokenData, *, optimizer: Any, param: str, options: dict[str, Any]
) -> Trajectory:
    r"""Train with a rule of :mod:`svmgeo.gd._steepest` (sign, :math:`\ell_q` steepest,
    spectral / Muon, Adam) through :func:`~svmgeo.train`, and read the run.

    Parameters
    ----------
    data : TokenData
    optimizer : str or ("steepest", q)
    param : {"W", "KQ"}
    options : dict
        The other options of :func:`~svmgeo.train` (``loss``, ``v``, ``step_size``,
        ``n_steps``, ``record_every``, ``init``, ``backend``, ``seed``, ``m``, the rule's own).

    Returns
    -------
    Trajectory
        The iterates are the recorded :math:`W(t)` (:math:`KQ^\top`); the selection is read
        off the final W by the engine's risk oracle; saturation and norm are computed from
        the recorded W(t).
    """
    run = train(data, optimizer=optimizer, param=param, caller="verify", **_seeded(options))
    return _weight_trajectory(data, run, options)
