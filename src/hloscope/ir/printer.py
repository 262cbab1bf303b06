"""The printer: writes modules, computations and instructions as HLO text XLA's parser accepts.

Attribute values are written by their kind from ``attribute_specs`` (the same table the parser
reads), raw attributes verbatim. Output is built as a list of strings and joined once.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO

from hloscope.ir.attribute_specs import ATTRIBUTE_KINDS, MODULE_ATTRIBUTE_KINDS
from hloscope.ir.attributes import FrontendAttributes, quote
from hloscope.ir.canonical import frontend_attributes_text, xla_attributes
from hloscope.ir.literal import Literal, canonical_literal_text
from hloscope.ir.names import NameUniquer
from hloscope.ir.opcode import Opcode
from hloscope.ir.print_options import PrintOptions
from hloscope.ir.program_shape import ProgramShape
from hloscope.ir.shape import ArrayShape, Shape, TupleShape, filled_layouts, with_default_layouts

if TYPE_CHECKING:  # the model imports the printer, never the other way round
    from hloscope.ir.computation import Computation
    from hloscope.ir.instruction import Instruction
    from hloscope.ir.module import Module

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




def _shape(shape: Shape, o: PrintOptions) -> str:
    if o.default_layouts and o.layouts:
        # XLA's parser gives every array shape written without a layout the default one.
        return filled_layouts(shape).to_text()
    return shape.to_text(layout=o.layouts)


def _module(module: Module, o: PrintOptions, out: list[str]) -> None:
    header = "HloModule " + module.name
    attrs = dict(module.attrs)
    if o.entry_layout and "entry_computation_layout" not in attrs:
        entry = module.entry
        synthesized = ProgramShape([with_default_layouts(p.shape) for p in entry.parameters],
                                   with_default_layouts(entry.root.shape))
        before = {k: v for k, v in attrs.items() if k in _BEFORE_ENTRY_LAYOUT}
        after = {k: v for k, v in attrs.items() if k not in _BEFORE_ENTRY_LAYOUT}
        attrs = {**before, "entry_computation_layout": synthesized, **after}
    if o.xla_order:
        attrs = _xla_header(attrs)
        if isinstance(attrs.get("frontend_attributes"), FrontendAttributes):
            attrs["frontend_attributes"] = frontend_attributes_text(attrs["frontend_attributes"])
    for key, value in attrs.items():
        header += f", {key}={_module_attr(key, value, o)}"
    out.append(header + "\n\n")
    if o.stack_frames and module.stack_frames is not None and str(module.stack_frames):
        out.append(str(module.stack_frames) + "\n\n\n")
    names = unique_names(module) if o.unique_names else None
    computations = module.computations
    if o.xla_order:
        hidden = {id(i.attrs["calls"]) for i in module.instructions()
                  if i.opcode is Opcode.ASYNC_START and sugared_async_root(i) is not None}
        computations = [c for c in xla_post_order(module) if id(c) not in hidden]
    for comp in computations:
        _computation(comp, o, out, names)
        out.append("\n\n")


# The header attributes in the order XLA's HloModule::Print writes them, and the values it
# leaves out (the configuration's defaults).
_HEADER_ORDER = {key: i for i, key in enumerate((
    "is_scheduled", "input_output_alias", "buffer_donor", "alias_passthrough_params",
    "entry_computation_layout", "allow_spmd_sharding_propagation_to_parameters",
    "allow_spmd_sharding_propagation_to_output", "replica_count", "num_partitions",
    "frontend_attributes", "origin_recovery_table", "debug_attributes"))}
# Values XLA leaves out: false flags, one replica or partition, empty lists and maps, and
# sharding propagation left at its default ({false}).
_HEADER_DEFAULT_TEXTS = frozenset(("False", "1", "[]", "{}", "false", "{false}"))


def _xla_header(attrs: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in attrs.items() if str(v).replace(" ", "") not in _HEADER_DEFAULT_TEXTS}
    return dict(sorted(kept.items(), key=lambda kv: _HEADER_ORDER.get(kv[0], len(_HEADER_ORDER))))


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


def xla_instruction_order(comp: Computation) -> list[Instruction]:
    """The order XLA prints a computation's instructions in: the schedule (the written order)
    for a scheduled module's non-fusion computations, otherwise XLA's iterative depth-first
    post-order (``ForEachInstructionPostOrder``): from each instruction nobody uses, in written
    order, operands first to last, control predecessors before operands."""
    module = comp.module
    if module is not None and module.is_scheduled and comp not in module.fusion_computations():
        return comp.instructions
    used = {id(op) for inst in comp.instructions for op in inst.operands}
    state: dict[int, int] = {}  # 1: on the stack, being expanded; 2: emitted
    order: list[Instruction] = []
    for start in comp.instructions:
        if id(start) in used or state.get(id(start)) == 2:
            continue
        stack = [start]
        while stack:
            current = stack[-1]
            seen = state.get(id(current), 0)
            if seen == 0:
                state[id(current)] = 1
                stack.extend(op for op in reversed(current.operands) if state.get(id(op)) != 2)
                stack.extend(p for p in current.control_predecessors if state.get(id(p)) != 2)
                continue
            stack.pop()
            if seen == 1:
                state[id(current)] = 2
                order.append(current)
    return order


def _module_attr(key: str, value: Any, o: PrintOptions) -> str:
    kind = MODULE_ATTRIBUTE_KINDS.get(key)
    if kind == "bool":
        return "true" if value else "false"
    if kind == "io_alias":
        if o.xla_order:  # XLA writes the kind it defaults to
            value = [e if e.kind else replace(e, kind="may-alias") for e in value]
        return "{ " + ", ".join(str(e) for e in value) + " }"
    if kind == "buffer_donor":
        return "{ " + ", ".join(f"({p}, {{{','.join(map(str, idx))}}})" for p, idx in value) + " }"
    if kind == "program_shape":
        params = ", ".join(_index_comment(i) + _shape(s, o) for i, s in enumerate(value.parameters))
        return "{(" + params + ")->" + _shape(value.result, o) + "}"
    return str(value)


def _name(name: str, o: PrintOptions) -> str:
    return "%" + name if o.percent else name


def _ref(obj: Instruction | Computation, o: PrintOptions, names: Names | None) -> str:
    """The printed name of an instruction or computation (renamed when ``names`` says so)."""
    name = obj.name if names is None else names.get(obj, obj.name)
    return "%" + name if o.percent else name


# Note [Unique names]: XLA's module gives every instruction a name unique in the whole module
# (and every computation one unique among computations), registering them in the order it
# reads them: computations in text order, instructions in order. A name taken already gets the
# first free numeric suffix of its root (NameUniquer: "p0" twice -> "p0", "p0.1"; "x.3" keeps
# its number when it is free). Canonical printing renames the same way.
Names = dict[object, str]


def unique_names(module: Module) -> Names:
    """The names XLA gives the module's instructions and computations where they differ from
    the written ones (Note [Unique names])."""
    names: Names = {}
    computations, instructions = NameUniquer(), NameUniquer()
    for comp in module.computations:
        new = computations.unique(comp.name)
        if new != comp.name:
            names[comp] = new
        for inst in comp.instructions:
            new = instructions.unique(inst.name)
            if new != inst.name:
                names[inst] = new
    return names


def _computation(comp: Computation, o: PrintOptions, out: list[str], names: Names | None = None) -> None:
    head = ("ENTRY " if comp.is_entry else "") + _ref(comp, o, names)
    if o.signatures:
        params = ", ".join(f"{p.name}: {p.shape.to_text(layout=False)}" for p in comp.parameters)
        head += f" ({params}) -> {comp.root.shape.to_text(layout=False)}"
    lines = [head + " {"]
    root = comp.root
    for inst in (xla_instruction_order(comp) if o.xla_order else comp.instructions):
        lines.append("  " + ("ROOT " if inst is root else "") + _instruction(inst, o, names))
    tail = "}"
    if o.end_comments and len(comp.instructions) > 5:
        tail += " // " + comp.name
    for key, value in comp.attrs.items():
        tail += f", {key}=" + (quote(value) if isinstance(value, str) else str(value))
    lines.append(tail)
    out.append("\n".join(lines))


# Entries of Instruction.attrs that are written elsewhere than in the attribute list.
_NOT_ATTRIBUTES = frozenset(("literal", "parameter_number", "async_wrapped_opcode"))
_ASYNC_SUFFIX = {Opcode.ASYNC_START: "-start", Opcode.ASYNC_UPDATE: "-update", Opcode.ASYNC_DONE: "-done"}


# Note [Printing async sugar]: XLA prints an async-start whose computation is one instruction
# (and its parameters) as `<opcode>-start` with that instruction's attributes, its -update and
# -done as `<opcode>-update` / `<opcode>-done`, and leaves the computation out; canonical
# printing does the same.
def _expandable(comp: Any) -> Instruction | None:
    if comp is None or isinstance(comp, str):
        return None
    root = comp.root
    if all(i is root or i.opcode is Opcode.PARAMETER for i in comp.instructions):
        return root
    return None


def sugared_async_root(inst: Instruction) -> Instruction | None:
    """The instruction an async op's computation expands into, when XLA prints it as sugar."""
    seen = 0
    while inst.opcode in (Opcode.ASYNC_UPDATE, Opcode.ASYNC_DONE) and inst.operands and seen < 1000:
        inst, seen = inst.operands[0], seen + 1
    if inst.opcode is not Opcode.ASYNC_START or "async_wrapped_opcode" in inst.attrs:
        return None
    return _expandable(inst.attrs.get("calls"))


