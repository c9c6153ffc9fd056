# SPDX-License-Identifier: BSD-3-Clause
r""":func:`svmgeo.verify` beyond GD on :class:`~svmgeo.TokenData`: mirror descent and NTP.

* ``verify(data, method="mirror", p=p)``: :math:`\ell_p` mirror descent
  (:func:`~svmgeo.train_mirror`) against the :math:`\ell_p` Att-SVM of the selection it
  converges to,

  .. math::

      \alpha_{ik} = \arg\max_t s_{ikt}(W_T),\qquad
      \mathrm{corr}\big(W_t, W^{\mathrm{mm}}_{p,\alpha}\big),\qquad
      W^{\mathrm{mm}}_{p,\alpha} = \arg\min \|W\|_p \ \text{s.t.}\
      (x_{i\alpha_i} - x_{it})^\top W z_i \ge 1,

  the directional limit that Julistiono, Tarzanagh, Azizan (arXiv:2410.14581) prove for
  :math:`\ell_p`-AttGD, beside the Frobenius and nuclear SVMs of the same selection.
* ``verify(ntp_data)`` with a :class:`~svmgeo.NextTokenData`:
  :func:`svmgeo.ntp.verify_ntp_training` (GD against :math:`W^{\mathrm{fin}} + R\,
  W^{\mathrm{svm}}`), returning its :class:`~svmgeo.NTPReport`.

:func:`verify_beyond` takes :func:`~svmgeo.verify`'s arguments as a dict and refuses, by
name, the options that do not apply to these runs.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ._errors import ProblemError
from ._validation import check_option, check_real
from .analysis import is_locally_optimal
from .data import TokenData
from .gd import RiskOracle, train_mirror
from .ntp import NextTokenData, NTPReport, verify_ntp_training
from .selection import optimal_token_sets
from .solvers import att_svm
from .verify import VerifyReport, _converged_to, _curve, _head_scores, _scored, verify

__all__ = ["verify_beyond"]

METHODS = ("gd", "mirror")
# the options of verify each run uses; any other option must keep verify's default
_USED = {
    "mirror": ("method", "p", "loss", "head", "v", "step_size", "n_steps", "normalized",
               "init", "backend", "record_every", "threshold"),
    "ntp": ("method", "loss", "step_size", "n_steps", "normalized", "record_every"),
}  # fmt: skip


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    if isinstance(value, (str, int, float, bool)) and isinstance(default, (str, int, float)):
        return bool(value == default)
    return False


def _refuse_unused(options: dict[str, Any], kind: str, what: str) -> None:
    defaults = {
        name: par.default
        for name, par in inspect.signature(verify).parameters.items()
        if par.default is not inspect.Parameter.empty
    }
    bad = [
        name
        for name, default in defaults.items()
        if name not in _USED[kind] and not _is_default(options.get(name, default), default)
    ]
    bad += sorted(options.get("train_options") or {})
    if bad:
        raise ProblemError(
            f"verify: {what} does not use {', '.join(bad)}; it uses "
            f"{', '.join(n for n in _USED[kind] if n != 'method')}. Drop the other options."
        )


def verify_beyond(options: dict[str, Any]) -> VerifyReport | NTPReport:
    """Run :func:`~svmgeo.verify` for NTP data or ``method="mirror"`` (``options``: its
    arguments by name, ``train_options`` as a dict)."""
    data = options["data"]
    method = check_option(options.get("method", "gd"), "method", METHODS, where="verify")
    if isinstance(data, NextTokenData):
        if method != "gd":
            raise ProblemError(
                f"verify: method={method!r} applies to TokenData; NextTokenData is verified "
                "with gradient descent (method='gd')."
            )
        _refuse_unused(options, "ntp", "next-token data (NextTokenData)")
        return verify_ntp_training(
            data,
            loss="ce" if options["loss"] is None else options["loss"],
            step_size=options["step_size"],
            normalized=options["normalized"],
            n_steps=options["n_steps"],
            record_every=options["record_every"],
        )
    if not isinstance(data, TokenData):
        raise ProblemError(
            f"verify takes one svmgeo.TokenData or svmgeo.NextTokenData; got {type(data).__name__}."
        )
    if method != "mirror":
        raise ProblemError("verify: p is the exponent of mirror descent; pass method='mirror'.")
    _refuse_unused(options, "mirror", "method='mirror'")
    if options["p"] is None:
        raise ProblemError("verify: method='mirror' needs p, the exponent of ψ = ‖W‖_p^p / p.")
    if options["head"] != "linear":
        raise ProblemError(
            f"verify: method='mirror' supports head='linear' (the setting of the ℓp Att-SVM "
            f"theorem); got head={options['head']!r}."
        )
    if isinstance(options["init"], str) and options["init"] == "cone":
        raise ProblemError("verify: init='cone' is for method='gd'; pass 'zero' or an array.")
    return _verify_mirror(
        data,
        p=options["p"],
        loss="logistic" if options["loss"] is None else options["loss"],
        v=options["v"],
        step_size=options["step_size"],
        n_steps=options["n_steps"],
        normalized=options["normalized"],
        init=options["init"],
        backend=options["backend"],
        record_every=options["record_every"],
        threshold=options["threshold"],
    )


def _min_max_softmax(data: TokenData, Ws: np.ndarray) -> np.ndarray:
    r""":math:`\min_{i,k}\max_t s_{ikt}(W)` for each W of ``Ws`` (R, d, d), in log-sum-exp."""
    X, Q, vis = np.asarray(data.X), np.asarray(data.queries), np.asarray(data.visible)
    logits = np.einsum("ntd,rde,nke->rnkt", X, Ws, Q)
    logits = np.where(vis[None], logits, -np.inf)
    log_top = logits.max(axis=-1) - logsumexp(logits, axis=-1)
    return np.exp(log_top.reshape(len(Ws), -1).min(axis=1))


def _verify_mirror(
    data: TokenData,
    *,
    p: float,
    loss: str,
    v: Any,
    step_size: float,
    n_steps: int,
    normalized: bool,
    init: Any,
    backend: str,
    record_every: int | None,
    threshold: float,
) -> VerifyReport:
    r"""Mirror descent against :math:`W^{\mathrm{mm}}_{p,\alpha}` (and the Frobenius and
    nuclear SVMs) of its final selection α; LOT and feasibility in the :math:`\ell_p` norm."""
    threshold = check_real(threshold, "threshold", low=-1.0, high=1.0, where="verify")
    scores = _head_scores(data, "linear", v, None, None)
    if scores is None:
        raise ProblemError(
            "verify needs token scores for the head: build the data with v=... or pass v=."
        )
    sdata = _scored(data, scores)
    run = train_mirror(
        data, exponent=p, loss=loss, v=v, step_size=step_size, normalized=normalized,
        n_steps=n_steps, record_every=record_every, init=init, backend=backend,
    )  # fmt: skip
    assert run.W is not None and run.history.W is not None  # a mirror run records W
    oracle = RiskOracle(data, loss=loss, v=v)
    sel_full = np.asarray(oracle(run.W).selected, dtype=np.int64).reshape(data.n, data.K)
    selection = sel_full[:, 0] if data.single_query else sel_full
    opt_sets = optimal_token_sets(sdata)
    opt_full = opt_sets[:, None, :] if data.single_query else opt_sets
    is_optimal = bool(np.all(np.take_along_axis(opt_full, sel_full[:, :, None], axis=2)))

    lp: Any = ("lp", run.config.exponent)
    lot = is_locally_optimal(sdata, selection, norm=lp)
    feasible = bool(lot.support.feasible)
    svm_lp = lot.support.svm if feasible else None
    svm_fro = att_svm(sdata, selection) if feasible else None
    svm_nuc = att_svm(sdata, selection, norm="nuc") if feasible else None
    W_lp, W_fro, W_nuc = (None if s is None else s.W for s in (svm_lp, svm_fro, svm_nuc))
    Ws = run.history.W
    corr = {"lp": _curve(Ws, W_lp), "fro": _curve(Ws, W_fro), "nuc": _curve(Ws, W_nuc)}
    finals = {k: float(c[-1]) for k, c in corr.items()}
    return VerifyReport(
        param="W",
        head="linear",
        selection=selection,
        is_optimal=is_optimal,
        is_lot=bool(lot),
        lot_reason=lot.reason,
        feasible=feasible,
        farkas=None if feasible else lot.support.farkas,
        W_fro=W_fro,
        W_nuc=W_nuc,
        steps=np.asarray(run.history.step, dtype=np.int64),
        corr_fro=corr["fro"],
        corr_nuc=corr["nuc"],
        max_softmax=_min_max_softmax(data, Ws),
        norm_W=np.array([float(np.linalg.norm(W)) for W in Ws]),
        converged_to=_converged_to(finals, threshold),
        threshold=threshold,
        W=run.W,
        status=str(run.status),
        method="mirror",
        mirror_p=run.config.exponent,
        W_lp=W_lp,
        corr_lp=corr["lp"],
        svm_fro=svm_fro,
        svm_nuc=svm_nuc,
        svm_lp=svm_lp,
        lot=lot,
        mirror_run=run,
    )
