"""The token parser: recursive descent over HLO text, in both syntaxes XLA writes.

Every input the line parser (``line_parser.py``) does not take, and every error, comes here;
``parser.parse_module`` is the one public entry that picks between them.

Old style: ``%name = f32[2]{0} add(f32[2]{0} %a, f32[2]{0} %b)`` with computation signatures;
new style: ``name = f32[2]{0} add(a, b)``. Grammar, in XLA's words::

    module      := 'HloModule' name (',' attr)* stack_frames? computation*
    computation := 'ENTRY'? name signature? '{' instruction* '}' (',' attr)*
    instruction := 'ROOT'? name '=' shape? opcode '(' operands ')' (',' attr)*
    operand     := shape? name | shape? opcode '(' operands ')'     (a nested instruction)
    attr value  := ... | '{' instruction* '}'                        (an inline computation)

The shape may be left out where XLA infers it (Note [Inferred shapes]); ``call-start`` and the
like are XLA's async sugar (Note [Async sugar]); ``name:`` reads as ``name``; ``b(f32[4])`` is
a buffer shape.

Parsing functions come in pairs: ``_parse_x`` reads an x or raises a ParseError located at the
offending token, with what was expected. Shapes, layouts and attribute values are read by the
base class, ``ValueParser`` (``token_values.py``); unknown attributes keep their exact text.
"""
from __future__ import annotations

from typing import Any

from hloscope.errors import InterpretError
from hloscope.ir.attribute_specs import ATTRIBUTE_KINDS
from hloscope.ir.attributes import (
    FrontendAttributes,
    OpMetadata,
    RawAttribute,
    StackFrameIndex,
    unquote,
)
from hloscope.ir.computation import Computation
from hloscope.ir.dtypes import PRIMITIVE_TYPES
from hloscope.ir.instruction import Instruction
from hloscope.ir.literal import Literal
from hloscope.ir.module import Module, NameUniquer
from hloscope.ir.opcode import OPCODES_BY_TEXT, Opcode
from hloscope.ir.print_options import PrintOptions
from hloscope.ir.replica_groups import group_mode
from hloscope.ir.shape import Shape
from hloscope.source import LazySpan, Source, Span
from hloscope.text.lexer import (
    TokenStream,
    lex,
)
from hloscope.text.shorthand import (
    ASYNC_FOLLOWERS,
    ASYNC_SUFFIXES,
    NOT_ASYNC_WRAPPABLE,
    SHAPE_INFERABLE,
    async_operand_problem,
    infer_missing_shapes,
)
from hloscope.text.token_values import CLOSE_BRACKETS, OPEN_BRACKETS, ValueParser, is_int

__all__ = ["TokenParser", "STACK_SECTIONS", "GROUP_MODE_FROM_FLAGS", "group_mode_problem", "is_int", "token_parser"]

STACK_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_COMPUTATION_KINDS = ("computation", "computations", "computation_or_list")


# Collectives whose group mode XLA's parser derives from channel_id and use_global_device_ids
# (GetCollectiveOpGroupMode; an explicit ``mode=`` aside), refusing use_global_device_ids=true
# without a channel_id. An async start may wrap one (``reduce-scatter-start``).
GROUP_MODE_FROM_FLAGS = frozenset((Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START, Opcode.REDUCE_SCATTER,
                                   Opcode.ASYNC_START))


def group_mode_problem(opcode: Opcode, attrs: dict[str, Any]) -> str | None:
    """What XLA's parser says of a collective's group-mode flags, or None when they are fine:
    the rule is the replica-group semantics' own (``ir.replica_groups.group_mode``)."""
    if opcode is Opcode.ASYNC_START and attrs.get("async_wrapped_opcode") not in GROUP_MODE_FROM_FLAGS:
        return None
    if "mode" in attrs:  # a mode written out is not derived from the flags
        return None
    try:
        group_mode("channel_id" in attrs, bool(attrs.get("use_global_device_ids", False)))
    except InterpretError:
        return "cannot have use_global_device_ids=true without channel_id"
    return None


