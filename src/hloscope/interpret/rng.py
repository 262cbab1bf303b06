"""Random bits: the threefry2x32 hash, XLA's ``rng-bit-generator`` and the legacy ``rng`` op.

``rng_bit_generator`` is a transcription of XLA's RngBitGeneratorExpander and
xla/hlo/builder/lib/prng.cc (ThreeFryBitGenerator, PhiloxBitGenerator), so its bits and its new
state match XLA bit for bit. XLA:CPU expands ``rng_default`` to Philox.

Everything is vectorized over uint32/uint64 numpy arrays; uint arithmetic wraps modulo 2^32 or
2^64 as the algorithms require (numpy's unsigned array arithmetic wraps silently).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hloscope.interpret.dtype_bits import contiguous

__all__ = ["threefry2x32", "philox4x32", "rng_bit_generator", "rng", "RNG_ALGORITHMS"]

Array = np.ndarray[Any, Any]


RNG_ALGORITHMS = ("rng_default", "rng_three_fry", "rng_philox")

_U32 = np.uint32
_U64 = np.uint64
_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotate_left(v: Array, distance: int) -> Array:
    return (v << _U32(distance)) | (v >> _U32(32 - distance))


def threefry2x32(key0: Array, key1: Array, x0: Array, x1: Array) -> tuple[Array, Array]:
    """The Threefry-2x32 block cipher with 20 rounds (Salmon et al. 2011), elementwise.

    Same function as jax's ``threefry2x32_p`` and XLA's ThreeFry2x32: the key words and
    counter words are uint32 arrays (broadcast together); returns the two output words.
    """
    k0, k1, y0, y1 = np.broadcast_arrays(*(np.asarray(a, _U32) for a in (key0, key1, x0, x1)))
    k2 = k0 ^ k1 ^ _U32(0x1BD11BDA)
    schedule = ((k1, k2), (k2, k0), (k0, k1), (k1, k2), (k2, k0))
    y0 = y0 + k0
    y1 = y1 + k1
    for i, (a, b) in enumerate(schedule):
        for r in _THREEFRY_ROTATIONS[i % 2]:
            y0 = y0 + y1
            y1 = _rotate_left(y1, r) ^ y0
        y0 = y0 + a
        y1 = y1 + b + _U32(i + 1)
    return y0, y1


_PHILOX_W = (_U32(0x9E3779B9), _U32(0xBB67AE85))
_PHILOX_M = (_U64(0xD2511F53), _U64(0xCD9E8D57))


def philox4x32(counter: tuple[Array, Array, Array, Array], key: tuple[Array, Array]) -> tuple[
    Array, Array, Array, Array
]:
    """The Philox-4x32 block cipher with 10 rounds, as XLA's Philox4x32 (uint32 words)."""
    x0, x1, x2, x3 = (np.asarray(c, _U32) for c in counter)
    k0, k1 = (np.asarray(k, _U32) for k in key)
    with np.errstate(over="ignore"):  # 0-d key words become numpy scalars, which warn on wrap
        for _ in range(10):
            p0 = x0.astype(_U64) * _PHILOX_M[0]
            p1 = x2.astype(_U64) * _PHILOX_M[1]
            hi0, lo0 = (p0 >> _U64(32)).astype(_U32), p0.astype(_U32)
            hi1, lo1 = (p1 >> _U64(32)).astype(_U32), p1.astype(_U32)
            x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
            k0, k1 = k0 + _PHILOX_W[0], k1 + _PHILOX_W[1]
    return x0, x1, x2, x3


def _split_u64(v: Array) -> tuple[Array, Array]:
    return v.astype(_U32), (v >> _U64(32)).astype(_U32)


def _join_u32(lo: Array, hi: Array) -> Array:
    return lo.astype(_U64) | (hi.astype(_U64) << _U64(32))


