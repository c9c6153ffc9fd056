# SPDX-License-Identifier: BSD-3-Clause
r"""The plain or normalized gradient step on any risk: ``optimizer="gd"`` off softmax attention.

.. math::

    W_{t+1} = W_t - \eta\,\frac{\nabla L(W_t)}{\|\nabla L(W_t)\|_F}
    \quad(\text{or } W_t - \eta\nabla L(W_t) \text{ with plain steps})

Softmax attention has its compiled rule (:class:`~svmgeo.gd.GradientDescent`); other risks
(the next-token risk of :mod:`svmgeo.ntp`) take this one, in the same loop
(:func:`~svmgeo.gd._loop.run_loop`).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._errors import ProblemError
from . import _xp
from ._config import CODE_OF, RUNNING, GDConfig, StopStatus
from ._loop import Risk
from ._results import Intermediate

__all__ = ["GradientStep", "StepState", "weight_finals", "weight_record"]


def weight_record(risk: Risk, W: np.ndarray, steps: np.ndarray) -> dict[str, np.ndarray]:
    """The record of a one-instance rule on W (d, d): ``step``, ``loss``, ``W``, ``W_norm``,
    each with a leading instance axis of length 1."""
    return {
        "step": steps.copy(),
        "loss": np.array([risk.value(W)]),
        "W": W.copy()[None],
        "W_norm": _xp.frobenius(W[None], np),
    }


def weight_finals(W: np.ndarray) -> dict[str, Any]:
    """The final parameters of a one-instance rule on W."""
    return {"W": W[None], "K": None, "Q": None, "p": None, "v": None}


class StepState(NamedTuple):
    """Iterate of a :class:`GradientStep` run: ``W`` (d, d); ``step``, ``steps`` (1,),
    ``status`` (1,) as in :class:`~svmgeo.gd.GDState`."""

    W: np.ndarray
    step: int
    steps: np.ndarray
    status: np.ndarray


class GradientStep:
    r"""(Normalized) gradient descent on a :class:`~svmgeo.gd._loop.Risk`, from ``W0``.

    Stops with ``STATIONARY`` when the risk says the gradient is exactly zero
    (:math:`M = -\infty`), with ``zero_status`` when it is zero in float64 with a finite M,
    ``NON_FINITE`` when a step would give a non-finite W and ``OVERFLOW`` when it would take
    :math:`\|W\|_F` past ``risk.max_norm`` (neither is taken).

    Parameters
    ----------
    config : GDConfig
    risk : Risk
    W0 : array of shape (d, d)
    zero_status : StopStatus, default ``STATIONARY``
        The status of a gradient that is zero in float64 while the risk's M is finite:
        ``GRADIENT_UNDERFLOW`` for a risk without a log-domain scale, where that zero may be
        an underflow.
    """

    keys: tuple[str, ...] = ("step", "loss", "W", "W_norm")

    def __init__(
        self,
        config: GDConfig,
        risk: Risk,
        W0: np.ndarray,
        *,
        zero_status: StopStatus = StopStatus.STATIONARY,
    ) -> None:
        self.config = config
        self.risk = risk
        self.W0 = np.array(W0, dtype=float)
        self.zero_status = zero_status

    def init_state(self) -> StepState:
        one = np.zeros(1, np.int64)
        return StepState(self.W0, 0, one, one.copy())

    def advance(self, state: StepState, n: int) -> StepState:
        """Up to ``n`` steps."""
        eta, normalized = self.config.step_size, self.config.normalized
        W = state.W
        code = RUNNING
        taken = 0
        for _ in range(n):
            G, M = self.risk.log_grad(W)
            size = float(np.linalg.norm(G))
            if size == 0.0 and math.isfinite(M) and np.any(G):
                # every entry below ~1e-162: the plain norm underflowed, G itself did not
                top = float(np.max(np.abs(G)))
                size = top * float(np.linalg.norm(G / top))
            if M == -math.inf:  # the risk says: exactly zero
                code = CODE_OF[StopStatus.STATIONARY]
                break
            if size == 0.0 or not math.isfinite(M):
                code = CODE_OF[self.zero_status]
                break
            with np.errstate(over="ignore", invalid="ignore"):
                W_new = W - eta * (G / size if normalized else math.exp(M) * G)
            if not np.all(np.isfinite(W_new)):
                code = CODE_OF[StopStatus.NON_FINITE]
                break
            if float(_xp.frobenius(W_new[None], np)[0]) > self.risk.max_norm:
                code = CODE_OF[StopStatus.OVERFLOW]
                break
            W = W_new
            taken += 1
        return StepState(W, state.step + n, state.steps + taken, np.full(1, code, np.int64))

    def observe(self, state: StepState) -> dict[str, np.ndarray]:
        return weight_record(self.risk, state.W, state.steps)

    def finals(self, state: StepState, obs: dict[str, np.ndarray]) -> dict[str, Any]:
        return weight_finals(state.W)

    def intermediate(
        self, obs: dict[str, np.ndarray], state: StepState, squeeze: bool
    ) -> Intermediate:
        raise ProblemError("this training entry point takes no callback.")
