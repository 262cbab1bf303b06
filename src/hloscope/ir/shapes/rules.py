"""The shape-rule registry and the vocabulary every rule is written in.

``SHAPE_RULES`` maps an opcode to its rule, filled with ``@shape_rule`` by the family modules
(``shape_elementwise``, ``shape_movement``, ``shape_reduction``, ``shape_linalg``,
``shape_collectives``, ``shape_control``); ``NOT_INFERABLE`` names the opcodes whose result the
operands do not determine, with the reason, and ``SHAPE_CHECKS`` holds the partial checks some
of them still get (``@shape_check``). ``hloscope.ir.shape_inference`` imports every family and
is the entry point; this module imports none of them, so the import graph has no cycle.

Each rule takes an ``Instruction`` and returns the shape XLA's ``ShapeInference`` would give
it, or raises ``ShapeInferenceError`` saying which operand or attribute is inconsistent and
what was expected.

Note [Declared parts]
    A few results carry a choice the operands do not determine: the element type of ``convert``,
    ``bitcast-convert``, ``dot`` and ``convolution`` (the preferred element type), the shard
    count of ``all-gather``/``reduce-scatter`` when replica groups are implicit, the context
    elements of ``*-start`` tuples, and the result of an async op whose wrapped computation is
    only partly bound (Note [Async shapes] in ``shape_control``). Rules take exactly those
    parts from the declared shape, as XLA's verifier does, and infer everything else.

Note [Buffer shapes]
    ``b(f32[4])`` is XLA's buffer type: a mutable buffer holding an array, made by the
    ``Pin``/``CreateBuffer`` custom calls and updated in place by custom calls and
    ``dynamic-update-slice``. For XLA a buffer is not an array (``IsArrayExcludingBuffer``), so
    ``operand_shape`` rejects one as every array rule's operand, as XLA's ``ExpectArray``
    does; rules that only route values (tuple, get-tuple-element, while, ...) pass buffers
    through, and the verifier checks where buffers may appear (XLA's ``VerifyBuffers``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hloscope.errors import HloscopeError
from hloscope.ir.attributes import RawAttribute
from hloscope.ir.dtypes import PRIMITIVE_TYPES
from hloscope.ir.instruction import Instruction
from hloscope.ir.op_table import OpTable
from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import ArrayShape, Shape, TupleShape

Rule = Callable[[Instruction], Shape]
Check = Callable[[Instruction], None]

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
    Opcode.RAGGED_DOT: "ragged_dot_dimension_numbers is kept as raw text by the parser",
    Opcode.SCALED_DOT: "scaled-dot's operand order and scale semantics are not modelled yet",
    Opcode.SHUFFLE: "shuffle's attributes are kept as raw text by the parser",
    Opcode.COLLECTIVE_REDUCE: "collective-reduce's result form is not modelled yet",
}


SHAPE_RULES: OpTable[Rule] = OpTable("shape rules", unsupported=NOT_INFERABLE)
SHAPE_CHECKS: OpTable[Check] = OpTable(
    "shape checks", fallback="only opcodes in NOT_INFERABLE get a partial check; the rest have a rule")


class ShapeInferenceError(HloscopeError):
    """An instruction's operands or attributes admit no result shape; the message says why."""


def shape_rule(*opcodes: Opcode) -> Callable[[Rule], Rule]:
    """Register the decorated function as the shape rule of ``opcodes``."""
    return SHAPE_RULES.register(*opcodes)


def shape_check(*opcodes: Opcode) -> Callable[[Check], Check]:
    """Register a consistency check for opcodes in ``NOT_INFERABLE``."""
    for op in opcodes:
        if op not in NOT_INFERABLE:
            raise ValueError(f"{op.text} has a shape rule; a shape check is only for NOT_INFERABLE opcodes")
    return SHAPE_CHECKS.register(*opcodes)


def same_shape(a: Shape, b: Shape) -> bool:
    """Equal ignoring layouts: element types, dimensions, dynamic flags and buffer-ness
    (recursively)."""
    if isinstance(a, TupleShape) or isinstance(b, TupleShape):
        return (isinstance(a, TupleShape) and isinstance(b, TupleShape)
                and len(a.elements) == len(b.elements)
                and all(same_shape(x, y) for x, y in zip(a.elements, b.elements, strict=True)))
    return (a.element_type == b.element_type and a.dimensions == b.dimensions
            and dynamic_flags(a) == dynamic_flags(b) and a.buffer == b.buffer)


def compatible(a: Shape, b: Shape) -> bool:
    """XLA's ``ShapeUtil::Compatible``, the verifier's comparison of a declared shape with the
    inferred one: ``same_shape`` but blind to dynamic flags (``f32[<=4]`` is compatible with
    ``f32[4]``)."""
    if isinstance(a, TupleShape) or isinstance(b, TupleShape):
        return (isinstance(a, TupleShape) and isinstance(b, TupleShape)
                and len(a.elements) == len(b.elements)
                and all(compatible(x, y) for x, y in zip(a.elements, b.elements, strict=True)))
    return a.element_type == b.element_type and a.dimensions == b.dimensions and a.buffer == b.buffer


def is_prefix(prefix: Shape, shape: Shape) -> bool:
    """XLA's ``ShapeUtil::IsPrefix`` with ``compatible``: equal, the empty tuple, or a tuple
    whose elements are prefixes of the first elements of ``shape`` (async late binding)."""
    if compatible(prefix, shape):
        return True
    if not isinstance(prefix, TupleShape):
        return False
    if not prefix.elements:
        return True
    return (isinstance(shape, TupleShape) and len(prefix.elements) <= len(shape.elements)
            and all(is_prefix(p, s) for p, s in zip(prefix.elements, shape.elements, strict=False)))


