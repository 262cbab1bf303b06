"""Control flow, tuples, sources and tokens: the ops that route values rather than compute them.

call, while, conditional, fusion, map, async-start/update/done, copy-start/done,
optimization-barrier, tuple, get-tuple-element, constant, parameter, after-all,
add-dependency and domain. Handlers that evaluate another computation are generators, so a
collective inside a loop body or a branch can still meet the other devices (run.py).
"""
from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np

from hloscope.errors import InterpretError
from hloscope.interpret import spmd
from hloscope.interpret.branches import select_branch
from hloscope.interpret.evaluator import EvalContext
from hloscope.interpret.registry import evaluates, is_generator_handler
from hloscope.interpret.values import TOKEN, Value, constant_value, leaves, zeros_of
from hloscope.ir import Computation, Family, Instruction, Opcode, TupleShape

__all__ = ["select_branch", "returns_its_state", "never_ends"]

Operands = list[Any]
# A manual region's call evaluates to its devices' values (Note [Global programs] in spmd.py).
Evaluation = Generator[Any, Any, "Value | spmd.Sharded"]


def _called(inst: Instruction) -> Computation:
    comps = inst.called_computations
    if len(comps) != 1:
        raise InterpretError(f"{inst.opcode.text} must call exactly one computation, found {len(comps)}")
    return comps[0]


@evaluates(Opcode.CALL, Opcode.FUSION)
def _call(ctx: EvalContext, inst: Instruction, operands: Operands) -> Evaluation:
    # Inside a region each device already runs on its own; a nested region (axis_index in a
    # partly manual shard_map is one) is an ordinary call there (Note [Nested manual regions]).
    if not ctx.in_region and (any(isinstance(o, spmd.Sharded) for o in operands) or _is_region_call(ctx, inst)):
        return _run_region(ctx, _called(inst), operands)  # a manual region (spmd.py)
    # A fusion's value is its fused computation's value: fusion only changes how XLA emits code.
    # The operands list is handed over, so the callee may reuse dead buffers (Note [Donation]).
    return (yield from ctx.call(_called(inst), operands, donate=True))


def _is_region_call(ctx: EvalContext, inst: Instruction) -> bool:
    """A manual region none of whose operands is per device (it may have none at all)."""
    if ctx.num_replicas * ctx.num_partitions == 1 or inst.opcode is not Opcode.CALL:
        return False
    calls = ctx.cache.get("region-calls")
    if calls is None:
        calls = ctx.cache["region-calls"] = spmd.region_calls(ctx.module)
    return id(inst) in calls


@evaluates(Opcode.WHILE)
def _while(ctx: EvalContext, inst: Instruction, operands: Operands) -> Evaluation:
    cond, body = inst.attrs["condition"], inst.attrs["body"]
    state = operands[0]
    if ctx.donate:
        operands.clear()  # the loop owns its state from here on (Note [Donation])
    progress = ctx.progress
    watch = _may_stall(ctx, inst)
    stuck = returns_its_state(inst)
    iterations = 0
    while True:
        if not bool((yield from ctx.call(cond, [state]))):
            return state
        if stuck:
            raise never_ends(inst)
        before = [np.array(x, copy=True) for x in leaves(state)] if watch and not _big(inst) else None
        # Drop this frame's reference so the body holds the only one and can update in place.
        args, state = [state], None
        state = yield from ctx.call(body, args, donate=True)
        progress.loop_iterations += 1
        iterations += 1
        if before is not None and all(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
                                      for a, b in zip(before, leaves(state), strict=True)):
            raise InterpretError(
                f"while loop {inst.name} never ends: iteration {iterations} left its state unchanged, "
                f"so {cond.name} stays true forever (its body and condition have no side effects, so every "
                "further iteration repeats the same step)")


