"""Acceptance on the seed documents: each multi-device seed, run by hloscope on its device grid,
equals the same model written independently (jax or numpy, read off the HLO by hand).

000  pmap SGD step of a tanh MLP (784-1024-1024-10) on 8 replicas, psum of gradients.
001  SPMD-partitioned (4 partitions) step of a gather/scatter model; compared with the global
     model computed unpartitioned.
003  the Trax LSTM training step on 8 replicas: equals XLA:CPU's outputs (slow, ~20 GB with
     XLA); the default suite runs one of its scan loops.
004  TPU module, 4 replicas: three 1-D "convolution" matmuls, logistic, all-reduce.
"""
from __future__ import annotations

import numpy as np
import pytest

try:
    from tests.conftest import SEED_FILES
except ImportError:  # tests/ is not a package
    from conftest import SEED_FILES  # type: ignore[no-redef]

import hloscope
from hloscope.interpret import run
from hloscope.interpret.evaluator import EvalContext, RunOptions, run_to_completion
from hloscope.interpret.inputs import random_inputs
from hloscope.interpret.registry import handler_for
from hloscope.ir import Opcode

# f32 results of matmul chains: BLAS and XLA sum in different orders.
F32 = {"rtol": 2e-4, "atol": 2e-5}


def _close(got, expected, what: str, rtol: float, atol: float) -> None:
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, f"{what} leaf {i}: {g.dtype}{g.shape} vs {e.dtype}{e.shape}"
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"{what} leaf {i}")


# --- 000: pmap SGD step of a tanh MLP -------------------------------------------------------------


def _mnist_step_jax(params, xs, ys, lr=0.001):
    """What seed 000 computes, written in jax: per replica the gradient of the mean softmax
    cross-entropy of a tanh MLP on its 12 examples; gradients summed over replicas (psum);
    one SGD step on every replica."""
    import jax
    import jax.numpy as jnp

    def loss(p, x, y):
        w1, b1, w2, b2, w3, b3 = p
        h1 = jnp.tanh(x @ w1 + b1)
        h2 = jnp.tanh(h1 @ w2 + b2)
        logits = h2 @ w3 + b3
        return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(logits), axis=-1))

    grads = [jax.grad(loss)(params, x, y) for x, y in zip(xs, ys, strict=True)]
    total = [sum(g[i] for g in grads) for i in range(len(params))]
    return [np.asarray(p - lr * g) for p, g in zip(params, total, strict=True)]


def test_seed_000_matches_jax_mnist_step() -> None:
    pytest.importorskip("jax")
    m = hloscope.load(SEED_FILES["000"])
    rng = np.random.default_rng(0)
    shapes = [(784, 1024), (1024,), (1024, 1024), (1024,), (1024, 10), (10,)]
    params = [(rng.standard_normal(s) * 0.05).astype(np.float32) for s in shapes]
    xs = [rng.random((12, 784), dtype=np.float32) for _ in range(8)]
    ys = [np.eye(10, dtype=np.float32)[rng.integers(0, 10, 12)] for _ in range(8)]
    out = run(m, [[*params, x, y] for x, y in zip(xs, ys, strict=True)], replicas=8)
    expected = _mnist_step_jax(params, xs, ys)
    for d, got in enumerate(out):
        _close(got, expected, f"replica {d}", **F32)


# --- 001: SPMD-partitioned gather/scatter model ---------------------------------------------------


def _seed_001_global(step, w1, w2, x, y, lr=0.01):
    """Seed 001's model on the whole batch, unpartitioned: columns 0..15 of x @ w1 feed a
    16x16 layer, mean squared error against y, one SGD step on w1 and w2 (jax.grad does the
    gather's transpose, a scatter-add, for us)."""
    import jax
    import jax.numpy as jnp

    idx = np.arange(16)

    def loss(w1, w2):
        return jnp.mean(((x @ w1)[:, idx] @ w2 - y) ** 2)

    g1, g2 = jax.grad(loss, argnums=(0, 1))(w1, w2)
    return [np.asarray(step + 1, np.int32), np.asarray(w1 - lr * g1), np.asarray(w2 - lr * g2)]


def test_seed_001_partitioned_equals_global() -> None:
    pytest.importorskip("jax")
    m = hloscope.load(SEED_FILES["001"])
    rng = np.random.default_rng(1)
    step = np.asarray(3, np.int32)
    w1 = rng.standard_normal((32, 32)).astype(np.float32)
    w2 = rng.standard_normal((16, 16)).astype(np.float32)
    x = rng.standard_normal((256, 32)).astype(np.float32)  # sharding {devices=[4,1]0,1,2,3}
    y = rng.standard_normal((256, 16)).astype(np.float32)
    shards = [[step, w1, w2, x[64 * p:64 * (p + 1)], y[64 * p:64 * (p + 1)]] for p in range(4)]
    out = run(m, shards, partitions=4)
    expected = _seed_001_global(step, w1, w2, x, y)
    for p, got in enumerate(out):  # every result is replicated: each partition holds all of it
        assert int(got[0]) == int(expected[0])
        _close(got[1:], expected[1:], f"partition {p}", rtol=1e-4, atol=1e-4)


