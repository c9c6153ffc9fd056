# SPDX-License-Identifier: BSD-3-Clause
"""The snippets of docs/analysis.md, in order; run: PYTHONPATH=. python docs/analysis_examples.py"""

import warnings

import numpy as np

import svmgeo as sg

warnings.simplefilter("always")
warnings.showwarning = lambda m, c, *a, **k: print(f"{c.__name__}: {m}")


X = np.array([[[1.0, 0.0], [0.0, 1.0], [-2.0, 0.0]]])
data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[3.0, 1.0, 2.0]]))

sup = sg.support_tokens(data, [1])
print(np.asarray(sup))
print(sup.by_dual, sup.weakly_active.any(), sup.inconsistent.any())
print(sup.svm.W.round(6))
print(sup.svm.dual.round(6))

bad = sg.TokenData(
    np.array([[[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]]]),
    Z=np.array([[1.0, 0.0]]),
    scores=np.array([[1.0, 2.0, 3.0]]),
)
inf = sg.support_tokens(bad, [2])
print(inf.feasible, inf.mask, inf.farkas)

lo = sg.is_locally_optimal(data, [2])
print(bool(lo), "|", lo.reason)
flip = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[3.0, 2.5, 2.0]]))
lo = sg.is_locally_optimal(flip, [2])
print(bool(lo), "|", lo.reason)
print(lo.violations)

lots = sg.locally_optimal_selections(data)
print(lots.selections.tolist())
big = sg.random_data(4, 3, 2, seed=0)  # d = 2 < T − 1: many infeasible selections
lots = sg.locally_optimal_selections(big)
print(lots.summary())
print(lots.selections.tolist())

try:
    sg.locally_optimal_selections(sg.random_data(8, 6, 3, seed=0))
except sg.ProblemError as e:
    print("ProblemError:", e)

rd = sg.random_data(3, 4, 5, seed=0)
W_mm = sg.att_svm(rd).W
W = 10 * W_mm + np.random.default_rng(1).normal(size=W_mm.shape)
print(
    round(sg.correlation(W, W_mm), 4),
    sg.in_cone(W, W_mm, mu=0.05),
    sg.in_cone(W, W_mm, mu=0.05, R=100.0),
)

W = np.array([[1.0, 0.0], [3.0, 0.0]])
print(
    sg.score_cone_margin(data, [2], W),
    sg.in_score_cone(data, [2], W, eps=0.5),
    sg.in_score_cone(data, [2], W, eps=0.7),
)
print(sg.score_cone_margin(data, [0], W))

s = np.array([[0.6, 0.4 - 1e-4, 1e-4]])
sel = sg.selected_sets(s)  # warns
print(sel.selected, sel.ambiguous)
probs = np.array([[0.6, 0.4 - 1e-8, 1e-8]])
sel = sg.selected_sets(probs)
print(sel.selected, sel.masked)

X2 = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
d2 = sg.TokenData(X2, Z=np.array([[1.0, 0.0]]), v=np.ones(2))
W_gd = np.array([[5.2, 0.1], [4.8, 0.0]])
gen = sg.gen_svm(d2, sel, probs=probs, fit_to=W_gd)
print(gen.W_dir.round(6))
print(gen.W_fin.round(6))
print(round(gen.R, 6), round(gen.fit_correlation, 6), gen.gamma)
print(gen.W_eq.round(6))
