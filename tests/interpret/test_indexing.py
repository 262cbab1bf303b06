"""indexing against jax.lax on the CPU: gather (XLA clamping, batching dims) and scatter
(out-of-bounds windows dropped, collisions, batching dims, general update computations)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax

from hloscope.interpret import indexing
from hloscope.testing.tolerances import INDEXING
from hloscope.testing.tolerances import assert_close as _assert_close

RNG = np.random.default_rng(3)
PROMISE = lax.GatherScatterMode.PROMISE_IN_BOUNDS  # hands indices to XLA untouched
DROP = lax.GatherScatterMode.FILL_OR_DROP

def assert_close(ours: np.ndarray, theirs, scale: float = 1.0) -> None:
    _assert_close(ours, theirs, INDEXING, scale)


def gather_both(operand, indices, dn_kwargs, slice_sizes):
    dn = lax.GatherDimensionNumbers(**dn_kwargs)
    theirs = lax.gather(operand, indices, dn, slice_sizes, mode=PROMISE)
    ivd = indices.ndim - 1  # jax's convention: the index vector is the last dimension
    ours = indexing.gather(operand, indices, dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
                           ivd, slice_sizes, dn.operand_batching_dims, dn.start_indices_batching_dims)
    return ours, theirs


GATHER_CASES = [
    # operand shape, indices, dimension numbers, slice sizes
    ((10, 4), [[1], [9], [-3], [12]], dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
     (1, 4)),
    ((6, 7), [[[0, 1], [5, 6]], [[-2, 3], [4, 100]]],
     dict(offset_dims=(2, 3), collapsed_slice_dims=(), start_index_map=(0, 1)), (2, 3)),
    ((5, 6, 7), [[4, 1], [0, 9]],
     dict(offset_dims=(0,), collapsed_slice_dims=(0, 2), start_index_map=(2, 0)), (1, 3, 1)),
    ((3, 8, 5), [[[2], [7]], [[0], [3]], [[5], [-1]]],  # batching: dim 0 of operand and indices
     dict(offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(0,),
          start_indices_batching_dims=(0,)), (1, 1, 5)),
    ((4, 2, 6), [[[1], [5]], [[0], [2]]],  # batching on operand dim 1 <- indices dim 0
     dict(offset_dims=(2,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(1,),
          start_indices_batching_dims=(0,)), (1, 1, 1)),
]


@pytest.mark.parametrize("shape,indices,dn,slice_sizes", GATHER_CASES)
def test_gather_clamps_like_xla(shape, indices, dn, slice_sizes):
    operand = RNG.standard_normal(shape).astype(np.float32)
    ours, theirs = gather_both(operand, np.asarray(indices, np.int32), dn, slice_sizes)
    assert_close(ours, theirs)


def test_gather_index_vector_dim_not_last():
    operand = np.arange(42, dtype=np.int32).reshape(6, 7)
    idx = np.array([[0, 5, 3], [1, 2, 9]], np.int32)  # index vectors along dim 0
    ours = indexing.gather(operand, idx, (1,), (0,), (0, 1), 0, (1, 2))
    theirs = lax.gather(operand, idx.T.copy(), lax.GatherDimensionNumbers((1,), (0,), (0, 1)), (1, 2), mode=PROMISE)
    assert_close(ours, theirs)


def test_gather_implicit_index_vector_dim():
    operand = np.arange(20, dtype=np.int32).reshape(5, 4)
    idx = np.array([[0, 4], [2, 7]], np.int32)
    ours = indexing.gather(operand, idx, (2,), (0,), (0,), 2, (1, 4))
    theirs = lax.gather(operand, idx[..., None], lax.GatherDimensionNumbers((2,), (0,), (0,)), (1, 4), mode=PROMISE)
    assert_close(ours, theirs)


@st.composite
def gather_configs(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    start_map = draw(st.permutations(range(rank)).map(lambda p: p[: draw(st.integers(1, rank))]))
    slice_sizes = tuple(draw(st.integers(1, n)) for n in shape)
    collapsible = [d for d in range(rank) if slice_sizes[d] == 1]
    collapsed = tuple(sorted(d for d in collapsible if draw(st.booleans())))
    batch_shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    n_offset = rank - len(collapsed)
    out_rank = len(batch_shape) + n_offset
    offset_dims = tuple(sorted(draw(st.permutations(range(out_rank)))[:n_offset]))
    return shape, tuple(start_map), slice_sizes, collapsed, batch_shape, offset_dims


@settings(max_examples=25, deadline=None)
@given(cfg=gather_configs(), seed=st.integers(0, 1000))
def test_gather_random_dimension_numbers(cfg, seed):
    shape, start_map, slice_sizes, collapsed, batch_shape, offset_dims = cfg
    rng = np.random.default_rng(seed)
    operand = rng.integers(-50, 50, shape).astype(np.int32)
    indices = rng.integers(-3, 8, batch_shape + (len(start_map),)).astype(np.int32)
    dn = dict(offset_dims=offset_dims, collapsed_slice_dims=collapsed, start_index_map=start_map)
    ours, theirs = gather_both(operand, indices, dn, slice_sizes)
    assert_close(ours, theirs)


def scatter_dn(update_window_dims, inserted_window_dims, sd2od, obd=(), sibd=()):
    return lax.ScatterDimensionNumbers(update_window_dims, inserted_window_dims, sd2od, obd, sibd)


def scatter_ours(operand, indices, updates, dn, **kw):
    (out,) = indexing.scatter([operand], indices, [updates], dn.update_window_dims, dn.inserted_window_dims,
                              dn.scatter_dims_to_operand_dims, indices.ndim - 1, dn.operand_batching_dims,
                              dn.scatter_indices_batching_dims, **kw)
    return out


SCATTER_CASES = [
    # operand shape, indices, updates shape, dimension numbers
    ((8, 3), [[1], [7], [1], [-1], [8], [1]], (6, 3), scatter_dn((1,), (0,), (0,))),
    ((6, 6), [[0, 0], [4, 5], [5, 2], [2, 2], [4, 4]], (5, 2, 2), scatter_dn((1, 2), (), (0, 1))),  # partial OOB
    ((3, 5, 4), [[[1], [1]], [[4], [0]], [[2], [9]]], (3, 2, 4),  # batching dims
     scatter_dn((2,), (1,), (1,), (0,), (0,))),
]


@pytest.mark.parametrize("shape,indices,updates_shape,dn", SCATTER_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, ml_dtypes.bfloat16])
def test_scatter_add_known(shape, indices, updates_shape, dn, dtype):
    operand = RNG.integers(-5, 5, shape).astype(dtype)
    updates = RNG.integers(-5, 5, updates_shape).astype(dtype)
    indices = np.asarray(indices, np.int32)
    theirs = lax.scatter_add(operand, indices, updates, dn, mode=DROP)
    assert_close(scatter_ours(operand, indices, updates, dn, known="add"), theirs)


@pytest.mark.parametrize("shape,indices,updates_shape,dn", SCATTER_CASES)
@pytest.mark.parametrize(
    "name,lax_fn,known,computation",
    [("mul", lax.scatter_mul, "multiply", lambda a, b: (a[0] * b[0],)),
     ("max", lax.scatter_max, "max", lambda a, b: (np.maximum(a[0], b[0]),)),
     ("min", lax.scatter_min, "min", None)],
)
def test_scatter_reducers_known_and_callable(shape, indices, updates_shape, dn, name, lax_fn, known, computation):
    operand = RNG.integers(-4, 5, shape).astype(np.float32)
    updates = RNG.integers(-4, 5, updates_shape).astype(np.float32)
    indices = np.asarray(indices, np.int32)
    theirs = lax_fn(operand, indices, updates, dn, mode=DROP)
    assert_close(scatter_ours(operand, indices, updates, dn, known=known), theirs)
    if computation is not None:
        assert_close(scatter_ours(operand, indices, updates, dn, update_computation=computation), theirs)


def test_scatter_replace_last_update_wins():
    operand = np.zeros(5, np.float32)
    indices = np.array([[1], [3], [1], [1], [7]], np.int32)
    updates = np.array([10, 20, 30, 40, 50], np.float32)
    dn = scatter_dn((), (0,), (0,))
    theirs = lax.scatter(operand, indices, updates, dn, mode=DROP)
    assert_close(scatter_ours(operand, indices, updates, dn, known="replace"), theirs)
    assert_close(scatter_ours(operand, indices, updates, dn, update_computation=lambda a, b: (b[0],)), theirs)
    np.testing.assert_array_equal(theirs, [0, 40, 0, 20, 0])


def test_scatter_non_commutative_computation_applies_in_order():
    # f(a, b) = 2a + b is neither commutative nor associative: updates 1, 2, 3 at index 0 give
    # 2(2(2*0 + 1) + 2) + 3 = 11, one application per update in order.
    operand = np.zeros(2, np.int32)
    indices = np.array([[0], [1], [0], [0]], np.int32)
    updates = np.array([1, 5, 2, 3], np.int32)
    ours = scatter_ours(operand, indices, updates, scatter_dn((), (0,), (0,)),
                        update_computation=lambda a, b: (2 * a[0] + b[0],))
    np.testing.assert_array_equal(ours, [11, 5])


def test_scatter_apply_runs_once_per_colliding_update():
    # jnp's x.at[i].apply(f) is a scatter whose computation ignores the update: with index 1
    # twice, XLA applies sin twice there (sin(sin(x))), not once to a folded update.
    import jax.numpy as jnp

    x = np.array([0.5, 1.0, 2.0], np.float32)
    i = np.array([1, 0, 1], np.int32)
    theirs = jnp.asarray(x).at[i].apply(jnp.sin)
    ours = scatter_ours(x, i[:, None], np.zeros(3, np.float32), scatter_dn((), (0,), (0,)),
                        update_computation=lambda a, b: (np.sin(a[0]),))
    assert_close(ours, theirs)


def test_gather_and_scatter_take_unsigned_indices():
    # jnp.searchsorted gathers with u32 indices; they must not be clamped through a u32 bound.
    operand = np.arange(6, dtype=np.int32)
    dn = dict(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    for dtype in (np.uint8, np.uint32, np.uint64):
        indices = np.array([[0], [5], [200]], dtype)
        ours, theirs = gather_both(operand, indices, dn, (1,))
        assert_close(ours, theirs)


def test_scatter_variadic_matches_separate_scatters():
    ops = [RNG.integers(0, 9, (6, 2)).astype(np.int32), RNG.standard_normal((6, 2)).astype(np.float32)]
    indices = np.array([[0], [5], [0], [2], [-1]], np.int32)
    ups = [RNG.integers(0, 9, (5, 2)).astype(np.int32), RNG.standard_normal((5, 2)).astype(np.float32)]
    dn = scatter_dn((1,), (0,), (0,))
    ours = indexing.scatter(ops, indices, ups, (1,), (0,), (0,), 1,
                            update_computation=lambda a, b: (a[0] + b[0], np.maximum(a[1], b[1])))
    assert_close(ours[0], lax.scatter_add(ops[0], indices, ups[0], dn, mode=DROP))
    assert_close(ours[1], lax.scatter_max(ops[1], indices, ups[1], dn, mode=DROP))
