# SPDX-License-Identifier: BSD-3-Clause
r"""Repeated risk evaluations on one dataset with the kernels of :func:`svmgeo.train`.

For optimizers that call :math:`L` and :math:`\nabla L` many times (the regularization path):
the problem arrays are built once, and every call returns the exact log-domain pieces of
:mod:`svmgeo.gd._xp` (numpy reference kernels), not a second implementation.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._errors import ProblemError
from .._validation import check_option
from ..data import TokenData
from . import _xp
from ._config import HEADS, LOSSES
from ._problem import LOSS_IDS, make_problem

__all__ = ["RiskOracle", "RiskValue"]


class RiskValue(NamedTuple):
    r"""The risk at one W.

    ``loss`` is :math:`L(W)`; ``log_loss_gap`` is :math:`\log(L(W) - L_{\mathrm{sel}}(W))`
    (see :func:`svmgeo.gd._xp.observe`; NaN where negative); ``selected`` (n, K) the most
    probable keys; the gradient is :math:`\nabla L(W) = e^{M} G` with ``G`` of order one
    (``M = -inf`` and ``G = 0`` when it is exactly zero).
    """

    loss: float
    log_loss_gap: float
    selected: np.ndarray
    G: np.ndarray
    M: float


class RiskOracle:
    r"""Evaluate :math:`L(W)` and :math:`\nabla L(W)` of one dataset, as :func:`svmgeo.train` does.

    .. math::

        L(W) = \frac1n \sum_{i,k} \ell\big(Y_{ik}\, h(X_i^\top \mathrm{softmax}(X_i W z_{ik}))\big)

    Parameters
    ----------
    data : TokenData
    loss, head, v, V, lam
        As in :func:`svmgeo.train`.
    """

    def __init__(
        self,
        data: TokenData,
        *,
        loss: str = "logistic",
        head: str = "linear",
        v: Any = None,
        V: Any = None,
        lam: float | None = None,
    ) -> None:
        if not isinstance(data, TokenData):
            raise ProblemError(f"RiskOracle takes one svmgeo.TokenData; got {type(data).__name__}.")
        check_option(loss, "loss", LOSSES, where="RiskOracle")
        check_option(head, "head", HEADS, where="RiskOracle")
        self.problem = make_problem([data], head, v=v, V=V, lam=lam)
        self.loss_id = LOSS_IDS[loss]
        self._arrays = _xp.arrays(self.problem, np)

    def __call__(self, W: np.ndarray) -> RiskValue:
        Wb = np.asarray(W, dtype=float)[None]
        obs = _xp.observe(Wb, self.problem, self._arrays, self.loss_id, np)
        G, M = _xp.grad_w(Wb, self.problem, self._arrays, self.loss_id, True, np)
        return RiskValue(
            float(obs["loss"][0]),
            float(obs["log_loss_gap"][0]),
            np.asarray(obs["selected"][0]),
            np.asarray(G[0]),
            float(M[0]),
        )
