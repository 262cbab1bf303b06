"""Bounded dynamic shapes: the dynamic size of every dimension, carried through a run, and the
ops whose values depend on it, evaluated as XLA's DynamicPadder rewrites them.

Note [Dynamic shapes as bounds]
    hloscope's values always have their bound shape (``f32[<=4]`` is an f32[4] array): the
    elements past a dimension's dynamic size are padding, as in XLA after DynamicPadder. What
    is dynamic is the size, and hloscope carries it the way XLA's DynamicDimensionInference
    defines it:

    * Sizes. Each instruction that has a dynamic operand or result gets its result's sizes
      from its operands' by one rule per opcode in ``SIZE_RULES`` (per array dimension an int,
      or None where the dimension is static; a tuple value's sizes are a list of its
      elements'). They are kept in ``ctx.cache`` by instruction and device. set-dimension-size
      and SliceToDynamic are where sizes start; get-dimension-size reads them; a called
      computation's parameters get its operands' sizes, and a while body's root hands its
      sizes to the next iteration's parameters, as XLA adds the sizes to the loop state.
    * Values. Padding holds whatever the producing op left there (set-dimension-size is its
      operand, as DynamicPadder's ReplaceSetSize makes it). Ops that would read padding into
      a defined element are evaluated as DynamicPadder rewrites them (``SEMANTICS``): a reduce,
      reduce-window, dot, convolution, pad or select-and-scatter first overwrites its
      operands' padding with an identity (ChooseIdentityValue: the reducer's init, zero, the
      padding value, the type's minimum), a scatter its indices' padding with the largest
      index (out of bounds: skipped); reverse, concatenate, sort, reshape, dynamic-reshape and
      dynamic-update-slice work on the defined region; a binary op whose operands' sizes
      differ broadcasts the one of size 1 (implicit broadcast) and is defined on the smaller
      size otherwise.
    * Outputs. XLA:CPU hands a dynamic array out as its elements in row-major order at the
      front of the bound buffer (SliceToDynamic, which DynamicPadder puts before every dynamic
      output: "dest_index = delinearize(linearize(i, dynamic_dims), static_dims)",
      IrEmitter::EmitSliceToDynamic), so s32[2,<=2,2] of sizes (2,1,2) holds x[0,0,:],
      x[1,0,:] first; past them XLA:CPU leaves the buffer as it was, and hloscope writes
      zeros. An explicit SliceToDynamic does the same inside a program; PadToStatic undoes it.

    Where XLA:CPU as jax runs HLO text (converted to StableHLO first) departs from XLA's own
    definition, hloscope keeps the definition except for one fold: get-dimension-size of a
    dimension its operand declares static is the bound there. A reshape that splits a dynamic
    dimension (s32[<=12] of size 8 to s32[2,<=3,2], dynamic_padder_test's "output minor
    dimension reshape" cases) keeps its size here (2, the defined elements at the front) while
    that route loses it (the bound, 3, and the padding counted), and a while loop that shrinks
    a size never ends there.

    Static programs pay nothing: the plan wraps a handler only for an instruction with a
    dynamic operand or result (``involves_dynamic``), and a module with dynamic shapes runs
    device by device (lockstep has no size store).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Any

import numpy as np

from hloscope.interpret import shape_ops
from hloscope.interpret.branches import select_branch
from hloscope.interpret.dynamic_sizes import (
    SIZE_RULES,
    Operands,
    Sizes,
    array_sizes,
    bounds_of,
    conv_labels,
    defined_counts,
    dynamic_reshape_sizes,
    has_dynamic,
    involves_dynamic,
    set_sizes,
    sizes_of,
)
from hloscope.interpret.registry import evaluates, is_generator_handler
from hloscope.interpret.values import Value
from hloscope.ir import ArrayShape, Computation, Instruction, Opcode
from hloscope.ir.attributes import window_of
from hloscope.ir.op_table import OpTable
from hloscope.ir.opcode import Family

__all__ = ["SIZE_RULES", "SEMANTICS", "has_dynamic", "involves_dynamic", "sizes_of", "with_dynamic_sizes"]

# --- semantics: DynamicPadder's rewrites ----------------------------------------------------

Semantics = Callable[[Any, Instruction, Operands, list[Sizes], Sizes, Callable[..., Any]], Any]
SEMANTICS: OpTable[Semantics] = OpTable(
    "dynamic semantics", fallback="the op's value is the same on padded operands (DynamicPadder leaves it)")


def _mask(x: np.ndarray, sizes: Sizes, dims: Any, fill: Any) -> np.ndarray:
    """``x`` with the elements past its dynamic size along each of ``dims`` set to ``fill``
    (PadWithScalar)."""
    s = array_sizes(sizes)
    if s is None:
        return x
    x = np.asarray(x)
    out = None
    for d in dims:
        if s[d] is None or s[d] >= x.shape[d]:
            continue
        if out is None:
            out = np.array(x, copy=True)
        index = [slice(None)] * x.ndim
        index[d] = slice(max(int(s[d]), 0), None)
        out[tuple(index)] = fill
    return x if out is None else out


def _region(sizes: Sizes, shape: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(0, n) for n in defined_counts(array_sizes(sizes), shape))


@SEMANTICS.register(Opcode.REDUCE)
def _reduce(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes, handler: Any) -> Any:
    n = len(operands) // 2
    for k in range(n):
        operands[k] = _mask(operands[k], ins[k], inst.attrs["dimensions"], operands[n + k])
    return handler(ctx, inst, operands)


@SEMANTICS.register(Opcode.REDUCE_WINDOW)
def _reduce_window(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes, handler: Any) -> Any:
    n = len(operands) // 2
    window = window_of(inst.attrs).dimensions
    dims = [d for d, w in enumerate(window) if w.size != 1]
    for k in range(n):
        operands[k] = _mask(operands[k], ins[k], dims, operands[n + k])
    return handler(ctx, inst, operands)


@SEMANTICS.register(Opcode.SELECT_AND_SCATTER)
def _select_and_scatter(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes,
                        handler: Any) -> Any:
    # XLA supports only a `ge` select here, whose identity is the type's smallest value.
    dims = [d for d, w in enumerate(window_of(inst.attrs).dimensions) if w.size != 1]
    x = np.asarray(operands[0])
    lowest = np.finfo(x.dtype).min if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    if np.issubdtype(x.dtype, np.floating):
        lowest = -np.inf
    operands[0] = _mask(x, ins[0], dims, lowest)
    operands[1] = _mask(operands[1], ins[1], range(np.ndim(operands[1])), operands[2])
    return handler(ctx, inst, operands)


@SEMANTICS.register(Opcode.DOT)
def _dot(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes, handler: Any) -> Any:
    operands[0] = _mask(operands[0], ins[0], inst.attrs.get("lhs_contracting_dims", ()), 0)
    operands[1] = _mask(operands[1], ins[1], inst.attrs.get("rhs_contracting_dims", ()), 0)
    return handler(ctx, inst, operands)


@SEMANTICS.register(Opcode.CONVOLUTION)
def _convolution(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes, handler: Any) -> Any:
    # ShouldSkipPadOnOperand: the input's batch and window-1 spatial dimensions, and the
    # kernel's output feature dimension, need no zeros.
    lhs, rhs, _ = conv_labels(inst)
    window = window_of(inst.attrs).dimensions
    spatial = [c for c in lhs if c.isdigit()]
    skip = {lhs.index("b")} | {lhs.index(c) for k, c in enumerate(spatial) if k < len(window) and window[k].size == 1}
    operands[0] = _mask(operands[0], ins[0], [d for d in range(len(lhs)) if d not in skip], 0)
    operands[1] = _mask(operands[1], ins[1], [d for d in range(len(rhs)) if d != rhs.index("o")], 0)
    return handler(ctx, inst, operands)


@SEMANTICS.register(Opcode.PAD)
def _pad(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes, handler: Any) -> Any:
    operands[0] = _mask(operands[0], ins[0], range(np.ndim(operands[0])), operands[1])
    return handler(ctx, inst, operands)


@SEMANTICS.register(Opcode.SCATTER)
def _scatter(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes, handler: Any) -> Any:
    n = (len(operands) - 1) // 2
    indices = np.asarray(operands[n])
    operands[n] = _mask(indices, ins[n], range(indices.ndim), np.iinfo(indices.dtype).max)
    return handler(ctx, inst, operands)


@SEMANTICS.register(Opcode.REVERSE)
def _reverse(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes, handler: Any) -> Any:
    # RewriteReverse: the defined region reversed at the front, zeros after.
    x = np.asarray(operands[0])
    s = array_sizes(ins[0])
    dims = [d for d in inst.attrs["dimensions"] if s is not None and s[d] is not None]
    if not dims:
        return handler(ctx, inst, operands)
    reversed_ = np.asarray(handler(ctx, inst, operands))
    padded = np.zeros(tuple(2 * n if d in dims else n for d, n in enumerate(x.shape)), x.dtype)
    padded[tuple(slice(0, n) for n in x.shape)] = reversed_
    starts = [x.shape[d] - defined_counts(s, x.shape)[d] if d in dims else 0 for d in range(x.ndim)]
    return padded[tuple(slice(b, b + n) for b, n in zip(starts, x.shape, strict=True))].copy()


@SEMANTICS.register(Opcode.CONCATENATE)
def _concatenate(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes, handler: Any) -> Any:
    # RewriteDynamicConcat: the first operand padded with zeros to the result, each next one
    # written in full where the sizes before it end.
    dim = inst.attrs["dimensions"][0]
    sizes = array_sizes(out)
    if sizes is None or sizes[dim] is None:
        return handler(ctx, inst, operands)
    result = np.zeros(bounds_of(inst), np.asarray(operands[0]).dtype)
    offset = 0
    for op, x, s in zip(inst.operands, operands, ins, strict=True):
        x = np.asarray(x)
        index = [slice(None)] * x.ndim
        start = min(offset, result.shape[dim] - x.shape[dim])  # dynamic-update-slice clamps
        index[dim] = slice(start, start + x.shape[dim])
        result[tuple(index)] = x
        arr = array_sizes(s)
        offset += bounds_of(op)[dim] if arr is None or arr[dim] is None else int(arr[dim])
    return result


@SEMANTICS.register(Opcode.SORT)
def _sort(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes, handler: Any) -> Any:
    # RewriteDynamicSort: elements past the size compare after every defined one, so the
    # defined region sorts among itself at the front and the padding stays behind it.
    dim = inst.attrs["dimensions"][0]
    size = next((s[dim] for s in map(array_sizes, ins) if s is not None and s[dim] is not None), None)
    if size is None:
        return handler(ctx, inst, operands)
    arrays = [np.asarray(x) for x in operands]
    size = min(max(int(size), 0), arrays[0].shape[dim])
    front = [slice(None)] * arrays[0].ndim
    front[dim] = slice(0, size)
    sorted_ = handler(ctx, inst, [np.ascontiguousarray(x[tuple(front)]) for x in arrays])
    parts = sorted_ if isinstance(sorted_, tuple) else (sorted_,)
    results = []
    for x, part in zip(arrays, parts, strict=True):
        r = np.array(x, copy=True)
        r[tuple(front)] = part
        results.append(r)
    return tuple(results) if isinstance(sorted_, tuple) else results[0]


def _logical_reshape(x: np.ndarray, sizes: Sizes, shape: tuple[int, ...], out: Sizes) -> np.ndarray:
    """The defined region of ``x`` in row-major order, laid into ``out``'s defined region of
    an array of ``shape``, zeros elsewhere (what DynamicPadder's reshape rewrites compute).
    Where the two regions' element counts disagree (sizes a program passes in at random)
    the shorter one decides how many are moved; XLA defines nothing there."""
    region = x[_region(sizes, x.shape)].reshape(-1)
    target = defined_counts(array_sizes(out), shape)
    flat = np.zeros(math.prod(target), x.dtype)
    n = min(region.size, flat.size)
    flat[:n] = region[:n]
    result = np.zeros(shape, x.dtype)
    result[tuple(slice(0, k) for k in target)] = flat.reshape(target)
    return result


@SEMANTICS.register(Opcode.RESHAPE)
def _reshape(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes, handler: Any) -> Any:
    if array_sizes(ins[0]) is None:
        return handler(ctx, inst, operands)
    return _logical_reshape(np.asarray(operands[0]), ins[0], bounds_of(inst), out)


@SEMANTICS.register(Opcode.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes,
                          handler: Any) -> Any:
    # RewriteDynamicUpdateSlice: a partial update's padding is the base it would cover.
    base, update = np.asarray(operands[0]), np.asarray(operands[1])
    s = array_sizes(ins[1])
    dims = [d for d in range(update.ndim) if s is not None and s[d] is not None and update.shape[d] < base.shape[d]]
    if dims:
        covered = shape_ops.dynamic_slice(base, operands[2:], update.shape)
        keep = np.ones(update.shape, bool)
        for d in dims:
            index = [slice(None)] * update.ndim
            index[d] = slice(max(int(s[d]), 0), None)  # type: ignore[index]
            keep[tuple(index)] = False
        operands[1] = np.where(keep, update, covered)
    return handler(ctx, inst, operands)


def _binary(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes], out: Sizes, handler: Any) -> Any:
    # RewriteDynamicBinaryOp: where the operands' sizes differ and one is 1, that operand's
    # first row is broadcast along the dimension (implicit broadcast).
    a, b = array_sizes(ins[0]), array_sizes(ins[1])
    if a is not None and b is not None:
        for d, (x, y) in enumerate(zip(a, b, strict=True)):
            if x is None or y is None or x == y:
                continue
            for k, (mine, other) in enumerate(((x, y), (y, x))):
                if mine == 1 and mine < other:
                    v = np.asarray(operands[k])
                    operands[k] = np.ascontiguousarray(np.broadcast_to(np.take(v, [0], axis=d), v.shape))
    return handler(ctx, inst, operands)


def _register_binary() -> None:
    for op in Opcode:
        if op.value.family in (Family.BINARY, Family.COMPARE) and op not in SEMANTICS:
            SEMANTICS.add(op, _binary)


# --- the ops about sizes --------------------------------------------------------------------


@evaluates(Opcode.SET_DIMENSION_SIZE)
def _set_dimension_size(ctx: Any, inst: Instruction, operands: Operands) -> Value:
    # The value is the operand (DynamicPadder's ReplaceSetSize); the size is its size rule's.
    return operands[0]


@evaluates(Opcode.GET_DIMENSION_SIZE)
def _get_dimension_size(ctx: Any, inst: Instruction, operands: Operands) -> Value:
    # A dimension its operand declares static reads as its bound, whatever size was set:
    # XLA:CPU as jax compiles HLO (through StableHLO) folds it to that constant.
    dim = inst.attrs["dimensions"][0]
    shape = inst.operands[0].shape
    declared = isinstance(shape, ArrayShape) and shape.is_dynamic_dimension(dim)
    s = array_sizes(sizes_of(ctx, inst.operands[0])) if declared else None
    n = operands[0].shape[dim] if s is None or s[dim] is None else s[dim]
    return np.asarray(n, np.int32)


@evaluates(Opcode.DYNAMIC_RESHAPE)
def _dynamic_reshape(ctx: Any, inst: Instruction, operands: Operands) -> Value:
    # The defined region holds the operand's in row-major order. Unwrapped (a static operand
    # and result, which XLA's parser allows) it is a reshape.
    x = np.asarray(operands[0])
    if not involves_dynamic(inst):
        return x.reshape(bounds_of(inst))
    return _logical_reshape(x, sizes_of(ctx, inst.operands[0]), bounds_of(inst), dynamic_reshape_sizes(inst, [], operands))


def compact(x: np.ndarray, sizes: Sizes) -> np.ndarray:
    """The elements of ``x``'s defined region in row-major order at the front of an array of
    ``x``'s shape, zeros after: how XLA:CPU hands out a dynamic array (Note [Dynamic shapes as
    bounds])."""
    x = np.asarray(x)
    region = x[_region(sizes, x.shape)].reshape(-1)
    out = np.zeros(x.size, x.dtype)
    out[:region.size] = region
    return out.reshape(x.shape)


def _handed_out(inst: Instruction, value: Value, sizes: Sizes) -> Value:
    """An entry output as XLA:CPU hands it out: each dynamic array compacted, except one a
    SliceToDynamic made (compacted already)."""
    if inst.custom_call_target == "SliceToDynamic":
        return value
    if isinstance(sizes, list) and isinstance(value, tuple):
        producers = inst.operands if inst.opcode is Opcode.TUPLE else [inst] * len(value)
        return tuple(v if p is not inst and p.custom_call_target == "SliceToDynamic" else
                     _handed_out(p, v, s) if p is not inst else _handed_out_plain(v, s)
                     for p, v, s in zip(producers, value, sizes, strict=True))
    return _handed_out_plain(value, sizes)


def _handed_out_plain(value: Value, sizes: Sizes) -> Value:
    if isinstance(sizes, list) and isinstance(value, tuple):
        return tuple(_handed_out_plain(v, s) for v, s in zip(value, sizes, strict=True))
    if array_sizes(sizes) is not None and isinstance(value, np.ndarray):
        return compact(value, sizes)
    return value


# --- called computations --------------------------------------------------------------------


def _called(inst: Instruction) -> Computation | None:
    return inst.attrs.get("to_apply") or inst.attrs.get("calls")


def _enter(ctx: Any, inst: Instruction, operands: Operands, ins: list[Sizes]) -> None:
    """Give the parameters of the computations ``inst`` calls its operands' sizes."""
    op = inst.opcode
    if op is Opcode.WHILE:
        body, cond = inst.attrs["body"], inst.attrs["condition"]
        for comp in (body, cond):
            set_sizes(ctx, comp.parameters[0], ins[0])
        ctx.cache[("dynamic-loop", id(body), ctx.device)] = (body.parameters[0], cond.parameters[0])
    elif op in (Opcode.CALL, Opcode.FUSION):
        comp = _called(inst)
        if comp is not None:
            for p, s in zip(comp.parameters, ins, strict=False):
                set_sizes(ctx, p, s)
    elif op is Opcode.CONDITIONAL:
        branch, index = select_branch(inst, operands[0])
        ctx.cache[("dynamic-branch", id(inst), ctx.device)] = branch
        set_sizes(ctx, branch.parameters[0], ins[1 + index])


