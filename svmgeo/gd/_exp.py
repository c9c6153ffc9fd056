# SPDX-License-Identifier: BSD-3-Clause
r"""The exponential of the softmax numerators, as glibc computes it, on vectors too.

:func:`exp` is :math:`e^x` by the table method of Szabolcs Nagy's ``exp`` (Arm's
optimized-routines, glibc's ``exp`` since 2.28): with :math:`N = 128`,

.. math::

    x = k \tfrac{\ln 2}{N} + r,\quad |r| \le \tfrac{\ln 2}{2N},\qquad
    e^x = 2^{\lfloor k/N \rfloor}\, 2^{(k \bmod N)/N}\, e^r,

:math:`k` rounded from :math:`x N/\ln 2` by adding :math:`1.5 \cdot 2^{52}`, :math:`r` from a
two-part :math:`\ln 2/N`, :math:`2^{j/N} = H_j (1 + T_j)` from a table (:data:`EXP_TABLE`,
built here in 50-digit decimal arithmetic: :math:`H_j` the double nearest :math:`2^{j/N}`,
:math:`T_j` the double nearest :math:`2^{j/N}/H_j - 1`) and :math:`e^r - 1` a degree-5
polynomial, every multiply-add fused as glibc's x86-64 FMA build fuses it (the fusions were
found by trying them against ``math.exp``). On arguments :math:`2^{-54} \le |x| < 512` (and
:math:`x = 0`) it gave glibc's own result on every argument tried, bit for bit
(``tests/gd/test_exp.py``: about 1.5 million arguments, every table entry at both ends of its
interval among them, against ``math.exp`` where the libm is glibc >= 2.28 built with FMA for
the CPU; the test skips elsewhere). Other arguments go to the libm's ``exp``
(``math.exp``), the same call as before.

Why: the batched lanes (:mod:`svmgeo.gd._numba_lanes`) evaluate the numerators of
:data:`~svmgeo.gd._numba_lanes.LANES` instances at once; a scalar libm call per lane spills
every vector around it. :func:`emit_exp` builds the same operations on an LLVM vector, and
:func:`exp` on one float64 for the scalar kernel, so the lanes and the scalar kernel compute
one function by construction on every libm, and, where the libm is glibc >= 2.28 with FMA,
the trajectories are those of its ``exp`` before (``benchmarks/check_gd_bits.py``).
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal, localcontext
from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils

from .._jit import njit
from ._simd import _intrinsic

__all__ = ["EXP_TABLE", "emit_exp", "exp", "exp_in_range"]

_N = 128
_INV_LN2_N = float.fromhex("0x1.71547652b82fep0") * _N
_NEG_LN2_HI_N = float.fromhex("-0x1.62e42fefa0000p-8")
_NEG_LN2_LO_N = float.fromhex("-0x1.cf79abc9e3b3ap-47")
_SHIFT = float.fromhex("0x1.8p52")
# e^r ~ 1 + r + C2 r^2 + C3 r^3 + C4 r^4 + C5 r^5 on |r| <= ln2/256 (abs. error 1.555 * 2^-66)
_C2 = float.fromhex("0x1.ffffffffffdbdp-2")
_C3 = float.fromhex("0x1.555555555543cp-3")
_C4 = float.fromhex("0x1.55555cf172b91p-5")
_C5 = float.fromhex("0x1.1111167a4d017p-7")
#: Smallest |x| (other than 0) the table method takes, and the bound it stays below.
_TINY = 2.0**-54
_LARGE = 512.0


def _bits(x: float) -> int:
    return int(struct.unpack("<Q", struct.pack("<d", x))[0])


def _table() -> np.ndarray:
    """``[bits(T_j), bits(H_j) - (j << 45)]`` for j < N (the exponent of :math:`2^{k/N}`'s
    integer part is then added to the second as ``k << 45``)."""
    out = np.empty(2 * _N, dtype=np.uint64)
    with localcontext() as ctx:
        ctx.prec = 50
        ln2 = Decimal(2).ln()
        for j in range(_N):
            exact = (ln2 * j / _N).exp()
            high = float(exact)  # correctly rounded
            out[2 * j] = _bits(float(exact / Decimal(high) - 1))
            out[2 * j + 1] = _bits(high) - (j << 45)
    out.setflags(write=False)
    return out


#: :math:`2^{j/N} = H_j (1 + T_j)`, j < 128, as two uint64 per entry (see :func:`_table`).
EXP_TABLE = _table()


def emit_exp(builder: Any, x: Any) -> Any:
    r"""LLVM IR of :math:`e^x` by the table method (module docstring) for ``x`` a double or a
    vector of doubles, valid where :func:`exp_in_range` holds."""
    module = builder.module
    ftype = x.type
    width = ftype.count if isinstance(ftype, ir.VectorType) else 1
    i64 = ir.IntType(64)
    itype = ir.VectorType(i64, width) if width > 1 else i64
    suffix = f"v{width}f64" if width > 1 else "f64"
    fma_fn = cgutils.get_or_insert_function(
        module, ir.FunctionType(ftype, [ftype] * 3), f"llvm.fma.{suffix}"
    )

    def const(v: float) -> Any:
        return ir.Constant(ftype, [v] * width if width > 1 else v)

    def iconst(v: int) -> Any:
        return ir.Constant(itype, [v] * width if width > 1 else v)

    def fma(a: Any, b: Any, c: Any) -> Any:
        return builder.call(fma_fn, [a, b, c])

    name = "svmgeo_exp_table"
    table = module.globals.get(name)
    if table is None:
        atype = ir.ArrayType(i64, 2 * _N)
        table = ir.GlobalVariable(module, atype, name=name)
        table.linkage = "internal"
        table.global_constant = True
        table.initializer = ir.Constant(atype, [int(v) for v in EXP_TABLE])

    def lookup(index: Any) -> Any:
        zero = ir.Constant(ir.IntType(32), 0)
        if width == 1:
            return builder.load(builder.gep(table, [zero, index], inbounds=True))
        out = ir.Constant(itype, ir.Undefined)
        for j in range(width):
            lane = ir.Constant(ir.IntType(32), j)
            entry = builder.gep(table, [zero, builder.extract_element(index, lane)], inbounds=True)
            out = builder.insert_element(out, builder.load(entry), lane)
        return out

    kd = fma(const(_INV_LN2_N), x, const(_SHIFT))
    ki = builder.bitcast(kd, itype)
    kd = builder.fsub(kd, const(_SHIFT))
    r = fma(kd, const(_NEG_LN2_LO_N), fma(kd, const(_NEG_LN2_HI_N), x))
    index = builder.shl(builder.and_(ki, iconst(_N - 1)), iconst(1))
    tail = builder.bitcast(lookup(index), ftype)
    sbits = builder.add(lookup(builder.add(index, iconst(1))), builder.shl(ki, iconst(45)))
    r2 = builder.fmul(r, r)
    low = fma(r2, fma(r, const(_C3), const(_C2)), builder.fadd(tail, r))
    tmp = fma(builder.fmul(r2, r2), fma(r, const(_C5), const(_C4)), low)
    scale = builder.bitcast(sbits, ftype)
    return fma(scale, tmp, scale)


@_intrinsic
def _exp_table_method(typingctx: Any, x: Any) -> Any:
    if not isinstance(x, types.Float):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return emit_exp(builder, context.cast(builder, args[0], sig.args[0], types.float64))

    return types.float64(x), codegen


@njit(inline="always")
def exp_in_range(ax, x):
    r"""Does the table method take x (``ax`` = :math:`|x|`): :math:`2^{-54} \le |x| < 512` or
    :math:`x = 0`? (NaN: no.)"""
    return (ax < _LARGE) & ((ax >= _TINY) | (x == 0.0))


@njit(inline="always")
def exp(x):
    """:math:`e^x` for a float64: the table method in its range, ``math.exp`` elsewhere."""
    if exp_in_range(abs(x), x):
        return _exp_table_method(x)
    return math.exp(x)
