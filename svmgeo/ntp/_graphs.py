# SPDX-License-Identifier: BSD-3-Clause
r"""Token-priority graphs :math:`G^{(k)}`: strongly-connected components and priorities."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._summary import summarized
from ._data import NextTokenData, check_data

__all__ = ["TokenPriorityGraph", "token_priority_graphs"]


@summarized
@dataclass(frozen=True, eq=False)
class TokenPriorityGraph:
    r"""The token-priority graph :math:`G^{(k)}` of one last token :math:`k`.

    Attributes
    ----------
    last_token : int
    adjacency : scipy.sparse.csr_matrix of shape (V, V)
        ``adjacency[i, j] = 1`` for an edge :math:`i \to j` (label i, other token j).
    nodes : ndarray of int
        Tokens that occur in the samples with last token k.
    component : ndarray of int, shape (V,)
        SCC id of each token (scipy's labels; meaningful on ``nodes``).
    priority : ndarray of int, shape (V,)
        Rank of each token's SCC in a topological order of the condensation (0 = highest
        priority; -1 off ``nodes``).
    condensation : scipy.sparse.csr_matrix
        The DAG of SCCs (indexed by component id).
    """

    last_token: int
    adjacency: sp.csr_matrix
    nodes: np.ndarray
    component: np.ndarray
    priority: np.ndarray
    condensation: sp.csr_matrix

    @property
    def is_acyclic(self) -> bool:
        """True when every SCC on the graph's nodes is a single token."""
        comp = self.component[self.nodes]
        return bool(np.unique(comp).size == comp.size)

    def same_component(self, i: int, j: int) -> bool:
        return bool(self.component[i] == self.component[j])

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


def _topological_ranks(dag: sp.csr_matrix) -> np.ndarray:
    """Kahn's algorithm on the condensation; raises if it has a cycle (it cannot)."""
    m = dag.shape[0]
    indeg = np.asarray((dag != 0).sum(axis=0)).ravel()
    rank = np.full(m, -1, dtype=np.int64)
    frontier = sorted(np.flatnonzero(indeg == 0).tolist())
    r = 0
    while frontier:
        c = frontier.pop(0)
        rank[c] = r
        r += 1
        for nb in dag.indices[dag.indptr[c] : dag.indptr[c + 1]]:
            indeg[nb] -= 1
            if indeg[nb] == 0:
                frontier.append(int(nb))
    if r != m:  # pragma: no cover - a condensation is acyclic by construction
        raise RuntimeError("the SCC condensation has a cycle (scipy's SCC labels are wrong)")
    return rank


def token_priority_graphs(data: NextTokenData) -> dict[int, TokenPriorityGraph]:
    r"""The token-priority graphs :math:`G^{(k)}`, one per last token, with SCCs and priorities.

    .. math::

        G^{(k)} = \{\, y_i \to x_{it} \;:\; \bar x_i = k,\ x_{it} \ne y_i \,\}

    SCCs by :func:`scipy.sparse.csgraph.connected_components` (``connection="strong"``);
    priority = topological order of the condensation (labels point to lower priority).

    Parameters
    ----------
    data : NextTokenData

    Returns
    -------
    dict of int to TokenPriorityGraph
        Keyed by last token, in increasing order.

    References
    ----------
    .. [1] Y. Li, Y. Huang, M. E. Ildiz, A. S. Rawat, S. Oymak, "Mechanics of Next Token
       Prediction with Self-Attention", AISTATS 2024, arXiv:2403.08081 (token-priority graphs).
    """
    data = check_data(data, "token_priority_graphs")
    V = data.V
    out: dict[int, TokenPriorityGraph] = {}
    for k in np.unique(data.last).tolist():
        rows = np.flatnonzero(data.last == k)
        src: list[int] = []
        dst: list[int] = []
        nodes: set[int] = set()
        for i in rows:
            y = int(data.labels[i])
            toks = np.unique(data.tokens[i][data.valid[i]])
            nodes.update(toks.tolist())
            for t in toks.tolist():
                if t != y:
                    src.append(y)
                    dst.append(t)
        adj = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(V, V))
        adj.data[:] = 1.0  # duplicates summed: back to 0/1
        _, comp = connected_components(adj, directed=True, connection="strong")
        n_comp = int(comp.max()) + 1
        s, d_ = adj.nonzero()
        cross = comp[s] != comp[d_]
        dag = sp.csr_matrix(
            (np.ones(int(cross.sum())), (comp[s][cross], comp[d_][cross])), shape=(n_comp, n_comp)
        )
        dag.sum_duplicates()
        dag.data[:] = 1.0
        node_arr = np.asarray(sorted(nodes), dtype=np.int64)
        used = np.unique(comp[node_arr])
        sub = dag[used][:, used].tocsr()
        ranks = _topological_ranks(sub)
        prio = np.full(V, -1, dtype=np.int64)
        rank_of = dict(zip(used.tolist(), ranks.tolist(), strict=True))
        for v in node_arr.tolist():
            prio[v] = rank_of[int(comp[v])]
        out[int(k)] = TokenPriorityGraph(
            last_token=int(k),
            adjacency=adj,
            nodes=node_arr,
            component=comp.astype(np.int64),
            priority=prio,
            condensation=dag,
        )
    return out
