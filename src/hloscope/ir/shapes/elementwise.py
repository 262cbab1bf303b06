"""Shape rules of elementwise ops: unary, binary, compare, select, clamp and converts.

Each opcode's allowed element types are a row of ``ELEMENT_KINDS`` (XLA's InferUnaryOpShape
and InferBinaryOpShape checks); the result keeps the operands' dimensions.
"""
from __future__ import annotations

from collections.abc import Callable

from hloscope.ir.dtypes import PRIMITIVE_TYPES
from hloscope.ir.instruction import Instruction
from hloscope.ir.opcode import Family, Opcode
from hloscope.ir.shape import Shape
from hloscope.ir.shapes.rules import (
    COMPLEX_OF,
    REAL_OF,
    ShapeInferenceError,
    array_shape,
    attribute,
    declared_array,
    dims_in_range,
    merge_equal,
    operand_shape,
    shape_rule,
    shape_text,
)

__all__ = ["ELEMENT_KINDS"]


# Unary ops whose result element type differs from the operand's (XLA InferUnaryOpShape).
_UNARY_RESULT_TYPE: dict[Opcode, Callable[[str], str]] = {
    Opcode.ABS: lambda t: REAL_OF.get(t, t),
    Opcode.REAL: lambda t: REAL_OF.get(t, t),
    Opcode.IMAG: lambda t: REAL_OF.get(t, t),
    Opcode.IS_FINITE: lambda t: "pred",
}


# Element types each elementwise opcode accepts, as XLA's InferUnaryOpShape and
# InferBinaryOpShape check them: (kinds of hloscope.ir.dtypes, what a message calls them).
# XLA's "signed" (ElementIsSigned) covers signed integers and floating point alike.
_FLOAT, _COMPLEX = frozenset({"float"}), frozenset({"complex"})
_INTEGRAL = frozenset({"signed", "unsigned"})
_FLOAT_OR_COMPLEX = _FLOAT | _COMPLEX
_ARITHMETIC = _INTEGRAL | _FLOAT_OR_COMPLEX  # everything but pred
ELEMENT_KINDS: dict[Opcode, tuple[frozenset[str], str]] = {
    **{op: (_FLOAT, "floating-point") for op in (
        Opcode.FLOOR, Opcode.CEIL, Opcode.CBRT, Opcode.ERF, Opcode.ROUND_NEAREST_AFZ,
        Opcode.ROUND_NEAREST_EVEN, Opcode.IS_FINITE, Opcode.REDUCE_PRECISION)},
    **{op: (_FLOAT_OR_COMPLEX, "floating-point or complex") for op in (
        Opcode.ACOS, Opcode.ACOSH, Opcode.ASIN, Opcode.ASINH, Opcode.ATAN, Opcode.ATANH,
        Opcode.COSH, Opcode.COS, Opcode.SINH, Opcode.SIN, Opcode.EXP, Opcode.EXPM1, Opcode.LOG,
        Opcode.LOG1P, Opcode.LOGISTIC, Opcode.RSQRT, Opcode.SQRT, Opcode.TAN, Opcode.TANH,
        Opcode.REAL, Opcode.IMAG, Opcode.ATAN2)},
    Opcode.ABS: (frozenset({"signed"}) | _FLOAT_OR_COMPLEX, "signed, floating-point or complex"),
    Opcode.SIGN: (frozenset({"signed"}) | _FLOAT_OR_COMPLEX, "signed, floating-point or complex"),
    Opcode.CLZ: (_INTEGRAL, "integer"),
    Opcode.POPCNT: (_INTEGRAL, "integer"),
    Opcode.NEGATE: (_ARITHMETIC, "integer, floating-point or complex"),
    **{op: (_INTEGRAL | {"pred"}, "pred or integer") for op in (
        Opcode.NOT, Opcode.AND, Opcode.OR, Opcode.XOR)},
    **{op: (_ARITHMETIC, "arithmetic (not pred)") for op in (
        Opcode.SUBTRACT, Opcode.DIVIDE, Opcode.REMAINDER, Opcode.POWER)},
    # XLA's shape inference lets floats through, but no backend has float shifts: XLA:CPU
    # rejects them when it converts the module to StableHLO.
    **{op: (_INTEGRAL, "integer") for op in (
        Opcode.SHIFT_LEFT, Opcode.SHIFT_RIGHT_ARITHMETIC, Opcode.SHIFT_RIGHT_LOGICAL)},
    Opcode.COMPLEX: (_FLOAT, "f32 or f64"),
}


def _check_element_type(inst: Instruction, etype: str) -> None:
    rule = ELEMENT_KINDS.get(inst.opcode)
    if rule is not None and PRIMITIVE_TYPES[etype].kind not in rule[0]:
        raise ShapeInferenceError(f"{inst.opcode.text} needs {rule[1]} operands, got {etype}")


@shape_rule(*(op for op in Opcode if op.family is Family.UNARY),
            Opcode.COPY, Opcode.REVERSE, Opcode.REDUCE_PRECISION, Opcode.DOMAIN,
            Opcode.CHOLESKY, Opcode.BATCH_NORM_INFERENCE)