def _called_sizes(ctx: Any, inst: Instruction) -> Sizes:
    if inst.opcode is Opcode.WHILE:
        return sizes_of(ctx, inst.attrs["body"].parameters[0])  # the last iteration's root's
    comp = ctx.cache.get(("dynamic-branch", id(inst), ctx.device)) if inst.opcode is Opcode.CONDITIONAL \
        else _called(inst)
    return None if comp is None else sizes_of(ctx, comp.root)


_CALLS = {Opcode.WHILE, Opcode.CALL, Opcode.FUSION, Opcode.CONDITIONAL}


def _after(ctx: Any, inst: Instruction, sizes: Sizes, value: Value) -> Value:
    set_sizes(ctx, inst, sizes)
    comp = inst.computation
    if comp is None or comp.root is not inst:
        return value
    loop = ctx.cache.get(("dynamic-loop", id(comp), ctx.device))
    if loop is not None:  # a while body's root: the next iteration's state (HandleWhile)
        for p in loop:
            set_sizes(ctx, p, sizes)
    if comp.is_entry and sizes is not None:
        return _handed_out(inst, value, sizes)
    return value


def with_dynamic_sizes(handler: Callable[..., Any], inst: Instruction) -> Callable[..., Any]:
    """``handler`` for ``inst`` carrying dynamic sizes (Note [Dynamic shapes as bounds]): the
    operands' sizes in, the result's out by ``SIZE_RULES``, the value by ``SEMANTICS``."""
    rule = SIZE_RULES.get(inst.opcode)
    semantics = SEMANTICS.get(inst.opcode)

    if inst.opcode in _CALLS:
        def call_step(ctx: Any, inst: Instruction, operands: Operands) -> Generator[Any, Any, Value]:
            _enter(ctx, inst, operands, [sizes_of(ctx, o) for o in inst.operands])
            value = yield from handler(ctx, inst, operands)
            return _after(ctx, inst, _called_sizes(ctx, inst), value)
        return call_step if is_generator_handler(handler) else handler

    def step(ctx: Any, inst: Instruction, operands: Operands) -> Value:
        ins = [sizes_of(ctx, o) for o in inst.operands]
        sizes = rule(inst, ins, operands) if rule is not None else None
        if semantics is not None and any(s is not None for s in ins):
            value = semantics(ctx, inst, operands, ins, sizes, handler)
        else:
            value = handler(ctx, inst, operands)
        return _after(ctx, inst, sizes, value)

    if is_generator_handler(handler):  # an op that calls or meets devices, sizes passed through
        def generator_step(ctx: Any, inst: Instruction, operands: Operands) -> Generator[Any, Any, Value]:
            ins = [sizes_of(ctx, o) for o in inst.operands]
            sizes = rule(inst, ins, operands) if rule is not None else None
            value = yield from handler(ctx, inst, operands)
            return _after(ctx, inst, sizes, value)
        return generator_step
    return step


_register_binary()
