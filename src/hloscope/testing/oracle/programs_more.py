"""More oracle programs: what a JAX/ML engineer writes day to day, chosen to reach op variants
the programs in ``programs.py`` do not (conv backprop, pooling gradients, variadic reductions,
multi-operand sorts, batched gathers, LAPACK kernels, FFTs). The edge cases (special functions,
64-bit and narrow types, PRNG, nested control flow, 2-D meshes) are in ``programs_edge.py``.

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

from .registry import INT32_MIN, X64, f32, program


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
    # jax's overloads spell calc_q as a Literal, which a default cannot match.
    hs = jax.scipy.linalg.hessenberg(s)  # pyright: ignore[reportCallIssue]
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
