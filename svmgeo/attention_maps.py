# SPDX-License-Identifier: BSD-3-Clause
r"""Attention maps :math:`\varphi : \mathbb{R}^T \to \mathbb{R}^T` as a table: value, Jacobian,
contracted Hessian, and the global bound on the Jacobian's spectral norm.

.. math::

    y_{ik} = U_i^\top \varphi(X_i W z_{ik}), \qquad
    J_\varphi(u)_{ts} = \frac{\partial \varphi_t}{\partial u_s}, \qquad
    H_\varphi(u)[g] = \sum_t g_t \nabla^2 \varphi_t(u).

=====================  ==================================  ===============================
name                   :math:`\varphi(u)`                  :math:`\sup_u \|J_\varphi(u)\|_2`
=====================  ==================================  ===============================
``"softmax"``          :math:`e^{u} / \mathbf 1^\top e^{u}`  :math:`\tfrac12`
``"linear"``           :math:`u`                           1
``"normalized_linear"``  :math:`u / \mathbf 1^\top u` (where :math:`\mathbf 1^\top u \ne 0`)  unbounded
``"sigmoid"``          :math:`\sigma(u_t)` entrywise       :math:`\tfrac14`
``"relu"``             :math:`\max(u_t, 0)` entrywise      1 (almost everywhere)
=====================  ==================================  ===============================

The bounds are standard facts, with svmgeo's one-line reasons in :attr:`AttentionMap.bound_reason`
(the softmax one: :math:`\mathrm{diag}(s) - ss^\top` is the covariance of a one-hot draw, and
Popoviciu's inequality bounds a variance by a quarter of the squared range, here
:math:`\le \tfrac14(\sqrt2)^2`). Part of svmgeo's reconstruction, from its abstract only, of
Chen, Guo, Li, Song, Zhou (ICLR 2024 submission 4416, withdrawn); see docs/attention-maps.md.

Every function takes logits ``u`` of shape ``(..., T)`` and an optional boolean ``visible``
of the same shape (keys a query does not see get weight 0 and no derivative, whatever their
logits, -inf included), is plain numpy, and broadcasts over the leading axes, so the training
loop can reuse the table. The logits of the visible keys (and the Hessian's weights ``g``) must
be finite: a NaN or an infinity there is refused (a :class:`~svmgeo.ProblemError` naming the
argument and the first such entry), not carried into the result; a key is hidden with
``visible``, not with a -inf logit. Numpy input is checked (one min and one max per call); the
training engine's CuPy arrays, whose logits it bounds itself, are not.

Shared internals, not public API: ``UNIT_ROUNDOFF``, ``gamma``, ``visible_sum``,
``logit_sum_bound``, ``refuse_undetermined_sums`` and ``undetermined_sum_message`` implement
the refusal of normalized linear sums within their rounding error of 0 (docs/attention-maps.md)
for this module, the training engine (:mod:`svmgeo.gd`) and :mod:`svmgeo.analysis`;
``UNCHECKED_PHI`` holds the maps without the finite-logit check, for the engine, whose
overflowed logits are its OVERFLOW stop. They are not in ``__all__`` and may change without
notice (their names carry no underscore because those subpackages import them).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._errors import ProblemError
from ._linalg import logistic

__all__ = ["ATTENTION_MAPS", "AttentionMap", "get_attention_map"]

Array = np.ndarray


def _vis(u: Array, visible: Array | None) -> Array:
    """The visible keys as a boolean mask of ``u``'s shape (all keys when ``visible`` is None)."""
    shape = np.shape(u)
    if not shape or shape[-1] == 0:
        raise ProblemError(
            f"u must hold the logits of at least one key along its last axis; got shape {shape}."
        )
    if visible is None:
        return np.ones(shape, dtype=bool)
    if getattr(visible, "dtype", None) is None:  # a list: numpy's (CuPy arrays keep theirs)
        visible = np.asarray(visible)
    if visible.dtype != bool:
        raise ProblemError(
            f"visible must be a boolean mask (True = a visible key); got dtype {visible.dtype}. "
            "An additive mask (0 visible, -inf hidden, as PyTorch's) would read inverted: pass "
            "mask == 0."
        )
    try:
        mask = np.broadcast_to(visible, shape)
    except ValueError:
        raise ProblemError(
            f"visible must be a boolean mask of u's shape {shape} (or one that broadcasts to "
            f"it: one flag per key); got shape {visible.shape}."
        ) from None
    # the engine's masks come from checked TokenData (CuPy ones too): check the user's
    if isinstance(mask, np.ndarray) and not np.all(np.any(mask, axis=-1)):
        raise ProblemError(
            "visible hides every key of some query; each query must see at least one key "
            "(its attention weights would be 0/0)."
        )
    return mask


