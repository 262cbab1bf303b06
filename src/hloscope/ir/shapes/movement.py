"""Shape rules of ops that move data: transpose, slices, concatenate, pad, tuples, gather and
scatter, and the partial checks of reshape, broadcast and iota (their results are declared).
"""
from __future__ import annotations

from hloscope.ir.dtypes import PRIMITIVE_TYPES
from hloscope.ir.instruction import Instruction
from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import ArrayShape, Shape, TupleShape
from hloscope.ir.shapes.rules import (
    ShapeInferenceError,
    array_shape,
    attribute,
    declared_array,
    dims_in_range,
    operand_shape,
    operand_shapes,
    shape_check,
    shape_rule,
    shape_text,
    tuple_or_single,
)

__all__: list[str] = []


@shape_rule(Opcode.TRANSPOSE)
def _transpose(inst: Instruction) -> Shape:
    """Result dimension i is operand dimension ``dimensions[i]``."""
    s = operand_shape(inst, 0)
    perm = attribute(inst, "dimensions")
    if sorted(perm) != list(range(s.rank)):
        raise ShapeInferenceError(f"transpose dimensions {list(perm)} are not a permutation of rank {s.rank}")
    dyn = tuple(s.dynamic[p] for p in perm) if s.dynamic else ()
    return array_shape(s.element_type, (s.dimensions[p] for p in perm), dyn)