def _unary(inst: Instruction) -> Shape:
    """Same shape as operand 0, with the element type of ``_UNARY_RESULT_TYPE``."""
    if inst.opcode in (Opcode.DOMAIN, Opcode.COPY):  # XLA's InferUnaryOpShape: tuples too
        return inst.operands[0].shape
    s = operand_shape(inst, 0)
    _check_element_type(inst, s.element_type)
    if inst.opcode is Opcode.REVERSE:
        dims_in_range(attribute(inst, "dimensions", ()), s.rank, "reverse dimension")
    f = _UNARY_RESULT_TYPE.get(inst.opcode)
    return s if f is None else array_shape(f(s.element_type), s.dimensions, s.dynamic)



@shape_rule(*(op for op in Opcode if op.family is Family.BINARY), Opcode.COMPARE)
def _binary(inst: Instruction) -> Shape:
    """Operands of equal shape; compare gives pred, complex gives the complex type."""
    a, b = operand_shape(inst, 0), operand_shape(inst, 1)
    dyn = merge_equal(inst, a, b, 0, 1)
    etype = a.element_type
    _check_element_type(inst, etype)
    if inst.opcode is Opcode.COMPARE:
        _check_comparison_type(inst, etype)
        etype = "pred"
    elif inst.opcode is Opcode.COMPLEX:
        if etype not in COMPLEX_OF:
            raise ShapeInferenceError(f"complex needs f32 or f64 operands, got {etype}")
        etype = COMPLEX_OF[etype]
    return array_shape(etype, a.dimensions, dyn)


def _check_comparison_type(inst: Instruction, etype: str) -> None:
    """XLA's verifier: floats compare as FLOAT or TOTALORDER, everything else only with the
    default type of its element type (SIGNED, UNSIGNED for unsigned and pred, FLOAT for complex)."""
    ctype = inst.attrs.get("type")
    if ctype is None:
        return
    ctype = str(ctype)
    kind = PRIMITIVE_TYPES[etype].kind
    allowed = {"float": ("FLOAT", "TOTALORDER"), "complex": ("FLOAT",), "signed": ("SIGNED",)}.get(
        kind, ("UNSIGNED",))
    if ctype not in allowed:
        raise ShapeInferenceError(
            f"compare of {etype} operands needs type={' or '.join(allowed)}, got type={ctype}")


@shape_rule(Opcode.SELECT)
def _select(inst: Instruction) -> Shape:
    """select(pred, on_true, on_false): the branches' shape; pred is pred[] or of their dimensions."""
    p, t, f = operand_shape(inst, 0), operand_shape(inst, 1), operand_shape(inst, 2)
    if p.element_type != "pred":
        raise ShapeInferenceError(f"select's predicate must be pred, got {shape_text(p)}")
    dyn = merge_equal(inst, t, f, 1, 2)
    if p.rank and p.dimensions != t.dimensions:
        raise ShapeInferenceError(
            f"select's predicate {shape_text(p)} must be a scalar or have the dimensions of {shape_text(t)}")
    return array_shape(t.element_type, t.dimensions, dyn)


@shape_rule(Opcode.CLAMP)
def _clamp(inst: Instruction) -> Shape:
    """clamp(min, operand, max): operand's shape; min and max are scalars or of operand's shape."""
    lo, x, hi = operand_shape(inst, 0), operand_shape(inst, 1), operand_shape(inst, 2)
    for i, b in ((0, lo), (2, hi)):
        if b.element_type != x.element_type or (b.rank and b.dimensions != x.dimensions):
            raise ShapeInferenceError(
                f"clamp's operand {i} {shape_text(b)} must be {x.element_type}[] or {shape_text(x)}")
    return x


@shape_rule(Opcode.CONVERT, Opcode.STOCHASTIC_CONVERT)
def _convert(inst: Instruction) -> Shape:
    """Operand 0's dimensions with the declared element type (Note [Declared parts])."""
    s = operand_shape(inst, 0)
    if inst.opcode is Opcode.STOCHASTIC_CONVERT:
        r = operand_shape(inst, 1)
        if r.dimensions != s.dimensions:
            raise ShapeInferenceError(f"stochastic-convert's random bits {shape_text(r)} must match {shape_text(s)}")
    return array_shape(declared_array(inst).element_type, s.dimensions, s.dynamic)


@shape_rule(Opcode.BITCAST_CONVERT)
def _bitcast_convert(inst: Instruction) -> Shape:
    """Same bits: a narrower result type adds a minor dimension, a wider one removes it."""
    s = operand_shape(inst, 0)
    out = declared_array(inst).element_type
    ib, ob = PRIMITIVE_TYPES[s.element_type].bits, PRIMITIVE_TYPES[out].bits
    if ib == ob:
        return array_shape(out, s.dimensions, s.dynamic)
    if ib > ob:
        return array_shape(out, (*s.dimensions, ib // ob))
    if not s.rank or s.dimensions[-1] != ob // ib:
        raise ShapeInferenceError(
            f"bitcast-convert from {shape_text(s)} to {out} needs a minor dimension of size {ob // ib}")
    return array_shape(out, s.dimensions[:-1])