def _split_shape_in_halves(shape: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """XLA's SplitShapeIntoHalves: (half shape, split dimension) for 32-bit Threefry.

    The split dimension is the first even one, else the largest; its half has ceil(d/2)
    elements, and the two Threefry output words interleave along it.
    """
    if not shape:
        return (1,), 0
    even = [i for i, d in enumerate(shape) if d % 2 == 0]
    split = even[0] if even else max(range(len(shape)), key=lambda i: (shape[i], -i))
    half = list(shape)
    half[split] = -(-shape[split] // 2)
    return tuple(half), split


def _threefry_bits(key: int, counter: int, shape: tuple[int, ...], width: int) -> tuple[
    Array, int
]:
    """(uint32 or uint64 bits of ``shape``, new counter) for XLA's ThreeFryBitGenerator."""
    k0, k1 = _split_u64(np.array(key, _U64))
    if width == 64:
        n = int(np.prod(shape, dtype=np.int64))
        inputs = np.array(counter, _U64) + np.arange(n, dtype=_U64)
        y0, y1 = threefry2x32(k0, k1, *_split_u64(inputs))
        return _join_u32(y0, y1).reshape(shape), (counter + n) % (1 << 64)
    half, split = _split_shape_in_halves(shape)
    n = int(np.prod(half, dtype=np.int64))
    inputs = np.array(counter, _U64) + np.arange(n, dtype=_U64)
    y0, y1 = threefry2x32(k0, k1, *_split_u64(inputs))
    if not shape:
        return y0.reshape(()), (counter + n) % (1 << 64)
    pair = np.stack([y0.reshape(half), y1.reshape(half)], axis=split + 1)
    full = list(shape)
    full[split] = 2 * half[split]
    bits = pair.reshape(full)[tuple(slice(0, d) for d in shape)]
    return bits, (counter + n) % (1 << 64)


def _philox_bits(key: int, counter: int, shape: tuple[int, ...], width: int) -> tuple[
    Array, int
]:
    """(bits, new 128-bit counter) for XLA's PhiloxBitGenerator; ``counter`` is a u128 int."""
    n = int(np.prod(shape, dtype=np.int64))
    blocks = -(-(2 * n if width == 64 else n) // 4)
    low = counter & ((1 << 64) - 1)
    high = counter >> 64
    iota = np.arange(blocks, dtype=_U64)
    new_low = np.array(low, _U64) + iota
    carry = new_low < np.array(low, _U64)
    new_high = np.where(carry, _U64((high + 1) % (1 << 64)), _U64(high))
    words = (*_split_u64(new_low), *_split_u64(new_high))
    out = philox4x32(words, _split_u64(np.array(key, _U64)))
    if width == 64:
        columns = [_join_u32(out[0], out[1]), _join_u32(out[2], out[3])]
    else:
        columns = list(out)
    bits = np.stack(columns, axis=1).reshape(-1)[:n].reshape(shape)
    return bits, (counter + blocks) % (1 << 128)


def rng_bit_generator(algorithm: str, state: Array, shape: tuple[int, ...], dtype: Any) -> tuple[
    Array, Array
]:
    """XLA ``rng-bit-generator``: (new state, random bits of ``shape`` and ``dtype``).

    ``algorithm`` is the HLO attribute text: rng_three_fry, rng_philox or rng_default (Philox,
    as on XLA:CPU). ``state`` is u64[2] for Threefry (key, counter) and u64[2] or u64[3] for
    Philox (key, 64- or 128-bit counter); a uint32 state with twice as many words is read as
    little-endian pairs and returned in the same form. 8- and 16-bit outputs take the low bits
    of 32-bit draws (as XLA does); signed and float dtypes reinterpret unsigned bits.
    """
    state = np.asarray(state)
    u32_state = state.dtype == np.uint32
    words = (
        _join_u32(state[0::2], state[1::2]) if u32_state else state.astype(_U64)
    ).tolist()
    dtype = np.dtype(dtype)
    width = dtype.itemsize * 8
    gen_width = 64 if width == 64 else 32
    key = words[0]
    if algorithm == "rng_three_fry":
        bits, new_counter = _threefry_bits(key, words[1], tuple(shape), gen_width)
        new_words = [key, new_counter]
    elif algorithm in ("rng_philox", "rng_default"):
        if len(words) >= 3:
            counter = words[1] | (words[2] << 64)
        else:  # XLA reverses a u64[2] state: the key doubles as the counter's high word
            counter = words[1] | (words[0] << 64)
        bits, new_counter = _philox_bits(key, counter, tuple(shape), gen_width)
        new_words = [key, new_counter & ((1 << 64) - 1)]
        if len(words) >= 3:
            new_words.append(new_counter >> 64)
        new_words += words[len(new_words):]
    else:
        raise ValueError(f"unknown rng-bit-generator algorithm {algorithm!r}")
    if width < 32:
        bits = bits.astype({8: np.uint8, 16: np.uint16}[width])
    bits = bits.view(dtype) if dtype.kind != "u" else bits.astype(dtype)
    new_state = np.array(new_words, _U64)
    if u32_state:
        new_state = np.stack(_split_u64(new_state), axis=1).reshape(-1)
    return new_state, contiguous(bits)


def rng(distribution: str, a: Array, b: Array, shape: tuple[int, ...], dtype: Any,
        generator: np.random.Generator) -> Array:
    """The legacy ``rng`` op, which XLA leaves nondeterministic: draws from ``generator``.

    rng_uniform: floats uniform in [a, b), integers uniform in [a, b) (a and b broadcast);
    rng_normal: mean ``a``, standard deviation ``b`` (floats only).
    """
    dtype = np.dtype(dtype)
    if distribution == "rng_uniform":
        if dtype.kind in "iub":  # pred too: [false, true) holds only false
            lo = np.broadcast_to(np.asarray(a, np.int64), shape)
            hi = np.broadcast_to(np.asarray(b, np.int64), shape)
            return generator.integers(lo, np.maximum(hi, lo + 1), size=shape).astype(dtype)
        lo = np.asarray(a, np.float64)
        hi = np.asarray(b, np.float64)
        return (lo + (hi - lo) * generator.random(size=shape)).astype(dtype)
    if distribution == "rng_normal":
        # mu + sigma * z: a negative sigma is allowed (XLA draws from the mirrored normal, the
        # same distribution), where numpy's normal(loc, scale) refuses scale < 0.
        z = generator.standard_normal(size=shape)
        return (np.asarray(a, np.float64) + np.asarray(b, np.float64) * z).astype(dtype)
    raise ValueError(f"unknown rng distribution {distribution!r}")
