# SPDX-License-Identifier: BSD-3-Clause
r"""Reference kernels, written once for any array namespace ``xp`` (numpy or cupy).

Everything is vectorized over a batch of B instances (see :mod:`svmgeo.gd._problem`).

**Gradient, stable form.** For query :math:`(i, k)` with softmax :math:`s` over the visible
keys, :math:`r = U_i^\top s` (the head features, ``values``; :math:`U = X` by default),
:math:`u = \nabla h(r)` and dynamic scores :math:`\tilde\gamma_t = u_{it}^\top u`
(:math:`\tilde\gamma_t = Y_{ik}\gamma_{ikt}` for given scores), the risk gradient is

.. math::

    \nabla L(W) = \frac1n \sum_{i,k} \ell'(Y_{ik} f_{ik})\, Y_{ik}
        \sum_{t \ne m} s_t\, e_t\, (x_{it} - x_{im})\, z_{ik}^\top,
    \qquad e_t = (\tilde\gamma_t - \tilde\gamma_m) - \sum_\tau s_\tau (\tilde\gamma_\tau - \tilde\gamma_m),

with :math:`m` the most probable key. It equals the textbook
:math:`X_i^\top(\mathrm{diag}\, s - s s^\top) U_i u\, z^\top` because :math:`\sum_t s_t e_t = 0`,
but never subtracts two nearly equal numbers once the softmax saturates.

**Log domain.** With :math:`t_2` the most probable key other than :math:`m`, each query's
weights are :math:`|\ell'|\, s_{t_2} \cdot (s_t / s_{t_2})\, e_t`, where
:math:`L_q = \log|\ell'| + \log s_{t_2}` is kept as a logarithm (log-softmax) and
:math:`s_t / s_{t_2} = e^{a_t - a_{t_2}}` comes from the logits. Factoring out
:math:`M = \max_q (L_q + \log\max_t |s_t e_t / s_{t_2}|)`, the kernels return :math:`(G, M)`
with :math:`\nabla L = e^M G` and :math:`G` of order one: the direction survives long after
:math:`\nabla L` underflows. With ``log_domain=False`` the same weights are formed at their
true scale (``M = 0``), which underflows as the textbook formula does.

**Other attention maps** (``Problem.att_id``, see :mod:`svmgeo.attention_maps`): the weights
:math:`a = \varphi(u)`, :math:`u = X_i W z_{ik}` (0 on keys the query does not see), give
:math:`r = U_i^\top a` and

.. math::

    \nabla L(W) = \frac1n \sum_{i,k} \ell'(Y_{ik} f_{ik})\, Y_{ik}\, X_i^\top
        J_\varphi(u)^\top \tilde\gamma\, z_{ik}^\top,

where :math:`J_\varphi^\top\tilde\gamma` is :math:`\varphi'(u_t)\tilde\gamma_t` for the
entrywise maps (linear: :math:`\varphi' = 1`; sigmoid: :math:`\sigma(1-\sigma)`, kept as
its logarithm :math:`-\mathrm{softplus}(u) - \mathrm{softplus}(-u)`; ReLU:
:math:`1[u > 0]`) and :math:`(\tilde\gamma_t - a^\top\tilde\gamma)/\mathbf 1^\top u` for
normalized linear attention. In the log domain each weight is
:math:`\mathrm{sign}\cdot e^{\log|\ell'| + \log\varphi'_t}\,|c_t|` and the largest
:math:`\log|\ell'| + \log\varphi'_t + \log|c_t|` is factored out as :math:`M`, as above.
(svmgeo's derivation, checked by central finite differences in tests/gd/test_attention_maps.py.)
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np

from ..attention_maps import (
    ATTENTION_MAPS,
    UNCHECKED_PHI,
    logit_sum_bound,
    refuse_undetermined_sums,
    visible_sum,
)
from ..losses import LossSpec
from ._problem import (
    EXPONENTIAL_LOSS,
    LINEAR_ATT,
    LOGISTIC_LOSS,
    LOSS_IDS,
    NORM_LIMIT,
    NORMALIZED_ATT,
    RELU_ATT,
    RELU_HEAD,
    SCORES_HEAD,
    SIGMOID_ATT,
    SOFTMAX_ATT,
    Problem,
)

_MAP_NAMES = tuple(ATTENTION_MAPS)  # by id: the order of the table

__all__ = [
    "UNDERFLOW",
    "check_normalized_sums",
    "combine",
    "dloss_parts",
    "forward",
    "frobenius",
    "grad_head",
    "grad_w",
    "log_abs_dloss",
    "loss_key",
    "loss_value",
    "map_logits",
    "mean_loss",
    "observe",
    "step",
    "with_head",
    "within_limit",
]

# Below this gradient norm float64 loses bits to denormals: plain steps stop here.
UNDERFLOW = float(np.finfo(np.float64).tiny) * 2.0**52
# Below this exponent exp() underflows to zero in float64 (exp(-745) is the last denormal).
LOG_EXP_MIN = -745.0
LOG_EXP_MAX = 709.0
"""exp() overflows float64 above this argument. E.g. a direction's factor e^{M-c} is kept
below it (:func:`combine`: a gradient whose norm is below e^-709 of its scale e^M, as one of
``log_domain=False`` in float64's denormal range, is then of small order, not infinite)."""


def _quiet(xp: Any) -> contextlib.AbstractContextManager[Any]:
    return (
        np.errstate(divide="ignore", invalid="ignore", over="ignore")
        if xp is np
        else contextlib.nullcontext()
    )


#: What the kernels take for a loss: the integer id of a built-in (:data:`LOSS_IDS`), or a
#: user's :class:`~svmgeo.losses.LossSpec` (its callables applied to arrays of ``xp``).
LossKey = int | LossSpec


def loss_key(loss: str | LossSpec) -> LossKey:
    """The kernels' key of a configuration's loss: a built-in's id, else the LossSpec."""
    return LOSS_IDS[loss] if isinstance(loss, str) else loss


def loss_value(u: Any, loss_id: LossKey, xp: Any) -> Any:
    r""":math:`\ell(u)`: logistic :math:`\log(1+e^{-u})` (stable), :math:`e^{-u}`, :math:`-u`,
    or a user loss's ``value``."""
    if isinstance(loss_id, LossSpec):
        return loss_id.value(u)
    if loss_id == LOGISTIC_LOSS:
        return xp.logaddexp(0.0, -u)
    if loss_id == EXPONENTIAL_LOSS:
        return xp.exp(-u)
    return -u


def mean_loss(values: Any, n: int, xp: Any) -> Any:
    r"""The risk :math:`\frac1n\sum_j \ell_j` of each row of ``values`` (shape (B, N), the
    N = nK per-query losses of an instance) over n sequences: the sum, then the division, on
    every row whose result is finite (bit for bit that), and otherwise:

    * where the sum overflows, or reads NaN (a pairwise sum's partial sums overflowing to
      :math:`+\infty` and :math:`-\infty`: N = 16 with M at 0 and 8, -M at 1 and 9, M =
      float64's largest), while its terms are finite, :math:`\sum_j (\ell_j / n)`, and where
      that is not finite either (n small beside N, terms of both signs near float64's
      largest: :math:`[M, M, -M]` with n = 1), :math:`2^k\sum_j (2^{-k}\ell_j) / n`,
      :math:`2^k \ge N` (exact scalings; no partial sum of the scaled terms, in any order,
      exceeds M): finite when the mean is;
    * where the sum reads NaN while no term is NaN and the infinite terms share one sign,
      that infinity: finite terms overflowing to the other one met it (:math:`[M, M,
      -\infty]`, a user loss's :math:`-\infty`, has mean :math:`-\infty`); terms
      :math:`+\infty` and :math:`-\infty` together stay NaN (no mean).

    Callers silence floating-point warnings."""
    total = xp.sum(values, axis=1) / n
    if bool(xp.all(xp.isfinite(total))):  # every row of a finite risk: the plain mean
        return total
    finite = xp.all(xp.isfinite(values), axis=1)
    over = ~xp.isfinite(total) & finite
    if bool(xp.any(over)):
        total = xp.where(over, xp.sum(values / n, axis=1), total)
        still = over & ~xp.isfinite(total)
        if bool(xp.any(still)):
            scale = 2.0 ** -math.ceil(math.log2(values.shape[1]))
            total = xp.where(still, xp.sum(values * scale, axis=1) / n / scale, total)
    lost = xp.isnan(total) & ~xp.any(xp.isnan(values), axis=1)
    if bool(xp.any(lost)):
        up, down = xp.any(values == xp.inf, axis=1), xp.any(values == -xp.inf, axis=1)
        total = xp.where(lost & (up != down), xp.where(up, xp.inf, -xp.inf), total)
    return total


def _log_loss_difference(u: Any, w: Any, loss_id: LossKey, xp: Any) -> tuple[Any, Any]:
    r"""(:math:`\log|\ell(u) - \ell(w)|`, its sign). Where the difference overflows (the
    exponential loss at margins below about -709), the exponential loss's from its exponents,
    :math:`\max(-u, -w) + \log(1 - e^{-|u - w|})`; other losses' are NaN there (unknown).
    Callers silence floating-point warnings (:func:`_quiet`)."""
    direct = loss_value(u, loss_id, xp) - loss_value(w, loss_id, xp)
    log_abs, sign = xp.log(xp.abs(direct)), xp.sign(direct)
    if isinstance(loss_id, LossSpec) or loss_id != EXPONENTIAL_LOSS:
        return log_abs, sign
    over = ~xp.isfinite(direct)
    exponents = xp.maximum(-u, -w) + xp.log(-xp.expm1(-xp.abs(u - w)))
    return xp.where(over, exponents, log_abs), xp.where(over, xp.sign(w - u), sign)


def log_abs_dloss(u: Any, loss_id: LossKey, xp: Any) -> Any:
    r""":math:`\log|\ell'(u)|` (every built-in has :math:`\ell' < 0`)."""
    if isinstance(loss_id, LossSpec):
        return dloss_parts(u, loss_id, xp)[0]
    if loss_id == LOGISTIC_LOSS:
        return -xp.logaddexp(0.0, u)
    if loss_id == EXPONENTIAL_LOSS:
        return -u
    return xp.zeros_like(u)


def dloss_parts(u: Any, loss_id: LossKey, xp: Any) -> tuple[Any, Any]:
    r"""``(log|l'(u)|, flip)`` with :math:`\ell'(u) = -\mathrm{flip}\cdot e^{\log|\ell'|}`.

    ``flip`` is the float 1.0 for the built-ins (every weight ``-Y * flip * ...`` is then
    bit for bit the built-in's) and for user losses with ``log_abs_d1`` (:math:`\ell' < 0`
    assumed); else :math:`-\mathrm{sign}\,\ell'(u)` from the user's ``d1``, so losses with
    :math:`\ell' \ge 0` somewhere (the square loss) train too.
    """
    if not isinstance(loss_id, LossSpec):
        return log_abs_dloss(u, loss_id, xp), 1.0
    if loss_id.log_abs_d1 is not None:
        return loss_id.log_abs_d1(u), 1.0
    g = loss_id.d1(u)
    with _quiet(xp):
        return xp.log(xp.abs(g)), -xp.sign(g)


def _take(arr: Any, idx: Any, xp: Any) -> Any:
    """``arr[b, i, k, idx[b, i, k]]`` for arr (B, n, K, T) and idx (B, n, K)."""
    return xp.take_along_axis(arr, idx[..., None], axis=-1)[..., 0]


def _head(r: Any, P: Problem, xp: Any, a: dict[str, Any]) -> tuple[Any, Any]:
    """Head value f and gradient u at r (B, n, K, d)."""
    if P.head_id == RELU_HEAD:  # relu: f = w . relu(V^T r), u = V (w * [V^T r > 0])
        pre = xp.einsum("bnkd,bdp->bnkp", r, a["hV"])
        w = a["hw"][:, None, None, :]
        f = xp.sum(w * xp.maximum(pre, 0.0), axis=-1)
        u = xp.einsum("bdp,bnkp->bnkd", a["hV"], w * (pre > 0.0))
        return f, u
    v = a["hv"][:, None, None, :]
    lam = a["lam"][:, None, None]
    f = xp.sum(r * v, axis=-1) - lam * xp.sum(r * r, axis=-1)
    u = v - 2.0 * lam[..., None] * r
    return f, xp.broadcast_to(u, r.shape)


def arrays(P: Problem, xp: Any) -> dict[str, Any]:
    """The problem's arrays on the namespace's device (``U`` is ``X`` when they coincide)."""
    out = {
        name: xp.asarray(getattr(P, name))
        for name in ("X", "Z", "Y", "vis", "hv", "hV", "hw", "lam", "C")
    }
    out["U"] = out["X"] if P.U is P.X else xp.asarray(P.U)
    return out


def _dynamic_scores(fw_u: Any, P: Problem, a: dict[str, Any], xp: Any) -> Any:
    r""":math:`\tilde\gamma_t = u_t^\top \nabla h` (B, n, K, T) for head gradients ``fw_u``
    (B, n, K, d_u); the given :math:`C = Y\gamma` for the scores head."""
    if P.head_id == SCORES_HEAD:
        return a["C"]
    return xp.einsum("bntd,bnkd->bnkt", a["U"], fw_u)


def _readout(s: Any, P: Problem, a: dict[str, Any], xp: Any) -> tuple[Any, Any, Any, Any]:
    """Head input r = U^T s, head value f, its gradient u and the dynamic scores, from the
    attention weights ``s`` (B, n, K, T)."""
    r = xp.einsum("bnkt,bntd->bnkd", s, a["U"])
    if P.head_id == SCORES_HEAD:
        f, u = xp.sum(s * a["C"], axis=-1), r
    else:
        f, u = _head(r, P, xp, a)
    return r, f, u, _dynamic_scores(u, P, a, xp)


def forward(W: Any, P: Problem, a: dict[str, Any], xp: Any) -> dict[str, Any]:
    """Logits, log-softmax, most probable key, head value and gradient for each query
    (other attention maps: see :func:`_forward_map`)."""
    if P.att_id != SOFTMAX_ATT:
        return _forward_map(W, P, a, xp)
    X, vis = a["X"], a["vis"]
    wz = xp.einsum("bde,bnke->bnkd", W, a["Z"])
    logits = xp.where(vis, xp.einsum("bntd,bnkd->bnkt", X, wz), -xp.inf)
    m = xp.argmax(logits, axis=-1)
    top = _take(logits, m, xp)[..., None]
    with _quiet(xp):
        ls = logits - top - xp.log(xp.sum(xp.exp(logits - top), axis=-1, keepdims=True))
    s = xp.exp(ls)
    r, f, u, gt = _readout(s, P, a, xp)
    return {"ls": ls, "s": s, "m": m, "r": r, "f": f, "u": u, "gt": gt}


def map_logits(W: Any, a: dict[str, Any], xp: Any) -> Any:
    r"""The logits :math:`x_t^\top (W z)` (B, n, K, T) of a map other than softmax, 0 on
    hidden keys."""
    wz = xp.einsum("bde,bnke->bnkd", W, a["Z"])
    return xp.where(a["vis"], xp.einsum("bntd,bnkd->bnkt", a["X"], wz), 0.0)


def check_normalized_sums(W: Any, logits: Any, a: dict[str, Any], xp: Any, fix: str = "") -> None:
    r"""ProblemError where a query's :math:`\mathbf 1^\top u` (of :func:`map_logits` at W) is
    0 or within its rounding error bound of 0, or where it or its bound overflows
    (:func:`svmgeo.attention_maps.refuse_undetermined_sums`; a NaN sum, of logits that
    overflowed, passes: the OVERFLOW stop)."""
    vis = a["vis"]
    with _quiet(xp):  # an overflow of the sum or of the bound's products: said by the refusal
        S = visible_sum(logits, vis)[..., 0]
        bound = logit_sum_bound(a["X"], W[:, None], a["Z"], vis, xp)
    refuse_undetermined_sums(S, bound, ("instance", "sequence", "query"), fix)


def _forward_map(W: Any, P: Problem, a: dict[str, Any], xp: Any) -> dict[str, Any]:
    """:func:`forward` for a map other than softmax: logits ``logits`` (0 on hidden keys),
    weights ``s`` = phi(logits), largest logit ``m``, head value and gradient."""
    vis = a["vis"]
    logits = map_logits(W, a, xp)
    if P.att_id == NORMALIZED_ATT:
        check_normalized_sums(W, logits, a, xp)
    with _quiet(xp):  # an overflow (unnormalized weights of huge logits) is the OVERFLOW stop
        s = UNCHECKED_PHI[_MAP_NAMES[P.att_id]](logits, vis)
        r, f, u, gt = _readout(s, P, a, xp)
    m = xp.argmax(xp.where(vis, logits, -xp.inf), axis=-1)
    return {"logits": logits, "s": s, "m": m, "r": r, "f": f, "u": u, "gt": gt}


def _softplus(x: Any, xp: Any) -> Any:
    return xp.logaddexp(0.0, x)


def _map_weights(fw: dict[str, Any], P: Problem, vis: Any, xp: Any) -> tuple[Any, Any]:
    r"""Per key, :math:`\log\varphi'_t` and the coefficient :math:`c_t` with
    :math:`J_\varphi^\top\tilde\gamma = e^{\log\varphi'} c` (``-inf`` / 0 on hidden keys)."""
    u, gt = fw["logits"], fw["gt"]
    gt = xp.where(vis, gt, 0.0)
    if P.att_id == LINEAR_ATT:
        return xp.where(vis, 0.0, -xp.inf), gt
    if P.att_id == SIGMOID_ATT:
        with _quiet(xp):  # NaN logits (an overflow in X W z): the OVERFLOW stop
            return xp.where(vis, -_softplus(u, xp) - _softplus(-u, xp), -xp.inf), gt
    if P.att_id == RELU_ATT:
        return xp.where(vis & (u > 0.0), 0.0, -xp.inf), gt
    assert P.att_id == NORMALIZED_ATT  # internal invariant: the ids of ATTENTION_IDS
    S = xp.sum(u, axis=-1, keepdims=True)
    mean = xp.sum(fw["s"] * gt, axis=-1, keepdims=True)
    with _quiet(xp):
        logd = xp.where(vis, -xp.log(xp.abs(S)), -xp.inf)
    return logd, xp.where(vis, (gt - mean) * xp.sign(S), 0.0)


def _grad_map(
    P: Problem, a: dict[str, Any], fw: dict[str, Any], loss_id: LossKey, log_domain: bool, xp: Any
) -> tuple[Any, Any]:
    """:func:`grad_w` for a map other than softmax (see the module docstring)."""
    X, Y, vis = a["X"], a["Y"], a["vis"]
    B = X.shape[0]
    logd, c = _map_weights(fw, P, vis, xp)
    with _quiet(xp):
        lad, flip = dloss_parts(Y * fw["f"], loss_id, xp)
        L = lad[..., None] + logd
        cand = xp.where((c != 0.0) & xp.isfinite(L), L + xp.log(xp.abs(c)), -xp.inf)
        M = xp.max(cand.reshape(B, -1), axis=1)
        ok = xp.isfinite(M)
        shift = xp.where(ok, M, 0.0) if log_domain else xp.zeros(B)
        scale = xp.where(xp.isfinite(L), xp.exp(L - shift[:, None, None, None]), 0.0)
    w = (-Y * flip)[..., None] * scale * c
    g = xp.einsum("bnkt,bntd->bnkd", w, X)
    G = xp.einsum("bnkd,bnke->bde", g, a["Z"]) / X.shape[1]
    return G, xp.where(ok, M if log_domain else 0.0, -xp.inf)


def _x_m(X: Any, m: Any, xp: Any) -> Any:
    """``X[b, i, m[b, i, k]]`` of shape (B, n, K, d)."""
    return xp.take_along_axis(X, m[..., None], axis=2)


def with_head(a: dict[str, Any], head: Any) -> dict[str, Any]:
    """The arrays ``a`` with the linear / concave head ``v`` read from ``head`` (B, 1, d_u),
    the trained head of the state."""
    return {**a, "hv": head[:, 0, :]}


def grad_w(
    W: Any,
    P: Problem,
    a: dict[str, Any],
    loss_id: LossKey,
    log_domain: bool,
    xp: Any,
    fw: dict[str, Any] | None = None,
) -> tuple[Any, Any]:
    r"""Risk gradient at W (B, d, d_z) as ``(G, M)`` with :math:`\nabla L = e^M G`.

    With ``log_domain=False`` the weights are formed directly and ``M = 0``. ``M = -inf``
    (with ``G = 0``) means the gradient is exactly zero, in both modes. ``fw`` is
    :func:`forward` at W when already computed.
    """
    fw = forward(W, P, a, xp) if fw is None else fw
    if P.att_id != SOFTMAX_ATT:
        return _grad_map(P, a, fw, loss_id, log_domain, xp)
    X, Y, vis = a["X"], a["Y"], a["vis"]
    s, ls, m, gt = fw["s"], fw["ls"], fw["m"], fw["gt"]
    delta = gt - _take(gt, m, xp)[..., None]
    e = delta - xp.sum(s * delta, axis=-1, keepdims=True)
    yf = Y * fw["f"]
    T = X.shape[2]
    B = X.shape[0]
    keep = vis & (xp.arange(T)[None, None, None, :] != m[..., None])
    with _quiet(xp):
        # per query: L_q = log|l'| + log s_t2 (t2 the most probable other key), and the
        # weights rel_t e_t with rel_t = s_t / s_t2 formed from logits (no underflow)
        ls_o = xp.where(keep, ls, -xp.inf)
        ls2 = xp.max(ls_o, axis=-1)
        has = xp.isfinite(ls2)
        rel = xp.where(keep, xp.exp(ls_o - xp.where(has, ls2, 0.0)[..., None]), 0.0)
        wq = rel * e
        lad, flip = dloss_parts(yf, loss_id, xp)
        Lq = xp.where(has, lad + ls2, -xp.inf)
        big = xp.max(xp.abs(wq), axis=-1)
        cand = xp.where(big > 0.0, Lq + xp.log(big), -xp.inf)
        M = xp.max(cand.reshape(B, -1), axis=1)
        ok = xp.isfinite(M)
        shift = xp.where(ok, M, 0.0) if log_domain else xp.zeros(B)
        scale = xp.where(has, -Y * flip * xp.exp(Lq - shift[:, None, None]), 0.0)
        w = scale[..., None] * wq  # inf * 0 = NaN past float64's range: the loop reports it
    M = xp.where(ok, M if log_domain else 0.0, -xp.inf)  # -inf: the direction is exactly 0
    diff = X[:, :, None, :, :] - _x_m(X, m, xp)[:, :, :, None, :]
    g = xp.einsum("bnkt,bnktd->bnkd", w, diff)
    G = xp.einsum("bnkd,bnke->bde", g, a["Z"]) / X.shape[1]
    return G, M


def grad_head(
    fw: dict[str, Any], P: Problem, a: dict[str, Any], loss_id: LossKey, log_domain: bool, xp: Any
) -> tuple[Any, Any]:
    r"""Gradient of the risk in the linear head :math:`v` as ``(G_v, M_v)``, ``G_v`` of shape
    (B, 1, d_u), from :func:`forward` ``fw``:

    .. math::

        \nabla_v L = \frac1n \sum_{i,k} \ell'(Y_{ik} f_{ik})\, Y_{ik}\, U_i^\top s_{ik}
        = e^{M_v} G_v,\qquad M_v = \max_{i,k} \log|\ell'(Y_{ik} f_{ik})|,

    so the direction survives when every :math:`\ell'` underflows (``M_v = 0`` with
    ``log_domain=False``; ``-inf`` when the gradient is exactly zero).
    """
    Y = a["Y"]
    B, n = Y.shape[0], Y.shape[1]
    with _quiet(xp):
        lq, flip = dloss_parts(Y * fw["f"], loss_id, xp)
        top = xp.max(lq.reshape(B, -1), axis=1)
        top = xp.where(xp.isfinite(top), top, 0.0)  # every l' = 0 (user losses): G_v = 0
        shift = top if log_domain else xp.zeros(B)
        wq = -Y * flip * xp.exp(lq - shift[:, None, None])
    Gv = xp.einsum("bnk,bnkd->bd", wq, fw["r"])[:, None, :] / n
    nonzero = xp.any(Gv != 0.0, axis=(1, 2))
    return Gv, xp.where(nonzero, shift, -xp.inf)


def frobenius(A: Any, xp: Any) -> Any:
    """Frobenius norm per instance, scaled first so tiny entries do not underflow when squared."""
    top = xp.max(xp.abs(A), axis=(1, 2))
    safe = xp.where(top > 0.0, top, 1.0)
    with _quiet(xp):  # inf / inf = NaN for infinite entries (within_limit: False)
        return top * xp.sqrt(xp.sum((A / safe[:, None, None]) ** 2, axis=(1, 2)))


def within_limit(params: list[Any], is_kq: bool, max_norm: Any, xp: Any) -> Any:
    r"""Per instance, are the parameters representable: :math:`\|W\|_F \le` ``max_norm``
    (for ``(K, Q)``: :math:`\|K\|_F \|Q\|_F \le` ``max_norm`` and each factor's norm at most
    ``NORM_LIMIT``)? False for infinite entries."""
    norms = [frobenius(P, xp) for P in params]
    with _quiet(xp):
        if not is_kq:
            return norms[0] <= max_norm
        ok = (norms[0] <= NORM_LIMIT) & (norms[1] <= NORM_LIMIT)
        return ok & (norms[0] * norms[1] <= max_norm)


def combine(M: Any, A: Any, rho: float, P: Any, xp: Any) -> tuple[Any, Any]:
    r"""Scaled direction of :math:`e^M A + \rho P`: returns ``(D, c)`` with the sum equal to
    :math:`e^c D` and :math:`\|D\|` of order one; ``c = -inf`` when both terms vanish."""
    with _quiet(xp):
        nA = frobenius(A, xp)
        la = xp.where(nA > 0.0, M + xp.log(nA), -xp.inf)
        if rho > 0.0:
            nP = frobenius(P, xp)
            lb = xp.where(nP > 0.0, math.log(rho) + xp.log(nP), -xp.inf)
        else:
            lb = xp.full_like(la, -xp.inf)
        c = xp.maximum(la, lb)
        c = xp.where(nA > 0.0, xp.maximum(c, M - LOG_EXP_MAX), c)  # e^{M-c} stays finite
        fin = xp.isfinite(c)
        csafe = xp.where(fin, c, 0.0)
        fa = xp.where(fin & (nA > 0.0), xp.exp(xp.where(nA > 0.0, M, 0.0) - csafe), 0.0)
        fb = xp.where(fin & xp.isfinite(lb), rho * xp.exp(-csafe), 0.0)
        D = fa[:, None, None] * A + fb[:, None, None] * P  # NaN where A overflowed: quiet
    return D, c


def _log_norm(D: Any, c: Any, xp: Any) -> Any:
    with _quiet(xp):
        return c + xp.log(frobenius(D, xp))


def factor_grads(
    P1: Any,
    P2: Any,
    G: Any,
    M: Any,
    is_kq: bool,
    rho: float,
    xp: Any,
    head: tuple[Any, Any, Any] | None = None,
) -> list[tuple[Any, Any]]:
    """Scaled gradients ``(D, c)`` of each trained block: W (or p), or K and Q; then the head
    v when ``head = (v, G_v, M_v)`` is given (``train_head``)."""
    if not is_kq:
        out = [combine(M, G, rho, P1, xp)]
    else:
        GQ = xp.einsum("bde,bem->bdm", G, P2)
        GtK = xp.einsum("bed,bem->bdm", G, P1)
        out = [combine(M, GQ, rho, P1, xp), combine(M, GtK, rho, P2, xp)]
    if head is not None:
        v, Gv, Mv = head
        out.append(combine(Mv, Gv, rho, v, xp))
    return out


def param_log_grad_norm(grads: list[tuple[Any, Any]], xp: Any) -> Any:
    r""":math:`\log \|\nabla_\theta\|` over all trained factors (``-inf`` when zero)."""
    logs = xp.stack([2.0 * _log_norm(D, c, xp) for D, c in grads])
    top = xp.max(logs, axis=0)
    safe = xp.where(xp.isfinite(top), top, 0.0)
    with _quiet(xp):
        return xp.where(
            xp.isfinite(top), 0.5 * (safe + xp.log(xp.sum(xp.exp(logs - safe), axis=0))), -xp.inf
        )


def step(
    P1: Any,
    P2: Any,
    G: Any,
    M: Any,
    *,
    is_kq: bool,
    normalized: bool,
    log_domain: bool,
    eta: float,
    rho: float,
    log_tol: float,
    max_norm: Any,
    xp: Any,
    head: tuple[Any, Any, Any] | None = None,
    eps: tuple[float, float, float] = (0.0, 0.0, 0.0),
) -> tuple[Any, Any, Any, Any]:
    r"""One step for every instance; returns new ``(P1, P2, v, code)`` (code 0: step taken).

    ``head = (v, G_v, M_v)`` trains the linear head too (its new value is returned; None
    otherwise). Normalized steps move each block by :math:`\eta\, g / (\|g\| + \varepsilon)`
    with ``eps`` :math:`= \varepsilon` of the block (0: exactly normalized; ``eps`` holds
    those of the first attention factor, the second, the head); in the log domain this is
    :math:`(D/\|D\|) / (1 + \varepsilon/\|g\|)` with :math:`\log\|g\| = c + \log\|D\|`,
    so a tiny gradient gives a tiny step, never an overflow. Instances whose code is
    non-zero keep their parameters. Codes are those of
    :data:`svmgeo.gd._config.STATUS_CODES` (8, ``OVERFLOW``, also where a block of the
    gradient is not finite; 4, ``CONVERGED``, never for ``log_tol = -inf``); ``max_norm`` (B,)
    is :attr:`~svmgeo.gd._problem.Problem.max_norm`.
    """
    grads = factor_grads(P1, P2, G, M, is_kq, rho, xp, head)
    glog = param_log_grad_norm(grads, xp)
    B = P1.shape[0]
    code = xp.zeros(B, dtype=xp.int64)
    new = []
    block_eps = [eps[0]] + ([eps[1]] if is_kq else []) + ([eps[2]] if head is not None else [])
    # a block of the gradient overflowed (inf or NaN): its scale is NaN or +inf, or its D is
    # not finite at a scale M > -inf (M = -inf is an exactly zero block, whatever G holds)
    nonfinite = xp.zeros(B, dtype=bool)
    block_M = [M] * (2 if is_kq else 1) + ([head[2]] if head is not None else [])
    for (D, c), eps_b, Mb in zip(grads, block_eps, block_M, strict=True):
        with _quiet(xp):
            nD = frobenius(D, xp)
            nonfinite = nonfinite | (~xp.isfinite(nD) & (Mb > -xp.inf)) | ~(c < xp.inf)
            if normalized and log_domain:
                move = nD > 0.0
                Dn = D / xp.where(move, nD, 1.0)[:, None, None]
                if eps_b > 0.0:  # times 1 / (1 + eps / ||g||), ||g|| = e^c ||D||
                    damp = 1.0 / (1.0 + xp.exp(math.log(eps_b) - c - xp.log(nD)))
                    move = move & (damp > 0.0)  # eps / ||g|| overflowed: a zero step
                    Dn = Dn * damp[:, None, None]
            elif normalized:
                gn = xp.exp(c) * nD
                move = gn >= UNDERFLOW
                Dn = (xp.exp(xp.where(move, c, 0.0))[:, None, None] * D) / xp.where(
                    move, gn + eps_b, 1.0
                )[:, None, None]
            else:
                move = xp.exp(glog) >= UNDERFLOW
                Dn = xp.exp(xp.where(xp.isfinite(c), c, 0.0))[:, None, None] * D
        new.append((move, Dn))
    P = ([P1, P2] if is_kq else [P1]) + ([head[0]] if head is not None else [])
    out = []
    any_move = xp.zeros(B, dtype=bool)
    for (move, Dn), Pf in zip(new, P, strict=True):
        any_move = any_move | move
        out.append(xp.where(move[:, None, None], Pf - eta * Dn, Pf))
    # no factor moves: stationary when the gradient is exactly zero (M = -inf, or an order-one
    # G of the log domain that is zero in float64), else an underflow (the direct formula's
    # G == 0 at a finite scale M may be one)
    if log_domain:
        underflowed_G = xp.zeros(B, dtype=bool)
    else:
        underflowed_G = (frobenius(G, xp) == 0.0) & xp.isfinite(M)
    exact = ~xp.isfinite(glog) & ~underflowed_G
    code = xp.where(~any_move, xp.where(exact, 3, 2), code)
    if log_tol > -math.inf:  # grad_tol = 0 never converges (glog is -inf only when not finite)
        code = xp.where((code == 0) & (glog <= log_tol), 4, code)
    nan = xp.zeros(B, dtype=bool)
    for Pn in out:
        nan = nan | xp.any(xp.isnan(Pn), axis=(1, 2))
    code = xp.where((code == 0) & nan, 7, code)
    ok = within_limit(out[: 2 if is_kq else 1], is_kq, max_norm, xp)
    if head is not None:
        ok = ok & (frobenius(out[-1], xp) <= NORM_LIMIT)
    code = xp.where((code == 0) & ~ok, 8, code)
    # a gradient that is not finite (it overflowed, beyond the data's range): not taken
    code = xp.where(nonfinite, 8, code)
    go = (code == 0)[:, None, None]
    P1n = xp.where(go, out[0], P1)
    P2n = xp.where(go, out[1], P2) if is_kq else P2
    vn = xp.where(go, out[-1], head[0]) if head is not None else None
    return P1n, P2n, vn, code


def observe(W: Any, P: Problem, a: dict[str, Any], loss_id: LossKey, xp: Any) -> dict[str, Any]:
    r"""Loss, its log gap to the hard selection, softmax probabilities and selected keys.

    ``log_loss_gap`` is :math:`\log(L(W) - L_{\mathrm{sel}}(W))` with
    :math:`L_{\mathrm{sel}} = \frac1n \sum_{i,k} \ell(Y_{ik} h(x_{i m_{ik}}))` the loss of
    selecting each query's most probable key. Once the off-argmax probabilities are below
    1e-8 it uses the first-order expansion
    :math:`\ell'(Y h_m) Y \sum_{t\ne m} s_t \nabla h(x_m)^\top (x_t - x_m)` in the log
    domain, so it stays informative after :math:`L - L_{\mathrm{sel}}` is below float64
    resolution. NaN when the gap is negative: whenever some query's most probable key is not its
    best-scoring one (at W = 0, where ties pick key 0, too), for any head.

    For attention maps other than softmax there is no hard selection: ``log_loss_gap`` is
    NaN, ``probs`` are the weights :math:`\varphi(u)`, ``max_prob`` their largest value and
    ``selected`` the key of the largest logit.
    """
    X, Y, vis = a["X"], a["Y"], a["vis"]
    fw = forward(W, P, a, xp)
    if P.att_id != SOFTMAX_ATT:
        B, n = X.shape[0], X.shape[1]
        with _quiet(xp):
            loss = mean_loss(loss_value(Y * fw["f"], loss_id, xp).reshape(B, -1), n, xp)
        return {
            "loss": loss,
            "log_loss_gap": xp.full(B, xp.nan),
            "probs": fw["s"],
            "max_prob": xp.max(xp.where(vis, fw["s"], -xp.inf), axis=-1),
            "selected": fw["m"],
        }
    ls, m, f = fw["ls"], fw["m"], fw["f"]
    if P.head_id == SCORES_HEAD:  # h at the selected token, and the scores relative to it
        fm = _take(a["C"], m, xp)
        dprime = a["C"] - fm[..., None]
    else:
        um_tok = _x_m(a["U"], m, xp)
        fm, um = _head(um_tok, P, xp, a)
        dprime = _dynamic_scores(um, P, a, xp) - xp.sum(um_tok * um, axis=-1)[..., None]
    T = X.shape[2]
    n = X.shape[1]
    B = X.shape[0]
    other = vis & (xp.arange(T)[None, None, None, :] != m[..., None])
    with _quiet(xp):
        ls_o = xp.where(other, ls, -xp.inf)
        lmax = xp.max(ls_o, axis=-1)
        lsafe = xp.where(xp.isfinite(lmax), lmax, 0.0)
        q = xp.sum(xp.exp(ls_o - lsafe[..., None]) * dprime, axis=-1)
        q = xp.where(xp.isfinite(lmax), q, 0.0)
        lad, flip = dloss_parts(Y * fm, loss_id, xp)
        first_log = lad + lsafe + xp.log(xp.abs(q))
        first_sign = -Y * flip * xp.sign(q)
        direct_log, direct_sign = _log_loss_difference(Y * f, Y * fm, loss_id, xp)
        small = lmax < math.log(1e-8)
        lg = xp.where(small, first_log, direct_log)
        sg = xp.where(small, first_sign, direct_sign)
        lg = xp.where(sg == 0.0, -xp.inf, lg).reshape(B, -1)
        sg = sg.reshape(B, -1)
        top = xp.max(lg, axis=1)
        tsafe = xp.where(xp.isfinite(top), top, 0.0)
        tot = xp.sum(sg * xp.exp(lg - tsafe[:, None]), axis=1)
        gap = xp.where(tot > 0.0, tsafe + xp.log(xp.abs(tot)) - math.log(n), xp.nan)
        # every term exactly 0: L = L_sel; an overflowed term (a user loss's): unknown
        gap = xp.where(xp.isfinite(top), gap, xp.where(top == -xp.inf, -xp.inf, xp.nan))
        loss = mean_loss(loss_value(Y * f, loss_id, xp).reshape(B, -1), n, xp)
    return {
        "loss": loss,
        "log_loss_gap": gap,
        "probs": fw["s"],
        "max_prob": xp.exp(_take(ls, m, xp)),
        "selected": m,
    }
