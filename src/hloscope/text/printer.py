"""The printer: writes modules, computations and instructions as HLO text XLA's parser accepts.

Attribute values are written by their kind from ``attribute_specs`` (the same table the parser
reads), raw attributes verbatim. Output is built as a list of strings and joined once.
"""
from __future__ import annotations

from typing import Any, TextIO

from hloscope.ir.attributes import quote
from hloscope.ir.computation import Computation
from hloscope.ir.instruction import Instruction
from hloscope.ir.literal import Literal
from hloscope.ir.layout import Layout
from hloscope.ir.module import Module, ProgramShape
from hloscope.ir.shape import Shape, TupleShape
from hloscope.ir.opcode import Opcode
from hloscope.text.attribute_specs import ATTRIBUTE_KINDS, MODULE_ATTRIBUTE_KINDS
from hloscope.text.options import PrintOptions

__all__ = ["to_text", "write", "computation_to_text", "instruction_to_text"]


def _options(module: Module | None, options: PrintOptions | None, overrides: dict[str, Any]) -> PrintOptions:
    base = options
    if base is None:
        base = module.style if module is not None and isinstance(module.style, PrintOptions) else PrintOptions()
    return base.updated(**overrides) if overrides else base


def to_text(module: Module, options: PrintOptions | None = None, **overrides: Any) -> str:
    """The module as HLO text. With no options, in the style it was read in."""
    opts = _options(module, options, overrides)
    out: list[str] = []
    _module(module, opts, out)
    return "".join(out)


def write(module: Module, stream: TextIO, options: PrintOptions | None = None, **overrides: Any) -> None:
    """Write the module's text to ``stream``."""
    stream.write(to_text(module, options, **overrides))


def computation_to_text(comp: Computation, options: PrintOptions | None = None, **overrides: Any) -> str:
    opts = _options(comp.module, options, overrides)
    out: list[str] = []
    _computation(comp, opts, out)
    return "".join(out)


def instruction_to_text(inst: Instruction, options: PrintOptions | None = None, **overrides: Any) -> str:
    comp = inst.computation
    opts = _options(comp.module if comp is not None else None, options, overrides)
    return _instruction(inst, opts)


# Header attributes XLA writes before entry_computation_layout (the rest come after it).
_BEFORE_ENTRY_LAYOUT = ("is_scheduled", "input_output_alias", "buffer_donor")


def _default_layouts(shape: Shape) -> Shape:
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(_default_layouts(e) for e in shape.elements))
    if shape.layout is None and shape.primitive_type.is_array_type and shape.rank:
        return shape.with_layout(Layout.default(shape.rank))
    return shape


def _module(module: Module, o: PrintOptions, out: list[str]) -> None:
    header = "HloModule " + module.name
    attrs = dict(module.attrs)
    if o.entry_layout and "entry_computation_layout" not in attrs:
        entry = module.entry
        synthesized = ProgramShape([_default_layouts(p.shape) for p in entry.parameters],
                                   _default_layouts(entry.root.shape))
        before = {k: v for k, v in attrs.items() if k in _BEFORE_ENTRY_LAYOUT}
        after = {k: v for k, v in attrs.items() if k not in _BEFORE_ENTRY_LAYOUT}
        attrs = {**before, "entry_computation_layout": synthesized, **after}
    for key, value in attrs.items():
        header += f", {key}={_module_attr(key, value, o)}"
    out.append(header + "\n\n")
    if o.stack_frames and module.stack_frames is not None and str(module.stack_frames):
        out.append(str(module.stack_frames) + "\n\n\n")
    for comp in (xla_post_order(module) if o.xla_order else module.computations):
        _computation(comp, o, out)
        out.append("\n\n")


def _xla_callees(inst: Instruction) -> list[Computation]:
    # XLA's while keeps its body before its condition in called_computations().
    if inst.opcode is Opcode.WHILE:
        return [inst.attrs["body"], inst.attrs["condition"]]
    return inst.called_computations


def xla_post_order(module: Module) -> list[Computation]:
    """Computations as XLA orders them (``MakeComputationPostOrder``): a depth-first post-order
    of the call graph from each computation nobody calls, callees before callers, visiting the
    instructions in order; computations nothing reaches keep their relative order first."""
    called: set[Computation] = set()
    for inst in module.instructions():
        called.update(inst.called_computations)
    order: list[Computation] = []
    seen: set[Computation] = set()
    for root in [c for c in module.computations if c not in called]:
        stack: list[tuple[Computation, int, int]] = [(root, 0, 0)]
        seen.add(root)
        while stack:  # iterative: deep call chains must not hit Python's recursion limit
            comp, i, j = stack.pop()
            insts = comp.instructions
            pushed = False
            while i < len(insts):
                callees = _xla_callees(insts[i])
                while j < len(callees):
                    callee = callees[j]
                    j += 1
                    if callee not in seen:
                        seen.add(callee)
                        stack.append((comp, i, j))
                        stack.append((callee, 0, 0))
                        pushed = True
                        break
                if pushed:
                    break
                i, j = i + 1, 0
            if not pushed:
                order.append(comp)
    return order