def shape_text(shape: Shape) -> str:
    """``shape`` as HLO text without layouts, as messages show it."""
    return shape.to_text(layout=False)


# --- the vocabulary of rules ---------------------------------------------------------------------
def dynamic_flags(s: ArrayShape) -> tuple[bool, ...]:
    """``s``'s dynamic flags, ``()`` when no dimension is dynamic (the canonical form)."""
    return s.dynamic if any(s.dynamic) else ()


def array_shape(etype: str, dims: Any, dynamic: Any = ()) -> ArrayShape:
    """An array shape without layout; ``dynamic`` flags are kept only when one is set."""
    dyn = tuple(bool(d) for d in dynamic)
    return ArrayShape(etype, tuple(dims), dyn if any(dyn) else ())


def operand_shape(inst: Instruction, i: int, *, buffer_ok: bool = False) -> ArrayShape:
    """Operand ``i``'s shape, which must be an array (XLA's ``ExpectArray``); a buffer only
    where ``buffer_ok`` (Note [Buffer shapes])."""
    if i >= len(inst.operands):
        raise ShapeInferenceError(f"{inst.opcode.text} needs operand {i}, has {len(inst.operands)} operands")
    s = inst.operands[i].shape
    if not isinstance(s, ArrayShape) or (s.buffer and not buffer_ok):
        raise ShapeInferenceError(
            f"operand {i} of {inst.opcode.text} must be an array, got {shape_text(s)}")
    return s


def operand_shapes(inst: Instruction) -> list[ArrayShape]:
    """Every operand's shape, each an array (``operand_shape``)."""
    return [operand_shape(inst, i) for i in range(len(inst.operands))]


def attribute(inst: Instruction, name: str, default: Any = ...) -> Any:
    """Attribute ``name``; without a ``default`` a missing one is an error."""
    v = inst.attrs.get(name, default)
    if v is ...:
        raise ShapeInferenceError(f"{inst.opcode.text} needs attribute {name}")
    return v


def int_attribute(inst: Instruction, name: str) -> int:
    """Attribute ``name`` as an int, also when the parser kept it as raw text."""
    v = attribute(inst, name)
    if isinstance(v, RawAttribute):  # attributes the parser does not type, e.g. feature_index
        try:
            return int(v.text)
        except ValueError:
            raise ShapeInferenceError(f"{name}={v.text} is not an integer") from None
    return int(v)


def dims_in_range(dims: tuple[int, ...], rank: int, what: str) -> None:
    """Raise unless ``dims`` are distinct dimension numbers of a rank-``rank`` shape."""
    for d in dims:
        if not 0 <= d < rank:
            raise ShapeInferenceError(f"{what} {d} is out of range for rank {rank}")
    if len(set(dims)) != len(dims):
        raise ShapeInferenceError(f"{what} {list(dims)} has repeated dimensions")


def tuple_or_single(shapes: list[Shape]) -> Shape:
    """The one shape, or the tuple of several (variadic ops' results)."""
    return shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))


def declared_array(inst: Instruction) -> ArrayShape:
    """The declared shape, which must be an array (Note [Declared parts])."""
    if not isinstance(inst.shape, ArrayShape):
        raise ShapeInferenceError(f"{inst.opcode.text} must produce an array, declared {shape_text(inst.shape)}")
    return inst.shape


def called_root_shape(inst: Instruction, attr: str) -> Shape:
    """The root shape of the (first) computation attribute ``attr`` names."""
    comp = attribute(inst, attr)
    if isinstance(comp, list):
        if not comp:
            raise ShapeInferenceError(f"{inst.opcode.text} calls no computation")
        comp = comp[0]
    if isinstance(comp, str):
        raise ShapeInferenceError(f"{attr}={comp} does not name a computation of this module")
    return comp.root.shape


COMPLEX_OF = {"f32": "c64", "f64": "c128"}
REAL_OF = {"c64": "f32", "c128": "f64"}


def merge_equal(inst: Instruction, a: ArrayShape, b: ArrayShape, ia: int, ib: int,
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


def tuple_element(inst: Instruction, index: int) -> Shape:
    """Element ``index`` of operand 0, which must be a tuple that long."""
    s = inst.operands[0].shape
    if not isinstance(s, TupleShape) or len(s.elements) <= index:
        raise ShapeInferenceError(
            f"{inst.opcode.text} needs a tuple operand with an element {index}, got {shape_text(s)}")
    return s.elements[index]


SCALAR = {t: ArrayShape(t) for t in ("u32", "s32", "pred", "u64")}
TOKEN = ArrayShape("token")


def with_context(inst: Instruction, leading: list[Shape]) -> Shape:
    """``leading`` plus the declared trailing context scalars (Note [Declared parts])."""
    declared = inst.shape
    extra: tuple[Shape, ...] = ()
    if isinstance(declared, TupleShape) and len(declared.elements) > len(leading):
        extra = tuple(e for e in declared.elements[len(leading):]
                      if isinstance(e, ArrayShape) and e.rank == 0)
    return TupleShape((*leading, *extra))


def same_type_ignoring_fp_precision(a: str, b: str) -> bool:
    """XLA's SameElementTypeIgnoringFpPrecision: equal, or both floating point."""
    return a == b or (PRIMITIVE_TYPES[a].kind == "float" and PRIMITIVE_TYPES[b].kind == "float")

