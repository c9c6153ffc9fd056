# SPDX-License-Identifier: BSD-3-Clause
"""The tensor form (issue #22): vectorized data and rows, the vector SVM equal to Att-SVM, GD in
vectorized coordinates equal to train, the closed-form Hessian, and no vector form for the
nuclear norm and (K, Q)."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.analysis import TensorData, TensorRows, tensor_rows, tensor_svm, tensorize
from svmgeo.constraints import EQUALITY, MARGIN, rows_without_tokens
from svmgeo.gd import loss_and_grad

SEEDS = range(4)


def test_rows_reproduce_logits_and_constraints() -> None:
    data = sg.random_data(4, 5, 6, seed=0, n_queries=2)
    W = np.random.default_rng(0).normal(size=(6, 6))
    ten = tensorize(data)
    want = np.einsum("ntd,de,nke->nkt", data.X, W, data.queries)
    np.testing.assert_allclose(ten.logits(W), want, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(ten.logits(W.reshape(-1)), want, rtol=1e-13, atol=1e-13)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    rows = tensor_rows(cs)
    np.testing.assert_allclose(rows.U @ W.reshape(-1), cs.apply(W), rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(rows.kind, cs.kind)


@pytest.mark.parametrize("seed", SEEDS)
def test_vector_svm_equals_att_svm(seed: int) -> None:
    data = sg.random_data(6, 8, 10, seed=seed)
    svm = sg.att_svm(data)
    vec = tensor_svm(svm.constraints)
    assert vec.feasible
    np.testing.assert_allclose(vec.W, svm.W, rtol=0, atol=1e-10)
    assert vec.primal_residual <= 1e-12 and vec.dual_residual <= 1e-12
    assert "reconstruction" in vec.label


def test_vector_svm_masked_and_several_queries() -> None:
    mask = np.array([[True] * 6, [True, True, True, False, True, True]])
    data = sg.random_data(5, 6, 7, seed=4, n_queries=2, mask=mask)
    svm = sg.att_svm(data)
    np.testing.assert_allclose(tensor_svm(svm.constraints).W, svm.W, rtol=0, atol=1e-10)


def test_vector_svm_with_equality_rows_is_the_least_norm_solution() -> None:
    rng = np.random.default_rng(3)
    U = rng.normal(size=(3, 9))
    c = np.array([1.0, 0.0, -0.5])
    rows = TensorRows(U=U, kind=np.full(3, EQUALITY, dtype=np.int8), rhs=c, d=3)
    res = tensor_svm(rows)
    np.testing.assert_allclose(res.w, np.linalg.pinv(U) @ c, rtol=1e-10, atol=1e-12)


def test_vector_svm_reports_infeasible() -> None:
    u = np.random.default_rng(0).normal(size=4)
    rows = TensorRows(U=np.stack([u, -u]), kind=np.full(2, MARGIN, dtype=np.int8),
                      rhs=np.ones(2), d=2)  # fmt: skip
    res = tensor_svm(rows)
    assert not res.feasible and res.W is None
    assert res.farkas is not None and np.all(res.farkas >= 0.0) and res.farkas @ rows.rhs > 0
    np.testing.assert_allclose(rows.U.T @ res.farkas, 0.0, atol=1e-12)


def _farkas_holds_to_roundoff(
    U: np.ndarray, kind: np.ndarray, c: np.ndarray, y: np.ndarray
) -> bool:
    """Whether ``y`` (as floats) is within round-off of a Farkas vector of the rows: y >= 0 on
    margin rows, c^T y > 0 exactly, and |U^T y| at round-off of |U|^T|y|."""
    from fractions import Fraction

    cy = sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(c, y, strict=True))
    size = np.abs(U).T @ np.abs(y)
    return bool(np.all(y[kind == MARGIN] >= 0) and cy > 0
                and np.all(np.abs(U.T @ y) <= 1e-14 * size))  # fmt: skip


def test_vector_svm_does_not_call_rows_inconsistent_below_its_tolerance_feasible() -> None:
    """Regression (session 61 audit, G1 (a)): w >= 1 and -w >= -(1 - 1e-14) are infeasible,
    but the NNLS's w = 1 misses the second row by 1e-14, inside the 1e-9 tolerance of the
    float check, and tensor_svm said "solved" (feasible=True) where solve_svm proves
    INFEASIBLE. Now feasible needs check_feasibility's exact proof, which finds the Farkas
    vector."""
    U = np.array([[1.0], [-1.0]])
    c = np.array([1.0, -(1 - 1e-14)])
    kind = np.full(2, MARGIN, dtype=np.int8)
    res = tensor_svm(TensorRows(U=U, kind=kind, rhs=c, d=1))
    assert not res.feasible and res.w is None, res.message
    assert res.message.startswith("infeasible"), res.message
    assert res.farkas is not None and _farkas_holds_to_roundoff(U, kind, c, res.farkas)
    cs = rows_without_tokens(U, np.ones((2, 1)), kind, c)
    assert sg.solve_svm(cs).status is sg.Status.INFEASIBLE


@pytest.mark.parametrize("a", [0.3, 0.7, 1.1])
def test_vector_svm_on_gen_svm_rows_consistent_only_to_round_off_is_not_feasible(a: float) -> None:
    """Regression (session 61 audit, G1 (b)): Gen-SVM's finite component for three collinear
    selected tokens with float softmax probabilities has equality rows -W00 = c1, -2 W00 = c2
    with 2 c1 - c2 = -1.1e-16 (exactly): infeasible, as gen_svm proves; tensor_svm on them
    said "solved: vector SVM by NNLS"."""
    X = np.array([[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), v=np.ones(2))
    u = np.array([0.0, a, 2 * a, -40.0])
    p = np.exp(u - u.max())
    p /= p.sum()
    g = sg.gen_svm(data, np.array([[True, True, True, False]]), probs=p[None])
    assert g.fin.status is sg.Status.INFEASIBLE
    rows = tensor_rows(g.fin.constraints)
    res = tensor_svm(rows)
    assert not res.feasible and res.w is None, res.message
    assert res.message.startswith("infeasible"), res.message
    assert res.farkas is not None and _farkas_holds_to_roundoff(
        rows.U, rows.kind, rows.rhs, res.farkas
    )


_TINY = (1 + 2.0**-52) * 2.0**-430
"""A float whose last bit is lost at unit size beside 2^600 (2^-1030 is subnormal)."""


def test_vector_svm_is_not_solved_on_rows_infeasible_beside_their_unit_rows() -> None:
    """Regression (session 61 review, T1): equality rows 2^600 w = 2^600 and t w = 2^-430 with
    t = (1 + 2^-52) 2^-430 are infeasible (w = 1 and w = 2^-430 / t), but unit_rows divides
    them by 2^600, t becomes subnormal and loses its last bit, and tensor_svm proved the unit
    rows feasible and said "solved" with w = 1. Now the verdict is proved on these rows."""
    U = np.array([[2.0**600], [_TINY]])
    c = np.array([2.0**600, 2.0**-430])
    kind = np.full(2, EQUALITY, dtype=np.int8)
    res = tensor_svm(TensorRows(U=U, kind=kind, rhs=c, d=1))
    assert not res.feasible and res.w is None, res.message
    if res.farkas is not None:  # a Farkas vector proved on these rows is fine
        assert _farkas_holds_to_roundoff(U, kind, c, res.farkas)


def test_vector_svm_gives_no_farkas_vector_on_feasible_rows_that_vanish_at_unit_size() -> None:
    """Regression (session 61 review, T7): margin rows u_1 = (2^1000, 0, 0, 0) and
    u_2 = (0, 2^-100, 0, 0), c = (1, 1), are feasible (w = (2^-1000, 2^100, 0, 0)), but at unit
    size u_2 underflows to 0, and tensor_svm returned y = (0, 1) as a Farkas vector "proved in
    exact arithmetic" (U^T y = (0, 2^-100, 0, 0), not 0)."""
    U = np.array([[2.0**1000, 0.0, 0.0, 0.0], [0.0, 2.0**-100, 0.0, 0.0]])
    c = np.ones(2)
    kind = np.full(2, MARGIN, dtype=np.int8)
    res = tensor_svm(TensorRows(U=U, kind=kind, rhs=c, d=2))
    assert res.farkas is None and not res.message.startswith("infeasible"), res.message
    if res.feasible:
        assert np.all(U @ res.w >= c), res.message


