# SPDX-License-Identifier: BSD-3-Clause
"""Audit J (session 56): verify judges ties on the rule of optimal_token_sets.

A computed score :math:`Y v^\\top u` is compared with the others up to ``TIE_RTOL`` times its
size :math:`|Y|\\,|v|^\\top|u|` (``svmgeo.optimal_token_sets``, ``is_locally_optimal``). verify
judged the data re-scored with explicit scores, whose sizes are their own :math:`|\\gamma|`: on
scores that cancel to round-off (:math:`2.2\\cdot10^{-16}` against 0) it saw no tie where
optimal_token_sets saw one, and called a selection a LOT that is_locally_optimal refuses. Each
test compares verify's verdict with optimal_token_sets / is_locally_optimal on the same data and
selection, or, for the heads whose scores those functions cannot compute (ReLU, concave), with
the documented rule evaluated in exact rationals.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.selection import TIE_RTOL

Z1 = np.array([[1.0, 0.5]])
V_PM = np.array([1.0, -1.0])


def _near_tie() -> np.ndarray:
    """Tokens 0 and 1 score 2.2e-16 and 0 under v = (1, -1): tied to round-off (sizes 2.6, 0.6)."""
    return np.array([[[np.nextafter(1.3, 2.0), 1.3], [0.3, 0.3], [-1.0, 1.0]]])


def _mirrored() -> np.ndarray:
    """Token 0 scores 0.1 + 0.2 - 0.3 = 5.6e-17, token 1 scores 0: tied to round-off."""
    X = _near_tie()
    X[0, 0] = [0.1 + 0.2, 0.3]
    X[0, 1] = [1.3, 1.3]
    return X


def _ties(sets: np.ndarray) -> tuple[tuple[int, int, tuple[int, ...]], ...]:
    """(sequence, query, tokens) of every row of ``sets`` (n, T) with more than one True."""
    return tuple(
        (int(i), 0, tuple(int(t) for t in np.flatnonzero(row)))
        for i, row in enumerate(sets)
        if row.sum() > 1
    )


def _agrees(rep: sg.VerifyReport, data: sg.TokenData, norm: object = "fro") -> None:
    """verify's optimality, ties and LOT verdict are those of optimal_token_sets and
    is_locally_optimal on the same data and selection."""
    sel = np.asarray(rep.selection)
    sets = sg.optimal_token_sets(data)
    assert rep.is_optimal == bool(np.all(sets[np.arange(data.n), sel]))
    assert rep.optimal_ties == _ties(sets)
    lot = sg.is_locally_optimal(data, sel, norm=norm)  # type: ignore[arg-type]
    assert (rep.is_lot, rep.lot_decided) == (bool(lot), lot.decided), lot.reason


@pytest.mark.parametrize("make", [_near_tie, _mirrored], ids=["nextafter", "0.1+0.2"])
def test_verify_ties_as_optimal_token_sets(make):
    data = sg.TokenData(make(), v=V_PM, Z=Z1)
    assert sg.optimal_token_sets(data)[0].tolist() == [True, True, False]  # the reference
    rep = sg.verify(data, n_steps=100, backend="numpy")
    _agrees(rep, data)
    assert rep.optimal_ties == ((0, 0, (0, 1)),)
    assert rep.is_optimal  # either tied token is optimal
    assert not rep.is_lot  # the other tied token is a support token scoring >= the selected


def test_verify_mirror_ties_as_optimal_token_sets():
    data = sg.TokenData(_near_tie(), v=V_PM, Z=Z1)
    rep = sg.verify_mirror(data, exponent=1.5, n_steps=100, backend="numpy")
    _agrees(rep, data, norm=("lp", 1.5))
    assert rep.optimal_ties == ((0, 0, (0, 1)),)


def test_prompt_and_kq_paths_tie_as_optimal_token_sets():
    """param='p' (data scored with queries e_1) and param='KQ' judge on the same rule."""
    X = _near_tie()
    prompt = sg.verify(sg.TokenData(X, v=V_PM), param="p", n_steps=100, backend="numpy")
    _agrees(prompt, sg.TokenData(X, v=V_PM, Z=np.array([[1.0, 0.0]])))  # the p-SVM's data
    data = sg.TokenData(X, v=V_PM, Z=Z1)
    kq = sg.verify(data, param="KQ", init=("random", 0.1), seed=0, n_steps=100, backend="numpy")
    _agrees(kq, data)


def test_given_scores_keep_their_own_sizes():
    """Data with given scores are judged as optimal_token_sets judges them: sizes |gamma|."""
    data = sg.TokenData(_near_tie(), Z=Z1, scores=np.array([[2.220446049250313e-16, 0.0, -2.0]]))
    assert sg.optimal_token_sets(data)[0].tolist() == [True, False, False]  # 2.2e-16 > 0
    rep = sg.verify(data, n_steps=100, backend="numpy")
    _agrees(rep, data)


def _exact_rule(scores: list[list[Fraction]], sizes: list[list[Fraction]]) -> list[list[bool]]:
    """The tie rule of optimal_token_sets in exact rationals: t is optimal when
    gamma_t >= gamma_* - TIE_RTOL * max(s_t, s_*), s_* the largest size at the top score."""
    tol = Fraction(TIE_RTOL)
    out = []
    for g, s in zip(scores, sizes, strict=True):
        top = max(g)
        s_top = max(si for gi, si in zip(g, s, strict=True) if gi == top)
        out.append([gi >= top - tol * max(si, s_top) for gi, si in zip(g, s, strict=True)])
    return out


def test_relu_head_ties_by_its_terms():
    """h(u) = v^T ReLU(V^T u) with V = I and u >= 0 on the tied tokens: the linear scores'
    tie, seen through the sizes |v|^T (a * |V|^T |u|) of the score's terms (a: the active
    units, V^T u >= 0; with V = I and u >= 0 these are |v|^T ReLU(V^T u))."""
    X = _near_tie()
    data = sg.TokenData(X, v=V_PM, Z=Z1)
    rep = sg.verify(data, head="relu", V=np.eye(2), v=V_PM, n_steps=100, backend="numpy")
    feats = [[[Fraction(max(float(c), 0.0)) for c in x] for x in seq] for seq in X]
    w = [Fraction(float(c)) for c in V_PM]
    scores = [[sum(wj * fj for wj, fj in zip(w, f, strict=True)) for f in seq] for seq in feats]
    sizes = [[sum(abs(wj) * fj for wj, fj in zip(w, f, strict=True)) for f in seq] for seq in feats]
    expected = _exact_rule(scores, sizes)
    assert expected == [[True, True, False]]
    assert rep.optimal_ties == _ties(np.array(expected))


def test_concave_head_ties_by_its_terms():
    """h(u) = v^T u - lam ||u||^2 cancels on u = (0.1, 0.2), v = (1, 0), lam = 2 (exactly in
    decimals, to -1.4e-17 in floats) and is exactly 0 on u = 0: a tie up to round-off by the
    sizes |v|^T|u| + lam ||u||^2 of the score's terms, not by |gamma| = 1.4e-17."""
    U = np.array([[[0.0, 0.0], [0.1, 0.2], [-1.0, 0.0]]])
    v, lam = np.array([1.0, 0.0]), 2.0
    data = sg.TokenData(U, v=v, Z=Z1)
    rep = sg.verify(data, head="concave", lam=lam, n_steps=100, backend="numpy")
    Ue = [[[Fraction(float(c)) for c in u] for u in seq] for seq in U]
    ve, le = [Fraction(float(c)) for c in v], Fraction(lam)
    sq = [[sum(c * c for c in u) for u in seq] for seq in Ue]
    lin = [[sum(a * b for a, b in zip(ve, u, strict=True)) for u in seq] for seq in Ue]
    absl = [[sum(abs(a) * abs(b) for a, b in zip(ve, u, strict=True)) for u in seq] for seq in Ue]
    scores = [[x - le * q for x, q in zip(a, b, strict=True)] for a, b in zip(lin, sq, strict=True)]
    sizes = [[x + le * q for x, q in zip(a, b, strict=True)] for a, b in zip(absl, sq, strict=True)]
    expected = _exact_rule(scores, sizes)
    assert expected == [[True, True, False]]  # the exact scores differ: a round-off tie
    assert scores[0][0] != scores[0][1]
    assert rep.optimal_ties == _ties(np.array(expected))
    assert rep.is_optimal


