# SPDX-License-Identifier: BSD-3-Clause
"""Bad input to train / train_batch and to the public helpers of svmgeo.gd: each a ProblemError
that says what and how to fix."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable

import numpy as np
import pytest

import svmgeo as sg
from svmgeo import ProblemError
from svmgeo import gd as sgd

from .conftest import ALL_BACKENDS, DATASETS

DATA = DATASETS["cross"]  # d = 5


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"step_size": 0.0}, "'step_size' parameter of train must be a float in \\(0, inf\\)"),
        ({"step_size": -1.0}, "step_size"),
        ({"step_size": math.nan}, "step_size"),
        ({"step_size": math.inf}, "step_size"),
        (
            {"n_steps": 0},
            "'n_steps' parameter of train must be an int in \\[1, 4611686018427387904\\]",
        ),
        ({"n_steps": 2.5}, "n_steps"),
        ({"param": "KQ", "m": 0}, "'m' parameter"),
        ({"loss": "hinge"}, "'logistic', 'exponential', 'correlation'. Got 'hinge'"),
        ({"head": "tanh"}, "'linear', 'relu', 'concave'. Got 'tanh'"),
        ({"backend": "jax"}, "'numba', 'numpy', 'cupy'. Got 'jax'"),
        ({"param": "QK"}, "'W', 'KQ'"),
        ({"record_every": 0}, "record_every"),
        ({"record": ("loss", "nope")}, "record must be a tuple of names among"),
        ({"ridge": -1e-3}, "ridge"),
        ({"tol": -1.0}, "tol"),
        ({"saturation_tol": 2.0}, "saturation_tol"),
        ({"normalized": 1}, "'normalized' parameter of train must be True or False"),
        ({"head": "relu"}, "head='relu' needs V of shape \\(5, p\\)"),
        ({"head": "relu", "V": np.ones((4, 3))}, "V must have shape \\(5, 3\\)"),
        ({"head": "relu", "V": np.ones((5, 3)), "v": np.ones(2)}, "v must have shape \\(3,\\)"),
        ({"head": "concave"}, "head='concave' needs lam"),
        ({"head": "concave", "lam": -0.1}, "lam"),
        ({"v": np.ones(3)}, "v must have shape \\(5,\\)"),
        ({"lam": 0.1}, "lam applies to head='concave' only"),
        ({"V": np.ones((5, 2))}, "V applies to head='relu' only"),
        ({"init": "ones"}, "init must be 'zero', \\('random', scale\\)"),
        ({"init": ("gaussian", 0.1)}, "supports name 'random'"),
        ({"init": ("random", -0.1)}, "init scale"),
        ({"init": np.ones((4, 4))}, "init W must have shape \\(5, 5\\)"),
        (
            {"param": "KQ", "m": 3, "init": (np.ones((5, 2)), np.ones((5, 2)))},
            "init K must have shape \\(5, 3\\)",
        ),
        (
            {"param": "KQ", "init": (np.ones((5, 2)), np.ones((5, 3)))},
            "init Q must have shape \\(5, 2\\)",
        ),
        ({"param": "KQ", "init": np.ones((5, 5))}, "param='KQ' takes init="),
        ({"init": np.full((5, 5), np.nan)}, "must be finite"),
        ({"seed": 1.5}, "'seed' parameter of train must be None"),
        ({"seed": -1}, "'seed' parameter of train must be None or a non-negative int"),
    ],
)
def test_bad_input_is_a_problem_error(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ProblemError, match=match):
        sg.train(DATA, n_steps=kwargs.pop("n_steps", 3), **kwargs)  # type: ignore[arg-type]


def test_missing_linear_head() -> None:
    data = sg.TokenData(np.ones((2, 3, 4)), Z=np.ones((2, 4)))
    with pytest.raises(ProblemError, match="head='linear' needs v"):
        sg.train(data, n_steps=2)


def test_train_batch_input() -> None:
    with pytest.raises(ProblemError, match="equal sizes"):
        sg.train_batch([DATA, DATASETS["self"], sg.random_data(3, 4, 6, seed=0)], n_steps=2)
    with pytest.raises(ProblemError, match="at least one dataset"):
        sg.train_batch([], n_steps=2)
    with pytest.raises(ProblemError, match="sequence of TokenData"):
        sg.train_batch(DATA, n_steps=2)  # type: ignore[arg-type]
    with pytest.raises(ProblemError, match="unknown option\\(s\\) 'n_iter'; valid options are"):
        sg.train_batch([DATA], n_iter=2)
    with pytest.raises(ProblemError, match=r"dataset 1 must be a svmgeo\.TokenData"):
        sg.train_batch([DATA, np.ones((3, 4, 5))], n_steps=2)  # type: ignore[list-item]
    with pytest.raises(ProblemError, match=r"train takes one svmgeo\.TokenData"):
        sg.train([DATA], n_steps=2)  # type: ignore[arg-type]


def test_train_names_what_the_user_passed() -> None:
    """step_size='0.1' was reported with optimizer='steepest' (train's own rewrite of the
    Polyak step) and record='loss' as ('l', 'o', 's', 's')."""
    data = sg.random_data(4, 5, 6, seed=0)
    with pytest.raises(sg.ProblemError, match=r"'0\.1'") as err:
        sg.train(data, n_steps=3, step_size="0.1")  # type: ignore[arg-type]
    assert "steepest" not in str(err.value)
    with pytest.raises(sg.ProblemError, match=r"\('loss',\)"):
        sg.train(data, n_steps=3, record="loss")  # type: ignore[arg-type]


def test_init_pairs_and_named_inits() -> None:
    """A list [K, Q] is the pair (K, Q) (it was read as one W: 'init W must have shape'), and a
    named init with three entries says so (it said 'init must be numeric; got dtype <U32')."""
    data = sg.random_data(4, 5, 5, seed=0)
    K = 0.1 * np.ones((5, 3))
    as_list = sg.train(data, param="KQ", init=[K, K], n_steps=3, backend="numpy")
    as_tuple = sg.train(data, param="KQ", init=(K, K), n_steps=3, backend="numpy")
    np.testing.assert_array_equal(as_list.W, as_tuple.W)
    with pytest.raises(sg.ProblemError, match="two entries"):
        sg.train(data, init=("random", 0.1, 2), n_steps=3)  # type: ignore[arg-type]


def test_a_stacked_three_dimensional_mask_is_refused() -> None:
    """With n == B, a (n, K, T) mask was read as one (K, T) mask per instance: a different
    masked problem, silently (with n != B it was refused)."""
    rng = np.random.default_rng(3)
    Xs, Zs, v = rng.normal(size=(3, 3, 4, 5)), rng.normal(size=(3, 3, 1, 5)), rng.normal(size=5)
    mask = rng.random((3, 1, 4)) < 0.5
    mask[..., 0] = True
    with pytest.raises(sg.ProblemError, match="stacked mask must be"):
        sg.train_batch({"X": Xs, "Z": Zs, "v": v, "mask": mask}, n_steps=5)
    shared = np.broadcast_to(mask, (3, 3, 1, 4))
    batch = sg.train_batch({"X": Xs, "Z": Zs, "v": v, "mask": shared}, n_steps=5)
    alone = sg.train(sg.TokenData(Xs[0], Z=Zs[0], v=v, mask=mask), n_steps=5)
    np.testing.assert_array_equal(batch[0].W, alone.W)


def test_loss_and_grad_far_out() -> None:
    """ridge=0 added 0 * inf = NaN once ||K||^2 overflowed (W = K Q^T itself moderate); a W
    beyond the engine's range got a number, where train stops with OVERFLOW."""
    from svmgeo.gd import loss_and_grad

    rng = np.random.default_rng(0)
    data = sg.TokenData(rng.normal(size=(3, 4, 5)), v=rng.normal(size=5), Z=rng.normal(size=(3, 5)))
    K, Q = rng.normal(size=(5, 2)) * 1e156, rng.normal(size=(5, 2)) * 1e-160
    np.testing.assert_allclose(loss_and_grad(data, (K, Q))[0], loss_and_grad(data, K @ Q.T)[0])
    with pytest.raises(sg.ProblemError, match="beyond the largest norm the engine represents"):
        loss_and_grad(data, np.full((5, 5), 2e154))


