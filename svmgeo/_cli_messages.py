# SPDX-License-Identifier: BSD-3-Clause
"""The command line's wording of what the library says in Python terms.

:func:`svmgeo.cli.main` runs the commands; this module turns the library's messages into the
command line's terms: a refused default selection that ties (:func:`_tie_hint`, and study's
note, :func:`_study_tie_hint`), verify's tied final selection with the cause that applies
(:func:`_verify_tie_hint`, :func:`_tie_causes`), train's stop (:func:`_stop_message`,
:func:`_stop_in_cli_terms`), and any library error whose keywords options set
(:func:`_in_cli_terms`). Like the command line itself it imports heavy modules only when a
message is made, so ``svmgeo --help`` answers at the cost of ``import svmgeo``.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ._errors import TieError
    from .data import TokenData


# the most entries of a selection that a refusal spells out as an --alpha to pass
_ALPHA_EXAMPLE = 40


_LIBRARY_TIE_CAUSES = " (equal largest logits"
"""Where the library's message of a tied final selection (:func:`svmgeo.verify`) turns from
the tied queries to its causes and hint in Python terms, which :func:`_verify_tie_hint`
replaces (tests/test_cli_audit58.py checks that the library still says it)."""

_LIBRARY_TIE_HINT = " Take "
"""Where :func:`~svmgeo.optimal_tokens`' message of tied optimal tokens turns from the tied
queries to its hint in Python terms, which :func:`_tie_hint` replaces (checked as
:data:`_LIBRARY_TIE_CAUSES` is)."""


def _tie_hint(args: argparse.Namespace, data: TokenData, exc: TieError) -> str:
    """The command line's refusal of a default selection (the optimal tokens) that ties: the
    tied queries as :func:`~svmgeo.optimal_tokens` lists them, and ``--alpha`` to pass (the
    lowest tied index, spelled out when short) or other data."""
    tied = str(exc).partition(_LIBRARY_TIE_HINT)[0]  # "optimal tokens are not unique ...: ... ."
    other = "other data (e.g. another --seed)" if args.data is None else "perturbed data"
    return (
        f"{tied} The default selection is one optimal token per query: choose among the tied "
        f"tokens with --alpha{_lowest_alpha(data)}, or use {other}."
    )


def _lowest_alpha(data: TokenData) -> str:
    """`` (e.g. --alpha ...: ...)``: the ``--alpha`` of each query's optimal token, the lowest
    where tied, when it is short enough to spell out; else the empty string."""
    from .selection import optimal_tokens

    lowest = optimal_tokens(data, ties="first").reshape(data.n, data.K)
    if lowest.size > _ALPHA_EXAMPLE:
        return ""
    rows = [",".join(str(int(t)) for t in row) for row in lowest]
    spelled = ",".join(rows) if data.single_query else repr(";".join(rows))  # quoted: ';'
    return f" (e.g. --alpha {spelled}: each query's optimal token, the lowest where tied)"


def _study_tie_hint(args: argparse.Namespace, data: TokenData, report: Any) -> Any:
    """``report`` with its note on tied optimal tokens in the command line's terms: the
    library's hint (:data:`svmgeo.study.TIE_HINT`: ``sg.att_svm(data, alpha)``,
    ``optimal_tokens(data, ties='first')``) gives way to the commands that take ``--alpha``
    on these data; the report as it came without a tie."""
    import dataclasses
    import shlex

    from .study import TIE_HINT

    if not any(TIE_HINT in note for note in report.notes):
        return report
    said = (
        f"Study a choice among the tied tokens with svmgeo solve (or support, feasibility) "
        f"--data {shlex.quote(args.dataset)} --alpha{_lowest_alpha(data)}, or perturb the data."
    )
    notes = [note.replace(TIE_HINT, said) for note in report.notes]
    return dataclasses.replace(report, notes=notes)


_NEAR = "tokens equal within the tie tolerance"
"""The cause of :func:`_tied_by_every_w` for tokens that :func:`_tied_tokens` ties but that are
not exactly equal."""

_NEAR_MEANS = (
    " Tokens equal within the tie tolerance: each entry within TIE_RTOL = 1e-12 of the "
    "other's (relative), so under every W their logits differ by at most 1e-12 times the "
    "size of their terms, which the selection reads as tied except where the terms cancel."
)


def _verify_tie_hint(args: argparse.Namespace, data: TokenData, exc: TieError) -> str:
    """The message of ``verify``'s tied final selection (``exc``) in the command line's terms,
    with the cause that applies (:func:`_tie_causes`) and its remedy.

    The library's message lists both causes (identical tokens, a stationary start) and ends
    with a hint in Python terms (``init=('random', 0.1)``, ``gen_svm``); a run that stopped at
    a stationary point opens with ``train``'s message of that stop, in Python terms too,
    replaced by the stop itself. Tied tokens that every W ties (identical ones, or a zero
    query; tokens equal within the tie tolerance, except where their terms cancel: see
    :func:`_tied_tokens`) tie again whenever they win, under any start: other (or perturbed)
    data unties them. Distinct tied tokens are left unseparated by the run's final W: a start
    the run did not have (:func:`_other_start`), or other data; identical tokens tied with
    distinct ones need both: a start can let a distinct one win, but identical ones that win
    tie again.
    """
    import numpy as np

    from .selection import first_five

    head, tie, rest = str(exc).partition("GD's final selection is tied")
    run = exc.run
    if not tie or run is None or run.W is None:  # not the tie of a final W: as it came
        return str(exc)
    tied = tie + rest.partition(_LIBRARY_TIE_CAUSES)[0]
    if head and str(run.status) == "stationary":
        head = (
            f"The run stopped with status 'stationary' after {run.n_steps} steps: the "
            "gradient is exactly zero there. "
        )
    elif head:  # the run's own stop message (overflow) names Python keywords
        head = _stop_in_cli_terms(head, args)
    forced, mixed, distinct, near = _tie_causes(data, run.W)
    near_forced = _NEAR in forced.values()
    other = "other data (e.g. another --seed)" if args.data is None else "perturbed data"
    start = _other_start(args)
    w = "W = 0" if not np.any(run.W) else "the final W"
    twins = first_five([f"{q} (tokens {' and '.join(map(str, c))})" for q, c in mixed.items()])
    alike = _NEAR if near else "identical tokens"  # near: of the twins among distinct ones
    cancel = ", except where their terms cancel"
    if not (mixed or distinct):
        ties = "ties them" + cancel if near_forced else "gives them equal logits"
        why = f"{_every_w(forced)}: every W {ties}"
        fix = f"use {other}; under any start they tie again whenever they win"
    elif not (forced or distinct):
        why = (
            f"{alike} among distinct ones at {twins}: every W ties the equal ones{cancel if near else ''}, "
            f"and {w} leaves the others unseparated"
        )
        fix = (
            f"starting elsewhere (e.g. {start}) can let a distinct token win, but {alike} "
            f"that win tie again: use {other} for those"
        )
    elif not (forced or mixed):
        why = f"distinct tokens that {w} gives equal logits"
        fix = f"start elsewhere (e.g. {start}), or use {other}"
    else:
        whys, fixes = [], []
        if forced:
            at = first_five(list(forced))
            whys.append(
                f"{_every_w(forced)} at {at}, tied by every W{cancel if near_forced else ''}"
            )
            fixes.append(f"use {other} at {at}, whose tied tokens tie again whenever they win")
        if mixed:
            at = first_five(list(mixed))
            whys.append(f"{alike} among distinct ones at {twins}")
            fixes.append(
                f"at {at} a start can let a distinct token win, and {other} unties {alike} that win"
            )
        if distinct:
            at = first_five(distinct)
            whys.append(f"distinct tokens that {w} gives equal logits at {at}")
            fixes.append(f"starting elsewhere (e.g. {start}) may untie {at}")
        why, fix = "; ".join(whys), "; ".join(fixes)
    return f"{head}{tied} ({why}). A selection is one token per query: {fix}." + (
        _NEAR_MEANS if near or near_forced else ""
    )


def _tie_causes(
    data: TokenData, W: np.ndarray
) -> tuple[dict[str, str], dict[str, list[list[int]]], list[str], bool]:
    r"""The queries whose largest logits :math:`x_{it}^\top W z_{ik}` tie at ``W``
    (:func:`~svmgeo.selection.logit_selection`, the rule of verify's final selection), split
    by cause (:func:`_tied_by_every_w`, the rule :func:`_stop_message` applies too).

    Returns
    -------
    forced : dict
        The queries whose tied keys every W ties (:func:`_tied_by_every_w`: identical
        tokens, or a zero query; tokens equal within the tie tolerance, except where their
        terms cancel), each with its cause.
    mixed : dict
        The others whose tied keys include equal ones (:func:`_twin_groups`): each with its
        groups of equal tokens, e.g. ``[[0, 1]]`` for tokens 0, 1 tied with a distinct 2.
    distinct : list of str
        The rest: distinct tokens that this W does not separate.
    near : bool
        Whether some group of ``mixed`` is equal within the tie tolerance but not exactly.
    """
    import numpy as np

    from .selection import logit_selection, query_label, weight_logits

    W = np.asarray(W, dtype=float)
    *_, top = logit_selection(data, weight_logits(data, W), W)  # verify's rule, W's terms
    X = np.asarray(data.X)
    forced: dict[str, str] = {}
    mixed: dict[str, list[list[int]]] = {}
    distinct: list[str] = []
    near = False
    for i, k in np.argwhere(top.sum(axis=2) > 1):
        keys = np.flatnonzero(top[i, k])
        label = query_label(data, i, k)
        cause = _tied_by_every_w(data, i, k, keys.tolist())
        if cause is not None:
            forced[label] = cause
            continue
        twins = [keys[g].tolist() for g in _twin_groups(X[i, keys])]
        if twins:
            mixed[label] = twins
            near = near or any(bool(np.any(X[i, g] != X[i, g[0]])) for g in twins)
        else:
            distinct.append(label)
    return forced, mixed, distinct, near


def _tied_by_every_w(
    data: TokenData, i: int, k: int, keys: list[int], prompt: bool = False
) -> str | None:
    r"""Why every W (every p, with ``prompt``) ties the keys ``keys`` (two or more) of query
    k of sequence i, :math:`x_{it}^\top W z_{ik}` (:math:`x_{it}^\top p`), or None where some
    W separates them: ``"a zero query"`` (:math:`z_{ik} = 0`; p reads no query) or
    ``"identical tokens"`` (equal logits under every W), or :data:`_NEAR` (each token ties
    the first by :func:`_tied_tokens`: the selection reads their logits as tied except where
    their terms cancel)."""
    import numpy as np

    X = np.asarray(data.X)[i, keys]
    if not prompt and data.has_queries and not np.any(np.asarray(data.queries)[i, k]):
        return "a zero query"
    if np.all(X == X[0]):
        return "identical tokens"
    if np.all(_tied_tokens(X[0], X)):
        return _NEAR
    return None


def _tied_tokens(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    r"""Whether tokens ``A`` and ``B`` (broadcast, tokens along the last axis) tie entrywise
    by :func:`~svmgeo.selection.tied_maxima`'s rule (the selection's, tolerance
    :data:`~svmgeo.selection.TIE_RTOL`): :math:`|a_j - b_j| \le \mathrm{TIE\_RTOL}
    \max(|a_j|, |b_j|)` for every j. Then for every W and z their logits differ by at most
    TIE_RTOL times the size :math:`\sum_j \max(|a_j|, |b_j|)\,|(Wz)_j|` of their terms (the
    triangle inequality), which the selection reads as tied except where the terms cancel:
    a W that gives :math:`a = (1, 1)` the logit 0 separates it from :math:`(1, 1 + 10^{-15})`."""
    import numpy as np

    from .selection import tied_maxima

    A, B = np.broadcast_arrays(A, B)
    return np.all(tied_maxima(np.stack([A, B], axis=-1)), axis=(-2, -1))


def _twin_groups(X: np.ndarray) -> list[list[int]]:
    r"""The groups of two or more tokens among the rows of ``X`` (shape (m, d)) that tie
    (:func:`_tied_tokens`) the first of their group, rows in order: each row joins the first
    group whose first row it ties, else starts one.

    Rows that tie tie in every entry, so in the entry c with the most distinct values within
    :math:`|c_a - c_b| \le \mathrm{TIE\_RTOL} \max(|c_a|, |c_b|) \le 2\,\mathrm{TIE\_RTOL}
    |c_a|`: sorted by that entry, each row's candidates lie in a window found by bisection,
    and only those pairs are checked in full. Only rows that tie another take a step of the
    grouping.
    """
    import numpy as np

    from .selection import TIE_RTOL

    m, d = X.shape
    j = int(np.argmax([len(np.unique(X[:, j])) for j in range(d)]))
    order = np.argsort(X[:, j], kind="stable")
    c = X[order, j]
    window = 2 * TIE_RTOL * np.abs(c)
    count = np.searchsorted(c, c + window, side="right") - np.arange(m) - 1  # rows after
    a = np.repeat(np.arange(m), count)
    b = a + 1 + np.arange(len(a)) - np.repeat(np.cumsum(count) - count, count)
    a, b = order[a], order[b]
    tied = _tied_tokens(X[a], X[b])
    a, b = np.concatenate([a[tied], b[tied]]), np.concatenate([b[tied], a[tied]])
    first = np.full(m, -1)
    for t in np.unique(a):  # rows that tie another, in order
        if first[t] < 0:  # t starts a group: the rows it ties that no earlier group took
            joins = b[a == t]
            first[t] = t
            first[joins[first[joins] < 0]] = t
    groups = [np.flatnonzero(first == t) for t in np.unique(first[first >= 0])]
    return [g.tolist() for g in groups if len(g) > 1]


def _every_w(forced: dict[str, str]) -> str:
    """The causes of ties that every W has (:func:`_tie_causes`), in words."""
    order = ("identical tokens", _NEAR, "a zero query")
    return " or ".join(c for c in order if c in forced.values())


def _other_start(args: argparse.Namespace) -> str:
    """A start the run did not have: ``--init-scale 0.1`` from the zero start, ten times the
    run's scale from a random one (or, with ``--data``, another ``--seed``, which seeds the
    start only)."""
    init = _init(args)
    if init == "zero":
        return "--init-scale 0.1"
    return f"--init-scale {10 * init[1]:g}" + (" or another --seed" if args.data else "")


def _scores_alike(args: argparse.Namespace, data: TokenData) -> bool:
    r"""Whether every query's visible keys score alike, :math:`\gamma_{ikt} = Y_{ik}\, v^\top
    u_{it}` exactly equal (:func:`~svmgeo.selection.scores_full`; u the values, X unless
    given), under an attention whose weights sum to 1 (softmax, normalized_linear) and a fixed
    linear head (no ``--train-head``): then the output :math:`\sum_t \varphi_t\, v^\top
    u_{it}`, hence the loss, is the same at every W (or p), and every W is stationary."""
    import numpy as np

    from .selection import scores_full

    if args.train_head or args.attention not in ("softmax", "normalized_linear") or data.v is None:
        return False
    scores = scores_full(data)  # (n, K, T)
    visible = np.asarray(data.visible)
    top = np.where(visible, scores, -np.inf).max(axis=2)
    return bool(np.all(np.where(visible, scores, top[:, :, None]) == top[:, :, None]))


def _stop_message(args: argparse.Namespace, data: TokenData, run: Any) -> str:
    """Why ``svmgeo train``'s run stopped, in the command line's terms.

    A stationary stop of a rule that takes a random start gets the cause that applies in
    place of the library's list of examples in Python terms (``param='KQ'``,
    ``init=('random', 0.1)``): every query sees a single key or keys that every W (or p)
    ties (:func:`_tied_by_every_w`, the rule of verify's tie hint), so no start helps;
    every query's visible keys score alike under softmax or normalized_linear
    (:func:`_scores_alike`), so every W is stationary; K = Q = 0 of ``--param KQ`` from the
    zero start; or a point that another start avoids. Other messages are the library's, their
    remedies in Python terms said in the command line's (:func:`_stop_in_cli_terms`).
    """
    import numpy as np

    from .gd import OPTIMIZERS

    rule = args.optimizer if isinstance(args.optimizer, str) else args.optimizer[0]
    if str(run.status) != "stationary" or "seed" not in OPTIMIZERS[rule].options:
        return _stop_in_cli_terms(str(run.message), args)
    said = f"stopped after {run.n_steps} steps: the gradient is exactly zero, a stationary point"
    every_w = f"every {'p' if args.param == 'p' else 'W'}"
    visible = np.asarray(data.visible)
    causes = set()
    for i, k in np.ndindex(visible.shape[:2]):
        keys = np.flatnonzero(visible[i, k]).tolist()
        cause = "one" if len(keys) == 1 else _tied_by_every_w(data, i, k, keys, args.param == "p")
        if cause is None:  # some W separates this query's keys
            break
        causes.add(cause)
    else:
        sees = [
            words
            for cause, words in (
                ("one", "a single key (T = 1 or the data's mask)"),
                ("identical tokens", "identical keys"),
                (_NEAR, "keys equal within the tie tolerance (TIE_RTOL = 1e-12, entrywise)"),
            )
            if cause in causes
        ]
        every = "every query " + " or ".join(
            ([f"sees {' or '.join(sees)}"] if sees else [])
            + (["is the zero vector"] if "a zero query" in causes else [])
        )
        if _NEAR in causes:
            return (
                f"{said}: {every}, so under {every_w} those keys' logits differ by at most "
                "1e-12 times the size of their terms, which the selection reads as tied "
                "except where the terms cancel: another start does not separate them"
            )
        return f"{said}: {every}, so {every_w} is stationary and no start changes that"
    if _scores_alike(args, data):
        u = "u, u the values" if data.has_values else "x"
        return (
            f"{said}: every query's visible keys score alike (equal v^T {u}) and "
            f"{args.attention}'s weights sum to 1, so the output, hence the loss, is the same "
            f"at {every_w}: {every_w} is stationary and no start changes that"
        )
    if run.K is not None and not np.any(run.K) and not np.any(run.Q):
        return f"{said}: K = Q = 0 of --param KQ, which --init-scale 0.1 avoids"
    w = " (W = 0)" if run.W is not None and not np.any(run.W) else ""
    return f"{said}{w}; start elsewhere (e.g. {_other_start(args)})"


# phrases of the library's stop messages in Python terms (svmgeo.gd._results and the rules'
# own, svmgeo.gd.OPTIMIZERS[...].messages), each in a message of one status and rule; the tests
# produce each by a run (or find it in the library's message) and find no Python term left
_OVERFLOW_REMEDY = "Lower step_size or rescale init"  # gd, sign, steepest, spectral
_ADAM_REMEDY = "Lower step_size, or raise adam_eps or adam_beta2"
_MIRROR_REMEDY = "Lower step_size, use plain steps, or raise the exponent"
_UNDERFLOW_EPS = "with normalize_eps > 0 the step eta ||g|| / (||g|| + eps)"  # gd's underflow
_UNDERFLOW_GOES_ON = "Exactly normalized steps (normalize_eps=0) with log_domain=True go on"
_MIRROR_NORMALIZED = "A normalized step (normalized=True)"  # mirror, plain steps
_MIRROR_INIT = "Start from a smaller init or take a larger step_size"  # mirror, normalized
_MIRROR_SIZE = "(|W|^(p-1), set by the init)"  # the same message


def _stop_in_cli_terms(message: str, args: argparse.Namespace) -> str:
    """A library stop message of ``svmgeo train`` (or of ``verify``'s run, in its tie refusal)
    with its Python terms (``step_size``, ``init``, ``normalize_eps``, ``normalized=True``,
    ``log_domain=True``) in the command line's: ``--step-size``, ``--init-scale`` where the
    run started from random weights (from zero there is nothing to rescale),
    ``--normalize-eps``, ``--plain``, ``--exponent``.
    ``adam_eps`` and ``adam_beta2`` have no option (Python only), ``log_domain`` none either:
    the command line's gradients are always log-domain (train's default). Mirror descent
    starts from W = 0 on the command line, so its remedy "a smaller init" is gone.
    """
    random_start = _init(args) != "zero"
    lower = "Lower --step-size" + (" or --init-scale" if random_start else "")
    plain = "" if getattr(args, "plain", False) else " use plain steps (--plain),"
    for phrase, said in (
        (_OVERFLOW_REMEDY, lower),
        (
            _ADAM_REMEDY,
            f"{lower} (adam_eps and adam_beta2 have no option here: raise them in Python, "
            "svmgeo.train(..., optimizer='adam', adam_eps=..., adam_beta2=...))",
        ),
        (_MIRROR_REMEDY, f"Lower --step-size,{plain} or raise --exponent"),
        (_UNDERFLOW_EPS, "with --normalize-eps EPS above 0 the step eta ||g|| / (||g|| + EPS)"),
        (
            _UNDERFLOW_GOES_ON,
            "Exactly normalized steps (the default: neither --plain nor --normalize-eps above "
            "0; the command line always takes log-domain gradients) go on",
        ),
        (_MIRROR_NORMALIZED, "A normalized step (without --plain)"),
        (_MIRROR_INIT, "Take a larger --step-size"),
        (_MIRROR_SIZE, "(|W|^(p-1))"),
    ):
        message = message.replace(phrase, said)
    return message


def _init(args: argparse.Namespace) -> str | tuple[str, float]:
    """The start (``init``) of the run of ``train`` and ``verify`` as the command line sets it:
    ``--init-scale``, else scale 0.1 where the zero start stalls (``--param KQ``, ``--attention
    relu`` or ``normalized_linear``), else W = 0."""
    zero_stalls = args.param == "KQ" or args.attention in ("relu", "normalized_linear")
    scale = args.init_scale if args.init_scale is not None else (0.1 if zero_stalls else 0.0)
    return ("random", scale) if scale > 0 else "zero"


# keywords of the library functions the commands call -> the command line's options that set
# them, spelled alike (a value of one reads the same on both sides); the generator's only
# when it built the data (with --data, n, T, d and query are the file's)
_KEYWORDS = {
    **{k: f"--{k}" for k in ("seed", "m", "rank", "param", "attention", "loss", "backend")},
    **{k: f"--{k}" for k in ("optimizer", "exponent", "timeout", "workers", "scheduler")},
    "step_size": "--step-size",
    "n_steps": "--steps",
    "normalize_eps": "--normalize-eps",
    "max_selections": "--max-selections",
    "max_lot_selections": "--max-lot-selections",
    "prune_threshold": "--prune-threshold",
}
_GENERATOR_KEYWORDS = {k: f"--{k}" for k in ("n", "T", "d", "query")}
# keywords set by a flag -> (the flag, the keyword's value with the flag)
_FLAGS = {"normalized": ("--plain", False), "train_head": ("--train-head", True)}
# a library keyword with its value (none: "needs exponent=, the p ..."; a tuple, which no
# option takes: "init=('random', 0.1)"), after a verb
_ASSIGNMENT = re.compile(
    r"(?:\b([Uu]se|[Pp]ass|or) )?(?<![\w.-])([A-Za-z_]\w*)=(?!=)"
    r"('[^']*'|\"[^\"]*\"|[-+\w]+(?:\.[-+\w]+)*|\([^()]*\)|(?=[,.;)]|$))"
)


def _in_cli_terms(message: str, args: argparse.Namespace) -> str:
    """A library error in the command line's terms, or as it is where it cannot be said so.

    "The 'query' parameter of random_data must be ..." reads "--query must be ...",
    ``param='KQ'`` reads ``--param KQ``, "Drop m" "Drop --m", ``normalized=False``
    ``--plain``, ``rank=None`` (after "use", "pass" or "or") "drop --rank", for the keywords
    an option of this command sets (:data:`_KEYWORDS`, :data:`_FLAGS`); a call whose arguments
    are all options, ``random_data(--n 5, --T 3, --d 4)``, reads as them. A keyword with a
    value that its option does not take (``param='p'`` where ``--param`` takes W or KQ,
    ``init=('random', 0.1)``), or of no option, leaves the whole message in library terms:
    half of it in each would misread.
    """
    actions = args.parser._option_string_actions
    table = {k: (o, None) for k, o in _KEYWORDS.items()} | {k: f for k, f in _FLAGS.items()}
    if getattr(args, "data", "file") is None:  # the built-in generator made the data
        table |= {k: (o, None) for k, o in _GENERATOR_KEYWORDS.items()}
    options = {k: entry for k, entry in table.items() if entry[0] in actions}

    def assignment(match: re.Match[str]) -> str:
        verb, keyword, value = match[1], match[2], match[3]
        if keyword not in options:
            raise LookupError(keyword)
        option, flag_value = options[keyword]
        action, text = actions[option], value.strip("'\"")
        drop = False
        if action.nargs == 0:  # a flag: the keyword's value with it, or without it
            if text not in ("True", "False"):
                raise LookupError(keyword)
            drop = (text == "True") != flag_value
        elif text == "None" and action.default is None:
            drop = True
        elif value and (text == "None" or not _takes(action, text)):
            raise LookupError(keyword)
        if drop and verb is None:  # "got rank=None" says no verb to drop --rank with
            raise LookupError(keyword)
        said = f"{'drop' if verb[0].islower() else 'Drop'} {option}" if drop else option
        said += f" {text}" if value and action.nargs != 0 and not drop else ""
        return said if verb is None or (drop and verb != "or") else f"{verb} {said}"

    def named(match: re.Match[str]) -> str:
        if match[1] not in options:
            raise LookupError(match[1])
        return options[match[1]][0]

    try:  # all or nothing: a term of no option returns the message as it came
        said = re.sub(r"\bThe '(\w+)' parameter of [\w.]+", named, message)
        message = _ASSIGNMENT.sub(assignment, said)
    except LookupError:
        return message
    if not options:
        return message
    names = "|".join(sorted(map(re.escape, options), key=len, reverse=True))
    message = re.sub(
        rf"\b([Dd]rop) ({names})\b(?!=)", lambda m: f"{m[1]} {options[m[2]][0]}", message
    )
    if "query" in options:  # the option takes all too (the library's message is of an int)
        message = re.sub(r"(--query must be an int in \[[^\]]*\])", r"\1 or all", message)
    return re.sub(r"\b\w+\(((?:--[\w-]+ [^,()]+)(?:, --[\w-]+ [^,()]+)*)\)", r"\1", message)


def _takes(action: argparse.Action, text: str) -> bool:
    """Whether the option of ``action`` takes the value ``text``: its type reads it, and it is
    one of its choices where it has them."""
    try:
        value = action.type(text) if callable(action.type) else text
    except (argparse.ArgumentTypeError, TypeError, ValueError):
        return False
    return action.choices is None or value in action.choices
