"""Oracle programs for edge cases: special functions, rounding, 64-bit and narrow integer and
float types, PRNG distributions, nested control flow and collectives on 2-D meshes (the ML
building blocks are in ``programs_more.py``).

Imported by ``programs.py`` so the programs land in ``PROGRAMS``; the corpus hashes this file
too, so editing it rebuilds its cases. Same rules as there: tiny shapes, deterministic inputs,
``families`` lists XLA opcodes that occur in the pre- or post-optimization HLO. A tolerance
looser than the default says why (XLA's own numerics, never a bug of ours).
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

from .registry import INT32_MIN, X64, f32, mesh8, program

# --------------------------------------------------------------------------------------------
# Elementwise: special functions, rounding, integer and narrow types


SPECIAL_X = np.array([0.1, 0.5, 1.0, 2.5, 7.0, 20.0, 1e-3, 3.3], np.float32)
SPECIAL_A = np.array([0.5, 1.5, 0.3, 4.0, 2.0, 25.0, 2.0, 1.0], np.float32)


def _special(x, a):
    sp = jax.scipy.special
    return (sp.erfc(x - 1), sp.erfinv(x / 21 - 0.5), sp.gammaln(x - 3.3), sp.digamma(x),
            lax.igamma(a, x), lax.igammac(a, x), sp.i0e(x), sp.i1e(x), sp.i0(x), sp.i1(x),
            sp.zeta(a + 1, x), sp.polygamma(1, x), sp.betainc(a, x, x / 21), sp.ndtri(x / 21),
            sp.log_ndtr(x - 5), sp.ndtr(x - 2), sp.xlogy(x, a), sp.xlog1py(x, a - 1), sp.entr(x),
            lax.random_gamma_grad(a, x),  # pyright: ignore[reportCallIssue]  (jax's stub wants dtype)
            sp.logit(x / 21), jnp.sinc(x), sp.gammasgn(x - 3.3),
            sp.expit(a - x), jnp.logaddexp(x, a), jnp.log2(x), jnp.arcsinh(x), jnp.arccosh(x + 1),
            jnp.arctanh(x / 21), sp.spence(x), sp.expi(x))


# f32: XLA's algebraic simplifier folds (y + 1) - 1 back to y inside arccosh(y + 1), so XLA
# keeps digits that the pre-optimization module's literal f32 arithmetic loses (2.3e-5 relative
# at arccosh(1.001)); the rest agrees to 8e-6 (XLA's own exp/log approximations).
@program("special_functions", lambda: (SPECIAL_X, SPECIAL_A),
         "exponential log erf power select while", rtol=1e-4)
def _special_functions(x, a):
    return _special(x, a)


@program("special_functions_f64", lambda: (SPECIAL_X.astype(np.float64), SPECIAL_A.astype(np.float64)),
         "exponential log erf power select while", config=X64, rtol=1e-13, atol=1e-15)
def _special_functions_f64(x, a):
    return _special(x, a)


@program("rounding_misc", lambda: (
    np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 8388609.0, -7.3, 7.3, 0.0, -0.0, np.nan,
              np.inf, -np.inf, 1e-3], np.float32),
    np.array([7, -7, 7, -7, 0, 1, INT32_MIN, 5], np.int32), np.array([2, 2, -2, -2, 3, -1, -1, 0], np.int32)),
    "round-nearest-even round-nearest-afz remainder divide sign is-finite floor")
def _rounding_misc(x, a, b):
    h, bf = x.astype(jnp.float16), x.astype(jnp.bfloat16)
    mant, expo = jnp.frexp(x)
    return (jnp.round(x), jnp.round(x, 2), lax.round(h, lax.RoundingMethod.AWAY_FROM_ZERO), jnp.rint(bf),
            jnp.trunc(x), jnp.floor_divide(a, b), jnp.remainder(a, b), jnp.fmod(a, b),
            jnp.remainder(x, 1.5), jnp.fmod(x, -1.5), jnp.floor_divide(x, 0.7), jnp.copysign(x, -1.0),
            jnp.isfinite(h), jnp.isnan(bf), jnp.isinf(x), jnp.sign(a), jnp.sign(h), jnp.nan_to_num(x),
            mant, expo, jnp.ldexp(x, 3), jnp.modf(x), jnp.signbit(x), lax.nextafter(x, jnp.float32(7.0)),
            jnp.clip(a, -3, 5), jnp.heaviside(x, 0.5), jnp.divmod(a, 3))


@program("integer_powers", lambda: (f32(6, seed=152), np.array([2, -3, 0, 5, 7, -1], np.int32),
                                    np.array([0, 1, 3, 5, 10, -1], np.int32)),
         "integer-pow multiply power")
def _integer_powers(x, b, e):
    return (lax.integer_pow(x, 0), lax.integer_pow(x, 5), lax.integer_pow(x, -3), lax.integer_pow(b, 3),
            lax.integer_pow(b, 0), jnp.power(b, e), lax.pow(x, e), x ** 2, jnp.power(x, 2.0),
            jnp.power(-2.0, x), lax.pow(x, jnp.float32(0.5)), jnp.power(b.astype(jnp.uint8), 3),
            lax.integer_pow(x.astype(jnp.bfloat16), 3))


_WIDE = np.array([0, 1, -1, 2**62, -2**63, 12345678901234, 255, -256], np.int64)


@program("bit_ops_wide", lambda: (_WIDE, np.array([0, 1, 63, 64, 65, -1, 7, 32], np.int64)),
         "count-leading-zeros popcnt shift-left shift-right-logical shift-right-arithmetic not",
         config=X64)
def _bit_ops_wide(x, s):
    u, i8, u16 = x.astype(jnp.uint64), x.astype(jnp.int8), x.astype(jnp.uint16)
    return (lax.clz(x), lax.clz(u), lax.population_count(x), lax.population_count(u), lax.clz(i8),
            lax.population_count(i8), lax.clz(u16), lax.population_count(u16), lax.shift_left(x, s),
            lax.shift_right_logical(x, s), lax.shift_right_arithmetic(x, s),
            lax.shift_left(u, s.astype(jnp.uint64)), lax.shift_right_logical(u, s.astype(jnp.uint64)),
            ~u, u ^ (u >> 3), lax.shift_right_arithmetic(i8, jnp.int8(3)), jnp.bitwise_count(i8))


@program("int64_uint64_arith", lambda: (
    np.array([2**63 - 1, -2**63, -1, 7, 0, 3 * 10**15], np.int64), np.array([2, -1, 0, -2, 0, 7], np.int64),
    np.array([2**64 - 1, 2**63, 1, 12345678901234567890, 0, 5], np.uint64)),
    "multiply divide remainder convert", config=X64)
def _int64_uint64_arith(a, b, u):
    ub = b.astype(jnp.uint64)
    return (a * a, a + a, lax.div(a, b), lax.rem(a, b), jnp.abs(a), -a, u * u, u + u, lax.div(u, ub),
            lax.rem(u, ub), a.astype(jnp.float32), u.astype(jnp.float64), u.astype(jnp.float32),
            (u.astype(jnp.float64) * 1.5).astype(jnp.uint64), (a.astype(jnp.float64) * 2).astype(jnp.int64),
            u.astype(jnp.int32), a.astype(jnp.uint8), jnp.maximum(a, b), u > ub,
            a.astype(jnp.uint64) > u, jnp.floor_divide(a, b), a.astype(jnp.bfloat16))


F64_IN = np.array([0.0, -0.0, 1.0, 1 + 2**-8 + 2**-30, 1 + 2**-11 + 2**-40, 3.5e38, 1e300, -1e300,
                   np.inf, np.nan, 0.1, -2.5, 700.0, 65520.0, 2**-20], np.float64)


@program("float64_edge", lambda: (F64_IN,), "convert exponential tanh sine atan2 cbrt", config=X64,
         rtol=1e-14, atol=1e-300)
def _float64_edge(x):
    # f64 -> bf16/f16 must round once from f64 (1 + 2^-8 + 2^-30 rounds up; via f32 it would tie).
    finite = jnp.where(jnp.isfinite(x), x, 0.0)
    return (jnp.exp(x), jnp.log(jnp.abs(x)), jnp.tanh(x), jnp.sin(finite), jnp.expm1(x),
            jnp.log1p(jnp.abs(x)), x.astype(jnp.float32), x.astype(jnp.bfloat16), x.astype(jnp.float16),
            x.astype(jnp.float8_e5m2), jnp.sqrt(x), lax.rsqrt(x), jnp.cbrt(x), jnp.arctan2(x, 0.5),
            jnp.cumsum(finite), jnp.floor(x), jnp.round(x), finite.astype(jnp.int64),
            x.astype(jnp.int32), lax.nextafter(x, jnp.float64(0)), jnp.sum(finite * finite))


def _c128_inputs() -> tuple[Any, ...]:
    a = np.array([1.0, -2.0, 0.0, 3.0, np.inf, 0.5], np.float64)
    b = np.array([0.5, 1.0, -1.0, 0.0, 1.0, -0.25], np.float64)
    return a, b, b[::-1].copy(), a[::-1].copy()


@program("complex128_ops", _c128_inputs, "complex multiply divide exponential log sqrt fft",
         config=X64, rtol=1e-12, atol=1e-12)
def _complex128_ops(a, b, c, d):
    z, w = lax.complex(a, b), lax.complex(c, d)
    fz = jnp.where(jnp.isfinite(z), z, 0)
    return (z * w, z / w, z / jnp.complex128(0), jnp.abs(z), jnp.exp(fz), jnp.log(z), jnp.sqrt(z),
            jnp.sign(z), fz ** 3, lax.integer_pow(fz, -2), jnp.conj(fz) @ w, jnp.angle(z), jnp.tanh(fz),
            jnp.sin(fz), jnp.fft.fft(fz), z.astype(jnp.complex64), jnp.sum(fz), jnp.prod(fz), z == w,
            jnp.isfinite(z), jnp.abs(z).astype(jnp.complex128))


LOW_IN = np.array([0.0, -0.0, 1.0, 3.140625, -2.71875, 0.1, 100.0, 300.0, 448.0, 460.0, 1e-5, 65504.0,
                   70000.0, -1e9, np.inf, np.nan], np.float32)


@program("fp_conversions", lambda: (LOW_IN,), "convert")
def _fp_conversions(x):
    # Single conversions and single ops on narrow floats: rounded once, so bit-exact.
    h, bf = x.astype(jnp.float16), x.astype(jnp.bfloat16)
    e4, e5 = x.astype(jnp.float8_e4m3fn), x.astype(jnp.float8_e5m2)
    return (h.astype(jnp.bfloat16), bf.astype(jnp.float16), e4.astype(jnp.float8_e5m2),
            e5.astype(jnp.float8_e4m3fn), e4 * e4, e5 + e5, bf * bf, h / jnp.float16(3),
            x.astype(jnp.float8_e4m3fnuz), x.astype(jnp.float8_e5m2fnuz), x.astype(jnp.float8_e4m3b11fnuz),
            bf.astype(jnp.float8_e4m3fn), h.astype(jnp.int8), e5.astype(jnp.int32), bf.astype(jnp.uint8),
            jnp.maximum(e4, e4[::-1]), e5 < e5[::-1], x.astype(jnp.float8_e3m4), x.astype(jnp.float4_e2m1fn))


@program("low_precision_math", lambda: (f32(24, seed=153) * 3,), "convert exponential tanh reduce")
def _low_precision_math(x):
    h, bf = x.astype(jnp.float16), x.astype(jnp.bfloat16)
    return (jnp.exp(h), jnp.tanh(bf), jnp.log(jnp.abs(bf)), jax.nn.sigmoid(h), jnp.sum(bf), jnp.sum(h),
            jnp.mean(bf), jax.nn.softmax(bf), jnp.sqrt(jnp.abs(h)), jnp.var(h))


@program("cumsum_bf16", lambda: (np.concatenate([[256.0], np.ones(39)]).astype(ml_dtypes.bfloat16),
                                 f32(40, seed=154).astype(ml_dtypes.bfloat16)),
         "reduce-window")
def _cumsum_bf16(ones, x):
    # A bf16 running sum rounds after every step (256 + 1 stays 256); over more than 16
    # elements XLA computes it in two levels (see the xfail of the pre stage).
    return jnp.cumsum(ones), jnp.cumsum(x), lax.cummax(x, reverse=True)


@program("int4_more", lambda: (np.array([[-8, -1, 0, 3], [7, 5, -3, 2]], ml_dtypes.int4),
                               np.array([[1, 2, 15, 0], [8, 9, 4, 3]], ml_dtypes.uint4),
                               f32(2, 4, seed=155) * 6),
         "convert transpose concatenate")
def _int4_more(a, u, x):
    # No int4 dot: XLA:CPU's verifier rejects the s32 convert with an E(4) layout it creates.
    return (a.T, jnp.concatenate([a, a], 1), a.reshape(8), jnp.maximum(a, jnp.int4(2)), a < 0,
            u // jnp.uint4(3), x.astype(jnp.int4), x.astype(jnp.uint4), a.astype(jnp.float32) * x,
            a.astype(jnp.uint4), u.astype(jnp.int4), a.astype(jnp.int8), jnp.sum(a.astype(jnp.int32)),
            a[:, ::-1], u * u)


# --------------------------------------------------------------------------------------------
# Random numbers


def _distributions(seed):
    key = jax.random.PRNGKey(seed)
    ks = jax.random.split(key, 8)
    return (jax.random.normal(ks[0], (3, 2)), jax.random.uniform(ks[1], (4,), minval=-2, maxval=5),
            jax.random.bernoulli(ks[2], 0.3, (8,)),
            jax.random.categorical(ks[3], jnp.log(jnp.array([0.1, 0.2, 0.7])), shape=(6,)),
            jax.random.permutation(ks[4], 7), jax.random.randint(ks[5], (5,), -3, 10),
            jax.random.truncated_normal(ks[6], -1.0, 1.0, (4,)), jax.random.gamma(ks[7], 2.0, (3,)),
            jax.random.choice(ks[0], 10, (4,), replace=False), jax.random.fold_in(key, 5),
            jax.random.exponential(ks[1], (2,)), jax.random.bits(key, (3,), jnp.uint8))


@program("random_distributions", lambda: (np.uint32(123),), "shift-left while sort erf",
         config=(("jax_default_prng_impl", "threefry2x32"),))
def _random_distributions(seed):
    return _distributions(seed)


@program("random_rbg_distributions", lambda: (np.uint32(77),), "rng-bit-generator sort",
         config=(("jax_default_prng_impl", "rbg"),))
def _random_rbg_distributions(seed):
    return _distributions(seed)


# --------------------------------------------------------------------------------------------
# Control flow, shapes, autodiff features


@program("scan_variants", lambda: (f32(7, 3, seed=155), np.arange(7, dtype=np.int32)),
         "while dynamic-slice dynamic-update-slice pad")
def _scan_variants(xs, ns):
    def step(carry, inp):
        (h, count), (x, n) = carry, inp
        h = jnp.tanh(h * 0.9 + x)
        return (h, count + n), (h.sum(), count * 2, x[::-1])

    (h_t, c_t), ys = lax.scan(step, (jnp.zeros(3, jnp.float32), jnp.int32(1)), (xs, ns), reverse=True,
                              unroll=3)
    c2, ys2 = lax.scan(lambda c, _: (c * 1.5 + 1, c), jnp.float32(0.5), None, length=5)
    ys3 = lax.associative_scan(jnp.add, xs, axis=0)
    ys4 = lax.associative_scan(lambda a, b: (a[0] * b[0], a[1] * b[0] + b[1]), (xs[:, 0], xs[:, 1]),
                               reverse=True)
    return h_t, c_t, ys, c2, ys2, ys3, ys4


@program("nested_control_flow", lambda: (f32(4, 3, seed=156), np.int32(3)),
         "while conditional dynamic-update-slice dynamic-slice")
def _nested_control_flow(x, n):
    def outer(i, acc):
        def inner(c):
            j, v = c
            return j + 1, v * 0.5 + jnp.sin(v)

        row = lax.cond(i % 2 == 0, lambda r: lax.while_loop(lambda c: c[0] < i + n, inner, (0, r))[1],
                       lambda r: -r, acc[i])
        return lax.dynamic_update_slice(acc, row[None], (i, 0))

    out = lax.fori_loop(0, 4, outer, x)

    def cond(c):
        return (c[0] < 10) & (c[2] < 100.0)

    def body(c):
        return c[0] + 1, c[1] * jnp.uint32(2654435761) + jnp.uint32(1), c[2] * 2 + 1

    return out, lax.while_loop(cond, body, (jnp.int32(0), jnp.uint32(1), jnp.float32(1.0)))


@program("debug_callbacks", lambda: (f32(3, 4, seed=175),), "custom-call conditional dot")
def _debug_callbacks(x):
    # jax.debug.callback (what jax.debug.print lowers to) runs Python on the host for its side
    # effect only; the module's results do not depend on it.
    jax.debug.callback(lambda v: None, x)
    y = jnp.tanh(x) @ x.T
    jax.debug.callback(lambda v, w: None, y, x.sum())
    return y, lax.cond(y.sum() > 0, lambda v: (jax.debug.callback(lambda u: None, v), v * 2)[1],
                       lambda v: v, y)


_BRANCHES = [lambda v: v + 1, jnp.sin, lambda v: v[::-1], jnp.cumsum, jnp.sort,
             lambda v: jnp.full_like(v, v.max())]


@program("switch_vmap_cond", lambda: (np.array([0, 1, 2, 3, 4, 5, -1, 9], np.int32), f32(8, 3, seed=157)),
         "conditional select")
def _switch_vmap_cond(idx, x):
    per_row = jax.vmap(lambda i, v: lax.switch(i, _BRANCHES, v))(idx, x)
    singles = tuple(lax.switch(idx[k], _BRANCHES, x[k]) for k in (3, 6, 7))
    vc = jax.vmap(lambda v: lax.cond(v.sum() > 0, lambda u: u * 2, lambda u: -u, v))(x)
    tup = lax.cond(idx[0] == 0, lambda a, b: (a + b, a.astype(jnp.int32)),
                   lambda a, b: (a - b, b.astype(jnp.int32)), x[0], x[1])
    return per_row, singles, vc, tup


@program("pad_roll_tile", lambda: (f32(3, 4, seed=158), np.int32(2)), "pad concatenate slice reverse")
def _pad_roll_tile(x, s):
    return (jnp.pad(x, ((1, 2), (2, 1)), mode="reflect"), jnp.pad(x, ((2, 0), (1, 3)), mode="symmetric"),
            jnp.pad(x, 2, mode="edge"), jnp.pad(x, ((1, 1), (5, 2)), mode="wrap"),
            jnp.pad(x, ((0, 2), (1, 1)), mode="linear_ramp", end_values=3.0), jnp.pad(x, 1, mode="maximum"),
            jnp.pad(x, ((1, 0), (0, 1)), constant_values=((1.0, 2.0), (3.0, 4.0))), jnp.roll(x, 2, axis=1),
            jnp.roll(x, -5), jnp.roll(x, s, axis=0), jnp.tile(x, (2, 1, 3)), jnp.repeat(x, 2, axis=0),
            jnp.repeat(x, jnp.array([1, 0, 3]), axis=0, total_repeat_length=5), jnp.flip(x), jnp.rot90(x),
            jnp.triu(x, 1), jnp.diag(x[:, :3]), jnp.diagonal(x, 1), jnp.trace(x), jnp.where(x > 0, x, s),
            jnp.clip(x, -0.5, s * 0.25))


@jax.custom_vjp
def _clip_gradient(x):
    return x


_clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -0.1, 0.1),))


@jax.custom_jvp
def _softplus(x):
    return jnp.logaddexp(x, 0.0)


_softplus.defjvp(lambda p, t: (_softplus(p[0]), t[0] * jax.nn.sigmoid(p[0])))


@program("remat_custom_vjp", lambda: (f32(4, 4, seed=159, scale=0.5), f32(3, 4, seed=160)),
         "opt-barrier dot log-plus-one")
def _remat_custom_vjp(w, x):
    def layer(w, h):
        return _softplus(_clip_gradient(h @ w))

    def loss(w):
        h = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)(w, x)
        h = jax.checkpoint(layer, prevent_cse=True)(w, h)
        h = lax.optimization_barrier(h)
        return jnp.sum(h ** 2) + lax.stop_gradient(h).sum()

    return jax.value_and_grad(loss)(w)


# --------------------------------------------------------------------------------------------
# Multi-device


@program("pmap_more_collectives", lambda: (np.arange(8 * 8 * 8, dtype=np.float32).reshape(8, 8, 8) / 50,
                                           np.arange(8, dtype=np.int32) * 3 - 7),
         "all-to-all collective-permute reduce-scatter all-gather all-reduce", mode="pmap8",
         jit_kwargs=lambda: {"axis_name": "i"})
def _pmap_more_collectives(x, n):  # per device: x f32[8, 8], n s32[]
    return (lax.all_to_all(x, "i", 0, 1), lax.all_to_all(x, "i", 1, 0, tiled=True),
            lax.ppermute(x, "i", [(k, (k - 1) % 8) for k in range(8)]),
            lax.ppermute(n, "i", [(0, 3), (5, 1), (3, 0)]),
            lax.psum_scatter(x, "i", scatter_dimension=1), lax.all_gather(x[0], "i", axis=0, tiled=True),
            lax.pmin(n, "i"), lax.psum(n > 0, "i"), lax.pmean(x, "i"),
            lax.psum(x[0], "i", axis_index_groups=[[0, 1, 2, 3], [4, 5, 6, 7]]),
            lax.psum((x[1], n), "i"), n * lax.axis_index("i"))


@program("pmap_scan_cond", lambda: (f32(8, 3, 4, seed=176),), "while conditional all-reduce", mode="pmap8",
         jit_kwargs=lambda: {"axis_name": "i"})
def _pmap_scan_cond(x):  # per device: x f32[3, 4]
    # Collectives inside a loop body and control flow on a reduced (so device-uniform) value.
    # Control flow that differs per device runs too (auto mode falls back per device), but
    # test_lockstep's forced lockstep mode rejects it by design (Diverged), so it stays out.
    def step(c, xi):
        g = lax.psum(xi * c, "i")
        return c + g.mean() * 0.01, g

    c, gs = lax.scan(step, jnp.float32(1.0), x)
    k = lax.axis_index("i")
    y = lax.cond(c > 1.5, lambda v: v * 2, lambda v: jnp.sort(v, axis=0) - v, gs)
    n = lax.psum(jnp.int32(1), "i") // 4  # 2 on every device: a uniform dynamic trip count
    z = lax.fori_loop(0, n, lambda j, v: v * 0.5 + j * k, jnp.float32(0))
    return c, y, z


@program("shard_map_2d_mesh", lambda: (np.arange(8 * 16, dtype=np.float32).reshape(8, 16) / 9,),
         "all-reduce all-gather collective-permute reduce-scatter all-to-all", mode="shard_map8")
def _shard_map_2d_mesh(a):
    m = mesh8((2, 4), ("x", "y"))

    def body(v):  # v: f32[4, 4] per device
        return (lax.psum(v, "x"), lax.all_gather(v, "y", axis=1, tiled=True),
                lax.ppermute(v, "y", [(j, (j + 1) % 4) for j in range(4)]),
                lax.psum_scatter(v, "y", scatter_dimension=0, tiled=True),
                lax.all_to_all(v, "x", 0, 0, tiled=True), lax.pmax(v, ("x", "y")),
                v + lax.axis_index("x") * 10 + lax.axis_index("y"), lax.pmean(v.sum(), "y")[None, None])

    return jax.shard_map(body, mesh=m, in_specs=P("x", "y"), out_specs=P("x", "y"), check_vma=False)(a)


@program("pmap_reductions_axis_index", lambda: (f32(8, 3, 4, seed=190),), "all-reduce", mode="pmap8",
         jit_kwargs=lambda: {"axis_name": "i"})
def _pmap_reductions_axis_index(x):  # per device: x f32[3, 4]; global f32[8, 3, 4]
    k = lax.axis_index("i")
    return (lax.psum(x, "i"), lax.pmean(x, "i"), lax.pmax(x, "i"), lax.pmin(x, "i"), x * k, k)


@program("shard_map_collectives_gspmd", lambda: (np.arange(8 * 6, dtype=np.float32).reshape(8, 6) / 5,),
         "all-reduce all-gather collective-permute all-to-all", mode="shard_map8",
         config=(("jax_use_shardy_partitioner", False),))
def _shard_map_collectives_gspmd(a):
    # The same kind of manual region as shard_map_collectives, lowered with GSPMD's markers
    # (Sharding, SPMDFullToShardShape, SPMDShardToFullShape) instead of Shardy's.
    def body(v):  # v: f32[1, 6] per device
        return (lax.psum(v, "x"), lax.all_gather(v, "x", axis=0, tiled=True),
                lax.ppermute(v, "x", [(j, (j + 1) % 8) for j in range(8)]),
                lax.all_to_all(jnp.tile(v[:, :1], (8, 1)) + jnp.arange(8.0)[:, None], "x", 0, 0, tiled=True),
                v * lax.axis_index("x"))

    return jax.shard_map(body, mesh=mesh8(), in_specs=P("x"), out_specs=(P("x"), P(), P("x"), P("x"), P("x")),
                         check_vma=False)(a)


@program("shard_map_moe_all_to_all", lambda: (f32(8 * 4, 6, seed=191), f32(8, 6, 6, seed=192, scale=0.3)),
         "all-to-all dot", mode="shard_map8", rtol=1e-5, atol=1e-5)
def _shard_map_moe_all_to_all(tokens, experts):
    # Mixture of experts, one expert per device: each device sends its 4 tokens' slot for
    # expert j to device j (all-to-all), applies its expert, and sends the results back.
    def body(t, w):  # t: f32[4, 6] tokens, w: f32[1, 6, 6] this device's expert
        slots = jnp.broadcast_to(t[None], (8, 4, 6))  # one copy of the tokens per expert
        routed = lax.all_to_all(slots, "x", 0, 0, tiled=True)  # [8 senders, 4, 6] for my expert
        out = jnp.tanh(routed @ w[0])
        back = lax.all_to_all(out, "x", 0, 0, tiled=True)  # [8 experts, 4, 6] for my tokens
        return back.mean(0)

    return jax.shard_map(body, mesh=mesh8(), in_specs=(P("x"), P("x")), out_specs=P("x"),
                         check_vma=False)(tokens, experts)


def _megatron_kwargs() -> dict[str, Any]:
    m = mesh8((2, 4), ("data", "model"))
    return {"in_shardings": (NamedSharding(m, P(None, "model")), NamedSharding(m, P("data")),
                             NamedSharding(m, P("data")))}


@program("shard_map_megatron_xent_grad", lambda: (f32(6, 16, seed=193), f32(8, 5, 6, seed=194),
                                                 np.random.default_rng(195).integers(0, 16, (8, 5)).astype(np.int32)),
         "all-reduce gather scatter call", mode="shard_map8", jit_kwargs=_megatron_kwargs, rtol=1e-5, atol=1e-6)
def _shard_map_megatron_xent_grad(w, x, y):
    # Megatron-style vocabulary-parallel cross entropy, manual over "model" only ("data" stays
    # automatic), its gradient taken inside the region through a jitted loss: jax writes the
    # backward pass as a call "transpose_jvp_jit_local_loss___" whose take_along_axis
    # transpose is a scatter, a Sharding annotation inside a reducer, and axis_index("model")
    # as a manual region nested in the outer one (Note [Nested manual regions]).
    m = mesh8((2, 4), ("data", "model"))

    def local_loss(w, x, y):  # w: f32[6, 4] this device's vocabulary slice
        logits = x @ w
        top = lax.stop_gradient(lax.pmax(lax.stop_gradient(logits).max(-1), "model"))
        z = lax.psum(jnp.exp(logits - top[..., None]).sum(-1), "model")
        local = y - lax.axis_index("model") * w.shape[1]
        ok = (local >= 0) & (local < w.shape[1])
        picked = jnp.take_along_axis(logits, jnp.clip(local, 0, w.shape[1] - 1)[..., None], axis=-1)[..., 0]
        return (jnp.log(z) + top - lax.psum(jnp.where(ok, picked, 0.0), "model")).mean()

    def body(w, x, y):
        return jax.value_and_grad(jax.jit(local_loss))(w, x, y)

    return jax.shard_map(body, mesh=m, in_specs=(P(None, "model"), P(), P()), out_specs=(P(), P(None, "model")),
                         axis_names={"model"}, check_vma=False)(w, x, y)


def _sharded_conv_kwargs() -> dict[str, Any]:
    m = mesh8((2, 4), ("data", "model"))
    return {"in_shardings": (NamedSharding(m, P(None, None, None, "model")),
                             NamedSharding(m, P("data", None, None, None))),
            "out_shardings": (NamedSharding(m, P()), NamedSharding(m, P(None, None, None, "model")))}


def _sharded_conv_step(w, x):
    def loss(w):
        h = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.mean(jax.nn.relu(h) ** 2)

    return jax.value_and_grad(loss)(w)


def _reshard_kwargs() -> dict[str, Any]:
    m = mesh8((2, 4), ("x", "y"))
    return {"in_shardings": (NamedSharding(m, P("x", "y")),),
            "out_shardings": (NamedSharding(m, P("y", "x")), NamedSharding(m, P(None, "x")),
                              NamedSharding(m, P()))}


def _reshard(a):  # a: f32[8, 16]
    m = mesh8((2, 4), ("x", "y"))
    b = lax.with_sharding_constraint(jnp.tanh(a), NamedSharding(m, P(None, ("x", "y"))))
    return b.T * 2, jnp.cumsum(a, axis=1)[:, ::2], jnp.sort(a, axis=0)[::3].sum(0)


for _mode in ("jit_sharded8_shardy", "jit_sharded8_gspmd"):
    _sfx = _mode.rsplit("_", 1)[1]
    program(f"sharded_conv_grad_{_sfx}", lambda: (f32(3, 3, 3, 8, seed=161, scale=0.3), f32(4, 5, 5, 3, seed=162)),
            "convolution all-reduce", mode=_mode, jit_kwargs=_sharded_conv_kwargs)(
        _sharded_conv_step)
    program(f"sharded_reshard_{_sfx}", lambda: (f32(8, 16, seed=163),),
            "sort all-to-all collective-permute all-gather", mode=_mode,
            jit_kwargs=_reshard_kwargs)(_reshard)
