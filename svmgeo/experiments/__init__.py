# SPDX-License-Identifier: BSD-3-Clause
"""Experiments: the paper's experiments, the sweep runner and its results table.

:func:`reproduce` runs one of the paper's experiments by name (:func:`list_experiments`)
through the sweep runner and writes its tables and figure (``docs/experiments.md``).

:func:`sweep` runs a function over a grid of parameters (sizes × seeds × settings) in local
worker processes or on a Dask cluster, appending one row per finished trial to a CSV table
that :func:`read_results` loads; an interrupted sweep resumes where it stopped.
"""

from ._paper import Experiment, ReproduceResult, list_experiments, reproduce
from ._store import read_results
from ._sweep import (
    SweepError,
    SweepResult,
    add_sweep_arguments,
    expand_grid,
    sweep,
    sweep_options,
    trial_id,
    trial_seed,
)

__all__ = [
    "Experiment",
    "ReproduceResult",
    "SweepError",
    "SweepResult",
    "add_sweep_arguments",
    "expand_grid",
    "list_experiments",
    "read_results",
    "reproduce",
    "sweep",
    "sweep_options",
    "trial_id",
    "trial_seed",
]
