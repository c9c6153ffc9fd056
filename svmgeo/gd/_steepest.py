# SPDX-License-Identifier: BSD-3-Clause
r"""Steepest descent for a norm, sign descent, spectral descent (Muon) and Adam.

Update rules of the one training loop (:func:`svmgeo.gd._loop.run_loop`) on any risk with a
log-domain gradient :math:`\nabla L = e^{M} G` (:class:`~svmgeo.gd.RiskOracle`, whose
``backend`` gives the numba / numpy / cupy kernels), for :math:`W` or per factor for
:math:`W = KQ^\top` (:math:`\nabla_K L = \nabla L\, Q`, :math:`\nabla_Q L = \nabla L^\top K`).

Normalized steepest descent for a norm :math:`\|\cdot\|` steps along the unit vector that
decreases the linearized risk most,

.. math::

    \theta_{t+1} = \theta_t - \eta\, D_t,\qquad
    D_t = \arg\max_{\|D\| \le 1} \langle \nabla L(\theta_t), D\rangle,\qquad
    \langle \nabla L, D_t\rangle = \|\nabla L\|_*,

and :math:`D_t` depends on the gradient's direction only, so it is computed from G alone
(exact however small :math:`e^M` is):

* entrywise :math:`\ell_q` (``optimizer=("steepest", q)``), :math:`q^* = q/(q-1)`: Hölder's
  equality case gives :math:`D = \mathrm{sign}(G)\,|G|^{q^*-1} / \|G\|_{q^*}^{q^*-1}`;
  :math:`q = 2` is normalized GD :math:`G/\|G\|_F`, :math:`q = \infty` sign descent
  :math:`\mathrm{sign}(G)` (``optimizer="sign"``), :math:`q = 1` moves the largest entries
  only (:math:`\mathrm{sign}(G_{kl})/N` on the N entries of largest :math:`|G_{kl}|`);
* spectral norm (``optimizer="spectral"``): :math:`D = U_r V_r^\top` of the thin SVD
  :math:`G = U_r \Sigma_r V_r^\top` (rank r), dual norm the nuclear norm; with
  ``spectral_momentum`` :math:`\mu > 0`, Muon's rule: the buffer
  :math:`B_t = \mu B_{t-1} + \nabla L(\theta_t)` is orthogonalized instead of the gradient.

Adam (Kingma & Ba 2015) keeps :math:`m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t`,
:math:`v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2` and steps
:math:`\eta\,\hat m_t / (\sqrt{\hat v_t} + \varepsilon)` with
:math:`\hat m_t = m_t/(1-\beta_1^t)`, :math:`\hat v_t = v_t/(1-\beta_2^t)`.

Numerics. Every buffer is a unit array and a log-scale (:math:`m = e^{a}\hat m`,
:math:`\max|\hat m| = 1`), updated as :math:`e^{a'}\hat m' = \beta e^{a}\hat m + w e^{M}G` with
both terms formed relative to the larger scale, so neither the gradient nor the moments
underflow. Adam is scale-invariant only up to :math:`\varepsilon`: svmgeo computes the exact
float64 value of Kingma & Ba's step, :math:`\hat m/(\sqrt{\hat v} + \varepsilon)` with
:math:`\varepsilon` compared to the true gradient scale (no rescaling that would drop it):
once :math:`|g| \ll \varepsilon` the steps shrink like :math:`\eta g/\varepsilon`, as they
would in exact arithmetic; ``adam_eps=0`` gives the scale-free rule.

The Polyak step (``step_size="polyak"``, :math:`W` only, rules without memory) takes the
length at which the linearized risk reaches its infimum,
:math:`\eta_t = (L(W_t) - L_\star)/\|\nabla L(W_t)\|_*`, i.e. for GD the classical
:math:`W_{t+1} = W_t - \frac{L - L_\star}{\|\nabla L\|_F^2}\nabla L`, with
:math:`L_\star` the infimum of the risk (:attr:`RiskOracle.optimal_risk`, linear head; the
infimum only when Att-SVM(opt) is feasible, TF-SVM Lemma 2, so the rule refuses data where it is
not: :attr:`RiskOracle.infimum_attained`) and :math:`L - L_\star` formed without cancellation
(:meth:`RiskOracle.log_excess_risk`).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._errors import ProblemError
from .._linalg import entrywise_norm, singular_value_rank
from .._validation import check_array, check_float_array, check_int, check_option, check_real
from ..losses import LossSpec
from ..selection import query_name
from . import _xp
from ._backend import check_loss_for, get_kernels
from ._config import ATTENTIONS, CODE_OF, RUNNING, GDConfig, StopStatus, check_rule_option
from ._loop import Risk
from ._oracle import check_risk_options, checked_weights
from ._problem import make_problem
from ._results import Intermediate
from ._step import weight_record

__all__ = [
    "AdamMoments",
    "MapRisk",
    "SteepestDescent",
    "SteepestState",
    "adam_direction",
    "scaled_ema",
    "spectral_direction",
    "steepest_direction",
]


def steepest_direction(G: np.ndarray, q: float) -> tuple[np.ndarray, float]:
    r"""The unit :math:`\ell_q` steepest direction of G and the dual norm.

    .. math::

        D = \arg\max_{\|D\|_q \le 1}\langle G, D\rangle
          = \frac{\mathrm{sign}(G)\,|G|^{q^*-1}}{\|G\|_{q^*}^{q^*-1}},\qquad
        \langle G, D\rangle = \|G\|_{q^*},\quad \tfrac1q + \tfrac1{q^*} = 1

    (entrywise norms; :math:`q = \infty`: :math:`\mathrm{sign}(G)`; :math:`q = 1`: the
    entries of largest :math:`|G|`, shared equally).

    Parameters
    ----------
    G : ndarray
    q : float
        :math:`1 \le q \le \infty`.

    Returns
    -------
    D : ndarray
        Zero when G is zero.
    dual : float
        :math:`\|G\|_{q^*}`.

    Raises
    ------
    ProblemError
        For q outside [1, inf], a G that is not a finite real array (1-D to 3-D), or a dual
        norm beyond float64 (rescale G: D does not change).
    """
    where = "steepest_direction"
    q = check_real(q, "q", low=1.0, high=math.inf, where=where)
    G = check_float_array(G, f"'G' of {where}", ndim=(1, 2, 3))
    return _within_float64(*_steepest_direction(G, q), f"||G||_q* (q = {q!r})", where)


def _within_float64(D: np.ndarray, dual: float, norm: str, where: str) -> tuple[np.ndarray, float]:
    """``(D, dual)``, or a ProblemError when the dual norm of G overflowed float64."""
    if not math.isfinite(dual):
        raise ProblemError(
            f"{where}: the dual norm {norm} of G is beyond float64's range (G's entries are "
            "near its limit). Rescale G, e.g. G / np.abs(G).max(): the direction D does not "
            "change, and the dual norm scales with G."
        )
    return D, dual


def _steepest_direction(G: np.ndarray, q: float) -> tuple[np.ndarray, float]:
    """:func:`steepest_direction` without its checks (the rules' step, on checked arrays)."""
    top = float(np.max(np.abs(G), initial=0.0))
    if top == 0.0:
        return np.zeros_like(G), 0.0
    g = G / top  # max |g| = 1: the powers below neither overflow nor lose the largest entries
    if math.isinf(q):
        return np.sign(g), top * float(np.sum(np.abs(g)))
    if q == 1.0:
        ties = np.abs(g) == 1.0
        return np.sign(g) * ties / np.count_nonzero(ties), top
    qs = q / (q - 1.0)
    a = np.sign(g) * np.abs(g) ** (qs - 1.0)
    return a / entrywise_norm(a, q), top * entrywise_norm(g, qs)


def spectral_direction(G: np.ndarray) -> tuple[np.ndarray, float]:
    r"""The unit spectral-norm steepest direction of G and the dual (nuclear) norm.

    .. math::

        D = \arg\max_{\|D\|_2 \le 1}\langle G, D\rangle = U_r V_r^\top,\qquad
        \langle G, D\rangle = \|G\|_* = \textstyle\sum_k \sigma_k

    with :math:`G = U_r\Sigma_r V_r^\top` the thin SVD over the singular values above
    :math:`\max(G.\mathrm{shape})\,\epsilon_{\mathrm{mach}}\,\sigma_1` (zero for G = 0).

    A ProblemError names G when it is not a finite real matrix, or when its nuclear norm is
    beyond float64 (rescale G: D does not change).
    """
    where = "spectral_direction"
    G = check_float_array(
        G, f"'G' of {where}", ndim=2, hint="G is a matrix, e.g. a gradient (d, d)."
    )
    return _within_float64(*_spectral_direction(G), "||G||_* (nuclear)", where)


def _spectral_direction(G: np.ndarray) -> tuple[np.ndarray, float]:
    """:func:`spectral_direction` without its checks."""
    top = float(np.max(np.abs(G), initial=0.0))
    if top == 0.0:
        return np.zeros_like(G), 0.0
    U, s, Vt = np.linalg.svd(G / top, full_matrices=False)
    r = singular_value_rank(s, max(G.shape) * np.finfo(float).eps)
    return U[:, :r] @ Vt[:r], top * float(np.sum(s[:r]))


def scaled_ema(
    unit: np.ndarray, scale: float, G: np.ndarray, M: float, decay: float, weight: float
) -> tuple[np.ndarray, float]:
    r"""``(unit', scale')`` with :math:`e^{c'}\hat B' = \beta e^{c}\hat B + w e^{M} G`,
    :math:`\max|\hat B'| = 1` (``scale`` :math:`c = -\infty` for a zero buffer).

    Both terms are formed relative to the larger of their log-scales, so neither underflows
    on its own however small :math:`e^M` is.
    """
    old = scale + math.log(decay) if decay > 0.0 and math.isfinite(scale) else -math.inf
    new = M + math.log(weight) if weight > 0.0 else -math.inf
    ref = max(old, new)
    if not math.isfinite(ref):
        return np.zeros_like(G), -math.inf
    B = math.exp(new - ref) * G
    if math.isfinite(old):
        B = B + math.exp(old - ref) * unit
    top = float(np.max(np.abs(B), initial=0.0))
    if top == 0.0:
        return np.zeros_like(G), -math.inf
    return B / top, ref + math.log(top)


class MapRisk:
    r"""The risk of an attention map other than softmax, for the rules of this module.

    .. math::

        L(W) = \frac1n \sum_{i,k} \ell\big(Y_{ik}\, h(U_i^\top \varphi(X_i W z_{ik}))\big),
        \qquad \nabla L(W) = e^{M} G

    with :math:`\varphi` the map of :mod:`svmgeo.attention_maps` (``"linear"``: :math:`Y f`
    is linear in W, a separable linear model; ``"sigmoid"``, ``"relu"``), from the same
    kernels as ``train(attention=...)`` with ``optimizer="gd"`` (``Problem.att_id``). It has
    no ``log_excess_risk``: the Polyak step is softmax's.

    Parameters
    ----------
    data : TokenData
    attention : str
        A name of :data:`~svmgeo.gd.ATTENTIONS`, those of
        :data:`svmgeo.attention_maps.ATTENTION_MAPS` (``train`` takes ``"softmax"``'s risk
        from :class:`~svmgeo.gd.RiskOracle`).
    loss, head, v, V, lam, backend
        As in :func:`svmgeo.train`.

    :meth:`value` and :meth:`log_grad` take W as :class:`~svmgeo.gd.RiskOracle`'s do, a
    finite (d, d) matrix (a ProblemError naming W otherwise).
    """

    def __init__(
        self, data: Any, attention: str, *, loss: Any = "logistic", head: str = "linear",
        v: Any = None, V: Any = None, lam: float | None = None, backend: str = "numpy",
    ) -> None:  # fmt: skip
        loss = check_risk_options(data, loss, head, backend, "MapRisk")  # a name or a LossSpec
        check_option(attention, "attention", ATTENTIONS, where="MapRisk")
        self.problem = make_problem([data], head, v=v, V=V, lam=lam, attention=attention)
        self.d = data.d
        self.max_norm = float(self.problem.max_norm[0])
        check_loss_for(loss, self.problem, "MapRisk", backend, stacklevel=5)
        self.loss_id = _xp.loss_key(loss)
        self._kernels = get_kernels(backend, self.problem)
        k = self._kernels
        self._arrays = k.arrays if k.xp is np else _xp.arrays(self.problem, np)

    def value(self, W: np.ndarray) -> float:
        """:math:`L(W)`."""
        Wb = checked_weights(W, self.d, "MapRisk", "value")[None]
        return float(_xp.observe(Wb, self.problem, self._arrays, self.loss_id, np)["loss"][0])

    def log_grad(self, W: np.ndarray) -> tuple[np.ndarray, float]:
        r"""``(G, M)`` with :math:`\nabla L(W) = e^{M} G`, G of order one."""
        k = self._kernels
        G, M = k.grad(
            k.asarray(checked_weights(W, self.d, "MapRisk", "log_grad")[None]), self.loss_id, True
        )
        return k.to_numpy(G)[0], float(k.to_numpy(M)[0])


class AdamMoments(NamedTuple):
    r"""Adam's moments of one factor: :math:`m = e^{a}\hat m`, :math:`v = e^{b}\hat v`, and
    the number of steps t."""

    m: np.ndarray
    a: float
    v: np.ndarray
    b: float
    t: int


def adam_direction(
    G: np.ndarray, M: float, moments: AdamMoments, beta1: float, beta2: float, eps: float
) -> tuple[np.ndarray, AdamMoments]:
    r"""Adam's step :math:`\hat m_t/(\sqrt{\hat v_t} + \varepsilon)` (multiply by
    :math:`\eta`) for the gradient :math:`e^M G`, and the new moments.

    With :math:`m = e^{a}\hat m`, :math:`v = e^{b}\hat v` and :math:`r = \log\varepsilon - b/2`
    the step is :math:`e^{a-b/2}\,\frac{\hat m/c_1}{\sqrt{\hat v/c_2} + e^{r}}`, formed as
    :math:`e^{a-b/2-r}\frac{\hat m/c_1}{e^{-r}\sqrt{\hat v/c_2} + 1}` when :math:`r > 0`
    (:math:`\varepsilon` dominates), so no factor overflows (a factor :math:`e^{x}` that
    would is applied through logarithms); entries with :math:`\hat m = 0` step 0 (also for
    :math:`\varepsilon = 0`).

    Parameters
    ----------
    G : ndarray
        The gradient's order-one factor, a finite real array (1-D to 3-D); where
        :math:`\max|G|` is outside :math:`[2^{-511}, 2^{511}]`, so that :math:`G^2` would
        leave float64's normal range, it is rescaled first (the same gradient
        :math:`e^M G`).
    M : float
        Its log-scale, ``-inf`` for a zero gradient (not ``+inf`` or NaN).
    moments : AdamMoments
        The moments of the previous call, arrays of G's shape; the first call takes
        ``AdamMoments(np.zeros_like(G), -np.inf, np.zeros_like(G), -np.inf, 0)``.
    beta1, beta2 : float
        The moment decays, in [0, 1) (``adam_beta1``, ``adam_beta2`` of :func:`svmgeo.train`).
    eps : float
        :math:`\varepsilon \ge 0`, finite (``adam_eps``).

    Returns
    -------
    D : ndarray
        The step's direction, :math:`\pm\infty` in entries beyond float64 (with
        :math:`\varepsilon = 0`: where :math:`\hat v = 0 \ne \hat m`).
    moments : AdamMoments
        The new moments.

    Raises
    ------
    ProblemError
        Naming the argument that is outside these ranges.
    """
    where = "adam_direction"
    G = check_float_array(G, f"'G' of {where}", ndim=(1, 2, 3))
    M = check_real(M, "M", high=math.inf, high_open=True, where=where)
    moments = _checked_moments(moments, G.shape, where)
    beta1 = check_rule_option(beta1, "adam_beta1", where, "beta1")
    beta2 = check_rule_option(beta2, "adam_beta2", where, "beta2")
    eps = check_rule_option(eps, "adam_eps", where, "eps")
    return _adam_direction(G, M, moments, beta1, beta2, eps)


_ADAM_G_RANGE = (2.0**-511, 2.0**511)
"""The max|G| that Adam squares as it comes (G * G neither overflows nor underflows); a G
outside is rescaled first (:func:`_adam_direction`)."""


def _checked_moments(moments: Any, shape: tuple[int, ...], where: str) -> AdamMoments:
    """``moments`` of :func:`adam_direction` for a gradient of shape ``shape``, checked."""
    start = "AdamMoments(np.zeros_like(G), -np.inf, np.zeros_like(G), -np.inf, 0)"
    if not isinstance(moments, tuple) or len(moments) != 5:
        raise ProblemError(
            f"The 'moments' parameter of {where} must be a svmgeo.gd.AdamMoments (m, a, v, b, "
            f"t); got {type(moments).__name__}. Start from {start} and pass on the moments "
            "each call returns."
        )
    m, a, v, b, t = moments
    hint = f"moments.m and moments.v have G's shape; the first call takes {start}."
    m = check_array(m, f"moments.m of {where}", ndim=len(shape), shape=shape, hint=hint)
    v = check_array(v, f"moments.v of {where}", ndim=len(shape), shape=shape, hint=hint)
    if np.any(v < 0.0):
        raise ProblemError(
            f"moments.v of {where} is Adam's second moment, an average of squared gradients, "
            f"so it must be >= 0; got {float(v.min())!r}. {hint}"
        )
    a = check_real(a, "moments.a", high=math.inf, high_open=True, where=where)
    b = check_real(b, "moments.b", high=math.inf, high_open=True, where=where)
    t = check_int(t, "moments.t", low=0, where=where)
    return AdamMoments(m, a, v, b, t)


def _adam_direction(
    G: np.ndarray, M: float, moments: AdamMoments, beta1: float, beta2: float, eps: float
) -> tuple[np.ndarray, AdamMoments]:
    """:func:`adam_direction` without its checks (the rule's step, on checked arrays; a G
    whose square leaves float64's normal range is rescaled first, the same gradient e^M G)."""
    top = float(np.max(np.abs(G), initial=0.0))
    if top > 0.0 and math.isfinite(top) and not _ADAM_G_RANGE[0] <= top <= _ADAM_G_RANGE[1]:
        G, M = G / top, M + math.log(top)  # the kernels' G has the data's scale (huge data)
    t = moments.t + 1
    m, a = scaled_ema(moments.m, moments.a, G, M, beta1, 1.0 - beta1)
    v, b = scaled_ema(moments.v, moments.b, G * G, 2.0 * M, beta2, 1.0 - beta2)
    new = AdamMoments(m, a, v, b, t)
    if not math.isfinite(a):
        return np.zeros_like(G), new
    mh = m / (1.0 - beta1**t)
    root = np.sqrt(v / (1.0 - beta2**t))
    r = math.log(eps) - 0.5 * b if eps > 0.0 else -math.inf
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if r > 0.0:
            ratio = _exp_times(a - 0.5 * b - r, mh, math.exp(-r) * root + 1.0)
        else:
            ratio = _exp_times(a - 0.5 * b, mh, root + math.exp(r))
    return np.where(mh == 0.0, 0.0, ratio), new


def _exp_times(x: float, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    r""":math:`e^x\,\mathrm{num}/\mathrm{den}`, through logarithms where :math:`e^x` alone, or
    its product with num, overflows; entries beyond float64 are :math:`\pm\infty`, a direction
    no step can take (the run stops ``OVERFLOW``). The caller ignores numpy's overflow and
    division warnings."""
    try:
        out = math.exp(x) * num / den
    except OverflowError:
        return _exp_times_by_logs(x, num, den)
    if np.isfinite(out).all():
        return out
    return np.where(np.isfinite(out), out, _exp_times_by_logs(x, num, den))


def _exp_times_by_logs(x: float, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """:func:`_exp_times` as sign(num) exp(x + log|num| - log den)."""
    return np.sign(num) * np.exp(x + np.log(np.abs(num)) - np.log(den))


class SteepestState(NamedTuple):
    """Iterate of a :class:`SteepestDescent` run: the factors ``P`` (``(W,)`` or ``(K, Q)``),
    the rule's ``memory`` per factor (Adam's moments, Muon's buffer, or None), and ``step``,
    ``steps`` (1,), ``status`` (1,) as in :class:`~svmgeo.gd.GDState`."""

    P: tuple[np.ndarray, ...]
    memory: tuple[Any, ...]
    step: int
    steps: np.ndarray
    status: np.ndarray


def _check_polyak_target(config: GDConfig, risk: Risk) -> None:
    """A :class:`ProblemError` unless ``risk`` gives the infimum :math:`L_\\star` the Polyak
    step aims at: softmax attention with the linear head, a loss that does not rise on any
    query's interval of scores (else L can fall below :math:`L_\\star`, :func:`_loss_rises`),
    and Att-SVM(opt) feasible (else L stays above :math:`L_\\star` and the steps
    overshoot)."""
    attained = getattr(risk, "infimum_attained", None)
    if attained is None:
        raise ProblemError(
            "step_size='polyak' needs the infimum of the risk, which this risk does not give "
            f"(softmax attention's does, for head='linear'; got attention={config.attention!r}, "
            f"head={config.head!r}); pass a float step_size."
        )
    rises = _loss_rises(risk)
    if rises is not None:
        name, where, u, lo, hi = rises
        raise ProblemError(
            "step_size='polyak' steps towards L* = (1/n) sum l(gamma_opt), a lower bound of the "
            "risk only where the loss does not rise on each query's scores (TF-SVM, Lemma 2's "
            f"Assumption A); loss {name!r} has l'(u) > 0 at u = {u:.6g}, inside the scores' "
            f"interval [{lo:.6g}, {hi:.6g}] of {where} (a grid of {_POLYAK_GRID} points), so L "
            "can fall below L* and the Polyak steps aim wrong. Pass a float step_size, or a "
            "loss that decreases there (e.g. loss='logistic')."
        )
    if not attained:
        raise ProblemError(
            "step_size='polyak' steps towards L* = (1/n) sum l(gamma_opt), which is the "
            "infimum of the risk only when Att-SVM(opt) is feasible (TF-SVM, Lemma 2); here "
            "svmgeo.check_feasibility does not find it feasible, so the risk stays above L* and "
            "the Polyak steps overshoot. Pass a float step_size."
        )


_POLYAK_GRID = 65
"""Points of each query's score interval where the Polyak step checks a user loss's l' <= 0."""


def _loss_rises(risk: Risk) -> tuple[str, str, float, float, float] | None:
    r"""Where a user loss rises, :math:`\ell'(u) > 0`, on a query's score interval
    :math:`[\min_t \gamma_{ikt}, \max_t \gamma_{ikt}]` (visible keys), the one :math:`Y f`
    spans: ``(name, query, u, lo, hi)`` of the first such grid point, or None (the built-in
    losses decrease everywhere; a query whose keys score alike has :math:`Y f` fixed).
    :math:`L \ge L_\star` needs only :math:`\ell` non-increasing there (an :math:`\ell'`
    that underflows to 0 does no harm). On a grid of :data:`_POLYAK_GRID` points, both ends
    included: a measurement, a proof for a convex loss (:math:`\ell'` increases, so
    :math:`\ell'(\max_t \gamma) \le 0` settles it)."""
    loss, gamma = getattr(risk, "loss_id", None), getattr(risk, "scores", None)
    if not isinstance(loss, LossSpec) or gamma is None:
        return None
    visible = np.isfinite(gamma)
    lo = np.where(visible, gamma, np.inf).min(axis=2)
    hi = np.where(visible, gamma, -np.inf).max(axis=2)
    u = np.linspace(lo, hi, _POLYAK_GRID, axis=-1)
    with np.errstate(all="ignore"):
        rises = (np.asarray(loss.d1(u), dtype=float) > 0.0) & (hi > lo)[..., None]
    if not rises.any():
        return None
    i, k, j = (int(x) for x in np.argwhere(rises)[0])
    query = query_name(gamma.shape[1] == 1, i, k)
    return loss.name, query, float(u[i, k, j]), float(lo[i, k]), float(hi[i, k])


class SteepestDescent:
    r"""Sign, :math:`\ell_q` steepest, spectral (Muon) or Adam steps on a risk (see the module).

    .. math::

        \theta_{t+1} = \theta_t - \eta_t D_t

    for :math:`\theta = W` or each factor of :math:`(K, Q)` on its own gradient, with
    :math:`D_t` the rule's direction (unit in its norm; Adam's preconditioned step) and
    :math:`\eta_t` the ``step_size`` or the Polyak step. Stops with ``STATIONARY`` when the
    gradient is exactly zero (or the risk is at its infimum, for the Polyak step),
    ``NON_FINITE`` and ``OVERFLOW`` (:math:`\|W\|_F` past ``risk.max_norm``) without taking
    the step.

    Parameters
    ----------
    config : GDConfig
        ``optimizer`` one of ``"sign"``, ``"steepest"`` (with ``steepest_q``), ``"spectral"``,
        ``"adam"``; ``param`` ``"W"`` or ``"KQ"``.
    risk : Risk
        E.g. :class:`~svmgeo.gd.RiskOracle`; the Polyak step needs its
        ``log_excess_risk``.
    factors : tuple of ndarray
        The start: ``(W,)`` of shape (d, d) or ``(K, Q)`` of shape (d, m).
    """

    keys: tuple[str, ...] = ("step", "loss", "W", "W_norm")

    def __init__(self, config: GDConfig, risk: Risk, factors: tuple[np.ndarray, ...]) -> None:
        self.config = config
        self.risk = risk
        self.kq = config.param == "KQ"
        self.P0 = tuple(np.array(P, dtype=float) for P in factors)
        self.polyak = isinstance(config.step_size, str)
        if self.polyak:
            _check_polyak_target(config, risk)

    def weights(self, P: tuple[np.ndarray, ...]) -> np.ndarray:
        """W, or :math:`KQ^\\top`."""
        return P[0] @ P[1].T if self.kq else P[0]

    def init_state(self) -> SteepestState:
        one = np.zeros(1, np.int64)
        outside = float(_xp.frobenius(self.weights(self.P0)[None], np)[0]) > self.risk.max_norm
        status = np.full(1, CODE_OF[StopStatus.OVERFLOW] if outside else RUNNING, np.int64)
        memory = tuple(self._start(P) for P in self.P0)
        return SteepestState(self.P0, memory, 0, one, status)

    def _start(self, P: np.ndarray) -> Any:
        cfg = self.config
        if cfg.optimizer == "adam":
            zero = np.zeros_like(P)
            return AdamMoments(zero, -math.inf, zero, -math.inf, 0)
        if cfg.optimizer == "spectral" and cfg.spectral_momentum > 0.0:
            return (np.zeros_like(P), -math.inf)
        return None

    def _direction(self, G: np.ndarray, M: float, memory: Any) -> tuple[np.ndarray, float, Any]:
        """(D, dual norm of G, memory') for one factor's gradient e^M G."""
        cfg = self.config
        if cfg.optimizer == "adam":
            D, memory = _adam_direction(G, M, memory, cfg.adam_beta1, cfg.adam_beta2, cfg.adam_eps)
            return D, math.nan, memory
        if cfg.optimizer == "spectral":
            if memory is not None:  # Muon: orthogonalize B = mu B + grad
                memory = scaled_ema(memory[0], memory[1], G, M, cfg.spectral_momentum, 1.0)
                D, _ = _spectral_direction(memory[0])
                return D, math.nan, memory
            D, dual = _spectral_direction(G)
            return D, dual, None
        q = math.inf if cfg.optimizer == "sign" else float(cfg.steepest_q or 2.0)
        D, dual = _steepest_direction(G, q)
        return D, dual, None

    def advance(self, state: SteepestState, n: int) -> SteepestState:
        """Up to ``n`` steps."""
        cfg = self.config
        P, memory = state.P, state.memory
        code = RUNNING
        taken = 0
        for _ in range(n):
            W = self.weights(P)
            G, M = self.risk.log_grad(W)
            grads = (G @ P[1], G.T @ P[0]) if self.kq else (G,)
            if not math.isfinite(M) or not any(np.any(Gf) for Gf in grads):
                # the parameters' gradients: K = Q = 0 is stationary where dL/dW is not
                code = CODE_OF[StopStatus.STATIONARY]
                break
            new_P, new_memory = [], []
            for A, Gf, mem in zip(P, grads, memory, strict=True):
                D, dual, mem = self._direction(Gf, M, mem)
                if self.polyak:
                    log_excess = self.risk.log_excess_risk(W)  # type: ignore[attr-defined]
                    if not math.isfinite(log_excess) or dual == 0.0:
                        code = CODE_OF[StopStatus.STATIONARY]
                        break
                    eta = math.exp(min(log_excess - M - math.log(dual), _xp.LOG_EXP_MAX))
                else:
                    eta = float(cfg.step_size)
                with np.errstate(over="ignore", invalid="ignore"):
                    new_P.append(A - eta * D)
                new_memory.append(mem)
            if code != RUNNING:
                break
            P_new = tuple(new_P)
            if any(np.isnan(A).any() for A in P_new):
                code = CODE_OF[StopStatus.NON_FINITE]
                break
            # the factors' norms first (an infinite entry is past them): K Q^T of factors
            # past the limit overflows float64, as gd's step sees it (_xp.within_limit)
            if not _xp.within_limit([A[None] for A in P_new], self.kq, self.risk.max_norm, np)[0]:
                code = CODE_OF[StopStatus.OVERFLOW]
                break
            W_new = self.weights(P_new)
            if not np.all(np.isfinite(W_new)):  # a bug guard: the norms above bound W's
                code = CODE_OF[StopStatus.NON_FINITE]
                break
            P, memory = P_new, tuple(new_memory)
            taken += 1
        steps = state.steps + taken
        return SteepestState(P, memory, state.step + n, steps, np.full(1, code, np.int64))

    def observe(self, state: SteepestState) -> dict[str, np.ndarray]:
        return weight_record(self.risk, self.weights(state.P), state.steps)

    def finals(self, state: SteepestState, obs: dict[str, np.ndarray]) -> dict[str, Any]:
        K, Q = (state.P[0][None], state.P[1][None]) if self.kq else (None, None)
        return {"W": self.weights(state.P)[None], "K": K, "Q": Q, "p": None, "v": None}

    def intermediate(
        self, obs: dict[str, np.ndarray], state: SteepestState, squeeze: bool
    ) -> Intermediate:
        raise ProblemError(f"optimizer={self.config.optimizer!r} takes no callback.")
