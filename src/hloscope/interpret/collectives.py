"""Collective semantics as pure numpy functions over every device's operands at once.

Two representations of "the same value on every device" are supported:

* **per-device lists** -- ``xs[k]`` is device ``k``'s operand (an ``np.ndarray``, 0-d for a
  scalar, or a tuple of them for variadic ops). The evaluator uses these when devices run
  separately (MPMD, or per-device control flow).
* **stacked** (the ``*_stacked`` functions) -- one array whose leading axis is the device
  axis, ``x[k]`` being device ``k``'s operand. When devices run in lockstep (SPMD, style
  habit 11) a collective becomes one numpy operation along that axis, so Python's per-op cost
  is paid once rather than once per device.

Both take ``groups``: lists of flattened device indices, each in rank order, as
``devices.participant_groups`` + ``devices.device_groups`` produce them. Both forms agree
bit-for-bit (tests/interpret/test_collectives.py checks it).

Note [Reduction order and precision]
    XLA:CPU combines contributions in rank order, so ``all_reduce`` folds left over each
    group, ``((x[g0] op x[g1]) op x[g2]) ...``, casting every partial result back to the
    operand's element type (bf16 sums round at every step, as on device). The stacked form
    folds in the same order, vectorized over groups, so the two forms give identical bits.

Note [Reducers]
    An all-reduce's ``to_apply`` is always ``(E[], E[]) -> E[]``; a variadic all-reduce applies
    it to each operand independently. So a reducer here is either one of the names in
    ``KNOWN_REDUCTIONS`` (XLA's ``MatchReductionComputation`` kinds, plus and/or) or a
    vectorized binary callable ``f(a, b) -> array`` applied elementwise to whole arrays, once
    per operand of a variadic op.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeAlias

import ml_dtypes
import numpy as np

from hloscope.errors import InterpretError
from hloscope.ir.replica_groups import ProcessId

__all__ = [
    "Operands",
    "Groups",
    "Reducer",
    "KNOWN_REDUCTIONS",
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "collective_permute",
    "collective_broadcast",
    "replica_id",
    "partition_id",
    "stack",
    "unstack",
    "all_reduce_stacked",
    "all_gather_stacked",
    "reduce_scatter_stacked",
    "all_to_all_stacked",
    "collective_permute_stacked",
    "collective_broadcast_stacked",
    "replica_ids_stacked",
    "partition_ids_stacked",
]

Operands: TypeAlias = "np.ndarray | tuple[np.ndarray, ...]"
Groups: TypeAlias = "Sequence[Sequence[int]]"
KnownReduction = Literal["add", "max", "min", "multiply", "and", "or"]
Reducer: TypeAlias = "KnownReduction | Callable[[np.ndarray, np.ndarray], np.ndarray]"

KNOWN_REDUCTIONS: dict[str, Callable[..., np.ndarray]] = {
    "add": np.add,
    "multiply": np.multiply,
    # np.maximum/np.minimum propagate NaN, as XLA's max/min do.
    "max": np.maximum,
    "min": np.minimum,
    # bitwise on integers, logical on pred (bool & bool is bool).
    "and": np.bitwise_and,
    "or": np.bitwise_or,
}


# ---------------------------------------------------------------------------------------------
# Shared helpers


def _binary(reducer: Reducer) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    if callable(reducer):
        return reducer
    try:
        return KNOWN_REDUCTIONS[reducer]
    except KeyError:
        raise InterpretError(
            f"unknown reduction {reducer!r}; expected one of {sorted(KNOWN_REDUCTIONS)} or a "
            "binary callable"
        ) from None


# XLA:CPU's AllReducePromotion computes bf16 all-reduces and reduce-scatters in f32 and rounds
# once (the post text shows the reducer cloned as "..._promoted"); f16 and integers are not
# promoted. Reducers given as computations run in their own types.
_PROMOTED = {np.dtype(ml_dtypes.bfloat16): np.dtype(np.float32)}


def _fold(parts: Sequence[np.ndarray], op: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """Left fold in rank order, keeping the operand's dtype. See Note [Reduction order and precision]."""
    dtype = parts[0].dtype
    if isinstance(op, np.ufunc):  # a known reducer: accumulate in place, same rounding per step
        wide = _PROMOTED.get(dtype, dtype)
        acc = np.array(parts[0], dtype=wide, copy=True)
        for part in parts[1:]:
            op(acc, part, out=acc)
        return acc.astype(dtype, copy=False)
    acc = np.array(parts[0], dtype=dtype, copy=True)
    for part in parts[1:]:
        acc = np.asarray(op(acc, part)).astype(dtype, copy=False)
    return acc


