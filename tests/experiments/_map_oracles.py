# SPDX-License-Identifier: BSD-3-Clause
"""Independent oracles for the issue-#22 experiments, written from their definitions: the
naive SVMs in cvxpy (Clarabel), the attention outputs in plain numpy, and central-difference
Lipschitz constants."""

from __future__ import annotations

import cvxpy as cp
import numpy as np

import svmgeo as sg

H = 1e-6


def svm(A: np.ndarray, B: np.ndarray, norm: str = "fro") -> np.ndarray:
    """min ||W|| (Frobenius or nuclear) s.t. a_j^T W b_j >= 1, the naive formulation."""
    d = A.shape[1]
    W = cp.Variable((d, d))
    M = np.einsum("jd,je->jde", A, B)
    cons = [cp.sum(cp.multiply(W, M[j])) >= 1 for j in range(len(A))]
    obj = cp.norm(W, "fro") if norm == "fro" else cp.normNuc(W)
    cp.Problem(cp.Minimize(obj), cons).solve(solver=cp.CLARABEL)
    return np.asarray(W.value)


def logits(data: sg.TokenData, W: np.ndarray) -> np.ndarray:
    """u_it = x_it^T W z_i, shape (n, T) (one query per sequence)."""
    return np.einsum("ntd,de,ne->nt", np.asarray(data.X), W, np.asarray(data.Z))


def att_svm_rows(data: sg.TokenData, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows (x_i,alpha_i - x_it, z_i) for t != alpha_i."""
    X, Z = np.asarray(data.X), np.asarray(data.Z)
    A, B = [], []
    for i in range(data.n):
        for t in range(data.T):
            if t != alpha[i]:
                A.append(X[i, alpha[i]] - X[i, t])
                B.append(Z[i])
    return np.asarray(A), np.asarray(B)


def linear_rows(data: sg.TokenData) -> tuple[np.ndarray, np.ndarray]:
    """Rows (sum_t gamma_it x_it, z_i)."""
    gamma = sg.token_scores(data)
    return np.einsum("nt,ntd->nd", gamma, np.asarray(data.X)), np.asarray(data.Z)


def sigmoid_rows(data: sg.TokenData, signs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows (pi_it x_it, z_i) for every key."""
    X, Z = np.asarray(data.X), np.asarray(data.Z)
    A = (signs[:, :, None] * X).reshape(-1, data.d)
    return A, np.repeat(Z, data.T, axis=0)


def phi(attention: str, u: np.ndarray) -> np.ndarray:
    """The attention maps on the last axis, written out."""
    if attention == "softmax":
        e = np.exp(u - u.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    if attention == "linear":
        return u
    if attention == "normalized_linear":
        return u / u.sum(axis=-1, keepdims=True)
    if attention == "sigmoid":
        return 1.0 / (1.0 + np.exp(-u))
    return np.maximum(u, 0.0)


def outputs(attention: str, X: np.ndarray, W: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """y_i = X_i^T phi(X_i W z_i), shape (n, d)."""
    u = np.einsum("ntd,de,ne->nt", X, W, Z)
    return np.einsum("nt,ntd->nd", phi(attention, u), X)


def _fd(f, x: np.ndarray) -> np.ndarray:
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = H
        cols.append((f(x + e.reshape(x.shape)) - f(x - e.reshape(x.shape))).ravel() / (2 * H))
    return np.stack(cols, axis=-1)


def lipschitz_fd(data: sg.TokenData, W: np.ndarray, attention: str) -> tuple[float, float]:
    """(L_W, L_X): spectral norms of central-difference Jacobians of all outputs in vec W, and
    the largest over sequences of each sequence's output in vec X_i (the queries held fixed)."""
    X, Z = np.asarray(data.X), np.asarray(data.Z)
    JW = _fd(lambda V: outputs(attention, X, V, Z), W)
    LX = 0.0
    for i in range(data.n):
        z = Z[i : i + 1]
        JX = _fd(lambda Xi, z=z: outputs(attention, Xi[None], W, z), X[i])
        LX = max(LX, float(np.linalg.norm(JX, 2)))
    return float(np.linalg.norm(JW, 2)), LX


def radius(data: sg.TokenData, W: np.ndarray) -> np.ndarray:
    """r_i = min_tau (x_alpha - x_tau)^T W z_i / (sqrt 2 ||W z_i||), alpha the largest logit."""
    X, Z = np.asarray(data.X), np.asarray(data.Z)
    out = []
    for i in range(data.n):
        g = W @ Z[i]
        u = X[i] @ g
        a = int(np.argmax(u))
        out.append(
            min((u[a] - u[t]) for t in range(data.T) if t != a) / (np.sqrt(2) * np.linalg.norm(g))
        )
    return np.asarray(out)


def risk(data: sg.TokenData, W: np.ndarray, attention: str) -> float:
    """Logistic risk (1/n) sum_i log(1 + exp(-Y_i v^T y_i)), linear head."""
    X, Z = np.asarray(data.X), np.asarray(data.Z)
    f = outputs(attention, X, W, Z) @ np.asarray(data.v)
    return float(np.mean(np.logaddexp(0.0, -np.asarray(data.Y) * f)))
