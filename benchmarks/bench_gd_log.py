# SPDX-License-Identifier: BSD-3-Clause
"""Benchmark of log-domain normalized GD (issue 6): how close GD gets to the max-margin
direction, and how fast; it prints the tables of docs/gd.md and, with ``--check``, verifies them.

For every seed of the list (default 0-7, all of them reported) of random (n, T, d) = (6, 8, 10)
instances (score gap 0.05, d >= max(T - 1, n)) it runs normalized GD (step 0.1, from zero, numba
backend, 200 000 steps) and prints one Markdown row: the optimal tokens' verdict on GD's final
selection (``opt``, or the selection and whether it is a locally optimal one), the step from
which GD's argmax stays at that selection (recorded every 100 steps), 1 - corr(W(t), W^mm_a)
against the Att-SVM of GD's own selection a at t = 1k, 2k, 4k, ..., 128k, 200k, the step where
the direct gradient underflows, and the wall time. Then (K, Q) on seed 2: 1 - corr(KQ^T,
W^mm_*) (nuclear) and against W^mm_F, the rescaled nuclear norm and the smallest singular value.

``--check`` recomputes a reduced version (64k W steps, 16k (K, Q) steps unless given) and
compares it with the tables of docs/gd.md (each sits under a ``<!-- bench_gd_log: ... -->``
marker): every documented cell of the recomputed columns (to 3 %), GD's selection, the step it
settles at and the underflow step (to one record, 100 steps), the 1/t^2 rate over the last two
doublings, and the textbook contrast. It exits 1 on any mismatch. Wall times are not checked (machine-dependent); the columns beyond
the reduced steps are checked only by a full run (``--check --n-steps 200000 --kq-steps 200000``).

Run:  PYTHONPATH=. python benchmarks/bench_gd_log.py [--seeds 0 1 2] [--n-steps 200000]
      [--kq-steps 200000] [--textbook] [--figure docs/figures/gd_log.png] [--check]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import svmgeo as sg
from svmgeo.plot import pyplot

DOC = Path(__file__).resolve().parent.parent / "docs" / "gd.md"
CHECKPOINTS = [1000 * 2**k for k in range(8)]
SHAPE = (6, 8, 10)
RECORD_EVERY = 100
CHECK_RTOL = 0.03  # a documented 2-digit value must agree with the recomputed one to 3 %
TEXTBOOK_STEPS = 8000
SELECTION = "GD's selection"
# documented steps (settling, underflow) may move by one record on another CPU's rounding
STEP_SLACK = RECORD_EVERY


@dataclass
class WRow:
    """One seed of the W table."""

    seed: int
    verdict: str  # "opt", or "LOT [..]" / "not a LOT [..]"
    settled: int  # first recorded step from which GD's argmax equals its final selection
    gaps: dict[int, float]  # step -> 1 - corr(W(t), W^mm of GD's selection)
    underflow: int | None  # first recorded step with grad norm exactly 0
    seconds: float
    textbook: dict[int, float] = field(default_factory=dict)


def w_mm(data: sg.TokenData, alpha: np.ndarray, norm: str) -> np.ndarray:
    res = sg.att_svm(data, alpha, norm=norm)  # type: ignore[arg-type]
    if not res.success or res.W is None:
        raise RuntimeError(f"Att-SVM solve failed: {res.status}: {res.message}")
    return res.W


def checkpoints(n_steps: int) -> list[int]:
    return sorted({t for t in CHECKPOINTS if t <= n_steps} | {n_steps})


def recorded(run: sg.GDRun, name: str) -> np.ndarray:
    """A recorded history field; an error if the run did not record it."""
    values = getattr(run.history, name)
    if values is None:
        raise RuntimeError(f"the run did not record {name!r}; add it to record=")
    return np.asarray(values)


def curve(run: sg.GDRun, target: np.ndarray, n_steps: int) -> dict[int, float]:
    steps = run.history.step
    out = {}
    for t in checkpoints(n_steps):
        r = int(np.searchsorted(steps, t))
        out[int(steps[r])] = 1.0 - sg.correlation(recorded(run, "W")[r], target)
    return out


def textbook_run(data: sg.TokenData, n_steps: int, step_size: float = 0.1) -> dict[int, np.ndarray]:
    """Normalized GD with the textbook gradient X^T (diag s - s s^T) gamma z^T (numpy), the
    formula that cancels catastrophically once the softmax saturates; W every 1000 steps."""
    X, Z, Y, v = (np.asarray(a) for a in (data.X, data.Z, data.Y, data.v))
    gamma = Y[:, None] * (X @ v)
    W = np.zeros((data.d, data.d))
    out = {}
    for t in range(1, n_steps + 1):
        a = np.einsum("ntd,de,ne->nt", X, W, Z)
        s = np.exp(a - a.max(axis=1, keepdims=True))
        s /= s.sum(axis=1, keepdims=True)
        dl = -1.0 / (1.0 + np.exp(np.sum(gamma * s, axis=1)))  # logistic l'
        inner = s * gamma - s * np.sum(s * gamma, axis=1, keepdims=True)  # (diag s - ss^T) gamma
        G = np.einsum("n,ntd,nt,ne->de", dl, X, inner, Z) / data.n
        norm = np.linalg.norm(G)
        if norm == 0.0:
            break
        W = W - step_size * G / norm
        if t % 1000 == 0:
            out[t] = W.copy()
    return out


def run_w(seed: int, n_steps: int, textbook: bool) -> tuple[WRow, sg.GDRun, np.ndarray]:
    """Normalized GD on W for one seed; the row of the W table, the run and its W^mm target."""
    data = sg.random_data(*SHAPE, seed=seed, score_gap=0.05)
    opt = sg.optimal_tokens(data)
    start = time.perf_counter()
    run = sg.train(
        data, n_steps=n_steps, step_size=0.1, record_every=RECORD_EVERY,
        record=("W", "selected", "grad_norm"),
    )  # fmt: skip
    seconds = time.perf_counter() - start
    selected = recorded(run, "selected")  # (records, n): one query per sequence
    final = selected[-1]
    moved = np.flatnonzero(np.any(selected != final, axis=1))
    settled = int(run.history.step[moved[-1] + 1]) if moved.size else 0
    if np.array_equal(final, opt):
        verdict = "opt"
    else:
        lot = sg.is_locally_optimal(data, final)
        verdict = f"{'LOT' if lot else 'not a LOT'} {final.tolist()}"
    target = w_mm(data, final, "fro")  # Att-SVM of the selection GD converged to
    under = np.flatnonzero(recorded(run, "grad_norm") == 0.0)
    row = WRow(
        seed=seed, verdict=verdict, settled=settled, gaps=curve(run, target, n_steps),
        underflow=int(run.history.step[under[0]]) if under.size else None, seconds=seconds,
    )  # fmt: skip
    if textbook:
        row.textbook = {
            t: 1.0 - sg.correlation(W, target)
            for t, W in textbook_run(data, TEXTBOOK_STEPS).items()
        }
    return row, run, target


def fmt(x: float) -> str:
    """2 significant digits, exponent without padding: 3.5e-3."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def steps_label(t: int) -> str:
    return f"{t // 1000}k" if t % 1000 == 0 else str(t)


