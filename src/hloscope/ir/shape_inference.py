"""Shape inference: the result shape of every HLO opcode from its operands and attributes.

One registry keyed by opcode (``SHAPE_RULES``), filled with ``@shape_rule``. Each rule takes an
``Instruction`` and returns the shape XLA's ``ShapeInference`` would give it, or raises
``ShapeInferenceError`` saying which operand or attribute is inconsistent and what was expected.
Opcodes whose result cannot be derived from the operands are listed in ``NOT_INFERABLE`` with a
reason; where part of their shape can still be checked, a ``@shape_check`` function does so.
Every opcode is in exactly one of the two tables (a test enforces it).

Note [Declared parts]
    A few results carry a choice the operands do not determine: the element type of ``convert``,
    ``bitcast-convert``, ``dot`` and ``convolution`` (the preferred element type), the shard
    count of ``all-gather``/``reduce-scatter`` when replica groups are implicit, and the context
    elements of ``*-start`` tuples. Rules take exactly those parts from the declared shape, as
    XLA's verifier does, and infer everything else.

Comparisons ignore layouts: element type, dimensions and dynamic flags only (``same_shape``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hloscope.errors import HloscopeError
from hloscope.ir.attributes import RawAttribute, Window
from hloscope.ir.dtypes import PRIMITIVE_TYPES
from hloscope.ir.instruction import Instruction
from hloscope.ir.opcode import Family, Opcode
from hloscope.ir.shape import ArrayShape, Shape, TupleShape

__all__ = [
    "NOT_INFERABLE", "SHAPE_CHECKS", "SHAPE_RULES", "ShapeInferenceError", "check_shape", "infer_shape",
    "same_shape", "same_type_ignoring_fp_precision", "shape_check", "shape_rule", "shape_text",
    "window_output_dimensions",
]

Rule = Callable[[Instruction], Shape]
Check = Callable[[Instruction], None]

SHAPE_RULES: dict[Opcode, Rule] = {}
SHAPE_CHECKS: dict[Opcode, Check] = {}

NOT_INFERABLE: dict[Opcode, str] = {
    Opcode.PARAMETER: "a parameter's shape is declared; the verifier checks it against call sites",
    Opcode.CONSTANT: "a constant's shape is declared with its literal",
    Opcode.CUSTOM_CALL: "the result of a custom-call is defined by its target, not by HLO",
    Opcode.BITCAST: "a bitcast reinterprets the buffer under any layout; only the declared shape says how",
    Opcode.RESHAPE: "the result dimensions are declared; only the element count is checked",
    Opcode.DYNAMIC_RESHAPE: "the result dimensions are declared; only the element type is checked",
    Opcode.BROADCAST: "sizes of the added dimensions are declared; mapped dimensions are checked",
    Opcode.IOTA: "an iota's shape is declared; the iota dimension is checked",
    Opcode.RNG: "an rng's shape is declared; the bounds' element types are checked",
    Opcode.RNG_BIT_GENERATOR: "the generated array's shape is declared; the state is checked",
    Opcode.INFEED: "the fed data's shape is declared",
    Opcode.RECV: "the received data's shape is declared; the (data, u32[], token[]) form is checked",
    Opcode.ASYNC_START: "context elements of the tuple are backend-defined; operands and result are checked",
    Opcode.RAGGED_DOT: "ragged_dot_dimension_numbers is kept as raw text by the parser",
    Opcode.SCALED_DOT: "scaled-dot's operand order and scale semantics are not modelled yet",
    Opcode.SCAN: "scan's attributes are kept as raw text by the parser",
    Opcode.SHUFFLE: "shuffle's attributes are kept as raw text by the parser",
    Opcode.COLLECTIVE_REDUCE: "collective-reduce's result form is not modelled yet",
}


class ShapeInferenceError(HloscopeError):
    """An instruction's operands or attributes admit no result shape; the message says why."""


def shape_rule(*opcodes: Opcode) -> Callable[[Rule], Rule]:
    """Register the decorated function as the shape rule of ``opcodes``."""

    def register(fn: Rule) -> Rule:
        for op in opcodes:
            assert op not in SHAPE_RULES and op not in NOT_INFERABLE, op
            SHAPE_RULES[op] = fn
        return fn

    return register


def shape_check(*opcodes: Opcode) -> Callable[[Check], Check]:
    """Register a consistency check for opcodes in ``NOT_INFERABLE``."""

    def register(fn: Check) -> Check:
        for op in opcodes:
            assert op in NOT_INFERABLE, op
            SHAPE_CHECKS[op] = fn
        return fn

    return register


def infer_shape(inst: Instruction) -> Shape | None:
    """The shape XLA infers for ``inst`` (None for opcodes in ``NOT_INFERABLE``).

    Raises ``ShapeInferenceError`` when the operands or attributes are inconsistent.
    """
    rule = SHAPE_RULES.get(inst.opcode)
    return None if rule is None else rule(inst)


def check_shape(inst: Instruction) -> None:
    """Run the partial consistency check of a non-inferable opcode (no-op when it has none)."""
    check = SHAPE_CHECKS.get(inst.opcode)
    if check is not None:
        check(inst)


def same_shape(a: Shape, b: Shape) -> bool:
    """Equal ignoring layouts: element types, dimensions and dynamic flags (recursively)."""
    if isinstance(a, TupleShape) or isinstance(b, TupleShape):
        return (isinstance(a, TupleShape) and isinstance(b, TupleShape)
                and len(a.elements) == len(b.elements)
                and all(same_shape(x, y) for x, y in zip(a.elements, b.elements, strict=True)))
    return (a.element_type == b.element_type and a.dimensions == b.dimensions
            and _dynamic(a) == _dynamic(b))


def shape_text(shape: Shape) -> str:
    """``shape`` as HLO text without layouts, as messages show it."""
    return shape.to_text(layout=False)


# --- helpers ------------------------------------------------------------------------------------
def _dynamic(s: ArrayShape) -> tuple[bool, ...]:
    return s.dynamic if any(s.dynamic) else ()


def _array_shape(etype: str, dims: Any, dynamic: Any = ()) -> ArrayShape:
    dyn = tuple(bool(d) for d in dynamic)
    return ArrayShape(etype, tuple(dims), dyn if any(dyn) else ())


def _operand(inst: Instruction, i: int) -> ArrayShape:
    if i >= len(inst.operands):
        raise ShapeInferenceError(f"{inst.opcode.text} needs operand {i}, has {len(inst.operands)} operands")
    s = inst.operands[i].shape
    if not isinstance(s, ArrayShape):
        raise ShapeInferenceError(
            f"operand {i} of {inst.opcode.text} must be an array, got {shape_text(s)}")
    return s


def _operands(inst: Instruction) -> list[ArrayShape]:
    return [_operand(inst, i) for i in range(len(inst.operands))]


