# SPDX-License-Identifier: BSD-3-Clause
r"""Batched small instances, :data:`LANES` at a time: the kernels of :mod:`svmgeo.gd._numba`
with the instance index innermost.

:func:`advance_lanes` runs the softmax kernel (:func:`svmgeo.gd._numba.advance` with the
small-instance branch of ``_grad_one`` and ``_step`` for ``param="W"``, a linear head and a
built-in loss) on groups of :data:`LANES` instances, every array laid out with the instance
last (X as (n, T, d, L), W as (d, d, L), built once per problem by :func:`lane_layout`), so
that each arithmetic operation of the scalar kernel becomes one operation on a vector of
:data:`LANES` float64 lanes (``vmulpd`` / ``vaddpd`` on zmm registers where the CPU has AVX-512). Each lane performs
exactly the operations of the scalar kernel, in the same order, on its own instance: IEEE
arithmetic on a vector is the same correctly rounded arithmetic per lane, numba compiles
without fastmath (no reassociation, no FMA contraction), branches become selects of the same
values, ``log`` / ``log1p`` / ``sqrt`` are the same scalar libm calls per lane, and ``exp`` is
the scalar kernel's :func:`svmgeo.gd._exp.exp`, on every lane at once.
So the trajectories are those of the scalar kernel bit for bit.

numba ships with LLVM's SLP vectorizer off, and its loop vectorizer does not see loops over a
compile-time lane count (they are unrolled first), so the lanes are explicit: :class:`Lanes`
is an LLVM ``<L x double>`` value and :class:`LaneMask` an ``<L x i1>`` one, with the few
operations the kernel needs as intrinsics (``+ - * /``, comparisons, ``&``, ``|``, ``~``,
:func:`where`, loads and stores of L consecutive float64). A lane whose instance stopped (its
status code non-zero) or pads the last group runs masked: its parameters, status and step
count stay as they are.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, models, overload, register_model

from .._jit import njit
from ._exp import emit_exp, exp_in_range
from ._numba import (
    _block_finite,
    _block_log_norm,
    _combine_factors,
    _log_abs_dloss,
    _log_norm3,
    _move_scale,
    _norm_bound,
)
from ._simd import _intrinsic, vector_ops
from ._xp import LOG_EXP_MIN

__all__ = ["LANES", "advance_lanes", "lane_layout", "run_group"]

#: Instances per group (two zmm registers of float64; measured faster than 4 and 8).
LANES = 16

_NEG_INF = -np.inf


class Lanes(types.Type):
    """A vector of :data:`LANES` float64, one per instance of a group."""

    def __init__(self) -> None:
        super().__init__(name=f"Lanes{LANES}")


class LaneMask(types.Type):
    """A vector of :data:`LANES` booleans."""

    def __init__(self) -> None:
        super().__init__(name=f"LaneMask{LANES}")


lanes_t = Lanes()
mask_t = LaneMask()
_VEC = ir.VectorType(ir.DoubleType(), LANES)
_MASK = ir.VectorType(ir.IntType(1), LANES)


@register_model(LaneMask)
class _MaskModel(models.PrimitiveModel):
    def __init__(self, dmm: Any, fe_type: Any) -> None:
        super().__init__(dmm, fe_type, _MASK)


vload, vstore, splat, lane, _fabs, _binary = vector_ops(Lanes, lanes_t, LANES, LaneMask)


@_intrinsic
def with_lane(typingctx: Any, v: Any, j: Any, x: Any) -> Any:
    """``v`` with lane ``j`` set to the float ``x``."""
    if not (isinstance(v, Lanes) and isinstance(j, types.Integer)):
        return None
    if not isinstance(x, types.Float):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        x = context.cast(builder, args[2], sig.args[2], types.float64)
        return builder.insert_element(args[0], x, args[1])

    return lanes_t(v, j, x), codegen


@_intrinsic
def where(typingctx: Any, m: Any, a: Any, b: Any) -> Any:
    """Per lane: ``a`` where ``m``, else ``b``."""
    if not (isinstance(m, LaneMask) and isinstance(a, Lanes) and isinstance(b, Lanes)):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.select(args[0], args[1], args[2])

    return lanes_t(m, a, b), codegen


# the instructions numba emits for float64 scalars (numba.cpython.numbers), lane by lane
_vadd = _binary(lambda b, x, y: b.fadd(x, y), lanes_t)
_vsub = _binary(lambda b, x, y: b.fsub(x, y), lanes_t)
_vmul = _binary(lambda b, x, y: b.fmul(x, y), lanes_t)
_vdiv = _binary(lambda b, x, y: b.fdiv(x, y), lanes_t)
_vgt = _binary(lambda b, x, y: b.fcmp_ordered(">", x, y), mask_t)
_vge = _binary(lambda b, x, y: b.fcmp_ordered(">=", x, y), mask_t)
_vlt = _binary(lambda b, x, y: b.fcmp_ordered("<", x, y), mask_t)
_vle = _binary(lambda b, x, y: b.fcmp_ordered("<=", x, y), mask_t)
_veq = _binary(lambda b, x, y: b.fcmp_ordered("==", x, y), mask_t)
_vne = _binary(lambda b, x, y: b.fcmp_unordered("!=", x, y), mask_t)
_mand = _binary(lambda b, x, y: b.and_(x, y), mask_t, LaneMask)
_mor = _binary(lambda b, x, y: b.or_(x, y), mask_t, LaneMask)


def _unary(emit: Any, kind: Any) -> Any:
    """An intrinsic of one value of type ``kind`` (``emit(builder, a)``) returning the same."""

    def typer(typingctx: Any, a: Any) -> Any:
        if not isinstance(a, kind):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return emit(builder, args[0])

        return a(a), codegen

    return intrinsic(typer)


_mnot = _unary(lambda b, x: b.not_(x), LaneMask)
# numba's negate_real: fsub from -0.0
_vneg = _unary(lambda b, x: b.fsub(ir.Constant(_VEC, [-0.0] * LANES), x), Lanes)
#: ``abs`` per lane (``llvm.fabs``, as numba's ``abs`` of a float)
vabs = _unary(_fabs, Lanes)


def _as_lanes(x: Any) -> Any:
    """``x`` as :class:`Lanes` (a float splat) or None."""
    if isinstance(x, Lanes):
        return lambda x: x
    if isinstance(x, (types.Float, types.Integer)):
        return lambda x: splat(float(x))
    return None


def _lanes_operator(op: Any, impl: Any) -> None:
    @overload(op)
    def _ov(a, b):
        if not (isinstance(a, Lanes) or isinstance(b, Lanes)):
            return None
        fa, fb = _as_lanes(a), _as_lanes(b)
        if fa is None or fb is None:
            return None
        if isinstance(a, Lanes) and isinstance(b, Lanes):
            return lambda a, b: impl(a, b)
        if isinstance(a, Lanes):
            return lambda a, b: impl(a, splat(float(b)))
        return lambda a, b: impl(splat(float(a)), b)


for _op, _impl in (
    (operator.add, _vadd),
    (operator.sub, _vsub),
    (operator.mul, _vmul),
    (operator.truediv, _vdiv),
    (operator.gt, _vgt),
    (operator.ge, _vge),
    (operator.lt, _vlt),
    (operator.le, _vle),
    (operator.eq, _veq),
    (operator.ne, _vne),
):
    _lanes_operator(_op, _impl)


@overload(operator.and_)
def _ov_and(a, b):
    if isinstance(a, LaneMask) and isinstance(b, LaneMask):
        return lambda a, b: _mand(a, b)
    return None


@overload(operator.or_)
def _ov_or(a, b):
    if isinstance(a, LaneMask) and isinstance(b, LaneMask):
        return lambda a, b: _mor(a, b)
    return None


@overload(operator.invert)
def _ov_not(a):
    if isinstance(a, LaneMask):
        return lambda a: _mnot(a)
    return None


@overload(operator.neg)
def _ov_neg(a):
    if isinstance(a, Lanes):
        return lambda a: _vneg(a)
    return None


# ----------------------------------------------------------------------------- lane helpers


#: the table method of :mod:`svmgeo.gd._exp` on every lane
_exp_table_lanes = _unary(emit_exp, Lanes)


@njit(inline="always")
def _exp_on(x, on):
    """:func:`svmgeo.gd._exp.exp` of the lanes ``on`` of x (the table method on every lane at
    once, a scalar ``math.exp`` on a lane ``on`` out of its range), 0.0 elsewhere."""
    out = where(on, _exp_table_lanes(x), splat(0.0))
    off = on & ~exp_in_range(vabs(x), x)
    if _any(off):
        for j in range(LANES):
            if lane(off, j):
                out = with_lane(out, j, math.exp(lane(x, j)))
    return out


@njit(inline="always")
def _log_on(x, on):
    """``math.log`` of the lanes ``on`` of x, -inf elsewhere."""
    out = splat(_NEG_INF)
    for j in range(LANES):
        if lane(on, j):
            out = with_lane(out, j, math.log(lane(x, j)))
    return out


@njit(inline="always")
def _gather(A, idx, stride, base):
    """Per lane j: ``A[(base + idx_j * stride) * LANES + j]`` (``idx_j`` a float index; 0
    where it is negative)."""
    Af = A.reshape(-1)
    out = splat(0.0)
    for j in range(LANES):
        t = int(lane(idx, j))
        if t < 0:
            t = 0
        out = with_lane(out, j, Af[(base + t * stride) * LANES + j])
    return out


@njit(inline="always")
def _any(m):
    hit = False
    for j in range(LANES):
        hit = hit or lane(m, j)
    return hit


@njit()
def _abs_max_lanes(A, size):
    r"""Per lane: :math:`\max_j |a_j|` over the entries not NaN, from 0.0 (the value of
    :func:`svmgeo.gd._numba._abs_max`: the loop ``t = max(t, abs(x))``, a NaN never enters)."""
    top = splat(0.0)
    for e in range(size):
        x = vabs(vload(A, e * LANES))
        top = where(x > top, x, top)
    return top


@njit()
def _norm_scaled_lanes(A, size, top):
    r""":func:`svmgeo.gd._numba._norm_scaled` per lane: :math:`t \sqrt{\sum_j (a_j / t)^2}`
    summed in the order of the entries, 0.0 where t is."""
    acc = splat(0.0)
    for e in range(size):
        y = vload(A, e * LANES) / top
        acc = acc + y * y
    out = splat(0.0)
    for j in range(LANES):
        t = lane(top, j)
        if t != 0.0:
            out = with_lane(out, j, t * math.sqrt(lane(acc, j)))
    return out


@njit()
def _norm_lanes(A, size):
    """:func:`svmgeo.gd._numba._norm` per lane."""
    return _norm_scaled_lanes(A, size, _abs_max_lanes(A, size))


# ----------------------------------------------------------------------------- the kernel


@njit()
def _grad_lanes(W, lay, g, loss_id, log_domain, G, ws):
    r"""``_grad_one``'s small-instance branch (softmax, a linear or concave head, a built-in
    loss, no head gradient) for the lanes of group ``g``: G written in place (d, d_z, L
    flattened), M returned per lane. Every lane's operations are the scalar kernel's, in its
    order; its branches are selects (a key off the mask adds nothing, its lane keeps its
    value)."""
    X, U, Z, Y, vis, hv, lam = (
        lay[0][g],
        lay[1][g],
        lay[2][g],
        lay[3][g],
        lay[4][g],
        lay[5][g],
        lay[6][g],
    )
    wz, a, sv, r, u, gt, lw, sg, mk, g1, wt = ws
    n, T, d = X.shape[0], X.shape[1], X.shape[2]
    du = U.shape[2]
    K, dz = Z.shape[1], Z.shape[2]
    L = LANES
    zero = splat(0.0)
    ninf = splat(_NEG_INF)
    lamv = vload(lam, 0)
    Mx = ninf
    for i in range(n):
        for k in range(K):
            q0 = i * K + k
            for p in range(d):
                acc = zero
                for q in range(dz):
                    acc = acc + vload(W, (p * dz + q) * L) * vload(Z, (q0 * dz + q) * L)
                vstore(wz, p * L, acc)
            m = splat(-1.0)
            top = ninf
            for t in range(T):
                vt = vload(vis, (q0 * T + t) * L) != 0.0
                acc = zero
                for p in range(d):
                    acc = acc + vload(X, ((i * T + t) * d + p) * L) * vload(wz, p * L)
                vstore(a, t * L, acc)
                upd = vt & ((m < 0.0) | (acc > top))
                m = where(upd, splat(float(t)), m)
                top = where(upd, acc, top)
            # second most probable key t2 (largest logit among the others), a2 = a[t2]
            t2 = splat(-1.0)
            a2 = zero
            for t in range(T):
                vt = vload(vis, (q0 * T + t) * L) != 0.0
                at = vload(a, t * L)
                upd = vt & (m != float(t)) & ((t2 < 0.0) | (at > a2))
                t2 = where(upd, splat(float(t)), t2)
                a2 = where(upd, at, a2)
            # the probabilities' numerators, then their sum
            for t in range(T):
                x = vload(a, t * L) - top
                live = (vload(vis, (q0 * T + t) * L) != 0.0) & (x > LOG_EXP_MIN)
                vstore(sv, t * L, _exp_on(x, live))
            ssum = zero
            for t in range(T):
                vt = vload(vis, (q0 * T + t) * L) != 0.0
                ssum = where(vt, ssum + vload(sv, t * L), ssum)
            lse = top + _log_on(ssum, (ssum == ssum) | (ssum != ssum))  # every lane
            for t in range(T):
                vstore(sv, t * L, vload(sv, t * L) / ssum)
            for p in range(du):
                acc = zero
                for t in range(T):
                    vt = vload(vis, (q0 * T + t) * L) != 0.0
                    acc = where(
                        vt, acc + vload(sv, t * L) * vload(U, ((i * T + t) * du + p) * L), acc
                    )
                vstore(r, p * L, acc)
            # the head (linear, or concave with lam): f and its gradient u
            f = zero
            rr = zero
            for j in range(du):
                rj = vload(r, j * L)
                hj = vload(hv, j * L)
                f = f + hj * rj
                rr = rr + rj * rj
                vstore(u, j * L, hj - 2.0 * lamv * rj)
            f = f - lamv * rr
            for t in range(T):
                acc = zero
                for p in range(du):
                    acc = acc + vload(U, ((i * T + t) * du + p) * L) * vload(u, p * L)
                vstore(gt, t * L, acc)
            gm = _gather(gt, m, 1, 0)
            mean = zero
            for t in range(T):
                vt = vload(vis, (q0 * T + t) * L) != 0.0
                mean = where(vt, mean + vload(sv, t * L) * (vload(gt, t * L) - gm), mean)
            yf = vload(Y, q0 * L) * f
            log_dloss = zero
            for j in range(L):
                log_dloss = with_lane(log_dloss, j, _log_abs_dloss(lane(yf, j), loss_id))
            vstore(mk, q0 * L, m)
            ok = t2 >= 0.0
            # L_q = log|l'(Y f)| + log s_t2
            Lq = log_dloss + (a2 - lse)
            near = (a2 - top) > -600.0
            s2 = _gather(sv, t2, 1, 0)
            big = zero
            for t in range(T):
                vt = vload(vis, (q0 * T + t) * L) != 0.0
                on = vt & (m != float(t)) & ok
                e = (vload(gt, t * L) - gm) - mean
                rel = vload(sv, t * L) / s2
                far = on & ~near
                if _any(far):
                    rel = where(far, _exp_on(vload(a, t * L) - a2, far), rel)
                w = rel * e
                vstore(lw, (q0 * T + t) * L, where(on, w, zero))
                aw = vabs(w)
                big = where(on & (aw > big), aw, big)
            vstore(sg, q0 * L, where(ok, Lq, ninf))
            good = ok & (big > 0.0)
            cand = Lq + _log_on(big, good)
            Mx = where(good & (cand > Mx), cand, Mx)
    for e in range(d * dz):
        vstore(G, e * L, zero)
    live = ~(Mx == ninf)  # else the direction is exactly zero
    if not _any(live):
        return ninf
    shift = Mx if log_domain else zero
    for i in range(n):
        for k in range(K):
            q0 = i * K + k
            sgq = vload(sg, q0 * L)
            okq = live & ~(sgq == ninf)
            if not _any(okq):
                continue
            m = vload(mk, q0 * L)
            scale = -vload(Y, q0 * L) * _exp_on(sgq - shift, okq)
            for t in range(T):
                vstore(wt, t * L, vload(lw, (q0 * T + t) * L) * scale)
            for p in range(d):
                xm = _gather(X, m, d, i * T * d + p)
                acc = zero
                for t in range(T):
                    on = vload(lw, (q0 * T + t) * L) != 0.0
                    term = vload(wt, t * L) * (vload(X, ((i * T + t) * d + p) * L) - xm)
                    acc = where(on, acc + term, acc)
                vstore(g1, p * L, acc)
            for p in range(d):
                gp = vload(g1, p * L)
                for q in range(dz):
                    e = (p * dz + q) * L
                    vstore(
                        G,
                        e,
                        where(okq, vload(G, e) + gp * vload(Z, (q0 * dz + q) * L), vload(G, e)),
                    )
    if n & (n - 1) == 0:  # as _divide: times the exact 1 / n
        inv = 1.0 / n
        for e in range(d * dz):
            vstore(G, e * L, vload(G, e * L) * inv)
    else:
        for e in range(d * dz):
            vstore(G, e * L, vload(G, e * L) / float(n))
    return where(live, shift, ninf)


@njit()
def _lane_not_finite(G, M, j, size):
    """Is lane j's gradient not finite: its M NaN or +inf, or, at M > -inf, an entry of G
    infinite or NaN (``_gradient_not_finite`` of :mod:`svmgeo.gd._numba` for one lane)?"""
    m = lane(M, j)
    if not m < np.inf:
        return True
    if m == _NEG_INF:  # an exactly zero gradient
        return False
    for e in range(size):
        if not abs(G[e * LANES + j]) < np.inf:
            return True
    return False


@njit()
def _step_lanes(P, G, M, opts, lim, run, work, size):
    """``_step`` of :mod:`svmgeo.gd._numba` for ``param="W"`` without a trained head, per lane:
    the new W written into P in the lanes that run (``run`` (L,) 1.0) and whose code is 0,
    ``work[2]`` (L,) set to each lane's code. ``opts = (normalized, log_domain, eta, rho, log_tol, eps)``; ``lim`` the
    lanes' norm limits; the per-lane scalars (logs, exps, the choices) as in ``_step`` and
    ``_combine``, the loops over the entries as lane vectors."""
    normalized, log_domain, eta, rho, log_tol, eps = opts
    D, N, code = work
    L = LANES
    # _combine(M, G, rho, P, D)
    nA = _norm_lanes(G, size)
    nP = _norm_lanes(P, size) if rho > 0.0 else splat(0.0)
    fa = splat(0.0)
    fb = splat(0.0)
    cc = splat(0.0)
    for j in range(L):
        c, faj, fbj = _combine_factors(lane(M, j), lane(nA, j), rho, lane(nP, j))
        fa = with_lane(fa, j, faj)
        fb = with_lane(fb, j, fbj)
        cc = with_lane(cc, j, c)
    top = splat(0.0)
    for e in range(size):
        x = fa * vload(G, e * L) + fb * vload(P, e * L)
        vstore(D, e * L, x)
        ax = vabs(x)
        top = where(ax > top, ax, top)
    nD = _norm_scaled_lanes(D, size, top)
    # the step's scale per lane, as _step for the one block W
    mv = splat(0.0)
    sc = splat(0.0)
    bad = splat(0.0)  # 1.0 where the lane's gradient is not finite
    for j in range(L):
        c = lane(cc, j)
        nDj = lane(nD, j)
        if run[j] != 0.0 and not _block_finite(c, nDj) and _lane_not_finite(G, M, j, size):
            bad = with_lane(bad, j, 1.0)
        glog = _log_norm3(_block_log_norm(c, nDj), _NEG_INF, _NEG_INF)
        move, scale = _move_scale(c, nDj, glog, normalized, log_domain, eps)
        mv = with_lane(mv, j, 1.0 if move else 0.0)
        sc = with_lane(sc, j, eta * scale)
        code[j] = glog  # read below
    moving = mv != 0.0
    top = splat(0.0)
    nan = top != top  # all false
    for e in range(size):
        p = vload(P, e * L)
        x = where(moving, p - sc * vload(D, e * L), p)
        vstore(N, e * L, x)
        ax = vabs(x)
        top = where(ax > top, ax, top)
        nan = nan | (x != x)
    need = False
    for j in range(L):
        glog = code[j]
        b1 = _norm_bound(lane(top, j), size)
        if lane(bad, j) != 0.0:
            code[j] = 8.0  # the gradient is not finite: as _step, the step not taken
        elif lane(mv, j) == 0.0:
            # stationary when the gradient is exactly zero (M = -inf, or an order-one G of the
            # log domain that is zero in float64); G == 0 at a finite scale M may be the
            # direct formula's underflow
            underflowed_G = not log_domain and lane(nA, j) == 0.0 and lane(M, j) > _NEG_INF
            code[j] = 3.0 if (glog == _NEG_INF and not underflowed_G) else 2.0
        elif log_tol > _NEG_INF and glog <= log_tol:  # grad_tol = 0 never converges
            code[j] = 4.0
        elif lane(nan, j):
            code[j] = 7.0
        elif not (b1 <= lim[j]):
            code[j] = -1.0  # decided by the exact norm below
            need = True
        else:
            code[j] = 0.0
    if need:
        nN = _norm_lanes(N, size)
        for j in range(L):
            if code[j] == -1.0:
                code[j] = 0.0 if lane(nN, j) <= lim[j] else 8.0
    keep = (vload(code, 0) == 0.0) & (vload(run, 0) != 0.0)
    for e in range(size):
        vstore(P, e * L, where(keep, vload(N, e * L), vload(P, e * L)))


@njit(inline="always")  # inlined in the range kernel: one linking of the kernels fewer
def run_group(g, lay, hv, P1, status, steps, opts, n_steps):
    """Up to ``n_steps`` steps of the instances ``g L, ..., g L + L - 1`` (those below B and
    running: status 0) of the lane layout ``lay`` (:func:`lane_layout`), with the head ``hv``
    (G, d_u, L); ``P1`` (B, d, d_z), ``status`` and ``steps`` (B,) updated in place as by
    :func:`svmgeo.gd._numba.advance`. ``opts = (loss_id, normalized, log_domain, eta, rho,
    log_tol, eps)``."""
    loss_id, normalized, log_domain, eta, rho, log_tol, eps = opts
    step_opts = (normalized, log_domain, eta, rho, log_tol, eps)
    L = LANES
    B, d, dz = P1.shape
    X, U, Z = lay[0][g], lay[1][g], lay[2][g]
    n, T = X.shape[0], X.shape[1]
    du = U.shape[2]
    K = Z.shape[1]
    size = d * dz
    lim = lay[7][g]
    run = np.zeros(L)
    for j in range(L):
        b = g * L + j
        if b < B and status[b] == 0:
            run[j] = 1.0
    W = np.empty(size * L)
    for j in range(L):
        b = min(g * L + j, B - 1)
        Pb = P1[b].reshape(-1)
        for e in range(size):
            W[e * L + j] = Pb[e]
    grid = (lay[0], lay[1], lay[2], lay[3], lay[4], hv, lay[6])
    ws = (
        np.empty(d * L),
        np.empty(T * L),
        np.empty(T * L),
        np.empty(du * L),
        np.empty(du * L),
        np.empty(T * L),
        np.empty(n * K * T * L),
        np.empty(n * K * L),
        np.empty(n * K * L),
        np.empty(d * L),
        np.empty(T * L),
    )
    G = np.empty(size * L)
    work = (np.empty(size * L), np.empty(size * L), np.empty(L))
    taken = np.zeros(L, dtype=np.int64)
    codes = np.zeros(L, dtype=np.int64)
    code = work[2]
    for _ in range(n_steps):
        if not run.any():
            break
        M = _grad_lanes(W, grid, g, loss_id, log_domain, G, ws)
        _step_lanes(W, G, M, step_opts, lim, run, work, size)
        for j in range(L):
            if run[j] != 0.0:
                if code[j] == 0.0:
                    taken[j] += 1
                else:
                    codes[j] = int(code[j])
                    run[j] = 0.0
    for j in range(L):
        b = g * L + j
        if b < B and status[b] == 0:
            status[b] = codes[j]
            steps[b] += taken[j]
            Pb = P1[b].reshape(-1)
            for e in range(size):
                Pb[e] = W[e * L + j]


@njit(nogil=True)
def advance_lanes(lay, hv, P1, status, steps, opts, n_steps, lo, hi):
    """:func:`run_group` of the groups ``lo, ..., hi - 1``, without the GIL (threads run
    disjoint ranges at once: :func:`svmgeo.gd._backend.in_threads`)."""
    for g in range(lo, hi):
        run_group(g, lay, hv, P1, status, steps, opts, n_steps)


def lane_layout(X, U, Z, Y, vis, lam, lims):
    r"""The problem's constants as :func:`run_group` reads them, with a leading group axis
    and the lanes last: X (G, n, T, d, L), U (G, n, T, d_u, L) (the same array when ``U is
    X``), Z (G, n, K, d_z, L), Y (G, n, K, L), the mask as 0.0 / 1.0 (G, n, K, T, L), a
    placeholder for the head, lam (G, L), the norm limits (G, L). The last group is padded
    with copies of the last instance (its lanes run masked)."""
    B = X.shape[0]
    groups = -(-B // LANES)
    idx = np.minimum(np.arange(groups * LANES), B - 1)

    def lanes(A):
        A = np.asarray(A, dtype=np.float64)[idx]
        A = A.reshape(groups, LANES, *A.shape[1:])
        return np.ascontiguousarray(np.moveaxis(A, 1, -1))

    XL = lanes(X)
    UL = XL if U is X else lanes(U)
    n, K, T = vis.shape[1], Z.shape[2], X.shape[2]
    visL = lanes(np.broadcast_to(vis, (B, n, K, T)))
    return (XL, UL, lanes(Z), lanes(Y), visL, np.empty((groups, 0, LANES)), lanes(lam), lanes(lims))


def lane_head(hv):
    """The head (B, 1, d_u) as :func:`run_group` reads it: (G, d_u, L)."""
    B = hv.shape[0]
    groups = -(-B // LANES)
    idx = np.minimum(np.arange(groups * LANES), B - 1)
    A = np.asarray(hv[:, 0, :], dtype=np.float64)[idx].reshape(groups, LANES, -1)
    return np.ascontiguousarray(np.moveaxis(A, 1, -1))
