"""Which bf16 values XLA:CPU hands on unrounded, in f32 (Note [Excess precision]).

Note [Excess precision]
    XLA:CPU has no bf16 arithmetic: FloatNormalization computes every bf16 arithmetic op in
    f32 and rounds its result back to bf16 for its users. With xla_allow_excess_precision
    (on by default) a user that is itself a convert from bf16 to f32 is given the f32 value
    directly, unrounded (float_normalization.cc, ChangeOutputTypeThenInsertConvertBack). Such
    converts are written in the module (``x.astype(f32)`` after bf16 math) or inserted by
    OperandUpcaster before normalization runs: a dot or convolution of bf16 operands with an
    f32 result reads its operands through converts to f32, so a bf16 multiply feeding it is
    not rounded (XLA's int4 / channel-scale gemm tests: 0.94 off on values of 30 when rounded).
    Only the op right before the convert is affected: in add(multiply(a, b), a) -> convert,
    the multiply is rounded (its user is the add) and the add is not. Data movement (reshape,
    transpose, copy, select, ...) is bf16 on XLA:CPU and breaks the pattern.

    AllReducePromotion (before normalization) turns a bf16 all-reduce into convert to f32,
    an f32 all-reduce and a convert back, so its operand is read unrounded as well and only
    the sum is rounded (XLA's collective_pipeliner tests: products all-reduced over 32
    devices).

    A bf16 dot or convolution is normalized the same way (computed with an f32 result), so
    convert(dot) to f32 gets the unrounded product (XLA's oneDNN matmul tests).

    The plan (evaluator.build_plan) gives such a producer a second result slot holding its
    f32 value, computed by its own handler on operands widened to f32, and points the reading
    convert / dot / convolution operand at that slot; every other user reads the rounded
    value as before. It follows XLA:CPU's floating-point environments only ("xla-cpu*"):
    a GPU kernel computes what the optimized module says.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Generator
from typing import Any

import ml_dtypes
import numpy as np

from hloscope.interpret import float_env
from hloscope.ir import ArrayShape, Instruction, Opcode
from hloscope.ir.opcode import Family

__all__ = ["reads_unrounded", "with_unrounded_result", "enabled", "register_wide", "wide_handler",
           "rounds_its_result", "with_declared_result"]

Handler = Callable[..., Any]
# Opcodes whose handler takes its result type from the instruction (dot, convolution): their
# f32 value needs a handler of its own, registered by handlers.py.
_WIDE: dict[Opcode, Handler] = {}

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)
# Elementwise rows that are data movement or exact on XLA:CPU, not normalized arithmetic.
_NOT_ARITHMETIC = frozenset({Opcode.CONVERT, Opcode.BITCAST_CONVERT, Opcode.COPY, Opcode.SELECT,
                             Opcode.REDUCE_PRECISION})
_UPCASTING_USERS = frozenset({Opcode.DOT, Opcode.CONVOLUTION})


def enabled() -> bool:
    """Whether the run's floating-point environment is XLA:CPU's."""
    return float_env.current().name.startswith("xla-cpu")


def _element_dtype(inst: Instruction) -> np.dtype[Any] | None:
    shape = inst.shape
    if not isinstance(shape, ArrayShape) or shape.primitive_type.kind in ("token", "opaque"):
        return None  # tokens and opaque values have no numpy dtype
    return np.dtype(shape.dtype)


def register_wide(opcode: Opcode) -> Callable[[Handler], Handler]:
    """Register ``fn(ctx, inst, operands)`` computing ``inst``'s value in f32 instead of its
    declared bf16 (for handlers that round to the declared type themselves)."""

    def register(fn: Handler) -> Handler:
        _WIDE[opcode] = fn
        return fn

    return register


def wide_handler(opcode: Opcode) -> Handler | None:
    """The registered f32 handler of ``opcode`` (dot, convolution), or None."""
    return _WIDE.get(opcode)


def _normalized_arithmetic(inst: Instruction) -> bool:
    if _element_dtype(inst) != _BF16:
        return False
    if inst.opcode in _WIDE:  # a bf16 dot or convolution: XLA:CPU computes it in f32 too
        return True
    return inst.opcode.family in (Family.UNARY, Family.BINARY, Family.TERNARY) and inst.opcode not in _NOT_ARITHMETIC


def reads_unrounded(user: Instruction, index: int) -> bool:
    """True when XLA:CPU gives operand ``index`` of ``user`` its producer's f32 value."""
    if not _normalized_arithmetic(user.operands[index]):
        return False
    if user.opcode is Opcode.CONVERT:
        return _element_dtype(user) == _F32
    if user.opcode is Opcode.ALL_REDUCE:  # promoted: convert to f32, all-reduce, convert back
        return _element_dtype(user) == _BF16 and len(user.operands) == 1
    if user.opcode is Opcode.DOT and not _canonical_dot(user):
        return False  # read through DotDecomposer's transpose / reshape: bf16 data movement
    return user.opcode in _UPCASTING_USERS and _element_dtype(user) == _F32


