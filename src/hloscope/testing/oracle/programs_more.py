"""More oracle programs: what a JAX/ML engineer writes day to day, chosen to reach op variants and
edge cases the programs in ``programs.py`` do not (conv backprop, pooling gradients, variadic
reductions, multi-operand sorts, batched gathers, LAPACK kernels, special functions, 64-bit and
narrow types, PRNG distributions, nested control flow, collectives on 2-D meshes).

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

from .programs import INT32_MIN, f32, mesh8, program

X64 = (("jax_enable_x64", True),)


def _spd(n: int, seed: int) -> np.ndarray:
    a = f32(n, n, seed=seed)
    return (a @ a.T + n * np.eye(n, dtype=np.float32)).astype(np.float32)


# --------------------------------------------------------------------------------------------
# Convolutions and pooling


def _conv_loss(w, b, x, y):
    h = lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jnp.mean((jax.nn.relu(h + b) - y) ** 2)


@program("conv2d_train_step", lambda: (f32(3, 3, 3, 4, seed=100, scale=0.3), np.zeros(4, np.float32),
                                       f32(2, 6, 6, 3, seed=101), f32(2, 3, 3, 4, seed=102)),
         "convolution reverse")
def _conv2d_train_step(w, b, x, y):
    # The input gradient of a strided conv is a conv with lhs dilation and a reversed window.
    loss, (gw, gb, gx) = jax.value_and_grad(_conv_loss, argnums=(0, 1, 2))(w, b, x, y)
    return loss, w - 0.1 * gw, b - 0.1 * gb, gx


# XLA:CPU's convolution kernels sum the products in a blocked order of their own; gradient
# entries that cancel to ~1e-3 keep absolute differences of a few 1e-5 from the larger terms.
@program("grouped_conv_grads", lambda: (f32(2, 4, 7, 7, seed=103), f32(4, 1, 3, 3, seed=104),
                                        f32(6, 2, 2, 2, seed=105)),
         "convolution reverse", rtol=1e-4, atol=1e-4)
def _grouped_conv_grads(x, wd, wg):
    # Depthwise then grouped NCHW convs; their kernel gradients carry batch_group_count.
    def loss(x, wd, wg):
        h = lax.conv_general_dilated(x, wd, (1, 1), ((1, 1), (2, 0)), rhs_dilation=(1, 2),
                                     feature_group_count=4)
        g = lax.conv_general_dilated(jnp.tanh(h), wg, (2, 1), "VALID", feature_group_count=2)
        return (g ** 2).sum()

    return jax.grad(loss, argnums=(0, 1, 2))(x, wd, wg)


@program("conv_transpose", lambda: (f32(1, 5, 5, 3, seed=106), f32(3, 3, 3, 2, seed=107),
                                    f32(3, 3, 2, 3, seed=108), f32(2, 4, 3, seed=109),
                                    f32(3, 3, 2, seed=110)),
         "convolution")
def _conv_transpose(x, w, wt, x1, w1):
    dn = ("NHWC", "HWIO", "NHWC")
    return (lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=dn),
            lax.conv_transpose(x, wt, (2, 1), "VALID", dimension_numbers=dn, transpose_kernel=True),
            lax.conv_transpose(x1, w1, (3,), ((1, 2),), dimension_numbers=("NWC", "WIO", "NWC")))


@program("conv_1d_3d", lambda: (f32(2, 3, 11, seed=111), f32(4, 3, 3, seed=112),
                                f32(1, 2, 4, 5, 4, seed=113), f32(3, 2, 2, 3, 2, seed=114)),
         "convolution")
def _conv_1d_3d(x1, w1, x3, w3):
    q = lambda v: jnp.round(v * 20).astype(jnp.int8)  # noqa: E731
    return (lax.conv_general_dilated(x1, w1, (2,), ((2, 1),), rhs_dilation=(3,)),
            lax.conv_general_dilated(x3, w3, (1, 2, 1), "SAME"),
            lax.conv_general_dilated(x1.astype(jnp.bfloat16), w1.astype(jnp.bfloat16), (1,), "VALID",
                                     preferred_element_type=jnp.float32),
            lax.conv_general_dilated(q(x1), q(w1), (1,), "SAME", preferred_element_type=jnp.int32))


def _avg_pool(x):  # flax's avg_pool with count_include_pad=False
    s = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    n = lax.reduce_window(jnp.ones_like(x), 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    return s / n


def _max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1),
                             ((0, 0), (0, 1), (0, 1), (0, 0)))


@program("pooling_grads", lambda: (f32(2, 7, 6, 3, seed=115),),
         "reduce-window select-and-scatter pad")
def _pooling_grads(x):
    def loss(v):
        return (_avg_pool(v) ** 2).sum() + (_max_pool(jnp.tanh(v)) * v.mean()).sum()

    # Rounded inputs tie inside windows, so the max-pool gradient shows which tie XLA picks.
    ties = jnp.round(x)
    _, pool_vjp = jax.vjp(_max_pool, ties)
    return _avg_pool(x), _max_pool(x), jax.grad(loss)(x), pool_vjp(jnp.ones_like(_max_pool(ties)))


@program("norm_train_step", lambda: (f32(4, 3, 3, 5, seed=116), 1 + f32(5, seed=117, scale=0.1),
                                     f32(5, seed=118, scale=0.1), np.zeros(5, np.float32),
                                     np.ones(5, np.float32)),
         "reduce rsqrt", atol=1e-5)
# atol: the beta gradient's first element sums 36 terms of order one that cancel to 1e-2, so
# the oracle's FMA contractions (Note [The oracle's instruction set] in tests/conftest.py) move
# it by about 1e-6, which the interpreter, rounding each operation, does not reproduce.
def _norm_train_step(x, gamma, beta, mean_ema, var_ema):
    # Batch norm (statistics over N, H, W) then layer norm and exact GELU, and their gradients.
    def loss(params, x):
        g, b = params
        mu, var = x.mean((0, 1, 2)), x.var((0, 1, 2))
        h = (x - mu) * lax.rsqrt(var + 1e-5) * g + b
        lm = h.mean(-1, keepdims=True)
        lv = ((h - lm) ** 2).mean(-1, keepdims=True)
        out = (h - lm) / jnp.sqrt(lv + 1e-6)
        return jnp.sum(jax.nn.gelu(out, approximate=False) ** 2), (mu, var)

    (value, (mu, var)), (grads, gx) = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(
        (gamma, beta), x)
    return value, grads, gx, 0.9 * mean_ema + 0.1 * mu, 0.9 * var_ema + 0.1 * var


@program("attention_bf16", lambda: tuple(f32(2, 6, 2, 4, seed=s).astype(ml_dtypes.bfloat16)
                                         for s in (119, 120, 121)),
         "dot exponential reduce convert")
def _attention_bf16(q, k, v):
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(jnp.bfloat16(4))
    mask = jnp.tril(jnp.ones((6, 6), bool))
    p = jax.nn.softmax(jnp.where(mask, s, jnp.finfo(jnp.bfloat16).min), axis=-1)
    o = jnp.einsum("bhqk,bkhd->bqhd", p, v)
    return o, p, jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")


# --------------------------------------------------------------------------------------------
# Reductions, scans, sorting


@program("argminmax", lambda: (
    np.array([[1.0, np.nan, 3.0, 3.0], [2.0, 2.0, -np.inf, 0.0], [-0.0, 0.0, 0.0, -0.0]], np.float32),
    np.array([[3, 7, 7, -1], [0, 0, 0, 0], [-5, 9, 9, 2]], np.int8)), "reduce")
def _argminmax(x, i):
    # Variadic (value, index) reduces: NaN wins, ties take the lowest index.
    return (jnp.argmax(x, 0), jnp.argmax(x, 1), jnp.argmin(x, 1), jnp.argmax(x), jnp.nanargmax(x, 1),
            jnp.nanargmin(x, 0), jnp.argmax(x.astype(jnp.bfloat16), 1), jnp.argmin(i, 1),
            jnp.argmax(i, 0), jnp.argmax(i.astype(jnp.uint32), 1), jnp.argmax(x > 1, 1),
            jnp.argmin(x, axis=1, keepdims=True), jnp.max(i, 1), jnp.min(x, 0))


@program("cumulative_ops", lambda: (f32(3, 33, seed=122), np.arange(-12, 12, dtype=np.int32).reshape(4, 6)),
         "reduce-window")
def _cumulative_ops(x, i):
    return (lax.cumsum(x, 1, reverse=True), lax.cummin(x, 1, reverse=True),
            lax.cumlogsumexp(x, 1, reverse=True), jnp.cumsum(i, 0), jnp.cumprod(i % 3 + 1, 1),
            lax.cummax(i, 0, reverse=True), jnp.cumsum(x > 0, 1),
            jnp.cumulative_sum(i, axis=1, include_initial=True))


@program("sort_variants", lambda: (
    f32(4, 5, seed=123), np.array([3, 1, 3, 1, 2, 2, 0, 3], np.int32),
    np.array([0.5, np.nan, -0.0, 0.0, np.inf, -np.nan, -1.0, 0.5], np.float32)), "sort gather")
def _sort_variants(x, k, v):
    z = lax.complex(jnp.round(x[0]), x[1])
    return (jnp.sort(x, axis=0), jnp.argsort(x, axis=0, descending=True, stable=True),
            jnp.lexsort((k, (k * 7) % 3)), jnp.sort(v), jnp.argsort(v, stable=True),
            jnp.sort(v.astype(jnp.bfloat16)), jnp.sort(z), jnp.median(x, axis=1),
            jnp.sort(k.astype(jnp.uint8), descending=True), lax.sort((k, v, -k), num_keys=2))


@program("unique_bincount", lambda: (np.array([3, 1, 3, 7, 1, 1, -2, 9], np.int32), f32(8, seed=124)),
         "sort scatter gather while")
def _unique_bincount(i, w):
    vals, idx, inv, counts = jnp.unique(i, return_index=True, return_inverse=True, return_counts=True,
                                        size=6, fill_value=-1)
    s = jnp.sort(i)
    q = jnp.array([0, 3, 10, -5, 1], jnp.int32)
    return (vals, idx, inv, counts, jnp.bincount(jnp.clip(i, 0), weights=w, length=10),
            jnp.bincount(jnp.abs(i), length=8), jnp.searchsorted(s, q, side="right"),
            jnp.searchsorted(s, q, method="compare_all"), jnp.searchsorted(s, q, method="sort"),
            jnp.digitize(w, jnp.array([-1.0, 0.0, 0.5])))


@program("top_k_variants", lambda: (
    np.array([[1.0, 3.0, 3.0, np.nan, -np.inf, 0.0, -0.0, 2.0],
              [5.0, -1.0, 5.0, 5.0, 0.25, 7.0, 7.0, -3.0]], np.float32),
    np.array([[4, -2, 4, 9, 0, 9, 1, 4]], np.int32)), "sort topk custom-call")
def _top_k_variants(x, i):
    return (lax.top_k(x.astype(jnp.bfloat16), 4), lax.top_k(i, 3), lax.top_k(x, 1),
            lax.approx_max_k(x[1:], 2), lax.approx_min_k(x[1:], 3), jnp.partition(i, 2, axis=1))


@program("reductions_more", lambda: (f32(3, 4, 5, seed=125),
                                     np.array([[1, 2**20, 3], [-5, 2**15, 7]], np.int32),
                                     np.array([[np.nan, 1, 2], [3, np.nan, -1]], np.float32)),
         "reduce sort")
def _reductions_more(x, i, n):
    return (jax.nn.logsumexp(x, axis=(0, 2)), x.var(1), x.std((0, 1), ddof=1), jnp.median(x, axis=2),
            jnp.percentile(x, 30.0, axis=1), jnp.nanmax(n, 1), jnp.nanmin(n, 0), jnp.nansum(n),
            jnp.nanmean(n, 1), jnp.prod(i, 1), jnp.max(i > 2, 0), jnp.mean(i, 1),
            jnp.all(x > -2, (0, 2)), jnp.any(x > 2, 1), lax.reduce(x, 10.0, lax.add, (1,)),
            jnp.max(x, axis=(0, 1), initial=1.0, where=x < 1), jnp.linalg.norm(x, axis=-1),
            jnp.count_nonzero(x > 0, 1), jnp.ptp(x, 2))


@program("zero_size", lambda: (np.zeros((0, 3), np.float32), f32(2, 3, seed=126)), "dot")
def _zero_size(e, x):
    # jax folds most zero-size ops away; what remains are empty literals and parameters and a
    # dot with an empty contraction (zeros).
    none = jnp.zeros(0, jnp.int32)
    return (jnp.sum(e, 0), jnp.max(e, 0, initial=-1.0), jnp.concatenate([e, x]), e @ x.T, e.T @ e,
            jnp.cumsum(e, 0), jnp.sort(e, 0), jnp.pad(e, ((1, 1), (0, 0))), e * 2, jnp.argsort(e, 0),
            x[:0], jnp.take(x, none, axis=0), x.at[none].add(1.0), jnp.mean(e, 0))


@program("reduce_window_variants", lambda: (
    (np.arange(-10, 14, dtype=np.int32).reshape(2, 3, 4) * 7) % 11, f32(2, 9, seed=127)),
    "reduce-window")
def _reduce_window_variants(i, x):
    pos = jnp.broadcast_to(jnp.arange(9.0, dtype=jnp.float32), x.shape)

    def argmax_pair(a, b):
        return jnp.maximum(a[0], b[0]), jnp.where(a[0] >= b[0], a[1], b[1])

    return (lax.reduce_window(i, jnp.int32(INT32_MIN), lax.max, (1, 2, 2), (1, 1, 2),
                              ((0, 0), (1, 1), (0, 1))),
            lax.reduce_window(x, jnp.inf, lax.min, (1, 3), (1, 2), ((0, 0), (2, 2)), base_dilation=(1, 2)),
            lax.reduce_window(x, 1.0, lax.add, (1, 3), (1, 1), ((0, 0), (1, 1))),
            lax.reduce_window(x, 1.0, lax.mul, (2, 2), (1, 3), "VALID"),
            lax.reduce_window((x, pos), (-jnp.inf, -1.0), argmax_pair, (1, 3), (1, 2), "SAME"),
            lax.reduce_window(i > 3, False, lax.bitwise_or, (2, 1, 2), (1, 1, 1), "VALID"),
            lax.reduce_window(x, 0.0, lax.add, (1, 2), (1, 4), "VALID", window_dilation=(1, 3)))


# --------------------------------------------------------------------------------------------
# Gather, scatter, einsum, dots


@program("segment_reductions", lambda: (f32(8, 3, seed=128), np.array([0, 2, 2, 5, -1, 3, 0, 9], np.int32)),
         "scatter")
def _segment_reductions(x, seg):
    # Duplicate ids combine; ids outside [0, 6) are dropped (or clipped with mode="clip").
    n = 6
    return (jax.ops.segment_sum(x, seg, n), jax.ops.segment_max(x, seg, n), jax.ops.segment_min(x, seg, n),
            jax.ops.segment_prod(x, seg, n),
            jax.ops.segment_sum(x, jnp.sort(seg), n, indices_are_sorted=True),
            jax.ops.segment_sum(seg, seg, n, mode="clip"), jax.ops.segment_max(seg, seg, n))


@program("scatter_variants", lambda: (f32(4, 5, seed=129),
                                      np.array([[0, 1], [3, 4], [0, 1], [2, 7], [-1, 0]], np.int32),
                                      np.array([1, 3, 1, 0], np.int32),
                                      np.arange(20, dtype=np.int32).reshape(4, 5)),
         "scatter gather")
def _scatter_variants(x, ij, idx, n):
    return (x.at[ij[:, 0], ij[:, 1]].add(1.0, mode="drop"),
            x.at[:, idx].set(-x[:, :4]),
            n.at[idx].min(jnp.array([[3], [-1], [2], [40]], jnp.int32)),
            n.at[idx].mul(2),
            (x > 0).at[idx].set(True),
            x.at[idx].apply(jnp.sin),
            x.at[idx].divide(2.0),
            x.at[idx, 1:3].get(mode="fill", fill_value=-1.0),
            x.at[jnp.array([[0, 1], [1, 3]])].add(jnp.ones((2, 2, 5))),
            x.at[ij[:, 0], ij[:, 1]].get(mode="fill", fill_value=np.nan))


@program("batched_gather_scatter", lambda: (f32(3, 5, 4, seed=130), np.array([[1, 4], [0, 0], [3, 2]], np.int32),
                                            np.array([4, -1, 2], np.int32)),
         "gather scatter")
def _batched_gather_scatter(x, idx, start):
    return (jax.vmap(lambda a, i: a[i])(x, idx),
            jax.vmap(lambda a, i: a.at[i].add(1.0))(x, idx),
            jax.vmap(lambda a, s: lax.dynamic_slice_in_dim(a, s, 2))(x, start),
            jax.vmap(lambda a, s: lax.dynamic_update_slice_in_dim(a, jnp.ones((2, 4)), s, 0))(x, start),
            jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1),
            jax.nn.one_hot(idx, 5),
            jnp.take(x, start, axis=1, mode="wrap"), jnp.take(x, start, axis=2, mode="clip"))


@program("einsum_variants", lambda: (f32(2, 3, 4, seed=131), f32(4, 3, 5, seed=132), f32(3, 3, seed=133),
                                     f32(5, 2, seed=134)),
         "dot")
def _einsum_variants(a, b, c, d):
    return (jnp.einsum("ijk,kjl->jil", a, b), jnp.einsum("ijk,kjl->lij", a, b), jnp.einsum("ii->i", c),
            jnp.einsum("ii", c), jnp.einsum("ij,ji->", c, c), jnp.einsum("i,j->ij", c[0], d[:, 0]),
            jnp.einsum("bij,lb->ijl", a, d), jnp.einsum("ijk,ijk->k", a, a),
            jnp.einsum("ijk,kjl,lm->im", a, b, d), jnp.tensordot(a, b, ((1, 2), (1, 0))),
            jnp.inner(c, c), jnp.vdot(a, a), jnp.outer(c[0], d[:, 1]))


_I8 = np.array([[127, -128, 3, -7], [100, 100, -100, 1], [0, -1, 55, -128]], np.int8)


@program("dot_int_types", lambda: (_I8, _I8.T.copy(), _I8.view(np.uint8)), "dot")
def _dot_int_types(a, b, u):
    big = a.astype(jnp.int32) * 2**20
    return (lax.dot(a, b, preferred_element_type=jnp.int32), jnp.matmul(a, b),
            lax.dot(u, u.T, preferred_element_type=jnp.uint32), lax.dot(big, b.astype(jnp.int32)),
            lax.dot_general(a, a, (((1,), (1,)), ((), ())), preferred_element_type=jnp.int16),
            jnp.matmul(a > 0, b > 0), jnp.matmul(u, u.T))


@program("dot_low_precision", lambda: (f32(3, 8, seed=135).astype(ml_dtypes.bfloat16),
                                       f32(8, 4, seed=136).astype(ml_dtypes.bfloat16)),
         "dot convert")
def _dot_low_precision(a, b):
    h, g = a.astype(jnp.float16), b.astype(jnp.float16)
    return (lax.dot(a, b, preferred_element_type=jnp.float32), a @ b, h @ g,
            lax.dot(h, g, preferred_element_type=jnp.float32),
            jnp.einsum("ik,kj->ij", a, b, preferred_element_type=jnp.float32),
            a.astype(jnp.float8_e4m3fn).astype(jnp.float32) @ b.astype(jnp.float32))


@program("moe_routing", lambda: (f32(6, 4, seed=137), f32(4, 3, seed=138), f32(3, 4, 5, seed=139)),
         "dot sort scatter topk")
def _moe_routing(x, wg, we):
    # Top-1 routing to experts, tokens grouped by expert, a ragged_dot per group, scattered back.
    probs = jax.nn.softmax(x @ wg)
    top_p, top_e = lax.top_k(probs, 1)
    order = jnp.argsort(top_e[:, 0], stable=True)
    sizes = jnp.bincount(top_e[:, 0], length=3).astype(jnp.int32)
    y = lax.ragged_dot(x[order], we, sizes)
    return jnp.zeros((6, 5), jnp.float32).at[order].set(y * top_p[order]), sizes


@program("signal_misc", lambda: (f32(12, seed=170), f32(4, seed=171), f32(5, 6, seed=172), f32(3, 3, seed=173)),
         "convolution scatter gather while")
def _signal_misc(x, k, img, k2):
    # numpy-style helpers that lower to convolutions, searches and compactions.
    xp = jnp.linspace(-2.0, 2.0, 7)
    return (jnp.convolve(x, k), jnp.convolve(x, k, mode="same"), jnp.correlate(x, k, mode="valid"),
            jax.scipy.signal.convolve2d(img, k2, mode="same"), jnp.interp(x, xp, jnp.sin(xp)),
            jnp.histogram(x, bins=5, range=(-2.0, 2.0)), jnp.nonzero(x > 0.5, size=5, fill_value=-1),
            jnp.argwhere(img > 1.0, size=4, fill_value=0), jnp.polyval(k, x),
            jnp.where(x > 0, size=3, fill_value=99))


@program("image_resize", lambda: (f32(1, 5, 6, 2, seed=174),), "dot")
def _image_resize(im):
    return (jax.image.resize(im, (1, 8, 9, 2), "nearest"), jax.image.resize(im, (1, 8, 4, 2), "linear"),
            jax.image.resize(im, (1, 3, 11, 2), "cubic"), jax.image.resize(im, (1, 7, 7, 2), "lanczos3"),
            jax.image.scale_and_translate(im, (1, 6, 6, 2), (1, 2), jnp.array([1.2, 0.9]),
                                          jnp.array([0.5, -0.25]), "linear"))


@program("x64_indexing_donated", lambda: (np.arange(12, dtype=np.float64).reshape(4, 3) / 7,
                                          np.array([3, -1, 0, 7], np.int64), np.int64(2)),
         "gather scatter dynamic-slice dynamic-update-slice sort", config=X64,
         jit_kwargs=lambda: {"donate_argnums": (0,)})
def _x64_indexing_donated(x, idx, s):
    # int64 indices everywhere (x64), and a donated buffer (input_output_alias in the header).
    upd = x.at[idx].add(1.0, mode="drop")
    return (upd, x[jnp.clip(idx, 0, 3)], jnp.take(x, idx, axis=0, mode="clip"),
            lax.dynamic_slice(x, (s, jnp.int64(1)), (2, 2)), lax.dynamic_update_slice(x, x[:1] * 2, (s, 0)),
            jnp.argsort(x[:, 0], descending=True), jnp.cumsum(idx), jnp.arange(5, dtype=jnp.int64) * s)


# --------------------------------------------------------------------------------------------
# Linear algebra (LAPACK custom calls on CPU)


def _solve_inputs() -> tuple[Any, ...]:
    a = np.stack([_spd(3, 140) + f32(3, 3, seed=141), f32(3, 3, seed=142) + 3 * np.eye(3, dtype=np.float32)])
    return a.astype(np.float32), f32(2, 3, 2, seed=143)


@program("linalg_solve_inv", _solve_inputs, "custom-call")
def _linalg_solve_inv(a, b):
    sign, logdet = jnp.linalg.slogdet(a)
    return (jnp.linalg.solve(a, b), jnp.linalg.inv(a), jnp.linalg.det(a), sign, logdet,
            jax.scipy.linalg.lu_factor(a[0]), jnp.linalg.matrix_power(a[1], 3), jnp.linalg.pinv(a[0]),
            jax.scipy.linalg.solve_triangular(a[1], b[1], lower=False, trans=1),
            jax.scipy.linalg.lu(a[1]))


@program("linalg_eig", lambda: (_spd(4, 144), f32(4, 3, seed=145), f32(3, 3, seed=146)),
         "custom-call")
def _linalg_eig(s, m, g):
    # Signs and phases of singular/eigen vectors are LAPACK's choice; compare magnitudes.
    w, v = jnp.linalg.eigh(s, UPLO="U")
    u, sv, vh = jnp.linalg.svd(m, full_matrices=True)
    u2, s2, vh2 = lax.linalg.svd(m, full_matrices=False, algorithm=lax.linalg.SvdAlgorithm.QR)
    q, r = jnp.linalg.qr(m, mode="complete")
    qp, rp, piv = jax.scipy.linalg.qr(m, pivoting=True, mode="economic")
    ev, evec = jnp.linalg.eig(g)
    t, z = jax.scipy.linalg.schur(g)
    hs = jax.scipy.linalg.hessenberg(s)
    tri = lax.linalg.tridiagonal_solve(jnp.array([0.0, 1.0, -0.5, 2.0]), s[0] + 4, jnp.array([0.5, 1.0, 0.25, 0.0]), m)
    return (w, jnp.abs(v), jnp.abs(u), sv, jnp.abs(vh), jnp.abs(u2), s2, jnp.abs(vh2), jnp.abs(q),
            jnp.abs(r), jnp.abs(jnp.linalg.qr(m, mode="r")), jnp.abs(qp), jnp.abs(rp), piv, ev, jnp.abs(evec),
            jnp.abs(jnp.diag(t)), jnp.abs(z), jnp.abs(hs), jnp.linalg.eigvalsh(s), jnp.linalg.matrix_rank(m),
            tri, jnp.linalg.lstsq(m, s[:, :2])[0])


def _linalg_x64_inputs() -> tuple[Any, ...]:
    z = (f32(3, 3, seed=148) + 1j * f32(3, 3, seed=149)).astype(np.complex64)
    return _spd(3, 147).astype(np.float64), z


@program("linalg_f64_complex", _linalg_x64_inputs, "custom-call", config=X64)
def _linalg_f64_complex(s, z):
    h = z @ jnp.conj(z).T + 3 * jnp.eye(3, dtype=z.dtype)
    w, v = jnp.linalg.eigh(h)
    return (jnp.linalg.cholesky(s), jnp.linalg.solve(s, s[:, :1] * 2), jnp.linalg.inv(z), w, jnp.abs(v),
            jnp.linalg.svd(z, compute_uv=False), jnp.abs(jnp.linalg.qr(z)[1]), jnp.linalg.det(z),
            jnp.linalg.slogdet(s), jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(h), z))


@program("fft_variants", lambda: (f32(2, 3, 7, seed=150), f32(2, 3, 7, seed=151)), "fft")
def _fft_variants(x, y):
    z = lax.complex(x, y)
    return (jnp.fft.rfft(x), jnp.fft.irfft(z, n=7), jnp.fft.irfft(z), jnp.fft.fftn(z),
            jnp.fft.ifft2(z, axes=(0, 2)), jnp.fft.fft(z, axis=1), jnp.fft.rfftn(x),
            jnp.fft.irfftn(z, s=(3, 6), axes=(1, 2)), jnp.fft.fftshift(x), jnp.fft.hfft(z, n=6))


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
            lax.random_gamma_grad(a, x), sp.logit(x / 21), jnp.sinc(x), sp.gammasgn(x - 3.3),
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
