# SPDX-License-Identifier: BSD-3-Clause
"""Training softmax attention: one loop, update rules, risks; numba / numpy / cupy backends.

The public entry points are :func:`train` (``optimizer="gd"``, ``"mirror"``, ``"sign"``,
``("steepest", q)``, ``"spectral"``, ``"adam"``),
:func:`train_batch` and :func:`train_mirror`; see :class:`GDConfig` for the
hyper-parameters, :data:`OPTIMIZERS` for the update rules and :class:`StopStatus` for why a
run ended. Every run is a :class:`GDRun`. The loop itself is :func:`run_loop`
(:mod:`svmgeo.gd._loop`): it takes an update rule bound to a risk. :data:`LOSS_IDS` maps
the loss names to the integer ids the kernels read (``LOGISTIC_LOSS``, ``EXPONENTIAL_LOSS``,
``CORRELATION_LOSS``), for code outside the package that reads ``RiskOracle.loss_id``.
"""

from ._backend import cupy_available
from ._config import (
    ATTENTIONS,
    BACKENDS,
    BATCH_RECORDS,
    DEFAULT_BACKEND,
    HEADS,
    LOSSES,
    NTP_LOSSES,
    OPTIMIZERS,
    PARAMS,
    RECORDS,
    REFERENCE_BACKEND,
    RISKS,
    STEEPEST_RULES,
    GDConfig,
    Optimizer,
    StopStatus,
    parse_optimizer,
    random_init,
    resolve_optimizer,
)
from ._engine import GDState, GradientDescent, loss_and_grad, train, train_batch
from ._loop import Risk, UpdateRule, run_loop
from ._mirror import (
    MirrorDescent,
    MirrorState,
    inverse_mirror_map,
    mirror_map,
    run_mirror_descent,
    sparsity,
    train_mirror,
)
from ._oracle import RiskOracle, RiskValue
from ._problem import CORRELATION_LOSS, EXPONENTIAL_LOSS, LOGISTIC_LOSS, LOSS_IDS
from ._results import BatchRun, GDRun, History, Intermediate
from ._steepest import (
    AdamMoments,
    MapRisk,
    SteepestDescent,
    SteepestState,
    adam_direction,
    spectral_direction,
    steepest_direction,
)
from ._step import GradientStep, StepState

__all__ = [
    "ATTENTIONS",
    "BACKENDS",
    "BATCH_RECORDS",
    "CORRELATION_LOSS",
    "DEFAULT_BACKEND",
    "EXPONENTIAL_LOSS",
    "HEADS",
    "LOGISTIC_LOSS",
    "LOSSES",
    "LOSS_IDS",
    "NTP_LOSSES",
    "OPTIMIZERS",
    "PARAMS",
    "RECORDS",
    "REFERENCE_BACKEND",
    "RISKS",
    "STEEPEST_RULES",
    "AdamMoments",
    "BatchRun",
    "GDConfig",
    "GDRun",
    "GDState",
    "GradientDescent",
    "GradientStep",
    "History",
    "Intermediate",
    "MapRisk",
    "MirrorDescent",
    "MirrorState",
    "Optimizer",
    "Risk",
    "RiskOracle",
    "RiskValue",
    "SteepestDescent",
    "SteepestState",
    "StepState",
    "StopStatus",
    "UpdateRule",
    "adam_direction",
    "cupy_available",
    "inverse_mirror_map",
    "loss_and_grad",
    "mirror_map",
    "parse_optimizer",
    "random_init",
    "resolve_optimizer",
    "run_loop",
    "run_mirror_descent",
    "sparsity",
    "spectral_direction",
    "steepest_direction",
    "train",
    "train_batch",
    "train_mirror",
]
