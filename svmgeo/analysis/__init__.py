# SPDX-License-Identifier: BSD-3-Clause
"""Token-selection analysis: support tokens, local optimality, LOT enumeration, cones, Gen-SVM,
regularization paths, Theorem 4's initial-gradient check; and svmgeo's reconstruction of Chen et
al. (ICLR 2024 submission 4416): Lipschitz constants, selection radii, the tensor form, loss
hypotheses; rates of a training run (norm growth, direction error, bootstrap intervals)."""

from ._cones import in_cone, in_score_cone, score_cone_margin
from ._enumerate import LOTEnumeration, locally_optimal_selections
from ._gensvm import GenSVMResult, SelectedSets, gen_svm, selected_sets
from ._initial_gradient import InitialGradient, good_initial_gradient
from ._local import LocalOptimality, LOTViolation, is_locally_optimal
from ._loss_check import LOSS_SPECS, LossCheck, LossSpec, check_loss
from ._rates import LackOfFit, Rates, fit_rates
from ._regpath import RegularizationPath, regularization_path
from ._sign_pattern import PatternOptimality, StuckKey, is_locally_optimal_pattern
from ._stability import (
    LipschitzResult,
    RobustnessRadius,
    UnboundednessCertificate,
    attention_jacobian,
    lipschitz,
    robustness_radius,
)
from ._support import SupportTokens, argmin_doubt, support_from_result, support_tokens
from ._tensor import TensorData, TensorRows, TensorSVM, tensor_rows, tensor_svm, tensorize

__all__ = [
    "LOSS_SPECS",
    "GenSVMResult",
    "InitialGradient",
    "LOTEnumeration",
    "LOTViolation",
    "LackOfFit",
    "LipschitzResult",
    "LocalOptimality",
    "LossCheck",
    "LossSpec",
    "PatternOptimality",
    "Rates",
    "RegularizationPath",
    "RobustnessRadius",
    "SelectedSets",
    "StuckKey",
    "SupportTokens",
    "TensorData",
    "TensorRows",
    "TensorSVM",
    "UnboundednessCertificate",
    "argmin_doubt",
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
    "support_from_result",
    "support_tokens",
    "tensor_rows",
    "tensor_svm",
    "tensorize",
]
