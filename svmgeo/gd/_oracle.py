# SPDX-License-Identifier: BSD-3-Clause
r"""Repeated risk evaluations on one dataset with the kernels of :func:`svmgeo.train`.

For optimizers that call :math:`L` and :math:`\nabla L` many times (the regularization path):
the problem arrays are built once, and every call returns the exact log-domain pieces of
:mod:`svmgeo.gd._xp` (numpy reference kernels), not a second implementation.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._errors import ProblemError
from .._validation import check_array, check_option
from ..data import TokenData
from ..losses import LossSpec
from . import _xp
from ._backend import check_loss_for, get_kernels
from ._config import BACKENDS, HEADS, REFERENCE_BACKEND, check_loss_name, resolve_loss
from ._problem import CORRELATION_LOSS, EXPONENTIAL_LOSS, SCORES_HEAD, make_problem

__all__ = ["RiskOracle", "RiskValue", "check_risk_options", "checked_weights"]


def check_risk_options(data: Any, loss: Any, head: Any, backend: Any, where: str) -> Any:
    """The checks of a risk's constructor (:class:`RiskOracle`, :class:`~svmgeo.gd.MapRisk`,
    named ``where``): one TokenData, a loss, ``head`` and ``backend`` among their names; the
    loss resolved (:func:`~svmgeo.gd._config.resolve_loss`)."""
    if not isinstance(data, TokenData):
        raise ProblemError(f"{where} takes one svmgeo.TokenData; got {type(data).__name__}.")
    loss = resolve_loss(loss, where)
    if isinstance(loss, str):
        check_loss_name(loss, where)
    check_option(head, "head", HEADS, where=where)
    check_option(backend, "backend", BACKENDS, where=where)
    return loss


def checked_weights(W: Any, d: int, owner: str, method: str) -> np.ndarray:
    """W as a finite float64 (d, d) array, or a ProblemError naming ``owner.method``. The
    training loops call this every step with such an array: it passes in one test."""
    if (
        isinstance(W, np.ndarray)
        and W.dtype == np.float64
        and W.shape == (d, d)
        and np.isfinite(W).all()
    ):
        return W
    return check_array(
        W,
        "W",
        ndim=2,
        shape=(d, d),
        hint=f"{owner}.{method} takes the attention weights W, a finite (d, d) matrix.",
    )


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


_LOG_HALF = math.log(0.5)
"""Where :meth:`RiskOracle.log_loss_change` takes the logistic's log1p(a), a < 0, whole."""

_FIRST_ORDER_BELOW = 2.0**-26
r"""Up to this :math:`\Delta` a user loss's excess :math:`\ell(\gamma - \Delta) - \ell(\gamma)`
is taken as its first-order term :math:`-\ell'(\gamma)\Delta` (relative error about
:math:`\Delta|\ell''/2\ell'|`), above it as the difference (relative error about
:math:`2u|\ell/\ell'|/\Delta`, u = 2^-53): the two meet near :math:`\sqrt u = 2^{-26.5}`."""