def _finite_on_visible(u: Any, visible: Any, name: str, *, every: bool = False) -> Any:
    """``u`` as an array (a list made numpy, hidden keys' NaN and infinities made 0), or a
    ProblemError naming ``name`` where an entry of a visible key (any entry with ``every``) is
    NaN or infinite; CuPy arrays (the engine's) pass unchecked."""
    if getattr(u, "dtype", None) is None:  # a list or a scalar: numpy's
        u = np.asarray(u)
    if not isinstance(u, np.ndarray) or u.size == 0:  # no key at all: _vis says so
        return u
    if u.dtype.kind not in "biuf":
        raise ProblemError(
            f"{name} must be a real numeric array; got dtype {u.dtype}. Pass it as floats, "
            f"e.g. np.asarray({name}, dtype=float)."
        )
    if u.dtype.kind != "f" or (np.isfinite(u.min()) and np.isfinite(u.max())):  # NaN: both
        return u
    nonfinite = ~np.isfinite(u)
    bad = nonfinite if every else nonfinite & _vis(u, visible)
    if np.any(bad):
        where = tuple(int(j) for j in np.argwhere(bad)[0])
        if every:
            raise ProblemError(
                f"{name} must be finite; found {u[where]} at index {where}. Look for the "
                "NaN or infinity where it was computed."
            )
        raise ProblemError(
            f"{name} (the logits) must be finite on the visible keys; found {u[where]} at index "
            f"{where}. To leave a key out, pass visible (a boolean mask, False = hidden, e.g. "
            "visible=np.isfinite(u)) instead of a -inf logit; a NaN or inf that came from an "
            "overflow is fixed where u was computed (rescale its inputs)."
        )
    return np.where(nonfinite, 0.0, u)  # hidden keys' logits are ignored, -inf and NaN too


def _checked(f: Callable[..., Array]) -> Callable[..., Array]:
    """The map function ``f(u, visible=None)`` for users: ``u`` checked first."""

    @functools.wraps(f)
    def checked(u: Any, visible: Any = None) -> Array:
        return f(_finite_on_visible(u, visible, "u"), visible)

    return checked


def _checked_hessian(f: Callable[..., Array]) -> Callable[..., Array]:
    """The Hessian ``f(u, g, visible=None)`` for users: ``u`` and ``g`` checked first."""

    @functools.wraps(f)
    def checked(u: Any, g: Any, visible: Any = None) -> Array:
        u = _finite_on_visible(u, visible, "u")
        return f(u, _finite_on_visible(g, visible, "g", every=True), visible)

    return checked


def _outer(a: Array, b: Array) -> Array:
    return a[..., :, None] * b[..., None, :]


def _diag(a: Array) -> Array:
    return a[..., :, None] * np.eye(a.shape[-1])


# -- softmax ------------------------------------------------------------------------------
def _softmax(u: Array, visible: Array | None = None) -> Array:
    m = _vis(u, visible)
    uu = np.where(m, u, -np.inf)
    top = uu.max(axis=-1, keepdims=True)
    with np.errstate(over="ignore"):  # a gap beyond float64's range: -inf, a weight of 0
        e = np.where(m, np.exp(uu - top), 0.0)
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_jac(u: Array, visible: Array | None = None) -> Array:
    s = _softmax(u, visible)
    return _diag(s) - _outer(s, s)


def _softmax_hess(u: Array, g: Array, visible: Array | None = None) -> Array:
    s = _softmax(u, visible)
    q = s * g - s * np.sum(s * g, axis=-1, keepdims=True)  # J g
    return _diag(q) - _outer(q, s) - _outer(s, q)


# -- linear -------------------------------------------------------------------------------
def _linear(u: Array, visible: Array | None = None) -> Array:
    return np.where(_vis(u, visible), u, 0.0)


def _linear_jac(u: Array, visible: Array | None = None) -> Array:
    return _diag(_vis(u, visible).astype(float))


def _zero_hess(u: Array, g: Array, visible: Array | None = None) -> Array:
    shape = _vis(u, visible).shape
    return np.zeros((*shape, shape[-1]))


