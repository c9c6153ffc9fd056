# SPDX-License-Identifier: BSD-3-Clause
r"""
Next-token prediction and the Graph-SVM
=======================================

For next-token prediction (Li, Huang, Ildiz, Rawat, Oymak, arXiv:2403.08081) the tokens of each
sequence are ordered by a token-priority graph; GD's W splits into a finite component
:math:`W^{\mathrm{fin}}` (inside the strongly connected components) plus a growing multiple of the
Graph-SVM direction :math:`W^{\mathrm{svm}}`. :func:`svmgeo.ntp.verify_ntp_training` trains and
measures both, here for acyclic graphs (pure retrieval) and graphs with cycles.
"""

import numpy as np

import svmgeo as sg
from svmgeo.ntp import verify_ntp_training
from svmgeo.plot import pyplot

plt = pyplot()

fig, ax = plt.subplots(figsize=(5.5, 3.6), constrained_layout=True)
for name, tier in (("acyclic", 1), ("with cycles", 2)):
    data = sg.random_next_token_data(60, 5, 6, 10, tier_size=tier, seed=0)
    rep = verify_ntp_training(data, n_steps=1500, step_size=0.1)
    print(f"{name}: {rep.n_margin_rows} margin rows, {rep.n_equality_rows} equality rows; "
          f"final corr(W, W_svm) = {rep.corr_svm[-1]:.5f}, top mass {rep.top_mass[-1]:.4f}")  # fmt: skip
    ax.semilogy(rep.steps, np.maximum(1 - rep.corr_svm, 1e-16), label=name)
ax.set_xlabel("GD step")
ax.set_ylabel("1 - corr($W_t$, $W^{svm}$)")
ax.legend(fontsize=8)
plt.show()
