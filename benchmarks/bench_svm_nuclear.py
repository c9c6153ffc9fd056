# SPDX-License-Identifier: BSD-3-Clause
"""Att-SVM⋆ (nuclear norm): the factored path (issue 16) against the compressed SDP, same run.

Each solve runs in its own subprocess, which reports wall time, CPU time, its peak resident
memory (``resource.getrusage``, the whole process: data, constraints, solve) and svmgeo's
recomputed certificate (relative duality gap |‖W‖_* − cᵀλ| / ‖W‖_*, dual infeasibility
‖Σλ_j a_j b_jᵀ‖₂ − 1, primal infeasibility).

* ``factored``: ``solve_nuclear(cs)`` (solver="auto": feasibility check, the factored path,
  the SDP only as fallback — the ``solver`` column says which answered).
* ``sdp``: ``solve_nuclear(cs, solver="scs")``, what "auto" ran before issue 16 (SCS, then
  Clarabel only when SCS fails; SCS certified at these sizes). It runs under an address-space
  limit of ``SDP_LIMIT_GB``: a ``MemoryError`` there is reported as "does not fit".

Sizes (n, T, d): (25, 10, 200), (50, 10, 200), (50, 10, 1000), (100, 20, 1000), the SDP
side by side at every size unless ``--no-sdp`` names it: at (100, 20, 1000) the SDP needed
17.6 GB resident (killed) in an earlier run, so it is skipped there by default (and said so).
The target of issue 16 is printed with the figures: ≥ 20× at (25, 10, 200) and (50, 10, 200),
objectives equal to 1e-8, recomputed gap ≤ 1e-9, (100, 20, 1000) within 2 GB.

Run: ``python benchmarks/bench_svm_nuclear.py [--seeds 0,1,2] [--sizes 25,10,200 ...]
[--no-sdp 100,20,1000]``. With ``--infeasible``: only the time of ``solve_nuclear`` on the
same rows plus the reverse of row 0 (infeasible), in this process, and of its float
feasibility check (``check_feasibility(exact=False)``: the Phase-1 LP on the null space of the
rows' Gram matrix) against the same check with that LP switched off (the HiGHS LP with
rank(G) equality rows, after the interior-point QP), same run.
With ``--parallel-queries``: ``solve_nuclear(cs)`` (solver="auto", what ``att_svm(data,
norm="nuc")`` calls) against ``solve_nuclear(cs, solver="clarabel")`` alone, same process,
on many rows and a tiny compressed W: random tokens and head, every query a positive multiple
of one random vector (r2 = 1), α = optimal tokens (session 55's audit instance at
(2000, 3, 2), seed 0); the path that answered (with the factored path's L-BFGS iterations,
deterministic), both times and their ratios (auto / Clarabel), and ``att_svm(data,
norm="nuc")`` against that ``solve_nuclear(cs)`` (att_svm / auto: what the SVM adds to the
solver it calls; issue 25's target: at most 1.5x), CPU and wall time, minima of
``--repeats`` interleaved calls (fresh data and rows each call, built outside the timing).
With ``--copies K`` (and ``--parallel-queries``'s rows): ``att_svm(data, norm="nuc")`` on
those rows with every sequence repeated K times, and once (no copies), against the same call
with Clarabel's first SDP run on every row as before session 60 (``identical_rows`` in
``svmgeo.solvers._nuclear`` patched to find no copies: the SVM then threw that answer away and
solved the distinct rows), CPU and wall minima of ``--repeats`` interleaved calls, their ratios
(new / before), and whether the two answers are the same (status, proof, certificate verdict,
W and multipliers bit for bit).
Cross-attention data ``random_data(n, T, d, seed=s)``, α = optimal tokens. No environment
variable is needed: svmgeo runs small dense solves with one BLAS thread (threadpoolctl) itself.
Timings on a shared machine are noisy: wall and CPU time are both printed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar
from unittest import mock

from _isolated import answer_one, run_isolated, solve_figures

T_ = TypeVar("T_")

SIZES = [(25, 10, 200), (50, 10, 200), (50, 10, 1000), (100, 20, 1000)]
SDP_LIMIT_GB = 8.0
"""Address-space limit of an SDP subprocess (the machine is shared; 24 GB in all)."""
TARGET_MB = 2048.0
"""Peak memory target of issue 16 for the factored path at (100, 20, 1000)."""


def _one(n: int, T: int, d: int, seed: int, path: str) -> dict[str, object]:
    """Solve one instance in this process and return its figures."""
    import numpy as np

    import svmgeo as sg
    from svmgeo.solvers._nuclear import solve_nuclear

    if path == "sdp":
        limit = int(SDP_LIMIT_GB * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    data = sg.random_data(n, T, d, seed=seed)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        res = solve_nuclear(cs) if path == "factored" else solve_nuclear(cs, solver="scs")
    except MemoryError:
        return {"status": f"does not fit in {SDP_LIMIT_GB:g} GB (MemoryError)"}
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    c = res.certificate
    return {
        **solve_figures(cs, res, wall, cpu),
        "solver": res.solver,
        "dual_inf": c.dual_infeasibility if c else float("nan"),
        "rank": int(np.linalg.matrix_rank(res.W, tol=1e-9 * np.abs(res.W).max()))
        if res.W is not None
        else -1,
    }


def _timed(call: Callable[[], T_]) -> tuple[T_, float, float]:
    """``call()`` with its wall and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _infeasible(n: int, T: int, d: int, seed: int) -> list[str]:
    """``solve_nuclear`` on the optimal-token rows plus the reverse of row 0 (infeasible), and
    the float feasibility check's null-space LP against the HiGHS rank(G)-row LP path."""
    import numpy as np

    import svmgeo as sg
    from svmgeo.solvers import _feasibility, check_feasibility, farkas_residual
    from svmgeo.solvers._nuclear import solve_nuclear

    data = sg.random_data(n, T, d, seed=seed)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    bad = sg.pair_constraints(
        data,
        np.r_[cs.seq, cs.seq[0]],
        np.r_[cs.query, cs.query[0]],
        np.r_[cs.pref, cs.comp[0]],
        np.r_[cs.comp, cs.pref[0]],
    )
    res, wall, cpu = _timed(lambda: solve_nuclear(bad))
    farkas = "verified Farkas vector" if res.farkas is not None else "no Farkas vector"
    head = f"{(n, T, d)!s:>15} seed {seed}, N = {bad.N} (row 0 and its reverse):"
    lines = [
        f"{head} solve_nuclear {res.status.value} by {res.solver}, {farkas}, "
        f"{wall:.2f} s wall / {cpu:.2f} s CPU"
    ]
    new, new_wall, new_cpu = _timed(lambda: check_feasibility(bad, exact=False))
    with mock.patch.object(_feasibility, "_solve_null_lp", lambda *args: None):
        old, old_wall, old_cpu = _timed(lambda: check_feasibility(bad, exact=False))
    for name, r, w, c in (("new", new, new_wall, new_cpu), ("HiGHS", old, old_wall, old_cpu)):
        resid = farkas_residual(bad, r.farkas) if r.farkas is not None else float("nan")
        lines.append(
            f"{'':>15}   check_feasibility {name:>5}: {r.status.value} by {r.solver}, "
            f"Farkas residual {resid:.1e}, {w:.2f} s wall / {c:.2f} s CPU"
        )
    lines.append(
        f"{'':>15}   speed-up {old_wall / new_wall:.1f}x wall, {old_cpu / new_cpu:.1f}x CPU; "
        f"verdicts {'agree' if new.feasible == old.feasible else 'DISAGREE'}"
    )
    return lines


