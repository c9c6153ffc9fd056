# SPDX-License-Identifier: BSD-3-Clause
r"""Explicit float64 vectors of :data:`WIDTH` entries for the large-instance loops of
:mod:`svmgeo.gd._numba`.

numba ships with LLVM's SLP vectorizer off, and its loop vectorizer keeps an accumulator in
memory between the iterations of an outer loop, so a sum that should stay in registers over a
whole loop (eight vectors of partial sums, each adding one term per iteration) is only written
with explicit vectors. :class:`Vec` is an LLVM ``<WIDTH x double>`` value; ``+ - * /`` on two of
them are ``fadd`` / ``fsub`` / ``fmul`` / ``fdiv`` on every entry, the instructions numba emits
for float64 scalars (without fastmath: no reassociation, no FMA contraction), so an entry of a
vector sum is the scalar sum of the same terms in the same order, bit for bit.
"""

from __future__ import annotations

import operator
from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, overload, register_model

__all__ = ["WIDTH", "lane", "splat", "vec_t", "vload", "vmax_abs", "vstore"]

#: float64 entries per vector (one ymm register with AVX2).
WIDTH = 4


class Vec(types.Type):
    """A vector of :data:`WIDTH` float64."""

    def __init__(self) -> None:
        super().__init__(name=f"Vec{WIDTH}f64")


vec_t = Vec()
_VEC = ir.VectorType(ir.DoubleType(), WIDTH)


@register_model(Vec)
class _VecModel(models.PrimitiveModel):
    def __init__(self, dmm: Any, fe_type: Any) -> None:
        super().__init__(dmm, fe_type, _VEC)


def _intrinsic(typer: Any) -> Any:
    """numba's ``intrinsic`` (typed as Any: its typer's signature is not the call's)."""
    return intrinsic(typer)


def _entry_ptr(context: Any, builder: Any, aty: Any, a: Any, i: Any) -> Any:
    """Pointer to the float64 ``a.flat[i]`` of a C-contiguous array, as a vector pointer."""
    data = context.make_array(aty)(context, builder, a).data
    return builder.bitcast(builder.gep(data, [i]), _VEC.as_pointer())


def _float_array(a: Any) -> bool:
    return isinstance(a, types.Array) and a.dtype == types.float64 and a.layout == "C"


@_intrinsic
def vload(typingctx: Any, a: Any, i: Any) -> Any:
    """The entries ``a.flat[i : i + WIDTH]`` of a C-contiguous float64 array (unchecked)."""
    if not (_float_array(a) and isinstance(i, types.Integer)):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.load(_entry_ptr(context, builder, sig.args[0], args[0], args[1]), align=8)

    return vec_t(a, i), codegen


@_intrinsic
def vstore(typingctx: Any, a: Any, i: Any, v: Any) -> Any:
    """``a.flat[i : i + WIDTH] = v`` (unchecked)."""
    if not (_float_array(a) and isinstance(i, types.Integer) and isinstance(v, Vec)):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        ptr = _entry_ptr(context, builder, sig.args[0], args[0], args[1])
        builder.store(args[2], ptr, align=8)
        return context.get_dummy_value()

    return types.none(a, i, v), codegen


@_intrinsic
def splat(typingctx: Any, x: Any) -> Any:
    """Every entry ``x``."""
    if not isinstance(x, types.Float):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        x = context.cast(builder, args[0], sig.args[0], types.float64)
        v = ir.Constant(_VEC, ir.Undefined)
        for j in range(WIDTH):
            v = builder.insert_element(v, x, ir.Constant(ir.IntType(32), j))
        return v

    return vec_t(x), codegen


@_intrinsic
def lane(typingctx: Any, v: Any, j: Any) -> Any:
    """Entry ``j`` of ``v``."""
    if not (isinstance(v, Vec) and isinstance(j, types.Integer)):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.extract_element(args[0], args[1])

    return types.float64(v, j), codegen


@_intrinsic
def vmax_abs(typingctx: Any, top: Any, x: Any) -> Any:
    """Per entry ``max(top, abs(x))`` as numba computes it: ``|x|`` when ``|x| > top``, else
    ``top`` (a NaN never enters)."""
    if not (isinstance(top, Vec) and isinstance(x, Vec)):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        fabs = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_VEC, [_VEC]), f"llvm.fabs.v{WIDTH}f64"
        )
        a = builder.call(fabs, [args[1]])
        return builder.select(builder.fcmp_ordered(">", a, args[0]), a, args[0])

    return vec_t(top, x), codegen


def _binary(emit: Any) -> Any:
    """An intrinsic of two :class:`Vec` (``emit(builder, a, b)``) returning a :class:`Vec`."""

    def typer(typingctx: Any, a: Any, b: Any) -> Any:
        if not (isinstance(a, Vec) and isinstance(b, Vec)):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return emit(builder, args[0], args[1])

        return vec_t(a, b), codegen

    return intrinsic(typer)


def _vec_operator(op: Any, impl: Any) -> None:
    @overload(op)
    def _ov(a, b):
        if isinstance(a, Vec) and isinstance(b, Vec):
            return lambda a, b: impl(a, b)
        return None


# the instructions numba emits for float64 scalars (numba.cpython.numbers), entry by entry
for _op, _emit in (
    (operator.add, lambda b, x, y: b.fadd(x, y)),
    (operator.sub, lambda b, x, y: b.fsub(x, y)),
    (operator.mul, lambda b, x, y: b.fmul(x, y)),
    (operator.truediv, lambda b, x, y: b.fdiv(x, y)),
):
    _vec_operator(_op, _binary(_emit))