# --- 004: TPU matmuls as 1-D convolutions --------------------------------------------------------


def test_seed_004_matches_numpy() -> None:
    m = hloscope.load(SEED_FILES["004"])
    rng = np.random.default_rng(4)
    p0 = np.asarray(1.5, np.float32)
    w1 = (rng.standard_normal((4096, 3584)) * 0.02).astype(np.float32)
    w2 = (rng.standard_normal((3584, 4096)) * 0.02).astype(np.float32)
    w4 = (rng.standard_normal((3584, 4096)) * 0.02).astype(np.float32)
    xs = [rng.standard_normal((8, 128, 4096)).astype(np.float32) for _ in range(4)]
    out = run(m, [[p0, w1, w2, x, w4] for x in xs], replicas=4)

    def replica(x):  # "0bf_oi0->0bf" with a size-1 window: out[s,b,:] = x[s,b,:] @ w.T
        a = x @ w2.T  # fusion.12
        b = x @ w4.T  # fusion.10
        h = b * a
        h = h * (1 / (1 + np.exp(-h)))  # multiply(m, logistic(m))
        return h @ w1.T  # fusion

    expected = sum(replica(x) for x in xs)
    for d, got in enumerate(out):
        _close(got, (expected,), f"replica {d}", rtol=1e-3, atol=1e-3)


# --- 003: Trax LSTM training step ----------------------------------------------------------------


def _first_while(module):
    return next(i for i in module.entry.instructions if i.opcode is Opcode.WHILE)


def test_seed_003_one_scan_loop_runs() -> None:
    """Bounded variant of the full run below: one of 003's scan loops (a while over 64 LSTM
    steps, with in-place dynamic-update-slices), on one device, from random positive state."""
    m = hloscope.load(SEED_FILES["003"])
    loop = _first_while(m)
    state = random_inputs_of(loop.shape)
    ctx = EvalContext(m, RunOptions())
    out = run_to_completion(handler_for(Opcode.WHILE)(ctx, loop, [state]), m.entry)
    assert ctx.progress.loop_iterations > 0
    for v in out:
        assert np.isfinite(np.asarray(v, np.float64)).all()


def random_inputs_of(shape):
    """Random positive floats; integer leaves (loop counters) start at 0."""
    rng = np.random.default_rng(0)
    return tuple(np.zeros(s.dimensions, s.dtype) if s.dtype.kind in "iu"
                 else rng.uniform(0.1, 1.0, s.dimensions).astype(s.dtype) for s in shape.elements)


# Seed 003 against XLA:CPU: the whole step (18 while loops, threefry, 48 cuBLAS gemms, 12
# all-reduces) on 8 replicas; XLA:CPU runs it in a child process after the GPU rewrite. Its
# figures are in the README (`run --check-xla`).
SEED_003_TOLERANCE = {"rtol": 1e-3, "atol": 1e-5}


@pytest.mark.slow
@pytest.mark.xla_execute
def test_seed_003_on_8_replicas_matches_xla_cpu() -> None:
    pytest.importorskip("jax")
    from hloscope.xla.worker import run_on_xla

    m = hloscope.load(SEED_FILES["003"])
    inputs = random_inputs(m, 0, "positive")
    out = run(m, inputs, replicas=8)
    assert len(out) == 8
    theirs = run_on_xla(SEED_FILES["003"].read_text(), inputs, replicas=8, partitions=1, per_device=False,
                        timeout=3600)
    del inputs
    assert theirs.custom_calls == {"__cublas$gemm": 48, "cuda_threefry2x32": 8}
    worst = 0.0
    for d in range(8):
        assert len(out[d]) == len(theirs.outputs[d])
        for i, (g, e) in enumerate(zip(out[d], theirs.outputs[d], strict=True)):
            g, e = np.asarray(g), np.asarray(e)
            assert g.shape == e.shape and g.dtype == e.dtype, f"replica {d} output {i}"
            assert np.isfinite(np.asarray(g, np.float64)).all(), f"replica {d} output {i}"
            np.testing.assert_allclose(g, e, err_msg=f"replica {d} output {i}", **SEED_003_TOLERANCE)
            if g.size:
                worst = max(worst, float(np.abs(g.astype(np.float64) - e.astype(np.float64)).max()))
    print(f"seed 003 on 8 replicas: worst |hloscope - XLA:CPU| {worst:.3g}")
