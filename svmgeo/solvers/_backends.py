# SPDX-License-Identifier: BSD-3-Clause
r"""Backend solvers as data: one adapter each for Clarabel, SCS, HiGHS and cvxpy's statuses.

Each adapter declares what it solves (``capabilities``), how its native status codes map to
svmgeo's :class:`~svmgeo.Status` (``STATUS_MAP``: an unknown code is
:attr:`~svmgeo.Status.SOLVER_ERROR`, never a success; an "almost" verdict is an inaccurate
status, never an exact one), and, for the conic solvers, the layout of a symmetric matrix
in its vector of cone entries (``svec``). :data:`CONIC_BACKENDS` lists the conic solvers in
``solver="auto"`` order. The packages are imported only when a solve runs
(``is_installed`` asks :func:`importlib.util.find_spec`), so ``import svmgeo`` loads none of
them. A backend's exception becomes :class:`~svmgeo.SolverError` (``raise ... from``).

The conic form is :math:`\min q^\top x` s.t. :math:`Ax + s = b`,
:math:`s \in \{0\}^{n_\text{eq}} \times \mathbb{R}_+^{n_\text{margin}} \times
(\mathbb{S}_+^{k})^{n_\text{cones}}`, every PSD cone given by the scaled vector of its
triangle (off-diagonal entries times √2).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

import numpy as np
import scipy.sparse as sp

from .._errors import ProblemError, SolverError, SolverNotFound
from ._status import Status

__all__ = [
    "CONIC_BACKENDS",
    "Backend",
    "ClarabelBackend",
    "ConicBackend",
    "ConicProblem",
    "ConicSolution",
    "CvxpyBackend",
    "HiGHSBackend",
    "SCSBackend",
]


class ConicProblem(Protocol):
    """What a conic backend reads: ``min qᵀx s.t. A x + s = b`` with the cone sizes."""

    @property
    def A(self) -> sp.csc_matrix: ...

    @property
    def b(self) -> np.ndarray: ...

    @property
    def q(self) -> np.ndarray: ...

    @property
    def n_eq(self) -> int: ...

    @property
    def n_margin(self) -> int: ...

    @property
    def n_cones(self) -> int: ...

    @property
    def cone_size(self) -> int: ...


@dataclass(frozen=True)
class ConicSolution:
    """A conic backend's answer: primal ``x``, dual ``z`` (one entry per row of A), status."""

    x: np.ndarray
    z: np.ndarray
    native: str
    status: Status
    n_iter: int
    extras: dict[str, Any] = field(default_factory=dict)


class Backend:
    """A backend solver: its package, capabilities and status vocabulary (class attributes)."""

    name: ClassVar[str]
    package: ClassVar[str]
    capabilities: ClassVar[frozenset[str]]
    STATUS_MAP: ClassVar[dict[Any, Status]]

    @classmethod
    def is_installed(cls) -> bool:
        """Whether the package can be imported (without importing it)."""
        return importlib.util.find_spec(cls.package) is not None

    @classmethod
    def status(cls, native: Any) -> Status:
        """The :class:`Status` of a native code; an unknown code is ``SOLVER_ERROR``."""
        return cls.STATUS_MAP.get(native, Status.SOLVER_ERROR)

    @classmethod
    def load(cls) -> Any:
        """Import the package, or raise :class:`~svmgeo.SolverNotFound` saying how to install it."""
        try:
            return importlib.import_module(cls.package)
        except ImportError as exc:
            raise SolverNotFound(
                f"the {cls.name} backend needs the {cls.package} package; pip install "
                f"{cls.package} (installed backends: "
                f"{', '.join(b.name for b in _ALL if b.is_installed()) or 'none'})."
            ) from exc


class ConicBackend(Backend):
    """A conic solver that takes PSD cones."""

    svec: ClassVar[Literal["upper-columns", "lower-columns"]]
    """Which triangle of a symmetric matrix the cone vector stacks, column by column."""

    @classmethod
    def svec_index(cls, p: np.ndarray, q: np.ndarray, s: int) -> np.ndarray:
        """Position of entry (p, q) of a symmetric s×s matrix in the cone vector."""
        lo, hi = np.minimum(p, q), np.maximum(p, q)
        if cls.svec == "upper-columns":
            return hi * (hi + 1) // 2 + lo
        return lo * s - lo * (lo - 1) // 2 + (hi - lo)

    @classmethod
    def check_options(cls, options: dict[str, Any], where: str) -> None:
        """Raise :class:`ProblemError` when the backend rejects an option (nothing is solved)."""
        raise NotImplementedError

    @classmethod
    def solve_conic(
        cls, conic: ConicProblem, solver_tol: float, options: dict[str, Any], where: str
    ) -> ConicSolution:
        """Solve ``conic`` at the backend tolerance ``solver_tol``; ``options`` override."""
        raise NotImplementedError