def test_vector_svm_on_rows_that_lose_bits_at_unit_size_checks_w_on_the_callers_rows() -> None:
    """Regression (session 61 review, T2): equality rows 2^600 w = 256 and t w = t 2^-592 are
    feasible (w = 2^-592, exactly); their unit rows are not these (t is subnormal there), and
    the exact proof on the unit rows failed (undecided). Now the proof is on these rows and
    w is checked on them: feasible, not proved optimal (no multipliers of these rows)."""
    U = np.array([[2.0**600], [_TINY]])
    c = np.array([256.0, _TINY * 2.0**-592])
    kind = np.full(2, EQUALITY, dtype=np.int8)
    res = tensor_svm(TensorRows(U=U, kind=kind, rhs=c, d=1))
    assert res.feasible and res.w is not None, res.message
    np.testing.assert_allclose(U @ res.w, c, rtol=1e-12)
    assert not res.message.startswith("solved"), res.message


@pytest.mark.parametrize("gap", [1e-6, 1e-8, 1e-11])
def test_vector_svm_of_a_large_norm_solution_is_feasible(gap: float) -> None:
    """Two tokens 'gap' apart along the query: ||W|| ~ 1/gap, so kappa = 1/(1 + ||w||^2) of
    the NNLS is below round-off; the verdict used to be 'infeasible' from ||W|| ~ 1e6 on."""
    X = np.array([[[1.0, 0.0], [1.0 - gap, 0.0], [0.0, 1.0]]])
    data = sg.TokenData(X, v=np.array([1.0, 0.0]), Z=np.array([[1.0, 0.0]]))
    svm = sg.att_svm(data, [0])
    assert svm.status is sg.Status.OPTIMAL
    vec = tensor_svm(svm.constraints)
    assert vec.feasible and vec.farkas is None
    np.testing.assert_allclose(vec.W, svm.W, rtol=1e-12, atol=0)


