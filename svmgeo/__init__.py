# SPDX-License-Identifier: BSD-3-Clause
"""svmgeo: the optimization geometry of attention.

Solvers for the attention SVMs of Tarzanagh, Li, Thrampoulidis and Oymak, "Transformers as
Support Vector Machines" (arXiv:2308.16898), with certificates computed by svmgeo; token-selection
analysis; and a gradient-descent engine for softmax attention.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from ._errors import (
    BackendError,
    ConvergenceWarning,
    InaccurateSolutionWarning,
    LossWarning,
    ProblemError,
    SolverError,
    SolverNotFound,
    SvmgeoError,
    TieError,
)

if TYPE_CHECKING:  # the names below, for type checkers; at run time __getattr__ imports them
    from ._linalg import correlation, query_projector
    from ._torch import from_torch
    from ._transformers import from_transformers
    from .analysis import (
        LOSS_SPECS,
        GenSVMResult,
        InitialGradient,
        LipschitzResult,
        LocalOptimality,
        LossCheck,
        LossSpec,
        LOTEnumeration,
        LOTViolation,
        PatternOptimality,
        Rates,
        RegularizationPath,
        RobustnessRadius,
        SelectedSets,
        SupportTokens,
        TensorData,
        TensorRows,
        TensorSVM,
        UnboundednessCertificate,
        attention_jacobian,
        check_loss,
        fit_rates,
        gen_svm,
        good_initial_gradient,
        in_cone,
        in_score_cone,
        is_locally_optimal,
        is_locally_optimal_pattern,
        lipschitz,
        locally_optimal_selections,
        regularization_path,
        robustness_radius,
        score_cone_margin,
        selected_sets,
        support_tokens,
        tensor_rows,
        tensor_svm,
        tensorize,
    )
    from .attention_maps import ATTENTION_MAPS, AttentionMap
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
    from .gd import BatchRun, GDConfig, GDRun, StopStatus, train, train_batch, train_mirror
    from .ntp import (  # beyond (issue #13)
        FiniteComponent,
        NextTokenData,
        NTPReport,
        NTPVerification,
        TokenPriorityGraph,
        finite_component,
        graph_svm,
        graph_svm_constraints,
        load_next_token_data,
        ntp_loss_and_grad,
        random_next_token_data,
        save_next_token_data,
        token_priority_graphs,
        train_ntp,
        verify_ntp,
    )
    from .selection import check_selection, optimal_token_sets, optimal_tokens, token_scores
    from .solvers import (
        Certificate,
        FeasibilityResult,
        JointSVMResult,
        Status,
        SVMResult,
        att_svm,
        check_feasibility,
        feasibility,
        joint_svm,
        solve_svm,
    )
    from .study import StudyReport, study
    from .verify import VerifyReport, verify, verify_mirror

__version__ = "0.2.0.dev0"

# Where each public name lives. `import svmgeo` imports none of these modules (nor scipy.optimize,
# scipy.sparse or numba through them): a name's module is imported on its first use
# (``svmgeo.X`` or ``from svmgeo import X``, PEP 562), then the name is bound here.
_LAZY: dict[str, tuple[str, ...]] = {
    "._linalg": ("correlation", "query_projector"),
    "._torch": ("from_torch",),
    "._transformers": ("from_transformers",),
    ".analysis": (
        "LOSS_SPECS",
        "GenSVMResult",
        "InitialGradient",
        "LipschitzResult",
        "LocalOptimality",
        "LossCheck",
        "LossSpec",
        "LOTEnumeration",
        "LOTViolation",
        "PatternOptimality",
        "Rates",
        "RegularizationPath",
        "RobustnessRadius",
        "SelectedSets",
        "SupportTokens",
        "TensorData",
        "TensorRows",
        "TensorSVM",
        "UnboundednessCertificate",
        "attention_jacobian",
        "check_loss",
        "fit_rates",
        "gen_svm",
        "good_initial_gradient",
        "in_cone",
        "in_score_cone",
        "is_locally_optimal",
        "is_locally_optimal_pattern",
        "lipschitz",
        "locally_optimal_selections",
        "regularization_path",
        "robustness_radius",
        "score_cone_margin",
        "selected_sets",
        "support_tokens",
        "tensor_rows",
        "tensor_svm",
        "tensorize",
    ),
    ".attention_maps": ("ATTENTION_MAPS", "AttentionMap"),
    ".constraints": (
        "EQUALITY",
        "MARGIN",
        "ConstraintSet",
        "att_svm_constraints",
        "pair_constraints",
        "selected_set_constraints",
    ),
    ".data": ("TokenData", "load_data", "random_data", "save_data"),
    ".experiments": (
        "ReproduceResult",
        "SweepError",
        "SweepResult",
        "list_experiments",
        "read_results",
        "reproduce",
        "sweep",
    ),
    ".gd": ("BatchRun", "GDConfig", "GDRun", "StopStatus", "train", "train_batch", "train_mirror"),
    ".ntp": (
        "FiniteComponent",
        "NextTokenData",
        "NTPReport",
        "NTPVerification",
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
    ),
    ".selection": ("check_selection", "optimal_token_sets", "optimal_tokens", "token_scores"),
    ".solvers": (
        "Certificate",
        "FeasibilityResult",
        "JointSVMResult",
        "Status",
        "SVMResult",
        "att_svm",
        "check_feasibility",
        "feasibility",
        "joint_svm",
        "solve_svm",
    ),
    ".study": ("StudyReport", "study"),
    ".verify": ("VerifyReport", "verify", "verify_mirror"),
}
_HOME = {name: module for module, names in _LAZY.items() for name in names}
# public names that are also submodules' names: ``svmgeo.study`` is the function, as it is once
# ``svmgeo.study`` (the module) has been imported by anyone
_SHADOWED = frozenset(n for n in _HOME if _HOME[n] == "." + n)


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (or a submodule of svmgeo, by name)."""
    module = _HOME.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("__"):
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """svmgeo's module type: importing the submodule ``svmgeo.study`` (or ``svmgeo.verify``)
    leaves ``svmgeo.study`` the function of that name, not the module the import system binds."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "ATTENTION_MAPS",
    "EQUALITY",
    "LOSS_SPECS",
    "MARGIN",
    "AttentionMap",
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
    "JointSVMResult",
    "LOTEnumeration",
    "LOTViolation",
    "LipschitzResult",
    "LocalOptimality",
    "LossCheck",
    "LossSpec",
    "LossWarning",
    "NTPReport",
    "NTPVerification",
    "NextTokenData",
    "PatternOptimality",
    "ProblemError",
    "Rates",
    "RegularizationPath",
    "ReproduceResult",
    "RobustnessRadius",
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
    "TensorData",
    "TensorRows",
    "TensorSVM",
    "TieError",
    "TokenData",
    "TokenPriorityGraph",
    "UnboundednessCertificate",
    "VerifyReport",
    "__version__",
    "att_svm",
    "att_svm_constraints",
    "attention_jacobian",
    "check_feasibility",
    "check_loss",
    "check_selection",
    "correlation",
    "feasibility",
    "finite_component",
    "fit_rates",
    "from_torch",
    "from_transformers",
    "gen_svm",
    "good_initial_gradient",
    "graph_svm",
    "graph_svm_constraints",
    "in_cone",
    "in_score_cone",
    "is_locally_optimal",
    "is_locally_optimal_pattern",
    "joint_svm",
    "lipschitz",
    "list_experiments",
    "load_data",
    "load_next_token_data",
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
    "robustness_radius",
    "save_data",
    "save_next_token_data",
    "score_cone_margin",
    "selected_set_constraints",
    "selected_sets",
    "solve_svm",
    "study",
    "support_tokens",
    "sweep",
    "tensor_rows",
    "tensor_svm",
    "tensorize",
    "token_priority_graphs",
    "token_scores",
    "train",
    "train_batch",
    "train_mirror",
    "train_ntp",
    "verify",
    "verify_mirror",
    "verify_ntp",
]