# -- normalized linear ----------------------------------------------------------------------
UNIT_ROUNDOFF = 2.0**-53
"""float64's unit roundoff u: a rounded operation's relative error is at most u."""


def gamma(n: Any, unit_roundoff: float = UNIT_ROUNDOFF) -> Any:
    r""":math:`\gamma_n = n u / (1 - n u)`: a value that passes through ``n`` rounded
    operations carries a relative error of at most :math:`\gamma_n` (Higham, *Accuracy and
    Stability of Numerical Algorithms*, 2nd ed., Lemma 3.1); u is float64's unless
    ``unit_roundoff`` gives another precision's (:func:`_unit_roundoff`)."""
    return n * unit_roundoff / (1.0 - n * unit_roundoff)


def _unit_roundoff(dtype: Any) -> float:
    """The unit roundoff of a float dtype (float64's is :data:`UNIT_ROUNDOFF`, float32's
    :math:`2^{-24}`, float16's :math:`2^{-11}`): half its machine epsilon."""
    return float(np.finfo(dtype).eps) / 2.0


def visible_sum(u: Array, visible: Array | None) -> Array:
    r""":math:`\mathbf 1^\top u` over the visible keys (keeping the last axis), as the
    normalized linear map divides by it."""
    return np.sum(np.where(_vis(u, visible), u, 0.0), axis=-1, keepdims=True)


def logit_sum_bound(X: Any, W: Any, Z: Any, visible: Any, xp: Any = np) -> Any:
    r"""Bound on the rounding error of :math:`\mathbf 1^\top u` with
    :math:`u_t = x_t^\top (W z)` over the visible keys, as computed in float64.

    .. math::

        |\widehat{\mathbf 1^\top u} - \mathbf 1^\top X W z|
        \le \gamma_{d_z + d + T_v - 1} \sum_{t\ \mathrm{visible}} |x_t|^\top |W|\,|z|

    for any order of the sums: each product :math:`x_{ta} W_{ab} z_b` passes through the
    :math:`d_z` roundings of the inner product :math:`(Wz)_a`, the :math:`d` of
    :math:`x_t^\top (Wz)` and the :math:`T_v - 1` of the sum over the :math:`T_v` visible
    keys (Higham, Lemmas 3.1 and 3.3; an FMA only removes roundings). The bound is itself
    computed in float64, to a relative :math:`\gamma_{T + d + d_z}` (negligible).

    Parameters
    ----------
    X : array (..., T, d)
        Each sequence's keys.
    W : array (..., d, d_z)
        Broadcasting against X's leading axes.
    Z : array (..., K, d_z)
        Each sequence's queries.
    visible : bool array (..., K, T)
    xp : array namespace, default numpy

    Returns
    -------
    array (..., K)
    """
    Wz_abs = xp.abs(Z) @ xp.swapaxes(xp.abs(W), -1, -2)  # (..., K, d): |W||z| per query
    keys_abs = xp.where(visible, 1.0, 0.0) @ xp.abs(X)  # (..., K, d): sum_t |x_t| visible
    n = W.shape[-1] + X.shape[-1] + xp.sum(visible, axis=-1) - 1
    return gamma(n) * xp.sum(keys_abs * Wz_abs, axis=-1)


def refuse_undetermined_sums(
    S: Any,
    bound: Any,
    axes: tuple[str, ...] = (),
    fix: str = "",
    which: str = "",
    scale_exp: Any = None,
    precision: Any = None,
    float64_passes: Any = None,
) -> None:
    r"""ProblemError where :math:`|\widehat{\mathbf 1^\top u}| \le` its rounding error
    bound: there the exact sum may be 0 (where :math:`u / \mathbf 1^\top u` is undefined) or
    of the other sign, and float64 does not determine :math:`u / \mathbf 1^\top u`; an exact
    zero is refused whatever the bound, and so is an infinite sum or bound (an overflow: the
    message says so). A NaN sum passes (the engine's overflowed logits, its OVERFLOW stop).

    ``S`` and ``bound`` have the same shape; the message names the first such query by
    ``axes`` (the names of their axes), or as ``which`` when given; ``fix`` replaces the
    default advice; ``scale_exp`` (integers of ``S``'s shape, optional) holds the k of the
    queries whose ``S`` and ``bound`` are those of :math:`2^{-k} u`. The message names the
    precision each query's sum was computed in: ``precision`` (dtype names of ``S``'s shape,
    optional), else ``S``'s dtype. A query summed in a narrower precision than float64 is
    told to pass float64 logits only where ``float64_passes`` (booleans of ``S``'s shape,
    optional: does float64's sum of its logits pass float64's check?) holds, or is not given.
    """
    bad = np.abs(S) <= bound
    if not np.any(bad):
        return
    where = tuple(int(j) for j in np.argwhere(bad)[0])
    S0, b0 = float(S[where]), float(bound[where])
    k = 0 if scale_exp is None else int(scale_exp[where])
    if not which:
        names = axes if len(axes) == len(where) else ("index",) * len(where)
        which = ", ".join(f"{a} {j}" for a, j in zip(names, where, strict=True)) or "the query"
    name = S.dtype.name if precision is None else str(precision[where])
    offer = True if float64_passes is None else bool(float64_passes[where])
    raise ProblemError(undetermined_sum_message(S0, b0, which, fix, k, name, offer))


