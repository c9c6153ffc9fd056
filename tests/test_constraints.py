# SPDX-License-Identifier: BSD-3-Clause
"""Token-pair constraint rows and their algebra."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg


def _naive_rows(data, alpha):
    """Rows built with explicit loops, as an independent reference."""
    alpha = np.asarray(alpha).reshape(data.n, data.K)
    rows = []
    for i in range(data.n):
        for k in range(data.K):
            for t in range(data.T):
                if t != alpha[i, k] and data.visible[i, k, t]:
                    rows.append(
                        (data.X[i, alpha[i, k]] - data.X[i, t], data.queries[i, k], i, k, t)
                    )
    return rows


@pytest.mark.parametrize(
    "data",
    [
        sg.random_data(3, 4, 5, seed=0),
        sg.random_data(3, 4, 5, seed=1, query=0),
        sg.random_data(3, 4, 5, seed=2, n_queries=2),
        sg.random_data(3, 4, 5, seed=3, query="all", mask="causal"),
    ],
    ids=["cross", "self", "two-queries", "causal"],
)
def test_att_svm_rows_match_loops(data):
    alpha = sg.optimal_tokens(data)
    cs = sg.att_svm_constraints(data, alpha)
    rows = _naive_rows(data, alpha)
    assert cs.N == len(rows) == cs.n_margin
    got = sorted(zip(cs.seq, cs.query, cs.comp, range(cs.N), strict=True))
    for (i, k, t, j), (a, b, i2, k2, t2) in zip(
        got, sorted(rows, key=lambda r: r[2:]), strict=True
    ):
        assert (i, k, t) == (i2, k2, t2)
        np.testing.assert_allclose(cs.A[j], a, rtol=1e-15)
        np.testing.assert_allclose(cs.B[j], b, rtol=1e-15)
    np.testing.assert_array_equal(cs.rhs, 1.0)


def test_gram_apply_adjoint_are_consistent():
    data = sg.random_data(4, 5, 3, seed=5)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    feats = np.stack([np.outer(a, b).ravel() for a, b in zip(cs.A, cs.B, strict=True)])
    np.testing.assert_allclose(cs.gram(), feats @ feats.T, rtol=1e-12, atol=1e-14)
    W = np.random.default_rng(0).normal(size=(3, 3))
    np.testing.assert_allclose(cs.apply(W), feats @ W.ravel(), rtol=1e-12, atol=1e-14)
    lam = np.random.default_rng(1).random(cs.N)
    np.testing.assert_allclose(cs.adjoint(lam).ravel(), feats.T @ lam, rtol=1e-12, atol=1e-14)


def test_apply_in_chunks_equals_the_direct_product(monkeypatch):
    # the matrix-free solver's products are ConstraintSet.apply/adjoint: rows grouped by
    # query, in chunks that bound the temporaries (issue #20)
    import svmgeo.constraints as constraints

    data = sg.random_data(12, 6, 5, seed=3)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    assert cs.query_groups is not None
    assert not cs.query_groups[0].flags.writeable  # cached on an immutable set, as B is
    W = np.random.default_rng(0).normal(size=(5, 5))
    whole = cs.apply(W)
    monkeypatch.setattr(constraints, "_CHUNK", 7)  # several chunks, the last one short
    np.testing.assert_array_equal(cs.apply(W), whole)
    np.testing.assert_allclose(whole, np.einsum("ja,ab,jb->j", cs.A, W, cs.B), rtol=1e-12)


def test_subset_keeps_index_arrays():
    data = sg.random_data(2, 4, 3, seed=0)
    cs = sg.att_svm_constraints(data, [0, 1])
    sub = cs.subset(cs.seq == 1)
    assert sub.N == 3 and np.all(sub.seq == 1) and np.all(sub.pref == 1)
    with pytest.raises(ValueError):
        sub.A[0, 0] = 1.0  # frozen arrays


def test_pair_constraints_equality_rows_default_rhs():
    data = sg.random_data(2, 3, 2, seed=0)
    cs = sg.pair_constraints(data, [0, 1], [0, 0], [0, 1], [1, 2], kind=[sg.MARGIN, sg.EQUALITY])
    np.testing.assert_array_equal(cs.rhs, [1.0, 0.0])
    assert cs.n_margin == 1


def test_correlation():
    W = np.arange(4.0).reshape(2, 2)
    np.testing.assert_allclose(sg.correlation(W, 3 * W), 1.0, rtol=1e-15)
    np.testing.assert_allclose(sg.correlation(W, -W), -1.0, rtol=1e-15)
    assert sg.correlation(W, np.zeros((2, 2))) == 0.0
    np.testing.assert_allclose(sg.correlation(1e300 * W, 1e300 * W), 1.0, rtol=1e-15)
    with pytest.raises(sg.ProblemError, match="equal shape"):
        sg.correlation(W, np.ones(3))


def _rows_of(cs, **changes):
    """The fields of ``cs`` as ConstraintSet keywords, some replaced."""
    fields = dict(
        A=cs.A, B=cs.B, kind=cs.kind, rhs=cs.rhs, seq=cs.seq, query=cs.query, pref=cs.pref,
        comp=cs.comp, n=cs.n, K=cs.K, T=cs.T,
    )  # fmt: skip
    return {**fields, **changes}


@pytest.mark.parametrize(
    "args, kw, words",
    [
        (([0, 1, 2], [0, 0, 0], [0, 0, 0], [1, 1, 1]), {"rhs": [1.0, np.nan, 1.0]}, "'rhs'"),
        (([0, 1, 2], [0, 0, 0], [0, 0, 0], [1, 1, 1]), {"rhs": [1.0, np.inf, 1.0]}, "finite"),
        (([0, 1], [0], [0], [1]), {}, "one entry per row"),
        (([-1], [0], [0], [1]), {}, "count from the end"),
        (([0.7], [0], [0], [1]), {}, "integers"),
        (([[0]], [[0]], [[0]], [[1]]), {}, "1-D"),
        (([0], [0], [0], [9]), {}, "'comp'"),
        (([0], [1], [0], [1]), {}, "'query'"),
        (([0], [0], [0], [1]), {"kind": 7}, "EQUALITY"),
        (([0], [0], [0], [1]), {"kind": 256}, "EQUALITY"),
        (([0], [0], [0], [1]), {"kind": [256]}, "EQUALITY"),
        (([0, 1], [0, 0], [0, 0], [1, 1]), {"rhs": [1.0, 1.0, 1.0]}, "one per row"),
    ],
)
def test_pair_constraints_refuses_malformed_rows(args, kw, words):
    """Every malformed index, kind or rhs is a ProblemError naming it (they used to be
    broadcast, wrapped, truncated or, for a NaN rhs, 'proved' feasible)."""
    data = sg.random_data(3, 4, 3, seed=0)
    with pytest.raises(sg.ProblemError, match=words) as err:
        sg.pair_constraints(data, *args, **kw)
    assert "pair_constraints" in str(err.value)


def test_constraint_set_checks_and_converts_its_arrays():
    """A ConstraintSet built by hand is validated, and float32 rows become float64 (solved as
    the float64 rows are)."""
    data = sg.random_data(4, 4, 3, seed=1)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    single = sg.ConstraintSet(**_rows_of(cs, A=cs.A.astype(np.float32), B=cs.B.astype(np.float32)))
    assert single.A.dtype == np.float64 and not single.A.flags.writeable
    rounded = sg.ConstraintSet(
        **_rows_of(
            cs, A=cs.A.astype(np.float32).astype(float), B=cs.B.astype(np.float32).astype(float)
        )
    )
    np.testing.assert_array_equal(sg.solve_svm(single).W, sg.solve_svm(rounded).W)
    bad = {
        "B": (np.ones((cs.N, cs.d + 1)), "'B'"),
        "A": (np.where(np.arange(cs.N)[:, None] == 0, np.nan, cs.A), "finite"),
        "rhs": (np.ones(cs.N + 1), "'rhs'"),
        "kind": (np.full(cs.N, 2, dtype=np.int8), "MARGIN"),
        "seq": (cs.seq + cs.n, "'seq'"),
        "pref": (cs.pref - 5, "'pref'"),
        "n": (-1, "'n'"),
        "comp": (cs.comp[:-1], "one entry per row"),
    }
    for name, (value, words) in bad.items():
        with pytest.raises(sg.ProblemError, match=words):
            sg.ConstraintSet(**_rows_of(cs, **{name: value}))


def test_constraint_set_needs_one_index_per_row_of_a() -> None:
    data = sg.random_data(4, 4, 3, seed=1)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    short = {name: getattr(cs, name)[:-1] for name in ("seq", "query", "pref", "comp")}
    with pytest.raises(sg.ProblemError, match="per row of A"):
        sg.ConstraintSet(**_rows_of(cs, **short))


def test_sets_leave_the_callers_arrays_theirs() -> None:
    """A set holds read-only arrays of its own: the caller's index and row arrays stay
    writeable (they were frozen in place), and changing them afterwards leaves the set as built."""
    data = sg.random_data(3, 4, 5, seed=0)
    seq, query, pref, comp = (np.array(v) for v in ([0, 1], [0, 0], [0, 0], [1, 2]))
    cs = sg.pair_constraints(data, seq, query, pref, comp)
    A = cs.A.copy()
    rebuilt = sg.ConstraintSet(
        A=A, B=cs.B.copy(), kind=cs.kind.copy(), rhs=cs.rhs.copy(), seq=seq, query=query,
        pref=pref, comp=comp, n=cs.n, K=cs.K, T=cs.T,
    )  # fmt: skip
    for given in (seq, query, pref, comp, A):
        assert given.flags.writeable
    for built in (cs, rebuilt):
        for name in ("A", "B", "kind", "rhs", "seq", "query", "pref", "comp"):
            assert not getattr(built, name).flags.writeable
    seq[0], A[0, 0] = 2, A[0, 0] + 1.0
    np.testing.assert_array_equal(cs.seq, [0, 1])
    np.testing.assert_array_equal(rebuilt.seq, [0, 1])
    np.testing.assert_array_equal(rebuilt.A, cs.A)


def test_apply_adjoint_and_subset_check_their_argument() -> None:
    """p in place of p e1^T, a multiplier too many, an index out of range, strings: numpy's
    ValueError / IndexError / UFuncTypeError named none of them."""
    data = sg.random_data(3, 4, 5, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    with pytest.raises(sg.ProblemError, match=r"apply takes a real W of shape \(5, 5\)"):
        cs.apply(np.ones(5))
    with pytest.raises(sg.ProblemError, match=r"apply takes a real W .*; got <U1 of shape"):
        cs.apply(np.full((5, 5), "a"))
    with pytest.raises(sg.ProblemError, match=r"adjoint takes one real multiplier per row"):
        cs.adjoint(np.ones(cs.N + 1))
    with pytest.raises(sg.ProblemError, match=r"got <U1 of shape \(9,\)"):
        cs.adjoint(np.full(cs.N, "a"))
    with pytest.raises(sg.ProblemError, match=r"in \[0, 9\); got <U1 of shape \(9,\)\.$"):
        cs.subset(np.full(cs.N, "a"))
    for rows in ([100], np.ones(3, dtype=bool), [0.5], [-1]):
        with pytest.raises(sg.ProblemError, match=r"ConstraintSet\.subset takes"):
            cs.subset(rows)
    assert cs.subset([]).N == 0 and cs.subset([0, 2]).N == 2


def test_tokens_must_be_token_data() -> None:
    """A string passed as tokens was kept, and solve_svm failed on it with an AttributeError."""
    rows = dict(A=np.ones((1, 3)), B=np.ones((1, 3)), kind=0, rhs=np.ones(1), seq=[0],
                query=[0], pref=[0], comp=[1], n=2, K=1, T=3)  # fmt: skip
    with pytest.raises(sg.ProblemError, match=r"'tokens' of ConstraintSet .* got str"):
        sg.ConstraintSet(**rows, tokens="x")  # type: ignore[arg-type]
    assert sg.ConstraintSet(**rows).tokens is None


@pytest.mark.parametrize("field", ["rhs", "A"])
def test_entries_near_float64s_largest_build_a_set_without_a_warning(field):
    """A session-52 review: ConstraintSet's finiteness check summed each array, so bounds (or
    rows) near 1.7e308 warned 'overflow encountered in reduce' (and 'invalid value' where the
    sum met inf - inf). Now no warning; a non-finite entry is still refused by name."""
    import dataclasses
    import warnings

    data = sg.random_data(3, 4, 5, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    huge = np.full_like(getattr(cs, field), 1.7e308)
    huge.flat[0] = -1.7e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = dataclasses.replace(cs, **{field: huge}, tokens=None)
    np.testing.assert_array_equal(getattr(big, field), huge)
    for bad in (np.inf, -np.inf, np.nan):
        worse = huge.copy()
        worse.flat[1] = bad
        with pytest.raises(sg.ProblemError, match=f"'{field}' of ConstraintSet must be finite"):
            dataclasses.replace(cs, **{field: worse}, tokens=None)
