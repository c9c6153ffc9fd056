# SPDX-License-Identifier: BSD-3-Clause
r"""The details of the ``global`` experiment in docs/experiments.md that its headline does not
print, and its two other (K, Q) protocols.

For each (param, start, steps, d) group of ``global`` trials (:func:`global_.trial`; the
percentages are :func:`global_.summarize`'s), beside % reached (corr ≥ 0.99), % norm within
1 % (norm ratio ≤ 1.01) and % selecting opt:

* of the runs that select opt, how many are within 1 %, and their median norm ratio;
* of the runs within 1 %, how many have corr < 0.99 with the returned :math:`W^{mm}`, and the
  lowest corr among them;
* the median final corr (feasible runs).

Three sources of trials:

``details TABLE``
    the table of the full run (``svmgeo reproduce global --out DIR`` writes ``DIR/global.csv``;
    seconds);
``first --out DIR``
    the first (K, Q) protocol: start of scale 0.01, 20 000 steps, the full grid's d, seeds
    0-99 (900 trials);
``speed --out DIR``
    the current (K, Q) start (0.1) after 20 000 and after 80 000 steps, seeds 0-19,
    d ∈ {4, 10, 30} (120 trials).

``first`` and ``speed`` run through the sweep runner (``DIR/global_first.csv``,
``DIR/global_speed.csv``; resumable) and print the same table.

    OPENBLAS_NUM_THREADS=1 python benchmarks/global_details.py details /tmp/g/global.csv
    OPENBLAS_NUM_THREADS=1 python benchmarks/global_details.py first --out /tmp/g
    OPENBLAS_NUM_THREADS=1 python benchmarks/global_details.py speed --out /tmp/g
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import svmgeo as sg
from svmgeo.experiments import global_

Row = dict[str, Any]
WITHIN = 1.01
"""The norm ratio of "% norm within 1%" (``global_.summarize``)."""


def first_protocol() -> list[Row]:
    """(K, Q) from a start of scale 0.01, 20 000 steps, every d of the full grid, seeds 0-99."""
    return [
        p | {"n_steps": 20_000, "init_scale": 0.01}
        for p in global_.grid(quick=False)
        if p["param"] == "KQ"
    ]


def speed_protocol() -> list[Row]:
    """(K, Q) from the current start after 20 000 and 80 000 steps, seeds 0-19, d 4, 10, 30."""
    return [
        p | {"n_steps": n_steps}
        for n_steps in (20_000, 80_000)
        for p in global_.grid(quick=False)
        if p["param"] == "KQ" and p["d"] in (4, 10, 30) and p["seed"] < 20
    ]


PROTOCOLS = {"first": first_protocol, "speed": speed_protocol}


def _within(r: Row) -> bool:
    return r["norm_ratio"] is not None and r["norm_ratio"] <= WITHIN


def table(rows: list[Row]) -> list[str]:
    """The markdown table, header first: one line per (param, start, steps, d) of the GD rows."""
    out = [
        "| param | start | steps | d | trials | feasible | % reached | % norm within 1% "
        "| % selecting opt | selecting opt: within 1% | median norm ratio (selecting opt) "
        "| within 1%: corr < 0.99 | lowest corr (within 1%) | median corr |",
        "|---" * 14 + "|",
    ]
    protocols: dict[tuple[Any, ...], list[Row]] = {}
    for r in rows:
        if r["status"] == "ok" and r["param"] != "none":
            protocols.setdefault((r["param"], r["init_scale"], r["n_steps"]), []).append(r)
    for (param, start, n_steps), part in sorted(protocols.items()):
        _, summary = global_.summarize(part)
        for s in summary:
            g = [r for r in part if r["d"] == s["d"]]
            opt = [r for r in g if r["feasible"] and r["selects_opt"]]
            within = [r for r in g if _within(r)]
            low = [r for r in within if r["corr"] < global_.GLOBAL_THRESHOLD]
            lowest = min((r["corr"] for r in within), default=float("nan"))
            out.append(
                f"| {param} | {'zero' if param == 'W' else start} | {n_steps} | {s['d']} "
                f"| {s['trials']} | {s['feasible']} | {s['pct_reached']:.0f} "
                f"| {s['pct_norm_within_1pct']:.0f} | {s['pct_selects_opt']:.0f} "
                f"| {sum(map(_within, opt))}/{len(opt)} | {s['median_norm_ratio_opt']:.4f} "
                f"| {len(low)}/{len(within)} | {lowest:.4f} | {s['median_corr']:.4f} |"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    details = sub.add_parser("details", help="read the table of a full `global` run")
    details.add_argument("table", type=Path, help="DIR/global.csv of `svmgeo reproduce global`")
    for name in PROTOCOLS:
        run = sub.add_parser(name, help=PROTOCOLS[name].__doc__)
        run.add_argument("--out", type=Path, required=True, help="directory of the sweep table")
        run.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    if args.what == "details":
        rows = sg.read_results(args.table)
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        result = sg.sweep(
            global_.trial,
            PROTOCOLS[args.what](),
            out=args.out / f"global_{args.what}.csv",
            workers=args.workers,
            progress=False,
        )
        rows = result.rows
        print(f"{result.n_trials} trials ({result.n_run} run now, {result.elapsed:.0f} s), "
              f"{result.n_errors} errors")  # fmt: skip
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
