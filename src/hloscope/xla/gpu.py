"""GPU custom calls (and jax's host callbacks) written as standard HLO, so that GPU dumps, and
modules calling back into the Python process that compiled them, compile on XLA:CPU.

Part of the rewrite of ``hloscope.xla.rewrite`` (Note [GPU custom calls on XLA:CPU] there):
``expand_custom_call`` turns one custom-call instruction whose target is in ``EXPANSIONS`` into
new instructions (no layouts) that compute the same value with ops every backend has; the
rewrite pass puts them in the custom call's place with ``Computation.replace_instruction``.
Each expansion reads its operands and backend_config through hloscope's IR, and the gemm's
JSON through the interpreter's own reader (``hloscope.ir.backend_configs.gemm_spec``): the
interpreter and this rewrite cannot disagree on what a gemm computes.

This module needs no jax; it only builds IR.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from hloscope.errors import HloscopeError, XlaCompileError
from hloscope.ir import ArrayShape, Instruction, Literal, Opcode, Shape, TupleShape, type_name_of
from hloscope.ir.backend_configs import gemm_spec
from hloscope.ir.shape import without_layouts

__all__ = ["EXPANSIONS", "Expansion", "HOST_CALLBACKS", "expand_custom_call", "expandable_target"]


class _Builder:
    """Builds the instructions replacing one custom call ``name``: helper values are named
    ``name.hloscope_<k>`` (XLA names never contain ``hloscope_``), the last one ``name``
    itself. Shapes carry no layouts (Note [Recompiling optimized HLO] in rewrite.py)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.instructions: list[Instruction] = []
        self._constants: dict[tuple[str, str, tuple[int, ...]], Instruction] = {}

    def emit(self, shape: Shape, opcode: Opcode, *operands: Instruction, **attrs: Any) -> Instruction:
        inst = Instruction(f"{self.name}.hloscope_{len(self.instructions)}", opcode, shape,
                           list(operands), dict(attrs))
        self.instructions.append(inst)
        return inst

    def constant(self, element_type: str, literal: str, dims: tuple[int, ...]) -> Instruction:
        """A ``dims``-shaped array of ``literal`` (one constant and one broadcast, reused)."""
        key = (element_type, literal, dims)
        if key not in self._constants:
            scalar = self.emit(ArrayShape(element_type), Opcode.CONSTANT, literal=Literal(literal))
            self._constants[key] = (scalar if not dims else self.emit(
                ArrayShape(element_type, dims), Opcode.BROADCAST, scalar, dimensions=()))
        return self._constants[key]

    def finish(self, shape: Shape, opcode: Opcode, *operands: Instruction) -> list[Instruction]:
        """The last instruction, named ``name`` itself."""
        self.instructions.append(Instruction(self.name, opcode, shape, list(operands)))
        return self.instructions

    def finish_as(self, inst: Instruction) -> list[Instruction]:
        """Name ``inst``, which must be the last instruction emitted, ``name``."""
        if not self.instructions or self.instructions[-1] is not inst:
            raise AssertionError(f"{inst.name} is not the last value of {self.name}")
        inst.name = self.name
        return self.instructions


def _shape(element_type: str, dims: tuple[int, ...]) -> ArrayShape:
    return ArrayShape(element_type, tuple(dims))


def _convert(out: _Builder, ref: Instruction, element_type: str) -> Instruction:
    shape = ref.array_shape
    if shape.element_type == element_type:
        return ref
    return out.emit(_shape(element_type, shape.dimensions), Opcode.CONVERT, ref)


def _literal(value: complex | float, element_type: str) -> str:
    if element_type.startswith("c"):
        z = complex(value)
        return f"({z.real!r}, {z.imag!r})"
    return repr(float(np.real(value)))


def _broadcast_to(out: _Builder, ref: Instruction, dims: tuple[int, ...]) -> Instruction:
    """``ref`` broadcast to ``dims`` the numpy way (trailing dimensions aligned, size-1
    dimensions stretched), as jax broadcasts the operands of its GPU kernels. HLO's
    ``broadcast`` cannot stretch a dimension, so size-1 dimensions are reshaped away first."""
    shape = ref.array_shape
    if shape.dimensions == dims:
        return ref
    offset = len(dims) - shape.rank
    if offset < 0 or any(d not in (1, dims[offset + i]) for i, d in enumerate(shape.dimensions)):
        raise HloscopeError(f"cannot broadcast {shape.to_text(layout=False)} to {list(dims)}")
    kept = [offset + i for i, d in enumerate(shape.dimensions) if d == dims[offset + i]]
    t = shape.element_type
    if len(kept) != shape.rank:
        ref = out.emit(_shape(t, tuple(dims[i] for i in kept)), Opcode.RESHAPE, ref)
    return out.emit(_shape(t, dims), Opcode.BROADCAST, ref, dimensions=tuple(kept))


