# SPDX-License-Identifier: BSD-3-Clause
"""Att-SVM⋆ answers of two svmgeo versions on the same instances: statuses, objectives, gaps.

``solve_nuclear(cs)`` (and ``att_svm(data, norm="nuc")`` where the rows come from a dataset) on
25 fixed instances of several shapes: random cross- and self-attention, several queries per
sequence, causal masks, tokens or queries in a low-dimensional subspace (two of them
infeasible), a rank-one query side, duplicated sequences, tokens scaled by 1e-3, equality rows,
and a row together with its reverse (infeasible). Every seed is fixed in :func:`instances`.
``--sweep`` adds 63 random small instances: shapes (3, 4, 5) ... (20, 5, 10), cross-attention,
self-attention with query 0, two queries per sequence, seeds 100-102 (:data:`SWEEP`).

Run once per version, then compare::

    PYTHONPATH=<base> python benchmarks/compare_nuclear.py --dump base.pkl
    PYTHONPATH=.      python benchmarks/compare_nuclear.py --dump new.pkl --against base.pkl

A row is a MISMATCH unless both versions give the same status (and ``att_svm`` status), the
objectives agree to 1e-8 relative, the new recomputed gap is at most 1e-9 with the certificate
passed, and both or neither return a Farkas vector. CPU times are printed beside.
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import time
import warnings
from typing import Any

import numpy as np

import svmgeo as sg
from svmgeo.solvers._nuclear import solve_nuclear

PLAIN = [(10, 10, 20, s) for s in range(4)] + [(10, 10, 60, 0), (10, 10, 60, 1), (25, 10, 200, 0)]
PLAIN += [(4, 4, 6, 0), (6, 5, 8, 1), (8, 4, 12, 2), (10, 6, 30, 7), (15, 10, 40, 4)]
"""Cross-attention ``random_data(n, T, d, seed=s)`` as (n, T, d, s)."""
OTHER: list[tuple[int, int, int, dict[str, Any], int]] = [
    (5, 5, 7, {"query": 0}, 3),
    (3, 4, 9, {"n_queries": 3}, 4),
    (2, 4, 8, {"query": "all", "mask": "causal"}, 5),
]
"""Self-attention, several queries, causal mask: (n, T, d, random_data keywords, seed)."""
RANDOM = [(n, T, d, {}, s) for n, T, d, s in PLAIN] + OTHER


SWEEP = [(3, 4, 5), (5, 6, 8), (8, 5, 6), (10, 10, 20), (12, 6, 15), (6, 8, 30), (20, 5, 10)]
"""(n, T, d) of ``--sweep``, each with kwargs {}, {"query": 0}, {"n_queries": 2} and 3 seeds."""


def _opt(data: sg.TokenData) -> sg.ConstraintSet:
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


def _with(data: sg.TokenData, **fields: Any) -> sg.TokenData:
    kw = {"X": data.X, "Y": data.Y, "v": data.v, "Z": data.Z, **fields}
    return type(data)(**kw)


def instances(sweep: bool = False) -> dict[str, sg.ConstraintSet]:
    """The instances, by name (with ``sweep``, also those of :data:`SWEEP`)."""
    out = {
        f"rand{(n, T, d)}{kw or ''}s{s}": _opt(sg.random_data(n, T, d, seed=s, **kw))
        for n, T, d, kw, s in RANDOM
    }
    rng = np.random.default_rng(11)
    sub3 = np.linalg.qr(rng.normal(size=(12, 3)))[0]
    sub2 = np.linalg.qr(rng.normal(size=(12, 2)))[0]
    X3 = rng.normal(size=(8, 5, 3)) @ sub3.T
    Z2 = rng.normal(size=(8, 2)) @ sub2.T
    base = sg.random_data(8, 5, 12, seed=11)
    out["lowrank(8,5,12)r3x2"] = _opt(_with(base, X=X3, Z=Z2))
    sub6 = np.linalg.qr(rng.normal(size=(12, 6)))[0]
    X6 = rng.normal(size=(8, 5, 6)) @ sub6.T
    out["lowrank(8,5,12)r6xfull"] = _opt(_with(base, X=X6))
    out["lowrank(8,5,12)r6x2"] = _opt(_with(base, X=X6, Z=Z2))
    out["lowrank_q1(8,5,12)"] = _opt(_with(base, Z=np.tile(Z2[:1], (8, 1))))
    dup = sg.random_data(5, 5, 10, seed=12)
    out["dup(7,5,10)"] = _opt(
        _with(
            dup,
            X=np.concatenate([dup.X, dup.X[:2]]),
            Y=np.concatenate([dup.Y, dup.Y[:2]]),
            Z=np.concatenate([dup.Z, dup.Z[:2]]),
        )
    )
    small = sg.random_data(6, 6, 12, seed=13)
    out["scaled1e-3(6,6,12)"] = _opt(_with(small, X=1e-3 * small.X))
    data = sg.random_data(3, 4, 7, seed=5)
    cs = _opt(data)
    kind = np.where(np.arange(cs.N) % 4 == 0, sg.EQUALITY, sg.MARGIN)
    rhs = np.where(kind == sg.EQUALITY, 0.3, 1.0)
    out["equality(3,4,7)"] = sg.pair_constraints(
        data, cs.seq, cs.query, cs.pref, cs.comp, kind=kind, rhs=rhs
    )
    for n, T, d, s in [(10, 10, 20, 0), (6, 5, 8, 1)]:
        data = sg.random_data(n, T, d, seed=s)
        cs = _opt(data)
        out[f"infeasible{(n, T, d)}s{s}"] = sg.pair_constraints(
            data,
            np.r_[cs.seq, cs.seq[0]],
            np.r_[cs.query, cs.query[0]],
            np.r_[cs.pref, cs.comp[0]],
            np.r_[cs.comp, cs.pref[0]],
        )
    out["small_d(6,8,3)s0"] = _opt(sg.random_data(6, 8, 3, seed=0))
    kwargs: list[dict[str, Any]] = [{}, {"query": 0}, {"n_queries": 2}]
    for (n, T, d), kw, s in itertools.product(SWEEP if sweep else [], kwargs, range(3)):
        out[f"sweep{(n, T, d)}{kw or ''}s{100 + s}"] = _opt(
            sg.random_data(n, T, d, seed=100 + s, **kw)
        )
    return out


def dump(sweep: bool = False) -> dict[str, dict[str, Any]]:
    """Solve every instance; the figures compared."""
    res: dict[str, dict[str, Any]] = {}
    for name, cs in instances(sweep).items():
        cpu = time.process_time()
        r = solve_nuclear(cs)
        cpu = time.process_time() - cpu
        entry: dict[str, Any] = {
            "status": r.status.value,
            "solver": r.solver,
            "objective": r.objective,
            "W": r.W,
            "farkas": r.farkas is not None,
            "gap": r.certificate.duality_gap if r.certificate else None,
            "passed": r.certificate.passed if r.certificate else None,
            "cpu": cpu,
        }
        if not name.startswith(("equality", "infeasible", "small_d", "sweep")):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                a = sg.att_svm(cs.tokens, norm="nuc")
            entry["att_status"], entry["att_objective"] = a.status.value, a.objective
        res[name] = entry
    return res


def _relative(x: float | None, y: float | None) -> float:
    if x is None or y is None:
        return 0.0 if x is None and y is None else float("inf")
    return abs(x - y) / max(abs(x), 1e-300)


def compare(base: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> int:
    """Print one row per instance; return the number of mismatches."""
    print(
        f"{'instance':42s} {'status':22s} {'solver (new)':16s} {'obj diff':>9s} {'W diff':>9s} "
        f"{'gap new':>9s} {'CPU base':>8s} {'CPU new':>8s}"
    )
    bad = 0
    for name, x in base.items():
        if name not in new:
            continue
        y = new[name]
        obj = max(
            _relative(x["objective"], y["objective"]),
            _relative(x.get("att_objective"), y.get("att_objective")),
        )
        W = 0.0
        if x["W"] is not None and y["W"] is not None and np.abs(x["W"]).max() > 0:
            W = float(np.abs(x["W"] - y["W"]).max() / np.abs(x["W"]).max())
        gap_ok = y["gap"] is None or (y["passed"] and y["gap"] <= 1e-9)
        same = x["status"] == y["status"] and x.get("att_status") == y.get("att_status")
        ok = same and obj <= 1e-8 and gap_ok and x["farkas"] == y["farkas"]
        bad += not ok
        gap = float("nan") if y["gap"] is None else y["gap"]
        print(
            f"{name:42s} {y['status']:22s} {y['solver']:16s} {obj:9.1e} {W:9.1e} {gap:9.1e} "
            f"{x['cpu']:8.3f} {y['cpu']:8.3f}{'' if ok else '  MISMATCH'}"
        )
    print(f"mismatches: {bad} of {len(base)}")
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", required=True, help="write this version's figures here")
    parser.add_argument("--against", help="figures of the other version to compare with")
    parser.add_argument("--sweep", action="store_true", help="add the 63 random instances")
    args = parser.parse_args()
    res = dump(args.sweep)
    with open(args.dump, "wb") as f:
        pickle.dump(res, f)
    if args.against:
        with open(args.against, "rb") as f:
            base = pickle.load(f)
        raise SystemExit(1 if compare(base, res) else 0)


if __name__ == "__main__":
    main()