def _parallel_queries(n: int, T: int, d: int, seed: int, repeats: int) -> str:
    """``solve_nuclear`` (auto) against Clarabel alone, and ``att_svm(data, norm="nuc")``
    against the ``solve_nuclear`` it calls, on the parallel-query rows: the three calls
    interleaved ``repeats`` times, each on fresh data and rows built outside the timing,
    minima of wall and CPU time."""
    import numpy as np

    import svmgeo as sg
    from svmgeo.solvers._nuclear import solve_nuclear

    rng = np.random.default_rng(seed)
    v = rng.normal(size=d)
    X = rng.normal(size=(n, T, d))
    Z = np.tile(rng.normal(size=d), (n, 1)) * rng.uniform(0.5, 2.0, size=(n, 1))
    alpha = sg.optimal_tokens(sg.TokenData(X, v=v, Z=Z))
    calls: dict[str, Callable[[sg.TokenData, sg.ConstraintSet], sg.SVMResult]] = {
        "auto": lambda data, cs: solve_nuclear(cs),
        "clarabel": lambda data, cs: solve_nuclear(cs, solver="clarabel"),
        "att_svm": lambda data, cs: sg.att_svm(data, norm="nuc"),
    }
    best = {name: (np.inf, np.inf) for name in calls}
    out: dict[str, sg.SVMResult] = {}
    for _ in range(repeats):
        for name, call in calls.items():
            data = sg.TokenData(X, v=v, Z=Z)  # fresh: nothing cached from the last call
            cs = sg.att_svm_constraints(data, alpha)
            out[name], wall, cpu = _timed(partial(call, data, cs))
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    auto, clar, att = out["auto"], out["clarabel"], out["att_svm"]
    head = f"{(n, T, d)!s:>15} {seed:>4}"
    if auto.objective is None or clar.objective is None or att.objective is None:
        return (
            f"{head} auto {auto.status.value}, clarabel {clar.status.value}, "
            f"att_svm {att.status.value}"
        )
    diff = abs(auto.objective - clar.objective) / clar.objective
    diff_att = abs(att.objective - auto.objective) / auto.objective
    its = auto.extras.get("lbfgs_iterations")
    path = f"{auto.solver}" + (f" ({its} L-BFGS its)" if its is not None else "")
    (a_wall, a_cpu), (c_wall, c_cpu), (s_wall, s_cpu) = (best[k] for k in calls)
    return (
        f"{head} {auto.status.value:>8} {path:>32} {a_cpu:9.3f} {a_wall:9.3f} {c_cpu:9.3f} "
        f"{c_wall:9.3f} {a_cpu / c_cpu:9.2f} {a_wall / c_wall:9.2f} {att.status.value:>8} "
        f"{s_cpu:9.3f} {s_wall:9.3f} {s_cpu / a_cpu:9.2f} {s_wall / a_wall:10.2f} "
        f"{auto.objective:15.10g} {diff:8.1e} {diff_att:8.1e}"
    )


