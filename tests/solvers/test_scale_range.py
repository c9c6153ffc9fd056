# SPDX-License-Identifier: BSD-3-Clause
"""Scale range (session 51): the SVMs and the feasibility check are scale-covariant, so rows
and bounds of any size give the unit-scale answer rescaled, or a ProblemError that names
'rhs' and the rows 'A', 'B' where float64 cannot hold that answer; never a NaN certificate,
a bare OverflowError or an inf.

Bounds c times t scale W by t; rows a_j times t scale W by 1/t and the multipliers by 1/t^k
(k = 2 for the Frobenius dual, 1 for a norm's dual). Powers of two scale exactly.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers._certificates import FRO

NORMS = ["fro", "nuc", "spectral", ("lp", 1.0), ("lp", 1.5), ("lp", np.inf)]
UNIQUE = ["fro", ("lp", 1.5)]
"""The norms whose optimum is unique (strictly convex): W itself is compared."""
FLOAT_MAX = float(np.finfo(float).max)


def _rows(rhs: float = 1.0, rows: float = 1.0) -> sg.ConstraintSet:
    """Att-SVM's rows of random_data(4, 4, 6, seed=0) through pair_constraints, with every
    bound ``rhs`` and the rows a_j times ``rows`` (a ConstraintSet of its own: TokenData keeps
    its tokens within 1e+-151)."""
    data = sg.random_data(4, 4, 6, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    cs = sg.pair_constraints(data, cs.seq, cs.query, cs.pref, cs.comp, rhs=rhs)
    return cs if rows == 1.0 else dataclasses.replace(cs, A=cs.A * rows, tokens=None)


def _quiet(call: Callable[[], object]) -> object:
    """``call()`` with every RuntimeWarning (an overflow, an invalid value) an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return call()


@pytest.fixture(scope="module")
def unit() -> dict[str, sg.SVMResult]:
    """The optimum of every norm at unit scale."""
    return {str(norm): sg.solve_svm(_rows(), norm=norm) for norm in NORMS}


def _assert_scaled(res: sg.SVMResult, ref: sg.SVMResult, t: float, norm: object) -> None:
    """``res`` is ``ref`` with W times t: optimal, certified with finite residuals."""
    assert res.status is sg.Status.OPTIMAL, (norm, t, res.message)
    cert = res.certificate
    assert cert is not None and cert.passed and np.isfinite(cert.worst), (norm, t, cert)
    assert res.objective is not None and ref.objective is not None and res.W is not None
    np.testing.assert_allclose(res.objective / t, ref.objective, rtol=1e-8)
    if norm in UNIQUE:
        assert ref.W is not None
        np.testing.assert_allclose(res.W / t, ref.W, rtol=1e-7, atol=1e-9 * ref.objective)


@pytest.mark.parametrize("k", [-700, 700])
def test_frobenius_certificate_is_the_unit_one_at_every_size_of_w(
    k: int, unit: dict[str, sg.SVMResult]
) -> None:
    """Regression: the Frobenius certificate squared W's size (||W||^2 / 2, c^T lambda):
    at W of 2^700 ~ 5e210 every residual but the primal one was NaN, and at 2^-700 the gap
    was 0/0. It judges (2^k W, 2^k lambda) on bounds 2^k c exactly as (W, lambda) on c: the
    optimum passes, a wrong answer fails."""
    ref = unit["fro"]
    assert ref.W is not None and ref.dual is not None and ref.certificate is not None
    cs = _rows(2.0**k)
    W, lam = np.ldexp(ref.W, k), np.ldexp(ref.dual, k)
    cert = _quiet(lambda: FRO.certificate(cs, W, lam, 1e-8))
    assert isinstance(cert, sg.Certificate) and cert.passed, cert
    np.testing.assert_allclose(cert.worst, ref.certificate.worst, atol=1e-12)
    wrong = _quiet(lambda: FRO.certificate(cs, 1.01 * W, lam, 1e-8))
    assert isinstance(wrong, sg.Certificate) and not wrong.passed
