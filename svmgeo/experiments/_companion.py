# SPDX-License-Identifier: BSD-3-Clause
r"""The data and shared measurements of the companion paper's four experiments.

Tarzanagh, Li, Zhang, Oymak, *Max-Margin Token Selection in Attention Mechanism* (NeurIPS
2023, arXiv:2306.13596) trains prompt attention

.. math::

    f(X) = v^\top X^\top \operatorname{softmax}(X W p),

with the key-query product fixed to :math:`W = K^\top Q` and :math:`K = Q =
\operatorname{diag}(1, 1, 0)` in three of its experiments: attention reads the first two
coordinates of a token, the head :math:`v = e_3` reads the third. svmgeo expresses this with
``TokenData(X @ W, values=X, v=e3)``: attention features :math:`x_t = W^\top x^{\mathrm{paper}}_t`
apart from the head features :math:`u_t = x^{\mathrm{paper}}_t` (so the scores are
:math:`\gamma_t = Y v^\top u_t`, the third coordinate). The joint-training experiment uses
:math:`W = I` (attention features = head features).

The data, starts, step sizes and horizons are those of the authors' released notebooks
(https://github.com/ucr-optml/max_margin_attention, read for the protocol only); see
``docs/experiments.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .._errors import SolverNotFound
from .._linalg import correlation
from ..data import TokenData
from ..gd import train

__all__ = [
    "ATTENTION_MAP",
    "PAPER_EPS_STEP",
    "PromptPath",
    "cosine",
    "finish_figure",
    "import_torch",
    "joint_data",
    "losses_data",
    "multi_input_data",
    "prompt_data",
    "prompt_path",
    "single_input_data",
]

#: The paper's key-query product :math:`K^\top Q` with :math:`K = Q = \mathrm{diag}(1, 1, 0)`.
ATTENTION_MAP = np.diag([1.0, 1.0, 0.0])

#: The ε of the released code's normalized step :math:`g / (\|g\| + \varepsilon)`, per
#: experiment (``"joint"``: the p block's; the head's is ``PAPER_EPS_STEP["joint_v"]``).
PAPER_EPS_STEP = {
    "single": 1e-9,
    "multi": 1e-12,
    "joint": 1e-19,
    "joint_v": 1e-9,
    "losses": 1e-9,
}


def cosine(a: Any, b: Any) -> float:
    r""":math:`\langle a, b\rangle / (\|a\|\|b\|)` (0 when either is zero)."""
    return correlation(np.asarray(a, dtype=float), np.asarray(b, dtype=float))


def prompt_data(X: Any, Y: Any, v: Any, attention: Any = ATTENTION_MAP) -> TokenData:
    r"""``TokenData`` of prompt attention with head features ``X`` and attention features
    ``X @ attention``.

    .. math::

        x_{it} = W^\top x^{\mathrm{paper}}_{it} \ (\text{attention}),\qquad
        u_{it} = x^{\mathrm{paper}}_{it} \ (\text{head}),\qquad
        \gamma_{it} = Y_i\, v^\top u_{it}

    The queries are :math:`z_i = e_1` (unused by ``param="p"``; with them Att-SVM equals the
    p-SVM).
    """
    X = np.asarray(X, dtype=float)
    M = np.asarray(attention, dtype=float)
    n, _, d = X.shape
    Z = np.zeros((n, d))
    Z[:, 0] = 1.0
    return TokenData(X @ M, values=X, Y=np.asarray(Y, dtype=float), v=np.asarray(v, float), Z=Z)


def single_input_data(gamma2: float) -> TokenData:
    r"""One input, three tokens :math:`(-0.1, 1, 1), (1, 0, 0.9), (0, 0, \gamma_2)`, Y = 1,
    v = e3: scores (1, 0.9, γ₂). The paper's two settings: γ₂ = 0.9 (only the first token is
    locally optimal: global convergence) and γ₂ = 0 (the second token is locally optimal too)."""
    X = [[[-0.1, 1.0, 1.0], [1.0, 0.0, 0.9], [0.0, 0.0, gamma2]]]
    return prompt_data(X, [1.0], [0.0, 0.0, 1.0])


def import_torch() -> Any:
    """torch, or a :class:`~svmgeo.SolverNotFound` naming the extra (the multi-input data are
    drawn by torch's generator)."""
    try:
        import torch
    except ImportError as exc:
        raise SolverNotFound(
            "the multi-input experiment draws the paper's tokens with torch's generator, which "
            "is not installed. Install the extra: pip install 'svmgeo[torch]'."
        ) from exc
    return torch


def multi_input_data(seed: int = 0, n: int = 3, T: int = 7) -> TokenData:
    r"""The paper's multi-input data: n = 3 inputs of T = 7 tokens, Y = 1, v = e3.

    .. math::

        x_{it} = 0.2\,\xi_{it} + c_t,\qquad
        c_0 = (1, 0, \cdot),\ c_{1..3} = (-1, 1, \cdot),\ c_{4..6} = (-0.5, -0.5, \cdot),

    with :math:`\xi_{it}` standard normal; the third coordinate (the score) is 1 for token 0
    and 0.5 for the others. ξ is drawn by torch's CPU generator with ``manual_seed(seed)`` in
    float32, exactly as the released notebook (seed 0 is the published figure), then widened
    to float64. Needs torch (``pip install 'svmgeo[torch]'``).
    """
    torch = import_torch()
    gen = torch.Generator()
    gen.manual_seed(int(seed))
    X = torch.randn((n, T, 3), generator=gen) * 0.2
    X[:, 0] += torch.tensor([1.0, 0.0, 0.0])
    X[:, 1 : (T + 1) // 2] += torch.tensor([-1.0, 1.0, 0.0])
    X[:, -(T - 1) // 2 :] += torch.tensor([-0.5, -0.5, 0.0])
    X[:, 0, -1] = 1.0
    X[:, 1:, -1] = 0.5
    return prompt_data(X.double().numpy(), np.ones(n), [0.0, 0.0, 1.0])


def joint_data(tight: bool) -> TokenData:
    r"""The joint (v, p) data: n = 3 inputs of two tokens, Y = (1, −1, 1), W = I.

    Tokens (0, 0) and x_i with :math:`x_1 = (1, 1)`, :math:`x_2 = (1, -1)`, and
    :math:`x_3 = (0.5, 1)` (``tight``: every input is a support vector of the head's SVM
    :math:`v^{mm} = (0, 1)`) or :math:`(0.5, 1.5)` (input 3 is not, so the relaxed p-SVM drops
    its margin row). ``data.v`` is the paper's initial head (−1, 0).
    """
    third = [0.5, 1.0] if tight else [0.5, 1.5]
    X = [[[0.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, -1.0]], [[0.0, 0.0], third]]
    return prompt_data(X, [1.0, -1.0, 1.0], [-1.0, 0.0], attention=np.eye(2))


def losses_data(C: float) -> TokenData:
    r"""The loss-comparison data: n = 2 inputs, tokens (0, 0, 0) and (1, 1, C) / (1, −1, 1),
    Y = 1, v = e3: scores (0, C) and (0, 1); the second token is optimal in both."""
    X = [[[0.0, 0.0, 0.0], [1.0, 1.0, float(C)]], [[0.0, 0.0, 0.0], [1.0, -1.0, 1.0]]]
    return prompt_data(X, [1.0, 1.0], [0.0, 0.0, 1.0])


class PromptPath(NamedTuple):
    """The recorded iterates of a prompt-attention run: steps (R,), p (R, d), softmax
    probabilities (R, n, T) and, when the head was trained, v (R, d_u) (else None)."""

    step: np.ndarray
    p: np.ndarray
    probs: np.ndarray
    v: np.ndarray | None


def prompt_path(
    data: TokenData,
    p0: Any,
    *,
    n_steps: int,
    record_every: int,
    eps: float | Mapping[str, float],
    step_size: float = 0.1,
    normalized: bool = True,
    loss: str = "logistic",
    train_head: bool = False,
) -> PromptPath:
    r"""GD on prompt attention p from ``p0`` (and the head from ``data.v`` when
    ``train_head``), :math:`p \leftarrow p - \eta\,\nabla L/(\|\nabla L\| + \varepsilon)`
    (plain steps when not ``normalized``; ``eps`` one ε or one per block, as ``normalize_eps``
    of :func:`~svmgeo.train`); the recorded iterates."""
    run = train(
        data,
        param="p",
        train_head=train_head,
        loss=loss,
        init=np.asarray(p0, dtype=float),
        step_size=step_size,
        normalized=normalized,
        normalize_eps=eps if normalized else 0.0,
        n_steps=n_steps,
        record_every=record_every,
        record=("p", "probs", "v") if train_head else ("p", "probs"),
    )
    hist = run.history
    assert hist.p is not None and hist.probs is not None
    steps = np.asarray(hist.step)
    probs = np.asarray(hist.probs).reshape(len(steps), data.n, data.T)
    v = None if not train_head or hist.v is None else np.asarray(hist.v)
    return PromptPath(steps, np.asarray(hist.p), probs, v)


def finish_figure(fig: Any, axes: Any, path: Path) -> list[Path]:
    """Grid and legend on every axis, then :func:`~svmgeo.plot.save_figure`."""
    from ..plot import save_figure

    for ax in np.ravel(axes):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return save_figure(fig, path)