def _copies(n: int, T: int, d: int, seed: int, copies: int, repeats: int) -> str:
    """``att_svm(data, norm="nuc")`` on the parallel-query rows with every sequence ``copies``
    times, against the same call with the first SDP run on every row (before session 60),
    interleaved ``repeats`` times, minima of wall and CPU time; the answers compared."""
    import numpy as np

    import svmgeo as sg
    from svmgeo.solvers import _nuclear

    rng = np.random.default_rng(seed)
    v = rng.normal(size=d)
    X = rng.normal(size=(n, T, d))
    Z = np.tile(rng.normal(size=d), (n, 1)) * rng.uniform(0.5, 2.0, size=(n, 1))
    X, Z = np.concatenate([X] * copies), np.concatenate([Z] * copies)
    before = mock.patch.object(_nuclear, "identical_rows", lambda cs: None)
    best = {"new": (np.inf, np.inf), "before": (np.inf, np.inf)}
    out: dict[str, sg.SVMResult] = {}
    for _ in range(repeats):
        for name in best:
            data = sg.TokenData(X, v=v, Z=Z)  # fresh: nothing cached from the last call
            with before if name == "before" else contextlib.nullcontext():
                out[name], wall, cpu = _timed(partial(sg.att_svm, data, norm="nuc"))
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    new, old = out["new"], out["before"]
    same = (
        new.status is old.status
        and new.proof == old.proof
        and (new.certificate is None) == (old.certificate is None)
        and (new.certificate is None or new.certificate.passed == old.certificate.passed)
        and np.array_equal(new.W, old.W)
        and np.array_equal(new.dual, old.dual)
    )
    (n_wall, n_cpu), (b_wall, b_cpu) = best["new"], best["before"]
    return (
        f"{(n, T, d)!s:>15} {seed:>4} {copies:>6} {new.status.value:>8} {new.proof!s:>6} "
        f"{n_cpu:9.4f} {b_cpu:9.4f} {n_cpu / b_cpu:7.2f} {n_wall:9.4f} {b_wall:9.4f} "
        f"{n_wall / b_wall:7.2f} {'same' if same else 'DIFFERENT':>9}"
    )


