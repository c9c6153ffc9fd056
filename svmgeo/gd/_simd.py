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
from collections.abc import Callable
from typing import Any, NamedTuple

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, overload, register_model

__all__ = [
    "WIDTH",
    "VectorOps",
    "lane",
    "splat",
    "vec_t",
    "vector_ops",
    "vload",
    "vmax_abs",
    "vstore",
]

#: float64 entries per vector (one ymm register with AVX2).
WIDTH = 4


class Vec(types.Type):
    """A vector of :data:`WIDTH` float64."""

    def __init__(self) -> None:
        super().__init__(name=f"Vec{WIDTH}f64")


vec_t = Vec()


def _intrinsic(typer: Any) -> Any:
    """numba's ``intrinsic`` (typed as Any: its typer's signature is not the call's)."""
    return intrinsic(typer)


def _float_array(a: Any) -> bool:
    return isinstance(a, types.Array) and a.dtype == types.float64 and a.layout == "C"


class VectorOps(NamedTuple):
    """The intrinsics of one kind of float64 vector (:func:`vector_ops`)."""

    vload: Any
    vstore: Any
    splat: Any
    lane: Any
    fabs: Callable[[Any, Any], Any]
    binary: Callable[..., Any]


def vector_ops(
    kind: type[types.Type], value: Any, width: int, mask: type[types.Type] | None = None
) -> VectorOps:
    r"""Register numba type ``kind`` (instance ``value``) as an LLVM ``<width x double>`` and
    build its intrinsics: ``vload(a, i)`` / ``vstore(a, i, v)``, the entries ``a.flat[i : i +
    width]`` of a C-contiguous float64 array (unchecked); ``splat(x)``, every entry the float
    x; ``lane(v, j)``, entry j (a bool of a ``mask`` vector, an ``<width x i1>``, too);
    ``fabs(builder, x)``, ``llvm.fabs`` of every entry (numba's ``abs`` of a float); and
    ``binary(emit, ret=value, operand=kind)``, an intrinsic of two ``operand`` vectors
    returning ``ret`` as ``emit(builder, a, b)`` computes it. The large-instance vectors of
    this module and the batched lanes of :mod:`~svmgeo.gd._numba_lanes` are two such kinds.
    """
    vector = ir.VectorType(ir.DoubleType(), width)

    class _Model(models.PrimitiveModel):
        def __init__(self, dmm: Any, fe_type: Any) -> None:
            super().__init__(dmm, fe_type, vector)

    register_model(kind)(_Model)

    def entry_ptr(context: Any, builder: Any, aty: Any, a: Any, i: Any) -> Any:
        data = context.make_array(aty)(context, builder, a).data
        return builder.bitcast(builder.gep(data, [i]), vector.as_pointer())

    @_intrinsic
    def vload(typingctx: Any, a: Any, i: Any) -> Any:
        if not (_float_array(a) and isinstance(i, types.Integer)):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            ptr = entry_ptr(context, builder, sig.args[0], args[0], args[1])
            return builder.load(ptr, align=8)

        return value(a, i), codegen

    @_intrinsic
    def vstore(typingctx: Any, a: Any, i: Any, v: Any) -> Any:
        if not (_float_array(a) and isinstance(i, types.Integer) and isinstance(v, kind)):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            ptr = entry_ptr(context, builder, sig.args[0], args[0], args[1])
            builder.store(args[2], ptr, align=8)
            return context.get_dummy_value()

        return types.none(a, i, v), codegen

    @_intrinsic
    def splat(typingctx: Any, x: Any) -> Any:
        if not isinstance(x, types.Float):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            x = context.cast(builder, args[0], sig.args[0], types.float64)
            v = ir.Constant(vector, ir.Undefined)
            for j in range(width):
                v = builder.insert_element(v, x, ir.Constant(ir.IntType(32), j))
            return v

        return value(x), codegen

    @_intrinsic
    def lane(typingctx: Any, v: Any, j: Any) -> Any:
        if not isinstance(j, types.Integer):
            return None
        if isinstance(v, kind):
            ret: Any = types.float64
        elif mask is not None and isinstance(v, mask):
            ret = types.boolean
        else:
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            x = builder.extract_element(args[0], args[1])
            if not isinstance(sig.args[0], kind):
                x = builder.zext(x, context.get_value_type(types.boolean))
            return x

        return ret(v, j), codegen

    def fabs(builder: Any, x: Any) -> Any:
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vector, [vector]), f"llvm.fabs.v{width}f64"
        )
        return builder.call(function, [x])

    def binary(emit: Any, ret: Any = value, operand: type[types.Type] = kind) -> Any:
        def typer(typingctx: Any, a: Any, b: Any) -> Any:
            if not (isinstance(a, operand) and isinstance(b, operand)):
                return None

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                return emit(builder, args[0], args[1])

            return ret(a, b), codegen

        return intrinsic(typer)

    return VectorOps(vload, vstore, splat, lane, fabs, binary)


vload, vstore, splat, lane, _fabs, _binary = vector_ops(Vec, vec_t, WIDTH)


@_intrinsic
def vmax_abs(typingctx: Any, top: Any, x: Any) -> Any:
    """Per entry ``max(top, abs(x))`` as numba computes it: ``|x|`` when ``|x| > top``, else
    ``top`` (a NaN never enters)."""
    if not (isinstance(top, Vec) and isinstance(x, Vec)):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        a = _fabs(builder, args[1])
        return builder.select(builder.fcmp_ordered(">", a, args[0]), a, args[0])

    return vec_t(top, x), codegen


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