# Note [Loops that never end]
#     A while loop whose body returns its state unchanged while the condition holds runs
#     forever: its body and condition are pure functions of the state. XLA's tests have such
#     loops (a body that returns its parameter, a counter incremented by 0); XLA's simplifier
#     may delete a loop whose body changes nothing and so "finishes" one, which defines
#     nothing. hloscope stops with an error naming the loop instead of hanging: at once when
#     the body's root is its parameter, else after an iteration that changed nothing, which it
#     compares only for a small state (every array at most _STALL_WATCH_ELEMENTS elements:
#     counters, flags), where a copy per iteration costs nothing and no in-place update of a
#     big buffer is blocked (Note [Donation]). Only loops whose computations draw no random
#     numbers and meet no other device or the host, and not in a module with dynamic shapes,
#     whose loop state holds sizes besides the arrays (Note [Dynamic shapes as bounds]).
_STALL_WATCH_ELEMENTS = 64
_IMPURE_FAMILIES = frozenset({Family.RNG, Family.IO, Family.COLLECTIVE})


def returns_its_state(inst: Instruction) -> bool:
    """A while loop whose body returns its parameter and whose condition is pure: once the
    condition holds it holds forever (Note [Loops that never end])."""
    return _returns_parameter(inst.attrs["body"]) and _pure(inst.attrs["condition"], set())


def _returns_parameter(body: Computation) -> bool:
    """The body's root is its parameter, or the tuple of that parameter's elements in order."""
    root = body.root
    if root.opcode is Opcode.PARAMETER:
        return True
    return root.opcode is Opcode.TUPLE and all(
        o.opcode is Opcode.GET_TUPLE_ELEMENT and o.attrs["index"] == k and o.operands[0].opcode is Opcode.PARAMETER
        for k, o in enumerate(root.operands)) and isinstance(body.parameters[0].shape, TupleShape) and len(
        body.parameters[0].shape.elements) == len(root.operands)


def never_ends(inst: Instruction) -> InterpretError:
    """The error for a loop that ``returns_its_state`` and whose condition held."""
    return InterpretError(f"while loop {inst.name} never ends: its body returns its state unchanged and "
                          f"{inst.attrs['condition'].name} is true for it")


def _may_stall(ctx: EvalContext, inst: Instruction) -> bool:
    """Whether the loop's computations are pure (Note [Loops that never end])."""
    key = ("may_stall", id(inst))
    known = ctx.cache.get(key)
    if known is None:
        known = ctx.cache[key] = not ctx.dynamic and all(
            _pure(c, set()) for c in (inst.attrs["condition"], inst.attrs["body"]))
    return known


def _big(inst: Instruction) -> bool:
    """Whether some array of the loop state is too big to copy every iteration."""
    return any(int(np.prod(s.dimensions)) > _STALL_WATCH_ELEMENTS for _, s in inst.shape.leaves())


def _pure(comp: Computation, seen: set[int]) -> bool:
    """No random numbers, host calls or collectives in ``comp`` or what it calls."""
    if id(comp) in seen:
        return True
    seen.add(id(comp))
    for i in comp.instructions:
        if i.opcode.family in _IMPURE_FAMILIES or i.opcode is Opcode.CUSTOM_CALL:
            return False
        if not all(_pure(c, seen) for c in i.called_computations):
            return False
    return True


@evaluates(Opcode.CONDITIONAL)
def _conditional(ctx: EvalContext, inst: Instruction, operands: Operands) -> Evaluation:
    branch, index = select_branch(inst, operands[0])
    args = [operands[1 + index]]
    if ctx.donate:
        operands.clear()  # Note [Donation]
    return (yield from ctx.call(branch, args, donate=True))