def _attr(inst: Instruction, name: str, default: Any = ...) -> Any:
    v = inst.attrs.get(name, default)
    if v is ...:
        raise ShapeInferenceError(f"{inst.opcode.text} needs attribute {name}")
    return v


def _int_attr(inst: Instruction, name: str) -> int:
    v = _attr(inst, name)
    if isinstance(v, RawAttribute):  # attributes the parser does not type, e.g. feature_index
        try:
            return int(v.text)
        except ValueError:
            raise ShapeInferenceError(f"{name}={v.text} is not an integer") from None
    return int(v)


def _dims_in_range(dims: tuple[int, ...], rank: int, what: str) -> None:
    for d in dims:
        if not 0 <= d < rank:
            raise ShapeInferenceError(f"{what} {d} is out of range for rank {rank}")
    if len(set(dims)) != len(dims):
        raise ShapeInferenceError(f"{what} {list(dims)} has repeated dimensions")


def _tuple_or_single(shapes: list[Shape]) -> Shape:
    return shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))


def _declared_array(inst: Instruction) -> ArrayShape:
    if not isinstance(inst.shape, ArrayShape):
        raise ShapeInferenceError(f"{inst.opcode.text} must produce an array, declared {shape_text(inst.shape)}")
    return inst.shape


def _root_shape(inst: Instruction, attr: str) -> Shape:
    comp = _attr(inst, attr)
    if isinstance(comp, list):
        if not comp:
            raise ShapeInferenceError(f"{inst.opcode.text} calls no computation")
        comp = comp[0]
    if isinstance(comp, str):
        raise ShapeInferenceError(f"{attr}={comp} does not name a computation of this module")
    return comp.root.shape


_COMPLEX_OF = {"f32": "c64", "f64": "c128"}
_REAL_OF = {"c64": "f32", "c128": "f64"}


# --- elementwise --------------------------------------------------------------------------------
# Unary ops whose result element type differs from the operand's (XLA InferUnaryOpShape).
_UNARY_RESULT_TYPE: dict[Opcode, Callable[[str], str]] = {
    Opcode.ABS: lambda t: _REAL_OF.get(t, t),
    Opcode.REAL: lambda t: _REAL_OF.get(t, t),
    Opcode.IMAG: lambda t: _REAL_OF.get(t, t),
    Opcode.IS_FINITE: lambda t: "pred",
}


