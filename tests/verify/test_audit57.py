# SPDX-License-Identifier: BSD-3-Clause
"""Session 57's audit of the sizes by which `verify` judges ties (`scored`).

A score's size bounds its round-off up to a factor, the tie rule's tolerance is ``TIE_RTOL``
times it. Products of a head's score that land below float64's smallest normal
:math:`\\mu = 2^{-1022}` are off by up to :math:`2^{-1075}` each, not a relative amount: sizes
without an absolute term read two scores tied exactly (exact rationals of the same floats) as
one above the other. Each test below failed on the tree before the fix (4e19dee): the ReLU
and linear heads' optimal sets missed the exact tie (``[True, False, False]``), verify called
the tied selection not optimal, and a ReLU head whose :math:`V^\\top u` overflows to NaN was
refused with "scores must be finite" (an argument the user did not pass).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.selection import TIE_RTOL
from svmgeo.verify._judge import judge, scored

S = 2.0**-1074  # the smallest subnormal: the spacing of the grid products round to below mu
C = 2.0**-600  # a head weight whose products with tokens near 2^-474 land on that grid
X3 = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])  # attention's keys (normal scale)
Z1 = np.array([[1.0, 1.0]])


def _exact_relu(U: np.ndarray, V: np.ndarray, w: np.ndarray) -> list[Fraction]:
    """:math:`w^\\top \\mathrm{ReLU}(V^\\top u_t)` of every token, in exact rationals."""
    pre = [
        [sum((Fraction(float(u[j])) * Fraction(float(V[j, l])) for j in range(len(u))), Fraction(0))
         for l in range(V.shape[1])]
        for u in U
    ]  # fmt: skip
    return [sum(Fraction(float(w[l])) * max(p[l], Fraction(0)) for l in range(len(w))) for p in pre]


def _exact_sets(exact: list[Fraction]) -> list[bool]:
    top = max(exact)
    return [e == top for e in exact]


# Token 0: u = (1.5, 0) 2^-474, its unit V^T u = 1.5 S rounds to 2 S. Token 1: (0.5, 1) 2^-474,
# units 0.5 S -> 0 and 1 S. Exact scores 1.5 S and 1.5 S (tied), computed 2 S and 1 S; V is
# diagonal and w = (1, 1), so no sum is rounded (products by 0 or 1 are exact).
U_RELU = np.array([[[1.5 * 2.0**-474, 0.0], [0.5 * 2.0**-474, 2.0**-474], [0.0, 0.0]]])
V_RELU = np.array([[C, 0.0], [0.0, C]])
W_RELU = np.array([1.0, 1.0])


def _relu_data() -> sg.TokenData:
    return sg.TokenData(X3, Z=Z1, values=U_RELU)


def test_relu_scores_tied_exactly_are_tied_at_underflow():
    """The exact scores (Fraction of the same floats) of tokens 0 and 1 are equal: both are
    optimal, the selection of either is optimal, and neither is a LOT (the other ties it)."""
    exact = _exact_relu(U_RELU[0], V_RELU, W_RELU)
    assert exact[0] == exact[1] == Fraction(3, 2) * Fraction(S)  # the premise
    sdata, sizes = scored(_relu_data(), "relu", W_RELU, V_RELU)
    got = sg.token_scores(sdata)[0]
    assert got[0] != got[1]  # round-off of underflowed products parts them
    sets = sg.optimal_token_sets(sdata, sizes=sizes)[0]  # judge's is_optimal reads these
    assert sets[:2].tolist() == _exact_sets(exact)[:2] == [True, True]
    for sel in (0, 1):  # judge's LOT test
        lot = sg.is_locally_optimal(sdata, [sel], sizes=sizes)
        assert lot.answer is False, lot.reason  # the other token ties it


def test_relu_sizes_cover_the_round_off_of_underflowed_products():
    """On random tokens near 2^-474 with V near 2^-600 (products on the subnormal grid), each
    computed score is within TIE_RTOL / 2 of its size of the exact one (so two exactly tied
    scores always tie): before, the error was up to half the size itself."""
    rng = np.random.default_rng(57)
    outside = []
    for _ in range(40):
        U = rng.uniform(-4, 4, size=(1, 5, 3)) * 2.0**-474
        V = rng.uniform(-4, 4, size=(3, 2)) * C
        w = rng.uniform(-2, 2, size=2)
        sdata, sizes = scored(
            sg.TokenData(rng.normal(size=(1, 5, 2)), Z=Z1, values=U), "relu", w, V
        )
        got = sg.token_scores(sdata)[0]
        for t, e in enumerate(_exact_relu(U[0], V, w)):
            err = abs(Fraction(float(got[t])) - e)
            if err > Fraction(TIE_RTOL / 2) * Fraction(float(sizes[0, 0, t])):
                outside.append((float(err), float(sizes[0, 0, t])))
    assert not outside, outside[:3]


def test_verify_calls_the_exactly_tied_selection_optimal():
    """verify from a W that selects token 1 (the scores are far too small to move it): the
    selection is optimal (tied with token 0), not "not optimal"."""
    W1 = np.array([[0.0, 0.0], [5.0, 5.0]])
    rep = sg.verify(
        _relu_data(), head="relu", V=V_RELU, v=W_RELU, init=W1, n_steps=3, normalized=False,
        backend="numpy",
    )  # fmt: skip
    assert rep.selection.tolist() == [1]
    assert rep.is_optimal
    assert not rep.is_lot


# The linear head v = (C, C): token 0 = (1.5, 0) 2^-474 scores 1.5 S -> 2 S; token 1 =
# (0.375, 1.125) 2^-474 scores 0.375 S + 1.125 S, computed 1 S in any order, fused or not
# (round(0.375) + round(1.125) = 0 + 1; round(round(1.125) + 0.375) = 1).
U_LIN = np.array([[[1.5 * 2.0**-474, 0.0], [0.375 * 2.0**-474, 1.125 * 2.0**-474], [0.0, 0.0]]])
V_LIN = np.array([C, C])


@pytest.mark.parametrize("head", ["data", "linear", "concave"])
def test_linear_scores_tied_exactly_are_tied_at_underflow(head):
    """The data's own optimal sets (head "data"), verify's linear head and its concave head
    with lam = 0 tie tokens 0 and 1, whose exact scores are equal."""
    exact = [sum(Fraction(float(u[j])) * Fraction(C) for j in range(2)) for u in U_LIN[0]]
    assert exact[0] == exact[1] and exact[2] == 0  # the premise
    data = sg.TokenData(X3, Z=Z1, values=U_LIN, v=V_LIN)
    if head == "data":
        sets = sg.optimal_token_sets(data)[0]
    else:
        sdata, sizes = scored(data, head, None, None, 0.0 if head == "concave" else None)
        sets = sg.optimal_token_sets(sdata, sizes=sizes)[0]
    assert sets[:2].tolist() == [True, True]


def test_relu_pre_activation_nan_is_refused_naming_v():
    """V^T u of terms beyond float64 of both signs sums to NaN (a unit the size rule read
    inactive, so the sizes stayed finite): refused as an overflow naming V, not as 'scores
    must be finite'."""
    d = 16
    U = np.zeros((1, 3, d))
    U[0, 0] = 1e149
    U[0, 1, 0] = U[0, 2, 1] = 1.0
    V = np.zeros((d, 2))
    V[:, 0] = 1e160 * np.where(np.arange(d) % 2 == 0, 1.0, -1.0)  # products +-1e309: inf
    V[0, 1] = 1.0
    data = sg.TokenData(X3, Z=Z1, values=U)
    with np.errstate(over="ignore", invalid="ignore"):
        pre = U @ V
    if not np.isnan(pre[0, 0, 0]):  # pragma: no cover - a BLAS that sums in another order
        pytest.skip("this BLAS does not sum the unit to NaN")
    with pytest.raises(sg.ProblemError, match=r"overflow float64 .* Scale V \(or v\) down"):
        scored(data, "relu", np.ones(2), V)
    with pytest.raises(sg.ProblemError, match=r"overflow float64 .* Scale V \(or v\) down"):
        sg.verify(data, head="relu", V=V, v=np.ones(2), n_steps=2, backend="numpy")


