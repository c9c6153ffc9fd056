# SPDX-License-Identifier: BSD-3-Clause
"""Start-up (issue 25): `import svmgeo` imports no heavy module; each name's module is imported
on its first use, and every public name still resolves to the same object."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys

import pytest

import svmgeo as sg

# modules `import svmgeo` must not import (deterministic, not a timing)
HEAVY = (
    "scipy",
    "scipy.optimize",
    "scipy.sparse",
    "scipy.special",
    "numba",
    "llvmlite",
    "flint",
    "cvxpy",
    "clarabel",
    "matplotlib",
    "pandas",
    "torch",
)


def _loaded(code: str) -> list[str]:
    """The HEAVY modules in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    return list(ast.literal_eval(out.stdout.strip().splitlines()[-1]))


def test_import_svmgeo_loads_no_heavy_module() -> None:
    assert _loaded("import svmgeo") == []


def test_gradient_descent_loads_neither_scipy_nor_numba_before_it_runs() -> None:
    # the GD engine's names come from numpy-only modules; numba is imported by the first kernel
    assert _loaded("from svmgeo import GDConfig, TokenData, random_data, train, train_batch") == []


def test_a_solver_name_imports_its_module_on_first_use() -> None:
    assert "scipy.sparse" in _loaded("import svmgeo; svmgeo.att_svm")


def test_the_command_line_and_the_solvers_do_not_import_scipy_optimize() -> None:
    # `svmgeo --help` builds its options from the solvers' table of norms; scipy.optimize (0.3 s)
    # is imported by the one solver that calls it (the lp fast path), when it runs
    assert "scipy.optimize" not in _loaded("import svmgeo.cli, svmgeo.solvers")


def test_every_public_name_is_the_object_of_its_module() -> None:
    for name in sg.__all__:
        if name == "__version__":
            continue
        value = getattr(sg, name)
        if name in sg._HOME:
            assert value is getattr(sys.modules[sg.__name__ + sg._HOME[name]], name), name
        assert name in dir(sg), name


def test_lazy_table_matches_all_and_the_type_checking_imports() -> None:
    # the three lists of public names in svmgeo/__init__.py (TYPE_CHECKING imports for mypy, the
    # lazy table for run time, __all__) name the same names from the same modules
    tree = ast.parse(inspect.getsource(sg))
    block = next(
        n
        for n in tree.body
        if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"
    )
    typed = {
        a.name: "." + (imp.module or "")
        for imp in block.body
        if isinstance(imp, ast.ImportFrom)
        for a in imp.names
    }
    assert typed == sg._HOME
    eager = {n for n in sg.__all__ if n in vars(sg._errors)} | {"__version__"}
    assert set(sg.__all__) == set(sg._HOME) | eager
    assert len(sg.__all__) == len(set(sg.__all__))


@pytest.mark.parametrize("name", ["study", "verify"])
def test_a_function_named_like_its_module_stays_the_function(name: str) -> None:
    # importing the submodule svmgeo.study first must not rebind svmgeo.study to the module
    code = (
        f"import svmgeo.{name}, svmgeo, types, sys\n"
        f"assert svmgeo.{name} is sys.modules['svmgeo.{name}'].{name}\n"
        f"assert not isinstance(svmgeo.{name}, types.ModuleType)\n"
    )
    subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300, check=True)
    assert callable(getattr(sg, name))


def test_submodules_and_unknown_names() -> None:
    import svmgeo.plot

    assert sg.plot is svmgeo.plot and sg.gd.train is sg.train
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        sg.not_a_name  # noqa: B018