@pytest.mark.parametrize("gap", [1e-9, 1e-10, 1e-11])
def test_vector_svm_never_calls_ill_conditioned_feasible_rows_infeasible(gap: float) -> None:
    """Regression (session 48 audit): rotated tokens 'gap' apart, ||W|| ~ 2/gap. The NNLS's
    mu had |U^T mu| ~ 4e-10, inside the old 1e-9 'verified' test, so tensor_svm said
    'infeasible ... verified' of feasible rows; a Farkas vector is now proved or not used."""
    c, s = np.cos(0.3), np.sin(0.3)
    X = np.array([[[0.0, 0.0], [-1.0, 0.0], [1.0, -gap]]]) @ np.array([[c, s], [-s, c]])
    data = sg.TokenData(X, Z=np.array([[0.6, 0.8]]), v=np.array([1.0, 0.0]))
    cs = sg.att_svm_constraints(data, np.array([0]))
    assert sg.check_feasibility(cs).feasible
    res = tensor_svm(cs)
    assert res.farkas is None and not res.message.startswith("infeasible"), res.message
    if not res.feasible:
        assert res.message.startswith("undecided") and "proved by" in res.message


def test_no_vector_form_for_nuclear_and_kq() -> None:
    data = sg.random_data(3, 4, 5, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    with pytest.raises(sg.ProblemError, match="no vector form for 'nuc'"):
        tensor_svm(cs, norm="nuc")
    with pytest.raises(sg.ProblemError, match="no vector form for 'KQ'"):
        tensorize(data, param="KQ")
    with pytest.raises(sg.ProblemError, match="l_q"):
        tensor_svm(cs, norm=("lp", 1.5))
    with pytest.raises(sg.ProblemError, match=r"no vector form for 'spectral'.*norm='spectral'"):
        tensor_svm(cs, norm="spectral")  # it pointed to the entrywise l_q SVM


@pytest.mark.parametrize("loss", ["logistic", "exponential", "correlation"])
def test_risk_and_gradient_equal_loss_and_grad(loss: str) -> None:
    data = sg.random_data(6, 8, 10, seed=1, n_queries=2)
    ten = tensorize(data)
    W = np.random.default_rng(2).normal(size=(10, 10))
    value, grad = loss_and_grad(data, W, loss=loss)
    np.testing.assert_allclose(ten.risk(W, loss), value, rtol=1e-13)
    np.testing.assert_allclose(ten.gradient(W, loss), grad.reshape(-1), rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("normalized", [True, False])
def test_vector_gd_equals_train(seed: int, normalized: bool) -> None:
    data = sg.random_data(6, 8, 10, seed=seed)
    ten = tensorize(data)
    eta, steps = 0.1, 300
    w = np.zeros(100)
    for _ in range(steps):
        g = ten.gradient(w)
        w = w - eta * (g / np.linalg.norm(g) if normalized else g)
    for backend in ("numpy", "numba"):
        run = sg.train(data, n_steps=steps, step_size=eta, normalized=normalized, backend=backend)
        np.testing.assert_allclose(
            w.reshape(10, 10), run.W, rtol=0, atol=1e-12 * max(1.0, np.abs(w).max())
        )


@pytest.mark.parametrize("loss", ["logistic", "exponential", "correlation"])
def test_hessian_matches_finite_differences_of_the_public_gradient(loss: str) -> None:
    data = sg.random_data(4, 5, 4, seed=2)
    ten = tensorize(data)
    W = np.random.default_rng(5).normal(size=(4, 4))
    h = 1e-5
    cols = []
    for j in range(16):
        e = np.zeros(16)
        e[j] = h
        gp = loss_and_grad(data, (W.reshape(-1) + e).reshape(4, 4), loss=loss)[1]
        gm = loss_and_grad(data, (W.reshape(-1) - e).reshape(4, 4), loss=loss)[1]
        cols.append((gp - gm).reshape(-1) / (2 * h))
    fd = np.stack(cols, axis=1)
    H = ten.hessian(W, loss)
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())
    np.testing.assert_allclose(H, H.T, rtol=0, atol=1e-14)


@pytest.mark.parametrize("attention", ["linear", "sigmoid", "normalized_linear"])
def test_hessian_of_other_maps_matches_finite_differences(attention: str) -> None:
    data = sg.random_data(4, 5, 4, seed=3)
    ten = tensorize(data)
    w = np.random.default_rng(6).normal(size=16)
    h = 1e-6
    fd = np.stack([(ten.gradient(w + h * e, "logistic", attention)
                    - ten.gradient(w - h * e, "logistic", attention)) / (2 * h)
                   for e in np.eye(16)], axis=1)  # fmt: skip
    H = ten.hessian(w, "logistic", attention)
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())