class TokenParser(ValueParser):
    """Modules, computations and instructions, over a ``TokenStream``; ``parse_module`` reads a
    whole module."""

    def __init__(self, ts: TokenStream) -> None:
        super().__init__(ts)
        self._comp_fixups: list[tuple[Instruction, str, Any, int]] = []
        self.style = PrintOptions()
        self._saw_typed_operand = False
        self._saw_untyped_operand = False
        self.saw_signature = False
        self._saw_end_comment = False
        self._index_comments: bool | None = None
        # Instructions written as operands (in the order XLA adds them), waiting to be added to
        # the computation before their user; instructions written without a shape.
        self._nested: list[tuple[Instruction, list[tuple[str, int]], int]] = []
        self._shapeless: list[tuple[Instruction, int]] = []
        self._anon = NameUniquer()
        # Computations written inline as attribute values, waiting to join the module.
        self._inline: list[tuple[Computation, int]] = []
        self._inline_names = NameUniquer()

    # --- module --------------------------------------------------------------------------------
    def parse_header(self) -> tuple[str, dict[str, Any], StackFrameIndex | None]:
        """``HloModule name, attrs`` (optional) and the stack frame tables (optional)."""
        toks = self.toks
        attrs: dict[str, Any] = {}
        if toks[self.pos] == "HloModule":
            self.pos += 1
            name = self._name("a module name")
            while self._accept(","):
                if toks[self.pos].startswith("frontend_attributes={"):  # one lexer token
                    attrs["frontend_attributes"] = FrontendAttributes(toks[self.pos][20:])
                    self.pos += 1
                    continue
                key = self._name("a module attribute name")
                self._expect("=", f"'=' after {key}")
                attrs[key] = self.parse_module_attr(key)
        else:
            name = ""
        stack_frames = self._parse_stack_frames() if toks[self.pos] in STACK_SECTIONS else None
        return name, attrs, stack_frames

    def parse_module(self) -> Module:
        toks = self.toks
        name, attrs, stack_frames = self.parse_header()
        computations: list[Computation] = []
        entry: Computation | None = None
        by_name: dict[str, Computation] = {}
        while toks[self.pos] != "":
            start = self.pos
            comp = self._parse_computation()
            for inline, at in self._inline:
                if inline.name in by_name:
                    self.error(f"computation {inline.name!r} is defined twice", at)
                by_name[inline.name] = inline
                computations.append(inline)
            self._inline.clear()
            if comp.name in by_name:
                self.error(f"computation {comp.name!r} is defined twice", start + (toks[start] == "ENTRY"))
            by_name[comp.name] = comp
            computations.append(comp)
            if comp.is_entry:
                if entry is not None:
                    self.error("a module has one ENTRY computation; found a second", start)
                entry = comp
        if not computations:
            self.error("expected a computation")
        if entry is None:
            entry = computations[-1]
            entry.is_entry = True
        if not name:
            name = "module_" + entry.name  # as XLA names a module written without a header
        for inst, key, value, at in self._comp_fixups:
            if isinstance(value, list):
                resolved = []
                for n in value:
                    if n not in by_name:
                        self.error(f"unknown computation {n!r}", at)
                    resolved.append(by_name[n])
                inst.attrs[key] = resolved
            else:
                if value not in by_name:
                    self.error(f"unknown computation {value!r}", at)
                inst.attrs[key] = by_name[value]
        if self._shapeless:
            self._infer_shapes()
        style = self.style
        style.percent = self.saw_percent
        style.operand_shapes = self._saw_typed_operand and not self._saw_untyped_operand
        style.signatures = self.saw_signature
        style.end_comments = self._saw_end_comment
        style.operand_index_comments = self._index_comments is not False
        return Module(name, computations, entry, attrs, stack_frames=stack_frames, style=style,
                      source=self.ts.source)

    def _infer_shapes(self) -> None:
        infer_missing_shapes(self._shapeless, self.error)
        self._shapeless = []



    def _parse_stack_frames(self) -> StackFrameIndex:
        toks = self.toks
        sections: dict[str, list[tuple[int, str]]] = {}
        while toks[self.pos] in STACK_SECTIONS:
            title = toks[self.pos]
            self.pos += 1
            rows = []
            while is_int(toks[self.pos]):
                key = int(toks[self.pos])
                self.pos += 1
                if title in ("FileNames", "FunctionNames"):
                    rows.append((key, unquote(self._string(f"a quoted name in {title}"))))
                else:
                    if toks[self.pos] != "{":
                        self.error(f"expected '{{' in {title}")
                    start = self.pos
                    rows.append((key, self.ts.text(start, self._skip_balanced())))
            sections[title] = rows
        return StackFrameIndex(
            tuple(sections.get("FileNames", ())), tuple(sections.get("FunctionNames", ())),
            tuple(sections.get("FileLocations", ())), tuple(sections.get("StackFrames", ())),
        )

    # --- computations --------------------------------------------------------------------------
    def parse_computation_header(self) -> tuple[bool, str]:
        """``ENTRY? name signature? {``: (is_entry, name)."""
        is_entry = self._accept("ENTRY")
        name = self._name("a computation name (or 'ENTRY')")
        if self.toks[self.pos] == "(":
            self.saw_signature = True
            # The signature repeats the parameters' names and shapes; the parameter
            # instructions are the source of truth, so it is read and checked for form only.
            self._skip_balanced()
            self._expect("->", "'->' after the computation's parameter list")
            self.parse_shape()
        self._expect("{", "'{' to open the computation body")
        return is_entry, name

    def _parse_computation(self) -> Computation:
        start = self.pos
        is_entry, name = self.parse_computation_header()
        return self._parse_computation_body(name, is_entry, start)

    def _parse_inline_computation(self) -> str:
        """``{ instructions }`` written where a computation is named (``to_apply={...}``): XLA
        names it ``_`` (made unique) and adds it before the computation that uses it."""
        saved, self._nested = self._nested, []
        name = self._inline_names.unique("_")
        comp = self._parse_computation_body(name, False, self.pos - 1, inline=True)
        self._nested = saved
        self._inline.append((comp, self.pos))
        return name

    def _parse_computation_body(self, name: str, is_entry: bool, start: int, inline: bool = False) -> Computation:
        toks = self.toks
        instructions: list[Instruction] = []
        names: dict[str, Instruction] = {}
        root: Instruction | None = None
        pending: list[tuple[Instruction, list[tuple[str, int]]]] = []
        pending_preds: list[tuple[Instruction, list[tuple[str, int]]]] = []
        while toks[self.pos] != "}":
            if toks[self.pos] == "":
                self.error(f"expected '}}' to close computation {name!r}", start)
            inst_start = self.pos
            is_root, inst, operand_names, pred_names = self._parse_instruction()
            for inner, inner_operands, at in self._nested:
                if inner.name in names:
                    self.error(f"instruction name {inner.name!r} is used twice in {name!r}", at)
                names[inner.name] = inner
                instructions.append(inner)
                pending.append((inner, inner_operands))
            self._nested.clear()
            if inst.name in names:
                self.error(f"instruction name {inst.name!r} is used twice in {name!r}", inst_start + is_root)
            names[inst.name] = inst
            instructions.append(inst)
            pending.append((inst, operand_names))
            if pred_names:
                pending_preds.append((inst, pred_names))
            if is_root:
                if root is not None:
                    self.error(f"computation {name!r} has two ROOT instructions", inst_start)
                root = inst
        self.pos += 1
        if self.ts.ws(self.pos).startswith(" // "):
            self._saw_end_comment = True
        for inst, operand_names in pending:
            ops = []
            for op_name, at in operand_names:
                op = names.get(op_name)
                if op is None:
                    self.error(f"unknown operand {op_name!r} in computation {name!r}", at)
                ops.append(op)
            inst.operands = ops
            if inst.opcode in ASYNC_FOLLOWERS:
                problem = async_operand_problem(inst)
                if problem:
                    where = inst.span
                    self.error(problem, where.index if isinstance(where, _LazySpan) else None)
        for inst, pred_names in pending_preds:
            preds = []
            for p_name, at in pred_names:
                p = names.get(p_name)
                if p is None:
                    self.error(f"unknown control predecessor {p_name!r}", at)
                preds.append(p)
            inst.attrs["control-predecessors"] = preds
        if not instructions:
            self.error(f"computation {name!r} has no instructions", start)
        if root is None:
            root = instructions[-1]
        attrs: dict[str, Any] = {}
        # After an inline computation, a ',' continues its instruction's attributes.
        while not inline and toks[self.pos] == "," and toks[self.pos + 2] == "=":
            self.pos += 1
            key = self._name()
            self.pos += 1
            if toks[self.pos].startswith('"'):
                attrs[key] = unquote(self._string(f"a value for {key}"))
            else:
                attrs[key] = RawAttribute(self._raw_value())
        comp = Computation(name, instructions, root, is_entry=is_entry, attrs=attrs,
                           span=_LazySpan(self.ts, start))
        return comp

    def _parse_instruction(self) -> tuple[bool, Instruction, list[tuple[str, int]], list[tuple[str, int]]]:
        toks = self.toks
        is_root = False
        if toks[self.pos] == "ROOT":
            is_root = True
            self.pos += 1
        name_at = self.pos
        name = self._name("an instruction name")
        self._expect("=", f"'=' after instruction name {name!r}")
        return (is_root, *self._parse_instruction_rhs(name, name_at))

    def _parse_opcode(self) -> tuple[Opcode, Opcode | None]:
        """An opcode, or XLA's async sugar ``call-start`` / ``-update`` / ``-done``: the async
        opcode and the wrapped one (Note [Async sugar])."""
        op_text = self.toks[self.pos]
        opcode = OPCODES_BY_TEXT.get(op_text)
        wrapped = None
        if opcode is None:
            base, _, suffix = op_text.rpartition("-")
            opcode = ASYNC_SUFFIXES.get(suffix)
            wrapped = OPCODES_BY_TEXT.get(base)
            if opcode is None or wrapped is None or wrapped in NOT_ASYNC_WRAPPABLE:
                self.error(f"unknown opcode {op_text!r}" if op_text else "expected an opcode")
        self.pos += 1
        return opcode, wrapped

    def _parse_instruction_rhs(self, name: str, name_at: int, nested: bool = False,
                               ) -> tuple[Instruction, list[tuple[str, int]], list[tuple[str, int]]]:
        """``shape? opcode(operands), attributes``. The shape may be left out where XLA infers it
        (Note [Inferred shapes]); a nested instruction (an operand written as an instruction)
        has no name and no attributes."""
        toks = self.toks
        shape: Shape | None = None
        tok = toks[self.pos]
        if tok == "(" or toks[self.pos + 1] == "[" or (tok == "b" and toks[self.pos + 1] == "("):
            # (`f33[2]` too: the shape parser says what is wrong)
            shape = self.parse_shape()
        op_at = self.pos
        op_text = toks[op_at]
        opcode, wrapped = self._parse_opcode()
        if shape is None and opcode not in SHAPE_INFERABLE:
            self.error(f"expected a shape such as f32[2,3]{{1,0}} (XLA infers no shape for {op_text})"
                        if op_text in OPCODES_BY_TEXT else "expected a shape such as f32[2,3]{1,0}"
                        + (f", found {op_text!r}" if op_text else ""), op_at)
        self._expect("(", f"'(' after opcode {op_text!r}")
        attrs: dict[str, Any] = {}
        if wrapped is not None:
            attrs["async_wrapped_opcode"] = wrapped
        operand_names: list[tuple[str, int]] = []
        if opcode is Opcode.CONSTANT:
            start = self.pos
            depth = 0
            while True:
                t = toks[self.pos]
                if t == "":
                    self.error("expected ')' to close the constant's literal", start)
                if t in OPEN_BRACKETS:
                    depth += 1
                elif t in CLOSE_BRACKETS:
                    if depth == 0:
                        break
                    depth -= 1
                self.pos += 1
            if self.pos == start:
                self.error("expected a literal value")
            attrs["literal"] = Literal(self.ts.text(start, self.pos))
            self.pos += 1
        elif opcode is Opcode.PARAMETER:
            attrs["parameter_number"] = self._int("a parameter number")
            self._expect(")", "')' after the parameter number")
        elif toks[self.pos] == ")":
            self.pos += 1
        else:
            while True:
                t = toks[self.pos]
                if len(operand_names) == 5 and self._index_comments is None:
                    # Whether the writer marks every fifth operand with /*index=N*/.
                    self._index_comments = "/*index=" in self.ts.ws(self.pos)
                at = self.pos
                typed = (t in PRIMITIVE_TYPES and toks[self.pos + 1] == "[") or t == "(" or (
                    t == "b" and toks[self.pos + 1] == "(" and toks[self.pos + 2] in PRIMITIVE_TYPES)
                if typed:
                    self.parse_shape()  # old syntax: operand written with its shape
                if toks[self.pos + 1] == "(" and toks[self.pos] not in CLOSE_BRACKETS:
                    # An operand written as an instruction: `add(f32[] constant(1), x)`.
                    self.pos = at
                    inner, inner_operands, _ = self._parse_instruction_rhs("", at, nested=True)
                    self._nested.append((inner, inner_operands, at))
                    operand_names.append((inner.name, at))
                else:
                    if typed:
                        self._saw_typed_operand = True
                    else:
                        self._saw_untyped_operand = True
                    operand_names.append((self._name("an operand name"), self.pos - 1))
                if toks[self.pos] == ",":
                    self.pos += 1
                    continue
                if toks[self.pos] == ")":
                    self.pos += 1
                    break
                self.error("expected ',' or ')' after operand")
        pred_names: list[tuple[str, int]] = []
        if nested:  # named once its operands are, as XLA's parser names it
            name = self._anon.unique(opcode.text + ".anon")
        inst = Instruction(name, opcode, shape, None, attrs)  # type: ignore[arg-type]
        if shape is None:
            self._shapeless.append((inst, op_at))
        while not nested and toks[self.pos] == ",":
            self.pos += 1
            tok = toks[self.pos]
            if tok.startswith("metadata={"):
                attrs["metadata"] = OpMetadata(tok[9:])
                self.pos += 1
                continue
            if tok.startswith("frontend_attributes={"):
                attrs["frontend_attributes"] = FrontendAttributes(tok[20:])
                self.pos += 1
                continue
            key_at = self.pos
            key = self._name("an attribute name")
            if key in attrs:
                self.error(f"attribute {key!r} is given twice", key_at)
            self._expect("=", f"'=' after attribute {key!r}")
            if key == "control-predecessors":
                self._expect("{")
                while toks[self.pos] != "}":
                    pred_names.append((self._name("an instruction name"), self.pos - 1))
                    if not self._accept(","):
                        break
                self._expect("}", "'}' to close control-predecessors")
                attrs[key] = []  # filled in when the computation's names are known
                continue
            kind = ATTRIBUTE_KINDS.get(key, "raw")
            attrs[key] = self.parse_attr(kind, key, inst, key_at)
        if opcode in GROUP_MODE_FROM_FLAGS:
            problem = group_mode_problem(opcode, attrs)
            if problem is not None:
                self.error(problem, op_at + 1)  # where XLA's parser points: the operands
        inst.span = _LazySpan(self.ts, name_at)
        return inst, operand_names, pred_names

    # --- attribute values that name computations ---------------------------------------------
    def parse_attr(self, kind: str, key: str, inst: Instruction, key_at: int) -> Any:
        """An attribute value; computation references (and inline computations) here, every
        other kind in ``ValueParser.parse_attr``."""
        if kind not in _COMPUTATION_KINDS:
            return super().parse_attr(kind, key, inst, key_at)
        toks = self.toks
        if toks[self.pos] == "{" and (toks[self.pos + 1] == "ROOT" or toks[self.pos + 2] == "="):
            self.pos += 1
            n = self._parse_inline_computation()
            self._comp_fixups.append((inst, key, [n] if kind == "computations" else n, key_at))
            return n
        if toks[self.pos] == "{":
            if kind == "computation":
                self.error(f"expected one computation name for {key}")
            self.pos += 1
            names = []
            while toks[self.pos] != "}":
                names.append(self._name("a computation name"))
                if not self._accept(","):
                    break
            self._expect("}")
            self._comp_fixups.append((inst, key, names, key_at))
            return names
        if kind == "computations":
            self.error(f"expected '{{' and a list of computations for {key}")
        n = self._name("a computation name")
        self._comp_fixups.append((inst, key, n, key_at))
        return n


class _LazySpan(LazySpan):
    """An instruction's position as a token index; the Span is computed only when asked."""

    __slots__ = ("ts", "index")

    def __init__(self, ts: TokenStream, index: int) -> None:
        self.ts = ts
        self.index = index

    def resolve(self) -> Span:
        return self.ts.span(self.index)


def token_parser(text: str, name: str = "<line>") -> TokenParser:
    """A token parser over ``text`` (what the line parser falls back to for one piece)."""
    return TokenParser(lex(Source(text, name)))
