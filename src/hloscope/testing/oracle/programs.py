"""The oracle programs: small JAX programs whose HLO, inputs and XLA:CPU outputs form the corpus.

Each program is a ``hloscope.testing.cases.Case``: a function, deterministic numpy inputs, how it is
transformed (``mode``), jax config overrides, and the HLO op families (XLA opcode spellings) it
is meant to exercise. ``corpus.py`` (next to this file) turns each into files; every stage's
tests read those files, so keep shapes small and inputs deterministic.

More programs are in ``programs_more.py``, ``programs_edge.py`` and ``programs_sweep.py``
(imported at the end of this file).

Modes:
    single              jax.jit on one device
    pmap8               jax.pmap over 8 devices (leading axis 8; lowers to 8 partitions today)
    shard_map8          jax.jit(jax.shard_map(...)) over a mesh of the 8 devices
    jit_sharded8_shardy jax.jit with NamedShardings, Shardy partitioner
    jit_sharded8_gspmd  jax.jit with NamedShardings, GSPMD partitioner
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from hloscope.testing.cases import Case

from .registry import INT32_MIN, MODES, PROGRAMS, X64, f32, mesh8, program, rng

__all__ = ["INT32_MIN", "MODES", "PROGRAMS", "X64", "by_name", "f32", "mesh8", "program"]

# Edge values used by several elementwise programs.
SPECIAL_F32 = np.array(
    [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, 1e-30, -1e30, np.inf, -np.inf, np.nan, 2.5, 0.1],
    np.float32,
)
SPECIAL_S32 = np.array([0, 1, -1, 7, -7, 2**31 - 1, INT32_MIN, 100, -100, 3], np.int32)
DIVISORS_S32 = np.array([0, 0, 0, 2, -2, -1, -1, 7, 0, -3], np.int32)

# --------------------------------------------------------------------------------------------
# Elementwise


@program("unary_float", lambda: (SPECIAL_F32,),
         "exponential log exponential-minus-one log-plus-one tanh rsqrt sqrt cbrt erf "
         "sine cosine tan abs negate sign floor ceil round-nearest-afz round-nearest-even "
         "is-finite")
def _unary_float(x):
    return (jnp.exp(x), jnp.log(x), jnp.expm1(x), jnp.log1p(x), jnp.tanh(x),
            lax.logistic(x), lax.rsqrt(x), jnp.sqrt(x), jnp.cbrt(x), lax.erf(x),
            jnp.sin(x), jnp.cos(x), jnp.tan(x), jnp.abs(x), -x, jnp.sign(x), jnp.floor(x),
            jnp.ceil(x), lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
            lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), jnp.isfinite(x))


@program("binary_float", lambda: (SPECIAL_F32, SPECIAL_F32[::-1].copy()),
         "add subtract multiply divide maximum minimum power atan2 remainder")
def _binary_float(x, y):
    return (x + y, x - y, x * y, x / y, lax.max(x, y), lax.min(x, y), lax.pow(x, y),
            lax.atan2(x, y), lax.rem(x, y))


@program("compare_float", lambda: (SPECIAL_F32, SPECIAL_F32[::-1].copy()), "compare")
def _compare_float(x, y):
    return (lax.eq(x, y), lax.ne(x, y), lax.lt(x, y), lax.le(x, y), lax.gt(x, y), lax.ge(x, y))


@program("compare_int", lambda: (SPECIAL_S32, DIVISORS_S32, SPECIAL_S32.view(np.uint32)),
         "compare")
def _compare_int(x, y, u):
    uy = y.astype(jnp.uint32)
    return (lax.eq(x, y), lax.ne(x, y), lax.lt(x, y), lax.le(x, y), lax.gt(x, y),
            lax.ge(x, y), lax.lt(u, uy), lax.ge(u, uy))


@program("int_div_rem", lambda: (SPECIAL_S32, DIVISORS_S32), "divide remainder")
def _int_div_rem(x, y):
    return lax.div(x, y), lax.rem(x, y)


@program("uint_div_rem",
         lambda: (np.array([0, 1, 7, 2**32 - 1, 100, 5], np.uint32),
                  np.array([0, 0, 2, 3, 0, 7], np.uint32)),
         "divide remainder")
def _uint_div_rem(x, y):
    return lax.div(x, y), lax.rem(x, y)


@program("shifts",
         lambda: (np.array([1, -1, 5, INT32_MIN, 12345, -8, 3, 1], np.int32),
                  np.array([0, 1, 31, 32, 33, -1, 100, 4], np.int32)),
         "shift-left shift-right-logical shift-right-arithmetic")
def _shifts(x, s):
    u8 = x.astype(jnp.uint8)
    return (lax.shift_left(x, s), lax.shift_right_logical(x, s),
            lax.shift_right_arithmetic(x, s), lax.shift_left(u8, s.astype(jnp.uint8)),
            lax.shift_right_arithmetic(x.astype(jnp.int8), s.astype(jnp.int8)))


@program("bitwise", lambda: (SPECIAL_S32, DIVISORS_S32), "not and or xor count-leading-zeros popcnt")
def _bitwise(x, y):
    p, q = x > 0, y > 0
    return (~x, x & y, x | y, x ^ y, lax.clz(x), lax.population_count(x), ~p, p & q, p | q,
            p ^ q, lax.clz(x.astype(jnp.uint8)), lax.population_count(x.astype(jnp.int16)))


@program("small_ints",
         lambda: (np.array([127, -128, 100, -1, 0, 50], np.int8),
                  np.array([1, 255, 128, 7, 0, 200], np.uint8),
                  np.array([32767, -32768, 3, -3, 0, 1000], np.int16)),
         "add multiply negate abs divide")
def _small_ints(a, b, c):
    return (a + a, a * a, -a, jnp.abs(a), b + b, b * b, c * c, c + c,
            lax.div(a, jnp.int8(3)), lax.div(c, jnp.int16(-7)))


@program("int4_arith",
         lambda: (np.array([-8, -1, 0, 3, 7, 5], ml_dtypes.int4),
                  np.array([1, 2, 3, 4, 5, 15], ml_dtypes.uint4)),
         "add multiply convert")
def _int4_arith(a, b):
    return a + a, a * a, b + b, a.astype(jnp.int32), (a.astype(jnp.int32) + 1).astype(jnp.int4)


@program("float_edge_misc", lambda: (SPECIAL_F32 * 3 + 0.25,),
         "integer-pow exponential log-plus-one multiply")
def _float_edge_misc(x):
    return (lax.integer_pow(x, 3), lax.integer_pow(x, -2), jnp.exp2(x), lax.nextafter(x, x * 0),
            lax.erf_inv(jnp.clip(x, -0.99, 0.99)), lax.lgamma(jnp.abs(x) + 0.5),
            lax.digamma(jnp.abs(x) + 0.5), jnp.sinh(x), jnp.arccos(jnp.clip(x, -1, 1)))


@program("f16_arith", lambda: (f32(6, seed=3).astype(np.float16), f32(6, seed=4).astype(np.float16)),
         "add multiply divide exponential")
def _f16_arith(a, b):
    return a + b, a * b, a / b, jnp.exp(a), jnp.sum(a * b)


# --------------------------------------------------------------------------------------------
# Converts, bitcasts, precision


CONVERT_IN = np.array([0.0, -0.0, 1.5, -1.5, 2.5, 3e9, -3e9, 1e20, np.inf, -np.inf, np.nan,
                       255.5, -129.0, 65504.0, 70000.0, 1e-8, 448.0, 500.0, 57344.0, 3.3e38],
                      np.float32)


@program("convert_float_to_int", lambda: (CONVERT_IN,), "convert")
def _convert_float_to_int(x):
    return (x.astype(jnp.int32), x.astype(jnp.uint32), x.astype(jnp.int8), x.astype(jnp.uint8),
            x.astype(jnp.int16))


@program("convert_float_narrow", lambda: (CONVERT_IN,), "convert")
def _convert_float_narrow(x):
    return (x.astype(jnp.bfloat16), x.astype(jnp.float16), x.astype(jnp.float8_e4m3fn),
            x.astype(jnp.float8_e5m2), x.astype(jnp.bfloat16).astype(jnp.float32),
            x.astype(jnp.float8_e4m3fn).astype(jnp.float32))


@program("convert_int_to_float",
         lambda: (np.array([0, 1, -1, 2**24 + 1, 2**31 - 1, INT32_MIN], np.int32),
                  np.array([0, 255, 128, 1, 7, 200], np.uint8)),
         "convert")
def _convert_int_to_float(i, u):
    return (i.astype(jnp.float32), i.astype(jnp.bfloat16), i.astype(jnp.float16),
            u.astype(jnp.float32), i.astype(jnp.uint8), u.astype(jnp.int8), i > 0,
            (i > 0).astype(jnp.float32))


@program("bitcast_convert", lambda: (SPECIAL_F32[:8],), "bitcast-convert")
def _bitcast_convert(x):
    return (lax.bitcast_convert_type(x, jnp.int32), lax.bitcast_convert_type(x, jnp.uint8),
            lax.bitcast_convert_type(x.astype(jnp.bfloat16), jnp.uint16),
            lax.bitcast_convert_type(x.reshape(4, 2), jnp.float64) if False else
            lax.bitcast_convert_type(lax.bitcast_convert_type(x, jnp.uint16), jnp.float32))


@program("reduce_precision", lambda: (CONVERT_IN,), "reduce-precision")
def _reduce_precision(x):
    return (lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10),
            lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7),
            lax.reduce_precision(x, exponent_bits=4, mantissa_bits=3))


@program("select_clamp", lambda: (f32(3, 4, seed=1), f32(3, 4, seed=2)), "select clamp compare")
def _select_clamp(x, y):
    return (lax.select(x > y, x, y), lax.clamp(-0.5, x, 0.5), lax.clamp(y - 1, x, y + 1),
            jnp.where(x > 0, x, jnp.nan))


@program("bf16_arith", lambda: (f32(4, 8, seed=5).astype(ml_dtypes.bfloat16),
                                f32(8, 3, seed=6).astype(ml_dtypes.bfloat16)),
         "dot add multiply convert", rtol=1e-2, atol=1e-2)
def _bf16_arith(a, b):
    return a @ b, a * a + a, jnp.sum(a, axis=1), jnp.dot(a, b, preferred_element_type=jnp.float32)


@program("fp8_arith", lambda: (f32(8, seed=7).astype(ml_dtypes.float8_e4m3fn),
                               f32(8, seed=8).astype(ml_dtypes.float8_e5m2)),
         "convert multiply add")
def _fp8_arith(a, b):
    return a.astype(jnp.float32) * b.astype(jnp.float32), (a.astype(jnp.float32) + 1).astype(
        jnp.float8_e5m2), b


# --------------------------------------------------------------------------------------------
# Shapes and indexing


@program("shape_ops", lambda: (f32(2, 3, 4, seed=9),),
         "broadcast reshape transpose slice concatenate reverse")
def _shape_ops(x):
    return (lax.broadcast_in_dim(x[0], (5, 3, 4), (1, 2)), x.reshape(6, 4),
            jnp.transpose(x, (2, 0, 1)), x[:, 1:, ::2], lax.slice(x, (0, 0, 1), (2, 3, 4), (1, 2, 2)),
            jnp.concatenate([x, x * 2], axis=1), lax.rev(x, (0, 2)))


@program("pad", lambda: (f32(3, 4, seed=10),), "pad")
def _pad(x):
    return (lax.pad(x, 0.0, ((1, 2, 0), (0, 1, 0))),
            lax.pad(x, -1.0, ((-1, 1, 1), (2, -2, 2))),
            lax.pad(x, 0.0, ((0, 0, 2), (-1, -1, 0))))


@program("iota", lambda: (), "iota")
def _iota():
    return (lax.iota(jnp.int32, 5), lax.broadcasted_iota(jnp.float32, (3, 4), 1),
            lax.broadcasted_iota(jnp.uint8, (2, 3), 0))


@program("dynamic_slice", lambda: (f32(5, 6, seed=11), np.array([3, -2, 10, 1], np.int32)),
         "dynamic-slice dynamic-update-slice")
def _dynamic_slice(x, idx):
    upd = jnp.ones((2, 3), jnp.float32)
    return (lax.dynamic_slice(x, (idx[0], idx[1]), (2, 3)),
            lax.dynamic_slice(x, (idx[2], idx[3]), (2, 3)),
            lax.dynamic_update_slice(x, upd, (idx[0], idx[2])),
            lax.dynamic_update_slice(x, upd, (idx[1], idx[3])))


@program("gather", lambda: (f32(5, 4, seed=12), np.array([0, 4, 7, -1, 2], np.int32)), "gather")
def _gather(x, idx):
    dnums = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                       start_index_map=(0,))
    return (x[jnp.clip(idx, 0, 4)],
            jnp.take(x, idx, axis=0, mode="fill", fill_value=-7.0),
            lax.gather(x, idx[:, None], dnums, (1, 4), mode=lax.GatherScatterMode.CLIP),
            lax.gather(x, idx[:, None], dnums, (1, 2),
                       mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS),
            x[idx[:3, None], jnp.array([[0, 3]])])


@program("scatter", lambda: (f32(5, 3, seed=13), np.array([0, 2, 2, 9, -1, 4], np.int32),
                             f32(6, 3, seed=14)), "scatter")
def _scatter(x, idx, upd):
    dnums = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                        scatter_dims_to_operand_dims=(0,))
    return (x.at[idx].add(upd, mode="drop"),
            x.at[idx].set(upd, mode="drop"),
            x.at[jnp.array([4, 1, 0])].set(upd[:3], unique_indices=True),
            x.at[idx].max(upd, mode="clip"),
            lax.scatter_add(x, idx[:, None], upd, dnums,
                            mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS),
            x.at[idx].mul(upd, mode="drop"))


# --------------------------------------------------------------------------------------------
# Reductions, windows, sorting


@program("reduce", lambda: (f32(3, 5, seed=15), np.array([[1, 0, 3], [2, 2, 1]], np.int32)),
         "reduce")
def _reduce(x, i):
    return (jnp.sum(x, 0), jnp.max(x, 1), jnp.min(x), jnp.prod(x, 1), jnp.argmax(x, 1),
            jnp.argmin(x, 0), jnp.all(x > -1, 1), jnp.any(x > 1), jnp.sum(i), jnp.max(i, 0),
            lax.reduce((x, i.sum() + x.astype(jnp.int32)), (0.0, 0),
                       lambda a, b: (a[0] + b[0], a[1] + b[1]), (1,)))


@program("reduce_window", lambda: (f32(2, 7, 7, 3, seed=16),), "reduce-window")
def _reduce_window(x):
    maxpool = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    avg = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1),
                            ((0, 0), (1, 1), (0, 1), (0, 0))) / 4
    dil = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 2, 1), "VALID",
                            window_dilation=(1, 2, 1, 1), base_dilation=(1, 1, 2, 1))
    return maxpool, avg, dil


@program("select_and_scatter", lambda: (f32(2, 6, 6, 2, seed=17),),
         "select-and-scatter reduce-window")
def _select_and_scatter(x):
    def pool(v):
        return lax.reduce_window(v, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID").sum()

    def pool3(v):
        return (lax.reduce_window(v, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME") ** 2).sum()

    return jax.grad(pool)(x), jax.grad(pool3)(x)


@program("cumulative", lambda: (f32(4, 6, seed=18),), "reduce-window")
def _cumulative(x):
    return jnp.cumsum(x, 1), jnp.cumprod(x, 0), lax.cummax(x, 1), lax.cumlogsumexp(x, 0)


@program("sort", lambda: (np.array([3.0, np.nan, -1.0, 3.0, -0.0, 0.0, np.inf, -5.0], np.float32),
                          np.arange(8, dtype=np.int32)), "sort")
def _sort(x, i):
    keys = jnp.array([2, 1, 2, 1, 0, 0, 2, 1], jnp.int32)
    return (jnp.sort(x), jnp.argsort(x, stable=True), lax.sort((keys, x, i), num_keys=1,
                                                              is_stable=True),
            jnp.sort(x, descending=True), lax.sort((keys, i), num_keys=2))


@program("top_k", lambda: (f32(3, 10, seed=19),), "custom-call")
def _top_k(x):
    return lax.top_k(x, 3)


# --------------------------------------------------------------------------------------------
# Linear algebra


@program("dot_general", lambda: (f32(2, 3, 4, seed=20), f32(2, 4, 5, seed=21),
                                 np.arange(12, dtype=np.int8).reshape(3, 4)), "dot", rtol=1e-4)
def _dot_general(a, b, c):
    return (lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
            jnp.einsum("bij,bjk->ik", a, b),
            lax.dot_general(c, c, (((1,), (1,)), ((), ())), preferred_element_type=jnp.int32),
            jnp.dot(a[0], b[0], precision=lax.Precision.HIGHEST))


@program("conv", lambda: (f32(2, 3, 9, 9, seed=22), f32(4, 3, 3, 3, seed=23),
                          f32(2, 8, 8, 4, seed=24), f32(3, 3, 2, 4, seed=25)),
         "convolution", rtol=1e-4, atol=1e-5)
def _conv(x, w, xh, wh):
    nchw = lax.conv_general_dilated(x, w, (2, 1), ((1, 2), (0, 1)), lhs_dilation=(1, 2),
                                    rhs_dilation=(2, 1))
    nhwc = lax.conv_general_dilated(xh, wh, (1, 1), "SAME", feature_group_count=2,
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))
    bgc = lax.conv_general_dilated(xh, jnp.ones((2, 2, 4, 4), jnp.float32) * 0.1, (1, 1),
                                   "VALID", batch_group_count=2,
                                   dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return nchw, nhwc, bgc


@program("fft", lambda: (f32(4, 8, seed=26), f32(4, 8, seed=27)), "fft", rtol=1e-4, atol=1e-5)
def _fft(x, y):
    z = lax.complex(x, y)
    return (jnp.fft.fft(z), jnp.fft.ifft(z), jnp.fft.rfft(x), jnp.fft.irfft(z[:, :5], n=8),
            jnp.fft.fft2(z), jnp.fft.rfft2(x))


def _spd(n: int, seed: int) -> np.ndarray:
    a = f32(n, n, seed=seed)
    return (a @ a.T + n * np.eye(n, dtype=np.float32)).astype(np.float32)


@program("triangular_cholesky", lambda: (_spd(4, 28), f32(4, 3, seed=29)),
         "custom-call", rtol=1e-4, atol=1e-5)
def _triangular_cholesky(a, b):
    chol = jnp.linalg.cholesky(a)
    return (chol, lax.linalg.triangular_solve(chol, b, left_side=True, lower=True),
            lax.linalg.triangular_solve(chol, b.T, left_side=False, lower=True, transpose_a=True),
            jax.scipy.linalg.cho_solve((chol, True), b))


@program("decompositions", lambda: (_spd(4, 30),), "custom-call", rtol=1e-3, atol=1e-4)
def _decompositions(a):
    lu, piv, perm = lax.linalg.lu(a)
    q, r = jnp.linalg.qr(a)
    w, v = jnp.linalg.eigh(a)
    s = jnp.linalg.svd(a, compute_uv=False)
    # Canonical forms only: signs of eigen/singular vectors are not unique.
    return lu, piv, perm, jnp.abs(q), jnp.abs(r), w, jnp.abs(v), s


# --------------------------------------------------------------------------------------------
# Control flow


@program("fori_loop_2000", lambda: (np.float32(0.5),), "while")
def _fori_loop_2000(x):
    return lax.fori_loop(0, 2000, lambda i, v: jnp.sin(v) + 0.001 * i, x)


@program("while_data_dependent", lambda: (np.array([1.0, 3.0], np.float32),), "while")
def _while_data_dependent(x):
    def cond(c):
        return c[0].sum() < 1000.0

    def body(c):
        return c[0] * 1.7 + 1.0, c[1] + 1

    return lax.while_loop(cond, body, (x, jnp.int32(0)))


@program("scan_rnn", lambda: (f32(6, 3, seed=31), f32(4, 4, seed=32, scale=0.5),
                              f32(3, 4, seed=33)), "while dynamic-slice dynamic-update-slice",
         rtol=1e-4, atol=1e-5)
def _scan_rnn(xs, wh, wx):
    def step(h, x):
        h = jnp.tanh(h @ wh + x @ wx)
        return h, h.sum()

    return lax.scan(step, jnp.zeros(4, jnp.float32), xs)


@program("cond_switch", lambda: (np.int32(2), f32(3, seed=34)), "conditional")
def _cond_switch(i, x):
    a = lax.cond(i > 1, lambda v: v * 2, lambda v: v - 1, x)
    b = lax.switch(i, [jnp.sin, jnp.cos, lambda v: v**2, jnp.exp], x)
    c = lax.switch(i + 5, [jnp.sin, jnp.cos], x)  # clamped index
    return a, b, c


@program("map_loop", lambda: (f32(4, 3, seed=35),), "while")
def _map_loop(x):
    return lax.map(lambda r: jnp.sort(r) * r.sum(), x)


# --------------------------------------------------------------------------------------------
# Random numbers


@program("random_threefry", lambda: (np.uint32(42),), "shift-left xor add",
         config=(("jax_default_prng_impl", "threefry2x32"),))
def _random_threefry(seed):
    key = jax.random.PRNGKey(seed)
    k1, k2 = jax.random.split(key)
    return (jax.random.bits(k1, (4,)), jax.random.uniform(k2, (3,)),
            jax.random.normal(k1, (2, 2)))


@program("random_rbg", lambda: (np.uint32(7),), "rng-bit-generator",
         config=(("jax_default_prng_impl", "rbg"),))
def _random_rbg(seed):
    key = jax.random.PRNGKey(seed)
    return jax.random.bits(key, (5,)), jax.random.uniform(jax.random.split(key)[1], (3,))


@program("random_unsafe_rbg", lambda: (np.uint32(9),), "rng-bit-generator",
         config=(("jax_default_prng_impl", "unsafe_rbg"),))
def _random_unsafe_rbg(seed):
    key = jax.random.PRNGKey(seed)
    return jax.random.bits(key, (2, 3), dtype=jnp.uint32), jax.random.normal(key, (4,))


# --------------------------------------------------------------------------------------------
# Models


def _mlp_params() -> tuple[Any, ...]:
    return (f32(8, 16, seed=36, scale=0.3), np.zeros(16, np.float32),
            f32(16, 4, seed=37, scale=0.3), np.zeros(4, np.float32),
            f32(5, 8, seed=38), np.eye(4, dtype=np.float32)[[0, 1, 2, 3, 0]])


def _mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = jnp.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, -1))


@program("mlp_train_step", _mlp_params, "dot tanh reduce exponential log", rtol=1e-4, atol=1e-5)
def _mlp_train_step(w1, b1, w2, b2, x, y):
    params = (w1, b1, w2, b2)
    loss, grads = jax.value_and_grad(_mlp_loss)(params, x, y)
    return loss, tuple(p - 0.1 * g for p, g in zip(params, grads))


@program("transformer_block", lambda: (f32(2, 5, 8, seed=39), f32(8, 24, seed=40, scale=0.3),
                                       f32(8, 8, seed=41, scale=0.3), f32(8, seed=42)),
         "dot reduce exponential rsqrt divide", rtol=1e-4, atol=1e-5)
def _transformer_block(x, wqkv, wo, gamma):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    h = (x - mu) * lax.rsqrt(var + 1e-5) * gamma
    q, k, v = jnp.split(h @ wqkv, 3, axis=-1)
    q = q.reshape(2, 5, 2, 4)
    k = k.reshape(2, 5, 2, 4)
    v = v.reshape(2, 5, 2, 4)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / 2.0
    mask = jnp.tril(jnp.ones((5, 5), bool))
    p = jax.nn.softmax(jnp.where(mask, s, -1e9), axis=-1)
    o = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(2, 5, 8)
    return x + o @ wo


@program("remat_grad", lambda: (f32(4, 4, seed=43), f32(4, seed=44)),
         "dot tanh", rtol=1e-4, atol=1e-5)
def _remat_grad(w, x):
    @jax.checkpoint
    def layer(w, h):
        return jnp.tanh(w @ h)

    return jax.grad(lambda w: layer(w, layer(w, x)).sum())(w)


@program("complex64", lambda: (f32(5, seed=45), f32(5, seed=46)),
         "complex multiply divide abs exponential sqrt", rtol=1e-4, atol=1e-5)
def _complex64(a, b):
    z = lax.complex(a, b)
    w = lax.complex(b, a)
    return (z * w, z / w, jnp.abs(z), jnp.exp(z), jnp.conj(z), z.real, z.imag, jnp.sqrt(z),
            jnp.log(z), z @ w)


@program("float64", lambda: (np.array([1e-300, 1.0, np.pi, -2.5e200, np.nan], np.float64),
                             np.arange(5, dtype=np.int64) * 2**40),
         "add multiply sine convert", config=(("jax_enable_x64", True),))
def _float64(x, i):
    return x * 3 + 1, jnp.sin(x), i + i, i.astype(jnp.float64), x.astype(jnp.float32)


# --------------------------------------------------------------------------------------------
# Multi-device


def _pmap_inputs() -> tuple[Any, ...]:
    return (np.arange(8 * 4, dtype=np.float32).reshape(8, 4) / 7,)


def _collectives(x, axis: str):
    return (lax.psum(x, axis), lax.pmean(x, axis), lax.all_gather(x, axis),
            lax.psum_scatter(jnp.tile(x, 2), axis, tiled=True),
            lax.all_to_all(jnp.tile(x, 2).reshape(8, 1), axis, 0, 0, tiled=True),
            lax.ppermute(x, axis, [(i, (i + 1) % 8) for i in range(8)]),
            lax.pmax(x, axis), x * lax.axis_index(axis))


@program("pmap_collectives", _pmap_inputs,
         "all-reduce all-gather reduce-scatter all-to-all collective-permute", mode="pmap8",
         jit_kwargs=lambda: {"axis_name": "i"})
def _pmap_collectives(x):
    return _collectives(x, "i")


@program("pmap_train_step", lambda: tuple(np.broadcast_to(a, (8, *np.shape(a))).copy()
                                          for a in _mlp_params()[:4]) + (
    f32(8, 3, 8, seed=47), np.tile(np.eye(4, dtype=np.float32)[[0, 1, 3]], (8, 1, 1))),
    "all-reduce dot", mode="pmap8", jit_kwargs=lambda: {"axis_name": "i"}, rtol=1e-4, atol=1e-5)
def _pmap_train_step(w1, b1, w2, b2, x, y):
    params = (w1, b1, w2, b2)
    grads = jax.grad(_mlp_loss)(params, x, y)
    grads = lax.pmean(grads, "i")
    return tuple(p - 0.1 * g for p, g in zip(params, grads))


@program("pmap_gather_scatter", lambda: (f32(8, 10, 3, seed=80), rng(81).integers(-2, 12, (8, 6)).astype(np.int32),
                                         f32(8, 6, 3, seed=82)),
         "gather scatter", mode="pmap8", jit_kwargs=lambda: {"axis_name": "i"})
def _pmap_gather_scatter(table, idx, upd):
    # Per-device tables, indices (duplicates, out of range) and updates; a table every device
    # shares (lockstep reads it once); an embedding gradient; a batched (vmapped) gather.
    shared = jnp.arange(30, dtype=jnp.float32).reshape(10, 3)
    return (jnp.take(table, idx, axis=0, mode="clip"), jnp.take(shared, idx, axis=0, mode="clip"),
            jnp.zeros_like(table).at[idx].add(upd, mode="drop"), table.at[idx].max(upd, mode="drop"),
            jax.vmap(lambda row, j: row[j])(upd, jnp.clip(idx, 0, 2)))


def _shard_map_kwargs() -> dict[str, Any]:
    return {}


@program("shard_map_collectives", lambda: (np.arange(8 * 4, dtype=np.float32) / 7,),
         "all-reduce all-gather reduce-scatter all-to-all collective-permute", mode="shard_map8")
def _shard_map_collectives(x):
    def body(v):
        outs = _collectives(v, "x")
        return tuple(o.reshape(1, -1) for o in outs)

    return jax.shard_map(body, mesh=mesh8(), in_specs=P("x"), out_specs=P("x"),
                         check_vma=False)(x)


def _sharded_matmul_kwargs() -> dict[str, Any]:
    m = mesh8((4, 2), ("x", "y"))
    return {"in_shardings": (NamedSharding(m, P("x", "y")), NamedSharding(m, P("y", None))),
            "out_shardings": NamedSharding(m, P("x", None))}


for _mode in ("jit_sharded8_shardy", "jit_sharded8_gspmd"):
    program(f"sharded_matmul_{_mode.rsplit('_', 1)[1]}",
            lambda: (f32(8, 8, seed=48), f32(8, 6, seed=49)), "dot all-reduce", mode=_mode,
            jit_kwargs=_sharded_matmul_kwargs, rtol=1e-4, atol=1e-5)(
        lambda a, b: jnp.tanh(a @ b) + a.sum())


def _sharded_mlp_kwargs() -> dict[str, Any]:
    m = mesh8((2, 4), ("data", "model"))
    rep = NamedSharding(m, P())
    return {"in_shardings": (NamedSharding(m, P(None, "model")), rep,
                             NamedSharding(m, P("model", None)), rep,
                             NamedSharding(m, P("data", None)), NamedSharding(m, P("data", None)))}


for _mode in ("jit_sharded8_shardy", "jit_sharded8_gspmd"):
    program(f"sharded_mlp_step_{_mode.rsplit('_', 1)[1]}",
            lambda: _mlp_params()[:4] + (f32(8, 8, seed=50),
                                         np.eye(4, dtype=np.float32)[[0, 1, 2, 3] * 2]),
            "dot all-reduce", mode=_mode, jit_kwargs=_sharded_mlp_kwargs, rtol=1e-4, atol=1e-5)(
        _mlp_train_step)


def _manual_region_kwargs() -> dict[str, Any]:
    m = mesh8((4, 2), ("x", "y"))
    return {"in_shardings": (NamedSharding(m, P("x", "y")),),
            "out_shardings": NamedSharding(m, P("x", None))}


def _manual_region(a):
    m = mesh8((4, 2), ("x", "y"))
    b = jnp.sin(a) * 2  # global, sharded code around the manual region

    def body(v):  # per device: v is [2, 4]
        return lax.psum(v.sum(axis=1, keepdims=True), "y") + lax.axis_index("x")

    c = jax.shard_map(body, mesh=m, in_specs=P("x", "y"), out_specs=P("x", None))(b)
    return c * 3


for _mode in ("jit_sharded8_shardy", "jit_sharded8_gspmd"):
    program(f"manual_region_{_mode.rsplit('_', 1)[1]}", lambda: (f32(8, 8, seed=51),),
            "all-reduce custom-call", mode=_mode, jit_kwargs=_manual_region_kwargs,
            rtol=1e-5, atol=1e-5)(_manual_region)


def by_name() -> dict[str, Case]:
    """The programs keyed by name (names are unique; checked by the corpus tests)."""
    return {p.name: p for p in PROGRAMS}


# More programs live in their own files (imported last: they register through ``program`` above).
from . import programs_edge as _programs_edge  # noqa: E402,F401
from . import programs_more as _programs_more  # noqa: E402,F401
from . import programs_sweep as _programs_sweep  # noqa: E402,F401
