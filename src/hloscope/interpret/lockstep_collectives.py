"""Lockstep rules of collectives: operations along the stacked device axis (Note [Lockstep] in
lockstep.py), and how a slice of the grid meets the devices held elsewhere.

Note [Lockstep slices]
    A Ray worker (ray_worker.py) runs a contiguous slice ``[first, first + n)`` of the grid in
    lockstep: the stacked axis holds the slice's devices, each per-device context keeps its
    global ``ProcessId`` (so replica-id, partition-id and ``rng`` streams are those of the
    whole grid), and the context shared by all of them stays device 0's, as in a whole-grid
    run (elided constants are filled alike). A collective whose every group lies inside the
    slice (or wholly outside it) stays an operation along the stacked axis, its groups
    renumbered into the slice; one whose groups cross the slice runs per device (the ordinary
    handlers, ``lockstep.on_each_device``), and the driver completes each group through the worker's
    exchange (Note [Members on other workers] in driver.py) with the same pure combine.
"""
from __future__ import annotations

from typing import Any

from hloscope.interpret import collective_handlers, collectives
from hloscope.interpret.lockstep import STACKED, LockstepContext, on_each_device
from hloscope.interpret.values import Value
from hloscope.ir import Instruction, Opcode, TupleShape
from hloscope.ir import replica_groups as devices
from hloscope.ir.shapes.collectives import holds_result_only

__all__: list[str] = []

Operands = list[Any]


def _in_slice(ctx: LockstepContext, groups: list[list[int]]) -> list[list[int]] | None:
    """``groups`` renumbered into the slice's stacked axis, dropping those wholly outside it;
    None when a group has members both inside and outside (Note [Lockstep slices])."""
    if ctx.whole_grid:
        return groups
    lo, hi = ctx.first, ctx.first + ctx.num_devices
    out = []
    for g in groups:
        inside = [lo <= d < hi for d in g]
        if all(inside):
            out.append([d - lo for d in g])
        elif any(inside):
            return None
    return out


def _crosses_slices(ctx: LockstepContext, inst: Instruction, use_global: bool | None) -> list[list[int]] | None:
    """The collective's groups in the slice's numbering, or None when they cross slices."""
    return _in_slice(ctx, collective_handlers.groups(ctx, inst, use_global))


@STACKED.register(Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START)
def _all_reduce(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    groups = _crosses_slices(ctx, inst, bool(inst.attrs.get("use_global_device_ids", False)))
    if groups is None:
        return on_each_device(ctx, inst, operands)
    return collectives.all_reduce_stacked(collective_handlers.operand_value(inst, operands), groups, collective_handlers.reducer(ctx, inst))


@STACKED.register(Opcode.ALL_GATHER, Opcode.ALL_GATHER_START)
def _all_gather(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    groups = _crosses_slices(ctx, inst, bool(inst.attrs.get("use_global_device_ids", False)))
    if groups is None:
        return on_each_device(ctx, inst, operands)
    dim = inst.attrs["dimensions"][0]
    if inst.opcode is Opcode.ALL_GATHER_START:
        value = operands[0] if len(operands) == 1 else tuple(operands)
        gathered = collectives.all_gather_stacked(value, groups, dim)
        return gathered if holds_result_only(inst) else (value, gathered)
    return collectives.all_gather_stacked(collective_handlers.operand_value(inst, operands), groups, dim)


@STACKED.register(Opcode.REDUCE_SCATTER)
def _reduce_scatter(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    groups = _crosses_slices(ctx, inst, bool(inst.attrs.get("use_global_device_ids", False)))
    if groups is None:
        return on_each_device(ctx, inst, operands)
    return collectives.reduce_scatter_stacked(collective_handlers.operand_value(inst, operands), groups,
                                              inst.attrs["dimensions"][0], collective_handlers.reducer(ctx, inst))


@STACKED.register(Opcode.ALL_TO_ALL)
def _all_to_all(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    groups = _crosses_slices(ctx, inst, None)
    if groups is None:
        return on_each_device(ctx, inst, operands)
    dims = inst.attrs.get("dimensions")
    split = dims[0] if dims else None
    value = operands[0] if split is not None and len(operands) == 1 else tuple(operands)
    return collectives.all_to_all_stacked(value, groups, split)


@STACKED.register(Opcode.COLLECTIVE_BROADCAST)
def _collective_broadcast(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    groups = _crosses_slices(ctx, inst, None)
    if groups is None:
        return on_each_device(ctx, inst, operands)
    return collectives.collective_broadcast_stacked(collective_handlers.operand_value(inst, operands), groups)


@STACKED.register(Opcode.COLLECTIVE_PERMUTE, Opcode.COLLECTIVE_PERMUTE_START)
def _collective_permute(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    def make() -> Any:
        procs = devices.resolve_source_target_pairs(
            inst.attrs.get("source_target_pairs", ()), inst.attrs.get("channel_id") is not None,
            ctx.num_replicas, ctx.num_partitions)
        return devices.device_pairs(procs, ctx.num_partitions)
    pairs = ctx.cache.get(("pairs", id(inst)))
    if pairs is None:
        pairs = ctx.cache[("pairs", id(inst))] = make()
    if not ctx.whole_grid:
        # The per-device handler meets every device (one group of all); within a slice that
        # is a rendezvous of the whole grid through the exchange.
        return on_each_device(ctx, inst, operands)
    value = operands[0]
    result = collectives.collective_permute_stacked(value, pairs)
    if inst.opcode is Opcode.COLLECTIVE_PERMUTE_START and not holds_result_only(inst):
        from hloscope.interpret.values import zeros_of
        extra = tuple(zeros_of(s) for s in inst.shape.elements[2:]) if isinstance(inst.shape, TupleShape) else ()
        return (value, result, *extra)
    return result


@STACKED.register(Opcode.REPLICA_ID)
def _replica_id(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    ids = collectives.replica_ids_stacked(ctx.num_replicas, ctx.num_partitions)
    return ids if ctx.whole_grid else ids[ctx.first:ctx.first + ctx.num_devices].copy()


@STACKED.register(Opcode.PARTITION_ID)
def _partition_id(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    ids = collectives.partition_ids_stacked(ctx.num_replicas, ctx.num_partitions)
    return ids if ctx.whole_grid else ids[ctx.first:ctx.first + ctx.num_devices].copy()


