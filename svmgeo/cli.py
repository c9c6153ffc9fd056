# SPDX-License-Identifier: BSD-3-Clause
"""The ``svmgeo`` command line.

``svmgeo solve``, ``feasibility``, ``lots``, ``train`` and ``verify`` work on an ``.npz``
dataset (see :func:`svmgeo.save_data`) or on the built-in random generator; ``svmgeo reproduce
NAME [--quick] --out DIR`` runs one of the paper's experiments (``--list`` names them). Output is
a readable summary, or JSON with ``--json`` (non-finite numbers are written as ``null``).

The contract: bad input (an argument, a data file, an output path) exits with status 2 and one
line on stderr, before any computation starts. Heavy modules are imported only when a command
runs, so ``svmgeo --help`` answers at the cost of ``import svmgeo``.
"""

from __future__ import annotations

import argparse
import json
import math
import numbers
import os
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from . import __version__
from ._cli_messages import (
    _FLAGS,
    _KEYWORDS,
    _in_cli_terms,
    _init,
    _stop_message,
    _study_tie_hint,
    _tie_hint,
    _verify_tie_hint,
)
from ._errors import ProblemError, SvmgeoError, TieError
from .gd import ATTENTIONS, BACKENDS, DEFAULT_BACKEND, LOSSES
from .solvers import NORMS

if TYPE_CHECKING:
    import numpy as np

    from .data import TokenData

__all__ = ["add_sweep_arguments", "build_parser", "main", "sweep_options"]

# the built-in generator's defaults (None on the parser: "given" is told apart from "default")
_GENERATOR = {"n": 20, "T": 10, "d": 20, "seed": 0}


class _Parser(argparse.ArgumentParser):
    """argparse with svmgeo's error contract: exit status 2 and one line on stderr.

    A value that starts with a minus sign and a digit is a value, not an option (svmgeo has
    no option spelled so): ``--alpha -1,0,0,0`` read "expected one argument", since argparse
    takes only plain numbers (``-1``, ``-0.5``) for values.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"-\.?\d")  # argparse reads it with match

    def error(self, message: str) -> NoReturn:
        hint = ""
        if message.endswith("expected one argument"):  # perhaps a value that starts with '-'
            option = message.removeprefix("argument ").partition(":")[0].split("/")[-1]
            hint = f"; if the value starts with '-', pass it as {option}=VALUE"
        self.exit(2, f"{self.prog}: error: {_one_line(message)}{hint} (see '{self.prog} --help')\n")


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


# -- argument types (argparse turns ArgumentTypeError into a one-line usage error) ------------
def _integer(low: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}; got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {what}; got {value}")
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


def _real(low: float, strict: bool, what: str, high: float = math.inf) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}; got {text!r}") from None
        if not math.isfinite(value) or not low <= value <= high or (strict and value == low):
            raise argparse.ArgumentTypeError(f"expected {what}; got {text!r}")
        return value

    parse.__name__ = what
    return parse


_positive = _integer(1, "an integer >= 1")
# the most steps --steps takes: 10^8 steps of the default sizes take ~3 h (about 1e-4 s a
# step on 2 cores, over 20,000 steps, ad hoc in session 57), and Ctrl-C waits for a
# recording chunk of steps/100 in the compiled kernels; longer runs go through Python
_MAX_STEPS = 10**8
_STEPS_RANGE = f"an integer from 1 to {_MAX_STEPS} (10^8)"
_steps_from_1 = _integer(1, _STEPS_RANGE)


def _steps(text: str) -> int:
    """``--steps``: an integer in [1, :data:`_MAX_STEPS`] (10^14 was taken, a run of years)."""
    value = _steps_from_1(text)
    if value > _MAX_STEPS:
        raise argparse.ArgumentTypeError(
            f"expected {_STEPS_RANGE}, which already take hours at the default sizes; got "
            f"{value}. For a longer run call svmgeo.train or svmgeo.verify with n_steps=N in "
            "Python"
        )
    return value


_steps.__name__ = _STEPS_RANGE
_nonnegative = _integer(0, "an integer >= 0")
_step = _real(0.0, True, "a finite number > 0")
_scale = _real(0.0, False, "a finite number >= 0")
_exponent = _real(1.0, True, "a finite number > 1")
_fraction = _real(0.0, False, "a number in [0, 1]", high=1.0)
_seconds = _real(0.0, True, "a finite number of seconds > 0")


def _path(text: str) -> str:
    """A file or directory name: not empty (``--save ''`` wrote a hidden ``.npz``, and
    ``--figure ''`` was dropped without a word)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a file name; got {text!r}")
    return text


_path.__name__ = "file name"


def _query(text: str) -> int | str:
    if text == "all":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a token position (an integer) or 'all'; got {text!r}"
        ) from None


# -- data, selection and output paths ------------------------------------------------------
def _load(args: argparse.Namespace) -> TokenData:
    """The dataset of a command: ``--data FILE`` or the built-in generator."""
    from .data import load_data, random_data

    given = [f"--{k}" for k in ("n", "T", "d", "query") if getattr(args, k) is not None]
    given += ["--causal"] if args.causal else []
    if args.data is not None:
        if args.seed is not None and not args.seeds_gd:
            given.append("--seed")
        if given:
            raise ProblemError(
                f"{', '.join(given)} set up the built-in generator and cannot be combined with "
                f"--data {args.data}: the file holds the data. Drop {', '.join(given)}."
            )
        return load_data(args.data)
    if args.causal and args.query != "all":
        raise ProblemError("--causal needs --query all (one query per token, K = T).")
    n, T, d, seed = (
        _GENERATOR[k] if getattr(args, k) is None else getattr(args, k)
        for k in ("n", "T", "d", "seed")
    )
    return random_data(n, T, d, seed=seed, query=args.query, mask="causal" if args.causal else None)


