# SPDX-License-Identifier: BSD-3-Clause
"""Independent oracles for the analysis tests, written from SPEC §2-5 (not from svmgeo.analysis)."""

from __future__ import annotations

import itertools

import numpy as np

import svmgeo as sg

ACTIVE_TOL = 1e-6


def brute_force_lots(data: sg.TokenData) -> tuple[list[np.ndarray], int]:
    """Every selection, no pruning: feasibility, then att_svm, then the LOT rule from the margins."""
    vis = data.visible
    n, K, _ = vis.shape
    cands = [np.flatnonzero(vis[i, k]) for i in range(n) for k in range(K)]
    scores = sg.token_scores(data).reshape(n, K, -1)
    lots, n_feasible = [], 0
    for combo in itertools.product(*cands):
        alpha = np.asarray(combo).reshape(n, K)
        user = alpha[:, 0] if data.single_query else alpha
        if not sg.feasibility(data, user).feasible:
            continue
        n_feasible += 1
        res = sg.att_svm(data, user)
        assert res.success, res.message
        cs = res.constraints
        ok = True
        for j in range(cs.N):
            i, k, t = int(cs.seq[j]), int(cs.query[j]), int(cs.comp[j])
            if (
                abs(res.margins[j] - 1.0) <= ACTIVE_TOL
                and scores[i, k, t] >= scores[i, k, alpha[i, k]]
            ):
                ok = False
        if ok:
            lots.append(user)
    return lots, n_feasible