# What XLA prints of the wrapped instruction: its own attributes, callees, sharding and
# frontend attributes, not those written after them (origin, metadata, backend_config).
_NOT_WRAPPED = frozenset(("metadata", "backend_config", "origin", "statistics", "control-predecessors"))


def _sugared_attributes(inst: Instruction, root: Instruction, items: Any) -> list[tuple[str, Any]]:
    own = [(k, v) for k, v in items if k != "calls"]
    if inst.opcode is not Opcode.ASYNC_START:
        return own
    has_frontend = any(k == "frontend_attributes" for k, _ in own)
    inner = [(k, v) for k, v in xla_attributes(root, list(root.attrs.items()))
             if k not in _NOT_WRAPPED and k not in _NOT_ATTRIBUTES and not (k == "frontend_attributes" and has_frontend)]
    head = [(k, v) for k, v in own if k == "async_execution_thread"]
    return head + inner + [(k, v) for k, v in own if k != "async_execution_thread"]


def _xla_send_shape(inst: Instruction) -> Shape:
    if not inst.operands:
        return inst.shape
    return TupleShape((inst.operands[0].shape, ArrayShape("u32"), ArrayShape("token")))


# Shapes XLA builds itself whatever the text declares: a send is (data, u32[] context, token[]),
# a send-done and an outfeed give a token.
_XLA_SHAPES = {
    Opcode.SEND: _xla_send_shape,
    Opcode.SEND_DONE: lambda inst: ArrayShape("token"),
    Opcode.OUTFEED: lambda inst: ArrayShape("token"),
}