COPIES_HEADER = (
    f"{'(n, T, d)':>15} {'seed':>4} {'copies':>6} {'status':>8} {'proof':>6} {'new CPU':>9} "
    f"{'old CPU':>9} {'CPU n/o':>7} {'new wall':>9} {'old wall':>9} {'wall n/o':>7} "
    f"{'answers':>9}"
)
"""Columns of ``--copies``: the rows' status and proof, CPU and wall seconds of ``att_svm``
with the rule of session 60 (new) and before it (old), their ratios, and whether the two
answers are the same."""


PARALLEL_HEADER = (
    f"{'(n, T, d)':>15} {'seed':>4} {'auto':>8} {'answered by':>32} {'auto CPU':>9} "
    f"{'auto wall':>9} {'clar CPU':>9} {'clar wall':>9} {'a/c CPU':>9} {'a/c wall':>9} "
    f"{'att_svm':>8} {'att CPU':>9} {'att wall':>9} {'att/a CPU':>9} {'att/a wall':>10} "
    f"{'objective':>15} {'a vs c':>8} {'att vs a':>8}"
)
"""Columns of ``--parallel-queries``: ``solve_nuclear`` (auto: its status, the path that
answered, CPU and wall seconds), Clarabel alone, their ratios (a/c), ``att_svm`` (status,
seconds) and its ratios to auto (att/a), auto's objective and the relative differences of
auto's from Clarabel's and att_svm's from auto's."""


def _row(size: tuple[int, int, int], seed: int, path: str, r: dict[str, object]) -> str:
    if "wall" not in r:
        return f"{size!s:>15} {seed:>4} {path:>8} {r['status']}"
    return (
        f"{size!s:>15} {seed:>4} {path:>8} {r['solver']:>15} {r['N']:>5} {r['status']:>8} "
        f"{r['wall']:8.2f} {r['cpu']:8.2f} {r['rss_mb']:7.0f} {r['objective']:17.11f} "
        f"{r['gap']:8.1e} {r['dual_inf']:8.1e} {r['primal_inf']:8.1e} {r['rank']:>4}"
    )


def _summary(size: tuple[int, int, int], seed: int, fast: dict, sdp: dict | None) -> str:
    """One line: the speed-up over the SDP, objective agreement, gap and memory checks."""
    head = f"{size!s:>15} seed {seed}:"
    if "wall" not in fast:
        return f"{head} factored path FAILED ({fast['status']})"
    certified = fast["status"] == "optimal" and float(fast["gap"]) <= 1e-9
    note = (
        f" {fast['solver']} {'certified' if certified else 'NOT certified'}"
        f" (gap {float(fast['gap']):.1e}), peak {float(fast['rss_mb']):.0f} MB"
    )
    if size == (100, 20, 1000):
        note += " (within 2 GB)" if float(fast["rss_mb"]) <= TARGET_MB else " (OVER 2 GB)"
    if sdp is None:
        return f"{head}{note}; SDP not run (--no-sdp)"
    if "wall" not in sdp:
        return f"{head}{note}; SDP: {sdp['status']}"
    diff = abs(float(fast["objective"]) - float(sdp["objective"])) / float(sdp["objective"])
    return (
        f"{head}{note}; SDP {sdp['status']} (gap {float(sdp['gap']):.1e}, "
        f"peak {float(sdp['rss_mb']):.0f} MB); speed-up "
        f"{float(sdp['wall']) / float(fast['wall']):.1f}x wall, "
        f"{float(sdp['cpu']) / float(fast['cpu']):.1f}x CPU; objectives differ by {diff:.1e} "
        f"({'within' if diff <= 1e-8 else 'OUTSIDE'} 1e-8)"
    )


