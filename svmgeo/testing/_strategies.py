# SPDX-License-Identifier: BSD-3-Clause
r"""Hypothesis strategies drawing token datasets, for svmgeo's property suite and yours.

A drawn dataset is a :class:`Case`: the parameters (attention kind, variant, sizes, seed) and
the :class:`~svmgeo.TokenData` built from them by :func:`build_case`. Hypothesis draws only
the parameters (a seed shrinks as well as an array and is much faster to draw); everything
else comes from ``numpy.random.default_rng(seed)``, so a falsifying example prints as a
``svmgeo.testing.build_case(...)`` call that rebuilds it exactly, and a note gives the line
that runs as printed in a fresh interpreter (:meth:`Case.reproducer`:
``import svmgeo.testing; case = svmgeo.testing.build_case(...)``).

Attention kinds (SPEC §1):

* ``"cross"``: one given query per sequence, ``Z`` of shape (n, d);
* ``"self"``: self-attention with query token ``q`` (drawn), ``z_i = x_{iq}``;
* ``"multi"``: cross-attention with K given queries per sequence, labels per query;
* ``"causal"``: sequence self-attention ``query="all"`` with the causal mask;
* ``"masked"``: a random general mask (every query sees at least one key) over K given
  queries or over ``query="all"``.

Variants (degenerate geometry and near-ties):

* ``"generic"``: Gaussian tokens, queries and head;
* ``"near_tie"``: in some sequences the two best tokens' head values differ by 1e-10 to 1e-9;
* ``"duplicate"``: two tokens of a sequence are identical (an exact score tie);
* ``"collinear"``: three tokens on a line (or, for T = 2, two tokens on a ray);
* ``"zero_query"``: some query is the zero vector (for self-attention: the query token);
* ``"subspace"``: all tokens (and queries) lie in a random subspace of dimension 1 or 2.

``d = 1`` is in the size range of every variant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, assume, note, settings
from hypothesis import strategies as st

import svmgeo as sg
from svmgeo._validation import check_int, check_real

__all__ = [
    "KINDS",
    "MIN_SCALE_RATIO",
    "SINGLE_QUERY",
    "VARIANTS",
    "Case",
    "build_b1_case",
    "build_b2_case",
    "build_case",
    "cases",
    "examples",
    "n_queries",
    "register_profiles",
    "scale_ratio",
    "selections",
    "token_data",
]

KINDS = ("cross", "self", "multi", "causal", "masked")
VARIANTS = ("generic", "near_tie", "duplicate", "collinear", "zero_query", "subspace")
SINGLE_QUERY = ("cross", "self")

N_RANGE = (1, 5)
T_RANGE = (2, 6)
D_RANGE = (1, 8)
K_RANGE = (2, 3)


def examples(factor: float) -> int:
    """``factor`` times the active profile's ``max_examples`` (at least 1).

    Per-test ``@settings(max_examples=examples(f))`` keeps the ratio between tests in every
    profile (25 per unit in "ci"/"dev", 500 in "thorough") instead of pinning a number.
    """
    return max(1, round(settings().max_examples * factor))


@dataclass(frozen=True)
class Case:
    """A drawn dataset and the parameters that rebuild it (``repr`` is the rebuilding call).

    Attributes
    ----------
    kind, variant : str
        Attention kind (:data:`KINDS`) and geometric variant (:data:`VARIANTS`).
    n, T, d, K : int
        Sequences, tokens per sequence, dimension, and queries per sequence of ``data``
        (``data.K``: 1 for cross/self-attention, T for causal data and for masked data over
        every token, whatever ``K`` :func:`build_case` was given; that ``K`` is not used by
        those kinds' draws, so the repr, with this one, rebuilds the same data).
    seed : int
        Seed of ``numpy.random.default_rng`` that draws every array.
    sigma : float
        Size of the Gaussian perturbation added after the variant (0: none).
    data : TokenData
        The dataset itself.
    """

    kind: str
    variant: str
    n: int
    T: int
    d: int
    K: int
    seed: int
    sigma: float = 0.0
    data: sg.TokenData = field(repr=False, compare=False, default=None)  # type: ignore[assignment]

    def __repr__(self) -> str:
        sizes = f"n={self.n}, T={self.T}, d={self.d}"
        if self.variant == "b1":  # the Assumption B builders' own calls (build_case has no b1/b2)
            return f"svmgeo.testing.build_b1_case({self.kind!r}, {sizes}, seed={self.seed})"
        if self.variant == "b2":
            return f"svmgeo.testing.build_b2_case({self.kind!r}, {sizes}, K={self.K}, seed={self.seed})"
        extra = f", sigma={self.sigma!r}" if self.sigma else ""
        return (
            f"svmgeo.testing.build_case({self.kind!r}, {self.variant!r}, {sizes}, "
            f"K={self.K}, seed={self.seed}{extra})"
        )

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # hypothesis' printer
        p.text(repr(self))

    def reproducer(self, target: str = "case") -> str:
        """One line that rebuilds the case, runnable as printed in a fresh interpreter.

        ``target="data"`` binds the dataset instead: ``data = svmgeo.testing.build_case(...).data``.
        (The repr alone needs ``svmgeo.testing`` imported: ``import svmgeo`` does not load it.)
        """
        value = f"{self!r}.data" if target == "data" else repr(self)
        return f"import svmgeo.testing; {target} = {value}"

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


def n_queries(kind: str, T: int, K: int) -> int:
    """Queries per sequence of an attention kind's data with K given queries: 1 for
    cross/self-attention, T for causal, K otherwise.

    ``"masked"`` data built by :func:`build_case` has K given queries or, when its seed picks
    ``query="all"``, T: this function counts K; :attr:`Case.K` is the built data's.
    """
    if kind in SINGLE_QUERY:
        return 1
    if kind == "causal":
        return T
    return K


def _unit(rng: np.random.Generator, d: int) -> np.ndarray:
    v = rng.normal(size=d)
    return v / np.linalg.norm(v)


def _random_mask(rng: np.random.Generator, n: int, K: int, T: int) -> np.ndarray:
    mask = rng.random((n, K, T)) < 0.6
    keep = rng.integers(0, T, size=(n, K))
    np.put_along_axis(mask, keep[:, :, None], True, axis=2)
    return mask


def _apply_variant(
    variant: str,
    rng: np.random.Generator,
    X: np.ndarray,
    Z: np.ndarray | None,
    v: np.ndarray,
    Y0: np.ndarray,
    query: Any,
) -> None:
    """Degrade ``X`` / ``Z`` in place (``Y0`` is each sequence's first label)."""
    n, T, d = X.shape
    hit = np.asarray(rng.random(n) < 0.5)
    hit[rng.integers(n)] = True  # at least one sequence is affected
    for i in np.flatnonzero(hit):
        t1, t2, t3 = (*rng.permutation(T)[:3], -1, -1)[:3]  # -1: fewer than 3 tokens
        if variant == "near_tie":
            h = X[i] @ v
            best = int(np.argmax(Y0[i] * h))
            other = t1 if t1 != best else t2
            delta = 10.0 ** rng.uniform(-10.0, -9.0)
            # v.x_other = v.x_best - Y delta: the label-weighted scores differ by delta
            X[i, other] += (h[best] - Y0[i] * delta - h[other]) * v / (v @ v)
        elif variant == "duplicate":
            X[i, t2] = X[i, t1]
        elif variant == "collinear":
            if t3 >= 0:
                X[i, t3] = X[i, t1] + rng.uniform(-1.0, 2.0) * (X[i, t2] - X[i, t1])
            else:
                X[i, t2] = rng.uniform(-2.0, 2.0) * X[i, t1]
        elif variant == "zero_query":
            if Z is not None:
                Z[i, rng.integers(Z.shape[1])] = 0.0
            elif isinstance(query, int):
                X[i, query] = 0.0
            else:  # every token is a query
                X[i, t1] = 0.0
    if variant == "subspace":
        r = min(d, int(rng.integers(1, 3)))
        U = np.linalg.qr(rng.normal(size=(d, r)))[0]
        X[...] = X @ U @ U.T
        if Z is not None:
            Z[...] = Z @ U @ U.T


_TWO_TOKEN_VARIANTS = ("near_tie", "duplicate", "collinear")
"""Variants that relate two tokens of a sequence (T >= 2)."""


def build_case(
    kind: str,
    variant: str,
    *,
    n: int,
    T: int,
    d: int,
    K: int = 2,
    seed: int = 0,
    sigma: float = 0.0,
) -> Case:
    """Build the dataset of a :class:`Case` deterministically from its parameters.

    ``sigma > 0`` adds a Gaussian perturbation of that size to the tokens and the given
    queries after the variant was applied (the "almost every dataset" of Theorem 1).
    """
    if kind not in KINDS or variant not in VARIANTS:
        raise sg.ProblemError(
            f"build_case takes kind in {KINDS} and variant in {VARIANTS}; got kind={kind!r}, "
            f"variant={variant!r} (Assumption B cases: build_b1_case, build_b2_case)."
        )
    n, T, d, K = (check_int(x, name, low=1, where="build_case") for x, name in
                  ((n, "n"), (T, "T"), (d, "d"), (K, "K")))  # fmt: skip
    seed = check_int(seed, "seed", low=0, where="build_case")
    sigma = check_real(sigma, "sigma", low=0.0, high_open=True, where="build_case")
    if T < 2 and variant in _TWO_TOKEN_VARIANTS:
        raise sg.ProblemError(
            f"build_case's variant {variant!r} relates two tokens of a sequence; got T = {T}. "
            "Pass T >= 2, or variant='generic'."
        )
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, T, d)) / np.sqrt(d)
    v = _unit(rng, d)
    Kq = n_queries(kind, T, K)
    query: Any = None
    Z: np.ndarray | None = None
    mask: Any = None
    if kind == "cross":
        Z = rng.normal(size=(n, 1, d)) / np.sqrt(d)
    elif kind == "self":
        query = int(rng.integers(T))
    elif kind == "multi":
        Z = rng.normal(size=(n, K, d)) / np.sqrt(d)
    elif kind == "causal":
        query, mask = "all", "causal"
    else:  # masked: over given queries or over every token
        if rng.random() < 0.5:
            Z = rng.normal(size=(n, K, d)) / np.sqrt(d)
        else:
            query, Kq = "all", T
        mask = _random_mask(rng, n, Kq, T)
    Y = rng.choice([-1.0, 1.0], size=(n, Kq))
    _apply_variant(variant, rng, X, Z, v, Y[:, 0], query)
    if sigma > 0.0:
        X += sigma * rng.normal(size=X.shape)
        if Z is not None:
            Z += sigma * rng.normal(size=Z.shape)
    if Z is not None and kind in SINGLE_QUERY:
        Z = Z[:, 0, :]
    labels = Y[:, 0] if Kq == 1 else Y
    data = sg.TokenData(X, Y=labels, v=v, Z=Z, query=query, mask=mask)
    return Case(kind, variant, n, T, d, data.K, seed, sigma, data)


