"""Shape rules of collectives: all-reduce, all-gather, reduce-scatter, all-to-all,
collective-permute and their ``-start`` forms.

The group size comes from ``replica_groups``; when the groups are implicit (``{}``), it comes
from the declared result (Note [Declared parts] in ``shapes/rules.py``).
"""
from __future__ import annotations

from hloscope.ir.instruction import Instruction
from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import ArrayShape, Shape, TupleShape
from hloscope.ir.shapes.rules import (
    ShapeInferenceError,
    array_shape,
    attribute,
    compatible,
    dims_in_range,
    operand_shape,
    operand_shapes,
    shape_rule,
    shape_text,
    tuple_element,
    tuple_or_single,
    with_context,
)

__all__ = ["holds_result_only", "done_passes_operand"]

# Note [Async collectives holding their result only]
#     XLA's all-gather-start declares (operands, results) and collective-permute-start
#     (operand, result[, contexts]); their -done reads element 1. XLA's MLIR export writes them
#     with the result's shape alone (all-gather-start f32[128,128], its -done f32[128,128] of
#     it), as all-reduce-start always is (hlo_to_mhlo/tests/import_async.hlo), and XLA:CPU runs
#     that form (jax's importer makes one async op of the pair). Both forms are accepted: a
#     start whose declared shape is its result holds the result only, and its -done passes it on.


def holds_result_only(start: Instruction) -> bool:
    """Whether an all-gather-start or collective-permute-start declares its result's shape
    alone instead of the (operands, results, ...) tuple (Note [Async collectives holding
    their result only])."""
    declared = start.shape
    if start.opcode is Opcode.ALL_GATHER_START:
        try:
            result = tuple_or_single(list(_all_gather_result(start, 1)))
        except ShapeInferenceError:
            return False
        ins = tuple_or_single([o.shape for o in start.operands])
        return compatible(declared, result) and not compatible(declared, TupleShape((ins, result)))
    if start.opcode is Opcode.COLLECTIVE_PERMUTE_START:
        return not isinstance(declared, TupleShape) or compatible(declared, tuple_or_single([o.shape for o in start.operands]))
    return False


def done_passes_operand(done: Instruction) -> bool:
    """Whether an all-gather-done or collective-permute-done returns its operand whole (a start
    holding its result only) rather than element 1 of it."""
    start = done.operands[0]
    if start.opcode in (Opcode.ALL_GATHER_START, Opcode.COLLECTIVE_PERMUTE_START):
        return holds_result_only(start)
    operand = start.shape  # a start passed through a parameter or tuple: judge by the shapes
    return not (isinstance(operand, TupleShape) and len(operand.elements) > 1
                and compatible(operand.elements[1], done.shape))


def _group_size(inst: Instruction) -> int | None:
    groups = inst.attrs.get("replica_groups")
    if groups is None:
        return None
    if groups.iota_shape is not None:
        return groups.iota_shape[1]
    if groups.groups:
        return len(groups.groups[0])
    return None  # {} or an unexpanded form: every participant, count not in the instruction


def _subgroup_size(inst: Instruction) -> int:
    """How many devices one group of an all-gather or reduce-scatter spans (XLA's
    GetSubgroupSize): the group size, or every replica when the groups are implicit, times
    the partitions when a channel_id without use_global_device_ids crosses replicas and
    partitions."""
    size = _group_size(inst)
    module = inst.computation.module if inst.computation is not None else None
    replicas = (module.replica_count if module is not None else None) or 1
    partitions = (module.num_partitions if module is not None else None) or 1
    if "channel_id" not in inst.attrs:
        return size if size is not None else replicas
    if inst.attrs.get("use_global_device_ids"):
        return size if size is not None else 1  # flattened ids: groups are explicit
    return (size if size is not None else replicas) * partitions


