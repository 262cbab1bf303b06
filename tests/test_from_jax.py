"""``hloscope.from_jax`` against XLA on a dozen jax programs, single-device and sharded.

For each program: hloscope's cost of the optimized module equals XLA's ``cost_analysis()``
(FLOPs, transcendentals and bytes, as XLA sums them in float32), and hloscope's memory figures,
``peak_memory_in_bytes`` included, equal ``memory_analysis()`` and the dumped buffer assignment
(see ``KNOWN_MEMORY_GAPS``). The models tier's steps are in tests/models/test_from_jax_models.py.
"""
from __future__ import annotations

import functools
import json

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy
lax = jax.lax

from hloscope.xla.jax_bridge import Figure, JaxComparison, JaxModules, from_jax  # noqa: E402


def _f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _mlp_step(w1, w2, x, y):
    def loss(p):
        return jnp.mean((jax.nn.relu(x @ p[0]) @ p[1] - y) ** 2)
    g = jax.grad(loss)((w1, w2))
    return w1 - 0.1 * g[0], w2 - 0.1 * g[1]


def _transformer_block(x, wqkv, wo, gamma):
    h = x * lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * gamma
    q, k, v = jnp.split(h @ wqkv, 3, axis=-1)
    s = jax.nn.softmax(jnp.einsum("td,sd->ts", q, k) / 4.0, axis=-1)
    return x + (s @ v) @ wo


def _scan(h, xs, w):
    return lax.scan(lambda c, x: (jnp.tanh(c @ w + x), c.sum()), h, xs)


def _conv(x, w):
    return jax.nn.relu(lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                dimension_numbers=("NHWC", "HWIO", "NHWC"))).mean()


def _while(x):
    return lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, jnp.sin(c[1]) * 2.0), (0, x))[1]


def _mesh():
    from jax.sharding import Mesh

    return Mesh(np.array(jax.devices()[:8]).reshape(8), ("x",))


def _sharded_matmul_kwargs():
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = _mesh()
    return {"in_shardings": (NamedSharding(mesh, P("x")), NamedSharding(mesh, P())),
            "out_shardings": NamedSharding(mesh, P("x"))}


def _shard_map_psum(x):
    from jax.sharding import PartitionSpec as P

    return jax.shard_map(lambda v: lax.psum(jnp.sin(v), "x"), mesh=_mesh(), in_specs=P("x"),
                         out_specs=P())(x)


# name -> (function, argument maker, jit kwargs maker)
PROGRAMS = {
    "mlp_step": (_mlp_step, lambda: (_f32(32, 64), _f32(64, 10, seed=1), _f32(16, 32, seed=2),
                                     _f32(16, 10, seed=3)), dict),
    "transformer_block": (_transformer_block, lambda: (_f32(16, 32), _f32(32, 96, seed=1),
                                                       _f32(32, 32, seed=2), _f32(32, seed=3)), dict),
    "scan": (_scan, lambda: (_f32(4, 16), _f32(10, 4, 16, seed=1), _f32(16, 16, seed=2)), dict),
    "conv": (_conv, lambda: (_f32(2, 16, 16, 3), _f32(3, 3, 3, 8, seed=1)), dict),
    "sort": (lambda x: jnp.sort(x, axis=-1), lambda: (_f32(16, 100),), dict),
    "while": (_while, lambda: (_f32(128),), dict),
    "reduce_window": (lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (2, 2), "VALID"),
                      lambda: (_f32(64, 64),), dict),
    "gather_scatter": (lambda x, i, u: x.at[i].add(u)[i] * 2,
                       lambda: (_f32(100, 8), np.arange(10, dtype=np.int32), _f32(10, 8)), dict),
    "layernorm": (lambda x: (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5),
                  lambda: (_f32(64, 256),), dict),
    "cond": (lambda p, x: lax.cond(p > 0, lambda a: jnp.exp(a) @ a, lambda a: a @ a.T, x),
             lambda: (np.float32(1.0), _f32(32, 32)), dict),
    "sharded_matmul": (lambda a, b: a @ b, lambda: (_f32(64, 32), _f32(32, 16, seed=1)),
                       _sharded_matmul_kwargs),
    "shard_map_psum": (_shard_map_psum, lambda: (_f32(16, 8),), dict),
}

# Programs where hloscope's memory model is known to differ from XLA's, with the figure and why.
KNOWN_MEMORY_GAPS: dict[str, set[str]] = {}


