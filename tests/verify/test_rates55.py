# SPDX-License-Identifier: BSD-3-Clause
"""Session 55: `verify`'s rates carry the run's stop status.

Session 54 taught `fit_rates` to name a `GDRun`'s early stop (`Rates.run_status`, and the
verdict's "; the run stopped early (...) after k of n steps"), but `verify` fitted the pair
(steps, iterates), so its rates had `run_status=None` and a run stopped early read as a plain
fit. Both tests failed before the fix (run_status None, no stop in the verdict).
"""

from __future__ import annotations

import svmgeo as sg

DATA = sg.random_data(4, 5, 6, seed=1)


def _plain(rep: sg.VerifyReport, name: str, norm: object) -> sg.Rates:
    """The oracle: the same records fitted as a pair, which carries no stop status."""
    W = getattr(rep, f"W_{name}")
    return sg.fit_rates((rep.steps, rep.run.history.W), W, norm=norm, growth="linear")


def test_gd_rates_name_a_callback_stop() -> None:
    def stop(state: sg.gd.Intermediate) -> None:
        if state.step >= 600:
            raise StopIteration

    kw = {"step_size": 0.05, "backend": "numpy"}
    early = sg.verify(DATA, n_steps=3000, callback=stop, **kw)  # type: ignore[arg-type]
    assert early.status == "callback" and early.run.n_steps == 600
    for name, norm in (("fro", "fro"), ("nuc", "nuc")):
        r = early.rates[name]
        assert r.run_status == "callback", r
        suffix = "; the run stopped early (callback) after 600 of 3000 steps"
        assert r.verdict == _plain(early, name, norm).verdict + suffix
    # the same 600 steps taken as the whole run: no stop named
    full = sg.verify(DATA, n_steps=600, **kw)  # type: ignore[arg-type]
    assert full.status == "max_steps"
    for name, norm in (("fro", "fro"), ("nuc", "nuc")):
        r = full.rates[name]
        assert r.run_status == "max_steps" and "stopped" not in r.verdict, r.verdict
        assert r.verdict == _plain(full, name, norm).verdict


def test_sign_rates_name_an_overflow_stop() -> None:
    """Sign steps of 1e147 per entry take ||W||_F past the engine's 1e150 within a few
    hundred steps (at most 6e147 a step for d = 6): the run stops with status overflow, and
    every SVM's rates say so."""
    rep = sg.verify(DATA, optimizer="sign", n_steps=3000, step_size=1e147, backend="numpy")
    k = rep.run.n_steps
    assert rep.status == "overflow" and 1e150 / 6e147 <= k < 3000, (rep.status, k)
    assert rep.rates is not None and rep.rates["fro"] is not None
    for name, r in rep.rates.items():
        if r is None:
            continue
        assert r.run_status == "overflow", (name, r)
        assert r.verdict.endswith(f"; the run stopped early (overflow) after {k} of 3000 steps")
        assert r.verdict.count("stopped early") == 1
