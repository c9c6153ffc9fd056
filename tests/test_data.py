# SPDX-License-Identifier: BSD-3-Clause
"""TokenData construction, validation, the random generator and .npz I/O."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg


def _X(n=3, T=4, d=5, seed=0):
    return np.random.default_rng(seed).normal(size=(n, T, d))


def test_cross_attention_shapes():
    X = _X()
    Z = np.ones((3, 5))
    data = sg.TokenData(X, Y=[1, -1, 1], v=np.ones(5), Z=Z)
    assert (data.n, data.T, data.d, data.K) == (3, 4, 5, 1)
    assert data.single_query and not data.is_self_attention
    assert data.queries.shape == (3, 1, 5)
    np.testing.assert_array_equal(data.Z, Z)
    np.testing.assert_array_equal(data.Y, [1, -1, 1])
    assert data.selection_shape == (3,)
    assert data.visible.all()


def test_self_attention_uses_query_token():
    X = _X()
    data = sg.TokenData(X, v=np.ones(5), query=2)
    np.testing.assert_array_equal(data.queries[:, 0], X[:, 2])
    assert data.query == 2
    neg = sg.TokenData(X, v=np.ones(5), query=-1)
    assert neg.query == 3


def test_sequence_attention_and_causal_mask():
    X = _X()
    data = sg.TokenData(X, Y=np.ones((3, 4)), v=np.ones(5), query="all", mask="causal")
    assert data.K == 4 and not data.single_query
    np.testing.assert_array_equal(data.queries, X)
    np.testing.assert_array_equal(data.visible[1], np.tril(np.ones((4, 4), dtype=bool)))
    assert data.selection_shape == (3, 4)


def test_labels_per_sequence_broadcast_to_queries():
    data = sg.TokenData(_X(), Y=[1, -1, 1], v=np.ones(5), Z=np.ones((3, 2, 5)))
    np.testing.assert_array_equal(data.labels, [[1, 1], [-1, -1], [1, 1]])


def test_general_mask_broadcast():
    mask = np.array([[True, True, False, True], [False, True, True, True]])
    data = sg.TokenData(_X(), v=np.ones(5), Z=np.ones((3, 2, 5)), mask=mask)
    assert data.mask.shape == (3, 2, 4)
    np.testing.assert_array_equal(data.mask[2], mask)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"X": np.ones((3, 4)), "query": 0},
            r"X must be a 3-D array; got a 2-D array of shape \(3, 4\)",
        ),
        ({"X": np.full((2, 3, 4), np.nan), "query": 0}, "X must be finite"),
        ({"X": _X(), "Z": np.ones((3, 5)), "query": 0}, "not both"),
        ({"X": _X(), "Z": np.ones((3, 6))}, r"Z must have shape \(3, 5\)"),
        ({"X": _X(), "Z": np.ones((2, 1, 5))}, r"Z must have shape \(n, K, d\)"),
        ({"X": _X(), "query": 4}, "'query' parameter of TokenData must be an int in"),
        ({"X": _X(), "query": "first"}, "'query' parameter of TokenData must be an int"),
        ({"X": _X(), "query": 0, "Y": [1, 0, 1]}, r"labels in \{-1, \+1\}.*2 \* y - 1"),
        ({"X": _X(), "query": 0, "Y": [1, 1]}, r"Y must have shape \(3,\)"),
        ({"X": _X(), "query": 0, "Y": [1, np.inf, 1]}, "Y must be finite"),
        ({"X": _X(), "query": 0, "v": np.ones(4)}, r"v must have shape \(5,\)"),
        ({"X": _X(), "query": 0, "mask": "causal"}, "needs one query per token"),
        ({"X": _X(), "query": 0, "mask": "future"}, "mask must be None, 'causal'"),
        ({"X": _X(), "query": 0, "mask": np.ones((2, 4))}, r"mask must have shape \(1, 4\)"),
        ({"X": _X(), "query": 0, "mask": np.zeros((1, 4))}, "hides every key"),
        ({"X": _X(), "query": 0, "scores": np.ones((3, 5))}, r"scores must have shape \(3, 4\)"),
    ],
)
def test_bad_input_messages(kwargs, match):
    X = kwargs.pop("X")
    with pytest.raises(sg.ProblemError, match=match):
        sg.TokenData(X, **kwargs)


def test_problem_error_is_value_error():
    with pytest.raises(ValueError):
        sg.TokenData(np.ones((2, 2)), query=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"query": 0},
        {"query": "all", "mask": "causal"},
        {"n_queries": 3},
    ],
)
def test_random_data_unit_sphere_and_seeded(kwargs):
    a = sg.random_data(4, 5, 6, seed=3, **kwargs)
    b = sg.random_data(4, 5, 6, seed=3, **kwargs)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.queries, b.queries)
    np.testing.assert_allclose(np.linalg.norm(a.X, axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(a.v), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(a.queries, axis=-1), 1.0, rtol=1e-12)
    assert set(np.unique(a.labels)) <= {-1.0, 1.0}


def test_random_data_score_gap_is_met():
    data = sg.random_data(10, 6, 4, seed=1, score_gap=0.2, query="all", mask="causal")
    S = np.where(data.visible, sg.token_scores(data), -np.inf)
    top2 = -np.sort(-S, axis=2)[:, :, :2]
    gaps = top2[:, :, 0] - top2[:, :, 1]
    seen2 = data.visible.sum(axis=2) >= 2
    assert np.all(gaps[seen2] >= 0.2)


def test_random_data_impossible_gap_raises():
    with pytest.raises(sg.ProblemError, match="score_gap"):
        sg.random_data(2, 5, 3, seed=0, score_gap=5.0, max_tries=5)


@pytest.mark.parametrize("bad", [{"n": 0}, {"T": -1}, {"d": 1.5}, {"score_gap": -0.1}])
def test_random_data_bad_sizes(bad):
    args = {"n": 2, "T": 3, "d": 4} | bad
    with pytest.raises(sg.ProblemError, match=repr(next(iter(bad)))):
        sg.random_data(args.pop("n"), args.pop("T"), args.pop("d"), **args)


@pytest.mark.parametrize(
    "data",
    [
        sg.random_data(3, 4, 5, seed=0),
        sg.random_data(3, 4, 5, seed=0, query=1),
        sg.random_data(3, 4, 5, seed=0, query="all", mask="causal"),
        sg.TokenData(_X(), scores=np.arange(12.0).reshape(3, 4), query=0),
    ],
    ids=["cross", "self", "seq-causal", "scores"],
)
def test_npz_round_trip(tmp_path, data):
    path = tmp_path / "data.npz"
    data.save(path)
    back = sg.TokenData.load(path)
    np.testing.assert_array_equal(back.X, data.X)
    np.testing.assert_array_equal(back.labels, data.labels)
    np.testing.assert_array_equal(back.queries, data.queries)
    np.testing.assert_array_equal(back.visible, data.visible)
    assert back.query == data.query and back.single_query == data.single_query
    if data.scores is not None:
        np.testing.assert_array_equal(back.scores, data.scores)
    with np.load(path, allow_pickle=False) as f:  # no object arrays inside
        assert all(f[k].dtype != object for k in f.files)


def test_load_rejects_foreign_npz(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, a=np.ones(3))
    with pytest.raises(sg.ProblemError, match="not an svmgeo dataset"):
        sg.load_data(path)


def test_scores_and_v_are_one_source_of_truth():
    # issue 11: with v = (0, -1) the linear head prefers token 1 (or 2), the given scores token 0;
    # optimal_tokens would follow the scores and GD the head: a clear error instead
    A = np.array([[[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]])
    Z = np.array([[1.0, 0.0]])
    with pytest.raises(sg.ProblemError, match="scores and v disagree"):
        sg.TokenData(A, Z=Z, v=np.array([0.0, -1.0]), scores=np.array([[1.0, 0.9, 0.9]]))
    same = sg.TokenData(A, Z=Z, v=np.array([0.0, -1.0]), scores=np.array([[0.0, -1.0, -1.0]]))
    np.testing.assert_array_equal(sg.optimal_tokens(same), [0])
    alone = sg.TokenData(A, Z=Z, scores=np.array([[1.0, 0.9, 0.9]]))  # selections only
    np.testing.assert_array_equal(sg.optimal_tokens(alone), [0])


def test_values_are_head_features_apart_from_attention_tokens(tmp_path):
    """Scores come from the head features u (values), not from the attention tokens x."""
    rng = np.random.default_rng(3)
    X, U = rng.normal(size=(4, 3, 2)), rng.normal(size=(4, 3, 5))
    Y, v = np.array([1.0, -1.0, 1.0, -1.0]), rng.normal(size=5)
    data = sg.TokenData(X, values=U, Y=Y, v=v, Z=rng.normal(size=(4, 2)))
    assert data.has_values and data.d_values == 5 and data.d == 2
    np.testing.assert_allclose(sg.token_scores(data), Y[:, None] * np.einsum("ntu,u->nt", U, v))
    data.save(tmp_path / "u.npz")
    back = sg.TokenData.load(tmp_path / "u.npz")
    np.testing.assert_array_equal(back.values, U)
    plain = sg.TokenData(X, v=rng.normal(size=2), query=0)
    assert not plain.has_values and plain.values is plain.X


@pytest.mark.parametrize(
    ("values", "v", "match"),
    [
        (np.zeros((4, 2, 5)), np.ones(5), r"values must have shape \(n, T, d_u\)"),
        (np.zeros((4, 3)), np.ones(5), "values"),
        (np.zeros((4, 3, 5)), np.ones(2), r"v must have shape \(5,\)"),
    ],
)
def test_values_bad_input(values, v, match):
    with pytest.raises(sg.ProblemError, match=match):
        sg.TokenData(np.zeros((4, 3, 2)), values=values, v=v, query=0)


def _prompt_data(**kw):
    X = _X(4, 3, 10, seed=5)
    U = np.random.default_rng(6).normal(size=(4, 3, 2))
    return sg.TokenData(X, values=U, Y=[1, -1, 1, -1], v=[0.0, 1.0], **kw)


def test_prompt_data_need_no_queries_and_match_data_with_dummy_ones():
    # issue 20: prompt attention (param="p") reads no query; a dummy Z changes nothing
    bare, dummy = _prompt_data(), _prompt_data(Z=np.ones((4, 10)))
    assert not bare.has_queries and dummy.has_queries
    assert (bare.n, bare.T, bare.d, bare.K, bare.single_query) == (4, 3, 10, 1, True)
    assert "prompt attention" in repr(bare)
    np.testing.assert_array_equal(sg.optimal_tokens(bare), sg.optimal_tokens(dummy))
    a, b = sg.att_svm(bare, param="p"), sg.att_svm(dummy, param="p")
    assert a.success and b.success
    np.testing.assert_allclose(a.p, b.p, rtol=0, atol=1e-12)
    ra = sg.train(bare, param="p", n_steps=30, backend="numpy")
    rb = sg.train(dummy, param="p", n_steps=30, backend="numpy")
    np.testing.assert_allclose(ra.p, rb.p, rtol=1e-12, atol=0)
    ja, jb = sg.joint_svm(bare), sg.joint_svm(dummy)
    np.testing.assert_array_equal(ja.support, jb.support)
    np.testing.assert_allclose(ja.p, jb.p, rtol=0, atol=1e-12)
    va = sg.verify(bare, param="p", n_steps=30, backend="numpy")
    vb = sg.verify(dummy, param="p", n_steps=30, backend="numpy")
    assert va.summary() == vb.summary()


def test_prompt_data_round_trip(tmp_path):
    bare = _prompt_data()
    bare.save(tmp_path / "p.npz")
    back = sg.load_data(tmp_path / "p.npz")
    assert not back.has_queries
    np.testing.assert_array_equal(back.values, bare.values)


@pytest.mark.parametrize(
    "call",
    [
        lambda d: d.queries,
        lambda d: d.Z,
        lambda d: sg.att_svm(d),
        lambda d: sg.train(d, n_steps=3),
        lambda d: sg.train(d, param="KQ", n_steps=3),
        lambda d: sg.study(d, progress=False),
    ],
    ids=["queries", "Z", "att_svm-W", "train-W", "train-KQ", "study"],
)
def test_what_needs_queries_says_so_on_prompt_data(call):
    with pytest.raises(sg.ProblemError, match=r"has no queries.*build the data with\s+Z="):
        call(_prompt_data())


def test_head_features_share_the_token_scale_bound():
    # issue 21: values of 1e160 made train stop at step 0 with STATIONARY and a NaN loss
    X = _X()
    U = np.random.default_rng(1).normal(size=(3, 4, 2))
    with pytest.raises(sg.ProblemError, match=r"too large for float64.*Rescale values"):
        sg.TokenData(X, Z=np.ones((3, 5)), values=U * 1e160, v=[1.0, -0.5])
    big = sg.TokenData(X, Z=np.ones((3, 5)), values=U * 1e150, v=[1.0, -0.5])  # within bound
    run = sg.train(big, n_steps=20, backend="numpy")
    assert run.status is not sg.StopStatus.STATIONARY
    assert run.history.loss is not None and np.all(np.isfinite(run.history.loss))


def test_check_scale_names_the_arguments():
    from svmgeo._validation import MAX_SCALE, check_scale

    a = np.full((2, 3), 1e100)
    check_scale(a, "values", "f")  # one array: its row norm, about 1.7e100, is within bound
    with pytest.raises(sg.ProblemError, match=r"\(f\): max \|\|values\|\|\^2 .*Rescale values"):
        check_scale(a, "values", "f", times=(a, "values"))
    with pytest.raises(sg.ProblemError, match=r"max \|\|E\|\| \* max \|\|H\|\|.*Rescale E or H"):
        check_scale(a, "E", times=(a, "H"))
    edge = np.array([[MAX_SCALE]])
    check_scale(edge, "x")  # the bound itself passes
    with pytest.raises(sg.ProblemError, match=r"too large .*outside \[1e-151, 1e\+151\]"):
        check_scale(edge * 1.01, "x")
    low = np.array([[1.0 / MAX_SCALE]])
    check_scale(low, "x")  # the lower bound passes too
    with pytest.raises(sg.ProblemError, match=r"too small .*which underflow.*Rescale x"):
        check_scale(low * 0.99, "x")
    check_scale(np.zeros((2, 2)), "x", times=(edge * 10, "z"))  # zero data: nothing to square


def test_random_data_takes_a_mask_per_sequence() -> None:
    """An (n, K, T) mask: each sequence its own visible keys (it was checked against n = 1)."""
    mask = np.ones((3, 1, 4), dtype=bool)
    mask[0, 0, 2:] = False
    data = sg.random_data(3, 4, 2, seed=0, mask=mask, score_gap=0.01)
    np.testing.assert_array_equal(data.visible, mask)
    with pytest.raises(sg.ProblemError, match="mask"):
        sg.random_data(3, 4, 2, seed=0, mask=np.ones((2, 1, 4), dtype=bool))


@pytest.mark.parametrize("shape", [(3, 4), (2, 1, 4), (3, 2, 4)])
def test_random_data_mask_errors_name_the_data_shapes(shape: tuple[int, ...]) -> None:
    """A wrong mask is checked against the data's own (n, K, T) = (3, 1, 4), not n = 1."""
    with pytest.raises(sg.ProblemError, match=r"\(1, 4\) or \(3, 1, 4\); got"):
        sg.random_data(3, 4, 2, seed=0, mask=np.ones(shape, dtype=bool))


