# SPDX-License-Identifier: BSD-3-Clause
r""":func:`verify_mirror`: :math:`\ell_p` mirror descent against the :math:`\ell_p` Att-SVM.

.. math::

    \alpha_{ik} = \arg\max_t s_{ikt}(W_T),\qquad
    \mathrm{corr}\big(W_t, W^{\mathrm{mm}}_{p,\alpha}\big),\qquad
    W^{\mathrm{mm}}_{p,\alpha} = \arg\min \|W\|_p \ \text{s.t.}\
    (x_{i\alpha_i} - x_{it})^\top W z_i \ge 1,

the directional limit of :math:`\ell_p`-AttGD that is the main result of Julistiono,
Tarzanagh, Azizan (arXiv:2410.14581; its hypotheses are not in the stored text, so they are
not stated here and not checked: ``docs/beyond.md``), beside the Frobenius and nuclear SVMs of
the same selection. svmgeo measures it; it does not prove it.
"""

from __future__ import annotations

from typing import Any

from .._errors import ProblemError
from .._validation import check_real
from ..data import TokenData
from ..gd import DEFAULT_BACKEND
from ..solvers import att_svm
from ._judge import judge, scored
from ._options import refuse_options
from ._protocol import compare
from ._report import VerifyReport, assemble, svm_prediction
from ._runs import run_mirror

__all__ = ["verify_mirror"]

_OWN = (
    "exponent", "loss", "v", "step_size", "n_steps", "normalized", "init", "backend",
    "record_every", "threshold",
)  # fmt: skip
_HINTS = {
    "method": "verify_mirror always runs mirror descent: drop it.",
    "head": "Mirror descent is verified with the linear head (the setting of the ℓp Att-SVM "
    "result of arXiv:2410.14581); drop head.",
    "param": "Mirror descent trains W (param='W'); drop param.",
}


