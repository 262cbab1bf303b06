"""JAX programs shared by the cost and memory comparisons with XLA (tests/analysis).

Each entry of ``PROGRAMS`` is a ``hloscope.testing.cases.Case`` written ``_spec(fn, make,
options)``: ``make()`` returns fresh arguments (numpy arrays, or arrays placed on the 8-device
mesh for shard_map), and ``options`` holds ``jax.jit`` keywords (``donate_argnums``) plus two
of ours: ``x64`` (lower with 64-bit types on) and ``pmapped`` (``fn`` is already a ``jax.pmap``
and is lowered as it is). ``lower(name)`` does the lowering. The programs were chosen for what the older lists did not reach: gradients
of grouped, dilated and strided convolutions, pooling gradients (select-and-scatter and
reduce-window of add), bf16 attention accumulating in f32, normalisation training steps,
multi-key sorts, scatters with duplicate indices, gathers with batching dimensions, LAPACK
custom calls, loops carrying tuples and dynamic-update-slices, nested scans, three-way
conditionals, both PRNG implementations, int8 dots, complex and f64 arithmetic, big
broadcasts and transposes, pad/slice chains, donated and passed-through buffers, and
collectives under shard_map and pmap; and the classes ``tools/analysis_sweep.py`` found
(in-place updates inside fusions: ``grad_relu_of_dus``, ``vmap_dus_matmul``; fusions writing
over an operand: ``stack_max_bf16``, ``cumsum_twice_bf16``).
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from hloscope.testing.cases import Case
from hloscope.testing.cases import lower as lower_case

__all__ = ["PROGRAMS", "lower"]


def _spec(fn: Any, make: Any, options: dict[str, Any] | None = None) -> tuple[Any, Any, dict[str, Any]]:
    return fn, make, dict(options or {})


def _case(name: str, fn: Any, make: Any, options: dict[str, Any]) -> Case:
    jit = {k: v for k, v in options.items() if k not in ("x64", "pmapped")}
    return Case(name, fn, make, mode="pmapped" if options.get("pmapped") else "jit",
                jit_kwargs=(lambda: dict(jit)) if jit else None,
                config=(("jax_enable_x64", True),) if options.get("x64") else ())


def _f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _ints(high: int, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, high, shape).astype(np.int32)


def _mesh() -> Any:
    return jax.make_mesh((8,), ("x",))


def _sharded(a: np.ndarray, spec: P) -> Any:
    return jax.device_put(a, NamedSharding(_mesh(), spec))


# --- convolutions and pooling ------------------------------------------------------------------
def _conv(x, w, **kw):
    return lax.conv_general_dilated(x, w, dimension_numbers=("NCHW", "OIHW", "NCHW"), **kw)


def conv_grouped_grad(x, w):
    # The weight gradient of a grouped convolution is a convolution with batch_group_count.
    f = lambda x, w: (_conv(x, w, window_strides=(1, 1), padding="SAME", feature_group_count=2) ** 2).sum()  # noqa: E731
    return jax.grad(f, (0, 1))(x, w)


def conv_dilated_strided_grad(x, w):
    # The input gradient dilates the base (lhs_dilation); uneven padding, kernel dilation.
    f = lambda x, w: jnp.tanh(_conv(x, w, window_strides=(2, 1), padding=((1, 2), (0, 1)),  # noqa: E731
                                    rhs_dilation=(2, 2))).sum()
    return jax.grad(f, (0, 1))(x, w)


def conv3d(x, w):
    return lax.conv_general_dilated(x, w, (1, 1, 1), "SAME", dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))


def avgpool_grad(x):
    f = lambda x: (lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME") ** 2).sum()  # noqa: E731
    return jax.grad(f)(x)


def maxpool_overlap_grad(x):
    # Overlapping windows with padding: select-and-scatter with a padded window.
    f = lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2),  # noqa: E731
                                    ((0, 0), (0, 0), (1, 1), (1, 1))).sum()
    return jax.grad(f)(x)


def pool_grads(x):
    return avgpool_grad(x), maxpool_overlap_grad(x.transpose(0, 3, 1, 2))


# --- attention and normalisation ---------------------------------------------------------------
def attention_bf16(q, k, v):
    q, k, v = (a.astype(jnp.bfloat16) for a in (q, k, v))
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k, preferred_element_type=jnp.float32) * 0.125
    p = jax.nn.softmax(s, axis=-1).astype(jnp.bfloat16)
    return jnp.einsum("bhqk,bhkd->bhqd", p, v, preferred_element_type=jnp.float32)


def layer_norm_train(x, g, b):
    def loss(p):
        g, b = p
        m = x.mean(-1, keepdims=True)
        v = x.var(-1, keepdims=True)
        return (((x - m) * lax.rsqrt(v + 1e-5) * g + b) ** 2).mean()

    dg, db = jax.grad(loss)((g, b))
    return g - 0.1 * dg, b - 0.1 * db


def batch_norm_train(x, g, b, running_mean):
    def loss(p, x):
        g, b = p
        m = x.mean((0, 2, 3), keepdims=True)
        v = x.var((0, 2, 3), keepdims=True)
        y = (x - m) / jnp.sqrt(v + 1e-5) * g[None, :, None, None] + b[None, :, None, None]
        return jax.nn.relu(y).sum(), m.squeeze()

    (_, m), grads = jax.value_and_grad(loss, has_aux=True)((g, b), x)
    return grads, 0.9 * running_mean + 0.1 * m


# --- sorting, scatter, gather, scans ------------------------------------------------------------
def sort_two_keys(k, v):
    return lax.sort((k, v), dimension=1, num_keys=2, is_stable=True)


def scatter_add_2d_dups(a, i, j, u):
    return a.at[i, j].add(u)


def gather_batched(a, idx):
    return jax.vmap(lambda r, i: r[i])(a, idx)


def cumulative_ops(x):
    return jnp.cumprod(x, axis=1), lax.cummax(x, axis=0, reverse=True), lax.cumlogsumexp(x, axis=1)


def fft_family(x):
    c = jnp.fft.fft2(x.astype(jnp.complex64))
    return (jnp.fft.irfft(jnp.fft.rfft(x), n=x.shape[-1]), jnp.fft.ifft2(c).real,
            jnp.fft.fftn(x[None] + 0j, axes=(0, 1, 2)))


def linalg_lapack(a):
    s = a @ a.T + 8 * jnp.eye(a.shape[0])
    q, r = jnp.linalg.qr(a)
    w, v = jnp.linalg.eigh(s)
    lu, piv = jax.scipy.linalg.lu_factor(s)
    return (q.sum() + r.sum() + w.sum() + v.sum() + lu.sum() + piv.sum()
            + jnp.linalg.svd(a, compute_uv=False).sum())


def eigh_svd(a):
    return jnp.linalg.eigh(a @ a.T), jnp.linalg.svd(a)


def while_dus_tuple(x):
    def body(i, c):
        buf, acc = c
        row = jnp.sin(acc) * i
        return lax.dynamic_update_slice(buf, row[None], (i, 0)), acc + row

    return lax.fori_loop(0, 12, body, (jnp.zeros((12, x.shape[0])), x))


def nested_scan(h, xs, w):
    def outer(h, x):
        def inner(h, y):
            h = jnp.tanh(h @ w + y)
            return h, h.mean()

        h, ys = lax.scan(inner, h, x)
        return h, ys.sum()

    return lax.scan(outer, h, xs)


def switch3(i, x):
    return lax.switch(i, [lambda x: jnp.exp(x) @ x, lambda x: jnp.sin(x) * 3.0, lambda x: x.T @ x + x], x)


def cond_tuple(p, x, y):
    return lax.cond(p > 0, lambda a, b: (a @ b, jnp.sin(a), b.sum()), lambda a, b: (a - b, a * 2, a.max()), x, y)


def lstm_grad(w, xs):
    def loss(w):
        def step(c, x):
            h, cc = c
            i, f, o, g = jnp.split(jnp.concatenate([h, x], -1) @ w, 4, -1)
            cc = jax.nn.sigmoid(f) * cc + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(cc)
            return (h, cc), h

        _, hs = lax.scan(step, (jnp.zeros((2, 8)), jnp.zeros((2, 8))), xs)
        return (hs ** 2).sum()

    return jax.grad(loss)(w)


def transformer_step(params, x, y):
    def block(p, x):
        wq, wk, wv, wo, w1, w2, g = p
        h = (x * lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g).astype(jnp.bfloat16)
        q, k, v = (jnp.einsum("btd,dhe->bhte", h, w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)
                   for w in (wq, wk, wv))
        s = jnp.einsum("bhqe,bhke->bhqk", q, k) / 4.0
        s = jnp.where(jnp.tril(jnp.ones((x.shape[1], x.shape[1]), bool)), s, -1e9)
        a = jnp.einsum("bhqk,bhke->bqhe", jax.nn.softmax(s, -1), v).reshape(x.shape)
        x = x + a @ wo
        return x + jax.nn.gelu(x @ w1) @ w2

    g = jax.grad(lambda p: ((block(p, x) - y) ** 2).mean())(params)
    return jax.tree.map(lambda a, b: a - 1e-3 * b, params, g)


def grad_relu_of_dus(a, b):
    # A loop fusion whose parameter reaches a dynamic-update-slice's updated operand through
    # elementwise ops: XLA counts that use as elementwise, so the fusion may write over its
    # operand (found by tools/analysis_sweep.py; analysis/sharing.py).
    f = lambda a: jnp.maximum(lax.dynamic_update_slice(a, b[:1], (1, 0)), 0).astype(jnp.float32).sum()  # noqa: E731
    return jax.grad(f)(a)


def vmap_dus_matmul(a, b):
    # A vmapped row update fuses into a dynamic-update-slice under a bitcast root; the fusion
    # still updates its operand in place (found by tools/analysis_sweep.py; dataflow.py).
    row = lambda r: (lambda x: x @ b.T @ x)(lax.dynamic_update_slice(jnp.sqrt(jnp.abs(r)), b[:1], (1, 0)))  # noqa: E731
    return jax.vmap(row)(jnp.stack([a, a * 2]))


def stack_max_bf16(a, b):
    # XLA:CPU runs the reduce as a library fusion (kind=kCustom, `__ynn_fusion`); such a fusion
    # may write over an operand it is elementwise on (found by tools/analysis_sweep.py).
    return jnp.stack([a, b]).max(0).astype(jnp.float32) + a.astype(jnp.float32)


def cumsum_twice_bf16(x):
    # bf16 cumulative sums fuse into a `map` over all dimensions, which XLA counts as
    # elementwise when deciding whether a fusion may overwrite its operand (found by the sweep).
    return jnp.cumsum(jnp.cumsum(x, 1), 1)


# --- random numbers, dtypes, data movement ----------------------------------------------------
def rng_threefry(k):
    k1, k2 = jax.random.split(jax.random.wrap_key_data(k, impl="threefry2x32"))
    return jax.random.normal(k1, (32, 16)), jax.random.bernoulli(k2, 0.3, (100,))


def rng_rbg(k):
    key = jax.random.wrap_key_data(k, impl="rbg")
    return jax.random.uniform(key, (64, 8)), jax.random.randint(key, (50,), 0, 10)


def int8_dot(a, b):
    return (lax.dot(a, b, preferred_element_type=jnp.int32),
            lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32))


def complex_ops(a, b):
    z = lax.complex(a, b)
    return jnp.abs(jnp.exp(z) @ z), jnp.angle(z).sum(), (z * jnp.conj(z)).real


def f64_ops(a, b):
    return jnp.tanh(a @ b) + jnp.log1p(jnp.abs(a)) @ b


def big_broadcast_transpose(a, b):
    big = a[:, None, :, None] * b[None, :, None, :]
    return (jnp.transpose(big, (3, 1, 0, 2)).sum(0)
            + jnp.transpose(big, (1, 0, 3, 2)).reshape(64, -1)[:, :32].sum())


def concat_pad_slice(a, b):
    c = jnp.concatenate([a, b, a[:, ::-1]], axis=1)
    p = lax.pad(c, 0.0, ((1, 2, 1), (-2, 3, 0)))  # interior and negative padding
    return lax.slice(p, (3, 1), (40, 27), (2, 3)) + 1.0, jnp.roll(c, 5, axis=0)[::3]


def elementwise_rare(a, b):
    return (lax.cbrt(a) + lax.erf_inv(jnp.clip(b, -0.9, 0.9)) + lax.lgamma(jnp.abs(a) + 1)
            + lax.digamma(jnp.abs(b) + 1) + lax.rem(a, b) + lax.integer_pow(a, 5)
            + jnp.power(jnp.abs(a), 2.5) + lax.is_finite(a)
            + lax.population_count(lax.bitcast_convert_type(a, jnp.int32)).astype(jnp.float32)
            + lax.reduce_precision(a, 5, 10) + jnp.logaddexp(a, b) + jnp.arcsinh(a) + jnp.arccos(jnp.tanh(b)))


# --- donation, aliasing, outputs that are inputs or constants ----------------------------------
def donated_update(p, g):
    return p - 0.1 * g, (g * g).sum()


def adam(p, m, v, g):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    return p - 1e-3 * m / (jnp.sqrt(v) + 1e-8), m, v


def multi_alias_swap(a, b, c):
    # Outputs swap the donated inputs' roles; one input comes back untouched.
    return b * 2, a + 1, c


def passthrough_consts(a, b):
    return a, b * 2, np.arange(10, dtype=np.float32), a


# --- collectives -------------------------------------------------------------------------------
def shard_map_collectives(x, w):
    def f(x, w):
        h = x @ w
        s = lax.psum(h, "x")
        g = lax.all_gather(x, "x", tiled=True)
        p = lax.ppermute(h, "x", [(i, (i + 1) % 8) for i in range(8)])
        a = lax.all_to_all(h, "x", 1, 1, tiled=True)
        r = lax.psum_scatter(h, "x", scatter_dimension=1, tiled=True)
        return s + p, g.sum(0, keepdims=True) + r.sum() + a.sum()

    return jax.shard_map(f, mesh=_mesh(), in_specs=(P("x"), P()), out_specs=(P("x"), P("x")))(x, w)


def scan_psum(x):
    def f(x):
        def step(c, xi):
            return c + lax.psum(xi, "x"), c.sum()

        return lax.scan(step, jnp.zeros(x.shape[1:]), x)

    return jax.shard_map(f, mesh=_mesh(), in_specs=P(None, "x"), out_specs=(P("x"), P()), check_vma=False)(x)


PMAP_PSUM = jax.pmap(lambda a: lax.psum(jnp.sin(a), "i") * a, axis_name="i")
PMAP_DONATE = jax.pmap(lambda a, b: (a + b, lax.pmean(a * b, "i")), axis_name="i", donate_argnums=(0,))


_SPECS: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "conv_grouped_grad": _spec(conv_grouped_grad, lambda: (_f32(2, 4, 8, 8), _f32(6, 2, 3, 3, seed=1))),
    "conv_dilated_strided_grad": _spec(conv_dilated_strided_grad,
                                         lambda: (_f32(2, 3, 13, 11), _f32(4, 3, 3, 2, seed=1))),
    "conv3d": _spec(conv3d, lambda: (_f32(1, 6, 6, 6, 2), _f32(3, 3, 3, 2, 4, seed=1))),
    "avgpool_grad": _spec(avgpool_grad, lambda: (_f32(2, 9, 9, 3),)),
    "maxpool_overlap_grad": _spec(maxpool_overlap_grad, lambda: (_f32(2, 3, 11, 11),)),
    "pool_grads": _spec(pool_grads, lambda: (_f32(2, 9, 9, 3),)),
    "attention_bf16": _spec(attention_bf16, lambda: tuple(_f32(2, 4, 16, 8, seed=s) for s in range(3))),
    "layer_norm_train": _spec(layer_norm_train, lambda: (_f32(16, 64), _f32(64, seed=1), _f32(64, seed=2))),
    "batch_norm_train": _spec(batch_norm_train, lambda: (_f32(4, 3, 6, 6), _f32(3, seed=1), _f32(3, seed=2),
                                                           _f32(3, seed=3))),
    "sort_two_keys": _spec(sort_two_keys, lambda: (_ints(4, (4, 50)), _f32(4, 50))),
    "scatter_add_2d_dups": _spec(scatter_add_2d_dups, lambda: (
        _f32(10, 12), np.array([1, 1, 3, 9, 1], np.int32), np.array([2, 2, 0, 11, 2], np.int32), _f32(5, seed=1))),
    "gather_batched": _spec(gather_batched, lambda: (_f32(6, 30, 5), _ints(30, (6, 7), seed=1))),
    "cumulative_ops": _spec(cumulative_ops, lambda: (_f32(16, 24),)),
    "fft_family": _spec(fft_family, lambda: (_f32(8, 16),)),
    "linalg_lapack": _spec(linalg_lapack, lambda: (_f32(6, 6),)),
    "eigh_svd": _spec(eigh_svd, lambda: (_f32(7, 7),)),
    "while_dus_tuple": _spec(while_dus_tuple, lambda: (_f32(16),)),
    "nested_scan": _spec(nested_scan, lambda: (_f32(2, 8), _f32(3, 4, 2, 8, seed=1), _f32(8, 8, seed=2))),
    "switch3": _spec(switch3, lambda: (np.int32(1), _f32(8, 8))),
    "cond_tuple": _spec(cond_tuple, lambda: (np.float32(1), _f32(8, 8), _f32(8, 8, seed=1))),
    "grad_relu_of_dus": _spec(grad_relu_of_dus, lambda: (_f32(8, 8).astype(np.float16),
                                                           _f32(8, 8, seed=1).astype(np.float16))),
    "vmap_dus_matmul": _spec(vmap_dus_matmul, lambda: (_f32(8, 8), _f32(8, 8, seed=1))),
    "stack_max_bf16": _spec(stack_max_bf16, lambda: (_f32(64, 64).astype(jnp.bfloat16),
                                                       _f32(64, 64, seed=1).astype(jnp.bfloat16))),
    "cumsum_twice_bf16": _spec(cumsum_twice_bf16, lambda: (_f32(64, 64).astype(jnp.bfloat16),)),
    "lstm_grad": _spec(lstm_grad, lambda: (_f32(12, 32), _f32(7, 2, 4, seed=1))),
    "transformer_step": _spec(transformer_step, lambda: (
        tuple(_f32(32, 2, 16, seed=s) for s in (1, 2, 3)) + (_f32(32, 32, seed=4), _f32(32, 64, seed=5),
                                                              _f32(64, 32, seed=6), _f32(32, seed=7)),
        _f32(2, 16, 32), _f32(2, 16, 32, seed=8))),
    "rng_threefry": _spec(rng_threefry, lambda: (np.asarray(jax.random.key_data(
        jax.random.key(0, impl="threefry2x32"))),)),
    "rng_rbg": _spec(rng_rbg, lambda: (np.asarray(jax.random.key_data(jax.random.key(0, impl="rbg"))),)),
    "int8_dot": _spec(int8_dot, lambda: ((np.arange(96).reshape(8, 12) % 7 - 3).astype(np.int8),
                                           (np.arange(60).reshape(12, 5) % 5 - 2).astype(np.int8))),
    "complex": _spec(complex_ops, lambda: (_f32(6, 6), _f32(6, 6, seed=1))),
    "f64": _spec(f64_ops, lambda: (np.random.default_rng(0).standard_normal((8, 8)),
                                     np.random.default_rng(1).standard_normal((8, 8))), {"x64": True}),
    "big_broadcast_transpose": _spec(big_broadcast_transpose, lambda: (_f32(64, 32), _f32(16, 8, seed=1))),
    "concat_pad_slice": _spec(concat_pad_slice, lambda: (_f32(24, 10), _f32(24, 7, seed=1))),
    "elementwise_rare": _spec(elementwise_rare, lambda: (_f32(10, 10), _f32(10, 10, seed=1))),
    "donated_update": _spec(donated_update, lambda: (_f32(64, 32), _f32(64, 32, seed=1)), {"donate_argnums": 0}),
    "adam_donated": _spec(adam, lambda: tuple(_f32(64, 64, seed=s) for s in range(4)),
                            {"donate_argnums": (0, 1, 2)}),
    "multi_alias_swap": _spec(multi_alias_swap, lambda: (_f32(40, 8), _f32(40, 8, seed=1), _f32(7, seed=2)),
                                {"donate_argnums": (0, 1, 2)}),
    "passthrough_consts": _spec(passthrough_consts, lambda: (_f32(16, 4), _f32(9, seed=1))),
    "shard_map_collectives": _spec(shard_map_collectives, lambda: (_sharded(_f32(16, 8), P("x")),
                                                                     _sharded(_f32(8, 8, seed=1), P()))),
    "scan_psum": _spec(scan_psum, lambda: (_sharded(_f32(5, 16), P(None, "x")),)),
    "pmap_psum": _spec(PMAP_PSUM, lambda: (_f32(8, 32),), {"pmapped": True}),
    "pmap_donate": _spec(PMAP_DONATE, lambda: (_f32(8, 16), _f32(8, 16, seed=1)), {"pmapped": True}),
}


PROGRAMS: dict[str, Case] = {name: _case(name, *spec) for name, spec in _SPECS.items()}


def lower(name: str) -> Any:
    """``jax``'s Lowered object of program ``name`` (64-bit types on while lowering if asked)."""
    return lower_case(PROGRAMS[name])
