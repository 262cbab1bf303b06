"""Plant one bug in a module, as the numerics tools' tests and benchmarks do: change one
constant, or swap the operands of one instruction, and say which instruction it was."""
from __future__ import annotations

import numpy as np

from hloscope.ir import ArrayShape, Instruction, Literal, Module, Opcode
from hloscope.numerics.cut import copy_module

__all__ = ["change_constant", "swap_operands"]

_SWAPPABLE = (Opcode.SUBTRACT, Opcode.DIVIDE, Opcode.POWER, Opcode.ATAN2)


def _scalar(inst: Instruction) -> float | None:
    shape = inst.shape
    if inst.opcode is not Opcode.CONSTANT or not isinstance(shape, ArrayShape) or shape.dimensions:
        return None
    if shape.element_type not in ("f32", "f64", "bf16", "f16"):
        return None
    try:
        value = float(inst.attrs["literal"].to_numpy(inst.shape))
    except Exception:
        return None
    return value if np.isfinite(value) and value not in (0.0, 1.0, -1.0) else None


def change_constant(module: Module, *, factor: float = 1.5, skip: int = 0) -> tuple[Module, str]:
    """A copy of ``module`` with one float scalar constant (not 0 or +-1) read by an
    arithmetic op multiplied by ``factor`` (the ``skip``-th such in module order); returns
    it and the constant's name."""
    out = copy_module(module)
    seen = 0
    for inst in out.instructions():
        value = _scalar(inst)
        if value is None or not inst.users:
            continue
        if seen < skip:
            seen += 1
            continue
        inst.attrs["literal"] = Literal(repr(float(np.float32(value * factor))))
        return out, inst.name
    raise ValueError(f"{module.name} has no float scalar constant to change")


def swap_operands(module: Module, *, skip: int = 0) -> tuple[Module, str]:
    """A copy of ``module`` with the two operands of one subtract/divide/power/atan2 of two
    different same-shaped values swapped (the ``skip``-th such); returns it and its name."""
    out = copy_module(module)
    seen = 0
    for inst in out.instructions():
        if inst.opcode not in _SWAPPABLE or len(inst.operands) != 2:
            continue
        a, b = inst.operands
        if a is b or a.shape.to_text(layout=False) != b.shape.to_text(layout=False):
            continue
        if a.opcode in (Opcode.BROADCAST, Opcode.CONSTANT) and b.opcode in (Opcode.BROADCAST, Opcode.CONSTANT):
            continue
        if seen < skip:
            seen += 1
            continue
        comp = inst.computation
        assert comp is not None
        comp.replace_operand(inst, 0, b)
        comp.replace_operand(inst, 1, a)
        return out, inst.name
    raise ValueError(f"{module.name} has no operands to swap")