def _as_tuple(value: Operands) -> tuple[np.ndarray, ...]:
    return value if isinstance(value, tuple) else (value,)


def _per_operand(xs: Sequence[Operands], fn: Callable[[list[np.ndarray], int], list[np.ndarray]]) -> list[Operands]:
    """Apply ``fn(per_device_arrays, operand_index)`` to each operand of a variadic op."""
    if not xs:
        return []
    is_tuple = isinstance(xs[0], tuple)
    arity = len(_as_tuple(xs[0]))
    for k, x in enumerate(xs):
        if isinstance(x, tuple) != is_tuple or len(_as_tuple(x)) != arity:
            raise InterpretError(f"device {k} holds {_describe(x)}, but device 0 holds {_describe(xs[0])}")
    columns = [fn([np.asarray(_as_tuple(x)[i]) for x in xs], i) for i in range(arity)]
    if is_tuple:
        return [tuple(col[k] for col in columns) for k in range(len(xs))]
    return list(columns[0])


def _describe(x: Operands) -> str:
    if isinstance(x, tuple):
        return "(" + ", ".join(_describe(e) for e in x) + ")"
    a = np.asarray(x)
    return f"{a.dtype}{list(a.shape)}"


def _check_cover(groups: Groups, num_devices: int, op: str) -> None:
    flat = [d for g in groups for d in g]
    if sorted(flat) != list(range(num_devices)):
        raise InterpretError(
            f"{op}: groups {[list(g) for g in groups]} must hold each of the {num_devices} devices "
            "exactly once"
        )


def _check_dim(op: str, dim: int, rank: int, what: str) -> int:
    if not 0 <= dim < rank:
        raise InterpretError(f"{op}: {what}={dim} is out of range for an operand of rank {rank}")
    return dim


def _check_split(op: str, shape: tuple[int, ...], dim: int, count: int) -> None:
    if shape[dim] % count:
        raise InterpretError(
            f"{op}: dimension {dim} of shape {list(shape)} has size {shape[dim]}, which does not "
            f"split into {count} equal parts"
        )


def _uniform_size(groups: Groups, op: str) -> int:
    sizes = {len(g) for g in groups}
    if len(sizes) != 1:
        raise InterpretError(f"{op}: groups {[list(g) for g in groups]} have different sizes {sorted(sizes)}")
    return sizes.pop()


# ---------------------------------------------------------------------------------------------
# Per-device forms


def all_reduce(xs: Sequence[Operands], groups: Groups, reducer: Reducer) -> list[Operands]:
    """Every device gets the reduction of its group's operands, folded in rank order.

    A tuple per device is a variadic all-reduce: each element is reduced independently.
    """
    _check_cover(groups, len(xs), "all-reduce")
    op = _binary(reducer)

    def one(arrays: list[np.ndarray], _: int) -> list[np.ndarray]:
        out: list[np.ndarray] = [arrays[0]] * len(arrays)
        for group in groups:
            reduced = _fold([arrays[d] for d in group], op)
            for d in group:
                out[d] = reduced.copy()
        return out

    return _per_operand(xs, one)


