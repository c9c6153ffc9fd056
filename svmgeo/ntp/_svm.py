# SPDX-License-Identifier: BSD-3-Clause
r"""The Graph-SVM of next-token prediction: its rows and its solve."""

from __future__ import annotations

import dataclasses
import re
import warnings
from typing import Any, Literal

import numpy as np

from .._errors import ProblemError
from .._validation import max_row_norm
from ..constraints import EQUALITY, MARGIN, ConstraintSet
from ..solvers import SVMResult, solve_for, warns_if_inaccurate
from ._data import NextTokenData, check_data
from ._graphs import TokenPriorityGraph, token_priority_graphs

__all__ = ["graph_svm", "graph_svm_constraints"]


def graph_svm_constraints(
    data: NextTokenData, graphs: dict[int, TokenPriorityGraph] | None = None
) -> ConstraintSet:
    r"""The Graph-SVM rows as a :class:`~svmgeo.ConstraintSet`.

    .. math::

        (e_i - e_j)^\top W e_k \ge 1 \ \ (i \to j \in G^{(k)}, \text{ different SCCs}),\qquad
        (e_r - e_j)^\top W e_k = 0 \ \ (j \text{ in the SCC of } r = \min \text{SCC}, j \ne r),

    the equalities against the smallest token of each SCC spanning all pairwise equalities
    within it (an SCC is connected). Row fields: ``seq`` = last token k, ``pref`` = i,
    ``comp`` = j, ``query`` = 0; ``n = T = V``.

    Parameters
    ----------
    data : NextTokenData
    graphs : dict of int to TokenPriorityGraph, optional
        Deprecated since session 61, and not used: the rows are always built from
        :func:`token_priority_graphs` of ``data``. Still checked against them (the same last
        tokens, edges and SCCs); call ``graph_svm_constraints(data)`` instead.

    Returns
    -------
    ConstraintSet

    Raises
    ------
    ProblemError
        ``graphs`` that are not the token-priority graphs of ``data``.

    Warns
    -----
    DeprecationWarning
        When ``graphs`` is passed.
    """
    data = check_data(data, "graph_svm_constraints")
    own = token_priority_graphs(data)
    if graphs is not None:
        warnings.warn(
            "The 'graphs' parameter of graph_svm_constraints is deprecated and not used: the "
            "rows are always built from token_priority_graphs(data). Call "
            "graph_svm_constraints(data) instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        check_graphs(graphs, own)
    return constraint_rows(data, own)


def check_graphs(graphs: Any, own: dict[int, TokenPriorityGraph]) -> None:
    """A ProblemError unless ``graphs`` has the keys, edges and SCCs of ``own``."""
    expected = (
        f"The 'graphs' parameter of graph_svm_constraints must be token_priority_graphs(data): "
        f"a dict keyed by the data's last tokens {sorted(own)} of TokenPriorityGraph"
    )
    fix = "Omit graphs to compute them from data."
    if not isinstance(graphs, dict) or set(graphs) != set(own):
        got = sorted(map(repr, graphs)) if isinstance(graphs, dict) else type(graphs).__name__
        raise ProblemError(f"{expected}; got {got}. {fix}")
    for k, g in own.items():
        given = graphs[k]
        same = (
            isinstance(given, TokenPriorityGraph)
            and given.adjacency.shape == g.adjacency.shape
            and (given.adjacency != g.adjacency).nnz == 0
            and np.shape(given.component) == np.shape(g.component)
        )
        if same:  # the same partition of the nodes into SCCs, whatever the labels
            a, b = given.component[g.nodes], g.component[g.nodes]
            pairs = np.unique(np.stack([a, b]), axis=1).shape[1]
            same = pairs == np.unique(a).size == np.unique(b).size
        if not same:
            raise ProblemError(
                f"{expected}; graphs[{k}] is not the graph of last token {k} of these data "
                f"(another {type(given).__name__}, or a graph of other data). {fix}"
            )


def constraint_rows(data: NextTokenData, graphs: dict[int, TokenPriorityGraph]) -> ConstraintSet:
    """:func:`graph_svm_constraints` from the data's own graphs."""
    rows: list[tuple[int, int, int, int]] = []  # (k, i, j, kind)
    for k, g in graphs.items():
        comp = g.component
        for c in np.unique(comp[g.nodes]).tolist():
            members = g.nodes[comp[g.nodes] == c]
            rows += [(k, int(members[0]), int(j), EQUALITY) for j in members[1:]]
        s, d_ = g.adjacency.nonzero()
        order = np.lexsort((d_, s))
        rows += [(k, int(s[e]), int(d_[e]), MARGIN) for e in order if comp[s[e]] != comp[d_[e]]]
    r = np.asarray(rows, dtype=np.int64).reshape(-1, 4)
    E = data.embeddings
    return ConstraintSet(
        A=np.ascontiguousarray(E[r[:, 1]] - E[r[:, 2]]).reshape(-1, data.d),
        B=np.ascontiguousarray(E[r[:, 0]]).reshape(-1, data.d),
        kind=r[:, 3].astype(np.int8),
        rhs=np.where(r[:, 3] == MARGIN, 1.0, 0.0),
        seq=r[:, 0].copy(),
        query=np.zeros(r.shape[0], dtype=np.int64),
        pref=r[:, 1].copy(),
        comp=r[:, 2].copy(),
        n=data.V,
        K=1,
        T=data.V,
    )


@warns_if_inaccurate("graph_svm")
def graph_svm(
    data: NextTokenData,
    *,
    norm: Literal["fro", "nuc", "spectral"] | tuple[str, float] = "fro",
    tol: float = 1e-8,
    **kwargs: Any,
) -> SVMResult:
    r"""Graph-SVM of next-token data, solved and certified by :func:`svmgeo.solve_svm`.

    .. math::

        W^{\mathrm{svm}} = \arg\min_W \|W\| \quad\text{s.t.}\quad
        (e_i - e_j)^\top W e_k \ge 1\ (i \Rightarrow j \text{ in } G^{(k)}),\qquad
        (e_i - e_j)^\top W e_k = 0\ (i \asymp j \text{ in } G^{(k)}),

    with :math:`i \Rightarrow j` an edge between different SCCs and :math:`i \asymp j` two
    tokens of one SCC (rows of :func:`graph_svm_constraints`).

    Parameters
    ----------
    data : NextTokenData
    norm : {"fro", "nuc", "spectral"} or ("lp", p), default "fro"
        Frobenius (:math:`W^{\mathrm{svm}}` of [1]_), nuclear, spectral :math:`\|W\|_2` or the
        entrywise :math:`\ell_p` norm, :math:`p \ge 1`: the norms of :func:`svmgeo.solve_svm`.
    tol : float, default 1e-8
    **kwargs
        Passed to :func:`svmgeo.solve_svm`.

    Returns
    -------
    SVMResult
        Its message names a row by its last token k and edge i -> j (the rows' ``seq`` field
        holds k); an infeasibility that one edge alone causes (tokens i, j sharing an
        embedding, or a zero embedding of k) is told in those terms, with the sequences
        behind the edge.

    References
    ----------
    .. [1] Y. Li, Y. Huang, M. E. Ildiz, A. S. Rawat, S. Oymak, "Mechanics of Next Token
       Prediction with Self-Attention", arXiv:2403.08081 (Graph-SVM).

    Examples
    --------
    >>> import svmgeo as sg
    >>> data = sg.random_next_token_data(20, 4, 5, 8, seed=0)
    >>> sg.graph_svm(data).status
    <Status.OPTIMAL: 'optimal'>
    """
    data = check_data(data, "graph_svm")
    res = solve_for(graph_svm_constraints(data), where="graph_svm", norm=norm, tol=tol, **kwargs)
    message = ntp_message(data, res)[0]
    return res if message == res.message else dataclasses.replace(res, message=message)


def ntp_message(data: NextTokenData, res: SVMResult) -> tuple[str, tuple[str, str] | None]:
    """The message of a Graph-SVM solve of ``data`` in next-token terms, and
    :func:`unmeetable_edge`'s (cause, fix) when one edge alone makes it infeasible.

    The generic solver names a row by (sequence, query, tokens); a Graph-SVM row's ``seq``
    holds its last token k: "last token k, edge i -> j" instead. The cause is appended
    once (the message of :func:`graph_svm` has it already).
    """
    message = _ROW.sub(r"last token \1, edge \2 -> \3", res.message)
    edge = None if res.farkas is None else unmeetable_edge(data, res.constraints, res.farkas)
    if edge is not None and edge[0] not in message:
        message += f"; in next-token terms: {edge[0]}"
    return message, edge


_ROW = re.compile(r"\bsequence (\d+), query 0, tokens (\d+) vs (\d+)")
"""How the generic solver names a constraint row (``row_label`` of ``solvers._feasibility``)
(:func:`graph_svm` rewords it), in parentheses or not: "row 3 (sequence 2, query 0, tokens 0
vs 1)", "e.g. sequence 2, query 0, tokens 0 vs 1:" (before session 57 only the first was
reworded, and the second spoke of sequence 2 on one-sequence data)."""


def unmeetable_edge(
    data: NextTokenData, cs: ConstraintSet, farkas: np.ndarray
) -> tuple[str, str] | None:
    r"""Why a Graph-SVM is infeasible, in next-token terms, when one edge alone is the cause.

    A Farkas certificate supported on one margin row :math:`(e_i - e_j)^\top W e_k \ge 1`
    (edge :math:`i \to j` of :math:`G^{(k)}`) means :math:`(e_i - e_j) e_k^\top` vanishes
    (or is at round-off next to the other rows): tokens i and j share an embedding, or last
    token k's embedding is zero. Returns (cause, fix), both naming the tokens and the
    sequences behind the edge; None for a certificate of several rows (margin rows that
    conflict: a geometry that more dimensions can fix).
    """
    support = np.flatnonzero(farkas)
    if support.size != 1 or cs.kind[support[0]] != MARGIN:
        return None
    row = int(support[0])
    k, i, j = int(cs.seq[row]), int(cs.pref[row]), int(cs.comp[row])
    E = data.embeddings

    def norm(x: np.ndarray) -> float:
        return max_row_norm(x[None])  # no underflow of tiny embeddings

    a, b, top = norm(E[i] - E[j]), norm(E[k]), max_row_norm(E)
    # which factor of a_j b_j^T is small: the pair's difference next to its tokens, or the query
    if top == 0.0:
        cause, fix = "every embedding is zero", "Give the tokens nonzero, distinct embeddings"
    elif a <= max(norm(E[i]), norm(E[j])) * b / top:
        cause = f"tokens {i} and {j} " + (
            "share an embedding"
            if a == 0.0
            else f"nearly share an embedding (||e_{i} - e_{j}|| = {a:.3g})"
        )
        fix = f"Give tokens {i} and {j} " + (
            "distinct embeddings" if a == 0.0 else "embeddings further apart"
        )
    else:
        cause = f"last token {k} has a " + (
            "zero embedding" if b == 0.0 else f"nearly zero embedding (||e_{k}|| = {b:.3g})"
        )
        fix = f"Give last token {k} a " + ("nonzero" if b == 0.0 else "larger") + " embedding"
    rows = np.flatnonzero((data.last == k) & (data.labels == i) & np.any(data.tokens == j, axis=1))
    seqs = ", ".join(f"sequences[{r}] = {data.tokens[r][data.valid[r]].tolist()}" for r in rows[:3])
    more = f" and {rows.size - 3} more" if rows.size > 3 else ""
    who = "no W" if a == 0.0 or b == 0.0 else f"only a W of norm about 1 / ({a:.3g} * {b:.3g})"
    cause += (
        f", so {who} ranks {i} above {j} under last token {k} (edge {i} -> {j} of G^({k}), "
        f"from {seqs}{more})"
    )
    return cause, f"{fix}, or drop the samples behind edge {i} -> {j} of G^({k})."
