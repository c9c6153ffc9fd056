# SPDX-License-Identifier: BSD-3-Clause
"""fit_rates: calibrated on separable logistic regression, where the rates are theorems
(Soudry et al. 2018), verdicts, seeded intervals, errors; one measured attention run."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg

# separable data whose hard-margin SVM is known by hand: the support vectors are +-(2, 0), so
# w_mm = (1/2, 0) (margins 1, 1 and 1.5 for (3, 2)), ||w_mm|| = 1/2
X = np.array([[2.0, 0.0], [-2.0, 0.0], [3.0, 2.0]])
Y = np.array([1.0, -1.0, 1.0])
W_MM = np.array([0.5, 0.0])


def logistic_gd(n_steps: int, eta: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Plain GD on the mean logistic loss of the linear model, records at log-spaced steps."""
    Z = Y[:, None] * X
    record = set(np.unique(np.geomspace(1, n_steps, 60).astype(int)).tolist())
    w, steps, ws = np.zeros(2), [], []
    for t in range(1, n_steps + 1):
        w = w + eta * (Z.T @ (1.0 / (1.0 + np.exp(Z @ w)))) / len(Y)
        if t in record:
            steps.append(t)
            ws.append(w.copy())
    return np.array(steps), np.array(ws)


STEPS, WS = logistic_gd(20000)


def test_calibration_on_separable_logistic_regression() -> None:
    # margins of the hand-computed SVM: every one >= 1, the support ones = 1
    np.testing.assert_allclose(np.min(Y * (X @ W_MM)), 1.0)
    r = sg.fit_rates((STEPS, WS), W_MM)
    assert r.converged, r.verdict
    # theorem: ||w(t)|| = ||w_mm|| log t + O(log log t), so the slope tends to ||w_mm|| from
    # below at rate ~ 1 / log t (log t ~ 7.5 here: within 5%)
    np.testing.assert_allclose(r.norm_slope, np.linalg.norm(W_MM), rtol=0.05)
    lo, hi = r.norm_slope_ci
    assert lo <= r.norm_slope <= hi
    # the residual converges, so 1 - corr ~ rho^2 / (2 ||w_mm||^2 log^2 t): lambda -> 2
    assert r.error_log_power is not None
    np.testing.assert_allclose(r.error_log_power, 2.0, rtol=0.2)
    assert r.final_corr is not None and r.final_corr > 0.99
    # a longer run is closer to the theorem
    longer = sg.fit_rates(logistic_gd(100000), W_MM)
    assert abs(longer.norm_slope - 0.5) < abs(r.norm_slope - 0.5)


def test_intervals_are_seeded_and_reported() -> None:
    a = sg.fit_rates((STEPS, WS), W_MM, seed=3, n_boot=200)
    b = sg.fit_rates((STEPS, WS), W_MM, seed=3, n_boot=200)
    c = sg.fit_rates((STEPS, WS), W_MM, seed=4, n_boot=200)
    assert a.norm_slope_ci == b.norm_slope_ci and a.error_log_power_ci == b.error_log_power_ci
    assert a.norm_slope_ci != c.norm_slope_ci
    assert (a.seed, a.n_boot, a.level) == (3, 200, 0.95)


def test_not_converged_verdicts() -> None:
    # a wrong direction: the error does not decrease
    r = sg.fit_rates((STEPS, WS), np.array([0.0, 1.0]))
    assert not r and "does not decrease" in r.verdict
    # a norm that stalls and wobbles has no log-t slope: a wide interval
    rng = np.random.default_rng(0)
    wobble = 5.0 + 0.5 * rng.normal(size=(STEPS.size, 2))
    r = sg.fit_rates((STEPS, wobble))
    assert not r.converged and "wide" in r.verdict


def test_attention_run_is_measured() -> None:
    data = sg.random_data(3, 4, 5, seed=1)
    run = sg.train(data, normalized=False, step_size=1.0, n_steps=3000, record_every=30)
    alpha = run.history.selected[-1]
    W_mm = sg.att_svm(data, alpha).W
    r = sg.fit_rates(run, W_mm)
    assert r.norm_slope > 0.0 and r.final_corr is not None
    np.testing.assert_allclose(r.final_corr, sg.correlation(run.W, W_mm), rtol=1e-12)


