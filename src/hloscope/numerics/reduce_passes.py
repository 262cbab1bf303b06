"""The shrinking steps of ``reduce`` (reduce.py): small IR passes, each making a new module
from a copy of the one it is given, with the IR editing API (Note [Editing the IR] in
ir/computation.py). Each is tested on its own (tests/numerics/test_reduce_passes.py).

A step that changes the entry's parameters says how: ``Signature.kept`` lists, for each
parameter of the new module, the old parameter number it was (None for a new one, which
takes the value given).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from hloscope.ir import Computation, Instruction, Module, Opcode
from hloscope.ir.names import NameUniquer
from hloscope.numerics.cut import copy_module, rebuild

__all__ = ["Signature", "apply_signature", "cut_at", "dead_code", "inline", "loop_once", "size_of",
           "to_parameters", "unused_parameters"]


@dataclasses.dataclass(frozen=True)
class Signature:
    """How a step renumbered the entry's parameters: ``kept[i]`` is the old number of new
    parameter ``i``, or None for a new parameter (the ``added`` values, in order)."""

    kept: tuple[int | None, ...]


def size_of(module: Module) -> int:
    """Instructions in the module, parameters aside (what reduce makes small)."""
    return sum(1 for i in module.instructions() if i.opcode is not Opcode.PARAMETER)


def _live(comp: Computation) -> set[int]:
    live = {id(comp.root)}
    for inst in reversed(comp.instructions):
        if id(inst) in live or inst.attrs.get("custom_call_has_side_effect"):
            live.add(id(inst))
            live.update(id(o) for o in inst.operands)
            live.update(id(p) for p in inst.attrs.get("control-predecessors", ()))
    return live


def dead_code(module: Module) -> Module:
    """Drop (in place) the entry instructions the root does not need, and the computations no
    instruction calls any more; parameters stay (``unused_parameters`` drops them)."""
    entry = module.entry
    live = _live(entry)
    for inst in reversed(list(entry.instructions)):
        if id(inst) not in live and inst.opcode is not Opcode.PARAMETER:
            entry.remove_instruction(inst)  # its users, dead too, came later and are gone
    return rebuild(module, entry, keep_signature=True)


def cut_at(module: Module, name: str) -> Module:
    """A copy of ``module`` whose entry returns entry instruction ``name`` (and computes only
    what it needs)."""
    out = copy_module(module)
    out.entry.set_root(out.entry.instruction(name))
    return dead_code(rebuild(out, out.entry))


def to_parameters(module: Module, names: Sequence[str]) -> tuple[Module, Signature]:
    """A copy of ``module`` where each named entry instruction is a new parameter (its value
    becomes an input) and what only it needed is gone; the new parameters come after the
    old ones, in ``names`` order."""
    out = copy_module(module)
    entry = out.entry
    first = len(entry.parameters)
    for k, name in enumerate(names):
        old = entry.instruction(name)
        param = Instruction(f"{name}.in", Opcode.PARAMETER, old.shape, attrs={"parameter_number": first + k})
        param.span = None
        entry.replace_instruction(old, param)
        entry.parameters.append(param)
    entry.parameters.sort(key=lambda p: p.attrs["parameter_number"])
    out = dead_code(rebuild(out, entry))
    return out, Signature(tuple(range(first)) + (None,) * len(names))


def unused_parameters(module: Module) -> tuple[Module, Signature]:
    """A copy of ``module`` without the entry parameters nothing reads, the rest renumbered."""
    out = copy_module(module)
    entry = out.entry
    used = [p for p in entry.parameters if p.users or p is entry.root]
    kept = tuple(p.attrs["parameter_number"] for p in used)
    if len(used) == len(entry.parameters):
        return out, Signature(kept)
    for k, p in enumerate(used):
        p.attrs["parameter_number"] = k
    unused = {id(p) for p in entry.parameters} - {id(p) for p in used}
    comp = Computation(entry.name, [i for i in entry.instructions if id(i) not in unused], entry.root,
                       is_entry=True, attrs=dict(entry.attrs))
    out.computations[out.computations.index(entry)] = comp
    return rebuild(_replaced(out, entry, comp), comp), Signature(kept)


def _replaced(module: Module, old: Computation, new: Computation) -> Module:
    comps = [new if c is old else c for c in module.computations]
    return Module(module.name, comps, new, dict(module.attrs), stack_frames=module.stack_frames, style=module.style)


def inline(module: Module, name: str) -> Module:
    """A copy of ``module`` with entry instruction ``name`` (a fusion or a call) replaced by
    the instructions of the computation it calls (their names kept where free)."""
    out = copy_module(module)
    entry = out.entry
    inst = entry.instruction(name)
    comp = inst.called_computations[0]
    names = NameUniquer()
    alone = sum(comp in i.called_computations for i in out.instructions()) == 1
    for i in out.instructions():  # the inlined copies keep their names when nothing else calls comp
        if not (alone and i.computation is comp):
            names.unique(i.name)
    made: dict[int, Instruction] = {}
    for p in comp.parameters:
        made[id(p)] = inst.operands[p.parameter_number]
    for i in comp.instructions:
        if i.opcode is Opcode.PARAMETER:
            continue
        attrs = {k: v for k, v in i.attrs.items() if k != "control-predecessors"}
        clone = Instruction(names.unique(i.name), i.opcode, i.shape, [made[id(o)] for o in i.operands], attrs)
        entry.add_instruction(clone, before=inst)
        made[id(i)] = clone
    root = made[id(comp.root)]
    if root.opcode is Opcode.PARAMETER or root.computation is not entry:
        entry.replace_all_uses_with(inst, root)
        entry.remove_instruction(inst)
    else:
        entry.replace_instruction(inst, root)
    return dead_code(rebuild(out, entry, keep_signature=True))


def loop_once(module: Module, name: str, iteration: int = 0) -> tuple[Module, Signature]:
    """A copy of ``module`` where entry while loop ``name`` is one iteration: a call of its
    body on a new parameter ``<name>.iteration<k>``, the loop state iteration ``k`` starts
    from (given as an input)."""
    out = copy_module(module)
    entry = out.entry
    loop = entry.instruction(name)
    first = len(entry.parameters)
    state = Instruction(f"{name}.iteration{iteration}", Opcode.PARAMETER, loop.operands[0].shape,
                        attrs={"parameter_number": first})
    entry.add_instruction(state, before=loop)
    call = Instruction(f"{name}.once", Opcode.CALL, loop.shape, [state], {"to_apply": loop.attrs["body"]})
    entry.replace_instruction(loop, call)
    return dead_code(rebuild(out, entry)), Signature(tuple(range(first)) + (None,))


def apply_signature(inputs: Sequence[Any], sig: Signature, added: Sequence[Any]) -> list[Any]:
    """One device's inputs after a step: old ones by ``sig.kept``, new ones from ``added``."""
    extra = iter(added)
    return [inputs[k] if k is not None else next(extra) for k in sig.kept]