def _times_two_to(x: float, k: int) -> str:
    """:math:`2^k x` for a message: the number where float64 holds it, else ``x * 2^k``."""
    try:
        return f"{math.ldexp(x, k):.3g}"
    except OverflowError:
        return f"{x:.3g} * 2^{k}"


def undetermined_sum_message(
    S: float,
    bound: float,
    which: str,
    fix: str = "",
    scale_exp: int = 0,
    precision: str = "float64",
    float64_passes: bool = True,
) -> str:
    """The message of :func:`refuse_undetermined_sums` for the query ``which`` (``S`` and
    ``bound`` those of :math:`2^{-k} u` for ``scale_exp`` k, the sum computed in
    ``precision``); a sum in a precision other than float64 is told to pass float64 logits
    where ``float64_passes`` (float64's sum of its logits passes float64's check)."""
    top = f"{float(np.finfo(precision).max):.2g}".replace("e+", "e")  # 1.8e308, 3.4e38
    wider = (
        ""
        if precision == "float64" or not float64_passes
        else f"Pass float64 logits, u.astype(np.float64) (float64's range and unit roundoff "
        f"2^-53, not {precision}'s). Else: "
    )
    if not (math.isfinite(S) and math.isfinite(bound)):
        return (
            f"normalized linear attention u / (1^T u) cannot be evaluated for {which}: its "
            f"visible logits' sum 1^T u = {S:.3g} or the bound on its rounding error, "
            f"{bound:.3g} (gamma_n sum|terms|, see docs/attention-maps.md), overflows "
            f"{precision}; the logits u = X_i W z_ik at this W, or the terms x_ta W_ab z_b "
            f"they add, reach beyond {precision}'s range ({top}). {wider}"
            "u / (1^T u) does not change when W is multiplied by c > 0: scale W (or init) down, "
            "e.g. W / np.abs(W).max()."
        )
    k = scale_exp
    scaled = (
        f" (its terms' magnitudes sum beyond {precision}'s range: computed as 2^{k} times "
        f"the sum of 2^-{k} u, which changes no weight)"
        if k
        else ""
    )
    return (
        "normalized linear attention u / (1^T u) is undefined where the visible logits of a "
        f"query sum to 0, and not determined by {precision} where their computed sum is "
        "within its "
        f"rounding error of 0: {which} has 1^T u = {_times_two_to(S, k)}{scaled}"
        + (
            ", exactly (its rounding error bound is 0). "
            if bound == 0.0
            else f", and its rounding error can reach {_times_two_to(bound, k)} (gamma_n "
            "sum|terms|, see docs/attention-maps.md): the exact sum may be 0 or of the other "
            "sign. "
        )
        + wider
        + (
            fix
            or "Move W off the hyperplane 1^T X_i W z_ik = 0 (to a W where |1^T X_i W z_ik| is "
            "well above that bound; rescaling W does not help, the bound scales with it), or "
            "use attention='linear' or 'softmax'."
        )
    )