MIN_SCALE_RATIO = 1e-6


def scale_ratio(data: sg.TokenData) -> float:
    r"""Smallest nonzero :math:`\|x_{it} - x_{is}\|\,\|z_{ik}\|` over visible pairs, relative to
    the largest such value or :math:`\|x_{it}\|\,\|z_{ik}\|`.

    Every row of every Att-SVM of the dataset has a scale in this range. Below
    :data:`MIN_SCALE_RATIO` (near-duplicate tokens: a near-tie when d = 1) the problems need
    :math:`\|W\| \sim 1/\text{ratio}` and lie outside the precision svmgeo certifies; see
    docs/properties.md (findings). Exact zeros (duplicates, zero queries) are decided exactly
    and do not count.
    """
    X = np.asarray(data.X)
    diff = np.linalg.norm(X[:, :, None, :] - X[:, None, :, :], axis=-1)  # (n, T, T)
    zn = np.linalg.norm(np.asarray(data.queries), axis=-1)  # (n, K)
    vis = np.asarray(data.visible)
    pair = vis[:, :, :, None] & vis[:, :, None, :]
    scale = np.where(pair, zn[:, :, None, None] * diff[:, None], 0.0)
    nz = scale[scale > 0]
    size = np.linalg.norm(X, axis=-1)[:, None, :] * zn[:, :, None]  # ||x_it|| ||z_ik||
    top = max(float(nz.max(initial=0.0)), float(size.max(initial=0.0)))
    return float(nz.min() / top) if nz.size else 1.0