def _module_attr(key: str, value: Any, o: PrintOptions) -> str:
    kind = MODULE_ATTRIBUTE_KINDS.get(key)
    if kind == "bool":
        return "true" if value else "false"
    if kind == "io_alias":
        return "{ " + ", ".join(str(e) for e in value) + " }"
    if kind == "buffer_donor":
        return "{ " + ", ".join(f"({p}, {{{','.join(map(str, idx))}}})" for p, idx in value) + " }"
    if kind == "program_shape":
        params = ", ".join(_index_comment(i) + s.to_text(layout=o.layouts) for i, s in enumerate(value.parameters))
        return "{(" + params + ")->" + value.result.to_text(layout=o.layouts) + "}"
    return str(value)


def _name(name: str, o: PrintOptions) -> str:
    return "%" + name if o.percent else name


def _computation(comp: Computation, o: PrintOptions, out: list[str]) -> None:
    head = ("ENTRY " if comp.is_entry else "") + _name(comp.name, o)
    if o.signatures:
        params = ", ".join(f"{p.name}: {p.shape.to_text(layout=False)}" for p in comp.parameters)
        head += f" ({params}) -> {comp.root.shape.to_text(layout=False)}"
    lines = [head + " {"]
    root = comp.root
    for inst in comp.instructions:
        lines.append("  " + ("ROOT " if inst is root else "") + _instruction(inst, o))
    tail = "}"
    if o.end_comments and len(comp.instructions) > 5:
        tail += " // " + comp.name
    for key, value in comp.attrs.items():
        tail += f", {key}=" + (quote(value) if isinstance(value, str) else str(value))
    lines.append(tail)
    out.append("\n".join(lines))


def _instruction(inst: Instruction, o: PrintOptions) -> str:
    parts = [_name(inst.name, o), " = ", inst.shape.to_text(layout=o.layouts), " ", inst.opcode.text, "("]
    attrs = inst.attrs
    op = inst.opcode
    if op is Opcode.CONSTANT:
        lit = attrs.get("literal")
        parts.append(str(lit) if isinstance(lit, Literal) else str(lit))
    elif op is Opcode.PARAMETER:
        parts.append(str(attrs["parameter_number"]))
    elif o.operand_shapes:
        mark = _index_comment if o.operand_index_comments else _no_comment
        parts.append(", ".join(mark(i) + f"{x.shape.to_text(layout=o.layouts)} {_name(x.name, o)}"
                               for i, x in enumerate(inst.operands)))
    else:
        mark = _index_comment if o.operand_index_comments else _no_comment
        parts.append(", ".join(mark(i) + _name(x.name, o) for i, x in enumerate(inst.operands)))
    parts.append(")")
    for key, value in attrs.items():
        if key in ("literal", "parameter_number"):
            continue
        if key == "metadata" and not o.metadata:
            continue
        if key == "backend_config" and not o.backend_config:
            continue
        if key == "backend_config" and o.xla_order and value.text.startswith('"') and value.raw.startswith("{"):
            # XLA writes a configuration that is a JSON object as the object itself.
            parts.append(", backend_config=" + value.raw)
            continue
        if key == "control-predecessors":
            if value and o.control_predecessors:
                parts.append(", control-predecessors={" + ", ".join(_name(p.name, o) for p in value) + "}")
            continue
        parts.append(f", {key}={_value(ATTRIBUTE_KINDS.get(key, 'raw'), value, o)}")
    return "".join(parts)


def _index_comment(i: int) -> str:
    # XLA marks every fifth operand so long operand lists can be read.
    return f"/*index={i}*/" if i and i % 5 == 0 else ""


def _no_comment(i: int) -> str:
    return ""


def _value(kind: str, value: Any, o: PrintOptions) -> str:
    if kind == "bool":
        return "true" if value else "false"
    if kind == "ints":
        return "{" + ",".join(map(str, value)) + "}"
    if kind == "intss":
        return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in value) + "}"
    if kind in ("computation", "computations", "computation_or_list"):
        if isinstance(value, list):
            return "{" + ", ".join(_name(c.name, o) for c in value) + "}"
        return _name(value.name if isinstance(value, Computation) else str(value), o)
    if kind == "string":
        return quote(value)
    if kind == "slice":
        # XLA writes every stride as soon as one of them is not 1.
        if any(r.stride != 1 for r in value):
            return "{" + ", ".join(f"[{r.start}:{r.limit}:{r.stride}]" for r in value) + "}"
        return "{" + ", ".join(map(str, value)) + "}"
    if kind == "precision":
        return "{" + ",".join(value) + "}"
    if kind == "bools":
        return "{" + ",".join("true" if b else "false" for b in value) + "}"
    if kind == "shapes":
        return "{" + ", ".join(s.to_text(layout=o.layouts) for s in value) + "}"
    return str(value)
