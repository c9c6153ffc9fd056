# SPDX-License-Identifier: BSD-3-Clause
r"""The next-token risk: attention forward pass, loss and gradient, and the risk of the loop."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from .._errors import ProblemError
from .._validation import check_array, check_option
from ..gd import NTP_LOSSES
from ._data import _NORM_LIMIT, NextTokenData, check_data, check_weights

__all__ = ["NextTokenRisk", "forward", "ntp_loss_and_grad"]

# a zero gradient is exact where every factor that can underflow (visible attention weights,
# the cross-entropy's output probabilities) is at least this: products of two stay normal
_EXACT_FLOOR = math.sqrt(sys.float_info.min)


def forward(
    data: NextTokenData, W: np.ndarray, keep: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(token embeddings (n, T, d), log-softmax attention (n, T), attention (n, T))."""
    E = data.embeddings
    Xe = E[np.where(data.valid, data.tokens, 0)]  # (n, T, d)
    z = E[data.last]  # (n, d)
    logits = np.einsum("ntd,de,ne->nt", Xe, W, z)
    allowed = data.valid if keep is None else data.valid & keep
    logits = np.where(allowed, logits, -np.inf)
    top = logits.max(axis=1, keepdims=True)
    ls = logits - top - np.log(np.sum(np.exp(logits - top), axis=1, keepdims=True))
    return Xe, ls, np.exp(ls)


