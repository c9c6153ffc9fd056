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

The wing, by concept: data (:class:`NextTokenData`, :func:`random_next_token_data`,
:func:`save_next_token_data`, :func:`load_next_token_data`), graphs
(:func:`token_priority_graphs`), the Graph-SVM (:func:`graph_svm`), the risk
(:func:`ntp_loss_and_grad`, :class:`NextTokenRisk`), training (:func:`train_ntp`, in the one
loop of :mod:`svmgeo.gd`), the finite component (:func:`finite_component`) and verification
(:func:`verify_ntp`, :func:`verify_ntp_training`).
"""

from ._data import (
    NextTokenData,
    load_next_token_data,
    random_next_token_data,
    save_next_token_data,
)
from ._finite import FiniteComponent, finite_component
from ._graphs import TokenPriorityGraph, token_priority_graphs
from ._risk import NextTokenRisk, ntp_loss_and_grad
from ._svm import graph_svm, graph_svm_constraints
from ._train import train_ntp
from ._verify import NTPReport, NTPVerification, verify_ntp, verify_ntp_training

__all__ = [
    "FiniteComponent",
    "NTPReport",
    "NTPVerification",
    "NextTokenData",
    "NextTokenRisk",
    "TokenPriorityGraph",
    "finite_component",
    "graph_svm",
    "graph_svm_constraints",
    "load_next_token_data",
    "ntp_loss_and_grad",
    "random_next_token_data",
    "save_next_token_data",
    "token_priority_graphs",
    "train_ntp",
    "verify_ntp",
    "verify_ntp_training",
]