def _size(text: str) -> tuple[int, int, int]:
    n, T, d = (int(v) for v in text.split(","))
    return n, T, d


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated random_data seeds")
    parser.add_argument(
        "--sizes", nargs="*", default=[",".join(map(str, s)) for s in SIZES], help="n,T,d ..."
    )
    parser.add_argument(
        "--no-sdp",
        nargs="*",
        default=["100,20,1000"],
        help="sizes n,T,d without the SDP baseline (default: 100,20,1000, which needs 17.6 GB)",
    )
    parser.add_argument(
        "--infeasible",
        action="store_true",
        help="only time solve_nuclear on infeasible rows (each size and seed)",
    )
    parser.add_argument(
        "--parallel-queries",
        action="store_true",
        help="only time solve_nuclear (auto) against Clarabel alone, and att_svm against "
        "solve_nuclear, on parallel-query rows",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="interleaved calls of each solve with --parallel-queries (minima printed)",
    )
    parser.add_argument(
        "--copies",
        type=int,
        metavar="K",
        help="with --parallel-queries, K >= 2: only time att_svm on those rows with every "
        "sequence K times (and once), against the first SDP on every row (before session 60)",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.copies is not None:
        if not args.parallel_queries:
            parser.error(
                "--copies K times att_svm on the rows of --parallel-queries, which was not "
                "given: add --parallel-queries"
            )
        if args.copies < 2:
            parser.error(
                f"--copies K repeats every sequence K times and needs K >= 2; got {args.copies} "
                "(pass 2 or more, or drop --copies)"
            )
    if args.one:
        answer_one(args.one, _one)
        return

    seeds = [int(s) for s in args.seeds.split(",")]
    sizes = [_size(s) for s in args.sizes]
    if args.parallel_queries:
        print(
            f"# minima of {args.repeats} interleaved calls each; OPENBLAS_NUM_THREADS="
            f"{os.environ.get('OPENBLAS_NUM_THREADS')}, load average "
            f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}"
        )
        if args.copies is not None:
            print(COPIES_HEADER)
            for size in sizes:
                for seed in seeds:
                    for copies in sorted({1, args.copies}):
                        print(_copies(*size, seed, copies, args.repeats), flush=True)
            return
        print(PARALLEL_HEADER)
        for size in sizes:
            for seed in seeds:
                print(_parallel_queries(*size, seed, args.repeats), flush=True)
        return
    if args.infeasible:
        for size in sizes:
            for seed in seeds:
                print("\n".join(_infeasible(*size, seed)), flush=True)
        return
    no_sdp = {_size(s) for s in args.no_sdp}
    print(
        f"# cores {os.cpu_count()} (shared: timings are noisy), "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}; "
        f"SDP under a {SDP_LIMIT_GB:g} GB address-space limit; no SDP at {sorted(no_sdp)}"
    )
    print(
        f"{'(n, T, d)':>15} {'seed':>4} {'path':>8} {'solver':>15} {'N':>5} {'status':>8} "
        f"{'wall s':>8} {'CPU s':>8} {'RSS MB':>7} {'objective':>17} {'rel gap':>8} "
        f"{'|Λ|₂-1':>8} {'primal':>8} {'rank':>4}"
    )
    lines = []
    for size in sizes:
        for seed in seeds:
            fast = run_isolated(__file__, *size, seed, "factored")
            print(_row(size, seed, "factored", fast), flush=True)
            sdp = None
            if size not in no_sdp:
                sdp = run_isolated(__file__, *size, seed, "sdp")
                print(_row(size, seed, "sdp", sdp), flush=True)
            lines.append(_summary(size, seed, fast, sdp))
    print("\n== factored path against the SDP path (same run) ==")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