@functools.cache
def _modules(name: str) -> JaxModules:
    f, make_args, make_kwargs = PROGRAMS[name]
    return from_jax(f, *make_args(), **make_kwargs())


def test_enough_programs():
    assert len(PROGRAMS) >= 10


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_matches_xla(name: str) -> None:
    jm = _modules(name)
    cmp = jm.compare()
    cost_bad = [f.name for f in cmp.cost if not f.ok]
    assert not cost_bad, cmp.to_text()
    mem_bad = {f.name for f in cmp.memory if not f.ok} - KNOWN_MEMORY_GAPS.get(name, set())
    assert not mem_bad, cmp.to_text()
    assert cmp.figure("flops").xla is not None
    assert cmp.figure("temp_bytes").xla is not None


def test_sharded_modules_are_per_device() -> None:
    jm = _modules("sharded_matmul")
    assert jm.num_partitions == 8
    assert jm.post_optimization.num_partitions == 8
    # Per device: an [8, 32] shard of a times b is 8*16*32 multiply-adds.
    assert jm.xla_cost["flops"] == 2 * 8 * 16 * 32
    assert jm.compare().figure("flops").hloscope == 2 * 8 * 16 * 32


def test_result_fields_and_json() -> None:
    jm = _modules("mlp_step")
    assert jm.pre_optimization.name == jm.post_optimization.name == "jit__mlp_step"
    assert "peak_memory_in_bytes" in jm.xla_memory
    assert jm.buffer_assignment is not None and jm.buffer_assignment.total_bytes > 0
    cmp = jm.compare()
    assert isinstance(cmp, JaxComparison) and all(isinstance(f, Figure) for f in cmp.figures)
    data = json.loads(json.dumps(cmp.to_json()))
    assert [f["name"] for f in data["cost"]] == ["flops", "transcendentals", "bytes_accessed"]
    assert data["memory"][0]["name"] == "total_bytes"
    # XLA's peak_memory_in_bytes is compared; hloscope's own live-range peak is shown beside it.
    peak = cmp.figure("peak_memory_in_bytes")
    assert peak.checked and peak.verdict == "equal" and "static allocations" in peak.note
    own = cmp.figure("live_range_peak_bytes")
    assert not own.checked and own.xla is None and "hloscope's own" in own.note
    json.dumps(jm.to_json())
    assert "hloscope vs XLA" in cmp.to_text()


def test_figure_arithmetic() -> None:
    f = Figure("bytes_accessed", 105.0, 100.0, 0.05)
    assert f.difference == 5.0 and f.relative == pytest.approx(0.05) and f.ok
    assert f.verdict == "within tolerance"
    assert not Figure("flops", 1.0, 0.0, 0.0).ok
    assert Figure("flops", 0.0, 0.0, 0.0).ok and Figure("flops", 0.0, 0.0, 0.0).verdict == "equal"
    assert Figure("flops", 3.0, None, 0.0).ok and Figure("flops", 3.0, None, 0.0).relative is None
    # Rounding: equal when hloscope's count summed as XLA sums it is XLA's figure, else a mismatch.
    assert Figure("flops", 48264309.0, 48264224.0, 0.0, rounded=48264224.0).verdict == "equal within rounding"
    assert Figure("flops", 48264309.0, 48264228.0, 0.0, rounded=48264224.0).verdict == "MISMATCH"
    assert Figure("flops", 48264309.0, 48264224.0, 0.0).verdict == "MISMATCH"


def _noisy(key, x):
    return x * 2.0 + jax.random.normal(key, x.shape)


def test_typed_prng_key_as_an_argument() -> None:
    """A typed key (``jax.random.key``) is an argument like any other, end to end: from_jax
    compiles the program (the module takes the key's data), and the step lowered and run
    through the bridge gives that data as the module's input, which hloscope runs to jax's
    result."""
    import hloscope as hs
    from hloscope.xla.lowering import lower_jax

    key, x = jax.random.key(3), _f32(16)
    jm = from_jax(_noisy, key, x)
    assert jm.compare().ok, jm.compare().to_text()
    assert jm.post_optimization.entry.parameters[0].shape.to_text(layout=False) == "u32[2]"
    art = lower_jax(_noisy, key, x)
    assert art.inputs[0].dtype == np.uint32 and art.inputs[0].shape == (2,)
    np.testing.assert_allclose(hs.run(hs.parse(art.post_optimization_text), art.inputs), art.outputs[0],
                               rtol=1e-6)
    np.testing.assert_allclose(art.outputs[0], _noisy(key, x), rtol=1e-6)
