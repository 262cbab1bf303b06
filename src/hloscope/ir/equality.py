"""Structural equality of modules, used by round-trip tests (parse(print(m)) == m)."""
from __future__ import annotations

from typing import Any

from hloscope.ir.computation import Computation
from hloscope.ir.instruction import Instruction

__all__ = ["modules_equal", "first_difference"]


def _norm(value: Any) -> Any:
    if isinstance(value, Computation):
        return ("computation", value.name)
    if isinstance(value, Instruction):
        return ("instruction", value.name)
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


def _instruction_key(inst: Instruction) -> tuple:
    return (
        inst.name,
        inst.opcode,
        inst.shape,
        tuple(o.name for o in inst.operands),
        tuple((k, _norm(v)) for k, v in inst.attrs.items()),
        tuple(p.name for p in inst.control_predecessors),
        inst.is_root,
    )


def first_difference(a: Any, b: Any) -> str | None:
    """A description of the first structural difference between modules, or None if equal."""
    if a.name != b.name:
        return f"module name {a.name!r} != {b.name!r}"
    ha = {k: _norm(v) for k, v in a.attrs.items()}
    hb = {k: _norm(v) for k, v in b.attrs.items()}
    if ha != hb:
        return f"header attributes differ: {ha} != {hb}"
    if a.stack_frames != b.stack_frames:
        return "stack frame tables differ"
    if [c.name for c in a.computations] != [c.name for c in b.computations]:
        return "computation names or order differ"
    if a.entry.name != b.entry.name:
        return "entry computation differs"
    for ca, cb in zip(a.computations, b.computations, strict=True):
        if ca.attrs != cb.attrs:
            return f"computation {ca.name} attributes differ"
        if len(ca.instructions) != len(cb.instructions):
            return f"computation {ca.name}: {len(ca.instructions)} vs {len(cb.instructions)} instructions"
        for ia, ib in zip(ca.instructions, cb.instructions, strict=True):
            ka, kb = _instruction_key(ia), _instruction_key(ib)
            if ka != kb:
                for field, x, y in zip(("name", "opcode", "shape", "operands", "attrs", "control", "root"), ka, kb,
                                       strict=True):
                    if x != y:
                        return f"{ca.name}/{ia.name}: {field} differs: {x!r} != {y!r}"
    return None


def modules_equal(a: Any, b: Any) -> bool:
    return first_difference(a, b) is None
