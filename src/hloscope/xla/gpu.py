"""GPU custom calls written as standard HLO, so that GPU dumps compile on XLA:CPU.

Part of the rewrite of ``hloscope.xla.rewrite`` (Note [GPU custom calls on XLA:CPU] there):
``expand_custom_call`` turns one custom-call instruction whose target is in ``EXPANSIONS`` into
lines of XLA's canonical text (layouts dropped) that compute the same value with ops every
backend has. The instruction comes from ``hloscope.parse`` of the same canonical text, so each
expansion reads its operands and backend_config through hloscope's IR, and the gemm's JSON
through the interpreter's own reader (``hloscope.ir.backend_configs.gemm_spec``): the interpreter and this
rewrite cannot disagree on what a gemm computes.

This module needs no jax; it only writes text.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from hloscope.errors import HloscopeError
from hloscope.ir import ArrayShape, Instruction, TupleShape, type_name_of
from hloscope.ir.backend_configs import gemm_spec

__all__ = ["EXPANSIONS", "Expansion", "expand_custom_call", "expandable_target"]


class _Lines:
    """Emits the definitions replacing one instruction ``%name``: helper values are named
    ``%name.hloscope_<k>`` (XLA names never contain ``hloscope_``), the last one ``%name``."""

    def __init__(self, indent: str, name: str) -> None:
        self.indent = indent
        self.name = name
        self.lines: list[str] = []
        self._constants: dict[tuple[str, str, tuple[int, ...]], str] = {}

    def emit(self, shape: str, expression: str) -> str:
        ref = f"%{self.name}.hloscope_{len(self.lines)}"
        self.lines.append(f"{self.indent}{ref} = {shape} {expression}")
        return ref

    def constant(self, element_type: str, literal: str, dims: tuple[int, ...]) -> str:
        """A ``dims``-shaped array of ``literal`` (one constant and one broadcast, reused)."""
        key = (element_type, literal, dims)
        if key not in self._constants:
            scalar = self.emit(f"{element_type}[]", f"constant({literal})")
            self._constants[key] = (scalar if not dims else
                                    self.emit(_shape(element_type, dims), f"broadcast({scalar}), dimensions={{}}"))
        return self._constants[key]

    def finish(self, root: str, shape: str, expression: str) -> list[str]:
        """The last line, defining ``%name`` itself (``root`` is ``"ROOT "`` or empty)."""
        self.lines.append(f"{self.indent}{root}%{self.name} = {shape} {expression}")
        return self.lines

    def finish_as(self, root: str, ref: str) -> list[str]:
        """Name the value ``ref``, which the last line defines, ``%name``."""
        head = f"{self.indent}{ref} = "
        if not self.lines or not self.lines[-1].startswith(head):
            raise AssertionError(f"{ref} is not the last value of %{self.name}")
        self.lines[-1] = f"{self.indent}{root}%{self.name} = " + self.lines[-1][len(head):]
        return self.lines


def _shape(element_type: str, dims: tuple[int, ...]) -> str:
    return f"{element_type}[{','.join(map(str, dims))}]"


def _braces(xs: list[int] | tuple[int, ...]) -> str:
    return "{" + ",".join(map(str, xs)) + "}"


def _convert(out: _Lines, ref: str, shape: ArrayShape, element_type: str) -> str:
    if shape.element_type == element_type:
        return ref
    return out.emit(_shape(element_type, shape.dimensions), f"convert({ref})")


def _literal(value: complex | float, element_type: str) -> str:
    if element_type.startswith("c"):
        z = complex(value)
        return f"({z.real!r}, {z.imag!r})"
    return repr(float(np.real(value)))


def _broadcast_to(out: _Lines, ref: str, shape: ArrayShape, dims: tuple[int, ...]) -> str:
    """``ref`` broadcast to ``dims`` the numpy way (trailing dimensions aligned, size-1
    dimensions stretched), as jax broadcasts the operands of its GPU kernels. HLO's
    ``broadcast`` cannot stretch a dimension, so size-1 dimensions are reshaped away first."""
    if shape.dimensions == dims:
        return ref
    offset = len(dims) - shape.rank
    if offset < 0 or any(d not in (1, dims[offset + i]) for i, d in enumerate(shape.dimensions)):
        raise HloscopeError(f"cannot broadcast {shape.to_text(layout=False)} to {list(dims)}")
    kept = [offset + i for i, d in enumerate(shape.dimensions) if d == dims[offset + i]]
    t = shape.element_type
    if len(kept) != shape.rank:
        ref = out.emit(_shape(t, tuple(dims[i] for i in kept)), f"reshape({ref})")
    return out.emit(_shape(t, dims), f"broadcast({ref}), dimensions={_braces(kept)}")


def _result_shapes(inst: Instruction) -> tuple[ArrayShape, ...]:
    shape = inst.shape
    return tuple(shape.elements) if isinstance(shape, TupleShape) else (shape,)  # type: ignore[arg-type]


# --- cuBLAS gemm ----------------------------------------------------------------------------


def _gemm(out: _Lines, root: str, inst: Instruction) -> list[str]:
    """``alpha * dot(lhs, rhs) + beta * c (+ bias) (relu)`` in the gemm's compute type (f32
    for narrow floats, as cuBLAS and the interpreter accumulate), rounded once to the result
    type; a tuple result gets zero workspace buffers. Same steps, same order and same
    roundings as ``custom_calls.gemm``."""
    spec = gemm_spec(inst)
    compute = type_name_of(spec.compute)
    operands = list(inst.operands)
    lhs, rhs = operands[0], operands[1]
    a = _convert(out, f"%{lhs.name}", lhs.array_shape, compute)
    b = _convert(out, f"%{rhs.name}", rhs.array_shape, compute)
    ld, rd = lhs.array_shape.dimensions, rhs.array_shape.dimensions
    free_l = [d for d in range(len(ld)) if d not in spec.lb and d not in spec.lc]
    free_r = [d for d in range(len(rd)) if d not in spec.rb and d not in spec.rc]
    dims = tuple([ld[d] for d in spec.lb] + [ld[d] for d in free_l] + [rd[d] for d in free_r])
    # Default precision: XLA:CPU computes an f32 dot in f32, as the interpreter's BLAS call does.
    r = out.emit(_shape(compute, dims),
                 f"dot({a}, {b}), lhs_batch_dims={_braces(spec.lb)}, lhs_contracting_dims={_braces(spec.lc)}, "
                 f"rhs_batch_dims={_braces(spec.rb)}, rhs_contracting_dims={_braces(spec.rc)}")
    full = _shape(compute, dims)
    if spec.alpha != 1:
        r = out.emit(full, f"multiply({r}, {out.constant(compute, _literal(spec.alpha, compute), dims)})")
    rest = operands[2:]
    if spec.beta != 0:
        c = rest.pop(0)
        cref = _convert(out, f"%{c.name}", c.array_shape, compute)
        if c.array_shape.dimensions != dims:
            cref = out.emit(full, f"reshape({cref})")
        if spec.beta != 1:
            cref = out.emit(full, f"multiply({cref}, {out.constant(compute, _literal(spec.beta, compute), dims)})")
        r = out.emit(full, f"add({r}, {cref})")
    if spec.bias:  # a vector along the last dimension
        bias = rest.pop(0)
        bref = _convert(out, f"%{bias.name}", bias.array_shape, compute)
        bref = out.emit(full, f"broadcast({bref}), dimensions={{{len(dims) - 1}}}")
        r = out.emit(full, f"add({r}, {bref})")
    if spec.relu:
        r = out.emit(full, f"maximum({r}, {out.constant(compute, '0', dims)})")
    result, *workspaces = _result_shapes(inst)
    final = result.to_text(layout=False)
    if compute != result.element_type:
        r = out.emit(_shape(result.element_type, dims), f"convert({r})")
    if dims != result.dimensions:
        r = out.emit(final, f"reshape({r})")
    if not workspaces:
        return out.finish_as(root, r)
    leaves = [r] + [out.constant(w.element_type, "0", w.dimensions) for w in workspaces]
    return out.finish(root, inst.shape.to_text(layout=False), f"tuple({', '.join(leaves)})")


# --- jax's threefry kernel ------------------------------------------------------------------

_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_THREEFRY_PARITY = 0x1BD11BDA


def _threefry(out: _Lines, root: str, inst: Instruction) -> list[str]:
    """Threefry-2x32 with 20 rounds, unrolled into u32 add/xor/shift/or: the same schedule as
    ``rng.threefry2x32`` (and jax's ``_threefry2x32_lowering``), so the bits are the same.
    Operands (key0, key1, x0, x1) are broadcast to the result shape as jax broadcasts them."""
    y_shape = _result_shapes(inst)[0]
    dims = y_shape.dimensions
    t = y_shape.element_type
    shape = _shape(t, dims)
    k0, k1, x0, x1 = (_broadcast_to(out, f"%{o.name}", o.array_shape, dims) for o in list(inst.operands)[:4])

    def const(v: int) -> str:
        return out.constant(t, str(v), dims)

    def op(name: str, a: str, b: str) -> str:
        return out.emit(shape, f"{name}({a}, {b})")

    k2 = op("xor", op("xor", k0, k1), const(_THREEFRY_PARITY))
    schedule = ((k1, k2), (k2, k0), (k0, k1), (k1, k2), (k2, k0))
    y0, y1 = op("add", x0, k0), op("add", x1, k1)
    for i, (a, b) in enumerate(schedule):
        for r in _THREEFRY_ROTATIONS[i % 2]:
            y0 = op("add", y0, y1)
            rotated = op("or", op("shift-left", y1, const(r)), op("shift-right-logical", y1, const(32 - r)))
            y1 = op("xor", rotated, y0)
        y0 = op("add", y0, a)
        y1 = op("add", op("add", y1, b), const(i + 1))
    return out.finish(root, inst.shape.to_text(layout=False), f"tuple({y0}, {y1})")


# --- the table ------------------------------------------------------------------------------


class Expansion(NamedTuple):
    """How one custom-call target is written in standard HLO; ``how`` completes
    "<count> <target> calls ...", e.g. "as dot"."""

    expand: Callable[[_Lines, str, Instruction], list[str]]
    how: str


EXPANSIONS: dict[str, Expansion] = {
    "__cublas$gemm": Expansion(_gemm, "as dot"),
    "__cublas$lt$matmul": Expansion(_gemm, "as dot"),
    **{t: Expansion(_threefry, "as HLO") for t in ("cuda_threefry2x32", "cu_threefry2x32",
                                                     "cu_threefry2x32_ffi", "hip_threefry2x32",
                                                     "hip_threefry2x32_ffi")},
}


def expandable_target(target: str) -> bool:
    """True when ``expand_custom_call`` can write a custom call to ``target`` as standard HLO."""
    return target in EXPANSIONS


def expand_custom_call(inst: Instruction, *, indent: str = "  ", root: bool = False) -> list[str]:
    """Canonical HLO lines (no layouts) defining ``%<inst.name>`` with the value of the custom
    call ``inst``; helper instructions come first. Raises ``HloscopeError`` for a target not in
    ``EXPANSIONS`` or a configuration the expansion cannot express."""
    target = inst.custom_call_target or ""
    expansion = EXPANSIONS.get(target)
    if expansion is None:
        raise HloscopeError(f"no standard-HLO form is known for custom call {target!r} ({inst.name})")
    return expansion.expand(_Lines(indent, inst.name), "ROOT " if root else "", inst)