# Element types each elementwise opcode accepts, as XLA's InferUnaryOpShape and
# InferBinaryOpShape check them: (kinds of hloscope.ir.dtypes, what a message calls them).
# XLA's "signed" (ElementIsSigned) covers signed integers and floating point alike.
_FLOAT, _COMPLEX = frozenset({"float"}), frozenset({"complex"})
_INTEGRAL = frozenset({"signed", "unsigned"})
_FLOAT_OR_COMPLEX = _FLOAT | _COMPLEX
_ARITHMETIC = _INTEGRAL | _FLOAT_OR_COMPLEX  # everything but pred
_ELEMENT_KINDS: dict[Opcode, tuple[frozenset[str], str]] = {
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
    rule = _ELEMENT_KINDS.get(inst.opcode)
    if rule is not None and PRIMITIVE_TYPES[etype].kind not in rule[0]:
        raise ShapeInferenceError(f"{inst.opcode.text} needs {rule[1]} operands, got {etype}")


@shape_rule(*(op for op in Opcode if op.family is Family.UNARY),
            Opcode.COPY, Opcode.REVERSE, Opcode.REDUCE_PRECISION, Opcode.DOMAIN,
            Opcode.CHOLESKY, Opcode.BATCH_NORM_INFERENCE)
def _unary(inst: Instruction) -> Shape:
    """Same shape as operand 0, with the element type of ``_UNARY_RESULT_TYPE``."""
    if inst.opcode is Opcode.DOMAIN:  # domain passes tuples through too
        return inst.operands[0].shape
    s = _operand(inst, 0)
    _check_element_type(inst, s.element_type)
    if inst.opcode is Opcode.REVERSE:
        _dims_in_range(_attr(inst, "dimensions", ()), s.rank, "reverse dimension")
    f = _UNARY_RESULT_TYPE.get(inst.opcode)
    return s if f is None else _array_shape(f(s.element_type), s.dimensions, s.dynamic)


def _merge_equal(inst: Instruction, a: ArrayShape, b: ArrayShape, ia: int, ib: int,
                 check_type: bool = True) -> tuple[bool, ...]:
    """Check two operands have equal dimensions (and types); return merged dynamic flags."""
    if a.dimensions != b.dimensions:
        raise ShapeInferenceError(
            f"operands {ia} and {ib} of {inst.opcode.text} have different dimensions: "
            f"{shape_text(a)} vs {shape_text(b)}")
    if check_type and a.element_type != b.element_type:
        raise ShapeInferenceError(
            f"operands {ia} and {ib} of {inst.opcode.text} have different element types: "
            f"{a.element_type} vs {b.element_type}")
    if not (a.dynamic or b.dynamic):
        return ()
    return tuple(x or y for x, y in zip(a.dynamic or (False,) * a.rank, b.dynamic or (False,) * b.rank, strict=True))


@shape_rule(*(op for op in Opcode if op.family is Family.BINARY), Opcode.COMPARE)
def _binary(inst: Instruction) -> Shape:
    """Operands of equal shape; compare gives pred, complex gives the complex type."""
    a, b = _operand(inst, 0), _operand(inst, 1)
    dyn = _merge_equal(inst, a, b, 0, 1)
    etype = a.element_type
    _check_element_type(inst, etype)
    if inst.opcode is Opcode.COMPARE:
        _check_comparison_type(inst, etype)
        etype = "pred"
    elif inst.opcode is Opcode.COMPLEX:
        if etype not in _COMPLEX_OF:
            raise ShapeInferenceError(f"complex needs f32 or f64 operands, got {etype}")
        etype = _COMPLEX_OF[etype]
    return _array_shape(etype, a.dimensions, dyn)


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
    p, t, f = _operand(inst, 0), _operand(inst, 1), _operand(inst, 2)
    if p.element_type != "pred":
        raise ShapeInferenceError(f"select's predicate must be pred, got {shape_text(p)}")
    dyn = _merge_equal(inst, t, f, 1, 2)
    if p.rank and p.dimensions != t.dimensions:
        raise ShapeInferenceError(
            f"select's predicate {shape_text(p)} must be a scalar or have the dimensions of {shape_text(t)}")
    return _array_shape(t.element_type, t.dimensions, dyn)


@shape_rule(Opcode.CLAMP)
def _clamp(inst: Instruction) -> Shape:
    """clamp(min, operand, max): operand's shape; min and max are scalars or of operand's shape."""
    lo, x, hi = _operand(inst, 0), _operand(inst, 1), _operand(inst, 2)
    for i, b in ((0, lo), (2, hi)):
        if b.element_type != x.element_type or (b.rank and b.dimensions != x.dimensions):
            raise ShapeInferenceError(
                f"clamp's operand {i} {shape_text(b)} must be {x.element_type}[] or {shape_text(x)}")
    return x


@shape_rule(Opcode.CONVERT, Opcode.STOCHASTIC_CONVERT)
def _convert(inst: Instruction) -> Shape:
    """Operand 0's dimensions with the declared element type (Note [Declared parts])."""
    s = _operand(inst, 0)
    if inst.opcode is Opcode.STOCHASTIC_CONVERT:
        r = _operand(inst, 1)
        if r.dimensions != s.dimensions:
            raise ShapeInferenceError(f"stochastic-convert's random bits {shape_text(r)} must match {shape_text(s)}")
    return _array_shape(_declared_array(inst).element_type, s.dimensions, s.dynamic)


@shape_rule(Opcode.BITCAST_CONVERT)
def _bitcast_convert(inst: Instruction) -> Shape:
    """Same bits: a narrower result type adds a minor dimension, a wider one removes it."""
    s = _operand(inst, 0)
    out = _declared_array(inst).element_type
    ib, ob = PRIMITIVE_TYPES[s.element_type].bits, PRIMITIVE_TYPES[out].bits
    if ib == ob:
        return _array_shape(out, s.dimensions, s.dynamic)
    if ib > ob:
        return _array_shape(out, (*s.dimensions, ib // ob))
    if not s.rank or s.dimensions[-1] != ob // ib:
        raise ShapeInferenceError(
            f"bitcast-convert from {shape_text(s)} to {out} needs a minor dimension of size {ob // ib}")
    return _array_shape(out, s.dimensions[:-1])


# --- data movement ------------------------------------------------------------------------------
@shape_rule(Opcode.TRANSPOSE)
def _transpose(inst: Instruction) -> Shape:
    """Result dimension i is operand dimension ``dimensions[i]``."""
    s = _operand(inst, 0)
    perm = _attr(inst, "dimensions")
    if sorted(perm) != list(range(s.rank)):
        raise ShapeInferenceError(f"transpose dimensions {list(perm)} are not a permutation of rank {s.rank}")
    dyn = tuple(s.dynamic[p] for p in perm) if s.dynamic else ()
    return _array_shape(s.element_type, (s.dimensions[p] for p in perm), dyn)


@shape_rule(Opcode.SLICE)
def _slice(inst: Instruction) -> Shape:
    """ceil((limit - start) / stride) per dimension."""
    s = _operand(inst, 0)
    ranges = _attr(inst, "slice")
    if len(ranges) != s.rank:
        raise ShapeInferenceError(f"slice has {len(ranges)} ranges for rank-{s.rank} operand {shape_text(s)}")
    dims = []
    for d, (r, n) in enumerate(zip(ranges, s.dimensions, strict=True)):
        if not (0 <= r.start <= r.limit <= n) or r.stride <= 0:
            raise ShapeInferenceError(f"slice range {r} of dimension {d} is invalid for size {n}")
        dims.append(-(-(r.limit - r.start) // r.stride))
    return _array_shape(s.element_type, dims)


def _check_start_indices(inst: Instruction, first: int, rank: int) -> None:
    idx = inst.operands[first:]
    if len(idx) == 1 and isinstance(idx[0].shape, ArrayShape) and idx[0].shape.rank == 1:
        return  # the old form: one vector of start indices
    if len(idx) != rank:
        raise ShapeInferenceError(f"{inst.opcode.text} needs {rank} start indices, got {len(idx)}")
    for k, i in enumerate(idx):
        sh = i.shape
        if not isinstance(sh, ArrayShape) or sh.rank or not PRIMITIVE_TYPES[sh.element_type].is_integer:
            raise ShapeInferenceError(
                f"start index operand {first + k} of {inst.opcode.text} must be an integer scalar, "
                f"got {shape_text(sh)}")
    types = {i.shape.element_type for i in idx if isinstance(i.shape, ArrayShape)}
    if len(types) > 1:  # XLA's ShapeInference: every start index of one type
        raise ShapeInferenceError(
            f"start indices of {inst.opcode.text} must share one element type, got {', '.join(sorted(types))}")


@shape_rule(Opcode.DYNAMIC_SLICE)
def _dynamic_slice(inst: Instruction) -> Shape:
    """``dynamic_slice_sizes`` of operand 0's element type; sizes must fit the operand."""
    s = _operand(inst, 0)
    sizes = tuple(_attr(inst, "dynamic_slice_sizes"))
    _check_start_indices(inst, 1, s.rank)
    if len(sizes) != s.rank or any(not 0 <= z <= n for z, n in zip(sizes, s.dimensions, strict=True)):
        raise ShapeInferenceError(f"dynamic_slice_sizes {list(sizes)} do not fit {shape_text(s)}")
    return _array_shape(s.element_type, sizes)


@shape_rule(Opcode.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(inst: Instruction) -> Shape:
    """Operand 0's shape; the update has its rank, type and no larger sizes."""
    s, u = _operand(inst, 0), _operand(inst, 1)
    _check_start_indices(inst, 2, s.rank)
    if u.rank != s.rank or u.element_type != s.element_type or any(
            a > b for a, b in zip(u.dimensions, s.dimensions, strict=True)):
        raise ShapeInferenceError(f"update {shape_text(u)} does not fit in operand {shape_text(s)}")
    return s


@shape_rule(Opcode.CONCATENATE)
def _concatenate(inst: Instruction) -> Shape:
    """Sizes along ``dimensions[0]`` add up; all other dimensions equal."""
    shapes = _operands(inst)
    if not shapes:
        raise ShapeInferenceError("concatenate needs at least one operand")
    (d,) = _attr(inst, "dimensions")
    first = shapes[0]
    _dims_in_range((d,), first.rank, "concatenate dimension")
    total = 0
    for i, s in enumerate(shapes):
        if (s.rank != first.rank or s.element_type != first.element_type
                or s.dimensions[:d] + s.dimensions[d + 1:] != first.dimensions[:d] + first.dimensions[d + 1:]):
            raise ShapeInferenceError(
                f"operand {i} {shape_text(s)} of concatenate does not match operand 0 "
                f"{shape_text(first)} outside dimension {d}")
        total += s.dimensions[d]
    dims = list(first.dimensions)
    dims[d] = total
    return _array_shape(first.element_type, dims)


@shape_rule(Opcode.PAD)
def _pad(inst: Instruction) -> Shape:
    """low + high + size + (size - 1) * interior per dimension (low/high may be negative)."""
    s, v = _operand(inst, 0), _operand(inst, 1)
    if v.rank or v.element_type != s.element_type:
        raise ShapeInferenceError(f"pad value must be {s.element_type}[], got {shape_text(v)}")
    cfg = _attr(inst, "padding").dimensions
    if len(cfg) != s.rank:
        raise ShapeInferenceError(f"padding has {len(cfg)} dimensions for rank-{s.rank} operand")
    dims = []
    for d, ((lo, hi, it), n) in enumerate(zip(cfg, s.dimensions, strict=True)):
        out = lo + hi + n + max(n - 1, 0) * it
        if it < 0 or out < 0:
            raise ShapeInferenceError(f"padding {lo}_{hi}_{it} of dimension {d} gives size {out}")
        dims.append(out)
    return _array_shape(s.element_type, dims)


@shape_rule(Opcode.GET_TUPLE_ELEMENT)
def _get_tuple_element(inst: Instruction) -> Shape:
    """Element ``index`` of the tuple operand."""
    s = inst.operands[0].shape
    index = _attr(inst, "index")
    if not isinstance(s, TupleShape):
        raise ShapeInferenceError(f"get-tuple-element needs a tuple operand, got {shape_text(s)}")
    if not 0 <= index < len(s.elements):
        raise ShapeInferenceError(
            f"tuple index {index} is out of range for {shape_text(s)} with {len(s.elements)} elements")
    return s.elements[index]


@shape_rule(Opcode.TUPLE)
def _tuple(inst: Instruction) -> Shape:
    """The tuple of the operands' shapes."""
    return TupleShape(tuple(o.shape for o in inst.operands))


@shape_rule(Opcode.OPTIMIZATION_BARRIER, Opcode.WHILE, Opcode.ADD_DEPENDENCY, Opcode.ASYNC_UPDATE,
            Opcode.ALL_REDUCE_DONE)
def _first_operand(inst: Instruction) -> Shape:
    """Operand 0's shape (a while's result is its init; the body is checked by the verifier)."""
    return inst.operands[0].shape


def _tuple_element(inst: Instruction, index: int) -> Shape:
    s = inst.operands[0].shape
    if not isinstance(s, TupleShape) or len(s.elements) <= index:
        raise ShapeInferenceError(
            f"{inst.opcode.text} needs a tuple operand with an element {index}, got {shape_text(s)}")
    return s.elements[index]


_ELEMENT_OF_OPERAND = {
    Opcode.COPY_DONE: 0, Opcode.ALL_GATHER_DONE: 1, Opcode.COLLECTIVE_PERMUTE_DONE: 1,
    Opcode.ASYNC_DONE: 1,
}


@shape_rule(*_ELEMENT_OF_OPERAND)
def _done(inst: Instruction) -> Shape:
    """A *-done returns one element of its *-start's tuple (destination or result)."""
    return _tuple_element(inst, _ELEMENT_OF_OPERAND[inst.opcode])


_SCALAR = {t: ArrayShape(t) for t in ("u32", "s32", "pred", "u64")}
_TOKEN = ArrayShape("token")


def _with_context(inst: Instruction, leading: list[Shape]) -> Shape:
    """``leading`` plus the declared trailing context scalars (Note [Declared parts])."""
    declared = inst.shape
    extra: tuple[Shape, ...] = ()
    if isinstance(declared, TupleShape) and len(declared.elements) > len(leading):
        extra = tuple(e for e in declared.elements[len(leading):]
                      if isinstance(e, ArrayShape) and e.rank == 0)
    return TupleShape((*leading, *extra))


@shape_rule(Opcode.COPY_START)
def _copy_start(inst: Instruction) -> Shape:
    """(destination, source, context)."""
    s = inst.operands[0].shape
    return _with_context(inst, [s, s])


_FIXED: dict[Opcode, Shape] = {
    Opcode.REPLICA_ID: _SCALAR["u32"], Opcode.PARTITION_ID: _SCALAR["u32"],
    Opcode.GET_DIMENSION_SIZE: _SCALAR["s32"], Opcode.RNG_GET_AND_UPDATE_STATE: ArrayShape("u64", (2,)),
    Opcode.AFTER_ALL: _TOKEN, Opcode.OUTFEED: _TOKEN, Opcode.SEND_DONE: _TOKEN,
}


@shape_rule(*_FIXED)
def _fixed(inst: Instruction) -> Shape:
    """Ops whose result shape is fixed by the opcode."""
    return _FIXED[inst.opcode]


@shape_rule(Opcode.SEND)
def _send(inst: Instruction) -> Shape:
    """(data, u32[] context, token[])."""
    return TupleShape((inst.operands[0].shape, _SCALAR["u32"], _TOKEN))


@shape_rule(Opcode.RECV_DONE)
def _recv_done(inst: Instruction) -> Shape:
    """(data, token[]) from recv's (data, u32[], token[])."""
    return TupleShape((_tuple_element(inst, 0), _TOKEN))


@shape_rule(Opcode.SET_DIMENSION_SIZE)
def _set_dimension_size(inst: Instruction) -> Shape:
    """Operand 0 with dimension ``dimensions[0]`` marked dynamic."""
    s = _operand(inst, 0)
    (d,) = _attr(inst, "dimensions")
    _dims_in_range((d,), s.rank, "set-dimension-size dimension")
    dyn = list(s.dynamic or (False,) * s.rank)
    dyn[d] = True
    return _array_shape(s.element_type, s.dimensions, dyn)


# --- non-inferable checks -----------------------------------------------------------------------
@shape_check(Opcode.RESHAPE)
def _check_reshape(inst: Instruction) -> None:
    s, out = _operand(inst, 0), _declared_array(inst)
    if out.element_type != s.element_type:
        raise ShapeInferenceError(f"reshape changes the element type from {s.element_type} to {out.element_type}")
    if not (s.dynamic or out.dynamic) and s.element_count != out.element_count:
        raise ShapeInferenceError(
            f"reshape from {shape_text(s)} ({s.element_count} elements) to {shape_text(out)} "
            f"({out.element_count} elements) changes the element count")


@shape_check(Opcode.DYNAMIC_RESHAPE)
def _check_dynamic_reshape(inst: Instruction) -> None:
    s, out = _operand(inst, 0), _declared_array(inst)
    if out.element_type != s.element_type:
        raise ShapeInferenceError(f"dynamic-reshape changes the element type from {s.element_type} to {out.element_type}")


@shape_check(Opcode.BROADCAST)
def _check_broadcast(inst: Instruction) -> None:
    s, out = _operand(inst, 0), _declared_array(inst)
    dims = _attr(inst, "dimensions", ())
    if out.element_type != s.element_type:
        raise ShapeInferenceError(f"broadcast changes the element type from {s.element_type} to {out.element_type}")
    if len(dims) != s.rank:
        raise ShapeInferenceError(f"broadcast dimensions {list(dims)} do not map the {s.rank} operand dimensions")
    _dims_in_range(tuple(dims), out.rank, "broadcast dimension")
    for i, d in enumerate(dims):
        if s.dimensions[i] != out.dimensions[d] and s.dimensions[i] != 1:
            raise ShapeInferenceError(
                f"operand dimension {i} (size {s.dimensions[i]}) maps to result dimension {d} "
                f"of size {out.dimensions[d]}")


@shape_check(Opcode.IOTA)
def _check_iota(inst: Instruction) -> None:
    out = _declared_array(inst)
    _dims_in_range((_attr(inst, "iota_dimension"),), out.rank, "iota_dimension")


@shape_check(Opcode.RNG)
def _check_rng(inst: Instruction) -> None:
    out = _declared_array(inst)
    for i, s in enumerate(_operands(inst)):
        if s.rank or s.element_type != out.element_type:
            raise ShapeInferenceError(f"rng bound {i} must be {out.element_type}[], got {shape_text(s)}")


@shape_check(Opcode.RNG_BIT_GENERATOR)
def _check_rng_bit_generator(inst: Instruction) -> None:
    state = inst.operands[0].shape
    out = inst.shape
    if not isinstance(out, TupleShape) or len(out.elements) != 2 or not same_shape(out.elements[0], state):
        raise ShapeInferenceError(f"rng-bit-generator must give ({shape_text(state)}, data)")


@shape_check(Opcode.RECV)
def _check_recv(inst: Instruction) -> None:
    out = inst.shape
    if not (isinstance(out, TupleShape) and len(out.elements) == 3
            and same_shape(out.elements[1], _SCALAR["u32"]) and same_shape(out.elements[2], _TOKEN)):
        raise ShapeInferenceError("recv must give (data, u32[], token[])")


@shape_check(Opcode.ASYNC_START)
def _check_async_start(inst: Instruction) -> None:
    out = inst.shape
    ops = TupleShape(tuple(o.shape for o in inst.operands))
    root = _root_shape(inst, "calls")
    if not (isinstance(out, TupleShape) and len(out.elements) >= 2 and same_shape(out.elements[0], ops)
            and same_shape(out.elements[1], root)):
        raise ShapeInferenceError(
            f"async-start must give ({shape_text(ops)}, {shape_text(root)}, context...)")



# --- reductions and windows ---------------------------------------------------------------------
def window_output_dimensions(base: tuple[int, ...], window: Window) -> tuple[int, ...]:
    """Output sizes of a window sweep over ``base`` (XLA's InferWindowOutputShape).

    Per dimension: the dilated, padded base and the dilated window give
    ``(padded - window) // stride + 1``, or 0 when the window does not fit.
    """
    if len(window.dimensions) != len(base):
        raise ShapeInferenceError(f"window has {len(window.dimensions)} dimensions for rank {len(base)}")
    out = []
    for n, w in zip(base, window.dimensions, strict=True):
        if w.size <= 0 or w.stride <= 0 or w.base_dilation <= 0 or w.window_dilation <= 0:
            raise ShapeInferenceError(f"window dimension {w} has a non-positive size, stride or dilation")
        padded = (max(n - 1, 0) * w.base_dilation + 1 if n else 0) + w.padding_low + w.padding_high
        span = (w.size - 1) * w.window_dilation + 1
        out.append(0 if span > padded else (padded - span) // w.stride + 1)
    return tuple(out)


def _inputs_and_inits(inst: Instruction) -> tuple[list[ArrayShape], list[ArrayShape]]:
    shapes = _operands(inst)
    n = len(shapes) // 2
    if len(shapes) % 2 or not n:
        raise ShapeInferenceError(f"{inst.opcode.text} needs N inputs and N init values, got {len(shapes)} operands")
    inputs, inits = shapes[:n], shapes[n:]
    for i, (x, v) in enumerate(zip(inputs, inits, strict=True)):
        if v.rank or x.dimensions != inputs[0].dimensions:
            raise ShapeInferenceError(
                f"input {i} {shape_text(x)} / init {shape_text(v)} of {inst.opcode.text}: inits must be "
                f"scalars and inputs must share dimensions {list(inputs[0].dimensions)}")
    return inputs, inits


def same_type_ignoring_fp_precision(a: str, b: str) -> bool:
    """XLA's SameElementTypeIgnoringFpPrecision: equal, or both floating point."""
    return a == b or (PRIMITIVE_TYPES[a].kind == "float" and PRIMITIVE_TYPES[b].kind == "float")


def _accumulator_types(inst: Instruction, inits: list[ArrayShape]) -> list[str]:
    """The result element types of a reduction: its reducer's accumulator types, as XLA's
    InferReduceShape takes them. An init may differ from its accumulator in float precision
    only (an f8 init of an f32 sum gives an f32 result)."""
    comp = inst.attrs.get("to_apply")
    root = getattr(comp, "root", None)
    if root is None:  # no reducer to read (a malformed module): the inits' types
        return [v.element_type for v in inits]
    leaves = [leaf for _, leaf in root.shape.leaves()]
    if len(leaves) != len(inits) or any(leaf.rank for leaf in leaves) or not all(
            same_type_ignoring_fp_precision(leaf.element_type, v.element_type)
            for leaf, v in zip(leaves, inits, strict=True)):
        # A reducer that does not fit its inits: the verifier's signature check says how.
        return [v.element_type for v in inits]
    return [leaf.element_type for leaf in leaves]


@shape_rule(Opcode.REDUCE)
def _reduce(inst: Instruction) -> Shape:
    """Inputs without ``dimensions``, in the reducer's accumulator types; a tuple when variadic."""
    inputs, inits = _inputs_and_inits(inst)
    dims = tuple(_attr(inst, "dimensions"))
    _dims_in_range(dims, inputs[0].rank, "reduce dimension")
    keep = [k for k in range(inputs[0].rank) if k not in dims]
    return _tuple_or_single([_array_shape(t, (x.dimensions[k] for k in keep))
                             for x, t in zip(inputs, _accumulator_types(inst, inits), strict=True)])


@shape_rule(Opcode.REDUCE_WINDOW)
def _reduce_window(inst: Instruction) -> Shape:
    """The window's output sizes over the inputs, in the reducer's accumulator types."""
    inputs, inits = _inputs_and_inits(inst)
    dims = window_output_dimensions(inputs[0].dimensions, _attr(inst, "window"))
    return _tuple_or_single([_array_shape(t, dims) for t in _accumulator_types(inst, inits)])


@shape_rule(Opcode.SELECT_AND_SCATTER)
def _select_and_scatter(inst: Instruction) -> Shape:
    """Operand 0's shape; the source has the window's output shape over it."""
    s, src, init = _operand(inst, 0), _operand(inst, 1), _operand(inst, 2)
    expected = window_output_dimensions(s.dimensions, _attr(inst, "window"))
    if src.dimensions != expected:
        raise ShapeInferenceError(f"source {shape_text(src)} must have the window's output dimensions {list(expected)}")
    if init.rank or init.element_type != src.element_type:
        raise ShapeInferenceError(f"init value must be {src.element_type}[], got {shape_text(init)}")
    return s


@shape_rule(Opcode.SORT)
def _sort(inst: Instruction) -> Shape:
    """The operands' shapes (a tuple when several); all share dimensions."""
    shapes = _operands(inst)
    for i, s in enumerate(shapes):
        _merge_equal(inst, shapes[0], s, 0, i, check_type=False)
    _dims_in_range(tuple(_attr(inst, "dimensions")), shapes[0].rank, "sort dimension")
    return _tuple_or_single(list(shapes))


@shape_rule(Opcode.TOPK)
def _topk(inst: Instruction) -> Shape:
    """(values, s32 indices), the minor dimension cut to ``k``."""
    s, k = _operand(inst, 0), _attr(inst, "k")
    if not s.rank or k > s.dimensions[-1]:
        raise ShapeInferenceError(f"topk k={k} exceeds the minor dimension of {shape_text(s)}")
    dims = (*s.dimensions[:-1], k)
    return TupleShape((_array_shape(s.element_type, dims), _array_shape("s32", dims)))


@shape_rule(Opcode.BATCH_NORM_TRAINING, Opcode.BATCH_NORM_GRAD)
def _batch_norm(inst: Instruction) -> Shape:
    """(operand shape, feature vector, feature vector)."""
    s = _operand(inst, 0)
    f = _int_attr(inst, "feature_index")
    _dims_in_range((f,), s.rank, "feature_index")
    vec = _array_shape(s.element_type, (s.dimensions[f],))
    return TupleShape((s, vec, vec))


# --- linear algebra -----------------------------------------------------------------------------
@shape_rule(Opcode.DOT)
def _dot(inst: Instruction) -> Shape:
    """Batch dimensions, then lhs free, then rhs free; the declared (preferred) element type."""
    a, b = _operand(inst, 0), _operand(inst, 1)
    lb, rb = tuple(_attr(inst, "lhs_batch_dims", ())), tuple(_attr(inst, "rhs_batch_dims", ()))
    lc, rc = tuple(_attr(inst, "lhs_contracting_dims", ())), tuple(_attr(inst, "rhs_contracting_dims", ()))
    _dims_in_range(lb + lc, a.rank, "lhs batch/contracting dimension")
    _dims_in_range(rb + rc, b.rank, "rhs batch/contracting dimension")
    for what, ld, rd in (("batch", lb, rb), ("contracting", lc, rc)):
        if [a.dimensions[d] for d in ld] != [b.dimensions[d] for d in rd]:
            raise ShapeInferenceError(
                f"dot {what} dimensions differ: lhs {shape_text(a)} dims {list(ld)} vs "
                f"rhs {shape_text(b)} dims {list(rd)}")
    free_a = [d for d in range(a.rank) if d not in lb and d not in lc]
    free_b = [d for d in range(b.rank) if d not in rb and d not in rc]
    dims = [a.dimensions[d] for d in (*lb, *free_a)] + [b.dimensions[d] for d in free_b]
    return _array_shape(_declared_array(inst).element_type, dims)


@shape_rule(Opcode.CONVOLUTION)
def _convolution(inst: Instruction) -> Shape:
    """Batch / batch_group_count, kernel output features, and the window's spatial sizes."""
    a, k = _operand(inst, 0), _operand(inst, 1)
    dn = _attr(inst, "dim_labels")
    fgc, bgc = _attr(inst, "feature_group_count", 1), _attr(inst, "batch_group_count", 1)
    rank = len(dn.input_spatial_dimensions) + 2
    if a.rank != rank or k.rank != rank:
        raise ShapeInferenceError(f"dim_labels {dn} need rank {rank}, got {shape_text(a)} and {shape_text(k)}")
    batch, feat = a.dimensions[dn.input_batch_dimension], a.dimensions[dn.input_feature_dimension]
    kin, kout = k.dimensions[dn.kernel_input_feature_dimension], k.dimensions[dn.kernel_output_feature_dimension]
    if feat % fgc or feat // fgc != kin:
        raise ShapeInferenceError(
            f"input features {feat} / feature_group_count {fgc} must equal kernel input features {kin}")
    if kout % fgc or kout % bgc or batch % bgc:
        raise ShapeInferenceError(
            f"kernel output features {kout} and batch {batch} must divide by the group counts ({fgc}, {bgc})")
    window = _attr(inst, "window", Window(()))
    ksizes = [k.dimensions[d] for d in dn.kernel_spatial_dimensions]
    if [w.size for w in window.dimensions] != ksizes:
        raise ShapeInferenceError(f"window sizes {window} do not match kernel spatial sizes {ksizes}")
    spatial = window_output_dimensions(tuple(a.dimensions[d] for d in dn.input_spatial_dimensions), window)
    dims = [0] * rank
    dims[dn.output_batch_dimension], dims[dn.output_feature_dimension] = batch // bgc, kout
    for d, n in zip(dn.output_spatial_dimensions, spatial, strict=True):
        dims[d] = n
    return _array_shape(_declared_array(inst).element_type, dims)


_FFT_TYPES = {"FFT": "c", "IFFT": "c", "RFFT": "r2c", "IRFFT": "c2r"}


@shape_rule(Opcode.FFT)
def _fft(inst: Instruction) -> Shape:
    """FFT/IFFT keep the shape; RFFT halves the minor length (+1) into complex; IRFFT inverts it."""
    s, kind = _operand(inst, 0), _attr(inst, "fft_type")
    length = tuple(_attr(inst, "fft_length"))
    n = len(length)
    if kind not in _FFT_TYPES or s.rank < n:
        raise ShapeInferenceError(f"fft_type={kind} with fft_length {list(length)} does not fit {shape_text(s)}")
    if kind in ("FFT", "IFFT"):
        return s
    dims = list(s.dimensions)
    if kind == "RFFT":
        if tuple(dims[-n:]) != length or s.element_type not in _COMPLEX_OF:
            raise ShapeInferenceError(f"RFFT of {shape_text(s)} needs real minor dimensions {list(length)}")
        dims[-1] = length[-1] // 2 + 1
        return _array_shape(_COMPLEX_OF[s.element_type], dims)
    if tuple(dims[-n:-1]) != length[:-1] or dims[-1] != length[-1] // 2 + 1 or s.element_type not in _REAL_OF:
        raise ShapeInferenceError(f"IRFFT of {shape_text(s)} does not match fft_length {list(length)}")
    dims[-n:] = length
    return _array_shape(_REAL_OF[s.element_type], dims)


@shape_rule(Opcode.TRIANGULAR_SOLVE)
def _triangular_solve(inst: Instruction) -> Shape:
    """b's shape; a is square in its two minor dimensions."""
    a, b = _operand(inst, 0), _operand(inst, 1)
    if a.rank < 2 or a.dimensions[-1] != a.dimensions[-2] or a.rank != b.rank:
        raise ShapeInferenceError(f"triangular-solve needs a square a of b's rank, got {shape_text(a)}, {shape_text(b)}")
    return b


# --- indexing -----------------------------------------------------------------------------------
def _ascending(dims: tuple[int, ...], what: str) -> None:
    if list(dims) != sorted(set(dims)):
        raise ShapeInferenceError(f"{what} {list(dims)} must be ascending without repeats")


def _unique_in(dims: tuple[int, ...], rank: int, what: str) -> None:
    for d in dims:
        if not 0 <= d < rank:
            raise ShapeInferenceError(f"{what} {list(dims)}: {d} is out of range for rank {rank}")
    if len(set(dims)) != len(dims):
        raise ShapeInferenceError(f"{what} {list(dims)} has repeated dimensions")


def _expanded_indices(inst: Instruction, idx: ArrayShape) -> tuple[list[int], int]:
    """The indices' dimensions with the implicit trailing index vector (size 1) made explicit,
    and ``index_vector_dim`` (XLA's expanded start-indices shape)."""
    if not PRIMITIVE_TYPES[idx.element_type].is_integer:
        raise ShapeInferenceError(f"{inst.opcode.text} indices must be integers, got {shape_text(idx)}")
    ivd = _attr(inst, "index_vector_dim", idx.rank)
    if not 0 <= ivd <= idx.rank:
        raise ShapeInferenceError(f"index_vector_dim={ivd} must be in [0, {idx.rank}] for {shape_text(idx)}")
    dims = list(idx.dimensions)
    if ivd == idx.rank:
        dims.append(1)
    return dims, ivd


def _check_index_map(dims: list[int], ivd: int, index_map: tuple[int, ...], operand_rank: int,
                     batching: tuple[int, ...], index_batching: tuple[int, ...], names: tuple[str, ...]) -> None:
    """The checks gather and scatter share: the index map against the index vector and the
    operand, and the batching dimensions (XLA's Validate{Gather,Scatter}DimensionNumbers)."""
    map_name, batching_name, index_batching_name = names
    if len(index_map) != dims[ivd]:
        raise ShapeInferenceError(
            f"{map_name} has {len(index_map)} elements but dimension index_vector_dim={ivd} "
            f"of the indices has size {dims[ivd]}")
    _unique_in(index_map, operand_rank, map_name)
    if len(batching) != len(index_batching):
        raise ShapeInferenceError(f"{batching_name} {list(batching)} and {index_batching_name} "
                                  f"{list(index_batching)} must have the same length")
    _unique_in(batching, operand_rank, batching_name)
    _ascending(batching, batching_name)
    _unique_in(index_batching, len(dims), index_batching_name)


@shape_rule(Opcode.GATHER)
def _gather(inst: Instruction) -> Shape:
    """Index batch dimensions interleaved with the slice's offset dimensions (``offset_dims``),
    after XLA's InferGatherShape checks of the dimension numbers."""
    s, idx = _operand(inst, 0), _operand(inst, 1)
    dims, ivd = _expanded_indices(inst, idx)
    sizes = tuple(_attr(inst, "slice_sizes"))
    offset_dims = tuple(_attr(inst, "offset_dims", ()))
    collapsed = tuple(_attr(inst, "collapsed_slice_dims", ()))
    batching = tuple(_attr(inst, "operand_batching_dims", ()))
    rank = len(offset_dims) + len(dims) - 1
    _ascending(offset_dims, "offset_dims")
    _unique_in(offset_dims, rank, "offset_dims")
    _check_index_map(dims, ivd, tuple(_attr(inst, "start_index_map", ())), s.rank, batching,
                     tuple(_attr(inst, "start_indices_batching_dims", ())),
                     ("start_index_map", "operand_batching_dims", "start_indices_batching_dims"))
    _unique_in(collapsed, s.rank, "collapsed_slice_dims")
    _ascending(collapsed, "collapsed_slice_dims")
    if len(sizes) != s.rank:
        raise ShapeInferenceError(f"slice_sizes {list(sizes)} must have one size per dimension of {shape_text(s)}")
    if len(sizes) != len(offset_dims) + len(collapsed) + len(batching):
        raise ShapeInferenceError(
            f"every operand dimension must be an offset, collapsed or batching dimension: "
            f"{len(sizes)} dimensions, offset_dims {list(offset_dims)}, collapsed_slice_dims "
            f"{list(collapsed)}, operand_batching_dims {list(batching)}")
    for d, (z, n) in enumerate(zip(sizes, s.dimensions, strict=True)):
        if not 0 <= z <= n:
            raise ShapeInferenceError(f"slice size {z} of dimension {d} does not fit {shape_text(s)}")
    for d in collapsed + batching:
        if sizes[d] > 1:
            raise ShapeInferenceError(f"collapsed or batching dimension {d} must have slice size 0 or 1, got {sizes[d]}")
    dropped = set(collapsed) | set(batching)
    offsets = iter(sizes[d] for d in range(s.rank) if d not in dropped)
    batch = iter(n for d, n in enumerate(dims) if d != ivd)
    offset_set = set(offset_dims)
    return _array_shape(s.element_type, [next(offsets) if d in offset_set else next(batch) for d in range(rank)])


@shape_rule(Opcode.SCATTER)
def _scatter(inst: Instruction) -> Shape:
    """The operands' shapes (a tuple when variadic), after XLA's InferScatterShape checks:
    updates have the window dimensions (no larger than the operand's) and the indices' batch
    dimensions."""
    shapes = _operands(inst)
    n = (len(shapes) - 1) // 2
    if len(shapes) % 2 == 0 or not n:
        raise ShapeInferenceError(f"scatter needs N operands, indices and N updates, got {len(shapes)} operands")
    dims, ivd = _expanded_indices(inst, shapes[n])
    window = tuple(_attr(inst, "update_window_dims", ()))
    inserted = tuple(_attr(inst, "inserted_window_dims", ()))
    batching = tuple(_attr(inst, "input_batching_dims", ()))
    for i, (s, u) in enumerate(zip(shapes[:n], shapes[n + 1:], strict=True)):
        expected_rank = len(dims) - 1 + len(window)
        if u.rank != expected_rank:
            raise ShapeInferenceError(
                f"update {i} {shape_text(u)} must have rank {expected_rank} "
                f"({len(window)} window + {expected_rank - len(window)} scatter dimensions)")
        _ascending(window, "update_window_dims")
        _unique_in(window, u.rank, "update_window_dims")
        _ascending(inserted, "inserted_window_dims")
        _unique_in(inserted, s.rank, "inserted_window_dims")
        if len(window) + len(inserted) + len(batching) != s.rank:
            raise ShapeInferenceError(
                f"update_window_dims {list(window)}, inserted_window_dims {list(inserted)} and "
                f"input_batching_dims {list(batching)} must cover the {s.rank} operand dimensions")
        _check_index_map(dims, ivd, tuple(_attr(inst, "scatter_dims_to_operand_dims", ())), s.rank,
                         batching, tuple(_attr(inst, "scatter_indices_batching_dims", ())),
                         ("scatter_dims_to_operand_dims", "input_batching_dims",
                          "scatter_indices_batching_dims"))
        bounds = [m for d, m in enumerate(s.dimensions) if d not in inserted and d not in batching]
        for k, d in enumerate(window):
            if u.dimensions[d] > bounds[k]:
                raise ShapeInferenceError(
                    f"update {i} window dimension {d} has size {u.dimensions[d]}, more than the "
                    f"operand's {bounds[k]}")
        scatter_dims = iter(m for d, m in enumerate(dims) if d != ivd)
        for d in range(u.rank):
            if d not in window and u.dimensions[d] != (m := next(scatter_dims)):
                raise ShapeInferenceError(
                    f"update {i} scatter dimension {d} has size {u.dimensions[d]}, the indices' "
                    f"batch dimension has {m}")
        if u.element_type != s.element_type:
            raise ShapeInferenceError(f"update {i} {shape_text(u)} must have the element type of {shape_text(s)}")
    return _tuple_or_single(list(shapes[:n]))


# --- control flow -------------------------------------------------------------------------------
@shape_rule(Opcode.CALL, Opcode.FUSION, Opcode.CONDITIONAL)
def _called_root(inst: Instruction) -> Shape:
    """The root shape of the (first) called computation; the verifier checks the others."""
    for attr in ("to_apply", "calls", "branch_computations", "true_computation"):
        if attr in inst.attrs:
            return _root_shape(inst, attr)
    raise ShapeInferenceError(f"{inst.opcode.text} calls no computation")


@shape_rule(Opcode.MAP)
def _map(inst: Instruction) -> Shape:
    """The operands' dimensions in the element type the mapped computation returns."""
    shapes = _operands(inst)
    for i, s in enumerate(shapes):
        _merge_equal(inst, shapes[0], s, 0, i, check_type=False)
    root = _root_shape(inst, "to_apply")
    if not isinstance(root, ArrayShape) or root.rank:
        raise ShapeInferenceError(f"map's computation must return a scalar, returns {shape_text(root)}")
    return _array_shape(root.element_type, shapes[0].dimensions)


# --- collectives --------------------------------------------------------------------------------
def _group_size(inst: Instruction) -> int | None:
    groups = inst.attrs.get("replica_groups")
    if groups is None:
        return None
    if groups.iota_shape is not None:
        return groups.iota_shape[1]
    if groups.groups:
        return len(groups.groups[0])
    return None  # {} or an unexpanded form: every participant, count not in the instruction


def _shard_count(inst: Instruction, dim: int, small: int, big_index: int) -> int:
    """Group size from replica groups, else from the declared result (Note [Declared parts])."""
    n = _group_size(inst)
    if n is not None:
        return n
    declared = inst.shape
    if isinstance(declared, TupleShape):
        declared = declared.elements[big_index] if big_index < len(declared.elements) else declared
    if isinstance(declared, ArrayShape) and dim < declared.rank and small:
        return max(1, declared.dimensions[dim] // small)
    return 1


@shape_rule(Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START, Opcode.ALL_TO_ALL, Opcode.COLLECTIVE_BROADCAST)
def _same_as_operands(inst: Instruction) -> Shape:
    """The operands' shapes (a tuple when several)."""
    shapes = _operands(inst)
    if inst.opcode is Opcode.ALL_TO_ALL and "split_dimension" in inst.attrs:
        d, n = inst.attrs["split_dimension"], _group_size(inst)
        _dims_in_range((d,), shapes[0].rank, "split_dimension")
        if n and shapes[0].dimensions[d] % n:
            raise ShapeInferenceError(f"split dimension {d} of {shape_text(shapes[0])} does not divide into {n}")
    return _tuple_or_single(list(shapes))


def _all_gather_result(inst: Instruction, big_index: int) -> list[ArrayShape]:
    (d,) = _attr(inst, "dimensions")
    out = []
    for s in _operands(inst):
        _dims_in_range((d,), s.rank, "all-gather dimension")
        n = _shard_count(inst, d, s.dimensions[d], big_index)
        dims = list(s.dimensions)
        dims[d] *= n
        out.append(_array_shape(s.element_type, dims))
    return out


@shape_rule(Opcode.ALL_GATHER)
def _all_gather(inst: Instruction) -> Shape:
    """Operand dimension ``dimensions[0]`` times the group size."""
    return _tuple_or_single(list(_all_gather_result(inst, 0)))


@shape_rule(Opcode.ALL_GATHER_START)
def _all_gather_start(inst: Instruction) -> Shape:
    """(operands, gathered results)."""
    ins = _tuple_or_single([o.shape for o in inst.operands])
    res = _all_gather_result(inst, 1)
    return TupleShape((ins, _tuple_or_single(list(res))))


@shape_rule(Opcode.REDUCE_SCATTER)
def _reduce_scatter(inst: Instruction) -> Shape:
    """Operand dimension ``dimensions[0]`` divided by the group size."""
    (d,) = _attr(inst, "dimensions")
    out = []
    for i, s in enumerate(_operands(inst)):
        _dims_in_range((d,), s.rank, "scatter dimension")
        n = _group_size(inst)
        if n is None:  # implicit groups: the declared result fixes the count
            declared = inst.shape.elements[i] if isinstance(inst.shape, TupleShape) else inst.shape
            n = s.dimensions[d] // declared.dimensions[d] if declared.dimensions[d] else 1
        if s.dimensions[d] % n:
            raise ShapeInferenceError(f"dimension {d} of {shape_text(s)} does not divide into {n} shards")
        dims = list(s.dimensions)
        dims[d] //= n
        out.append(_array_shape(s.element_type, dims))
    return _tuple_or_single(list(out))


@shape_rule(Opcode.COLLECTIVE_PERMUTE, Opcode.COLLECTIVE_PERMUTE_START)
def _collective_permute(inst: Instruction) -> Shape:
    """The operand's shape (the output buffer's in the 4-operand in-place form); start adds context."""
    shapes = [o.shape for o in inst.operands]
    inplace = len(shapes) == 4 and "slice_sizes" in inst.attrs  # (input, output, in/out offsets)
    if inst.opcode is Opcode.COLLECTIVE_PERMUTE:
        return shapes[1] if inplace else _tuple_or_single(shapes)
    if inplace:
        return _with_context(inst, [shapes[0], shapes[1]])
    both = _tuple_or_single(shapes)
    return _with_context(inst, [both, both])


@shape_rule(Opcode.RAGGED_ALL_TO_ALL)
def _ragged_all_to_all(inst: Instruction) -> Shape:
    """The output operand's (operand 1) shape."""
    return _operand(inst, 1)
