# SPDX-License-Identifier: BSD-3-Clause
r"""The atlas of correspondences: every (model, optimizer) → predicted SVM that svmgeo knows,
with its status and the measured evidence (issue #23; ``docs/atlas.md``, ``svmgeo atlas``).

.. math::

    \underbrace{\text{attention map} \times \text{parameterization} \times
    \text{optimizer}}_{\text{training side}} \;\longrightarrow\;
    \underbrace{(\text{norm}, \text{rows})}_{\text{predicted SVM}}

:data:`CORRESPONDENCES` is the source of truth for statuses and citations (a declarative
table); the evidence is computed when the page is generated, by the quick ``optimizers``
experiment (:mod:`svmgeo.experiments.optimizers`: fixed seeds, correlations rounded to three
decimals), so :func:`atlas_markdown` is deterministic and ``svmgeo atlas --check`` can tell
whether ``docs/atlas.md`` is current.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._errors import ProblemError
from ._validation import check_option

__all__ = [
    "ATLAS_TOLERANCE",
    "CORRESPONDENCES",
    "STATUSES",
    "Correspondence",
    "atlas_markdown",
    "evidence_rows",
    "page_differences",
]

#: How far a correlation of the evidence may move between machines: 2x the largest change
#: measured when X is perturbed by 1e-15 relative (two draws; (K, Q) spectral descent, seed 0:
#: 1.0e-2; (K, Q) GD 2.4e-4; every W run below 3e-6). Spectral descent on (K, Q) amplifies
#: round-off (which singular values are numerically zero decides the step), so different
#: BLAS / CPU builds give different third decimals there.
ATLAS_TOLERANCE = 0.02

#: The statuses of a correspondence.
STATUSES = ("theorem", "conjecture", "refuted", "open")

#: Rows of the softmax Att-SVM of a selection α, in the atlas's words.
_ATT_ROWS = "(x_iα_i − x_it)ᵀ W z_i ≥ 1, t ≠ α_i (α: the final selection)"
_QUICK = "svmgeo reproduce optimizers --quick"


@dataclass(frozen=True)
class Correspondence:
    """One correspondence: a trained model and the SVM the theory says its direction tends to.

    ``evidence`` names the runs of the ``optimizers`` experiment that measure it, as
    ``(param, optimizer label)`` pairs (empty: measured elsewhere, by ``command``);
    ``svm`` is the label of the predicted SVM among the experiment's ``SVMS`` (``None``: not
    among them, or no prediction).
    """

    attention: str
    param: str
    optimizer: str
    norm: str
    rows: str
    status: str
    where: str
    command: str
    svm: str | None = None
    evidence: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        check_option(self.status, "status", STATUSES, where="Correspondence")

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from ._summary import html_summary

        return html_summary(self)


#: Every correspondence svmgeo knows, with its status and where it is proved (the source of
#: truth of ``docs/atlas.md``).
CORRESPONDENCES: tuple[Correspondence, ...] = (
    Correspondence(
        "softmax",
        "W",
        "GD",
        "Frobenius",
        _ATT_ROWS,
        "conjecture",
        "from W = 0 (the evidence: normalized GD) a conjecture, measured. Proved only locally: "
        "Tarzanagh, Li, Thrampoulidis, Oymak 2023 (arXiv:2308.16898), Theorem 5, for plain GD "
        "with η ≤ 1/L_W started in the cone C_{μ,R} around W^mm_α of a LOT α, μ = μ(α), "
        "R = R(μ) (the row 'GD from the cone' below); Theorem 4 under its conditions on the "
        "initial gradient and the cone. Vasudeva, Deora, Thrampoulidis 2024 (arXiv:2402.05738) "
        "prove global convergence in data settings their abstract calls non-trivial; those "
        "settings are not stated here and not checked",
        _QUICK,
        "fro",
        (("W", "gd"),),
    ),
    Correspondence(
        "softmax",
        "(K, Q)",
        "GD (normalized)",
        "nuclear (Att-SVM⋆)",
        _ATT_ROWS,
        "conjecture",
        "arXiv:2308.16898: a theorem for the regularization path (Theorem 2); for GD a "
        "conjecture from its experiments",
        _QUICK,
        "nuc",
        (("KQ", "gd"),),
    ),
    Correspondence(
        "softmax",
        "W",
        "ℓp mirror descent",
        "entrywise ℓp",
        _ATT_ROWS,
        "conjecture",
        "Julistiono, Tarzanagh, Azizan 2024 (arXiv:2410.14581): the paper's main result as its "
        "abstract states it, for their ℓp-AttGD; hypotheses not stated here and not checked "
        "(not in the stored text: docs/beyond.md): treated as a conjecture, measured. The "
        "evidence runs normalized mirror steps from W = 0, not their algorithm; also "
        "`svmgeo reproduce mirror`",
        _QUICK,
        "l1.5",
        (("W", "mirror 1.5"),),
    ),
    Correspondence(
        "softmax",
        "W",
        "steepest descent, entrywise ℓq",
        "entrywise ℓq",
        _ATT_ROWS,
        "conjecture",
        "theorem for linear models (Gunasekar, Lee, Soudry, Srebro 2018, arXiv:1802.08246: "
        "separable data, the "
        "exponential loss, bounded steps; the margin converges and the direction tends to the "
        "optimal face); open for attention",
        _QUICK,
        "l1.5",
        (("W", "steepest 1.5"),),
    ),
    Correspondence(
        "softmax",
        "W",
        "sign descent",
        "entrywise ℓ∞",
        _ATT_ROWS,
        "conjecture",
        "theorem for multiclass linear models (Fan, Schmidt, Thrampoulidis 2025, "
        "arXiv:2502.04664: multiclass separable data, the cross-entropy loss, their step "
        "schedule; not checked here); open for attention",
        _QUICK,
        "linf",
        (("W", "sign"),),
    ),
    Correspondence(
        "softmax",
        "W",
        "Adam (ε = 1e-8 and ε = 0)",
        "entrywise ℓ∞",
        _ATT_ROWS,
        "conjecture",
        "theorem for multiclass linear models in the paper's setting (Fan, Schmidt, "
        "Thrampoulidis 2025, arXiv:2502.04664; as svmgeo reads it: a learning rate decaying "
        "polynomially in t and no ε, the scale-free rule; not checked here); open for "
        "attention. svmgeo's constant-η runs do not reach ℓ∞ (measured): after 30000 steps "
        "Adam's ℓ∞ correlation is 0.780-0.854 (ε = 1e-8 and ε = 0) against sign descent's 0.987-0.994, and the "
        "closest SVM is Frobenius or spectral on 7 of 8 runs (docs/optimizers.md, 'Adam with "
        "more steps', benchmarks/adam_limit.py)",
        _QUICK,
        "linf",
        (("W", "adam"), ("W", "adam eps=0")),
    ),
    Correspondence(
        "softmax",
        "W",
        "spectral descent, Muon (μ = 0.9)",
        "spectral",
        _ATT_ROWS,
        "conjecture",
        "theorem for multiclass linear models with the cross-entropy loss (Fan, Schmidt, "
        "Thrampoulidis 2025, arXiv:2502.04664, 'Implicit Bias of Spectral Descent and Muon on "
        "Multiclass Separable Data', abstract; hypotheses not checked here); open for attention",
        _QUICK,
        "spectral",
        (("W", "spectral"), ("W", "muon 0.9")),
    ),
    Correspondence(
        "softmax",
        "(K, Q)",
        "sign descent, spectral descent, Adam",
        "none predicted",
        _ATT_ROWS,
        "open",
        "no statement known to svmgeo; measured only",
        _QUICK,
        None,
        (("KQ", "sign"), ("KQ", "spectral"), ("KQ", "adam")),
    ),
    Correspondence(
        "linear",
        "W",
        "GD",
        "Frobenius",
        "(Σ_t γ_ikt x_it)ᵀ W z_ik ≥ 1, one per query",
        "theorem",
        "Y f is linear in W: Soudry et al. 2018, arXiv:1710.10345 (separable rows, an "
        "exponentially tailed loss, "
        "plain GD with a small step, η < 2/β, β the smoothness constant of the risk); "
        "normalized GD: Nacson et al. 2019, arXiv:1803.01905, for their step rule. svmgeo's "
        "constant-η normalized "
        "steps are neither: measured (docs/attention-maps.md); `sg.verify` checks the "
        "hypotheses of a plain run and prints 'theorem' only when they hold",
        "sg.verify(data, attention='linear')",
    ),
    Correspondence(
        "linear",
        "W",
        "steepest descent for a norm: sign (ℓ∞), ('steepest', q) (ℓq), spectral",
        "that norm's max-margin",
        "(Σ_t γ_ikt x_it)ᵀ W z_ik ≥ 1, one per query",
        "theorem",
        "Y f is linear in W: Gunasekar, Lee, Soudry, Srebro 2018, arXiv:1802.08246 "
        "(separable rows, the "
        "exponential loss, bounded steps η_t ≤ 1/(B²L); the margin converges, the direction "
        "tends to the optimal face); "
        "measured with normalized steps on seeds 0-9 (docs/optimizers.md, calibration)",
        "svmgeo reproduce optimizers_linear --quick",
    ),
    Correspondence(
        "linear",
        "W",
        "Adam",
        "ℓ∞",
        "(Σ_t γ_ikt x_it)ᵀ W z_ik ≥ 1, one per query",
        "theorem",
        "for separable linear models in the paper's setting (Fan, Schmidt, Thrampoulidis 2025, "
        "arXiv:2502.04664; as svmgeo reads it: a learning rate decaying polynomially in t and "
        "no ε, the scale-free rule; not checked here); svmgeo's constant-η runs are outside "
        "those hypotheses (measured: docs/optimizers.md, calibration)",
        "svmgeo reproduce optimizers_linear --quick",
    ),
    Correspondence(
        "sigmoid",
        "W",
        "GD",
        "Frobenius",
        "π_ikt x_itᵀ W z_ik ≥ 1, π the final sign pattern",
        "conjecture",
        "svmgeo's (docs/attention-maps.md)",
        "sg.verify(data, attention='sigmoid')",
    ),
    Correspondence(
        "relu",
        "W",
        "GD",
        "Frobenius (a KKT point)",
        "(Σ_{t∈A} γ_ikt x_it)ᵀ W z_ik ≥ 1, ±x_itᵀ W z_ik ≥ 0 at the final active pattern A",
        "conjecture",
        "theorem for positively homogeneous models, exponential-type losses, once the loss is "
        "below a threshold: Lyu & Li 2020 (limit points are KKT points of min ‖θ‖² s.t. "
        "margins ≥ 1; gradient flow, and GD with small steps on smooth models); directional "
        "convergence: Ji & Telgarsky 2020 (gradient flow). ReLU attention is homogeneous but "
        "not smooth, and svmgeo runs discrete (normalized) GD: outside these hypotheses, "
        "measured (docs/attention-maps.md)",
        "sg.verify(data, attention='relu')",
    ),
    Correspondence(
        "prompt (x_tᵀ p)",
        "p (head fixed)",
        "GD",
        "p-SVM",
        "(x_iα_i − x_it)ᵀ p ≥ 1 (docs/companion.md)",
        "conjecture",
        "Tarzanagh, Li, Zhang, Oymak 2023 (arXiv:2306.13596): the paper's main result as its "
        "abstract states it (GD on p converges in direction to the p-SVM of locally optimal "
        "tokens); hypotheses not stated here and not checked (docs/companion.md): treated as a "
        "conjecture, measured",
        "svmgeo reproduce companion_single --quick",
    ),
    Correspondence(
        "prompt (x_tᵀ p)",
        "p and the head v",
        "GD, joint head training",
        "head SVM and relaxed p-SVM (v^mm, p^relax)",
        "(x_iα_i − x_it)ᵀ p ≥ 1 for i in the head's support S, ≥ 0 off S (docs/companion.md)",
        "conjecture",
        "for GD; the paper (arXiv:2306.13596) states the joint result for regularization "
        "paths only (docs/companion.md)",
        "svmgeo reproduce companion_joint --quick",
    ),
    Correspondence(
        "softmax, next-token risk (loss='retrieval')",
        "W",
        "GD",
        "Graph-SVM + a finite component",
        "SCC rows of the token graph; equality rows inside each SCC (docs/beyond.md)",
        "conjecture",
        "Li, Huang, Ildiz, Rawat, Oymak 2024 ([NTP], arXiv:2403.08081): the paper's result as "
        "its abstract states it, for GD on its log-loss, which svmgeo reads as "
        "loss='retrieval' with orthonormal embeddings (d >= V); hypotheses not stated here and "
        "not checked (docs/beyond.md): treated as a conjecture, measured",
        "svmgeo reproduce ntp --quick",
    ),
    Correspondence(
        "softmax, next-token risk (loss='ce')",
        "W",
        "GD",
        "Graph-SVM + a finite component",
        "SCC rows of the token graph; equality rows inside each SCC (docs/beyond.md)",
        "conjecture",
        "the issue's statement, not the paper's loss: measured (corr with W^svm 0.945-0.988), "
        "but W^fin has no finite minimizer on 9 of 10 cyclic seeds (docs/beyond.md)",
        "svmgeo reproduce ntp --quick",
    ),
    Correspondence(
        "softmax",
        "W",
        "local regularization path on a ball",
        "Frobenius (W^mm_α)",
        _ATT_ROWS,
        "refuted",
        "stated in arXiv:2308.16898, App. E.1; false as read: svmgeo's counterexample "
        "(tests/analysis/test_regpath.py::test_ball_counterexample_and_sphere_path)",
        "python -m pytest tests/analysis/test_regpath.py -k ball",
    ),
    Correspondence(
        "softmax",
        "W",
        "GD from the cone C_{μ,R}(W^mm_α) of a LOT α",
        "Frobenius (W^mm_α)",
        _ATT_ROWS,
        "theorem",
        "Tarzanagh, Li, Thrampoulidis, Oymak 2023 (arXiv:2308.16898), Theorem 5: plain GD on W "
        "with η ≤ 1/L_W, μ = μ(α), R = R(μ) (the paper's standing assumptions on the loss and "
        "head not restated here). svmgeo's "
        "`local` experiment (protocol 'cone': normalized GD, step 0.1, from R = 100 with 5 % "
        "noise) starts in the spirit of Theorem 5, outside its step-size and μ(α) hypotheses: "
        "measured (docs/experiments.md)",
        "svmgeo reproduce local --quick",
    ),
    Correspondence(
        "softmax",
        "W; (K, Q)",
        "regularization path: argmin L over ‖W‖_F ≤ R; over ‖K‖²_F + ‖Q‖²_F ≤ 2R",
        "Frobenius (Att-SVM); nuclear (the Att-SVM⋆ set)",
        "(x_iopt_i − x_it)ᵀ W z_i ≥ 1, t ≠ opt_i",
        "theorem",
        "Tarzanagh, Li, Thrampoulidis, Oymak 2023 (arXiv:2308.16898), Theorem 2, for the global "
        "minimizers, under Assumption A on the loss, a linear head, unique optimal tokens and "
        "Att-SVM(opt) feasible. svmgeo's path is a warm-started local method (no global "
        "minimum certified): measured (docs/regpath.md, docs/analysis.md)",
        "python -m pytest tests/analysis/test_regpath.py -k approaches",
    ),
    Correspondence(
        "softmax",
        "W",
        "local regularization path on a sphere ‖W‖_F = R (local_set='sphere')",
        "Frobenius (W^mm_α)",
        _ATT_ROWS,
        "conjecture",
        "svmgeo's extension (the repair of the refuted ball path above), not proved: measured, "
        "1 − corr ≤ 8.3e-5 at R = 512 on the 13 LOT cases, including the 7 where the ball path "
        "stops (docs/regpath.md's loop prints the figures; the slow test checks 1 − corr ≤ "
        "1e-4 on all 13, the fast suite's `-k sphere` on 2; docs/theory.md, docs/regpath.md)",
        "python -m pytest -m slow tests/analysis/test_regpath.py -k 13_lot",
    ),
    Correspondence(
        "softmax, nonlinear head (ReLU, concave)",
        "W",
        "GD",
        "Gen-SVM W^svm + a finite component W^fin",
        "(x_it − x_iτ)ᵀ W z_i = 0 for t, τ ∈ O_i; ≥ 1 for t ∈ O_i, τ ∉ O_i (O_i: the selected set)",
        "conjecture",
        "proposed in arXiv:2308.16898, §6 (no theorem); svmgeo measures it with `sg.verify` on "
        "data with a nonlinear head, including instances where it does not predict GD "
        "(docs/verify.md, docs/theory.md)",
        "sg.verify(data)",
    ),
    Correspondence(
        "softmax",
        "W",
        "GD, a loss with a stationary point on the attained score range (square loss)",
        "split: equality rows for the sequences held at the stationary value, Att-SVM rows for "
        "the others",
        "as Gen-SVM, with the held sequences in the role of O_i",
        "conjecture",
        "svmgeo's (docs/attention-maps.md, check_loss): measured by "
        "examples/square_loss_limit.py (random_data(6, 8, 10), tokens x3, seeds 0-9, plain GD "
        "at eta = 1/L_W, 10^5 steps), the square loss holds the flagged sequences at "
        "Y f = 0.981-1.001 and W correlates only 0.65-0.84 with W^mm of GD's selection "
        "(logistic: 0.88-0.97); the split itself is not measured, and there is no run in the "
        "atlas (`sg.check_loss` flags the queries with a stationary point)",
        "python examples/square_loss_limit.py",
    ),
)


def evidence_rows(quick: bool = True) -> list[dict[str, Any]]:
    """The trial rows of the ``optimizers`` experiment (quick: seeds 0–1, 1000 steps), run in
    this process in grid order (deterministic)."""
    from .experiments.optimizers import grid, trial

    return [dict(params, **trial(**params)) for params in grid(quick)]


def _fmt(x: float) -> str:
    return "-" if x != x else f"{x:.3f}"


def atlas_markdown(rows: Sequence[dict[str, Any]] | None = None) -> str:
    r"""The atlas page (``docs/atlas.md``) as markdown.

    .. math::

        \text{one line per } c \in \texttt{CORRESPONDENCES}:\ (\text{model}, \text{optimizer})
        \to (\text{norm}, \text{rows}),\ \text{status},\ \text{where},\ \text{evidence}

    Parameters
    ----------
    rows : sequence of dict, optional
        Trial rows of the ``optimizers`` experiment; default :func:`evidence_rows` (the quick
        runs, computed now: about 15-30 s).

    Returns
    -------
    str
        The page, ending with a newline.

    Raises
    ------
    ProblemError
        A correspondence names runs that ``rows`` lack.
    """
    from .experiments.optimizers import FACE_SVMS, SVMS, face_lower_bounds

    rows = evidence_rows() if rows is None else list(rows)
    by_run: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        by_run.setdefault((r["param"], r["optimizer"]), []).append(r)
    for c in CORRESPONDENCES:
        missing = [run for run in c.evidence if run not in by_run]
        if missing:
            raise ProblemError(
                f"atlas_markdown: 'rows' has no runs {missing} for the correspondence "
                f"{c.optimizer!r} on {c.param!r}; pass the rows of the optimizers experiment "
                "(evidence_rows()) or leave 'rows' out."
            )
    seeds = sorted({r["seed"] for r in rows})
    steps = sorted({r["n_steps"] for r in rows})
    out = [
        "# Atlas of correspondences",
        "",
        "<!-- GENERATED by `svmgeo atlas` from svmgeo/atlas.py (statuses, citations) and the quick",
        "optimizers experiment (evidence); do not edit: run `svmgeo atlas --write` and commit. CI runs",
        "`svmgeo atlas --check`. -->",
        "",
        "Every correspondence svmgeo knows: a model (attention map × parameterization) trained by "
        "an optimizer on one side, the SVM its direction is predicted to tend to (norm, rows) on "
        "the other, with its status — *theorem* (and where it is proved), *conjecture*, *refuted* "
        "(by a counterexample svmgeo found) or *open* (no prediction; measured only). The table "
        "of statuses is `svmgeo.atlas.CORRESPONDENCES`; the evidence below is measured when the "
        "page is generated.",
        "",
        "## Correspondences",
        "",
        "| # | attention | param | optimizer | predicted SVM (norm) | rows | status | where | "
        "evidence: closest SVM per seed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for k, c in enumerate(CORRESPONDENCES, 1):
        if c.evidence:
            ev = "; ".join(
                f"{param} {name}: " + " ".join(r["closest"] for r in
                                               sorted(by_run[(param, name)], key=lambda r: r["seed"]))
                for param, name in c.evidence
            )  # fmt: skip
        else:
            ev = f"`{c.command}`"
        out.append(
            f"| {k} | {c.attention} | {c.param} | {c.optimizer} | {c.norm} | {c.rows} | "
            f"**{c.status}** | {c.where} | {ev} |"
        )
    labels = " | ".join(f"{s}{' (face)' if s in FACE_SVMS else ''}" for s in SVMS)
    out += [
        "",
        "## Evidence",
        "",
        f"Command: `{_QUICK}` (or `svmgeo atlas`, which runs the same trials in one process): "
        f"`random_data(6, 8, 10)`, seeds {', '.join(map(str, seeds))}; "
        f"{', '.join(map(str, steps))} steps of η = 0.1; W from zero, (K, Q) (m = d) from a "
        "random start of scale 0.1. For the selection α each run ends on, the Att-SVM of α is "
        "solved in each norm and the final correlation with it listed (three decimals). The "
        "nuclear, ℓ1, ℓ∞ and spectral SVMs can have a face of optimal solutions, so for them "
        "(*face*) the "
        "correlation is the best over the optimal face "
        "(`svmgeo.solvers.optimal_face_alignment`), not with one returned solution (≥ x: only "
        "a lower bound on it, `FaceAlignment.maximum` False). *closest* "
        "is the largest (x?: another's value is only such a lower bound, which may exceed it, "
        "so the closest is not decided); *predicted* the correspondence's SVM. The full run (seeds 0–9, 3000 "
        "steps) is `svmgeo reproduce optimizers`; these are finite runs, measurements, not "
        f"proofs. Reproducible to ±{ATLAS_TOLERANCE} across machines: (K, Q) spectral descent "
        "amplifies round-off (a 1e-15 relative change of X moves its correlations by up to "
        "1e-2; every W run by less than 3e-6), and `svmgeo atlas --check` allows that much, "
        "and a *closest* within that much of the largest on both pages.",
        "",
        f"| # | param | optimizer | seed | {labels} | closest | predicted |",
        "|---|---|---|---|" + "---|" * len(SVMS) + "---|---|",
    ]
    for k, c in enumerate(CORRESPONDENCES, 1):
        for run in c.evidence:
            for r in sorted(by_run[run], key=lambda r: r["seed"]):
                bounds = face_lower_bounds(r) or frozenset()
                cells = " | ".join(("≥ " if s in bounds else "") + _fmt(r[f"corr_{s}"])
                                   for s in SVMS)  # fmt: skip
                out.append(
                    f"| {k} | {run[0]} | {run[1]} | {r['seed']} | {cells} | {r['closest']} | "
                    f"{c.svm or '-'} |"
                )
    return "\n".join(out) + "\n"


def page_differences(
    current: str, page: str, atol: float = ATLAS_TOLERANCE
) -> list[tuple[int, str, str]]:
    r"""The lines where ``current`` (a committed atlas page) and ``page`` (generated now) differ
    beyond round-off: 1-based line number, committed line, generated line.

    .. math::

        \text{lines agree} \iff \text{same cells, and } |c - c'| \le \texttt{atol}
        \text{ for numeric cells, } c = c' \text{ otherwise}

    (:data:`ATLAS_TOLERANCE`: the measured spread of the evidence between machines), except
    that a run's *closest* SVM (in its evidence row and in the first table's evidence cell)
    may differ where round-off can swap it: the committed label's correlation is within
    ``atol`` of the largest in the generated row, and the generated label's within ``atol``
    of the largest in the committed row (either may be undecided, ``x?``).
    """
    old, new = current.splitlines(), page.splitlines()
    generated = _evidence_rows(new)
    swapped = _swappable_closest(_evidence_rows(old), generated, atol)
    read = [_with_committed_closest(line, swapped, generated) for line in new]
    diffs = [
        (k + 1, a, b)
        for k, (a, b, r) in enumerate(zip(old, new, read, strict=False))
        if not _lines_agree(a, r, atol)
    ]
    if len(old) != len(new):
        k = min(len(old), len(new))
        diffs.append((k + 1, "\n".join(old[k:]), "\n".join(new[k:])))
    return diffs


#: An evidence row's key (param, optimizer, seed) and its cells: correlations by label, closest.
_EvidenceRows = dict[tuple[str, str, str], tuple[dict[str, str], str]]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _evidence_rows(lines: list[str]) -> _EvidenceRows:
    """The rows of the page's evidence table (after its header ``| # | param | optimizer |
    seed | <labels> | closest | predicted |``), by (param, optimizer, seed)."""
    rows: _EvidenceRows = {}
    labels: list[str] | None = None
    for line in lines:
        cells = _cells(line)
        if cells[:4] == ["#", "param", "optimizer", "seed"] and cells[-2:] == [
            "closest",
            "predicted",
        ]:
            labels = [c.removesuffix(" (face)") for c in cells[4:-2]]
        elif labels is not None and len(cells) == len(labels) + 6 and cells[3].isdecimal():
            rows[(cells[1], cells[2], cells[3])] = (
                dict(zip(labels, cells[4:-2], strict=True)),
                cells[-2],
            )
    return rows


def _near_largest(correlations: dict[str, str], label: str, atol: float) -> bool:
    """Whether ``label``'s correlation is within ``atol`` of the row's largest."""
    values = [v for v in map(_cell_number, correlations.values()) if v is not None and v == v]
    own = _cell_number(correlations.get(label.removesuffix("?"), "nan"))
    return bool(values) and own is not None and max(values) - own <= atol


def _swappable_closest(
    old: _EvidenceRows, new: _EvidenceRows, atol: float
) -> dict[tuple[str, str, str], tuple[str, str]]:
    """The runs whose closest label differs between the pages within round-off: key ->
    (committed label, generated label)."""
    swapped = {}
    for key in old.keys() & new.keys():
        (was, a), (now, b) = old[key], new[key]
        if a != b and _near_largest(now, a, atol) and _near_largest(was, b, atol):
            swapped[key] = (a, b)
    return swapped


def _with_committed_closest(
    line: str, swapped: dict[tuple[str, str, str], tuple[str, str]], rows: _EvidenceRows
) -> str:
    """A generated line with each swappable closest label put back to the committed one: in
    an evidence row (its closest cell), and in a first-table evidence cell
    (``"param optimizer: label label; ..."``, labels in seed order)."""
    if not swapped or not (line.strip().startswith("|") and line.strip().endswith("|")):
        return line  # (atlas_markdown's table rows begin and end with "|")
    cells = line.split("|")
    inner = _cells(line)
    key = (inner[1], inner[2], inner[3]) if len(inner) > 3 else None
    if key in rows and key in swapped and inner[-2] == swapped[key][1]:
        cells[-3] = f" {swapped[key][0]} "
        return "|".join(cells)
    if len(cells) < 3 or ": " not in cells[-2]:
        return line
    entries = []
    for entry in cells[-2].strip().split("; "):
        run, sep, labels = entry.partition(": ")
        param, _, optimizer = run.partition(" ")
        seeds = sorted((k[2] for k in rows if k[:2] == (param, optimizer)), key=int)
        read = labels.split(" ")
        if sep and len(read) == len(seeds):
            for i, seed in enumerate(seeds):
                pair = swapped.get((param, optimizer, seed))
                if pair is not None and read[i] == pair[1]:
                    read[i] = pair[0]
        entries.append(run + sep + " ".join(read))
    cells[-2] = " " + "; ".join(entries) + " "
    return "|".join(cells)


def _lines_agree(a: str, b: str, atol: float) -> bool:
    if a == b:
        return True
    ca, cb = a.split("|"), b.split("|")
    if len(ca) != len(cb):
        return False
    return all(_cells_agree(x.strip(), y.strip(), atol) for x, y in zip(ca, cb, strict=True))


def _cell_number(cell: str) -> float | None:
    """The number of a numeric cell, its lower-bound mark "≥" dropped (NaN for "nan"); None
    for any other text."""
    try:
        return float(cell.removeprefix("≥"))
    except ValueError:
        return None


def _cells_agree(x: str, y: str, atol: float) -> bool:
    # A numeric cell may carry the lower-bound mark "≥ " (a face correlation only bounded
    # below): cells agree when both carry it, or neither, and their numbers are within atol;
    # NaN agrees only with NaN.
    if x == y:
        return True
    bound_x, bound_y = x.startswith("≥"), y.startswith("≥")
    if bound_x != bound_y:
        return False
    u, v = _cell_number(x), _cell_number(y)
    if u is None or v is None:
        return False
    if u != u or v != v:
        return u != u and v != v
    return abs(u - v) <= atol