def test_hessian_spectrum_along_a_run() -> None:
    data = sg.random_data(4, 5, 4, seed=0)
    run = sg.train(data, n_steps=50, record_every=10)
    spec = tensorize(data).hessian_spectrum(run.history.W)
    assert spec.shape == (run.history.W.shape[0], 16)
    assert np.all(np.diff(spec, axis=1) >= 0)


def test_risk_needs_scores() -> None:
    X = np.random.default_rng(0).normal(size=(2, 3, 4))
    ten = tensorize(sg.TokenData(X, Z=np.ones((2, 4))))
    with pytest.raises(sg.ProblemError, match="token scores"):
        ten.risk(np.zeros(16))


@pytest.mark.parametrize("loss", ["logistic", "exponential", "correlation"])
def test_direction_is_the_normalized_negative_gradient(loss: str) -> None:
    data = sg.random_data(4, 5, 4, seed=1)
    ten = tensorize(data)
    w = np.random.default_rng(2).normal(size=16)
    g = ten.gradient(w, loss)
    np.testing.assert_allclose(ten.direction(w, loss), -g / np.linalg.norm(g), rtol=1e-12)
    # far out the gradient of linear attention underflows; the direction does not
    far = 1e4 * tensorize(data).direction(np.zeros(16), "logistic", "linear")
    assert np.all(ten.gradient(far, "logistic", "linear") == 0.0)
    np.testing.assert_allclose(np.linalg.norm(ten.direction(far, "logistic", "linear")), 1.0)


