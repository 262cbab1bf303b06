"""The oracle sweep's multi-device programs and small whole models (tools/oracle_sweep.py runs
them): pmap and shard_map collectives over dtypes, jit with NamedSharding under Shardy and
GSPMD, and training steps of the kind people write (CNN, attention, LSTM, optimizers).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from oracle_sweep_cases import FLOATS, case, needs_x64, values


def _multi_device() -> None:
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    def mesh(shape: tuple[int, ...] = (8,), names: tuple[str, ...] = ("x",)) -> Mesh:
        return Mesh(np.array(jax.devices()[:8]).reshape(shape), names)

    colls = {
        "psum": lambda v: lax.psum(v, "i"), "pmean": lambda v: lax.pmean(v, "i"),
        "pmax": lambda v: lax.pmax(v, "i"), "pmin": lambda v: lax.pmin(v, "i"),
        "all_gather": lambda v: lax.all_gather(v, "i"), "all_gather_tiled": lambda v: lax.all_gather(v, "i", tiled=True,
                                                                                                     axis=1),
        "ppermute": lambda v: lax.ppermute(v, "i", [(j, (j + 3) % 8) for j in range(8)]),
        "ppermute_partial": lambda v: lax.ppermute(v, "i", [(0, 1), (5, 2)]),
        "psum_scatter": lambda v: lax.psum_scatter(jnp.tile(v, (8, 1)), "i"),
        "psum_scatter_tiled": lambda v: lax.psum_scatter(jnp.tile(v, (4, 1)), "i", scatter_dimension=0, tiled=True),
        "all_to_all": lambda v: lax.all_to_all(jnp.tile(v, (8, 1)), "i", 0, 0),
        "all_to_all_split1": lambda v: lax.all_to_all(jnp.tile(v, (1, 8)), "i", 1, 0, tiled=True),
        "axis_index": lambda v: v * lax.axis_index("i"),
        "psum_groups": lambda v: lax.psum(v, "i", axis_index_groups=[[0, 2, 4, 6], [1, 3, 5, 7]]),
        "pswapaxes": lambda v: lax.pswapaxes(jnp.tile(v, (8, 1)), "i", 0),
        "cumsum_psum": lambda v: jnp.cumsum(lax.psum(v, "i"), 0) - lax.pmax(v, "i"),
        "grad_psum": jax.grad(lambda v: (lax.psum(v, "i") ** 2).sum() if v.dtype.kind == "f" else 0.0),
    }
    for cname, fn in colls.items():
        for dt in ("float32", "int32", "bf16", "float16", "bool", "uint8", "complex64", "float64"):
            if dt == "bool" and cname not in ("all_gather", "ppermute", "all_to_all", "all_gather_tiled"):
                continue
            if cname == "grad_psum" and dt not in FLOATS:
                continue
            case(f"pmap.{cname}.{dt}", fn, lambda dt=dt: (values(dt, (8, 2, 3), special=False),), mode="pmap",
                 kwargs=lambda: {"axis_name": "i"}, x64=needs_x64(dt))

    def smap(body: Callable[..., Any], spec: Any, out: Any, shape: tuple[int, ...] = (8,),
             names: tuple[str, ...] = ("x",)) -> Callable[..., Any]:
        return lambda v: jax.shard_map(body, mesh=mesh(shape, names), in_specs=spec, out_specs=out)(v)

    sm = {
        "psum": (lambda v: lax.psum(v, "x"), P("x"), P()),
        "all_gather": (lambda v: lax.all_gather(v, "x", tiled=True), P("x"), P()),
        "ppermute": (lambda v: lax.ppermute(v, "x", [(j, (j + 1) % 8) for j in range(8)]), P("x"), P("x")),
        "psum_scatter": (lambda v: lax.psum_scatter(v, "x", tiled=True), P(), P("x")),
        "all_to_all": (lambda v: lax.all_to_all(v, "x", 1, 0, tiled=True), P("x"), P(None, "x")),
        "axis_index": (lambda v: v + lax.axis_index("x"), P("x"), P("x")),
        "pmax_2d": (lambda v: lax.pmax(v, "b"), P("a", "b"), P("a", None), (4, 2), ("a", "b")),
        "psum_both": (lambda v: lax.psum(v, ("a", "b")), P("a", "b"), P(), (2, 4), ("a", "b")),
        "all_gather_inner": (lambda v: lax.all_gather(v, "b", axis=1, tiled=True), P("a", "b"), P("a", None),
                             (2, 4), ("a", "b")),
        "ppermute_2d": (lambda v: lax.ppermute(v, "a", [(0, 1), (1, 0)]), P("a", "b"), P("a", "b"), (2, 4),
                        ("a", "b")),
        "axis_index_2d": (lambda v: v * 10 + lax.axis_index("b") + 100 * lax.axis_index("a"), P("a", "b"),
                          P("a", "b"), (2, 4), ("a", "b")),
        "all_to_all_2d": (lambda v: lax.all_to_all(v, "b", 0, 0, tiled=True), P(None, "b"), P("b", None),
                          (2, 4), ("a", "b")),
        "psum_scatter_2d": (lambda v: lax.psum_scatter(v, "a", scatter_dimension=1, tiled=True), P("b"),
                            P("b", "a"), (2, 4), ("a", "b")),
        "pmean_grad": (jax.grad(lambda v: (lax.pmean(v, "x") ** 2).sum()), P("x"), P("x")),
        "scan_psum": (lambda v: lax.scan(lambda c, r: (lax.psum(c + r, "x") / 8, c), v[0], v)[0][None], P("x"),
                      P("x")),
    }
    for sname, spec in sm.items():
        body, ins, outs, *rest = spec
        for dt in ("float32", "int32", "bf16"):
            if dt != "float32" and sname in ("pmean_grad", "scan_psum"):
                continue
            case(f"shard_map.{sname}.{dt}", smap(body, ins, outs, *rest),
                 lambda dt=dt: (values(dt, (8, 8), special=False),))

    def sharded(spec_in: Any, spec_out: Any, shape: tuple[int, ...] = (8,),
                names: tuple[str, ...] = ("x",)) -> Callable[[], dict[str, Any]]:
        def kw() -> dict[str, Any]:
            m = mesh(shape, names)
            return {"in_shardings": tuple(NamedSharding(m, s) for s in spec_in),
                    "out_shardings": NamedSharding(m, spec_out)}
        return kw

    jp = {
        "elementwise": (lambda a: jnp.sin(a) * 2 + 1, (P("x"),), P("x")),
        "sum_sharded_axis": (lambda a: a.sum(0), (P("x"),), P()),
        "matmul": (lambda a: a @ a.T, (P("x"),), P("x")),
        "matmul_contract_sharded": (lambda a: a.T @ a, (P("x"),), P()),
        "cumsum": (lambda a: jnp.cumsum(a, 0), (P("x"),), P("x")),
        "sort": (lambda a: jnp.sort(a, 0), (P("x"),), P(None, "x")),
        "transpose": (lambda a: a.T * 3, (P("x"),), P("x")),
        "reshape": (lambda a: a.reshape(4, 16), (P("x"),), P("x")),
        "gather": (lambda a: a[jnp.array([7, 0, 3, 3])], (P("x"),), P()),
        "scatter": (lambda a: a.at[jnp.array([7, 0, 3])].add(1.0), (P("x"),), P("x")),
        "argmax": (lambda a: jnp.argmax(a, 0), (P("x"),), P()),
        "roll": (lambda a: jnp.roll(a, 3, 0), (P("x"),), P("x")),
        "pad": (lambda a: jnp.pad(a, ((1, 2), (0, 0))), (P("x"),), P()),
        "dynamic_slice": (lambda a: lax.dynamic_slice(a, (3, 2), (4, 4)), (P("x"),), P()),
        "concat": (lambda a: jnp.concatenate([a, a[:2]], 0), (P("x"),), P()),
        "softmax_2d": (lambda a: jax.nn.softmax(a, 1), (P("a", "b"),), P("a", "b"), (4, 2), ("a", "b")),
        "matmul_2d": (lambda a: a @ a, (P("a", "b"),), P("a", "b"), (2, 4), ("a", "b")),
        "grad_mlp_2d": (jax.grad(lambda a: jnp.tanh(a @ a.T).sum()), (P("a", "b"),), P("a", "b"), (2, 4), ("a", "b")),
        "reduce_window": (lambda a: lax.reduce_window(a, 0.0, lax.add, (3, 1), (1, 1), "SAME"), (P("x"),), P("x")),
        "conv": (lambda a: lax.conv(a[None, None], jnp.ones((1, 1, 3, 3)), (1, 1), "SAME")[0, 0], (P("x"),), P("x")),
        "while": (lambda a: lax.fori_loop(0, 3, lambda i, c: c @ a / 8, a), (P("x"),), P("x")),
        "rng": (lambda a: a + jax.random.normal(jax.random.key(0), a.shape), (P("x"),), P("x")),
        "iota_where": (lambda a: jnp.where(jnp.arange(8)[:, None] > 3, a, -a), (P("x"),), P("x")),
        "replicated_out": (lambda a: a * 2, (P("x"),), P()),
        "uneven_reshard": (lambda a: a[:6, :6] * 2, (P("x"),), P("x")),
    }
    for jname, spec in jp.items():
        body, ins, outs, *rest = spec
        for shardy in (True, False):
            sfx = "shardy" if shardy else "gspmd"
            case(f"jit_sharded.{jname}.{sfx}", body, lambda: (values("float32", (8, 8), special=False),),
                 shardy=shardy, kwargs=sharded(ins, outs, *rest))


def _pmap_variants() -> None:
    """pmap beyond the basic collectives: fewer devices, broadcast arguments, several outputs,
    nested vmap, collectives inside control flow."""
    import jax.numpy as jnp
    from jax import lax

    x8 = lambda: (values("float32", (8, 3, 4), special=False),)  # noqa: E731
    variants: dict[str, tuple[Callable[..., Any], Callable[[], tuple[Any, ...]], dict[str, Any]]] = {
        "four_devices": (lambda v: lax.psum(v, "i") * lax.axis_index("i"),
                         lambda: (values("float32", (4, 3), special=False),), {"devices": jax.devices()[:4]}),
        "broadcast_arg": (lambda v, w: lax.pmean(v @ w, "i"), lambda: (values("float32", (8, 2, 3), special=False),
                                                                       values("float32", (3, 2), seed=4)),
                          {"in_axes": (0, None)}),
        "out_axes_none": (lambda v: lax.psum(v, "i"), x8, {"out_axes": None}),
        "vmap_inside": (jax.vmap(lambda r: lax.psum(r, "i") - lax.pmax(r, "i")), x8, {}),
        "while_psum": (lambda v: lax.while_loop(lambda c: lax.psum(c[0], "i") < 30,
                                                lambda c: (c[0] + 1, c[1] * 1.1), (0, v))[1], x8, {}),
        "cond_on_index": (lambda v: lax.cond(lax.axis_index("i") % 2 == 0, lambda a: lax.psum(a, "i"),
                                             lambda a: lax.psum(-a, "i"), v), x8, {}),
        "scan_ppermute": (lambda v: lax.scan(lambda c, r: (lax.ppermute(c, "i", [(j, (j + 1) % 8) for j in range(8)])
                                                           + r, c.sum()), v[0], v)[0], x8, {}),
        "grad_pmean_loss": (jax.grad(lambda v: lax.pmean(jnp.sum(jnp.tanh(v) ** 2), "i")), x8, {}),
        "all_gather_matmul": (lambda v: lax.all_gather(v, "i", axis=0, tiled=True) @ v.T, x8, {}),
        "argmax_all_gather": (lambda v: jnp.argmax(lax.all_gather(v.sum(), "i")), x8, {}),
        "int_psum_overflow": (lambda v: lax.psum((v * 1e9).astype(jnp.int32), "i"), x8, {}),
        "rng_per_device": (lambda v: v + jax.random.normal(jax.random.fold_in(jax.random.key(0), lax.axis_index("i")),
                                                           v.shape), x8, {}),
    }
    for name, (fn, args, extra) in variants.items():
        case(f"pmap.{name}", fn, args, mode="pmap", kwargs=lambda extra=extra: {"axis_name": "i", **extra})


def _sizes() -> None:
    """Sizes where XLA switches algorithms: long reductions and scans (blocked, vectorized
    orders), sorts longer than 16 (introsort), big dots, long while loops."""
    import jax.numpy as jnp
    from jax import lax

    for dt in ("float32", "bf16", "float16", "float64", "int32"):
        big = lambda dt=dt: (values(dt, (64, 300), special=False),)  # noqa: E731
        case(f"size.sum.{dt}", lambda x: (x.sum(0), x.sum(1), x.sum()), big, x64=needs_x64(dt))
        case(f"size.mean_var.{dt}", lambda x: (x.mean(1), x.var(0)) if x.dtype.kind != "i" else x.max(0),
             big, x64=needs_x64(dt))
        case(f"size.cumsum.{dt}", lambda x: (jnp.cumsum(x, 1), jnp.cumsum(x, 0)), big, x64=needs_x64(dt))
        case(f"size.cummax.{dt}", lambda x: lax.cummax(x, 1), big, x64=needs_x64(dt))
        case(f"size.sort.{dt}", lambda x: (jnp.sort(x, 1), jnp.argsort(x[:4], 1)), big, x64=needs_x64(dt))
        case(f"size.top_k.{dt}", lambda x: lax.top_k(x, 5), big, x64=needs_x64(dt))
        case(f"size.argmax.{dt}", lambda x: (jnp.argmax(x, 1), jnp.argmin(x, 0)), big, x64=needs_x64(dt))
        case(f"size.dot.{dt}", lambda x: x @ x.T, big, x64=needs_x64(dt), rtol_scale=10)
        case(f"size.reduce_window.{dt}",
             lambda x: lax.reduce_window(x, jnp.array(0, x.dtype), lax.add, (5, 7), (2, 3), "SAME"),
             big, x64=needs_x64(dt))
        case(f"size.logsumexp.{dt}", lambda x: jax.nn.logsumexp(x, 1) if x.dtype.kind != "i" else x.min(1),
             big, x64=needs_x64(dt))
    case("size.sort_nan_f32", lambda x: (jnp.sort(x, 1), jnp.argsort(x, 1, descending=True)),
         lambda: (np.where(values("float32", (4, 100), special=False) > 1.5, np.nan, values("float32", (4, 100))),))
    case("size.fori_5000", lambda x: lax.fori_loop(0, 5000, lambda i, c: c * 0.999 + jnp.sin(i * 1.0), x),
         lambda: (values("float32", (3,), special=False),))
    case("size.scatter_add_dups_f32", lambda x, i: jnp.zeros(7, x.dtype).at[i].add(x),
         lambda: (values("float32", (500,), special=False), (np.arange(500) * 7919 % 7).astype(np.int32)))
    case("size.scatter_add_dups_bf16", lambda x, i: jnp.zeros(7, x.dtype).at[i].add(x),
         lambda: (values("bf16", (500,), special=False), (np.arange(500) * 7919 % 7).astype(np.int32)))
    case("size.segment_sum_bf16", lambda x, i: jax.ops.segment_sum(x, i, 5),
         lambda: (values("bf16", (300, 3), special=False), (np.arange(300) % 5).astype(np.int32)))
    case("size.conv_big_k", lambda x, w: lax.conv(x, w, (1, 1), "SAME"),
         lambda: (values("float32", (2, 16, 12, 12), special=False), values("float32", (8, 16, 3, 3), seed=3,
                                                                           special=False)), rtol_scale=10)
    case("size.conv_bf16", lambda x, w: lax.conv(x, w, (1, 1), "SAME"),
         lambda: (values("bf16", (2, 16, 12, 12), special=False), values("bf16", (8, 16, 3, 3), seed=3,
                                                                        special=False)))
    case("size.dot_bf16_k512", lambda a, b: a @ b,
         lambda: (values("bf16", (8, 512), special=False), values("bf16", (512, 4), seed=5, special=False)))
    case("size.dot_f16_k512", lambda a, b: a @ b,
         lambda: (values("float16", (8, 512), special=False), values("float16", (512, 4), seed=5, special=False)))
    case("size.einsum_bf16_f32acc", lambda a, b: jnp.einsum("ik,kj->ij", a, b, preferred_element_type=jnp.float32),
         lambda: (values("bf16", (8, 512), special=False), values("bf16", (512, 4), seed=5, special=False)))


def _models() -> None:
    """Small training and inference steps of the kind people write."""
    import jax.numpy as jnp
    from jax import lax

    def cnn_loss(params, x, y):
        w1, w2, wd = params
        h = jax.nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = jax.nn.relu(lax.conv_general_dilated(h, w2, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
        h = h.mean((1, 2))
        m, v = h.mean(0), h.var(0)
        h = (h - m) / jnp.sqrt(v + 1e-5)
        logits = h @ wd
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))

    def cnn_args(dt: str = "float32") -> tuple[Any, ...]:
        return ((values(dt, (3, 3, 2, 4), special=False) * 0.3, values(dt, (3, 3, 4, 6), seed=1, special=False) * 0.3,
                 values(dt, (6, 5), seed=2, special=False) * 0.3),
                values(dt, (4, 8, 8, 2), seed=3, special=False), np.array([0, 3, 4, 1], np.int32))

    def adam_step(params, x, y):
        loss, g = jax.value_and_grad(cnn_loss)(params, x, y)
        m = jax.tree.map(lambda t: 0.1 * t, g)
        v = jax.tree.map(lambda t: 0.001 * t * t, g)
        new = jax.tree.map(lambda p, a, b: p - 1e-3 * a / (jnp.sqrt(b) + 1e-8), params, m, v)
        return loss, new

    case("model.cnn_adam.float32", adam_step, cnn_args, rtol_scale=20)
    case("model.cnn_adam.bf16", adam_step, lambda: cnn_args("bf16"), rtol_scale=2)

    def attention(x, wq, wk, wv, wo):
        q, k, v = (x @ w for w in (wq, wk, wv))
        q, k, v = (t.reshape(2, 5, 2, 4) for t in (q, k, v))
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / 2.0
        s = jnp.where(jnp.tril(jnp.ones((5, 5), bool)), s, -1e9)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v).reshape(2, 5, 8)
        h = x + o @ wo
        mu = h.mean(-1, keepdims=True)
        return (h - mu) * lax.rsqrt(((h - mu) ** 2).mean(-1, keepdims=True) + 1e-6)

    def attn_args(dt: str) -> tuple[Any, ...]:
        return (values(dt, (2, 5, 8), special=False),) + tuple(
            values(dt, (8, 8), seed=s, special=False) * 0.3 for s in range(1, 5))

    for dt in ("float32", "bf16", "float16"):
        case(f"model.attention.{dt}", attention, lambda dt=dt: attn_args(dt), rtol_scale=2)
        case(f"model.attention_grad.{dt}", jax.grad(lambda *a: attention(*a).astype(jnp.float32).sum(), argnums=(0, 1, 4)),
             lambda dt=dt: attn_args(dt), rtol_scale=20 if dt == "float32" else 2)

    def lstm(params, xs):
        wx, wh, b = params

        def cell(carry, x):
            h, c = carry
            z = x @ wx + h @ wh + b
            i, f, g, o = jnp.split(z, 4, -1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h

        h0 = jnp.zeros((xs.shape[1], wh.shape[0]), xs.dtype)
        _, hs = lax.scan(cell, (h0, h0), xs)
        return hs

    lstm_args = lambda: ((values("float32", (3, 16), special=False) * 0.4, values("float32", (4, 16), seed=1,  # noqa: E731
                                                                                   special=False) * 0.4,
                          np.zeros(16, np.float32)), values("float32", (6, 2, 3), seed=2, special=False))
    case("model.lstm", lstm, lstm_args)
    case("model.lstm_grad", jax.grad(lambda p, xs: (lstm(p, xs) ** 2).sum()), lstm_args, rtol_scale=10)

    def embed_loss(table, ids, w):
        e = table[ids]  # gather
        return jnp.sum(jnp.tanh(e @ w) ** 2)

    case("model.embedding_grad", jax.grad(embed_loss), lambda: (values("float32", (11, 4), special=False),
                                                                np.array([[1, 3, 3], [10, 0, 1]], np.int32),
                                                                values("float32", (4, 2), seed=1, special=False)))
    case("model.dropout", lambda x, seed: jnp.where(jax.random.bernoulli(jax.random.key(seed), 0.7, x.shape),
                                                    x / 0.7, 0),
         lambda: (values("float32", (6, 5), special=False), np.uint32(3)))
    case("model.cross_entropy_int_labels", lambda lg, y: jnp.mean(jax.nn.logsumexp(lg, 1) - lg[jnp.arange(4), y]),
         lambda: (values("float32", (4, 7)), np.array([0, 6, 2, 2], np.int32)))
    case("model.kmeans_step", lambda x, c: jnp.stack([jnp.where((jnp.argmin(((x[:, None] - c) ** 2).sum(-1), 1)
                                                                  == k)[:, None], x, 0).sum(0) for k in range(3)]),
         lambda: (values("float32", (20, 2), special=False), values("float32", (3, 2), seed=7, special=False)))
    case("model.newton_while", lambda a: lax.while_loop(lambda c: jnp.abs(c[0] * c[0] - a).max() > 1e-5,
                                                        lambda c: ((c[0] + a / c[0]) / 2, c[1] + 1),
                                                        (jnp.ones_like(a), 0)),
         lambda: (np.abs(values("float32", (5,), special=False)) + 0.5,))
    case("model.quantize_int8", lambda x: (jnp.clip(jnp.round(x / jnp.abs(x).max() * 127), -127, 127)
                                           .astype(jnp.int8).astype(jnp.int32) @ jnp.ones((5, 2), jnp.int32)),
         lambda: (values("float32", (4, 5), special=False),))


GENERATORS = (_multi_device, _pmap_variants, _sizes, _models)