def _total(u: Array, visible: Array | None) -> tuple[Array, Array]:
    r"""``(S, k)`` per query (keeping the last axis): :math:`S = \mathbf 1^\top (2^{-k} u)`
    over the visible keys, refused where it is within :math:`\gamma_{T_v - 1} \sum_t
    2^{-k}|u_t|` of 0 (the rounding error bound of a sum of :math:`T_v` given floats, with the
    unit roundoff of the precision the sum is computed in: float32 logits are summed in
    float32, and their :math:`u = 2^{-24}`). :math:`\gamma_n = n u / (1 - n u)` holds while
    :math:`n u < 1`: a query of float32 or float16 logits with :math:`(T_v - 1) u \ge 1/2`
    (more than 1024 visible keys in float16) is summed in float64, with float64's bound, and
    ``S`` is then float64 (the other queries' sums, held exactly, unchanged).

    k = 0 (``S`` the plain sum) unless that sum or its bound overflows; then k > 0, from the
    exponent of the largest visible :math:`|u_t|` and :math:`T_v`, keeps this query's sum of
    magnitudes below half its precision's largest number: an exact scaling of its row only
    (:math:`u / \mathbf 1^\top u` is the same at :math:`2^{-k} u`). Such a query's kept sum
    has :math:`|\mathbf 1^\top u| \gtrsim \gamma_1 \cdot 1.8\times 10^{308}`, so the weights
    of its entries that the scaling takes below the normal range are below float64's
    range either way."""
    vis = _vis(u, visible)
    n = np.sum(vis, axis=-1, keepdims=True)
    # an overflow (inf, or NaN where partial sums of both signs overflow): the query is
    # evaluated at 2^-k u below
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        S = visible_sum(u, vis)
        dt = S.dtype
        ur = _unit_roundoff(dt)  # the sum is rounded in u's precision (float32 ...)
        bound = _rounding_bound(u, vis, n, ur)
    in_float64 = None  # float64's sum and bound of every query (float32 or float16 u)
    wide = _too_long(n, dt)
    if np.any(wide):  # float64's sum and bound (float16 or float32 u: no overflow)
        in_float64 = _sum_in_float64(u, vis, n)
        S = np.where(wide, in_float64[0], S)
        bound = np.where(wide, in_float64[1], bound)
    k = np.zeros(S.shape, dtype=np.int64)
    over = ~(np.isfinite(S) & np.isfinite(bound))
    if np.any(over):
        # sum_t |u_t| 2^-k < T_v 2^(e - k) <= 2^(maxexp - 1), e the exponent of max_t |u_t|
        top = np.max(np.where(vis, np.abs(u), 0.0), axis=-1, keepdims=True)
        need = np.frexp(top)[1] + np.ceil(np.log2(n)).astype(np.int64) + 1
        k = np.where(over, np.maximum(need - np.finfo(dt).maxexp, 1), 0)
        down = _down(u, k)
        S = np.where(over, visible_sum(down, vis), S)
        bound = np.where(over, _rounding_bound(down, vis, n, ur), bound)
    if dt == np.float64:
        refuse_undetermined_sums(S[..., 0], bound[..., 0], scale_exp=k[..., 0])
    elif np.any(np.abs(S) <= bound):  # each query's precision; would float64's sum pass?
        S64, bound64 = _sum_in_float64(u, vis, n) if in_float64 is None else in_float64
        passes = np.abs(S64) > bound64
        refuse_undetermined_sums(
            S[..., 0],
            bound[..., 0],
            scale_exp=k[..., 0],
            precision=np.where(wide, "float64", dt.name)[..., 0],
            float64_passes=passes[..., 0],
        )
    return S, k


def _rounding_bound(x: Array, vis: Array, n: Array, unit_roundoff: float) -> Array:
    r""":math:`\gamma_{T_v - 1} \sum_t |x_t|` over the ``n`` visible keys (keeping the last
    axis): the rounding error bound of their sum, in the precision of ``unit_roundoff``."""
    return gamma(n - 1, unit_roundoff) * visible_sum(np.abs(x), vis)


def _sum_in_float64(u: Array, vis: Array, n: Array) -> tuple[Array, Array]:
    """Each query's visible sum of ``u`` (float32 or float16: float64 holds it without
    overflow) taken in float64, with float64's :func:`_rounding_bound`."""
    u64 = u.astype(np.float64)
    return visible_sum(u64, vis), _rounding_bound(u64, vis, n, UNIT_ROUNDOFF)


def _too_long(n: Array, dtype: Any) -> Array:
    r"""The queries of ``n`` visible keys whose sum :func:`_total` takes in float64: where
    :math:`(n - 1) u \ge 1/2` for ``dtype``'s unit roundoff u (float32, float16)."""
    return (n - 1) * _unit_roundoff(dtype) >= 0.5


