"""Whole programs for the analysis sweep (``hloscope.testing.sweep``): collectives, donation, rare ops, training
steps, the full catalog, and the seeded random op chains and dataflow graphs."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from hloscope.testing.cases import Case
from hloscope.testing.sweep.ops import array_of, needs_x64, op_cases, sweep_case

__all__ = ["catalog", "random_cases", "random_graphs"]


def _sharded_cases() -> list[Case]:
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    # Auto axes: the SPMD partitioner decides where the collectives go (Explicit is jax's default).
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    mesh2 = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)

    def put(a: np.ndarray, spec: Any, m: Any = mesh) -> Any:
        return jax.device_put(a, NamedSharding(m, spec))

    def sm(f: Callable[..., Any], in_specs: Any, out_specs: Any, m: Any = mesh) -> Callable[..., Any]:
        return jax.shard_map(f, mesh=m, in_specs=in_specs, out_specs=out_specs, check_vma=False)

    f = "float32"
    pmaps = {
        "psum": lambda a: lax.psum(jnp.sin(a), "i") * a,
        "pmean_pmax": lambda a: lax.pmean(a, "i") + lax.pmax(a, "i"),
        "all_gather": lambda a: lax.all_gather(a, "i").sum(0),
        "ppermute": lambda a: lax.ppermute(a, "i", [(j, (j + 1) % 8) for j in range(8)]),
        "all_to_all": lambda a: lax.all_to_all(a.reshape(8, -1), "i", 0, 0),
        "psum_scatter": lambda a: lax.psum_scatter(a.reshape(8, -1), "i"),
        "axis_index": lambda a: a * lax.axis_index("i"),
    }
    cases = [sweep_case(f"shard.pmap.{k}", jax.pmap(fn, axis_name="i"), lambda n: (array_of(f, (8, 8 * n)),), pmapped=True)
             for k, fn in pmaps.items()]
    maps = {
        "psum_matmul": (lambda x, w: lax.psum(x @ w, "x"), (P(None, "x"), P("x")), P()),
        "all_gather": (lambda x, w: lax.all_gather(x, "x", tiled=True) @ w, (P("x"), P()), P()),
        "psum_scatter": (lambda x, w: lax.psum_scatter(x @ w, "x", scatter_dimension=0, tiled=True), (P(), P()), P("x")),
        "ppermute": (lambda x, w: lax.ppermute(x, "x", [(j, (j + 3) % 8) for j in range(8)]) + w[:1], (P("x"), P()), P("x")),
        "all_to_all": (lambda x, w: lax.all_to_all(x, "x", 0, 1, tiled=True), (P("x"), P()), P(None, "x")),
        "pmax_pmin": (lambda x, w: lax.pmax(x, "x") - lax.pmin(x, "x"), (P("x"), P()), P()),
    }
    for k, (fn, ins, out) in maps.items():
        cases.append(sweep_case(f"shard.shard_map.{k}", sm(fn, ins, out),
                          lambda n, ins=ins: (put(array_of(f, (8 * n, 8)), ins[0]), put(array_of(f, (8, 8), 1), ins[1]))))
    cases.append(sweep_case("shard.shard_map_2d", sm(lambda x: lax.psum(x, "y") + lax.psum(x, ("x", "y")), P("x", "y"), P("x"), mesh2),
                      lambda n: (put(array_of(f, (4 * n, 2 * n)), P("x", "y"), mesh2),)))
    cases.append(sweep_case("shard.shard_map_scan", sm(lambda x: lax.scan(lambda c, xi: (c + lax.psum(xi, "x"), c.sum()),
                                                                     jnp.zeros(x.shape[1:]), x), P(None, "x"), (P("x"), P())),
                      lambda n: (put(array_of(f, (5, 8 * n)), P(None, "x")),)))
    # jit with shardings: the SPMD partitioner inserts the collectives.
    cases.append(sweep_case("shard.jit_matmul_rows", lambda x, w: jnp.tanh(x @ w),
                      lambda n: (put(array_of(f, (8 * n, 16)), P("x")), put(array_of(f, (16, 8), 1), P()))))
    cases.append(sweep_case("shard.jit_matmul_contract", lambda x, w: x @ w,
                      lambda n: (put(array_of(f, (n, 8 * 4)), P(None, "x")), put(array_of(f, (8 * 4, 8), 1), P("x")))))
    cases.append(sweep_case("shard.jit_reduce", lambda x: jnp.sum(x ** 2, 0),
                      lambda n: (put(array_of(f, (8 * n, 6)), P("x")),)))
    cases.append(sweep_case("shard.jit_reshard", lambda x: jax.lax.with_sharding_constraint(x * 2, NamedSharding(mesh, P(None, "x"))),
                      lambda n: (put(array_of(f, (8 * n, 16)), P("x")),)))
    cases.append(sweep_case("shard.jit_2d_mesh_mlp", lambda x, w1, w2: jax.nn.relu(x @ w1) @ w2,
                      lambda n: (put(array_of(f, (4 * n, 16)), P("x"), mesh2), put(array_of(f, (16, 32), 1), P(None, "y"), mesh2),
                                 put(array_of(f, (32, 8), 2), P("y"), mesh2))))
    cases.append(sweep_case("shard.jit_out_sharding", lambda x: x.T @ x,
                      lambda n: (put(array_of(f, (8 * n, 8)), P("x")),),
                      jit={"out_shardings": NamedSharding(mesh, P("x"))}))
    cases.append(sweep_case("shard.jit_donate", lambda x, g: (x - 0.1 * g, (g * g).sum()),
                      lambda n: (put(array_of(f, (8 * n, 8)), P("x")), put(array_of(f, (8 * n, 8), 1), P("x"))),
                      jit={"donate_argnums": 0}))
    return cases


def _donation_cases() -> list[Case]:
    f = "float32"
    return [
        sweep_case("donate.update", lambda p, g: (p - 0.1 * g, (g * g).sum()), lambda n: (array_of(f, (n, 32)), array_of(f, (n, 32), 1)),
             jit={"donate_argnums": 0}),
        sweep_case("donate.swap", lambda a, b: (b * 2, a + 1), lambda n: (array_of(f, (n, 8)), array_of(f, (n, 8), 1)),
             jit={"donate_argnums": (0, 1)}),
        sweep_case("donate.passthrough", lambda a, b: (a, b * 2, a), lambda n: (array_of(f, (n, 4)), array_of(f, (n,), 1))),
        sweep_case("donate.shape_change", lambda a: a.reshape(-1)[: a.size // 2] * 2, lambda n: (array_of(f, (n, 8)),),
             jit={"donate_argnums": 0}),
    ]


def _exotic_cases() -> list[Case]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    @jax.custom_vjp
    def _clip_grad(x: Any) -> Any:
        return jnp.sin(x)

    _clip_grad.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.clip(g * jnp.cos(x), -0.5, 0.5),))

    f = "float32"
    cases = []
    for dt in ("float8_e4m3fn", "float8_e5m2", "int4", "uint32", "int16", "uint16", "uint64"):
        cases.append(sweep_case(f"exotic.dtype_roundtrip.{dt}", lambda x, dt=dt: (x.astype(dt).astype(jnp.float32) * 2, x.astype(dt)),
                          lambda n: (array_of(f, (n, n + 1)),), x64=needs_x64(dt)))
    cases += [
        sweep_case("exotic.f8_dot", lambda a, b: lax.dot(a.astype(jnp.float8_e4m3fn), b.astype(jnp.float8_e4m3fn),
                                                   preferred_element_type=jnp.float32),
             lambda n: (array_of(f, (n, 16)), array_of(f, (16, n), 1))),
        sweep_case("exotic.variadic_reduce", lambda x, i: lax.reduce((x, i), (-jnp.inf, 0),
                                                               lambda a, b: (jnp.maximum(a[0], b[0]), jnp.maximum(a[1], b[1])), (1,)),
             lambda n: (array_of(f, (n, 12)), array_of("int32", (n, 12), 1))),
        sweep_case("exotic.bool_reduce", lambda x: (jnp.all(x > 0, 1), jnp.any(x > 1, 0)), lambda n: (array_of(f, (n, 12)),)),
        sweep_case("exotic.associative_scan", lambda x: lax.associative_scan(jnp.add, x, axis=0), lambda n: (array_of(f, (4 * n, 3)),)),
        sweep_case("exotic.searchsorted", lambda a, v: jnp.searchsorted(jnp.sort(a), v), lambda n: (array_of(f, (4 * n,)), array_of(f, (n,), 1))),
        sweep_case("exotic.histogram", lambda x: jnp.histogram(x, bins=7, range=(-2, 2))[0], lambda n: (array_of(f, (4 * n,)),)),
        sweep_case("exotic.unique_sized", lambda x: jnp.unique(x, size=5, fill_value=0), lambda n: (array_of("int32", (4 * n,)),)),
        sweep_case("exotic.convolve", lambda a, b: jnp.convolve(a, b, mode="same"), lambda n: (array_of(f, (4 * n,)), array_of(f, (5,), 1))),
        sweep_case("exotic.interp", lambda x: jnp.interp(x, jnp.linspace(-3, 3, 11), jnp.sin(jnp.linspace(-3, 3, 11))),
             lambda n: (array_of(f, (4 * n,)),)),
        sweep_case("exotic.kron_polyval", lambda a, b: jnp.kron(a, b).sum() + jnp.polyval(a[0], b), lambda n: (array_of(f, (3, 3)), array_of(f, (n, 2), 1))),
        sweep_case("exotic.image_resize", lambda x: jax.image.resize(x, (2 * x.shape[0], x.shape[1] + 3), "bilinear"),
             lambda n: (array_of(f, (n, n)),)),
        sweep_case("exotic.convolve2d", lambda a, b: jax.scipy.signal.convolve2d(a, b, mode="full"),
             lambda n: (array_of(f, (n, n)), array_of(f, (3, 3), 1))),
        sweep_case("exotic.rng_bit_generator", lambda k: lax.rng_bit_generator(k, (16, 4), dtype=jnp.uint32),
             lambda n: (np.arange(4, dtype=np.uint32),)),
        sweep_case("exotic.rng_uniform", lambda a: lax.rng_uniform(jnp.float32(0), jnp.float32(1), (8, 4)) + a,
             lambda n: (array_of(f, (8, 4)),)),
        sweep_case("exotic.optimization_barrier", lambda a, b: lax.optimization_barrier((a * 2, b)), lambda n: (array_of(f, (n, 4)), array_of(f, (n,), 1))),
        sweep_case("exotic.pure_callback", lambda a: jax.pure_callback(lambda x: np.asarray(x) * 2, jax.ShapeDtypeStruct(a.shape, a.dtype), a) + 1,
             lambda n: (array_of(f, (n, 3)),)),
        sweep_case("exotic.debug_print", lambda a: (jax.debug.print("{}", a.sum()), a * 2)[1], lambda n: (array_of(f, (n, 3)),)),
        sweep_case("exotic.tridiagonal_solve", lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d + 4, du, b),
             lambda n: (array_of(f, (n,)), array_of(f, (n,), 1), array_of(f, (n,), 2), array_of(f, (n, 2), 3))),
        sweep_case("exotic.schur", lambda a: jax.scipy.linalg.schur(a), lambda n: (array_of(f, (n, n)),)),
        sweep_case("exotic.hessenberg", lambda a: jax.scipy.linalg.hessenberg(a, calc_q=False), lambda n: (array_of(f, (n, n)),)),
        sweep_case("exotic.tridiagonal", lambda a: lax.linalg.tridiagonal(a @ a.T), lambda n: (array_of(f, (n, n)),)),
        sweep_case("exotic.approx_max_k", lambda x: lax.approx_max_k(x, 4), lambda n: (array_of(f, (4, 8 * n)),)),
        sweep_case("exotic.ragged_dot", lambda a, b, g: lax.ragged_dot(a, b, g),
             lambda n: (array_of(f, (4 * n, 8)), array_of(f, (3, 8, 5), 1), np.array([n, 2 * n, n], np.int32))),
        sweep_case("exotic.dot_odd_batch", lambda a, b: lax.dot_general(a, b, (((0,), (2,)), ((2,), (0,)))),
             lambda n: (array_of(f, (5, n, 3)), array_of(f, (3, 4, 5), 1))),
        sweep_case("exotic.batch_group_conv", lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", batch_group_count=2,
                                                                              dimension_numbers=("NCHW", "OIHW", "NCHW")),
             lambda n: (array_of(f, (4, 3, n, n)), array_of(f, (4, 3, 3, 3), 1))),
        sweep_case("exotic.reduce_window_dilated", lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "VALID",
                                                                         base_dilation=(2, 1), window_dilation=(1, 2)),
             lambda n: (array_of(f, (n, n)),)),
        sweep_case("exotic.cumlogsumexp_reverse", lambda x: lax.cumlogsumexp(x, axis=0, reverse=True) + lax.cumsum(x, 1, reverse=True),
             lambda n: (array_of(f, (n, 6)),)),
        sweep_case("exotic.select_n_clamp", lambda p, a, b: lax.select_n(p, a, b, a * b) + lax.clamp(b, a, b + 1),
             lambda n: (array_of("int32", (n, 5)) % 3, array_of(f, (n, 5), 1), array_of(f, (n, 5), 2))),
        sweep_case("exotic.einsum_diag", lambda a: jnp.einsum("ii->i", a) + jnp.trace(a), lambda n: (array_of(f, (n, n)),)),
        sweep_case("exotic.attention_mask_bias", lambda q, k, v, b: jax.nn.dot_product_attention(q, k, v, bias=b),
             lambda n: tuple(array_of(f, (1, n, 2, 8), s) for s in range(3)) + (array_of(f, (1, 2, n, n), 3),)),
        sweep_case("exotic.zero_size", lambda a, b: (a.sum(0), b * 2, jnp.concatenate([a, a]).T @ a),
             lambda n: (array_of(f, (0, n)), array_of(f, (n, 0), 1))),
        sweep_case("exotic.scalars", lambda a, b: (a * b, jnp.sin(a), a > b), lambda n: (np.float32(2), np.float32(3))),
        sweep_case("exotic.output_is_input_twice", lambda a: (a, a, a * 2), lambda n: (array_of(f, (n, 3)),)),
        sweep_case("exotic.output_constant", lambda a: (jnp.arange(12.0).reshape(3, 4), jnp.zeros((5,)), a),
             lambda n: (array_of(f, (n,)),)),
        sweep_case("exotic.cond_in_while", lambda x: lax.fori_loop(0, 5, lambda i, c: lax.cond(i % 2 == 0, jnp.sin, jnp.cos, c), x),
             lambda n: (array_of(f, (n, 4)),)),
        sweep_case("exotic.while_same_buffer_twice", lambda x: lax.fori_loop(0, 3, lambda i, c: (c[1] + 1, c[0] * 2), (x, x))[0],
             lambda n: (array_of(f, (n,)),)),
        sweep_case("exotic.big_transpose_dot", lambda a, b: (a.T @ b).T + 1, lambda n: (array_of(f, (32 * n // 8, 96)), array_of(f, (32 * n // 8, 80), 1))),
        sweep_case("exotic.x64_index_gather", lambda a, i: a[i] * 2, lambda n: (array_of("float64", (4 * n, 3)), array_of("int64", (n,)) % 4), x64=True),
        sweep_case("exotic.custom_vjp", jax.grad(lambda x: _clip_grad(x).sum()), lambda n: (array_of(f, (n, 4)),)),
        sweep_case("exotic.x_times_x_temp", lambda a: (jnp.exp(a) * jnp.exp(a)) @ a, lambda n: (array_of(f, (n, n)),)),
        sweep_case("exotic.self_add_after_dot", lambda a: (lambda t: t + t)(a @ a), lambda n: (array_of(f, (n, n)),)),
    ]
    cases += [
        sweep_case("exotic.pmap_tuple_psum", jax.pmap(lambda a, b: lax.psum((a, b), "i"), axis_name="i"),
             lambda n: (array_of(f, (8, n)), array_of("int32", (8, 3), 1)), pmapped=True),
        sweep_case("exotic.pmap_bf16_all_gather", jax.pmap(lambda a: lax.all_gather(a.astype(jnp.bfloat16), "i"), axis_name="i"),
             lambda n: (array_of(f, (8, n)),), pmapped=True),
        sweep_case("exotic.pmap_groups", jax.pmap(lambda a: lax.psum(a, "i", axis_index_groups=[[0, 1, 2, 3], [4, 5, 6, 7]]),
                                            axis_name="i"), lambda n: (array_of(f, (8, n)),), pmapped=True),
        sweep_case("exotic.pmap_scan_psum", jax.pmap(lambda a: lax.scan(lambda c, x: (c + lax.psum(x, "i"), c), jnp.zeros(a.shape[1:]), a),
                                               axis_name="i"), lambda n: (array_of(f, (8, 4, n)),), pmapped=True),
        sweep_case("exotic.pmap_donate", jax.pmap(lambda a, b: (a * lax.pmean(b, "i"), b + 1), axis_name="i", donate_argnums=(0, 1)),
             lambda n: (array_of(f, (8, n)), array_of(f, (8, n), 1)), pmapped=True),
    ]
    return cases


def _model_cases() -> list[Case]:
    """Whole training steps: what users compile, with many fusions, loops and donated buffers."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    def adam_step(params, x, y):
        def loss(p):
            h = x
            for w, b in p[:-1]:
                h = jax.nn.gelu(h @ w + b)
            return jnp.mean((h @ p[-1][0] + p[-1][1] - y) ** 2)

        g = jax.grad(loss)(params)
        return jax.tree.map(lambda p, g: p - 1e-3 * g / (jnp.sqrt(g * g) + 1e-8), params, g)

    def mlp_params(n: int, dt: str = "float32") -> Any:
        sizes = (16, 4 * n, 2 * n, 8)
        return [(array_of(dt, (a, b), i), array_of(dt, (b,), i + 10)) for i, (a, b) in enumerate(zip(sizes, sizes[1:]))]

    def cnn_step(w1, w2, x, y):
        def loss(ws):
            dn = ("NHWC", "HWIO", "NHWC")
            h = jax.nn.relu(lax.conv_general_dilated(x, ws[0], (1, 1), "SAME", dimension_numbers=dn))
            h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
            h = lax.conv_general_dilated(h, ws[1], (2, 2), "SAME", dimension_numbers=dn).mean((1, 2))
            return -jnp.mean(jnp.sum(jax.nn.log_softmax(h) * y, -1))

        g = jax.grad(loss)((w1, w2))
        return w1 - 0.1 * g[0], w2 - 0.1 * g[1]

    def block_step(p, x):
        def loss(p):
            wq, wk, wv, wo, w1, w2 = p
            h = x / jnp.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
            q, k, v = (jnp.einsum("btd,de->bte", h.astype(jnp.bfloat16), w.astype(jnp.bfloat16),
                                  preferred_element_type=jnp.float32) for w in (wq, wk, wv))
            s = jnp.einsum("bqe,bke->bqk", q, k) / 4.0
            s = jnp.where(jnp.tril(jnp.ones(s.shape[-2:], bool)), s, -1e9)
            a = jnp.einsum("bqk,bke->bqe", jax.nn.softmax(s, -1), v) @ wo
            y = x + a
            return ((y + jax.nn.silu(y @ w1) @ w2) ** 2).mean()

        g = jax.grad(loss)(p)
        return [w - 1e-3 * gw for w, gw in zip(p, g)]

    def lstm_step(w, xs):
        def loss(w):
            def cell(c, x):
                h, cc = c
                i, f, o, gg = jnp.split(jnp.concatenate([h, x], -1) @ w, 4, -1)
                cc = jax.nn.sigmoid(f) * cc + jax.nn.sigmoid(i) * jnp.tanh(gg)
                h = jax.nn.sigmoid(o) * jnp.tanh(cc)
                return (h, cc), h

            z = jnp.zeros((xs.shape[1], w.shape[1] // 4))
            return (lax.scan(cell, (z, z), xs)[1] ** 2).sum()

        return w - 0.1 * jax.grad(loss)(w)

    def dynamic_loop(x, k):
        def body(c):
            i, v = c
            v = lax.cond(i % 2 == 0, lambda v: jnp.tanh(v @ v.T) @ v, lambda v: v[::-1] * 0.5, v)
            return i + 1, v

        return lax.while_loop(lambda c: c[0] < k, body, (0, x))[1]

    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))

    def dp_step(w, x, y):
        g = jax.grad(lambda w: jnp.mean((jnp.tanh(x @ w) - y) ** 2))(w)
        return w - 0.1 * g

    f = "float32"
    return [
        sweep_case("model.mlp_adam", adam_step, lambda n: (mlp_params(n), array_of(f, (n, 16), 20), array_of(f, (n, 8), 21))),
        sweep_case("model.mlp_adam_donated", adam_step, lambda n: (mlp_params(n), array_of(f, (n, 16), 20), array_of(f, (n, 8), 21)),
             jit={"donate_argnums": 0}),
        sweep_case("model.mlp_bf16", adam_step, lambda n: (mlp_params(n, "bfloat16"), array_of("bfloat16", (n, 16), 20),
                                                     array_of("bfloat16", (n, 8), 21))),
        sweep_case("model.cnn", cnn_step, lambda n: (array_of(f, (3, 3, 3, 8)), array_of(f, (3, 3, 8, 10), 1),
                                               array_of(f, (2, n, n, 3), 2), np.eye(10, dtype=np.float32)[[1, 3]])),
        sweep_case("model.transformer_block", block_step, lambda n: ([array_of(f, (16, 16), i) for i in range(4)]
                                                               + [array_of(f, (16, 32), 4), array_of(f, (32, 16), 5)],
                                                               array_of(f, (2, n, 16), 6)), jit={"donate_argnums": 0}),
        sweep_case("model.lstm", lstm_step, lambda n: (array_of(f, (12, 32)), array_of(f, (n, 2, 4), 1))),
        sweep_case("model.dynamic_loop_cond", dynamic_loop, lambda n: (array_of(f, (n, n)), np.int32(5))),
        sweep_case("model.data_parallel", dp_step, lambda n: (
            jax.device_put(array_of(f, (16, 8)), NamedSharding(mesh, P())),
            jax.device_put(array_of(f, (8 * n, 16), 1), NamedSharding(mesh, P("x"))),
            jax.device_put(array_of(f, (8 * n, 8), 2), NamedSharding(mesh, P("x")))), jit={"donate_argnums": 0}),
    ]


