# SPDX-License-Identifier: BSD-3-Clause
r"""Next-token training: (normalized) gradient descent in the one loop of :mod:`svmgeo.gd`."""

from __future__ import annotations

import numpy as np

from ..gd import GDConfig, GDRun, GradientStep, StopStatus, run_loop
from ._data import NextTokenData, check_data
from ._risk import NextTokenRisk

__all__ = ["train_ntp"]


def train_ntp(
    data: NextTokenData,
    *,
    loss: str = "ce",
    step_size: float = 0.1,
    normalized: bool = True,
    n_steps: int = 1000,
    record_every: int | None = None,
) -> GDRun:
    r"""(Normalized) gradient descent on the next-token risk from :math:`W_0 = 0`.

    .. math::

        W_{t+1} = W_t - \eta\,\frac{\nabla L(W_t)}{\|\nabla L(W_t)\|_F}
        \quad(\text{or } W_t - \eta\nabla L(W_t) \text{ with } \texttt{normalized=False}),

    with :math:`L` of :func:`ntp_loss_and_grad`: the rule :class:`svmgeo.gd.GradientStep` on
    :class:`NextTokenRisk`, in the loop of :func:`svmgeo.gd.run_loop`.

    Parameters
    ----------
    data : NextTokenData
    loss : {"ce", "retrieval"}, default "ce"
    step_size : float, default 0.1
    normalized : bool, default True
    n_steps : int, default 1000
        Maximum number of steps, at least 1 (as :func:`svmgeo.train`; the start alone is
        :func:`ntp_loss_and_grad`).
    record_every : int, optional
        Default ``max(1, n_steps // 100)``.

    Returns
    -------
    GDRun
        ``run.W`` (d, d); ``run.history`` records ``step``, ``loss``, ``W`` and ``W_norm``;
        ``status`` is ``MAX_STEPS``; ``STATIONARY`` where the gradient is exactly zero (zero
        in float64 with no factor underflowed: see :class:`NextTokenRisk`);
        ``GRADIENT_UNDERFLOW`` where it is zero in float64 otherwise (its entries may have
        fallen below float64's smallest number: this risk has no log-domain scale); ``NON_FINITE`` or
        ``OVERFLOW`` (a step that would leave float64's range; not taken).

    Examples
    --------
    >>> import svmgeo as sg
    >>> run = sg.train_ntp(sg.random_next_token_data(20, 4, 5, 8, seed=0), n_steps=50)
    >>> run.W.shape, run.status
    ((8, 8), <StopStatus.MAX_STEPS: 'max_steps'>)
    """
    return run_next_token(
        data, loss=loss, step_size=step_size, normalized=normalized, n_steps=n_steps,
        record_every=record_every, caller="train_ntp",
    )  # fmt: skip


def run_next_token(
    data: NextTokenData,
    *,
    loss: str,
    step_size: float,
    normalized: bool,
    n_steps: int,
    record_every: int | None,
    caller: str,
) -> GDRun:
    """:func:`train_ntp` for the entry point ``caller``, which its errors name."""
    data = check_data(data, caller)
    cfg = GDConfig(
        risk="next_token", loss=loss, step_size=step_size, normalized=normalized,
        n_steps=n_steps, record_every=record_every, record=("loss", "W", "W_norm"),
        caller=caller,
    )  # fmt: skip
    risk = NextTokenRisk(data, loss)
    # no log-domain scale: a zero gradient is STATIONARY only where the risk says it is exact
    rule = GradientStep(
        cfg, risk, np.zeros((data.d, data.d)), zero_status=StopStatus.GRADIENT_UNDERFLOW
    )
    return run_loop(rule)[0]