def _down(x: Array, k: Array) -> Array:
    """:math:`2^{-k} x` (exact where it stays normal); ``x`` itself where every k is 0."""
    return np.ldexp(x, -k) if np.any(k) else x


def _normalized(u: Array, visible: Array | None = None) -> Array:
    S, k = _total(u, visible)
    a = _linear(_down(u, k), visible)
    return (a / S).astype(a.dtype, copy=False)  # one rounding to u's dtype: S float64 or not


def _normalized_unchecked(u: Array, visible: Array | None = None) -> Array:
    """:func:`_normalized` without its sum check, for the engine, which refuses the same sums
    before with a bound at least as large (:func:`logit_sum_bound` covers the roundings of
    the logits too)."""
    return _linear(u, visible) / visible_sum(u, visible)


def _normalized_jac(u: Array, visible: Array | None = None) -> Array:
    m = _vis(u, visible).astype(float)
    S, k = _total(u, visible)
    a = _linear(_down(u, k), visible)
    a = (a / S).astype(a.dtype, copy=False)  # as phi's (S float64 where _total widened it)
    return _down(_diag(m) - _outer(a, m), k[..., None]) / S[..., None]


def _normalized_hess(u: Array, g: Array, visible: Array | None = None) -> Array:
    r""":math:`H_{ts} = (2 g^\top a - g_t - g_s) / (\mathbf 1^\top u)^2` (a = u / 1^T u)
    on the visible keys, as :math:`-(g \mathbf 1^\top + \mathbf 1 g^\top) / S^2 + 2 (g^\top
    u) \mathbf 1 \mathbf 1^\top / S^3`; a query where that leaves the floats' range (its
    :math:`S^2` or :math:`S^3` not a normal number, an entry not finite, or a nonzero product
    :math:`g_t u_t` or :math:`g^\top u` below the normal range, whose absolute rounding
    error :math:`S^3` would magnify), whose sum overflowed (:func:`_total`'s k > 0) or was
    taken in float64 (:func:`_too_long`), by :func:`_normalized_hess_scaled` instead: every
    other query bit for bit as the formula above."""
    vis = _vis(u, visible)
    m = vis.astype(float)
    S, k = _total(u, visible)
    Sd = S.astype(np.result_type(u, 0.0), copy=False)[..., None]  # u's precision (float16 ...)
    gm = g * m
    # a warning here comes from a query that leaves the range: each is computed again below
    with np.errstate(all="ignore"):
        S2, S3 = Sd**2, Sd**3
        gmu = gm * u
        gu = np.sum(gmu, axis=-1, keepdims=True)[..., None]
        H = -(_outer(gm, m) + _outer(m, gm)) / S2 + 2.0 * gu * _outer(m, m) / S3
    tiny, tiny_gu = np.finfo(Sd.dtype).tiny, np.finfo(gu.dtype).tiny
    normal = (S2 >= tiny) & np.isfinite(S2) & (np.abs(S3) >= tiny) & np.isfinite(S3)
    sub = np.any((gm != 0) & (u != 0) & (np.abs(gmu) < tiny_gu), axis=-1)[..., None, None]
    sub |= (gu != 0) & (np.abs(gu) < tiny_gu)
    wide = _too_long(np.sum(vis, axis=-1), Sd.dtype)[..., None, None]
    redo = (k[..., None] > 0) | ~normal | ~np.all(np.isfinite(H), axis=(-2, -1), keepdims=True)
    redo |= sub | wide
    if not np.any(redo):
        return H
    rows = np.broadcast_to(redo[..., 0, 0], H.shape[:-2])
    keys = (*H.shape[:-2], u.shape[-1])
    one = (*H.shape[:-2], 1)
    H[rows] = _normalized_hess_scaled(
        np.broadcast_to(u, keys)[rows],
        np.broadcast_to(gm, keys)[rows],
        np.broadcast_to(vis, keys)[rows],
        np.broadcast_to(S, one)[rows],
        np.broadcast_to(k, one)[rows],
    )
    return H


