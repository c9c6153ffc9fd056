# SPDX-License-Identifier: BSD-3-Clause
r"""Support tokens of Att-SVM(:math:`\alpha`), decided from the margins and cross-checked by the dual.

.. math::

    \mathcal T_{ik}(\alpha) = \{\, t \ne \alpha_{ik} \text{ visible to } k :
    (x_{i\alpha_{ik}} - x_{it})^\top W^{\mathrm{mm}}_\alpha z_{ik} = 1 \,\}.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._errors import InaccurateSolutionWarning, ProblemError, SolverError
from .._linalg import row_norms
from .._summary import summarized
from .._validation import check_int, check_real
from ..constraints import MARGIN, att_svm_constraints
from ..data import TokenData
from ..selection import check_data as _check_data
from ..selection import check_selection
from ..solvers import NORMS, NormEntry, SVMResult, minimizer_margin_reach, parse_norm, solve_for

__all__ = ["SupportTokens", "support_tokens"]

SUPPORT_TOL = 1e-6
"""The default ``tol`` of the support tokens: a margin within it of its bound is active."""

SUPPORT_DUAL_TOL = 1e-9
"""The default ``dual_tol``: a multiplier, weighed by its row's scale, above it (relative to
the largest) is positive."""


@summarized
@dataclass(frozen=True, eq=False)
class SupportTokens:
    r"""Support tokens of Att-SVM(:math:`\alpha`), with both witnesses and any disagreement.

    ``np.asarray(sup)`` is :attr:`mask` (an error when Att-SVM(α) is infeasible).

    Attributes
    ----------
    feasible : bool
        Whether Att-SVM(α) is feasible. When it is not, every mask is None and
        :attr:`farkas` holds the Farkas vector.
    mask : ndarray of bool, shape (n, T) or (n, K, T), or None
        Active margin: :math:`|m_j - 1| \le \mathrm{tol}\cdot\max(1, |m_j|)` for the row of
        (i, k, t). The definition of §5 of the SPEC; :math:`\alpha_{ik}` itself and hidden
        keys are always False.
    by_dual : ndarray of bool, same shape, or None
        Positive multiplier: :math:`\lambda_j > \mathrm{dual\_tol}\cdot\max_j \lambda_j`.
    weakly_active : ndarray of bool, same shape, or None
        Active margin with zero multiplier (``mask & ~by_dual``): legitimate under degeneracy.
    inconsistent : ndarray of bool, same shape, or None
        Positive multiplier without an active margin (``by_dual & ~mask``): complementary
        slackness fails, a solver inaccuracy. A warning is issued when any is True.
    alpha : ndarray of int, shape (n,) or (n, K)
    svm : SVMResult
        The Att-SVM(α) solve the decision was read from.
    farkas : ndarray or None
        Farkas vector (per row of ``svm.constraints``) when infeasible.
    tol, dual_tol : float
        The tolerances of the two decisions above (margin, multiplier); the solve's own
        certificate tolerance is ``svm.certificate.tol``.
    unique_optimum : bool
        Whether the optimum is unique by the norm (strictly convex: ``"fro"``,
        ``("lp", p)`` with 1 < p < ∞). False for ``"nuc"``: the optimum may be a face, and
        these are the support tokens of the returned optimum ``svm.W``, which other optima
        may not share (:func:`~svmgeo.solvers.optimum_uniqueness` measures the face).
    argmin_doubt : str or None
        None when ``svm.W`` is shown to be the optimum whose support tokens these are; else
        why not: an :math:`\ell_p` W certified in value only, not
        shown to be the unique minimizer (``svm.extras["argmin"]``). The masks are then
        those of the returned W, which near p = 1 or at large p can be far from the
        minimizer's; :func:`~svmgeo.is_locally_optimal` leaves a verdict that depends on
        them undecided. None is a backward error only (W is the minimizer of rows moved by
        about tol, ``svm.extras["argmin"]``, docs/analysis.md); the forward bound is
        :attr:`slack_unproved`.
    slack_unproved : ndarray of bool, same shape, or None
        For ``("lp", p)`` (1 < p < ∞): a margin read as slack (not in :attr:`mask`) that is
        not proved slack at the minimizer :math:`W^\star`: :math:`m_j - 1 \le R_j`, with
        :math:`R_j = \rho_j + \|a_j b_j^\top\|_q\, r\,\|W\|_p` the most
        :math:`W^\star`'s margin can differ from W's (:func:`~svmgeo.solvers.minimizer_margin_reach`;
        r the forward radius ``svm.extras["argmin"].radius``, a bound on :math:`\|W -
        W^\star\|_p/\|W\|_p` by Clarkson's inequalities; docs/analysis.md). Such a token may
        be a support token of :math:`W^\star` (near p = 1 and at large p, where r is of the
        order of 1, most slack tokens are); :func:`~svmgeo.is_locally_optimal` leaves a
        verdict that depends on one undecided. A False entry off :attr:`mask` is a proof
        that the token is not a support token of :math:`W^\star` (the minimizer of the
        constraint set's float rows, ``svm.constraints``). The radius proves slack only:
        a True entry of :attr:`mask` is read off W (margin within tol of 1), and
        :math:`W^\star`'s margin there may differ by up to :math:`R_j`, more than tol.
        None for the other norms (Frobenius and nuclear masks are read off the certified
        W, as before) and where there is no W (an infeasible Att-SVM).
    """

    feasible: bool
    mask: np.ndarray | None
    by_dual: np.ndarray | None
    weakly_active: np.ndarray | None
    inconsistent: np.ndarray | None
    alpha: np.ndarray
    svm: SVMResult
    farkas: np.ndarray | None
    tol: float
    dual_tol: float
    unique_optimum: bool = True
    argmin_doubt: str | None = None
    slack_unproved: np.ndarray | None = None

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self.mask is None:
            raise ProblemError(
                "Att-SVM(alpha) is infeasible, so alpha has no support tokens; check "
                "sup.feasible first (the Farkas certificate is in sup.farkas)."
            )
        return self.mask if dtype is None else self.mask.astype(dtype)

    def tokens(self, i: int, k: int = 0) -> list[int]:
        """Support token indices of sequence ``i`` (query ``k``); a ProblemError when
        Att-SVM(α) is infeasible (there are no support tokens, which ``[]`` would hide) or
        for an index out of range (negative ones included)."""
        if self.mask is None:
            raise ProblemError(
                "Att-SVM(alpha) is infeasible, so alpha has no support tokens; check "
                "sup.feasible first (the Farkas certificate is in sup.farkas)."
            )
        full = self.mask if self.mask.ndim == 3 else self.mask[:, None, :]
        i = check_int(i, "i", low=0, high=full.shape[0] - 1, where="SupportTokens.tokens")
        k = check_int(k, "k", low=0, high=full.shape[1] - 1, where="SupportTokens.tokens")
        return [int(t) for t in np.flatnonzero(full[i, k])]


def _user_shape(full: np.ndarray, single: bool) -> np.ndarray:
    return full[:, 0, :] if single else full


def support_from_result(
    data: TokenData,
    alpha: np.ndarray,
    res: SVMResult,
    *,
    tol: float = SUPPORT_TOL,
    dual_tol: float = SUPPORT_DUAL_TOL,
    warn: bool = True,
    stacklevel: int = 3,
) -> SupportTokens:
    """Read the support tokens off an Att-SVM(α) result (``alpha`` of shape (n, K)).

    ``stacklevel`` is that of the public function's caller, as seen from here.
    """
    single = data.single_query
    user_alpha = alpha[:, 0] if single else alpha
    common: dict[str, Any] = {
        "alpha": user_alpha,
        "svm": res,
        "tol": tol,
        "dual_tol": dual_tol,
        "unique_optimum": optimum_is_unique(res),
        "argmin_doubt": argmin_doubt(res),
    }
    if res.status.is_infeasible:
        return SupportTokens(
            feasible=False,
            mask=None,
            by_dual=None,
            weakly_active=None,
            inconsistent=None,
            farkas=res.farkas,
            **common,
        )
    if not res.status.has_solution or res.margins is None or res.extras.get("feasible_point_only"):
        raise SolverError(
            f"Att-SVM(alpha) could not be solved ({res.status}: {res.message}); support tokens "
            "are undefined (a feasible point is not the optimum). Try method='cvxpy' or a "
            "different solver."
        )
    if warn and res.status.is_inaccurate:
        warnings.warn(
            f"Att-SVM(alpha) solution is inaccurate ({res.message}); support tokens decided with "
            f"tol={tol:g} may be wrong.",
            InaccurateSolutionWarning,
            stacklevel=stacklevel,
        )
    elif warn and common["argmin_doubt"] is not None:
        warnings.warn(
            f"Att-SVM(alpha)'s W is not shown to be its unique optimum ({common['argmin_doubt']}); "
            "the support tokens are those of the returned W and may differ from the optimum's "
            "(sup.argmin_doubt).",
            InaccurateSolutionWarning,
            stacklevel=stacklevel,
        )
    cs = res.constraints
    n, K, T = data.n, data.K, data.T
    rows = cs.kind == MARGIN
    m = res.margins
    active = np.abs(m - cs.rhs) <= tol * np.maximum(1.0, np.abs(m))
    full = np.zeros((n, K, T), dtype=bool)
    full[cs.seq[rows], cs.query[rows], cs.comp[rows]] = active[rows]
    reach = minimizer_margin_reach(res)
    if reach is None:
        unproved = None
    else:  # slack at W by less than W*'s margin can differ from W's: maybe tight at W*
        slack_full = np.zeros((n, K, T), dtype=bool)
        # (1 - 2^-50): the float m - c within u of the exact slack
        maybe = rows & ~active & ~((m - cs.rhs) * (1.0 - 2.0**-50) > reach)
        slack_full[cs.seq[rows], cs.query[rows], cs.comp[rows]] = maybe[rows]
        unproved = _user_shape(slack_full, single)
    if res.dual is None:
        by_dual = weak = bad = None
    else:
        lam = np.asarray(res.dual, dtype=float)
        share = lam * row_norms(cs.A, axis=1) * row_norms(cs.B, axis=1)  # lam_j's weight in W
        scale = float(np.max(np.abs(share), initial=0.0))
        positive = share > dual_tol * scale if scale > 0 else np.zeros(cs.N, dtype=bool)
        dual_full = np.zeros((n, K, T), dtype=bool)
        dual_full[cs.seq[rows], cs.query[rows], cs.comp[rows]] = positive[rows]
        by_dual = _user_shape(dual_full, single)
        weak = _user_shape(full & ~dual_full, single)
        bad = _user_shape(dual_full & ~full, single)
        if warn and np.any(bad):
            where = [tuple(int(x) for x in w) for w in np.argwhere(bad)[:5]]
            warnings.warn(
                f"{int(bad.sum())} token(s) have a positive dual multiplier but an inactive margin "
                f"(indices {where}): complementary slackness fails at tol={tol:g}; the solve "
                "is inaccurate. Their support status follows the margins.",
                InaccurateSolutionWarning,
                stacklevel=stacklevel,
            )
    return SupportTokens(
        feasible=True,
        mask=_user_shape(full, single),
        by_dual=by_dual,
        weakly_active=weak,
        inconsistent=bad,
        farkas=None,
        slack_unproved=unproved,
        **common,
    )


def optimum_is_unique(res: SVMResult) -> bool:
    r"""Whether ``res``'s norm has one optimum on every problem (strictly convex: Frobenius,
    :math:`\ell_p` with :math:`1 < p < \infty`; its exponent read from ``res.extras``)."""
    entry = NORMS[res.norm]
    return entry.unique_optimum(res.extras.get(entry.parameter) if entry.parameter else None)


def argmin_doubt(res: SVMResult) -> str | None:
    r"""Why ``res.W`` is not shown to be the unique optimum of its strictly convex norm, or
    None.

    An :math:`\ell_p` solve (1 < p < ∞) certifies the optimal value; whether W is the
    minimizer is its own check, by the mirror map, recorded in ``res.extras["argmin"]``
    (docs/analysis.md): near p = 1 and at large p a W within
    ``tol`` of the optimal value can be O(1) away from the minimizer. Its reason when that
    check fails or is missing; None for every other norm (the Frobenius certificate checks
    :math:`\|W - \Lambda\|_F` itself; a nuclear face is :func:`~svmgeo.is_locally_optimal`'s
    own test) and for a result without W. None is no forward-error bound: the check shows W
    to be the minimizer of rows moved by about tol, and where tight rows are nearly parallel
    that minimizer can be O(1) from the caller's (docs/analysis.md); the forward bound is
    the record's ``radius``, read by :attr:`SupportTokens.slack_unproved`.
    """
    if res.W is None or res.norm != "lp" or not optimum_is_unique(res):
        return None
    check = res.extras.get("argmin")
    if check is None:
        return "no check that W is the minimizer is recorded with this l_p solve (extras['argmin'])"
    return None if check.shown else str(check.reason)


def check_lot_norm(norm: Any, where: str, *, strictly_convex: bool = True) -> NormEntry:
    r"""The entry of ``norm`` when local optimality is defined by its support tokens, else a
    ProblemError: Att-SVM and Att-SVM⋆ (:attr:`~svmgeo.solvers.NormEntry.lot`, TF-SVM's
    definition) and, with ``strictly_convex``, the norms whose optimum is unique
    (:math:`\ell_p` with :math:`1 < p < \infty`, the SVM of :math:`\ell_p` mirror
    descent)."""
    entry, parameter = parse_norm(norm, where)
    if not (entry.lot or (strictly_convex and entry.unique_optimum(parameter))):
        also = ", or ('lp', p) with 1 < p < inf" if strictly_convex else ""
        raise ProblemError(
            f"The 'norm' parameter of {where} takes 'fro' (Att-SVM) or 'nuc' (Att-SVM*){also}; "
            f"got {norm!r}. (The spectral optimum, for one, is not unique, MATH-NOTES §7: its "
            "support tokens, and so the verdict, would depend on the answer the solver "
            "returns.) Solve that SVM with solve_svm and read its margins instead."
        )
    return entry


def check_tolerances(tol: Any, dual_tol: Any, where: str) -> tuple[float, float]:
    """Validate the two support-token tolerances."""
    return (
        check_real(tol, "tol", low=0.0, high=1.0, low_open=True, high_open=True, where=where),
        check_real(
            dual_tol, "dual_tol", low=0.0, high=1.0, low_open=True, high_open=True, where=where
        ),
    )


def support_tokens(
    data: TokenData,
    alpha: Any,
    *,
    norm: Literal["fro", "nuc"] = "fro",
    tol: float = SUPPORT_TOL,
    dual_tol: float = SUPPORT_DUAL_TOL,
    **solve_kwargs: Any,
) -> SupportTokens:
    r"""Support tokens of Att-SVM(:math:`\alpha`): the competing tokens whose margin is tight.

    .. math::

        \mathcal T_{ik}(\alpha) = \{\, t \ne \alpha_{ik} :
        (x_{i\alpha_{ik}} - x_{it})^\top W^{\mathrm{mm}}_\alpha z_{ik} = 1 \,\}

    "= 1" is decided as :math:`|m_j - 1| \le \mathrm{tol}\cdot\max(1, |m_j|)` (the solvers
    polish active margins to round-off, so the default 1e-6 is far above solver error; a
    genuine slack below it, e.g. a margin of :math:`1 + 10^{-7}`, is counted as tight, since
    floats cannot tell it from 1 in general). The dual multiplier is the second witness: a
    tight margin with :math:`\lambda_j = 0` is *weakly active* (degeneracy, or a slack below
    ``tol``: reported in ``weakly_active``, and :func:`is_locally_optimal` leaves a verdict
    that depends on one undecided); a positive :math:`\lambda_j` with a slack margin is
    reported in ``inconsistent`` with an :class:`~svmgeo.InaccurateSolutionWarning`.

    Parameters
    ----------
    data : TokenData
    alpha : array of int, shape (n,) or (n, K)
        The selection.
    norm : {"fro", "nuc"} or ("lp", p) with 1 < p < inf, default "fro"
        Which Att-SVM: Frobenius (:math:`W^{\mathrm{mm}}`), nuclear (Att-SVM⋆) or the
        :math:`\ell_p` SVM of mirror descent (strictly convex: one optimum; where the returned
        W is not shown to be it, near p = 1 or at large p, ``argmin_doubt`` says why, with an
        :class:`~svmgeo.InaccurateSolutionWarning`). The nuclear optimum need not be unique:
        the result is then the support of the returned optimum (``unique_optimum`` False). Other norms of :func:`~svmgeo.solve_svm` (spectral,
        :math:`\ell_1`, :math:`\ell_\infty`: faces of optima) are refused.
    tol : float in (0, 1), default 1e-6
        Relative tolerance of the margin decision ("= 1" above), and of nothing else
        (:func:`~svmgeo.joint_svm` calls the same rule's tolerance ``support_tol``). It does
        not reach the solve: Att-SVM(α) is solved and certified at
        :func:`~svmgeo.solve_svm`'s default tolerance, 1e-8 (``sup.svm.certificate.tol``),
        whatever ``tol`` is, so that margins are decided well above the solver's error.
    dual_tol : float in (0, 1), default 1e-9
        A multiplier counts as positive when its weight in
        :math:`W = \sum_j \lambda_j a_j b_j^\top`, :math:`\lambda_j\|a_j\|\|b_j\|`, is above
        ``dual_tol`` times the largest weight (a row's own scale: with sequences of very
        different scales, a bare multiplier against the largest one misjudged rows).
    **solve_kwargs
        Passed to :func:`~svmgeo.solve_svm` (``method``, ``solver``, ``rank``...); not its
        ``tol`` (see ``tol``).

    Returns
    -------
    SupportTokens
        Infeasible Att-SVM(α): ``feasible`` False, masks None, ``farkas`` the Farkas
        vector. Not an exception.

    Raises
    ------
    ProblemError
        Invalid ``data``, ``alpha``, tolerances, or a norm other than "fro", "nuc" and
        ("lp", p) with 1 < p < inf.
    SolverError
        When the solver returns neither a solution nor an infeasibility verdict.

    Examples
    --------
    >>> import numpy as np, svmgeo as sg
    >>> X = np.array([[[1.0, 0.0], [0.0, 1.0], [-2.0, 0.0]]])
    >>> data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[3.0, 2.0, 1.0]]))
    >>> sup = sg.support_tokens(data, [0])
    >>> np.asarray(sup)
    array([[False,  True, False]])
    """
    where = "support_tokens"
    data = _check_data(data, where)
    a = check_selection(data, alpha)
    tol, dual_tol = check_tolerances(tol, dual_tol, where)
    check_lot_norm(norm, where)
    res = solve_for(att_svm_constraints(data, a), where=where, norm=norm, **solve_kwargs)
    return support_from_result(data, a, res, tol=tol, dual_tol=dual_tol)
