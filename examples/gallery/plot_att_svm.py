# SPDX-License-Identifier: BSD-3-Clause
r"""
Att-SVM on a random instance
============================

The attention SVM of a selection :math:`\alpha` (one token per sequence) is

.. math::

    W^{\mathrm{mm}}_\alpha = \arg\min_W \|W\| \quad\text{s.t.}\quad
    (x_{i\alpha_i} - x_{it})^\top W z_i \ge 1 \quad (t \ne \alpha_i).

svmgeo solves it for the Frobenius norm and for the nuclear norm, and proves each answer
(a KKT certificate, or a Farkas vector when the selection cannot be separated). Here:
the paper's random generator, the optimal tokens, both SVMs, and the margins of every
constraint: the support tokens are those at margin exactly 1.
"""

import numpy as np

import svmgeo as sg
from svmgeo.plot import pyplot

plt = pyplot()

data = sg.random_data(n=6, T=8, d=10, seed=2)
alpha = sg.optimal_tokens(data)
fro = sg.att_svm(data, alpha)
nuc = sg.att_svm(data, alpha, norm="nuc")
print(data)
print("optimal tokens:", alpha)
print(fro.status, f"||W||_F = {fro.objective:.6f}", "certificate passed:", fro.certificate.passed)
print(nuc.status, f"||W||_* = {nuc.objective:.6f}", "certificate passed:", nuc.certificate.passed)

# %%
# The margins :math:`(x_{i\alpha_i} - x_{it})^\top W z_i` of every constraint, and the singular
# values of both solutions: the nuclear-norm SVM has low rank.
cs = sg.att_svm_constraints(data, alpha)
margins = cs.apply(fro.W)
support = np.isclose(margins, 1.0, atol=1e-6)
print(f"{support.sum()} support constraints of {margins.size}; min margin {margins.min():.6f}")

fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), constrained_layout=True)
axes[0].plot(np.flatnonzero(~support), margins[~support], "o", label="other tokens")
axes[0].plot(np.flatnonzero(support), margins[support], "o", color="C3", label="support tokens")
axes[0].axhline(1.0, color="k", lw=0.8)
axes[0].set_xlabel("constraint (sequence, token)")
axes[0].set_ylabel("margin under $W^{mm}$ (Frobenius)")
axes[0].legend(fontsize=8)
for W, label in ((fro.W, "Frobenius $W^{mm}$"), (nuc.W, "nuclear $W^{mm\\star}$")):
    s = np.linalg.svd(W, compute_uv=False)
    axes[1].semilogy(np.arange(1, s.size + 1), np.maximum(s / s[0], 1e-16), "o-", label=label)
axes[1].set_xlabel("index")
axes[1].set_ylabel("singular value / largest")
axes[1].legend(fontsize=8)
plt.show()
