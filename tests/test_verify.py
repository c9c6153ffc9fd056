# SPDX-License-Identifier: BSD-3-Clause
"""`sg.verify` on instances with known outcomes, for both parameterizations and every backend.

The SVM directions are recomputed here with the naive cvxpy model (one constraint per token
pair), so the report's correlations are checked against an oracle independent of the fast
solvers that `verify` calls.
"""

from __future__ import annotations

import dataclasses
import json
import typing
import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.gd import RiskOracle, cupy_available
from svmgeo.solvers import solve_naive_cvxpy
from svmgeo.verify import Prediction, compare

BACKENDS = [
    "numpy",
    "numba",
    pytest.param(
        "cupy",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device"),
        ],
    ),
]


def oracle(data: sg.TokenData, alpha: np.ndarray, norm: str = "fro") -> np.ndarray:
    W, status, _, _ = solve_naive_cvxpy(sg.att_svm_constraints(data, alpha), norm)  # type: ignore[arg-type]
    assert W is not None and status == "optimal", status
    return W


def softmax_probs(data: sg.TokenData, W: np.ndarray) -> np.ndarray:
    """Softmax of the logits x_itᵀ W z_i, shape (n, T) (one query per sequence)."""
    logits = np.einsum("itd,de,ie->it", np.asarray(data.X), W, np.asarray(data.queries)[:, 0])
    logits -= logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    return e / e.sum(axis=1, keepdims=True)


# ---- (1) global convergence ----------------------------------------------------------------
# d = 10 >= max(T - 1, n) = 7; unique optimal tokens; GD from zero selects them for seed 2
# (docs/gd.md: seeds 2-7 do, from step 2500 at the latest; 0 and 1 converge to non-optimal LOTs).
GLOBAL = sg.random_data(6, 8, 10, seed=2, score_gap=0.05)


