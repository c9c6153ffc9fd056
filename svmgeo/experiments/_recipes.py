# SPDX-License-Identifier: BSD-3-Clause
r"""Trial functions of the paper's experiments (one call = one seeded trial of a sweep).

Each function is module-level so that :func:`svmgeo.experiments.sweep` can send it to worker
processes or a Dask cluster, takes only scalar parameters (the grid's columns), builds its
data with :func:`svmgeo.random_data` from ``seed``, and returns a dict of scalar results (or a
list of dicts, one per recorded step or threshold). The protocols are documented in
``docs/experiments.md``.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np

from .._linalg import correlation
from ..analysis import is_locally_optimal, support_tokens
from ..constraints import att_svm_constraints
from ..data import TokenData, random_data
from ..gd import train
from ..selection import optimal_tokens
from ..solvers import att_svm

__all__ = [
    "RANK_RTOL",
    "concave_trial",
    "gensvm_trial",
    "global_trial",
    "local_trial",
    "numerical_rank",
    "paths2d_trial",
    "rank_trial",
]

#: Relative singular-value threshold of the rank study: rank = #{k : σ_k > RANK_RTOL·σ_1}.
RANK_RTOL = 1e-6


def numerical_rank(W: np.ndarray | None, rtol: float = RANK_RTOL) -> int | None:
    r"""Numerical rank :math:`\#\{k : \sigma_k(W) > \mathrm{rtol}\,\sigma_1(W)\}` (None for None)."""
    if W is None:
        return None
    s = np.linalg.svd(W, compute_uv=False)
    return int(np.count_nonzero(s > rtol * s[0])) if s[0] > 0 else 0


def _nan(x: float | None) -> float:
    return float("nan") if x is None else float(x)


# -- rank study ---------------------------------------------------------------------------------


def rank_trial(n: int, T: int, d: int, seed: int, scs: bool = False) -> dict[str, Any]:
    """Ranks of W^mm (Frobenius) and W^mm⋆ (nuclear) of Att-SVM(opt) on one random dataset.

    With ``scs=True`` the nuclear problem is also solved by the naive cvxpy model with SCS at
    its default accuracy (the low-accuracy protocol), whose numerical rank is reported apart.
    """
    data = random_data(n, T, d, seed=seed)
    alpha = optimal_tokens(data)
    fro = att_svm(data, alpha, norm="fro")
    row: dict[str, Any] = {
        "feasible": fro.W is not None,
        "rank_fro": None,
        "rank_nuc": None,
        "rank_nuc_scs": None,
        "norm_fro": None,
        "nuc_norm": None,
        "nuc_certified": None,
    }
    if fro.W is None:
        return row
    nuc = att_svm(data, alpha, norm="nuc")
    row.update(
        rank_fro=numerical_rank(fro.W),
        rank_nuc=numerical_rank(nuc.W),
        norm_fro=float(np.linalg.norm(fro.W)),
        nuc_norm=_nan(nuc.objective),
        nuc_certified=bool(nuc.certificate is not None and nuc.certificate.passed),
    )
    if scs:
        from ..solvers import solve_naive_cvxpy

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            W_scs, *_ = solve_naive_cvxpy(att_svm_constraints(data, alpha), "nuc", solver="SCS")
        row["rank_nuc_scs"] = numerical_rank(W_scs)
    return row


# -- local convergence ----------------------------------------------------------------------


def _random_lot(data: TokenData, seed: int, max_tries: int) -> tuple[np.ndarray, bool]:
    """A random selection that is a LOT for both norms, by score ascent from a uniform draw.

    Start from α_i uniform; while α is not locally optimal for Att-SVM(α) (Frobenius) and
    Att-SVM⋆(α) (nuclear, whose support tokens may differ), move every violating sequence to
    its highest-scoring violating support token (a strict score increase, so this ends, at
    worst at the optimal tokens). Returns α and whether it is such a LOT (False only after
    ``max_tries`` moves or an infeasible α; then α = opt).
    """
    rng = np.random.default_rng([seed, 7])
    alpha = rng.integers(data.T, size=data.n)
    for _ in range(max_tries):
        lot = is_locally_optimal(data, alpha)
        if lot:
            lot = is_locally_optimal(data, alpha, norm="nuc")
            if lot:
                return alpha, True
        if not lot.violations:
            break
        best: dict[int, tuple[float, int]] = {}
        for v in lot.violations:
            if v.seq not in best or v.score_token > best[v.seq][0]:
                best[v.seq] = (v.score_token, v.token)
        for i, (_, t) in best.items():
            alpha[i] = t
    return optimal_tokens(data), False


def _balanced_factors(W0: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    U, s, Vt = np.linalg.svd(W0)
    r = np.sqrt(s[:m])
    return U[:, :m] * r, Vt[:m].T * r


def _alpha_softmax(probs: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """(R,) mean over sequences of the softmax probability of the selected token α_i."""
    p = probs[:, :, 0, :] if probs.ndim == 4 else probs
    return p[:, np.arange(p.shape[1]), alpha].mean(axis=1)


def local_trial(
    n: int,
    T: int,
    d: int,
    seed: int,
    param: str,
    n_steps: int,
    radius: float = 100.0,
    noise: float = 0.05,
    max_tries: int = 50,
    n_records: int = 50,
) -> list[dict[str, Any]]:
    r"""Normalized GD started in the cone around the SVM direction of a random LOT α.

    α is locally optimal for both norms (see :func:`_random_lot`).

    W runs start at :math:`R\,W^{\mathrm{mm}}_\alpha/\|W^{\mathrm{mm}}_\alpha\|_F` (Frobenius),
    (K, Q) runs (m = d) at the balanced factors of the same point built from the nuclear
    :math:`W^{\mathrm{mm}\star}_\alpha`; both plus a Gaussian perturbation of relative size
    ``noise``. One row per recorded step: correlations of W(t) with both SVM solutions and the
    mean softmax probability of the selected tokens.
    """
    data = random_data(n, T, d, seed=seed)
    alpha, found = _random_lot(data, seed, max_tries)
    fro = att_svm(data, alpha, norm="fro")
    nuc = att_svm(data, alpha, norm="nuc")
    assert fro.W is not None and nuc.W is not None  # a LOT is feasible by definition
    rng = np.random.default_rng([seed, 11])
    target = fro.W if param == "W" else nuc.W
    W0 = radius * target / np.linalg.norm(target)
    W0 = W0 + noise * radius * rng.standard_normal((d, d)) / d
    init: Any = W0 if param == "W" else _balanced_factors(W0, d)
    run = train(
        data,
        param=param,
        m=d if param == "KQ" else None,
        step_size=0.1 if param == "W" else 0.02,
        n_steps=n_steps,
        init=init,
        record_every=max(1, n_steps // n_records),
        record=("W", "probs"),
    )
    hist = run.history
    assert hist.W is not None and hist.probs is not None
    soft = _alpha_softmax(hist.probs, alpha)
    is_opt = bool(np.array_equal(alpha, optimal_tokens(data)))
    return [
        {
            "step": int(step),
            "corr_fro": correlation(W, fro.W),
            "corr_nuc": correlation(W, nuc.W),
            "softmax_alpha": float(s),
            "alpha_is_opt": is_opt,
            "random_lot_found": found,
        }
        for step, W, s in zip(hist.step, hist.W, soft, strict=True)
    ]


# -- global convergence ---------------------------------------------------------------------


def global_trial(
    n: int,
    T: int,
    d: int,
    seed: int,
    param: str,
    n_steps: int,
    threshold: float = 0.99,
    init_scale: float = 0.01,
) -> dict[str, Any]:
    r"""GD from zero (W) or a small random start (K, Q; m = d, scale ``init_scale``) on random data.

    ``reached`` when corr(W_GD, W^mm) ≥ ``threshold``, with W^mm the Frobenius Att-SVM(opt)
    solution for W and the nuclear one for (K, Q). ``b1``: Assumption B.1 (every non-optimal
    token is a support token of W^mm). ``norm_ratio``: the norm of W_GD divided by its smallest
    Att-SVM(opt) margin, over the optimal norm (Frobenius for W, nuclear for (K, Q); ≥ 1, and
    → 1 exactly when W_GD approaches the solution set; None while a margin is ≤ 0).
    ``param="none"`` only decides B.1 (no GD; used for
    large d, where B.1 starts to hold).
    """
    data = random_data(n, T, d, seed=seed)
    alpha = optimal_tokens(data)
    sup = support_tokens(data, alpha)
    row: dict[str, Any] = {
        "feasible": bool(sup.feasible),
        "b1": None,
        "corr": None,
        "corr_other": None,
        "selects_opt": None,
        "reached": False,
        "norm_ratio": None,
    }
    if not sup.feasible or sup.mask is None:
        return row
    row["b1"] = bool(sup.mask.sum() == n * (T - 1))
    if param == "none":
        return row
    W_fro = sup.svm.W
    W_nuc = att_svm(data, alpha, norm="nuc").W
    assert W_fro is not None and W_nuc is not None
    run = train(
        data,
        param=param,
        m=d if param == "KQ" else None,
        step_size=0.1 if param == "W" else 0.02,
        n_steps=n_steps,
        init="zero" if param == "W" else ("random", init_scale),
        seed=seed,
        record_every=n_steps,
        record=("selected",),
    )
    target, other = (W_fro, W_nuc) if param == "W" else (W_nuc, W_fro)
    corr = correlation(run.W, target)
    # solution-set invariant: the norm of W_GD rescaled to margin 1, over the optimal norm
    margin = float(att_svm_constraints(data, alpha).apply(run.W).min())
    order: Literal["fro", "nuc"] = "fro" if param == "W" else "nuc"
    if margin > 0:
        row["norm_ratio"] = float(
            np.linalg.norm(run.W / margin, order) / np.linalg.norm(target, order)
        )
    assert run.history.selected is not None
    row.update(
        corr=corr,
        corr_other=correlation(run.W, other),
        selects_opt=bool(np.array_equal(run.history.selected[-1].reshape(alpha.shape), alpha)),
        reached=bool(corr >= threshold),
    )
    return row


# -- Gen-SVM with the ReLU-value head -------------------------------------------------------


def _verify_rows(rep: Any, extra: dict[str, Any]) -> list[dict[str, Any]]:
    def one_minus(c: np.ndarray | None, k: int) -> float:
        return float("nan") if c is None else float(1.0 - c[k])

    sizes = None if rep.selected is None else rep.selected.reshape(rep.selected.shape[0], -1)
    out = []
    for k, step in enumerate(rep.steps):
        out.append(
            {
                "step": int(step),
                "one_minus_corr_eq": one_minus(rep.corr_eq, k),
                "one_minus_corr_dir": one_minus(rep.corr_dir, k),
                "one_minus_corr_svm": one_minus(rep.corr_fro, k),
                "gamma": _nan(rep.gamma),
                "max_selected": None if sizes is None else int(sizes.sum(axis=1).max()),
                "n_ambiguous": rep.n_ambiguous,
                **extra,
            }
        )
    return out


def gensvm_trial(
    n: int,
    T: int,
    d: int,
    seed: int,
    n_steps: int,
    v_sign: str = "ones",
    n_records: int = 30,
) -> list[dict[str, Any]]:
    r"""Normalized GD on W with the ReLU-value head :math:`h(x) = v^\top\mathrm{ReLU}(V^\top x)`.

    ``V`` (d × d) has i.i.d. N(0, 1) entries drawn from ``seed``; ``v`` is all ones
    (``v_sign="ones"``, the head of SPEC §1) or alternates +1, −1 (``"alt"``). One row per recorded step:
    1 − corr of W(t) with W^eq = W^fin + R(t) W^svm (Gen-SVM of the final softmax's selected
    sets), with W^svm, and with the one-token Att-SVM of GD's argmax selection; Γ of the final
    softmax.
    """
    from ..verify import verify

    data = random_data(n, T, d, seed=seed)
    V = np.random.default_rng([seed, 3]).standard_normal((d, d))
    rep = verify(
        data,
        head="relu",
        V=V,
        v=np.ones(d) if v_sign == "ones" else np.where(np.arange(d) % 2 == 0, 1.0, -1.0),
        step_size=0.1,
        n_steps=n_steps,
        record_every=max(1, n_steps // n_records),
    )
    return _verify_rows(rep, {})


# -- λ-concave head -------------------------------------------------------------------------


def concave_trial(
    n: int, T: int, d: int, seed: int, lam: float, n_steps: int
) -> list[dict[str, Any]]:
    r"""Normalized GD on W with the concave head :math:`h(x) = v^\top x - \lambda\|x\|^2`.

    One row per threshold τ ∈ {0.1, 0.01, 0.001}: the number of tokens with final softmax
    probability ≥ τ (mean and max over sequences); each row also carries corr(W, W^eq) of the
    Gen-SVM of the final softmax (NaN when a selected set holds every token) and Γ.
    """
    from ..verify import verify

    data = random_data(n, T, d, seed=seed)
    rep = verify(
        data, head="concave", lam=lam, step_size=0.1, n_steps=n_steps, record_every=n_steps
    )
    assert rep.run is not None and rep.run.history.probs is not None
    probs = rep.run.history.probs[-1].reshape(n, -1, T)
    corr_eq = rep.final_corr_eq
    rows = []
    for tau in (1e-1, 1e-2, 1e-3):
        counts = (probs >= tau).sum(axis=-1)
        rows.append(
            {
                "tau": tau,
                "mean_selected": float(counts.mean()),
                "max_selected": int(counts.max()),
                "corr_eq": _nan(corr_eq),
                "gamma": _nan(rep.gamma),
                "norm_W": rep.final_norm_W,
            }
        )
    return rows


# -- 2-D trajectories -----------------------------------------------------------------------


def paths2d_trial(
    n: int, T: int, seed: int, param: str, n_steps: int, n_records: int = 100
) -> list[dict[str, Any]]:
    r"""W or (K, Q) GD paths on a d = 2 instance, against W^mm (Frobenius) and W^mm⋆ (nuclear).

    W from zero, (K, Q) (m = 2) from a random start of scale 0.01. One row per recorded step:
    the entries of W(t) (``w00, w01, w10, w11``) and its correlations with both SVM solutions.
    """
    data = random_data(n, T, 2, seed=seed)
    alpha = optimal_tokens(data)
    fro = att_svm(data, alpha, norm="fro")
    nuc = att_svm(data, alpha, norm="nuc")
    if fro.W is None or nuc.W is None:
        return [
            {
                "step": 0,
                "w00": None,
                "w01": None,
                "w10": None,
                "w11": None,
                "corr_fro": None,
                "corr_nuc": None,
                "feasible": False,
            }
        ]
    run = train(
        data,
        param=param,
        m=2 if param == "KQ" else None,
        step_size=0.1 if param == "W" else 0.05,
        n_steps=n_steps,
        init="zero" if param == "W" else ("random", 0.01),
        seed=seed,
        record_every=max(1, n_steps // n_records),
        record=("W",),
    )
    assert run.history.W is not None
    return [
        {
            "step": int(step),
            "w00": float(W[0, 0]),
            "w01": float(W[0, 1]),
            "w10": float(W[1, 0]),
            "w11": float(W[1, 1]),
            "corr_fro": correlation(W, fro.W) if np.any(W) else 0.0,
            "corr_nuc": correlation(W, nuc.W) if np.any(W) else 0.0,
            "feasible": True,
        }
        for step, W in zip(run.history.step, run.history.W, strict=True)
    ]
