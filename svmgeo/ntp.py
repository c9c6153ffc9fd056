# SPDX-License-Identifier: BSD-3-Clause
r"""Next-token prediction with one self-attention layer: token-priority graphs and Graph-SVM.

After Li, Huang, Ildiz, Rawat, Oymak, *Mechanics of Next Token Prediction with
Self-Attention* (AISTATS 2024, arXiv:2403.08081). A vocabulary of :math:`V` tokens has
embeddings :math:`E \in \mathbb{R}^{V\times d}` (row :math:`e_v`). A sample is a sequence
:math:`X = (x_1, \dots, x_T)` of token ids with a next-token label :math:`y`; the last token
:math:`\bar x = x_T` is the query:

.. math::

    s(W) = \mathrm{softmax}\big(E_X W e_{\bar x}\big) \in \Delta^T,\qquad
    f = E_X^\top s,\qquad
    \ell = -\log \mathrm{softmax}(E f)_y \quad (\text{cross-entropy, } E \text{ as output layer}),

with :math:`E_X` the embeddings of the tokens of :math:`X`. ``loss="retrieval"`` uses
:math:`\ell = -\log \sum_{t: x_t = y} s_t` instead (the probability that attention retrieves
the label; it equals the cross-entropy model's log-loss for one-hot embeddings read out
without a second softmax — svmgeo's reading of the paper's log-loss).

Token-priority graph of last token :math:`k`: nodes are tokens, and every sample with
:math:`\bar x = k` adds an edge :math:`y \to x_t` for each of its tokens :math:`x_t \ne y`.
Its strongly-connected components (SCCs) and the topological order of the condensation give
the priority order. Graph-SVM:

.. math::

    W^{\mathrm{svm}} = \arg\min_W \|W\| \quad\text{s.t.}\quad
    (e_i - e_j)^\top W e_k \ge 1 \ \ (i \to j \text{ in } G^{(k)},\ \text{different SCCs}),\qquad
    (e_i - e_j)^\top W e_k = 0 \ \ (i, j \text{ in one SCC of } G^{(k)}).

The finite component :math:`W^{\mathrm{fin}}` minimizes the loss with each sequence's
attention restricted to its top-priority tokens (those in the SCC of its label), over the
subspace :math:`S_{\mathrm{fin}} = \mathrm{span}\{(e_i - e_j)e_k^\top : i, j \text{ in one SCC
of } G^{(k)}\}`, which is orthogonal to :math:`W^{\mathrm{svm}}`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import scipy.optimize as so
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ._errors import ProblemError
from ._linalg import correlation
from ._summary import summarized
from ._validation import check_int, check_option, check_real
from .constraints import EQUALITY, MARGIN, ConstraintSet
from .solvers import SVMResult, solve_svm

__all__ = [
    "FiniteComponent",
    "NTPReport",
    "NTPRun",
    "NTPVerification",
    "NextTokenData",
    "TokenPriorityGraph",
    "finite_component",
    "graph_svm",
    "graph_svm_constraints",
    "ntp_loss_and_grad",
    "random_next_token_data",
    "token_priority_graphs",
    "train_ntp",
    "verify_ntp",
    "verify_ntp_training",
]

NTP_LOSSES = ("ce", "retrieval")
_BOUNDARY = 1e-6
"""Top-token attention below this under W_fin means the restricted optimum is at infinity."""


class NextTokenData:
    r"""Next-token samples over a vocabulary with embeddings.

    Parameters
    ----------
    sequences : sequence of sequences of int, or int array of shape (n, T)
        Token ids in ``[0, V)``; the last token of each sequence is its query. Lengths may
        differ (at least 1).
    labels : array of int, shape (n,)
        Next-token labels; each must occur in its sequence (attention can only retrieve
        tokens of the input).
    embeddings : array of shape (V, d)
        Row ``v`` embeds token ``v``; also the output layer of the cross-entropy loss.

    Attributes
    ----------
    n, V, d, T : int
        Samples, vocabulary size, embedding dimension, longest sequence.
    tokens : ndarray of int, shape (n, T)
        Sequences padded with -1 on the left (the last token stays at position T - 1).
    valid : ndarray of bool, shape (n, T)
        True on real tokens.
    last : ndarray of int, shape (n,)
        The query (last) token of each sequence.
    """

    def __init__(self, sequences: Any, labels: Any, embeddings: Any) -> None:
        E = np.asarray(embeddings, dtype=float)
        if E.ndim != 2 or E.shape[0] < 2 or not np.all(np.isfinite(E)):
            raise ProblemError(
                "embeddings must be a finite float array of shape (V, d) with V >= 2 tokens; "
                f"got shape {E.shape}. Pass one row per vocabulary token."
            )
        V = E.shape[0]
        seqs = [np.asarray(s) for s in sequences]
        if not seqs:
            raise ProblemError("sequences is empty; pass at least one sequence of token ids.")
        for i, s in enumerate(seqs):
            if s.ndim != 1 or s.size == 0 or not np.issubdtype(s.dtype, np.integer):
                raise ProblemError(
                    f"sequences[{i}] must be a nonempty 1-D sequence of int token ids; got {s!r}."
                )
            if s.min() < 0 or s.max() >= V:
                raise ProblemError(
                    f"sequences[{i}] holds token ids outside [0, {V}) (V = embeddings.shape[0]): "
                    f"{s.tolist()}."
                )
        y = np.asarray(labels)
        if y.shape != (len(seqs),) or not np.issubdtype(y.dtype, np.integer):
            raise ProblemError(
                f"labels must be an int array of shape ({len(seqs)},) (one next token per "
                f"sequence); got {y.dtype} array of shape {y.shape}."
            )
        for i, (s, lab) in enumerate(zip(seqs, y, strict=True)):
            if not np.any(s == lab):
                raise ProblemError(
                    f"labels[{i}] = {int(lab)} does not occur in sequences[{i}] = {s.tolist()}; "
                    "the token-priority graphs (and attention's retrieval) need the label among "
                    "the input tokens. Drop the sample or add the token."
                )
        T = max(s.size for s in seqs)
        tokens = np.full((len(seqs), T), -1, dtype=np.int64)
        for i, s in enumerate(seqs):
            tokens[i, T - s.size :] = s
        self.embeddings = E
        self.tokens = tokens
        self.valid = tokens >= 0
        self.labels = y.astype(np.int64)
        self.last = tokens[:, -1].copy()
        self.n, self.T = tokens.shape
        self.V, self.d = E.shape
        for a in (self.embeddings, self.tokens, self.valid, self.labels, self.last):
            a.flags.writeable = False

    def __repr__(self) -> str:
        return f"NextTokenData(n={self.n}, T={self.T}, V={self.V}, d={self.d})"


def _check_data(data: Any, where: str) -> NextTokenData:
    if not isinstance(data, NextTokenData):
        raise ProblemError(
            f"{where} takes a svmgeo.NextTokenData; got {type(data).__name__}. Build one with "
            "sg.NextTokenData(sequences, labels, embeddings)."
        )
    return data


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
    data = _check_data(data, "token_priority_graphs")
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
    graphs : dict, optional
        :func:`token_priority_graphs` of ``data`` when already computed.

    Returns
    -------
    ConstraintSet
    """
    data = _check_data(data, "graph_svm_constraints")
    graphs = token_priority_graphs(data) if graphs is None else graphs
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