def w_table(rows: list[WRow], n_steps: int) -> str:
    cols = checkpoints(n_steps)
    head = ["seed", SELECTION, "settled from step"]
    head += [steps_label(t) for t in cols] + ["∇L exactly 0 from", "time"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        under = f"step {r.underflow}" if r.underflow is not None else "never"
        cells = [str(r.seed), r.verdict, str(r.settled)] + [fmt(r.gaps[t]) for t in cols]
        lines.append("| " + " | ".join([*cells, under, f"{r.seconds:.1f} s"]) + " |")
    return "\n".join(lines)


@dataclass
class KQRow:
    gaps_nuc: dict[int, float]
    gaps_fro: dict[int, float]
    nuc_excess: dict[int, float]  # ||W/min margin||_* / ||W^mm_*||_* - 1
    sigma_min: dict[int, float]  # smallest of the top-r singular values of W/||W||_F
    sigma_min_mm: float  # the same for W^mm_*, r = rank W^mm_*
    status: str
    seconds: float
    log_grad_norm: float  # log ||grad L|| at the last step


def run_kq(seed: int, n_steps: int) -> tuple[KQRow, sg.GDRun, np.ndarray, np.ndarray]:
    data = sg.random_data(*SHAPE, seed=seed, score_gap=0.05)
    alpha = sg.optimal_tokens(data)
    nuc, fro = w_mm(data, alpha, "nuc"), w_mm(data, alpha, "fro")
    cs = sg.att_svm_constraints(data, alpha)
    s_mm = np.linalg.svd(nuc / np.linalg.norm(nuc), compute_uv=False)
    rank = int(np.sum(s_mm > 1e-6 * s_mm[0]))
    start = time.perf_counter()
    run = sg.train(
        data, param="KQ", init=("random", 0.01), seed=0, n_steps=n_steps, step_size=0.02,
        record_every=500, record=("W", "grad_norm"),
    )  # fmt: skip
    seconds = time.perf_counter() - start
    excess: dict[int, float] = {}
    sigma: dict[int, float] = {}
    for t in checkpoints(n_steps):
        W = recorded(run, "W")[int(np.searchsorted(run.history.step, t))]
        margin = float(np.min(cs.apply(W)))
        if margin > 0:
            excess[t] = float(np.linalg.norm(W / margin, "nuc") / np.linalg.norm(nuc, "nuc") - 1.0)
        else:
            excess[t] = np.inf
        sigma[t] = float(np.linalg.svd(W / np.linalg.norm(W), compute_uv=False)[rank - 1])
    row = KQRow(
        gaps_nuc=curve(run, nuc, n_steps), gaps_fro=curve(run, fro, n_steps), nuc_excess=excess,
        sigma_min=sigma, sigma_min_mm=float(s_mm[rank - 1]), status=run.status.value,
        seconds=seconds, log_grad_norm=float(recorded(run, "log_grad_norm")[-1]),
    )  # fmt: skip
    return row, run, nuc, fro


def kq_table(seed: int, row: KQRow, n_steps: int) -> str:
    cols = checkpoints(n_steps)
    head = [f"seed {seed}"] + [steps_label(t) for t in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for label, values, f in (
        ("vs W^mm_⋆", row.gaps_nuc, fmt),
        ("vs W^mm_F", row.gaps_fro, fmt),
        ("‖W/min margin‖_* / ‖W^mm_⋆‖_* − 1", row.nuc_excess, fmt),
        ("σ_r(W/‖W‖_F)", row.sigma_min, lambda x: f"{x:.3f}"),
    ):
        lines.append("| " + " | ".join([label] + [f(values[t]) for t in cols]) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- --check
def doc_table(text: str, name: str) -> list[list[str]]:
    """Rows (cells) of the Markdown table under ``<!-- bench_gd_log: name -->`` in docs/gd.md."""
    marker = f"<!-- bench_gd_log: {name} -->"
    if marker not in text:
        raise SystemExit(f"{DOC}: no table marked {marker!r}; restore the marker above the table")
    lines = text.split(marker, 1)[1].lstrip("\n").splitlines()
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return [rows[0], *rows[2:]]  # header, then the body without the --- line


def agree(documented: str, value: float) -> bool:
    if documented == fmt(value) or documented == f"{value:.3f}":
        return True
    try:
        d = float(documented)
    except ValueError:
        return False
    return bool(np.isfinite(value)) and abs(value - d) <= CHECK_RTOL * abs(d)


def check_w(text: str, rows: list[WRow], n_steps: int) -> list[str]:
    header, *body = doc_table(text, "W")
    documented = {int(r[0]): dict(zip(header, r, strict=True)) for r in body}
    errors = []
    missing = sorted(set(documented) - {r.seed for r in rows})
    if missing:
        errors.append(f"W table: seeds {missing} are documented but were not run")
    for r in rows:
        doc = documented.get(r.seed)
        if doc is None:
            errors.append(f"W table: seed {r.seed} was run but is not in the table")
            continue
        if doc[SELECTION] != r.verdict:
            errors.append(f"seed {r.seed}: selection {r.verdict!r}, docs {doc[SELECTION]!r}")
        if abs(int(doc["settled from step"]) - r.settled) > STEP_SLACK:
            errors.append(
                f"seed {r.seed}: settles at step {r.settled}, docs {doc['settled from step']}"
            )
        for t, g in r.gaps.items():
            cell = doc.get(steps_label(t))
            if cell is not None and not agree(cell, g):
                errors.append(
                    f"seed {r.seed}: 1 - corr at {steps_label(t)} is {fmt(g)}, docs {cell}"
                )
        under = doc["∇L exactly 0 from"]
        doc_under = int(re.sub(r"\D", "", under) or 0)  # 0 for "never"
        if r.underflow is not None and abs(doc_under - r.underflow) > STEP_SLACK:
            errors.append(
                f"seed {r.seed}: gradient exactly 0 from step {r.underflow}, docs {under}"
            )
        if r.underflow is None and doc_under and n_steps >= doc_under:
            errors.append(
                f"seed {r.seed}: gradient never exactly 0 in {n_steps} steps, docs {under}"
            )
        # "1 - corr falls like 1/t^2": the last two doublings divide it by 4^2 = 16 (-50 %, +50 %)
        ts = [t for t in CHECKPOINTS if t <= n_steps][-3:]
        drop = r.gaps[ts[0]] / r.gaps[ts[-1]]
        if not 8.0 <= drop <= 24.0:
            errors.append(
                f"seed {r.seed}: 1 - corr fell {drop:.1f}x from {ts[0]} to {ts[-1]}, not ~16x (1/t^2)"
            )
        if (
            r.textbook
        ):  # the contrast: the textbook direction drifts away once the softmax saturates
            tb = r.textbook
            if not (
                tb[TEXTBOOK_STEPS] > tb[TEXTBOOK_STEPS // 2]
                and tb[TEXTBOOK_STEPS] > 10 * r.gaps[TEXTBOOK_STEPS]
            ):
                errors.append(
                    f"seed {r.seed}: the textbook formula did not drift away (1 - corr at 4k, 8k: "
                    f"{fmt(tb[TEXTBOOK_STEPS // 2])}, {fmt(tb[TEXTBOOK_STEPS])}; log domain {fmt(r.gaps[TEXTBOOK_STEPS])})"
                )
    return errors


def check_kq(text: str, seed: int, row: KQRow) -> list[str]:
    header, *body = doc_table(text, "KQ")
    if header[0] != f"seed {seed}":
        return [f"KQ table is for {header[0]!r}, the check ran seed {seed}"]
    errors = []
    for cells, values in zip(
        body, (row.gaps_nuc, row.gaps_fro, row.nuc_excess, row.sigma_min), strict=True
    ):
        doc = dict(zip(header[1:], cells[1:], strict=True))
        for t, x in values.items():
            cell = doc.get(steps_label(t), "")
            if cell and not agree(cell, x):
                errors.append(f"KQ {cells[0]} at {steps_label(t)}: {x:.3g}, docs {cell}")
    if not all(row.gaps_nuc[t] < row.gaps_fro[t] for t in row.gaps_nuc):
        errors.append("KQ: KQ^T is not closer to W^mm_* than to W^mm_F at every checkpoint")
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(8)))
    parser.add_argument("--n-steps", type=int, help="W steps (default 200000; 64000 with --check)")
    parser.add_argument(
        "--kq-steps", type=int, help="(K, Q) steps (default 20000; 16000 with --check)"
    )
    parser.add_argument("--kq-seed", type=int, default=2, help="seed of the (K, Q) run and figure")
    parser.add_argument("--textbook", action="store_true", help="also run the textbook formula")
    parser.add_argument("--figure", help="write a log-log figure of the --kq-seed curves")
    parser.add_argument(
        "--check", action="store_true", help="compare with docs/gd.md; exit 1 if off"
    )
    args = parser.parse_args()
    n = args.n_steps or (64_000 if args.check else 200_000)
    kq_steps = args.kq_steps or (16_000 if args.check else 20_000)
    sg.train(sg.random_data(*SHAPE, seed=0), n_steps=10)  # compile outside the timings
    sg.train(sg.random_data(*SHAPE, seed=0), param="KQ", init=("random", 0.01), n_steps=10)

    print(
        f"== W: 1 - corr(W(t), W^mm of GD's selection), normalized GD, step 0.1, from zero, {n} steps =="
    )
    results = [run_w(seed, n, args.textbook or args.check) for seed in args.seeds]
    rows = [r for r, _, _ in results]
    print(w_table(rows, n))
    for r in rows:
        if r.textbook:
            print(
                f"seed {r.seed}, textbook formula: "
                + "  ".join(f"{steps_label(t)}:{fmt(g)}" for t, g in r.textbook.items())
            )
    final = [r.gaps[n] for r in rows]
    print(
        f"1 - corr at {steps_label(n)}: {fmt(min(final))} to {fmt(max(final))} over seeds {args.seeds}"
    )

    seed = args.kq_seed
    print(f"== (K, Q), m = d, seed {seed}: init ('random', 0.01), step 0.02, {kq_steps} steps ==")
    kq, kq_run, nuc, fro = run_kq(seed, kq_steps)
    print(kq_table(seed, kq, kq_steps))
    print(
        f"status {kq.status}, {kq.seconds:.1f} s; log ||grad L|| at the end {kq.log_grad_norm:.3g}; "
        f"σ_r(W^mm_⋆/‖W^mm_⋆‖_F) = {kq.sigma_min_mm:.3f}"
    )

    if args.figure:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
        _, run, target = next(r for r in results if r[0].seed == seed)
        for label, (steps, gap) in {
            "W vs Frobenius W^mm": gap_curve(run, target),
            "KQ^T vs nuclear W^mm*": gap_curve(kq_run, nuc),
            "KQ^T vs Frobenius W^mm": gap_curve(kq_run, fro),
        }.items():
            keep = steps > 0
            ax.loglog(steps[keep], np.maximum(gap[keep], 1e-16), label=label)
        ax.axhline(1e-6, color="gray", lw=0.8, ls=":")
        ax.set_xlabel("normalized GD step")
        ax.set_ylabel("1 - correlation")
        ax.set_title(f"(6, 8, 10), seed {seed}: log-domain normalized GD")
        ax.legend(fontsize=8)
        fig.savefig(args.figure, dpi=110)
        print(f"figure written to {args.figure}")

    if args.check:
        text = DOC.read_text(encoding="utf-8")
        errors = check_w(text, rows, n) + check_kq(text, seed, kq)
        for e in errors:
            print("MISMATCH", e)
        print(
            f"--check: {len(errors)} mismatch(es) with {DOC.name} ({n} W steps, {kq_steps} (K, Q) steps)"
        )
        sys.exit(1 if errors else 0)


def gap_curve(run: sg.GDRun, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Steps and 1 - corr(W(t), target) over the whole recorded history."""
    steps = np.asarray(run.history.step)
    gap = np.array([1.0 - sg.correlation(W, target) for W in recorded(run, "W")])
    return steps, gap


if __name__ == "__main__":
    main()
