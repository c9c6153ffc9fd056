# SPDX-License-Identifier: BSD-3-Clause
"""Array backends of the GD engine: numba (compiled CPU), numpy (reference), cupy (GPU).

CuPy is imported lazily, only when ``backend="cupy"`` is asked for, and can be turned off
with the environment variable ``SVMGEO_DISABLE_CUPY=1``.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import math
import os
import weakref
from typing import Any

import numpy as np

from .._errors import BackendError, ProblemError
from ..attention_maps import undetermined_sum_message
from ..losses import LossSpec, check_user_loss, warn_nonnegative_derivative
from . import _xp
from ._config import GDConfig
from ._problem import CONCAVE_HEAD, LINEAR_HEAD, SCORES_HEAD, SOFTMAX_ATT, Problem

__all__ = [
    "Kernels",
    "check_loss_for",
    "compiled_loss",
    "cupy_available",
    "get_cupy",
    "get_kernels",
]

_DISABLE_ENV = "SVMGEO_DISABLE_CUPY"


def get_cupy() -> Any:
    """Import CuPy and check for a CUDA device, or raise :class:`BackendError` saying why."""
    if os.environ.get(_DISABLE_ENV, "").strip() not in ("", "0"):
        raise BackendError(
            f"backend='cupy' is disabled by the environment variable {_DISABLE_ENV}; unset it "
            "or use backend='numba'."
        )
    if importlib.util.find_spec("cupy") is None:
        raise BackendError(
            "backend='cupy' needs CuPy, which is not installed. Install it with "
            "`pip install svmgeo[gpu]` (CUDA 12), or use backend='numba' on the CPU."
        )
    try:
        cp = importlib.import_module("cupy")
        count = int(cp.cuda.runtime.getDeviceCount())
    except Exception as exc:
        raise BackendError(
            f"CuPy is installed but no CUDA device is usable ({exc}); use backend='numba'."
        ) from exc
    if count < 1:
        raise BackendError("CuPy found no CUDA device; use backend='numba'.")
    return cp


def cupy_available() -> bool:
    """True when ``backend='cupy'`` can run here."""
    try:
        get_cupy()
    except BackendError:
        return False
    return True


class Kernels:
    """The operations the engine needs, for one backend and one problem.

    ``P1`` is W (B, d, d), K (B, d, m) or p (B, d, 1); ``P2`` is Q (B, d, m) or a (B, 1, 1)
    placeholder; ``head`` (B, 1, d_u) the head v the kernels read (the state's: trained with
    ``train_head``, else the problem's ``hv``).
    """

    def __init__(self, name: str, problem: Problem, xp: Any) -> None:
        self.name = name
        self.problem = problem
        self.xp = xp
        self.arrays = _xp.arrays(problem, xp)

    def asarray(self, x: np.ndarray) -> Any:
        return self.xp.asarray(x)

    def to_numpy(self, x: Any) -> np.ndarray:
        return x.get() if hasattr(x, "get") else np.asarray(x)

    def weights(self, P1: Any, P2: Any, is_kq: bool) -> Any:
        return self.xp.einsum("bdm,bem->bde", P1, P2) if is_kq else P1

    def grad(self, W: Any, loss_id: _xp.LossKey, log_domain: bool) -> tuple[Any, Any]:
        """``(G, M)`` with the problem's own head."""
        return _xp.grad_w(W, self.problem, self.arrays, loss_id, log_domain, self.xp)

    def grads(
        self, W: Any, head: Any, loss_id: _xp.LossKey, log_domain: bool, train_head: bool
    ) -> tuple[Any, Any, tuple[Any, Any] | None]:
        """``(G, M, (G_v, M_v))`` at W with the head ``head``; the head's block is None
        unless ``train_head``."""
        xp = self.xp
        a = _xp.with_head(self.arrays, head)
        fw = _xp.forward(W, self.problem, a, xp)
        G, M = _xp.grad_w(W, self.problem, a, loss_id, log_domain, xp, fw)
        hb = _xp.grad_head(fw, self.problem, a, loss_id, log_domain, xp) if train_head else None
        return G, M, hb

    def advance(
        self,
        P1: Any,
        P2: Any,
        head: Any,
        status: np.ndarray,
        steps: np.ndarray,
        n: int,
        cfg: GDConfig,
    ) -> tuple[Any, Any, Any]:
        """Up to ``n`` steps of every running instance; updates ``status``/``steps`` in place."""
        xp = self.xp
        is_kq, loss_id, log_tol = _options(cfg)
        lims = xp.asarray(self.problem.max_norm)
        for _ in range(n):
            active = status == 0
            if not active.any():
                break
            G, M, hb = self.grads(
                self.weights(P1, P2, is_kq), head, loss_id, cfg.log_domain, cfg.train_head
            )
            P1n, P2n, vn, code = _xp.step(
                P1,
                P2,
                G,
                M,
                is_kq=is_kq,
                normalized=cfg.normalized,
                log_domain=cfg.log_domain,
                eta=cfg.step_size,
                rho=cfg.ridge,
                log_tol=log_tol,
                max_norm=lims,
                xp=xp,
                head=None if hb is None else (head, *hb),
                eps=cfg.eps_blocks,
            )
            act = xp.asarray(active)[:, None, None]
            P1 = xp.where(act, P1n, P1)
            P2 = xp.where(act, P2n, P2)
            if vn is not None:
                head = xp.where(act, vn, head)
            code_h = self.to_numpy(code)
            status[active] = code_h[active]
            steps[active & (code_h == 0)] += 1
        return P1, P2, head


class NumbaKernels(Kernels):
    """Compiled kernels: a whole chunk of steps per call, instances on several threads
    (:func:`in_threads`)."""

    def grad(self, W: Any, loss_id: _xp.LossKey, log_domain: bool) -> tuple[Any, Any]:
        G, M, _ = self.grads(W, self.problem.hv[:, None, :], loss_id, log_domain, False)
        return G, M

    def grads(
        self, W: Any, head: Any, loss_id: _xp.LossKey, log_domain: bool, train_head: bool
    ) -> tuple[Any, Any, tuple[Any, Any] | None]:
        from ._numba import grad_batch, kernel_att

        loss_id = compiled_loss(loss_id)
        W = np.require(W, np.float64, ["C", "W"])
        prob = _prob(self.problem, head)
        B = W.shape[0]
        G, M = np.empty_like(W), np.empty(B)
        Gv, Mv = np.zeros((B, 1, self.problem.d_u)), np.empty(B)
        args = (W, prob, kernel_att(self.problem.att_id), self.problem.head_id, loss_id)
        try:
            in_threads(
                grad_batch, B, _parallel(self.problem, 1), *args, log_domain, train_head, G, M,
                Gv, Mv,
            )  # fmt: skip
        except ProblemError as exc:
            raise explain(exc, W, self.problem) from None
        return G, M, ((Gv, Mv) if train_head else None)

    def advance(
        self,
        P1: Any,
        P2: Any,
        head: Any,
        status: np.ndarray,
        steps: np.ndarray,
        n: int,
        cfg: GDConfig,
    ) -> tuple[Any, Any, Any]:
        from ._numba import advance, kernel_att

        P = self.problem
        # copies: the state stays immutable
        P1, P2, head = (np.array(A, dtype=np.float64, order="C", copy=True) for A in (P1, P2, head))
        is_kq, loss_id, log_tol = _options(cfg)
        if lanes_fit(P, cfg):
            _advance_lanes(P, P1, head, status, steps, n, cfg, log_tol)
            return P1, P2, head
        opts = (
            P.head_id,
            compiled_loss(loss_id),
            is_kq,
            cfg.train_head,
            cfg.normalized,
            cfg.log_domain,
            cfg.step_size,
            cfg.ridge,
            log_tol,
            *cfg.eps_blocks,
        )
        try:
            in_threads(
                advance, P.B, _parallel(P, n), P1, P2, head, _prob(P), opts, n, status, steps,
                P.max_norm, kernel_att(P.att_id),
            )  # fmt: skip
        except ProblemError as exc:  # the iterates where it was raised are P1 (P2)
            raise explain(exc, self.weights(P1, P2, is_kq), P) from None
        return P1, P2, head


def explain(exc: ProblemError, W: np.ndarray, P: Problem) -> ProblemError:
    r"""The error to raise for the compiled kernels' ``exc``: for a query whose
    :math:`\mathbf 1^\top u` is within its rounding error of 0
    (:data:`svmgeo.gd._numba.UNDETERMINED_SUM`), the reference check's message at the
    iterates W (B, d, d_z), naming the instance; where its sums, added in another order,
    happen to pass, the kernel's own sum and bound. Any other ``exc`` as it came."""
    from ._numba import UNDETERMINED_SUM

    if exc.args[:1] != (UNDETERMINED_SUM,):
        return exc
    _, i, k, S, bound = exc.args
    a = _xp.arrays(P, np)
    which = f"sequence {i}, query {k}" + (" (of one of the instances)" if P.B > 1 else "")
    try:
        _xp.check_normalized_sums(W, _xp.map_logits(W, a, np), a, np)
    except ProblemError as detailed:
        return detailed
    return ProblemError(undetermined_sum_message(S, bound, which))


def lanes_fit(P: Problem, cfg: GDConfig) -> bool:
    """Does the lane kernel (:mod:`svmgeo.gd._numba_lanes`) run this batch? Softmax attention,
    ``param="W"``, a linear or concave head not trained, a built-in loss, instances on the
    scalar kernel's small-instance branch (their :func:`~svmgeo.gd._numba.layout` is empty)
    and at least one full group; there its trajectories are the scalar kernel's bit for bit."""
    from ._numba_lanes import LANES

    return (
        P.att_id == SOFTMAX_ATT
        and cfg.param == "W"
        and not cfg.train_head
        and P.head_id in (LINEAR_HEAD, CONCAVE_HEAD)
        and isinstance(cfg.loss, str)
        and P.B >= LANES
        and _prob(P)[10].shape[1] == 0
    )


#: The lane layouts of each problem (:func:`svmgeo.gd._numba_lanes.lane_layout`), built once.
_LANE_LAYOUTS: weakref.WeakKeyDictionary[Problem, tuple[np.ndarray, ...]] = (
    weakref.WeakKeyDictionary()
)


def _advance_lanes(
    P: Problem,
    P1: np.ndarray,
    head: np.ndarray,
    status: np.ndarray,
    steps: np.ndarray,
    n: int,
    cfg: GDConfig,
    log_tol: float,
) -> None:
    """Up to ``n`` steps of every running instance on the lane kernel, in place."""
    from ._numba_lanes import advance_lanes, lane_head, lane_layout

    lay = _LANE_LAYOUTS.get(P)
    if lay is None:
        lay = _LANE_LAYOUTS[P] = lane_layout(P.X, P.U, P.Z, P.Y, P.vis, P.lam, P.max_norm)
    opts = (
        _xp.loss_key(cfg.loss),
        bool(cfg.normalized),
        bool(cfg.log_domain),
        float(cfg.step_size),
        float(cfg.ridge),
        float(log_tol),
        float(cfg.eps_blocks[0]),
    )
    groups = lay[0].shape[0]
    in_threads(
        advance_lanes, groups, _parallel(P, n), lay, lane_head(head), P1, status, steps, opts, n
    )


# Instance-steps below which one call runs on one thread: starting a parallel region costs
# microseconds on an idle machine but milliseconds on a loaded one (a barrier waits for a
# descheduled worker), more than ~30 ms of work saves.
_PARALLEL_WORK = 10_000


def _parallel(P: Problem, n_steps: int) -> bool:
    """Run ``n_steps`` steps of every instance on several threads (:func:`in_threads`)?"""
    import numba

    return P.B > 1 and P.B * n_steps >= _PARALLEL_WORK and numba.get_num_threads() > 1


#: The transposed constants of each problem (:func:`svmgeo.gd._numba.layout`), built once.
_LAYOUTS: weakref.WeakKeyDictionary[Problem, tuple[np.ndarray, ...]] = weakref.WeakKeyDictionary()


def _prob(P: Problem, head: Any = None) -> tuple[np.ndarray, ...]:
    """The problem's arrays as the compiled kernels take them (with the head ``head``
    (B, 1, d_u) in place of ``hv`` when given), then the transposes of
    :func:`svmgeo.gd._numba.layout`."""
    from ._numba import layout

    lay = _LAYOUTS.get(P)
    if lay is None:
        lay = _LAYOUTS[P] = layout(P.X, P.U, P.Z, P.att_id == SOFTMAX_ATT)
    hv = P.hv if head is None else np.ascontiguousarray(head[:, 0, :], dtype=np.float64)
    return (P.X, P.U, P.Z, P.Y, P.vis, hv, P.hV, P.hw, P.lam, P.C, *lay)


def _options(cfg: GDConfig) -> tuple[bool, _xp.LossKey, float]:
    """``(is_kq, loss_id, log_tol)`` of a configuration."""
    log_tol = math.log(cfg.grad_tol) if cfg.grad_tol > 0.0 else -math.inf
    return cfg.param == "KQ", _xp.loss_key(cfg.loss), log_tol


#: The compiled functions of user losses, by the user's own callables (d1, log_abs_d1).
_COMPILED: dict[tuple[Any, Any], Any] = {}


def compiled_loss(loss_id: _xp.LossKey, where: str = "train") -> Any:
    """What the compiled kernels take for a loss: a built-in's id, or a user loss's numba
    function (:func:`svmgeo.gd._numba.compile_loss`, compiled once per LossSpec)."""
    if not isinstance(loss_id, LossSpec):
        return loss_id
    from ..losses import raw_function

    key = (raw_function(loss_id.d1), raw_function(loss_id.log_abs_d1))
    fn = _COMPILED.get(key)
    if fn is None:
        from ._numba import compile_loss

        fn = _COMPILED[key] = compile_loss(loss_id, where)
    return fn


def _score_hull(problem: Problem, train_head: bool) -> tuple[float, float] | None:
    r"""The hull of the intervals :math:`[\min_t\gamma_{ikt}, \max_t\gamma_{ikt}]` that
    :math:`Y_{ik} f_{ik} = \sum_t s_t\gamma_{ikt}` attains (softmax attention, a fixed
    linear head or given scores); None where no such interval is known."""
    P = problem
    if P.att_id != SOFTMAX_ATT or train_head or P.head_id not in (LINEAR_HEAD, SCORES_HEAD):
        return None
    if P.head_id == SCORES_HEAD:
        gam = P.C
    else:
        gam = P.Y[..., None] * np.einsum("bntd,bd->bnt", P.U, P.hv)[:, :, None, :]
    vis = np.broadcast_to(P.vis, gam.shape)
    if not np.any(vis):
        return None
    return float(np.min(gam, where=vis, initial=np.inf)), float(
        np.max(gam, where=vis, initial=-np.inf)
    )


def check_loss_for(
    loss: Any,
    problem: Problem,
    where: str,
    backend: str,
    train_head: bool = False,
    stacklevel: int = 4,
) -> None:
    """Check a user loss before a run; nothing for a built-in's name.

    Finite arrays of the input's shape on the attained interval (else a ProblemError), a
    :class:`~svmgeo.losses.LossWarning` where l' >= 0 there, and on ``backend="numba"`` its
    compiled function (a ProblemError when numba cannot compile it). Called by the public
    entry points (train, train_batch, loss_and_grad, RiskOracle), ``stacklevel`` pointing
    the warning at the user's call."""
    spec = loss
    if not isinstance(spec, LossSpec):
        return
    hull = _score_hull(problem, train_head)
    lo, hi = hull if hull is not None else (-1.0, 1.0)
    check_user_loss(spec, np.linspace(lo, hi, 65).reshape(5, 13), where)
    if hull is not None:
        warn_nonnegative_derivative(spec, lo, hi, where, stacklevel=stacklevel)
    if backend == "numba":
        compiled_loss(spec, where)


def get_kernels(name: str, problem: Problem) -> Kernels:
    """Kernels of backend ``name`` (already validated) for ``problem``."""
    if name == "numba":
        return NumbaKernels(name, problem, np)
    if name == "numpy":
        return Kernels(name, problem, np)
    return Kernels(name, problem, get_cupy())


#: in_threads' ThreadPoolExecutor of each (process, thread count), made on first use: a
#: forked child makes pools of its own (the parent's threads do not exist in it).
_POOLS: dict[tuple[int, int], Any] = {}


def in_threads(kernel: Any, n_items: int, parallel: bool, *args: Any) -> None:
    """``kernel(*args, lo, hi)`` over the items ``0, ..., n_items - 1``: in this thread when
    not ``parallel``, else as contiguous ranges (up to four per thread, taken in turn) on
    :func:`numba.get_num_threads` threads at once. The kernels release the GIL
    (``nogil=True``) and write disjoint items, so every item gets the bits one thread gives.

    Threads from Python rather than a ``parallel=True`` kernel: numba compiles such a
    kernel's callees a second time (a cold first parallel ``train_batch`` compiled the GD
    kernels twice), while these ranges run the one compiled kernel."""
    import numba

    threads = numba.get_num_threads()
    if not parallel or threads < 2 or n_items < 2:
        kernel(*args, 0, n_items)
        return
    from concurrent.futures import ThreadPoolExecutor

    key = (os.getpid(), threads)
    if key not in _POOLS:
        _POOLS[key] = ThreadPoolExecutor(threads, thread_name_prefix="svmgeo-gd")
    pool: ThreadPoolExecutor = _POOLS[key]
    chunks = min(n_items, 4 * threads)
    edges = [n_items * k // chunks for k in range(chunks + 1)]
    futures = [pool.submit(kernel, *(*args, lo, hi)) for lo, hi in itertools.pairwise(edges)]
    for future in futures:
        future.result()
