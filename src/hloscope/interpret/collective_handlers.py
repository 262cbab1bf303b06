"""The per-device handlers of collectives: each yields a ``Rendezvous`` to the driver.

The semantics are the pure functions in collectives.py and the grouping rules in
``hloscope.ir.replica_groups`` (style habit 11); ``groups``, ``operand_value`` and ``reducer``
are shared with the lockstep executor.
"""
from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any, cast

from hloscope.errors import InterpretError
from hloscope.interpret import collectives
from hloscope.interpret.driver import Rendezvous
from hloscope.interpret.evaluator import EvalContext, known_reduction
from hloscope.interpret.registry import evaluates
from hloscope.interpret.values import Value, zeros_of
from hloscope.ir import Instruction, Opcode, TupleShape
from hloscope.ir import replica_groups as devices
from hloscope.ir.collective_shapes import group_size_problem
from hloscope.ir.shapes.collectives import done_passes_operand, holds_result_only

__all__ = ["groups", "operand_value", "reducer"]

Operands = list[Any]



def groups(ctx: EvalContext, inst: Instruction, use_global: bool | None) -> list[list[int]]:
    """The device groups of collective ``inst`` in rank order (XLA's collective-op group mode)."""
    key = ("groups", id(inst))
    found = ctx.cache.get(key)
    if found is None:
        has_channel = inst.attrs.get("channel_id") is not None
        mode = devices.group_mode(has_channel, use_global)
        rg = inst.attrs.get("replica_groups")
        listed = _expand_replica_groups(rg, inst.attrs.get("device_ids")) if rg is not None else []
        procs = devices.participant_groups(mode, listed, ctx.num_replicas, ctx.num_partitions)
        # A gather's result must hold one shard per group member: never hand back a value of
        # another shape than the module declares (a module naming no device count, run on one).
        problem = group_size_problem(inst, ctx.num_replicas, ctx.num_partitions)
        if problem is not None:
            raise InterpretError(problem + "; run it on a grid that forms such groups (--replicas/--partitions)")
        found = ctx.cache[key] = devices.device_groups(procs, ctx.num_partitions)
    return found


def _expand_replica_groups(rg: Any, device_ids: Any = None) -> list[list[int]]:
    """Explicit groups of any ReplicaGroups spelling (``ReplicaGroups.expanded``)."""
    try:
        return rg.expanded(device_ids)
    except ValueError as e:
        raise InterpretError(str(e)) from None


def operand_value(inst: Instruction, operands: Operands) -> Value:
    """A collective's contribution: its one operand, or the tuple of its operands."""
    return operands[0] if len(operands) == 1 and not isinstance(inst.shape, TupleShape) else tuple(operands)


def _local(groups_size: int) -> list[list[int]]:
    return [list(range(groups_size))]


def reducer(ctx: EvalContext, inst: Instruction) -> Any:
    """The binary function of ``to_apply``: a known numpy reduction, or the computation itself."""
    comp = inst.attrs["to_apply"]
    known = known_reduction(comp)
    return known if known is not None else (lambda a, b: ctx.call_now(comp, [a, b]))


def _operands(xs: list[Value]) -> list[collectives.Operands]:
    """A group's contributions as the collectives take them: HLO collectives have array
    operands, or one flat tuple of arrays (variadic forms), never nested tuples."""
    return cast("list[collectives.Operands]", xs)


def _rendezvous(inst: Instruction, groups: list[list[int]], value: Value,
                combine: Callable[[list[Value], list[int]], Sequence[Value]]) -> Generator[Any, Any, Value]:
    return (yield Rendezvous(inst, groups, value, combine))


@evaluates(Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START)
def _all_reduce(ctx: EvalContext, inst: Instruction, operands: Operands) -> Generator[Any, Any, Value]:
    members = groups(ctx, inst, bool(inst.attrs.get("use_global_device_ids", False)))
    reduce_fn = reducer(ctx, inst)
    return (yield from _rendezvous(inst, members, operand_value(inst, operands),
                                   lambda xs, g: collectives.all_reduce(_operands(xs), _local(len(g)), reduce_fn)))