def verify_mirror(
    data: TokenData,
    *,
    exponent: float | None = None,
    loss: str = "logistic",
    v: Any = None,
    step_size: float = 0.1,
    n_steps: int = 2000,
    normalized: bool = True,
    init: Any = "zero",
    backend: str = DEFAULT_BACKEND,
    record_every: int | None = None,
    threshold: float = 0.99,
    **options: Any,
) -> VerifyReport:
    r"""Run :math:`\ell_p` mirror descent and report how its direction compares with the
    :math:`\ell_p` Att-SVM of its selection (and the Frobenius and nuclear SVMs).

    .. math::

        \nabla\psi(W_{t+1}) = \nabla\psi(W_t) - \eta\,\nabla L(W_t),\quad
        \psi(W) = \tfrac1p\|W\|_p^p,\qquad
        \mathrm{corr}\big(W_t, W^{\mathrm{mm}}_{p,\alpha}\big),\quad
        W^{\mathrm{mm}}_{p,\alpha} = \arg\min_{W} \|W\|_p\ \text{s.t. Att-SVM}(\alpha)

    with :math:`\alpha` the run's final argmax selection (:func:`~svmgeo.train_mirror`, W
    parameter, linear head). The convergence in direction of plain :math:`\ell_p`-AttGD is the
    main result of Julistiono, Tarzanagh, Azizan, arXiv:2410.14581, as its abstract states it;
    its theorem number and hypotheses are not in the stored text (``docs/beyond.md``), so they
    are not stated here and not checked. The normalized steps run here by default are svmgeo's
    option, not their algorithm (``normalized=False`` runs theirs): this measures, it does not
    prove.

    Parameters
    ----------
    data : TokenData
    exponent : float
        The exponent p > 1 of the mirror potential :math:`\psi(W) = \|W\|_p^p/p` (required;
        the old spelling ``p`` is an error that names it).
    loss, v, step_size, n_steps, normalized, record_every
        As in :func:`~svmgeo.train_mirror` (``n_steps`` defaults to 2000 and ``normalized``
        to True here, as in :func:`verify`).
    init : "zero" or array of shape (d, d)
        The starting W.
    backend : {"numba", "numpy", "cupy"}, default :data:`~svmgeo.gd.DEFAULT_BACKEND`
        The engine's gradient kernels: the compiled ones by default, as in
        :func:`~svmgeo.verify` (:func:`~svmgeo.train_mirror` itself defaults to the numpy
        reference, :data:`~svmgeo.gd.REFERENCE_BACKEND`).
    threshold : float
        ``converged_to`` names the best prediction (``"lp"``, ``"fro"``, ``"nuc"``) when its
        final correlation is at least this, among those whose solve is certified; the
        :math:`\ell_p` one also needs its W shown to be the unique minimizer
        (``svm_lp.extras["argmin"]``, :attr:`~svmgeo.SupportTokens.argmin_doubt`): near p = 1
        and at large p a W certified in value can be far from it, and ``corr_lp`` then
        compares the run with that W, not with :math:`W^{\mathrm{mm}}_{p,\alpha}`.
    **options
        None is taken; the old spellings ``p`` and ``method`` name their new ones, and the
        options of :func:`verify` that do not apply to mirror descent (``param``, ``head``,
        ``m``, ``seed``, train options, ...) are refused by name.

    Returns
    -------
    VerifyReport
        With ``method="mirror"``, ``mirror_p`` = ``exponent``, ``W_lp``, ``corr_lp``,
        ``svm_lp`` and ``mirror_run``; ``is_lot``/``feasible`` are those of the
        :math:`\ell_p` Att-SVM.

    Raises
    ------
    ProblemError
        Invalid or unknown options, ``init="cone"``, or data without scores for the head.
    TieError
        When GD's final selection is tied (a query's largest final logit shared by several
        tokens: identical tokens, or a stationary run such as K = Q = 0).

    Examples
    --------
    >>> import svmgeo as sg
    >>> data = sg.random_data(4, 5, 10, seed=1)
    >>> rep = sg.verify_mirror(data, exponent=1.5, n_steps=1500, backend="numpy")
    >>> rep.converged_to, bool(rep.corr_lp[-1] > rep.corr_fro[-1])
    ('lp', True)
    """
    where = "verify_mirror"
    if not isinstance(data, TokenData):
        raise ProblemError(f"{where} takes one svmgeo.TokenData; got {type(data).__name__}.")
    refuse_options(options, where=where, takes=_OWN, hints=_HINTS)
    if exponent is None:
        raise ProblemError(
            f"{where} needs exponent=, the p > 1 of the mirror potential ψ = ‖W‖_p^p / p "
            "(e.g. exponent=1.5)."
        )
    threshold = check_real(threshold, "threshold", low=-1.0, high=1.0, where=where)
    if isinstance(init, str) and init == "cone":
        raise ProblemError(f"{where}: init='cone' is for verify (GD); pass 'zero' or an array.")
    sc = scored(data, v=v, where="verify_mirror")
    train = dict(
        loss=loss, v=v, step_size=step_size, normalized=normalized, n_steps=n_steps,
        record_every=record_every, init=init, backend=backend,
    )  # fmt: skip
    # the engine checks the exponent (GDConfig: a float in (1, inf), named for verify_mirror)
    trajectory = run_mirror(data, exponent=exponent, options=train)
    exponent = trajectory.run.config.exponent
    lp: Any = ("lp", exponent)
    verdict = judge(sc, trajectory.selection, norm=lp)
    feasible = verdict.feasible
    svms = {
        "lp": verdict.lot.support.svm if feasible else None,
        "fro": att_svm(sc.data, verdict.selection) if feasible else None,
        "nuc": att_svm(sc.data, verdict.selection, norm="nuc") if feasible else None,
    }
    predictions = [svm_prediction(name, s) for name, s in svms.items()]
    comparison = compare({"theta": trajectory.iterates}, predictions, threshold)
    return assemble(
        param="W", head="linear", threshold=threshold, trajectory=trajectory, verdict=verdict,
        comparison=comparison, svms=svms, method="mirror", exponent=exponent,
    )  # fmt: skip