def _opt_by_hand(data: sg.TokenData) -> np.ndarray:
    scores = np.asarray(data.Y)[:, None] * (np.asarray(data.X) @ np.asarray(data.v))
    return np.argmax(scores, axis=1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_global_convergence_W(backend: str) -> None:
    rep = sg.verify(GLOBAL, param="W", step_size=0.1, n_steps=2000, backend=backend)
    opt = _opt_by_hand(GLOBAL)
    np.testing.assert_array_equal(rep.selection, opt)
    assert rep.is_optimal and rep.is_lot and rep.feasible
    W_fro, W_nuc = oracle(GLOBAL, opt), oracle(GLOBAL, opt, "nuc")
    np.testing.assert_allclose(rep.final_corr_fro, sg.correlation(rep.W, W_fro), atol=1e-6)
    np.testing.assert_allclose(rep.final_corr_nuc, sg.correlation(rep.W, W_nuc), atol=1e-4)
    assert rep.final_corr_fro > 0.99
    assert rep.final_corr_fro > rep.final_corr_nuc + 0.1  # W runs follow the Frobenius SVM
    assert rep.converged_to == "fro"
    # saturation and norm growth: normalized steps of 0.1 grow ‖W‖ by at most 0.1 per step
    assert 1.0 - rep.final_max_softmax < 1e-6
    assert rep.norm_W[0] == 0.0 and 100.0 < rep.final_norm_W <= 0.1 * 2000 + 1e-9
    assert rep.steps[0] == 0 and rep.steps[-1] == 2000
    assert rep.corr_fro.shape == rep.steps.shape == rep.max_softmax.shape == rep.norm_W.shape


@pytest.mark.parametrize("backend", BACKENDS)
def test_global_convergence_KQ(backend: str) -> None:
    # measured: corr_nuc 0.968, corr_fro 0.773 at 4000 steps (docs/gd.md: 1 - corr ~ 3e-2)
    rep = sg.verify(
        GLOBAL,
        param="KQ",
        init=("random", 0.01),
        seed=0,
        step_size=0.02,
        n_steps=4000,
        backend=backend,
        threshold=0.95,
    )
    opt = _opt_by_hand(GLOBAL)
    np.testing.assert_array_equal(rep.selection, opt)
    assert rep.is_optimal
    W_nuc = oracle(GLOBAL, opt, "nuc")
    np.testing.assert_allclose(rep.final_corr_nuc, sg.correlation(rep.W, W_nuc), atol=1e-4)
    assert rep.final_corr_nuc > 0.95
    assert rep.final_corr_nuc > rep.final_corr_fro + 0.1  # (K, Q) runs follow the nuclear SVM
    assert rep.converged_to == "nuc"
    assert rep.corr_nuc[-1] > rep.corr_nuc[len(rep.corr_nuc) // 4]


# ---- (2) a locally optimal, non-optimal selection ------------------------------------------
# d = 2 < T - 1: several LOTs. GD started in a cone around W^mm_alpha (radius 100, 5 %
# perturbation) keeps alpha. (At radius 5 one of the two non-optimal LOTs escapes to another.)
LOT_DATA = sg.random_data(4, 3, 2, seed=0)


def _non_optimal_lots() -> list[np.ndarray]:
    lots = sg.locally_optimal_selections(LOT_DATA).selections
    opt = _opt_by_hand(LOT_DATA)
    out = [a for a in lots if not np.array_equal(a, opt)]
    assert len(out) >= 1
    return out


NON_OPT_LOTS = _non_optimal_lots()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("param", ["W", "KQ"])
def test_cone_start_stays_at_lot(backend: str, param: str) -> None:
    for alpha in NON_OPT_LOTS:
        rep = sg.verify(
            LOT_DATA,
            param=param,
            init="cone",
            alpha=alpha,
            cone_radius=100.0,
            cone_noise=0.05,
            seed=0,
            step_size=0.05,
            n_steps=2000,
            backend=backend,
        )
        np.testing.assert_array_equal(rep.selection, alpha)
        assert rep.is_lot and not rep.is_optimal
        assert "locally optimal" in rep.lot_reason
        key, W_ref = (
            ("fro", oracle(LOT_DATA, alpha))
            if param == "W"
            else (
                "nuc",
                oracle(LOT_DATA, alpha, "nuc"),
            )
        )
        final = rep.final_corr_fro if param == "W" else rep.final_corr_nuc
        np.testing.assert_allclose(final, sg.correlation(rep.W, W_ref), atol=1e-4)
        assert final > 0.999
        assert rep.converged_to == key
        # the start lies in the cone: corr(W0, W^mm_alpha) >= 1 - mu with mu ~ noise^2 / 2
        start = (
            rep.corr_fro[0]
            if param == "W"
            else sg.correlation(rep.run.history.W[0], oracle(LOT_DATA, alpha))
        )
        assert start > 0.99


# ---- (3) a ReLU head with |O_i| = 2 --------------------------------------------------------
# Found by a search over seeds of random (2, 3, 4) data with V ~ N(0, 1) of shape (4, 3) and
# v = (1, -1, 1): GD keeps tokens 1 and 2 of sequence 0 (probabilities ~0.63 / 0.37) and masks
# the rest (Gamma ~ 1e-15). Not every instance matches Gen-SVM this well (docs/verify.md).
RELU_DATA = sg.random_data(2, 3, 4, seed=25)
RELU_HEAD = {
    "V": np.random.default_rng(25).standard_normal((4, 3)),
    "v": np.array([1.0, -1.0, 1.0]),
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_relu_head_selected_set_of_two(backend: str) -> None:
    rep = sg.verify(
        RELU_DATA, head="relu", **RELU_HEAD, step_size=0.1, n_steps=3000, backend=backend
    )
    probs = softmax_probs(RELU_DATA, rep.W)
    assert rep.selected is not None and rep.masked is not None
    np.testing.assert_array_equal(rep.selected, probs >= 1e-3)
    np.testing.assert_array_equal(rep.masked, probs <= 1e-6)
    assert rep.selected.sum(axis=1).max() >= 2 and rep.n_ambiguous == 0
    assert rep.gen_feasible and rep.gamma is not None and rep.gamma < 1e-6
    np.testing.assert_allclose(rep.gamma, probs[rep.masked].max(), rtol=1e-6)
    assert rep.W_eq is not None and rep.corr_eq is not None
    np.testing.assert_allclose(rep.final_corr_eq, sg.correlation(rep.W, rep.W_eq), atol=1e-12)
    assert rep.final_corr_eq > 0.999  # measured 0.99974 at 3000 steps, 0.9999975 at 30 000
    assert rep.final_corr_eq > max(rep.final_corr_fro, rep.final_corr_nuc)
    assert rep.converged_to == "eq"
    # W_dir is the Gen-SVM direction: equality inside O_i, margin >= 1 against the rest
    W_dir, status, _, _ = solve_naive_cvxpy(
        sg.selected_set_constraints(RELU_DATA, rep.selected), "fro"
    )
    assert status == "optimal"
    np.testing.assert_allclose(rep.W_dir, W_dir, atol=1e-5 * np.abs(W_dir).max())


def test_relu_head_without_masked_tokens_is_reported() -> None:
    # (3, 4, 4), seed 0, V ~ N(0, 1) (4, 4), v = (1, 1, -1, -1): GD keeps all four tokens of
    # sequence 0 above 1e-3, so Gen-SVM is undefined; verify says so instead of raising.
    data = sg.random_data(3, 4, 4, seed=0)
    V = np.random.default_rng(0).standard_normal((4, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = sg.verify(
            data, head="relu", V=V, v=np.array([1.0, 1.0, -1.0, -1.0]), n_steps=3000,
            backend="numpy",
        )  # fmt: skip
    assert rep.gen_note is not None and "every visible token" in rep.gen_note
    assert rep.W_eq is None and rep.corr_eq is None
    assert rep.selected is not None and rep.selected.all(axis=1).any()
    assert "Gen-SVM" in str(rep)


def test_sequence_causal_shapes_and_oracle() -> None:
    # K = T queries per sequence under a causal mask: the selection is (n, K), each entry the
    # argmax of that query's softmax over the keys it sees; the curves match the oracle SVM.
    data = sg.random_data(2, 4, 6, seed=3, query="all", mask="causal")
    rep = sg.verify(data, n_steps=1000, backend="numpy")
    X, W = np.asarray(data.X), rep.W
    logits = np.einsum("itd,de,ike->ikt", X, W, np.asarray(data.queries))
    logits = np.where(np.asarray(data.visible), logits, -np.inf)
    np.testing.assert_array_equal(rep.selection, np.argmax(logits, axis=2))
    assert rep.selection.shape == (2, 4) and rep.feasible
    W_fro = oracle(data, rep.selection)
    np.testing.assert_allclose(rep.final_corr_fro, sg.correlation(W, W_fro), atol=1e-6)
    opt_sets = sg.optimal_token_sets(data)
    chosen = np.take_along_axis(opt_sets, rep.selection[:, :, None], axis=2)[:, :, 0]
    assert rep.is_optimal == bool(chosen.all())


# ---- report: text and JSON -----------------------------------------------------------------
@pytest.fixture(scope="module")
def report() -> sg.VerifyReport:
    return sg.verify(RELU_DATA, head="relu", **RELU_HEAD, n_steps=300, backend="numpy")


def test_str_has_headline(report: sg.VerifyReport) -> None:
    text = str(report)
    for key in ("selection", "LOT", "corr(W, W_mm fro)", "corr(W, W_mm nuc)", "softmax", "||W||_F"):
        assert key in text
    assert str(report.selection.tolist()) in text
    assert f"{report.final_corr_fro:.6f}" in text and "Gamma" in text


def test_json_round_trip(report: sg.VerifyReport) -> None:
    text = report.to_json()
    raw = json.loads(text)  # plain JSON: no NaN / Infinity tokens
    assert raw["selection"] == report.selection.tolist()
    back = sg.VerifyReport.from_json(text)
    for name in ("steps", "corr_fro", "corr_nuc", "max_softmax", "norm_W", "W", "W_eq"):
        np.testing.assert_array_equal(getattr(back, name), getattr(report, name))
    np.testing.assert_array_equal(back.selected, report.selected)
    assert (back.is_optimal, back.is_lot, back.converged_to, back.gamma) == (
        report.is_optimal,
        report.is_lot,
        report.converged_to,
        report.gamma,
    )
    assert back.svm_fro is None and back.run is None
    assert back.to_json() == text
    assert str(back) == str(report)
    for bad in ("[]", '{"selection": [0]}'):
        with pytest.raises(sg.ProblemError, match="from_json"):
            sg.VerifyReport.from_json(bad)


def test_a_selection_gd_makes_strictly_has_a_feasible_svm() -> None:
    """Token 0 is the midpoint of tokens 1 and 2 and every score is 0: the gradient is exactly
    zero at W = 0, GD stops at once with the three logits tied. verify used to take the first
    (token 0, whose Att-SVM is infeasible) and report it; it now raises TieError. A token
    GD selects strictly always has a feasible Att-SVM (its final W, scaled, meets every row),
    so an infeasible verdict only ever came from a broken tie."""
    X = np.array([[[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0]]])
    data = sg.TokenData(X, Y=np.array([1.0]), v=np.array([0.0, 1.0]), Z=np.array([[1.0, 0.0]]))
    with pytest.raises(sg.TieError, match=r"tokens \[0, 1, 2\]"):
        sg.verify(data, n_steps=50, backend="numpy")


def test_a_report_without_an_svm_round_trips_through_json() -> None:
    """NaN curves and a missing SVM are null in JSON and come back as NaN / None."""
    rep = sg.verify(GLOBAL, param="W", step_size=0.1, n_steps=200, backend="numpy")
    lam = np.full(3, 1.0 / 3.0)
    bare = dataclasses.replace(
        rep, W_fro=None, svm_fro=None, corr_fro=np.full_like(rep.corr_fro, np.nan),
        feasible=False, farkas=lam,
    )  # fmt: skip
    raw = json.loads(bare.to_json())
    assert raw["W_fro"] is None and raw["corr_fro"][-1] is None
    back = sg.VerifyReport.from_json(bare.to_json())
    assert np.isnan(back.corr_fro).all() and back.W_fro is None and not back.feasible
    np.testing.assert_array_equal(back.farkas, lam)
    assert "infeasible" in str(bare)


# ---- errors --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_iter": 10}, "unknown option"),
        ({"record": ("W",)}, "unknown option"),
        ({"init": "cone"}, "needs alpha"),
        ({"alpha": np.zeros(6, dtype=int)}, "only with init='cone'"),
        ({"param": "QK"}, "'param'"),
        ({"threshold": 2.0}, "'threshold'"),
        ({"head": "relu"}, "needs V"),
        ({"init": "cone", "alpha": np.zeros(6, dtype=int), "cone_radius": -1.0}, "cone_radius"),
        # a start beyond float64 blamed init, which was not passed
        (
            {"init": "cone", "alpha": np.zeros(6, dtype=int), "cone_radius": 1e308},
            r"'cone_radius' parameter of verify must be a float in \(0, 1e\+151\]",
        ),
        (
            {"init": "cone", "alpha": np.zeros(6, dtype=int), "cone_noise": 1e308},
            r"'cone_noise' parameter of verify must be a float in \[0, 1e\+151\]",
        ),
        ({"tol": 1e-3}, "'tol' .* was renamed 'grad_tol'; pass grad_tol="),
        ({"method": "gd"}, "'method' .* was renamed 'optimizer'"),
        ({"p": 1.5}, "'p' .* was renamed 'exponent'"),
        ({"train_head": "yes"}, "'train_head' parameter of verify must be True or False"),
        ({"train_head": 1}, "'train_head' parameter of verify"),  # both were read as True
    ],
)
def test_bad_options(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        sg.verify(GLOBAL, n_steps=10, backend="numpy", **kwargs)  # type: ignore[arg-type]


def test_not_tokendata() -> None:
    with pytest.raises(sg.ProblemError, match="TokenData"):
        sg.verify(np.zeros((2, 3, 4)))  # type: ignore[arg-type]


def test_grad_tol_is_the_gradient_norm_stop() -> None:
    # grad_tol (the new spelling of train's tol) reaches train: a loose stop ends the run early
    rep = sg.verify(GLOBAL, n_steps=2000, backend="numpy", grad_tol=1e-2)
    assert rep.status == str(sg.StopStatus.CONVERGED)
    assert rep.steps[-1] < 2000


def test_verify_has_one_return_type() -> None:
    hints = typing.get_type_hints(sg.verify)
    assert hints["return"] is sg.VerifyReport
    assert typing.get_type_hints(sg.verify_mirror)["return"] is sg.VerifyReport


def test_certificate_alias_is_gone() -> None:
    # the deprecated alias of farkas was dropped (the package was never released)
    rep = sg.verify(sg.random_data(2, 3, 4, seed=0), n_steps=5, backend="numpy")
    assert not hasattr(rep, "certificate")
    raw = json.loads(rep.to_json())
    raw["certificate"] = raw.pop("farkas")
    with pytest.raises(sg.ProblemError, match="unknown \\['certificate'\\]"):
        sg.VerifyReport.from_json(json.dumps(raw))


# ---- the protocol: named predictions -> curves, closest ------------------------------------
def _line(*values: float) -> np.ndarray:
    """Iterates (R, 2, 2) along e11 with a growing e12 component."""
    return np.array([[[1.0, x], [0.0, 0.0]] for x in values])


E11, E12 = np.diag([1.0, 0.0]), np.array([[0.0, 1.0], [0.0, 0.0]])


def test_compare_curves_are_correlations() -> None:
    Ws = _line(0.0, 0.5, 2.0)
    c = compare({"theta": Ws}, [Prediction("a", E11), Prediction("b", E12)], threshold=0.5)
    np.testing.assert_allclose(c.curves["a"], [sg.correlation(W, E11) for W in Ws])
    np.testing.assert_allclose(c.curves["b"], [sg.correlation(W, E12) for W in Ws])
    assert c.finals == {"a": c.curves["a"][-1], "b": c.curves["b"][-1]}
    assert c.closest == "b"  # corr 2/sqrt(5) > 1/sqrt(5)
    assert c.targets["a"] is E11


def test_compare_closest_needs_the_threshold_and_breaks_ties_by_order() -> None:
    Ws = _line(1.0)  # equal correlation 1/sqrt(2) with both
    both = [Prediction("a", E11), Prediction("b", E12)]
    assert compare({"theta": Ws}, both, threshold=0.7).closest == "a"
    assert compare({"theta": Ws}, both[::-1], threshold=0.7).closest == "b"
    assert compare({"theta": Ws}, both, threshold=0.71).closest is None


def test_compare_missing_target_is_nan_and_never_closest() -> None:
    c = compare({"theta": _line(0.0)}, [Prediction("none", None)], threshold=-1.0)
    assert np.isnan(c.curves["none"]).all() and c.closest is None


def test_compare_non_candidates_and_other_trajectories() -> None:
    vs = np.array([[1.0, 0.0], [1.0, 1.0]])
    c = compare(
        {"theta": _line(0.0, 0.0), "v": vs},
        [Prediction("dir", E11, candidate=False), Prediction("v", np.array([1.0, 1.0]), of="v")],
        threshold=0.5,
    )
    np.testing.assert_allclose(c.curves["v"], [1 / np.sqrt(2), 1.0])
    assert "dir" not in c.finals and c.closest == "v"


def test_compare_fitted_prediction() -> None:
    # a target fitted to each iterate: here the iterate itself, correlation 1 everywhere
    c = compare({"theta": _line(0.0, 3.0)}, [Prediction("self", None, fit=lambda W: W)], 0.99)
    np.testing.assert_allclose(c.curves["self"], 1.0)
    assert c.closest == "self"


@pytest.mark.parametrize(
    ("predictions", "match"),
    [
        ([Prediction("a", E11), Prediction("a", E12)], "distinct"),
        ([Prediction("v", E11, of="v")], "trajectory 'v', which was not given"),
    ],
)
def test_compare_bad_predictions(predictions: list[Prediction], match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        compare({"theta": _line(0.0)}, predictions, threshold=0.5)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"optimizer": "sign", "normalized": False}, "normalized"),
        ({"optimizer": "sign", "V": np.ones((6, 2))}, "V"),
        ({"optimizer": "adam", "lam": 0.3}, "lam"),
        ({"param": "p", "lam": 0.3}, "lam"),
        ({"attention": "linear", "V": np.ones((6, 2))}, "V"),
        ({"cone_radius": -5.0}, "init='cone'"),
        ({"cone_noise": 0.5}, "init='cone'"),
    ],
)
def test_verify_refuses_options_it_would_ignore(options: dict, words: str) -> None:
    """Each of these ran and was ignored silently (train itself refuses the first)."""
    data = sg.random_data(4, 5, 6, seed=0)
    with pytest.raises(sg.ProblemError, match=words):
        sg.verify(data, n_steps=10, **options)


def test_a_tied_final_selection_is_reported_not_broken() -> None:
    """SPEC §2: ties are reported, never broken silently. Regression: verify took the first of
    tied tokens (K = Q = 0 is stationary: every token ties; two identical tokens stay tied)
    and judged that arbitrary selection ("optimal (global)" beside an infeasible Att-SVM)."""
    data = sg.random_data(4, 5, 6, seed=1)
    with pytest.raises(sg.TieError, match="K = Q = 0"):
        sg.verify(data, param="KQ", init="zero", n_steps=50, backend="numpy")
    X = np.array(data.X)
    X[0, 3] = X[0, 2]
    twin = sg.TokenData(X, Y=np.array(data.Y), Z=np.array(data.Z), v=np.array(data.v))
    with pytest.raises(sg.TieError, match=r"tokens \[2, 3\]"):
        sg.verify(twin, n_steps=500, backend="numpy")
    rep = sg.verify(data, n_steps=500, backend="numpy")  # untied: judged as before
    np.testing.assert_array_equal(rep.selection, RiskOracle(data)(rep.W).selected[:, 0])