def _result_shapes(inst: Instruction) -> tuple[ArrayShape, ...]:
    shape = inst.shape
    parts = shape.elements if isinstance(shape, TupleShape) else (shape,)
    arrays = tuple(s for s in parts if isinstance(s, ArrayShape))
    if len(arrays) != len(parts):
        raise XlaCompileError(f"{inst.name}: a GPU custom call with a nested tuple result is not expanded")
    return arrays


# --- cuBLAS gemm ----------------------------------------------------------------------------


def _gemm(out: _Builder, inst: Instruction) -> list[Instruction]:
    """``alpha * dot(lhs, rhs) + beta * c (+ bias) (relu)`` in the gemm's compute type (f32
    for narrow floats, as cuBLAS and the interpreter accumulate), rounded once to the result
    type; a tuple result gets zero workspace buffers. Same steps, same order and same
    roundings as ``custom_calls.gemm``."""
    spec = gemm_spec(inst)
    compute = type_name_of(spec.compute)
    operands = list(inst.operands)
    lhs, rhs = operands[0], operands[1]
    a = _convert(out, lhs, compute)
    b = _convert(out, rhs, compute)
    ld, rd = lhs.array_shape.dimensions, rhs.array_shape.dimensions
    free_l = [d for d in range(len(ld)) if d not in spec.lb and d not in spec.lc]
    free_r = [d for d in range(len(rd)) if d not in spec.rb and d not in spec.rc]
    dims = tuple([ld[d] for d in spec.lb] + [ld[d] for d in free_l] + [rd[d] for d in free_r])
    full = _shape(compute, dims)
    # Default precision: XLA:CPU computes an f32 dot in f32, as the interpreter's BLAS call does.
    r = out.emit(full, Opcode.DOT, a, b, lhs_batch_dims=tuple(spec.lb),
                 lhs_contracting_dims=tuple(spec.lc), rhs_batch_dims=tuple(spec.rb),
                 rhs_contracting_dims=tuple(spec.rc))
    if spec.alpha != 1:
        r = out.emit(full, Opcode.MULTIPLY, r, out.constant(compute, _literal(spec.alpha, compute), dims))
    rest = operands[2:]
    if spec.beta != 0:
        c = _convert(out, rest.pop(0), compute)
        if c.array_shape.dimensions != dims:
            c = out.emit(full, Opcode.RESHAPE, c)
        if spec.beta != 1:
            c = out.emit(full, Opcode.MULTIPLY, c, out.constant(compute, _literal(spec.beta, compute), dims))
        r = out.emit(full, Opcode.ADD, r, c)
    if spec.bias:  # a vector along the last dimension
        bias = _convert(out, rest.pop(0), compute)
        bias = out.emit(full, Opcode.BROADCAST, bias, dimensions=(len(dims) - 1,))
        r = out.emit(full, Opcode.ADD, r, bias)
    if spec.relu:
        r = out.emit(full, Opcode.MAXIMUM, r, out.constant(compute, "0", dims))
    result, *workspaces = _result_shapes(inst)
    if compute != result.element_type:
        r = out.emit(_shape(result.element_type, dims), Opcode.CONVERT, r)
    if dims != result.dimensions:
        r = out.emit(without_layouts(result), Opcode.RESHAPE, r)
    if not workspaces:
        return out.finish_as(r)
    leaves = [r] + [out.constant(w.element_type, "0", w.dimensions) for w in workspaces]
    return out.finish(without_layouts(inst.shape), Opcode.TUPLE, *leaves)


# --- jax's threefry kernel ------------------------------------------------------------------

_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_THREEFRY_PARITY = 0x1BD11BDA


