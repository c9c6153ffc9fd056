# SPDX-License-Identifier: BSD-3-Clause
"""Frobenius results of two svmgeo trees on 28 instances (degenerate ones included), compared.

Usage (one process per tree; the second command compares)::

    PYTHONPATH=<before> python benchmarks/compare_frobenius_results.py run /tmp/before.pkl
    PYTHONPATH=<after> python benchmarks/compare_frobenius_results.py run /tmp/after.pkl
    python benchmarks/compare_frobenius_results.py cmp /tmp/before.pkl /tmp/after.pkl

Each instance is solved by ``solve_svm(cs)``; status, proof, certificate verdict, objective
(equal to 1e-12 relative) and W are compared, and the solvers named.

Options after ``run <path>`` (give both trees the same ones): ``--large`` adds the six N = 3,800
instances of ``bench_svm_peers.py --large`` ((200, 20, 200) and (200, 20, 1000), seeds 0-2),
whose polish solves reach the CG path of ``RowGeometry.min_norm_solve``; ``--force-cg`` sends
every G_SS solve to CG first (``_cg_first`` patched to True), so CG also meets the singular,
scaled and degenerate instances.
"""

import pickle
import sys
import warnings

import numpy as np

import svmgeo as sg
from svmgeo.solvers import solve_svm