def _instruction(inst: Instruction, o: PrintOptions, names: Names | None = None) -> str:
    attrs = inst.attrs
    wrapped = attrs.get("async_wrapped_opcode")
    sugared = sugared_async_root(inst) if o.xla_order and wrapped is None else None
    if sugared is not None:
        wrapped = sugared.opcode
    # Note [Async sugar] (parser.py): `call-start` is async-start wrapping a call.
    op_text = inst.opcode.text if wrapped is None else wrapped.text + _ASYNC_SUFFIX[inst.opcode]
    shape = _XLA_SHAPES[inst.opcode](inst) if o.xla_order and inst.opcode in _XLA_SHAPES else inst.shape
    parts = [_ref(inst, o, names), " = ", _shape(shape, o), " ", op_text, "("]
    op = inst.opcode
    if op is Opcode.CONSTANT:
        lit = attrs.get("literal")
        if o.canonical_literals and isinstance(lit, Literal):
            parts.append(canonical_literal_text(lit, inst.shape))
        else:
            parts.append(str(lit))
    elif op is Opcode.PARAMETER:
        parts.append(str(attrs["parameter_number"]))
    else:
        refs = [_ref(x, o, names) for x in inst.operands]
        if o.operand_shapes:
            refs = [f"{_shape(x.shape, o)} {ref}" for x, ref in zip(inst.operands, refs)]
        if o.operand_index_comments:  # every fifth operand marked (_index_comment)
            for i in range(5, len(refs), 5):
                refs[i] = _index_comment(i) + refs[i]
        parts.append(", ".join(refs))
    parts.append(")")
    items = xla_attributes(inst, list(attrs.items())) if o.xla_order else attrs.items()
    if sugared is not None:
        items = _sugared_attributes(inst, sugared, items)
    for key, value in items:
        if key in _NOT_ATTRIBUTES and (key != "literal" or op is Opcode.CONSTANT):
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
                parts.append(", control-predecessors={" + ", ".join(_ref(p, o, names) for p in value) + "}")
            continue
        parts.append(f", {key}={_value(ATTRIBUTE_KINDS.get(key, 'raw'), value, o, names)}")
    return "".join(parts)


def _index_comment(i: int) -> str:
    # XLA marks every fifth operand so long operand lists can be read.
    return f"/*index={i}*/" if i and i % 5 == 0 else ""


def _value(kind: str, value: Any, o: PrintOptions, names: Names | None = None) -> str:
    if kind == "bool":
        return "true" if value else "false"
    if kind == "ints" and not (value and isinstance(value[0], tuple)):
        return "{" + ",".join(map(str, value)) + "}"
    if kind in ("ints", "intss"):
        return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in value) + "}"
    if kind in ("computation", "computations", "computation_or_list"):
        if isinstance(value, list):
            return "{" + ", ".join(_ref(c, o, names) for c in value) + "}"
        return _name(value, o) if isinstance(value, str) else _ref(value, o, names)
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
        return "{" + ", ".join(_shape(s, o) for s in value) + "}"
    return str(value)