def test_numpy_seeds_and_list_inits_are_taken() -> None:
    """np.int64 seeds (as n_steps already) and ["random", 0.1] (as from JSON) were refused
    with messages about an int seed and an init of shape (2,)."""
    data = sg.random_data(3, 4, 5, seed=0)
    want = sg.train(data, n_steps=5, init=("random", 0.1), seed=1)
    got = sg.train(data, n_steps=5, init=["random", 0.1], seed=np.int64(1))
    np.testing.assert_array_equal(got.W, want.W)
    kq = sg.train(data, n_steps=5, param="KQ", init=["random", 0.1], seed=1)
    np.testing.assert_array_equal(
        kq.W, sg.train(data, n_steps=5, param="KQ", init=("random", 0.1), seed=1).W
    )


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_a_start_already_saturated_stops_at_once(backend: str) -> None:
    """The start is a record point; its saturation was not tested, so the run took a whole
    record_every chunk before stopping SATURATED."""
    rng = np.random.default_rng(0)
    W0 = rng.normal(size=(5, 5))
    W0 *= 1e3 / np.linalg.norm(W0)
    data = sg.random_data(3, 4, 5, seed=0)
    run = sg.train(data, init=W0, n_steps=1000, saturation_tol=1e-3, backend=backend)
    assert run.history.max_prob[0].min() >= 1 - 1e-3  # the case itself
    assert run.status is sg.StopStatus.SATURATED and run.n_steps == 0
    np.testing.assert_array_equal(run.W, W0)


