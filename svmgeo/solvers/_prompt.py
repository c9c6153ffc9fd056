# SPDX-License-Identifier: BSD-3-Clause
r"""Rows of the companion paper's SVMs as token-pair rows with one shared query.

Prompt attention scores token :math:`t` of input :math:`i` with :math:`x_{it}^\top p`. Its SVM
(p-SVM, Tarzanagh, Li, Zhang, Oymak, arXiv:2306.13596)

.. math::

    p^{\mathrm{mm}}_\alpha = \arg\min_p \|p\| \quad\text{s.t.}\quad
    (x_{i\alpha_{ik}} - x_{it})^\top p \ge c_{ik}
    \quad \forall\, i, k,\ t \ne \alpha_{ik} \text{ visible to query } k,

is Att-SVM with every query :math:`z_{ik} = e_1`: :math:`a^\top W e_1 = a^\top p` for
:math:`p = W e_1`, and for the Frobenius, nuclear, spectral and entrywise :math:`\ell_q` norms
:math:`\|W\| \ge \|W e_1\|`, with equality at :math:`W = p e_1^\top` (only there for the
Frobenius, nuclear and :math:`\ell_q`, :math:`q < \infty`; the entrywise :math:`\ell_\infty`
and spectral norms have other optima). So the rows are built on a copy of the data whose
queries are :math:`e_1` (its ``tokens`` let the exact proofs form :math:`a_j` without
rounding), and ``att_svm(param="p")`` returns :math:`W = p\,e_1^\top` with :math:`p = W e_1`.

The head SVM of joint training, :math:`\min\|v\|` s.t. :math:`Y_{ik} v^\top u_{i\alpha_{ik}}
\ge 1`, is the same construction on the head features: rows :math:`a = Y_{ik} u_{i\alpha_{ik}}
- 0`, :math:`b = e_1 \in \mathbb{R}^{d_u}` (labels are :math:`\pm 1`, so :math:`a` is exact).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..constraints import ConstraintSet, att_svm_constraints, pair_constraints
from ..data import TokenData
from ..selection import check_selection

__all__ = ["head_constraints", "prompt_constraints", "prompt_data", "query_margins"]


def _unit_queries(n: int, K: int, d: int) -> np.ndarray:
    Z = np.zeros((n, K, d))
    Z[:, :, 0] = 1.0
    return Z


def prompt_data(data: TokenData) -> TokenData:
    r"""The tokens of ``data`` with every query :math:`z_{ik} = e_1` (mask kept).

    Labels, head and scores are dropped: the rows need only tokens, queries and mask.
    """
    mask = None if data.mask is None else np.asarray(data.visible)
    return TokenData(np.asarray(data.X), Z=_unit_queries(data.n, data.K, data.d), mask=mask)


def query_margins(data: TokenData, margin: Any, cs: ConstraintSet) -> np.ndarray:
    r"""Right-hand sides of the rows of ``cs``: :math:`c_j = c_{i_j k_j}` from a per-query
    array ``margin`` of shape (n, K)."""
    return np.asarray(margin, dtype=float).reshape(data.n, data.K)[cs.seq, cs.query]


def prompt_constraints(data: TokenData, alpha: Any) -> ConstraintSet:
    r"""Rows of the p-SVM of selection ``alpha``: :math:`(x_{i\alpha_{ik}} - x_{it})^\top W e_1
    \ge 1` (the Att-SVM rows of :func:`prompt_data`)."""
    a = check_selection(data, alpha)  # validated against the caller's data
    return att_svm_constraints(prompt_data(data), a)


def head_constraints(data: TokenData, alpha: Any) -> ConstraintSet:
    r"""Rows of the head SVM :math:`Y_{ik}\, u_{i\alpha_{ik}}^\top W e_1 \ge 1`, one per query.

    Built on a dataset of :math:`K + 1` tokens per input: token :math:`k` is
    :math:`Y_{ik} u_{i\alpha_{ik}}`, token :math:`K` is 0, every query is :math:`e_1`.
    ``seq`` and ``query`` of row :math:`j` are its input and query; ``pref`` is :math:`k`.
    """
    a = check_selection(data, alpha)
    n, K = data.n, data.K
    U = np.asarray(data.values, dtype=float)  # its Gram holds (u^T u')^2: TokenData keeps
    # max ||u|| within 1e+-151 (the values', or the tokens' when u = x)
    selected = np.take_along_axis(U, a[:, :, None], axis=1)  # (n, K, d_u)
    tokens = np.zeros((n, K + 1, U.shape[2]))
    tokens[:, :K] = np.asarray(data.labels, dtype=float)[:, :, None] * selected
    head = TokenData(tokens, Z=_unit_queries(n, K, U.shape[2]))
    i, k = (x.ravel() for x in np.meshgrid(np.arange(n), np.arange(K), indexing="ij"))
    return pair_constraints(head, i, k, k, np.full(i.size, K))
