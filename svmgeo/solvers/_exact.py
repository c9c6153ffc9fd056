# SPDX-License-Identifier: BSD-3-Clause
r"""Exact proofs of feasibility verdicts, in rational arithmetic on the float input.

Every float is a dyadic rational, so a verdict about the user's floats can be *proved*:

.. math::

    \text{feasible:}\quad a_j^\top W b_j > 0\ \ \forall j \in \mathcal M\ (c_j > 0)
    \ \Rightarrow\ tW \text{ meets every row for some } t > 0;
    \qquad
    \text{infeasible:}\quad \lambda_{\mathcal M} \ge 0,\ \textstyle\sum_j \lambda_j a_j b_j^\top = 0,\
    c^\top\lambda = 1 ,

each checked without rounding, with :math:`a_j = x_{ip} - x_{iq}` formed exactly from the tokens
(the float difference may round). The margins :math:`a_j^\top W b_j` of a float :math:`W` are
computed exactly by *limb arithmetic*: every float array is written as
:math:`2^e \sum_t \beta^t D_t` with integer digits :math:`|D_t| < \beta = 2^k`, and
:math:`2k + 1 + \lceil\log_2 d\rceil \le 53`, so every product of two digit matrices is a sum
of integers below :math:`2^{53}` — exact in float64 BLAS, in any summation order. A Farkas
vector is re-solved exactly on its support (the null space of the exact Gram matrix
:math:`G_{SS} = (A_SA_S^\top)\circ(B_SB_S^\top)`, python-flint's ``fmpz_mat`` / ``fmpq_mat``).
A verdict whose proof fails is repaired once (an exact point on the float support); a
feasible one is then checked for the opposite answer (an exact Farkas vector: rows
inconsistent by one ulp, which float solvers meet) and otherwise reported as undecided — never
as a verdict that is not proved.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from fractions import Fraction
from typing import Any, cast

import flint
import numpy as np
import scipy.linalg as sla

from .._linalg import frobenius_norm
from .._validation import read_only_state, read_only_view
from ..constraints import MARGIN, ConstraintSet
from ..data import TokenData
from ._backends import HiGHSBackend
from ._certificates import (
    SMALLEST_SUBNORMAL,
    UNIT_ROUNDOFF,
    point_violations,
    zero_row_farkas,
)
from ._result import FeasibilityResult, replaced
from ._scale import LARGEST_EXPONENT
from ._status import Status

__all__ = ["SCREEN_PROOF", "ExactRows", "exact_multiple", "meet_margins", "prove_verdict"]

_LARGEST_FLOAT = Fraction(float(np.finfo(np.float64).max))
"""float64's largest finite value, exactly: a scale :math:`t` above it has no float."""


def _ulp_exp(x: np.ndarray) -> int:
    """Exponent e of the smallest ulp among the nonzero entries: every entry is a multiple of 2^e."""
    nz = np.asarray(x, dtype=np.float64)
    nz = nz[nz != 0]
    if nz.size == 0:
        return 0
    return max(int(np.frexp(nz)[1].min()) - 53, -1074)


def _digit_bits(inner: int) -> int:
    """Bits k per digit so that ``inner`` products of two digits below 2^(k+1) stay below 2^53."""
    return (53 - 2 - max(1, math.ceil(math.log2(max(inner, 2))))) // 2


