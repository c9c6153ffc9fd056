# SPDX-License-Identifier: BSD-3-Clause
r"""Gen-SVM: selected sets from probabilities, the directional and finite components (SPEC §3).

.. math::

    W^{\mathrm{svm}} = \arg\min \|W\|_F \ \text{s.t.}\
    (x_{it} - x_{i\tau})^\top W z_i = 0\ (t, \tau \in O_i),\
    (x_{it} - x_{i\tau})^\top W z_i \ge 1\ (t \in O_i, \tau \in \bar O_i),

    W^{\mathrm{fin}} = \arg\min \|W\|_F \ \text{s.t.}\
    (x_{it} - x_{i\tau})^\top W z_i = \log(s_{it}/s_{i\tau})\ (t, \tau \in O_i),
    \qquad W^{\mathrm{eq}} = W^{\mathrm{fin}} + R\, W^{\mathrm{svm}} .

Status: the SVM-equivalence (that GD's W approaches :math:`W^{\mathrm{eq}}` for nonlinear heads)
is the paper's *proposed* equivalence, a *conjecture* with no theorem behind it (TF-SVM §6:
"we propose"); svmgeo computes its prediction and measures it, never asserts it. The
first-order masked-token costs and the variant that drops zero-cost rows are *svmgeo's
extension* (MATH-NOTES §2), a hypothesis supported by six instances, not a theorem.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.optimize import linprog

from .._errors import ProblemError, SolverError
from .._linalg import correlation
from .._summary import summarized
from .._validation import check_array, check_bool, check_option, check_real
from ..constraints import EQUALITY, check_selected, pair_constraints, selected_set_constraints
from ..data import TokenData
from ..selection import check_data as _check_data
from ..solvers import (
    CONJECTURE,
    GenSVMResult,
    SVMResult,
    finish_gen_svm,
    solve_for,
    warns_if_inaccurate,
)

__all__ = ["GenSVMResult", "SelectedSets", "gen_svm", "selected_sets"]

_SUM_TOL = 1e-6


@summarized
@dataclass(frozen=True, eq=False)
class SelectedSets:
    r"""Selected, masked and ambiguous tokens read off softmax probabilities.

    Attributes
    ----------
    selected : ndarray of bool, shape (n, T) or (n, K, T)
        :math:`s_{it} \ge` ``selected_tol`` (the set :math:`O_i`).
    masked : ndarray of bool, same shape
        :math:`s_{it} \le` ``masked_tol`` (the set :math:`\bar O_i`).
    ambiguous : ndarray of bool, same shape
        Neither: the 1e-3 / 1e-6 rule does not decide these tokens.
    selected_tol, masked_tol : float
    """

    selected: np.ndarray
    masked: np.ndarray
    ambiguous: np.ndarray
    selected_tol: float
    masked_tol: float

    @property
    def any_ambiguous(self) -> bool:
        return bool(np.any(self.ambiguous))


def _check_probs(probs: Any, name: str, where: str) -> np.ndarray:
    P = check_array(
        probs, name, ndim=(2, 3), hint="Pass softmax probabilities of shape (n, T) or (n, K, T)."
    )
    if np.any(P < 0):
        where_bad = tuple(int(x) for x in np.argwhere(P < 0)[0])
        raise ProblemError(
            f"{name} must be nonnegative probabilities in {where}; found {P[where_bad]!r} at "
            f"index {where_bad}."
        )
    sums = P.sum(axis=-1)
    bad = np.abs(sums - 1.0) > _SUM_TOL
    if np.any(bad):
        row = tuple(int(x) for x in np.argwhere(bad)[0])
        raise ProblemError(
            f"{name} must sum to 1 over tokens (last axis, tolerance {_SUM_TOL:g}) in {where}; "
            f"row {row} sums to {sums[row]:.9g}. Pass softmax outputs, or normalise with "
            f"{name} / {name}.sum(axis=-1, keepdims=True)."
        )
    return P


def selected_sets(
    probs: Any, *, selected_tol: float = 1e-3, masked_tol: float = 1e-6
) -> SelectedSets:
    r"""Selected sets :math:`O_i` from attention probabilities (SPEC §3).

    .. math::

        O_i = \{t : s_{it} \ge \texttt{selected\_tol}\},\qquad
        \bar O_i = \{t : s_{it} \le \texttt{masked\_tol}\},

    and the tokens in between are *ambiguous* (flagged, with a warning).

    Parameters
    ----------
    probs : array of shape (n, T) or (n, K, T)
        Nonnegative, summing to 1 over the last axis (tolerance 1e-6).
    selected_tol : float, default 1e-3
    masked_tol : float, default 1e-6
        ``0 <= masked_tol < selected_tol <= 1``.

    Returns
    -------
    SelectedSets

    Raises
    ------
    ProblemError
        ``probs`` not a distribution per row, or thresholds out of order.

    Examples
    --------
    >>> import svmgeo as sg
    >>> sg.selected_sets([[0.6, 0.4 - 1e-8, 1e-8]]).selected
    array([[ True,  True, False]])
    """
    where = "selected_sets"
    P = _check_probs(probs, "probs", where)
    selected_tol = check_real(
        selected_tol, "selected_tol", low=0.0, high=1.0, low_open=True, where=where
    )
    masked_tol = check_real(masked_tol, "masked_tol", low=0.0, high=1.0, where=where)
    if not masked_tol < selected_tol:
        raise ProblemError(
            f"masked_tol must be below selected_tol in {where}; got masked_tol={masked_tol:g} "
            f">= selected_tol={selected_tol:g}."
        )
    sel = selected_tol <= P
    mas = masked_tol >= P
    amb = ~sel & ~mas
    if np.any(amb):
        first = tuple(int(x) for x in np.argwhere(amb)[0])
        warnings.warn(
            f"{int(amb.sum())} token probabilit(ies) lie between masked_tol={masked_tol:g} and "
            f"selected_tol={selected_tol:g} (first at index {first}: {P[first]:.3g}); those "
            "tokens are neither selected nor masked. Train longer or adjust the thresholds.",
            UserWarning,
            stacklevel=2,
        )
    return SelectedSets(sel, mas, amb, selected_tol, masked_tol)


class _Head:
    r"""The label-weighted head :math:`g(x) = Y h(x)` of one query as a sum of linear and ReLU
    parts, with one-sided directional derivatives at a point (kinks within ``kink_tol``)."""

    def __init__(self, head: str, v: np.ndarray, V: np.ndarray | None, lam: float, y: float):
        self.head, self.v, self.V, self.lam, self.y = head, v, V, lam, y

    def value(self, x: np.ndarray) -> float:
        if self.head == "relu":
            assert self.V is not None
            return self.y * float(self.v @ np.maximum(self.V.T @ x, 0.0))
        return self.y * float(self.v @ x - self.lam * (x @ x))

    def pieces(
        self, x: np.ndarray, kink: float | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""``(a, K, w)``: :math:`D^+g(x; u) = a^\top u + \sum_j w_j \max(K_j^\top u, 0)`;
        unit j is on its kink where :math:`|V_j^\top x| \le` ``kink`` (one per unit, or one for
        all)."""
        d = x.shape[0]
        if self.head != "relu":
            a = self.y * (self.v - 2.0 * self.lam * x)
            return a, np.zeros((d, 0)), np.zeros(0)
        assert self.V is not None
        pre = self.V.T @ x
        on_kink = np.abs(pre) <= kink
        active = (pre > 0) & ~on_kink
        a = self.y * (self.V[:, active] @ self.v[active])
        return a, self.V[:, on_kink], self.y * self.v[on_kink]


