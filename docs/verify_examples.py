# SPDX-License-Identifier: BSD-3-Clause
"""The examples of docs/verify.md, in order: `PYTHONPATH=. python docs/verify_examples.py`."""

import json

import numpy as np

import svmgeo as sg

print("# 1. global convergence, W")
data = sg.random_data(6, 8, 10, seed=2, score_gap=0.05)
rep = sg.verify(data, param="W", step_size=0.1, n_steps=2000)
print(rep)

print("\n# 2. global convergence, (K, Q)")
rep = sg.verify(
    data, param="KQ", init=("random", 0.01), seed=0, step_size=0.02, n_steps=4000, threshold=0.95
)
print(rep)

print("\n# 3. GD from zero reaching a locally optimal selection that is not the optimal one")
data0 = sg.random_data(6, 8, 10, seed=0, score_gap=0.05)
rep = sg.verify(data0, n_steps=2000)
print(rep.selection, sg.optimal_tokens(data0), rep.is_optimal, rep.is_lot, rep.converged_to)

print("\n# 4. start in the cone around W^mm_alpha of a non-optimal LOT")
small = sg.random_data(4, 3, 2, seed=0)
print(sg.locally_optimal_selections(small).selections.tolist(), sg.optimal_tokens(small))
rep = sg.verify(
    small, param="KQ", init="cone", alpha=[0, 2, 1, 0], cone_radius=100.0, cone_noise=0.05,
    seed=0, step_size=0.05, n_steps=2000,
)  # fmt: skip
print(rep)

print("\n# 5. ReLU head, a selected set of two tokens")
relu = sg.random_data(2, 3, 4, seed=25)
V = np.random.default_rng(25).standard_normal((4, 3))
rep = sg.verify(relu, head="relu", V=V, v=[1.0, -1.0, 1.0], step_size=0.1, n_steps=3000)
print(rep)

print("\n# 6. ReLU head where GD does not follow Gen-SVM")
relu8 = sg.random_data(2, 3, 4, seed=8)
V8 = np.random.default_rng(8).standard_normal((4, 3))
rep8 = sg.verify(relu8, head="relu", V=V8, v=[1.0, -1.0, 1.0], step_size=0.1, n_steps=3000)
cs = rep8.gen.svm.constraints
print(rep8.selected.astype(int).tolist(), round(rep8.final_corr_eq, 4), rep8.gamma)
print("GD margins on the Gen-SVM rows:", cs.apply(rep8.W).round(2))
print("W_dir margins:                 ", cs.apply(rep8.W_dir).round(4))

print("\n# 7. JSON")
text = rep.to_json()
print(sorted(json.loads(text))[:8], len(text))
back = sg.VerifyReport.from_json(text)
print(back.final_corr_eq == rep.final_corr_eq, back.run is None)