def _selection(args: argparse.Namespace, data: TokenData) -> np.ndarray:
    """``--alpha`` as a selection of shape ``data.selection_shape`` (default: optimal tokens).

    One token index per sequence, comma-separated; with K queries per sequence, K indices per
    sequence, the sequences separated by ``;`` (or all n*K indices, sequence by sequence).
    """
    import numpy as np

    from .selection import check_selection, optimal_tokens

    text = args.alpha
    if text is None:
        try:
            return optimal_tokens(data)
        except TieError as exc:  # its hint names Python calls (optimal_tokens, alpha=)
            raise ProblemError(_tie_hint(args, data, exc)) from None
    n, K = data.n, data.K
    form = (
        f"{n} token indices, one per sequence (e.g. --alpha {','.join(['0'] * min(n, 4))}"
        f"{',...' if n > 4 else ''})"
        if data.single_query
        else f"{K} token indices per query of each of the {n} sequences, the sequences "
        "separated by ';' (e.g. --alpha '0,1;0,2;...')"
    )
    if not text.strip():
        raise ProblemError(f"--alpha is empty; give {form}.")
    groups = [g.split(",") for g in text.split(";")]
    values: list[int] = []
    for group in groups:
        for item in (t.strip() for t in group):
            if not item:
                raise ProblemError(
                    f"--alpha {text!r} has an empty entry (a leading, trailing or doubled "
                    f"comma?); give {form}."
                )
            try:
                values.append(int(item))
            except ValueError:
                raise ProblemError(
                    f"--alpha {text!r}: {item!r} is not a token index (an integer); give {form}."
                ) from None
    if len(groups) > 1 and (len(groups) != n or any(len(g) != K for g in groups)):
        raise ProblemError(
            f"--alpha {text!r} has {len(groups)} ';'-separated groups of sizes "
            f"{[len(g) for g in groups]}; give {form}."
        )
    if len(values) != n * K:
        raise ProblemError(f"--alpha {text!r} has {len(values)} entries; give {form}.")
    far = [v for v in values if abs(v) >= 2**63]  # beyond int64; check_selection the rest
    if far:
        raise ProblemError(f"--alpha must hold token indices in [0, {data.T - 1}]; got {far[0]}.")
    alpha = np.array(values, dtype=np.int64).reshape(data.selection_shape)
    check_selection(data, alpha, name="--alpha")
    return alpha