class ClarabelBackend(ConicBackend):
    """Clarabel (interior point): QP, LP, SOCP and PSD cones; upper triangle by columns."""

    name = "clarabel"
    package = "clarabel"
    capabilities = frozenset({"lp", "qp", "sdp"})
    svec = "upper-columns"
    STATUS_MAP: ClassVar[dict[Any, Status]] = {
        "Solved": Status.OPTIMAL,
        "AlmostSolved": Status.OPTIMAL_INACCURATE,
        "PrimalInfeasible": Status.INFEASIBLE,
        "AlmostPrimalInfeasible": Status.INFEASIBLE_INACCURATE,
        "DualInfeasible": Status.UNBOUNDED,
        "AlmostDualInfeasible": Status.UNBOUNDED_INACCURATE,
        "MaxIterations": Status.MAX_ITER,
        "MaxTime": Status.MAX_ITER,
        "NumericalError": Status.NUMERICAL_ERROR,
        "InsufficientProgress": Status.NUMERICAL_ERROR,
    }

    @classmethod
    def run(
        cls,
        P: sp.csc_matrix,
        q: np.ndarray,
        A: sp.csc_matrix,
        b: np.ndarray,
        cones: list[tuple[str, int]],
        settings: dict[str, Any],
        what: str,
    ) -> Any:
        """One ``clarabel.DefaultSolver`` solve; ``cones`` as (kind, size) with kind in
        ``"zero"``, ``"nonneg"``, ``"psd"``; ``settings`` attributes of ``DefaultSettings``."""
        clarabel = cls.load()
        opts = clarabel.DefaultSettings()
        opts.verbose = False
        for key, value in settings.items():
            setattr(opts, key, value)
        make = {
            "zero": clarabel.ZeroConeT,
            "nonneg": clarabel.NonnegativeConeT,
            "psd": clarabel.PSDTriangleConeT,
        }
        native_cones = [make[kind](size) for kind, size in cones if size]
        try:
            return clarabel.DefaultSolver(P, q, A, b, native_cones, opts).solve()
        except BaseException as exc:  # clarabel raises PanicException (a BaseException)
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            raise SolverError(f"Clarabel failed on {what}: {type(exc).__name__}: {exc}") from exc

    @classmethod
    def check_options(cls, options: dict[str, Any], where: str) -> None:
        clarabel = cls.load()
        defaults = clarabel.DefaultSettings()
        for key in options:
            if not hasattr(defaults, key):
                raise ProblemError(
                    f"Unknown Clarabel option {key!r} for {where}; see "
                    "clarabel.DefaultSettings() for the valid names."
                )

    @classmethod
    def solve_conic(
        cls, conic: ConicProblem, solver_tol: float, options: dict[str, Any], where: str
    ) -> ConicSolution:
        cls.check_options(options, where)
        inner = max(min(solver_tol, 1e-10), 1e-14)
        settings: dict[str, Any] = {
            "tol_gap_abs": inner,
            "tol_gap_rel": inner,
            "tol_feas": inner,
            "tol_ktratio": 1e-8,
            # measured: Ruiz equilibration costs about one digit of accuracy on these SDPs
            "equilibrate_enable": False,
            **options,
        }
        cones = [("zero", conic.n_eq), ("nonneg", conic.n_margin)]
        cones += [("psd", conic.cone_size)] * conic.n_cones
        P = sp.csc_matrix((conic.q.size, conic.q.size))
        solution = cls.run(P, conic.q, conic.A, conic.b, cones, settings, "the nuclear-norm SDP")
        native = str(solution.status)
        return ConicSolution(
            x=np.asarray(solution.x, dtype=float),
            z=np.asarray(solution.z, dtype=float),
            native=native,
            status=cls.status(native),
            n_iter=int(solution.iterations),
            extras={
                "native_status": native,
                "solver_objective": float(solution.obj_val),
                "backend_solve_time": float(solution.solve_time),
            },
        )


