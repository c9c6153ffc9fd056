# SPDX-License-Identifier: BSD-3-Clause
"""svmgeo: the optimization geometry of attention.

Solvers for the attention SVMs of Tarzanagh, Li, Thrampoulidis and Oymak, "Transformers as
Support Vector Machines" (arXiv:2308.16898), with certificates computed by svmgeo; token-selection
analysis; and a gradient-descent engine for softmax attention.
"""

from __future__ import annotations

from ._errors import (
    BackendError,
    ConvergenceWarning,
    InaccurateSolutionWarning,
    ProblemError,
    SolverError,
    SolverNotFound,
    SvmgeoError,
    TieError,
)
from ._linalg import correlation, query_projector
from .analysis import (
    GenSVMResult,
    LocalOptimality,
    LOTEnumeration,
    LOTViolation,
    RegularizationPath,
    SelectedSets,
    SupportTokens,
    gen_svm,
    in_cone,
    in_score_cone,
    is_locally_optimal,
    locally_optimal_selections,
    regularization_path,
    score_cone_margin,
    selected_sets,
    support_tokens,
)
from .constraints import (
    EQUALITY,
    MARGIN,
    ConstraintSet,
    att_svm_constraints,
    pair_constraints,
    selected_set_constraints,
)
from .data import TokenData, load_data, random_data, save_data
from .experiments import (
    ReproduceResult,
    SweepError,
    SweepResult,
    list_experiments,
    read_results,
    reproduce,
    sweep,
)
from .gd import BatchRun, GDConfig, GDRun, StopStatus, train, train_batch
from .gd._mirror import MirrorRun, train_mirror  # beyond (issue #13)
from .selection import check_selection, optimal_token_sets, optimal_tokens, token_scores
from .solvers import (
    Certificate,
    FeasibilityResult,
    Status,
    SVMResult,
    att_svm,
    check_feasibility,
    feasibility,
    solve_svm,
)
from .verify import VerifyReport, verify

__version__ = "0.1.0.dev0"

__all__ = [
    "EQUALITY",
    "MARGIN",
    "BackendError",
    "BatchRun",
    "Certificate",
    "ConstraintSet",
    "ConvergenceWarning",
    "FeasibilityResult",
    "GDConfig",
    "GDRun",
    "GenSVMResult",
    "InaccurateSolutionWarning",
    "LOTEnumeration",
    "LOTViolation",
    "LocalOptimality",
    "MirrorRun",
    "ProblemError",
    "RegularizationPath",
    "ReproduceResult",
    "SVMResult",
    "SelectedSets",
    "SolverError",
    "SolverNotFound",
    "Status",
    "StopStatus",
    "SupportTokens",
    "SvmgeoError",
    "SweepError",
    "SweepResult",
    "TieError",
    "TokenData",
    "VerifyReport",
    "__version__",
    "att_svm",
    "att_svm_constraints",
    "check_feasibility",
    "check_selection",
    "correlation",
    "feasibility",
    "gen_svm",
    "in_cone",
    "in_score_cone",
    "is_locally_optimal",
    "list_experiments",
    "load_data",
    "locally_optimal_selections",
    "optimal_token_sets",
    "optimal_tokens",
    "pair_constraints",
    "query_projector",
    "random_data",
    "read_results",
    "regularization_path",
    "reproduce",
    "save_data",
    "score_cone_margin",
    "selected_set_constraints",
    "selected_sets",
    "solve_svm",
    "support_tokens",
    "sweep",
    "token_scores",
    "train",
    "train_batch",
    "train_mirror",
    "verify",
]
