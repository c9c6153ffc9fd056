# SPDX-License-Identifier: BSD-3-Clause
"""The tutorial's code (docs/tutorial.md). Run: python docs/tutorial.py"""

import numpy as np

import svmgeo as sg

# 1. data: the paper's generator (tokens, queries and head on the unit sphere, labels +-1)
data = sg.random_data(n=6, T=8, d=10, seed=2)
print(data)
alpha = sg.optimal_tokens(data)  # argmax_t Y_i v.x_it; ties would raise TieError
print("optimal tokens:", alpha)

# 2. the SVMs, with certificates computed by svmgeo
fro = sg.att_svm(data, alpha)
print(fro.status, f"||W||_F = {fro.objective:.6f}", "certificate passed:", fro.certificate.passed)
nuc = sg.att_svm(data, alpha, norm="nuc")
s = np.linalg.svd(nuc.W, compute_uv=False)
print(nuc.status, f"||W||_* = {nuc.objective:.6f}", "rank:", int(np.sum(s > 1e-6 * s[0])))
low = sg.att_svm(data, alpha, norm="nuc", rank=1, seed=0)
print(
    low.status, f"rank-1 objective {low.objective:.6f}, gap to convex bound {low.relative_gap:.3e}"
)

# 3. feasibility below Theorem 1's dimension: d = 2 < T - 1
small = sg.random_data(n=4, T=3, d=2, seed=0)
for sel in ([0, 0, 1, 0], [0, 0, 2, 0]):
    feas = sg.feasibility(small, sel)
    print(sel, "feasible" if feas else f"infeasible, Farkas weights {np.round(feas.farkas, 4)}")

# 4. support tokens and locally optimal selections
sup = sg.support_tokens(data, alpha)
print("support tokens per sequence:", np.asarray(sup).sum(axis=1))
lots = sg.locally_optimal_selections(small)
print(f"{len(lots.selections)} LOTs among {lots.total} selections ({lots.pruned} pruned)")

# 5. gradient descent and the theory's prediction
run = sg.train(data, n_steps=2000, step_size=0.1)
print(run.status, f"corr(W_GD, W_mm) = {sg.correlation(run.W, fro.W):.6f}")
report = sg.verify(data, n_steps=2000)
print("verify: converged to", report.converged_to, "| optimal:", report.is_optimal)