def _directional(a: np.ndarray, K: np.ndarray, w: np.ndarray, u: np.ndarray) -> float:
    return float(a @ u + w @ np.maximum(K.T @ u, 0.0))


_MAX_KINK_UNITS = 12
"""Most ReLU units on their kink at one composition (:func:`_envelope_gain`: 2^J LPs)."""


def _envelope_gain(
    a: np.ndarray, K: np.ndarray, w: np.ndarray, XO: np.ndarray, u0: np.ndarray, flat: float
) -> float:
    r""":math:`\sup D^+g(\bar x; X_O^\top\delta + u_0)` over :math:`\sum\delta = 0` (+inf when
    unbounded): one LP per sign pattern of the kink units. Slopes along the simplex of at most
    ``flat`` count as zero (a composition that is stationary up to round-off)."""
    m = XO.shape[0]
    best = -np.inf
    J = K.shape[1]
    for pattern in range(2**J):
        on = np.array([(pattern >> j) & 1 for j in range(J)], dtype=bool)
        c = a + K[:, on] @ w[on]  # objective in u
        obj = XO @ c
        obj = obj - obj.mean()  # only the part seen by sum(delta) = 0
        obj[np.abs(obj) <= flat] = 0.0
        # sign constraints sigma_j K_j^T (XO^T delta + u0) >= 0, as A_ub delta <= b_ub
        sig = np.where(on, 1.0, -1.0)
        out = linprog(
            -obj,
            A_ub=-(sig[:, None] * (K.T @ XO.T)) if J else None,
            b_ub=sig * (K.T @ u0) if J else None,
            A_eq=np.ones((1, m)),
            b_eq=[0.0],
            bounds=[(None, None)] * m,
            method="highs",
        )
        if out.status == 3:
            return np.inf
        if out.status == 0:
            best = max(best, float(-out.fun + c @ u0))
    return best