def test_loss_and_grad_names_its_params() -> None:
    """Its shape errors spoke of an 'init' of shape (1, d, d), which loss_and_grad has not."""
    from svmgeo.gd import loss_and_grad

    data = sg.random_data(3, 4, 5, seed=0)
    for params in (np.zeros((5, 6)), np.zeros(6)):
        with pytest.raises(sg.ProblemError, match=r"params of shape .* in loss_and_grad"):
            loss_and_grad(data, params)
    with pytest.raises(sg.ProblemError, match="a list of two arrays reads as one array"):
        loss_and_grad(data, [np.zeros((5, 2)), np.zeros((5, 2))])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ((np.ones((5, 2)), np.ones((4, 2))), r"got K of shape \(5, 2\) and Q of shape \(4, 2\)"),
        ((np.ones((5, 2)), np.ones((5, 3))), r"Q of shape \(5, 3\) for d = 5"),
        ((np.ones((5, 2)),) * 3, "params of loss_and_grad is a tuple of length 3"),
        ((np.ones((1, 5, 2)),) * 2, "params K of loss_and_grad must be a 2-D array"),
        (("random", 0.1), "params K of loss_and_grad must be numeric"),
        ((np.full((5, 2), 1e200),) * 2, r"params \(K, Q\) of loss_and_grad give W = K Q\^T"),
    ],
)
def test_loss_and_grad_names_params_for_factor_pairs(params: object, match: str) -> None:
    """Regression: bad (K, Q) pairs were reported as 'init Q must have shape', "param='KQ'
    takes init=" or 'rescale init so that', options loss_and_grad has not (and
    ('random', 0.1) evaluated at random factors)."""
    from svmgeo.gd import loss_and_grad

    with pytest.raises(ProblemError, match=match) as err:
        loss_and_grad(DATA, params)
    assert re.search(r"\binit\b", str(err.value)) is None


