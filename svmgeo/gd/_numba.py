# SPDX-License-Identifier: BSD-3-Clause
r"""Compiled CPU kernels (numba): the same mathematics as :mod:`svmgeo.gd._xp`, as loops.

:func:`advance` runs many steps for a batch with ``prange`` over instances; each instance
stops on its own (its status code becomes non-zero). :func:`grad_batch` evaluates
:math:`(G, M)` with :math:`\nabla L = e^M G` for a batch. See :mod:`svmgeo.gd._xp` for the
formulas; codes are those of :data:`svmgeo.gd._config.STATUS_CODES`. W has shape
:math:`(d, d_z)` with :math:`d_z` the queries' width (:math:`d`, or 1 for ``param="p"``).

Compiled code is cached on disk in a user cache directory, never inside the installed package
(a cache there outlives ``pip uninstall`` and shadows a later install): ``$SVMGEO_CACHE_DIR/numba``
when set, else numba's own ``NUMBA_CACHE_DIR`` when set, else ``~/.cache/svmgeo/numba``
(``$XDG_CACHE_HOME``, ``%LOCALAPPDATA%`` or ``~/Library/Caches`` where those apply). When that
directory cannot be written the kernels are compiled anew in each process.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import numba
import numpy as np
from numba import prange

from ._problem import NORM_LIMIT
from ._xp import UNDERFLOW

__all__ = ["advance", "cache_dir", "grad_batch", "grad_one", "run_one"]

_NEG_INF = -np.inf
_config: Any = numba.config  # numba's settings module (untyped for mypy)


def cache_dir() -> str:
    """The directory of svmgeo's compiled-kernel cache (see the module docstring)."""
    own = os.environ.get("SVMGEO_CACHE_DIR", "").strip()
    if own:
        return os.path.join(os.path.expanduser(own), "numba")
    if _config.CACHE_DIR:  # the user's NUMBA_CACHE_DIR
        return str(_config.CACHE_DIR)
    if sys.platform == "win32":
        root = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~/AppData/Local")
    elif sys.platform == "darwin":
        root = os.path.expanduser("~/Library/Caches")
    else:
        root = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache")
    return os.path.join(root, "svmgeo", "numba")


def _writable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


_CACHE_DIR = cache_dir()
_CACHE = _writable(_CACHE_DIR)


@contextlib.contextmanager
def _cache_location() -> Iterator[None]:
    """Point numba's cache at :data:`_CACHE_DIR` while a kernel is declared (numba fixes a
    function's cache path then), and restore the caller's setting."""
    before = _config.CACHE_DIR
    _config.CACHE_DIR = _CACHE_DIR
    try:
        yield
    finally:
        _config.CACHE_DIR = before


def njit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit`` with svmgeo's cache directory (no cache when it is not writable)."""

    def declare(func: Callable[..., Any]) -> Any:
        with _cache_location():
            return numba.njit(cache=_CACHE, **options)(func)

    return declare


@njit()
def _softplus(x: float) -> float:
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@njit()
def _log_abs_dloss(u: float, loss_id: int) -> float:
    if loss_id == 0:
        return -_softplus(u)
    if loss_id == 1:
        return -u
    return 0.0


@njit()
def _head(r, head_id, hv, hV, hw, lam, u):
    """Head value at r (length d_u); writes its gradient into u."""
    d = r.shape[0]
    if head_id == 1:
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


@njit()
def _workspace(n, K, T, d, du):
    """Scratch arrays of :func:`_grad_one` for one instance (``du`` the head features' width)."""
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
    )