@st.composite
def cases(
    draw: st.DrawFn,
    *,
    kinds: tuple[str, ...] = KINDS,
    variants: tuple[str, ...] = VARIANTS,
    n_range: tuple[int, int] = N_RANGE,
    T_range: tuple[int, int] = T_RANGE,
    d_range: tuple[int, int] = D_RANGE,
    overparameterized: bool = False,
    sigma: float | st.SearchStrategy[float] = 0.0,
    conditioned: bool = True,
) -> Case:
    """Draw a :class:`Case`.

    With ``overparameterized=True`` the sizes satisfy Theorem 1's
    :math:`d \\ge \\max(T-1, nK)` (K queries per sequence; K = 1 for cross/self-attention),
    with ``d`` up to ``d_range[1]``. With ``conditioned=True`` (default) datasets whose
    :func:`scale_ratio` is below :data:`MIN_SCALE_RATIO` are rejected.
    """
    for name, (low, high) in (("n_range", n_range), ("T_range", T_range), ("d_range", d_range)):
        if not (isinstance(low, int) and isinstance(high, int) and 1 <= low <= high):
            raise sg.ProblemError(
                f"The {name!r} parameter of cases must be a pair of ints 1 <= low <= high; got "
                f"{(low, high)!r}."
            )
    kind = draw(st.sampled_from(kinds))
    variant = draw(st.sampled_from(variants))
    dmax = d_range[1]
    T = draw(
        st.integers(T_range[0], min(T_range[1], dmax + 1) if overparameterized else T_range[1])
    )
    K = draw(st.integers(*K_RANGE))
    Kq = n_queries(kind, T, K)
    if overparameterized:
        # "masked" may use query="all" (T queries): size for the larger of K and T
        Kmax = max(Kq, T) if kind == "masked" else Kq
        n_hi = min(n_range[1], dmax // Kmax)
        if n_hi < n_range[0]:  # e.g. causal with T > d_max
            # fall back to cross-attention only where the caller asked for it: a property of
            # causal (or masked) data must not pass on cross-attention cases
            assume("cross" in kinds)
            kind, Kmax = "cross", 1
            n_hi = min(n_range[1], dmax)
        n = draw(st.integers(n_range[0], n_hi))
        d = draw(st.integers(max(T - 1, n * Kmax, d_range[0]), dmax))
    else:
        n = draw(st.integers(*n_range))
        d = draw(st.integers(*d_range))
    case = _draw_case(draw, kind, variant, n, T, d, K, sigma, conditioned)
    note(f"reproduce: {case.reproducer()}")
    return case


def _draw_case(
    draw: st.DrawFn,
    kind: str,
    variant: str,
    n: int,
    T: int,
    d: int,
    K: int,
    sigma: float | st.SearchStrategy[float],
    conditioned: bool,
) -> Case:
    """Draw the seed (and sigma), build the case, reject ill-conditioned data if asked."""
    seed = draw(st.integers(0, 2**32 - 1))
    s = draw(sigma) if isinstance(sigma, st.SearchStrategy) else sigma
    case = build_case(kind, variant, n=n, T=T, d=d, K=K, seed=seed, sigma=s)
    if conditioned:
        assume(scale_ratio(case.data) >= MIN_SCALE_RATIO)
    return case


Size = int | tuple[int, int] | st.SearchStrategy[int]


def _draw_size(draw: st.DrawFn, size: Size, name: str) -> int:
    if isinstance(size, st.SearchStrategy):
        return int(draw(size))
    if isinstance(size, tuple):
        return int(draw(st.integers(*size)))
    if isinstance(size, int) and not isinstance(size, bool):
        return size
    raise sg.ProblemError(
        f"{name} must be an int, a (low, high) tuple or a hypothesis strategy of ints; got {size!r}."
    )


@st.composite
def token_data(
    draw: st.DrawFn,
    *,
    kind: str | tuple[str, ...] = KINDS,
    variant: str | tuple[str, ...] = VARIANTS,
    n: Size = N_RANGE,
    T: Size = T_RANGE,
    d: Size = D_RANGE,
    K: Size = K_RANGE,
    sigma: float | st.SearchStrategy[float] = 0.0,
    conditioned: bool = True,
) -> sg.TokenData:
    """Draw a :class:`~svmgeo.TokenData` (the ``data`` of a :class:`Case`).

    Each size is an int, an inclusive ``(low, high)`` range or a strategy, e.g.
    ``token_data(kind="self", d=st.integers(8, 12))``. The case that built the data is recorded
    with :func:`hypothesis.note`, so a failing example prints the line that rebuilds it,
    ``reproduce: import svmgeo.testing; data = svmgeo.testing.build_case(...).data``.
    """
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    variants = (variant,) if isinstance(variant, str) else tuple(variant)
    for value, allowed, name in ((kinds, KINDS, "kind"), (variants, VARIANTS, "variant")):
        unknown = sorted(set(value) - set(allowed))
        if unknown or not value:
            raise sg.ProblemError(f"{name} must be among {allowed}; got {value!r}.")
    chosen_kind = draw(st.sampled_from(kinds))
    sizes = {name: _draw_size(draw, size, name) for name, size in (("n", n), ("T", T), ("d", d))}
    k = _draw_size(draw, K, "K")
    case = _draw_case(
        draw,
        chosen_kind,
        draw(st.sampled_from(variants)),
        **sizes,
        K=k,
        sigma=sigma,
        conditioned=conditioned,
    )
    note(f"reproduce: {case.reproducer('data')}")
    return case.data


def register_profiles() -> None:
    """Register hypothesis profiles: "ci" (derandomized, 25 examples per unit, no deadline,
    prints the reproduction blob), "dev" (random, 25) and "thorough" (random, 500).

    Load one with ``hypothesis.settings.load_profile(name)``; svmgeo's suite loads
    ``HYPOTHESIS_PROFILE``, "ci" when it is unset (the README's test command draws the same
    examples on every run; "dev" and "thorough" explore).
    """
    settings.register_profile(
        "ci",
        derandomize=True,
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        print_blob=True,
    )
    settings.register_profile("dev", max_examples=25, deadline=None)
    settings.register_profile(
        "thorough", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )


@st.composite
def selections(draw: st.DrawFn, data: sg.TokenData) -> np.ndarray:
    """A selection α: one visible token per query, shape (n,) or (n, K)."""
    vis = data.visible
    alpha = np.array(
        [
            [draw(st.sampled_from(np.flatnonzero(vis[i, k]).tolist())) for k in range(data.K)]
            for i in range(data.n)
        ],
        dtype=np.int64,
    )
    return alpha[:, 0] if data.single_query else alpha


def build_b2_case(kind: str, *, n: int, T: int, d: int, K: int = 2, seed: int = 0) -> Case:
    r"""A dataset satisfying Assumption B.2: all non-optimal scores of a query are equal.

    Each sequence gets one high token :math:`o_i` and a common head value :math:`c_i` for the
    others: tokens are moved along :math:`v` so that :math:`v^\top x_{it} = c_i` (:math:`t \ne
    o_i`) and :math:`v^\top x_{io_i} = c_i + Y_i g_i` with :math:`g_i > 0`. Labels are per
    sequence so that :math:`o_i` is the optimal token of every query that sees it (under the
    causal mask :math:`o_i = 0`, seen by every query); a query that does not see :math:`o_i`
    sees only tied tokens, so masks that hide it are redrawn.
    """
    base = build_case(kind, "generic", n=n, T=T, d=d, K=K, seed=seed)
    rng = np.random.default_rng([seed, 2])
    data = base.data
    X = np.array(data.X)
    v = np.asarray(data.v)
    Y = rng.choice([-1.0, 1.0], size=n)
    vis = np.array(data.visible)
    o = np.zeros(n, dtype=np.int64) if kind == "causal" else rng.integers(0, T, size=n)
    if kind == "masked":
        vis[np.arange(n), :, o] = True  # every query sees the high token
    for i in range(n):
        c = rng.normal()
        g = rng.uniform(0.1, 1.0)
        target = np.full(T, c)
        target[o[i]] = c + Y[i] * g
        X[i] += np.outer(target - X[i] @ v, v)
    kw: dict[str, Any] = {"Y": Y, "v": v}
    if data.query is None:
        kw["Z"] = data.Z
    else:
        kw["query"] = data.query
    if kind == "causal":
        kw["mask"] = "causal"
    elif kind == "masked":
        kw["mask"] = vis
    out = sg.TokenData(X, **kw)
    return Case(kind, "b2", n, T, d, out.K, seed, 0.0, out)


def build_b1_case(kind: str, *, n: int, T: int, d: int, seed: int = 0) -> Case | None:
    r"""A dataset satisfying Assumption B.1: every non-optimal token is a support token.

    Start from a generic single-query dataset, solve Att-SVM(opt), and move every non-support
    token :math:`x_{it}` (margin :math:`m_t > 1`) along a direction :math:`u` with
    :math:`u^\top W^{mm} z_i = 1` and :math:`v^\top u = 0` by :math:`m_t - 1`: its margin
    becomes exactly 1 and its score is unchanged. :math:`W^{mm}` stays feasible and its KKT
    multipliers still certify it (the moved rows are active with multiplier 0), so
    :math:`W^{mm}` is unchanged and every non-optimal token is now a support token.
    The query token of self-attention cannot move (it is also the query); cases where it
    would have to, where :math:`W^{mm} z_i \parallel v`, or where Att-SVM(opt) is infeasible
    or opt is tied return None.
    """
    if kind not in SINGLE_QUERY:
        raise sg.ProblemError(
            f"build_b1_case's construction needs one query per sequence: kind in {SINGLE_QUERY}; "
            f"got {kind!r}."
        )
    base = build_case(kind, "generic", n=n, T=T, d=d, seed=seed).data
    try:
        alpha = sg.optimal_tokens(base)
    except sg.TieError:
        return None
    res = sg.att_svm(base, alpha)
    if not res.success or res.W is None:
        return None
    W = res.W
    X = np.array(base.X)
    v = np.asarray(base.v)
    Zq = np.asarray(base.queries)[:, 0, :]
    for i in range(n):
        w = W @ Zq[i]
        wp = w - (w @ v) * v  # component orthogonal to v (v is a unit vector)
        for t in range(T):
            if t == alpha[i]:
                continue
            m = float((X[i, alpha[i]] - X[i, t]) @ w)
            if m <= 1.0 + 1e-12:
                continue
            if kind == "self" and t == base.query:
                return None
            if wp @ wp <= 1e-12 * max(1.0, w @ w):
                return None
            X[i, t] += (m - 1.0) * wp / (wp @ wp)
    kw: dict[str, Any] = {"Y": base.Y, "v": v}
    if kind == "cross":
        kw["Z"] = base.Z
    else:
        kw["query"] = base.query
    out = sg.TokenData(X, **kw)
    return Case(kind, "b1", n, T, d, 1, seed, 0.0, out)
