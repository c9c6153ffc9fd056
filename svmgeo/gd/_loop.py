# SPDX-License-Identifier: BSD-3-Clause
r"""The one training loop of svmgeo: a risk and an update rule in, a :class:`GDRun` out.

.. math::

    \theta_{t+1} = \mathrm{rule}(\theta_t, \nabla L(\theta_t)),\qquad t = 0, 1, \dots

In the shape of jaxopt, where ``GradientDescent`` and ``MirrorDescent`` share one
``while_loop``: :func:`run_loop` owns the records (start, every ``record_every`` steps, end),
the callback, the stops (``n_steps``, ``saturation_tol``, the rule's own stop codes), the
status, the message and the timing; an *update rule* bound to its *risk* owns the iterate and
the mathematics. A rule is any object with

* ``config`` -- its :class:`~svmgeo.gd.GDConfig` (``optimizer``, ``risk``, ``n_steps``,
  ``record_every``, ``saturation_tol``);
* ``keys`` -- the :class:`~svmgeo.gd.History` fields it records (``"step"`` first);
* ``init_state()`` -- the first state, a NamedTuple with at least ``step`` (loop steps),
  ``steps`` (B,) (steps each instance took) and ``status`` (B,) (stop codes, 0 = running);
* ``advance(state, n)`` -- up to ``n`` steps of every running instance (setting a stop code
  where an instance stops);
* ``observe(state)`` -- the record at a state: numpy arrays with a leading instance axis B,
  ``"step"`` among them;
* ``finals(state, obs)`` -- the final ``W``, ``K``, ``Q``, ``p``, ``v`` (None where absent);
* ``intermediate(obs, state, squeeze)`` -- what the callback receives (rules that take no
  callback may raise).

The rules: :class:`svmgeo.gd.GradientDescent` (softmax attention; ``advance`` runs the
compiled numba / numpy / cupy chunks), :class:`svmgeo.gd.MirrorDescent` (the :math:`\ell_p`
mirror step on any risk with a log-domain gradient) and :class:`svmgeo.gd.GradientStep` (the
plain or normalized step on any such risk, e.g. the next-token risk of :mod:`svmgeo.ntp`).
The update rules by name are :data:`svmgeo.gd.OPTIMIZERS`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ._config import CODE_OF, RUNNING, STATUS_CODES, GDConfig, StopStatus
from ._results import BatchRun, History, Intermediate

__all__ = ["Risk", "UpdateRule", "run_loop"]


class Risk(Protocol):
    r"""What the rules that take a risk need of it: :math:`L(W)` and its gradient in the log
    domain, :math:`\nabla L(W) = e^{M} G` with G of order one (``M = -inf`` when it is exactly
    zero), for :math:`W \in \mathbb{R}^{d\times d}` with :math:`\|W\|_F \le` ``max_norm``.

    :class:`~svmgeo.gd.RiskOracle` is softmax attention's; :class:`svmgeo.ntp.NextTokenRisk`
    the next-token risk's.
    """

    d: int
    max_norm: float

    def value(self, W: np.ndarray) -> float: ...

    def log_grad(self, W: np.ndarray) -> tuple[np.ndarray, float]: ...


class UpdateRule(Protocol):
    """What :func:`run_loop` needs of an update rule bound to its risk (see the module)."""

    config: GDConfig
    keys: tuple[str, ...]

    def init_state(self) -> Any: ...

    def advance(self, state: Any, n: int) -> Any: ...

    def observe(self, state: Any) -> dict[str, np.ndarray]: ...

    def finals(self, state: Any, obs: dict[str, np.ndarray]) -> dict[str, Any]: ...

    def intermediate(
        self, obs: dict[str, np.ndarray], state: Any, squeeze: bool
    ) -> Intermediate: ...


def run_loop(
    rule: UpdateRule,
    callback: Callable[[Intermediate], Any] | None = None,
    *,
    squeeze: bool = False,
) -> BatchRun:
    r"""Run ``rule`` to its stop: records every ``record_every`` steps, stops, callback.

    Steps advance in chunks up to the next record point, so a rule's ``advance`` may run
    many steps in compiled code; each instance stops on its own code, or with ``SATURATED``
    at a record point where every maximum softmax probability is at least
    ``1 - saturation_tol``, ``CALLBACK`` when the callback raises :class:`StopIteration`,
    ``MAX_STEPS`` after ``n_steps``.

    Parameters
    ----------
    rule : UpdateRule
    callback : callable, optional
        Called with ``rule.intermediate(...)`` at each record point after the first.
    squeeze : bool, default False
        Hand the callback one instance's arrays (a single run) instead of the batch's.

    Returns
    -------
    BatchRun
        With a leading instance axis; ``run[b]`` is instance b's :class:`GDRun` (history
        trimmed at its stop, message from :func:`~svmgeo.gd._results.stop_message`).
    """
    start = time.perf_counter()
    cfg = rule.config
    state = rule.init_state()
    cadence = cfg.cadence
    records: dict[str, list[np.ndarray]] = {key: [] for key in rule.keys}

    def record(obs: dict[str, np.ndarray]) -> None:
        for key in rule.keys:
            records[key].append(obs[key])

    def saturated(obs: dict[str, np.ndarray], status: np.ndarray) -> np.ndarray:
        """``status`` with SATURATED where every softmax of a running instance reached
        ``1 - saturation_tol`` at this record point (the start included)."""
        if cfg.saturation_tol is None:
            return status
        B = status.shape[0]
        sat = np.min(obs["max_prob"].reshape(B, -1), axis=1) >= 1.0 - cfg.saturation_tol
        return np.where((status == RUNNING) & sat, CODE_OF[StopStatus.SATURATED], status)

    obs = rule.observe(state)
    record(obs)
    state = state._replace(status=saturated(obs, state.status))
    while state.step < cfg.n_steps and np.any(state.status == RUNNING):
        chunk = min(cadence - state.step % cadence, cfg.n_steps - state.step)
        state = rule.advance(state, chunk)
        obs = rule.observe(state)
        record(obs)
        status = saturated(obs, state.status)
        if callback is not None:
            try:
                callback(rule.intermediate(obs, state, squeeze))
            except StopIteration:
                status = np.where(status == RUNNING, CODE_OF[StopStatus.CALLBACK], status)
        state = state._replace(status=status)
    status = np.where(state.status == RUNNING, CODE_OF[StopStatus.MAX_STEPS], state.status)
    history = History(**{key: np.stack(vals, axis=1) for key, vals in records.items()})
    return BatchRun(
        **rule.finals(state, obs),
        history=history,
        status=tuple(STATUS_CODES[int(c)] for c in status),
        n_steps=state.steps.copy(),
        config=cfg,
        solve_time=time.perf_counter() - start,
    )
