"""Pure numpy semantics of XLA's structural ops: operations that move, copy or pad elements.

Every function takes numpy arrays (ml_dtypes for bf16/f8/int4) and plain Python ints/tuples
unpacked from the instruction's attributes, and returns a new array. None of them sees the IR.
Values are *logical* arrays (row-major numpy order); layouts matter only for `bitcast`, see
Note [Bitcast reinterprets the physical buffer].
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "bitcast_between_layouts",
    "broadcast_in_dim",
    "concatenate",
    "copy",
    "dynamic_slice",
    "dynamic_update_slice",
    "iota",
    "pad",
    "physical_bytes",
    "reshape",
    "reverse",
    "slice",
    "transpose",
]


def broadcast_in_dim(x: np.ndarray, out_shape: Sequence[int], dimensions: Sequence[int]) -> np.ndarray:
    """HLO `broadcast`: operand dimension i becomes result dimension `dimensions[i]`.

    The other result dimensions replicate the operand. An operand dimension of size 1 may map to
    a larger result dimension (StableHLO's broadcast_in_dim allows it; HLO's broadcast does not
    need it but it is harmless).
    """
    out_shape = tuple(out_shape)
    expanded = [1] * len(out_shape)
    for i, d in enumerate(dimensions):
        expanded[d] = x.shape[i]
    # The operand dims keep their relative order only if `dimensions` is increasing; a
    # transpose first handles the (legal in StableHLO) unsorted case.
    order = np.argsort(dimensions, kind="stable")
    xt = np.transpose(x, order) if len(order) else x
    # A read-only view (Note [Views]): XLA fuses broadcasts into their users, and a copy here
    # was a full-size array per broadcast scalar in every optimizer update.
    return np.broadcast_to(xt.reshape(expanded), out_shape)


# Note [Views]: broadcast, reshape and transpose return numpy views, not copies, as XLA's
# layout assignment makes most of them free. A view is safe to hand on because nothing writes
# into an array it does not own: in-place writes (dynamic-update-slice, elementwise ops, gemm
# accumulation) ask ``sole_owner``, which counts the references to the view's base too, and
# broadcast views are read-only.


def reshape(x: np.ndarray, out_shape: Sequence[int]) -> np.ndarray:
    """HLO `reshape`: same elements in row-major (logical) order, new dimensions (a view when
    numpy can make one, Note [Views])."""
    return np.reshape(x, tuple(out_shape))


def transpose(x: np.ndarray, permutation: Sequence[int]) -> np.ndarray:
    """HLO `transpose`: result dimension i is operand dimension `permutation[i]` (a view, Note
    [Views])."""
    return np.transpose(x, tuple(permutation))


def slice(  # noqa: A001 - XLA's name for the op
    x: np.ndarray, starts: Sequence[int], limits: Sequence[int], strides: Sequence[int] | None = None
) -> np.ndarray:
    """HLO `slice`: `x[start:limit:stride]` per dimension (all static, in bounds)."""
    strides = strides if strides is not None else [1] * x.ndim
    return x[tuple(np.s_[s:lim:st] for s, lim, st in zip(starts, limits, strides, strict=True))].copy()


def concatenate(xs: Sequence[np.ndarray], dimension: int) -> np.ndarray:
    """HLO `concatenate` along `dimension`."""
    return np.concatenate(list(xs), axis=dimension)


def pad(
    x: np.ndarray,
    pad_value: np.ndarray | np.generic | float,
    low: Sequence[int],
    high: Sequence[int],
    interior: Sequence[int] | None = None,
) -> np.ndarray:
    """HLO `pad`: insert `interior[d]` pad elements between neighbours, then `low[d]`/`high[d]`
    elements at the edges. Negative `low`/`high` remove elements from that edge instead (applied
    after interior padding, as XLA does).

    Result size per dimension: `low + n + max(n - 1, 0) * interior + high`.
    """
    interior = interior if interior is not None else [0] * x.ndim
    out_shape, dst, src = [], [], []
    for n, lo, hi, it in zip(x.shape, low, high, interior, strict=True):
        size = lo + n + max(n - 1, 0) * it + hi
        if size < 0:
            raise ValueError(f"pad produces negative dimension size {size}")
        out_shape.append(size)
        # Operand element j lands at lo + j * step; those inside [0, size) are one run
        # first <= j < last, so (strided) slices place them, with no index arrays.
        step = it + 1
        first = max(0, -(lo // step))                # ceil(-lo / step)
        last = max(first, min(n, -((lo - size) // step)))  # ceil((size - lo) / step)
        src.append(np.s_[first:last])
        dst.append(np.s_[lo + first * step : lo + last * step : step])
    if x.ndim == 0:
        return np.array(x, copy=True)
    out = np.full(out_shape, np.asarray(pad_value, dtype=x.dtype), dtype=x.dtype)
    if all(s.stop > s.start for s in src):
        out[tuple(dst)] = x[tuple(src)]
    return out


def reverse(x: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """HLO `reverse`: flip the listed dimensions."""
    return np.flip(x, axis=tuple(dims)).copy() if len(dims) else x.copy()


def iota(shape: Sequence[int], dtype: np.dtype | type, iota_dimension: int) -> np.ndarray:
    """HLO `iota`: element value is its index along `iota_dimension`, converted to `dtype`.

    Large iotas in narrow float types round (bf16 holds integers exactly only up to 256), as
    XLA's conversion does; complex types get the index as real part.
    """
    shape = tuple(shape)
    line = np.arange(shape[iota_dimension], dtype=np.int64)
    line = line.astype(np.float64).astype(dtype) if np.dtype(dtype).kind not in "iub" else line.astype(dtype)
    view = [1] * len(shape)
    view[iota_dimension] = shape[iota_dimension]
    return np.array(np.broadcast_to(line.reshape(view), shape))


def _clamped_starts(operand_shape: Sequence[int], starts: Sequence[np.ndarray], sizes: Sequence[int]) -> list[int]:
    # XLA clamps each start so the whole slice is in bounds: clamp(start, 0, dim - size).
    # Starts may be any integer type; int() of a 0-d array is exact for all of them.
    return [
        min(max(int(s), 0), dim - size)
        for s, dim, size in zip(starts, operand_shape, sizes, strict=True)
    ]


def dynamic_slice(x: np.ndarray, starts: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray:
    """HLO `dynamic-slice`: `x[start:start+size]` per dimension, where each start (a 0-d integer
    array) is first clamped to `[0, dim - size]`, so the slice never reads out of bounds."""
    begin = _clamped_starts(x.shape, starts, sizes)
    return x[tuple(np.s_[b : b + s] for b, s in zip(begin, sizes, strict=True))].copy()


def dynamic_update_slice(x: np.ndarray, update: np.ndarray, starts: Sequence[np.ndarray], *,
                         in_place: bool = False) -> np.ndarray:
    """HLO `dynamic-update-slice`: a copy of `x` with `update` written at `starts`, each start
    clamped to `[0, dim - update_dim]` (so the whole update always lands in bounds). With
    `in_place` the update is written into `x` itself, which is returned."""
    begin = _clamped_starts(x.shape, starts, update.shape)
    out = x if in_place else x.copy()
    out[tuple(np.s_[b : b + s] for b, s in zip(begin, update.shape, strict=True))] = update
    return out


def copy(x: np.ndarray) -> np.ndarray:
    """HLO `copy`: same logical values. A copy may change the layout, but values here are logical
    arrays, so the layout change is invisible (contrast with `bitcast_between_layouts`)."""
    return x.copy()


# Note [Bitcast reinterprets the physical buffer]
# ------------------------------------------------
# An HLO `bitcast` does not move data: it reinterprets the operand's *buffer* with the result's
# shape and layout. A layout's minor_to_major lists dimensions from fastest- to slowest-varying
# in memory, so the physical (memory) order of a logical array is
# `np.transpose(x, reversed(minor_to_major))` read row-major. Example: f32[2,3]{0,1} holding
# logical [[0,1,2],[3,4,5]] is stored column-major as 0,3,1,4,2,5; bitcast to f32[6]{0} gives
# [0,3,1,4,2,5], while a reshape would give [0,1,2,3,4,5]. Tiled layouts (`:T(8,128)`) and
# sub-byte packing (`element_size_in_bits`, int4 stored one per byte by ml_dtypes) are ignored.


def physical_bytes(x: np.ndarray, minor_to_major: Sequence[int]) -> bytes:
    """The bytes of logical array `x` as XLA stores them under a layout with `minor_to_major`
    (see Note [Bitcast reinterprets the physical buffer]); little-endian, no tiling."""
    major_to_minor = tuple(reversed(tuple(minor_to_major)))
    return np.transpose(x, major_to_minor).tobytes()


def bitcast_between_layouts(
    x: np.ndarray,
    in_shape_dims: Sequence[int],
    in_minor_to_major: Sequence[int],
    out_shape_dims: Sequence[int],
    out_minor_to_major: Sequence[int],
    out_dtype: np.dtype | type,
) -> np.ndarray:
    """HLO `bitcast`: logical `x` (dims `in_shape_dims`) -> its buffer under `in_minor_to_major`
    -> reinterpreted as `out_dtype` elements laid out by `out_minor_to_major` -> the logical
    result array of shape `out_shape_dims`. Total byte sizes must agree; the element type may
    change width (the element count then changes accordingly).

    Example: f32[2,3]{0,1} [[0,1,2],[3,4,5]] -> f32[3,2]{1,0} gives [[0,3],[1,4],[2,5]] (the
    column-major buffer read row-major), i.e. a transpose for free.
    """
    if tuple(x.shape) != tuple(in_shape_dims):
        raise ValueError(f"bitcast operand has shape {x.shape}, expected {tuple(in_shape_dims)}")
    raw = physical_bytes(x, in_minor_to_major)
    out_dtype = np.dtype(out_dtype)
    out_dims = tuple(out_shape_dims)
    count = int(np.prod(out_dims, dtype=np.int64))
    if count * out_dtype.itemsize != len(raw):
        raise ValueError(
            f"bitcast changes the byte size: {len(raw)} bytes in, {count * out_dtype.itemsize} out"
        )
    major_to_minor = tuple(reversed(tuple(out_minor_to_major)))
    physical = np.frombuffer(raw, dtype=out_dtype).reshape([out_dims[d] for d in major_to_minor])
    # physical axis j holds logical dimension major_to_minor[j]; invert that permutation.
    return np.transpose(physical, np.argsort(major_to_minor)).copy()
