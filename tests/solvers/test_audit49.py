# SPDX-License-Identifier: BSD-3-Clause
"""Regressions of session 49's solver audit: the nuclear chain kept its first backend's
uncertified answer over a better second one, and missed the rank-one case where the
Frobenius optimum is the nuclear one."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg


def _rescaled(seed: int, Z: np.ndarray | None = None) -> tuple[sg.TokenData, np.ndarray]:
    """random_data(4, 3, 4, seed) with sequence 0 scaled by 1e-6 and sequence 1 by 1e5 (rows
    of mixed scales, where the SDP backends do not certify), and its optimal tokens."""
    base = sg.random_data(4, 3, 4, seed=seed)
    X = np.array(base.X)
    X[0] *= 1e-6
    X[1] *= 1e5
    data = sg.TokenData(X, v=np.asarray(base.v), Y=np.asarray(base.Y),
                        Z=np.asarray(base.Z) if Z is None else Z)  # fmt: skip
    return data, sg.optimal_tokens(base)


def test_nuclear_chain_keeps_the_better_of_two_uncertified_answers() -> None:
    """SCS's answer (objective 35 % below the optimum, margins missed by 60 %) was returned
    over Clarabel's (residual 1e-4), and the message did not name Clarabel."""
    data, alpha = _rescaled(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        auto = sg.att_svm(data, alpha, norm="nuc")
        clarabel = sg.att_svm(data, alpha, norm="nuc", solver="clarabel")
    assert auto.certificate is not None and clarabel.certificate is not None
    assert auto.certificate.worst <= clarabel.certificate.worst
    assert "clarabel" in auto.message.lower() or "scs" in auto.message.lower()
    np.testing.assert_allclose(auto.objective, clarabel.objective, rtol=1e-6)


def test_nuclear_with_parallel_queries_is_the_frobenius_optimum() -> None:
    """Queries along one line: every feasible W has rank one, so the certified Frobenius
    optimum is the nuclear optimum (the chain used that only when no backend gave a W)."""
    u = np.random.default_rng(37).normal(size=4)
    data, alpha = _rescaled(0, Z=np.array([u, 2 * u, 0.5 * u, -u]))
    fro = sg.att_svm(data, alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nuc = sg.att_svm(data, alpha, norm="nuc")
    assert fro.status is sg.Status.OPTIMAL and nuc.status is sg.Status.OPTIMAL
    np.testing.assert_allclose(nuc.objective, fro.objective, rtol=1e-9)


def test_factored_nuclear_path_refuses_a_diverged_iterate_quietly(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The factored path fed a non-finite iterate to an SVD: LAPACK printed "illegal value"
    lines to stderr before the LinAlgError that solve_nuclear catches."""
    data, alpha = _rescaled(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        res = sg.att_svm(data, alpha, norm="nuc")
    assert res.W is not None and np.all(np.isfinite(res.W))
    captured = capfd.readouterr()
    assert "illegal value" not in captured.out + captured.err
