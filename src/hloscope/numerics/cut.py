"""Cut-down modules: IR passes that make a new module from a piece of another.

``with_outputs`` makes chosen entry instructions the outputs (the module cut at them);
``isolate`` makes one instruction, or one called computation, a module of its own whose
parameters are what it reads (XLA's ``run_hlo_module --isolate_instructions`` does the
same). Comparing with XLA (xla_compare.py) runs these on XLA:CPU to see intermediate values
XLA never returns, and ``reduce`` (reduce.py) is built from the same steps. Every pass works
on a copy (``copy_module``): the module it is given is never changed.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from hloscope.ir import Computation, Instruction, Module, Opcode, TupleShape
from hloscope.ir.names import NameUniquer

__all__ = ["copy_module", "find_instruction", "isolate", "isolate_computation", "reachable_computations",
           "rebuild", "with_outputs", "SIGNATURE_ATTRS"]

# Header attributes that describe the entry's signature: they go when the signature changes.
SIGNATURE_ATTRS = ("input_output_alias", "buffer_donor", "entry_computation_layout", "is_scheduled")


def copy_module(module: Module) -> Module:
    """An independent copy of ``module`` (its text parsed again: names and order kept)."""
    from hloscope.text.parser import parse_module

    return parse_module(module.to_text(), module.name)


def find_instruction(module: Module, name: str) -> Instruction:
    """The instruction called ``name`` in any computation; KeyError if none."""
    for comp in module.computations:
        try:
            return comp.instruction(name)
        except KeyError:
            continue
    raise KeyError(name)


def reachable_computations(module: Module, entry: Computation) -> list[Computation]:
    """``entry`` and every computation it calls, directly or not, in the module's order
    (callees before callers) with ``entry`` last."""
    seen = {id(entry)}
    todo = [entry]
    while todo:
        for inst in todo.pop().instructions:
            for c in inst.called_computations:
                if id(c) not in seen:
                    seen.add(id(c))
                    todo.append(c)
    return [c for c in module.computations if id(c) in seen and c is not entry] + [entry]


def rebuild(module: Module, entry: Computation, *, keep_signature: bool = False) -> Module:
    """A module of ``entry`` (a computation of ``module``, made the entry) and what it calls;
    the header keeps the device counts (and, with ``keep_signature``, the signature's
    attributes: aliasing, layout, schedule)."""
    for comp in module.computations:
        comp.is_entry = comp is entry
    attrs = {k: v for k, v in module.attrs.items() if keep_signature or k not in SIGNATURE_ATTRS}
    out = Module(module.name, reachable_computations(module, entry), entry, attrs,
                 stack_frames=module.stack_frames, style=module.style)
    return out


def _names(module: Module) -> NameUniquer:
    names = NameUniquer()
    for inst in module.instructions():
        names.unique(inst.name)
    return names


def _tuple_of(values: Sequence[Instruction], names: NameUniquer) -> Instruction:
    return Instruction(names.unique("numerics.outputs"), Opcode.TUPLE, TupleShape(tuple(v.shape for v in values)),
                       list(values))


def with_outputs(module: Module, names: Iterable[str]) -> Module:
    """A copy of ``module`` whose entry returns the named entry instructions (a tuple, in
    the order given) instead of its outputs: the module cut at them."""
    out = copy_module(module)
    entry = out.entry
    values = [entry.instruction(n) for n in names]
    root = _tuple_of(values, _names(out))
    entry.add_instruction(root)
    entry.set_root(root)
    return rebuild(out, entry)


def isolate_computation(module: Module, comp_name: str, *, outputs: str = "root") -> Module:
    """A module whose entry is a copy of computation ``comp_name`` (a fused, called or loop
    body computation): its parameters are the entry's parameters. ``outputs`` "root" keeps
    its root; "values" returns every value it makes (a tuple, in order)."""
    out = copy_module(module)
    comp = out.computation(comp_name)
    if outputs == "values":
        values = [i for i in comp.instructions if i.opcode not in (Opcode.PARAMETER, Opcode.TUPLE)
                  and not any(s.element_type in ("token", "opaque") for _, s in i.shape.leaves())]
        root = _tuple_of(values, _names(out))
        comp.add_instruction(root)
        comp.set_root(root)
    attrs = out.attrs
    for k in ("replica_count", "num_partitions"):
        attrs.pop(k, None)
    return rebuild(out, comp)


def isolate(module: Module, name: str) -> Module:
    """A module computing instruction ``name`` alone: one parameter per operand (in operand
    order), the instruction (with the computations it calls) as the root."""
    out = copy_module(module)
    inst = find_instruction(out, name)
    params = []
    seen: dict[int, Instruction] = {}
    for k, op in enumerate(inst.operands):
        if id(op) in seen:
            continue
        p = Instruction(f"{op.name}.param", Opcode.PARAMETER, op.shape, attrs={"parameter_number": len(params)})
        seen[id(op)] = p
        params.append(p)
        del k
    attrs = {k: v for k, v in inst.attrs.items() if k != "control-predecessors"}
    clone = Instruction(inst.name, inst.opcode, inst.shape, [seen[id(o)] for o in inst.operands], attrs)
    taken = NameUniquer()
    for c in out.computations:
        taken.unique(c.name)
    comp = Computation(taken.unique(f"isolated.{inst.name}"), [*params, clone], clone, is_entry=True)
    out.add_computation(comp)
    for k in ("replica_count", "num_partitions"):
        out.attrs.pop(k, None)
    return rebuild(out, comp)
