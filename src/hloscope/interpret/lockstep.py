"""Lockstep execution: every device's value held at once, with a leading device axis.

Note [Lockstep]
    Most multi-device modules are SPMD: every device runs the same instructions on different
    data (style habit 11, "Devices in lockstep"). Run one after another (driver.py's cooperative
    generators) they pay Python's per-instruction cost once per device. Here each value is
    *stacked*: an array ``x[device, ...]`` (a tuple value is a tuple of stacked leaves), so one
    plan step covers every device and numpy does the rest.

    * Elementwise ops, tuples and get-tuple-element work on stacked arrays unchanged, because
      HLO never broadcasts implicitly (``clamp`` with scalar bounds is the one exception, and
      goes per device).
    * Ops with dimension attributes get a stacked rule that shifts every dimension by one
      (broadcast, reshape, transpose, slice, concatenate, reverse, reduce, dot, bitcast), and
      dynamic-slice/dynamic-update-slice use the common start when every device has the same
      one (a per-device start, e.g. from partition-id, goes per device).
    * Collectives are operations along the device axis (the ``*_stacked`` functions of
      collectives.py), with no rendezvous at all.
    * Everything else runs *per device* for that one instruction: the ordinary handler on
      each device's slice, with that device's ``EvalContext`` (so ``rng`` keeps its
      per-device stream), and the results stacked again.
    * Constants and iota are broadcast views (``np.broadcast_to``), so they cost no memory per
      device; inputs every device shares are views too. Views are read-only, so in-place
      dynamic-update-slice never writes into them (Note [Donation] in evaluator.py).

    What lockstep cannot express is control flow that differs per device: a while condition
    or conditional selector that is not the same on every device. That one instruction then
    runs per device (its ordinary handler on each device's slice, the devices meeting at
    collectives through driver.py) and its results are stacked again; everything after
    it is back in lockstep. Nothing starts over, so run() need not keep the inputs for a
    second attempt. Mode "lockstep" raises ``Diverged`` there instead (tests compare the two
    paths with it). Hooks see stacked values only if they say they can (``sees_stacked``, Note
    [Observers] in evaluator.py); runs with other hooks use the per-device path.

The stacked rules of collectives, and how a slice of the grid meets the others' devices, are
in lockstep_collectives.py (Note [Lockstep slices]).
"""
from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any

import numpy as np

from hloscope.errors import InterpretError
from hloscope.interpret import handlers as _handlers
from hloscope.interpret import indexing, reduction, shape_ops
from hloscope.interpret.branches import select_branch
from hloscope.interpret.driver import Exchange
from hloscope.interpret.dynamic import has_dynamic
from hloscope.interpret.evaluator import (
    EvalContext,
    Plan,
    RunOptions,
    build_plan,
    evaluate,
    run_to_completion,
    sole_owner,
)
from hloscope.interpret.registry import UNSUPPORTED, handler_for, is_generator_handler
from hloscope.interpret.values import TOKEN, Value, constant_value
from hloscope.ir import Computation, Family, Instruction, Module, Opcode
from hloscope.ir import replica_groups as devices
from hloscope.ir.op_table import OpTable

__all__ = ["Diverged", "LockstepContext", "STACKED", "applies", "on_each_device", "run_lockstep", "stack_values",
           "unstack_value"]

Operands = list[Any]
Handler = Callable[..., Any]


class Diverged(InterpretError):
    """Devices took different control flow; lockstep cannot continue (Note [Lockstep])."""


# --- stacking --------------------------------------------------------------------------------


def _slice(v: Any, d: int) -> Any:
    """Device ``d``'s part of a stacked value. 0-d arrays (tokens, async contexts) are not
    stacked: every device holds the same one."""
    if isinstance(v, np.ndarray):
        return v if v.ndim == 0 else v[d]
    if isinstance(v, tuple):
        return tuple(_slice(e, d) for e in v)
    return v


