# SPDX-License-Identifier: BSD-3-Clause
"""The bad-input corpus of issue 12: every case is CLEAR.

CLEAR means: a clear error of svmgeo's type whose message names the argument, or a correct,
certified result. Through the command line: exit status 2 and exactly one line on stderr (no
traceback). CLI cases run in-process through ``svmgeo.cli.main``; a handful run as a
subprocess, as a user meets them.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo import ProblemError, StopStatus, SvmgeoError
from svmgeo.cli import main

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4, 5))
V = RNG.normal(size=5)
Z = RNG.normal(size=(3, 5))
DATA = sg.TokenData(X, v=V, Z=Z)
ALPHA = sg.optimal_tokens(DATA)
SELF = sg.TokenData(X, v=V, query=0)
SEQ = sg.TokenData(X, v=V, query="all")
CAUSAL = sg.TokenData(X, v=V, query="all", mask="causal")
W5 = np.eye(5)


# ---------------------------------------------------------------------------------------------
# API: (call, pattern the svmgeo error's message must contain); each call must raise
def _err(call: Callable[[], Any], match: str, id: str) -> Any:
    return pytest.param(call, match, id=id)


def _nan(shape: tuple[int, ...], where: tuple[int, ...] = (0,)) -> np.ndarray:
    a = RNG.normal(size=shape)
    a[where] = np.nan
    return a


TD = sg.TokenData
API_ERRORS = [
    # TokenData: X
    _err(lambda: TD(None, v=V, Z=Z), "X is required", "X-none"),
    _err(lambda: TD(X[0, 0], v=V, Z=Z), "X must be a 3-D array", "X-1d"),
    _err(lambda: TD(X[0], v=V, Z=Z), "X must be a 3-D array", "X-2d"),
    _err(lambda: TD(X[None], v=V, Z=Z), "X must be a 3-D array", "X-4d"),
    _err(lambda: TD(np.zeros((0, 4, 5)), Z=np.zeros((0, 5))), "X must have n, T, d >= 1", "X-n0"),
    _err(lambda: TD(np.zeros((3, 0, 5)), Z=Z), "X must have n, T, d >= 1", "X-T0"),
    _err(lambda: TD(np.zeros((3, 4, 0)), query=0), "X must have n, T, d >= 1", "X-d0"),
    _err(lambda: TD(_nan((3, 4, 5)), v=V, Z=Z), "X must be finite", "X-nan"),
    _err(lambda: TD(X * np.inf, v=V, Z=Z), "X must be finite", "X-inf"),
    _err(lambda: TD(X + 1j, v=V, Z=Z), "X must be real", "X-complex"),
    _err(lambda: TD([[[1, 2]], [[1]]], query=0), "X", "X-ragged"),
    _err(lambda: TD(np.full((3, 4, 5), "a"), query=0), "X must be numeric", "X-strings"),
    _err(lambda: TD(X * 1e200, v=V, Z=Z), "too large for float64", "X-1e200"),
    _err(lambda: TD(X * 1e80, v=V, query=0), "too large for float64", "X-self-1e80"),
    # TokenData: queries
    _err(lambda: TD(X, v=V), "needs queries", "no-queries"),
    _err(lambda: TD(X, v=V, Z=Z, query=0), "either Z", "Z-and-query"),
    _err(lambda: TD(X, v=V, Z=Z[:2]), "Z must have shape", "Z-short"),
    _err(lambda: TD(X, v=V, Z=Z[:, :4]), "Z must have shape", "Z-d"),
    _err(lambda: TD(X, v=V, Z=Z[0]), "Z must be a 2-D or 3-D", "Z-1d"),
    _err(lambda: TD(X, v=V, Z=np.zeros((3, 0, 5))), "at least one query", "Z-K0"),
    _err(lambda: TD(X, v=V, Z=_nan((3, 5))), "Z must be finite", "Z-nan"),
    _err(lambda: TD(X, v=V, Z=Z + 1j), "Z must be real", "Z-complex"),
    _err(lambda: TD(X, v=V, Z=Z * 1e200), "too large for float64", "Z-1e200"),
    _err(lambda: TD(X, v=V, query=4), "'query' parameter", "query-high"),
    _err(lambda: TD(X, v=V, query=-5), "'query' parameter", "query-low"),
    _err(lambda: TD(X, v=V, query=1.0), "query must be an int", "query-float"),
    _err(lambda: TD(X, v=V, query=True), "query must be an int", "query-bool"),
    _err(lambda: TD(X, v=V, query="first"), "query must be an int", "query-str"),
    # labels and head
    _err(lambda: TD(X, Y=np.ones(2), v=V, Z=Z), "Y must have shape", "Y-short"),
    _err(lambda: TD(X, Y=np.ones((3, 2)), v=V, Z=Z), "Y must have shape", "Y-K"),
    _err(
        lambda: TD(X, Y=np.array([0, 1, 1]), v=V, Z=Z), r"Y must hold labels in \{-1, \+1\}", "Y-01"
    ),
    _err(lambda: TD(X, Y=np.array([2, 1, 1]), v=V, Z=Z), "Y must hold labels", "Y-2"),
    _err(lambda: TD(X, Y=np.array([np.nan, 1, 1]), v=V, Z=Z), "Y must be finite", "Y-nan"),
    _err(lambda: TD(X, Y=np.ones((3, 1, 1)), v=V, Z=Z), "Y must be a 1-D or 2-D", "Y-3d"),
    _err(lambda: TD(X, v=V[:4], Z=Z), "v must have shape", "v-short"),
    _err(lambda: TD(X, v=np.ones((5, 1)), Z=Z), "v must be a 1-D", "v-2d"),
    _err(lambda: TD(X, v=_nan((5,)), Z=Z), "v must be finite", "v-nan"),
    _err(lambda: TD(X, v=V + 1j, Z=Z), "v must be real", "v-complex"),
    # mask
    _err(lambda: TD(X, v=V, query="all", mask="upper"), "mask must be None, 'causal'", "mask-str"),
    _err(
        lambda: TD(X, v=V, Z=Z, mask="causal"),
        "mask='causal' needs one query per token",
        "mask-causal-K1",
    ),
    _err(
        lambda: TD(X, v=V, query="all", mask=np.ones((3, 4), bool)),
        "mask must have shape",
        "mask-shape",
    ),
    _err(
        lambda: TD(X, v=V, query="all", mask=np.ones((2, 4, 4), bool)),
        "mask must have shape",
        "mask-n",
    ),
    _err(lambda: TD(X, v=V, query="all", mask=np.eye(4) * 2), "mask must be a boolean", "mask-2"),
    _err(
        lambda: TD(X, v=V, query="all", mask=np.zeros((4, 4), bool)),
        "mask hides every key",
        "mask-empty",
    ),
    _err(
        lambda: TD(X, v=V, query="all", mask=np.ones(4, bool)),
        "mask must be a 2-D or 3-D",
        "mask-1d",
    ),
    # scores
    _err(lambda: TD(X, Z=Z, scores=np.ones((3, 3))), "scores must have shape", "scores-shape"),
    _err(lambda: TD(X, Z=Z, scores=_nan((3, 4))), "scores must be finite", "scores-nan"),
    _err(lambda: TD(X, Z=Z, scores=np.ones((3, 4)) + 1j), "scores must be real", "scores-complex"),
    _err(lambda: TD(X, Z=Z, scores=np.ones(4)), "scores must be a 2-D or 3-D", "scores-1d"),
    # random_data
    _err(lambda: sg.random_data(0, 4, 5), "'n' parameter of random_data", "random-n0"),
    _err(lambda: sg.random_data(3, -1, 5), "'T' parameter of random_data", "random-T-1"),
    _err(lambda: sg.random_data(3, 4, 2.5), "'d' parameter of random_data", "random-d-float"),
    _err(lambda: sg.random_data("3", 4, 5), "'n' parameter of random_data", "random-n-str"),
    _err(lambda: sg.random_data(3, 4, 5, n_queries=0), "'n_queries' parameter", "random-K0"),
    _err(
        lambda: sg.random_data(3, 4, 5, query=0, n_queries=2), "n_queries applies", "random-K-self"
    ),
    _err(lambda: sg.random_data(3, 4, 5, score_gap=-1), "'score_gap' parameter", "random-gap-neg"),
    _err(
        lambda: sg.random_data(3, 4, 5, score_gap=math.nan),
        "'score_gap' parameter",
        "random-gap-nan",
    ),
    _err(
        lambda: sg.random_data(3, 4, 5, score_gap=5.0, max_tries=3),
        "could not meet score_gap",
        "random-gap-big",
    ),
    _err(lambda: sg.random_data(3, 4, 5, max_tries=0), "'max_tries' parameter", "random-tries0"),
    _err(lambda: sg.random_data(3, 4, 5, query=9), "'query' parameter", "random-query"),
    _err(
        lambda: sg.random_data(3, 4, 5, mask="causal"), "mask='causal' needs", "random-causal-cross"
    ),
    # selections
    _err(lambda: sg.optimal_tokens(X), "TokenData", "opt-not-data"),
    _err(lambda: sg.optimal_tokens(DATA, ties="random"), "ties", "opt-ties"),
    _err(lambda: sg.token_scores("data"), "TokenData", "scores-not-data"),
    _err(lambda: sg.check_selection(DATA, [0, 1]), "alpha must have shape", "alpha-short"),
    _err(
        lambda: sg.check_selection(DATA, [0, 1, 4]),
        r"alpha must hold token indices in \[0, 3\]",
        "alpha-high",
    ),
    _err(
        lambda: sg.check_selection(DATA, [0, 1, -1]), "alpha must hold token indices", "alpha-neg"
    ),
    _err(lambda: sg.check_selection(DATA, [0, 1, 1.5]), "alpha must hold integers", "alpha-float"),
    _err(lambda: sg.check_selection(DATA, [0, 1, np.nan]), "alpha must hold integers", "alpha-nan"),
    _err(
        lambda: sg.check_selection(DATA, ["a", "b", "c"]),
        "alpha must be an integer array",
        "alpha-str",
    ),
    _err(
        lambda: sg.check_selection(DATA, [True, False, True]),
        "alpha must be an integer array",
        "alpha-bool",
    ),
    _err(
        lambda: sg.check_selection(DATA, np.zeros((3, 1, 1), int)),
        "alpha must be a 1-D or 2-D",
        "alpha-3d",
    ),
    _err(lambda: sg.check_selection(SEQ, np.zeros(3, int)), "alpha must have shape", "alpha-K"),
    _err(lambda: sg.check_selection(CAUSAL, np.full((3, 4), 3)), "the mask hides", "alpha-masked"),
    # solvers
    _err(lambda: sg.att_svm(DATA, [0, 1]), "alpha must have shape", "att_svm-alpha"),
    _err(lambda: sg.att_svm(X, ALPHA), "TokenData", "att_svm-not-data"),
    _err(lambda: sg.att_svm(DATA, ALPHA, norm="l1"), "norm", "att_svm-norm"),
    _err(lambda: sg.att_svm(DATA, ALPHA, norm="nuc", rank=0), "rank", "att_svm-rank0"),
    _err(lambda: sg.att_svm(DATA, ALPHA, norm="nuc", rank=1.5), "rank", "att_svm-rank-float"),
    _err(lambda: sg.att_svm(DATA, ALPHA, tol=-1), "tol", "att_svm-tol"),
    _err(lambda: sg.att_svm(DATA, ALPHA, method="magic"), "method", "att_svm-method"),
    _err(lambda: sg.feasibility(DATA, [0, 1, 9]), "alpha must hold token indices", "feas-alpha"),
    _err(lambda: sg.feasibility([DATA], ALPHA), "TokenData", "feas-not-data"),
    _err(lambda: sg.solve_svm("rows"), "ConstraintSet", "solve_svm-not-cs"),
    _err(lambda: sg.check_feasibility(np.eye(2)), "ConstraintSet", "check_feas-not-cs"),
    # analysis
    _err(
        lambda: sg.support_tokens(DATA, [0, 9, 1]), "alpha must hold token indices", "support-alpha"
    ),
    _err(lambda: sg.support_tokens(DATA, ALPHA, tol=-1), "tol", "support-tol"),
    _err(lambda: sg.is_locally_optimal(DATA, [0]), "alpha must have shape", "lot-alpha"),
    _err(
        lambda: sg.locally_optimal_selections(DATA, max_selections=0), "max_selections", "lots-max0"
    ),
    _err(lambda: sg.locally_optimal_selections(DATA, norm="l2"), "norm", "lots-norm"),
    _err(
        lambda: sg.locally_optimal_selections(sg.random_data(20, 10, 3), max_selections=100),
        "max_selections",
        "lots-too-many",
    ),
    _err(lambda: sg.selected_sets([[0.5, 0.6]]), "probs", "sets-not-simplex"),
    _err(lambda: sg.selected_sets([[0.5, np.nan]]), "probs", "sets-nan"),
    _err(lambda: sg.selected_sets([[-0.5, 1.5]]), "probs", "sets-negative"),
    _err(lambda: sg.gen_svm(DATA, np.ones((2, 4), bool)), "selected", "gen-shape"),
    _err(lambda: sg.in_cone(W5, np.eye(4), 0.1), "W", "cone-shape"),
    _err(lambda: sg.in_cone(W5, W5, -0.1), "mu", "cone-mu"),
    _err(lambda: sg.score_cone_margin(DATA, ALPHA, np.eye(4)), "W", "score-cone-shape"),
    _err(lambda: sg.regularization_path(DATA, [-1.0]), "radii", "path-radii-neg"),
    _err(lambda: sg.regularization_path(DATA, []), "radii", "path-radii-empty"),
    _err(lambda: sg.regularization_path(DATA, [1.0], param="V"), "param", "path-param"),
    # train
    _err(lambda: sg.train(X), "TokenData", "train-not-data"),
    _err(lambda: sg.train(DATA, step_size=0.0), "'step_size' parameter of train", "train-step0"),
    _err(lambda: sg.train(DATA, step_size=-1.0), "'step_size' parameter", "train-step-neg"),
    _err(lambda: sg.train(DATA, step_size=math.nan), "'step_size' parameter", "train-step-nan"),
    _err(lambda: sg.train(DATA, step_size=math.inf), "'step_size' parameter", "train-step-inf"),
    _err(lambda: sg.train(DATA, step_size="0.1"), "'step_size' parameter", "train-step-str"),
    _err(lambda: sg.train(DATA, n_steps=0), "'n_steps' parameter", "train-steps0"),
    _err(lambda: sg.train(DATA, n_steps=10.5), "'n_steps' parameter", "train-steps-float"),
    _err(lambda: sg.train(DATA, param="QK"), "'param' parameter", "train-param"),
    _err(lambda: sg.train(DATA, param="KQ", m=0), "'m' parameter", "train-m0"),
    _err(lambda: sg.train(DATA, loss="hinge"), "'loss' parameter", "train-loss"),
    _err(lambda: sg.train(DATA, head="tanh"), "'head' parameter", "train-head"),
    _err(lambda: sg.train(DATA, backend="gpu"), "'backend' parameter", "train-backend"),
    _err(lambda: sg.train(DATA, ridge=-1.0), "'ridge' parameter", "train-ridge"),
    _err(lambda: sg.train(DATA, grad_tol=-1.0), "'grad_tol' parameter", "train-tol"),
    _err(lambda: sg.train(DATA, saturation_tol=2.0), "'saturation_tol' parameter", "train-sat"),
    _err(lambda: sg.train(DATA, record_every=0), "'record_every' parameter", "train-record-every"),
    _err(lambda: sg.train(DATA, record=("loss", "gradient")), "record must be", "train-record"),
    _err(lambda: sg.train(DATA, seed="x"), "seed must be an int", "train-seed"),
    _err(lambda: sg.train(DATA, normalized="yes"), "normalized", "train-normalized"),
    _err(lambda: sg.train(DATA, init="ones"), "init must be", "train-init-str"),
    _err(lambda: sg.train(DATA, init=("normal", 0.1)), "init=", "train-init-name"),
    _err(
        lambda: sg.train(DATA, init=("random", -1.0)),
        "'init scale' parameter",
        "train-init-scale-neg",
    ),
    _err(
        lambda: sg.train(DATA, init=("random", math.nan)),
        "'init scale' parameter",
        "train-init-scale-nan",
    ),
    _err(lambda: sg.train(DATA, init=np.eye(4)), "init W must have shape", "train-init-shape"),
    _err(lambda: sg.train(DATA, init=_nan((5, 5))), "init must be finite", "train-init-nan"),
    _err(lambda: sg.train(DATA, init=np.eye(5) + 1j), "init must be real", "train-init-complex"),
    _err(lambda: sg.train(DATA, param="KQ", init=np.eye(5)), "param='KQ' takes", "train-kq-init"),
    _err(
        lambda: sg.train(DATA, param="KQ", init=(np.full((5, 5), 1e200),) * 2),
        "init",
        "train-kq-overflow",
    ),
    _err(lambda: sg.train(DATA, head="relu"), "head='relu' needs V", "train-relu-V"),
    _err(lambda: sg.train(DATA, head="concave"), "head='concave' needs lam", "train-concave-lam"),
    _err(lambda: sg.train(DATA, V=np.eye(5)), "V applies to head='relu'", "train-V-linear"),
    _err(lambda: sg.train(sg.TokenData(X, Z=Z)), "needs v", "train-no-v"),
    _err(lambda: sg.train_batch(DATA), "sequence of TokenData", "batch-one"),
    _err(lambda: sg.train_batch([]), "at least one dataset", "batch-empty"),
    _err(lambda: sg.train_batch([DATA, SEQ]), "equal sizes", "batch-sizes"),
    _err(lambda: sg.train_batch([DATA], steps=10), "unknown option", "batch-unknown"),
    # verify, correlation, I/O
    _err(lambda: sg.verify(DATA, threshold=2.0), "'threshold' parameter", "verify-threshold"),
    _err(lambda: sg.verify(DATA, steps=10), "unknown option", "verify-unknown"),
    _err(lambda: sg.verify(DATA, param="V"), "'param' parameter", "verify-param"),
    _err(lambda: sg.verify(X), "TokenData", "verify-not-data"),
    _err(lambda: sg.correlation(W5, np.eye(4)), "equal shape", "corr-shape"),
    _err(lambda: sg.correlation(W5, _nan((5, 5))), "W2 holds NaN", "corr-nan"),
    _err(lambda: sg.correlation(np.full((5, 5), np.inf), W5), "W1 holds NaN or inf", "corr-inf"),
    _err(lambda: sg.correlation(W5 + 1j, W5), "W1 must be real", "corr-complex"),
    _err(lambda: sg.save_data(X, "x.npz"), "save_data takes a svmgeo.TokenData", "save-not-data"),
    _err(lambda: sg.save_data(DATA, "/nonexistent-dir/d.npz"), "cannot write", "save-missing-dir"),
    _err(lambda: sg.load_data(3), "takes a file path", "load-int"),
    _err(lambda: sg.query_projector(np.ones((2, 3)) + 1j), "must be real", "projector-complex"),
]


@pytest.mark.parametrize(("call", "match"), API_ERRORS)
def test_api_bad_input_is_a_clear_svmgeo_error(call: Callable[[], Any], match: str) -> None:
    with pytest.raises(SvmgeoError, match=match):
        call()


# ---------------------------------------------------------------------------------------------
# files: every unreadable dataset is a ProblemError that names the file
@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("files")
    good = root / "good.npz"
    DATA.save(good)
    out = {"good": good, "dir": root / "adir", "missing": root / "missing.npz"}
    out["dir"].mkdir()
    (root / "text.npz").write_text("this is not an archive\n")
    out["text"] = root / "text.npz"
    raw = good.read_bytes()
    (root / "trunc.npz").write_bytes(raw[: len(raw) // 2])
    out["trunc"] = root / "trunc.npz"
    (root / "empty.npz").write_bytes(b"")
    out["empty"] = root / "empty.npz"
    np.save(root / "array.npy", X)
    out["npy"] = root / "array.npy"
    base = {"svmgeo_format": np.array(1), "X": X, "v": V}
    np.savez(root / "qabc.npz", **base, query=np.array("abc"))
    np.savez(root / "pickled.npz", **{**base, "X": np.array([X, None], dtype=object)}, Z=Z)
    np.savez(root / "future.npz", **{**base, "svmgeo_format": np.array(99)}, Z=Z)
    np.savez(root / "fmtstr.npz", **{**base, "svmgeo_format": np.array("one")}, Z=Z)
    np.savez(root / "noformat.npz", X=X, Z=Z)
    np.savez(root / "badshape.npz", **base, Z=Z[:2])
    np.savez(root / "nan.npz", **{**base, "X": _nan((3, 4, 5))}, Z=Z)
    for name in ("qabc", "pickled", "future", "fmtstr", "noformat", "badshape", "nan"):
        out[name] = root / f"{name}.npz"
    return out


FILE_ERRORS = {
    "missing": "no such file",
    "dir": "is a directory",
    "text": "neither .npz nor .npy",
    "trunc": "damaged",
    "empty": "not an svmgeo dataset",
    "npy": "holds one .npy array",
    "qabc": "'query' must be an integer or 'all'",
    "pickled": "pickled object array",
    "future": "format version 99",
    "fmtstr": "svmgeo_format must be an integer",
    "noformat": "not an svmgeo dataset",
    "badshape": "Z must have shape",
    "nan": "X must be finite",
}


@pytest.mark.parametrize(("name", "match"), FILE_ERRORS.items(), ids=list(FILE_ERRORS))
def test_unreadable_dataset_file_is_a_clear_error(
    files: dict[str, Path], name: str, match: str
) -> None:
    with pytest.raises(ProblemError, match=match) as info:
        sg.load_data(files[name])
    assert files[name].name.replace(".npz", "") in str(info.value)


def test_load_finds_the_file_save_wrote_without_the_suffix(tmp_path: Path) -> None:
    DATA.save(tmp_path / "d")  # numpy appends .npz
    back = sg.load_data(tmp_path / "d")
    np.testing.assert_array_equal(back.X, DATA.X)
    np.testing.assert_array_equal(back.Z, DATA.Z)


# ---------------------------------------------------------------------------------------------
# API: inputs that once misbehaved and now give a correct result
def test_token_data_leaves_the_callers_arrays_writeable() -> None:
    Xc, vc, Zc = X.copy(), V.copy(), Z.copy()
    data = sg.TokenData(Xc, v=vc, Z=Zc)
    for arr in (Xc, vc, Zc):
        assert arr.flags.writeable
    Xc[0, 0, 0] += 1.0  # the caller's edit does not reach the dataset
    assert data.X[0, 0, 0] == X[0, 0, 0] and not data.X.flags.writeable


@pytest.mark.parametrize(
    "data",
    [sg.random_data(4, 1, 3, seed=0), sg.random_data(4, 1, 3, seed=0, query="all", mask="causal")],
    ids=["T1", "causal-T1"],
)
def test_no_constraint_rows_is_the_certified_zero_solution(data: sg.TokenData) -> None:
    alpha = sg.optimal_tokens(data)
    for norm in ("fro", "nuc"):
        res = sg.att_svm(data, alpha, norm=norm)
        assert res.success, res.message
        np.testing.assert_array_equal(res.W, np.zeros((3, 3)))
        assert res.objective == 0.0
    assert sg.feasibility(data, alpha).feasible


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_gd_overflow_is_a_named_status_with_finite_norms(backend: str) -> None:
    run = sg.train(DATA, step_size=1e300, n_steps=20, backend=backend)
    assert run.status is StopStatus.OVERFLOW
    assert run.history.W_norm is not None and np.all(np.isfinite(run.history.W_norm))
    W0 = np.full((5, 5), 1e199)
    run = sg.train(DATA, init=W0, n_steps=20, backend=backend)
    assert run.status is StopStatus.OVERFLOW and run.n_steps == 0
    assert run.history.W_norm is not None and np.all(np.isfinite(run.history.W_norm))


def test_data_at_the_largest_scale_solves_and_rescales_exactly() -> None:
    s = 1e150 / (np.abs(X).max() * np.abs(Z).max() * 5)
    big = sg.TokenData(X * s, v=V, Z=Z)
    res, ref = sg.att_svm(big, ALPHA), sg.att_svm(DATA, ALPHA)
    assert res.success and ref.success
    assert res.W is not None and ref.W is not None
    np.testing.assert_allclose(res.W * s, ref.W, rtol=1e-8, atol=1e-10 * np.abs(ref.W).max())


# ---------------------------------------------------------------------------------------------
# CLI: exit 2, one line on stderr, nothing computed
GEN = ["--n", "3", "--T", "4", "--d", "5", "--seed", "1"]
SEQ_GEN = ["--n", "2", "--T", "3", "--d", "4", "--query", "all"]


def _cli(*args: str, id: str, match: str) -> Any:
    return pytest.param(list(args), match, id=id)


CLI_ERRORS = [
    # argument values
    _cli("solve", "--seed", "-1", id="seed-neg", match="--seed: expected an integer >= 0"),
    _cli("solve", "--seed", "x", id="seed-str", match="--seed"),
    _cli("solve", "--n", "0", id="n0", match="--n: expected an integer >= 1"),
    _cli("solve", "--n", "2.5", id="n-float", match="--n"),
    _cli("solve", "--T", "-3", id="T-neg", match="--T"),
    _cli("solve", "--d", "", id="d-empty", match="--d"),
    _cli("solve", "--query", "foo", id="query-foo", match="--query: expected a token position"),
    _cli("solve", *GEN, "--query", "9", id="query-range", match="'query' parameter"),
    _cli("solve", *GEN, "--causal", id="causal-no-all", match="--causal needs --query all"),
    _cli("solve", "--norm", "l1", id="norm", match="--norm: invalid choice"),
    _cli("solve", *GEN, "--rank", "2", id="rank-fro", match="--rank .* needs --norm nuc"),
    _cli("solve", "--rank", "0", id="rank0", match="--rank"),
    _cli("solve", "--bogus", id="unknown-option", match="unrecognized arguments: --bogus"),
    _cli("solve", "extra", id="extra-positional", match="unrecognized arguments: extra"),
    _cli("frobnicate", id="unknown-command", match="invalid choice: 'frobnicate'"),
    _cli(id="no-command", match="required: COMMAND"),
    # --alpha
    _cli("solve", *GEN, "--alpha", "0,1", id="alpha-short", match="has 2 entries; give 3"),
    _cli("solve", *GEN, "--alpha", "0,1,2,3", id="alpha-long", match="has 4 entries"),
    _cli("solve", *GEN, "--alpha", "a,b,c", id="alpha-letters", match="'a' is not a token index"),
    _cli("solve", *GEN, "--alpha", "0.5,0,0", id="alpha-float", match="'0.5' is not a token"),
    _cli("solve", *GEN, "--alpha", "0,1,7", id="alpha-range", match=r"token indices in \[0, 3\]"),
    _cli("solve", *GEN, "--alpha", "0,-1,1", id="alpha-negative", match="token indices in"),
    _cli("solve", *GEN, "--alpha=", id="alpha-empty", match="--alpha is empty"),
    _cli("solve", *GEN, "--alpha", "  ", id="alpha-blank", match="--alpha is empty"),
    _cli("solve", *GEN, "--alpha", "0,1,", id="alpha-trailing-comma", match="empty entry"),
    _cli("solve", *GEN, "--alpha", ",0,1", id="alpha-leading-comma", match="empty entry"),
    _cli("solve", *GEN, "--alpha", "0,,1", id="alpha-double-comma", match="empty entry"),
    _cli("solve", *GEN, "--alpha", "0 1 2", id="alpha-spaces", match="'0 1 2' is not a token"),
    _cli(
        "solve", *SEQ_GEN, "--alpha", "0,1", id="alpha-K-short", match="3 token indices per query"
    ),
    _cli("solve", *SEQ_GEN, "--alpha", "0,0,1;0,1", id="alpha-K-group", match="groups of sizes"),
    _cli(
        "solve",
        *SEQ_GEN,
        "--causal",
        "--alpha",
        "2,1,2;0,1,2",
        id="alpha-causal-hidden",
        match="the mask hides",
    ),
    _cli("feasibility", *GEN, "--alpha", "x", id="feas-alpha", match="not a token index"),
    _cli(
        "lots", *GEN, "--alpha", "0,1,2", id="lots-alpha", match="unrecognized arguments: --alpha"
    ),
    _cli("train", *GEN, "--alpha", "0,1,2", id="train-alpha", match="unrecognized arguments"),
    _cli("verify", *GEN, "--alpha", "0,1,2", id="verify-alpha", match="unrecognized arguments"),
    _cli("lots", *GEN, "--max-selections", "0", id="lots-max0", match="--max-selections"),
    _cli(
        "lots",
        "--n",
        "12",
        "--T",
        "10",
        "--max-selections",
        "100",
        id="lots-too-many",
        match="max_selections",
    ),
    # GD options
    _cli(
        "train",
        "--init-scale",
        "-1",
        id="init-scale-neg",
        match="--init-scale: expected a finite number >= 0",
    ),
    _cli("train", "--init-scale", "nan", id="init-scale-nan", match="--init-scale"),
    _cli("train", "--init-scale", "inf", id="init-scale-inf", match="--init-scale"),
    _cli(
        "train", "--step-size", "0", id="step0", match="--step-size: expected a finite number > 0"
    ),
    _cli("train", "--step-size", "-0.1", id="step-neg", match="--step-size"),
    _cli("train", "--step-size", "nan", id="step-nan", match="--step-size"),
    _cli("train", "--steps", "0", id="steps0", match="--steps"),
    _cli("train", "--m", "0", id="m0", match="--m"),
    _cli("train", "--loss", "hinge", id="loss", match="--loss: invalid choice"),
    _cli("train", "--param", "V", id="param", match="--param: invalid choice"),
    _cli("verify", "--backend", "gpu", id="backend", match="--backend: invalid choice"),
    # --data files
    _cli("solve", "--data", "{missing}", id="data-missing", match="no such file"),
    _cli("solve", "--data", "{dir}", id="data-dir", match="is a directory"),
    _cli("solve", "--data", "{text}", id="data-text", match="neither .npz nor .npy"),
    _cli("solve", "--data", "{trunc}", id="data-truncated", match="damaged"),
    _cli("solve", "--data", "{empty}", id="data-empty", match="not an svmgeo dataset"),
    _cli("solve", "--data", "{npy}", id="data-npy", match="one .npy array"),
    _cli("solve", "--data", "{qabc}", id="data-query-abc", match="'query' must be an integer"),
    _cli("solve", "--data", "{pickled}", id="data-pickled", match="pickled object array"),
    _cli("solve", "--data", "{future}", id="data-future", match="format version 99"),
    _cli("solve", "--data", "{noformat}", id="data-noformat", match="not an svmgeo dataset"),
    _cli("feasibility", "--data", "{badshape}", id="data-badshape", match="Z must have shape"),
    _cli("lots", "--data", "{nan}", id="data-nan", match="X must be finite"),
    _cli("solve", "--data", "{good}", "--n", "5", id="data-and-n", match="--n set up the built-in"),
    _cli("solve", "--data", "{good}", "--T", "5", "--d", "3", id="data-and-Td", match="--T, --d"),
    _cli("solve", "--data", "{good}", "--query", "0", id="data-and-query", match="--query"),
    _cli("solve", "--data", "{good}", "--causal", id="data-and-causal", match="--causal"),
    _cli("solve", "--data", "{good}", "--seed", "3", id="data-and-seed", match="--seed"),
    # output paths, checked before any computation
    _cli("train", "--save", "{missing_dir}/w.npz", id="save-missing-dir", match="does not exist"),
    _cli(
        "train", "--save", "{text}/w.npz", id="save-under-file", match="is a file, not a directory"
    ),
    _cli("train", "--save", "{dir}", id="save-dir", match="is a directory"),
    _cli("train", "--save", "/proc/w.npz", id="save-unwritable", match="cannot write there"),
    _cli(
        "verify", "--figure", "{missing_dir}/f.png", id="figure-missing-dir", match="does not exist"
    ),
    _cli("verify", "--figure", "{text}/f.png", id="figure-under-file", match="not a directory"),
    _cli("verify", "--figure", "{dir}", id="figure-dir", match="is a directory"),
    _cli("verify", "--figure", "/proc/f.png", id="figure-unwritable", match="cannot write there"),
    _cli(
        "verify",
        "--figure",
        "{root}/f.xyz",
        id="figure-format",
        match="unknown figure format 'xyz'",
    ),
    _cli("verify", "--figure", "{root}/figure", id="figure-no-ext", match="no extension"),
]


def _fill(args: list[str], files: dict[str, Path]) -> list[str]:
    names = {k: str(v) for k, v in files.items()}
    names |= {"root": str(files["good"].parent), "missing_dir": str(files["good"].parent / "nope")}
    return [a.format(**names) for a in args]


@pytest.mark.parametrize(("args", "match"), CLI_ERRORS)
def test_cli_bad_input_exits_2_with_one_line(
    args: list[str],
    match: str,
    files: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("matplotlib")  # --figure checks need it to list the formats

    def never(*a: Any, **k: Any) -> Any:
        raise AssertionError("bad input must be refused before any computation")

    monkeypatch.setattr("svmgeo.gd.train", never)
    monkeypatch.setattr(sys.modules["svmgeo.verify"], "verify", never)
    code = main(_fill(args, files))
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("svmgeo"), err
    assert re.search(match, err), err


@pytest.mark.parametrize(
    "args",
    [
        ["solve", "--T", "1", "--n", "4", "--d", "3", "--json"],
        ["solve", "--T", "1", "--n", "4", "--d", "3", "--query", "all", "--causal", "--json"],
        ["solve", "--T", "1", "--n", "4", "--d", "3", "--norm", "nuc", "--json"],
    ],
    ids=["T1", "causal-T1", "T1-nuc"],
)
def test_cli_solve_without_constraint_rows_reports_the_zero_solution(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "optimal" and out["objective"] == 0.0
    assert out["support_rows"] == 0 and out["numerical_rank"] == 0


def test_cli_alpha_with_k_queries_in_groups_and_flat_agree(capsys: pytest.CaptureFixture[str]):
    data = sg.random_data(2, 3, 4, seed=0, query="all")
    alpha = sg.optimal_tokens(data, ties="first")
    grouped = ";".join(",".join(str(t) for t in row) for row in alpha)
    flat = ",".join(str(t) for t in alpha.ravel())
    outs = []
    for text in (grouped, flat, grouped.replace(",", " , ")):
        assert main(["solve", *SEQ_GEN, "--seed", "0", "--alpha", text, "--json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    ref = sg.att_svm(data, alpha)
    for out in outs:
        np.testing.assert_allclose(out["objective"], ref.objective, rtol=1e-10)


def test_cli_data_file_named_without_suffix_and_seed_seeds_gd(tmp_path: Path, capsys):
    DATA.save(tmp_path / "d")
    assert main(["solve", "--data", str(tmp_path / "d"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(out["objective"], sg.att_svm(DATA, ALPHA).objective, rtol=1e-10)
    # with --data, train's --seed seeds the random start only
    args = ["train", "--data", str(tmp_path / "d.npz"), "--steps", "20", "--backend", "numpy"]
    runs = []
    for seed in ("1", "1", "2"):
        assert main([*args, "--init-scale", "0.5", "--seed", seed, "--json"]) == 0
        runs.append(json.loads(capsys.readouterr().out)["norm_W"])
    assert runs[0] == runs[1] != runs[2]


def test_cli_json_is_valid_json_without_infinity(capsys: pytest.CaptureFixture[str]) -> None:
    from svmgeo.cli import _emit

    _emit(
        {"a": math.inf, "b": {"c": -math.inf, "d": math.nan}, "e": [{"f": np.float64("inf")}]}, True
    )
    text = capsys.readouterr().out
    assert "Infinity" not in text and "NaN" not in text
    assert json.loads(text) == {"a": None, "b": {"c": None, "d": None}, "e": [{"f": None}]}


# a few as a user meets them: a separate process, the installed entry point's code path
@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["solve", "--data", "/nonexistent/d.npz"], "no such file"),
        (["solve", "--seed", "-1"], "--seed"),
        (["verify", "--figure", "/nonexistent/dir/f.png"], "does not exist"),
    ],
    ids=["missing-file", "seed", "figure"],
)
def test_cli_subprocess_exits_2_with_one_line(args: list[str], match: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "svmgeo", *args], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and match in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_cli_version_and_help_of_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"svmgeo {sg.__version__}"
    for command in ("solve", "feasibility", "lots", "train", "verify", "reproduce"):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        assert "example:\n  svmgeo " + command in text
        parser_actions = _actions(command)  # every option has a help text
        assert all(a.help for a in parser_actions), [a.option_strings for a in parser_actions]


def _actions(command: str) -> list[Any]:
    from svmgeo.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return list(sub.choices[command]._actions)  # type: ignore[attr-defined]


def test_help_answers_without_importing_the_solvers() -> None:
    code = (
        "import sys, time; t = time.perf_counter(); from svmgeo.cli import main; "
        "rc = main(['--help']); "
        "print(rc, 'numba.core' in sys.modules, round(time.perf_counter() - t, 3))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    ).stdout.splitlines()[-1]
    rc, numba_loaded, _ = out.split()
    assert rc == "0" and numba_loaded == "False"