@evaluates(Opcode.MAP)
def _map(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # The mapped computation is scalar and elementwise, so one vectorized call covers every
    # element; broadcast in case it ignores its parameters (a constant result).
    comp = inst.attrs["to_apply"]
    shape = inst.array_shape
    if any(i.called_computations for i in comp.instructions):
        # A conditional (or call, loop...) inside branches on one element's value, so whole
        # arrays cannot stand in for the scalars there: one call per element.
        out = np.empty(shape.dimensions, shape.dtype)
        for idx in np.ndindex(*shape.dimensions):
            out[idx] = ctx.call_now(comp, [np.asarray(o[idx]) for o in operands])
        return out
    result = ctx.call_now(comp, operands)
    return np.broadcast_to(np.asarray(result, shape.dtype), shape.dimensions).copy()


# --- async wrappers -------------------------------------------------------------------------
# Note [Async values]: an async-start's value is the tuple ((operands...), result, context...)
# its shape describes; async-update passes it through and async-done takes element 1. The
# wrapped computation runs entirely at async-start, which is allowed because the result
# may not be read before async-done.


def _wrapped(ctx: EvalContext, inst: Instruction) -> Instruction | None:
    """The instruction a sugared ``<op>-start`` wraps when that is not a call or fusion (whose
    computation is the async computation itself), built once per instruction."""
    from hloscope.ir.shape_inference import async_wrapped_instruction

    op = inst.attrs.get("async_wrapped_opcode")
    if op is None or op in (Opcode.CALL, Opcode.FUSION):
        return None
    key = ("async wrapped", id(inst))
    if key not in ctx.cache:
        ctx.cache[key] = async_wrapped_instruction(inst)
    return ctx.cache[key]


@evaluates(Opcode.ASYNC_START)
def _async_start(ctx: EvalContext, inst: Instruction, operands: Operands) -> Evaluation:
    wrapped = _wrapped(ctx, inst)
    if wrapped is None:
        result = yield from ctx.call(_called(inst), operands)
    else:  # custom-call-start, reduce-scatter-start, ...: the wrapped op's own handler
        handler = ctx.handler(wrapped)
        args = list(operands)
        result = (yield from handler(ctx, wrapped, args)) if is_generator_handler(handler) else handler(ctx, wrapped, args)
    shape = inst.shape
    extra = tuple(zeros_of(s) for s in shape.elements[2:]) if isinstance(shape, TupleShape) else ()
    return (tuple(operands), result, *extra)


@evaluates(Opcode.ASYNC_UPDATE, Opcode.OPTIMIZATION_BARRIER)
def _identity(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return operands[0]


@evaluates(Opcode.ASYNC_DONE)
def _async_done(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return operands[0][1]


@evaluates(Opcode.COPY_START)
def _copy_start(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # (destination, source, u32[] context); values are logical, so the copy is the operand.
    return (operands[0], operands[0], np.zeros((), np.uint32))


@evaluates(Opcode.COPY_DONE)
def _copy_done(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return operands[0][0]


# --- tuples, sources, tokens ----------------------------------------------------------------


@evaluates(Opcode.TUPLE)
def _tuple(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return tuple(operands)


@evaluates(Opcode.GET_TUPLE_ELEMENT)
def _get_tuple_element(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return operands[0][inst.attrs["index"]]  # a tuple, or a manual region's Sharded tuples


def _run_region(ctx: EvalContext, comp: Computation, operands: Operands) -> spmd.Sharded:
    """Run ``comp`` on every device of the grid, each on its shards (Note [Global programs] in
    spmd.py); collectives inside meet through the driver's rendezvous (driver.py)."""
    from hloscope.interpret.driver import drive
    from hloscope.interpret.evaluator import evaluate
    from hloscope.ir import replica_groups as devices

    r, p = ctx.num_replicas, ctx.num_partitions
    n = r * p
    per_device = [[o.values[d] if isinstance(o, spmd.Sharded) else o for o in operands] for d in range(n)]
    shared = {"plans": ctx.plans, "cache": ctx.cache, "progress": ctx.progress}
    contexts = [EvalContext(ctx.module, ctx.options, devices.process_id(d, p), r, p, shared=shared)
                for d in range(n)]
    for c in contexts:
        c.in_region = True
    gens = [evaluate(c, comp, per_device[d]) for d, c in enumerate(contexts)]
    return spmd.Sharded(drive(gens))


@evaluates(Opcode.CONSTANT)
def _constant(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # Decoding a literal is slow; do it once per instruction, not once per loop iteration.
    # The cached array is shared, which is safe because no handler writes into its operands.
    key = ("constant", id(inst))
    value = ctx.cache.get(key)
    if value is None:
        value = ctx.cache[key] = constant_value(inst, ctx.options.fill_elided, ctx.rng)
    return value


@evaluates(Opcode.PARAMETER)
def _parameter(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    raise InterpretError("parameters are bound by the caller, not evaluated")  # plans skip them


@evaluates(Opcode.AFTER_ALL)
def _after_all(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return TOKEN


@evaluates(Opcode.ADD_DEPENDENCY, Opcode.DOMAIN)
def _first_operand(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # add-dependency(value, token) only orders execution; domain only marks sharding regions.
    return operands[0]