def _tiny(seed: int) -> sg.TokenData:
    """A random tiny integer instance (n = 2, T = 3, d = 2, distinct tokens in a sequence); odd
    seeds get a round-off tie at the top of sequence 0 (scores 0 and about 1e-16 under
    v = (a, -a))."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, size=(2, 3, 2)).astype(float)
    while any(len({tuple(x) for x in seq}) < 3 for seq in X):
        X = rng.integers(-2, 3, size=(2, 3, 2)).astype(float)
    v = rng.choice([-2.0, -1.0, 1.0, 2.0], size=2)
    Z = rng.integers(-2, 3, size=(2, 2)).astype(float)
    Z[np.all(Z == 0, axis=1), 0] = 1.0
    Y = rng.choice([-1.0, 1.0], size=2)
    if seed % 2:
        a = float(rng.choice([1.0, 2.0]))
        v = np.array([a, -a])
        c = float(rng.choice([0.7, 1.3, 2.1]))
        X[0, 0] = [np.nextafter(c, 3.0), c] if seed % 4 == 1 else [0.1 + 0.2, 0.3]
        X[0, 1] = [-c, -c] if seed % 4 == 1 else [c, c]
        X[0, 2] = [-Y[0], Y[0]]  # Y v^T x = -2a: below the tie
    return sg.TokenData(X, Y=Y, v=v, Z=Z)


@pytest.mark.parametrize("seed", range(12))
def test_verify_agrees_with_optimal_token_sets_on_tiny_instances(seed):
    data = _tiny(seed)
    rep = sg.verify(data, n_steps=60, backend="numpy", init=("random", 0.1), seed=seed)
    _agrees(rep, data)
    if seed % 2:
        assert (0, 0, (0, 1)) in rep.optimal_ties  # the round-off tie is seen


def _report_key(rep: sg.VerifyReport) -> tuple[object, ...]:
    return (np.asarray(rep.selection).tolist(), rep.is_optimal, rep.is_lot, rep.optimal_ties)


@pytest.mark.parametrize("scale", [1e-160, 1e155], ids=["V*1e-160", "V*1e155"])
def test_relu_head_at_extreme_scales_is_judged(scale):
    """Scores and sizes are passed to the judge as they are: no head features are rebuilt as
    TokenData values (whose scale check refused norms outside [1e-151, 1e151]). Scaling V by a
    positive factor c (and v by 1/c where c is large) scales every score and size alike: the
    verdict is the one at scale 1."""
    d = sg.random_data(3, 4, 3, seed=0)
    R = np.random.default_rng(1).standard_normal((3, 4))
    v = np.full(4, 1.0 / scale) if scale > 1 else None
    kw = dict(head="relu", n_steps=50, backend="numpy")
    rep = sg.verify(d, V=R * scale, v=v, **kw)
    ref = sg.verify(d, V=R, v=None, **kw)
    assert _report_key(rep)[1:] == _report_key(ref)[1:]


def test_concave_head_with_large_squares_is_judged():
    """||u||^2 reaches 1e160 (beyond the values' scale check) with lam = 1e-100: each score is
    Y (v^T x - 1e60 ||x||^2) on unit tokens x, so every token is tied to 1e-60 relative."""
    d = sg.random_data(3, 4, 3, seed=0)
    X, Z, v = np.asarray(d.X), np.asarray(d.Z), np.asarray(d.v)
    np.testing.assert_allclose(np.linalg.norm(X, axis=2), 1.0, rtol=1e-15)  # unit tokens
    data = sg.TokenData(X * 1e80, Z=Z * 1e-80, v=v * 1e-80)
    rep = sg.verify(data, head="concave", lam=1e-100, n_steps=50, backend="numpy")
    assert rep.optimal_ties == tuple((i, 0, (0, 1, 2, 3)) for i in range(3))
    assert rep.is_optimal


def test_relu_head_ties_when_the_cancellation_is_inside_V():
    """u = (nextafter(1.3, 2), 1.3, 0) and (0.3, 0.3, 0): V^T u cancels in its first unit to
    2.2e-16 and 0; the ReLU head's scores are bit-identical to the linear head's
    (v = (1, -1, -1)), whose tie optimal_token_sets sees; the sizes |v|^T(|V|^T|u|) on the
    active units see it too."""
    X = np.array([[[np.nextafter(1.3, 2.0), 1.3, 0.0], [0.3, 0.3, 0.0], [0.0, 0.0, 1.0]]])
    Z = np.array([[1.0, 0.5, 0.2]])
    data = sg.TokenData(X, v=np.array([1.0, -1.0, -1.0]), Z=Z)
    lin = sg.verify(data, n_steps=100, backend="numpy")
    V = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    relu = sg.verify(data, head="relu", V=V, v=[1.0, -1.0], n_steps=100, backend="numpy")
    assert lin.optimal_ties == ((0, 0, (0, 1)),)  # the reference
    # the documented rule in exact rationals: s = |v|^T (a * |V|^T |u|), a: V^T u >= 0
    Xe = [[Fraction(float(c)) for c in x] for x in X[0]]
    Ve = [[Fraction(float(c)) for c in row] for row in V]
    w = [Fraction(1), Fraction(-1)]
    pre = [[sum(x[i] * Ve[i][j] for i in range(3)) for j in range(2)] for x in Xe]
    mag = [[sum(abs(x[i]) * abs(Ve[i][j]) for i in range(3)) for j in range(2)] for x in Xe]
    scores = [[sum(w[j] * max(p[j], Fraction(0)) for j in range(2)) for p in pre]]
    sizes = [
        [
            sum(abs(w[j]) * (m[j] if p[j] >= 0 else 0) for j in range(2))
            for p, m in zip(pre, mag, strict=True)
        ]
    ]
    expected = _exact_rule(scores, sizes)
    assert expected == [[True, True, False]]
    assert relu.optimal_ties == _ties(np.array(expected))
    assert relu.is_optimal and not relu.is_lot  # as the linear head's verdict
    assert (relu.is_optimal, relu.is_lot) == (lin.is_optimal, lin.is_lot)


def test_concave_head_on_given_scores_names_the_scores():
    """Data with explicit scores and no v: the concave head is refused for the scores (the
    message that tells what to do), not for a missing v."""
    data = sg.TokenData(_near_tie(), Z=Z1, scores=np.array([[1.0, 0.0, -1.0]]))
    with pytest.raises(sg.ProblemError, match="head='concave' cannot use them"):
        sg.verify(data, head="concave", lam=0.1, n_steps=10, backend="numpy")


@pytest.mark.parametrize("seed", range(4))
def test_concave_scores_are_v_dot_u_minus_lam_squares(seed):
    """The judged scores are Y (v^T u - lam ||u||^2), evaluated in that order (bit-identical)."""
    from svmgeo.verify._judge import scored

    d = sg.random_data(4, 5, 3, seed=seed)
    U, v, lam = np.asarray(d.values), np.asarray(d.v), 0.37
    sdata, sizes = scored(d, "concave", None, None, lam)
    h = U @ v - lam * np.sum(U * U, axis=2)
    np.testing.assert_array_equal(sg.token_scores(sdata), np.asarray(d.labels) * h)
    expected = np.abs(np.asarray(d.labels)) * (np.abs(U) @ np.abs(v) + lam * np.sum(U * U, 2))
    np.testing.assert_allclose(sizes[:, 0, :], expected, rtol=1e-15)


def test_sizes_argument_sets_the_round_off_and_is_checked():
    """Given scores 2.2e-16 and 0 are distinct at their own sizes |gamma|, tied at sizes 1;
    sizes of the wrong shape or sign are refused naming the argument."""
    data = sg.TokenData(_near_tie(), Z=Z1, scores=np.array([[2.220446049250313e-16, 0.0, -2.0]]))
    assert sg.optimal_token_sets(data)[0].tolist() == [True, False, False]
    ones = np.ones((1, 3))
    assert sg.optimal_token_sets(data, sizes=ones)[0].tolist() == [True, True, False]
    assert sg.optimal_token_sets(data, sizes=ones[:, None, :])[0].tolist() == [True, True, False]
    assert not sg.is_locally_optimal(data, [0], sizes=ones)  # token 1 ties it, and is support
    for bad in (np.ones((1, 2)), -ones):
        with pytest.raises(sg.ProblemError, match="'sizes' of optimal_token_sets"):
            sg.optimal_token_sets(data, sizes=bad)
        with pytest.raises(sg.ProblemError, match="'sizes' of is_locally_optimal"):
            sg.is_locally_optimal(data, [0], sizes=bad)


def _relu_rounding_case() -> tuple[sg.TokenData, np.ndarray, np.ndarray]:
    """Token 0's first unit V^T u = 1e-17 - 2^-60 > 0 exactly, but its computed value may
    round below 0 (-3 + 1e-17 + 3 ...); token 1's unit is that exact value, token 2 scores
    below both (w = (1, -1))."""
    u0 = [-3.0, 1e-17, 3.0, -(2.0**-60), 0.0]
    e = float(sum(Fraction(x) for x in u0))
    X = np.array([[u0, [e, 0, 0, 0, 0], [0, 0, 0, 0, 1.0]]])
    V = np.array([[1, 0], [1, 0], [1, 0], [1, 0], [0, 1.0]])
    data = sg.TokenData(X, v=np.array([1, 1, 1, 1, -1.0]), Z=np.array([[1, 0.5, 0.25, 0.125, 0.3]]))
    return data, V, np.array([1.0, -1.0])


def test_relu_size_bounds_the_rounding_of_its_units():
    """A unit whose exact V^T u is > 0 but computes slightly negative contributed 0 to the
    size: the size of token 0 is at least the error of its computed score (exact rationals),
    and verify ties tokens 0 and 1 as the linear head on the same data does."""
    from svmgeo.verify._judge import scored

    data, V, w = _relu_rounding_case()
    sdata, sizes = scored(data, "relu", w, V)
    got = sg.token_scores(sdata)[0]
    Ve = [[Fraction(float(c)) for c in row] for row in V]
    for t, x in enumerate(np.asarray(data.X)[0]):
        pre = [sum(Fraction(float(x[i])) * Ve[i][j] for i in range(5)) for j in range(2)]
        exact = sum(Fraction(float(w[j])) * max(pre[j], Fraction(0)) for j in range(2))
        assert sizes[0, 0, t] >= abs(Fraction(float(got[t])) - exact), t
    relu = sg.verify(data, head="relu", V=V, v=w, n_steps=100, backend="numpy")
    lin = sg.verify(data, n_steps=100, backend="numpy")
    assert lin.optimal_ties == ((0, 0, (0, 1)),)  # the reference
    assert relu.optimal_ties == lin.optimal_ties
    assert relu.is_optimal


def _overflow_case() -> sg.TokenData:
    X = np.array(
        [[[1, 1, 0.5], [1, 1, -0.3], [1, 1, 0.1]], [[1, 1, -0.2], [1, 1, 0.4], [1, 1, 0.0]]]
    )
    Z = np.array([[1, 0.5, 0.3], [0.2, 1, -0.4]])
    return sg.TokenData(X, v=np.array([0, 0, 1.0]), Z=Z)


@pytest.mark.parametrize(
    ("kw", "names"),
    [
        (dict(head="relu", V=np.array([[1e308, 0], [-1e308, 0], [0, 1.0]]), v=[1.0, 1.0]), "V"),
        (dict(v=[1e308, -1e308, 1.0]), "v"),
        (dict(head="concave", v=[1e308, -1e308, 1.0], lam=0.1), "v or lam"),
    ],
    ids=["relu", "linear", "concave"],
)
def test_term_sizes_that_overflow_are_refused_naming_the_parameter(kw, names):
    """Scores that cancel (1e308 - 1e308) are finite, their term sizes are not: by the tie rule
    an infinite size ties every token, so verify refuses, naming what to scale down, without
    RuntimeWarnings (it failed on the 'sizes' of optimal_token_sets, never passed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(sg.ProblemError, match="overflow float64") as err:
            sg.verify(_overflow_case(), n_steps=50, backend="numpy", **kw)
    assert f"Scale {names}" in str(err.value) and "'sizes'" not in str(err.value)
