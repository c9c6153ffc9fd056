# SPDX-License-Identifier: BSD-3-Clause
r"""What a training run returns: :class:`History`, :class:`GDRun`, :class:`BatchRun`.

One result type serves every update rule and risk of the loop (:mod:`svmgeo.gd._loop`):
gradient descent on softmax attention, :math:`\ell_p` mirror descent and next-token training
all return a :class:`GDRun`; fields a run does not record stay None.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .._summary import summarized
from ._config import OPTIMIZERS, POLYAK, GDConfig, StopStatus

__all__ = ["BatchRun", "GDRun", "History", "Intermediate", "stop_message"]


@summarized
@dataclass(frozen=True, eq=False)
class History:
    r"""What a run recorded, one entry per record point (start, every ``record_every`` steps,
    end). Fields not asked for in ``record`` are None.

    Attributes
    ----------
    step : ndarray of shape (R,)
        Steps taken at each record.
    loss : ndarray of shape (R,)
        :math:`L(W)` (without the ridge term).
    log_loss_gap : ndarray of shape (R,)
        :math:`\log(L - L_{\mathrm{sel}})`, informative after :math:`L` stops changing in
        float64 (see :func:`svmgeo.gd._xp.observe`); NaN where the gap is negative (some
        query's most probable key is not its best-scoring one, e.g. at W = 0) or unknown (a
        user loss whose difference overflows); -inf where L equals :math:`L_{\mathrm{sel}}`
        exactly. The exponential loss's gap stays finite where the loss itself overflows
        (margins below about -709; ``loss`` is then inf).
    grad_norm, log_grad_norm : ndarray of shape (R,)
        Norm of the gradient of the trained parameters (with ridge) and its logarithm, which
        stays finite after the norm itself underflows.
    W_norm : ndarray of shape (R,)
        :math:`\|W\|_F`.
    W_norm_lp : ndarray of shape (R,)
        ``optimizer="mirror"`` only (else None): :math:`\|W\|_p` (entrywise), ``p`` the
        exponent of the potential.
    log_theta_scale : ndarray of shape (R,)
        ``optimizer="mirror"`` only (else None): :math:`c` with
        :math:`\max|\nabla\psi(W)| = e^{c}` (the scale of the mirror coordinates).
    max_prob, selected : ndarray of shape (R, n, K), or (R, n) for one query per sequence
        Largest softmax probability of each query and its key (the selected token):
        ``selected[-1]`` has the shape of a selection (``data.selection_shape``), as
        :func:`~svmgeo.optimal_tokens` returns it.
    probs : ndarray of shape (R, n, K, T), or (R, n, T) for one query per sequence
        Softmax probabilities.
    W : ndarray of shape (R, d, d)
        Snapshots of W (:math:`KQ^\top` for ``param="KQ"``); None for ``param="p"``.
    p, p_norm : ndarray of shape (R, d) and (R,)
        For ``param="p"`` only (else None): snapshots of :math:`p` and :math:`\|p\|`,
        recorded where W and ``W_norm`` would be (``record`` may name them ``"W"``/``"p"``
        and ``"W_norm"``/``"p_norm"``); ``W_norm`` is then None.
    v, v_norm : ndarray of shape (R, d_u) and (R,)
        With ``train_head=True`` only (else None): snapshots of the head :math:`v` and
        :math:`\|v\|`.
    """

    step: np.ndarray
    loss: np.ndarray | None = None
    log_loss_gap: np.ndarray | None = None
    grad_norm: np.ndarray | None = None
    log_grad_norm: np.ndarray | None = None
    W_norm: np.ndarray | None = None
    max_prob: np.ndarray | None = None
    selected: np.ndarray | None = None
    probs: np.ndarray | None = None
    W: np.ndarray | None = None
    p: np.ndarray | None = None
    p_norm: np.ndarray | None = None
    v: np.ndarray | None = None
    v_norm: np.ndarray | None = None
    W_norm_lp: np.ndarray | None = None
    log_theta_scale: np.ndarray | None = None


@summarized
@dataclass(frozen=True, eq=False)
class GDRun:
    """Result of :func:`train`, :func:`train_mirror` and :func:`svmgeo.ntp.train_ntp`.

    Attributes
    ----------
    W : ndarray of shape (d, d) or None
        Final attention weights (``K @ Q.T`` for ``param="KQ"``); None for ``param="p"``.
    K, Q : ndarray of shape (d, m) or None
        Final factors for ``param="KQ"``.
    p : ndarray of shape (d,) or None
        Final prompt vector for ``param="p"`` (None otherwise).
    v : ndarray of shape (d_u,) or None
        Final head with ``train_head=True`` (None otherwise: the head was fixed).
    history : History
        Recorded fields (see :class:`History`): ``W`` / ``W_norm`` for ``param`` "W" and
        "KQ"; ``p`` (R, d) / ``p_norm`` (R,) in their place for ``param="p"`` (``W`` and
        ``W_norm`` None); with ``train_head=True`` also ``v`` (R, d_u) / ``v_norm`` (R,);
        for ``optimizer="mirror"`` ``step``, ``loss``, ``W``, ``W_norm``, ``W_norm_lp`` and
        ``log_theta_scale``; for the next-token risk ``step``, ``loss``, ``W``, ``W_norm``.
    status : StopStatus
    n_steps : int
        Steps taken.
    message : str
    config : GDConfig
        The run's settings (``config.optimizer``, ``config.risk``).
    solve_time : float
        Wall time of the whole call.
    """

    W: np.ndarray | None
    K: np.ndarray | None
    Q: np.ndarray | None
    history: History
    status: StopStatus
    n_steps: int
    message: str
    config: GDConfig
    solve_time: float
    p: np.ndarray | None = None
    v: np.ndarray | None = None


@summarized
@dataclass(frozen=True, eq=False)
class BatchRun:
    """Result of :func:`train_batch`: arrays with a leading instance axis B.

    ``runs[b]`` is the :class:`GDRun` of instance ``b`` (its history trimmed at its stop).
    History arrays have shape (B, R, ...); ``history.step`` (B, R) gives each instance's step
    count at each record. ``W`` (B, d, d) is None and ``p`` (B, d) set for ``param="p"``;
    ``v`` (B, d_u) is the trained head with ``train_head=True``.
    """

    W: np.ndarray | None
    K: np.ndarray | None
    Q: np.ndarray | None
    history: History
    status: tuple[StopStatus, ...]
    n_steps: np.ndarray
    config: GDConfig
    solve_time: float
    p: np.ndarray | None = None
    v: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.n_steps.shape[0])

    def __iter__(self) -> Iterator[GDRun]:
        return (self[b] for b in range(len(self)))

    def __getitem__(self, b: int) -> GDRun:
        steps = self.history.step[b]
        keep = np.concatenate([[True], steps[1:] != steps[:-1]]) if steps.size else steps
        status = self.status[b]
        return GDRun(
            W=None if self.W is None else self.W[b],
            p=None if self.p is None else self.p[b],
            v=None if self.v is None else self.v[b],
            K=None if self.K is None else self.K[b],
            Q=None if self.Q is None else self.Q[b],
            history=_trim(self.history, b, keep),
            status=status,
            n_steps=int(self.n_steps[b]),
            message=stop_message(status, int(self.n_steps[b]), self.config),
            config=self.config,
            solve_time=self.solve_time,
        )


def _trim(h: History, b: int, keep: np.ndarray) -> History:
    out: dict[str, Any] = {}
    for f in fields(h):
        val = getattr(h, f.name)
        out[f.name] = None if val is None else val[b][keep]
    return History(**out)


_MESSAGES = {
    StopStatus.MAX_STEPS: "took all {n} steps",
    StopStatus.GRADIENT_UNDERFLOW: (
        "stopped after {n} steps: the gradient underflowed (its norm fell below 1e-292 or to "
        "zero), or with normalize_eps > 0 the step eta ||g|| / (||g|| + eps) did; the iterate "
        "is the last finite one. Exactly normalized steps (normalize_eps=0) with "
        "log_domain=True go on past this point"
    ),
    StopStatus.STATIONARY: (
        "stopped after {n} steps: the gradient is exactly zero, a stationary point (e.g. "
        "K = Q = 0 with param='KQ', which init=('random', 0.1) avoids; where every query "
        "sees a single key, T = 1 or its mask, every W is stationary and no start helps)"
    ),
    StopStatus.CONVERGED: "stopped after {n} steps: the gradient norm reached grad_tol",
    StopStatus.SATURATED: "stopped after {n} steps: every softmax reached 1 - saturation_tol",
    StopStatus.CALLBACK: "stopped after {n} steps by the callback (StopIteration)",
    StopStatus.NON_FINITE: "stopped after {n} steps: a step would have produced NaN",
    StopStatus.OVERFLOW: (
        "stopped after {n} steps: the next step would have taken the weights (or the initial "
        "weights are) past the largest norm float64 represents here (||W||_F <= 1e150, less for large data), "
        "or the gradient there is not finite (it overflowed float64); the step was not taken. "
        "Lower step_size or rescale init (only the direction of W matters for the selection)"
    ),
}


#: The next-token risk's own (:func:`svmgeo.ntp.train_ntp`: no init, no log-domain scale).
_NEXT_TOKEN_MESSAGES: dict[StopStatus | tuple[StopStatus, bool], str] = {
    StopStatus.STATIONARY: (
        "stopped after {n} steps: the gradient is exactly zero, a stationary point (zero "
        "in float64 with every attention weight and output probability above 1.5e-154, so "
        "no term underflowed)"
    ),
    StopStatus.GRADIENT_UNDERFLOW: (
        "stopped after {n} steps: every entry of the gradient is zero in float64, below its "
        "smallest number (the next-token risk has no log-domain scale to go on with); W is "
        "the last iterate"
    ),
    StopStatus.OVERFLOW: (
        "stopped after {n} steps: the next step would have taken ||W||_F past the next-token "
        "risk's norm limit (where its logits would leave float64's range), or the gradient "
        "there is not finite; the step was not taken. Lower step_size or n_steps (only the "
        "direction of W matters for the selection)"
    ),
}


#: The Polyak step's own (``step_size="polyak"``: no step size to lower).
_POLYAK_MESSAGES: dict[StopStatus | tuple[StopStatus, bool], str] = {
    StopStatus.OVERFLOW: (
        "stopped after {n} steps: the next Polyak step, of length (L - L*) / ||grad L||, would "
        "have taken ||W||_F (or the initial ||W||_F is) past the largest norm float64 "
        "represents here (1e150, less for large data), or the gradient there is not finite; "
        "it was not taken. The step is that long where the gradient is tiny beside L - L* "
        "(L* = RiskOracle.optimal_risk, approached only along the optimal tokens' Att-SVM "
        "direction). Pass a float step_size"
    ),
}


def stop_message(status: StopStatus, n: int, config: GDConfig) -> str:
    """Why a run of ``config`` stopped after ``n`` steps: the next-token risk's, the Polyak
    step's or the update rule's own message (:attr:`Optimizer.messages`) where it has one,
    else the loop's."""
    own = (
        _NEXT_TOKEN_MESSAGES
        if config.risk == "next_token"
        else _POLYAK_MESSAGES
        if config.step_size == POLYAK and status in _POLYAK_MESSAGES
        else OPTIMIZERS[config.optimizer].messages
    )
    text = own.get((status, config.normalized)) or own.get(status, _MESSAGES[status])
    return text.format(n=n)


@summarized
@dataclass(frozen=True, eq=False)
class Intermediate:
    """What the callback receives at each record point (shapes as in :class:`History`
    without the record axis; with a leading B axis for :func:`train_batch`).

    The arrays are read-only views of the run's record and iterate: writing into them
    (``info.W[...] = 0``, ``np.multiply(info.W, 0.5, out=info.W)``) raises ValueError
    ("assignment destination is read-only"), so a callback cannot change the run or its
    history. Take a copy (``info.W.copy()``) to keep or modify one.
    """

    step: Any
    W: np.ndarray | None
    K: np.ndarray | None
    Q: np.ndarray | None
    loss: np.ndarray
    log_loss_gap: np.ndarray
    grad_norm: np.ndarray
    log_grad_norm: np.ndarray
    max_prob: np.ndarray
    selected: np.ndarray
    probs: np.ndarray
    p: np.ndarray | None = None
    v: np.ndarray | None = None