def test_direction_stays_exact_where_softmax_saturates() -> None:
    """Regression: q = J^T gamma underflowed to 0 once every unselected probability was below
    e^-745, and direction() reported a stationary point. With two keys per query the direction
    has a closed form in the log domain: q_1 = -q_2 = s_1 s_2 (gamma_1 - gamma_2),
    log(s_1 s_2) = -|u_1 - u_2| - 2 log(1 + e^-|u_1 - u_2|)."""
    data = sg.random_data(5, 2, 4, seed=3)
    ten = tensorize(data)
    W = sg.att_svm(data, sg.optimal_tokens(data)).W
    for scale in (1.0, 50.0, 2000.0):
        w = scale * W.reshape(-1)
        u = ten.logits(w)  # (n, 1, 2)
        gap = np.abs(u[..., 0] - u[..., 1])
        log_s1s2 = -gap - 2.0 * np.log1p(np.exp(-gap))
        f = np.sum(ten.gamma * np.exp(u - np.logaddexp(u[..., :1], u[..., 1:])), axis=-1)
        log_c = -np.logaddexp(0.0, f)  # logistic: log|l'(f)| = -log(1 + e^f)
        log_weight = log_c + log_s1s2
        weight = np.exp(log_weight - log_weight.max())[..., None]
        diff = ten.gamma[..., 0] - ten.gamma[..., 1]
        rows = ten.A[:, :, 0, :] - ten.A[:, :, 1, :]  # (n, 1, d*d)
        g = np.sum(weight * diff[..., None] * rows, axis=(0, 1))
        expected = g / np.linalg.norm(g)
        np.testing.assert_allclose(ten.direction(w), expected, rtol=0, atol=1e-12 * scale)
    assert np.all(ten.gradient(w) == 0.0)  # at scale 2000 the gradient itself underflows


def test_vector_svm_without_rows_is_w_zero() -> None:
    """Regression: with no rows (T = 1) the NNLS of a (d^2 + 1) x 0 matrix aborted Python
    (double free); the least-norm w with no constraints is 0, as att_svm's W."""
    X = np.random.default_rng(0).normal(size=(2, 1, 3))
    data = sg.TokenData(X, v=np.ones(3), Z=np.ones((2, 3)))
    cs = sg.att_svm_constraints(data, np.zeros(2, dtype=int))
    assert cs.N == 0
    res = tensor_svm(cs)
    assert res.feasible and res.farkas is None
    np.testing.assert_array_equal(res.W, np.zeros((3, 3)))
    np.testing.assert_array_equal(res.W, sg.att_svm(data).W)
    assert res.dual.shape == (0,) and res.margins.shape == (0,)
    assert res.primal_residual == 0.0 and res.dual_residual == 0.0


def test_vector_svm_proves_infeasible_on_a_zero_row() -> None:
    """Regression: a Farkas vector on zero rows (duplicate tokens) has sum_j y_j ||u_j|| = 0
    and was rejected ('undecided'); there U^T y = 0 exactly and c^T y > 0."""
    X = np.array([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 1.0], [2.0, 0.0]]])
    data = sg.TokenData(X, v=np.array([1.0, 0.5]), Z=np.array([[1.0, 0.0], [0.0, 1.0]]))
    cs = sg.att_svm_constraints(data, [0, 2])
    assert not sg.check_feasibility(cs).feasible
    zero_row = TensorRows(U=np.zeros((1, 4)), kind=np.full(1, MARGIN, dtype=np.int8),
                          rhs=np.ones(1), d=2)  # fmt: skip
    for rows in (tensor_rows(cs), zero_row):
        res = tensor_svm(rows)
        assert not res.feasible and res.message.startswith("infeasible")
        assert res.farkas is not None and np.all(res.farkas >= 0.0) and res.farkas @ rows.rhs > 0
        np.testing.assert_array_equal(rows.U.T @ res.farkas, 0.0)


