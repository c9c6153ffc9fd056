# SPDX-License-Identifier: BSD-3-Clause
r"""Gen-SVM: selected sets from probabilities, the directional and finite components (SPEC §3).

.. math::

    W^{\mathrm{svm}} = \arg\min \|W\|_F \ \text{s.t.}\
    (x_{it} - x_{i\tau})^\top W z_i = 0\ (t, \tau \in O_i),\
    (x_{it} - x_{i\tau})^\top W z_i \ge 1\ (t \in O_i, \tau \in \bar O_i),

    W^{\mathrm{fin}} = \arg\min \|W\|_F \ \text{s.t.}\
    (x_{it} - x_{i\tau})^\top W z_i = \log(s_{it}/s_{i\tau})\ (t, \tau \in O_i),
    \qquad W^{\mathrm{eq}} = W^{\mathrm{fin}} + R\, W^{\mathrm{svm}} .
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._errors import ProblemError, SolverError
from .._linalg import correlation
from .._summary import summarized
from .._validation import check_array, check_real
from ..constraints import EQUALITY, check_selected, pair_constraints, selected_set_constraints
from ..data import TokenData
from ..selection import _check_data
from ..solvers import SVMResult, solve_svm

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


@summarized
@dataclass(frozen=True, eq=False)
class GenSVMResult:
    r"""Gen-SVM components for selected sets :math:`O_{ik}`.

    Attributes
    ----------
    feasible : bool
        Whether the directional problem is feasible.
    W_dir : ndarray of shape (d, d) or None
        :math:`W^{\mathrm{svm}}` (None when infeasible).
    certificate : ndarray or None
        Farkas vector over ``svm.constraints`` when infeasible.
    W_fin : ndarray or None
        :math:`W^{\mathrm{fin}}` (needs ``probs``; None without, or when its equalities are
        inconsistent, see ``fin``).
    R : float or None
        :math:`\max(0, \langle F - W^{\mathrm{fin}}, W^{\mathrm{svm}}\rangle / \|W^{\mathrm{svm}}\|_F^2)`
        with F = ``fit_to`` (needs ``fit_to``, ``probs``, a feasible directional problem and
        a finite component).
    W_eq : ndarray or None
        :math:`W^{\mathrm{fin}} + R\,W^{\mathrm{svm}}`.
    fit_correlation : float or None
        Correlation of ``W_eq`` with ``fit_to``.
    gamma : float or None
        :math:`\Gamma = \max_{i,k,\tau \in \bar O_{ik}} s_{ik\tau}` (needs ``probs``).
    selected, masked : ndarray of bool, shape (n, T) or (n, K, T)
        :math:`O_{ik}` and :math:`\bar O_{ik}` (visible tokens outside :math:`O_{ik}`).
    svm, fin : SVMResult or None
        The solves behind ``W_dir`` and ``W_fin``.
    """

    feasible: bool
    W_dir: np.ndarray | None
    certificate: np.ndarray | None
    W_fin: np.ndarray | None
    R: float | None
    W_eq: np.ndarray | None
    fit_correlation: float | None
    gamma: float | None
    selected: np.ndarray
    masked: np.ndarray
    svm: SVMResult
    fin: SVMResult | None


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
    return solve_svm(cs, norm="fro", **kw)


def gen_svm(
    data: TokenData,
    selected: Any = None,
    probs: Any = None,
    fit_to: Any = None,
    *,
    norm: Literal["fro", "nuc"] = "fro",
    **solve_kwargs: Any,
) -> GenSVMResult:
    r"""Gen-SVM: directional component, finite component and the SVM-equivalence prediction.

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
    :math:`O_{ik}`. With :math:`|O_{ik}| = 1` the directional problem is Att-SVM.

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
    norm : {"fro", "nuc"}, default "fro"
        Norm of the directional problem (the finite component is always Frobenius).
    **solve_kwargs
        Passed to :func:`~svmgeo.solve_svm`.

    Returns
    -------
    GenSVMResult
        An infeasible directional problem gives ``feasible=False`` and the Farkas
        ``certificate`` (not an exception).

    Raises
    ------
    ProblemError
        A selected set is empty or holds every visible token; ``probs`` is not a distribution
        or does not match the data; ``fit_to`` without ``probs``; neither ``selected`` nor
        ``probs``.
    SolverError
        A solve returned neither a solution nor an infeasibility verdict.

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, §6 (Gen-SVM, SVM-equivalence).
    """
    where = "gen_svm"
    data = _check_data(data, where)
    n, K, T, d = data.n, data.K, data.T, data.d
    P = None
    if probs is not None:
        P = _check_probs(probs, "probs", where)
        P = P[:, None, :] if P.ndim == 2 else P
        if P.shape != (n, K, T):
            want = f"({n}, {T})" if K == 1 else f"({n}, {K}, {T})"
            raise ProblemError(
                f"probs must have shape {want} for this data; got {np.shape(probs)}."
            )
    if selected is None:
        if P is None:
            raise ProblemError(
                "gen_svm needs the selected sets: pass selected=(bool array) or probs=(softmax "
                "probabilities) to derive them with selected_sets."
            )
        selected = selected_sets(P if K > 1 else P[:, 0]).selected
    elif isinstance(selected, SelectedSets):
        selected = selected.selected
    S = check_selected(data, selected, "selected")
    F = None
    if fit_to is not None:
        if P is None:
            raise ProblemError(
                "fit_to needs probs in gen_svm: W_eq = W_fin + R W_dir uses the finite "
                "component, which is built from probabilities. Pass probs=..."
            )
        F = check_array(fit_to, "fit_to", ndim=2, shape=(d, d))

    res = solve_svm(selected_set_constraints(data, S), norm=norm, **solve_kwargs)
    if not (res.status.has_solution or res.status.is_infeasible):
        raise SolverError(f"Gen-SVM directional solve failed ({res.status}: {res.message}).")
    feasible = res.status.has_solution
    W_dir = res.W if feasible else None

    W_fin = gamma = R = W_eq = fit_corr = None
    fin = None
    if P is not None:
        masked = data.visible & ~S
        gamma = float(np.max(np.where(masked, P, -np.inf)))
        fin = _finite_component(data, S, P, **solve_kwargs)
        if fin.status.has_solution:
            W_fin = fin.W
        elif not fin.status.is_infeasible:
            raise SolverError(f"Gen-SVM finite solve failed ({fin.status}: {fin.message}).")
        if F is not None and W_fin is not None and W_dir is not None:
            R = max(0.0, float(np.vdot(F - W_fin, W_dir) / np.vdot(W_dir, W_dir)))
            W_eq = W_fin + R * W_dir
            fit_corr = correlation(W_eq, F)
    single = data.single_query
    masked_full = data.visible & ~S
    return GenSVMResult(
        feasible=feasible,
        W_dir=W_dir,
        certificate=None if feasible else res.farkas,
        W_fin=W_fin,
        R=R,
        W_eq=W_eq,
        fit_correlation=fit_corr,
        gamma=gamma,
        selected=S[:, 0] if single else S,
        masked=masked_full[:, 0] if single else masked_full,
        svm=res,
        fin=fin,
    )