@pytest.mark.parametrize(
    ("args", "kw", "words"),
    [
        ((object(),), {}, "recorded iterates"),
        (((STEPS, WS[:-1]),), {}, "one iterate per step"),
        (((STEPS[:3], WS[:3]),), {}, "at least 3 records"),
        (((STEPS, WS), np.eye(2)), {}, "direction of the iterates' shape"),
        (((STEPS, WS),), {"norm": "l1"}, "'norm' parameter"),
        (((STEPS, WS),), {"level": 1.0}, "'level' parameter"),
        (((STEPS, WS),), {"n_boot": 2}, "'n_boot' parameter"),
        (((np.array([1, 3, 3, 3, 9]), np.ones((5, 2, 2))),), {}, "'steps' of fit_rates must be"),
        (((np.arange(1, 6), np.full((5, 2, 2), 1e308)),), {}, "'iterates' of fit_rates"),
    ],
)
def test_bad_input_names_the_argument(args: tuple, kw: dict, words: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(sg.ProblemError) as err:
        sg.fit_rates(*args, **kw)
    assert words in str(err.value)


def test_fit_rates_exact_direction_unsorted_records_and_bad_input() -> None:
    """Iterates exactly along the direction converge (they were 'not converged': the error is
    0 or round-off); records in any order give the same fit, final_corr at t_max; t_min and a
    zero direction are checked."""
    t = np.unique(np.geomspace(1, 1e5, 40).astype(int))
    D = np.array([[1.0, 0.3], [0.0, 2.0]])
    exact = sg.fit_rates((t, np.log(t + 1)[:, None, None] * D), D)
    assert exact.verdict.startswith("fits converged; on the direction to round-off")
    assert exact.final_corr == pytest.approx(1.0, abs=1e-15)
    Ws = np.log(t)[:, None, None] * np.eye(2) + np.array([[0.0, 1.0], [0.0, 0.0]])
    shuffled = np.random.default_rng(0).permutation(t.size)
    a = sg.fit_rates((t, Ws), np.eye(2))
    b = sg.fit_rates((t[shuffled], Ws[shuffled]), np.eye(2))
    assert a.norm_slope == b.norm_slope and a.final_corr == b.final_corr
    np.testing.assert_allclose(a.final_corr, sg.correlation(Ws[-1], np.eye(2)), rtol=0)
    for bad in ({"t_min": float("nan")}, {"t_min": "a"}, {"t_min": -1.0}):
        with pytest.raises(sg.ProblemError, match="t_min"):
            sg.fit_rates((t, Ws), np.eye(2), **bad)
    with pytest.raises(sg.ProblemError, match="nonzero direction"):
        sg.fit_rates((t, Ws), np.zeros((2, 2)))


def test_linear_growth_fits_steps_of_a_fixed_length() -> None:
    """Normalized GD with a constant step grows ||W|| like t, where a + b log t does not fit
    (verify called such runs "not converged: the interval of the norm slope is wide")."""
    t = np.unique(np.geomspace(1, 1e4, 50).astype(int))
    D = np.array([[1.0, 0.0], [0.0, 2.0]])
    Ws = 0.05 * t[:, None, None] * D + np.log(t)[:, None, None] * np.array([[0.0, 1.0], [0, 0]])
    linear = sg.fit_rates((t, Ws), D, growth="linear")
    assert linear.growth == "linear" and linear.converged, linear.verdict
    np.testing.assert_allclose(linear.norm_slope, 0.05 * np.linalg.norm(D), rtol=1e-2)
    with pytest.raises(sg.ProblemError, match="'growth' parameter of fit_rates"):
        sg.fit_rates((t, Ws), D, growth="quadratic")


def test_verify_fits_normalized_runs_linearly() -> None:
    rep = sg.verify(sg.random_data(4, 5, 6, seed=1), n_steps=3000, step_size=0.05,
                    backend="numpy")  # fmt: skip
    assert rep.converged_to == "fro"
    assert rep.rates["fro"].growth == "linear" and rep.rates["fro"].converged


def test_nuclear_norm_of_vector_iterates_is_refused() -> None:
    t = np.arange(1, 50)
    Ws = np.outer(np.log(t), np.ones(3))  # vector iterates (R, d): no nuclear norm
    with pytest.raises(sg.ProblemError, match=r"'norm' parameter of fit_rates .* \(R, d, d\)"):
        sg.fit_rates((t, Ws), norm="nuc")
    # the Euclidean norm of a vector: slope sqrt(3) in log t (||log t * 1|| = sqrt(3) log t)
    np.testing.assert_allclose(sg.fit_rates((t, Ws)).norm_slope, np.sqrt(3.0), rtol=1e-9)


def test_verdict_shows_the_evidence_of_an_error_that_levels_off() -> None:
    """1 - corr -> 0.2 (another limit), approached like 1 / log t: the intervals are narrow
    and the error decreases over the window, but it is a power of neither log t nor t (the
    fitted powers fall across the window), and the verdict says so with the drifts (it said
    "fits converged; 1 - corr decreases like (log t)^-0.301", session 54)."""
    t = np.unique(np.geomspace(1, 1e5, 40).astype(int))
    theta = np.arccos(0.8) + 1.0 / np.log(t + 2)
    Ws = np.log(t + 2)[:, None] * np.stack([np.cos(theta), np.sin(theta)], axis=1)
    r = sg.fit_rates((t, Ws), np.array([1.0, 0.0]))
    assert not r.converged, r.verdict
    assert r.final_corr is not None and r.error_log_power is not None
    np.testing.assert_allclose(r.final_corr, np.cos(theta[-1]), rtol=1e-12)
    lam, kappa = r.error_log_power_lack_of_fit, r.error_power_lack_of_fit
    assert lam is not None and kappa is not None and lam.detected and kappa.detected
    assert lam.drift < -0.25 and lam.drift_ci[1] < 0.0  # the decay slows: a floor
    assert r.verdict == (
        "not converged: 1 - corr is neither a power of log t nor a power of t on these "
        f"records: lambda changes by {lam.drift:+.0%} [{lam.drift_ci[0]:+.0%}, "
        f"{lam.drift_ci[1]:+.0%}] and kappa by {kappa.drift:+.0%} [{kappa.drift_ci[0]:+.0%}, "
        f"{kappa.drift_ci[1]:+.0%}] across the window"
    )
    plain = sg.fit_rates((t, Ws))  # no direction: only the norm was fitted, and it fits
    assert plain.verdict == "fits converged" and not plain.norm_lack_of_fit.detected


def test_iterates_whose_norms_overflow_are_fitted_scaled() -> None:
    """Regression (session 50): entries of 1e200 gave a NaN norm slope and leaked numpy's
    overflow warnings (their Frobenius norm's sum of squares overflows). They are fitted in
    units of a power of two: the norm fit scales with them, the direction fit is unchanged."""
    t = np.arange(1, 40)
    Ws = np.log(t)[:, None, None] * np.eye(2) + np.array([[0.0, 1.0], [0.0, 0.0]])
    a = sg.fit_rates((t, Ws), np.eye(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = sg.fit_rates((t, Ws * 1e200), np.eye(2))
    np.testing.assert_allclose(b.norm_slope, a.norm_slope * 1e200, rtol=1e-12)
    np.testing.assert_allclose(b.norm_intercept, a.norm_intercept * 1e200, rtol=1e-12)
    np.testing.assert_allclose(b.norm_slope_ci, np.multiply(a.norm_slope_ci, 1e200), rtol=1e-12)
    assert b.final_corr == a.final_corr and b.error_log_power == a.error_log_power


# -- session 54: lack of fit, few records, early stops ----------------------------------------

SQRT_T = np.arange(100, 20001, 100)


@pytest.mark.parametrize(("growth", "model"), [("log", "a + b log t"), ("linear", "a + b t")])
def test_sqrt_growth_fits_neither_norm_model(growth: str, model: str) -> None:
    """Regression: ||W|| = sqrt(t) read "fits converged" under both models (log: slope 49,
    interval [45.6, 54.4]), the intervals being narrow; the slope of either line drifts across
    the window by more than its own size, and the verdict says so."""
    r = sg.fit_rates((SQRT_T, np.sqrt(SQRT_T)[:, None, None] * np.eye(2)), growth=growth)
    assert not r and r.verdict.startswith(f"not converged: the norm is not {model} on these")
    check = r.norm_lack_of_fit
    assert check.detected and abs(check.drift) > 1.0, check
    assert check.drift_ci[0] <= check.drift <= check.drift_ci[1]
    # the truth, from the derivative of sqrt(t): the local slope in log t, sqrt(t) / 2,
    # grows; the local slope in t, 1 / (2 sqrt(t)), falls
    assert (check.drift > 0.0) == (growth == "log")


def test_exact_log_growth_with_noise_still_converges() -> None:
    """a + b log t plus noise is the named model: no lack of fit detected on any of several
    noise draws (each drift's interval contains 0), and the verdict is the plain one."""
    t = np.unique(np.geomspace(1, 1e5, 60).astype(int))
    for seed in range(5):
        noise = 0.05 * np.random.default_rng(seed).normal(size=t.size)
        r = sg.fit_rates((t, (2.0 + 0.5 * np.log(t) + noise)[:, None]))
        lo, hi = r.norm_lack_of_fit.drift_ci
        assert lo <= 0.0 <= hi and not r.norm_lack_of_fit.detected, (seed, r.norm_lack_of_fit)
        assert r.converged and r.verdict == "fits converged", (seed, r.verdict)
        np.testing.assert_allclose(r.norm_slope, 0.5, rtol=0.1)


def test_theorem_case_and_normalized_steps_fit_their_models() -> None:
    """Iterates whose norm grows like t and whose error decays like a power of t fit a + b t,
    and the verdict reads the decay off kappa, lambda's line drifting (it read "(log t)^-13.5"
    off lambda's); the calibration run (Soudry et al. 2018's setting) fits a + b log t and
    (log t)^-lambda with small drifts."""
    t = np.unique(np.geomspace(1, 1e4, 60).astype(int)).astype(float)
    angle = 1.0 / t  # 1 - corr = 1 - cos(1 / t) ~ t^-2 / 2
    Ws = 0.1 * t[:, None] * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    lin = sg.fit_rates((t, Ws), np.array([1.0, 0.0]), growth="linear")
    assert lin.converged and lin.error_power is not None, lin.verdict
    want = f"fits converged; 1 - corr decreases like t^-{lin.error_power:.3g}"
    assert lin.verdict.startswith(want), lin.verdict
    np.testing.assert_allclose(lin.error_power, 2.0, rtol=1e-3)
    assert lin.error_log_power_lack_of_fit is not None and lin.error_log_power_lack_of_fit.detected
    r = sg.fit_rates((STEPS, WS), W_MM)
    assert r.verdict.startswith("fits converged; 1 - corr decreases like (log t)^-"), r.verdict
    assert r.error_log_power_lack_of_fit is not None
    assert abs(r.norm_lack_of_fit.drift) < 0.05 and not r.norm_lack_of_fit.detected
    assert not r.error_log_power_lack_of_fit.detected


def test_verdict_names_a_small_number_of_records() -> None:
    """Regression: 3 records read "fits converged" with no word on how few they were; fewer
    than 10 are named, and 3 records leave nothing to test the fit on (no interval)."""
    t = np.array([10, 100, 1000])
    Ws = np.log(t)[:, None, None] * np.eye(2) + np.array([[0.0, 1.0], [0.0, 0.0]])
    r = sg.fit_rates((t, Ws), np.eye(2), t_min=3)
    assert r.steps.size == 3 and r.converged
    assert r.verdict.startswith("fits converged on 3 records only; "), r.verdict
    assert np.all(np.isnan(r.norm_lack_of_fit.drift_ci)) and not r.norm_lack_of_fit.detected
    assert "records only" not in sg.fit_rates((STEPS, WS), W_MM).verdict  # 30 records


def test_verdict_says_the_run_stopped_early() -> None:
    """Regression: a run stopped before its n_steps (here by its callback) was fitted as if it
    had ended normally; the verdict names the stop, and run_status carries it."""
    data = sg.random_data(3, 4, 5, seed=1)

    def stop(state: sg.gd.Intermediate) -> None:
        if state.step >= 600:
            raise StopIteration

    kw = {"normalized": False, "step_size": 1.0, "record_every": 10, "backend": "numpy"}
    early = sg.train(data, n_steps=3000, callback=stop, **kw)  # type: ignore[arg-type]
    full = sg.train(data, n_steps=600, **kw)  # type: ignore[arg-type]
    assert early.status == "callback" and early.n_steps == 600
    r, ref = sg.fit_rates(early), sg.fit_rates(full)
    assert r.verdict == ref.verdict + "; the run stopped early (callback) after 600 of 3000 steps"
    assert r.run_status == "callback" and ref.run_status == "max_steps"
    assert "stopped" not in ref.verdict


@pytest.mark.parametrize("width", [1, 2])
def test_a_norm_that_does_not_change_is_not_a_fitted_rate(width: int) -> None:
    """Bit-equal norms gave slope 0 with the interval [0, 0], 'narrow' by 0 <= 0.25 * 0, and
    read 'fits converged' (a direction equal to the iterates added 'final corr 1'), while the
    same constant norm with round-off in its centred values read 'not converged' (wide)."""
    t = np.arange(100, 5001, 100)
    iterates = np.ones((t.size, width))
    for rates in (sg.fit_rates((t, iterates)), sg.fit_rates((t, iterates), np.ones(width))):
        assert rates.norm_slope == 0.0 and rates.norm_slope_ci == (0.0, 0.0)  # the case
        assert not rates.converged
        assert rates.verdict.startswith("not converged: the norm slope is 0 [0, 0]")


def test_a_least_squares_slope_of_zero_on_changing_norms_is_a_wide_interval() -> None:
    """V-shaped norms have a least-squares slope of exactly 0 but change: 'no change on these
    records' is said only of an interval [0, 0] (bit-equal records); these read 'wide'."""
    t = np.arange(100, 2001, 100)
    y = 1.0 + 0.5 * np.abs(np.arange(t.size) - 9.5)
    iterates = np.stack([y, np.zeros_like(y)], axis=1)
    rates = sg.fit_rates((t, iterates), growth="linear")
    assert rates.norm_slope == 0.0 and rates.norm_slope_ci != (0.0, 0.0)  # the case
    assert "no change" not in rates.verdict and "is wide" in rates.verdict