def all_gather(xs: Sequence[Operands], groups: Groups, dimension: int) -> list[Operands]:
    """Every device gets its group's operands concatenated along ``dimension`` in rank order."""
    _check_cover(groups, len(xs), "all-gather")

    def one(arrays: list[np.ndarray], _: int) -> list[np.ndarray]:
        _check_dim("all-gather", dimension, arrays[0].ndim, "dimensions")
        out: list[np.ndarray] = [arrays[0]] * len(arrays)
        for group in groups:
            gathered = np.concatenate([arrays[d] for d in group], axis=dimension)
            for d in group:
                out[d] = gathered.copy()
        return out

    return _per_operand(xs, one)


def reduce_scatter(xs: Sequence[Operands], groups: Groups, dimension: int, reducer: Reducer) -> list[Operands]:
    """All-reduce within each group, then the rank-``r`` device keeps part ``r`` of
    ``dimension`` split into ``len(group)`` equal parts."""
    _check_cover(groups, len(xs), "reduce-scatter")
    op = _binary(reducer)

    def one(arrays: list[np.ndarray], _: int) -> list[np.ndarray]:
        _check_dim("reduce-scatter", dimension, arrays[0].ndim, "dimensions")
        out: list[np.ndarray] = [arrays[0]] * len(arrays)
        for group in groups:
            _check_split("reduce-scatter", arrays[0].shape, dimension, len(group))
            parts = np.split(_fold([arrays[d] for d in group], op), len(group), axis=dimension)
            for rank, d in enumerate(group):
                out[d] = parts[rank].copy()
        return out

    return _per_operand(xs, one)


def all_to_all(
    xs: Sequence[Operands],
    groups: Groups,
    split_dimension: int | None = None,
    concat_dimension: int | None = None,
) -> list[Operands]:
    """Exchange blocks between the devices of each group.

    Array form (``split_dimension`` given): each device splits each operand into
    ``len(group)`` parts along ``split_dimension``; the rank-``r`` device receives part ``r``
    from every device and concatenates them in rank order along ``concat_dimension``
    (defaulting to ``split_dimension``, the only form HLO's ``dimensions={d}`` spells).

    Tuple form (``split_dimension`` is None): each device holds ``len(group)`` operands; the
    ``j``-th operand of the rank-``i`` device becomes the ``i``-th result of the rank-``j``
    device.
    """
    _check_cover(groups, len(xs), "all-to-all")
    if split_dimension is None:
        if concat_dimension is not None:
            raise InterpretError("all-to-all: concat_dimension needs a split_dimension")
        return _all_to_all_tuple(xs, groups)
    sd = split_dimension
    cd = sd if concat_dimension is None else concat_dimension

    def one(arrays: list[np.ndarray], _: int) -> list[np.ndarray]:
        _check_dim("all-to-all", sd, arrays[0].ndim, "split_dimension")
        _check_dim("all-to-all", cd, arrays[0].ndim, "concat_dimension")
        out: list[np.ndarray] = [arrays[0]] * len(arrays)
        for group in groups:
            _check_split("all-to-all", arrays[0].shape, sd, len(group))
            parts = [np.split(arrays[d], len(group), axis=sd) for d in group]
            for rank, d in enumerate(group):
                out[d] = np.concatenate([p[rank] for p in parts], axis=cd)
        return out

    return _per_operand(xs, one)


def _all_to_all_tuple(xs: Sequence[Operands], groups: Groups) -> list[Operands]:
    out: list[Operands] = list(xs)
    for group in groups:
        for d in group:
            if not isinstance(xs[d], tuple) or len(xs[d]) != len(group):
                raise InterpretError(
                    f"all-to-all without dimensions needs one operand per group member: device {d} "
                    f"holds {_describe(xs[d])} in a group of {len(group)}"
                )
        for j, dj in enumerate(group):
            out[dj] = tuple(np.array(_as_tuple(xs[di])[j], copy=True) for di in group)
    return out