def test_scored_is_a_record_that_judge_reads_whole():
    """scored returns a Scored (data, sizes) that judge takes as one argument, so a verdict
    cannot pair scores with another head's sizes; it still unpacks as a pair. The verdict is
    the one of optimal_token_sets and is_locally_optimal with those sizes."""
    from svmgeo.verify._judge import Scored

    sc = scored(_relu_data(), "relu", W_RELU, V_RELU)
    assert isinstance(sc, Scored)
    sdata, sizes = sc
    assert sdata is sc.data and sizes is sc.sizes
    verdict = judge(sc, np.array([1]))
    np.testing.assert_array_equal(verdict.optimal_sets, sg.optimal_token_sets(sdata, sizes=sizes))
    assert verdict.is_optimal
    assert verdict.lot.answer is sg.is_locally_optimal(sdata, [1], sizes=sizes).answer


def test_concave_scores_whose_squares_underflow_do_not_rank_by_round_off():
    """The concave head :math:`u - \\lambda u^2` with lam = 1e200 and u = 1e-170, 0, -1: u²
    underflows to 0, so token 0 computes 1e-170 > 0 = token 1, while exactly (rationals of
    the same floats) token 1 is the strict top (1e-170 - 1e200·1e-340 < 0). The scores'
    sizes, lam times products that underflow, are normal (lam μ ≈ 2e-108): the optimal sets
    keep token 1 (tied with token 0 up to that round-off), not token 0 alone."""
    U = np.array([[[1e-170], [0.0], [-1.0]]])
    lam = 1e200
    exact = [Fraction(float(u)) - Fraction(lam) * Fraction(float(u)) ** 2 for u in U[0, :, 0]]
    assert _exact_sets(exact) == [False, True, False]  # the premise: token 1 alone
    sdata, sizes = scored(
        sg.TokenData(X3, Z=Z1, values=U, v=np.array([1.0])), "concave", None, None, lam
    )
    got = sg.token_scores(sdata)[0]
    assert got[0] > got[1]  # round-off of the underflowed square inverts the order
    sets = sg.optimal_token_sets(sdata, sizes=sizes)[0]
    assert sets.tolist() == [True, True, False]  # the exact top is kept; token 2 is far below
