"""Where buffer shapes may appear: XLA's ``VerifyBuffers`` (hlo_verifier.cc), a module pass.

A buffer shape ``b(f32[4])`` (Note [Buffer shapes] in ``shapes/rules.py``) is a mutable buffer made
by the ``Pin`` or ``CreateBuffer`` custom calls, updated in place by custom calls (each buffer
operand aliased to exactly one result through ``output_to_operand_aliasing``) and by
``dynamic-update-slice``, passed through tuples, while loops and calls, and turned back into an
array by ``Unpin``. Every buffer value may have at most one writer. Anywhere else a buffer is
an error, and the entry computation takes no buffer parameters.

``buffer_problems(module)`` yields ``(instruction, message)`` for each violation; the verifier
turns them into diagnostics.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import ArrayShape, Shape, TupleShape

if TYPE_CHECKING:
    from hloscope.ir.computation import Computation
    from hloscope.ir.instruction import Instruction
    from hloscope.ir.module import Module

__all__ = ["buffer_problems", "output_to_operand_aliasing"]

Index = tuple[int, ...]

# One `{output index}: (operand number, {operand index})` pair of output_to_operand_aliasing.
_ALIAS_PAIR = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}")


def output_to_operand_aliasing(inst: Instruction) -> list[tuple[Index, int, Index]]:
    """``output_to_operand_aliasing`` as (output index, operand number, operand index) triples."""
    raw = inst.attrs.get("output_to_operand_aliasing")
    if raw is None:
        return []

    def index(text: str) -> Index:
        return tuple(int(x) for x in text.replace(" ", "").split(",") if x)

    return [(index(o), int(n), index(i)) for o, n, i in _ALIAS_PAIR.findall(str(raw))]


def _buffer_indices(shape: Shape, prefix: Index = ()) -> Iterator[Index]:
    if isinstance(shape, TupleShape):
        for k, e in enumerate(shape.elements):
            yield from _buffer_indices(e, (*prefix, k))
    elif isinstance(shape, ArrayShape) and shape.buffer:
        yield prefix


def _has_buffer(shape: Shape) -> bool:
    return next(_buffer_indices(shape), None) is not None


# Users that are assumed to write a buffer operand (XLA's CountWritersInUser: without
# interprocedural analysis, a buffer passed into a callee, a loop or an update is written).
_WRITING_USERS = frozenset({Opcode.CALL, Opcode.FUSION, Opcode.CUSTOM_CALL, Opcode.WHILE,
                            Opcode.CONDITIONAL, Opcode.DYNAMIC_UPDATE_SLICE})


class _Writers:
    """XLA's ``CountWriters`` over a module's users and while bodies."""

    def __init__(self, module: Module) -> None:
        self.users: dict[int, list[Instruction]] = {}
        self.while_bodies: set[int] = set()
        for comp in module.computations:
            for inst in comp.instructions:
                for op in inst.operands:
                    users = self.users.setdefault(id(op), [])
                    if not users or users[-1] is not inst:
                        users.append(inst)
                if inst.opcode is Opcode.WHILE and inst.attrs.get("body") is not None:
                    self.while_bodies.add(id(inst.attrs["body"]))

    def count(self, inst: Instruction, index: Index, depth: int = 0) -> int:
        if depth > 64:  # deeper tuple nesting than any module has: stop, do not loop
            return 0
        n = 0
        for user in self.users.get(id(inst), ()):
            if user.opcode in _WRITING_USERS:
                n += 1
            elif user.opcode is Opcode.GET_TUPLE_ELEMENT and index and user.attrs.get("index") == index[0]:
                n += self.count(user, index[1:], depth + 1)
            elif user.opcode is Opcode.TUPLE:
                comp = user.computation
                if comp is not None and comp.root is user:
                    n += id(comp) in self.while_bodies  # returned to the loop: written there
                else:
                    n += self.count(user, (user.operands.index(inst), *index), depth + 1)
        return n


def buffer_problems(module: Module) -> Iterator[tuple[Instruction, str]]:
    """Every place ``module`` uses buffers where XLA's ``VerifyBuffers`` forbids them."""
    writers = _Writers(module)
    async_computations = {id(c) for i in module.instructions() if i.opcode is Opcode.ASYNC_START
                          for c in i.called_computations}
    for comp in module.computations:
        if id(comp) in async_computations:
            # Only the root custom call of an async computation is checked; its other
            # instructions are those of the async op and checked through it.
            if comp.root.opcode is Opcode.CUSTOM_CALL:
                yield from _custom_call(comp.root, writers)
            continue
        yield from _computation(comp, writers, module)


