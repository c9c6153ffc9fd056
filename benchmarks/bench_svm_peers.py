# SPDX-License-Identifier: BSD-3-Clause
"""Frobenius Att-SVM: svmgeo against its peers on the same dual QP, interleaved, several rounds.

Usage::

    python benchmarks/bench_svm_peers.py                 # N ~ 100 ... 1,000, every peer
    python benchmarks/bench_svm_peers.py --large         # adds N = 3,800 (slow peers skipped)
    python benchmarks/bench_svm_peers.py --rounds 5 --seeds 0,1
    python benchmarks/bench_svm_peers.py --nuclear       # Att-SVM* against cvxpy + SCS

The problem is the Att-SVM of ``random_data(n, T, d, seed)`` with the optimal tokens, i.e. the
dual :math:`\\max_\\lambda c^\\top\\lambda - \\tfrac12\\lambda^\\top G\\lambda`, :math:`\\lambda \\ge 0`,
:math:`G = (AA^\\top)\\circ(BB^\\top)`. Contenders (each one's time includes forming G):

* ``svmgeo``: ``solve_svm(cs)`` -- exact feasibility check with its exact proof, the solve,
  the certificate (everything a user gets);
* ``floor``: forming G and one Cholesky factorization of it (``scipy.linalg.cho_factor``);
* ``libsvm``: scikit-learn ``SVC(kernel="precomputed", C=1e12, tol=1e-10)`` on the rows and their
  negatives (labels +1 / -1; by symmetry the bias is 0 and the dual is the one above);
* ``lbfgsb``: ``scipy.optimize.minimize(method="L-BFGS-B")`` on the dual with bounds,
  ``ftol = gtol = 1e-15``;
* ``clarabel``: Clarabel's direct API on the dual QP (tolerances 1e-10);
* ``osqp``: OSQP on the dual QP (eps 1e-10, polish on).

A peer that is not installed is skipped (and said so); Clarabel and OSQP are skipped past
``--slow-peer-max-N`` rows (default 1,000: they take minutes there). Every contender runs once
per round in turn (interleaved), ``--rounds`` rounds; min-max wall and CPU times are printed,
with the ratios of svmgeo's time to the floor and to each peer, and the load average of every
round. The objective :math:`\\|W\\|_F = (\\lambda^\\top G\\lambda)^{1/2}` of each peer is compared
with svmgeo's (relative difference; the peers' own tolerances limit it). Set
``OPENBLAS_NUM_THREADS=1`` for one BLAS thread everywhere (svmgeo limits its small solves itself).

Every contender is timed on the same ``ConstraintSet``, so from the second call on svmgeo finds
what it caches on a set (its query groups, row norms, exact rows, compressed width) already
there. ``--fresh`` times svmgeo on a new set of the same rows at every call (made before the
timer), as a sweep that builds a set per problem pays it.

``--nuclear``: Att-SVM⋆ instead, ``att_svm(data, norm="nuc")``, the solver it calls
(``solve_nuclear(cs)``) and the naive cvxpy model with SCS (``solve_naive_cvxpy(cs, "nuc",
solver="SCS")``), at (10, 10, 20), (10, 10, 60), (25, 10, 200) unless ``--sizes`` says otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import time
from collections.abc import Callable

import numpy as np
import scipy.linalg as sla

import svmgeo as sg
from svmgeo.solvers import solve_svm

SMALL = [(12, 10, 20), (20, 10, 20), (50, 20, 40), (112, 10, 40)]
"""(n, T, d): N = 108, 180, 950, 1008 rows."""
LARGE = [(200, 20, 200), (200, 20, 1000)]
"""(n, T, d): N = 3,800 rows (``--large``)."""


def _instance(n: int, T: int, d: int, seed: int) -> sg.ConstraintSet:
    data = sg.random_data(n, T, d, seed=seed)
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


def _gram(cs: sg.ConstraintSet) -> np.ndarray:
    return np.asarray((cs.A @ cs.A.T) * (cs.B @ cs.B.T))


def _norm(G: np.ndarray, lam: np.ndarray) -> float:
    return float(np.sqrt(max(float(lam @ (G @ lam)), 0.0)))


def floor(cs: sg.ConstraintSet) -> float:
    """Form G and factor it once: the floor of any method that factors G."""
    G = _gram(cs)
    sla.cho_factor(G, check_finite=False)
    return float("nan")


def svmgeo(cs: sg.ConstraintSet) -> float:
    res = solve_svm(cs)
    if not (res.success and res.proof == "exact"):
        raise RuntimeError(f"svmgeo: {res.status}, proof {res.proof}")
    return float(res.objective)


def libsvm(cs: sg.ConstraintSet) -> float:
    from sklearn.svm import SVC

    G = _gram(cs)
    K = np.block([[G, -G], [-G, G]])
    y = np.concatenate([np.ones(cs.N), -np.ones(cs.N)])
    clf = SVC(kernel="precomputed", C=1e12, tol=1e-10, shrinking=True, cache_size=2000)
    clf.fit(K, y)
    alpha = np.zeros(2 * cs.N)
    alpha[clf.support_] = np.abs(clf.dual_coef_[0])
    lam = alpha[: cs.N] + alpha[cs.N :]
    return _norm(G, lam)


def lbfgsb(cs: sg.ConstraintSet) -> float:
    from scipy.optimize import minimize

    G = _gram(cs)
    c = np.asarray(cs.rhs, dtype=float)

    def f(lam: np.ndarray) -> tuple[float, np.ndarray]:
        g = G @ lam
        return 0.5 * float(lam @ g) - float(c @ lam), g - c

    res = minimize(
        f,
        np.zeros(cs.N),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * cs.N,
        options={"ftol": 1e-15, "gtol": 1e-15, "maxiter": 100_000, "maxfun": 100_000},
    )
    return _norm(G, np.asarray(res.x))


def clarabel(cs: sg.ConstraintSet) -> float:
    import clarabel as cl
    import scipy.sparse as sp

    G = _gram(cs)
    N = cs.N
    P = sp.csc_matrix(np.triu(G))
    A = -sp.identity(N, format="csc")
    settings = cl.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-10
    sol = cl.DefaultSolver(
        P, -np.asarray(cs.rhs, float), A, np.zeros(N), [cl.NonnegativeConeT(N)], settings
    ).solve()
    return _norm(G, np.asarray(sol.x))


def osqp(cs: sg.ConstraintSet) -> float:
    import osqp as osqp_mod
    import scipy.sparse as sp

    G = _gram(cs)
    N = cs.N
    prob = osqp_mod.OSQP()
    prob.setup(
        sp.csc_matrix(np.triu(G)),
        -np.asarray(cs.rhs, float),
        sp.identity(N, format="csc"),
        np.zeros(N),
        np.full(N, np.inf),
        eps_abs=1e-10,
        eps_rel=1e-10,
        max_iter=200_000,
        polishing=True,
        verbose=False,
    )
    return _norm(G, np.asarray(prob.solve().x))


def nuc_att_svm(cs: sg.ConstraintSet) -> float:
    """``att_svm(data, norm="nuc")``: the rows built from the data, feasibility, the solve."""
    assert cs.tokens is not None
    res = sg.att_svm(cs.tokens, norm="nuc")
    if not res.success:
        raise RuntimeError(f"att_svm(norm='nuc'): {res.status}")
    return float(res.objective)


def nuc_solver(cs: sg.ConstraintSet) -> float:
    """``solve_nuclear(cs)``: the solver ``att_svm(norm="nuc")`` calls."""
    from svmgeo.solvers._nuclear import solve_nuclear

    return float(solve_nuclear(cs).objective)


def nuc_naive_scs(cs: sg.ConstraintSet) -> float:
    """The naive cvxpy model (one constraint per row, ``normNuc``) with SCS."""
    import warnings

    from svmgeo.solvers import solve_naive_cvxpy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(solve_naive_cvxpy(cs, "nuc", solver="SCS")[2])


NUCLEAR = {"att_svm": nuc_att_svm, "solve_nuclear": nuc_solver, "naive_scs": nuc_naive_scs}
"""``--nuclear``: Att-SVM⋆ at small sizes, svmgeo against the naive cvxpy + SCS model."""
NUCLEAR_SIZES = [(10, 10, 20), (10, 10, 60), (25, 10, 200)]


PEERS: dict[str, tuple[Callable[[sg.ConstraintSet], float], str | None]] = {
    "floor": (floor, None),
    "svmgeo": (svmgeo, None),
    "libsvm": (libsvm, "sklearn"),
    "lbfgsb": (lbfgsb, "scipy"),
    "clarabel": (clarabel, "clarabel"),
    "osqp": (osqp, "osqp"),
}
SLOW = ("clarabel", "osqp")


def _timed(
    f: Callable[[sg.ConstraintSet], float], cs: sg.ConstraintSet
) -> tuple[float, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = f(cs)
    return time.perf_counter() - wall, time.process_time() - cpu, value


def _fmt(ts: list[float]) -> str:
    lo, hi = min(ts), max(ts)
    unit, k = ("ms", 1e3) if hi < 1.0 else ("s", 1.0)
    return f"{lo * k:.3g}-{hi * k:.3g} {unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="add the N = 3,800 sizes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seeds", default="0", help="comma-separated data seeds")
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated contenders")
    parser.add_argument("--slow-peer-max-N", type=int, default=1000)
    parser.add_argument("--sizes", nargs="*", help="n,T,d triples (default: the built-in list)")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="svmgeo solves a new ConstraintSet of the same rows each call (made before the "
        "timer, its per-set caches empty), as a sweep that builds one set per problem does",
    )
    parser.add_argument(
        "--nuclear", action="store_true", help="Att-SVM* (nuclear) against cvxpy + SCS instead"
    )
    args = parser.parse_args()
    if args.nuclear:
        for name, f in NUCLEAR.items():
            PEERS[name] = (f, "cvxpy" if name == "naive_scs" else None)
        args.peers = ",".join(NUCLEAR)
        if not args.sizes:
            args.sizes = [",".join(map(str, s)) for s in NUCLEAR_SIZES]
    sizes = (
        [tuple(map(int, s.split(","))) for s in args.sizes]
        if args.sizes
        else SMALL + (LARGE if args.large else [])
    )
    wanted = [p for p in args.peers.split(",") if p]
    installed = {p for p in wanted if PEERS[p][1] is None or importlib.util.find_spec(PEERS[p][1])}
    for p in wanted:
        if p not in installed:
            print(f"# {p}: not installed ({PEERS[p][1]}), skipped")
    print(
        f"# cores visible: {os.cpu_count()}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}"
    )
    for seed in map(int, args.seeds.split(",")):
        for n, T, d in sizes:
            cs = _instance(n, T, d, seed)
            names = [
                p
                for p in wanted
                if p in installed and not (p in SLOW and cs.N > args.slow_peer_max_N)
            ]
            skipped = [p for p in wanted if p in installed and p not in names]
            for f, _ in (PEERS[p] for p in names):  # warm-up: imports, first-call costs
                if cs.N <= 1200:
                    f(cs)
            wall: dict[str, list[float]] = {p: [] for p in names}
            cpu: dict[str, list[float]] = {p: [] for p in names}
            value: dict[str, float] = {}
            loads = []
            for _ in range(args.rounds):
                loads.append(os.getloadavg()[0])
                for p in names:
                    fresh = args.fresh and p in ("svmgeo", "att_svm", "solve_nuclear")
                    w, c, v = _timed(PEERS[p][0], dataclasses.replace(cs) if fresh else cs)
                    wall[p].append(w)
                    cpu[p].append(c)
                    value[p] = v
            ref = value.get("svmgeo", value.get("solve_nuclear", float("nan")))
            me = "svmgeo" if "svmgeo" in wall else "solve_nuclear"
            print(
                f"\n(n, T, d) = {(n, T, d)}, N = {cs.N}, seed {seed}; load average (1 min) per round: "
                + ", ".join(f"{x:.2f}" for x in loads)
                + (
                    f"; skipped past N = {args.slow_peer_max_N}: {', '.join(skipped)}"
                    if skipped
                    else ""
                )
            )
            print(
                f"  {'contender':>13} {'wall':>17} {'CPU':>17} {me + ' / it, wall':>22} "
                f"{'CPU':>7} {'obj rel diff':>12}"
            )
            for p in names:
                sw = min(wall[me]) / min(wall[p]) if me in wall else float("nan")
                sc = min(cpu[me]) / max(min(cpu[p]), 1e-9) if me in cpu else float("nan")
                diff = abs(value[p] - ref) / ref if p not in ("floor", me) else float("nan")
                print(
                    f"  {p:>13} {_fmt(wall[p]):>17} {_fmt(cpu[p]):>17} {sw:>21.2f}x {sc:>6.2f}x "
                    f"{'' if np.isnan(diff) else f'{diff:.1e}':>12}"
                )


if __name__ == "__main__":
    main()
