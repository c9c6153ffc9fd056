# SPDX-License-Identifier: BSD-3-Clause
r"""Compiled CPU kernels (numba): the same mathematics as :mod:`svmgeo.gd._xp`, as loops.

:func:`advance` runs many steps for a range of a batch's instances; each instance stops on
its own (its status code becomes non-zero). :func:`grad_batch` evaluates :math:`(G, M)` with
:math:`\nabla L = e^M G` for a range of a batch. Both release the GIL, so
:func:`svmgeo.gd._backend.in_threads` runs disjoint ranges on several threads at once with
the same compiled code as one thread (no ``parallel=True`` kernel, which numba would compile
a second time with every function it calls). See :mod:`svmgeo.gd._xp` for the
formulas; codes are those of :data:`svmgeo.gd._config.STATUS_CODES`. W has shape
:math:`(d, d_z)` with :math:`d_z` the queries' width (:math:`d`, or 1 for ``param="p"``).
The kernels are declared with :func:`svmgeo._jit.njit`, which caches them in svmgeo's user cache
directory (never inside the installed package).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic, overload

from .._errors import ProblemError
from .._jit import njit
from ..attention_maps import gamma
from ..losses import LossSpec, is_numba_function, raw_function
from ._exp import exp
from ._problem import (
    EXPONENTIAL_LOSS,
    LINEAR_ATT,
    LOGISTIC_LOSS,
    NORM_LIMIT,
    NORMALIZED_ATT,
    RELU_HEAD,
    SCORES_HEAD,
    SIGMOID_ATT,
    SOFTMAX_ATT,
)
from ._simd import WIDTH, lane, splat, vload, vmax_abs, vstore
from ._xp import LOG_EXP_MAX, LOG_EXP_MIN, UNDERFLOW

__all__ = [
    "advance",
    "compile_loss",
    "grad_batch",
    "kernel_att",
    "layout",
    "run_one",
]

_NEG_INF = -np.inf
_gamma = njit()(gamma)
UNDETERMINED_SUM = "normalized linear attention: a query's 1^T u is within its rounding error of 0"
"""The first argument of the kernels' ProblemError for such a query (then i, k, the sum and
its bound), which the backend turns into the message (:func:`svmgeo.gd._backend.explain`)."""


def kernel_att(att_id: int) -> int | None:
    """The kernels' ``att`` argument for the attention map ``att_id``: None for softmax, else
    ``att_id``. numba compiles a kernel per argument type and prunes a branch on an argument that
    is None before compiling, so softmax compiles its own gradient kernel only (the other maps,
    an int here, compile both, as every map did before)."""
    return None if att_id == SOFTMAX_ATT else att_id


@njit()
def _softplus(x: float) -> float:
    if x > 0.0:
        return x + math.log1p(exp(-x))
    return math.log1p(exp(x))


def _log_abs_dloss(u: float, loss_id: Any) -> float:
    r""":math:`\log|\ell'(u)|` in compiled code (see the overload below)."""
    raise NotImplementedError("compiled code only")


def _dloss_flip(u: float, loss_id: Any) -> float:
    r""":math:`-\mathrm{sign}\,\ell'(u)` in compiled code (see the overload below)."""
    raise NotImplementedError("compiled code only")


@overload(_log_abs_dloss)
def _log_abs_dloss_impl(u, loss_id):
    """A built-in's integer id: its closed form; a user loss: its compiled function (a
    ``FunctionType`` of :func:`compile_loss`), asked for what 0, log|l'|."""
    if isinstance(loss_id, types.Integer):

        def builtin(u, loss_id):
            if loss_id == LOGISTIC_LOSS:
                return -_softplus(u)
            if loss_id == EXPONENTIAL_LOSS:
                return -u
            return 0.0

        return builtin

    def user(u, loss_id):
        return loss_id(u, 0)

    return user


@overload(_dloss_flip)
def _dloss_flip_impl(u, loss_id):
    """1.0 for the built-ins (every weight times 1.0: bit for bit as before), else the user
    loss's compiled function asked for what 1, -sign l'."""
    if isinstance(loss_id, types.Integer):

        def builtin(u, loss_id):
            return 1.0

        return builtin

    def user(u, loss_id):
        return loss_id(u, 1)

    return user


#: The signature of a user loss in compiled code: ``(u, what)`` gives log|l'(u)| (what 0)
#: or -sign l'(u) (what 1).
_LOSS_SIGNATURE = types.float64(types.float64, types.int64)


def _compiled(f: Any, field: str, spec: LossSpec, where: str) -> Any:
    """A user's callable as a numba function of a float (``njit`` ones as they are)."""
    f = raw_function(f)
    if is_numba_function(f):
        return f
    try:
        return numba.njit(f)
    except Exception as exc:  # numba refuses some callables (builtins, C functions)
        raise _not_compilable(spec, field, exc, where) from exc


def _not_compilable(spec: LossSpec, field: str, exc: Exception, where: str) -> ProblemError:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    # numba's typing errors open with the pipeline's name; the cause is a later line
    causes = [ln for ln in lines if not ln.startswith(("Failed in", "During:", "File "))]
    first = (causes or lines or [type(exc).__name__])[0]
    return ProblemError(
        f"The 'loss' parameter of {where} ({spec.name!r}) cannot run on backend='numba': its "
        f"{field} "
        f"callable does not compile with numba for a float u ({type(exc).__name__}: "
        f"{first}). Pass backend='numpy' (any vectorized callables), or write the callables "
        "with math / numpy scalar functions numba compiles (numba.njit them to check)."
    )


def compile_loss(spec: LossSpec, where: str = "train") -> Any:
    r"""A user loss as the compiled kernels take it: a numba ``cfunc`` of
    ``(u, what) -> float`` (:data:`_LOSS_SIGNATURE`), giving :math:`\log|\ell'(u)|` for
    ``what = 0`` and :math:`-\mathrm{sign}\,\ell'(u)` for ``what = 1``, from ``log_abs_d1``
    (then :math:`\ell' < 0`) or ``d1``. The kernels are compiled once for this function
    type (and cached on disk); only this small function is compiled per loss (measured:
    about 0.3 s). Raises ProblemError when numba cannot compile the callables."""
    if spec.log_abs_d1 is not None:
        log_abs = _compiled(spec.log_abs_d1, "log_abs_d1", spec, where)

        def from_log(u: float, what: int) -> float:
            return float(log_abs(u)) if what == 0 else 1.0

        wrapper = from_log
        field = "log_abs_d1"
    else:
        d1 = _compiled(spec.d1, "d1", spec, where)

        def from_d1(u: float, what: int) -> float:
            g = float(d1(u))
            if what == 0:
                return math.log(abs(g)) if g != 0.0 else _NEG_INF
            return -1.0 if g > 0.0 else (1.0 if g < 0.0 else 0.0)

        wrapper = from_d1
        field = "d1"
    try:
        return numba.cfunc(_LOSS_SIGNATURE)(wrapper)
    except Exception as exc:  # typing errors of the user's code
        raise _not_compilable(spec, field, exc, where) from exc


@njit()
def _head(r, head_id, hv, hV, hw, lam, u):
    """Head value at r (length d_u); writes its gradient into u."""
    d = r.shape[0]
    if head_id == RELU_HEAD:
        p = hw.shape[0]
        for j in range(d):
            u[j] = 0.0
        f = 0.0
        for c in range(p):
            pre = 0.0
            for j in range(d):
                pre += hV[j, c] * r[j]
            if pre > 0.0:
                f += hw[c] * pre
                for j in range(d):
                    u[j] += hV[j, c] * hw[c]
        return f
    f = 0.0
    rr = 0.0
    for j in range(d):
        f += hv[j] * r[j]
        rr += r[j] * r[j]
        u[j] = hv[j] - 2.0 * lam * r[j]
    return f - lam * rr


#: Instances with d or T at least this take :func:`_grad_one`'s large-instance loops.
_LARGE = 16

#: Queries per block of :func:`_matvecs` (two vectors); :func:`layout` pads to a multiple.
_QUERY_BLOCK = 2 * WIDTH