class SCSBackend(ConicBackend):
    """SCS (first-order, ADMM): LP, SOCP and PSD cones; lower triangle by columns."""

    name = "scs"
    package = "scs"
    capabilities = frozenset({"lp", "qp", "sdp"})
    svec = "lower-columns"
    STATUS_MAP: ClassVar[dict[Any, Status]] = {
        1: Status.OPTIMAL,
        2: Status.OPTIMAL_INACCURATE,
        -2: Status.INFEASIBLE,
        -7: Status.INFEASIBLE_INACCURATE,
        -1: Status.UNBOUNDED,
        -6: Status.UNBOUNDED_INACCURATE,
        -3: Status.NUMERICAL_ERROR,
        -5: Status.SOLVER_ERROR,
        0: Status.MAX_ITER,
    }
    """``info["status_val"]``: -4 (failed) and -5 (interrupted) are solver errors."""

    @classmethod
    def _setup(
        cls, data: dict[str, Any], cone: dict[str, Any], settings: dict[str, Any], where: str
    ) -> Any:
        """``scs.SCS(data, cone, **settings)``; an unknown keyword is a :class:`ProblemError`."""
        scs = cls.load()
        try:
            return scs.SCS(data, cone, **settings)
        except TypeError as exc:  # SCS's constructor rejects an unknown keyword so
            raise ProblemError(
                f"SCS rejected an option of {where} ({exc}); valid names are SCS's settings "
                "(https://www.cvxgrp.org/scs/api/settings.html)."
            ) from exc

    @classmethod
    def check_options(cls, options: dict[str, Any], where: str) -> None:
        one = sp.csc_matrix(np.ones((1, 1)))  # SCS checks keywords when it is set up
        settings = {"verbose": False, **options}
        cls._setup({"A": one, "b": np.ones(1), "c": np.ones(1)}, {"l": 1}, settings, where)

    @classmethod
    def solve_conic(
        cls, conic: ConicProblem, solver_tol: float, options: dict[str, Any], where: str
    ) -> ConicSolution:
        settings: dict[str, Any] = {
            "verbose": False,
            "eps_abs": max(solver_tol, 1e-12),
            "eps_rel": max(solver_tol, 1e-12),
            "max_iters": 200_000,
            **options,
        }
        cone = {"z": conic.n_eq, "l": conic.n_margin, "s": [conic.cone_size] * conic.n_cones}
        data = {"A": conic.A, "b": conic.b, "c": conic.q}
        try:
            out = cls._setup(data, cone, settings, where).solve()
        except ProblemError:
            raise
        except Exception as exc:
            raise SolverError(
                f"SCS failed on the nuclear-norm SDP ({where}): {type(exc).__name__}: {exc}"
            ) from exc
        info = out["info"]
        return ConicSolution(
            x=np.asarray(out["x"], dtype=float),
            z=np.asarray(out["y"], dtype=float),
            native=str(info["status"]),
            status=cls.status(int(info["status_val"])),
            n_iter=int(info["iter"]),
            extras={"native_status": str(info["status"]), "solver_objective": info["pobj"]},
        )


class HiGHSBackend(Backend):
    """HiGHS through :func:`scipy.optimize.linprog`: LPs (the feasibility check)."""

    name = "highs"
    package = "scipy"
    capabilities = frozenset({"lp"})
    STATUS_MAP: ClassVar[dict[Any, Status]] = {
        0: Status.OPTIMAL,
        1: Status.MAX_ITER,
        2: Status.INFEASIBLE,
        3: Status.UNBOUNDED,
        4: Status.NUMERICAL_ERROR,
    }
    """``linprog``'s ``status``."""

    @classmethod
    def linprog(cls, c: np.ndarray, what: str, **kwargs: Any) -> Any:
        """``linprog(c, method="highs", **kwargs)``; an exception becomes a SolverError."""
        from scipy.optimize import linprog

        try:
            return linprog(c, method="highs", **kwargs)
        except Exception as exc:
            raise SolverError(f"HiGHS failed on {what}: {type(exc).__name__}: {exc}") from exc


class CvxpyBackend(Backend):
    """cvxpy's status strings (the naive reference model, :mod:`._reference`)."""

    name = "cvxpy"
    package = "cvxpy"
    capabilities = frozenset({"lp", "qp", "sdp"})
    STATUS_MAP: ClassVar[dict[Any, Status]] = {
        "optimal": Status.OPTIMAL,
        "optimal_inaccurate": Status.OPTIMAL_INACCURATE,
        "infeasible": Status.INFEASIBLE,
        "infeasible_inaccurate": Status.INFEASIBLE_INACCURATE,
        "unbounded": Status.UNBOUNDED,
        "unbounded_inaccurate": Status.UNBOUNDED_INACCURATE,
        "user_limit": Status.MAX_ITER,
        "solver_error": Status.SOLVER_ERROR,
    }


_ALL: tuple[type[Backend], ...] = (SCSBackend, ClarabelBackend, HiGHSBackend, CvxpyBackend)

CONIC_BACKENDS: dict[str, type[ConicBackend]] = {"scs": SCSBackend, "clarabel": ClarabelBackend}
"""The SDP backends of the nuclear-norm solver, in ``solver="auto"`` order: SCS first (its
setup stays cheap with many cones), Clarabel when SCS's polished answer does not certify."""
