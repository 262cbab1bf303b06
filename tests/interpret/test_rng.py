"""hloscope.interpret.rng against jax/XLA:CPU: bit-exact threefry and rng-bit-generator."""
from __future__ import annotations

import functools

import jax
import numpy as np
import pytest
from jax import lax
from jax._src.random import threefry2x32 as jax_threefry

from hloscope.interpret.rng import rng, rng_bit_generator, threefry2x32


@pytest.fixture(autouse=True, scope="module")
def _x64():
    """64-bit types on for this module only: a global switch would leak into other tests
    sharing the worker (they then see int64 indices)."""
    with jax.enable_x64(True):
        yield

ALGORITHMS = {
    "rng_three_fry": lax.RandomAlgorithm.RNG_THREE_FRY,
    "rng_philox": lax.RandomAlgorithm.RNG_PHILOX,
    "rng_default": lax.RandomAlgorithm.RNG_DEFAULT,  # Philox on XLA:CPU
}
SHAPES = [(), (1,), (7,), (3, 5), (4, 3), (2, 3, 5), (5, 1, 3)]
KEYS = [np.array([123456789123, 2**64 - 3], np.uint64), np.array([5, 6, 7, 8], np.uint32)]


def test_threefry2x32_matches_jax():
    g = np.random.default_rng(1)
    words = [g.integers(0, 2**32, 13, dtype=np.uint64).astype(np.uint32) for _ in range(4)]
    expected = jax_threefry.threefry2x32_p.bind(*[jax.numpy.asarray(w) for w in words])
    for ours, ref in zip(threefry2x32(*words), expected, strict=True):
        np.testing.assert_array_equal(ours, np.asarray(ref))


DTYPES = [np.uint32, np.uint64, np.uint8, np.uint16]


def shapes_for(algorithm, dtype, key_index: int) -> list[tuple[int, ...]]:
    """The shapes tested, one set per code path (each XLA op costs ~0.1 s to compile).

    Every shape runs for the 32- and 64-bit generators of Threefry and Philox with the u64[2]
    key. 8/16-bit outputs truncate 32-bit draws; rng_default is Philox on XLA:CPU; a u32[4] key
    is bitcast to u64[2] before XLA sees it: those get a 0-d, an odd 1-d, an odd 2-d and a 3-d
    shape (Threefry's split-dimension rule differs between them).
    """
    full = key_index == 0 and algorithm != "rng_default" and dtype in (np.uint32, np.uint64)
    return SHAPES if full else [(), (7,), (3, 5), (2, 3, 5)]


@functools.cache
def xla_bits(key_index: int) -> dict:
    """XLA:CPU's (state, bits) for every algorithm, dtype and shape, from ONE compiled program.

    Compiling is what costs time; the rng-bit-generator ops do not feed each other, so each
    result is still exactly one XLA rng-bit-generator instruction applied to the key.
    """
    cases = [(a, d, s) for a in ALGORITHMS for d in DTYPES for s in shapes_for(a, d, key_index)]

    def every_case(k):
        return [lax.rng_bit_generator(k, s, d, algorithm=ALGORITHMS[a]) for a, d, s in cases]

    results = jax.jit(every_case)(KEYS[key_index])
    return {c: tuple(np.asarray(v) for v in r) for c, r in zip(cases, results, strict=True)}


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rng_bit_generator_matches_xla(algorithm, dtype):
    for key_index, key in enumerate(KEYS):
        for shape in shapes_for(algorithm, dtype, key_index):
            ref_state, ref_bits = xla_bits(key_index)[algorithm, dtype, shape]
            state, bits = rng_bit_generator(algorithm, key, shape, dtype)
            assert bits.dtype == ref_bits.dtype and bits.shape == ref_bits.shape
            np.testing.assert_array_equal(bits, ref_bits, err_msg=f"{shape} {key}")
            np.testing.assert_array_equal(state, ref_state, err_msg=f"{shape} {key}")


def test_philox_counter_carries_into_high_word():
    state = np.array([7, 2**64 - 2, 5], np.uint64)  # u64[3]: 128-bit counter
    new_state, _ = rng_bit_generator("rng_philox", state, (16,), np.uint32)
    assert new_state.tolist() == [7, 2, 6]


def test_legacy_rng_uses_the_given_generator():
    a = rng("rng_uniform", np.float32(2), np.float32(3), (1000,), np.float32,
            np.random.default_rng(0))
    assert a.dtype == np.float32 and (a >= 2).all() and (a < 3).all()
    b = rng("rng_uniform", np.int32(-4), np.int32(4), (1000,), np.int32, np.random.default_rng(0))
    assert b.min() == -4 and b.max() == 3
    n = rng("rng_normal", np.float64(1), np.float64(2), (4000,), np.float64,
            np.random.default_rng(0))
    assert abs(n.mean() - 1) < 0.15 and abs(n.std() - 2) < 0.15


@pytest.mark.parametrize("ty,shape_operand", [("f32", "u64[3] constant({2, 4, 8})"), ("f16", "f16[2] constant({8, 4})")])
def test_rng_with_a_shape_operand_runs_as_xla_cpu_does(ty: str, shape_operand: str):
    # StableHLO's rng(a, b, shape), as XLA's RngExpander tests write it: XLA reads the shape
    # from the declared result and ignores the operand; hloscope refused it ("rng bound 2
    # must be f32[], got u64[3]").
    import hloscope
    from hloscope.xla import client

    text = f"""HloModule m
ENTRY e {{
  lo = {ty}[] constant(2)
  hi = {ty}[] constant(3)
  s = {shape_operand}
  ROOT r = {ty}[4,5] rng(lo, hi, s), distribution=rng_uniform
}}"""
    m = hloscope.parse(text)
    assert hloscope.verify(m) == []
    ours = hloscope.run(m, [])
    theirs = client.compile_and_run(text, [])
    for out in (ours, theirs):  # random by design: the shape and the range are what compare
        assert out.shape == (4, 5) and out.dtype == np.dtype(ty.replace("f", "float")) and (out >= 2).all() and (out <= 3).all()
    too_many = text.replace("rng(lo, hi, s)", "rng(lo, hi, s, s)")
    assert hloscope.verify(hloscope.parse(too_many)) != []