def test_random_data_shared_mask_equals_its_per_sequence_copy() -> None:
    """A (K, T) mask and its (n, K, T) broadcast give the same data (same draws, same mask)."""
    mask = np.array([[True, False, True, True]])
    shared = sg.random_data(3, 4, 2, seed=0, mask=mask, score_gap=0.01)
    copied = sg.random_data(3, 4, 2, seed=0, mask=np.repeat(mask[None], 3, axis=0), score_gap=0.01)
    np.testing.assert_array_equal(shared.X, copied.X)
    np.testing.assert_array_equal(shared.visible, copied.visible)


def test_save_data_refuses_a_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """numpy would write <dir>.npz beside the directory, which load_data(<dir>) refuses."""
    data = sg.random_data(2, 3, 2, seed=0)
    with pytest.raises(sg.ProblemError, match="is a directory"):
        sg.save_data(data, tmp_path)
    assert not (tmp_path.parent / f"{tmp_path.name}.npz").exists()


def test_save_and_load_data_refuse_an_empty_path(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Regression (session 50): save_data(data, '') wrote ./.npz and load_data('') read it."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sg.ProblemError, match="'path' parameter of save_data"):
        sg.save_data(sg.random_data(2, 3, 2, seed=0), "")
    assert not (tmp_path / ".npz").exists()
    np.savez(tmp_path / ".npz", X=np.ones((1, 2, 2)))
    with pytest.raises(sg.ProblemError, match="'path' parameter of load_data"):
        sg.load_data("")


@pytest.mark.parametrize("seed", ["a", -1, 1.5, True])
def test_random_generators_refuse_a_bad_seed(seed: object) -> None:
    """A ProblemError naming seed (numpy raised TypeError / ValueError of its own)."""
    with pytest.raises(sg.ProblemError, match="'seed' parameter of random_data"):
        sg.random_data(2, 3, 2, seed=seed)
    with pytest.raises(sg.ProblemError, match="'seed' parameter of random_next_token_data"):
        sg.random_next_token_data(3, 2, 4, 4, seed=seed)


@pytest.mark.parametrize("alpha", [[2**63, 0], [1e20, 0], np.array([2**63, 0], dtype=np.uint64)])
def test_selection_reports_an_index_beyond_int64_as_given(alpha: object) -> None:
    """The int64 cast wrapped 2**63 to -2**63 and the error showed that number."""
    data = sg.random_data(2, 3, 2, seed=0)
    with pytest.raises(sg.ProblemError, match="64-bit integers") as err:
        sg.check_selection(data, alpha)
    assert "-9223372036854775808" not in str(err.value)


def test_load_data_reads_the_file_save_data_wrote(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """save_data(data, "x") writes x.npz; load_data("x") reads it, not an unrelated file x."""
    data = sg.random_data(2, 3, 2, seed=0)
    stem = tmp_path / "x"
    sg.save_data(data, stem)
    stem.write_text("an unrelated file")
    np.testing.assert_array_equal(sg.load_data(stem).X, data.X)


@pytest.mark.parametrize("query", [5, "x", True])
def test_random_data_names_itself_for_a_bad_query(query: object) -> None:
    """The check ran inside a TokenData built internally, and named TokenData."""
    with pytest.raises(sg.ProblemError, match="'query' parameter of random_data"):
        sg.random_data(2, 3, 4, query=query, seed=0)  # type: ignore[arg-type]