@njit()
def _grad_one(W, inst, head_id, loss_id, log_domain, G, ws):
    """(G, M) for one instance; G is written in place, M returned.

    Per query: ``lw[i, k, t]`` holds the linear weight ``rel_t * e_t`` (relative to the
    largest off-argmax probability) and ``sg[i, k, 0]`` the query's log-scale ``L_q``; the
    instance scale is ``M = max_q (L_q + log max_t |rel_t e_t|)``. ``inst`` is
    ``(X, U, Z, Y, vis, hv, hV, hw, lam, C)`` of one instance, ``ws`` from :func:`_workspace`.
    """
    X, U, Z, Y, vis, hv, hV, hw, lam, C = inst
    lw, sg, mk, wz, a, sv, r, u, gt, g = ws
    n, T, d = X.shape
    du = U.shape[2]
    K, dz = Z.shape[1], Z.shape[2]
    Mx = _NEG_INF
    for i in range(n):
        for k in range(K):
            for p in range(d):
                acc = 0.0
                for q in range(dz):
                    acc += W[p, q] * Z[i, k, q]
                wz[p] = acc
            m = -1
            top = _NEG_INF
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
                    st = math.exp(x) if x > -745.0 else 0.0
                    sv[t] = st
                    ssum += st
            lse = top + math.log(ssum)
            for p in range(du):
                r[p] = 0.0
            for t in range(T):
                if vis[i, k, t]:
                    st = sv[t] / ssum
                    sv[t] = st
                    for p in range(du):
                        r[p] += st * U[i, t, p]
            if head_id == 3:  # given scores: f = sum_t s_t C_t, dynamic scores C_t
                f = 0.0
                for t in range(T):
                    if vis[i, k, t]:
                        gt[t] = C[i, k, t]
                        f += sv[t] * gt[t]
            else:
                f = _head(r, head_id, hv, hV, hw, lam, u)
                for t in range(T):
                    if vis[i, k, t]:
                        acc = 0.0
                        for p in range(du):
                            acc += U[i, t, p] * u[p]
                        gt[t] = acc
            mean = 0.0
            for t in range(T):
                if vis[i, k, t]:
                    mean += sv[t] * (gt[t] - gt[m])
            mk[i, k] = m
            for t in range(T):
                lw[i, k, t] = 0.0
            sg[i, k, 0] = _NEG_INF
            if t2 < 0:
                continue
            yf = Y[i, k] * f
            # L_q = log|l'(Y f)| + log s_t2
            Lq = _log_abs_dloss(yf, loss_id) + (a[t2] - lse)
            gap = a[t2] - top
            big = 0.0
            for t in range(T):
                if vis[i, k, t] and t != m:
                    e = (gt[t] - gt[m]) - mean
                    if gap > -600.0:
                        rel = sv[t] / sv[t2]
                    else:
                        rel = math.exp(a[t] - a[t2])
                    w = rel * e
                    lw[i, k, t] = w
                    if abs(w) > big:
                        big = abs(w)
            sg[i, k, 0] = Lq
            if big > 0.0:
                cand = Lq + math.log(big)
                if cand > Mx:
                    Mx = cand
    for p in range(d):
        for q in range(dz):
            G[p, q] = 0.0
    if Mx == _NEG_INF:
        return _NEG_INF  # the direction is exactly zero
    for i in range(n):
        for k in range(K):
            if sg[i, k, 0] == _NEG_INF:
                continue
            m = mk[i, k]
            scale = -Y[i, k] * math.exp(sg[i, k, 0] - (Mx if log_domain else 0.0))
            for p in range(d):
                g[p] = 0.0
            for t in range(T):
                w = lw[i, k, t]
                if w != 0.0:
                    w *= scale
                    for p in range(d):
                        g[p] += w * (X[i, t, p] - X[i, m, p])
            for p in range(d):
                for q in range(dz):
                    G[p, q] += g[p] * Z[i, k, q]
    for p in range(d):
        for q in range(dz):
            G[p, q] /= n
    return Mx if log_domain else 0.0


@njit()
def _norm(A):
    """Frobenius norm, scaled first so tiny entries do not underflow when squared."""
    flat = A.reshape(-1)
    top = 0.0
    for x in flat:
        top = max(top, abs(x))
    if top == 0.0:
        return 0.0
    acc = 0.0
    for x in flat:
        acc += (x / top) * (x / top)
    return top * math.sqrt(acc)