def _masked_costs(
    data: TokenData,
    S: np.ndarray,
    P: np.ndarray,
    head: str,
    v: Any,
    V: Any,
    lam: float,
    kink_tol: float,
    zero_tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fixed and envelope first-order costs of the masked tokens, and the zero-cost mask."""
    n, K, T = S.shape
    U, vis = np.asarray(data.values), np.asarray(data.visible)  # the head reads u_it
    Y = np.asarray(data.labels, dtype=float).reshape(n, K)
    fixed = np.full((n, K, T), np.nan)
    env = np.full((n, K, T), np.nan)
    zero = np.zeros((n, K, T), dtype=bool)
    for i in range(n):
        for k in range(K):
            O = np.flatnonzero(S[i, k])
            masked = np.flatnonzero(vis[i, k] & ~S[i, k])
            if masked.size == 0:
                continue
            g = _Head(head, v, V, lam, float(Y[i, k]))
            w = P[i, k, O] / P[i, k, O].sum()  # the composition inside O_ik
            ubar = w @ U[i, O]
            vals = np.array([g.value(U[i, t]) for t in np.flatnonzero(vis[i, k])])
            spread = max(float(vals.max() - vals.min()), float(np.abs(vals).max()), 1e-300)
            # each unit's own scale: max_t |V_p^T x_it| over the sequence's tokens
            pre_scale = 1.0 if V is None else np.abs(np.asarray(V).T @ U[i].T).max(axis=1)
            # a unit orthogonal to every token of the sequence is 0 on their span: no kink
            # there (threshold -1), and not active (pre = 0)
            kink = np.where(pre_scale > 0.0, kink_tol * pre_scale, -1.0)
            a, Kk, wk = g.pieces(ubar, kink)
            if Kk.shape[1] > _MAX_KINK_UNITS:
                raise ProblemError(
                    f"gen_svm's ReLU envelope test solves one LP per sign pattern of the units "
                    f"on their kink at a query's composition: 2^{Kk.shape[1]} patterns at query "
                    f"({i}, {k}), beyond 2^{_MAX_KINK_UNITS}. Lower kink_tol (now "
                    f"{kink_tol:g}), or use a V whose units are not at 0 on the composition."
                )
            for tau in masked:
                u0 = U[i, tau] - ubar
                fixed[i, k, tau] = -_directional(a, Kk, wk, u0)
                gain = _envelope_gain(a, Kk, wk, U[i, O], u0, zero_tol * spread)
                if np.isfinite(gain):  # bounded: the composition is locally optimal inside O
                    env[i, k, tau] = -gain
                c = np.array([fixed[i, k, tau], env[i, k, tau]])
                zero[i, k, tau] = bool(np.any(c[np.isfinite(c)] <= zero_tol * spread))
    return fixed, env, zero


def _finite_component(data: TokenData, S: np.ndarray, P: np.ndarray, **kw: Any) -> SVMResult:
    r"""min ‖W‖_F s.t. (x_{t0} − x_t)ᵀ W z = log(s_{t0}/s_t), t ∈ O∖{t0}."""
    i, k, t = np.nonzero(S)
    first = np.argmax(S, axis=2)  # t0 = min O_ik
    t0 = first[i, k]
    keep = t != t0
    i, k, t, t0 = i[keep], k[keep], t[keep], t0[keep]
    s0, st = P[i, k, t0], P[i, k, t]
    zero = (s0 <= 0) | (st <= 0)
    if np.any(zero):
        j = int(np.flatnonzero(zero)[0])
        raise ProblemError(
            f"probs is 0 at a selected token (sequence {int(i[j])}, query {int(k[j])}, token "
            f"{int(t[j]) if st[j] <= 0 else int(t0[j])}); W_fin needs log-probability ratios "
            "inside O_ik. Select tokens with positive probability."
        )
    cs = pair_constraints(data, i, k, t0, t, kind=EQUALITY, rhs=np.log(s0) - np.log(st))
    return solve_for(cs, where="gen_svm", norm="fro", **kw)


_KINK_TOL = 1e-6
"""``gen_svm``'s default ``kink_tol``."""
_ZERO_TOL = 1e-6
"""``gen_svm``'s default ``zero_tol``."""


@warns_if_inaccurate("gen_svm")
def gen_svm(
    data: TokenData,
    selected: Any = None,
    probs: Any = None,
    fit_to: Any = None,
    *,
    norm: Literal["fro", "nuc"] = "fro",
    head: str | None = None,
    v: Any = None,
    V: Any = None,
    lam: float | None = None,
    drop_zero_cost: bool = False,
    kink_tol: float = _KINK_TOL,
    zero_tol: float = _ZERO_TOL,
    **solve_kwargs: Any,
) -> GenSVMResult:
    r"""Gen-SVM: directional component, finite component and the SVM-equivalence prediction
    (the paper's *proposed* equivalence, a *conjecture*).

    .. math::

        W^{\mathrm{svm}} &= \arg\min_W \|W\| \ \text{s.t.}\
        (x_{it} - x_{i\tau})^\top W z_{ik} = 0\ (t,\tau \in O_{ik}),\
        (x_{it} - x_{i\tau})^\top W z_{ik} \ge 1\ (t \in O_{ik}, \tau \in \bar O_{ik}),\\
        W^{\mathrm{fin}} &= \arg\min_W \|W\|_F \ \text{s.t.}\
        (x_{it} - x_{i\tau})^\top W z_{ik} = \log(s_{ikt}/s_{ik\tau})\ (t,\tau \in O_{ik}),\\
        W^{\mathrm{eq}} &= W^{\mathrm{fin}} + R\,W^{\mathrm{svm}},\quad
        R = \max\Big(0, \tfrac{\langle F - W^{\mathrm{fin}}, W^{\mathrm{svm}}\rangle}
        {\|W^{\mathrm{svm}}\|_F^2}\Big),\quad
        \Gamma = \max_{i,k,\tau\in\bar O_{ik}} s_{ik\tau}.

    Both problems are built from token-pair rows (:func:`~svmgeo.constraints.selected_set_constraints`
    and equality rows against :math:`t_0 = \min O_{ik}`, which span all pairwise equalities) and
    solved by :func:`~svmgeo.solve_svm`. :math:`\bar O_{ik}` is the visible tokens outside
    :math:`O_{ik}`. With :math:`|O_{ik}| = 1` the directional problem is Att-SVM. A set
    holding every visible token contributes equality rows only (GD masked nothing there); with
    no margin row left, :math:`W^{\mathrm{svm}} = 0` and :math:`W^{\mathrm{eq}} = W^{\mathrm{fin}}`.

    That GD's W approaches :math:`W^{\mathrm{eq}}` is a *conjecture* (TF-SVM §6 proposes it;
    no theorem): the result's ``note`` says so, and tests measure it, never assert it.

    Parameters
    ----------
    data : TokenData
    selected : bool array of shape (n, T) or (n, K, T), or SelectedSets, optional
        The sets :math:`O_{ik}`; default ``selected_sets(probs).selected``.
    probs : array of shape (n, T) or (n, K, T), optional
        Probabilities to reproduce (e.g. GD's final softmax); needed for ``W_fin``, ``R``,
        ``W_eq`` and ``gamma``.
    fit_to : array of shape (d, d), optional
        The matrix R is fitted to (e.g. GD's final W); needs ``probs``.
    norm : {"fro", "nuc", "spectral"} or ("lp", p), default "fro"
        Norm of the directional problem, any norm of :func:`~svmgeo.solve_svm` (the finite
        component is always Frobenius).
    head : {"linear", "relu", "concave"}, optional
        The head GD trained; with ``probs``, computes the masked tokens' first-order costs
        (``cost_fixed``, ``cost_envelope``, ``zero_cost``). ``v``, ``V``, ``lam`` as in
        :func:`~svmgeo.train` (``v`` defaults to the data's head for linear/concave); the head
        reads the head features ``data.values`` (the tokens when the data have none).
        ``v``, ``V``, ``lam``, ``kink_tol`` and ``zero_tol`` without ``head`` are a
        ProblemError (they would be ignored).
    drop_zero_cost : bool, default False
        *svmgeo's extension* (MATH-NOTES §2): drop the margin rows :math:`(t, \tau)` of every
        masked token τ of zero cost under either method (needs ``head`` and ``probs``).
    kink_tol : float, default 1e-6
        A ReLU unit is on its kink at the composition when :math:`|V_p^\top \bar x|` is at most
        this times :math:`\max_t |V_p^\top x_{it}|` over the sequence's tokens.
    zero_tol : float, default 1e-6
        A cost is zero when at most this times the spread of :math:`Y h(x_{it})` over the
        query's visible tokens.
    **solve_kwargs
        Passed to :func:`~svmgeo.solve_svm` (``rank`` to the directional solve only: the
        finite component is always Frobenius).

    Returns
    -------
    GenSVMResult
        An infeasible directional problem gives ``feasible=False`` and the Farkas
        ``farkas`` (not an exception).

    Notes
    -----
    **First-order costs** (*svmgeo's extension*, MATH-NOTES §2). For query (i, k) let
    :math:`w` be ``probs`` renormalized on :math:`O_{ik}`, :math:`\bar x = \sum_{t\in O}
    w_t x_{it}` the composition and :math:`g = Y_{ik} h`. Moving a mass ε onto a masked τ
    changes g by :math:`-c\,\varepsilon + o(\varepsilon)`:

    * fixed (ratios inside O held): :math:`c_{\mathrm{fix}} = -D^+g(\bar x;\ x_\tau - \bar x)`;
    * envelope (composition re-optimized inside O, locally at :math:`\bar x`):
      :math:`c_{\mathrm{env}} = -\sup_{\sum\delta = 0} D^+g(\bar x;\ X_O^\top\delta + x_\tau
      - \bar x)`, one LP per sign pattern of the ReLU units on their kink; NaN where the
      supremum is unbounded (:math:`\bar x` not locally optimal inside O).

    :math:`D^+` is the one-sided directional derivative (ReLU units within ``kink_tol`` of
    their kink count as on it). A masked token with zero (or negative) cost under either
    method exerts no first-order pressure: its margin rows need not constrain the direction.

    Raises
    ------
    ProblemError
        A selected set is empty; ``probs`` is not a distribution or does not match the data;
        ``fit_to`` without ``probs``; neither ``selected`` nor ``probs``; ``drop_zero_cost``
        without ``head`` and ``probs``; head parameters that do not fit.
    SolverError
        A solve returned neither a solution nor an infeasibility verdict, or only a feasible
        point in place of a failed solve (``extras["feasible_point_only"]``: no optimum).

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, §6 (Gen-SVM, SVM-equivalence).
    """
    where = "gen_svm"
    data = _check_data(data, where)
    n, K, T, d = data.n, data.K, data.T, data.d
    drop_zero_cost = check_bool(drop_zero_cost, "drop_zero_cost", where=where)
    kink_tol = check_real(kink_tol, "kink_tol", low=0.0, where=where)
    zero_tol = check_real(zero_tol, "zero_tol", low=0.0, where=where)
    if head is None:  # the head's options feed only the masked-token costs, which need head=
        given = {"v": v is not None, "V": V is not None, "lam": lam is not None,
                 "kink_tol": kink_tol != _KINK_TOL, "zero_tol": zero_tol != _ZERO_TOL}  # fmt: skip
        unused = [name for name, on in given.items() if on]
        if unused:
            raise ProblemError(
                f"gen_svm got {', '.join(unused)} without head=: they set the masked-token "
                "costs, which gen_svm computes only for a head. Pass head= (and probs=), or "
                f"drop {', '.join(unused)}."
            )
    P = None
    if probs is not None:
        P = _check_probs(probs, "probs", where)
        P = P[:, None, :] if P.ndim == 2 else P
        if P.shape != (n, K, T):
            want = f"({n}, {T})" if K == 1 else f"({n}, {K}, {T})"
            raise ProblemError(
                f"probs must have shape {want} for this data; got {np.shape(probs)}."
            )
    name = "selected"
    if selected is None:
        if P is None:
            raise ProblemError(
                "gen_svm needs the selected sets: pass selected=(bool array) or probs=(softmax "
                "probabilities) to derive them with selected_sets."
            )
        selected = selected_sets(P if K > 1 else P[:, 0]).selected
        name = "probs (its selected sets)"  # the sets come from probs: errors name it
    elif isinstance(selected, SelectedSets):
        selected = selected.selected
    S = check_selected(data, selected, name, allow_full=True)
    F = None
    if fit_to is not None:
        if P is None:
            raise ProblemError(
                "fit_to needs probs in gen_svm: W_eq = W_fin + R W_dir uses the finite "
                "component, which is built from probabilities. Pass probs=..."
            )
        F = check_array(fit_to, "fit_to", ndim=2, shape=(d, d))

    costs = None
    if head is not None:
        if P is None:
            raise ProblemError(
                "The masked-token costs of gen_svm need probs (the composition inside O_ik); "
                "pass probs=..., or drop head=."
            )
        costs = _masked_costs(
            data, S, P, *_head_params(data, head, v, V, lam), kink_tol=kink_tol, zero_tol=zero_tol
        )
    elif drop_zero_cost:
        raise ProblemError(
            "drop_zero_cost=True needs the masked-token costs: pass head= (and its v, V, lam) "
            "and probs= to gen_svm."
        )
    cs = selected_set_constraints(data, S, allow_full=True)
    note = CONJECTURE
    if drop_zero_cost:
        assert costs is not None
        keep = ~(cs.is_margin & costs[2][cs.seq, cs.query, cs.comp])
        cs = cs.subset(keep)
        note += "; zero-cost margin rows dropped (svmgeo's extension, not the paper's Gen-SVM)"
    res = solve_for(cs, where="gen_svm", norm=norm, **solve_kwargs)
    _check_solved(res, "directional")
    feasible = res.status.has_solution
    W_dir = res.W if feasible else None
    directional = cs.n_margin > 0  # without margin rows W_svm = 0: a finite prediction

    W_fin = gamma = R = W_eq = fit_corr = None
    fin = None
    if P is not None:
        masked = data.visible & ~S
        gamma = float(np.max(P[masked])) if masked.any() else None  # None: nothing masked
        # W_fin is always Frobenius: a rank bound (norm="nuc") is the directional solve's
        fin = _finite_component(
            data, S, P, **{k: x for k, x in solve_kwargs.items() if k != "rank"}
        )
        _check_solved(fin, "finite")
        W_fin = fin.W if fin.status.has_solution else None
        if F is not None and W_fin is not None and W_dir is not None:
            if directional:
                R = max(0.0, float(np.vdot(F - W_fin, W_dir) / np.vdot(W_dir, W_dir)))
                W_eq = W_fin + R * W_dir
            else:
                W_eq = W_fin
            fit_corr = correlation(W_eq, F)
    single = data.single_query
    masked_full = data.visible & ~S

    def shaped(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else (a[:, 0] if single else a)

    return finish_gen_svm(
        res,
        fin,
        W_fin=W_fin,
        R=R,
        W_eq=W_eq,
        fit_correlation=fit_corr,
        gamma=gamma,
        selected=S[:, 0] if single else S,
        masked=masked_full[:, 0] if single else masked_full,
        cost_fixed=shaped(None if costs is None else costs[0]),
        cost_envelope=shaped(None if costs is None else costs[1]),
        zero_cost=shaped(None if costs is None else costs[2]),
        dropped=shaped(costs[2]) if drop_zero_cost and costs is not None else None,
        note=note,
    )


def _check_solved(res: SVMResult, which: str) -> None:
    """A SolverError unless the Gen-SVM's ``which`` ("directional", "finite") solve ``res``
    returned a solution or an infeasibility verdict. A feasible point put in place of a
    failed solve (``extras["feasible_point_only"]``, ``OPTIMAL_INACCURATE``) is no solution:
    its W is not the minimum-norm direction the prediction is built from (before session 58
    gen_svm returned it as ``W_dir``), as :func:`~svmgeo.support_from_result` refuses it.
    The hint names the fix measured to work on session 57's collinear tokens (perturbing
    them by 1e-8 gave ``optimal``), not ``method='cvxpy'``, another ``solver=`` (cvxpy with
    Clarabel or SCS returned the same point) or a rescaling (X times 1e3 or 1e-3 did too)."""
    point_only = bool(res.extras.get("feasible_point_only"))
    if point_only or not (res.status.has_solution or res.status.is_infeasible):
        what = (
            " (its W is only a feasible point in place of a failed solve: the rows are "
            "feasible, their optimum was not found in float64)"
            if point_only
            else ""
        )
        raise SolverError(
            f"Gen-SVM {which} solve failed ({res.status}{what}: {res.message}). Nearly "
            "collinear or near-duplicate tokens, whose feasible cone is too narrow to solve "
            "in float64, are the usual cause: perturb the data to separate them."
        )


def _head_params(
    data: TokenData, head: str, v: Any, V: Any, lam: Any
) -> tuple[str, np.ndarray, np.ndarray | None, float]:
    """``(head, v, V, lam)`` checked for the cost diagnostic."""
    where = "gen_svm"
    check_option(head, "head", ("linear", "relu", "concave"), where=where)
    d = data.d_values  # the head acts on the head features u (X without values)
    if head == "relu":
        if V is None or v is None:
            raise ProblemError(
                "head='relu' in gen_svm needs V of shape (d, p) and the unit weights v of "
                "shape (p,): h(x) = vᵀReLU(Vᵀx), as passed to svmgeo.train."
            )
        Va = check_array(V, "V", ndim=2, hint="V has shape (d, p).")
        if Va.shape[0] != d:
            raise ProblemError(f"V must have shape ({d}, p) in {where}; got {Va.shape}.")
        wa = check_array(v, "v", ndim=1, shape=(Va.shape[1],), hint="v weights the p units.")
        return head, wa, Va, 0.0
    if V is not None:
        raise ProblemError(f"V applies to head='relu' only in {where}; got V with head={head!r}.")
    va: np.ndarray | None = data.v if v is None else check_array(v, "v", ndim=1, shape=(d,))
    if va is None:
        raise ProblemError(f"head={head!r} in {where} needs v (the data has no head v).")
    if head == "concave":
        if lam is None:
            raise ProblemError("head='concave' in gen_svm needs lam (h(x) = vᵀx − λ‖x‖²).")
        return head, np.asarray(va, dtype=float), None, check_real(lam, "lam", low=0.0, where=where)
    if lam is not None:
        raise ProblemError(f"lam applies to head='concave' only in {where}.")
    return head, np.asarray(va, dtype=float), None, 0.0