class RiskOracle:
    r"""Evaluate :math:`L(W)` and :math:`\nabla L(W)` of one dataset, as :func:`svmgeo.train` does.

    .. math::

        L(W) = \frac1n \sum_{i,k} \ell\big(Y_{ik}\, h(X_i^\top \mathrm{softmax}(X_i W z_{ik}))\big)

    Parameters
    ----------
    data : TokenData
    loss, head, v, V, lam
        As in :func:`svmgeo.train`.
    backend : {"numpy", "numba", "cupy"}, default "numpy"
        Kernels of :meth:`log_grad` (the risk of :func:`svmgeo.train_mirror`); the other
        methods use the numpy reference kernels.

    Notes
    -----
    The softmax-attention risk of the training loop (:mod:`svmgeo.gd._loop`) for rules that
    take a risk (mirror descent): :meth:`value`, :meth:`log_grad`, ``d`` and ``max_norm``.
    """

    def __init__(
        self,
        data: TokenData,
        *,
        loss: Any = "logistic",
        head: str = "linear",
        v: Any = None,
        V: Any = None,
        lam: float | None = None,
        backend: str = REFERENCE_BACKEND,
    ) -> None:
        loss = check_risk_options(data, loss, head, backend, "RiskOracle")
        self.problem = make_problem([data], head, v=v, V=V, lam=lam)
        self.d = data.d
        self._data = data
        self._attained: bool | None = None
        #: The largest ||W||_F the engine represents for these data (see StopStatus.OVERFLOW).
        self.max_norm = float(self.problem.max_norm[0])
        check_loss_for(loss, self.problem, "RiskOracle", backend, stacklevel=5)
        self._kernels = get_kernels(backend, self.problem)
        #: The kernels' loss: a built-in's id (:data:`~svmgeo.gd.LOSS_IDS`) or a user's
        #: :class:`~svmgeo.LossSpec`.
        self.loss_id = _xp.loss_key(loss)
        # the numpy kernels already hold the numpy arrays of the problem
        k = self._kernels
        self._arrays = k.arrays if k.xp is np else _xp.arrays(self.problem, np)
        self.head = head
        P = self.problem
        self._gamma: np.ndarray | None = None
        self._gamma_size: np.ndarray | None = None  # tied_maxima's sizes (None: |gamma|)
        if P.head_id == SCORES_HEAD:  # C = Y gamma
            self._gamma = np.where(P.vis[0], P.Y[0][:, :, None] * P.C[0], -np.inf)
        elif head == "linear":
            gam = P.Y[0][:, :, None] * np.einsum("ntd,d->nt", P.U[0], P.hv[0])[:, None, :]
            self._gamma = np.where(P.vis[0], gam, -np.inf)
            from ..selection import score_sizes

            self._gamma_size = score_sizes(P.Y[0], P.U[0], P.hv[0])

    def _weights(self, W: Any, method: str) -> np.ndarray:
        """W as a finite float64 (d, d) array, or a ProblemError naming ``method``."""
        return checked_weights(W, self.d, "RiskOracle", method)

    def __call__(self, W: np.ndarray) -> RiskValue:
        Wb = self._weights(W, "__call__")[None]
        obs = _xp.observe(Wb, self.problem, self._arrays, self.loss_id, np)
        G, M = _xp.grad_w(Wb, self.problem, self._arrays, self.loss_id, True, np)
        return RiskValue(
            float(obs["loss"][0]),
            float(obs["log_loss_gap"][0]),
            np.asarray(obs["selected"][0]),
            np.asarray(G[0]),
            float(M[0]),
        )

    def value(self, W: np.ndarray) -> float:
        """:math:`L(W)` alone (the ``loss`` of ``self(W)``, without the gradient)."""
        Wb = self._weights(W, "value")[None]
        return float(_xp.observe(Wb, self.problem, self._arrays, self.loss_id, np)["loss"][0])

    def log_grad(self, W: np.ndarray) -> tuple[np.ndarray, float]:
        r"""``(G, M)`` with :math:`\nabla L(W) = e^{M} G` and G of order one, from the
        ``backend`` kernels (``M = -inf`` when the gradient is exactly zero)."""
        k = self._kernels
        G, M = k.grad(k.asarray(self._weights(W, "log_grad")[None]), self.loss_id, True)
        return k.to_numpy(G)[0], float(k.to_numpy(M)[0])

    def log_softmax(self, W: np.ndarray) -> np.ndarray:
        r"""The log-softmax attention :math:`\log s_{ikt}(W)` of shape (n, K, T)
        (``-inf`` on hidden keys)."""
        return self._log_softmax(self._weights(W, "log_softmax"))

    def _log_softmax(self, W: np.ndarray) -> np.ndarray:
        """:meth:`log_softmax` of a checked W."""
        fw = _xp.forward(W[None], self.problem, self._arrays, np)
        return np.asarray(fw["ls"][0])

    @property
    def optimal_risk(self) -> float:
        r""":math:`L_\star = \frac1n\sum_{i,k}\ell(\gamma_{ik,\mathrm{opt}})`, a lower bound of
        :math:`L` for the linear head (:math:`\gamma_{ikt} = Y_{ik} v^\top x_{it}`) where
        :math:`\ell` decreases on each query's interval of scores (the built-in losses do
        everywhere; the square loss only below 1), and its infimum when Att-SVM(opt) is
        feasible (:attr:`infimum_attained`)."""
        if self._gamma is None:
            raise ProblemError("optimal_risk is defined for head='linear' only.")
        top = self._gamma.max(axis=2)
        values = _xp.loss_value(top, self.loss_id, np).reshape(1, -1)
        return float(_xp.mean_loss(values, self.problem.n, np)[0])

    @property
    def scores(self) -> np.ndarray | None:
        r"""This risk's token scores :math:`\gamma_{ikt}` (the linear head's with the labels,
        :math:`Y_{ik} v^\top u_{it}`, or the data's given scores), shape (n, K, T), ``-inf`` on
        hidden keys; None for another head, which has no per-token score."""
        return self._gamma

    @property
    def score_sizes(self) -> np.ndarray | None:
        r"""The sizes of :attr:`scores` that bound their round-off
        (:func:`~svmgeo.selection.score_sizes` for the linear head's, :math:`|\gamma|` for
        given scores), shape (n, K, T), what :func:`~svmgeo.selection.at_least` compares
        with (entries of hidden keys carry no meaning); None for another head."""
        if self._gamma is None:
            return None
        return np.abs(self._gamma) if self._gamma_size is None else self._gamma_size

    @property
    def optimal_sets(self) -> np.ndarray | None:
        r"""The optimal keys of every query for this risk's scores
        :math:`\gamma_{ikt}` (the linear head's, with the labels), bool of shape (n, K, T), to
        :func:`svmgeo.optimal_token_sets`' relative tolerance; None for another head."""
        if self._gamma is None:
            return None
        from ..selection import tied_maxima

        return tied_maxima(self._gamma, size=self._gamma_size)

    @property
    def infimum_attained(self) -> bool | None:
        r"""Whether :attr:`optimal_risk` :math:`L_\star` is the infimum of :math:`L` (None for
        a head other than the linear one, where it is not defined).

        :math:`L(W) > L_\star` for every W, and :math:`L(RW) \to L_\star` for W feasible for
        Att-SVM(opt) (*theorem*, TF-SVM Lemma 2, with a non-optimal token and ℓ decreasing);
        when Att-SVM(opt) is infeasible, L stays above :math:`L_\star` (MATH-NOTES' example).
        Decided once, by :func:`svmgeo.check_feasibility` on the rows of the optimal token
        sets (:func:`svmgeo.optimal_token_sets`' tolerance; with ties, the rows of Gen-SVM's
        selected sets, a sufficient condition): True when the verdict is feasible and
        proved or verified (``OPTIMAL``).
        """
        sets = self.optimal_sets
        if sets is None:
            return None
        if self._attained is None:
            from ..constraints import selected_set_constraints
            from ..solvers import check_feasibility

            rows = selected_set_constraints(self._data, sets, allow_full=True)
            verdict = check_feasibility(rows)
            self._attained = verdict.verdict is True
        return self._attained

    def log_excess_risk(self, W: np.ndarray) -> float:
        r""":math:`\log(L(W) - L_\star)` for the linear head, free of cancellation.

        With :math:`\Delta_{ik} = \gamma_{ik,\mathrm{opt}} - Y_{ik}f_{ik}
        = \sum_t s_t(\gamma_{ik,\mathrm{opt}} - \gamma_{ikt}) \ge 0` (a sum of nonnegative
        terms, formed in the log domain), each query contributes
        :math:`\ell(\gamma - \Delta) - \ell(\gamma)`: :math:`\Delta` (correlation),
        :math:`e^{-\gamma}\,\mathrm{expm1}(\Delta)` (exponential),
        :math:`\mathrm{log1p}(\mathrm{expm1}(\Delta)\,\sigma(-\gamma))` (logistic); for a
        user loss the difference :math:`\ell(\gamma - \Delta) - \ell(\gamma)` as computed
        where :math:`\Delta > 2^{-26}` (:data:`_FIRST_ORDER_BELOW`), else (and where the
        difference cancels to :math:`\le 0`) its first-order term
        :math:`-\ell'(\gamma)\,\Delta`, where :math:`\ell'(\gamma) < 0`: the difference
        loses relative accuracy as :math:`\Delta` shrinks (a saturating run), the first order
        gains it.
        ``-inf`` when :math:`L = L_\star` exactly (every query puts all its mass on optimal keys);
        finite wherever :math:`L - L_\star` is, also where :math:`\Delta` is past the range
        of :math:`\exp` (:math:`\log\mathrm{expm1}(\Delta) = \Delta` there).
        """
        if self._gamma is None:
            raise ProblemError("log_excess_risk is defined for head='linear' only.")
        ls = self._log_softmax(self._weights(W, "log_excess_risk"))  # (n, K, T)
        top = self._gamma.max(axis=2)
        delta = top[:, :, None] - self._gamma
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # hidden keys (gamma = -inf, so delta = +inf and ls = -inf) add nothing
            gap = np.isfinite(delta) & (delta > 0.0)
            terms = np.where(gap, ls + np.log(np.where(gap, delta, 1.0)), -np.inf)
            hi = terms.max(axis=2)
            safe = np.where(np.isfinite(hi), hi, 0.0)
            log_d = safe + np.log(np.sum(np.exp(terms - safe[..., None]), axis=2))
            log_d = np.where(np.isfinite(hi), log_d, -np.inf)
            if isinstance(self.loss_id, LossSpec):  # a user loss: the difference, as it comes
                dlt = np.exp(log_d)
                gap = self.loss_id.value(top - dlt) - self.loss_id.value(top)
                # for a small Delta, or where the difference cancels, -l'(gamma) Delta
                log_abs_d1, flip = _xp.dloss_parts(top, self.loss_id, np)
                first = (
                    np.isfinite(log_d) & (flip > 0.0) & ((dlt <= _FIRST_ORDER_BELOW) | (gap <= 0.0))
                )
                lq = np.where(first, log_abs_d1 + log_d, np.log(np.where(gap > 0.0, gap, 0.0)))
            else:
                lq = self.log_loss_change(top, np.ones_like(top), log_d)
            lq = lq.ravel()
            mx = lq.max()
            if not np.isfinite(mx):
                return -math.inf
            return float(mx + np.log(np.sum(np.exp(lq - mx))) - math.log(self.problem.n))

    def log_loss_change(self, gamma: np.ndarray, sign: np.ndarray, log_d: np.ndarray) -> np.ndarray:
        r""":math:`\log|\ell(\gamma - D) - \ell(\gamma)|` elementwise, for a built-in loss and
        :math:`D = \mathrm{sign}\cdot e^{\log|D|}` (the change has D's sign: the built-ins
        decrease), free of cancellation and overflow.

        .. math::

            \ell(\gamma - D) - \ell(\gamma) = D\ \text{(correlation)},\quad
            e^{-\gamma}\,\mathrm{expm1}(D)\ \text{(exponential)},\quad
            \mathrm{log1p}\big(\mathrm{expm1}(D)\,\sigma(-\gamma)\big)\ \text{(logistic)}.

        :math:`\log|\mathrm{expm1}(D)|` is :math:`\log D + \log(\mathrm{expm1}(D)/D)` for
        D > 0 (D itself past exp's range), :math:`\log(-\mathrm{expm1}(D))` for D < 0,
        :math:`\log|D|` where D is below 1e-200. The logistic's :math:`\mathrm{log1p}(a)`,
        :math:`a = \mathrm{expm1}(D)\sigma(-\gamma)`: through :math:`\mathrm{log1p}(a)/a`
        for a > 0 (:math:`\log a` itself where a overflows) and for :math:`-1/2 < a < 0`;
        for :math:`a \le -1/2` as :math:`\log(\sigma(\gamma) + e^D\sigma(-\gamma))`,
        without forming 1 + a. The excess risk (D > 0, :meth:`log_excess_risk`) and the
        regularization path's signed gap (:mod:`svmgeo.analysis`) share it.
        """
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            d = sign * np.exp(log_d)
            up = d > 0.0
            ratio = np.where(up, np.expm1(d) / np.where(up, d, 1.0), 1.0)
            log_em1 = np.where(
                up,
                np.where(np.isinf(ratio), d, log_d + np.log(ratio)),
                np.where(np.abs(d) > 1e-200, np.log(-np.expm1(np.minimum(d, 0.0))), log_d),
            )
            if self.loss_id == CORRELATION_LOSS:
                return log_d
            if self.loss_id == EXPONENTIAL_LOSS:
                return -gamma + log_em1
            la = log_em1 - np.logaddexp(0.0, gamma)  # log|a|
            a = np.exp(la)  # a > 0 (D > 0): log1p(a) / a, and la itself where e^la overflows
            shrink = np.where(a > 0.0, np.log1p(a) / np.where(a > 0.0, a, 1.0), 1.0)
            rise = np.where(np.isinf(a), np.log(la), la + np.log(shrink))
            fall_a = -np.exp(np.minimum(la, _LOG_HALF))  # a < 0
            r = np.where(
                fall_a < -1e-200, np.log1p(fall_a) / np.where(fall_a != 0.0, fall_a, 1.0), 1.0
            )
            whole = np.logaddexp(-np.logaddexp(0.0, -gamma), d - np.logaddexp(0.0, gamma))
            fall = np.where(la < _LOG_HALF, la + np.log(r), np.log(np.abs(whole)))
            return np.where(up, rise, fall)