def _normalized_hess_scaled(
    u: Array, gm: Array, vis: Array, S: Array, k: Array, again: bool = True
) -> Array:
    r"""The Hessian of :func:`_normalized_hess` as :math:`(2 \tilde g^\top a - \tilde g_t -
    \tilde g_s) / \mathbf 1^\top u` with :math:`\tilde g = g / \mathbf 1^\top u`, for
    queries ``(q, T)`` whose ``S`` is the sum of :math:`2^{-k} u` (:func:`_total`), each
    division by :math:`\mathbf 1^\top u = 2^k S` as :math:`2^{-k} x / S`. Its intermediates
    are :math:`\tilde g`, the weights a, :math:`\tilde g^\top a` and the numerator, on the
    scale of :math:`\tilde g` times a, not of :math:`S^2` or :math:`S^3` (where the sum
    overflowed, :math:`|\mathbf 1^\top u| > \gamma_1 \cdot 1.8 \times 10^{308}` leaves
    :math:`|\tilde g| < 10^{16}`, g near float64's largest number included). A query whose
    steps leave the range all the same (:math:`\tilde g^\top a` beyond it while H is not:
    ``hessian([1e23, -1e23 + 1e8], g=[1e308, -1e308])``, H about 3.9e307) is computed
    ``again`` at :math:`2^{-j} g`, :math:`2^j` the power of two of its largest
    :math:`|g_t|` (H is linear in g), and scaled back: a result beyond the range is an
    infinity. ``gm`` is g with the hidden keys' entries 0."""
    m = vis.astype(float)
    with np.errstate(over="ignore", invalid="ignore"):  # such queries are computed again
        g_S = _down(gm, k) / S
        a = np.where(vis, _down(u, k), 0.0) / S
        q = np.sum(g_S * a, axis=-1, keepdims=True)[..., None]
        w = 2.0 * q * _outer(m, m) - (_outer(g_S, m) + _outer(m, g_S))
        H = _down(w, k[..., None]) / S[..., None]
    bad = ~np.all(np.isfinite(H), axis=(-2, -1))
    if again and np.any(bad):
        j = np.frexp(np.max(np.abs(gm[bad]), axis=-1, keepdims=True))[1]
        Hj = _normalized_hess_scaled(u[bad], np.ldexp(gm[bad], -j), vis[bad], S[bad], k[bad], False)
        with np.errstate(over="ignore"):  # H beyond the range: an infinity
            H[bad] = np.ldexp(Hj, j[..., None])
    return H


# -- sigmoid --------------------------------------------------------------------------------
# sigma(u) and sigma(-u) each to a few ulps relative (logistic): sigma' = sigma(u) sigma(-u)
# and 1 - 2 sigma(u) = sigma(-u) - sigma(u) keep their relative accuracy where sigma(u) or
# sigma(-u) is far below 1 (the tanh form's sigma' was exactly 0 from |u| ~ 38.1 on)
def _sigmoid(u: Array, visible: Array | None = None) -> Array:
    return np.where(_vis(u, visible), logistic(u), 0.0)


def _sigmoid_jac(u: Array, visible: Array | None = None) -> Array:
    return _diag(np.where(_vis(u, visible), logistic(u) * logistic(-u), 0.0))


def _sigmoid_hess(u: Array, g: Array, visible: Array | None = None) -> Array:
    s, r = logistic(u), logistic(-u)
    return _diag(np.where(_vis(u, visible), g * s * r * (r - s), 0.0))


# -- relu -----------------------------------------------------------------------------------
def _relu(u: Array, visible: Array | None = None) -> Array:
    return np.where(_vis(u, visible), np.maximum(u, 0.0), 0.0)


def _relu_jac(u: Array, visible: Array | None = None) -> Array:
    return _diag((_vis(u, visible) & (u > 0.0)).astype(float))