@pytest.mark.parametrize("method", ["logits", "risk", "gradient", "direction", "hessian"])
@pytest.mark.parametrize(
    ("w", "match"),
    [
        (np.full(16, np.nan), "'w' of TensorData must be finite"),
        (np.full((4, 4), np.inf), "'w' of TensorData must be finite"),
        (np.ones(16) * 1j, "'w' of TensorData must be real"),
        ("abc", r"'w' of TensorData must be numeric.*shape \(16,\) or W of shape \(4, 4\)"),
        (np.ones(15), r"'w' of TensorData must be vec\(W\) of shape \(16,\)"),
        (np.ones((2, 2, 4)), r"'w' of TensorData must be a 1-D or 2-D array"),
    ],
)
def test_tensor_data_rejects_bad_w(method: str, w: object, match: str) -> None:
    ten = tensorize(sg.random_data(3, 4, 4, seed=0))
    with pytest.raises(sg.ProblemError, match=match):
        getattr(ten, method)(w)
    with pytest.raises(sg.ProblemError, match=match):
        ten.hessian_spectrum([np.zeros(16), w])


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"U": np.zeros((2, 5))}, r"'U' of TensorRows must have shape \(\?, 4\); got \(2, 5\)"),
        ({"U": np.full((2, 4), np.nan)}, "'U' of TensorRows must be finite"),
        ({"U": np.zeros(4)}, "'U' of TensorRows must be a 2-D array"),
        ({"rhs": np.ones(3)}, r"'rhs' of TensorRows must have shape \(2,\); got \(3,\)"),
        ({"rhs": np.array([1.0, np.inf])}, "'rhs' of TensorRows must be finite"),
        ({"kind": np.zeros(3, dtype=np.int8)}, r"'kind' of TensorRows .* shape \(2,\)"),
        ({"kind": np.array([0, 2])}, "'kind' of TensorRows must hold svmgeo.MARGIN"),
        ({"d": 2.0}, "'d' parameter of TensorRows must be an int"),
    ],
)
def test_tensor_rows_are_validated(fields: dict[str, object], match: str) -> None:
    good = {"U": np.ones((2, 4)), "kind": np.zeros(2, dtype=np.int8), "rhs": np.ones(2), "d": 2}
    assert tensor_svm(TensorRows(**good)).feasible  # type: ignore[arg-type]
    with pytest.raises(sg.ProblemError, match=match):
        TensorRows(**{**good, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize("attention", ["softmax", "linear", "sigmoid", "normalized_linear"])
def test_hessian_equals_the_four_operand_einsum(attention: str) -> None:
    """The Hessian's second term A^T (M A) in one matrix product (O(n K T d^4)) is the
    reference einsum of O(n K T^2 d^4) to round-off."""
    data = sg.random_data(3, 5, 4, seed=1, n_queries=2)
    ten = tensorize(data)
    w = np.random.default_rng(7).normal(size=16)
    spec, amap, u, f, q = ten._parts(w, "logistic", attention)
    M = amap.hessian(u, ten.gamma, ten.visible)
    Aq = np.einsum("nks,nksp->nkp", q, ten.A)
    ref = np.einsum("nk,nkp,nkr->pr", spec.d2(f), Aq, Aq)
    ref += np.einsum("nk,nktp,nkts,nksr->pr", spec.d1(f), ten.A, M, ten.A)
    ref /= ten.n
    H = ten.hessian(w, "logistic", attention)
    np.testing.assert_allclose(H, ref, rtol=1e-12, atol=1e-14 * np.abs(ref).max())


@pytest.mark.parametrize(
    ("d1", "match"),
    [
        (lambda u: u * np.nan, "d1 callable .* is not finite"),
        (lambda u: 1 / 0, "d1 callable .* failed .*ZeroDivisionError"),
    ],
)
def test_tensor_data_checks_a_user_loss(d1, match) -> None:
    """Regression: TensorData ran a user loss bare (a NaN l' gave a NaN gradient silently, a
    raising one its own traceback); it is now checked as train and check_loss check it."""
    ten = tensorize(sg.random_data(3, 4, 4, seed=0))
    with pytest.raises(
        sg.ProblemError, match=f"'loss' parameter of TensorData: the loss's {match}"
    ):
        ten.gradient(np.zeros(16), (lambda u: u, d1))
    user = (lambda u: np.logaddexp(0.0, -u), lambda u: -1.0 / (1.0 + np.exp(u)))
    np.testing.assert_allclose(ten.gradient(np.zeros(16), user), ten.gradient(np.zeros(16)))


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"d": -1}, "'d' parameter of TensorData"),
        ({"A": np.full((1, 1, 2, 4), np.nan)}, "'A' of TensorData must be finite"),
        ({"d": 3}, r"'A' of TensorData must have shape \(\?, \?, \?, 9\)"),
        ({"visible": np.ones((1, 1, 3), bool)}, "'visible' of TensorData must have shape"),
        ({"gamma": np.ones((1, 2))}, "'gamma' of TensorData must be a 3-D array"),
    ],
)
def test_tensor_data_checks_its_fields(fields: dict, match: str) -> None:
    """Session 48 audit: TensorData accepted d = -1, NaN rows and mismatched shapes (a raw
    numpy error later, or a NaN risk)."""
    good = {"A": np.ones((1, 1, 2, 4)), "gamma": np.ones((1, 1, 2)),
            "visible": np.ones((1, 1, 2), bool), "d": 2}  # fmt: skip
    TensorData(**good)
    with pytest.raises(sg.ProblemError, match=match):
        TensorData(**{**good, **fields})