def _threefry(out: _Builder, inst: Instruction) -> list[Instruction]:
    """Threefry-2x32 with 20 rounds, unrolled into u32 add/xor/shift/or: the same schedule as
    ``rng.threefry2x32`` (and jax's ``_threefry2x32_lowering``), so the bits are the same.
    Operands (key0, key1, x0, x1) are broadcast to the result shape as jax broadcasts them."""
    y_shape = _result_shapes(inst)[0]
    dims = y_shape.dimensions
    t = y_shape.element_type
    shape = _shape(t, dims)
    k0, k1, x0, x1 = (_broadcast_to(out, o, dims) for o in list(inst.operands)[:4])

    def const(v: int) -> Instruction:
        return out.constant(t, str(v), dims)

    def op(opcode: Opcode, a: Instruction, b: Instruction) -> Instruction:
        return out.emit(shape, opcode, a, b)

    k2 = op(Opcode.XOR, op(Opcode.XOR, k0, k1), const(_THREEFRY_PARITY))
    schedule = ((k1, k2), (k2, k0), (k0, k1), (k1, k2), (k2, k0))
    y0, y1 = op(Opcode.ADD, x0, k0), op(Opcode.ADD, x1, k1)
    for i, (a, b) in enumerate(schedule):
        for r in _THREEFRY_ROTATIONS[i % 2]:
            y0 = op(Opcode.ADD, y0, y1)
            rotated = op(Opcode.OR, op(Opcode.SHIFT_LEFT, y1, const(r)),
                         op(Opcode.SHIFT_RIGHT_LOGICAL, y1, const(32 - r)))
            y1 = op(Opcode.XOR, rotated, y0)
        y0 = op(Opcode.ADD, y0, a)
        y1 = op(Opcode.ADD, op(Opcode.ADD, y1, b), const(i + 1))
    return out.finish(without_layouts(inst.shape), Opcode.TUPLE, y0, y1)


# --- host callbacks -------------------------------------------------------------------------
# jax.debug.print / jax.debug.callback call Python code registered in the process that
# compiled the module (backend_config names its index there); another process has no such
# callback, and XLA:CPU crashes calling it. Such a call returns no data (() or a token), so the
# module's values do not depend on it: it becomes the empty tuple (or a token), as hloscope's
# interpreter skips it. A callback returning data (pure_callback) has no standard-HLO form.

HOST_CALLBACKS = ("xla_ffi_python_cpu_callback", "xla_python_cpu_callback",
                  "xla_ffi_python_gpu_callback", "xla_python_gpu_callback")


def _no_data(shape: Shape) -> Instruction | None:
    """Standard HLO for a value of ``shape`` that holds no data, or None if it holds some."""
    if isinstance(shape, TupleShape):
        elements = [_no_data(e) for e in shape.elements]
        if any(e is None for e in elements):
            return None
        return Instruction("", Opcode.TUPLE, shape, [e for e in elements if e is not None])
    if isinstance(shape, ArrayShape) and shape.element_type == "token":
        return Instruction("", Opcode.AFTER_ALL, shape, [])
    return None


def _host_callback(out: _Builder, inst: Instruction) -> list[Instruction]:
    value = _no_data(without_layouts(inst.shape))
    if value is None:
        raise HloscopeError(f"{inst.custom_call_target} ({inst.name}) returns {inst.shape}: a Python "
                            "callback (jax.pure_callback) computes it, outside the module")

    def emit(v: Instruction) -> Instruction:
        return out.emit(v.shape, v.opcode, *[emit(o) for o in v.operands])

    return out.finish_as(emit(value))


# --- the table ------------------------------------------------------------------------------


class Expansion(NamedTuple):
    """How one custom-call target is written in standard HLO; ``how`` completes
    "<count> <target> calls ...", e.g. "as dot"."""

    expand: Callable[[_Builder, Instruction], list[Instruction]]
    how: str


EXPANSIONS: dict[str, Expansion] = {
    "__cublas$gemm": Expansion(_gemm, "as dot"),
    "__cublas$lt$matmul": Expansion(_gemm, "as dot"),
    **{t: Expansion(_threefry, "as HLO") for t in ("cuda_threefry2x32", "cu_threefry2x32",
                                                     "cu_threefry2x32_ffi", "hip_threefry2x32",
                                                     "hip_threefry2x32_ffi")},
    **{t: Expansion(_host_callback, "as no value (host callbacks: debug prints)") for t in HOST_CALLBACKS},
}


def expandable_target(target: str) -> bool:
    """True when ``expand_custom_call`` can write a custom call to ``target`` as standard HLO."""
    return target in EXPANSIONS


def expand_custom_call(inst: Instruction) -> list[Instruction]:
    """New instructions (in no computation yet, operands among ``inst``'s) computing the value
    of the custom call ``inst``: helpers first, the last one named ``inst.name`` with the same
    value. Raises ``HloscopeError`` for a target not in ``EXPANSIONS`` or a configuration the
    expansion cannot express."""
    target = inst.custom_call_target or ""
    expansion = EXPANSIONS.get(target)
    if expansion is None:
        raise HloscopeError(f"no standard-HLO form is known for custom call {target!r} ({inst.name})")
    return expansion.expand(_Builder(inst.name), inst)