def collective_permute(xs: Sequence[Operands], pairs: Sequence[tuple[int, int]]) -> list[Operands]:
    """Device ``target`` gets device ``source``'s operand for each (source, target) device pair;
    devices that receive nothing get zeros of their operand's shape and type."""
    _check_pairs(pairs, len(xs))

    def one(arrays: list[np.ndarray], _: int) -> list[np.ndarray]:
        out = [np.zeros_like(a) for a in arrays]
        for source, target in pairs:
            out[target] = arrays[source].copy()
        return out

    return _per_operand(xs, one)


def _check_pairs(pairs: Sequence[tuple[int, int]], num_devices: int) -> None:
    targets = [t for _, t in pairs]
    if len(set(targets)) != len(targets):
        raise InterpretError(f"collective-permute: a device receives twice in pairs {list(pairs)}")
    for s, t in pairs:
        if not (0 <= s < num_devices and 0 <= t < num_devices):
            raise InterpretError(f"collective-permute: pair ({s}, {t}) is outside devices [0, {num_devices})")


def collective_broadcast(xs: Sequence[Operands], groups: Groups) -> list[Operands]:
    """Every device of a group gets the operand of the group's first device; devices in no
    group get zeros."""

    def one(arrays: list[np.ndarray], _: int) -> list[np.ndarray]:
        out = [np.zeros_like(a) for a in arrays]
        for group in groups:
            for d in group:
                out[d] = arrays[group[0]].copy()
        return out

    return _per_operand(xs, one)


def replica_id(process: ProcessId) -> np.ndarray:
    """The value of ``replica-id()`` on ``process``: a ``u32[]``."""
    return np.asarray(process.replica, dtype=np.uint32)


def partition_id(process: ProcessId) -> np.ndarray:
    """The value of ``partition-id()`` on ``process``: a ``u32[]``."""
    return np.asarray(process.partition, dtype=np.uint32)


# ---------------------------------------------------------------------------------------------
# Stacked (lockstep) forms: x[k] is device k's operand.


def stack(per_device: Sequence[np.ndarray]) -> np.ndarray:
    """Per-device arrays (all of one shape and type) as one array with a leading device axis."""
    return np.stack([np.asarray(a) for a in per_device])


def unstack(x: np.ndarray) -> list[np.ndarray]:
    """The inverse of ``stack``: one array per device (views into ``x``)."""
    return list(x)