def graph_svm(
    data: NextTokenData, *, norm: Literal["fro", "nuc"] = "fro", tol: float = 1e-8, **kwargs: Any
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
    norm : {"fro", "nuc"} or ("lp", p), default "fro"
    tol : float, default 1e-8
    **kwargs
        Passed to :func:`svmgeo.solve_svm`.

    Returns
    -------
    SVMResult

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
    data = _check_data(data, "graph_svm")
    return solve_svm(graph_svm_constraints(data), norm=norm, tol=tol, **kwargs)


# ----------------------------------------------------------------------------- the model


def _forward(
    data: NextTokenData, W: np.ndarray, keep: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(token embeddings (n, T, d), log-softmax attention (n, T), attention (n, T))."""
    E = data.embeddings
    Xe = E[np.where(data.valid, data.tokens, 0)]  # (n, T, d)
    z = E[data.last]  # (n, d)
    logits = np.einsum("ntd,de,ne->nt", Xe, W, z)
    allowed = data.valid if keep is None else data.valid & keep
    logits = np.where(allowed, logits, -np.inf)
    top = logits.max(axis=1, keepdims=True)
    ls = logits - top - np.log(np.sum(np.exp(logits - top), axis=1, keepdims=True))
    return Xe, ls, np.exp(ls)


def ntp_loss_and_grad(
    data: NextTokenData,
    W: Any,
    *,
    loss: str = "ce",
    keep: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    r"""The next-token risk and its gradient in W.

    .. math::

        L(W) = \frac1n\sum_i \Big(\log\sum_v e^{o_{iv}} - o_{iy_i}\Big),\quad
        o_i = E E_{X_i}^\top s_i,\quad s_i = \mathrm{softmax}(E_{X_i} W e_{\bar x_i}),

        \nabla L = \frac1n \sum_i E_{X_i}^\top\big(\mathrm{diag}(s_i) - s_i s_i^\top\big)
        E_{X_i} E^\top (p_i - e_{y_i})\, e_{\bar x_i}^\top,\quad p_i = \mathrm{softmax}(o_i)

    (``loss="ce"``), or :math:`L = -\frac1n\sum_i \log\sum_{t: x_{it} = y_i} s_{it}` with
    :math:`\nabla L = \frac1n\sum_i E_{X_i}^\top(s_i - r_i) e_{\bar x_i}^\top`,
    :math:`r_i` the attention renormalized on the label's positions (``loss="retrieval"``).
    Log-sum-exp throughout.

    Parameters
    ----------
    data : NextTokenData
    W : array of shape (d, d)
    loss : {"ce", "retrieval"}, default "ce"
    keep : bool array of shape (n, T), optional
        Restrict each sequence's attention to these positions (used by
        :func:`finite_component`).

    Returns
    -------
    loss : float
    grad : ndarray of shape (d, d)
    """
    data = _check_data(data, "ntp_loss_and_grad")
    check_option(loss, "loss", NTP_LOSSES, where="ntp_loss_and_grad")
    W = np.asarray(W, dtype=float)
    if W.shape != (data.d, data.d):
        raise ProblemError(f"W must have shape ({data.d}, {data.d}); got {W.shape}.")
    if keep is not None:
        keep = np.asarray(keep, dtype=bool)
        need = data.valid & (data.tokens == data.labels[:, None])
        if keep.shape != (data.n, data.T) or not np.all(np.any(keep & need, axis=1)):
            raise ProblemError(
                f"keep must be a bool array of shape ({data.n}, {data.T}) that keeps at least "
                "one position of each sequence's label (its top-priority tokens); got shape "
                f"{keep.shape}."
            )
    E = data.embeddings
    Xe, ls, s = _forward(data, W, keep)
    z = E[data.last]
    n = data.n
    if loss == "ce":
        f = np.einsum("nt,ntd->nd", s, Xe)
        o = f @ E.T  # (n, V)
        om = o.max(axis=1, keepdims=True)
        lse = om[:, 0] + np.log(np.sum(np.exp(o - om), axis=1))
        value = float(np.mean(lse - o[np.arange(n), data.labels]))
        pr = np.exp(o - lse[:, None])
        pr[np.arange(n), data.labels] -= 1.0
        gf = pr @ E  # (n, d)
        gs = np.einsum("ntd,nd->nt", Xe, gf)
        # s_t (g_t - sum_u s_u g_u) written as s_t sum_u s_u (g_t - g_u): no cancellation
        # when one token takes almost all the attention (the gradient stays exact as ||W|| grows)
        ga = s * np.einsum("nu,ntu->nt", s, gs[:, :, None] - gs[:, None, :])
    else:
        on_label = data.tokens == data.labels[:, None]
        lab = np.where(on_label & np.isfinite(ls), ls, -np.inf)
        lm = lab.max(axis=1, keepdims=True)
        log_mass = lm[:, 0] + np.log(np.sum(np.exp(lab - lm), axis=1))
        value = float(-np.mean(log_mass))
        r = np.exp(lab - log_mass[:, None])
        rest = np.sum(np.where(on_label, 0.0, s), axis=1, keepdims=True)  # 1 - mass, exactly
        ga = np.where(on_label, -r * rest, s)  # = s - r, without the cancellation at the label
    G = np.einsum("nt,ntd,ne->de", ga, Xe, z) / n
    return value, G


@dataclass(frozen=True, eq=False)
class NTPRun:
    r"""Result of :func:`train_ntp`.

    Attributes
    ----------
    W : ndarray of shape (d, d)
    step : ndarray of shape (R,)
    loss : ndarray of shape (R,)
    W_history : ndarray of shape (R, d, d)
    """

    W: np.ndarray
    step: np.ndarray
    loss: np.ndarray
    W_history: np.ndarray


def train_ntp(
    data: NextTokenData,
    *,
    loss: str = "ce",
    step_size: float = 0.1,
    normalized: bool = True,
    n_steps: int = 1000,
    record_every: int | None = None,
) -> NTPRun:
    r"""(Normalized) gradient descent on the next-token risk from :math:`W_0 = 0`.

    .. math::

        W_{t+1} = W_t - \eta\,\frac{\nabla L(W_t)}{\|\nabla L(W_t)\|_F}
        \quad(\text{or } W_t - \eta\nabla L(W_t) \text{ with } \texttt{normalized=False}),

    with :math:`L` of :func:`ntp_loss_and_grad`.

    Parameters
    ----------
    data : NextTokenData
    loss : {"ce", "retrieval"}, default "ce"
    step_size : float, default 0.1
    normalized : bool, default True
    n_steps : int, default 1000
    record_every : int, optional
        Default ``max(1, n_steps // 100)``.

    Returns
    -------
    NTPRun
    """
    data = _check_data(data, "train_ntp")
    check_option(loss, "loss", NTP_LOSSES, where="train_ntp")
    eta = check_real(step_size, "step_size", low=0.0, low_open=True, where="train_ntp")
    n_steps = check_int(n_steps, "n_steps", low=0, where="train_ntp")
    every = max(1, n_steps // 100) if record_every is None else record_every
    every = check_int(every, "record_every", low=1, where="train_ntp")
    W = np.zeros((data.d, data.d))
    steps: list[int] = []
    losses: list[float] = []
    hist: list[np.ndarray] = []
    for t in range(n_steps + 1):
        value, G = ntp_loss_and_grad(data, W, loss=loss)
        if t % every == 0 or t == n_steps:
            steps.append(t)
            losses.append(value)
            hist.append(W.copy())
        if t == n_steps:
            break
        size = float(np.linalg.norm(G))
        if size == 0.0:
            break
        W = W - eta * (G / size if normalized else G)
    return NTPRun(
        W=W,
        step=np.asarray(steps, dtype=np.int64),
        loss=np.asarray(losses),
        W_history=np.asarray(hist).reshape(-1, data.d, data.d),
    )


# ----------------------------------------------------------------------- finite component


def _top_positions(data: NextTokenData, graphs: dict[int, TokenPriorityGraph]) -> np.ndarray:
    """(n, T) mask of each sequence's tokens in the SCC of its label."""
    keep = np.zeros((data.n, data.T), dtype=bool)
    for i in range(data.n):
        g = graphs[int(data.last[i])]
        toks = data.tokens[i]
        keep[i] = data.valid[i] & (g.component[np.maximum(toks, 0)] == g.component[data.labels[i]])
    return keep


@dataclass(frozen=True, eq=False)
class FiniteComponent:
    r"""The finite component :math:`W^{\mathrm{fin}}` and the subspace it lives in.

    Attributes
    ----------
    W : ndarray of shape (d, d)
    basis : ndarray of shape (r, d, d)
        Orthonormal basis (Frobenius) of :math:`S_{\mathrm{fin}}`; ``r = 0`` when every graph
        is acyclic (then ``W = 0``).
    keep : ndarray of bool, shape (n, T)
        The top-priority positions of each sequence (its label's SCC).
    loss : float
        The restricted loss at ``W``.
    grad_norm : float
        Norm of the restricted gradient projected on :math:`S_{\mathrm{fin}}` at ``W``.
    success : bool
        True when ``grad_norm`` is at most the requested tolerance.
    message : str
    """

    W: np.ndarray
    basis: np.ndarray
    keep: np.ndarray
    loss: float
    grad_norm: float
    success: bool
    message: str

    def project(self, W: np.ndarray) -> np.ndarray:
        r"""Orthogonal projection of ``W`` onto :math:`S_{\mathrm{fin}}`."""
        if self.basis.shape[0] == 0:
            return np.zeros_like(np.asarray(W, dtype=float))
        coef = np.einsum("rab,ab->r", self.basis, W)
        return np.einsum("r,rab->ab", coef, self.basis)


def finite_component(
    data: NextTokenData, *, loss: str = "ce", tol: float = 1e-9
) -> FiniteComponent:
    r"""The finite component :math:`W^{\mathrm{fin}}` of next-token prediction.

    .. math::

        W^{\mathrm{fin}} = \arg\min_{W \in S_{\mathrm{fin}}} L_{\mathrm{top}}(W),\qquad
        S_{\mathrm{fin}} = \mathrm{span}\{(e_i - e_j)e_k^\top : i \asymp j \text{ in } G^{(k)}\},

    :math:`L_{\mathrm{top}}` the risk of :func:`ntp_loss_and_grad` with each sequence's
    attention restricted to the tokens of its label's SCC. Solved by BFGS on the coordinates in
    an orthonormal basis of :math:`S_{\mathrm{fin}}` from zero.

    Parameters
    ----------
    data : NextTokenData
    loss : {"ce", "retrieval"}, default "ce"
    tol : float, default 1e-9
        Gradient-norm tolerance (the result says whether it was reached).

    Returns
    -------
    FiniteComponent

    References
    ----------
    .. [1] Y. Li, Y. Huang, M. E. Ildiz, A. S. Rawat, S. Oymak, "Mechanics of Next Token
       Prediction with Self-Attention", arXiv:2403.08081 (the finite component).
    """
    data = _check_data(data, "finite_component")
    check_option(loss, "loss", NTP_LOSSES, where="finite_component")
    tol = check_real(tol, "tol", low=0.0, low_open=True, where="finite_component")
    graphs = token_priority_graphs(data)
    cs = graph_svm_constraints(data, graphs)
    eq = cs.kind == EQUALITY
    keep = _top_positions(data, graphs)
    d = data.d
    gens = np.einsum("ja,jb->jab", cs.A[eq], cs.B[eq]).reshape(-1, d * d)
    if gens.shape[0] == 0:
        basis = np.zeros((0, d, d))
    else:
        U, sv, _ = np.linalg.svd(gens.T, full_matrices=False)
        r = int(np.count_nonzero(sv > sv[0] * 1e-12))
        basis = U[:, :r].T.reshape(r, d, d)
    if basis.shape[0] == 0:
        value, _ = ntp_loss_and_grad(data, np.zeros((d, d)), loss=loss, keep=keep)
        return FiniteComponent(
            W=np.zeros((d, d)),
            basis=basis,
            keep=keep,
            loss=value,
            grad_norm=0.0,
            success=True,
            message="every token-priority graph is acyclic: S_fin = {0}, W_fin = 0",
        )

    def fun(c: np.ndarray) -> tuple[float, np.ndarray]:
        W = np.einsum("r,rab->ab", c, basis)
        value, G = ntp_loss_and_grad(data, W, loss=loss, keep=keep)
        return value, np.einsum("rab,ab->r", basis, G)

    res = so.minimize(
        fun,
        np.zeros(basis.shape[0]),
        jac=True,
        method="BFGS",
        options={"gtol": tol, "maxiter": 20000},
    )
    value, g = fun(np.asarray(res.x))
    gnorm = float(np.linalg.norm(g))
    W = np.einsum("r,rab->ab", np.asarray(res.x), basis)
    ok = gnorm <= tol * math.sqrt(basis.shape[0])
    msg = f"BFGS: {res.message} (|grad| = {gnorm:.2e}, |W_fin| = {np.linalg.norm(W):.3g})"
    if not ok:
        msg += "; not converged"
    _, _, s_top = _forward(data, W, keep)
    smallest = float(np.min(np.where(keep, s_top, 1.0)))
    if smallest < _BOUNDARY:
        ok = False
        msg += (
            f"; a top-priority token gets attention {smallest:.1e} < {_BOUNDARY:g}: the "
            "restricted loss is minimized on the boundary of the simplex, so it has no finite "
            "minimizer and W_fin is only a point far along a diverging path"
        )
    return FiniteComponent(
        W=W, basis=basis, keep=keep, loss=value, grad_norm=gnorm, success=ok, message=msg
    )


# ------------------------------------------------------------------------------ verify


@dataclass(frozen=True, eq=False)
class NTPVerification:
    r"""How a trained W compares with :math:`W^{\mathrm{fin}} + R\,W^{\mathrm{svm}}`.

    Attributes
    ----------
    corr_svm : float
        :math:`\langle W, W^{\mathrm{svm}}\rangle / (\|W\|\|W^{\mathrm{svm}}\|)`.
    fin_error : float
        :math:`\|P_{\mathrm{fin}}W - W^{\mathrm{fin}}\|_F / \max(1, \|W^{\mathrm{fin}}\|_F)`.
    composition_error : float
        Largest total-variation distance between each sequence's attention under W and the
        predicted one (softmax of :math:`W^{\mathrm{fin}}` on its top tokens, 0 elsewhere).
    top_mass : float
        Smallest attention mass a sequence puts on its top-priority tokens under W.
    R : float
        Least-squares :math:`R \ge 0` in :math:`W \approx W^{\mathrm{fin}} + R W^{\mathrm{svm}}`.
    """

    corr_svm: float
    fin_error: float
    composition_error: float
    top_mass: float
    R: float


def verify_ntp(
    data: NextTokenData,
    W: Any,
    *,
    svm: SVMResult | None = None,
    fin: FiniteComponent | None = None,
    loss: str = "ce",
) -> NTPVerification:
    r"""Compare a trained W with the prediction :math:`W^{\mathrm{fin}} + R\,W^{\mathrm{svm}}`.

    .. math::

        \mathrm{corr}(W, W^{\mathrm{svm}}),\qquad
        \frac{\|P_{S_{\mathrm{fin}}} W - W^{\mathrm{fin}}\|_F}{\max(1, \|W^{\mathrm{fin}}\|_F)},
        \qquad \max_i \mathrm{TV}\big(s_i(W), s_i^{\mathrm{top}}(W^{\mathrm{fin}})\big).

    Parameters
    ----------
    data : NextTokenData
    W : array of shape (d, d)
    svm : SVMResult, optional
        :func:`graph_svm` of ``data`` (computed when omitted).
    fin : FiniteComponent, optional
        :func:`finite_component` of ``data`` (computed when omitted).
    loss : {"ce", "retrieval"}
        The loss of ``fin`` when it is computed here.

    Returns
    -------
    NTPVerification
    """
    data = _check_data(data, "verify_ntp")
    W = np.asarray(W, dtype=float)
    svm = graph_svm(data) if svm is None else svm
    fin = finite_component(data, loss=loss) if fin is None else fin
    if svm.W is None:
        raise ProblemError(f"the Graph-SVM has no solution ({svm.status}: {svm.message}).")
    Ws = svm.W
    _, _, s = _forward(data, W)
    _, _, s_pred = _forward(data, fin.W, fin.keep)
    tv = 0.5 * np.sum(np.abs(s - s_pred), axis=1)
    R = max(0.0, float(np.sum((W - fin.W) * Ws)) / float(np.sum(Ws * Ws)))
    return NTPVerification(
        corr_svm=correlation(W, Ws),
        fin_error=float(np.linalg.norm(fin.project(W) - fin.W))
        / max(1.0, float(np.linalg.norm(fin.W))),
        composition_error=float(tv.max()),
        top_mass=float(np.min(np.sum(np.where(fin.keep, s, 0.0), axis=1))),
        R=R,
    )


@summarized
@dataclass(frozen=True, eq=False)
class NTPReport:
    r"""What :func:`verify_ntp_training` found: GD's trajectory against
    :math:`W^{\mathrm{fin}} + R\,W^{\mathrm{svm}}`.

    Curves have one entry per recorded step (``steps``); each is the matching field of
    :func:`verify_ntp` at that step's W.

    Attributes
    ----------
    loss : {"ce", "retrieval"}
    normalized : bool
    step_size : float
    steps : ndarray of int, shape (R,)
    train_loss : ndarray of shape (R,)
        :math:`L(W_t)`.
    corr_svm, fin_error, composition_error, top_mass, R : ndarray of shape (R,)
        As in :class:`NTPVerification`.
    acyclic : bool
        Every token-priority graph is acyclic (no equality rows: pure retrieval predicted).
    n_margin_rows, n_equality_rows : int
        Rows of the Graph-SVM.
    fin_success : bool
        Whether :func:`finite_component` found a finite :math:`W^{\mathrm{fin}}`
        (``fin_message`` says why not); ``fin_error`` is measured against its last point
        either way.
    fin_message : str
    W, W_svm, W_fin : ndarray of shape (d, d)
        GD's final W, :math:`W^{\mathrm{svm}}` (Frobenius) and :math:`W^{\mathrm{fin}}`.
    svm, fin, run : objects
        The Graph-SVM solve, the finite component and the GD run behind the report.
    """

    loss: str
    normalized: bool
    step_size: float
    steps: np.ndarray
    train_loss: np.ndarray
    corr_svm: np.ndarray
    fin_error: np.ndarray
    composition_error: np.ndarray
    top_mass: np.ndarray
    R: np.ndarray
    acyclic: bool
    n_margin_rows: int
    n_equality_rows: int
    fin_success: bool
    fin_message: str
    W: np.ndarray
    W_svm: np.ndarray
    W_fin: np.ndarray
    svm: SVMResult = field(repr=False)
    fin: FiniteComponent = field(repr=False)
    run: NTPRun = field(repr=False)

    @property
    def final(self) -> NTPVerification:
        """:func:`verify_ntp` of the final W."""
        return NTPVerification(
            corr_svm=float(self.corr_svm[-1]),
            fin_error=float(self.fin_error[-1]),
            composition_error=float(self.composition_error[-1]),
            top_mass=float(self.top_mass[-1]),
            R=float(self.R[-1]),
        )

    def __str__(self) -> str:
        kind = "normalized" if self.normalized else "plain"
        graphs = "acyclic (pure retrieval)" if self.acyclic else "cyclic (soft composition)"
        lines = [
            f"svmgeo NTP verify report ({self.loss} loss)",
            f"  GD               {kind}, step {self.step_size:g}, {int(self.steps[-1])} steps",
            f"  graphs           {graphs}; Graph-SVM rows: {self.n_margin_rows} margin, "
            f"{self.n_equality_rows} equality",
            f"  W_fin            {'finite' if self.fin_success else 'NOT finite'}: "
            f"{self.fin_message}",
            "",
            f"  {'step':>8} {'loss':>10} {'corr(W,Wsvm)':>12} {'fin err':>9} {'comp err':>9} "
            f"{'top mass':>9} {'R':>9}",
        ]
        for j in sorted({int(j) for j in np.linspace(0, len(self.steps) - 1, 6).round()}):
            lines.append(
                f"  {int(self.steps[j]):>8} {self.train_loss[j]:>10.3e} {self.corr_svm[j]:>12.6f} "
                f"{self.fin_error[j]:>9.2e} {self.composition_error[j]:>9.2e} "
                f"{self.top_mass[j]:>9.6f} {self.R[j]:>9.4g}"
            )
        return "\n".join(lines)


def verify_ntp_training(
    data: NextTokenData,
    *,
    loss: str = "ce",
    step_size: float = 0.1,
    normalized: bool = True,
    n_steps: int = 2000,
    record_every: int | None = None,
) -> NTPReport:
    r"""Train W by GD from zero and compare every recorded iterate with the prediction.

    .. math::

        W_t \approx W^{\mathrm{fin}} + R_t\,W^{\mathrm{svm}}:\qquad
        \mathrm{corr}(W_t, W^{\mathrm{svm}}) \to 1,\qquad
        P_{S_{\mathrm{fin}}} W_t \to W^{\mathrm{fin}}

    (:func:`train_ntp`, then :func:`verify_ntp` at each record, with one
    :func:`graph_svm` and one :func:`finite_component` solve). The convergence is a theorem
    of [1]_ for GD under its assumptions (see ``docs/beyond.md``), measured here.

    Parameters
    ----------
    data : NextTokenData
    loss, step_size, normalized, n_steps, record_every
        As in :func:`train_ntp` (``n_steps`` defaults to 2000 here).

    Returns
    -------
    NTPReport

    Raises
    ------
    ProblemError
        Invalid options, or a Graph-SVM without a solution.

    References
    ----------
    .. [1] Y. Li, Y. Huang, M. E. Ildiz, A. S. Rawat, S. Oymak, "Mechanics of Next Token
       Prediction with Self-Attention", AISTATS 2024, arXiv:2403.08081.

    Examples
    --------
    >>> import svmgeo as sg
    >>> data = sg.random_next_token_data(30, 4, 5, 8, tier_size=2, seed=0)
    >>> rep = sg.ntp.verify_ntp_training(data, loss="retrieval", n_steps=200)
    >>> rep.final.corr_svm > 0.9
    True
    """
    data = _check_data(data, "verify")
    check_option(loss, "loss", NTP_LOSSES, where="verify")
    svm = graph_svm(data)
    if svm.W is None:
        raise ProblemError(f"the Graph-SVM has no solution ({svm.status}: {svm.message}).")
    fin = finite_component(data, loss=loss)
    run = train_ntp(
        data,
        loss=loss,
        step_size=step_size,
        normalized=normalized,
        n_steps=n_steps,
        record_every=record_every,
    )
    checks = [verify_ntp(data, W, svm=svm, fin=fin) for W in run.W_history]
    kind = svm.constraints.kind

    def curve(name: str) -> np.ndarray:
        return np.array([getattr(c, name) for c in checks], dtype=float)

    return NTPReport(
        loss=loss,
        normalized=bool(normalized),
        step_size=float(step_size),
        steps=run.step,
        train_loss=run.loss,
        corr_svm=curve("corr_svm"),
        fin_error=curve("fin_error"),
        composition_error=curve("composition_error"),
        top_mass=curve("top_mass"),
        R=curve("R"),
        acyclic=not np.any(kind == EQUALITY),
        n_margin_rows=int(np.count_nonzero(kind == MARGIN)),
        n_equality_rows=int(np.count_nonzero(kind == EQUALITY)),
        fin_success=fin.success,
        fin_message=fin.message,
        W=run.W,
        W_svm=svm.W,
        W_fin=fin.W,
        svm=svm,
        fin=fin,
        run=run,
    )


# ------------------------------------------------------------------------------ data


def random_next_token_data(
    n: int,
    T: int,
    V: int,
    d: int,
    *,
    tier_size: int = 1,
    orthonormal: bool = True,
    seed: int | None = None,
) -> NextTokenData:
    r"""Synthetic next-token data with a planted priority order per last token.

    For each last token k a random permutation of the vocabulary is cut into tiers of
    ``tier_size`` tokens; a sample draws T - 1 tokens uniformly, appends k, and takes as label
    a uniformly random token among its tokens in their highest tier. ``tier_size=1`` gives
    acyclic token-priority graphs (pure retrieval); larger tiers give cycles within tiers
    once enough samples are drawn (soft composition). Embeddings are orthonormal rows (a random
    rotation; needs ``d >= V``) or, with ``orthonormal=False``, :math:`\mathcal N(0, 1/d)`
    entries. With orthonormal embeddings the cross-entropy logit of token v is the attention
    mass on v, so retrieving the label is what the loss rewards; with Gaussian ones another
    token's embedding can score the label better than its own, and GD need not retrieve it.

    Parameters
    ----------
    n, T, V, d : int
        Samples, sequence length (>= 2), vocabulary size (>= 2), embedding dimension.
    tier_size : int, default 1
    orthonormal : bool, default True
    seed : int, optional

    Returns
    -------
    NextTokenData
    """
    where = "random_next_token_data"
    n = check_int(n, "n", low=1, where=where)
    T = check_int(T, "T", low=2, where=where)
    V = check_int(V, "V", low=2, where=where)
    d = check_int(d, "d", low=1, where=where)
    tier_size = check_int(tier_size, "tier_size", low=1, where=where)
    if orthonormal and d < V:
        raise ProblemError(
            f"orthonormal embeddings need d >= V; got d={d}, V={V}. Raise d or pass "
            "orthonormal=False."
        )
    rng = np.random.default_rng(seed)
    tier = np.empty((V, V), dtype=np.int64)  # tier[k, v]
    for k in range(V):
        tier[k, rng.permutation(V)] = np.arange(V) // tier_size
    seqs: list[np.ndarray] = []
    labels: list[int] = []
    for _ in range(n):
        k = int(rng.integers(V))
        s = np.append(rng.integers(0, V, size=T - 1), k)
        best = tier[k, s].min()
        cands = np.unique(s[tier[k, s] == best])
        seqs.append(s)
        labels.append(int(rng.choice(cands)))
    if orthonormal:
        E = np.linalg.qr(rng.normal(size=(d, V)))[0].T
    else:
        E = rng.normal(size=(V, d)) / math.sqrt(d)
    return NextTokenData(seqs, np.asarray(labels), E)
