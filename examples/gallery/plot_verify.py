# SPDX-License-Identifier: BSD-3-Clause
r"""
Gradient descent against the SVM predictions
============================================

:func:`svmgeo.verify` trains W by gradient descent from zero (:func:`svmgeo.train`), reads the
selection GD converged to, solves both SVMs for it and measures :math:`\mathrm{corr}(W(t),
W^{\mathrm{mm}}_\alpha)` along the run. That GD from zero reaches the optimal selection is a
measurement here: the paper's Theorem 4 proves directional convergence under a good initial
gradient and iterates that stay in its cone. The figure is :func:`svmgeo.plot.plot_verify`'s.
"""

import tempfile
from pathlib import Path

import svmgeo as sg
from svmgeo.plot import plot_verify, pyplot

plt = pyplot()

data = sg.random_data(6, 8, 10, seed=2, score_gap=0.05)
rep = sg.verify(data, param="W", step_size=0.1, n_steps=2000)
print(rep)

# %%
# The report's figure: 1 - correlation with each prediction, saturation of the softmax and
# growth of :math:`\|W\|_F`.
with tempfile.TemporaryDirectory() as tmp:
    png = plot_verify(rep, Path(tmp) / "verify.png")
    image = plt.imread(png)
fig, ax = plt.subplots(figsize=(12, 3.6))
ax.imshow(image)
ax.set_axis_off()
plt.show()