def _variadic(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Let a stacked collective take a tuple of stacked operands (a variadic op), each handled
    independently; the ``*_stacked`` docstrings speak of one array."""

    def wrapper(x: np.ndarray | tuple[np.ndarray, ...], *args: Any, **kwargs: Any) -> np.ndarray:
        if isinstance(x, tuple):
            return tuple(fn(e, *args, **kwargs) for e in x)  # type: ignore[return-value]  # typed as the array form
        return fn(x, *args, **kwargs)

    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return wrapper


def _index_buckets(groups: Groups) -> list[np.ndarray]:
    """Groups as ``(num_groups, group_size)`` index arrays, one per distinct group size."""
    by_size: dict[int, list[Sequence[int]]] = {}
    for g in groups:
        by_size.setdefault(len(g), []).append(g)
    return [np.asarray(gs, dtype=np.intp).reshape(len(gs), size) for size, gs in by_size.items()]


def _index(groups: Groups, op: str) -> np.ndarray:
    _uniform_size(groups, op)
    return _index_buckets(groups)[0]


def _is_broadcast(x: np.ndarray) -> bool:
    """A stacked operand every device shares: a broadcast view, device stride 0."""
    return x.ndim > 0 and x.shape[0] > 1 and x.strides[0] == 0


def _fold_axis1(y: np.ndarray, op: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """``_fold`` over axis 1 of ``y[group, rank, ...]``, vectorized over groups."""
    if isinstance(op, np.ufunc) and y.dtype in _PROMOTED:
        return _fold_axis1(y.astype(_PROMOTED[y.dtype]), op).astype(y.dtype)
    acc = np.array(y[:, 0], copy=True)
    for r in range(1, y.shape[1]):
        acc = np.asarray(op(acc, y[:, r])).astype(y.dtype, copy=False)
    return acc


@_variadic
def all_reduce_stacked(x: np.ndarray, groups: Groups, reducer: Reducer) -> np.ndarray:
    """``all_reduce`` on a stacked operand; groups may differ in size."""
    _check_cover(groups, x.shape[0], "all-reduce")
    op = _binary(reducer)
    # Every device ends up with the same value when one group holds them all, or when every
    # device holds the same operand and the groups are of one size: reduce once and return a
    # broadcast view (lockstep's mark of a uniform value, Note [Lockstep]), so what follows
    # is computed once for every device rather than once per device.
    if len(groups) == 1 or _is_broadcast(x) and len({len(g) for g in groups}) == 1:
        # Folded straight from the devices' rows (x[group] would first copy all of them).
        rows = [x[0]] * len(groups[0]) if _is_broadcast(x) else [x[d] for d in groups[0]]
        return np.broadcast_to(_fold(rows, op), x.shape)
    out = np.empty_like(x)
    for index in _index_buckets(groups):
        reduced = _fold_axis1(x[index], op)  # [group, ...]
        out[index] = reduced[:, None]
    return out


@_variadic
def all_gather_stacked(x: np.ndarray, groups: Groups, dimension: int) -> np.ndarray:
    """``all_gather`` on a stacked operand ``x[device, ...]``."""
    _check_cover(groups, x.shape[0], "all-gather")
    _check_dim("all-gather", dimension, x.ndim - 1, "dimensions")
    index = _index(groups, "all-gather")
    num_groups, size = index.shape
    y = np.moveaxis(x[index], 1, 1 + dimension)  # [group, ..., rank, d, ...]
    shape = list(x.shape[1:])
    shape[dimension] *= size
    gathered = y.reshape(num_groups, *shape)
    if num_groups == 1:  # every device gathers the same: a uniform value (see all_reduce_stacked)
        return np.broadcast_to(gathered[0], (x.shape[0], *shape))
    out = np.empty((x.shape[0], *shape), dtype=x.dtype)
    out[index] = gathered[:, None]
    return out


@_variadic
def reduce_scatter_stacked(x: np.ndarray, groups: Groups, dimension: int, reducer: Reducer) -> np.ndarray:
    """``reduce_scatter`` on a stacked operand ``x[device, ...]``."""
    _check_cover(groups, x.shape[0], "reduce-scatter")
    _check_dim("reduce-scatter", dimension, x.ndim - 1, "dimensions")
    index = _index(groups, "reduce-scatter")
    num_groups, size = index.shape
    _check_split("reduce-scatter", x.shape[1:], dimension, size)
    reduced = _fold_axis1(x[index], _binary(reducer))  # [group, ...]
    shape = list(reduced.shape)
    shape[1 + dimension : 2 + dimension] = [size, shape[1 + dimension] // size]
    parts = np.moveaxis(reduced.reshape(shape), 1 + dimension, 1)  # [group, rank, ...]
    out_shape = list(x.shape)
    out_shape[1 + dimension] //= size
    out = np.empty(out_shape, dtype=x.dtype)
    out[index] = parts
    return out


def all_to_all_stacked(
    x: np.ndarray | tuple[np.ndarray, ...],
    groups: Groups,
    split_dimension: int | None = None,
    concat_dimension: int | None = None,
) -> np.ndarray | tuple[np.ndarray, ...]:
    """``all_to_all`` on stacked operands: one array (array form) or a tuple of
    ``len(group)`` arrays (tuple form, ``split_dimension=None``)."""
    if split_dimension is None:
        if not isinstance(x, tuple):
            raise InterpretError("all-to-all without dimensions takes a tuple of operands")
        return _all_to_all_tuple_stacked(x, groups)
    if isinstance(x, tuple):
        return tuple(_all_to_all_array_stacked(e, groups, split_dimension, concat_dimension) for e in x)
    return _all_to_all_array_stacked(x, groups, split_dimension, concat_dimension)


def _all_to_all_array_stacked(x: np.ndarray, groups: Groups, sd: int, concat_dimension: int | None) -> np.ndarray:
    _check_cover(groups, x.shape[0], "all-to-all")
    cd = sd if concat_dimension is None else concat_dimension
    _check_dim("all-to-all", sd, x.ndim - 1, "split_dimension")
    _check_dim("all-to-all", cd, x.ndim - 1, "concat_dimension")
    index = _index(groups, "all-to-all")
    num_groups, size = index.shape
    _check_split("all-to-all", x.shape[1:], sd, size)
    y = x[index]  # [group, sender, ...]
    shape = list(y.shape)
    shape[2 + sd : 3 + sd] = [size, shape[2 + sd] // size]
    y = y.reshape(shape)  # [group, sender, ..., receiver, chunk, ...]
    y = np.moveaxis(y, 2 + sd, 1)  # [group, receiver, sender, ..., chunk, ...]
    # Concatenate the senders' blocks along concat_dimension: put the sender axis just before
    # that dimension and merge the two.
    y = np.moveaxis(y, 2, 2 + cd)  # [group, receiver, ..., sender, d_cd, ...]
    block = list(x.shape[1:])
    block[sd] //= size
    block[cd] *= size
    y = y.reshape(num_groups, size, *block)
    out = np.empty((x.shape[0], *block), dtype=x.dtype)
    out[index] = y
    return out


def _all_to_all_tuple_stacked(xs: tuple[np.ndarray, ...], groups: Groups) -> tuple[np.ndarray, ...]:
    _check_cover(groups, xs[0].shape[0], "all-to-all")
    index = _index(groups, "all-to-all")
    size = index.shape[1]
    if len(xs) != size:
        raise InterpretError(
            f"all-to-all without dimensions needs one operand per group member: {len(xs)} operands, "
            f"groups of {size}"
        )
    outs = tuple(np.empty_like(xs[0]) for _ in xs)
    for i in range(size):  # result i on the rank-j device is operand j of the rank-i device
        for j in range(size):
            outs[i][index[:, j]] = xs[j][index[:, i]]
    return outs


@_variadic
def collective_permute_stacked(x: np.ndarray, pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """``collective_permute`` on a stacked operand ``x[device, ...]``."""
    _check_pairs(pairs, x.shape[0])
    out = np.zeros_like(x)
    if pairs:
        sources, targets = (np.asarray(side, dtype=np.intp) for side in zip(*pairs, strict=True))
        out[targets] = x[sources]
    return out


@_variadic
def collective_broadcast_stacked(x: np.ndarray, groups: Groups) -> np.ndarray:
    """``collective_broadcast`` on a stacked operand ``x[device, ...]``."""
    if len(groups) == 1 and len(groups[0]) == x.shape[0]:  # a uniform value (see all_reduce_stacked)
        return np.broadcast_to(x[groups[0][0]], x.shape)
    out = np.zeros_like(x)
    for index in _index_buckets(groups):
        out[index] = x[index[:, 0]][:, None]
    return out


def replica_ids_stacked(num_replicas: int, num_partitions: int) -> np.ndarray:
    """``replica-id()`` on every device: ``u32[num_devices]``."""
    return np.repeat(np.arange(num_replicas, dtype=np.uint32), num_partitions)


def partition_ids_stacked(num_replicas: int, num_partitions: int) -> np.ndarray:
    """``partition-id()`` on every device: ``u32[num_devices]``."""
    return np.tile(np.arange(num_partitions, dtype=np.uint32), num_replicas)
