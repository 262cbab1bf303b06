"""Runtime values of the interpreter and their conversion from literals and user inputs.

A value is a numpy array (0-d for scalars; ml_dtypes for bf16/fp8/int4) or a tuple of values,
mirroring an HLO shape. Tokens are 0-d uint8 arrays. Values are *logical* arrays in row-major
order; layouts only matter to ``bitcast`` (see shape_ops.py).
"""
from __future__ import annotations

from typing import Any, Union

import numpy as np

from hloscope.errors import InputError, InterpretError
from hloscope.ir import ArrayShape, Instruction, LiteralError, TupleShape
from hloscope.ir.shape import Shape

__all__ = ["Value", "TOKEN", "constant_value", "coerce_input", "zeros_of", "random_of",
           "describe", "leaves"]

Value = Union[np.ndarray, tuple["Value", ...]]  # noqa: UP007 (recursive alias)

# What token-typed instructions (after-all, add-dependency's token, ...) evaluate to.
TOKEN = np.zeros((), np.uint8)

_FILL_MODES = ("zeros", "random")


def _is_token(shape: ArrayShape) -> bool:
    return shape.primitive_type.kind in ("token", "opaque")


def zeros_of(shape: Shape) -> Value:
    """A value of ``shape`` filled with zeros (tokens for token leaves)."""
    if isinstance(shape, TupleShape):
        return tuple(zeros_of(e) for e in shape.elements)
    if _is_token(shape):
        return TOKEN
    return np.zeros(shape.dimensions, shape.dtype)


def random_of(shape: Shape, rng: np.random.Generator) -> Value:
    """A value of ``shape`` with reproducible random contents: normal floats, small integers,
    random preds (used for elided constants and for demo inputs)."""
    if isinstance(shape, TupleShape):
        return tuple(random_of(e, rng) for e in shape.elements)
    if _is_token(shape):
        return TOKEN
    dt = shape.dtype
    dims = shape.dimensions
    if dt == np.bool_:
        return rng.random(dims) < 0.5
    if dt.kind in "iu":
        return rng.integers(0, 8, size=dims).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dt)
    return rng.standard_normal(dims).astype(dt)


def constant_value(inst: Instruction, fill_elided: str | None, rng: np.random.Generator) -> Value:
    """The value of a ``constant`` instruction.

    An elided literal (``{...}``, Note [Elided literals] in ir/literal.py) has no values; it is an
    error unless ``fill_elided`` is ``"zeros"`` or ``"random"``, the user's explicit choice.
    """
    literal = inst.attrs["literal"]
    if literal.elided:
        if fill_elided == "zeros":
            return zeros_of(inst.shape)
        if fill_elided == "random":
            return random_of(inst.shape, rng)
        raise InterpretError(
            f"constant {inst.name} was elided ({{...}}) when the module was dumped, so its values "
            "are unknown; re-dump with --xla_dump_large_constants / print_large_constants, or run "
            "with fill_elided='zeros' or 'random'"
        )
    try:
        return literal.to_numpy(inst.shape)
    except LiteralError as e:
        raise InterpretError(f"constant {inst.name}: {e}") from None


def coerce_input(x: Any, shape: Shape, what: str) -> Value:
    """User input ``x`` as a value of ``shape``: arrays are converted to the shape's dtype
    (no copy when it already matches) and their dimensions checked; tuples recurse."""
    if isinstance(shape, TupleShape):
        if not isinstance(x, (tuple, list)) or len(x) != len(shape.elements):
            raise InputError(f"{what} expects a tuple of {len(shape.elements)} values {shape}, got {describe(x)}")
        return tuple(coerce_input(v, s, f"{what}[{i}]") for i, (v, s) in enumerate(zip(x, shape.elements, strict=True)))
    if _is_token(shape):
        return TOKEN
    try:
        arr = np.asarray(x)
        if arr.dtype != shape.dtype:
            arr = arr.astype(shape.dtype)
    except (TypeError, ValueError) as e:
        raise InputError(f"{what} expects {shape}: cannot convert {describe(x)} ({e})") from None
    dims = tuple(shape.dimensions)
    # An unbounded dimension (f32[?,784]) takes any size; a bounded one (<=N) its bound, the
    # shape every value has here (Note [Dynamic shapes as bounds] in expanded_ops.py).
    if len(arr.shape) != len(dims) or any(d >= 0 and a != d for a, d in zip(arr.shape, dims, strict=True)):
        raise InputError(f"{what} expects {shape.to_text(layout=False)}, got an array of shape "
                         f"{list(arr.shape)}")
    return arr


def describe(value: Any) -> str:
    """A short human description of a value: ``f32[2,3]`` or ``(s32[], f32[4])``."""
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(describe(v) for v in value) + ")"
    arr = np.asarray(value)
    return f"{arr.dtype}[{','.join(map(str, arr.shape))}]"


def leaves(value: Value) -> list[np.ndarray]:
    """The arrays of a value, depth first."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


def element_arrays(inst: Instruction) -> tuple[ArrayShape, ...]:
    """The element shapes of ``inst``'s tuple result, for ops whose outputs are arrays side by
    side (custom calls, rng-bit-generator); an InterpretError names the instruction otherwise."""
    shape = inst.shape
    if isinstance(shape, TupleShape) and all(isinstance(e, ArrayShape) for e in shape.elements):
        return tuple(e for e in shape.elements if isinstance(e, ArrayShape))
    raise InterpretError(f"{inst.name}: expected a tuple of arrays, got {shape}")


def array_shapes(inst: Instruction) -> tuple[ArrayShape, ...]:
    """``inst``'s result as a tuple of array shapes: its elements, or its own array shape."""
    return element_arrays(inst) if isinstance(inst.shape, TupleShape) else (inst.array_shape,)