@evaluates(Opcode.ALL_GATHER, Opcode.ALL_GATHER_START)
def _all_gather(ctx: EvalContext, inst: Instruction, operands: Operands) -> Generator[Any, Any, Value]:
    members = groups(ctx, inst, bool(inst.attrs.get("use_global_device_ids", False)))
    dim = inst.attrs["dimensions"][0]
    start = inst.opcode is Opcode.ALL_GATHER_START
    value = operands[0] if len(operands) == 1 else tuple(operands)
    if not start:
        value = operand_value(inst, operands)
    result = yield from _rendezvous(inst, members, value,
                                    lambda xs, g: collectives.all_gather(_operands(xs), _local(len(g)), dim))
    return (value, result) if start and not holds_result_only(inst) else result


@evaluates(Opcode.REDUCE_SCATTER)
def _reduce_scatter(ctx: EvalContext, inst: Instruction, operands: Operands) -> Generator[Any, Any, Value]:
    members = groups(ctx, inst, bool(inst.attrs.get("use_global_device_ids", False)))
    dim = inst.attrs["dimensions"][0]
    reduce_fn = reducer(ctx, inst)
    return (yield from _rendezvous(inst, members, operand_value(inst, operands),
                                   lambda xs, g: collectives.reduce_scatter(_operands(xs), _local(len(g)), dim, reduce_fn)))


@evaluates(Opcode.ALL_TO_ALL)
def _all_to_all(ctx: EvalContext, inst: Instruction, operands: Operands) -> Generator[Any, Any, Value]:
    members = groups(ctx, inst, None)
    dims = inst.attrs.get("dimensions")
    split = dims[0] if dims else None
    value = operands[0] if split is not None and len(operands) == 1 else tuple(operands)
    return (yield from _rendezvous(inst, members, value,
                                   lambda xs, g: collectives.all_to_all(_operands(xs), _local(len(g)), split)))


@evaluates(Opcode.COLLECTIVE_BROADCAST)
def _collective_broadcast(ctx: EvalContext, inst: Instruction, operands: Operands) -> Generator[Any, Any, Value]:
    members = groups(ctx, inst, None)
    return (yield from _rendezvous(inst, members, operand_value(inst, operands),
                                   lambda xs, g: collectives.collective_broadcast(_operands(xs), _local(len(g)))))


@evaluates(Opcode.COLLECTIVE_PERMUTE, Opcode.COLLECTIVE_PERMUTE_START)
def _collective_permute(ctx: EvalContext, inst: Instruction, operands: Operands) -> Generator[Any, Any, Value]:
    key = ("pairs", id(inst))
    pairs = ctx.cache.get(key)
    if pairs is None:
        procs = devices.resolve_source_target_pairs(
            inst.attrs.get("source_target_pairs", ()), inst.attrs.get("channel_id") is not None,
            ctx.num_replicas, ctx.num_partitions)
        pairs = ctx.cache[key] = devices.device_pairs(procs, ctx.num_partitions)
    everyone = [list(range(ctx.num_replicas * ctx.num_partitions))]
    # The in-place form carries (input, output, input offsets, output offsets); only plain
    # whole-buffer permutes are modelled.
    value = operands[0]

    def combine(xs: list[Value], g: list[int]) -> Sequence[Value]:
        return collectives.collective_permute(_operands(xs), pairs)

    result = yield from _rendezvous(inst, everyone, value, combine)
    if inst.opcode is Opcode.COLLECTIVE_PERMUTE_START and not holds_result_only(inst):
        extra = tuple(zeros_of(s) for s in inst.shape.elements[2:]) if isinstance(inst.shape, TupleShape) else ()
        return (value, result, *extra)
    return result


@evaluates(Opcode.ALL_REDUCE_DONE)
def _all_reduce_done(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return operands[0]


@evaluates(Opcode.ALL_GATHER_DONE, Opcode.COLLECTIVE_PERMUTE_DONE)
def _start_done(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # Note [Async collectives holding their result only] in ir/shapes/collectives.py
    return operands[0] if done_passes_operand(inst) else operands[0][1]


@evaluates(Opcode.REPLICA_ID)
def _replica_id(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return collectives.replica_id(ctx.process)


@evaluates(Opcode.PARTITION_ID)
def _partition_id(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return collectives.partition_id(ctx.process)

