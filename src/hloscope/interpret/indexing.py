"""Pure numpy semantics of XLA's data-dependent indexing ops: gather and scatter.

Both turn the dimension numbers into flat operand offsets with index arithmetic over whole
arrays (no per-element Python loop). `dynamic-slice` and `dynamic-update-slice` live with the
structural ops in shape_ops.py. `combine_at` is the shared "apply updates at indices, in order"
kernel, also used by select-and-scatter.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["UpdateComputation", "combine_at", "gather", "scatter"]

UpdateComputation = Callable[[tuple[np.ndarray, ...], tuple[np.ndarray, ...]], Sequence[np.ndarray]]
"""update_computation(current: tuple, update: tuple) -> tuple: XLA's scatter computation applied
elementwise to whole arrays (current operand values first, then update values)."""


def _row_major_strides(shape: Sequence[int]) -> list[int]:
    strides, acc = [], 1
    for n in reversed(tuple(shape)):
        strides.append(acc)
        acc *= n
    return strides[::-1]


def _known_scatter_ufunc(known: str, dtype: np.dtype) -> np.ufunc | None:
    if known == "replace":
        return None
    if np.dtype(dtype) == np.bool_:
        return {"add": np.logical_or, "or": np.logical_or, "max": np.logical_or,
                "multiply": np.logical_and, "and": np.logical_and, "min": np.logical_and}[known]
    return {"add": np.add, "multiply": np.multiply, "max": np.maximum, "min": np.minimum,
            "and": np.bitwise_and, "or": np.bitwise_or}[known]


def _call(fn: UpdateComputation, a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    out = fn(a, b)
    if isinstance(out, np.ndarray):
        out = (out,)
    shape = a[0].shape
    return tuple(np.broadcast_to(np.asarray(o).astype(x.dtype, copy=False), shape)
                 for o, x in zip(out, a, strict=True))


# Note [Scatter collisions]
# -------------------------
# Updates that hit the same operand element are applied in order, one at a time:
# out = f(...f(f(out, u1), u2)..., uk), as XLA:CPU's scatter loop does. Known reducers use
# `ufunc.at`, which does exactly that. A general computation is applied in rounds: round r
# combines the r-th update of every element that has one, all elements at once, so the
# computation is called (largest collision count) times on whole arrays. Folding the updates
# first (f(out, f(u1, u2))) would be faster but is only right for associative f: jnp's
# `x.at[i].apply(sin)` is f(a, b) = sin(a), which must apply sin once per update.
# "Replace" (f(a, b) = b) keeps the last update.


def combine_at(
    outs: tuple[np.ndarray, ...],
    idx: np.ndarray,
    updates: tuple[np.ndarray, ...],
    computation: UpdateComputation | None,
    known: str | None = None,
) -> None:
    """In place on the flat arrays `outs`: for each i in order, outs[idx[i]] =
    computation(outs[idx[i]], updates[i]) (tuples across operands). `known` ("add", "multiply",
    "max", "min", "and", "or", "replace") selects a ufunc fast path for a single operand.
    See Note [Scatter collisions]."""
    idx = np.asarray(idx, dtype=np.int64).reshape(-1)
    if idx.size == 0:
        return
    if known is not None and len(outs) == 1:
        uf = _known_scatter_ufunc(known, outs[0].dtype)
        upd = np.asarray(updates[0]).astype(outs[0].dtype, copy=False).reshape(-1)
        if uf is not None:
            uf.at(outs[0], idx, upd)
        else:
            # The last update to each element wins: first occurrence in the reversed list.
            uniq, first_rev = np.unique(idx[::-1], return_index=True)
            outs[0][uniq] = upd[::-1][first_rev]
        return
    if computation is None:
        raise ValueError("scatter needs an update computation or a known one")
    # Stable by target, so each target's updates stay in order; rank = occurrence number.
    order = np.argsort(idx, kind="stable")
    tgt = idx[order]
    m = tgt.size
    starts = np.ones(m, bool)
    starts[1:] = tgt[1:] != tgt[:-1]
    first = np.nonzero(starts)[0]
    rank = np.arange(m) - first[np.cumsum(starts) - 1]
    by_round = order[np.argsort(rank, kind="stable")]
    bounds = np.cumsum(np.bincount(rank))
    flat_updates = tuple(np.asarray(u).reshape(-1) for u in updates)
    for lo, hi in zip(np.concatenate([[0], bounds[:-1]]), bounds, strict=True):
        pick = by_round[lo:hi]  # one update per target: the round's occurrence
        t = idx[pick]
        result = _call(computation, tuple(o[t] for o in outs), tuple(u[pick] for u in flat_updates))
        for o, r in zip(outs, result, strict=True):
            o[t] = r


def _index_batch(start_indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """Start indices with the index vector moved last (added, of size 1, if implicit)."""
    s = np.asarray(start_indices)
    if index_vector_dim == s.ndim:
        s = s[..., None]
    if s.dtype == np.uint64:  # huge unsigned indices stay huge, not negative
        s = np.minimum(s, np.uint64(np.iinfo(np.int64).max))
    # Narrower unsigned indices fit in int64 as they are (the astype below).
    return np.moveaxis(s, index_vector_dim, -1).astype(np.int64)


def _batch_axis(indices_dim: int, index_vector_dim: int) -> int:
    # Position of an indices dimension among the batch axes (the index-vector dim removed).
    return indices_dim - 1 if indices_dim > index_vector_dim else indices_dim


def _axis_range(n: int, axis: int, rank: int) -> np.ndarray:
    shape = [1] * rank
    shape[axis] = n
    return np.arange(n, dtype=np.int64).reshape(shape)


def gather(
    operand: np.ndarray,
    start_indices: np.ndarray,
    offset_dims: Sequence[int],
    collapsed_slice_dims: Sequence[int],
    start_index_map: Sequence[int],
    index_vector_dim: int,
    slice_sizes: Sequence[int],
    operand_batching_dims: Sequence[int] = (),
    start_indices_batching_dims: Sequence[int] = (),
    indices_are_sorted: bool = False,
) -> np.ndarray:
    """HLO `gather`: one slice of `slice_sizes` per index vector in `start_indices`.

    The index vector (along `index_vector_dim`) gives the start in the operand dimensions
    `start_index_map`; XLA clamps each start to `[0, operand_dim - slice_size]` so the slice
    is always in bounds. Operand dimensions in `operand_batching_dims` start at the position of
    the matching `start_indices_batching_dims` dimension. The result has the batch (index)
    dimensions in order, with the slice dimensions that are neither collapsed nor batching
    placed at `offset_dims`. `indices_are_sorted` is only a hint.
    """
    operand = np.asarray(operand)
    si = _index_batch(start_indices, index_vector_dim)
    batch_shape = si.shape[:-1]
    nb = len(batch_shape)
    skipped = set(collapsed_slice_dims) | set(operand_batching_dims)
    offset_operand_dims = [d for d in range(operand.ndim) if d not in skipped]
    no = len(offset_operand_dims)
    strides = _row_major_strides(operand.shape)
    flat = np.zeros(batch_shape + (1,) * no, np.int64)
    for k, d in enumerate(start_index_map):
        start = np.clip(si[..., k], 0, operand.shape[d] - slice_sizes[d])
        flat = flat + start.reshape(batch_shape + (1,) * no) * strides[d]
    for od, sd in zip(operand_batching_dims, start_indices_batching_dims, strict=True):
        p = _batch_axis(sd, index_vector_dim)
        flat = flat + _axis_range(batch_shape[p], p, nb + no) * strides[od]
    for j, d in enumerate(offset_operand_dims):
        flat = flat + _axis_range(slice_sizes[d], nb + j, nb + no) * strides[d]
    out_shape = batch_shape + tuple(slice_sizes[d] for d in offset_operand_dims)
    flat = np.broadcast_to(flat, out_shape)
    res = operand.reshape(-1)[flat] if operand.size else np.zeros(out_shape, operand.dtype)
    # Axes are (batch..., offset...); the result interleaves them by offset_dims.
    perm, next_batch = [], 0
    offset_pos = {d: i for i, d in enumerate(offset_dims)}
    for j in range(nb + no):
        if j in offset_pos:
            perm.append(nb + offset_pos[j])
        else:
            perm.append(next_batch)
            next_batch += 1
    return np.array(np.transpose(res, perm))


def scatter(
    operands: Sequence[np.ndarray],
    scatter_indices: np.ndarray,
    updates: Sequence[np.ndarray],
    update_window_dims: Sequence[int],
    inserted_window_dims: Sequence[int],
    scatter_dims_to_operand_dims: Sequence[int],
    index_vector_dim: int,
    input_batching_dims: Sequence[int] = (),
    scatter_indices_batching_dims: Sequence[int] = (),
    update_computation: UpdateComputation | None = None,
    known: str | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> tuple[np.ndarray, ...]:
    """HLO `scatter` (variadic): copies of `operands` with each update window combined in by
    `update_computation(current, update)` (tuples across operands).

    The update dimensions not in `update_window_dims` are the scatter (batch) dimensions and
    match `scatter_indices` without its index-vector dimension. Each index vector gives the
    window start in operand dimensions `scatter_dims_to_operand_dims`; `input_batching_dims`
    start at the matching `scatter_indices_batching_dims` position. A window that does not fit
    entirely in the operand is dropped whole (XLA's rule; no clamping, unlike gather).
    Colliding updates apply in row-major update order (Note [Scatter collisions]). The two
    flags are hints only. Returns one array per operand.
    """
    ops = tuple(np.asarray(o) for o in operands)
    ups = tuple(np.asarray(u) for u in updates)
    op_shape = ops[0].shape
    si = _index_batch(scatter_indices, index_vector_dim)
    batch_shape = si.shape[:-1]
    nb = len(batch_shape)
    update_scatter_dims = [d for d in range(ups[0].ndim) if d not in update_window_dims]
    ups_t = tuple(np.transpose(u, update_scatter_dims + list(update_window_dims)) for u in ups)
    window_shape = tuple(ups[0].shape[d] for d in update_window_dims)
    skipped = set(inserted_window_dims) | set(input_batching_dims)
    window_operand_dims = [d for d in range(len(op_shape)) if d not in skipped]
    window_size = {d: window_shape[j] for j, d in enumerate(window_operand_dims)}
    nw = len(window_operand_dims)
    strides = _row_major_strides(op_shape)
    flat = np.zeros(batch_shape + (1,) * nw, np.int64)
    in_bounds = np.ones(batch_shape, bool)
    for k, d in enumerate(scatter_dims_to_operand_dims):
        start = si[..., k]
        in_bounds &= (start >= 0) & (start <= op_shape[d] - window_size.get(d, 1))
        flat = flat + start.reshape(batch_shape + (1,) * nw) * strides[d]
    for od, sd in zip(input_batching_dims, scatter_indices_batching_dims, strict=True):
        p = _batch_axis(sd, index_vector_dim)
        flat = flat + _axis_range(batch_shape[p], p, nb + nw) * strides[od]
    for j, d in enumerate(window_operand_dims):
        flat = flat + _axis_range(window_shape[j], nb + j, nb + nw) * strides[d]
    full = batch_shape + window_shape
    flat = np.broadcast_to(flat, full)
    keep = np.broadcast_to(in_bounds.reshape(batch_shape + (1,) * nw), full)
    outs = tuple(o.copy().reshape(-1) for o in ops)
    combine_at(outs, flat[keep], tuple(u[keep] for u in ups_t), update_computation, known)
    return tuple(o.reshape(op_shape) for o in outs)