@njit()
def _combine(M, A, rho, P, D):
    """D = e^{M-c} A + rho e^{-c} P with c the log of the larger term; returns c."""
    nA = _norm(A)
    la = M + math.log(nA) if nA > 0.0 else _NEG_INF
    lb = _NEG_INF
    if rho > 0.0:
        nP = _norm(P)
        if nP > 0.0:
            lb = math.log(rho) + math.log(nP)
    c = max(la, lb)
    fa = 0.0
    fb = 0.0
    if c > _NEG_INF:
        if nA > 0.0:
            fa = math.exp(M - c)
        if lb > _NEG_INF:
            fb = rho * math.exp(-c)
    Df = D.reshape(-1)
    Af = A.reshape(-1)
    Pf = P.reshape(-1)
    for j in range(Df.shape[0]):
        Df[j] = fa * Af[j] + fb * Pf[j]
    return c


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
def _step(
    P1, P2, is_kq, G, M, normalized, log_domain, eta, rho, log_tol, lim, A1, A2, D1, D2, N1, N2
):
    """One step of one instance in place; returns the status code (0: step taken).

    ``lim`` is the instance's :attr:`~svmgeo.gd._problem.Problem.max_norm`.
    """
    if is_kq:
        _matmul(G, P2, A1, False)
        _matmul(G, P1, A2, True)
        c1 = _combine(M, A1, rho, P1, D1)
        c2 = _combine(M, A2, rho, P2, D2)
        nf = 2
    else:
        c1 = _combine(M, G, rho, P1, D1)
        c2 = _NEG_INF
        nf = 1
    n1 = _norm(D1)
    n2 = _norm(D2) if is_kq else 0.0
    l1 = c1 + math.log(n1) if n1 > 0.0 else _NEG_INF
    l2 = c2 + math.log(n2) if n2 > 0.0 else _NEG_INF
    top = max(l1, l2)
    if top > _NEG_INF:
        glog = top + 0.5 * math.log(math.exp(2.0 * (l1 - top)) + math.exp(2.0 * (l2 - top)))
    else:
        glog = _NEG_INF
    any_move = False
    for f in range(nf):
        D = D1 if f == 0 else D2
        Pf = P1 if f == 0 else P2
        Nf = N1 if f == 0 else N2
        c = c1 if f == 0 else c2
        nD = n1 if f == 0 else n2
        move = False
        scale = 0.0
        if normalized and log_domain:
            move = nD > 0.0
            scale = 1.0 / nD if move else 0.0
        elif normalized:
            gn = math.exp(c) * nD if c > _NEG_INF else 0.0
            move = gn >= UNDERFLOW
            scale = math.exp(c) / gn if move else 0.0
        else:
            move = glog > _NEG_INF and math.exp(glog) >= UNDERFLOW
            scale = math.exp(c) if (move and c > _NEG_INF) else 0.0
        any_move = any_move or move
        Df = D.reshape(-1)
        Pv = Pf.reshape(-1)
        Nv = Nf.reshape(-1)
        for j in range(Nv.shape[0]):
            Nv[j] = Pv[j] - eta * scale * Df[j] if move else Pv[j]
    if not any_move:
        # stationary when the gradient is exactly zero; G == 0 at a finite scale M is the
        # direct formula's underflow
        underflowed_G = _norm(G) == 0.0 and M > _NEG_INF
        return 3 if (glog == _NEG_INF and not underflowed_G) else 2
    if glog <= log_tol:
        return 4
    for f in range(nf):
        Nv = (N1 if f == 0 else N2).reshape(-1)
        for j in range(Nv.shape[0]):
            if math.isnan(Nv[j]):
                return 7
    if is_kq:
        m1 = _norm(N1)
        m2 = _norm(N2)
        if not (m1 <= NORM_LIMIT and m2 <= NORM_LIMIT and m1 * m2 <= lim):
            return 8
    elif not (_norm(N1) <= lim):
        return 8
    for f in range(nf):
        Nv = (N1 if f == 0 else N2).reshape(-1)
        Pv = (P1 if f == 0 else P2).reshape(-1)
        for j in range(Nv.shape[0]):
            Pv[j] = Nv[j]
    return 0