def ntp_loss_and_grad(
    data: NextTokenData,
    W: Any,
    *,
    loss: str = "ce",
    keep: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    r"""The next-token risk and its gradient in W.

    .. math::

        L(W) = \frac1n\sum_i \Big(\log\sum_v e^{o_{iv}} - o_{iy_i}\Big),\quad
        o_i = E E_{X_i}^\top s_i,\quad s_i = \mathrm{softmax}(E_{X_i} W e_{\bar x_i}),

        \nabla L = \frac1n \sum_i E_{X_i}^\top\big(\mathrm{diag}(s_i) - s_i s_i^\top\big)
        E_{X_i} E^\top (p_i - e_{y_i})\, e_{\bar x_i}^\top,\quad p_i = \mathrm{softmax}(o_i)

    (``loss="ce"``), or :math:`L = -\frac1n\sum_i \log\sum_{t: x_{it} = y_i} s_{it}` with
    :math:`\nabla L = \frac1n\sum_i E_{X_i}^\top(s_i - r_i) e_{\bar x_i}^\top`,
    :math:`r_i` the attention renormalized on the label's positions (``loss="retrieval"``).
    Log-sum-exp throughout.

    Parameters
    ----------
    data : NextTokenData
    W : array of shape (d, d)
        With :math:`\|W\|_F \le 10^{149}`, the largest norm :func:`train_ntp` reaches
        (logits stay below :math:`10^{300}` for embeddings that pass the data's scale check).
    loss : {"ce", "retrieval"}, default "ce"
    keep : bool array of shape (n, T), optional
        Restrict each sequence's attention to these positions (used by
        :func:`finite_component`).

    Returns
    -------
    loss : float
    grad : ndarray of shape (d, d)

    Raises
    ------
    ProblemError
        Invalid arguments, or :math:`\|W\|_F > 10^{149}` (rescale W).
    """
    data = check_data(data, "ntp_loss_and_grad")
    check_option(loss, "loss", NTP_LOSSES, where="ntp_loss_and_grad")
    W = check_weights(W, data, "ntp_loss_and_grad")
    if keep is not None:
        keep = check_array(keep, "keep", ndim=2, dtype=bool)  # 0 / 1 or bools, not 0.5
        if keep.shape != (data.n, data.T):
            raise ProblemError(
                f"keep must be a bool array of shape ({data.n}, {data.T}) (data.n, data.T: "
                f"one entry per padded position of data.tokens); got shape {keep.shape}. "
                "Pass a mask over data.tokens."
            )
        need = data.valid & (data.tokens == data.labels[:, None])
        dropped = np.flatnonzero(~np.any(keep & need, axis=1))
        if dropped.size:
            i = int(dropped[0])
            raise ProblemError(
                "keep must keep at least one position of each sequence's label (attention "
                f"restricted to keep must reach it); keep[{i}] drops every position of "
                f"sequence {i}'s label {int(data.labels[i])} (positions "
                f"{np.flatnonzero(need[i]).tolist()} of data.tokens[{i}])"
                + (f", and {dropped.size - 1} more sequences do too" if dropped.size > 1 else "")
                + ". Set keep True at those positions."
            )
    return _risk(data, W, loss, keep)[:2]


def _risk(
    data: NextTokenData, W: np.ndarray, loss: str, keep: np.ndarray | None
) -> tuple[float, np.ndarray, float]:
    """:func:`ntp_loss_and_grad` on checked arguments, and the smallest factor of the gradient
    that can underflow: visible attention weight, and output probability for ``"ce"``."""
    E = data.embeddings
    Xe, ls, s = forward(data, W, keep)
    z = E[data.last]
    n = data.n
    if loss == "ce":
        f = np.einsum("nt,ntd->nd", s, Xe)
        o = f @ E.T  # (n, V)
        om = o.max(axis=1, keepdims=True)
        lse = om[:, 0] + np.log(np.sum(np.exp(o - om), axis=1))
        value = float(np.mean(lse - o[np.arange(n), data.labels]))
        pr = np.exp(o - lse[:, None])
        floor = float(pr.min())
        pr[np.arange(n), data.labels] -= 1.0
        gf = pr @ E  # (n, d)
        gs = np.einsum("ntd,nd->nt", Xe, gf)
        # s_t (g_t - sum_u s_u g_u) written as s_t sum_u s_u (g_t - g_u): no cancellation
        # when one token takes almost all the attention (the gradient stays exact as ||W|| grows)
        ga = s * np.einsum("nu,ntu->nt", s, gs[:, :, None] - gs[:, None, :])
    else:
        on_label = data.tokens == data.labels[:, None]
        lab = np.where(on_label & np.isfinite(ls), ls, -np.inf)
        lm = lab.max(axis=1, keepdims=True)
        log_mass = lm[:, 0] + np.log(np.sum(np.exp(lab - lm), axis=1))
        r = np.exp(lab - log_mass[:, None])
        rest = np.sum(np.where(on_label, 0.0, s), axis=1, keepdims=True)  # 1 - mass, exactly
        # -log(mass) rounds to 0 once the mass is within an ulp of 1: -log1p(-rest) there
        # (accurate for rest < 1/2, where the mass itself is not)
        per = np.where(rest[:, 0] < 0.5, -np.log1p(-np.minimum(rest[:, 0], 0.5)), -log_mass)
        value = float(np.mean(per)) + 0.0  # + 0.0: no -0.0 when every sequence has mass 1
        ga = np.where(on_label, -r * rest, s)  # = s - r, without the cancellation at the label
        floor = 1.0
    floor = min(floor, float(np.min(s[np.isfinite(ls)])))  # the visible attention weights
    G = np.einsum("nt,ntd,ne->de", ga, Xe, z) / n
    return value, G, floor


class NextTokenRisk:
    r"""The next-token risk :math:`L(W)` of :func:`ntp_loss_and_grad`, as the training loop
    takes a risk (:class:`svmgeo.gd.Risk`): ``value``, ``log_grad``, ``d``, ``max_norm``.

    The gradient has no log-domain scale here: ``log_grad`` returns :math:`M = 0`, and
    :math:`M = -\infty` where the gradient is zero in float64 *exactly*, i.e. where no factor
    of it underflowed: every visible attention weight (and, for ``"ce"``, every output
    probability) is at least :math:`\sqrt{\text{smallest normal}} \approx 1.5\cdot10^{-154}`
    (a stationary point: symmetric data, a zero query embedding, tokens sharing an embedding).
    A zero gradient with :math:`M = 0` may be an underflow (the attention on the other tokens
    below float64's smallest number). The test reads the attention and output factors only:
    embeddings of norm below about :math:`10^{-100}` can underflow the products themselves.

    Parameters
    ----------
    data : NextTokenData
    loss : {"ce", "retrieval"}

    """

    def __init__(self, data: NextTokenData, loss: str = "ce") -> None:
        self.data = check_data(data, "NextTokenRisk")
        self.loss = check_option(loss, "loss", NTP_LOSSES, where="NextTokenRisk")
        self.d = data.d
        self.max_norm = _NORM_LIMIT

    def value(self, W: np.ndarray) -> float:
        return _risk(self.data, W, self.loss, None)[0]

    def log_grad(self, W: np.ndarray) -> tuple[np.ndarray, float]:
        _, G, floor = _risk(self.data, W, self.loss, None)
        exact_zero = not np.any(G) and floor >= _EXACT_FLOOR
        return G, (-np.inf if exact_zero else 0.0)