def _check_output(path: str, option: str) -> str:
    """Fail now, before any computation, when ``path`` cannot be written."""
    full = os.path.abspath(path)
    parent = os.path.dirname(full)
    where = f"{option} {path}"
    if os.path.isdir(full):
        raise ProblemError(f"{where}: is a directory; give a file name.")
    if not os.path.exists(parent):
        raise ProblemError(f"{where}: the directory {parent} does not exist; create it first.")
    if not os.path.isdir(parent):
        raise ProblemError(f"{where}: {parent} is a file, not a directory.")
    try:
        tempfile.TemporaryFile(dir=parent).close()
        if os.path.exists(full) and not os.access(full, os.W_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise ProblemError(
            f"{where}: cannot write there ({exc.strerror or exc}); choose a writable place."
        ) from exc
    return full


def _check_figure(path: str) -> None:
    """A writable path whose extension matplotlib can write."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise ProblemError(
            "--figure needs matplotlib, which is not installed: pip install 'svmgeo[plot]'."
        ) from None
    _check_output(path, "--figure")
    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    if ext not in formats:
        raise ProblemError(
            f"--figure {path}: unknown figure format {ext or '(no extension)'!r}; end the name "
            f"in one of {', '.join('.' + f for f in formats)}."
        )


def _save_path(path: str) -> str:
    """``--save``'s file as numpy writes it (``.npz`` appended when missing), checked."""
    if os.path.isdir(path):
        raise ProblemError(f"--save {path}: is a directory; give a file name.")
    return _check_output(path if path.endswith(".npz") else f"{path}.npz", "--save")


# -- commands --------------------------------------------------------------------------------
def _cmd_solve(args: argparse.Namespace) -> int:
    import numpy as np

    from ._linalg import numerical_rank
    from .analysis import support_from_result
    from .solvers import att_svm, parse_norm

    if args.rank is not None and not parse_norm(args.norm, "--norm")[0].rank_bound:
        raise ProblemError("--rank bounds the rank of Att-SVM* and needs --norm nuc.")
    save = None if args.save is None else _save_path(args.save)  # checked before solving
    data = _load(args)
    own = args.attention != "softmax"
    if own and args.alpha is not None:
        raise ProblemError(
            f"--alpha selects softmax's tokens; --attention {args.attention} has its own SVM "
            "with no selection. Drop --alpha."
        )
    if own and args.param != "W":
        raise ProblemError(
            f"--param {args.param} is prompt attention's (softmax); --attention {args.attention} "
            "has its own SVM in W. Drop --param."
        )
    alpha = None if own else _selection(args, data)
    res = att_svm(
        data, alpha, param=args.param, norm=args.norm, rank=args.rank, attention=args.attention
    )
    W = res.W
    p_norm = res.extras.get("p")  # the exponent of an l_p solve ("inf": JSON has no infinity)
    summary: dict[str, Any] = {
        "data": repr(data),
        "param": args.param,
        **({"attention": args.attention} if own else {}),
        "norm": res.norm,
        "norm_p": p_norm if p_norm is None or math.isfinite(p_norm) else "inf",
        "rank_bound": res.rank,
        "status": str(res.status),
        "message": res.message,
        "objective": res.objective,
        "solver": res.solver,
        "solve_time_s": res.solve_time,
    }
    if W is not None:
        summary["numerical_rank"] = numerical_rank(W, rtol=1e-6)
        margins = res.margins
        summary["min_margin"] = (
            float(margins.min()) if margins is not None and margins.size else None
        )
        dual = res.dual
        if dual is not None:
            summary["support_rows"] = (
                int(np.count_nonzero(dual > 1e-9 * max(1.0, float(dual.max())))) if dual.size else 0
            )
    if res.certificate is not None:
        summary["certificate"] = {
            "primal_infeasibility": res.certificate.primal_infeasibility,
            "dual_infeasibility": res.certificate.dual_infeasibility,
            "stationarity": res.certificate.stationarity,
            "complementarity": res.certificate.complementarity,
            "duality_gap": res.certificate.duality_gap,
            "passed": res.certificate.passed,
        }
    if W is not None and not own:  # support tokens by support_tokens' own rule
        a = np.asarray(alpha).reshape(data.n, data.K)
        sup = support_from_result(data, a, res, warn=False)
        mask = np.asarray(sup.mask).reshape(data.n, data.K, data.T)
        summary["support_tokens"] = [
            {"sequence": int(i), "query": int(k), "token": int(t)}
            for i, k, t in zip(*np.nonzero(mask), strict=True)
        ]
    if args.json:
        summary["alpha"] = np.asarray(alpha).tolist()
        summary["W"] = None if W is None else W.tolist()
        if args.param == "p":
            summary["p"] = None if res.p is None else res.p.tolist()
        summary["dual"] = None if res.dual is None else res.dual.tolist()
        summary["farkas"] = None if res.farkas is None else res.farkas.tolist()
    if save is not None:
        arrays = {"status": np.array(str(res.status))}
        if alpha is not None:
            arrays["alpha"] = np.asarray(alpha)
        for name in ("W", "p", "dual", "margins", "farkas", "K", "Q"):
            value = getattr(res, name, None)
            if value is not None:
                arrays[name] = np.asarray(value)
        np.savez(save, **arrays)  # type: ignore[arg-type]  # plain arrays: no pickle needed
        summary["saved"] = save
    _emit(summary, args.json)
    return 0 if res.status.has_solution or res.status.is_infeasible else 1


def _cmd_support(args: argparse.Namespace) -> int:
    import numpy as np

    from .analysis import is_locally_optimal

    data = _load(args)
    alpha = _selection(args, data)
    lot = is_locally_optimal(data, alpha, norm=args.norm)
    sup = lot.support
    summary: dict[str, Any] = {
        "data": repr(data),
        "alpha": np.asarray(alpha).tolist(),
        "feasible": sup.feasible,
        "locally_optimal": lot.locally_optimal,
        "decided": lot.decided,
        "reason": lot.reason,
        "svm_status": str(sup.svm.status),
    }
    if sup.mask is not None:
        mask = np.asarray(sup.mask).reshape(data.n, data.K, data.T)
        summary["support_tokens"] = [
            {"sequence": i, "query": k, "tokens": np.flatnonzero(mask[i, k]).tolist()}
            for i in range(data.n)
            for k in range(data.K)
        ]
    summary["violations"] = [
        {"sequence": v.seq, "query": v.query, "token": v.token} for v in lot.violations
    ]
    _emit(summary, args.json)
    return 0


def _read_weights(name: str) -> dict[str, Any]:
    """``study --weights FILE``: W, or K and Q, from an .npz archive (``.npz`` may be left out,
    as for datasets); a file with W, K and Q (as ``svmgeo train --param KQ --save`` writes it)
    gives K and Q when W = K Q^T up to rounding."""

    from ._validation import npz_entry, npz_path, open_npz

    save = " Save the trained weights with numpy.savez(path, W=W) (or K=K, Q=Q)."
    loaded = open_npz(npz_path(name), f"--weights {name}", "an .npz archive of named arrays", save)
    weights: dict[str, Any] = {}
    with loaded as f:
        for key in ("W", "K", "Q"):
            if key in f.files:
                weights[key] = npz_entry(f, key, f"--weights {name}", save)
    if not weights:
        raise ProblemError(f"--weights {name} holds none of the arrays W, K, Q.{save}")
    if len(weights) == 3:
        return _factors(name, **weights)
    if "W" in weights and len(weights) > 1:  # as study(W=..., K=...) refuses it
        both = ", ".join(sorted(weights))
        raise ProblemError(
            f"--weights {name} holds {both}: give either W or both K and Q "
            "(W = K Q^T), not both; save one of them (numpy.savez(path, W=W))."
        )
    return weights


def _factors(name: str, W: np.ndarray, K: np.ndarray, Q: np.ndarray) -> dict[str, Any]:
    """K and Q of a ``--weights`` file that also holds W, when W = K Q^T up to rounding."""
    import numpy as np

    def real(a: np.ndarray) -> bool:
        return a.ndim == 2 and np.issubdtype(a.dtype, np.number) and not np.iscomplexobj(a)

    if (
        not (real(W) and real(K) and real(Q))
        or W.shape != (len(K), len(Q))
        or K.shape[1:] != Q.shape[1:]
    ):
        why = (
            f"W ({W.dtype}, shape {W.shape}), K ({K.dtype}, shape {K.shape}) and Q ({Q.dtype}, "
            f"shape {Q.shape}) do not fit W = K Q^T (real arrays of shapes (d, d), (d, m), (d, m))"
        )
    else:
        Wf, Kf, Qf = (a.astype(float) for a in (W, K, Q))
        # Both W and K Q^T are sums of m products, rounded: each is within gamma_m |K| |Q|^T
        # of the exact K Q^T, gamma_m ~ m u = m eps / 2 (Higham, Accuracy and Stability, 3.5),
        # so they differ by at most m eps |K| |Q|^T; storing W, K or Q in a lower precision adds
        # a few of that precision's eps. 2 (m + 2) eps bounds rounding with room to spare and
        # is elementwise, hence scale-free (exact zeros must agree exactly).
        eps = max(np.finfo(a.dtype if a.dtype.kind == "f" else float).eps for a in (W, K, Q))
        with np.errstate(all="ignore"):
            gap = np.abs(Wf - Kf @ Qf.T)
            allowed = 2 * (K.shape[1] + 2) * eps * (np.abs(Kf) @ np.abs(Qf).T)
        if not np.all(np.isfinite(gap)):
            why = "W or K Q^T has NaN or infinite entries"
        elif np.all(gap <= allowed):
            return {"K": K, "Q": Q}
        else:
            worst = np.unravel_index(int(np.argmax(gap - allowed)), gap.shape)
            why = (
                f"W differs from K Q^T by {float(gap[worst]):.3g} at {tuple(map(int, worst))}, "
                f"beyond rounding ({float(allowed[worst]):.3g})"
            )
    raise ProblemError(
        f"--weights {name} holds K, Q, W: give either W or both K and Q, or all three with "
        f"W = K Q^T (as svmgeo train --param KQ --save writes them); here {why}. Save one of "
        "them: numpy.savez(path, W=W) or numpy.savez(path, K=K, Q=Q)."
    )


def _cmd_study(args: argparse.Namespace) -> int:
    from .data import load_data
    from .study import study

    report = os.path.join(args.out, "study.md")
    if os.path.isdir(args.out):
        _check_output(report, "--out")
    elif os.path.exists(args.out):
        raise ProblemError(f"--out {args.out}: is a file; give a directory for the report.")
    else:  # a writable parent; the directory is created once the inputs have passed
        _check_output(args.out, "--out")
    data = load_data(args.dataset)
    weights = {} if args.weights is None else _read_weights(args.weights)
    rep = study(  # checks the data, the weights and the options before any computation
        data,
        max_lot_selections=args.max_lot_selections,
        prune_threshold=args.prune_threshold,
        progress=not args.no_progress,
        **weights,
    )
    rep = _study_tie_hint(args, data, rep)
    os.makedirs(args.out, exist_ok=True)  # a missing report directory is created
    rep.to_markdown(report)
    paths = [report, str(rep.to_json(os.path.join(args.out, "study.json")))]
    try:
        paths += [str(p) for p in rep.figures(args.out)]
    except SvmgeoError as exc:  # matplotlib missing: the report stands without figures
        print(f"svmgeo: figures skipped: {exc}", file=sys.stderr)
    if args.json:
        print(json.dumps(_plain(rep.to_dict()), indent=2, allow_nan=False))
    else:
        print(rep.summary())
        print("wrote " + ", ".join(paths))
    return 0


def _cmd_feasibility(args: argparse.Namespace) -> int:
    import numpy as np

    from .solvers import feasibility

    data = _load(args)
    res = feasibility(data, _selection(args, data))
    decided = res.verdict is not None  # undecided: null, and exit 1
    summary: dict[str, Any] = {
        "data": repr(data),
        "feasible": res.verdict,
        "status": str(res.status),
        "message": res.message,
    }
    if res.farkas is not None and decided:
        lam = res.farkas
        summary["certificate_rows"] = [
            {
                "sequence": int(res.constraints.seq[j]),
                "query": int(res.constraints.query[j]),
                "selected": int(res.constraints.pref[j]),
                "competing": int(res.constraints.comp[j]),
                "weight": float(lam[j]),
            }
            for j in np.flatnonzero(np.abs(lam) > 1e-12)
        ]
    _emit(summary, args.json)
    return 0 if decided else 1


def _cmd_lots(args: argparse.Namespace) -> int:
    import numpy as np

    from .analysis import locally_optimal_selections
    from .selection import optimal_token_sets, selection_space

    data = _load(args)
    total = selection_space(data)
    if total > args.max_selections:  # the library's own check names its keyword
        raise ProblemError(
            f"this dataset has {total} selections (one visible token per query), above "
            f"--max-selections {args.max_selections}. Pass --max-selections {total} to run it "
            "anyway (up to that many SVM solves), or reduce --n, --T or the queries."
        )
    res = locally_optimal_selections(
        data, norm=args.norm, max_selections=args.max_selections, progress=not args.json
    )
    best = optimal_token_sets(data).reshape(data.n, data.K, data.T)  # every tied maximizer

    def optimal(a: np.ndarray) -> bool:
        """Whether every query of selection ``a`` selects a maximal score (ties included)."""
        chosen = np.take_along_axis(best, np.reshape(a, (data.n, data.K, 1)), axis=2)
        return bool(np.all(chosen))

    summary: dict[str, Any] = {
        "data": repr(data),
        "selections_total": res.total,
        "examined": res.examined,
        "pruned": res.pruned,
        "infeasible": res.infeasible,
        "undecided": res.undecided,
        "n_lots": len(res.selections),
        "undecided_selections": [
            {"selection": ",".join(str(int(t)) for t in np.ravel(r.alpha)), "reason": r.reason}
            for r in res.undecided_results
        ],
        "optimal_ties": bool(np.any(best.sum(axis=2) > 1)),
        "lots": [
            {
                "selection": ",".join(str(int(t)) for t in np.ravel(a)),
                "optimal": optimal(a),
            }
            for a in res.selections
        ],
    }
    _emit(summary, args.json)
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    import numpy as np

    from ._linalg import frobenius_norm as norm
    from .gd import OPTIMIZERS, train
    from .selection import first_five, largest_logits

    rule = args.optimizer if isinstance(args.optimizer, str) else args.optimizer[0]
    _check_optimizer_flags(args, rule, OPTIMIZERS[rule].options)
    save = _save_path(args.save) if args.save else None
    data = _load(args)
    options = _gd_options(args)
    if args.optimizer != "gd":
        options["backend"] = args.backend  # None: the optimizer's own default (OPTIMIZERS)
    takes_seed = "seed" in OPTIMIZERS[rule].options
    if options["init"] == "zero" or (args.seed is None and not takes_seed):
        # --seed seeds the data generator too; train's seed only a random start
        del options["seed"]
    run = train(
        data,
        optimizer=args.optimizer,
        exponent=args.exponent,
        normalized=not args.plain,
        train_head=args.train_head,
        normalize_eps=args.normalize_eps,
        **options,
    )
    name, weights = ("W", run.W) if run.W is not None else ("p", run.p)
    assert weights is not None  # train sets W, or p for --param p
    trained: dict[str, Any] = {name: weights} | ({} if run.v is None else {"v": run.v})
    summary: dict[str, Any] = {
        "data": repr(data),
        "param": args.param,
        "status": str(run.status),
        "message": _stop_message(args, data, run),
        "steps": run.n_steps,
        "solve_time_s": run.solve_time,
        f"norm_{name}": norm(weights),
    }
    if run.v is not None:
        summary["norm_v"] = norm(run.v)
    if run.history.loss is not None:
        summary["final_loss"] = float(run.history.loss[-1])
    # the final selection by the library's rule, from the final W (or p) of every optimizer
    # (the run's history records an argmax of GD's only)
    alpha, tied, non_finite = largest_logits(data, weights)
    no_one = None if args.json else "none"  # the summary: "none", not Python's None
    summary["selection"] = no_one if alpha is None else ",".join(map(str, np.ravel(alpha)))
    for key, queries in (("tied", tied), ("non_finite", non_finite)):
        if queries:  # JSON: every query; the summary: the first five, and how many more
            summary[key] = queries if args.json else first_five(queries)
    if save is not None:
        factors: dict[str, Any] = {} if run.K is None or run.Q is None else {"K": run.K, "Q": run.Q}
        np.savez(save, **trained, **factors)
        summary["saved"] = save
    _emit(summary, args.json)
    return 0


def _check_optimizer_flags(args: argparse.Namespace, rule: str, takes: tuple[str, ...]) -> None:
    """Refuse, in the command line's spelling, the flags of ``svmgeo train`` that the rule
    ``--optimizer`` names does not take (``takes``: its options in :data:`svmgeo.gd.OPTIMIZERS`).

    A flag is given when its value is not the parser's default; it stands for the keyword of
    ``train`` that :data:`_KEYWORDS` and :data:`_FLAGS` map to it (:data:`_RULE_KEYWORDS`
    names those some rule does not take). ``--init-scale`` above 0 starts from seeded random
    weights, so it needs a rule that takes ``seed``.
    """
    actions = args.parser._option_string_actions
    options = _KEYWORDS | {k: flag for k, (flag, _) in _FLAGS.items()}
    foreign = []
    for keyword in _RULE_KEYWORDS:
        action = actions[options[keyword]]
        if keyword not in takes and getattr(args, action.dest) != action.default:
            foreign.append(options[keyword])
    if args.init_scale and "seed" not in takes:
        foreign.append("--init-scale")
    if foreign:
        spelled = rule if isinstance(args.optimizer, str) else f"{rule}:{args.optimizer[1]:g}"
        raise ProblemError(
            f"--optimizer {spelled} does not take {', '.join(foreign)}; drop "
            f"{'it' if len(foreign) == 1 else 'them'} (see --optimizer in svmgeo train --help)."
        )


def _cmd_verify(args: argparse.Namespace) -> int:
    from .verify import verify

    if args.figure:
        _check_figure(args.figure)
    data = _load(args)
    try:
        report = verify(data, **_gd_options(args))
    except TieError as exc:  # its hint names Python keywords (init=) and functions
        raise ProblemError(_verify_tie_hint(args, data, exc)) from None
    if args.json:
        print(report.to_json())
    else:
        print(report)
    if args.figure:
        from .plot import plot_verify

        path = plot_verify(report, args.figure)
        if not args.json:
            print(f"figure written to {path}")
    return 0


def _gd_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options that ``train`` and ``verify`` share, from the command line."""
    return {
        "attention": args.attention,
        "param": args.param,
        "m": args.m,
        "loss": args.loss,
        "step_size": args.step_size,
        "n_steps": args.steps,
        "init": _init(args),
        "backend": DEFAULT_BACKEND if args.backend is None else args.backend,
        "seed": _GENERATOR["seed"] if args.seed is None else args.seed,
    }


def add_sweep_arguments(
    parser: argparse.ArgumentParser,
    *,
    default_out: str | None = None,
    out_help: str = "results CSV (appended; resumable)",
    retry_errors: bool = True,
    timeout: bool = True,
) -> None:
    """Add the sweep options (``--out``, ``--workers``, ``--scheduler``, ...) to a parser.

    Pair with :func:`sweep_options`, which turns the parsed namespace into keyword arguments
    of :func:`svmgeo.sweep`. ``retry_errors=False`` leaves out ``--retry-errors``,
    ``timeout=False`` leaves out ``--timeout``.
    """
    g = parser.add_argument_group("sweep execution")
    g.add_argument("--out", type=_path, default=default_out, help=out_help)
    g.add_argument(
        "--workers",
        type=_nonnegative,
        default=None,
        help="local worker processes (default: all cores; 0: in this process)",
    )
    g.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run on a Dask cluster, e.g. tcp://10.0.0.5:8786 (see docs/sweeps.md)",
    )
    g.add_argument("--no-resume", action="store_true", help="recompute trials already in the table")
    if retry_errors:
        g.add_argument(
            "--retry-errors", action="store_true", help="rerun trials stored as errors or timeouts"
        )
    if timeout:
        g.add_argument(
            "--timeout",
            type=_seconds,
            default=None,
            metavar="SECONDS",
            help="stop a trial running longer and record it as status 'timeout' (local worker "
            "processes only; default: no limit)",
        )
    g.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def sweep_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of :func:`svmgeo.sweep` from options added by :func:`add_sweep_arguments`."""
    if args.workers is not None and args.scheduler is not None:
        raise ProblemError(
            "Give --workers (local processes) or --scheduler (a Dask cluster), not both; a "
            "cluster's workers are started with `dask worker`."
        )
    return {
        "out": args.out,
        "workers": args.workers,
        "scheduler": args.scheduler,
        "resume": not args.no_resume,
        "retry_errors": getattr(args, "retry_errors", False),
        "timeout": getattr(args, "timeout", None),
        "progress": not args.no_progress,
    }


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .experiments import SweepError, list_experiments, reproduce

    names = list_experiments()
    if args.list:
        if args.name is not None:
            print(
                f"svmgeo reproduce: --list takes no experiment name; got {args.name!r}",
                file=sys.stderr,
            )
            return 2
        print("\n".join(names))
        return 0
    if args.name is None:
        print(
            "svmgeo reproduce: give an experiment name or --list: " + ", ".join(names),
            file=sys.stderr,
        )
        return 2
    if args.name not in names:
        print(
            f"svmgeo reproduce: unknown experiment {args.name!r}; choose one of: "
            + ", ".join(names),
            file=sys.stderr,
        )
        return 2
    options = sweep_options(args)
    del options["retry_errors"]  # not an option of reproduce
    try:
        result = reproduce(args.name, quick=args.quick, **options)
    except SweepError as exc:  # the trials ran and none finished (or a worker died)
        print(f"svmgeo reproduce: {_one_line(_in_cli_terms(str(exc), args))}", file=sys.stderr)
        return 1
    print(result)
    return 1 if result.n_errors else 0


def _cmd_atlas(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .atlas import ATLAS_TOLERANCE, atlas_markdown, page_differences

    if args.write is not None:
        _check_output(args.write, "--write")  # before the runs, not after
    page = atlas_markdown()
    if args.check is not None:
        path = Path(args.check)
        current = path.read_text() if path.is_file() else None
        diffs = page_differences(current, page) if current is not None else []
        if current is None or diffs:
            why = "missing" if current is None else "not what generation gives now"
            for line, was, now in diffs:
                print(
                    f"  line {line}:\n    committed: {was}\n    generated: {now}", file=sys.stderr
                )
            print(f"svmgeo atlas --check: {path} is {why} (correlations compared to "
                  f"±{ATLAS_TOLERANCE}); run 'svmgeo atlas --write {path}' and commit it",
                  file=sys.stderr)  # fmt: skip
            return 1
        same = "identical" if current == page else f"equal to ±{ATLAS_TOLERANCE}"
        print(f"svmgeo atlas --check: {path} is current ({same})")
        return 0
    if args.write is not None:
        Path(args.write).write_text(page)
        print(f"wrote {args.write}")
        return 0
    print(page, end="")
    return 0


def _plain(value: Any) -> Any:
    """JSON-safe: numpy scalars to Python, non-finite floats to None (valid JSON, no NaN)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    if isinstance(value, bool) or value is None or isinstance(value, (str, numbers.Integral)):
        return value
    if isinstance(value, numbers.Real):
        x = float(value)
        return x if math.isfinite(x) else None
    return str(value)


def _emit(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(_plain(summary), indent=2, allow_nan=False))
        return
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        if isinstance(value, dict):
            print(f"{key}:")
            for k2, v2 in value.items():
                print(
                    f"  {k2:<{width}} {v2:.3g}"
                    if isinstance(v2, float)
                    else f"  {k2:<{width}} {v2}"
                )
        elif isinstance(value, list) and not all(isinstance(v, dict) for v in value):
            print(f"{key:<{width}} {value}")
        elif isinstance(value, list):
            print(f"{key}: {len(value)} rows")
            for row in value[:10]:
                print(
                    "  "
                    + ", ".join(
                        f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in row.items()
                    )
                )
        elif isinstance(value, float):
            print(f"{key:<{width}} {value:.6g}")
        else:
            print(f"{key:<{width}} {value}")


_JSON_HELP = "print JSON instead of a summary (non-finite numbers are written as null)"


def _add_data_arguments(p: argparse.ArgumentParser, *, selection: bool, gd: bool) -> None:
    g = p.add_argument_group(
        "data (an .npz file written by TokenData.save, or the built-in random generator)"
    )
    g.add_argument(
        "--data",
        type=_path,
        metavar="FILE",
        help="dataset file (.npz, which may be left out of the name)",
    )
    g.add_argument("--n", type=_positive, help="generator: sequences (default 20)")
    g.add_argument("--T", type=_positive, help="generator: tokens per sequence (default 10)")
    g.add_argument("--d", type=_positive, help="generator: feature dimension (default 20)")
    g.add_argument(
        "--seed",
        type=_nonnegative,
        help="generator seed (default 0)"
        + ("; also seeds the random GD start, and with --data only that" if gd else ""),
    )
    g.add_argument(
        "--query",
        type=_query,
        metavar="Q|all",
        help="generator: self-attention with token Q as the query, or 'all' for one query per "
        "token (default: cross-attention with random queries)",
    )
    g.add_argument(
        "--causal", action="store_true", help="generator: causal mask (needs --query all)"
    )
    p.set_defaults(seeds_gd=gd)
    if selection:
        p.add_argument(
            "--alpha",
            metavar="SELECTION",
            help="the token selection (default: the optimal tokens): one token index per "
            "sequence, comma-separated ('0,3,1,...'); with K queries per sequence (--query all, "
            "or data with Z of shape (n, K, d)) K indices per sequence, sequences separated by "
            "';' ('0,0,1;0,1,1;...', quoted in the shell)",
        )
    p.add_argument("--json", action="store_true", help=_JSON_HELP)


def _add_train_arguments(p: argparse.ArgumentParser, params: tuple[str, ...] = ("W", "KQ")) -> None:
    g = p.add_argument_group("gradient descent")
    g.add_argument(
        "--param",
        choices=params,
        default="W",
        help="train W, or the factors K, Q with W = K Q^T"
        + (", or the prompt vector p (key scores x^T p; queries unused)" if "p" in params else "")
        + " (default W)",
    )
    g.add_argument("--m", type=_positive, help="width of K and Q (default d)")
    g.add_argument(
        "--loss",
        choices=LOSSES,
        default=LOSSES[0],
        help="loss l(u): log(1 + e^-u), e^-u or -u (default logistic)",
    )
    g.add_argument("--step-size", type=_step, default=0.1, help="step size eta > 0 (default 0.1)")
    g.add_argument(
        "--steps",
        type=_steps,
        default=2000,
        help=f"number of GD steps, at most {_MAX_STEPS} (default 2000)",
    )
    g.add_argument(
        "--attention",
        choices=ATTENTIONS,
        default="softmax",
        help="attention map phi in h(X^T phi(X W z)) (docs/attention-maps.md); relu and "
        "normalized_linear start from --init-scale 0.1 unless given (default softmax)",
    )
    g.add_argument(
        "--backend",
        choices=BACKENDS,
        default=None,
        help=f"compiled CPU kernels, the numpy reference, or CuPy on a GPU (default "
        f"{DEFAULT_BACKEND})",
    )
    g.add_argument(
        "--init-scale",
        type=_scale,
        default=None,
        help="start from seeded random weights N(0, scale^2); 0 starts from zero (default: W = 0 "
        "for --param W, scale 0.1 for --param KQ and for --attention relu or normalized_linear, "
        "whose zero start is stationary or undefined)",
    )


def _norm_value(text: str) -> str | tuple[str, float]:
    """``--norm``: a spelling of the table of norms (``fro``, ``nuc``, ``lp:1.5``)."""
    from .solvers import parse_norm

    try:
        entry, parameter = parse_norm(text, "--norm")
    except ProblemError:
        choices = ", ".join(e.spelling for e in NORMS.values())
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {choices}, with P >= 1, e.g. lp:1.5)"
        ) from None
    return entry.name if parameter is None else (entry.name, parameter)


def _optimizer_value(text: str) -> str | tuple[str, float]:
    """``--optimizer``: a name of the optimizer table, or ``steepest:Q`` (as ``--norm lp:1.5``)."""
    from .gd import OPTIMIZERS, parse_optimizer

    try:
        return parse_optimizer(text)
    except ProblemError:
        choices = ", ".join(n if n != "steepest" else "steepest:Q" for n in OPTIMIZERS)
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {choices}, with 1 <= Q <= inf, e.g. "
            "steepest:1.5)"
        ) from None


def _add_norm_argument(
    p: argparse.ArgumentParser, what: str, *, parameterised: bool = False, lot: bool = False
) -> None:
    """``--norm`` from the table of norms (:data:`svmgeo.solvers.NORMS`); ``parameterised``:
    with the entries that take a parameter (``lp:P``); ``lot``: only the norms whose SVMs
    decide local optimality."""
    entries = [
        e for e in NORMS.values() if (parameterised or e.parameter is None) and (e.lot or not lot)
    ]
    if parameterised:
        spellings = ", ".join(e.spelling for e in entries)
        p.add_argument(
            "--norm",
            type=_norm_value,
            default="fro",
            metavar="NORM",
            help=f"{what}: one of {spellings} (P >= 1, e.g. lp:1.5) (default fro)",
        )
    else:
        p.add_argument(
            "--norm",
            choices=tuple(e.spelling for e in entries),
            default="fro",
            help=f"{what} (default fro)",
        )


def _add_command(
    sub: Any, name: str, summary: str, example: str, func: Callable[[argparse.Namespace], int]
) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=summary[0].upper() + summary[1:] + ".",
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=func, prog=p.prog, parser=p)  # parser: _in_cli_terms reads its options
    return p


def build_parser() -> argparse.ArgumentParser:
    """The ``svmgeo`` argument parser (one subcommand per task)."""
    parser = _Parser(
        prog="svmgeo",
        description="Optimization geometry of attention: Att-SVM solvers with certificates, "
        "token-selection analysis and gradient descent. Bad input exits with status 2 and "
        "one line on stderr.",
        epilog="example:\n  svmgeo verify --n 6 --T 8 --d 10 --seed 2 --figure verify.png\n\n"
        "'svmgeo COMMAND --help' describes each command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"svmgeo {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = _add_command(
        sub,
        "solve",
        "solve Att-SVM (Frobenius), Att-SVM* (nuclear), the l_p or the spectral Att-SVM with "
        "svmgeo's certificate",
        "svmgeo solve --n 20 --T 10 --d 20 --seed 0 --norm nuc --json",
        _cmd_solve,
    )
    _add_data_arguments(p, selection=True, gd=False)
    _add_norm_argument(
        p,
        "Frobenius (Att-SVM), nuclear (Att-SVM*), entrywise l_p (the l_p Att-SVM) or spectral "
        "norm (the spectral Att-SVM)",
        parameterised=True,
    )
    p.add_argument("--rank", type=_positive, help="rank bound m of Att-SVM* (needs --norm nuc)")
    p.add_argument(
        "--attention",
        choices=("softmax", "linear", "sigmoid"),
        default="softmax",
        help="the SVM of another attention map: linear, one row per sequence "
        "(sum_t gamma_t x_t)^T W z >= 1; sigmoid, rows sign(gamma_t) x_t^T W z >= 1 (no --alpha; "
        "ReLU needs a trained W: sg.att_svm(data, attention='relu', pattern=run)) "
        "(default softmax)",
    )
    p.add_argument(
        "--param",
        choices=("W", "p"),
        default="W",
        help="W: Att-SVM with the data's queries; p: the p-SVM of prompt attention, scores "
        "x.p (W = p e1^T; docs/companion.md) (default W)",
    )
    p.add_argument(
        "--save",
        type=_path,
        metavar="FILE",
        help="write W (and p), dual, margins, Farkas vector (if infeasible), alpha and status to "
        "an .npz "
        "file (checked before solving)",
    )
    p = _add_command(
        sub,
        "support",
        "support tokens of a selection's Att-SVM and its locally-optimal (LOT) verdict",
        "svmgeo support --n 4 --T 3 --d 6 --seed 0 --alpha 0,2,1,0",
        _cmd_support,
    )
    _add_data_arguments(p, selection=True, gd=False)
    _add_norm_argument(p, "norm of the SVM: Frobenius (Att-SVM) or nuclear (Att-SVM*)", lot=True)
    p = _add_command(
        sub,
        "study",
        "feasibility study of a dataset (and trained weights): markdown, JSON and figures",
        "svmgeo study data.npz --weights trained.npz --out study/",
        _cmd_study,
    )
    p.add_argument(
        "dataset", type=_path, metavar="DATA", help="dataset file written by TokenData.save"
    )
    p.add_argument(
        "--out",
        type=_path,
        required=True,
        help="report directory (created if missing, inside an existing directory; checked first)",
    )
    p.add_argument(
        "--weights",
        type=_path,
        metavar="FILE",
        help="trained weights: an .npz with W (d x d), or K and Q (W = K Q^T), or all three "
        "as 'svmgeo train --param KQ --save' writes them (W = K Q^T up to rounding)",
    )
    p.add_argument(
        "--max-lot-selections",
        type=_positive,
        default=4096,
        help="enumerate LOTs exactly up to this many selections, else report the cap "
        "(default 4096)",
    )
    p.add_argument(
        "--prune-threshold",
        type=_fraction,
        default=0.01,
        metavar="P",
        help="with --weights: the mass pruning drops keys of attention below this, in [0, 1] "
        "(default 0.01; the selected key is always kept)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--json", action="store_true", help=_JSON_HELP)
    p = _add_command(
        sub,
        "feasibility",
        "decide feasibility of Att-SVM for a selection, with a certificate",
        "svmgeo feasibility --n 4 --T 3 --d 2 --seed 0 --alpha 0,0,2,0",
        _cmd_feasibility,
    )
    _add_data_arguments(p, selection=True, gd=False)
    p = _add_command(
        sub,
        "lots",
        "enumerate every locally optimal token selection, exactly",
        "svmgeo lots --n 4 --T 3 --d 2 --seed 0",
        _cmd_lots,
    )
    _add_data_arguments(p, selection=False, gd=False)
    _add_norm_argument(p, "norm of the SVMs that decide local optimality", lot=True)
    p.add_argument(
        "--max-selections",
        type=_positive,
        default=10**6,
        help="refuse datasets with more selections than this (T^(n K); default 1000000)",
    )
    p = _add_command(
        sub,
        "train",
        "gradient descent on the attention weights",
        "svmgeo train --n 6 --T 8 --d 10 --seed 2 --param KQ --steps 4000 --save w.npz",
        _cmd_train,
    )
    _add_data_arguments(p, selection=False, gd=True)
    _add_train_arguments(p, params=("W", "KQ", "p"))
    from .gd import OPTIMIZERS

    names = ", ".join(name if name != "steepest" else "steepest:Q" for name in OPTIMIZERS)
    p.add_argument(
        "--optimizer",
        type=_optimizer_value,
        default="gd",
        metavar="OPT",
        help=f"one of {names}: gradient descent, or l_p mirror descent (needs --exponent; takes "
        "neither --param KQ/p, --m, --train-head, --normalize-eps nor --init-scale; steps "
        "normalized unless --plain; numpy kernels unless --backend), or sign / steepest l_Q "
        "(1 <= Q <= inf, e.g. steepest:1.5) / spectral / adam descent (docs/optimizers.md; "
        "--param W or KQ; neither --plain, --train-head nor --normalize-eps) (default gd)",
    )
    p.add_argument(
        "--exponent",
        type=_exponent,
        metavar="P",
        help="--optimizer mirror: the exponent p > 1 of the potential ||W||_p^p / p",
    )
    p.add_argument("--plain", action="store_true", help="plain (unnormalized) gradient steps")
    p.add_argument(
        "--train-head",
        action="store_true",
        help="train the linear head v jointly with the attention (each block normalized "
        "separately); starts from the data's v, else zero",
    )
    p.add_argument(
        "--normalize-eps",
        type=_scale,
        default=0.0,
        metavar="EPS",
        help="normalized steps eta g / (||g|| + EPS) per block (default 0: exactly normalized)",
    )
    p.add_argument(
        "--save",
        type=_path,
        metavar="FILE",
        help="write the final W (p for --param p; and K, Q; v with --train-head) to this .npz "
        "file (checked before training)",
    )
    p = _add_command(
        sub,
        "verify",
        "run GD and the SVMs: does GD do what the theory predicts?",
        "svmgeo verify --n 6 --T 8 --d 10 --seed 2 --figure verify.png",
        _cmd_verify,
    )
    _add_data_arguments(p, selection=False, gd=True)
    _add_train_arguments(p)
    p.add_argument(
        "--figure",
        type=_path,
        metavar="FILE",
        help="write a figure of the report; the extension names the format (.png, .pdf, .svg, "
        "...; checked before training; needs matplotlib)",
    )
    p = _add_command(
        sub,
        "reproduce",
        "run one of the paper's experiments (--list names them)",
        "svmgeo reproduce global --quick --out results",
        _cmd_reproduce,
    )
    p.add_argument("name", nargs="?", default=None, help="experiment name (see --list)")
    p.add_argument("--list", action="store_true", help="print the experiment names and exit")
    p.add_argument("--quick", action="store_true", help="reduced size (seconds; for CI)")
    add_sweep_arguments(
        p,
        default_out="svmgeo-results",
        out_help="output directory for tables/figures (created if missing)",
        retry_errors=False,
    )
    p = _add_command(
        sub,
        "atlas",
        "the atlas of correspondences (model x optimizer -> predicted SVM, status, measured "
        "evidence), generated from runs (docs/atlas.md)",
        "svmgeo atlas --check",
        _cmd_atlas,
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--write",
        type=_path,
        nargs="?",
        const="docs/atlas.md",
        metavar="FILE",
        help="write the page to FILE (default docs/atlas.md) instead of printing it",
    )
    group.add_argument(
        "--check",
        type=_path,
        nargs="?",
        const="docs/atlas.md",
        metavar="FILE",
        help="exit 1 when FILE (default docs/atlas.md) is not what generation gives now",
    )
    return parser


# the keywords of train whose options some --optimizer rules do not take, in the order
# _check_optimizer_flags names them
_RULE_KEYWORDS = (
    "param",
    "m",
    "attention",
    "train_head",
    "normalize_eps",
    "normalized",
    "exponent",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``svmgeo`` command; returns the exit status.

    0: done; 1: the computation ran but found no answer (e.g. a solver failure), or the reader
    of stdout closed it early (a pipe into ``head``); 2: bad input (one line on stderr); 130:
    interrupted.
    """
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    try:
        return int(args.func(args))
    except SvmgeoError as exc:
        print(f"{args.prog}: error: {_one_line(_in_cli_terms(str(exc), args))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of stdout stopped (| head): not bad input
        try:  # flush nothing more into the closed pipe at exit (Python's documented recipe)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is no file (captured): nothing to redirect
            pass
        return 1
    except OSError as exc:  # a file that vanished or a full disk after the checks
        print(f"{args.prog}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # sizes beyond the machine (numpy's allocation failed)
        print(
            f"{args.prog}: error: not enough memory ({_one_line(exc) or 'MemoryError'}); "
            "choose smaller sizes (--n, --T, --d, --m) or a smaller dataset",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print(f"{args.prog}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
