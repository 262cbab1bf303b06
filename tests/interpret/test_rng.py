"""hloscope.interpret.rng against jax/XLA:CPU: bit-exact threefry and rng-bit-generator."""
from __future__ import annotations

import jax
import numpy as np
import pytest
from jax import lax
from jax._src.random import threefry2x32 as jax_threefry

from hloscope.interpret.rng import rng, rng_bit_generator, threefry2x32

jax.config.update("jax_enable_x64", True)

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


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
@pytest.mark.parametrize("dtype", [np.uint32, np.uint64, np.uint8, np.uint16], ids=str)
def test_rng_bit_generator_matches_xla(algorithm, dtype):
    for shape in SHAPES:
        for key in KEYS:
            f = jax.jit(lambda k, s=shape: lax.rng_bit_generator(
                k, s, dtype, algorithm=ALGORITHMS[algorithm]))
            ref_state, ref_bits = (np.asarray(v) for v in f(key))
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
