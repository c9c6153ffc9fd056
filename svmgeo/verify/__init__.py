# SPDX-License-Identifier: BSD-3-Clause
r"""Verification: what a training run did against what the SVMs predict.

One protocol joins the two sides of a correspondence: a run and a list of named predictions
→ curves (the correlation of each recorded iterate with each prediction), the closest
prediction, and one report.

.. math::

    \mathrm{corr}_j(t) = \mathrm{corr}\big(\theta(t), P_j\big),\qquad
    \texttt{converged\_to} = \arg\max_j \mathrm{corr}_j(T)\ \text{if}\ \ge
    \texttt{threshold}.

Entry points, one per kind of run, each returning a :class:`VerifyReport`:

- :func:`verify`: gradient descent on :class:`~svmgeo.TokenData` (W, (K, Q), prompt p,
  joint head training, nonlinear heads) against Att-SVM, Att-SVM⋆, Gen-SVM, the p-SVM, the
  head SVM and the relaxed SVM;
- :func:`verify_mirror`: :math:`\ell_p` mirror descent against the :math:`\ell_p` Att-SVM
  (and the Frobenius and nuclear SVMs).

The protocol itself (:class:`Prediction`, :func:`compare`, :class:`Comparison`) is public so
that other runs (next-token prediction) can use it.

Layout: ``_runs`` (the one adapter to :mod:`svmgeo.gd`), ``_judge`` (token scores, the
verdict on a selection), ``_protocol`` (predictions, curves, closest), ``_report``
(:class:`VerifyReport` and its one assembly), ``_options`` (renamed and refused options),
``_gd`` (:func:`verify`), ``_mirror`` (:func:`verify_mirror`).
"""

from ._gd import verify
from ._mirror import verify_mirror
from ._protocol import Comparison, Prediction, compare
from ._report import VerifyReport

__all__ = ["Comparison", "Prediction", "VerifyReport", "compare", "verify", "verify_mirror"]
