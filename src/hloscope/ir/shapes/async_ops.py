"""Shape rules of async ops: async-start/-update/-done in both of XLA's spellings, and
copy-start/-done.

Note [Async shapes]
    An async-start's shape is ``((operands...), result, context...)``: the wrapped
    computation's parameters and root, then context the backend defines (XLA checks nothing
    there, so the rule takes it as declared). An async-update keeps its operand's shape and an
    async-done gives the wrapped computation's root (XLA's ``ShapeVerifier::CheckAsyncOp``).

    The wrapped computation is ``calls=`` in the canonical spelling. In the sugar
    (``call-start(p), to_apply=f``; Note [Async sugar] in ``hloscope/text/shorthand.py``) it is
    implicit: one instruction of the wrapped opcode over the start's operands, carrying the
    start's other attributes, whose shape XLA's parser takes from element 1 of the start's
    declared shape. ``async_wrapped_instruction`` builds that instruction, so it is checked by
    its own opcode's rule and the verifier's checks of its callees, as XLA checks the one
    instruction of the computation it builds.

    Late binding (newer XLA): element 0 and 1 of a start or an update may be prefixes
    (``is_prefix``) of the parameters and the root, an update may bind more operands, and the
    done needs every operand bound. The rules take a declared prefix as it is (Note [Declared
    parts] in ``shapes/rules.py``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from hloscope.ir.instruction import Instruction
from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import Shape, TupleShape
from hloscope.ir.shapes.rules import (
    NOT_INFERABLE,
    SHAPE_CHECKS,
    SHAPE_RULES,
    ShapeInferenceError,
    compatible,
    is_prefix,
    shape_rule,
    shape_text,
    tuple_element,
    with_context,
)

if TYPE_CHECKING:
    from hloscope.ir.computation import Computation

__all__ = ["async_start_of", "async_wrapped_computation", "async_wrapped_instruction"]

# Attributes of the async op itself; the sugar's wrapped instruction has all the others.
_ASYNC_ATTRS = frozenset(("async_wrapped_opcode", "async_execution_thread", "async_group_id",
                          "control-predecessors"))


def async_wrapped_instruction(inst: Instruction) -> Instruction | None:
    """The instruction a sugared async-start (``call-start``) wraps, as XLA's parser builds it
    (Note [Async shapes]); None for any other instruction. It is not part of the module."""
    wrapped = inst.attrs.get("async_wrapped_opcode")
    if inst.opcode is not Opcode.ASYNC_START or wrapped is None:
        return None
    declared = inst.shape
    shape = declared.elements[1] if isinstance(declared, TupleShape) and len(declared.elements) > 1 else declared
    attrs = {k: v for k, v in inst.attrs.items() if k not in _ASYNC_ATTRS}
    surrogate = Instruction(inst.name, wrapped, shape, list(inst.operands), attrs, span=inst.span)
    surrogate.computation = inst.computation
    return surrogate


def async_start_of(inst: Instruction) -> Instruction:
    """The async-start an async-update or async-done continues (through earlier updates)."""
    op, seen = inst, set()
    while op.opcode is not Opcode.ASYNC_START:
        if not op.operands or id(op) in seen:  # a cycle is the verifier's to report
            raise ShapeInferenceError(f"{inst.opcode.text} must continue an async-start")
        seen.add(id(op))
        op = op.operands[0]
        if op.opcode not in (Opcode.ASYNC_START, Opcode.ASYNC_UPDATE):
            raise ShapeInferenceError(
                f"{inst.opcode.text}'s operand must be an async-start or async-update, is {op.opcode.text}")
    return op


def async_wrapped_computation(inst: Instruction) -> Computation | None:
    """The ``calls=`` computation of an async op's chain (None for the sugar)."""
    start = inst if inst.opcode is Opcode.ASYNC_START else async_start_of(inst)
    if "async_wrapped_opcode" in start.attrs:
        return None  # a sugared `fusion-start`'s calls= is the fusion's, not the async op's
    comp = start.attrs.get("calls")
    if isinstance(comp, list):
        comp = comp[0] if comp else None
    if isinstance(comp, str):
        raise ShapeInferenceError(f"calls={comp} does not name a computation of this module")
    if comp is None:
        raise ShapeInferenceError("async-start needs attribute calls")
    return comp


# Wrapped opcodes whose computation takes its signature from a callee attribute.
_SUGAR_CALLEE = {Opcode.CALL: "to_apply", Opcode.FUSION: "calls"}


