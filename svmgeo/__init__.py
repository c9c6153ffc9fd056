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
from ._torch import from_torch
from .analysis import (
    GenSVMResult,
    InitialGradient,
    LocalOptimality,
    LOTEnumeration,
    LOTViolation,
    RegularizationPath,
    SelectedSets,
    SupportTokens,
    gen_svm,
    good_initial_gradient,
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
from .ntp import (  # beyond (issue #13)
    FiniteComponent,
    NextTokenData,
    NTPRun,
    NTPVerification,
    TokenPriorityGraph,
    finite_component,
    graph_svm,
    graph_svm_constraints,
    ntp_loss_and_grad,
    random_next_token_data,
    token_priority_graphs,
    train_ntp,
    verify_ntp,
)
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
from .study import StudyReport, study
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
    "FiniteComponent",
    "GDConfig",
    "GDRun",
    "GenSVMResult",
    "InaccurateSolutionWarning",
    "InitialGradient",
    "LOTEnumeration",
    "LOTViolation",
    "LocalOptimality",
    "MirrorRun",
    "NTPRun",
    "NTPVerification",
    "NextTokenData",
    "ProblemError",
    "RegularizationPath",
    "ReproduceResult",
    "SVMResult",
    "SelectedSets",
    "SolverError",
    "SolverNotFound",
    "Status",
    "StopStatus",
    "StudyReport",
    "SupportTokens",
    "SvmgeoError",
    "SweepError",
    "SweepResult",
    "TieError",
    "TokenData",
    "TokenPriorityGraph",
    "VerifyReport",
    "__version__",
    "att_svm",
    "att_svm_constraints",
    "check_feasibility",
    "check_selection",
    "correlation",
    "feasibility",
    "finite_component",
    "from_torch",
    "gen_svm",
    "good_initial_gradient",
    "graph_svm",
    "graph_svm_constraints",
    "in_cone",
    "in_score_cone",
    "is_locally_optimal",
    "list_experiments",
    "load_data",
    "locally_optimal_selections",
    "ntp_loss_and_grad",
    "optimal_token_sets",
    "optimal_tokens",
    "pair_constraints",
    "query_projector",
    "random_data",
    "random_next_token_data",
    "read_results",
    "regularization_path",
    "reproduce",
    "save_data",
    "score_cone_margin",
    "selected_set_constraints",
    "selected_sets",
    "solve_svm",
    "study",
    "support_tokens",
    "sweep",
    "token_priority_graphs",
    "token_scores",
    "train",
    "train_batch",
    "train_mirror",
    "train_ntp",
    "verify",
    "verify_ntp",
]