@dataclasses.dataclass(frozen=True)
class _Limbs:
    r"""An exact integer array :math:`2^{e} \sum_t \beta^t D_t`, :math:`\beta = 2^k`, :math:`|D_t| < \beta`.

    ``digits`` has shape ``(L, *shape)`` (float64 holding integers).
    """

    digits: np.ndarray
    exp: int
    k: int

    @classmethod
    def from_float(cls, x: np.ndarray, k: int, exp: int | None = None) -> _Limbs:
        """The exact digits of a finite float array (no rounding: every float is dyadic).

        ``exp`` (default: the smallest ulp exponent of ``x``) must be at most that exponent.
        """
        x = np.asarray(x, dtype=np.float64)
        nz = x[x != 0]
        e = _ulp_exp(nz) if exp is None else exp
        if nz.size == 0:
            return cls(np.zeros((1, *x.shape)), e, k)
        top = int(np.frexp(nz)[1].max())  # |x| < 2^top
        L = max(1, -(-(top - e) // k))
        if top - e > 1000:  # x / 2^e would overflow: Python integers (rare, slow)
            return cls._from_ints(x, e, k)
        # trunc(x / 2^(e + k t)): the bits of x above 2^(e + k t) (ldexp exact: no overflow,
        # and an underflowing quotient is < 1 in magnitude, so its trunc is 0 as it should be)
        heads = [np.trunc(np.ldexp(x, -(e + k * t))) for t in range(L + 1)]
        # digit t = head_t - 2^k head_(t+1): an exact integer below 2^k, so exact in float
        digits = np.stack([heads[t] - np.ldexp(heads[t + 1], k) for t in range(L)])
        return cls(digits, e, k)

    @classmethod
    def from_ints(cls, values: list[int], k: int) -> _Limbs:
        """Normalized digits of Python integers (unit 2^0)."""
        L = max(1, -(-max((abs(v).bit_length() for v in values), default=1) // k))
        mask = (1 << k) - 1
        digits = np.zeros((L, len(values)))
        for i, v in enumerate(values):
            mag, sign = abs(v), (1 if v >= 0 else -1)
            for t in range(L):
                digits[t, i] = sign * ((mag >> (k * t)) & mask)
        return cls(digits, 0, k)

    @classmethod
    def _from_ints(cls, x: np.ndarray, e: int, k: int) -> _Limbs:
        """Digits through Python integers (for exponent spreads beyond the float range)."""
        # exact: 2^e divides every entry (e is at most every entry's ulp exponent)
        out = cls.from_ints([int(Fraction(float(v)) / Fraction(2) ** e) for v in x.ravel()], k)
        return cls(out.digits.reshape(-1, *x.shape), e, k)

    @staticmethod
    def combine(P: np.ndarray, exp: int, k: int) -> _Limbs:
        """Carry-normalize digit products ``P[s, t]`` (degree s + t) into digits below 2^k."""
        Ls, Lt = P.shape[:2]
        acc = np.zeros((Ls + Lt - 1, *P.shape[2:]), dtype=np.int64)
        for s in range(Ls):  # at most Ls terms below 2^53 per degree: no int64 overflow
            acc[s : s + Lt] += P[s].astype(np.int64)
        return _Limbs.normalize(acc, exp, k)

    @staticmethod
    def normalize(acc: np.ndarray, exp: int, k: int) -> _Limbs:
        """Digits (int64, below 2^62) carried into digits below 2^k, toward zero.

        Then :math:`|\\sum_{t<g} \beta^t D_t| < \beta^g`: the sign of the number is the sign
        of its highest nonzero digit.
        """
        out: list[np.ndarray] = []
        carry = np.zeros(acc.shape[1:], dtype=np.int64)
        g = 0
        while g < acc.shape[0] or np.any(carry):
            c = (acc[g] if g < acc.shape[0] else 0) + carry
            carry = np.sign(c) * (np.abs(c) >> k)
            out.append((c - (carry << k)).astype(np.float64))
            g += 1
        return _Limbs(np.stack(out), exp, k)

    @staticmethod
    def stack(parts: list[_Limbs]) -> _Limbs:
        """Concatenate along the first data axis (same exponent), padding digits with zeros."""
        L = max(p.digits.shape[0] for p in parts)
        pad = [
            np.pad(p.digits, [(0, L - p.digits.shape[0])] + [(0, 0)] * (p.digits.ndim - 1))
            for p in parts
        ]
        return _Limbs(np.concatenate(pad, axis=1), parts[0].exp, parts[0].k)

    def difference(self, i: Any, j: Any) -> _Limbs:
        """Exact ``self[i] - self[j]`` (fancy indices into the data axes)."""
        D = self.digits[(slice(None), *i)] - self.digits[(slice(None), *j)]
        return _Limbs.normalize(D.astype(np.int64), self.exp, self.k)

    def signs(self) -> np.ndarray:
        """Sign (-1, 0, 1) of each number of a normalized digit array."""
        out = np.zeros(self.digits.shape[1:], dtype=np.int64)
        for D in self.digits[::-1]:
            out = np.where(out != 0, out, np.sign(D).astype(np.int64))
        return out

    def matmul(self, other: _Limbs) -> _Limbs:
        """Exact matrix product: one float64 BLAS call on all digit pairs."""
        (Ls, m, d), (Lt, _, p) = self.digits.shape, other.digits.shape
        P = self.digits.reshape(Ls * m, d) @ other.digits.transpose(1, 0, 2).reshape(d, Lt * p)
        P = P.reshape(Ls, m, Lt, p).transpose(0, 2, 1, 3)
        return _Limbs.combine(P, self.exp + other.exp, self.k)

    def rowdot(self, other: _Limbs) -> _Limbs:
        r"""Exact row-wise dot products :math:`\sum_d X_{jd} Y_{jd}`."""
        P = np.einsum("sjd,tjd->stj", self.digits, other.digits)
        return _Limbs.combine(P, self.exp + other.exp, self.k)

    def ints(self) -> np.ndarray:
        """The integers :math:`\\sum_t \\beta^t D_t` (object array of Python ints, scale 2^exp)."""
        total = np.zeros(self.digits.shape[1:], dtype=object)
        for t in range(self.digits.shape[0] - 1, -1, -1):
            total = total * (1 << self.k) + self.digits[t].astype(np.int64).astype(object)
        return total


def exact_dot_signs(A: np.ndarray, v: np.ndarray) -> np.ndarray:
    r"""The exact signs (-1, 0, 1) of :math:`A v` (A (m, d), v (d,) finite floats): every
    product and sum in exact integer arithmetic (:class:`_Limbs`), no rounding."""
    A, v = np.asarray(A, dtype=float), np.asarray(v, dtype=float)
    k = _digit_bits(A.shape[1])
    return _Limbs.from_float(A, k).matmul(_Limbs.from_float(v[:, None], k)).signs()[:, 0]


@dataclasses.dataclass(frozen=True)
class ExactRows:
    r"""The rows of a constraint set as exact dyadic data.

    :math:`a_j = P_{p_j} - P_{q_j}` (``P`` the tokens, or ``cs.A`` with :math:`q_j` a zero
    row), :math:`b_j = Q_{s_j}`.
    """

    cs: ConstraintSet
    P: np.ndarray
    pref: np.ndarray
    comp: np.ndarray
    Q: np.ndarray
    query: np.ndarray
    source: str

    def __post_init__(self) -> None:
        # read-only, as the rows they come from: the compiled screen has one signature for
        # rows from tokens and from cs.A, fresh or unpickled (see __setstate__)
        for name in ("P", "pref", "comp", "Q", "query"):
            object.__setattr__(self, name, read_only_view(getattr(self, name)))

    def __setstate__(self, state: dict[str, Any]) -> None:  # pickle: read-only again
        read_only_state(self, state)

    @classmethod
    def build(cls, cs: ConstraintSet) -> ExactRows:
        """Rows from the tokens of ``cs.tokens`` (exact differences) when it built ``cs``, else
        ``cs.A``; on a small set (at most :data:`_CACHED_UP_TO` entries in ``cs.A``, where
        building them costs as much as the float screen of a proof) built once and cached on
        the set (its rows and tokens are immutable)."""
        if cs.N * cs.d > _CACHED_UP_TO:
            return cls._build(cs)
        cached = cs.__dict__.get(_ROWS_KEY)
        if cached is None:
            cached = cs.__dict__[_ROWS_KEY] = cls._build(cs)
        return cached

    @classmethod
    def _build(cls, cs: ConstraintSet) -> ExactRows:
        data = cs.tokens
        if data is not None and _from_data(cs, data):
            P = np.asarray(data.X, dtype=float).reshape(-1, cs.d)
            Q = np.asarray(data.queries, dtype=float).reshape(-1, cs.d)
            return cls(
                cs,
                P,
                cs.seq * data.T + cs.pref,
                cs.seq * data.T + cs.comp,
                Q,
                cs.seq * data.K + cs.query,
                "tokens",
            )
        P = np.vstack([cs.A, np.zeros((1, cs.d))])
        Q, query = np.unique(cs.B, axis=0, return_inverse=True)
        return cls(
            cs,
            P,
            np.arange(cs.N),
            np.full(cs.N, cs.N),
            Q,
            query.reshape(-1),
            "rows",
        )

    @property
    def k(self) -> int:
        return _digit_bits(self.cs.d)

    @functools.cached_property
    def screen(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
        r"""What :func:`_margins_beyond_rounding` needs of the data alone: :math:`|Q|`,
        :math:`|X|` (tokens) or :math:`|a_j|` (rows), the sizes
        :math:`1 + \|P_{p_j}\|_1 + \|P_{q_j}\|_1`, and (tokens) the flat positions of
        :math:`(i, p_j, k)` and :math:`(i, q_j, k)` in an (n, T, K) array."""
        cs, data = self.cs, self.cs.tokens
        if self.source == "tokens" and data is not None:
            absX = np.abs(self.P.reshape(data.n, data.T, cs.d))
            l1 = absX.sum(axis=2)
            i, p, q, k = cs.seq, cs.pref, cs.comp, cs.query
            flat = ((i * data.T + p) * data.K + k, (i * data.T + q) * data.K + k)
            return np.abs(self.Q), absX, 1.0 + l1[i, p] + l1[i, q], flat
        absA = np.abs(self.P[self.pref] - self.P[self.comp])
        return np.abs(self.Q), absA, 1.0 + absA.sum(axis=1), ()

    def _values(self, W_Q: _Limbs, pref: np.ndarray, comp: np.ndarray, query: np.ndarray) -> _Limbs:
        r"""Exact :math:`(P_{p_j} - P_{q_j})^\top M_{:,s_j}` for a digit matrix ``W_Q`` = M.

        Each distinct (token, column) pair is computed once, in chunks of bounded memory.
        """
        base = _ulp_exp(self.P) + W_Q.exp
        nq = W_Q.digits.shape[2]
        keys = np.concatenate([pref * nq + query, comp * nq + query])
        uniq, inv = np.unique(keys, return_inverse=True)
        p, q = uniq // nq, uniq % nq
        parts = []
        chunk = max(1, (1 << 19) // max(self.cs.d, 1))
        for lo in range(0, uniq.size, chunk):
            sl = slice(lo, lo + chunk)
            Pl = _Limbs.from_float(self.P[p[sl]], self.k, exp=base - W_Q.exp)
            Mb = _Limbs(W_Q.digits[:, :, q[sl]].transpose(0, 2, 1), W_Q.exp, W_Q.k)
            parts.append(Pl.rowdot(Mb))
        inv = inv.reshape(-1)
        return _Limbs.stack(parts).difference((inv[: pref.size],), (inv[pref.size :],))

    def margins(self, W: np.ndarray) -> _Limbs:
        r"""Exact :math:`a_j^\top W b_j` of every row (normalized digits, unit :math:`2^{exp}`)."""
        W_Q = _Limbs.from_float(W, self.k).matmul(_Limbs.from_float(self.Q.T, self.k))
        data = self.cs.tokens
        if self.source != "tokens" or data is None:
            return self._values(W_Q, self.pref, self.comp, self.query)
        # tokens of each sequence against its own queries: batched products, no gathering
        n, T, K, d = data.n, data.T, data.K, self.cs.d
        base = _ulp_exp(self.P) + W_Q.exp
        X = self.P.reshape(n, T, d)
        U = W_Q.digits.reshape(-1, d, n, K).transpose(0, 2, 1, 3)  # (L, n, d, K)
        parts = []
        chunk = max(1, (1 << 19) // max(T * d, 1))
        for lo in range(0, n, chunk):
            Xl = _Limbs.from_float(X[lo : lo + chunk], self.k, exp=base - W_Q.exp)
            P = Xl.digits[:, None] @ U[None, :, lo : lo + chunk]  # (Lx, Lu, chunk, T, K)
            parts.append(_Limbs.combine(P, base, self.k))
        V = _Limbs.stack(parts)  # (L, n, T, K)
        i, k = self.cs.seq, self.cs.query
        return V.difference((i, self.cs.pref, k), (i, self.cs.comp, k))

    def round_point(
        self, W: np.ndarray | None, S: np.ndarray, mu: list[Fraction], *, rescale: bool
    ) -> np.ndarray | None:
        r"""The float rounding of the exact :math:`W + \sum_{k\in S}\mu_k a_k b_k^\top`.

        Entry by entry from exact integers (the float sum would cancel: the :math:`\mu_k` of a
        nearly dependent support are huge and nearly equal). ``rescale``: a positive multiple
        is as good (homogeneous rows), so scale by a power of two into the float range;
        otherwise None when an entry overflows.
        """
        Pl = _Limbs.from_float(self.P, self.k)
        A = _Limbs.normalize(
            (Pl.digits[:, self.pref[S]] - Pl.digits[:, self.comp[S]]).astype(np.int64),
            Pl.exp,
            self.k,
        )
        B = _Limbs.from_float(self.Q[self.query[S]], self.k)
        den = math.lcm(*(x.denominator for x in mu))
        mu_int = np.array([x.numerator * (den // x.denominator) for x in mu], dtype=object)
        num = (A.ints().T * mu_int) @ B.ints()  # (d, d) exact, unit 2^e / den
        e = A.exp + B.exp
        if W is not None:  # add W exactly: W = Wi 2^ew
            Wl = _Limbs.from_float(W, self.k)
            ew = min(Wl.exp, e)
            num = Wl.ints() * den * (1 << (Wl.exp - ew)) + num * (1 << (e - ew))
            e = ew
        top = max((abs(int(x)).bit_length() for x in num.ravel()), default=0)
        shift = e + top - den.bit_length()  # log2 of the largest entry, within 1
        if rescale and not -900 < shift < 900:
            e -= shift  # a positive multiple: largest entry ~ 1
        out = np.empty(num.shape)
        for idx, x in np.ndenumerate(num):
            n, d = (int(x) << e, den) if e >= 0 else (int(x), den << -e)
            try:
                out[idx] = n / d  # correctly rounded
            except OverflowError:
                return None
        return out

    def gram(self, R: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, int]:
        r"""Exact :math:`G_{RS} = (A_RA_S^\top)\circ(B_RB_S^\top)`: ints (|R|, |S|) and exponent."""
        Pl = _Limbs.from_float(self.P, self.k)
        A_S = _Limbs(  # columns a_k = P_p - P_q (digits below 2 beta: within the bound)
            (Pl.digits[:, self.pref[S]] - Pl.digits[:, self.comp[S]]).transpose(0, 2, 1),
            Pl.exp,
            self.k,
        )
        cols = np.tile(np.arange(S.size), R.size)
        AA = self._values(
            A_S, np.repeat(self.pref[R], S.size), np.repeat(self.comp[R], S.size), cols
        )
        Ql = _Limbs.from_float(self.Q, self.k)
        Q_S = _Limbs(Ql.digits[:, self.query[S]].transpose(0, 2, 1), Ql.exp, self.k)
        BB = Ql.matmul(Q_S)  # (n_queries, |S|)
        AB = AA.ints().reshape(R.size, S.size) * BB.ints()[self.query[R]]
        return AB, AA.exp + BB.exp


_ROWS_KEY = "_svmgeo_exact_rows"
"""Where :meth:`ExactRows.build` caches a set's exact rows on it (as cached_property does)."""
_CACHED_UP_TO = 100_000
"""Most entries N·d of a set whose exact rows (and their float screen's parts, a few copies of
the rows) stay cached on it: the small solves, where building them is a tenth of a proof."""


def _from_data(cs: ConstraintSet, data: TokenData) -> bool:
    """True when ``cs`` holds rows built from ``data`` (same sizes, same rounded rows)."""
    if (cs.n, cs.K, cs.T, cs.d) != (data.n, data.K, data.T, data.d):
        return False
    if np.any(cs.pref < 0) or np.any(cs.comp < 0):
        return False  # NO_TOKEN: a row that is not a token difference (and -1 would index)
    X, Qs = np.asarray(data.X, dtype=float), np.asarray(data.queries, dtype=float)
    return bool(
        np.array_equal(X[cs.seq, cs.pref] - X[cs.seq, cs.comp], cs.A)
        and np.array_equal(Qs[cs.seq, cs.query], cs.B)
    )


def _fraction(m: int, e: int) -> Fraction:
    return Fraction(m) * (Fraction(2) ** e)


def _homogeneous(cs: ConstraintSet) -> bool:
    """Every equality row has c_j = 0 and every margin row c_j >= 0: positive scaling keeps W feasible."""
    margin = cs.kind == MARGIN
    return bool(np.all(cs.rhs[~margin] == 0) and np.all(cs.rhs[margin] >= 0))


def _scales(cs: ConstraintSet, m: _Limbs) -> bool:
    r"""True when some :math:`t > 0` makes :math:`t\,m_j` meet every row exactly."""
    margin = cs.kind == MARGIN
    c = np.asarray(cs.rhs, dtype=float)
    sign = m.signs()
    if np.all(c[~margin] == 0) and not np.any(margin & (c < 0) & (sign < 0)):
        # homogeneous: positive where c_j > 0, nonnegative elsewhere, zero on equalities
        return bool(
            np.all(sign[~margin] == 0)
            and np.all(sign[margin & (c > 0)] > 0)
            and np.all(sign[margin & (c == 0)] >= 0)
        )
    return _scale_interval(cs, m.ints(), m.exp) is not None


def _scale_interval(cs: ConstraintSet, m: np.ndarray, e: int) -> Fraction | None:
    r"""A :math:`t > 0` with :math:`t\,m_j \ge c_j` (margin rows), :math:`t\,m_j = c_j` (equality
    rows), for the exact margins :math:`m_j 2^e`, or None."""
    margin = cs.kind == MARGIN
    lo, hi = Fraction(0), None
    fixed: Fraction | None = None
    for j in range(cs.N):
        mj, cj = m[j], Fraction(float(cs.rhs[j]))
        if not margin[j]:
            if mj == 0:
                if cj != 0:
                    return None
                continue
            t = cj / _fraction(mj, e)
            if t <= 0 or (fixed is not None and t != fixed):
                return None
            fixed = t
        elif mj > 0:
            if cj > 0:
                lo = max(lo, cj / _fraction(mj, e))
        elif mj == 0:
            if cj > 0:
                return None
        else:  # mj < 0: needs t <= c_j / m_j, impossible when c_j >= 0
            if cj >= 0:
                return None
            bound = cj / _fraction(mj, e)
            hi = bound if hi is None else min(hi, bound)
    if fixed is not None:  # the equality rows fix t
        return fixed if lo <= fixed and (hi is None or fixed <= hi) else None
    t = lo if lo > 0 else (Fraction(1) if hi is None else hi)  # hi > 0: c_j, m_j < 0 there
    return t if hi is None or t <= hi else None


def _margins_beyond_rounding(rows: ExactRows, W: np.ndarray) -> bool:
    r"""True when every row is a margin row whose float margin exceeds a rigorous bound on its
    rounding error, so that every exact margin :math:`a_j^\top W b_j` is positive.

    The margins are evaluated as :math:`\hat s_{p} = \mathrm{fl}(P_p^\top \mathrm{fl}(W Q_s))`
    and :math:`\hat m_j = \mathrm{fl}(\hat s_{p_j} - \hat s_{q_j})`. The bound on inner
    products (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., 2002, Lemma 3.1
    and Eq. (3.5): :math:`|\mathrm{fl}(x^\top y) - x^\top y| \le \gamma_n |x|^\top|y|`,
    :math:`\gamma_n = nu/(1 - nu)`, any summation order, fused multiply-adds included,
    round-to-nearest and no underflow) gives
    :math:`|\hat m_j - m_j| \le (2\gamma_d + \gamma_d^2 + u(1 + 2\gamma_d))\,(|P_{p_j}| +
    |P_{q_j}|)^\top |W||Q_s|`; underflow adds at most :math:`2d\eta` per product with
    :math:`\eta = 2^{-1074}`. The bound used, :math:`8(d + 2)u\,\widehat{b}_j + 8(d + 2)\eta
    (1 + \|P_{p_j}\|_1 + \|P_{q_j}\|_1)` with :math:`\widehat b_j` the float value of
    :math:`(|P_{p_j}| + |P_{q_j}|)^\top |W||Q_s|`, exceeds it by more than a factor 2 (which
    covers the rounding of the bound itself). False whenever a row is not decided this way:
    the limb arithmetic then decides every row.
    """
    cs = rows.cs
    if cs.N == 0 or not cs._margin_rows.all() or not np.all(np.isfinite(W)):
        return False
    d = cs.d
    data = cs.tokens
    absQ, absP, size, flat = rows.screen  # the data's parts, cached
    with np.errstate(all="ignore"):
        V = W @ rows.Q.T  # (d, queries)
        R = np.abs(W) @ absQ.T
        if rows.source == "tokens" and data is not None:
            n, T, K = data.n, data.T, data.K
            X = rows.P.reshape(n, T, d)
            S = (X @ V.T.reshape(n, K, d).transpose(0, 2, 1)).reshape(-1)  # token . W query
            Bd = (absP @ R.T.reshape(n, K, d).transpose(0, 2, 1)).reshape(-1)
            p, q = flat  # rows (i, p_j, k_j) and (i, q_j, k_j) of the (n, T, K) products
            m = S.take(p) - S.take(q)
            b = Bd.take(p) + Bd.take(q)
        else:  # a_j = P_{pref_j} (the compared row is the zero row), b_j = Q_{query_j}
            A = rows.P[rows.pref] - rows.P[rows.comp]  # exact: the second term is 0
            m = np.einsum("jd,jd->j", A, V.T[rows.query])
            b = np.einsum("jd,jd->j", absP, R.T[rows.query])
        bound = 8.0 * (d + 2) * (UNIT_ROUNDOFF * b + SMALLEST_SUBNORMAL * size)
        return bool(np.all(np.isfinite(m)) and np.all(np.isfinite(bound)) and np.all(m > bound))


SCREEN_PROOF = (
    "every margin of the reported W is positive (its float value exceeds a rigorous bound on "
    "its rounding error), so a positive multiple meets every row"
)
"""The proof's account when the float screen (:func:`_margins_beyond_rounding`) decides."""


def _prove_point(rows: ExactRows, W: np.ndarray) -> tuple[bool, str]:
    """Exact margins of the float ``W``; proved when a positive multiple of W meets every row.

    Rows whose float margin is positive beyond a rigorous rounding-error bound
    (:func:`_margins_beyond_rounding`) need no limb arithmetic; when every row is such a row
    the verdict is proved without it.
    """
    if not np.all(np.isfinite(W)):
        return False, "the point is not finite"
    if _margins_beyond_rounding(rows, W):
        return True, SCREEN_PROOF
    m = rows.margins(W)
    if not _scales(rows.cs, m):
        bad = int(np.count_nonzero(m.signs() <= 0))
        if bad:
            return False, f"{bad} row(s) have an exact margin <= 0 at the float point"
        return False, "no positive multiple of the float point meets its equality rows exactly"
    return True, "the exact margins of the reported W admit a scale that meets every row"


def _exact_affine(m: np.ndarray, G: np.ndarray, mu: list[Fraction]) -> list[Fraction]:
    r"""The exact values :math:`m_j + \sum_a G_{ja}\mu_a` of integer ``m``, ``G`` and rational ``mu``.

    With :math:`D = \operatorname{lcm}_a q_a` of the denominators, :math:`D\mu` is an integer
    vector and the sums are one integer matrix-vector product (python-flint's ``fmpz_mat``), not
    :math:`N\,|S|` rational additions in Python (minutes at N ~ 1,000).
    """
    if not mu:
        return [Fraction(int(x)) for x in m]
    den = math.lcm(*(f.denominator for f in mu))
    scaled = flint.fmpz_mat([[f.numerator * (den // f.denominator)] for f in mu])
    prod = flint.fmpz_mat([[int(x) for x in row] for row in G]) * scaled
    return [Fraction(int(m[j]) * den + int(prod[j, 0]), den) for j in range(G.shape[0])]


def _repair_point(
    rows: ExactRows, W: np.ndarray | None, S: np.ndarray
) -> tuple[np.ndarray, str, bool] | None:
    r"""An exact point :math:`W' = W + \sum_{k\in S}\mu_k a_k b_k^\top` with rows ``S`` tight.

    :math:`\mu` solves :math:`G_{SS}\mu = c_S - m_S(W)` in rational arithmetic; :math:`W'` is
    proved when its exact margins meet every row. Returns the float rounding of :math:`W'`,
    a message, and whether that rounding is itself proved; or None.
    """
    cs = rows.cs
    if S.size == 0:
        return None
    G, eg = rows.gram(np.arange(cs.N), S)
    # the first linearly independent rows of S, in the caller's order (pivots of the rref)
    R, _, rank = flint.fmpz_mat([[int(x) for x in G[j]] for j in S]).rref()
    pivots = [next(a for a in range(S.size) if R[i, a] != 0) for i in range(rank)]
    S, G = S[pivots], G[:, pivots]
    if W is None:
        m0 = np.zeros(cs.N, dtype=object)
        em = eg
    else:
        mW = rows.margins(W)
        m0, em = mW.ints(), mW.exp
    # common scale 2^e0 for the margins of W and the columns of G (mu carries the rest)
    e0 = min(em, eg)
    m_int = m0 * (1 << (em - e0))
    G_int = G * (1 << (eg - e0))
    c = [Fraction(float(x)) / Fraction(2) ** e0 for x in cs.rhs]  # in the frame 2^e0
    rhs_S = [c[j] - m_int[j] for j in S]
    GS = flint.fmpq_mat([[int(G_int[i, a]) for a in range(S.size)] for i in S])
    mu = GS.solve(flint.fmpq_mat([[flint.fmpq(r.numerator, r.denominator)] for r in rhs_S]))
    mu_f = [Fraction(int(mu[i, 0].p), int(mu[i, 0].q)) for i in range(S.size)]
    values = _exact_affine(m_int, G_int, mu_f)
    if _homogeneous(cs):  # signs decide (a positive multiple meets every row)
        den = math.lcm(*(v.denominator for v in values))
        ints = [v.numerator * (den // v.denominator) for v in values]
        ok = _scales(cs, _Limbs.from_ints(ints, rows.k))
    else:
        ok = all((v >= c[j]) if cs.kind[j] == MARGIN else (v == c[j]) for j, v in enumerate(values))
    if not ok:
        return None
    Wf = rows.round_point(W, S, mu_f, rescale=_homogeneous(cs))
    if Wf is None:
        return None
    itself = _prove_point(rows, Wf)[0]
    return (
        Wf,
        f"an exact rational point W + sum_k mu_k a_k b_k^T ({S.size} rows of the float support "
        "made tight, mu solved exactly) meets every row; the reported point is its float "
        + (
            "rounding, itself proved up to a positive scale (a multiple of it meets every row "
            "exactly)"
            if itself
            else "rounding (not itself proved)"
        ),
        itself,
    )


def _tightest_rows(cs: ConstraintSet, W: np.ndarray, signs_only: bool = False) -> np.ndarray:
    r"""The rows a float point holds (nearly) tight, in the order :func:`_repair_point` keeps
    them: equality rows first, then margin rows by slack :math:`a_j^\top W b_j - c_j`.

    A margin row is tight when its slack is at most :math:`10^{-6}|c_j|` or
    :math:`10^{-9}\,\|a_j\|\,\|b_j\|\,\|W\|_F` (a bound on :math:`|a_j^\top W b_j|`). The
    second test is the one that sees a row with :math:`c_j = 0` held at :math:`\pm 10^{-15}`
    (a vertex of the Phase-1 LP on the boundary of a ReLU pattern's cone, say): left out,
    making its neighbours exactly tight can push it below 0. (A row with :math:`c_j < 0` and
    a negative value is not tight: made tight, it moved the point off other rows.)

    With ``signs_only`` (for rows whose signs decide, :func:`_homogeneous`), a margin row with
    :math:`c_j > 0` is left out, since a positive multiple meets it wherever its value stays
    positive: only the equality rows and the rows with :math:`c_j = 0` held near 0 are made
    tight. Fewer rows, fewer near-dependencies: rows :math:`(x_i - x_j) b^\top` of rounded
    differences are nearly, not exactly, dependent (a Graph-SVM's cycles), and making all of
    them tight can move a dependent one by O(1).
    """
    margins = np.asarray(cs.apply(W))
    slack = np.where(cs.kind != MARGIN, -np.inf, margins - cs.rhs)
    na, nb = cs._row_norms
    size = na * nb * frobenius_norm(W)
    if signs_only:
        near = (slack == -np.inf) | ((cs.rhs == 0) & (slack <= 1e-9 * size))
    else:
        near = (slack <= 1e-6 * np.abs(cs.rhs)) | (slack <= 1e-9 * size)
    order = np.argsort(slack, kind="stable")
    return order[near[order]]


def identical_rows(cs: ConstraintSet) -> tuple[np.ndarray, np.ndarray] | None:
    r"""The classes of identical rows: (the first row of each class, in increasing order; for
    each row, the position of its class's first row in that list), or None when no two rows
    are identical.

    Rows j and k are identical when their exact data are (:class:`ExactRows`: the tokens
    :math:`P_{p_j}, P_{q_j}` and the query :math:`Q_{s_j}`, from which the float rows
    :math:`a_j, b_j` are formed), and so are their kinds and right-hand sides :math:`c_j`. A
    copy of a row is the same constraint: a point meets it exactly when it meets the row, and
    multipliers (a Farkas vector, a dual) of the first rows, each shared equally by the
    copies of its row, are multipliers of all rows. Repeated sequences in a dataset give
    copies; the Phase-1 LP (HiGHS) and the active set's factors slow down by orders of
    magnitude on them.

    Computed once per set and cached on it (its rows are immutable; the classes, two integer
    arrays of length at most N, read-only): the Clarabel-first rule of ``att_svm(norm="nuc")``
    asks before the feasibility check, which asks again.
    """
    if _CLASSES_KEY not in cs.__dict__:
        cs.__dict__[_CLASSES_KEY] = _identical_rows(cs)
    classes: tuple[np.ndarray, np.ndarray] | None = cs.__dict__[_CLASSES_KEY]
    return classes


_CLASSES_KEY = "_svmgeo_identical_rows"
"""Where :func:`identical_rows` caches a set's classes on it (as cached_property does)."""


def _identical_rows(cs: ConstraintSet) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`identical_rows`, computed."""
    rows = ExactRows.build(cs)
    key = np.hstack(
        [
            rows.P[rows.pref],
            rows.P[rows.comp],
            rows.Q[rows.query],
            cs.kind[:, None],
            cs.rhs[:, None],
        ]
    )
    index, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)[1:]
    if index.size == cs.N:
        return None
    order = np.argsort(index)
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    return read_only_view(index[order]), read_only_view(position[inverse.reshape(-1)])


_OPPOSITE_TRIES = 8
"""Most pairs of opposite rows :func:`_farkas_from_opposite_rows` tries to prove."""
_OPPOSITE_ROWS = 64
"""Most rows :func:`_opposite_rows` reads in exact arithmetic (:func:`_exact_direction`,
:math:`O(d)` rational operations each)."""


def _opposite_rows(cs: ConstraintSet) -> list[tuple[int, int, Fraction]]:
    r"""Triples (j, k, :math:`s`), j < k, :math:`a_kb_k^\top = s\,a_jb_j^\top` exactly with
    :math:`s < 0`, of rows parallel in exact arithmetic whose bounds contradict each other
    (:func:`_crossed_pair`): one pair per set of parallel rows, decided in rationals.

    Which rows are parallel is decided exactly (:func:`_exact_direction`) on at most
    :data:`_OPPOSITE_ROWS` rows, which floats pick: rows whose float keys
    :math:`(a_j/a_{j,m}, b_j/b_{j,m'})` (divided by the entry of largest magnitude, the first
    on ties) are equal and whose float bounds per unit, :math:`c_j/(a_{j,m}b_{j,m'})`,
    contradict each other or tie up to their rounding (a lower bound, from a margin row with
    :math:`a_{j,m}b_{j,m'} > 0` or an equality row, above an upper one, from a margin row with
    :math:`a_{j,m}b_{j,m'} < 0` or an equality row, or below it by at most
    :math:`4u` relative, u the unit roundoff: two roundings each, so a crossing in exact
    arithmetic is never hidden, subnormal bounds per unit aside); groups of two rows or more
    only, the crossed groups first, then the tied ones (the exact check decides both); in such
    a group, the largest lower and smallest upper bounds first. Float rows that are exact
    multiples have equal keys (a
    division is correctly rounded, and :math:`\alpha a_i/(\alpha a_m) = a_i/a_m`); exact rows
    that are parallel while their float rows are no exact multiples (token differences that
    round apart, :math:`\mathrm{fl}(3x - 3y) \ne 3\,\mathrm{fl}(x - y)`) are missed, and so
    are the rows beyond the budget. Zero rows are no candidates (:func:`zero_row_farkas`
    proves them).
    """
    N = cs.N
    A, B = np.asarray(cs.A, dtype=float), np.asarray(cs.B, dtype=float)
    at = np.arange(N)
    am, bm = A[at, np.argmax(np.abs(A), axis=1)], B[at, np.argmax(np.abs(B), axis=1)]
    live = np.flatnonzero((am != 0) & (bm != 0))
    if live.size < 2:
        return []
    keys = np.hstack([A[live] / am[live, None], B[live] / bm[live, None]]) + 0.0  # -0.0 -> 0.0
    classes = np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1)
    margin, positive = cs.kind[live] == MARGIN, am[live] * bm[live] > 0
    lower, upper = ~margin | positive, ~margin | ~positive
    with np.errstate(over="ignore", under="ignore"):
        size = cs.rhs[live] / np.abs(am[live]) / np.abs(bm[live])
    bound = np.where(positive, size, -size)  # c_j / (a_m b_m'): y >= it, or y <= it
    largest, smallest = np.full(live.size, -np.inf), np.full(live.size, np.inf)
    np.maximum.at(largest, classes[lower], bound[lower])
    np.minimum.at(smallest, classes[upper], bound[upper])
    order = np.argsort(classes, kind="stable")  # by class, then by row
    counts = np.bincount(classes, minlength=live.size)
    end = np.cumsum(counts)
    start = end - counts
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: no bound on a side
        slack = 4.0 * UNIT_ROUNDOFF * np.maximum(np.abs(largest), np.abs(smallest))
        tied = (counts >= 2) & (largest <= smallest) & (largest >= smallest - slack)
    crossed, tied = np.flatnonzero(largest > smallest), np.flatnonzero(tied)
    crossed = np.r_[  # the group of the first row first, crossed before tied
        crossed[np.argsort(order[start[crossed]])], tied[np.argsort(order[start[tied]])]
    ]
    rows, pairs, budget = ExactRows.build(cs), [], _OPPOSITE_ROWS
    for c in crossed:
        if budget <= 0:
            break
        group = order[start[c] : end[c]]
        rank = np.full(group.size, group.size)  # among the largest lower, smallest upper bounds
        for role, sign in ((lower[group], -1.0), (upper[group], 1.0)):
            members = np.flatnonzero(role)
            ranked = members[np.argsort(sign * bound[group[members]], kind="stable")]
            rank[ranked] = np.minimum(rank[ranked], np.arange(ranked.size))
        picked = np.sort(live[group[np.argsort(rank, kind="stable")[:budget]]])
        budget -= picked.size
        parallel: dict[tuple[Fraction, ...], list[tuple[int, Fraction]]] = {}
        for r in picked.tolist():
            direction = _exact_direction(rows, r)
            if direction is not None:
                parallel.setdefault(direction[0], []).append((r, direction[1]))
        for factors in parallel.values():
            pair = _crossed_pair(cs, factors)
            if pair is not None:
                pairs.append(pair)
    return pairs


def _exact_direction(rows: ExactRows, r: int) -> tuple[tuple[Fraction, ...], Fraction] | None:
    r"""(key, s) with :math:`a_rb_r^\top = s\,\hat a\hat b^\top` exactly, from the exact rows
    (:class:`ExactRows`: :math:`a = P_p - P_q`, :math:`b = Q_s`), or None for a zero row:
    :math:`\hat a = a/a_i`, :math:`\hat b = b/b_l` (the first nonzero entries),
    :math:`s = a_ib_l`, key the entries of :math:`\hat a` then :math:`\hat b`. Two nonzero
    rows are parallel exactly when their keys are equal; then
    :math:`a_kb_k^\top = (s_k/s_j)\,a_jb_j^\top`. :math:`O(d)` rational operations."""
    p, q = _exact_fractions(rows.P[rows.pref[r]]), _exact_fractions(rows.P[rows.comp[r]])
    a = [x - y for x, y in zip(p, q, strict=True)]
    b = _exact_fractions(rows.Q[rows.query[r]])
    i, m = next((x for x in a if x != 0), None), next((y for y in b if y != 0), None)
    if i is None or m is None:
        return None
    return tuple(x / i for x in a) + tuple(y / m for y in b), i * m


def _crossed_pair(
    cs: ConstraintSet, factors: list[tuple[int, Fraction]]
) -> tuple[int, int, Fraction] | None:
    r"""(j, k, :math:`s_k/s_j`), j < k, the two rows whose bounds contradict each other most,
    among rows parallel exactly, :math:`a_rb_r^\top = s_rR` (``factors``: the pairs
    :math:`(r, s_r)`, ascending r), or None where their bounds are consistent.

    The rows constrain :math:`y = \langle R, W\rangle` alone: a margin row to
    :math:`y \ge c_r/s_r` when :math:`s_r > 0` (a lower bound), :math:`y \le c_r/s_r` when
    :math:`s_r < 0` (an upper bound), an equality row to :math:`y = c_r/s_r` (both). They are
    infeasible exactly when the largest lower bound :math:`L`, of a row j, passes the
    smallest upper bound :math:`U`, of a row k (the first rows on ties); then, with
    :math:`a_kb_k^\top = -t\,a_jb_j^\top` (:math:`t = -s_k/s_j`),

    .. math::

        \lambda_j = \frac{t}{t\,c_j + c_k},\qquad \lambda_k = \frac{1}{t\,c_j + c_k}

    is a Farkas vector: :math:`\lambda_ja_jb_j^\top + \lambda_ka_kb_k^\top = 0`,
    :math:`c^\top\lambda = 1`, and :math:`t\,c_j + c_k = -s_k(L - U)`, so
    :math:`\lambda_j = 1/(s_j(L - U)) > 0` where j is a margin row and
    :math:`\lambda_k = -1/(s_k(L - U)) > 0` where k is. No other pair of these rows is
    needed: two of them with a Farkas vector bound :math:`y` by a lower bound above an upper
    one, so :math:`L > U`. Exact: the bounds are compared in rationals."""
    low: tuple[Fraction, int, Fraction] | None = None
    high: tuple[Fraction, int, Fraction] | None = None
    for r, s in factors:
        y = Fraction(float(cs.rhs[r])) / s
        equality = cs.kind[r] != MARGIN
        if (equality or s > 0) and (low is None or y > low[0]):
            low = (y, r, s)
        if (equality or s < 0) and (high is None or y < high[0]):
            high = (y, r, s)
    if low is None or high is None or low[0] <= high[0]:
        return None
    (_, j, sj), (_, k, sk) = low, high
    return (j, k, sk / sj) if j < k else (k, j, sj / sk)


def _pair_farkas(cs: ConstraintSet, j: int, k: int, ratio: Fraction) -> np.ndarray | None:
    r"""The Farkas vector :math:`(t, 1)/(t\,c_j + c_k)` on rows j and k with
    :math:`a_kb_k^\top = -t\,a_jb_j^\top` (``ratio`` :math:`= -t`), computed in rationals and
    rounded to floats, or None (noted: :func:`_beyond_float64`) where an entry is beyond
    float64's range (it overflows, or underflows to 0). :math:`t\,c_j + c_k \ne 0` on a pair
    of :func:`_crossed_pair`. A candidate only: :func:`_prove_farkas` solves exactly on its
    support (the same vector, the null space of two parallel rows having dimension 1)."""
    t = -ratio
    s = t * Fraction(float(cs.rhs[j])) + Fraction(float(cs.rhs[k]))
    try:
        lam = np.array([float(t / s), float(1 / s)])
    except OverflowError:
        lam = np.full(2, np.inf)
    if np.all(np.isfinite(lam) & (lam != 0)):
        return lam
    _beyond_float64(f"the Farkas vector of rows {j} and {k} is beyond float64's range")
    return None


def _farkas_from_opposite_rows(rows: ExactRows) -> tuple[np.ndarray, str] | None:
    r"""An exact Farkas vector on one row or two, or None: a zero row that asks for
    something, :math:`e_j/c_j` (:func:`zero_row_farkas`: :math:`c_j > 0` on a margin row,
    :math:`c_j \ne 0` on an equality row), else two parallel rows whose bounds contradict each
    other (:func:`_opposite_rows`, the first :data:`_OPPOSITE_TRIES` pairs whose vector is
    a float, :func:`_pair_farkas`):

    .. math::

        a_kb_k^\top = -t\,a_jb_j^\top\ \text{exactly},\qquad
        \lambda = \frac{(t, 1)}{t\,c_j + c_k}

    (:func:`_crossed_pair`): a row and a positive multiple of its negation both required (a
    sequence twice, once selecting another token, its query scaled by a power of two, say),
    or two equality rows asking for different values. :func:`_prove_farkas` proves
    :math:`\lambda` exactly on its support.

    The Phase-1 LP's own vector can miss them: on rows that are nearly dependent (queries
    parallel up to rounding) it finds a float certificate on many rows that no exact vector
    on those rows is near."""
    cs = rows.cs
    with np.errstate(over="ignore"):  # 1/c_j = inf for |c_j| < 2^-1024: noted below
        zero = zero_row_farkas(cs)
    if zero is not None:
        if not np.all(np.isfinite(zero)):
            j = int(np.flatnonzero(zero)[0])
            _beyond_float64(f"the Farkas vector of zero row {j}, 1/c_j, is beyond float64's range")
        elif (found := _prove_farkas(rows, zero)) is not None:
            return found
    tries = _OPPOSITE_TRIES
    for j, k, ratio in _opposite_rows(cs):
        if tries <= 0:
            break
        weights = _pair_farkas(cs, j, k, ratio)
        if weights is None:
            continue
        tries -= 1
        lam = np.zeros(cs.N)
        lam[[j, k]] = weights
        found = _prove_farkas(rows, lam)
        if found is not None:
            return found
    return None


_BEYOND_FLOAT64: ContextVar[list[str] | None] = ContextVar("_BEYOND_FLOAT64", default=None)
"""Where a search for an exact Farkas vector stopped at float64's range (its notes), while
:func:`_noting_beyond_float64` listens; None otherwise."""


def _beyond_float64(note: str) -> None:
    """Note that a search for an exact Farkas vector stopped at float64's range."""
    notes = _BEYOND_FLOAT64.get()
    if notes is not None and note not in notes:
        notes.append(note)


@contextlib.contextmanager
def _noting_beyond_float64() -> Iterator[list[str]]:
    """The notes of :func:`_beyond_float64` made inside the block (for a message that says
    why a verdict stays undecided only where it is so)."""
    notes: list[str] = []
    token = _BEYOND_FLOAT64.set(notes)
    try:
        yield notes
    finally:
        _BEYOND_FLOAT64.reset(token)


def _prove_farkas(rows: ExactRows, lam: np.ndarray) -> tuple[np.ndarray, str] | None:
    r"""An exact Farkas vector on the support of the float ``lam``, or None.

    The support is :math:`\{j : |\lambda_j| > \tau \max|\lambda|\}` for
    :math:`\tau = 10^{-12}, 10^{-15}, 0` in turn (a true weight can sit at the float
    solver's tolerance); on each, :func:`_farkas_on_support` solves exactly.
    """
    lam = np.asarray(lam, dtype=float)
    scale = float(np.abs(lam).max(initial=0.0))
    if not np.isfinite(scale) or scale == 0.0:
        return None
    tried: set[tuple[int, ...]] = set()
    for tau in (1e-12, 1e-15, 0.0):
        S = np.flatnonzero(np.abs(lam) > tau * scale)
        if tuple(S) in tried:
            continue
        tried.add(tuple(S))
        found = _farkas_on_support(rows, lam, S)
        if found is not None:
            return found
    return None


def _farkas_on_support(
    rows: ExactRows, lam: np.ndarray, S: np.ndarray
) -> tuple[np.ndarray, str] | None:
    r"""An exact Farkas vector on support S near ``lam``: a point of
    :math:`\{\lambda : \sum_{j \in S}\lambda_j a_jb_j^\top = 0,\ c_S^\top\lambda = 1\}`,
    in exact rational arithmetic (the one point of that set when the null space of the rows
    has dimension 1). Proved when :math:`\lambda_j \ge 0` on margin rows.

    When the d² rows of the outer products are fewer than the support, first the basis
    route (:func:`_point_by_basis`: λ kept on all but d² + 1 columns, one square solve);
    when its point is negative on a margin row or the route does not apply, the orthogonal
    projection of :math:`\lambda_S` onto that set (the closest point), through those rows
    (:func:`_projection_by_rows`) when they are independent, otherwise through the null
    space of :math:`G_{SS}` (:func:`_projection_by_null_space`). The two projections give
    the same point exactly.
    """
    cs = rows.cs

    def negative(point: Ratios) -> bool:
        return any(p < 0 for (p, _), j in zip(point, S, strict=True) if cs.kind[j] == MARGIN)

    exact: Ratios | None
    basis = _point_by_basis(rows, lam, S)
    if basis is not None and not negative(basis[0]):
        exact, nullity = basis
    else:
        found = _projection_by_rows(rows, lam, S)
        exact, nullity = _projection_by_null_space(rows, lam, S) if found is None else found
    if exact is None or negative(exact):
        return None
    out = np.zeros(cs.N)
    try:
        out[S] = [p / q for p, q in exact]  # int division: correctly rounded, as float(Fraction)
    except OverflowError:  # an entry beyond float64 (c^T lam = 1 with c_S subnormal, say)
        _beyond_float64(f"an exact Farkas vector on {S.size} rows is beyond float64's range")
        return None
    return out, (
        f"Farkas certificate proved in exact arithmetic (support {S.size}, null space "
        f"dimension {nullity})"
    )


def _exact_fractions(x: np.ndarray) -> list[Fraction]:
    """The float entries of ``x`` as the rationals they are (dyadic, exact)."""
    return [Fraction(float(v)) for v in x]


Ratios = list[tuple[int, int]]
"""Exact rationals p / q as pairs of integers, q > 0 (not necessarily in lowest terms)."""


def as_fractions(
    found: tuple[Ratios | None, int] | None,
) -> tuple[list[Fraction] | None, int] | None:
    """A projection route's answer (point as :data:`Ratios`, nullity) with the point as
    Fractions: the form in which two routes' answers compare exactly (tests, benchmarks)."""
    if found is None:
        return None
    point, nullity = found
    return (None if point is None else [Fraction(p, q) for p, q in point]), nullity


def _projection_by_null_space(
    rows: ExactRows, lam: np.ndarray, S: np.ndarray
) -> tuple[Ratios | None, int]:
    r"""(:func:`_farkas_on_support`'s point, the null space's dimension) from a basis N of the
    null space of :math:`G_{SS}` (⇔ :math:`\sum_S \lambda_j a_j b_j^\top = 0`, G is PSD):
    :math:`\arg\min_t \|Nt - \lambda_S\|` s.t. :math:`c_S^\top Nt = 1` (a KKT system); None
    for the point when there is none."""
    cs = rows.cs
    G, _ = rows.gram(S, S)
    GS = flint.fmpz_mat([[int(x) for x in row] for row in G])
    basis, nullity = GS.nullspace()
    if nullity == 0:
        return None, 0
    Nb = flint.fmpq_mat([[basis[i, t] for t in range(nullity)] for i in range(S.size)])
    c = flint.fmpq_mat([[flint.fmpq(*x.as_integer_ratio()) for x in _exact_fractions(cs.rhs[S])]])
    cN = c * Nb  # (1, nullity)
    if nullity == 1:
        if cN[0, 0] == 0:
            return None, nullity
        sol = Nb * flint.fmpq_mat([[1 / cN[0, 0]]])
    else:
        lf = flint.fmpq_mat([[flint.fmpq(*x.as_integer_ratio())] for x in _exact_fractions(lam[S])])
        NtN = Nb.transpose() * Nb
        K = flint.fmpq_mat(nullity + 1, nullity + 1)
        for i in range(nullity):
            for t in range(nullity):
                K[i, t] = NtN[i, t]
            K[i, nullity] = cN[0, i]
            K[nullity, i] = cN[0, i]
        rhs = flint.fmpq_mat(nullity + 1, 1)
        Ntl = Nb.transpose() * lf
        for i in range(nullity):
            rhs[i, 0] = Ntl[i, 0]
        rhs[nullity, 0] = 1
        try:
            tz = K.solve(rhs)
        except (ZeroDivisionError, ValueError):
            return None, nullity
        sol = Nb * flint.fmpq_mat([[tz[i, 0]] for i in range(nullity)])
    return [(int(sol[i, 0].p), int(sol[i, 0].q)) for i in range(S.size)], nullity


def _row_matrix(rows: ExactRows, S: np.ndarray) -> tuple[list[list[int]], Any, int] | None:
    r"""(M, B, s) for the rows S: :math:`M = [\mathrm{vec}(a_jb_j^\top)]_{j \in S}` (d² × |S|)
    as lists of Python integers, :math:`B = [M; s\,c_S^\top]` as FLINT integers, and the
    least common denominator s of :math:`c_S`; tokens and queries are scaled by powers of two
    to integers (exactly), so M is the rows' matrix up to one positive factor. None when that
    scaling overflows."""
    cs = rows.cs
    with np.errstate(over="ignore"):  # integers: scaled by powers of two, exactly
        tokens = np.ldexp(rows.P, -_ulp_exp(rows.P))
        queries = np.ldexp(rows.Q, -_ulp_exp(rows.Q))
    if not (np.all(np.isfinite(tokens)) and np.all(np.isfinite(queries))):
        return None
    columns = []
    for p, q, s in zip(rows.pref[S], rows.comp[S], rows.query[S], strict=True):
        a = [int(x) - int(y) for x, y in zip(tokens[p].tolist(), tokens[q].tolist(), strict=True)]
        b = [int(y) for y in queries[s].tolist()]
        columns.append([x * y for x in a for y in b])
    M = [list(r) for r in zip(*columns, strict=True)]  # d² rows
    c = _exact_fractions(cs.rhs[S])
    c_scale = math.lcm(*(x.denominator for x in c))
    return M, flint.fmpz_mat([*M, [int(x * c_scale) for x in c]]), c_scale


def _point_by_basis(rows: ExactRows, lam: np.ndarray, S: np.ndarray) -> tuple[Ratios, int] | None:
    r"""(An exact point of :math:`\{\lambda : M\lambda = 0,\ c_S^\top\lambda = 1\}` near
    :math:`\lambda_S`, the null space's dimension) by a basis of :math:`B = [M; c_S^\top]`
    (:func:`_row_matrix`), for |S| > d²:

    .. math::

        B_R\,\lambda_R = e_{d^2+1} - B_F\,\lambda_F ,\qquad F = S \setminus R ,

    with :math:`\lambda_F` kept at its float values (exact dyadics) and R, d² + 1 columns,
    chosen by a column-pivoted QR of :math:`B\,\mathrm{diag}(\lambda_S)` in floats (large
    weights on well-conditioned columns). One square system with B's entries, where
    :func:`_projection_by_rows` solves one with :math:`BB^\top`'s, twice their size: 2.1 to 3.2
    times faster from d = 10 up in svmgeo's measurement (docs/certificates.md). The point is checked exactly
    (:math:`M\lambda = 0`, :math:`c_S^\top\lambda = 1`); an invertible :math:`B_R` proves
    rank M = d², so the null space has dimension |S| − d². Its entries on F are the float
    λ's, so their signs are λ's; those on R are near λ's when :math:`B_R` is well
    conditioned. None when this route does not apply or :math:`B_R` is singular (or singular
    modulo the prime :data:`_PRIME`, a cheap test that spares a failing exact solve)."""
    d = rows.cs.d
    if S.size <= d * d or (built := _row_matrix(rows, S)) is None:
        return None
    _, B, c_scale = built
    with np.errstate(all="ignore"):  # floats for the choice of R only
        a = rows.P[rows.pref[S]] - rows.P[rows.comp[S]]
        outer = (a[:, :, None] * rows.Q[rows.query[S]][:, None, :]).reshape(S.size, d * d)
        scaled = np.vstack([outer.T, rows.cs.rhs[S]])
        top = np.abs(scaled).max(axis=1, keepdims=True)
        scaled = scaled / np.where(top > 0, top, 1.0) * np.abs(lam[S])
    if not np.all(np.isfinite(scaled)):
        return None
    pivots = sla.qr(scaled, pivoting=True, mode="r")[1]
    weights = _exact_fractions(lam[S])
    R = np.sort(pivots[: d * d + 1])
    free = np.setdiff1d(np.arange(S.size), R)
    w_scale = math.lcm(*(x.denominator for x in weights))
    w = [int(x * w_scale) for x in weights]  # lambda_S * w_scale
    rhs = flint.fmpz_mat([[0]] * (d * d) + [[c_scale * w_scale]])
    if free.size:
        rhs -= flint.fmpz_mat([[B[i, j] for j in free] for i in range(d * d + 1)]) * (
            flint.fmpz_mat([[w[j]] for j in free])
        )
    BR = flint.fmpz_mat([[B[i, j] for j in R] for i in range(d * d + 1)])
    if flint.nmod_mat(BR, _PRIME).rank() <= d * d:  # singular modulo p: likely over Q too,
        return None  # where the exact solve would find out at a solve's cost
    try:
        solution = cast(flint.fmpq_mat, BR.solve(rhs))
    except ZeroDivisionError:
        return None
    y, den = solution.numer_denom()
    scale = int(den) * w_scale
    z = [0] * S.size
    for k, j in enumerate(R):
        z[j] = int(y[k, 0])
    for j in free:
        z[j] = w[j] * int(den)
    target = flint.fmpz_mat([[0]] * (d * d) + [[c_scale * scale]])
    if scale <= 0 or B * flint.fmpz_mat([[x] for x in z]) != target:  # exact
        return None
    return [(x, scale) for x in z], S.size - d * d


_PRIME = 2**61 - 1
"""The prime of the rank test in :func:`_projection_by_rows`."""


def _projection_by_rows(
    rows: ExactRows, lam: np.ndarray, S: np.ndarray
) -> tuple[Ratios | None, int] | None:
    r"""(:func:`_farkas_on_support`'s point, the null space's dimension) from the rows of
    :math:`B = [M; c_S^\top]`, :math:`M = [\mathrm{vec}(a_jb_j^\top)]_{j \in S}` (d² × |S|):

    .. math::

        \lambda^\star = \lambda_S - B^\top (BB^\top)^{-1}(B\lambda_S - e_{d^2+1}),

    the projection onto :math:`\{\lambda : M\lambda = 0,\ c_S^\top\lambda = 1\}`, exact
    (:math:`BB^\top` is (d² + 1) × (d² + 1), where the null space route factors the |S| × |S|
    :math:`G_{SS} = M^\top M` with entries of twice the size). Used when M has full row rank
    d² < |S|, proved by a nonzero d² × d² minor modulo a prime (the rank modulo p is at most
    the rank over the rationals; B of rank d² + 1 modulo p has one, else M's own rank
    modulo p is taken): then the null space has dimension |S| − d², and
    :math:`BB^\top` is singular exactly when :math:`c_S` lies in the row space of M, i.e.
    when no Farkas vector has support in S (the point is None). The point is checked exactly
    (:math:`M\lambda^\star = 0`, :math:`c_S^\top\lambda^\star = 1`). None when this route
    does not apply (the null space route then decides)."""
    d = rows.cs.d
    if S.size <= d * d or (built := _row_matrix(rows, S)) is None:
        return None
    M, B, c_scale = built
    # rank(B mod p) = d² + 1 proves rank(M) = d² (one row fewer); else M's own rank decides
    if flint.nmod_mat(B, _PRIME).rank() <= d * d and flint.nmod_mat(M, _PRIME).rank() < d * d:
        return None
    weights = _exact_fractions(lam[S])
    w_scale = math.lcm(*(x.denominator for x in weights))
    w = flint.fmpz_mat([[int(x * w_scale)] for x in weights])  # lambda_S * w_scale
    target = flint.fmpz_mat([[0]] * (d * d) + [[c_scale * w_scale]])
    try:  # (BB^T) y = B lambda_S - e, all scaled by w_scale
        solution = cast(flint.fmpq_mat, (B * B.transpose()).solve(B * w - target))
    except ZeroDivisionError:
        return None, S.size - d * d
    y, den = solution.numer_denom()
    z = w * den - B.transpose() * y  # lambda* = z / (den w_scale)
    scale = int(den * w_scale)  # no gcd taken: the ratios are only compared with 0 and rounded
    if scale <= 0 or B * z != target * den:  # M z = 0 and c^T z = scale: exact
        return None
    return [(int(z[i, 0]), scale) for i in range(S.size)], S.size - d * d


_ALL_ROWS = 100
"""Largest N for the second Farkas attempt on every row (an exact N×N null space)."""
_HIGHS_SMALLEST, _HIGHS_LARGEST = 1e-9, 1e15
"""HiGHS's ``small_matrix_value`` and ``large_matrix_value``: constraint entries below the
first in magnitude are dropped, a model with one at or above the second is refused."""


def _farkas_in_null_space(rows: ExactRows, S: np.ndarray) -> np.ndarray | None:
    r"""A float Farkas vector :math:`\lambda = Nt` on the rows S from an LP over the *exact*
    null space N of :math:`G_{SS}`:

    .. math::

        \text{find } t:\quad (Nt)_j \ge 0\ (j \in S \cap \mathcal M),\qquad
        s\,c_S^\top N t = 1, \qquad \lambda = s\,Nt,

    with :math:`s = 1`, or where the largest entry of :math:`c_S^\top N` is below
    :data:`_HIGHS_SMALLEST` (HiGHS would drop the whole row: rows inconsistent by one ulp,
    :math:`c_S^\top N \sim 2^{-52}`) or not below :data:`_HIGHS_LARGEST` (HiGHS would refuse
    the model: bounds of 1e200 one ulp apart) the power of two that brings it into [1, 2), an
    exact scaling. The float solve may drop a row whose weight is at its tolerance (e.g.
    1e-12 of the others); on the exact null space that row is forced back. The LP's vertex
    has a minimal support, which :func:`_prove_farkas` then re-solves exactly. None where no
    LP vertex is found, or where that power of two passes float64's largest, :math:`2^{1023}`
    (:math:`c_S^\top N` below :math:`2^{-1023}`; N's columns have largest entry in [1, 2), so
    with a one-dimensional null space :math:`\lambda` with :math:`c^\top\lambda = 1` has an
    entry of :math:`2^{1023}` or more): subnormal bounds, say (which the feasibility check
    refuses where every bound is that small), handed to :func:`prove_verdict` in a hand-made
    verdict.
    """
    cs = rows.cs
    G, _ = rows.gram(S, S)
    basis, nullity = flint.fmpz_mat([[int(x) for x in row] for row in G]).nullspace()
    if nullity == 0:
        return None
    Nb = np.empty((S.size, nullity))
    for t in range(nullity):  # each column scaled to max ~1 (its entries may exceed floats)
        col = [int(basis[i, t]) for i in range(S.size)]
        unit = 1 << max(0, max(abs(x) for x in col).bit_length() - 1)
        Nb[:, t] = [x / unit for x in col]
    cN = cs.rhs[S] @ Nb
    top = float(np.abs(cN).max())
    if top == 0.0 or not np.isfinite(top):
        return None
    kept = _HIGHS_SMALLEST <= top < _HIGHS_LARGEST  # else 2^-e: largest entry in [1, 2)
    shift = 0 if kept else 1 - math.frexp(top)[1]
    if shift >= LARGEST_EXPONENT:  # c_S^T N subnormal: lam = s N t would pass float64's range
        _beyond_float64(
            f"the exact null space of {S.size} rows needs a scale beyond float64's range "
            f"(2^{shift})"
        )
        return None
    s = math.ldexp(1.0, shift)
    margin = cs.kind[S] == MARGIN
    lp = HiGHSBackend.linprog(
        np.zeros(nullity),
        "the exact Farkas search over the null space",
        A_ub=-Nb[margin] if margin.any() else None,
        b_ub=np.zeros(int(margin.sum())) if margin.any() else None,
        A_eq=(cN * s)[None, :],
        b_eq=[1.0],
        bounds=[(None, None)] * nullity,
    )
    if lp.status != 0:
        return None
    lam = np.zeros(cs.N)
    lam[S] = (Nb @ lp.x) * s  # c^T lam = 1 again (a power of two: exact where it stays normal)
    return lam


def exact_multiple(cs: ConstraintSet, W: np.ndarray) -> np.ndarray | None:
    r"""A positive multiple of ``W`` whose *exact* margins meet every row, or None.

    .. math::

        t^\star = \min\{t > 0 : t\,a_j^\top W b_j \ge c_j\ (j \in \mathcal M),\
        t\,a_j^\top W b_j = c_j\ (j \in \mathcal E)\}

    from W's exact margins (:meth:`ExactRows.margins`, :func:`_scale_interval`). ``W`` itself
    when :math:`t = 1` meets every row; else :math:`\mathrm{fl}(t^\star(1 + 2^{-40}))\,W` when
    its own exact margins meet every row (a scaling that rounds W's entries, checked again);
    else :math:`2^k W` with :math:`2^k \ge t^\star` (exact: every margin is :math:`2^k`
    times W's) where that meets every row. None when no multiple is found (no positive
    :math:`t` meets the rows, or neither multiple does: equality rows with :math:`c_j \ne 0`,
    say, or a multiple beyond float64's range). Limb arithmetic on every row: for a point
    reported as the answer (an upper bound on the optimum), not for the solves' own path.
    Float margins can miss the exact ones by far more than the rows' size where
    :math:`\|W\|` is huge and the margins cancel (collinear tokens,
    :math:`\|W\| \sim 10^{17}`: 1.43 in floats, 0.858 exactly)."""
    if not np.all(np.isfinite(W)):
        return None
    rows = ExactRows.build(cs)
    c = [Fraction(float(x)) for x in cs.rhs]

    def meets(t: Fraction, m: _Limbs) -> bool:
        """Whether t times the exact margins ``m`` meet every row."""
        values = [t * _fraction(int(x), m.exp) for x in m.ints()]
        return all(
            (v >= c[j]) if cs.kind[j] == MARGIN else (v == c[j]) for j, v in enumerate(values)
        )

    W = np.asarray(W, dtype=float)
    m = rows.margins(W)
    if meets(Fraction(1), m):
        return W
    t = _scale_interval(cs, m.ints(), m.exp)
    if t is None:
        return None
    with np.errstate(over="ignore"):
        if t <= _LARGEST_FLOAT:  # float(t) beyond it raises (np.errstate spares Python floats)
            scaled = float(t) * (1.0 + 2.0**-40) * W
            if np.all(np.isfinite(scaled)) and meets(Fraction(1), rows.margins(scaled)):
                return scaled
        k = max(0, t.numerator.bit_length() - t.denominator.bit_length() - 1)
        while Fraction(2) ** k < t:
            k += 1
        doubled = np.ldexp(W, k)
    if np.all(np.isfinite(doubled)) and meets(Fraction(2) ** k, m):
        return doubled
    return None


def meet_margins(cs: ConstraintSet, W: np.ndarray) -> np.ndarray:
    r"""``W`` scaled by a power of two so that every margin row meets its bound in floats.

    .. math::

        W' = 2^k W,\qquad k = \min\{k \ge 0 : 2^k\,\mathrm{fl}(a_j^\top W b_j) \ge c_j
        \ \forall j \in \mathcal M,\ c_j > 0\} .

    A power of two is exact: the float margins and the exact margins of :math:`W'` are
    :math:`2^k` times those of :math:`W`, so an exact proof of :math:`W` (a positive multiple
    meets every row) holds for :math:`W'`, which now keeps the promise of
    :attr:`FeasibilityResult.point` (every margin :math:`\ge c_j`). ``W`` is returned as it
    is when it already meets the rows, when a positive-rhs row has a float margin
    :math:`\le 0`, when an equality row has :math:`c_j \ne 0` (scaling would break it), or
    when :math:`2^k W` would break a margin row with :math:`c_j < 0` (its negative margin
    doubles too).
    """
    margin, positive = cs._margin_rows, cs._positive_rows
    if not np.any(positive) or np.any(cs.rhs[~margin] != 0):
        return W
    with np.errstate(over="ignore", invalid="ignore"):  # A W overflows at bounds of 1e308
        margins = cs.apply(W)
    m, c = margins[positive], cs.rhs[positive]
    if np.all(m >= c) or np.any(m <= 0) or not np.all(np.isfinite(m)):
        return W
    # log2(c) - log2(m), not log2(c / m): a subnormal margin makes c / m overflow to inf
    k = max(0, math.ceil(float(np.max(np.log2(c) - np.log2(m)))))
    with np.errstate(over="ignore"):  # a 2^k that overflows is a probe that fails: W as it is
        for _ in range(4):  # log2 and the division round: at most a step or two more
            if np.all(np.ldexp(m, k) >= c):
                break
            k += 1
        if not np.all(np.ldexp(margins[margin], k) >= cs.rhs[margin]):
            return W
        scaled = np.ldexp(np.asarray(W, dtype=float), k)
    return scaled if np.all(np.isfinite(scaled)) else W


def _farkas_everywhere(
    rows: ExactRows, S: np.ndarray | None = None
) -> tuple[np.ndarray, str] | None:
    """A Farkas vector proved exactly from the LP over the exact null space of :math:`G_{SS}`
    (:func:`_farkas_in_null_space`; S every row by default), or None."""
    wider = _farkas_in_null_space(rows, np.arange(rows.cs.N) if S is None else S)
    return None if wider is None else _prove_farkas(rows, wider)


def _proved_infeasible(
    done: Callable[..., FeasibilityResult], farkas: tuple[np.ndarray, str], message: str
) -> FeasibilityResult:
    """The verdict INFEASIBLE with a Farkas vector proved exactly (residual 0; no point)."""
    return done(
        feasible=False,
        proof="exact",
        status=Status.INFEASIBLE,
        point=None,
        farkas=farkas[0],
        residual=0.0,
        message=message,
    )


def _farkas_beside_point(rows: ExactRows, W: np.ndarray) -> tuple[np.ndarray, str] | None:
    r"""A Farkas vector proved exactly for rows whose float point ``W`` failed its exact
    proof and repair (rows inconsistent by one ulp: :math:`W_{11} \ge 1`,
    :math:`-W_{11} \ge -1 + 2^{-52}`, which float solvers meet), or None.

    Sought on the exact null space of :math:`G_{SS}` (:func:`_farkas_everywhere`): S every
    row when :math:`N \le` :data:`_ALL_ROWS`, else the rows ``W`` holds tight
    (:func:`_tightest_rows`) when at most :data:`_ALL_ROWS`: a heuristic (the proof is
    exact). Where the slacks :math:`s_j = a_j^\top W b_j - c_j` are at least
    :math:`-\varepsilon_j`, :math:`\sum_j \lambda_j s_j = -c^\top\lambda < 0` bounds a
    support row's slack by :math:`\sum_k \lambda_k \varepsilon_k / \lambda_j`: small, so the
    row tight, unless :math:`\lambda_j` is small against the others.
    """
    cs = rows.cs
    S = np.arange(cs.N) if cs.N <= _ALL_ROWS else np.sort(_tightest_rows(cs, W))
    return _farkas_everywhere(rows, S) if 0 < S.size <= _ALL_ROWS else None


def _decide_on_all_rows(
    res: FeasibilityResult, rows: ExactRows, done: Callable[..., FeasibilityResult]
) -> FeasibilityResult:
    """A ``NUMERICAL_ERROR`` verdict (no point, no Farkas vector; N <= :data:`_ALL_ROWS`)
    decided exactly where one of two cheap attempts succeeds: a Farkas vector from the LP over
    the exact null space of all of G (:func:`_farkas_in_null_space`), or an exact point that
    makes the first independent rows tight (equality rows first, then by decreasing
    :math:`|c_j|`) and meets every row (the reported point is its float rounding, as for a
    feasible verdict; the message says whether that rounding is itself proved); else it stays
    as it is (``proof=None``)."""
    cs = rows.cs
    farkas = _farkas_everywhere(rows)
    if farkas is not None:
        return _proved_infeasible(
            done, farkas, f"infeasible: {farkas[1]} (the float check: {res.message})"
        )
    key = np.where(cs.kind != MARGIN, np.inf, np.abs(cs.rhs))
    repaired = _repair_point(rows, None, np.argsort(-key, kind="stable"))
    if repaired is not None:
        point = repaired[0]
        return done(
            feasible=True,
            proof="exact",
            status=Status.OPTIMAL,
            point=point,
            residual=float(point_violations(cs, cs.apply(point)).max(initial=0.0)),
            message=f"feasible: {repaired[1]} (the float check: {res.message})",
        )
    return done(proof=None)


def prove_verdict(res: FeasibilityResult) -> FeasibilityResult:
    r"""Re-check a float verdict exactly; return it with ``proof="exact"`` or as undecided.

    * feasible: the exact margins of ``res.point`` (a positive multiple meets every row), else
      an exact point on the rows the float point holds tightest, else (the verdict turned to
      INFEASIBLE) an exact Farkas vector on those rows or every row
      (:func:`_farkas_beside_point`);
    * infeasible: an exact Farkas vector on the float certificate's support, else an exact
      point that makes that support tight (the rows a huge-norm W barely meets);
    * otherwise, and whenever no proof is found: ``proof=None`` with an
      ``*_INACCURATE`` status and a message saying the verdict is undecided.
    """
    cs = res.constraints
    if cs.N == 0 or res.status is Status.SOLVER_ERROR:
        return replaced(res, proof="exact" if cs.N == 0 else None)
    if res.status is Status.NUMERICAL_ERROR and cs.N > _ALL_ROWS:
        return replaced(res, proof=None)
    start = time.perf_counter()
    rows = ExactRows.build(cs)
    extras = dict(res.extras)

    def done(**kw: Any) -> FeasibilityResult:
        extras["exact_seconds"] = time.perf_counter() - start
        extras["exact_rows"] = rows.source
        feasible, point = kw.get("feasible", res.feasible), kw.get("point", res.point)
        if feasible and point is not None:  # the point's contract: margins >= c_j
            kw["point"] = meet_margins(cs, point)
            if kw["point"] is not res.point:  # the residual is the reported point's
                kw["residual"] = float(point_violations(cs, cs.apply(kw["point"])).max(initial=0.0))
        return replaced(res, extras=extras, **kw)

    if res.feasible and res.point is not None:
        ok, why = _prove_point(rows, res.point)
        if ok:
            return done(proof="exact", message=f"{res.message}; proved: {why}")
        # first only the rows whose signs no positive multiple fixes, then every tight row
        few = _tightest_rows(cs, res.point, signs_only=True) if _homogeneous(cs) else None
        repaired = None if few is None else _repair_point(rows, res.point, few)
        if repaired is None:
            every = _tightest_rows(cs, res.point)
            if few is None or not np.array_equal(every, few):
                repaired = _repair_point(rows, res.point, every)
        if repaired is not None:
            proved = f"{res.message}; proved: {repaired[1]}"
            return done(proof="exact", point=repaired[0], message=proved)
        farkas = _farkas_beside_point(rows, res.point)
        if farkas is not None:
            return _proved_infeasible(
                done,
                farkas,
                f"infeasible: {farkas[1]} (the float check: {res.message}, but its point "
                f"failed in exact arithmetic: {why})",
            )
        return done(
            proof=None,
            status=Status.OPTIMAL_INACCURATE,
            message=f"undecided: {res.message}, but not proved in exact arithmetic ({why})",
        )
    if res.status is Status.NUMERICAL_ERROR:  # no point, no Farkas vector: decide exactly
        return _decide_on_all_rows(res, rows, done)
    if not res.feasible and res.farkas is not None:
        lam = np.asarray(res.farkas, dtype=float)
        with _noting_beyond_float64() as beyond:
            farkas = _prove_farkas(rows, lam)
            if farkas is None and cs.N <= _ALL_ROWS:
                farkas = _farkas_everywhere(rows)
            if farkas is None:  # a row and its negation, say (the LP's vector may miss them)
                farkas = _farkas_from_opposite_rows(rows)
            support = np.flatnonzero(lam)
            if farkas is None and cs.N > _ALL_ROWS and 0 < support.size <= _ALL_ROWS:
                farkas = _farkas_everywhere(rows, support)  # a vertex of the exact null space
        if farkas is not None:
            return _proved_infeasible(
                done,
                farkas,
                f"{res.message}; proved: {farkas[1]}"
                if res.status is Status.INFEASIBLE
                else f"infeasible: {farkas[1]} (the float check: {res.message})",
            )
        order = np.argsort(-np.abs(lam), kind="stable")  # the heaviest rows first
        repaired = _repair_point(rows, None, order[lam[order] != 0])
        if repaired is not None and not repaired[2]:
            # feasible in exact arithmetic, but only at a scale where floats fail the rows
            # (rows dependent up to round-off): no usable point, so no flipped verdict
            extras["exact_feasible"] = True
            return done(
                proof=None,
                status=Status.INFEASIBLE_INACCURATE,
                message=(
                    f"undecided: the float solve answered {res.status} ({res.message}); in "
                    "exact arithmetic the rows are feasible, but only through a point whose "
                    "float rounding fails them (rows dependent up to round-off?)"
                ),
            )
        if repaired is not None:
            return done(
                feasible=True,
                proof="exact",
                status=Status.OPTIMAL,
                point=repaired[0],
                farkas=None,
                residual=0.0,
                message=(
                    f"feasible: the float solve answered {res.status} ({res.message}), but "
                    f"{repaired[1]}"
                ),
            )
        return done(
            proof=None,
            status=Status.INFEASIBLE_INACCURATE,
            message=(
                f"undecided: the float solve answered {res.status} ({res.message}), but its "
                "Farkas vector is not exact on its support and no exact point was found"
                + "".join(f"; {note}" for note in beyond)
            ),
        )
    return done(proof=None)