@dataclass(frozen=True)
class AttentionMap:
    r"""One attention map :math:`\varphi` and its derivatives.

    ``phi``, ``jacobian`` and ``hessian`` take logits ``u`` of shape ``(..., T)`` and an
    optional boolean mask ``visible`` (False: a hidden key, weight 0 and no derivative,
    whatever its logit). A NaN or an infinity among the visible keys' logits, or in the
    Hessian's ``g``, is a :class:`~svmgeo.ProblemError` naming the argument and the entry;
    hide a key with ``visible`` (e.g. ``visible=np.isfinite(u)``), not with a -inf logit.

    Attributes
    ----------
    name : str
        The key in :data:`ATTENTION_MAPS`.
    formula : str
        :math:`\varphi(u)` in words.
    phi : callable ``(u, visible=None) -> array (..., T)``
        :math:`\varphi(u)`.
    jacobian : callable ``(u, visible=None) -> array (..., T, T)``
        :math:`J_\varphi(u)_{ts} = \partial\varphi_t / \partial u_s`.
    hessian : callable ``(u, g, visible=None) -> array (..., T, T)``
        :math:`\sum_t g_t \nabla^2\varphi_t(u)`, the Hessian of :math:`u \mapsto
        g^\top\varphi(u)` (ReLU: 0 where it exists, i.e. off :math:`u_t = 0`).
    jacobian_bound : float or None
        :math:`\sup_u \|J_\varphi(u)\|_2`, None when unbounded.
    bound_reason : str
        The one-line reason for ``jacobian_bound`` (or why there is none).
    scale_invariant : bool
        :math:`\varphi(cu) = \varphi(u)` for :math:`c > 0` (normalized linear).
    sums_to_one : bool
        :math:`\sum_t \varphi_t(u) = 1` over the visible keys (softmax, normalized linear):
        with one visible key :math:`\varphi = 1` and its Jacobian is 0 at every u.
    """

    name: str
    formula: str
    phi: Callable[..., Array]
    jacobian: Callable[..., Array]
    hessian: Callable[..., Array]
    jacobian_bound: float | None
    bound_reason: str
    scale_invariant: bool = False
    sums_to_one: bool = False

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from ._summary import html_summary

        return html_summary(self)


ATTENTION_MAPS: dict[str, AttentionMap] = {
    m.name: m
    for m in (
        AttentionMap(
            "softmax",
            "exp(u_t) / sum_s exp(u_s) over visible keys",
            _checked(_softmax),
            _checked(_softmax_jac),
            _checked_hessian(_softmax_hess),
            0.5,
            "diag(s) - s s^T is the covariance of a one-hot draw e_tau, tau ~ s; for a unit w, "
            "Var(w_tau) <= (max w - min w)^2 / 4 <= 1/2 (Popoviciu), attained at s = (1/2, 1/2, 0..)",
            sums_to_one=True,
        ),
        AttentionMap(
            "linear",
            "u_t (no normalization)",
            _checked(_linear),
            _checked(_linear_jac),
            _checked_hessian(_zero_hess),
            1.0,
            "J = I on the visible keys",
        ),
        AttentionMap(
            "normalized_linear",
            "u_t / sum_s u_s, where sum_s u_s != 0",
            _checked(_normalized),
            _checked(_normalized_jac),
            _checked_hessian(_normalized_hess),
            None,
            "J = (I - a 1^T) / (1^T u) with a = u / 1^T u: unbounded as 1^T u -> 0, undefined at 0",
            scale_invariant=True,
            sums_to_one=True,
        ),
        AttentionMap(
            "sigmoid",
            "1 / (1 + exp(-u_t)) entrywise",
            _checked(_sigmoid),
            _checked(_sigmoid_jac),
            _checked_hessian(_sigmoid_hess),
            0.25,
            "J = diag(sigma'(u)) and sigma' = sigma (1 - sigma) <= 1/4, attained at u = 0",
        ),
        AttentionMap(
            "relu",
            "max(u_t, 0) entrywise",
            _checked(_relu),
            _checked(_relu_jac),
            _checked_hessian(_zero_hess),
            1.0,
            "J = diag(1[u > 0]) where it exists (off u_t = 0), a 0/1 diagonal",
        ),
    )
}
"""The attention maps by name, in the order of the table above."""

UNCHECKED_PHI: dict[str, Callable[..., Array]] = {
    "softmax": _softmax,
    "linear": _linear,
    "normalized_linear": _normalized_unchecked,
    "sigmoid": _sigmoid,
    "relu": _relu,
}
"""Each map's :math:`\varphi` without the finite-logit check, for the training engine: its
logits overflow to inf or NaN at a W beyond float64's reach, which it reports as the OVERFLOW
stop (a shared internal, as those named in the module docstring). Normalized linear attention
without its sum check too: the engine checks the sums first (``check_normalized_sums``)."""


def get_attention_map(attention: object, where: str = "") -> AttentionMap:
    """The :class:`AttentionMap` called ``attention``, or a ProblemError listing the names."""
    if isinstance(attention, str) and attention in ATTENTION_MAPS:
        return ATTENTION_MAPS[attention]
    owner = f" of {where}" if where else ""
    listed = ", ".join(repr(k) for k in ATTENTION_MAPS)
    raise ProblemError(
        f"The 'attention' parameter{owner} must be one of {listed}. Got {attention!r} instead."
    )