def test_an_undecided_vector_svm_says_whose_rows_its_verdict_is_on() -> None:
    """Collinear tokens (found by a differential fuzz): the NNLS gives no w, and
    check_feasibility proves the *vector* rows u_j = vec(a_j b_j^T) (rounded products)
    feasible while, on the token rows, it decides nothing. The message said "the rows are
    feasible (proved by svmgeo.check_feasibility)", contradicting check_feasibility(cs)."""
    base = np.array([[3.14278032731522, 1.754347944888472, -0.5544208322974209, 1.5761274541555939],
                     [1.924845178910844, 1.0744779565091205, -0.33956374769823067, 0.9653240174352561],
                     [0.15892172500213372, 0.08871253241355173, -0.02803553092146725, 0.07970041420349812],
                     [3.2167334101808245, 1.7956296844411286, -0.5674669651743994, 1.613215469251926],
                     [-2.765947960244904, -1.5439943662462063, 0.48794348013510513, -1.3871432498853118],
                     [0.9435926908296199, 0.5267278414533272, -0.1664600737291841, 0.47321867603377904],
                     [2.700280312529017, 1.5073376830492482, -0.47635898866262677, 1.354210441468745],
                     [0.02355977405173532, 0.01315142545295467, -0.00415620189071909, 0.01181540000549907],
                     [-2.3235052876800135, -1.2970161137100957, 0.40989175229548436, -1.1652549947442918],
                     [2.07351741914554, 1.1574690700943695, -0.36579115737559015, 1.0398842396270813],
                     [2.6945738135012833, 1.5041522281974404, -0.47535229980405064, 1.351348590226216],
                     [-0.3258489565285188, -0.18189386075170103, 0.05748332077543503, -0.16341564882178264]])  # fmt: skip
    Z = np.array([[-0.5707990165728887, 1.0090867950370355, 1.8745882840859731, -0.470638904827322],
                  [-0.866794943397124, -0.38815472167161275, -0.14811575728247142, 1.3674072256473473],
                  [-0.11223856338222483, -1.1117706419179765, -0.28647445498072244, 0.13843700255553815]])  # fmt: skip
    data = sg.TokenData(base.reshape(3, 4, 4), Y=np.array([-1.0, 1.0, 1.0]), v=np.ones(4), Z=Z)
    cs = sg.att_svm_constraints(data, np.array([0, 2, 2]))
    vec = tensor_svm(tensor_rows(cs))
    assert not vec.feasible and vec.farkas is None  # undecided
    with pytest.warns(sg.InaccurateSolutionWarning):  # nothing proved on the token rows
        assert sg.check_feasibility(cs).proof is None
    assert "the vector rows u_j are feasible" in vec.message
    assert "the rows are feasible" not in vec.message
    assert "solves it" not in vec.message  # solve_svm(cs) decides nothing here either


@pytest.mark.parametrize(
    ("shape", "visible", "match"),
    [
        ((0, 1, 2), None, r"n, K, T >= 1 .* got shape \(0, 1, 2, 4\)"),
        ((1, 0, 2), None, r"n, K, T >= 1 .* got shape \(1, 0, 2, 4\)"),
        ((1, 1, 0), None, r"n, K, T >= 1 .* got shape \(1, 1, 0, 4\)"),
        ((2, 1, 2), np.array([[[True, True]], [[False, False]]]), "every key from query 0 of seq"),
    ],
)
def test_tensor_data_without_tokens_is_a_clear_error(
    shape: tuple[int, int, int], visible: np.ndarray | None, match: str
) -> None:
    """n = 0 gave risk NaN (0/0) and K = 0 risk 0 with a zero gradient, silently; a query that
    sees no key is a softmax over nothing."""
    vis = np.ones(shape, dtype=bool) if visible is None else visible
    with pytest.raises(sg.ProblemError, match=match):
        TensorData(A=np.ones((*shape, 4)), gamma=np.ones(shape), visible=vis, d=2)