def _signature(start: Instruction) -> tuple[TupleShape, Shape]:
    """The wrapped computation's (parameters tuple, root shape)."""
    comp = async_wrapped_computation(start)
    if comp is not None:
        return TupleShape(tuple(p.shape for p in comp.parameters)), comp.root.shape
    surrogate = async_wrapped_instruction(start)
    assert surrogate is not None
    callee = _SUGAR_CALLEE.get(surrogate.opcode)
    if callee is not None:
        # XLA's parser gives the computation of `call-start`/`fusion-start` the callee's
        # parameters and root (UpdateAsyncWrappedComputation).
        comp = surrogate.attrs.get(callee)
        if comp is None or isinstance(comp, str):
            raise ShapeInferenceError(f"{surrogate.opcode.text}-start needs attribute {callee}")
        return TupleShape(tuple(p.shape for p in comp.parameters)), comp.root.shape
    params = TupleShape(tuple(o.shape for o in start.operands))
    arity = surrogate.opcode.arity
    if arity is not None and len(start.operands) < arity:
        return params, surrogate.shape  # operands bound later (late binding): as declared
    rule = SHAPE_RULES.get(surrogate.opcode)
    if rule is not None:
        return params, rule(surrogate)
    if surrogate.opcode not in NOT_INFERABLE:  # the opcode table and the registry disagree
        raise ShapeInferenceError(f"no shape rule for {surrogate.opcode.text}")
    check = SHAPE_CHECKS.get(surrogate.opcode)
    if check is not None:
        check(surrogate)
    return params, surrogate.shape  # as declared, like the wrapped op itself


def _async_tuple(inst: Instruction) -> TupleShape:
    """The declared ``((operands...), result, context...)``; XLA's parser rejects other forms."""
    s = inst.shape
    if not (isinstance(s, TupleShape) and len(s.elements) >= 2 and isinstance(s.elements[0], TupleShape)):
        raise ShapeInferenceError(
            f"{inst.opcode.text} must have a shape ((operands...), result, context...), declared {shape_text(s)}")
    return s


@shape_rule(Opcode.ASYNC_START)
def _async_start(inst: Instruction) -> Shape:
    """((operands...), the wrapped computation's root, declared context...)."""
    declared = _async_tuple(inst)
    operands = TupleShape(tuple(o.shape for o in inst.operands))
    params, root = _signature(inst)
    if not is_prefix(operands, params):
        raise ShapeInferenceError(
            f"operands {shape_text(operands)} do not match the parameters {shape_text(params)} of the "
            "wrapped computation")
    result = declared.elements[1] if is_prefix(declared.elements[1], root) else root
    return TupleShape((operands, result, *declared.elements[2:]))


@shape_rule(Opcode.ASYNC_UPDATE)
def _async_update(inst: Instruction) -> Shape:
    """Operand 0's shape, with any further operands bound after its operands (late binding)
    and the declared result prefix and context (Note [Async shapes])."""
    before = _async_tuple(inst.operands[0])
    declared = _async_tuple(inst)
    assert isinstance(before.elements[0], TupleShape)
    operands = TupleShape((*before.elements[0].elements, *(o.shape for o in inst.operands[1:])))
    params, root = _signature(async_start_of(inst))
    if not is_prefix(operands, params):
        raise ShapeInferenceError(
            f"operands {shape_text(operands)} do not match the parameters {shape_text(params)} of the "
            "wrapped computation")
    result = before.elements[1]
    if is_prefix(result, declared.elements[1]) and is_prefix(declared.elements[1], root):
        result = declared.elements[1]
    return TupleShape((operands, result, *declared.elements[2:]))


@shape_rule(Opcode.ASYNC_DONE)
def _async_done(inst: Instruction) -> Shape:
    """The wrapped computation's root, once every operand is bound."""
    start = async_start_of(inst)
    params, root = _signature(start)
    bound = _async_tuple(inst.operands[0]).elements[0]
    if not compatible(params, bound):
        raise ShapeInferenceError(
            f"async-done needs every operand of the wrapped computation bound: {shape_text(bound)} of "
            f"{shape_text(params)}")
    wrapped = async_wrapped_instruction(start)
    if wrapped is not None and wrapped.opcode not in _SUGAR_CALLEE:
        # XLA's parser builds the sugar's computation with the start's declared result, which
        # the start's own rule checks; the done must agree with that declaration.
        return _async_tuple(start).elements[1]
    return root


@shape_rule(Opcode.COPY_START)
def _copy_start(inst: Instruction) -> Shape:
    """(destination, source, context)."""
    s = inst.operands[0].shape
    return with_context(inst, [s, s])


@shape_rule(Opcode.COPY_DONE)
def _copy_done(inst: Instruction) -> Shape:
    """The destination, element 0 of copy-start's tuple."""
    return tuple_element(inst, 0)