def layout(X, U, Z, softmax=True):
    r"""The transposed constants of the large-instance loops of :func:`_grad_one`, for a batch
    ``X`` (B, n, T, d), ``U`` (B, n, T, d_u), ``Z`` (B, n, K, d_z): :math:`X_i^\top`
    (B, n, d, T), :math:`U_i^\top` (B, n, d_u, T) (the same array when ``U is X``) and the
    queries as columns (B, d_z, nK), column ``i K + k`` the query :math:`z_{ik}`. X, U, Z never
    change during training, so this is built once per problem; for small instances (d and T
    below :data:`_LARGE`) the arrays have n = 0 (and nK = 0), and the kernels take their
    small-instance loops; likewise for the other attention maps (``softmax`` false), whose
    kernel does not read them."""
    B, n, T, d = X.shape
    K, dz = Z.shape[2], Z.shape[3]
    if not softmax or (d < _LARGE and T < _LARGE):
        return (np.empty((B, 0, d, T)), np.empty((B, 0, U.shape[3], T)), np.empty((B, dz, 0)))
    XT = np.ascontiguousarray(X.transpose(0, 1, 3, 2))
    UT = XT if U is X else np.ascontiguousarray(U.transpose(0, 1, 3, 2))
    nq = n * K
    ZT = np.zeros((B, dz, -(-nq // _QUERY_BLOCK) * _QUERY_BLOCK))
    ZT[:, :, :nq] = Z.reshape(B, nq, dz).transpose(0, 2, 1)
    return XT, UT, ZT


@njit()
def _workspace(inst):
    r"""Scratch arrays of :func:`_grad_one` / :func:`_grad_map` for the instance ``inst``.

    The last nine (read by :func:`_grad_one`'s large-instance loops): the key combinations
    :math:`g_j` of the queries ``j = i K + k`` (one row each), the queries that add one, for
    large instances (:func:`layout`) the products :math:`W z_j` as columns (d, nK') (size 0
    for small ones), the keys a sum runs over and their coefficients (T each), the indices
    0, 1, ... (for :func:`_add_rows` over every row), and per query of a large instance the
    head gradient u its dynamic scores were last computed for, those scores, and whether
    there are any (:func:`_dynamic_scores`; n = 0 rows for small instances).
    """
    X, U, Z, ZT = inst[0], inst[1], inst[2], inst[12]
    n, T, d = X.shape
    du = U.shape[2]
    K = Z.shape[1]
    nq = n * K
    nl = nq if ZT.shape[1] > 0 else 0
    vis = inst[4]
    every_key = np.zeros(nl, dtype=np.bool_)
    for j in range(nl):  # a loop, not np.all (its own compiled functions)
        every_key[j] = True
        for t in range(T):
            if not vis[j // K, j % K, t]:
                every_key[j] = False
                break
    return (
        np.empty((n, K, T)),
        np.empty((n, K, T)),
        np.empty((n, K), dtype=np.int64),
        np.empty(d),
        np.empty(T),
        np.empty(T),
        np.empty(du),
        np.empty(du),
        np.empty(T),
        np.empty(d),
        np.empty((n, K, du)),
        np.empty((n, K)),
        np.empty((nq, d)),
        np.empty(nq, dtype=np.int64),
        np.empty((d, ZT.shape[1])),
        np.empty(T, dtype=np.int64),
        np.empty(T),
        np.arange(max(d, du, Z.shape[2], T)),
        np.empty((nl, du)),
        np.empty((nl, T)),
        np.zeros(nl, dtype=np.bool_),
        np.full(1, -1.0),
        np.empty(nl),
        np.zeros(1, dtype=np.int64),
        every_key,
    )


@njit(inline="always")
def _dynamic_scores(gt, UTi, u, every, j, u_known, gt_known, known):
    r"""The dynamic scores :math:`g_t = u \cdot u_t` of every key of the query j (a large
    instance's; from :math:`U_i^\top`) into ``gt``, in the order of :func:`_add_rows`. They
    depend on W only through the head gradient u, which for a linear head is the head v at
    every step: when u is bit for bit the one they were last computed for (``u_known[j]``),
    the scores ``gt_known[j]`` are those, and are copied instead of computed anew."""
    du = u.shape[0]
    same = known[j]
    if same:
        ub = u.view(np.int64)
        kb = u_known[j].view(np.int64)
        for p in range(du):
            if ub[p] != kb[p]:
                same = False
                break
    g = gt_known[j]
    if not same:
        _zero(g)
        _add_rows(g, UTi, u, every, du, np.int64(-1))  # the hidden keys' are not read
        for p in range(du):  # loops, not slice assignments: those compile a shape check
            u_known[j, p] = u[p]  # and its error message (strings), seconds of compile
        known[j] = True
    for t in range(gt.shape[0]):
        gt[t] = g[t]


@njit()  # called, not inlined: one compiled copy serves all six calls (compile time)
def _add_rows(out, A, c, idx, n, sub):
    r"""``out += sum_k c[j_k] (A[j_k] - A[sub])`` over the rows :math:`j_k` = ``idx[k]``,
    k = 0, ..., n - 1 (no subtraction when ``sub < 0``).

    Each ``out[r]`` adds its terms one after another in the order of k, as the loop
    ``for k: out += c[j_k] (A[j_k] - A[sub])`` does (bit for bit), four terms at a time in a
    register with the entries r innermost: an elementwise loop over contiguous memory, which
    LLVM vectorizes, with one load and store of ``out`` per four terms."""
    R = out.shape[0]
    k = 0
    while k + 4 <= n:
        j0, j1, j2, j3 = idx[k], idx[k + 1], idx[k + 2], idx[k + 3]
        c0, c1, c2, c3 = c[j0], c[j1], c[j2], c[j3]
        if sub < 0:
            for r in range(R):
                s = out[r]
                s += c0 * A[j0, r]
                s += c1 * A[j1, r]
                s += c2 * A[j2, r]
                s += c3 * A[j3, r]
                out[r] = s
        else:
            for r in range(R):
                base = A[sub, r]
                s = out[r]
                s += c0 * (A[j0, r] - base)
                s += c1 * (A[j1, r] - base)
                s += c2 * (A[j2, r] - base)
                s += c3 * (A[j3, r] - base)
                out[r] = s
        k += 4
    while k < n:
        j0 = idx[k]
        c0 = c[j0]
        if sub < 0:
            for r in range(R):
                out[r] += c0 * A[j0, r]
        else:
            for r in range(R):
                out[r] += c0 * (A[j0, r] - A[sub, r])
        k += 1


@njit(inline="always")
def _divide(G, n):
    r"""``G /= n`` entry by entry. When n is a power of two, as ``G *= 1 / n``: then 1 / n is
    exact, so :math:`x \cdot (1/n)` and :math:`x / n` are the correctly rounded values of the
    same real number, the same float for every x (zeros, subnormals, inf and NaN included),
    and a multiplication costs a fraction of a division."""
    Gf = G.reshape(-1)
    if n & (n - 1) == 0:
        inv = 1.0 / n
        for j in range(Gf.shape[0]):
            Gf[j] *= inv
    else:
        for j in range(Gf.shape[0]):
            Gf[j] /= n


@njit(inline="always")
def _zero(x):
    for r in range(x.shape[0]):
        x[r] = 0.0


@njit(inline="always")
def _tile_sums(Af, sa, sb, idx, n, Bf, ldb, col, p0, p1, p2, p3):
    r"""Eight vectors of sums (rows ``p0 .. p3``, two vectors of columns each, from ``col``):
    :math:`\sum_k A_{p, j_k} B_{j_k, c}` over :math:`j_k` = ``idx[k]``, k = 0, ..., n - 1,
    each from 0.0 and in the order of k, in registers over every k (eight independent chains
    of additions; ``Af`` holds :math:`A_{pj}` at ``p sa + j sb``, ``Bf`` is B flattened, rows
    ``ldb`` long). A repeated row gives the same sums twice."""
    w = WIDTH
    zero = splat(0.0)
    s00, s01, s10, s11, s20, s21, s30, s31 = zero, zero, zero, zero, zero, zero, zero, zero
    for k in range(n):
        j = idx[k]
        b0 = vload(Bf, j * ldb + col)
        b1 = vload(Bf, j * ldb + col + w)
        a0, a1 = splat(Af[p0 * sa + j * sb]), splat(Af[p1 * sa + j * sb])
        a2, a3 = splat(Af[p2 * sa + j * sb]), splat(Af[p3 * sa + j * sb])
        s00 = s00 + a0 * b0
        s01 = s01 + a0 * b1
        s10 = s10 + a1 * b0
        s11 = s11 + a1 * b1
        s20 = s20 + a2 * b0
        s21 = s21 + a2 * b1
        s30 = s30 + a3 * b0
        s31 = s31 + a3 * b1
    return s00, s01, s10, s11, s20, s21, s30, s31


@njit()  # a call (compiled once, for W and for the key combinations' transpose alike)
def _rows_times(Af, sa, sb, d, idx, n, Bf, ldb, Cf, ldc, col, div, top):
    r"""For every row p = 0, ..., d - 1 of A: ``C[p, col : col + 2 WIDTH]``
    :math:`= \sum_k A_{p, j_k} B_{j_k, \cdot} / \mathrm{div}` over :math:`j_k` = ``idx[k]``,
    k = 0, ..., n - 1 (each entry's terms from 0.0 in the order of k, :func:`_tile_sums`, four
    rows at a time, the last rows of A one at a time as four equal rows; divided as
    :func:`_divide` does: by a power of two as a product, by 1 exactly). ``Af`` holds
    :math:`A_{pj}` at ``p sa + j sb`` (A or its transpose stored flat: one compiled function
    for both), ``Bf``, ``Cf`` are B and C flattened, rows ``ldb``, ``ldc`` long. Returns
    ``top`` updated with the new entries' absolute values (:func:`vmax_abs`)."""
    exact = div & (div - 1) == 0
    inv = splat(1.0 / div)
    w = WIDTH
    p = 0
    while p < d:
        p0 = p
        p1, p2, p3 = (p + 1, p + 2, p + 3) if p + 4 <= d else (p, p, p)
        s00, s01, s10, s11, s20, s21, s30, s31 = _tile_sums(
            Af, sa, sb, idx, n, Bf, ldb, col, p0, p1, p2, p3
        )
        top = _scaled_store(Cf, p0 * ldc + col, s00, inv, div, exact, top)
        top = _scaled_store(Cf, p0 * ldc + col + w, s01, inv, div, exact, top)
        top = _scaled_store(Cf, p1 * ldc + col, s10, inv, div, exact, top)
        top = _scaled_store(Cf, p1 * ldc + col + w, s11, inv, div, exact, top)
        top = _scaled_store(Cf, p2 * ldc + col, s20, inv, div, exact, top)
        top = _scaled_store(Cf, p2 * ldc + col + w, s21, inv, div, exact, top)
        top = _scaled_store(Cf, p3 * ldc + col, s30, inv, div, exact, top)
        top = _scaled_store(Cf, p3 * ldc + col + w, s31, inv, div, exact, top)
        p = p3 + 1
    return top


@njit(inline="always")
def _scaled_store(Cf, at, s, inv, div, exact, top):
    """``Cf[at : at + WIDTH] = s / div`` (as ``s * inv`` when ``exact``, :func:`_divide`);
    returns ``top`` updated with the new entries' absolute values (:func:`vmax_abs`)."""
    x = s * inv if exact else s / splat(float(div))
    vstore(Cf, at, x)
    return vmax_abs(top, x)


@njit()
def _matvecs(W, ZT, WZ, every):
    r"""``WZ[:, j] = W ZT[:, j]`` for every column j (their number a multiple of
    :data:`_QUERY_BLOCK`, see :func:`layout`): entry :math:`(p, j)` is
    :math:`\sum_q W_{pq} Z^\top_{qj}` from 0.0 in the order of q (that of :func:`_dots` on
    ``W`` and the query j). Four rows and :data:`_QUERY_BLOCK` columns at a time
    (:func:`_rows_times`), each W entry loaded once per block of columns; ``every`` holds
    0, 1, ..., at least d_z of them."""
    nq = ZT.shape[1]
    Zf = ZT.reshape(-1)
    WZf = WZ.reshape(-1)
    zero = splat(0.0)
    d, dz = W.shape
    Wf = W.reshape(-1)
    one = np.int64(1)  # not a literal: the signature of _outer_sum's calls
    for j in range(0, nq, _QUERY_BLOCK):
        _rows_times(Wf, dz, one, d, every, dz, Zf, nq, WZf, nq, j, one, zero)


@njit()
def _outer_sum(G, gq, act, n_act, Z, n):
    r"""``G = (sum_j g_j z_j^T) / n`` over the queries ``act[:n_act]`` (``j = i K + k``, g_j the
    row ``gq[j]``): each entry's terms from 0.0 in the order of ``act``, then divided by n as
    :func:`_divide` does (as the outer products one query after another into a zero G, then
    ``G /= n``). Four rows and two vectors of columns at a time (:func:`_rows_times`); the
    columns past the last multiple of 2 WIDTH one entry at a time. Returns
    :math:`\max |G_{pq}|` as :func:`_abs_max` finds it (for :func:`_norm`)."""
    d, dz = G.shape
    Zf = Z.reshape(-1)
    Gf = G.reshape(-1)
    top = splat(0.0)
    gqf = gq.reshape(-1)
    one = np.int64(1)
    q = np.int64(0)  # not the literal 0, as in every call's argument: one compiled signature
    while q + 2 * WIDTH <= dz:  # A = gq^T: A_pj = gq[j, p]
        top = _rows_times(gqf, one, d, d, act, n_act, Zf, dz, Gf, dz, q, n, top)
        q += 2 * WIDTH
    best = 0.0
    for e in range(WIDTH):
        best = max(best, lane(top, e))
    exact = n & (n - 1) == 0
    for p in range(d):
        for c in range(q, dz):
            x = 0.0
            for k in range(n_act):
                j = act[k]
                x += gq[j, p] * Zf[j * dz + c]
            x = x * (1.0 / n) if exact else x / n
            G[p, c] = x
            best = max(best, abs(x))
    return best


@njit()
def _dots(A, x, out):
    r"""``out[r] = A[r, 0] x[0] + A[r, 1] x[1] + ...`` (from 0.0, in that order) for every row r.

    Eight rows at a time, each its own accumulator: the additions per row are those of the
    plain loop, in its order (bit for bit; numba, without fastmath, lets LLVM neither reorder
    nor contract them), but eight independent chains instead of one, so the adds' latency no
    longer bounds the loop."""
    R, Cn = A.shape
    r = 0
    while r + 8 <= R:
        s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
        for c in range(Cn):
            xc = x[c]
            s0 += A[r, c] * xc
            s1 += A[r + 1, c] * xc
            s2 += A[r + 2, c] * xc
            s3 += A[r + 3, c] * xc
            s4 += A[r + 4, c] * xc
            s5 += A[r + 5, c] * xc
            s6 += A[r + 6, c] * xc
            s7 += A[r + 7, c] * xc
        out[r] = s0
        out[r + 1] = s1
        out[r + 2] = s2
        out[r + 3] = s3
        out[r + 4] = s4
        out[r + 5] = s5
        out[r + 6] = s6
        out[r + 7] = s7
        r += 8
    while r < R:
        s0 = 0.0
        for c in range(Cn):
            s0 += A[r, c] * x[c]
        out[r] = s0
        r += 1


@njit(inline="always")
def _readout(inst, i, k, head_id, sv, r, u, gt):
    """Head value f at r = U_i^T sv (``r`` given) and the dynamic scores ``gt`` of the
    visible keys (the given scores C for ``SCORES_HEAD``); ``u`` receives the head's
    gradient."""
    _, U, _, _, vis, hv, hV, hw, lam, C = inst[:10]
    T = U.shape[1]
    if head_id == SCORES_HEAD:  # given scores: f = sum_t s_t C_t, dynamic scores C_t
        f = 0.0
        for t in range(T):
            if vis[i, k, t]:
                gt[t] = C[i, k, t]
                f += sv[t] * gt[t]
        return f
    f = _head(r, head_id, hv, hV, hw, lam, u)
    for t in range(T):
        if vis[i, k, t]:
            acc = 0.0
            for p in range(U.shape[2]):
                acc += U[i, t, p] * u[p]
            gt[t] = acc
    return f


@njit(inline="always")
def _add_outer(G, g, Z, i, k):
    """G += g z_ik^T."""
    for p in range(G.shape[0]):
        for q in range(G.shape[1]):
            G[p, q] += g[p] * Z[i, k, q]


@njit()
def _head_grad(Y, lv, rq, log_domain, Gv):
    r"""The linear head's gradient :math:`e^{M_v} G_v` (``Gv`` written in place, ``M_v``
    returned) from the queries' :math:`\log|\ell'|` ``lv`` (n, K) and head inputs ``rq``
    (n, K, d_u); see :func:`svmgeo.gd._xp.grad_head`."""
    n, K, du = rq.shape
    Mv = _NEG_INF
    shift = 0.0
    if log_domain:
        shift = _NEG_INF
        for i in range(n):
            for k in range(K):
                shift = max(shift, lv[i, k])
        if shift == _NEG_INF:  # every l' = 0 (user losses): G_v = 0
            shift = 0.0
    for p in range(du):
        Gv[p] = 0.0
    for i in range(n):
        for k in range(K):
            w = -Y[i, k] * math.exp(lv[i, k] - shift)
            for p in range(du):
                Gv[p] += w * rq[i, k, p]
    nonzero = False
    for p in range(du):
        Gv[p] /= n
        nonzero = nonzero or Gv[p] != 0.0
    if nonzero:
        Mv = shift
    return Mv


@njit()
def _refuse_undetermined_sum(W, x, z, vis, S, scratch, i, k):
    r"""Raise ``ProblemError(UNDETERMINED_SUM, i, k, S, bound)`` where the computed
    :math:`\mathbf 1^\top u` of query (i, k) is within its rounding error bound
    :math:`\gamma_{d_z + d + T_v - 1} \sum_t |x_t|^\top |W|\,|z|` of 0
    (:func:`svmgeo.attention_maps.logit_sum_bound`, here in loops; ``scratch`` (d,) is
    overwritten); the backend names the query in the message."""
    d, dz = W.shape
    for p in range(d):
        scratch[p] = 0.0
    n_vis = 0
    for t in range(x.shape[0]):
        if vis[t]:
            n_vis += 1
            for p in range(d):  # independent sums: no chain of dependent adds
                scratch[p] += abs(x[t, p])
    total = 0.0
    for p in range(d):
        s0 = s1 = s2 = s3 = 0.0  # four chains (the order of a bound's sum is free)
        q = 0
        while q + 4 <= dz:
            s0 += abs(W[p, q]) * abs(z[q])
            s1 += abs(W[p, q + 1]) * abs(z[q + 1])
            s2 += abs(W[p, q + 2]) * abs(z[q + 2])
            s3 += abs(W[p, q + 3]) * abs(z[q + 3])
            q += 4
        while q < dz:
            s0 += abs(W[p, q]) * abs(z[q])
            q += 1
        total += scratch[p] * ((s0 + s1) + (s2 + s3))
    bound = _gamma(dz + d + n_vis - 1) * total
    if abs(S) <= bound:
        raise ProblemError(UNDETERMINED_SUM, i, k, S, bound)


@njit()
def _grad_map(W, inst, att_id, head_id, loss_id, log_domain, G, ws, want_v, Gv):
    r""":func:`_grad_one` for an attention map other than softmax (``att_id``): per key the
    coefficient ``lw[i, k, t]`` :math:`= c_t` and log-scale ``sg[i, k, t]``
    :math:`= \log|\ell'| + \log\varphi'_t` of :func:`svmgeo.gd._xp._map_weights`."""
    X, U, Z, Y, vis = inst[0], inst[1], inst[2], inst[3], inst[4]
    lw, sg, _, wz, a, sv, r, u, gt, g, rq, lv = ws[:12]
    n, T, d = X.shape
    du = U.shape[2]
    K, dz = Z.shape[1], Z.shape[2]
    Mx = _NEG_INF
    for i in range(n):
        for k in range(K):
            _dots(W, Z[i, k], wz)  # wz = W z_ik
            _dots(X[i], wz, a)
            S = 0.0
            for t in range(T):
                if vis[i, k, t]:
                    S += a[t]
                else:
                    a[t] = 0.0
            if att_id == NORMALIZED_ATT:
                _refuse_undetermined_sum(W, X[i], Z[i, k], vis[i, k], S, g, i, k)
            for t in range(T):
                x = a[t]
                if not vis[i, k, t]:
                    sv[t] = 0.0
                elif att_id == LINEAR_ATT:
                    sv[t] = x
                elif att_id == NORMALIZED_ATT:
                    sv[t] = x / S
                elif att_id == SIGMOID_ATT:
                    sv[t] = 0.5 * (1.0 + math.tanh(0.5 * x))
                else:  # relu
                    sv[t] = max(x, 0.0)
            for p in range(du):
                r[p] = 0.0
            for t in range(T):
                if vis[i, k, t]:
                    for p in range(du):
                        r[p] += sv[t] * U[i, t, p]
            f = _readout(inst, i, k, head_id, sv, r, u, gt)
            log_dloss = _log_abs_dloss(Y[i, k] * f, loss_id)
            flip = _dloss_flip(Y[i, k] * f, loss_id)
            if want_v:
                lv[i, k] = log_dloss
                for p in range(du):
                    rq[i, k, p] = r[p] * flip
            mean = 0.0
            sign = 0.0
            if att_id == NORMALIZED_ATT:
                for t in range(T):
                    if vis[i, k, t]:
                        mean += sv[t] * gt[t]
                sign = 1.0 if S > 0.0 else (-1.0 if S < 0.0 else math.nan)
            for t in range(T):
                lw[i, k, t] = 0.0
                sg[i, k, t] = _NEG_INF
                if not vis[i, k, t]:
                    continue
                x = a[t]
                c = gt[t]
                ld = 0.0
                if att_id == SIGMOID_ATT:
                    ld = -_softplus(x) - _softplus(-x)
                elif att_id == NORMALIZED_ATT:
                    ld = -math.log(abs(S))
                    c = (gt[t] - mean) * sign
                elif att_id != LINEAR_ATT and not x > 0.0:  # relu off its active keys
                    continue
                L = log_dloss + ld
                lw[i, k, t] = c * flip
                sg[i, k, t] = L
                if c != 0.0 and L > _NEG_INF:
                    cand = L + math.log(abs(c))
                    if cand > Mx:
                        Mx = cand
    Mv = _head_grad(Y, lv, rq, log_domain, Gv) if want_v else _NEG_INF
    for p in range(d):
        for q in range(dz):
            G[p, q] = 0.0
    if not Mx > _NEG_INF:
        return _NEG_INF, Mv  # the direction is exactly zero
    shift = Mx if log_domain else 0.0
    for i in range(n):
        for k in range(K):
            for p in range(d):
                g[p] = 0.0
            for t in range(T):
                c = lw[i, k, t]
                if c != 0.0 and sg[i, k, t] > _NEG_INF:
                    w = (-Y[i, k] * math.exp(sg[i, k, t] - shift)) * c
                    for p in range(d):
                        g[p] += w * X[i, t, p]
            _add_outer(G, g, Z, i, k)
    G /= n
    return shift, Mv


@njit(inline="always")  # inlined in its callers: one linking of the kernels fewer to compile
def _grad_any(W, inst, att, head_id, loss_id, log_domain, G, ws, want_v, Gv):
    """The gradient of the attention map ``att``: softmax's own kernel (``att`` None), or the
    others' (``att`` the map's id). numba prunes the branch on a None argument before compiling:
    softmax compiles its kernel only (see :func:`kernel_att`)."""
    if att is None:
        return _grad_one(W, inst, head_id, loss_id, log_domain, G, ws, want_v, Gv)
    return _grad_map(W, inst, att, head_id, loss_id, log_domain, G, ws, want_v, Gv)


@njit(inline="always")
def _divide_all(x, y):
    """``x[t] = x[t] / y`` for every t, a vector at a time (y not zero)."""
    T = x.shape[0]
    yv = splat(y)
    t = 0
    while t + WIDTH <= T:
        vstore(x, t, vload(x, t) / yv)
        t += WIDTH
    while t < T:
        x[t] = x[t] / y
        t += 1


@njit(inline="always")
def _visible_weights(sv, gt, m, t2, mean, flip, lwq):
    r""":func:`_grad_one`'s weights of a query that sees every key, its logits within 600 of
    each other: ``lwq[t] = (sv[t] / sv[t2]) ((gt[t] - gt[m]) - mean) flip`` for t not m,
    0.0 at m, a vector at a time (the vector holding m one entry at a time); returns
    :math:`\max_t |w_t|` over t not m (as ``if abs(w) > big``)."""
    T = sv.shape[0]
    gm, s2 = gt[m], sv[t2]
    gmv, meanv, s2v, flipv = splat(gm), splat(mean), splat(s2), splat(flip)
    top = splat(0.0)
    mb = m - m % WIDTH
    t = 0
    while t + WIDTH <= T:
        if t == mb:
            t += WIDTH
            continue
        w = (vload(sv, t) / s2v) * ((vload(gt, t) - gmv) - meanv) * flipv
        vstore(lwq, t, w)
        top = vmax_abs(top, w)
        t += WIDTH
    big = 0.0
    for e in range(WIDTH):
        big = max(big, lane(top, e))
    for t in range(mb, T):
        if t >= mb + WIDTH and t < T - T % WIDTH:
            continue
        if t == m:
            lwq[t] = 0.0
            continue
        w = (sv[t] / s2) * ((gt[t] - gm) - mean) * flip
        lwq[t] = w
        if abs(w) > big:
            big = abs(w)
    return big


@njit(inline="always")
def _key_combination(g, Xi, lwq, y, L, shift, m, cw, keys):
    r"""A query's key combination :math:`g = \sum_t c_t (x_t - x_m)`, :math:`c_t = w_t s` with
    :math:`s = -y\, e^{L - \mathrm{shift}}`, over the keys whose weight :math:`w_t` (``lwq``)
    is not zero, in their order (:func:`_add_rows` on the rows ``Xi`` of X_i); ``cw`` and
    ``keys`` are scratch."""
    scale = -y * math.exp(L - shift)
    _zero(g)
    nk = np.int64(0)
    for t in range(lwq.shape[0]):
        w = lwq[t]
        if w != 0.0:
            cw[t] = w * scale
            keys[nk] = t
            nk += 1
    _add_rows(g, Xi, cw, keys, nk, np.int64(m))  # int64, never the literal -1 m starts as


@njit()
def _grad_one(W, inst, head_id, loss_id, log_domain, G, ws, want_v, Gv):
    """(G, M) for one instance; G is written in place, ``(M, M_v)`` returned.

    With ``want_v`` the gradient in the linear head, :math:`e^{M_v} G_v`, is written into
    ``Gv`` (length d_u; see :func:`svmgeo.gd._xp.grad_head`); else ``M_v = -inf``.

    Per query: ``lw[i, k, t]`` holds the linear weight ``rel_t * e_t`` (relative to the
    largest off-argmax probability) and ``sg[i, k, 0]`` the query's log-scale ``L_q``; the
    instance scale is ``M = max_q (L_q + log max_t |rel_t e_t|)``. ``inst`` is
    ``(X, U, Z, Y, vis, hv, hV, hw, lam, C, XT, UT, ZT)`` of one instance (the transposes of
    :func:`layout`), ``ws`` from :func:`_workspace`.
    """
    X, U, Z, Y, vis, hv, hV, hw, lam, _given_scores, XT, UT, ZT = inst
    lw, sg, mk, wz, a, sv, r, u, gt, g1, rq, lv, gq, act, WZ, keys, cw, every = ws[:18]
    u_known, gt_known, known, g_top, shift_used, lead, every_key = ws[18:]
    n, T, d = X.shape
    du = U.shape[2]
    K, dz = Z.shape[1], Z.shape[2]
    Mx = _NEG_INF
    # Large instances: W z of every query at once (_matvecs), the logits and the dynamic
    # scores from the transposed X_i, U_i (_add_rows), all vectorized; small ones: one row
    # after another, where the CPU already overlaps the rows. Every sum adds its terms in
    # the same order (bit for bit).
    large = XT.shape[0] > 0  # the layout is given for large instances (see layout)
    if large:
        _matvecs(W, ZT, WZ, every)
        shift_used[:] = np.nan  # no key combination yet
    # the queries in the order lead[0], 0, 1, ... (without lead[0]): a large instance's
    # leading query is the one whose scale was the largest in the last call (its M), so
    # that M is usually known from the first query on (see the key combinations below)
    first = lead[0]
    for jj in range(n * K):
        j = first if jj == 0 else (jj - 1 if jj - 1 < first else jj)
        i, k = j // K, j % K
        m = -1
        top = _NEG_INF
        if large:
            # the logits (of every key; the hidden ones are not read)
            _zero(a)
            for p in range(d):
                wz[p] = WZ[p, j]
            _add_rows(a, XT[i], wz, every, d, np.int64(-1))
            for t in range(T):
                if vis[i, k, t] and (m < 0 or a[t] > top):
                    m = t
                    top = a[t]
        else:
            for p in range(d):
                acc = 0.0
                for q in range(dz):
                    acc += W[p, q] * Z[i, k, q]
                wz[p] = acc
            for t in range(T):
                if vis[i, k, t]:
                    acc = 0.0
                    for p in range(d):
                        acc += X[i, t, p] * wz[p]
                    a[t] = acc
                    if m < 0 or acc > top:
                        m = t
                        top = acc
        # second most probable key t2 (largest logit among the others)
        t2 = -1
        for t in range(T):
            if vis[i, k, t] and t != m and (t2 < 0 or a[t] > a[t2]):
                t2 = t
        ssum = 0.0
        for t in range(T):
            if vis[i, k, t]:
                x = a[t] - top
                st = exp(x) if x > LOG_EXP_MIN else 0.0
                sv[t] = st
                ssum += st
        lse = top + math.log(ssum)
        for p in range(du):
            r[p] = 0.0
        if large and every_key[j]:
            _divide_all(sv, ssum)
            _add_rows(r, U[i], sv, every, T, np.int64(-1))
        elif large:
            nk = np.int64(0)
            for t in range(T):
                if vis[i, k, t]:
                    sv[t] = sv[t] / ssum
                    keys[nk] = t
                    nk += 1
            _add_rows(r, U[i], sv, keys, nk, np.int64(-1))
        else:
            for t in range(T):
                if vis[i, k, t]:
                    st = sv[t] / ssum
                    sv[t] = st
                    for p in range(du):
                        r[p] += st * U[i, t, p]
        if large and head_id != SCORES_HEAD:  # the dynamic scores reused where u repeats
            f = _head(r, head_id, hv, hV, hw, lam, u)
            _dynamic_scores(gt, UT[i], u, every, i * K + k, u_known, gt_known, known)
        else:
            f = _readout(inst, i, k, head_id, sv, r, u, gt)
        mean = 0.0
        for t in range(T):
            if vis[i, k, t]:
                mean += sv[t] * (gt[t] - gt[m])
        log_dloss = _log_abs_dloss(Y[i, k] * f, loss_id)
        flip = _dloss_flip(Y[i, k] * f, loss_id)
        if want_v:
            lv[i, k] = log_dloss
            for p in range(du):
                rq[i, k, p] = r[p] * flip
        mk[i, k] = m
        sg[i, k, 0] = _NEG_INF
        gap = a[t2] - top if t2 >= 0 else 0.0
        if large and every_key[j] and t2 >= 0 and gap > -600.0:
            big = _visible_weights(sv, gt, m, t2, mean, flip, lw[i, k])
        else:
            for t in range(T):
                lw[i, k, t] = 0.0
            if t2 < 0:
                continue
            big = 0.0
            for t in range(T):
                if vis[i, k, t] and t != m:
                    e = (gt[t] - gt[m]) - mean
                    if gap > -600.0:
                        rel = sv[t] / sv[t2]
                    else:
                        rel = exp(a[t] - a[t2])
                    w = rel * e * flip
                    lw[i, k, t] = w
                    if abs(w) > big:
                        big = abs(w)
        # L_q = log|l'(Y f)| + log s_t2
        Lq = log_dloss + (a[t2] - lse)
        sg[i, k, 0] = Lq
        if big > 0.0:
            cand = Lq + math.log(big)
            if cand > Mx:
                Mx = cand
                if large:
                    lead[0] = j
        if large and Lq > _NEG_INF:
            # g_j now, while X_i is in cache, with the largest scale so far as M: kept
            # when that is M at the end (below), as it is when the leading query has
            # the largest scale (or without log_domain, whose scales are absolute)
            shift = Mx if log_domain else 0.0
            shift_used[j] = shift
            _key_combination(gq[j], X[i], lw[i, k], Y[i, k], Lq, shift, m, cw, keys)
    Mv = _head_grad(Y, lv, rq, log_domain, Gv) if want_v else _NEG_INF
    g_top[0] = -1.0  # unknown
    if Mx == _NEG_INF or not large:
        for p in range(d):
            for q in range(dz):
                G[p, q] = 0.0
    if Mx == _NEG_INF:
        return _NEG_INF, Mv  # the direction is exactly zero
    n_act = np.int64(0)  # not the literal 0: _outer_sum would compile for that type too
    shift = Mx if log_domain else 0.0
    for i in range(n):
        for k in range(K):
            if sg[i, k, 0] == _NEG_INF:
                continue
            m = mk[i, k]
            if large:  # g_j (unless computed above with this M), G at the end
                j = i * K + k
                act[n_act] = j
                n_act += 1
                if _float_bits(shift_used[j]) != _float_bits(shift):
                    _key_combination(
                        gq[j], X[i], lw[i, k], Y[i, k], sg[i, k, 0], shift, m, cw, keys
                    )
            else:  # one query after another
                scale = -Y[i, k] * exp(sg[i, k, 0] - shift)
                for p in range(d):
                    g1[p] = 0.0
                for t in range(T):
                    w = lw[i, k, t]
                    if w != 0.0:
                        w *= scale
                        for p in range(d):
                            g1[p] += w * (X[i, t, p] - X[i, m, p])
                for p in range(d):
                    for q in range(dz):
                        G[p, q] += g1[p] * Z[i, k, q]
    if large:
        g_top[0] = _outer_sum(G, gq, act, n_act, Z, n)
    else:
        _divide(G, n)
    return (Mx if log_domain else 0.0), Mv


def _bitcast_to_float(typingctx, x):
    """``_int_as_float(x)`` in compiled code: the float64 whose bit pattern is the int64 x."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(types.int64), codegen


_int_as_float: Any = intrinsic(_bitcast_to_float)


def _bitcast_to_int(typingctx, x):
    """``_float_bits(x)`` in compiled code: the int64 with the bit pattern of the float64 x."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))

    return types.int64(types.float64), codegen


_float_bits: Any = intrinsic(_bitcast_to_int)

_ABS_BITS = 0x7FFFFFFFFFFFFFFF  # every bit but the sign
_INF_BITS = 0x7FF0000000000000  # +inf; the NaNs' patterns (sign cleared) are larger


@njit(inline="always")
def _abs_key(b):
    """(the ordering key of |x| from x's bit pattern b: |x|'s pattern, 0 for a NaN; x is NaN)."""
    a = b & _ABS_BITS
    ok = a <= _INF_BITS
    return (a if ok else 0), not ok


@njit()
def _abs_max(flat):
    """(max |x| over the entries that are not NaN (0.0 if none), whether one is NaN), as the
    loop ``t = max(t, abs(x))`` from 0.0 gives it (numba's max takes y only when y > t, so a NaN
    never enters). Computed on the bit patterns: those of the values in [+0, inf] are ordered as
    the values, so an integer maximum (which vectorizes) finds the same float. The loops that
    write D and the new parameters in :func:`_combine` / :func:`_step` fold the same maximum
    (:func:`_abs_key`, the int pattern back by ``_int_as_float``) into their own pass."""
    bits = flat.view(np.int64)
    top = 0
    nan = False
    for j in range(bits.shape[0]):
        key, isnan = _abs_key(bits[j])
        nan = nan | isnan
        top = max(top, key)
    return _int_as_float(top), nan


@njit()
def _norm(A):
    r"""Frobenius norm, scaled first so tiny entries do not underflow when squared:
    :math:`t \sqrt{\sum_j (a_j / t)^2}`, :math:`t = \max_j |a_j|` (:func:`_norm_scaled`)."""
    flat = A.reshape(-1)
    return _norm_scaled(flat, _abs_max(flat)[0])


@njit()
def _norm_scaled(flat, top):
    r""":func:`_norm` of the entries ``flat`` given their ``top`` (:func:`_abs_max`):
    :math:`t \sqrt{\sum_j (a_j / t)^2}` summed in the order of the entries. The quotients and
    squares of a vector of entries at a time (``vdivpd``, whose throughput keeps up with the
    additions), the additions one by one, as in the plain loop: the sum's latency, one addition
    after another, is the bound."""
    if top == 0.0:
        return 0.0
    N = flat.shape[0]
    tv = splat(top)
    acc = 0.0
    j = 0
    while j + WIDTH <= N:
        y = vload(flat, j) / tv
        y = y * y
        for e in range(WIDTH):
            acc += lane(y, e)
        j += WIDTH
    while j < N:
        y0 = flat[j] / top
        acc += y0 * y0
        j += 1
    return top * math.sqrt(acc)


@njit()
def _norm_bound(top, size):
    r"""An upper bound of :func:`_norm` of ``size`` entries, none NaN, the largest in absolute
    value ``top``: :math:`1.001\, t \sqrt{N}` (the computed sum of N squares of quotients at
    most 1 is at most :math:`N (1 + N u)`), or inf when ``top`` is (the norm is then NaN)."""
    if not top < np.inf:
        return np.inf
    return 1.001 * top * math.sqrt(size)


@njit(inline="always")
def _combine_factors(M, nA, rho, nP):
    """(c, f_a, f_b) of :func:`_combine` from ``nA`` = ||A|| and ``nP`` = ||P|| (read only when
    ``rho > 0``): D = f_a A + f_b P."""
    la = M + math.log(nA) if nA > 0.0 else _NEG_INF
    lb = _NEG_INF
    if rho > 0.0:
        if nP > 0.0:
            lb = math.log(rho) + math.log(nP)
    c = max(la, lb)
    if nA > 0.0:  # e^{M-c} stays finite (_xp.combine)
        c = max(c, M - LOG_EXP_MAX)
    fa = 0.0
    fb = 0.0
    if c > _NEG_INF:
        if nA > 0.0:
            fa = math.exp(M - c)
        if lb > _NEG_INF:
            fb = rho * math.exp(-c)
    return c, fa, fb


@njit()
def _combined_norm(fa, Af, fb, Pf, top):
    r"""(:func:`_norm_scaled` of the entries :math:`d_j = f_a a_j + f_b p_j` given their
    ``top``, :func:`_abs_max` of them), the :math:`d_j` computed on the fly in one pass (not
    stored); with ``top`` zero only the maximum (the norm is then 0.0). The quotients of a
    vector at a time, the additions one by one in the order of the entries, as in
    :func:`_norm_scaled`; the maximum as ``max(t, abs(d))`` from 0.0 (a NaN never enters)."""
    N = Af.shape[0]
    chain = top != 0.0
    tv = splat(top if chain else 1.0)
    fav, fbv = splat(fa), splat(fb)
    acc = 0.0
    big = splat(0.0)
    j = 0
    while j + WIDTH <= N:
        x = fav * vload(Af, j) + fbv * vload(Pf, j)
        big = vmax_abs(big, x)
        y = x / tv
        y = y * y
        for e in range(WIDTH):
            acc += lane(y, e)
        j += WIDTH
    best = 0.0
    for e in range(WIDTH):
        best = max(best, lane(big, e))
    while j < N:
        x = fa * Af[j] + fb * Pf[j]
        best = max(best, abs(x))
        if chain:
            y0 = x / top
            acc += y0 * y0
        j += 1
    return (top * math.sqrt(acc) if chain else 0.0), best


@njit()
def _combine(M, A, rho, P, top_a=-1.0):
    """The factors of D = e^{M-c} A + rho e^{-c} P, c the log of the larger term: returns
    (c, ||D||, e^{M-c}, rho e^{-c}), ||D|| as :func:`_norm` of D finds it; D itself is not
    stored (the update recomputes its entries). ``top_a``: the largest |entry| of A as
    :func:`_abs_max` finds it, when known (else negative).

    When rho e^{-c} is zero, D's largest |entry| is known before D: rounding is monotone, so
    it is e^{M-c} times A's (an entry of P that is not finite breaks this; the pass checks
    the maximum it finds and computes the norm again with that one when they differ)."""
    Af = A.reshape(-1)
    Pf = P.reshape(-1)
    top_a = top_a if top_a >= 0.0 else _abs_max(Af)[0]
    nA = _norm_scaled(Af, top_a)
    c, fa, fb = _combine_factors(M, nA, rho, _norm(P) if rho > 0.0 else 0.0)
    guess = fa * top_a if fb == 0.0 else 0.0
    nD, top = _combined_norm(fa, Af, fb, Pf, guess)
    if _float_bits(top) != _float_bits(guess):
        nD = _combined_norm(fa, Af, fb, Pf, top)[0]
    return c, nD, fa, fb


@njit()
def _matmul_t(A, B, out):
    """out = A @ B.T."""
    for p in range(A.shape[0]):
        for q in range(B.shape[0]):
            acc = 0.0
            for j in range(A.shape[1]):
                acc += A[p, j] * B[q, j]
            out[p, q] = acc


@njit()
def _matmul(A, B, out, transpose_a):
    """out = A @ B (or A.T @ B)."""
    for p in range(out.shape[0]):
        for q in range(out.shape[1]):
            acc = 0.0
            for j in range(B.shape[0]):
                acc += (A[j, p] if transpose_a else A[p, j]) * B[j, q]
            out[p, q] = acc


@njit()
def _block_log_norm(c, nD):
    """log of e^c ||D|| (-inf when zero)."""
    return c + math.log(nD) if nD > 0.0 else _NEG_INF


@njit(inline="always")
def _log_norm3(l1, l2, l3):
    r""":math:`\log \sqrt{e^{2 l_1} + e^{2 l_2} + e^{2 l_3}}` (the gradient's log-norm from its
    blocks'), -inf when every block's is."""
    top = max(l1, max(l2, l3))
    if top > _NEG_INF:
        return top + 0.5 * math.log(
            math.exp(2.0 * (l1 - top)) + math.exp(2.0 * (l2 - top)) + math.exp(2.0 * (l3 - top))
        )
    return _NEG_INF


@njit(inline="always")
def _move_scale(c, nD, glog, normalized, log_domain, eps):
    """(whether a block moves, its step's scale) from its ``D`` (log-scale ``c``, norm ``nD``),
    the gradient's log-norm ``glog`` and the block's ε: W <- W - eta scale D."""
    move = False
    scale = 0.0
    if normalized and log_domain:
        move = nD > 0.0
        scale = 1.0 / nD if move else 0.0
        if move and eps > 0.0:  # times 1 / (1 + eps / ||g||), ||g|| = e^c ||D||
            x = math.log(eps) - c - math.log(nD)
            scale *= 1.0 / (1.0 + math.exp(x)) if x < LOG_EXP_MAX else 0.0
            move = scale > 0.0
    elif normalized:
        gn = math.exp(c) * nD if c > _NEG_INF else 0.0
        move = gn >= UNDERFLOW
        scale = math.exp(c) / (gn + eps) if move else 0.0
    else:
        move = glog > _NEG_INF and math.exp(glog) >= UNDERFLOW
        scale = math.exp(c) if (move and c > _NEG_INF) else 0.0
    return move, scale


@njit(inline="always")
def _block_finite(c, nD):
    """Is a step block's scaled gradient non-zero and finite (``c`` its log-scale, ``nD`` the
    norm of its D)?"""
    return nD > 0.0 and nD < np.inf and c > _NEG_INF and c < np.inf


@njit()
def _not_finite(A):
    """Is an entry of A infinite or NaN?"""
    flat = A.reshape(-1)
    for j in range(flat.shape[0]):
        if not abs(flat[j]) < np.inf:
            return True
    return False


@njit()
def _gradient_not_finite(Gw, Gv, Mw, Mv, A1, A2, is_kq, train_head):
    """Is the gradient of a step not finite: its scale M NaN or +inf, or, at a scale
    M > -inf, an entry of G (of the factors' products A1 = G Q, A2 = G^T K for ``is_kq``; of
    G_v at M_v for ``train_head``) infinite or NaN? (M = -inf is an exactly zero gradient.)
    Read only where a block's norm is zero or not finite (:func:`_step`)."""
    if not Mw < np.inf:  # NaN or +inf
        return True
    if Mw > _NEG_INF:
        if _not_finite(Gw) or (is_kq and (_not_finite(A1) or _not_finite(A2))):
            return True
    if train_head:
        if not Mv < np.inf or (Mv > _NEG_INF and _not_finite(Gv)):
            return True
    return False


@njit(inline="always")  # a separate call, with its tuples of arrays, cost ~10 % of a step
def _step(P, G, M, opts, lim, work, top_g):
    """One step of one instance in place; returns the status code (0: step taken).

    ``P = (P1, P2, P3)``: W (or K, or p as a d x 1 matrix), Q (read for ``is_kq``), the head
    v as a 1 x d_u matrix (trained when ``train_head``); ``G = (G, Gv)`` and ``M = (M, M_v)``
    the scaled gradients; ``opts`` as in :func:`run_one`; ``lim`` the instance's
    :attr:`~svmgeo.gd._problem.Problem.max_norm`; ``work`` scratch arrays; ``top_g`` the
    largest |entry| of G when the gradient found it (:func:`_outer_sum`), else negative.
    """
    P1, P2, P3 = P
    Gw, Gv = G
    Mw, Mv = M
    is_kq, train_head, normalized, log_domain, eta, rho, log_tol, eps1, eps2, eps3 = opts
    A1, A2, N1, N2, N3 = work
    if is_kq:
        _matmul(Gw, P2, A1, False)
        _matmul(Gw, P1, A2, True)
        c1, n1, fa1, fb1 = _combine(Mw, A1, rho, P1, -1.0)  # top_a given: one signature
        c2, n2, fa2, fb2 = _combine(Mw, A2, rho, P2, -1.0)
    else:
        c1, n1, fa1, fb1 = _combine(Mw, Gw, rho, P1, top_g)
        c2, n2, fa2, fb2 = _NEG_INF, 0.0, 0.0, 0.0
    if train_head:
        c3, n3, fa3, fb3 = _combine(Mv, Gv, rho, P3, -1.0)
    else:
        c3, n3, fa3, fb3 = _NEG_INF, 0.0, 0.0, 0.0
    l1 = _block_log_norm(c1, n1)
    l2 = _block_log_norm(c2, n2)
    l3 = _block_log_norm(c3, n3)
    glog = _log_norm3(l1, l2, l3)
    if not (
        _block_finite(c1, n1)
        and (not is_kq or _block_finite(c2, n2))
        and (not train_head or _block_finite(c3, n3))
    ):
        # a block is zero, or its gradient is not finite (what overflowed leaves ||D|| zero
        # or NaN): OVERFLOW then, the step not taken
        if _gradient_not_finite(Gw, Gv, Mw, Mv, A1, A2, is_kq, train_head):
            return 8
    any_move = False
    # per new parameter: its largest |entry| (as a bit pattern) and whether one is NaN,
    # taken in the pass that writes it (as _abs_max would find them)
    top1 = top2 = 0
    nan1 = nan2 = nan3 = False
    for f in range(3):
        if (f == 1 and not is_kq) or (f == 2 and not train_head):
            continue
        A = (A1 if is_kq else Gw) if f == 0 else (A2 if f == 1 else Gv)
        fa = fa1 if f == 0 else (fa2 if f == 1 else fa3)
        fb = fb1 if f == 0 else (fb2 if f == 1 else fb3)
        Pf = P1 if f == 0 else (P2 if f == 1 else P3)
        Nf = N1 if f == 0 else (N2 if f == 1 else N3)
        c = c1 if f == 0 else (c2 if f == 1 else c3)
        nD = n1 if f == 0 else (n2 if f == 1 else n3)
        eps = eps1 if f == 0 else (eps2 if f == 1 else eps3)
        move, scale = _move_scale(c, nD, glog, normalized, log_domain, eps)
        any_move = any_move or move
        Av = A.reshape(-1)
        Pv = Pf.reshape(-1)
        Nv = Nf.reshape(-1)
        top = 0
        nan = False
        for j in range(Nv.shape[0]):  # D's entries as _combine has them
            x = Pv[j] - eta * scale * (fa * Av[j] + fb * Pv[j]) if move else Pv[j]
            Nv[j] = x
            key, isnan = _abs_key(_float_bits(x))
            top = max(top, key)
            nan = nan | isnan
        if f == 0:
            top1, nan1 = top, nan
        elif f == 1:
            top2, nan2 = top, nan
        else:
            nan3 = nan
    if not any_move:
        # stationary when the gradient is exactly zero (M = -inf, or an order-one G of the
        # log domain that is zero in float64); G == 0 at a finite scale M may be the direct
        # formula's underflow
        underflowed_G = not log_domain and _norm(Gw) == 0.0 and Mw > _NEG_INF
        return 3 if (glog == _NEG_INF and not underflowed_G) else 2
    if log_tol > _NEG_INF and glog <= log_tol:  # grad_tol = 0 never converges
        return 4
    # a NaN in a new parameter
    if nan1 or nan2 or nan3:
        return 7
    # the norm limits (bounds from the largest entries): the exact norms only when the bounds
    # do not already decide
    b1 = _norm_bound(_int_as_float(top1), N1.size)
    if is_kq:
        b2 = _norm_bound(_int_as_float(top2), N2.size)
        if not (b1 <= NORM_LIMIT and b2 <= NORM_LIMIT and 1.001 * b1 * b2 <= lim):
            m1 = _norm(N1)
            m2 = _norm(N2)
            if not (m1 <= NORM_LIMIT and m2 <= NORM_LIMIT and m1 * m2 <= lim):
                return 8
    elif not (b1 <= lim or _norm(N1) <= lim):
        return 8
    if train_head and not (_norm(N3) <= NORM_LIMIT):
        return 8
    for f in range(3):
        if (f == 1 and not is_kq) or (f == 2 and not train_head):
            continue
        Nv = (N1 if f == 0 else (N2 if f == 1 else N3)).reshape(-1)
        Pv = (P1 if f == 0 else (P2 if f == 1 else P3)).reshape(-1)
        for j in range(Nv.shape[0]):
            Pv[j] = Nv[j]
    return 0


@njit()
def _instance(prob, b):
    X, U, Z, Y, vis, hv, hV, hw, lam, C, XT, UT, ZT = prob
    return (X[b], U[b], Z[b], Y[b], vis[b], hv[b], hV[b], hw[b], lam[b], C[b], XT[b], UT[b], ZT[b])


@njit()
def _with_head(inst, v):
    """``inst`` with the head weights ``v`` (the state's, trained or not)."""
    X, U, Z, Y, vis, _, hV, hw, lam, C, XT, UT, ZT = inst
    return (X, U, Z, Y, vis, v, hV, hw, lam, C, XT, UT, ZT)


@njit(inline="always")  # inlined in the range kernel: one linking of the kernels fewer
def run_one(P1, P2, P3, inst, opts, n_steps, lim, att):
    """Up to ``n_steps`` steps of one instance in place; returns (code, steps taken).

    ``P3`` (1, d_u) is the head v the kernels read (updated when trained). ``inst`` is
    ``(X, U, Z, Y, vis, hv, hV, hw, lam, C, XT, UT, ZT)`` of the instance (the last three from
    :func:`layout`), ``opts`` is
    ``(head_id, loss_id, is_kq, train_head, normalized, log_domain, eta, rho, log_tol,
    eps1, eps2, eps3)`` (the ε of the first attention factor, the second, the head: flat floats,
    as parallel regions take no nested tuples), ``lim`` its largest parameter norm and ``att``
    the attention map, None for softmax (:func:`kernel_att`).
    """
    head_id, loss_id = opts[0], opts[1]
    step_opts = opts[2:]
    is_kq, train_head, log_domain = opts[2], opts[3], opts[5]
    inst = _with_head(inst, P3[0])
    d, dz = inst[0].shape[2], inst[2].shape[2]
    W = np.empty((d, dz)) if is_kq else P1  # W is P1 itself unless KQ (read, not written)
    G = np.empty((d, dz))
    Gv = np.empty(P3.shape)
    ws = _workspace(inst)
    work = (
        np.empty(P1.shape),
        np.empty(P2.shape),
        np.empty(P1.shape),
        np.empty(P2.shape),
        np.empty(P3.shape),
    )
    params, grads, head_grad = (P1, P2, P3), (G, Gv), Gv[0]
    for it in range(n_steps):
        if is_kq:
            _matmul_t(P1, P2, W)
        if att is None:  # softmax's own kernel, exactly as before other maps (one compiled)
            M, Mv = _grad_one(W, inst, head_id, loss_id, log_domain, G, ws, train_head, head_grad)
        else:
            M, Mv = _grad_map(
                W, inst, att, head_id, loss_id, log_domain, G, ws, train_head, head_grad
            )
        code = _step(params, grads, (M, Mv), step_opts, lim, work, ws[21][0])
        if code != 0:
            return code, it
    return 0, n_steps


@njit(nogil=True)
def advance(P1, P2, P3, prob, opts, n_steps, status, steps, lims, att, lo, hi):
    """Advance every running instance (status 0) of ``lo, ..., hi - 1`` by up to ``n_steps``
    steps, in place.

    ``prob`` is ``(X, U, Z, Y, vis, hv, hV, hw, lam, C, XT, UT, ZT)`` with a leading batch axis, ``lims`` (B,)
    the instances' largest parameter norms; ``opts`` and ``att`` as in :func:`run_one`.
    """
    for b in range(lo, hi):
        if status[b] == 0:
            inst = _instance(prob, b)
            code, taken = run_one(P1[b], P2[b], P3[b], inst, opts, n_steps, lims[b], att)
            status[b] = code
            steps[b] += taken


@njit(nogil=True)
def grad_batch(Wall, prob, att, head_id, loss_id, log_domain, want_v, Gall, Mall, Gv, Mv, lo, hi):
    """(G, M, G_v, M_v) of the instances ``lo, ..., hi - 1`` of a batch, written into G
    (B, d, d_z), M (B,), G_v (B, 1, d_u) (zeros unless ``want_v``) and M_v (B,) (``-inf``
    unless ``want_v``); ``att`` the attention map, None for softmax (:func:`kernel_att`)."""
    for b in range(lo, hi):
        inst = _instance(prob, b)
        ws = _workspace(inst)
        Mall[b], Mv[b] = _grad_any(
            Wall[b], inst, att, head_id, loss_id, log_domain, Gall[b], ws,
            want_v, Gv[b, 0],
        )  # fmt: skip