@pytest.mark.parametrize("entry", ["train", "train_batch"])
def test_record_and_callback_are_checked_up_front(entry: str) -> None:
    """Regression: record=None and callback=3 / "print" were bare TypeErrors (the callback's
    after the first chunk of steps had run); train_batch read record="loss" as
    ('l', 'o', 's', 's') and record="W" silently as ("W",)."""
    calls: list[int] = []

    def run(**kw: object) -> object:
        calls.append(1)
        if entry == "train":
            return sg.train(DATA, n_steps=3, **kw)  # type: ignore[arg-type]
        return sg.train_batch([DATA, DATA], n_steps=3, **kw)  # type: ignore[arg-type]

    with pytest.raises(ProblemError, match=f"'record' parameter of {entry} takes a sequence"):
        run(record=None)
    for name in ("loss", "W"):
        with pytest.raises(ProblemError, match=rf"e\.g\. \('{name}',\); got the string"):
            run(record=name)
    for callback in (3, "print"):
        with pytest.raises(ProblemError, match=f"'callback' parameter of {entry} must be"):
            run(callback=callback)
    assert len(calls) == 5
    assert isinstance(run(record=("loss",)), (sg.GDRun, sg.BatchRun))


def test_random_init_needs_a_finite_scale() -> None:
    """Regression: ("random", inf) passed the scale check (whose message said (0, inf]) and
    failed later with a message about K Q^T."""
    for param in ("W", "KQ"):
        with pytest.raises(ProblemError, match=r"init scale.*\(0, inf\)\. Got inf.*finite"):
            sg.train(DATA, param=param, init=("random", math.inf), n_steps=2)
    with pytest.raises(ProblemError, match="init scale"):
        sg.train_batch([DATA, DATA], init=("random", math.inf), n_steps=2)


