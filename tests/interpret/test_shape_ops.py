"""shape_ops against jax.lax on the CPU (structural ops are exact: no tolerances needed)."""
from __future__ import annotations

import itertools

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax
from jax._src.lax import slicing as lax_slicing

from hloscope.interpret import shape_ops

RNG = np.random.default_rng(0)


def assert_same(ours: np.ndarray, theirs) -> None:
    theirs = np.asarray(theirs)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    "in_shape,out_shape,dims",
    [((3,), (2, 3), (1,)), ((3, 1), (3, 4), (0, 1)), ((), (2, 2), ()), ((2, 3), (2, 5, 3), (0, 2))],
)
def test_broadcast_in_dim(in_shape, out_shape, dims):
    x = RNG.standard_normal(in_shape).astype(np.float32)
    assert_same(shape_ops.broadcast_in_dim(x, out_shape, dims), lax.broadcast_in_dim(x, out_shape, dims))


def test_broadcast_in_dim_unsorted_dimensions():
    x = np.arange(6).reshape(2, 3)
    assert_same(shape_ops.broadcast_in_dim(x, (3, 4, 2), (2, 0)), np.broadcast_to(x.T[:, None, :], (3, 4, 2)))


def test_reshape_transpose_reverse_slice_concatenate():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    assert_same(shape_ops.reshape(x, (6, 4)), lax.reshape(x, (6, 4)))
    assert_same(shape_ops.transpose(x, (2, 0, 1)), lax.transpose(x, (2, 0, 1)))
    assert_same(shape_ops.reverse(x, (0, 2)), lax.rev(x, (0, 2)))
    assert_same(shape_ops.slice(x, (0, 1, 0), (2, 3, 4), (1, 1, 3)), lax.slice(x, (0, 1, 0), (2, 3, 4), (1, 1, 3)))
    y = RNG.standard_normal((2, 5, 4)).astype(np.float32)
    assert_same(shape_ops.concatenate([x, y], 1), lax.concatenate([x, y], 1))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, ml_dtypes.bfloat16, np.uint8])
def test_iota(dtype):
    assert_same(shape_ops.iota((3, 300), dtype, 1), lax.broadcasted_iota(dtype, (3, 300), 1))


def test_pad_negative_and_interior():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    cfg = [(-1, 2, 1), (2, -3, 0)]
    assert_same(shape_ops.pad(x, np.float32(-1), *zip(*cfg, strict=True)), lax.pad(x, np.float32(-1), cfg))


def test_pad_every_small_one_dimensional_config():
    """Every (low, high, interior) for short operands, including edges cropped past the
    operand and results of size 0: the slices pad builds must land each element as XLA does
    (its definition, written out element by element; the random configs above use lax.pad)."""
    for n in range(6):
        x = np.arange(1, n + 1, dtype=np.int32)
        for lo, hi, it in itertools.product(range(-7, 5), range(-7, 5), range(3)):
            size = lo + n + max(n - 1, 0) * it + hi
            if size < 0:
                continue
            want = np.zeros(size, np.int32)
            for j in range(n):
                if 0 <= lo + j * (it + 1) < size:
                    want[lo + j * (it + 1)] = x[j]
            assert_same(shape_ops.pad(x, np.int32(0), [lo], [hi], [it]), want)


pad_dim = st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(0, 2))


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3), data=st.data())
def test_pad_random_configs(shape, data):
    cfg = [data.draw(pad_dim) for _ in shape]
    for n, (lo, hi, it) in zip(shape, cfg, strict=True):
        if lo + hi + n + max(n - 1, 0) * it < 0:
            return  # an invalid configuration; XLA rejects it too
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    lows, highs, interiors = zip(*cfg, strict=True)
    assert_same(shape_ops.pad(x, np.int32(-7), lows, highs, interiors), lax.pad(x, np.int32(-7), cfg))


@pytest.mark.parametrize("starts", [(0, 0), (2, 1), (-5, 7), (100, -1), (3, 3)])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.uint32])
def test_dynamic_slice_clamps(starts, index_dtype):
    if index_dtype == np.uint32 and min(starts) < 0:
        pytest.skip("negative start in an unsigned type")
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    s = [np.asarray(v, index_dtype) for v in starts]
    # The primitive, not lax.dynamic_slice: jax wraps negative starts Python-style before XLA
    # sees them; XLA itself only clamps.
    theirs = lax_slicing.dynamic_slice_p.bind(x, *[jnp.asarray(v) for v in s], slice_sizes=(3, 4))
    assert_same(shape_ops.dynamic_slice(x, s, (3, 4)), theirs)


@pytest.mark.parametrize("starts", [(0, 0), (1, 2), (-5, 7), (100, -1)])
def test_dynamic_update_slice_clamps(starts):
    x = np.arange(30, dtype=np.int32).reshape(5, 6)
    u = -np.arange(8, dtype=np.int32).reshape(2, 4)
    s = [np.asarray(v, np.int32) for v in starts]
    theirs = lax_slicing.dynamic_update_slice_p.bind(x, u, *[jnp.asarray(v) for v in s])
    assert_same(shape_ops.dynamic_update_slice(x, u, s), theirs)


def test_physical_bytes_follows_minor_to_major():
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    assert shape_ops.physical_bytes(x, (1, 0)) == bytes([0, 1, 2, 3, 4, 5])
    assert shape_ops.physical_bytes(x, (0, 1)) == bytes([0, 3, 1, 4, 2, 5])


def test_bitcast_column_major_to_row_major_is_a_transpose():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = shape_ops.bitcast_between_layouts(x, (2, 3), (0, 1), (3, 2), (1, 0), np.float32)
    assert_same(out, x.T)
    flat = shape_ops.bitcast_between_layouts(x, (2, 3), (0, 1), (6,), (0,), np.float32)
    assert_same(flat, np.array([0, 3, 1, 4, 2, 5], np.float32))


def test_bitcast_changes_element_width():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    out = shape_ops.bitcast_between_layouts(x, (2, 2), (1, 0), (2, 2, 2), (2, 1, 0), np.uint16)
    assert_same(out, x.view(np.uint16).reshape(2, 2, 2))
    # Round trip through a non-default layout gives back the logical array.
    there = shape_ops.bitcast_between_layouts(x, (2, 2), (0, 1), (4,), (0,), np.int32)
    back = shape_ops.bitcast_between_layouts(there, (4,), (0,), (2, 2), (0, 1), np.float32)
    assert_same(back, x)
    with pytest.raises(ValueError, match="byte size"):
        shape_ops.bitcast_between_layouts(x, (2, 2), (1, 0), (3,), (0,), np.float32)
