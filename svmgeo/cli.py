# SPDX-License-Identifier: BSD-3-Clause
"""The ``svmgeo`` command line.

``svmgeo solve`` and ``svmgeo feasibility`` work on an ``.npz`` dataset (see
:func:`svmgeo.save_data`) or on the built-in random generator. Output is a readable summary, or
JSON with ``--json``. ``svmgeo reproduce NAME [--quick] --out DIR`` runs one of the paper's
experiments (``--list`` names them).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from .data import TokenData, load_data, random_data
from .selection import optimal_tokens
from .solvers import att_svm, feasibility

__all__ = ["main"]


def _add_data_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("data (an .npz file, or the built-in generator)")
    g.add_argument("--data", metavar="FILE", help="dataset written by svmgeo.save_data")
    g.add_argument("--n", type=int, default=20, help="sequences (generator; default 20)")
    g.add_argument("--T", type=int, default=10, help="tokens per sequence (default 10)")
    g.add_argument("--d", type=int, default=20, help="feature dimension (default 20)")
    g.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    g.add_argument(
        "--query",
        default=None,
        help="self-attention query position, or 'all' (default: cross-attention)",
    )
    g.add_argument("--causal", action="store_true", help="causal mask (needs --query all)")
    p.add_argument(
        "--alpha",
        default=None,
        help="comma-separated selection (one token per sequence); default: optimal tokens",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a summary")


def _load(args: argparse.Namespace) -> TokenData:
    if args.data:
        return load_data(args.data)
    query: Any = args.query
    if query is not None and query != "all":
        query = int(query)
    return random_data(
        args.n, args.T, args.d, seed=args.seed, query=query, mask="causal" if args.causal else None
    )


def _alpha(args: argparse.Namespace, data: TokenData) -> np.ndarray:
    if args.alpha is None:
        return optimal_tokens(data)
    return np.array([int(a) for a in args.alpha.split(",")]).reshape(data.selection_shape)


def _cmd_solve(args: argparse.Namespace) -> int:
    data = _load(args)
    alpha = _alpha(args, data)
    res = att_svm(data, alpha, norm=args.norm, rank=args.rank)
    W = res.W
    summary: dict[str, Any] = {
        "data": repr(data),
        "norm": res.norm,
        "rank_bound": res.rank,
        "status": str(res.status),
        "message": res.message,
        "objective": res.objective,
        "solver": res.solver,
        "solve_time_s": res.solve_time,
    }
    if W is not None:
        s = np.linalg.svd(W, compute_uv=False)
        summary["numerical_rank"] = int(np.count_nonzero(s > 1e-6 * s[0])) if s[0] > 0 else 0
        summary["min_margin"] = (
            float(res.margins.min()) if res.margins is not None and res.margins.size else None
        )
        if res.dual is not None:
            summary["support_rows"] = int(
                np.count_nonzero(res.dual > 1e-9 * max(1.0, res.dual.max()))
            )
    if res.certificate is not None:
        summary["certificate"] = {
            "primal_infeasibility": res.certificate.primal_infeasibility,
            "dual_infeasibility": res.certificate.dual_infeasibility,
            "stationarity": res.certificate.stationarity,
            "complementarity": res.certificate.complementarity,
            "duality_gap": res.certificate.duality_gap,
            "passed": res.certificate.passed,
        }
    _emit(summary, args.json)
    return 0 if res.status.has_solution or res.status.is_infeasible else 1


def _cmd_feasibility(args: argparse.Namespace) -> int:
    data = _load(args)
    res = feasibility(data, _alpha(args, data))
    summary = {
        "data": repr(data),
        "feasible": res.feasible,
        "status": str(res.status),
        "message": res.message,
    }
    if res.certificate is not None:
        lam = res.certificate
        summary["certificate_rows"] = [
            {
                "sequence": int(res.constraints.seq[j]),
                "query": int(res.constraints.query[j]),
                "selected": int(res.constraints.pref[j]),
                "competing": int(res.constraints.comp[j]),
                "weight": float(lam[j]),
            }
            for j in np.flatnonzero(np.abs(lam) > 1e-12)
        ]
    _emit(summary, args.json)
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .experiments._paper import list_experiments, reproduce

    names = list_experiments()
    if args.list:
        print("\n".join(names))
        return 0
    if args.name is None:
        print(
            "svmgeo reproduce: give an experiment name or --list: " + ", ".join(names),
            file=sys.stderr,
        )
        return 2
    if args.name not in names:
        print(
            f"svmgeo reproduce: unknown experiment {args.name!r}; choose one of: "
            + ", ".join(names),
            file=sys.stderr,
        )
        return 2
    try:
        result = reproduce(
            args.name,
            quick=args.quick,
            out=args.out,
            scheduler=args.scheduler,
            workers=args.workers,
            progress=not args.no_progress,
            resume=not args.no_resume,
        )
    except ImportError as exc:  # matplotlib (the svmgeo[plot] extra) is missing
        print(f"svmgeo reproduce: {exc}", file=sys.stderr)
        return 2
    print(result)
    return 1 if result.n_errors else 0


def _emit(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2, default=float))
        return
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        if isinstance(value, dict):
            print(f"{key}:")
            for k2, v2 in value.items():
                print(
                    f"  {k2:<{width}} {v2:.3g}"
                    if isinstance(v2, float)
                    else f"  {k2:<{width}} {v2}"
                )
        elif isinstance(value, list):
            print(f"{key}: {len(value)} rows")
            for row in value[:10]:
                print(
                    "  "
                    + ", ".join(
                        f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in row.items()
                    )
                )
        elif isinstance(value, float):
            print(f"{key:<{width}} {value:.6g}")
        else:
            print(f"{key:<{width}} {value}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="svmgeo", description="Optimization geometry of attention (Att-SVM solvers and more)."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("solve", help="solve Att-SVM (Frobenius) or Att-SVM* (nuclear)")
    _add_data_arguments(p)
    p.add_argument("--norm", choices=("fro", "nuc"), default="fro")
    p.add_argument("--rank", type=int, default=None, help="rank bound m for --norm nuc")
    p.set_defaults(func=_cmd_solve)
    p = sub.add_parser("feasibility", help="decide feasibility exactly, with a certificate")
    _add_data_arguments(p)
    p.set_defaults(func=_cmd_feasibility)
    p = sub.add_parser("reproduce", help="run one of the paper's experiments (--list names them)")
    p.add_argument("name", nargs="?", default=None, help="experiment name (see --list)")
    p.add_argument("--list", action="store_true", help="print the experiment names and exit")
    p.add_argument("--quick", action="store_true", help="reduced size (seconds; for CI)")
    p.add_argument("--out", default="svmgeo-results", help="output directory for tables/figures")
    p.add_argument("--workers", type=int, default=None, help="local processes (0: in-process)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS", help="Dask scheduler address")
    p.add_argument("--no-resume", action="store_true", help="recompute trials already in the table")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=_cmd_reproduce)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``svmgeo`` command."""
    args = build_parser().parse_args(argv)
    from ._errors import SvmgeoError

    try:
        return int(args.func(args))
    except SvmgeoError as exc:
        print(f"svmgeo: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
