# SPDX-License-Identifier: BSD-3-Clause
"""Experiments: the paper's experiments, the sweep runner and its results table.

:func:`reproduce` runs one of the paper's experiments by name (:func:`list_experiments`)
through the sweep runner and writes its tables and figure (``docs/experiments.md``). Each
experiment is one module here (``paths2d``, ``rank``, ``local``, ``global_``, ``gensvm``,
``concave``, and the companion paper's ``companion_single``, ``companion_multi``,
``companion_joint``, ``companion_losses``) holding its trial, grid, summary and figure and
registering an :class:`Experiment`; a new experiment is a new module and its import line below.

:func:`sweep` runs a function over a grid of parameters (sizes × seeds × settings) in local
worker processes or on a Dask cluster, appending one row per finished trial to a CSV table
that :func:`read_results` loads; an interrupted sweep resumes where it stopped.
"""

from ._registry import Experiment, ReproduceResult, list_experiments, register, reproduce
from ._store import read_results
from ._sweep import (
    SweepError,
    SweepResult,
    expand_grid,
    sweep,
    trial_digest,
    trial_id,
    trial_seed,
)

# the experiments register themselves on import, in the order of the paper's story
from . import paths2d, rank, local, global_, gensvm, concave  # noqa: F401  # isort: skip

# beyond the paper (issue #13): l_p mirror descent, next-token prediction
from . import mirror, ntp  # noqa: F401  # isort: skip

# the companion paper's experiments (Tarzanagh, Li, Zhang, Oymak 2023)
from . import companion_single, companion_multi, companion_joint, companion_losses  # noqa: F401  # isort: skip

# the optimizer picks the norm (issue #23)
from . import optimizers  # noqa: F401  # isort: skip

# softmax against other attention maps (issue #22)
from . import stability, variants  # noqa: F401  # isort: skip

__all__ = [
    "Experiment",
    "ReproduceResult",
    "SweepError",
    "SweepResult",
    "expand_grid",
    "list_experiments",
    "read_results",
    "register",
    "reproduce",
    "sweep",
    "trial_digest",
    "trial_id",
    "trial_seed",
]