def _stack(vs: Sequence[Any]) -> Any:
    first = vs[0]
    if isinstance(first, tuple):
        return tuple(_stack([v[i] for v in vs]) for i in range(len(first)))
    if first is TOKEN or not isinstance(first, np.ndarray) and not np.isscalar(first):
        return first
    if all(v is first for v in vs):  # a shared (cached) array: a view, not n copies
        a = np.asarray(first)
        return np.broadcast_to(a, (len(vs), *a.shape))
    return np.stack([np.asarray(v) for v in vs])


class _Stacking:
    """Per-device values stacked as they arrive, one device at a time, into one preallocated
    array per leaf: a per-device fallback then holds the stacked result and one device's
    value, not every device's value and then their stack too. Values every device shares (the
    same object) become a read-only broadcast view, as in ``_stack``."""

    def __init__(self, first: Any, n: int) -> None:
        self.n = n
        self.first = first
        self.out: np.ndarray | None = None
        self.parts = [_Stacking(e, n) for e in first] if isinstance(first, tuple) else None

    def add(self, d: int, v: Any) -> None:
        if self.parts is not None:
            for part, e in zip(self.parts, v, strict=True):
                part.add(d, e)
        elif self.out is not None:
            self.out[d] = v
        elif v is not self.first and self._stackable():
            first = np.asarray(self.first)
            self.out = np.empty((self.n, *first.shape), first.dtype)
            self.out[:d] = first
            self.out[d] = v

    def _stackable(self) -> bool:
        f = self.first
        return f is not TOKEN and (isinstance(f, np.ndarray) or np.isscalar(f))

    def result(self) -> Any:
        if self.parts is not None:
            return tuple(p.result() for p in self.parts)
        if self.out is not None:
            return self.out
        if not self._stackable():
            return self.first
        a = np.asarray(self.first)
        return np.broadcast_to(a, (self.n, *a.shape))


def _stack_each(values: Iterable[Any], n: int) -> Any:
    """``_stack(list(values))`` without holding every device's value at once."""
    it = iter(values)
    acc = _Stacking(next(it), n)
    for d, v in enumerate(it, 1):
        acc.add(d, v)
        del v
    return acc.result()


def stack_values(per_device: Sequence[Value]) -> Value:
    """Per-device values (one structure) as one stacked value; values every device shares
    (the same object) become read-only broadcast views."""
    return _stack(per_device)


def unstack_value(v: Value, n: int) -> list[Value]:
    """The inverse of ``stack_values``: one value per device (views into ``v``)."""
    return [_slice(v, d) for d in range(n)]


def _uniform(x: np.ndarray) -> np.ndarray | None:
    """Device 0's value of stacked ``x`` when every device holds the same, else None."""
    if x.ndim == 0:
        return x
    if x.strides[0] == 0 or x.shape[0] == 1:  # a broadcast view: uniform by construction
        return x[0]
    first = x[0]
    return first if bool((x == first).all()) else None


# --- the context -----------------------------------------------------------------------------


