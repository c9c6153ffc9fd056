# SPDX-License-Identifier: BSD-3-Clause
r"""Mirror descent on softmax attention with the :math:`\ell_p` potential.

.. math::

    \psi(W) = \tfrac1p \|W\|_p^p = \tfrac1p \sum_{kl} |W_{kl}|^p,\qquad
    \nabla\psi(W_{t+1}) = \nabla\psi(W_t) - \eta\,\nabla L(W_t),

with :math:`\nabla\psi(W) = \mathrm{sign}(W)|W|^{p-1}` and its inverse
:math:`\nabla\psi^{-1}(\Theta) = \mathrm{sign}(\Theta)|\Theta|^{1/(p-1)}` (entrywise). This is the
":math:`\ell_p`-AttGD" of Julistiono, Tarzanagh, Azizan (arXiv:2410.14581), whose implicit bias is
the :math:`\ell_p` Att-SVM (:func:`svmgeo.att_svm` with ``norm=("lp", p)``). For ``p = 2`` it is
plain gradient descent.

Numerics. The iterate is kept in the mirror coordinates as :math:`\Theta = e^{c}\hat\Theta`
with :math:`\max|\hat\Theta| = 1`, each entry of :math:`\hat\Theta` float64 with an unbounded
exponent (:math:`m\,2^e`, :func:`numpy.frexp`'s mantissa and an int64 exponent), so that an
entry far below the largest is not lost (at p = 200 an entry of W of 1 % of the largest has
:math:`\hat\Theta` = 10^-398). The gradient arrives from the numpy reference kernels
(:class:`svmgeo.gd.RiskOracle`) as :math:`\nabla L = e^{M} G` with :math:`G` of order one, so
the update :math:`\hat\Theta \leftarrow \hat\Theta - \eta e^{M-c} G` never forms the
exponentially small gradient or the growing norm on its own; :math:`W` is rebuilt as
:math:`e^{c/(p-1)}\,\nabla\psi^{-1}(\hat\Theta)`. Every value that is a normal float64 is
computed as plain float64 computes it, so runs whose coordinates stay in float64's range are
bit for bit those of one float64 scale.

:class:`MirrorDescent` is the update rule of ``optimizer="mirror"`` in the one training loop
(:func:`svmgeo.gd._loop.run_loop`); :func:`train_mirror` is its entry point.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._errors import ProblemError
from .._linalg import entrywise_norm
from .._validation import check_array, check_float_array, check_real
from ..data import TokenData
from . import _xp
from ._config import (
    CODE_OF,
    REFERENCE_BACKEND,
    RUNNING,
    GDConfig,
    StopStatus,
    check_exponent,
    keyword_options,
    refuse_unknown_options,
)
from ._loop import Risk, run_loop
from ._oracle import RiskOracle
from ._results import GDRun, Intermediate
from ._step import weight_finals, weight_record

__all__ = ["MirrorDescent", "MirrorState", "inverse_mirror_map", "mirror_map",
           "run_mirror_descent", "sparsity", "train_mirror"]  # fmt: skip


def mirror_map(W: np.ndarray, p: float) -> np.ndarray:
    r""":math:`\nabla\psi(W) = \mathrm{sign}(W)\,|W|^{p-1}` (entrywise).

    Parameters
    ----------
    W : array_like
        A finite real array: a vector, a matrix or a stack of matrices.
    p : float
        The exponent of the potential :math:`\psi(W) = \|W\|_p^p / p`, finite and
        :math:`p > 1` (as the ``exponent`` of :func:`train_mirror`).

    Raises
    ------
    ProblemError
        For p outside (1, inf), a W that is not a finite real array, or an entry whose
        :math:`|W_{kl}|^{p-1}` is beyond float64 (rescale W: the map is homogeneous of degree
        p - 1).
    """
    return _checked_power(W, p, "W", "mirror_map", invert=False)


def inverse_mirror_map(Theta: np.ndarray, p: float) -> np.ndarray:
    r""":math:`(\nabla\psi)^{-1}(\Theta) = \mathrm{sign}(\Theta)\,|\Theta|^{1/(p-1)}` (entrywise).

    Parameters and errors as :func:`mirror_map` (for ``Theta``; the degree is 1/(p - 1)).
    """
    return _checked_power(Theta, p, "Theta", "inverse_mirror_map", invert=True)


def _mirror_map(W: np.ndarray, p: float) -> np.ndarray:
    """:func:`mirror_map` without its checks (the mirror step's, on checked arrays)."""
    W = np.asarray(W, dtype=float)
    return np.sign(W) * np.abs(W) ** (p - 1.0)


def _inverse_mirror_map(Theta: np.ndarray, p: float) -> np.ndarray:
    """:func:`inverse_mirror_map` without its checks."""
    Theta = np.asarray(Theta, dtype=float)
    return np.sign(Theta) * np.abs(Theta) ** (1.0 / (p - 1.0))


def _checked_power(A: Any, p: Any, name: str, where: str, *, invert: bool) -> np.ndarray:
    """:func:`mirror_map` (or its inverse) of the argument ``name`` after the checks of the
    public entries: p in (1, inf), A finite, and a result within float64."""
    p = check_exponent(p, where, "p")
    A = check_float_array(A, f"'{name}' of {where}", ndim=(1, 2, 3))
    with np.errstate(over="ignore"):
        out = _inverse_mirror_map(A, p) if invert else _mirror_map(A, p)
    if not np.all(np.isfinite(out)):
        at = tuple(int(i) for i in np.argwhere(~np.isfinite(out))[0])
        entry = f"{name}[{', '.join(map(str, at))}] = {float(A[at])!r}"
        degree = "1/(p - 1)" if invert else "p - 1"
        raise ProblemError(
            f"{where}: the entry {entry} with p = {p!r} "
            f"maps to |{name}|^({degree}) beyond float64's range. Rescale {name} (the map is "
            f"homogeneous of degree {degree}: {where}(c {name}, p) = c^({degree}) "
            f"{where}({name}, p) for c > 0)."
        )
    return out


_LN2_HI = 6.93147180369123816490e-01
"""ln 2 to 32 bits: ``k * _LN2_HI`` is exact for every exponent ``k`` here (|k| < 2^21)."""
_LN2_LO = 1.90821492927058770002e-10
"""ln 2 - :data:`_LN2_HI`."""
_ZERO_EXPONENT = -(2**40)
"""The exponent of a coordinate that is exactly zero: below every other, so that a sum takes
the other term's scale."""
_TINY = float(np.finfo(float).tiny)
"""The smallest normal float64: a value below it is formed from logs (:func:`_from_logs`)."""

Unbounded = tuple[np.ndarray, np.ndarray]
r"""Float64 with an unbounded exponent, entrywise: (m, e) for :math:`m\,2^e`, ``m`` of
:func:`numpy.frexp` (:math:`|m| \in [1/2, 1)`, or 0 with e = :data:`_ZERO_EXPONENT`), ``e``
int64."""


def _times_ln2(k: np.ndarray) -> np.ndarray:
    """``k`` ln 2 for integer ``k``, to the rounding of one addition."""
    k = k.astype(float)
    return k * _LN2_HI + k * _LN2_LO


def _unbounded(x: np.ndarray, k: np.ndarray | int = 0) -> Unbounded:
    r""":math:`x\,2^k` as :data:`Unbounded` (exactly)."""
    m, e = np.frexp(x)
    return m, np.where(m == 0.0, _ZERO_EXPONENT, e.astype(np.int64) + k)


def _from_logs(sign: np.ndarray, log_abs: np.ndarray) -> Unbounded:
    r""":math:`\mathrm{sign}\cdot e^{s}` as :data:`Unbounded`, whatever the size of s: e^s split
    as :math:`2^K e^r`, :math:`K = \lfloor s/\ln 2\rfloor`, :math:`r = s - K\ln 2` (``-inf``
    for s gives zero)."""
    finite = np.isfinite(log_abs)
    s = np.where(finite, log_abs, 0.0)
    K = np.floor(s / math.log(2.0)).astype(np.int64)
    return _unbounded(np.where(finite, sign * np.exp(s - _times_ln2(K)), 0.0), K)


def _merge(normal: np.ndarray, sign: np.ndarray, log_abs: np.ndarray) -> Unbounded:
    r"""The values :math:`\mathrm{sign}\cdot e^{s}` as :data:`Unbounded`: ``normal``, their
    float64 form, where it is zero or a normal float (bit for bit), else from the logs
    (:func:`_from_logs`) where the float left float64's normal range."""
    m, e = _unbounded(normal)
    out = (sign != 0.0) & ~(np.abs(normal) >= _TINY) | ~np.isfinite(normal)
    if np.any(out):
        with np.errstate(invalid="ignore"):
            mb, eb = _from_logs(sign, np.where(out, log_abs, 0.0))
        m, e = np.where(out, mb, m), np.where(out, eb, e)
    return m, e


def _add(a: Unbounded, b: Unbounded) -> Unbounded:
    r"""The entrywise sum, rounded once as float64 rounds a sum (with an unbounded exponent):
    both terms brought to the larger exponent (exact shifts; a term shifted below 2^-1074 is
    far below the other's rounding) and added."""
    (ma, ea), (mb, eb) = a, b
    E = np.maximum(ea, eb)
    low = -1100  # a shift past this leaves a term below half an ulp of the other
    return _unbounded(
        np.ldexp(ma, np.maximum(ea - E, low)) + np.ldexp(mb, np.maximum(eb - E, low)), E
    )


def _largest(x: Unbounded) -> tuple[float, int]:
    """(m, e) of the largest \\|entry\\| of ``x`` (0.0 and :data:`_ZERO_EXPONENT` when zero)."""
    m, e = x
    E = int(np.max(e))
    return float(np.max(np.abs(m[e == E]))), E


def _log_of(m: float, e: int) -> float:
    r""":math:`\log(m\,2^e)` for m > 0: ``math.log`` of the float where it is a normal one."""
    value = math.ldexp(m, e) if -1021 <= e <= 1024 else 0.0
    return math.log(value) if value >= _TINY else math.log(m) + float(_times_ln2(np.array(e)))


def _split(theta: Unbounded) -> tuple[Unbounded, float]:
    r"""(:math:`\hat\Theta`, c) with :math:`\Theta = e^c\hat\Theta` and
    :math:`\max|\hat\Theta| = 1` (c = -inf for :math:`\Theta = 0`): each entry divided by the
    largest, as float64 divides where the quotient is a normal float."""
    top_m, top_e = _largest(theta)
    if top_m == 0.0:
        return theta, -math.inf
    m, e = theta
    return _unbounded(m / top_m, np.where(m == 0.0, 0, e - top_e)), _log_of(top_m, top_e)


def _mirror_split(W: np.ndarray, p: float) -> tuple[Unbounded, float]:
    r""":func:`_split` of :math:`\nabla\psi(W)` formed in log space: :math:`\hat\Theta =
    \mathrm{sign}(W)(|W|/t)^{p-1}`, :math:`c = (p-1)\log t`, :math:`t = \max|W|`, so that
    neither :math:`|W|^{p-1}` overflowing (p = 200 with max|W| = 50) nor its underflowing
    (p = 200 with max|W| = 0.01) loses the start; an entry of :math:`\hat\Theta` below
    float64's normal range is taken from its log."""
    top = float(np.max(np.abs(W), initial=0.0))
    if top == 0.0:
        return _unbounded(np.zeros_like(W)), -math.inf
    ratio = W / top
    with np.errstate(divide="ignore", under="ignore"):
        logs = (p - 1.0) * np.log(np.abs(ratio))
        unit = _merge(_mirror_map(ratio, p), np.sign(W), logs)
    return unit, (p - 1.0) * math.log(top)


def _weights(unit: Unbounded, c: float, p: float) -> np.ndarray:
    r"""W = :math:`e^{c/(p-1)}\,\nabla\psi^{-1}(\hat\Theta)` (zero for c = -inf); an entry of
    :math:`\hat\Theta` below float64's normal range from its log."""
    if not math.isfinite(c):
        return np.zeros(unit[0].shape)
    m, e = unit
    value = np.ldexp(m, np.maximum(e, -1100))
    W = math.exp(c / (p - 1.0)) * _inverse_mirror_map(value, p)
    tiny = (np.abs(value) < _TINY) & (m != 0.0)
    if np.any(tiny):
        logs = np.log(np.abs(m)) + _times_ln2(np.where(m == 0.0, 0, e))
        W = np.where(tiny, np.sign(m) * np.exp((c + logs) / (p - 1.0)), W)
    return W


class MirrorState(NamedTuple):
    r"""Iterate of a mirror-descent run (one instance).

    The mirror coordinates are :math:`\Theta = e^c\hat\Theta` with
    :math:`\max|\hat\Theta| = 1`, :math:`\hat\Theta = m\,2^e` entrywise (``mantissa`` m
    with :math:`|m| \in [1/2, 1)` or 0, ``exponent`` e an int64 array: float64 with an
    unbounded exponent, so that no entry is lost beside the largest); ``c`` (``-inf`` at
    zero); ``W`` the weights; ``step``, ``steps`` (1,) and ``status`` (1,) as in
    :class:`~svmgeo.gd.GDState`.
    """

    mantissa: np.ndarray
    exponent: np.ndarray
    c: float
    W: np.ndarray
    step: int
    steps: np.ndarray
    status: np.ndarray


class MirrorDescent:
    r"""The :math:`\ell_p` mirror step, the update rule of ``optimizer="mirror"``.

    .. math::

        \nabla\psi(W_{t+1}) = \nabla\psi(W_t) - \eta\, g_t,\qquad
        \psi(W) = \tfrac1p\|W\|_p^p

    on any risk with a log-domain gradient (``risk.log_grad(W) = (G, M)``,
    :math:`\nabla L = e^M G`; ``risk.value(W)``; ``risk.d``, ``risk.max_norm``), for the loop of
    :func:`~svmgeo.gd._loop.run_loop`.

    Parameters
    ----------
    config : GDConfig
        ``optimizer="mirror"`` with its ``exponent``.
    risk : Risk
        E.g. :class:`~svmgeo.gd.RiskOracle` (softmax attention).
    init : "zero" or array of shape (d, d)
    """

    keys: tuple[str, ...] = ("step", "loss", "W", "W_norm", "W_norm_lp", "log_theta_scale")

    def __init__(self, config: GDConfig, risk: Risk, init: Any = "zero") -> None:
        assert config.exponent is not None  # internal invariant: GDConfig checks it
        self.config = config
        self.risk = risk
        self.p = float(config.exponent)
        d = risk.d
        expected = (
            f"The 'init' parameter of {config.caller} must be 'zero' or a finite array of "
            f"shape ({d}, {d})"
        )
        if isinstance(init, str):
            if init != "zero":
                raise ProblemError(
                    f"{expected}; got the string {init!r}. Pass init='zero', or the array "
                    f"itself (e.g. init=np.eye({d}))."
                )
            W = np.zeros((d, d))
        else:
            try:
                W = check_array(init, "init", ndim=2, shape=(d, d))
            except ProblemError as exc:
                raise ProblemError(f"{expected}; {exc}") from None
        self.W0 = W

    def init_state(self) -> MirrorState:
        unit, c = _mirror_split(self.W0, self.p)
        # a start beyond the representable norms stops at once, with status OVERFLOW
        outside = float(_xp.frobenius(self.W0[None], np)[0]) > self.risk.max_norm
        status = np.full(1, CODE_OF[StopStatus.OVERFLOW] if outside else RUNNING, np.int64)
        return MirrorState(*unit, c, self.W0, 0, np.zeros(1, np.int64), status)

    def advance(self, state: MirrorState, n: int) -> MirrorState:
        """Up to ``n`` mirror steps; stops with ``STATIONARY`` (an exactly zero gradient,
        ``M = -inf`` or ``G = 0``), ``GRADIENT_UNDERFLOW`` or ``OVERFLOW`` (a non-finite
        gradient, or a step that would overflow; neither is taken)."""
        cfg, p = self.config, self.p
        log_eta = math.log(cfg.step_size)
        log_limit = math.log(self.risk.max_norm)
        unit, c, W = (state.mantissa, state.exponent), state.c, state.W
        code = RUNNING
        taken = 0
        for _ in range(n):
            G, M = self.risk.log_grad(W)
            if M == -math.inf or not np.any(G):
                # exactly zero: no weight (M = -inf), or the order-one direction G sums to
                # zero in float64 (as the rules of svmgeo.gd._steepest read it): a step would
                # move nothing, and a normalized one would divide by ||G|| = 0
                code = CODE_OF[StopStatus.STATIONARY]
                break
            if not math.isfinite(M) or not np.all(np.isfinite(G)):
                code = CODE_OF[StopStatus.OVERFLOW]  # the gradient overflowed: not taken
                break
            c0 = c if math.isfinite(c) else 0.0
            if cfg.normalized:
                g = G / float(np.linalg.norm(G))
                log_scale = log_eta - c0
            else:
                g = G
                log_scale = log_eta + M - c0
            # the step on the scale of unit: e^{log_scale} g as float64 forms it, an entry
            # that leaves float64's normal range from its log
            factor = math.exp(log_scale) if -_xp.LOG_EXP_MAX < log_scale < _xp.LOG_EXP_MAX else 0.0
            with np.errstate(divide="ignore", over="ignore", under="ignore"):
                step = _merge(-factor * g, -np.sign(g), log_scale + np.log(np.abs(g)))
            new = _add(unit, step)
            if np.array_equal(new[0], unit[0]) and np.array_equal(new[1], unit[1]):
                # below the rounding of every coordinate: no later step moves them either
                code = CODE_OF[StopStatus.GRADIENT_UNDERFLOW]
                break
            u2, c2 = _split(new)
            c_new = c0 + c2
            if c_new / (p - 1.0) > log_limit:  # max|W| = e^{c/(p-1)} past the limit: not taken
                code = CODE_OF[StopStatus.OVERFLOW]
                break
            W_new = _weights(u2, c_new, p)
            if float(_xp.frobenius(W_new[None], np)[0]) > self.risk.max_norm:
                code = CODE_OF[StopStatus.OVERFLOW]
                break
            unit, c, W = u2, c_new, W_new
            taken += 1
        steps = state.steps + taken
        status = np.full(1, code, np.int64)
        return MirrorState(*unit, c, W, state.step + n, steps, status)

    def observe(self, state: MirrorState) -> dict[str, np.ndarray]:
        return {
            **weight_record(self.risk, state.W, state.steps),
            "W_norm_lp": np.array([entrywise_norm(state.W, self.p)]),
            "log_theta_scale": np.array([state.c]),
        }

    def finals(self, state: MirrorState, obs: dict[str, np.ndarray]) -> dict[str, Any]:
        return weight_finals(state.W)

    def intermediate(
        self, obs: dict[str, np.ndarray], state: MirrorState, squeeze: bool
    ) -> Intermediate:
        raise ProblemError("optimizer='mirror' takes no callback.")  # train refuses it first


def train_mirror(
    data: TokenData,
    *,
    exponent: float | None = None,
    loss: Any = "logistic",
    head: str = "linear",
    v: Any = None,
    V: Any = None,
    lam: float | None = None,
    step_size: float = 0.1,
    normalized: bool = False,
    n_steps: int = 1000,
    record_every: int | None = None,
    init: Any = "zero",
    backend: str = REFERENCE_BACKEND,
    **renamed: Any,
) -> GDRun:
    r"""Train softmax attention W by :math:`\ell_p` mirror descent.

    .. math::

        \nabla\psi(W_{t+1}) = \nabla\psi(W_t) - \eta\, g_t,\qquad
        \psi(W) = \tfrac1p\|W\|_p^p,\qquad
        g_t = \nabla L(W_t)\ \text{or}\ \nabla L(W_t)/\|\nabla L(W_t)\|_F\ (\text{normalized}),

    with :math:`L` the risk of :func:`svmgeo.train` (same losses and heads, numpy reference
    kernels). For ``p = 2`` this is :func:`svmgeo.train` with ``param="W"``.

    Parameters
    ----------
    data : TokenData
    exponent : float
        :math:`p > 1`, the exponent of the potential (formerly ``p``, now a ProblemError
        that names ``exponent``: ``p`` is the prompt vector of ``param="p"``).
    loss, head, v, V, lam
        As in :func:`svmgeo.train`.
    step_size : float, default 0.1
        :math:`\eta > 0`.
    normalized : bool, default False
        Plain mirror steps (the paper's algorithm) or steps with the gradient normalized in
        Frobenius norm (svmgeo's option, as normalized GD).
    n_steps : int, default 1000
        Maximum number of steps, at least 1 (as :func:`svmgeo.train`).
    record_every : int, optional
        Record cadence; default ``max(1, n_steps // 100)``.
    init : "zero" or array of shape (d, d)
    backend : {"numpy", "numba", "cupy"}, default "numpy"
        Kernels of the gradient (those of :func:`svmgeo.train`); the mirror step itself and
        the recorded losses use numpy.

    Returns
    -------
    GDRun
        ``run.W`` (d, d); ``run.history`` records ``step``, ``loss``, ``W``, ``W_norm``
        (Frobenius), ``W_norm_lp`` (:math:`\|W\|_p`) and ``log_theta_scale``; ``status`` is
        ``MAX_STEPS``, ``STATIONARY`` (the gradient is exactly zero: ``M = -inf``, or its
        order-one direction ``G`` is zero in float64, plain and normalized steps alike; W is
        the last iterate), ``GRADIENT_UNDERFLOW`` (the step, :math:`\eta e^{M} G` or
        :math:`\eta G/\|G\|_F`, is below the rounding of every mirror coordinate
        :math:`\Theta_{kl}`, so no further step changes them; W is the last iterate) or
        ``OVERFLOW`` (the next step would take
        :math:`\|W\|_F` past the largest norm the engine represents, or the gradient itself
        is not finite; not taken).

    Notes
    -----
    The mirror coordinates are held as :math:`\Theta = e^c\hat\Theta` with
    :math:`\max|\hat\Theta| = 1` and each entry of :math:`\hat\Theta` float64 with an unbounded
    exponent; a start's are formed in log space. So neither :math:`|W|^{p-1}` overflowing
    nor its underflowing loses an entry, and a step stops the run with
    ``GRADIENT_UNDERFLOW`` only when it is below the rounding of every coordinate.

    Raises
    ------
    ProblemError
        For ``exponent <= 1``, a non-positive step size, an init of the wrong shape,
        the old spelling ``p=``, or an option it does not take (named, with those it takes).

    References
    ----------
    .. [1] A. K. Julistiono, D. A. Tarzanagh, N. Azizan, "Optimizing Attention with Mirror
       Descent: Generalized Max-Margin Token Selection", arXiv:2410.14581.

    Examples
    --------
    >>> import svmgeo as sg
    >>> run = sg.train_mirror(sg.random_data(3, 4, 5, seed=0), exponent=1.5, n_steps=50)
    >>> run.W.shape, run.status
    ((5, 5), <StopStatus.MAX_STEPS: 'max_steps'>)
    """
    where = "train_mirror"
    refuse_unknown_options(renamed, where, _TRAIN_MIRROR_OPTIONS)
    return run_mirror_descent(
        data, caller=where, exponent=exponent, loss=loss, head=head, v=v, V=V, lam=lam,
        step_size=step_size, normalized=normalized, n_steps=n_steps,
        record_every=record_every, init=init, backend=backend,
    )  # fmt: skip


_TRAIN_MIRROR_OPTIONS = keyword_options(train_mirror)


def run_mirror_descent(
    data: TokenData,
    *,
    caller: str,
    exponent: float | None,
    loss: Any,
    head: str,
    v: Any,
    V: Any,
    lam: float | None,
    step_size: float,
    normalized: bool,
    n_steps: int,
    record_every: int | None,
    init: Any,
    backend: str,
) -> GDRun:
    """:func:`train_mirror` for the entry point ``caller`` (``verify_mirror``), which its
    errors name."""
    where = caller
    if not isinstance(data, TokenData):
        raise ProblemError(f"{where} takes one svmgeo.TokenData; got {type(data).__name__}.")
    if exponent is None:
        raise ProblemError(
            f"{where} needs exponent=, the p > 1 of the potential ||W||_p^p / p; e.g. exponent=1.5."
        )
    cfg = GDConfig(
        optimizer="mirror", exponent=exponent, loss=loss, head=head, step_size=step_size,
        normalized=normalized, n_steps=n_steps, record_every=record_every, init=init,
        backend=backend, record=("loss", "W", "W_norm"), caller=where,
    )  # fmt: skip
    risk = RiskOracle(data, loss=loss, head=head, v=v, V=V, lam=lam, backend=backend)
    return run_loop(MirrorDescent(cfg, risk, init))[0]


def sparsity(W: np.ndarray, rel: float = 1e-3) -> float:
    r"""Fraction of entries with :math:`|W_{kl}| < \text{rel}\cdot\max|W|` (0 for W = 0).

    ``W`` is a finite real array (a vector, a matrix or a stack of matrices), ``rel`` a float
    in [0, 1]; a ProblemError names either otherwise.
    """
    a = np.abs(check_float_array(W, "'W' of sparsity", ndim=(1, 2, 3)))
    rel = check_real(rel, "rel", low=0.0, high=1.0, where="sparsity")
    top = float(a.max(initial=0.0))
    return 0.0 if top == 0.0 else float(np.mean(a < rel * top))