def _canonical_dot(dot: Instruction) -> bool:
    """XLA's DotDecomposer ``IsCanonical`` on both operands: one contracting dimension, at most
    one non-contracting one, batch dimensions leading and in order. Any other dot gets its
    operands transposed and reshaped before FloatNormalization, so they are bf16 values
    moved, rounded (XLA's channel-dequantization gemm test with batch dimensions {1,0}: 0.95
    off on values of 500 when read unrounded)."""
    a = dot.attrs
    for operand, contracting, batch in ((dot.operands[0], a.get("lhs_contracting_dims", ()), a.get("lhs_batch_dims", ())),
                                        (dot.operands[1], a.get("rhs_contracting_dims", ()), a.get("rhs_batch_dims", ()))):
        rank = len(operand.shape.dimensions) if isinstance(operand.shape, ArrayShape) else 0
        if len(contracting) != 1 or len(batch) + 2 < rank or tuple(batch) != tuple(range(len(batch))):
            return False
    return True


def rounds_its_result(user: Instruction) -> bool:
    """True for a user that reads unrounded operands but declares a bf16 result: XLA's
    AllReducePromotion sums a bf16 all-reduce in f32 and converts the sum back."""
    return user.opcode is Opcode.ALL_REDUCE


def with_declared_result(handler: Handler) -> Handler:
    """``handler`` with its result converted to the instruction's declared element type."""
    if inspect.isgeneratorfunction(handler):
        def run_gen(ctx: Any, inst: Instruction, operands: list[Any]) -> Generator[Any, Any, Any]:
            value = yield from handler(ctx, inst, operands)
            return np.asarray(value).astype(_element_dtype(inst), copy=False)
        return run_gen

    def run(ctx: Any, inst: Instruction, operands: list[Any]) -> Any:
        return np.asarray(handler(ctx, inst, operands)).astype(_element_dtype(inst), copy=False)
    return run


def with_unrounded_result(handler: Handler, wide: Handler | None = None) -> Handler:
    """``handler`` returning ``(f32 value, bf16 value)``: first ``wide`` (default: ``handler``
    on operands widened to f32), then ``handler`` on the operands themselves (which it may
    then update in place, Note [Donation])."""

    if inspect.isgeneratorfunction(handler):  # not an arithmetic kernel: both slots rounded
        def run_gen(ctx: Any, inst: Instruction, operands: list[Any]) -> Generator[Any, Any, Any]:
            value = yield from handler(ctx, inst, operands)
            return value, value
        return run_gen

    def run(ctx: Any, inst: Instruction, operands: list[Any]) -> tuple[Any, Any]:
        if wide is not None:
            value = wide(ctx, inst, operands)
        else:
            value = handler(ctx, inst, [o.astype(np.float32) if o.dtype == _BF16 else o for o in operands])
        return value, handler(ctx, inst, operands)

    run.__name__ = f"unrounded_{getattr(handler, '__name__', 'handler')}"
    return run
