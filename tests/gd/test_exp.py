"""The engine's exp (svmgeo.gd._exp): the table method against an exact reference, against
the libm it reproduces, and on the arguments it hands to the libm."""

from __future__ import annotations

import math
import platform
from decimal import Decimal, localcontext

import numpy as np
import pytest
from numba import njit

from svmgeo.gd._exp import EXP_TABLE, exp
from svmgeo.gd._numba_lanes import LANES, _exp_on, vload, vstore


@njit(cache=False)
def _ours(xs):
    out = np.empty_like(xs)
    for i in range(xs.size):
        out[i] = exp(xs[i])
    return out


@njit(cache=False)
def _libm(xs):
    out = np.empty_like(xs)
    for i in range(xs.size):
        out[i] = math.exp(xs[i])
    return out


def _bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.uint64)


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _glibc_fma_exp() -> bool:
    """Is the libm glibc >= 2.28 (Szabolcs Nagy's exp) built with FMA for this CPU?"""
    name, version = platform.libc_ver()
    if name != "glibc" or not version:
        return False
    if tuple(int(v) for v in version.split(".")[:2]) < (2, 28):
        return False
    machine = platform.machine()
    return machine == "aarch64" or (machine == "x86_64" and {"fma", "avx2"} <= _cpu_flags())


def _exact_ulps(x: float, y: float) -> float:
    """|y - e^x| in units of the last place of e^x (50 decimal digits)."""
    with localcontext() as ctx:
        ctx.prec = 50
        exact = Decimal(x).exp()
        ulp = Decimal(math.ulp(float(exact)))
        return float(abs(Decimal(y) - exact) / ulp)


def _table_arguments() -> np.ndarray:
    """Arguments that reach every table entry at both ends of its interval, and their
    neighbours, over the whole range of the table method."""
    k = np.arange(-512 * 128, 512 * 128)
    edge = (k + 0.5) * math.log(2) / 128
    return np.concatenate([edge, np.nextafter(edge, 0.0), np.nextafter(edge, -np.inf)])


def test_the_table_is_two_to_the_j_over_128():
    # H_j (1 + T_j) = 2^(j/128) to far below H_j's ulp; H_j is the double nearest 2^(j/128)
    pairs = EXP_TABLE.view(np.float64).reshape(128, 2)
    high = (EXP_TABLE[1::2] + (np.arange(128, dtype=np.uint64) << np.uint64(45))).view(np.float64)
    exact = 2.0 ** (np.arange(128) / 128.0)
    np.testing.assert_allclose(high, exact, rtol=2**-52)
    with localcontext() as ctx:
        ctx.prec = 50
        ln2 = Decimal(2).ln()
        for j in (1, 37, 64, 127):
            ref = (ln2 * j / 128).exp()
            value = Decimal(float(high[j])) * (1 + Decimal(float(pairs[j, 0])))
            assert abs(value - ref) / ref < Decimal(2) ** -100


def test_within_0_52_ulp_of_the_exact_exponential():
    rng = np.random.default_rng(7)
    xs = np.concatenate(
        [rng.uniform(-511.0, 511.0, 1500), -rng.exponential(1.0, 500), [0.0, -1e-10, 1e-12]]
    )
    ys = _ours(xs)
    worst = max(_exact_ulps(float(x), float(y)) for x, y in zip(xs, ys, strict=True))
    assert worst <= 0.52


def test_zero_and_arguments_out_of_its_range_give_the_libm_result():
    xs = np.array(
        [
            -0.0,
            2.0**-54 / 2,
            -(2.0**-60),
            5e-324,
            512.0,
            -512.0,
            -600.0,
            -708.5,
            -745.1,
            -1e4,
            710.0,
            np.inf,
            -np.inf,
            np.nan,
        ]
    )
    np.testing.assert_array_equal(_bits(_ours(xs)), _bits(_libm(xs)))


@pytest.mark.skipif(
    not _glibc_fma_exp(), reason="the libm is not glibc >= 2.28 built with FMA on this CPU"
)
def test_equal_to_glibc_exp_bit_for_bit():
    rng = np.random.default_rng(0)
    xs = np.concatenate(
        [
            _table_arguments(),
            -rng.uniform(0.0, 745.0, 400_000),
            rng.uniform(-512.0, 512.0, 400_000),
            -rng.exponential(1.0, 200_000),
            rng.uniform(-1e-3, 1e-3, 100_000),
        ]
    )
    ours, libm = _bits(_ours(xs)), _bits(_libm(xs))
    assert int(np.count_nonzero(ours != libm)) == 0


@njit(cache=False)
def _lanes(xs, on):
    out = np.empty_like(xs)
    for i in range(0, xs.size, LANES):
        vstore(out, i, _exp_on(vload(xs, i), vload(on, i) != 0.0))
    return out


@njit(cache=False)
def _scalar(xs, on):
    out = np.empty_like(xs)
    for i in range(xs.size):
        out[i] = exp(xs[i]) if on[i] != 0.0 else 0.0
    return out


def test_the_lanes_are_the_scalar_function_on_masked_and_special_arguments():
    # the batched kernel's exp: the table method on every lane, the libm on a live lane out
    # of its range, 0.0 off the mask; bit for bit the scalar kernel's exp on every libm
    special = [0.0, -0.0, 2.0**-55, -(2.0**-54), 5e-324, 511.9999, 512.0, -512.0, -600.0]
    special += [-708.5, -745.2, 709.8, 710.0, 1e300, -1e300, np.inf, -np.inf, np.nan]
    rng = np.random.default_rng(3)
    n = 16 * LANES * 50
    xs = np.where(rng.random(n) < 0.5, rng.choice(special, n), rng.uniform(-745.0, 20.0, n))
    for on in (np.ones(n), (rng.random(n) < 0.7).astype(float)):
        np.testing.assert_array_equal(_bits(_lanes(xs, on)), _bits(_scalar(xs, on)))
