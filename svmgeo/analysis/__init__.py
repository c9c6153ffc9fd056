# SPDX-License-Identifier: BSD-3-Clause
"""Token-selection analysis: support tokens, local optimality, LOT enumeration, cones, Gen-SVM,
regularization paths, Theorem 4's initial-gradient check."""

from ._cones import in_cone, in_score_cone, score_cone_margin
from ._enumerate import LOTEnumeration, locally_optimal_selections
from ._gensvm import GenSVMResult, SelectedSets, gen_svm, selected_sets
from ._initial_gradient import InitialGradient, good_initial_gradient
from ._local import LocalOptimality, LOTViolation, is_locally_optimal
from ._regpath import RegularizationPath, regularization_path
from ._support import SupportTokens, support_from_result, support_tokens

__all__ = [
    "GenSVMResult",
    "InitialGradient",
    "LOTEnumeration",
    "LOTViolation",
    "LocalOptimality",
    "RegularizationPath",
    "SelectedSets",
    "SupportTokens",
    "gen_svm",
    "good_initial_gradient",
    "in_cone",
    "in_score_cone",
    "is_locally_optimal",
    "locally_optimal_selections",
    "regularization_path",
    "score_cone_margin",
    "selected_sets",
    "support_from_result",
    "support_tokens",
]
