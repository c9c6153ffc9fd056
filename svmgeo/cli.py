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

from .analysis import locally_optimal_selections
from .data import TokenData, load_data, random_data
from .gd import train
from .selection import optimal_tokens
from .solvers import att_svm, feasibility
from .verify import verify

__all__ = ["add_sweep_arguments", "main", "sweep_options"]


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


def _cmd_lots(args: argparse.Namespace) -> int:
    data = _load(args)
    res = locally_optimal_selections(
        data, norm=args.norm, max_selections=args.max_selections, progress=not args.json
    )
    opt = optimal_tokens(data, ties="first")
    summary: dict[str, Any] = {
        "data": repr(data),
        "selections_total": res.total,
        "examined": res.examined,
        "pruned": res.pruned,
        "infeasible": res.infeasible,
        "undecided": res.undecided,
        "n_lots": len(res.selections),
        "lots": [
            {
                "selection": ",".join(str(int(t)) for t in np.ravel(a)),
                "optimal": bool(np.array_equal(a, opt)),
            }
            for a in res.selections
        ],
    }
    _emit(summary, args.json)
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    data = _load(args)
    run = train(data, normalized=not args.plain, **_gd_options(args))
    W = run.W
    summary: dict[str, Any] = {
        "data": repr(data),
        "param": args.param,
        "status": str(run.status),
        "message": run.message,
        "steps": run.n_steps,
        "seconds": run.seconds,
        "norm_W": float(np.linalg.norm(W)),
    }
    if run.history.loss is not None:
        summary["final_loss"] = float(run.history.loss[-1])
    if run.history.selected is not None:
        summary["selection"] = ",".join(str(int(t)) for t in np.ravel(run.history.selected[-1]))
    if args.save:
        np.savez(args.save, W=W)
        summary["saved"] = args.save
    _emit(summary, args.json)
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    data = _load(args)
    report = verify(data, **_gd_options(args))
    if args.json:
        print(report.to_json())
    else:
        print(report)
    if args.figure:
        from .plot import plot_verify

        path = plot_verify(report, args.figure)
        if not args.json:
            print(f"figure written to {path}")
    return 0


def _add_train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--param", choices=("W", "KQ"), default="W", help="W or the factors (K, Q)")
    p.add_argument("--m", type=int, default=None, help="width of K and Q (default d)")
    p.add_argument("--loss", choices=("logistic", "exponential", "correlation"), default="logistic")
    p.add_argument("--step-size", type=float, default=0.1)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--backend", choices=("numba", "numpy", "cupy"), default="numba")
    p.add_argument(
        "--init-scale",
        type=float,
        default=None,
        help="start from seeded random weights of this scale (default: W = 0 for --param W, "
        "scale 0.1 for --param KQ, whose zero start is stationary)",
    )


def _gd_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options that ``train`` and ``verify`` share, from the command line."""
    scale = args.init_scale if args.init_scale is not None else (0.1 if args.param == "KQ" else 0.0)
    return {
        "param": args.param,
        "m": args.m,
        "loss": args.loss,
        "step_size": args.step_size,
        "n_steps": args.steps,
        "init": ("random", scale) if scale > 0 else "zero",
        "backend": args.backend,
        "seed": args.seed,
    }


def add_sweep_arguments(
    parser: argparse.ArgumentParser,
    *,
    default_out: str | None = None,
    out_help: str = "results CSV (appended; resumable)",
    retry_errors: bool = True,
) -> None:
    """Add the sweep options (``--out``, ``--workers``, ``--scheduler``, ...) to a parser.

    Pair with :func:`sweep_options`, which turns the parsed namespace into keyword arguments
    of :func:`svmgeo.sweep`. ``retry_errors=False`` leaves out ``--retry-errors``.
    """
    g = parser.add_argument_group("sweep execution")
    g.add_argument("--out", default=default_out, help=out_help)
    g.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local worker processes (default: all cores; 0: in this process)",
    )
    g.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run on a Dask cluster, e.g. tcp://10.0.0.5:8786 (see docs/sweeps.md)",
    )
    g.add_argument("--no-resume", action="store_true", help="recompute trials already in the table")
    if retry_errors:
        g.add_argument("--retry-errors", action="store_true", help="rerun trials stored as errors")
    g.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def sweep_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of :func:`svmgeo.sweep` from options added by :func:`add_sweep_arguments`."""
    return {
        "out": args.out,
        "workers": args.workers,
        "scheduler": args.scheduler,
        "resume": not args.no_resume,
        "retry_errors": getattr(args, "retry_errors", False),
        "progress": not args.no_progress,
    }


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .experiments import list_experiments, reproduce

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
    options = sweep_options(args)
    del options["retry_errors"]  # not an option of reproduce
    result = reproduce(args.name, quick=args.quick, **options)
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
    p = sub.add_parser("lots", help="enumerate every locally optimal token selection, exactly")
    _add_data_arguments(p)
    p.add_argument("--norm", choices=("fro", "nuc"), default="fro")
    p.add_argument("--max-selections", type=int, default=10**6)
    p.set_defaults(func=_cmd_lots)
    p = sub.add_parser("train", help="gradient descent on the attention weights")
    _add_data_arguments(p)
    _add_train_arguments(p)
    p.add_argument("--plain", action="store_true", help="plain (unnormalized) gradient steps")
    p.add_argument("--save", metavar="FILE", help="write the final W to an .npz file")
    p.set_defaults(func=_cmd_train)
    p = sub.add_parser("verify", help="run GD and the SVMs; does GD do what the theory predicts?")
    _add_data_arguments(p)
    _add_train_arguments(p)
    p.add_argument("--figure", metavar="FILE", help="write a figure (PNG/PDF) of the report")
    p.set_defaults(func=_cmd_verify)
    p = sub.add_parser("reproduce", help="run one of the paper's experiments (--list names them)")
    p.add_argument("name", nargs="?", default=None, help="experiment name (see --list)")
    p.add_argument("--list", action="store_true", help="print the experiment names and exit")
    p.add_argument("--quick", action="store_true", help="reduced size (seconds; for CI)")
    add_sweep_arguments(
        p,
        default_out="svmgeo-results",
        out_help="output directory for tables/figures (created if missing)",
        retry_errors=False,
    )
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
