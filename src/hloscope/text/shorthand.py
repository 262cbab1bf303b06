"""XLA's shorthand in HLO text, which its parser accepts and its printer never writes: shapes
left out where XLA infers them, and async ops spelled after the op they wrap (``call-start``).
The parser (``parser.py``) reads the syntax; this module holds what the syntax means.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from hloscope.ir.instruction import Instruction
from hloscope.ir.layout import Layout
from hloscope.ir.opcode import OPCODES_BY_TEXT, Family, Opcode
from hloscope.ir.shape import ArrayShape

__all__ = ["ASYNC_FOLLOWERS", "ASYNC_SUFFIXES", "NOT_ASYNC_WRAPPABLE", "SHAPE_INFERABLE",
           "async_operand_problem", "infer_missing_shapes"]

# Note [Inferred shapes]: XLA's parser lets the shape of these opcodes be left out
# (``t = tuple(a, b)``) and infers it from the operands (``CanInferShape`` in hlo_parser.cc);
# hloscope infers it with ``ir.shape_inference`` once the whole module is read. Elementwise
# results take the layout of the operand they mirror, as XLA's ShapeInference does; other
# inferred shapes have no layout (XLA gives them the default one).
SHAPE_INFERABLE = frozenset(OPCODES_BY_TEXT[t] for t in (
    "abs", "acos", "acosh", "asin", "asinh", "add", "add-dependency", "after-all", "atan2", "atanh",
    "batch-norm-grad", "batch-norm-inference", "batch-norm-training", "broadcast", "call", "ceil",
    "cholesky", "clamp", "count-leading-zeros", "compare", "complex", "concatenate", "conditional",
    "convolution", "copy", "cosine", "cosh", "opt-barrier", "divide", "domain", "dot", "erf",
    "exponential", "exponential-minus-one", "fft", "floor", "gather", "get-dimension-size",
    "set-dimension-size", "get-tuple-element", "imag", "is-finite", "log", "log-plus-one", "logistic",
    "and", "not", "or", "xor", "map", "maximum", "minimum", "multiply", "mulhi", "negate", "pad",
    "partition-id", "popcnt", "power", "ragged-dot", "real", "reduce", "remainder", "replica-id",
    "reverse", "round-nearest-afz", "round-nearest-even", "rsqrt", "scan", "scaled-dot", "scatter",
    "select", "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sinh",
    "sqrt", "cbrt", "reduce-window", "select-and-scatter", "sort", "subtract", "tan", "tanh",
    "transpose", "triangular-solve", "tuple", "while", "topk",
))
_ELEMENTWISE = (Family.UNARY, Family.BINARY, Family.TERNARY, Family.COMPARE)

# Note [Async sugar]: ``call-start(a), to_apply=f`` / ``call-update`` / ``call-done`` stand for
# async-start/-update/-done wrapping one instruction of the named opcode; XLA prints them back
# the same way. hloscope keeps the async opcode and the wrapped one (attrs
# ``async_wrapped_opcode``). Opcodes with start/done opcodes of their own are not wrapped.
ASYNC_SUFFIXES = {"start": Opcode.ASYNC_START, "update": Opcode.ASYNC_UPDATE, "done": Opcode.ASYNC_DONE}
NOT_ASYNC_WRAPPABLE = frozenset((Opcode.ALL_GATHER, Opcode.ALL_REDUCE, Opcode.COLLECTIVE_PERMUTE,
                                  Opcode.COPY, Opcode.RECV, Opcode.SEND))


def infer_missing_shapes(pending: list[tuple[Instruction, int]], error: Callable[[str, int], NoReturn]) -> None:
    """Give every instruction written without a shape the one XLA infers (Note [Inferred
    shapes]); an operand or callee root still without one is done first. ``error(message,
    token index)`` reports what cannot be inferred."""
    from hloscope.ir.shape_inference import ShapeInferenceError, infer_shape

    while pending:
        left = []
        for inst, at in pending:
            deps = [*inst.operands, *(c.root for c in inst.called_computations)]
            if any(d.shape is None for d in deps):
                left.append((inst, at))
                continue
            first = next((leaf for op in inst.operands for _, leaf in op.shape.leaves()), None)
            # Rules take a declared element type (dot, convolution) from the placeholder:
            # the operands' type, as XLA chooses without a preferred element type.
            inst.shape = ArrayShape(first.element_type if first is not None else "f32")
            try:
                shape = infer_shape(inst)
            except (ShapeInferenceError, ValueError, TypeError, KeyError, AttributeError, IndexError) as e:
                error(f"cannot infer the shape of this {inst.opcode.text}: {e}", at)
            if shape is None:
                error(f"hloscope cannot infer the shape of {inst.opcode.text}; write it", at)
            if inst.opcode is Opcode.TRANSPOSE and isinstance(shape, ArrayShape):
                shape = _transposed_layout(inst, shape)
            elif isinstance(shape, ArrayShape) and shape.layout is None and inst.opcode.family in _ELEMENTWISE:
                like = next((op.shape for op in inst.operands if isinstance(op.shape, ArrayShape)
                             and op.shape.dimensions == shape.dimensions and op.shape.layout is not None), None)
                if like is not None:
                    shape = shape.with_layout(like.layout)
            inst.shape = shape
        if len(left) == len(pending):
            error("cannot infer this shape: it depends on itself", left[0][1])
        pending = left


ASYNC_FOLLOWERS = frozenset((Opcode.ASYNC_UPDATE, Opcode.ASYNC_DONE))


def async_operand_problem(inst: Instruction) -> str:
    """What XLA's parser finds wrong with an async-update/-done's operand ('' if nothing): one
    operand, an async-start or -update of the same wrapped opcode, and an update's shape is
    its operand's."""
    ops = inst.operands
    if len(ops) != 1 or ops[0].opcode not in (Opcode.ASYNC_START, Opcode.ASYNC_UPDATE):
        return f"{inst.opcode.text} takes one operand, an async-start or async-update"
    wrapped = inst.attrs.get("async_wrapped_opcode")
    theirs = ops[0].attrs.get("async_wrapped_opcode")
    if wrapped is not None and theirs is not None and wrapped is not theirs:
        return f"expected the async op to wrap {theirs.text}, as its operand does; found {wrapped.text}"
    if inst.opcode is Opcode.ASYNC_UPDATE and inst.shape is not None and ops[0].shape is not None \
            and inst.shape.to_text(layout=False) != ops[0].shape.to_text(layout=False):
        return "an async-update has the shape of its operand"
    return ""


def _transposed_layout(inst: Instruction, shape: ArrayShape) -> ArrayShape:
    """XLA's inferred transpose keeps the operand's physical order (the transpose is a bitcast):
    dimension d of the operand is dimension inverse[d] of the result."""
    operand = inst.operands[0].shape
    perm = inst.attrs.get("dimensions")
    if not isinstance(operand, ArrayShape) or not isinstance(perm, tuple) or len(perm) != operand.rank:
        return shape
    m2m = operand.layout.minor_to_major if operand.layout is not None else tuple(range(operand.rank - 1, -1, -1))
    if len(m2m) != operand.rank:
        return shape
    inverse = [0] * len(perm)
    for i, d in enumerate(perm):
        inverse[d] = i
    return shape.with_layout(Layout(tuple(inverse[d] for d in m2m)))