@shape_rule(Opcode.SLICE)
def _slice(inst: Instruction) -> Shape:
    """ceil((limit - start) / stride) per dimension."""
    s = operand_shape(inst, 0)
    ranges = attribute(inst, "slice")
    if len(ranges) != s.rank:
        raise ShapeInferenceError(f"slice has {len(ranges)} ranges for rank-{s.rank} operand {shape_text(s)}")
    dims = []
    for d, (r, n) in enumerate(zip(ranges, s.dimensions, strict=True)):
        if not (0 <= r.start <= r.limit <= n) or r.stride <= 0:
            raise ShapeInferenceError(f"slice range {r} of dimension {d} is invalid for size {n}")
        dims.append(-(-(r.limit - r.start) // r.stride))
    return array_shape(s.element_type, dims)


def _check_start_indices(inst: Instruction, first: int, rank: int) -> None:
    idx = inst.operands[first:]
    if len(idx) == 1 and isinstance(idx[0].shape, ArrayShape) and idx[0].shape.rank == 1:
        return  # the old form: one vector of start indices
    if len(idx) != rank:
        raise ShapeInferenceError(f"{inst.opcode.text} needs {rank} start indices, got {len(idx)}")
    for k, i in enumerate(idx):
        sh = i.shape
        if not isinstance(sh, ArrayShape) or sh.rank or not PRIMITIVE_TYPES[sh.element_type].is_integer:
            raise ShapeInferenceError(
                f"start index operand {first + k} of {inst.opcode.text} must be an integer scalar, "
                f"got {shape_text(sh)}")
    types = {i.shape.element_type for i in idx if isinstance(i.shape, ArrayShape)}
    if len(types) > 1:  # XLA's ShapeInference: every start index of one type
        raise ShapeInferenceError(
            f"start indices of {inst.opcode.text} must share one element type, got {', '.join(sorted(types))}")


@shape_rule(Opcode.DYNAMIC_SLICE)
def _dynamic_slice(inst: Instruction) -> Shape:
    """``dynamic_slice_sizes`` of operand 0's element type; sizes must fit the operand."""
    s = operand_shape(inst, 0)
    sizes = tuple(attribute(inst, "dynamic_slice_sizes"))
    _check_start_indices(inst, 1, s.rank)
    if len(sizes) != s.rank or any(not 0 <= z <= n for z, n in zip(sizes, s.dimensions, strict=True)):
        raise ShapeInferenceError(f"dynamic_slice_sizes {list(sizes)} do not fit {shape_text(s)}")
    return array_shape(s.element_type, sizes)


@shape_rule(Opcode.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(inst: Instruction) -> Shape:
    """Operand 0's shape; the update has its rank, type and no larger sizes. Operand 0 may be
    a buffer, updated in place (Note [Buffer shapes] in shapes/rules.py)."""
    s, u = operand_shape(inst, 0, buffer_ok=True), operand_shape(inst, 1)
    _check_start_indices(inst, 2, s.rank)
    if u.rank != s.rank or u.element_type != s.element_type or any(
            a > b for a, b in zip(u.dimensions, s.dimensions, strict=True)):
        raise ShapeInferenceError(f"update {shape_text(u)} does not fit in operand {shape_text(s)}")
    return s


@shape_rule(Opcode.CONCATENATE)
def _concatenate(inst: Instruction) -> Shape:
    """Sizes along ``dimensions[0]`` add up; all other dimensions equal."""
    shapes = operand_shapes(inst)
    if not shapes:
        raise ShapeInferenceError("concatenate needs at least one operand")
    (d,) = attribute(inst, "dimensions")
    first = shapes[0]
    dims_in_range((d,), first.rank, "concatenate dimension")
    total = 0
    for i, s in enumerate(shapes):
        if (s.rank != first.rank or s.element_type != first.element_type
                or s.dimensions[:d] + s.dimensions[d + 1:] != first.dimensions[:d] + first.dimensions[d + 1:]):
            raise ShapeInferenceError(
                f"operand {i} {shape_text(s)} of concatenate does not match operand 0 "
                f"{shape_text(first)} outside dimension {d}")
        total += s.dimensions[d]
    dims = list(first.dimensions)
    dims[d] = total
    return array_shape(first.element_type, dims)


@shape_rule(Opcode.PAD)
def _pad(inst: Instruction) -> Shape:
    """low + high + size + (size - 1) * interior per dimension (low/high may be negative)."""
    s, v = operand_shape(inst, 0), operand_shape(inst, 1)
    if v.rank or v.element_type != s.element_type:
        raise ShapeInferenceError(f"pad value must be {s.element_type}[], got {shape_text(v)}")
    cfg = attribute(inst, "padding").dimensions
    if len(cfg) != s.rank:
        raise ShapeInferenceError(f"padding has {len(cfg)} dimensions for rank-{s.rank} operand")
    dims = []
    for d, ((lo, hi, it), n) in enumerate(zip(cfg, s.dimensions, strict=True)):
        out = lo + hi + n + max(n - 1, 0) * it
        if it < 0 or out < 0:
            raise ShapeInferenceError(f"padding {lo}_{hi}_{it} of dimension {d} gives size {out}")
        dims.append(out)
    return array_shape(s.element_type, dims)


@shape_rule(Opcode.GET_TUPLE_ELEMENT)
def _get_tuple_element(inst: Instruction) -> Shape:
    """Element ``index`` of the tuple operand."""
    s = inst.operands[0].shape
    index = attribute(inst, "index")
    if not isinstance(s, TupleShape):
        raise ShapeInferenceError(f"get-tuple-element needs a tuple operand, got {shape_text(s)}")
    if not 0 <= index < len(s.elements):
        raise ShapeInferenceError(
            f"tuple index {index} is out of range for {shape_text(s)} with {len(s.elements)} elements")
    return s.elements[index]


@shape_rule(Opcode.TUPLE)
def _tuple(inst: Instruction) -> Shape:
    """The tuple of the operands' shapes."""
    return TupleShape(tuple(o.shape for o in inst.operands))



@shape_rule(Opcode.SET_DIMENSION_SIZE)
def _set_dimension_size(inst: Instruction) -> Shape:
    """Operand 0 with dimension ``dimensions[0]`` marked dynamic."""
    s = operand_shape(inst, 0)
    (d,) = attribute(inst, "dimensions")
    dims_in_range((d,), s.rank, "set-dimension-size dimension")
    dyn = list(s.dynamic or (False,) * s.rank)
    dyn[d] = True
    return array_shape(s.element_type, s.dimensions, dyn)



@shape_check(Opcode.RESHAPE)
def _check_reshape(inst: Instruction) -> None:
    s, out = operand_shape(inst, 0), declared_array(inst)
    if out.element_type != s.element_type:
        raise ShapeInferenceError(f"reshape changes the element type from {s.element_type} to {out.element_type}")
    if not (s.dynamic or out.dynamic) and s.element_count != out.element_count:
        raise ShapeInferenceError(
            f"reshape from {shape_text(s)} ({s.element_count} elements) to {shape_text(out)} "
            f"({out.element_count} elements) changes the element count")


@shape_check(Opcode.DYNAMIC_RESHAPE)
def _check_dynamic_reshape(inst: Instruction) -> None:
    s, out = operand_shape(inst, 0), declared_array(inst)
    if out.element_type != s.element_type:
        raise ShapeInferenceError(f"dynamic-reshape changes the element type from {s.element_type} to {out.element_type}")


@shape_check(Opcode.BROADCAST)
def _check_broadcast(inst: Instruction) -> None:
    s, out = operand_shape(inst, 0), declared_array(inst)
    dims = attribute(inst, "dimensions", ())
    if out.element_type != s.element_type:
        raise ShapeInferenceError(f"broadcast changes the element type from {s.element_type} to {out.element_type}")
    if len(dims) != s.rank:
        raise ShapeInferenceError(f"broadcast dimensions {list(dims)} do not map the {s.rank} operand dimensions")
    dims_in_range(tuple(dims), out.rank, "broadcast dimension")
    for i, d in enumerate(dims):
        if s.dimensions[i] != out.dimensions[d] and s.dimensions[i] != 1:
            raise ShapeInferenceError(
                f"operand dimension {i} (size {s.dimensions[i]}) maps to result dimension {d} "
                f"of size {out.dimensions[d]}")


@shape_check(Opcode.IOTA)
def _check_iota(inst: Instruction) -> None:
    out = declared_array(inst)
    dims_in_range((attribute(inst, "iota_dimension"),), out.rank, "iota_dimension")



def _ascending(dims: tuple[int, ...], what: str) -> None:
    if list(dims) != sorted(set(dims)):
        raise ShapeInferenceError(f"{what} {list(dims)} must be ascending without repeats")


def _unique_in(dims: tuple[int, ...], rank: int, what: str) -> None:
    for d in dims:
        if not 0 <= d < rank:
            raise ShapeInferenceError(f"{what} {list(dims)}: {d} is out of range for rank {rank}")
    if len(set(dims)) != len(dims):
        raise ShapeInferenceError(f"{what} {list(dims)} has repeated dimensions")


def _expanded_indices(inst: Instruction, idx: ArrayShape) -> tuple[list[int], int]:
    """The indices' dimensions with the implicit trailing index vector (size 1) made explicit,
    and ``index_vector_dim`` (XLA's expanded start-indices shape)."""
    if not PRIMITIVE_TYPES[idx.element_type].is_integer:
        raise ShapeInferenceError(f"{inst.opcode.text} indices must be integers, got {shape_text(idx)}")
    ivd = attribute(inst, "index_vector_dim", idx.rank)
    if not 0 <= ivd <= idx.rank:
        raise ShapeInferenceError(f"index_vector_dim={ivd} must be in [0, {idx.rank}] for {shape_text(idx)}")
    dims = list(idx.dimensions)
    if ivd == idx.rank:
        dims.append(1)
    return dims, ivd


def _check_index_map(dims: list[int], ivd: int, index_map: tuple[int, ...], operand_rank: int,
                     batching: tuple[int, ...], index_batching: tuple[int, ...], names: tuple[str, ...]) -> None:
    """The checks gather and scatter share: the index map against the index vector and the
    operand, and the batching dimensions (XLA's Validate{Gather,Scatter}DimensionNumbers)."""
    map_name, batching_name, index_batching_name = names
    if len(index_map) != dims[ivd]:
        raise ShapeInferenceError(
            f"{map_name} has {len(index_map)} elements but dimension index_vector_dim={ivd} "
            f"of the indices has size {dims[ivd]}")
    _unique_in(index_map, operand_rank, map_name)
    if len(batching) != len(index_batching):
        raise ShapeInferenceError(f"{batching_name} {list(batching)} and {index_batching_name} "
                                  f"{list(index_batching)} must have the same length")
    _unique_in(batching, operand_rank, batching_name)
    _ascending(batching, batching_name)
    _unique_in(index_batching, len(dims), index_batching_name)


@shape_rule(Opcode.GATHER)
def _gather(inst: Instruction) -> Shape:
    """Index batch dimensions interleaved with the slice's offset dimensions (``offset_dims``),
    after XLA's InferGatherShape checks of the dimension numbers."""
    s, idx = operand_shape(inst, 0), operand_shape(inst, 1)
    dims, ivd = _expanded_indices(inst, idx)
    sizes = tuple(attribute(inst, "slice_sizes"))
    offset_dims = tuple(attribute(inst, "offset_dims", ()))
    collapsed = tuple(attribute(inst, "collapsed_slice_dims", ()))
    batching = tuple(attribute(inst, "operand_batching_dims", ()))
    rank = len(offset_dims) + len(dims) - 1
    _ascending(offset_dims, "offset_dims")
    _unique_in(offset_dims, rank, "offset_dims")
    _check_index_map(dims, ivd, tuple(attribute(inst, "start_index_map", ())), s.rank, batching,
                     tuple(attribute(inst, "start_indices_batching_dims", ())),
                     ("start_index_map", "operand_batching_dims", "start_indices_batching_dims"))
    _unique_in(collapsed, s.rank, "collapsed_slice_dims")
    _ascending(collapsed, "collapsed_slice_dims")
    if len(sizes) != s.rank:
        raise ShapeInferenceError(f"slice_sizes {list(sizes)} must have one size per dimension of {shape_text(s)}")
    if len(sizes) != len(offset_dims) + len(collapsed) + len(batching):
        raise ShapeInferenceError(
            f"every operand dimension must be an offset, collapsed or batching dimension: "
            f"{len(sizes)} dimensions, offset_dims {list(offset_dims)}, collapsed_slice_dims "
            f"{list(collapsed)}, operand_batching_dims {list(batching)}")
    for d, (z, n) in enumerate(zip(sizes, s.dimensions, strict=True)):
        if not 0 <= z <= n:
            raise ShapeInferenceError(f"slice size {z} of dimension {d} does not fit {shape_text(s)}")
    for d in collapsed + batching:
        if sizes[d] > 1:
            raise ShapeInferenceError(f"collapsed or batching dimension {d} must have slice size 0 or 1, got {sizes[d]}")
    dropped = set(collapsed) | set(batching)
    offsets = iter(sizes[d] for d in range(s.rank) if d not in dropped)
    batch = iter(n for d, n in enumerate(dims) if d != ivd)
    offset_set = set(offset_dims)
    return array_shape(s.element_type, [next(offsets) if d in offset_set else next(batch) for d in range(rank)])


@shape_rule(Opcode.SCATTER)
def _scatter(inst: Instruction) -> Shape:
    """The operands' shapes (a tuple when variadic), after XLA's InferScatterShape checks:
    updates have the window dimensions (no larger than the operand's) and the indices' batch
    dimensions."""
    shapes = operand_shapes(inst)
    n = (len(shapes) - 1) // 2
    if len(shapes) % 2 == 0 or not n:
        raise ShapeInferenceError(f"scatter needs N operands, indices and N updates, got {len(shapes)} operands")
    dims, ivd = _expanded_indices(inst, shapes[n])
    window = tuple(attribute(inst, "update_window_dims", ()))
    inserted = tuple(attribute(inst, "inserted_window_dims", ()))
    batching = tuple(attribute(inst, "input_batching_dims", ()))
    for i, (s, u) in enumerate(zip(shapes[:n], shapes[n + 1:], strict=True)):
        expected_rank = len(dims) - 1 + len(window)
        if u.rank != expected_rank:
            raise ShapeInferenceError(
                f"update {i} {shape_text(u)} must have rank {expected_rank} "
                f"({len(window)} window + {expected_rank - len(window)} scatter dimensions)")
        _ascending(window, "update_window_dims")
        _unique_in(window, u.rank, "update_window_dims")
        _ascending(inserted, "inserted_window_dims")
        _unique_in(inserted, s.rank, "inserted_window_dims")
        if len(window) + len(inserted) + len(batching) != s.rank:
            raise ShapeInferenceError(
                f"update_window_dims {list(window)}, inserted_window_dims {list(inserted)} and "
                f"input_batching_dims {list(batching)} must cover the {s.rank} operand dimensions")
        _check_index_map(dims, ivd, tuple(attribute(inst, "scatter_dims_to_operand_dims", ())), s.rank,
                         batching, tuple(attribute(inst, "scatter_indices_batching_dims", ())),
                         ("scatter_dims_to_operand_dims", "input_batching_dims",
                          "scatter_indices_batching_dims"))
        bounds = [m for d, m in enumerate(s.dimensions) if d not in inserted and d not in batching]
        for k, d in enumerate(window):
            if u.dimensions[d] > bounds[k]:
                raise ShapeInferenceError(
                    f"update {i} window dimension {d} has size {u.dimensions[d]}, more than the "
                    f"operand's {bounds[k]}")
        scatter_dims = iter(m for d, m in enumerate(dims) if d != ivd)
        for d in range(u.rank):
            if d not in window and u.dimensions[d] != (m := next(scatter_dims)):
                raise ShapeInferenceError(
                    f"update {i} scatter dimension {d} has size {u.dimensions[d]}, the indices' "
                    f"batch dimension has {m}")
        if u.element_type != s.element_type:
            raise ShapeInferenceError(f"update {i} {shape_text(u)} must have the element type of {shape_text(s)}")
    return tuple_or_single(list(shapes[:n]))


