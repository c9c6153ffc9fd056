# SPDX-License-Identifier: BSD-3-Clause
r"""The verify protocol: a run and a list of named predictions → curves, closest prediction.

.. math::

    \mathrm{corr}_{j}(t) = \mathrm{corr}\big(\theta(t), P_j(\theta(t))\big),\qquad
    \mathrm{closest} = \arg\max_{j\ \text{certified candidate}} \mathrm{corr}_j(T)
    \ \text{ if it is} \ \ge \texttt{threshold},

where :math:`\theta(t)` is a recorded iterate of the run (W, p or the head v) and
:math:`P_j` the prediction ``j``: a fixed target (an SVM direction) or a target fitted to
each iterate (:math:`W^{\mathrm{fin}} + R(t)W^{\mathrm{svm}}`); a prediction whose solve is
not certified is measured but never the closest. Every verify entry point
(:func:`~svmgeo.verify`, :func:`~svmgeo.verify_mirror`; next the NTP one) trains, builds its
predictions, calls :func:`compare` and hands the result to the one report assembly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .._errors import ProblemError
from .._linalg import correlation

__all__ = ["Comparison", "Prediction", "closest", "compare", "correlation_curve"]


@dataclass(frozen=True, eq=False)
class Prediction:
    r"""One named prediction of where a run's iterates point.

    .. math::

        P(\theta) = \texttt{target}\quad\text{or}\quad P(\theta) = \texttt{fit}(\theta)

    Attributes
    ----------
    name : str
        The prediction's name (``"fro"``, ``"nuc"``, ``"lp"``, ``"eq"``, ``"relax"``, ...);
        the report's curve is ``corr_<name>``.
    target : ndarray or None
        The predicted direction; None when the SVM behind it has no solution (its curve is
        then NaN and it cannot be the closest).
    fit : callable, optional
        A target that moves with the iterate, ``fit(theta) -> array`` (e.g. Gen-SVM's
        :math:`W^{\mathrm{fin}} + R(\theta) W^{\mathrm{svm}}` with :math:`R` fitted to
        :math:`\theta`); used instead of ``target`` for the curve.
    of : str, default "theta"
        Which recorded trajectory the prediction is about: ``"theta"`` (the attention
        parameter W or p) or another key of the trajectories given to :func:`compare` (``"v"``:
        the trained head).
    candidate : bool, default True
        Whether it competes for the closest prediction (a component of another prediction,
        such as Gen-SVM's direction alone, does not).
    certified : bool, default True
        Whether the target is a certified solution of its problem (a solve of status
        ``optimal``). An uncertified candidate keeps its curve and its final correlation in
        ``finals`` but is never the closest: a locally optimal or inaccurate solve is not the
        prediction it stands for.
    """

    name: str
    target: np.ndarray | None
    fit: Callable[[np.ndarray], np.ndarray] | None = None
    of: str = "theta"
    candidate: bool = True
    certified: bool = True

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


@dataclass(frozen=True, eq=False)
class Comparison:
    r"""What :func:`compare` found: one curve per prediction and the closest one.

    Attributes
    ----------
    curves : dict of str to ndarray of shape (R,)
        :math:`\mathrm{corr}_j(t)` per prediction name, in the order of the predictions.
    targets : dict of str to ndarray or None
        Each prediction's ``target``.
    finals : dict of str to float
        The final correlation of each candidate prediction, in their order (uncertified
        ones included).
    closest : str or None
        The certified candidate with the largest final correlation when that is at least
        the threshold (ties: the first in order); None otherwise.
    threshold : float
    """

    curves: dict[str, np.ndarray]
    targets: dict[str, np.ndarray | None]
    finals: dict[str, float]
    closest: str | None
    threshold: float

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


def correlation_curve(iterates: np.ndarray, prediction: Prediction) -> np.ndarray:
    r""":math:`\mathrm{corr}(\theta(t), P(\theta(t)))` for every recorded iterate.

    Parameters
    ----------
    iterates : ndarray of shape (R, ...)
        The recorded iterates.
    prediction : Prediction

    Returns
    -------
    ndarray of shape (R,)
        NaN everywhere when the prediction has neither a target nor a fit.
    """
    fit = prediction.fit
    if fit is not None:
        return np.array([correlation(theta, fit(theta)) for theta in iterates])
    if prediction.target is None:
        return np.full(len(iterates), np.nan)
    return np.array([correlation(theta, prediction.target) for theta in iterates])


def closest(finals: Mapping[str, float], threshold: float) -> str | None:
    """The prediction with the largest final correlation, if it reaches ``threshold``.

    Parameters
    ----------
    finals : mapping of str to float
        Final correlations by name; NaN entries never win; ties go to the first.
    threshold : float

    Returns
    -------
    str or None
    """
    ok = {k: c for k, c in finals.items() if math.isfinite(c) and c >= threshold}
    return max(ok, key=lambda k: ok[k]) if ok else None


def compare(
    trajectories: Mapping[str, np.ndarray],
    predictions: Sequence[Prediction],
    threshold: float,
) -> Comparison:
    r"""Compare a run's recorded iterates with named predictions: the verify protocol.

    .. math::

        \mathrm{corr}_j(t) = \frac{\langle \theta(t), P_j\rangle}{\|\theta(t)\|\,\|P_j\|},
        \qquad \mathrm{closest} = \arg\max_j \mathrm{corr}_j(T)\ \text{if}\ \ge
        \texttt{threshold}

    Parameters
    ----------
    trajectories : mapping of str to ndarray of shape (R, ...)
        The recorded iterates by key: ``"theta"`` (W(t) or p(t)) and, for joint training,
        ``"v"`` (v(t)); each prediction reads the one its ``of`` names.
    predictions : sequence of Prediction
        Distinct names; their order breaks ties for the closest prediction, which is a
        certified candidate.
    threshold : float
        The closest prediction must reach this final correlation.

    Returns
    -------
    Comparison

    Raises
    ------
    ProblemError
        Two predictions with one name, or a prediction of a trajectory not given.

    Examples
    --------
    >>> import numpy as np
    >>> from svmgeo.verify import Prediction, compare
    >>> Ws = np.array([[[1.0, 0.0], [0.0, 0.0]], [[2.0, 0.1], [0.0, 0.0]]])
    >>> c = compare({"theta": Ws}, [Prediction("e11", np.diag([1.0, 0.0]))], 0.99)
    >>> c.closest, c.curves["e11"].round(4).tolist()
    ('e11', [1.0, 0.9988])
    """
    names = [p.name for p in predictions]
    if len(set(names)) != len(names):
        raise ProblemError(f"compare: prediction names must be distinct; got {names}.")
    curves: dict[str, np.ndarray] = {}
    finals: dict[str, float] = {}
    certified = {p.name for p in predictions if p.certified}
    for prediction in predictions:
        if prediction.of not in trajectories:
            raise ProblemError(
                f"compare: prediction {prediction.name!r} is about the trajectory "
                f"{prediction.of!r}, which was not given (given: {sorted(trajectories)})."
            )
        curve = correlation_curve(trajectories[prediction.of], prediction)
        curves[prediction.name] = curve
        if prediction.candidate:
            finals[prediction.name] = float(curve[-1])
    return Comparison(
        curves=curves,
        targets={p.name: p.target for p in predictions},
        finals=finals,
        closest=closest({k: c for k, c in finals.items() if k in certified}, threshold),
        threshold=threshold,
    )