def instances():
    out = []

    def att(n, T, d, seed, **kw):
        data = sg.random_data(n, T, d, seed=seed, **kw)
        return sg.att_svm_constraints(data, sg.optimal_tokens(data, ties="first"))

    for n, T, d in [(12, 10, 20), (20, 10, 20), (50, 20, 40), (112, 10, 40)]:
        out.append((f"bench{(n, T, d)}", att(n, T, d, 0)))
    for s in (1, 2):
        out.append((f"(20,10,20) seed {s}", att(20, 10, 20, s)))
    out.append(("many SV (30,10,100)", att(30, 10, 100, 3)))
    out.append(("rank-deficient d=3 (40,10,3)", att(40, 10, 3, 4)))
    out.append(("rank-deficient d=5 (20,8,5)", att(20, 8, 5, 5)))
    out.append(("low-d (6,5,2)", att(6, 5, 2, 7)))
    out.append(("query all causal", att(4, 6, 10, 8, query="all", mask="causal")))
    out.append(("n_queries 3", att(5, 6, 12, 9, n_queries=3)))
    # duplicate (tie) tokens: identical rows, singular G
    base = sg.random_data(10, 8, 20, seed=11)
    X = base.X.copy()
    alpha = sg.optimal_tokens(base)
    for i in range(X.shape[0]):
        o1, o2 = (alpha[i] + 1) % 8, (alpha[i] + 2) % 8
        X[i, o2] = X[i, o1]
    d1 = sg.TokenData(X, Z=base.Z, v=base.v, Y=base.Y)
    out.append(("tied tokens (10,8,20)", sg.att_svm_constraints(d1, alpha)))
    # duplicated queries
    b2 = sg.random_data(6, 5, 8, seed=12)
    Z = np.repeat(b2.Z[:, None, :], 2, axis=1)
    d2 = sg.TokenData(b2.X, Z=Z, v=b2.v, Y=b2.Y)
    out.append(
        (
            "duplicated queries",
            sg.att_svm_constraints(d2, np.repeat(sg.optimal_tokens(b2)[:, None], 2, axis=1)),
        )
    )
    # infeasible: duplicate of selected token; zero query; hull
    b3 = sg.random_data(8, 6, 10, seed=13)
    a3 = sg.optimal_tokens(b3)
    X3 = b3.X.copy()
    X3[0, (a3[0] + 1) % 6] = X3[0, a3[0]]
    out.append(
        (
            "infeasible duplicate",
            sg.att_svm_constraints(sg.TokenData(X3, Z=b3.Z, v=b3.v, Y=b3.Y), a3),
        )
    )
    b4 = sg.random_data(8, 6, 10, seed=14)
    Z4 = b4.Z.copy()
    Z4[2] = 0
    out.append(
        (
            "infeasible zero query",
            sg.att_svm_constraints(sg.TokenData(b4.X, Z=Z4, v=b4.v, Y=b4.Y), sg.optimal_tokens(b4)),
        )
    )
    Xh = np.array([[[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]])
    out.append(
        (
            "infeasible hull",
            sg.att_svm_constraints(
                sg.TokenData(Xh, Z=np.array([[1.0, 0.3]]), v=np.ones(2)), np.array([0])
            ),
        )
    )
    # a non-optimal selection (many infeasible/feasible mixes)
    b5 = sg.random_data(15, 6, 30, seed=15)
    out.append(("selection 0 (15,6,30)", sg.att_svm_constraints(b5, np.zeros(15, int))))
    # wedge
    for eps in (1e-4, 1e-6):
        Xw = np.array([[[0.0, 0.0], [-1.0, -eps], [2.0, -eps], [0.3, -3.0 * eps]]])
        out.append(
            (
                f"wedge {eps}",
                sg.att_svm_constraints(
                    sg.TokenData(Xw, Z=np.array([[1.0, 0.7]]), v=np.array([1.0, 0.0])),
                    np.array([0]),
                ),
            )
        )
    # scaled rows
    b6 = sg.random_data(10, 10, 20, seed=16)
    X6 = b6.X * 1e7
    out.append(
        (
            "scaled 1e7",
            sg.att_svm_constraints(sg.TokenData(X6, Z=b6.Z, v=b6.v, Y=b6.Y), sg.optimal_tokens(b6)),
        )
    )
    out.append(("large (100,10,60)", att(100, 10, 60, 17)))
    b = sg.random_data(50, 20, 40, seed=21)
    a = sg.optimal_tokens(b)
    X = b.X.copy()
    for i in range(50):
        X[i, (a[i] + 2) % 20] = X[i, (a[i] + 1) % 20]
    out.append(
        (
            "large ties, singular G (N=950)",
            sg.att_svm_constraints(sg.TokenData(X, Z=b.Z, v=b.v, Y=b.Y), a),
        )
    )
    out.append(
        (
            "large scaled 1e-6 (N=950)",
            sg.att_svm_constraints(sg.TokenData(b.X * 1e-6, Z=b.Z, v=b.v, Y=b.Y), a),
        )
    )
    out.append(("large many SV (25,20,200) N=475", att(25, 20, 200, 18)))
    out.append(("large (60,10,100) N=540", att(60, 10, 100, 19)))
    out.append(("large n_queries 2 (40,12,60)", att(40, 12, 60, 20, n_queries=2)))
    out.append(("large query all (8,24,80)", att(8, 24, 80, 22, query="all")))
    return out


def large_instances():
    out = []
    for n, T, d in [(200, 20, 200), (200, 20, 1000)]:
        for seed in (0, 1, 2):
            data = sg.random_data(n, T, d, seed=seed)
            out.append(
                (
                    f"CG {(n, T, d)} seed {seed}",
                    sg.att_svm_constraints(data, sg.optimal_tokens(data)),
                )
            )
    return out


def run(path, options=()):
    if "--force-cg" in options:
        from svmgeo.solvers import _geometry

        _geometry._cg_first = lambda size, N: True
    cases = instances() + (large_instances() if "--large" in options else [])
    res = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, cs in cases:
            r = solve_svm(cs)
            f = r.extras.get("feasibility")
            res[name] = dict(
                N=cs.N,
                status=str(r.status),
                proof=r.proof,
                objective=r.objective,
                W=r.W,
                dual=r.dual,
                margins=r.margins,
                solver=r.solver,
                cert=None if r.certificate is None else bool(r.certificate.passed),
                farkas=r.farkas,
                feas=None if f is None else (str(f.status), f.proof, f.solver),
            )
    pickle.dump(res, open(path, "wb"))


def cmp(a, b):
    A, B = pickle.load(open(a, "rb")), pickle.load(open(b, "rb"))
    bad = 0  # instances that differ
    for k in A:
        x, y = A[k], B[k]
        same = x["status"] == y["status"] and x["proof"] == y["proof"] and x["cert"] == y["cert"]
        rel = float("nan")
        if (
            x["objective"] is not None
            and y["objective"] is not None
            and np.isfinite(x["objective"])
        ):
            rel = abs(x["objective"] - y["objective"]) / max(abs(x["objective"]), 1e-300)
            same &= rel <= 1e-12
        wd = float("nan")
        if x["W"] is not None and y["W"] is not None:
            wd = float(np.abs(x["W"] - y["W"]).max() / max(np.abs(x["W"]).max(), 1e-300))
        bad += not same
        print(
            f"{k:32s} N={x['N']:5d} {x['status']:>22s}/{y['status']:<22s} proof {x['proof']}/{y['proof']} cert {x['cert']}/{y['cert']} obj rel {rel:.1e} W rel {wd:.1e} solver {x['solver']}/{y['solver']} feas {x['feas']}/{y['feas']}{'' if same else '  <-- DIFFERS'}"
        )
    print("differences:", bad, "of", len(A))


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3:])
    else:
        cmp(sys.argv[2], sys.argv[3])
