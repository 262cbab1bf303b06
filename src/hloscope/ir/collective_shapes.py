"""What a collective's shapes say about its device groups, for a given device grid.

An all-gather's result holds one shard per member of its group along the gathered dimension
(a reduce-scatter's operand likewise), so ``s4[4,16] -> s4[32,16]`` along 0 means groups of 8.
With implicit groups (``replica_groups={}``) the group is every replica (or partition), a
count the module need not state. XLA's verifier then skips the check when the count is
unknown (taken as 1); the interpreter cannot: it would hand back a value of another shape than
declared. ``group_size_problems`` names each such disagreement for a grid, and
``implied_replicas`` the grid the shapes ask for when the module names none.
"""
from __future__ import annotations

from collections.abc import Iterable

from hloscope.errors import HloscopeError
from hloscope.ir import replica_groups as devices
from hloscope.ir.instruction import Instruction
from hloscope.ir.module import Module
from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import ArrayShape, TupleShape
from hloscope.ir.shapes.async_ops import async_wrapped_instruction

__all__ = ["implied_shards", "group_sizes", "group_size_problem", "group_size_problems", "implied_replicas"]

_GATHER = (Opcode.ALL_GATHER, Opcode.ALL_GATHER_START)
_SCATTER = (Opcode.REDUCE_SCATTER,)


def implied_shards(inst: Instruction) -> tuple[int, int, ArrayShape, ArrayShape] | None:
    """(dimension, shard count, operand shape, result shape) of an all-gather or reduce-scatter
    from its declared shapes (operand 0 and its result), or None for other ops or odd shapes."""
    if inst.opcode not in _GATHER + _SCATTER or not inst.operands:
        return None
    dims = inst.attrs.get("dimensions")
    declared = inst.shape
    if inst.opcode is Opcode.ALL_GATHER_START and isinstance(declared, TupleShape) and len(declared.elements) == 2:
        declared = declared.elements[1]
    while isinstance(declared, TupleShape) and declared.elements:
        declared = declared.elements[0]
    operand = inst.operands[0].shape
    if not dims or not isinstance(declared, ArrayShape) or not isinstance(operand, ArrayShape):
        return None
    d = dims[0]
    if not (0 <= d < operand.rank and d < declared.rank):
        return None
    big, small = (declared.dimensions[d], operand.dimensions[d]) if inst.opcode in _GATHER else (
        operand.dimensions[d], declared.dimensions[d])
    if small <= 0 or big < 0:
        return None
    return d, -(-big // small), operand, declared


def group_sizes(inst: Instruction, replicas: int, partitions: int) -> set[int] | None:
    """The sizes of ``inst``'s device groups on a ``replicas`` x ``partitions`` grid, or None
    when its groups do not fit that grid (the interpreter and verifier say so elsewhere)."""
    use_global = bool(inst.attrs.get("use_global_device_ids", False))
    try:
        mode = devices.group_mode(inst.attrs.get("channel_id") is not None, use_global)
        rg = inst.attrs.get("replica_groups")
        listed = rg.expanded(inst.attrs.get("device_ids")) if rg is not None else []
        groups = devices.participant_groups(mode, listed, replicas, partitions)
    except (HloscopeError, ValueError):
        return None
    return {len(g) for g in groups}


def group_size_problem(inst: Instruction, replicas: int, partitions: int) -> str | None:
    """Why ``inst``'s declared shapes cannot hold on this grid, or None when they can."""
    found = implied_shards(inst)
    if found is None:
        return None
    d, shards, operand, result = found
    sizes = group_sizes(inst, replicas, partitions)
    if sizes is None or sizes == {shards}:
        return None
    size = ", ".join(str(s) for s in sorted(sizes))
    what = "gathers" if inst.opcode in _GATHER else "scatters into"
    return (f"{inst.opcode.text} {inst.name} {what} {shards} shards along dimension {d} "
            f"({operand} -> {result}), but on {replicas} replica(s) x {partitions} partition(s) its "
            f"groups have {size} device(s); it needs groups of {shards}")


def group_size_problems(module: Module, replicas: int, partitions: int) -> list[tuple[Instruction, str]]:
    """Every all-gather and reduce-scatter of ``module`` whose shapes disagree with its groups
    on a ``replicas`` x ``partitions`` grid."""
    out = []
    for inst in _gathers_and_scatters(module.instructions()):
        problem = group_size_problem(inst, replicas, partitions)
        if problem is not None:
            out.append((inst, problem))
    return out


def implied_replicas(module: Module) -> tuple[int, Instruction] | None:
    """For a module naming no device count: the replica count its implicit-group gathers and
    scatters ask for (their shard count; the largest when they differ) and one instruction
    that asks for it, or None when none asks for more than one device."""
    best: tuple[int, Instruction] | None = None
    for inst in _gathers_and_scatters(module.instructions()):
        rg = inst.attrs.get("replica_groups")
        if rg is not None and (rg.groups or rg.iota_shape is not None):
            continue  # explicit groups: their ids say the count (run.default_grid)
        if inst.attrs.get("use_global_device_ids"):
            continue
        found = implied_shards(inst)
        if found is not None and found[1] > 1 and (best is None or found[1] > best[0]):
            best = (found[1], inst)
    return best


def _gathers_and_scatters(insts: Iterable[Instruction]) -> Iterable[Instruction]:
    for inst in insts:
        # A sugared ``reduce-scatter-start`` wraps its collective in a computation that is not
        # part of the module (Note [Async shapes]): look at the collective it wraps.
        wrapped = async_wrapped_instruction(inst) if inst.opcode is Opcode.ASYNC_START else None
        if (wrapped or inst).opcode in _GATHER + _SCATTER:
            yield wrapped or inst