@njit()
def _instance(prob, b):
    X, U, Z, Y, vis, hv, hV, hw, lam, C = prob
    return (X[b], U[b], Z[b], Y[b], vis[b], hv[b], hV[b], hw[b], lam[b], C[b])


@njit()
def run_one(P1, P2, is_kq, inst, opts, n_steps, lim):
    """Up to ``n_steps`` steps of one instance in place; returns (code, steps taken).

    ``inst`` is ``(X, U, Z, Y, vis, hv, hV, hw, lam, C)`` of the instance, ``opts`` is
    ``(head_id, loss_id, log_domain, normalized, eta, rho, log_tol)`` and ``lim`` its
    largest parameter norm.
    """
    head_id, loss_id, log_domain, normalized, eta, rho, log_tol = opts
    n, T, d = inst[0].shape
    K, dz = inst[2].shape[1], inst[2].shape[2]
    W = np.empty((d, dz))
    G = np.empty((d, dz))
    ws = _workspace(n, K, T, d, inst[1].shape[2])
    A1 = np.empty(P1.shape)
    A2 = np.empty(P2.shape)
    D1 = np.empty(P1.shape)
    D2 = np.empty(P2.shape)
    N1 = np.empty(P1.shape)
    N2 = np.empty(P2.shape)
    for it in range(n_steps):
        if is_kq:
            _matmul_t(P1, P2, W)
        else:
            W[:, :] = P1
        M = _grad_one(W, inst, head_id, loss_id, log_domain, G, ws)
        code = _step(
            P1,
            P2,
            is_kq,
            G,
            M,
            normalized,
            log_domain,
            eta,
            rho,
            log_tol,
            lim,
            A1,
            A2,
            D1,
            D2,
            N1,
            N2,
        )
        if code != 0:
            return code, it
    return 0, n_steps


@njit(parallel=True)
def advance(P1, P2, is_kq, prob, opts, n_steps, status, steps, lims):
    """Advance every running instance (status 0) by up to ``n_steps`` steps, in place.

    ``prob`` is ``(X, U, Z, Y, vis, hv, hV, hw, lam, C)`` with a leading batch axis, ``lims`` (B,)
    the instances' largest parameter norms.
    """
    for b in prange(P1.shape[0]):
        if status[b] == 0:
            code, taken = run_one(P1[b], P2[b], is_kq, _instance(prob, b), opts, n_steps, lims[b])
            status[b] = code
            steps[b] += taken


@njit()
def grad_one(W, inst, head_id, loss_id, log_domain, G):
    """(G, M) of one instance: G written in place, M returned."""
    n, T, d = inst[0].shape
    ws = _workspace(n, inst[2].shape[1], T, d, inst[1].shape[2])
    return _grad_one(W, inst, head_id, loss_id, log_domain, G, ws)


@njit(parallel=True)
def grad_batch(Wall, prob, head_id, loss_id, log_domain):
    """(G, M) for every instance of a batch: G (B, d, d_z), M (B,)."""
    B, n, T, d = prob[0].shape
    K = prob[2].shape[2]
    du = prob[1].shape[3]
    Gall = np.empty((B, d, prob[2].shape[3]))
    Mall = np.empty(B)
    for b in prange(B):
        ws = _workspace(n, K, T, d, du)
        Mall[b] = _grad_one(Wall[b], _instance(prob, b), head_id, loss_id, log_domain, Gall[b], ws)
    return Gall, Mall