class LockstepContext(EvalContext):
    """An ``EvalContext`` for all devices at once. ``contexts`` are the per-device contexts the
    per-device fallback runs on; reducers and comparators (scalar, elementwise computations)
    run on device 0's context, on stacked arrays, since they do not depend on the device.

    ``devices`` (default: the whole grid) is the contiguous slice of the grid held here, and
    ``exchange`` reaches the other slices' devices (Note [Lockstep slices] in lockstep_collectives.py)."""

    stacked = True  # Note [Observers] in evaluator.py: hooks see every device's value at once

    def __init__(self, module: Module, options: RunOptions, num_replicas: int, num_partitions: int,
                 devices_held: Sequence[int] | None = None, exchange: Exchange | None = None) -> None:
        super().__init__(module, options, devices.process_id(0, num_partitions), num_replicas, num_partitions)
        held = list(range(num_replicas * num_partitions)) if devices_held is None else list(devices_held)
        if held != list(range(held[0], held[0] + len(held))):
            raise InterpretError(f"a lockstep slice holds consecutive devices, not {held}")
        n = len(held)
        self.devices = held
        self.first = held[0]
        self.whole_grid = n == num_replicas * num_partitions
        self.exchange = exchange
        self.num_devices = n
        self.weight = n  # Progress counts instructions across devices
        self.lockstep_plans: dict[Computation, Plan] = {}
        shared = {"plans": self.plans, "cache": self.cache, "progress": self.progress}
        self.contexts = [EvalContext(module, options, devices.process_id(d, num_partitions), num_replicas,
                                     num_partitions, shared=shared) for d in held]
        for c in self.contexts:
            c.donate = False  # their operands are views of stacked arrays

    def plan(self, comp: Computation) -> Plan:
        plan = self.lockstep_plans.get(comp)
        if plan is None:
            plan = self.lockstep_plans[comp] = build_plan(comp, unpack_tuples=not self.hooks, resolve=_resolve,
                                                          per_device=per_device)
        return plan

    def handler(self, inst: Instruction) -> Handler:
        return _resolve(inst)

    def call_now(self, comp: Computation, args: Sequence[Value]) -> Value:
        return self.contexts[0].call_now(comp, args)

    def vectorized(self, comp: Computation) -> Callable[..., Any]:
        return self.contexts[0].vectorized(comp)


# --- handler resolution ------------------------------------------------------------------------

STACKED: OpTable[Handler] = OpTable(
    "lockstep", fallback="the interpreter's handler, elementwise on the stacked operands or once per device")
_stacked = STACKED.register


def _registered(opcode: Opcode) -> Handler:
    """The interpreter's handler of ``opcode``; every opcode lockstep defers to is registered by
    the handler modules imported above, so a miss is an import-order bug."""
    handler = handler_for(opcode)
    if handler is None:
        raise InterpretError(f"no interpreter handler is registered for {opcode.text}")
    return handler


