# SPDX-License-Identifier: BSD-3-Clause
"""Session 48 audit: a resumed table from another trial function (partials and lambdas shared
one name), and arguments of sweep / reproduce checked with errors that name them."""

from __future__ import annotations

import functools
import re

import pytest

import svmgeo as sg
from svmgeo.experiments import expand_grid, reproduce, sweep, trial_digest


def _scaled(a: int, seed: int, scale: int) -> dict:
    return {"y": a * scale}


def _shifted(a: int, seed: int, offset: int) -> dict:
    return {"y": a + offset}


GRID = {"a": [1, 2], "seed": [0]}


@pytest.mark.parametrize(
    "second",
    [
        functools.partial(_scaled, scale=1000),
        functools.partial(_shifted, offset=5),
        lambda a, seed: {"y": -a},
    ],
    ids=["partial-other-argument", "partial-other-function", "lambda"],
)
def test_a_table_is_not_resumed_by_another_trial_function(tmp_path, second) -> None:
    """partial(f, scale=10) then partial(f, scale=1000) (or another function, or another
    lambda) resumed the first one's rows: 'functools.?' and '__main__.<lambda>' matched."""
    out = tmp_path / "t.csv"
    if isinstance(second, functools.partial):
        first = functools.partial(_scaled, scale=10)
    else:
        first = lambda a, seed: {"y": a}  # noqa: E731
    assert sweep(first, GRID, out=out, workers=0, progress=False).n_run == 2
    with pytest.raises(sg.ProblemError, match="trial function's code, defaults or bound"):
        sweep(second, GRID, out=out, workers=0, progress=False)
    again = sweep(first, GRID, out=out, workers=0, progress=False)  # the same one resumes
    assert again.n_resumed == 2 and again.n_run == 0


def test_the_digest_tells_partials_and_lambdas_apart() -> None:
    assert trial_digest(functools.partial(_scaled, scale=10)) == trial_digest(
        functools.partial(_scaled, scale=10)
    )
    assert trial_digest(functools.partial(_scaled, scale=10)) != trial_digest(
        functools.partial(_scaled, scale=11)
    )
    assert trial_digest(lambda a: a) != trial_digest(lambda a: -a)


def test_reproduce_checks_quick_and_out(tmp_path) -> None:
    with pytest.raises(sg.ProblemError, match="'quick' parameter of reproduce"):
        reproduce("rank", quick="no", out=tmp_path, workers=0, progress=False)
    with pytest.raises(sg.ProblemError, match="'out' must be a directory path"):
        reproduce("rank", quick=True, out=None, workers=0, progress=False)


def test_sweep_checks_out_and_bounds_the_grid(tmp_path) -> None:
    with pytest.raises(sg.ProblemError, match="'out' parameter of sweep"):
        sweep(_scaled, GRID, out=123, workers=0, progress=False)
    huge = {f"p{k}": list(range(100)) for k in range(6)}  # 10^12 trials
    with pytest.raises(sg.ProblemError, match="more than MAX_TRIALS"):
        expand_grid(huge)


@pytest.mark.parametrize(
    ("values", "fix"),
    [((k for k in range(3)), "list(...)"), ({2, 1}, "sorted(...)"), (5, "[5]")],
    ids=["generator", "set", "scalar"],
)
def test_a_grid_value_that_is_not_a_list_gets_the_fix_that_applies(values, fix: str) -> None:
    """A generator was told to be wrapped in a list ([<generator ...>])."""
    with pytest.raises(sg.ProblemError, match=re.escape(fix)):
        expand_grid({"k": values})


def test_derive_seeds_without_a_seed_key_names_seed_key() -> None:
    with pytest.raises(sg.ProblemError, match="got seed_key=None"):
        sweep(_scaled, GRID, seed_key=None, derive_seeds=True, workers=0, progress=False)