def test_a_width_m_past_memory_is_refused_before_allocating(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Regression (session 50): train(param='KQ', m=10**9) allocated (3, 10**9) factors
    (22 GiB), hung and was killed. m > d stays allowed; m whose working arrays exceed the
    available memory is a ProblemError naming 'm', before any allocation."""
    from svmgeo import _validation

    monkeypatch.setattr(_validation, "available_bytes", lambda: 1e6)  # 1 MB: m=10**5 is past it
    d = DATA.d
    for call in (
        lambda: sg.train(DATA, param="KQ", m=10**5, n_steps=2),
        lambda: sg.train_batch([DATA, DATA], param="KQ", m=10**5, n_steps=2),
        lambda: sg.verify(DATA, param="KQ", m=10**5, n_steps=2),
    ):
        with pytest.raises(ProblemError, match=rf"'m' parameter.*\({d}, 100000\).*m={d}"):
            call()
    assert sg.train(DATA, param="KQ", m=2 * d, n_steps=2).K.shape == (d, 2 * d)  # m > d fits
    assert sg.train(DATA, param="KQ", m=d, n_steps=2).K.shape == (d, d)


# -- the public helpers of svmgeo.gd (session 50's input audit) --------------------------------

EYE = np.eye(3)
START = sgd.AdamMoments(np.zeros((3, 3)), -math.inf, np.zeros((3, 3)), -math.inf, 0)


def _adam(**kw: object) -> object:
    args: dict[str, object] = {"G": EYE, "M": 0.0, "moments": START, "beta1": 0.9,
                               "beta2": 0.999, "eps": 1e-8}  # fmt: skip
    return sgd.adam_direction(**{**args, **kw})  # type: ignore[arg-type]


HELPER_REFUSALS: list[tuple[str, Callable[[], object], str]] = [
    # mirror_map / inverse_mirror_map: NaN matrices, RuntimeWarnings, TypeError, ZeroDivisionError
    ("mirror p<1", lambda: sgd.mirror_map(EYE, 0.5), r"'p' parameter of mirror_map.*\(1, inf\)"),
    ("mirror p=1", lambda: sgd.mirror_map(EYE, 1), r"'p' parameter of mirror_map"),
    ("mirror p=nan", lambda: sgd.mirror_map(EYE, math.nan), r"'p' parameter of mirror_map"),
    ("mirror p=inf", lambda: sgd.mirror_map(EYE, math.inf), r"'p' parameter of mirror_map"),
    ("mirror p str", lambda: sgd.mirror_map(EYE, "2"), r"'p' parameter of mirror_map"),  # type: ignore[arg-type]
    (
        "mirror W nan",
        lambda: sgd.mirror_map(EYE * math.nan, 2),
        r"'W' of mirror_map must be finite",
    ),
    ("mirror W str", lambda: sgd.mirror_map("x", 2), r"'W' of mirror_map must be numeric"),  # type: ignore[arg-type]
    ("mirror overflow", lambda: sgd.mirror_map(EYE * 1e308, 3), r"W\[0, 0\] = 1e\+308.*Rescale W"),
    ("inverse p=1", lambda: sgd.inverse_mirror_map(EYE, 1), r"'p' parameter of inverse_mirror_map"),
    ("inverse Theta nan", lambda: sgd.inverse_mirror_map(EYE * math.nan, 2), r"'Theta' of inverse"),
    ("inverse overflow", lambda: sgd.inverse_mirror_map(EYE * 1e10, 1.01), r"Rescale Theta"),
    # steepest_direction: all-NaN directions, ZeroDivisionError, numpy errors
    (
        "steepest q<1",
        lambda: sgd.steepest_direction(EYE, 0.5),
        r"'q' parameter of steepest_direction must be a float in \[1, inf\]",
    ),
    (
        "steepest q=0",
        lambda: sgd.steepest_direction(EYE, 0),
        r"'q' parameter of steepest_direction",
    ),
    ("steepest q=nan", lambda: sgd.steepest_direction(EYE, math.nan), r"'q' parameter"),
    (
        "steepest G nan",
        lambda: sgd.steepest_direction(EYE * math.nan, 2),
        r"'G' of steepest_direction must be finite",
    ),
    ("steepest G str", lambda: sgd.steepest_direction("x", 2), r"'G' of steepest_direction"),  # type: ignore[arg-type]
    (
        "steepest dual",
        lambda: sgd.steepest_direction(EYE * 1e308, math.inf),
        r"dual norm.*Rescale G",
    ),
    # spectral_direction: LinAlgError, an infinite dual norm
    (
        "spectral G nan",
        lambda: sgd.spectral_direction(EYE * math.nan),
        r"'G' of spectral_direction must be finite",
    ),
    (
        "spectral 1-D",
        lambda: sgd.spectral_direction(np.ones(3)),
        r"'G' of spectral_direction must be a 2-D array",
    ),
    ("spectral dual", lambda: sgd.spectral_direction(EYE * 1e308), r"nuclear.*Rescale G"),
    # sparsity: 0.0 for NaN W and a rel outside [0, 1], numpy's error for a string
    ("sparsity W nan", lambda: sgd.sparsity(EYE * math.nan), r"'W' of sparsity must be finite"),
    ("sparsity W str", lambda: sgd.sparsity("x"), r"'W' of sparsity must be numeric"),  # type: ignore[arg-type]
    (
        "sparsity rel<0",
        lambda: sgd.sparsity(EYE, rel=-1),
        r"'rel' parameter of sparsity must be a float in \[0, 1\]",
    ),
    ("sparsity rel=nan", lambda: sgd.sparsity(EYE, rel=math.nan), r"'rel' parameter of sparsity"),
    ("sparsity rel>1", lambda: sgd.sparsity(EYE, rel=2), r"'rel' parameter of sparsity"),
    # adam_direction: NaN moments, -inf, numpy's broadcast error
    ("adam G nan", lambda: _adam(G=EYE * math.nan), r"'G' of adam_direction must be finite"),
    ("adam M nan", lambda: _adam(M=math.nan), r"'M' parameter of adam_direction"),
    (
        "adam betas 1",
        lambda: _adam(beta1=1.0, beta2=1.0, eps=0),
        r"'beta1' parameter of adam_direction must be a float in \[0, 1\)",
    ),
    ("adam beta2", lambda: _adam(beta2=1.5), r"'beta2' parameter of adam_direction"),
    (
        "adam eps",
        lambda: _adam(eps=-1e-8),
        r"'eps' parameter of adam_direction must be a float in \[0, inf\)",
    ),
    (
        "adam moments shape",
        lambda: _adam(moments=sgd.AdamMoments(np.zeros((2, 2)), 0.0, np.zeros((2, 2)), 0.0, 0)),
        r"moments\.m of adam_direction must have shape \(3, 3\)",
    ),
    ("adam moments type", lambda: _adam(moments=None), r"'moments' parameter of adam_direction"),
    (
        "adam moments v<0",
        lambda: _adam(moments=START._replace(v=-EYE, b=0.0)),
        r"moments\.v of adam_direction.*>= 0",
    ),
    # MapRisk: bare KeyErrors, numpy's einsum and conversion errors
    (
        "MapRisk attention",
        lambda: sgd.MapRisk(DATA, "foo"),
        r"'attention' parameter of MapRisk must be one of 'softmax'",
    ),
    (
        "MapRisk loss",
        lambda: sgd.MapRisk(DATA, "sigmoid", loss="x"),
        r"'loss' parameter of MapRisk",
    ),
    (
        "MapRisk head",
        lambda: sgd.MapRisk(DATA, "sigmoid", head="x"),
        r"'head' parameter of MapRisk",
    ),
    (
        "MapRisk data",
        lambda: sgd.MapRisk(DATA.X, "sigmoid"),
        r"MapRisk takes one svmgeo\.TokenData",
    ),
    (
        "MapRisk.value shape",
        lambda: sgd.MapRisk(DATA, "sigmoid").value(np.eye(2)),
        r"W must have shape \(5, 5\).*MapRisk\.value",
    ),
    ("MapRisk.value str", lambda: sgd.MapRisk(DATA, "sigmoid").value("x"), r"W must be numeric"),  # type: ignore[arg-type]
    (
        "MapRisk.value nan",
        lambda: sgd.MapRisk(DATA, "relu").value(np.eye(5) * math.nan),
        r"W must be finite",
    ),
    (
        "MapRisk.log_grad",
        lambda: sgd.MapRisk(DATA, "linear").log_grad(np.eye(4)),
        r"W must have shape.*MapRisk\.log_grad",
    ),
    # parse_optimizer: AttributeError
    (
        "parse_optimizer int",
        lambda: sgd.parse_optimizer(5),
        r"optimizer text must be a str; got int",
    ),  # type: ignore[arg-type]
    # train_batch: which dataset has no queries
    (
        "train_batch prompt",
        lambda: sg.train_batch([DATA, sg.TokenData(DATA.X, v=DATA.v)], n_steps=2),
        r"^dataset 1: this TokenData has no queries",
    ),
]


@pytest.mark.parametrize(
    ("call", "match"), [pytest.param(c, m, id=i) for i, c, m in HELPER_REFUSALS]
)
def test_public_helpers_refuse_bad_input(call: Callable[[], object], match: str) -> None:
    """Regression (session 50's input audit): the public helpers of svmgeo.gd returned NaN or
    inf, warned, or raised numpy's, Python's or a KeyError on bad input."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way to the refusal
        with pytest.raises(ProblemError, match=match):
            call()


def test_public_helpers_take_their_edge_values() -> None:
    """The ends of the ranges stay accepted: q = 1 and inf, rel = 0 and 1, M = -inf, beta = 0,
    eps = 0, a zero G; and p = 1e308 (finite) with |W| <= 1."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for q in (1, 1.0, math.inf):
            D, dual = sgd.steepest_direction(EYE, q)
            assert np.all(np.isfinite(D)) and math.isfinite(dual)
        assert sgd.sparsity(EYE, rel=0.0) == 0.0 and sgd.sparsity(EYE, rel=1.0) == 2 / 3
        D, _ = _adam(M=-math.inf, G=np.zeros((3, 3)))
        np.testing.assert_array_equal(D, np.zeros((3, 3)))
        D, _ = _adam(beta1=0.0, beta2=0.0, eps=0.0)
        np.testing.assert_array_equal(D, EYE)  # sign(G) where G != 0
        np.testing.assert_array_equal(sgd.mirror_map(EYE, 1e308), EYE)
        np.testing.assert_array_equal(sgd.spectral_direction(np.zeros((0, 3)))[0], np.zeros((0, 3)))
        assert sgd.parse_optimizer("steepest:inf") == ("steepest", math.inf)
