# SPDX-License-Identifier: BSD-3-Clause
"""SVM solvers over token-pair constraint sets, with certificates recomputed by svmgeo.

Layout (private modules; the names in each ``__all__`` are this package's internal API):

- ``_api``: :func:`solve_svm`, :func:`att_svm`, :func:`feasibility`, the naive cvxpy model
  by norm name; ``_norms``: ``NORMS``, the table of norms (name and CLI spelling, parsing,
  dual norm and certificate, solve driver, reference model, fallback, which options apply,
  the matrix-free route); ``_result``: the result objects and ``finish``, the one assembly
  of a solved result;
- drivers: ``_frobenius`` (Att-SVM), ``_nuclear`` (Att-SVM⋆), ``_lowrank`` (rank bound),
  ``_feasibility`` (exact feasibility with a point or a Farkas vector);
- numerics they share: ``_geometry`` (Gram matrix / compressed features and their
  factorizations), ``_qp`` (interior point, Clarabel QP, active-set polishes), ``_factored``
  (compressed coordinates, the factored problem), ``_certificates`` (residuals, each norm's
  geometry and KKT check, the one lift of W onto its rows, Farkas checks), ``_threads`` (one BLAS thread for small
  solves);
- ``_backends``: one adapter per backend (Clarabel, SCS, HiGHS, cvxpy's statuses), imported
  lazily; ``_reference``: the naive cvxpy model, the oracle of the tests;
- ``_status``: the one status vocabulary (``_result`` also holds the composite results,
  :class:`JointSVMResult` and :class:`GenSVMResult`, with their one assembly each);
- the companion paper (arXiv:2306.13596): ``_prompt`` (rows of the p-SVM and of the head
  SVM, one shared query e1), ``_joint`` (:func:`joint_svm`: head SVM, support, relaxed SVM);
- beyond the paper: ``_lp_norm`` (ℓp Att-SVM), ``_spectral`` (spectral-norm Att-SVM),
  ``_face`` (the optimal face: best alignment with a direction, uniqueness), ``_exact`` (exact proofs of verdicts),
  ``_nuclear_factored`` and ``_frobenius_matfree`` (large problems).
"""

from ._api import (
    STATUS_MAP,
    att_svm,
    feasibility,
    solve_for,
    solve_naive_cvxpy,
    solve_naive_cvxpy_duals,
    solve_svm,
)
from ._certificates import farkas_residual, frobenius_certificate
from ._face import FaceAlignment, FaceUniqueness, optimal_face_alignment, optimum_uniqueness
from ._feasibility import check_feasibility, decide_feasibility
from ._frobenius import solve_frobenius
from ._joint import JointSVMResult, joint_svm
from ._lp_norm import minimizer_margin_reach
from ._norms import NORMS, NormEntry, faces, parse_norm
from ._result import (
    CONJECTURE,
    Certificate,
    FeasibilityResult,
    GenSVMResult,
    SVMResult,
    finish_gen_svm,
    report_inaccurate,
    warns_if_inaccurate,
)
from ._scale import unit_rows
from ._status import Status

__all__ = [
    "CONJECTURE",
    "NORMS",
    "STATUS_MAP",
    "Certificate",
    "FaceAlignment",
    "FaceUniqueness",
    "FeasibilityResult",
    "GenSVMResult",
    "JointSVMResult",
    "NormEntry",
    "SVMResult",
    "Status",
    "att_svm",
    "check_feasibility",
    "decide_feasibility",
    "faces",
    "farkas_residual",
    "feasibility",
    "finish_gen_svm",
    "frobenius_certificate",
    "joint_svm",
    "minimizer_margin_reach",
    "optimal_face_alignment",
    "optimum_uniqueness",
    "parse_norm",
    "report_inaccurate",
    "solve_for",
    "solve_frobenius",
    "solve_naive_cvxpy",
    "solve_naive_cvxpy_duals",
    "solve_svm",
    "unit_rows",
    "warns_if_inaccurate",
]
