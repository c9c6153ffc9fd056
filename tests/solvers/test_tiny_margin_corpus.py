# SPDX-License-Identifier: BSD-3-Clause
"""A corpus of barely separable Att-SVM instances whose truth is known by construction.

Every instance is one or two sequences in the plane (padded with zero coordinates and
permuted, which keeps every float exact), selection 0. Att-SVM(α) of one sequence is feasible
iff the selected token is *not* in the convex hull of the others (then a direction u with
(x_0 - x_t)ᵀu > 0 exists and W = u zᵀ/‖z‖² works); the constructions below decide that by
exact arguments on the float tokens (signs and exact symmetries only, so the truth survives
the rounding of ε·s). Two sequences with linearly independent queries are feasible iff both
are (W acts on each query separately).

A verdict is *wrong* when it is decided (``OPTIMAL`` with ``feasible``, or ``INFEASIBLE``) and
contradicts the truth; *undecided* verdicts (``*_INACCURATE``, errors) are counted, never wrong.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import Status

# undecided verdicts are expected and counted here; tests/solvers/test_inaccurate_warning.py
# checks the warning itself
pytestmark = pytest.mark.filterwarnings("ignore::svmgeo.InaccurateSolutionWarning")

MARGINS = (1e-6, 1e-8, 1e-10, 1e-12, 1e-13, 1e-14)
SCALES = (1e-150, 1e-50, 1.0, 1e50, 1e150)


def _family(name: str, eps: float, s: float) -> tuple[list[list[float]], bool]:
    """Planar tokens (selected first) and the truth (feasible?) for a margin ε at scale s."""
    e = eps * s  # rounded, but only its sign and its size relative to s are used
    if name == "above_segment":  # x_0 strictly above the segment [x_1, x_2]: a hull vertex
        return [[0.0, e], [-s, 0.0], [s, 0.0]], True
    if name == "above_segment_triangle":  # same, with a third token below: still a vertex
        return [[0.0, e], [-s, 0.0], [s, 0.0], [0.0, -s]], True
    if name == "inside_triangle":  # 0 < e < s: x_0 inside the triangle, infeasible
        return [[0.0, -e], [-s, 0.0], [s, 0.0], [0.0, -s]], False
    if name == "collinear_midpoint":  # x_0 = (x_1 + x_2)/2 exactly (symmetry): infeasible
        return [[0.0, 0.0], [-s, e], [s, -e]], False
    if name == "off_collinear":  # the tilted line through x_1, x_2 meets x = 0 at 0 < e
        return [[0.0, e], [-s, e], [s, -e]], True
    if name == "parabola_vertex":  # strictly convex (t, e t²), t = -2..2: every token a vertex
        return [[0.0, 0.0]] + [[t * s, e * t * t] for t in (-2.0, -1.0, 1.0, 2.0)], True
    if name == "parabola_interior":  # the same points with e t² flattened to 0: x_0 inside
        return [[0.0, 0.0], [-2 * s, 0.0], [-s, 0.0], [s, 0.0], [2 * s, e]], False
    if name in ("tilted_line_interior", "tilted_line_offset"):
        # tokens ±w, ±2w on a tilted line through 0 (negation and doubling are exact)
        w = [s * 0.7310585786300049, s * -0.2689414213699951]
        line = [[t * w[0], t * w[1]] for t in (-2.0, -1.0, 1.0, 2.0)]
        if name == "tilted_line_interior":  # x_0 = 0, the midpoint of ±w: infeasible
            return [[0.0, 0.0], *line], False
        # x_0 = e (-v_1, v_0): det(x_0, w) < 0 by signs alone, so x_0 is off the line
        return [[e * 0.2689414213699951, e * 0.7310585786300049], *line], True
    raise ValueError(name)


FAMILIES = (
    "above_segment",
    "above_segment_triangle",
    "inside_triangle",
    "collinear_midpoint",
    "off_collinear",
    "parabola_vertex",
    "parabola_interior",
    "tilted_line_interior",
    "tilted_line_offset",
)


def _instance(
    names: tuple[str, ...], eps: float, s: float, z_scale: float, seed: int
) -> tuple[sg.TokenData, bool]:
    """Sequences of the given families in d = 4 (zero-padded, coordinates permuted)."""
    rng = np.random.default_rng(seed)
    seqs, truth = [], True
    for name in names:
        toks, feasible = _family(name, eps, s)
        seqs.append(toks)
        truth = truth and feasible
    T = max(len(t) for t in seqs)
    d = 4
    perm = rng.permutation(d)
    X = np.zeros((len(seqs), T, d))
    scores = np.full((len(seqs), T), -1.0)
    for i, toks in enumerate(seqs):
        P = np.zeros((T, d))
        P[: len(toks), :2] = toks
        P[len(toks) :, :2] = toks[-1]  # padding repeats a competitor (same hull)
        X[i] = P[:, perm]
        scores[i, 0] = 1.0
    # queries: (1, 0.3) for the first sequence, an independent one for the second
    Zp = np.zeros((len(seqs), d))
    Zp[0, :2] = (z_scale, 0.3 * z_scale)
    if len(seqs) > 1:
        Zp[1, 2] = z_scale
    data = sg.TokenData(X, Z=Zp[:, perm], scores=scores)
    return data, truth


def _corpus() -> list[tuple[str, tuple[str, ...], float, float, float]]:
    cases = []
    for name, eps, s in itertools.product(FAMILIES, MARGINS, SCALES):
        cases.append((f"{name}/{eps:g}/{s:g}", (name,), eps, s, 1.0))
    for (a, b), eps in itertools.product(
        [("above_segment", "off_collinear"), ("above_segment", "inside_triangle")], MARGINS
    ):
        cases.append((f"{a}+{b}/{eps:g}", (a, b), eps, 1.0, 1.0))
    for name, eps in itertools.product(("above_segment", "collinear_midpoint"), MARGINS):
        cases.append((f"{name}/{eps:g}/z1e-150", (name,), eps, 1e150, 1e-150))
    return cases


def _verdict(status: Status, feasible: bool) -> str:
    if status is Status.OPTIMAL and feasible:
        return "feasible"
    if status is Status.INFEASIBLE:
        return "infeasible"
    return "undecided"


def test_tiny_margin_corpus_has_no_wrong_verdict():
    wrong, undecided, counts = [], [], {"feasible": 0, "infeasible": 0}
    for label, names, eps, s, zs in _corpus():
        data, truth = _instance(names, eps, s, zs, seed=len(label))
        res = sg.feasibility(data, np.zeros(data.n, int))
        verdict = _verdict(res.status, res.feasible)
        if verdict == "undecided":
            undecided.append((label, res.status, res.message))
            continue
        assert res.proof == "exact", (label, res.message)
        counts[verdict] += 1
        if verdict != ("feasible" if truth else "infeasible"):
            wrong.append((label, truth, res.status, res.message))
    n = len(_corpus())
    print(f"corpus: {n} instances, decided {counts}, undecided {len(undecided)}")
    for item in undecided:
        print("undecided:", item)
    assert not wrong, wrong
    # most instances are decided (a regression that gives up everywhere must fail)
    assert counts["feasible"] >= n // 4 and counts["infeasible"] >= n // 4, counts
    assert len(undecided) <= n // 10, len(undecided)


def test_tiny_margin_corpus_att_svm_is_never_wrong():
    # the solve path: an INFEASIBLE answer on a feasible instance (or a W on an infeasible
    # one) is wrong; inaccurate / iteration-limit answers are undecided
    wrong = []
    for label, names, eps, s, zs in _corpus():
        data, truth = _instance(names, eps, s, zs, seed=len(label))
        res = sg.att_svm(data, np.zeros(data.n, int))
        if (truth and res.status is Status.INFEASIBLE) or (
            not truth and res.status is Status.OPTIMAL
        ):
            wrong.append((label, truth, res.status, res.message))
    assert not wrong, wrong