def per_device(handler: Handler) -> Handler:
    """``handler`` run on each device's slice with that device's context, results stacked."""
    if is_generator_handler(handler):
        def loop_gen(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
            return _stack_each((run_to_completion(handler(c, inst, [_slice(o, d) for o in operands]),
                                                  inst.computation) for d, c in enumerate(ctx.contexts)),
                               ctx.num_devices)
        return loop_gen

    def loop(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
        return _stack_each((handler(c, inst, [_slice(o, d) for o in operands]) for d, c in enumerate(ctx.contexts)),
                           ctx.num_devices)
    return loop


def _same_rank(handler: Handler) -> Handler:
    """An elementwise handler, applied to stacked operands directly when their ranks agree
    (always, except ``clamp`` with scalar bounds)."""
    fallback = per_device(handler)

    def run(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
        if isinstance(operands[0], tuple):  # copy of a tuple: stacked leaves copy as they are
            return handler(ctx, inst, operands)
        nd = operands[0].ndim
        if any(o.ndim != nd for o in operands):  # (no loop variable: it would hold an operand)
            return fallback(ctx, inst, operands)
        return handler(ctx, inst, operands)
    return run


_ELEMENTWISE_FAMILIES = (Family.UNARY, Family.BINARY, Family.TERNARY)
_ELEMENTWISE = {Opcode.COMPARE, Opcode.CONVERT, Opcode.BITCAST_CONVERT, Opcode.REDUCE_PRECISION, Opcode.COPY}
# Handlers that only route values: correct on stacked values as they are.
_ROUTING = {Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT, Opcode.CALL, Opcode.FUSION, Opcode.ASYNC_START,
            Opcode.ASYNC_UPDATE, Opcode.ASYNC_DONE, Opcode.OPTIMIZATION_BARRIER, Opcode.AFTER_ALL,
            Opcode.ADD_DEPENDENCY, Opcode.DOMAIN, Opcode.ALL_REDUCE_DONE, Opcode.ALL_GATHER_DONE,
            Opcode.COLLECTIVE_PERMUTE_DONE, Opcode.COPY_DONE}


def _resolve(inst: Instruction) -> Handler:
    handler = _resolve_stacked(inst)
    if inst.opcode in _DEVICE_DEPENDENT or inst.opcode in _ROUTING:
        return handler
    return _once_if_uniform(handler)


def _resolve_stacked(inst: Instruction) -> Handler:
    op = inst.opcode
    rule = STACKED.get(op)
    if rule is not None:
        return rule
    handler = handler_for(op)
    if handler is None:
        raise InterpretError(f"{op.text} is not supported by the interpreter: "
                             f"{UNSUPPORTED.get(op, 'no handler registered')}")
    if op in _ROUTING:
        return handler
    if op.family in _ELEMENTWISE_FAMILIES or op in _ELEMENTWISE:
        return _same_rank(handler)
    if is_generator_handler(handler):
        raise InterpretError(f"{op.text} has no lockstep rule")  # applies() rules these out
    return per_device(handler)


def applies(module: Module) -> bool:
    """Whether lockstep can run ``module``: every opcode that calls computations or meets other
    devices has a lockstep rule (the rest can go per device instruction by instruction). Not
    one with dynamic shapes: their sizes are kept per device (Note [Dynamic shapes as bounds]
    in dynamic.py)."""
    if has_dynamic(module):
        return False
    for inst in module.instructions():
        op = inst.opcode
        handler = handler_for(op)
        if handler is None or op in STACKED or op in _ROUTING:
            continue
        if is_generator_handler(handler):
            return False
    return True


# What a device's input list holds once its array is stacked: an empty array, not the input,
# so a donated input's memory is released before the entry computation runs.
_RELEASED: Value = np.empty(0)


def run_lockstep(module: Module, args: list[list[Value]], r: int, p: int, options: RunOptions,
                 devices_held: Sequence[int] | None = None, exchange: Exchange | None = None) -> list[Value]:
    """Evaluate the entry computation on every device at once; ``args[d]`` are device ``d``'s
    inputs, which are taken out of the lists as they are stacked. In mode "lockstep", raises
    ``Diverged`` when the devices' control flow differs (Note [Lockstep]). With
    ``devices_held``, only that slice of the grid, ``args[k]`` being its k-th device's inputs
    (Note [Lockstep slices] in lockstep_collectives.py)."""
    ctx = LockstepContext(module, options, r, p, devices_held, exchange)
    n = ctx.num_devices
    stacked = []
    for i in range(len(module.entry.parameters)):
        stacked.append(stack_values([args[d][i] for d in range(n)]))
        for d in range(n):  # the stacked copy replaces them (donated inputs are freed here)
            args[d][i] = _RELEASED
    gen = evaluate(ctx, module.entry, stacked, donate=True)
    result = run_to_completion(gen, module.entry)
    return unstack_value(result, n)


# --- stacked rules: dimension attributes shifted past the device axis -----------------------------


def _n(operands: Operands) -> int:
    return operands[0].shape[0]


def _dims(inst: Instruction) -> tuple[int, ...]:
    return tuple(inst.array_shape.dimensions)


def _cached(ctx: EvalContext, key: Any, make: Callable[[], Any]) -> Any:
    value = ctx.cache.get(key)
    if value is None:
        value = ctx.cache[key] = make()
    return value


@_stacked(Opcode.CONSTANT)
def _constant(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    def make() -> Value:
        v = constant_value(inst, ctx.options.fill_elided, ctx.rng)
        return _stack([v] * ctx.num_devices)
    return _cached(ctx, ("stacked constant", id(inst)), make)


@_stacked(Opcode.IOTA)
def _iota(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    def make() -> Value:
        v = shape_ops.iota(_dims(inst), inst.array_shape.dtype, inst.attrs["iota_dimension"])
        return _stack([v] * ctx.num_devices)
    return _cached(ctx, ("stacked iota", id(inst)), make)


@_stacked(Opcode.BROADCAST)
def _broadcast(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    x = operands[0]
    dims = inst.attrs.get("dimensions", ())
    return shape_ops.broadcast_in_dim(x, (x.shape[0], *_dims(inst)), (0, *(d + 1 for d in dims)))


@_stacked(Opcode.RESHAPE)
def _reshape(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    x = operands[0]
    return shape_ops.reshape(x, (x.shape[0], *_dims(inst)))


@_stacked(Opcode.TRANSPOSE)
def _transpose(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    return shape_ops.transpose(operands[0], (0, *(d + 1 for d in inst.attrs["dimensions"])))


@_stacked(Opcode.SLICE)
def _slice_op(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    ranges = inst.attrs["slice"]
    n = _n(operands)
    return shape_ops.slice(operands[0], [0, *(r.start for r in ranges)], [n, *(r.limit for r in ranges)],
                           [1, *(r.stride for r in ranges)])


@_stacked(Opcode.CONCATENATE)
def _concatenate(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    return shape_ops.concatenate(operands, inst.attrs["dimensions"][0] + 1)


@_stacked(Opcode.REVERSE)
def _reverse(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    return shape_ops.reverse(operands[0], [d + 1 for d in inst.attrs["dimensions"]])


_pad_per_device = per_device(_registered(Opcode.PAD))


@_stacked(Opcode.PAD)
def _pad(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    value = _uniform(operands[1])
    if value is None:
        return _pad_per_device(ctx, inst, operands)
    cfg = inst.attrs["padding"].dimensions
    return shape_ops.pad(operands[0], value, [0, *(d[0] for d in cfg)], [0, *(d[1] for d in cfg)],
                         [0, *(d[2] for d in cfg)])


_bitcast_per_device = per_device(_registered(Opcode.BITCAST))


@_stacked(Opcode.BITCAST)
def _bitcast(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    x = operands[0]
    src, dst = inst.operands[0].array_shape, inst.array_shape
    if x.dtype == dst.dtype and _row_major(src) and _row_major(dst):
        return shape_ops.reshape(x, (x.shape[0], *dst.dimensions))
    return _bitcast_per_device(ctx, inst, operands)


def _row_major(shape: Any) -> bool:
    return shape.layout is None or tuple(shape.layout.minor_to_major) == tuple(range(shape.rank - 1, -1, -1))


def _uniform_starts(starts: Operands) -> list[np.ndarray] | None:
    out = [np.zeros((), np.int64)]
    for s in starts:
        u = _uniform(s)
        if u is None:
            return None
        out.append(u)
    return out


_dynamic_slice_per_device = per_device(_registered(Opcode.DYNAMIC_SLICE))


@_stacked(Opcode.DYNAMIC_SLICE)
def _dynamic_slice(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    starts = _uniform_starts(operands[1:])
    if starts is None:
        return _dynamic_slice_per_device(ctx, inst, operands)
    x = operands[0]
    return shape_ops.dynamic_slice(x, starts, (x.shape[0], *inst.attrs["dynamic_slice_sizes"]))


@_stacked(Opcode.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    starts = _uniform_starts(operands[2:])
    if starts is None:  # a per-device start: write each device's row (Note [Donation] still holds)
        out = operands[0] if ctx.donate and sole_owner(operands, 0) else operands[0].copy()
        for d in range(out.shape[0]):
            out[d] = shape_ops.dynamic_update_slice(out[d], operands[1][d], [s[d] for s in operands[2:]],
                                                    in_place=True)
        return out
    in_place = ctx.donate and sole_owner(operands, 0)
    return shape_ops.dynamic_update_slice(operands[0], operands[1], starts, in_place=in_place)


_reduce_per_device = per_device(_registered(Opcode.REDUCE))


@_stacked(Opcode.REDUCE)
def _reduce(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    k = len(operands) // 2
    uniform = [_uniform(i) for i in operands[k:]]
    inits = [i for i in uniform if i is not None]
    if len(inits) != len(uniform):
        return _reduce_per_device(ctx, inst, operands)
    reducer, known = _handlers.reducer_of(ctx, inst.attrs["to_apply"])
    out = reduction.reduce(operands[:k], inits, [d + 1 for d in inst.attrs["dimensions"]], reducer, known)
    return out if inst.shape.is_tuple else out[0]


@_stacked(Opcode.GATHER)
def _gather(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    # The device axis is one more batch dimension of the indices; an operand every device
    # shares is read as it is (not as n copies), any other one is matched to it by batching.
    operand, indices = operands
    shared = _is_uniform(operand)
    return indexing.gather(operand[0] if shared else operand, indices,
                           **_handlers.gather_dims(inst.attrs, indices_axis=True, operand_axis=not shared))


_scatter_per_device = per_device(_registered(Opcode.SCATTER))


@_stacked(Opcode.SCATTER)
def _scatter(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    n = (len(operands) - 1) // 2
    known = _handlers.known_update(inst.attrs["to_apply"]) if n == 1 else None
    if known is None:  # an update computation is evaluated per device
        return _scatter_per_device(ctx, inst, operands)
    # Devices are a batching dimension: windows never cross devices, and within a device
    # colliding updates apply in the same order as alone (Note [Scatter collisions]).
    out = indexing.scatter(operands[:n], operands[n], operands[n + 1:], known=known,
                           **_handlers.scatter_dims(inst.attrs, device_axis=True))
    return out if inst.shape.is_tuple else out[0]


@_stacked(Opcode.DOT)
def _dot(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    from hloscope.interpret import linalg

    a = inst.attrs
    lb, rb = a.get("lhs_batch_dims", ()), a.get("rhs_batch_dims", ())
    lc, rc = a.get("lhs_contracting_dims", ()), a.get("rhs_contracting_dims", ())
    lhs, rhs = operands
    out = inst.array_shape.dtype
    if not lb and _is_uniform(rhs) and not _is_uniform(lhs):
        # A weight shared by every device: the device axis is one more free lhs dimension, so
        # one matmul reads the weight once (result: device, lhs free..., rhs free...).
        return linalg.dot_general(lhs, rhs[0], (), (), [d + 1 for d in lc], rc, out)
    return linalg.dot_general(lhs, rhs, (0, *(d + 1 for d in lb)), (0, *(d + 1 for d in rb)),
                              [d + 1 for d in lc], [d + 1 for d in rc], out)


# --- control flow ------------------------------------------------------------------------------------


def _agreed(ctx: LockstepContext, x: Any, inst: Instruction, what: str) -> np.ndarray | None:
    """Every device's common ``x`` (a loop condition, a branch selector), or None when the
    devices disagree; in mode "lockstep" a disagreement is an error instead."""
    u = _uniform(np.asarray(x))
    if u is None and ctx.options.mode == "lockstep":
        raise Diverged(f"{inst.name}: the devices' {what} differ ({np.asarray(x).tolist()}); "
                       "lockstep needs the same control flow on every device")
    return u


def on_each_device(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    """``inst`` run by its ordinary handler on every device's slice, the devices meeting at
    collectives through driver.py, and the results stacked again (Note [Lockstep]):
    where control flow differs per device, only that instruction leaves lockstep."""
    from hloscope.interpret.driver import drive

    handler = _registered(inst.opcode)
    gens = [handler(c, inst, [_slice(o, d) for o in operands]) for d, c in enumerate(ctx.contexts)]
    return _stack(drive(gens, ctx.devices, ctx.exchange))


@_stacked(Opcode.WHILE)
def _while(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Generator[Any, Any, Value]:
    cond, body = inst.attrs["condition"], inst.attrs["body"]
    state = operands[0]
    if ctx.donate:
        operands.clear()
    from hloscope.interpret.control_flow import never_ends, returns_its_state

    progress = ctx.progress
    n = ctx.num_devices
    stuck = returns_its_state(inst)  # Note [Loops that never end] in control_flow.py
    while True:
        go = _agreed(ctx, (yield from ctx.call(cond, [state])), inst, "loop conditions")
        if go is None:  # the rest of the loop per device; it evaluates the condition again
            return on_each_device(ctx, inst, [state])
        if not bool(go):
            return state
        if stuck:
            raise never_ends(inst)
        args, state = [state], None
        state = yield from ctx.call(body, args, donate=True)
        progress.loop_iterations += n


@_stacked(Opcode.CONDITIONAL)
def _conditional(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Generator[Any, Any, Value]:
    selector = _agreed(ctx, operands[0], inst, "branch selectors")
    if selector is None:
        return on_each_device(ctx, inst, operands)
    branch, index = select_branch(inst, selector)
    args = [operands[1 + index]]
    if ctx.donate:
        operands.clear()
    return (yield from ctx.call(branch, args, donate=True))


# --- gemms: one BLAS call for every device ----------------------------------------------------------


def _gemm_product(lhs: np.ndarray, rhs: np.ndarray, spec: Any) -> np.ndarray:
    """The stacked product of a 2-D gemm (one contracting dimension each, no batch), else
    per-device products of the batched form. When one operand is the same on every device (a
    weight matrix), the devices' rows are folded into one matmul, so the weight is read once
    rather than once per device: these skinny gemms are bound by reading the weight."""
    n = lhs.shape[0]
    if (spec.lb or spec.rb or lhs.ndim != 3 or rhs.ndim != 3 or len(spec.lc) != 1 or len(spec.rc) != 1
            or lhs.dtype != spec.compute or rhs.dtype != spec.compute or spec.compute.kind not in "fc"):
        from hloscope.interpret import linalg

        return linalg.dot_general(lhs, rhs, (0, *(d + 1 for d in spec.lb)), (0, *(d + 1 for d in spec.rb)),
                                  [d + 1 for d in spec.lc], [d + 1 for d in spec.rc], spec.compute)
    a = lhs if spec.lc[0] == 1 else lhs.transpose(0, 2, 1)  # [device, m, k]
    b = rhs if spec.rc[0] == 0 else rhs.transpose(0, 2, 1)  # [device, k, n]
    from hloscope.interpret import linalg

    if _is_uniform(b) and not _is_uniform(a):
        m, k = a.shape[1:]
        return linalg.matmul(a.reshape(n * m, k), b[0]).reshape(n, m, b.shape[2])
    return linalg.matmul(a, b)


def _gemm_accumulate(lhs: np.ndarray, rhs: np.ndarray, c: np.ndarray, spec: Any) -> np.ndarray | None:
    """``c += alpha * lhs . rhs`` in place on stacked operands (custom_calls.gemm's beta = 1
    path): one BLAS call per device, or one for all when the rhs is shared (as in
    ``_gemm_product``). None, with ``c`` untouched, when the form does not fit."""
    from hloscope.interpret import linalg
    from hloscope.interpret.custom_calls import plain_operands

    ops = plain_operands(lhs, rhs, spec, stacked=True)  # [device, m, k], [device, k, n]
    if ops is None or not c.flags.c_contiguous:
        return None
    n = lhs.shape[0]
    a, b = ops
    m, k, cols = a.shape[1], a.shape[2], b.shape[2]
    out = c.reshape(n, m, cols)
    if _is_uniform(b) and not _is_uniform(a):
        ok = linalg.matmul_accumulate(out.reshape(n * m, cols), a.reshape(n * m, k), b[0], spec.alpha)
        return c if ok else None
    # Whether BLAS applies depends only on types and strides, which every device shares, so
    # the first device decides for all and no device is left half-updated.
    if not linalg.matmul_accumulate(out[0], a[0], b[0], spec.alpha):
        return None
    for d in range(1, n):
        if not linalg.matmul_accumulate(out[d], a[d], b[d], spec.alpha):
            raise InterpretError(f"gemm: BLAS accumulation applied to device 0 but not to device {d}")
    return c


def _stacked_gemm(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    from hloscope.interpret import custom_calls

    return custom_calls.gemm(ctx, inst, operands, stacked=True, product=_gemm_product, accumulate=_gemm_accumulate)


_custom_call_per_device = per_device(_registered(Opcode.CUSTOM_CALL))
_GEMM_TARGETS = ("__cublas$gemm", "__cublas$lt$matmul")


@_stacked(Opcode.CUSTOM_CALL)
def _custom_call(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
    if inst.custom_call_target in _GEMM_TARGETS:
        return _stacked_gemm(ctx, inst, operands)
    return _custom_call_per_device(ctx, inst, operands)


# --- uniform values: computed once, for every device ----------------------------------------------


def _is_uniform(v: Any) -> bool:
    """A value every device holds identically, by construction: a broadcast view (device
    stride 0). Equal values that are not views are not detected (that would cost a compare)."""
    if isinstance(v, np.ndarray):
        return v.ndim > 0 and v.strides[0] == 0
    if isinstance(v, tuple):
        return all(_is_uniform(e) for e in v)
    return False


def _first(v: Any) -> Any:
    """A uniform value as a stack of one device."""
    if isinstance(v, np.ndarray):
        return v[:1]
    return tuple(_first(e) for e in v)


def _spread(v: Any, n: int) -> Any:
    """A one-device stacked value as a broadcast view over ``n`` devices."""
    if isinstance(v, np.ndarray):
        return v if v.ndim == 0 else np.broadcast_to(v, (n, *v.shape[1:]))
    if isinstance(v, tuple):
        return tuple(_spread(e, n) for e in v)
    return v


class _OneDevice:
    """A LockstepContext seen as one device (device 0): what handlers of uniform operands run
    on, so per-device fallbacks and stacked rules compute once."""

    def __init__(self, ctx: LockstepContext) -> None:
        self._ctx = ctx
        self.contexts = ctx.contexts[:1]
        self.num_devices = 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


# Opcodes whose value depends on the device even when every operand is the same everywhere.
_DEVICE_DEPENDENT = {Opcode.RNG, Opcode.REPLICA_ID, Opcode.PARTITION_ID, Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START,
                     Opcode.ALL_GATHER, Opcode.ALL_GATHER_START, Opcode.REDUCE_SCATTER, Opcode.ALL_TO_ALL,
                     Opcode.COLLECTIVE_BROADCAST, Opcode.COLLECTIVE_PERMUTE, Opcode.COLLECTIVE_PERMUTE_START,
                     Opcode.WHILE, Opcode.CONDITIONAL, Opcode.CALL, Opcode.FUSION, Opcode.ASYNC_START,
                     Opcode.CONSTANT, Opcode.IOTA}


def _once_if_uniform(handler: Handler) -> Handler:
    """``handler``, run once on device 0's slice when every operand is uniform, the result
    spread to every device as a view: uniform values (weights, constants and what is computed
    from them alone) stay one array, and a gemm can see that its weight is shared."""

    def run(ctx: LockstepContext, inst: Instruction, operands: Operands) -> Value:
        if operands and all(_is_uniform(o) for o in operands):
            one = _OneDevice(ctx)
            return _spread(handler(one, inst, [_first(o) for o in operands]), ctx.num_devices)
        return handler(ctx, inst, operands)
    return run