def _computation(comp: Computation, writers: _Writers, module: Module) -> Iterator[tuple[Instruction, str]]:
    for inst in comp.instructions:
        op = inst.opcode
        if op in (Opcode.ASYNC_START, Opcode.ASYNC_UPDATE, Opcode.ASYNC_DONE, Opcode.GET_TUPLE_ELEMENT,
                  Opcode.TUPLE) or (op is Opcode.CALL and _stream_annotated(inst)):
            continue  # async ops are checked through their computation; tuples route buffers
        if op is Opcode.CUSTOM_CALL:
            yield from _custom_call(inst, writers)
        elif op is Opcode.WHILE:
            yield from _unique_writers(inst, writers)
        elif op is Opcode.PARAMETER:
            if comp is module.entry:
                yield from _no_buffers(inst, "the entry computation's parameters")
            yield from _unique_writers(inst, writers)
        elif op is Opcode.DYNAMIC_UPDATE_SLICE and inst.operands and _has_buffer(inst.operands[0].shape):
            yield from _unique_writers(inst, writers)
            for k, o in enumerate(inst.operands[1:], 1):
                if _has_buffer(o.shape):
                    yield inst, f"operand {k} of dynamic-update-slice must not be a buffer; only operand 0 may be"
            if not (isinstance(inst.shape, ArrayShape) and inst.shape.buffer):
                yield inst, "dynamic-update-slice of a buffer (operand 0) must give a buffer"
        else:
            yield from _no_buffers(inst, op.text)


def _stream_annotated(inst: Instruction) -> bool:
    fa = inst.frontend_attributes
    return fa is not None and "_xla_stream_annotation" in fa.map


def _no_buffers(inst: Instruction, where: str) -> Iterator[tuple[Instruction, str]]:
    if _has_buffer(inst.shape) or any(_has_buffer(o.shape) for o in inst.operands):
        yield inst, (f"buffers are not allowed in {where}: buffers pass only through custom calls, "
                     "dynamic-update-slice, tuples, while loops and non-entry parameters")


def _unique_writers(inst: Instruction, writers: _Writers) -> Iterator[tuple[Instruction, str]]:
    for index in _buffer_indices(inst.shape):
        if writers.count(inst, index) > 1:
            yield inst, f"buffer {inst.name} {{{','.join(map(str, index))}}} has more than one writer"


_PIN, _UNPIN, _CREATE = "Pin", "Unpin", "CreateBuffer"


def _custom_call(inst: Instruction, writers: _Writers) -> Iterator[tuple[Instruction, str]]:
    """XLA's VerifyCustomCall: Pin/Unpin/CreateBuffer have fixed forms; any other custom call
    aliases each buffer operand to exactly one buffer result and back."""
    target = inst.custom_call_target
    aliasing = output_to_operand_aliasing(inst)
    shape, ops = inst.shape, [o.shape for o in inst.operands]
    if target == _PIN:
        if len(ops) != 1 or not isinstance(ops[0], ArrayShape) or ops[0].buffer:
            yield inst, "custom-call to Pin must have one array operand that is not a buffer"
        elif not (isinstance(shape, ArrayShape) and shape.buffer):
            yield inst, "custom-call to Pin must give a buffer"
        elif (shape.element_type, shape.dimensions) != (ops[0].element_type, ops[0].dimensions):
            yield inst, "custom-call to Pin must give a buffer of its operand's shape"
        elif len(aliasing) != 1:
            yield inst, "custom-call to Pin must have one output_to_operand_aliasing pair"
        else:
            yield from _unique_writers(inst, writers)
        return
    if target == _CREATE:
        if ops:
            yield inst, "custom-call to CreateBuffer takes no operands"
        elif not (isinstance(shape, ArrayShape) and shape.buffer):
            yield inst, "custom-call to CreateBuffer must give a buffer"
        else:
            yield from _unique_writers(inst, writers)
        return
    if target == _UNPIN:
        if len(ops) != 1 or not (isinstance(ops[0], ArrayShape) and ops[0].buffer):
            yield inst, "custom-call to Unpin must have one buffer operand"
        elif not isinstance(shape, ArrayShape) or shape.buffer:
            yield inst, "custom-call to Unpin must give an array that is not a buffer"
        elif (shape.element_type, shape.dimensions) != (ops[0].element_type, ops[0].dimensions):
            yield inst, "custom-call to Unpin must give an array of its operand's shape"
        elif len(aliasing) != 1:
            yield inst, "custom-call to Unpin must have one output_to_operand_aliasing pair"
        return
    operand_uses: dict[tuple[int, Index], int] = {}
    output_uses: dict[Index, int] = {}
    for out, n, index in aliasing:
        operand_uses[(n, index)] = operand_uses.get((n, index), 0) + 1
        output_uses[out] = output_uses.get(out, 0) + 1
    for n, o in enumerate(ops):
        for index in _buffer_indices(o):
            uses = operand_uses.get((n, index), 0)
            if uses != 1:
                yield inst, (f"buffer operand {n} {{{','.join(map(str, index))}}} must be aliased to "
                             f"exactly one result by output_to_operand_aliasing, is to {uses}")
                return
    for index in _buffer_indices(shape):
        uses = output_uses.get(index, 0)
        if uses != 1:
            yield inst, (f"buffer result {{{','.join(map(str, index))}}} must be aliased to exactly one "
                         f"operand by output_to_operand_aliasing, is to {uses}")
            return
        if writers.count(inst, index) > 1:
            yield inst, f"buffer {inst.name} {{{','.join(map(str, index))}}} has more than one writer"
            return