def catalog() -> list[Case]:
    """Every catalog case, names unique."""
    cases = op_cases() + _sharded_cases() + _donation_cases() + _exotic_cases() + _model_cases()
    names = Counter(c.name for c in cases)
    dup = [k for k, v in names.items() if v > 1]
    assert not dup, dup
    return cases


# --------------------------------------------------------------------------------------------
# Random compositions


def random_cases(count: int, seed: int = 0) -> list[Case]:
    """``count`` seeded random chains of jax ops over one or two arrays of a random float type."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    unary = [jnp.sin, jnp.exp, jnp.tanh, lambda x: x * 2 + 1, jnp.abs, lambda x: jnp.sqrt(jnp.abs(x)),
             lambda x: jnp.maximum(x, 0), lambda x: jnp.cumsum(x, 0), lambda x: x[::-1], lambda x: jnp.roll(x, 1, 0),
             lambda x: x - x.mean(0, keepdims=True), lambda x: jnp.sort(x, 0), jax.nn.softmax,
             lambda x: jnp.pad(x, ((1, 1), (0, 0)))[1:-1], lambda x: x.T.T + 1, lambda x: jnp.where(x > 0, x, -x)]
    binary = [jnp.add, jnp.multiply, lambda a, b: a @ b.T @ a, jnp.maximum, lambda a, b: jnp.concatenate([a, b], 0)[: a.shape[0]],
              lambda a, b: a / (jnp.abs(b) + 1), lambda a, b: lax.dynamic_update_slice(a, b[:1], (1, 0))]
    wrappers = ["plain", "grad", "vmap", "scan", "fori", "cond", "remat"]
    rng = np.random.default_rng(seed)
    cases = []
    for k in range(count):
        steps = [(int(b), int(rng.integers(len(binary) if b else len(unary))))
                 for b in rng.integers(0, 2, int(rng.integers(2, 7)))]
        dt = str(rng.choice(["float32", "float32", "bfloat16", "float16"]))
        wrap = str(rng.choice(wrappers))

        def chain(a: Any, b: Any, steps: list[tuple[int, int]] = steps) -> Any:
            x = a
            for is_bin, i in steps:
                x = binary[i](x, b) if is_bin else unary[i](x)
            return x

        if wrap == "grad":
            fn = lambda a, b, chain=chain: jax.grad(lambda a: chain(a, b).astype(jnp.float32).sum())(a)  # noqa: E731
        elif wrap == "vmap":
            fn = lambda a, b, chain=chain: jax.vmap(lambda r: chain(r, b))(jnp.stack([a, a * 2]))  # noqa: E731
        elif wrap == "scan":
            fn = lambda a, b, chain=chain: lax.scan(lambda c, _: (chain(c, b), c.sum()), a, None, length=3)  # noqa: E731
        elif wrap == "fori":
            fn = lambda a, b, chain=chain: lax.fori_loop(0, 3, lambda i, c: chain(c, b), a)  # noqa: E731
        elif wrap == "cond":
            fn = lambda a, b, chain=chain: lax.cond(a.sum() > 0, lambda: chain(a, b), lambda: a * 3)  # noqa: E731
        elif wrap == "remat":
            fn = lambda a, b, chain=chain: jax.grad(lambda a: jax.checkpoint(chain)(a, b).astype(jnp.float32).sum())(a)  # noqa: E731
        else:
            fn = chain
        cases.append(sweep_case(f"random.{seed}.{k}.{wrap}.{dt}", fn,
                          lambda n, dt=dt, k=k: (array_of(dt, (n, n), k), array_of(dt, (n, n), k + 1000))))
    return cases


def random_graphs(count: int, seed: int = 0) -> list[Case]:
    """``count`` seeded random dataflow graphs over square arrays: each op reads earlier values
    picked at random (so values have several users and long live ranges), the outputs are a
    random subset of the values (inputs included), and some graphs donate an input or run
    under grad, scan, fori_loop, cond or vmap. Stresses buffer assignment more than chains."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def conv(x: Any) -> Any:
        k = jnp.ones((1, 1, 3, 3), x.dtype) / 9
        return lax.conv_general_dilated(x[None, None], k, (1, 1), "SAME")[0, 0]

    unary: list[Callable[[Any], Any]] = [
        jnp.sin, jnp.exp, jnp.tanh, lambda x: x * 2 + 1, lambda x: jnp.sqrt(jnp.abs(x)), jax.nn.relu,
        lambda x: jnp.cumsum(x, 0), lambda x: jnp.cumsum(x, 1), lambda x: x[::-1], lambda x: jnp.roll(x, 2, 1),
        lambda x: x - x.mean(0, keepdims=True), lambda x: jnp.sort(x, 0), lambda x: jax.nn.softmax(x, 1),
        lambda x: jnp.pad(x, ((1, 1), (2, 0)))[1:-1, :-2], lambda x: x.T, lambda x: x.sum(1, keepdims=True) * x,
        lambda x: x[jnp.argsort(x[:, 0])], conv,
        lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (3, 3), (1, 1), "SAME"),
        lambda x: x.astype(jnp.bfloat16).astype(x.dtype), lambda x: jnp.concatenate([x[1:], x[:1]], 0),
        lambda x: lax.dynamic_slice(jnp.pad(x, 1), (1, 1), x.shape),
        lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) + i, x),
        lambda x: jnp.pad(lax.top_k(x, 3)[0], ((0, 0), (0, x.shape[1] - 3))),
        lambda x: lax.while_loop(lambda c: c[0] < jnp.abs(x[0, 0]).astype(jnp.int32) % 3 + 1,
                                 lambda c: (c[0] + 1, c[1] * 0.5 + 1), (0, x))[1],
        lambda x: lax.cond(x[0, 0] > 0, jnp.cos, lambda y: y[::-1] * 2, x),
        lambda x: lax.sort((jnp.broadcast_to(x[:, :1], x.shape), x), dimension=0, num_keys=1)[1],
        lambda x: x + jnp.arange(x.shape[1], dtype=x.dtype),
    ]
    binary: list[Callable[[Any, Any], Any]] = [
        jnp.add, jnp.multiply, lambda a, b: a @ b, jnp.maximum, lambda a, b: a / (jnp.abs(b) + 1),
        lambda a, b: lax.dynamic_update_slice(a, b[:2], (1, 0)), lambda a, b: a.at[jnp.array([0, 2, 2])].add(b[:3]),
        lambda a, b: jnp.where(a > b, a, b), lambda a, b: a @ b.T, lambda a, b: a.at[1:3].set(b[:2] * 2),
        lambda a, b: jnp.stack([a, b]).max(0),
        lambda a, b: a.at[jnp.array([1, 1, 0, 3]) % a.shape[0]].add(b[:4]),
        lambda a, b: a[jnp.argsort(b[:, 0])] * b,
        lambda a, b: lax.select(a > 0, b, a),
    ]
    rng = np.random.default_rng(seed)
    cases = []
    for k in range(count):
        n_in = int(rng.integers(1, 4))
        ops = []
        for j in range(int(rng.integers(3, 10))):
            avail = n_in + j
            if rng.random() < 0.4:
                ops.append((1, int(rng.integers(len(binary))), int(rng.integers(avail)), int(rng.integers(avail))))
            else:
                ops.append((0, int(rng.integers(len(unary))), int(rng.integers(avail)), 0))
        total = n_in + len(ops)
        outs = sorted(set(int(i) for i in rng.integers(0, total, int(rng.integers(1, 4)))) | {total - 1})
        wrap = str(rng.choice(["plain"] * 4 + ["grad", "scan", "fori", "cond", "vmap", "donate"]))
        dt = str(rng.choice(["float32", "float32", "float32", "bfloat16", "float16", "float64"]))

        def graph(*xs: Any, ops: list[tuple[int, int, int, int]] = ops, outs: list[int] = outs) -> Any:
            vals = list(xs)
            for is_bin, i, a, b in ops:
                vals.append(binary[i](vals[a], vals[b]) if is_bin else unary[i](vals[a]))
            return tuple(vals[o] for o in outs)

        jit: dict[str, Any] = {}
        if wrap == "grad":
            fn = lambda *xs, g=graph: jax.grad(  # noqa: E731
                lambda x0: sum(o.astype(jnp.float32).sum() for o in g(x0, *xs[1:])))(xs[0])
        elif wrap == "scan":
            fn = lambda *xs, g=graph: lax.scan(lambda c, _: (g(c, *xs[1:])[-1], c.sum()), xs[0], None, length=2)  # noqa: E731
        elif wrap == "fori":
            fn = lambda *xs, g=graph: lax.fori_loop(0, 2, lambda i, c: g(c, *xs[1:])[-1], xs[0])  # noqa: E731
        elif wrap == "cond":
            fn = lambda *xs, g=graph: lax.cond(xs[0][0, 0] > 0, lambda: g(*xs), lambda: tuple(  # noqa: E731
                jnp.zeros_like(o) for o in jax.eval_shape(g, *xs)))
        elif wrap == "vmap":
            fn = lambda *xs, g=graph: jax.vmap(lambda x0: g(x0, *xs[1:]))(jnp.stack([xs[0], xs[0] * 2]))  # noqa: E731
        else:
            fn = graph
            if wrap == "donate":
                jit = {"donate_argnums": tuple(range(n_in))}
        cases.append(sweep_case(f"graph.{seed}.{k}.{wrap}.{dt}", fn,
                          lambda n, dt=dt, k=k, n_in=n_in: tuple(array_of(dt, (n, n), 7 * k + i) for i in range(n_in)),
                          jit=jit, x64=needs_x64(dt)))
    return cases
