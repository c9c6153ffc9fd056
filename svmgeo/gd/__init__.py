# SPDX-License-Identifier: BSD-3-Clause
"""Gradient descent on softmax attention: W or (K, Q), numba / numpy / cupy backends.

The public entry points are :func:`train` and :func:`train_batch`; see
:class:`GDConfig` for the hyper-parameters and :class:`StopStatus` for why a run ended.
"""

from . import _xp as kernels  # noqa: F401  (internal API: the numpy/cupy kernels, for svmgeo.analysis)
from ._backend import cupy_available
from ._config import BACKENDS, BATCH_RECORDS, HEADS, LOSSES, PARAMS, RECORDS, GDConfig, StopStatus
from ._engine import (
    BatchRun,
    GDRun,
    GDState,
    GradientDescent,
    History,
    Intermediate,
    loss_and_grad,
    train,
    train_batch,
)
from ._oracle import RiskOracle, RiskValue

__all__ = [
    "BACKENDS",
    "BATCH_RECORDS",
    "HEADS",
    "LOSSES",
    "PARAMS",
    "RECORDS",
    "BatchRun",
    "GDConfig",
    "GDRun",
    "GDState",
    "GradientDescent",
    "History",
    "Intermediate",
    "RiskOracle",
    "RiskValue",
    "StopStatus",
    "cupy_available",
    "loss_and_grad",
    "train",
    "train_batch",
]
