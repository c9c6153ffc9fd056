# SPDX-License-Identifier: BSD-3-Clause
"""The snippets of the regularization-path section of docs/analysis.md, in order.

Run with ``PYTHONPATH=. python docs/regpath_examples.py``; its output is pasted in the docs.
"""

import time
import warnings

import numpy as np

import svmgeo as sg

warnings.simplefilter("default")
np.set_printoptions(precision=4, suppress=False, linewidth=100)

# --- W path
data = sg.random_data(4, 5, 8, seed=2, score_gap=0.05)
radii = [0.5, 1, 2, 4, 8, 16, 32, 64, 128]
t0 = time.perf_counter()
path = sg.regularization_path(data, radii, param="W")  # logistic loss, linear head
print(f"{time.perf_counter() - t0:.2f} s")
print(1 - path.correlation)  # against Att-SVM(opt)
print(path.log_loss_gap)  # log(L(W_R) - L*): L itself stops changing in float64
print(path.loss[-3:] - path.loss[-1])
print(path.stationarity.max(), path.converged.all(), path.n_iter)

# --- KQ path
t0 = time.perf_counter()
path_kq = sg.regularization_path(data, radii, param="KQ", m=8)
print(f"{time.perf_counter() - t0:.2f} s")
print(1 - path_kq.correlation)  # against Att-SVM* (nuclear norm)
W_fro = sg.att_svm(data).W
print(1 - np.array([sg.correlation(W, W_fro) for W in path_kq.W[-3:]]))

# --- local path
alpha = np.array([0, 2, 4, 3])
print(bool(sg.is_locally_optimal(data, alpha)), sg.optimal_tokens(data))
W_a = sg.att_svm(data, alpha).W
eps_max = sg.score_cone_margin(data, alpha, W_a) / np.linalg.norm(W_a)
print(eps_max)
t0 = time.perf_counter()
local_path = sg.regularization_path(data, radii, alpha=alpha, eps=0.5 * eps_max, local_set="ball")
print(f"{time.perf_counter() - t0:.2f} s")
print(1 - local_path.correlation)  # against Att-SVM(alpha)
print(local_path.cone_margin / local_path.eps)  # >= 1: inside C_eps(alpha)
print(local_path.converged.all())

# --- local path whose cone stays active up to R = 64; the W path on the same data
data6 = sg.random_data(4, 5, 8, seed=6, score_gap=0.05)
alpha6 = np.array([4, 1, 0, 0])
print(bool(sg.is_locally_optimal(data6, alpha6)), sg.optimal_tokens(data6))
W_a6 = sg.att_svm(data6, alpha6).W
eps6 = 0.5 * sg.score_cone_margin(data6, alpha6, W_a6) / np.linalg.norm(W_a6)
radii6 = [*radii, 256]
t0 = time.perf_counter()
local6 = sg.regularization_path(data6, radii6, alpha=alpha6, eps=eps6, local_set="ball")
print(f"{time.perf_counter() - t0:.2f} s")
print(1 - local6.correlation)  # against Att-SVM(alpha6)
print(local6.cone_margin / local6.eps)
print(local6.stationarity.max(), local6.converged.all(), local6.n_iter)
path6 = sg.regularization_path(data6, radii6)
beta = sg.gd.RiskOracle(data6)(path6.W[-1]).selected.ravel()
print(beta, bool(sg.is_locally_optimal(data6, beta)), path6.converged.all())
print(1 - path6.correlation[-1])  # against Att-SVM(opt)
W_b = sg.att_svm(data6, beta).W
print(1 - np.array([sg.correlation(W, W_b) for W in path6.W[-3:]]))

# --- bad input
for kwargs in ({"radii": [1, 4, 2]}, {"radii": [1], "alpha": alpha, "eps": 1.0}):
    try:
        sg.regularization_path(data, **kwargs)
    except sg.ProblemError as err:
        print(err)