def _shard_count(inst: Instruction, dim: int, operand0: ArrayShape, result_index: int, gather: bool) -> int:
    """The shard count of an all-gather (``gather``) or reduce-scatter, as XLA's verifier
    takes it: from the declared result's size along ``dim`` against operand 0's (Note [Declared
    parts]), which must equal the group's size unless a group is one device."""
    declared = inst.shape
    if isinstance(declared, TupleShape):
        declared = declared.elements[result_index] if result_index < len(declared.elements) else declared
        if isinstance(declared, TupleShape) and declared.elements:  # several operands: result 0
            declared = declared.elements[0]
    group = _subgroup_size(inst)
    if not (isinstance(declared, ArrayShape) and dim < declared.rank):
        return group
    big, small = (declared.dimensions[dim], operand0.dimensions[dim]) if gather else (
        operand0.dimensions[dim], declared.dimensions[dim])
    shards = -(-big // small) if small else group
    if group != 1 and shards != group:
        raise ShapeInferenceError(
            f"{inst.opcode.text} over groups of {group} devices has {group} shards, but the declared "
            f"{shape_text(inst.shape)} has {shards} along dimension {dim}")
    return shards


@shape_rule(Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START, Opcode.ALL_TO_ALL, Opcode.COLLECTIVE_BROADCAST)
def _same_as_operands(inst: Instruction) -> Shape:
    """The operands' shapes (a tuple when several); an all-to-all without split_dimension (the
    tuple form) gives a tuple even of one operand (XLA's InferAllToAllTupleShape)."""
    shapes = operand_shapes(inst)
    if inst.opcode is Opcode.ALL_TO_ALL:
        split = inst.attrs.get("dimensions")  # the array form's split dimension, {d}
        if not split:
            return TupleShape(tuple(shapes))
        d, n = split[0], _group_size(inst)
        dims_in_range((d,), shapes[0].rank, "split_dimension")
        if n and shapes[0].dimensions[d] % n:
            raise ShapeInferenceError(f"split dimension {d} of {shape_text(shapes[0])} does not divide into {n}")
    return tuple_or_single(list(shapes))


def _all_gather_result(inst: Instruction, result_index: int) -> list[ArrayShape]:
    (d,) = attribute(inst, "dimensions")
    shapes = operand_shapes(inst)
    out = []
    for s in shapes:
        dims_in_range((d,), s.rank, "all-gather dimension")
    n = _shard_count(inst, d, shapes[0], result_index, gather=True) if shapes else 1
    for s in shapes:
        dims = list(s.dimensions)
        dims[d] *= n
        out.append(array_shape(s.element_type, dims))
    return out


@shape_rule(Opcode.ALL_GATHER)
def _all_gather(inst: Instruction) -> Shape:
    """Operand dimension ``dimensions[0]`` times the shard count (``_shard_count``)."""
    return tuple_or_single(list(_all_gather_result(inst, 0)))


@shape_rule(Opcode.ALL_GATHER_START)
def _all_gather_start(inst: Instruction) -> Shape:
    """(operands, gathered results), or the results alone (Note [Async collectives holding
    their result only])."""
    ins = tuple_or_single([o.shape for o in inst.operands])
    res = tuple_or_single(list(_all_gather_result(inst, 1)))
    return res if holds_result_only(inst) else TupleShape((ins, res))


@shape_rule(Opcode.REDUCE_SCATTER)
def _reduce_scatter(inst: Instruction) -> Shape:
    """Operand dimension ``dimensions[0]`` divided by the shard count (``_shard_count``)."""
    (d,) = attribute(inst, "dimensions")
    shapes = operand_shapes(inst)
    for s in shapes:
        dims_in_range((d,), s.rank, "scatter dimension")
    n = _shard_count(inst, d, shapes[0], 0, gather=False) if shapes else 1
    out = []
    for s in shapes:
        if s.dimensions[d] % n:
            raise ShapeInferenceError(f"dimension {d} of {shape_text(s)} does not divide into {n} shards")
        dims = list(s.dimensions)
        dims[d] //= n
        out.append(array_shape(s.element_type, dims))
    return tuple_or_single(list(out))


@shape_rule(Opcode.COLLECTIVE_PERMUTE, Opcode.COLLECTIVE_PERMUTE_START)
def _collective_permute(inst: Instruction) -> Shape:
    """The operand's shape (the output buffer's in the 4-operand in-place form); start adds context."""
    shapes = [o.shape for o in inst.operands]
    inplace = len(shapes) == 4 and "slice_sizes" in inst.attrs  # (input, output, in/out offsets)
    if inst.opcode is Opcode.COLLECTIVE_PERMUTE or holds_result_only(inst):
        return shapes[1] if inplace else tuple_or_single(shapes)
    if inplace:
        return with_context(inst, [shapes[0], shapes[1]])
    both = tuple_or_single(shapes)
    return with_context(inst, [both, both])


@shape_rule(Opcode.RAGGED_ALL_TO_ALL)
def _ragged_all_to_all(inst: Instruction) -> Shape:
    """The output operand's (operand 1) shape."""
    return operand_shape(inst, 1)


_ELEMENT_OF_OPERAND = {Opcode.ALL_GATHER_DONE: 1, Opcode.COLLECTIVE_PERMUTE_DONE: 1}


@shape_rule(*_ELEMENT_OF_OPERAND)
def _done(inst: Instruction) -> Shape:
    """A collective's -done returns its -start's result, element 1 of the start's tuple, or the
    start's value whole when it holds the result only."""
    if done_passes_operand(inst):
        return inst.operands[0].shape
    return tuple_element(inst, _ELEMENT_OF_OPERAND[inst.opcode])


@shape_rule(Opcode.ALL_REDUCE_DONE)
def _all_reduce_done(inst: Instruction) -> Shape:
    """all-reduce-start already has the result's shape."""
    return inst.operands[0].shape
