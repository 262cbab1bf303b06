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
offending token, with what was expected. Attribute values are typed per
``attribute_specs.ATTRIBUTE_KINDS``; unknown attributes keep their exact text.
"""
from __future__ import annotations

import re
from typing import Any, NoReturn

from hloscope.errors import ParseError
from hloscope.ir.attribute_specs import ATTRIBUTE_KINDS, MODULE_ATTRIBUTE_KINDS
from hloscope.ir.attributes import (
    AliasEntry,
    BackendConfig,
    ConvolutionDimensionNumbers,
    FrontendAttributes,
    OpMetadata,
    PaddingConfig,
    RawAttribute,
    ReplicaGroups,
    Sharding,
    SliceRange,
    StackFrameIndex,
    Window,
    WindowDimension,
    unquote,
)
from hloscope.ir.computation import Computation
from hloscope.ir.dtypes import PRIMITIVE_TYPES
from hloscope.ir.instruction import Instruction
from hloscope.ir.layout import COMBINE_DIMENSION, Layout, Tile
from hloscope.ir.literal import Literal
from hloscope.ir.module import Module, NameUniquer, ProgramShape
from hloscope.ir.opcode import OPCODES_BY_TEXT, Opcode
from hloscope.ir.print_options import PrintOptions
from hloscope.ir.shape import UNBOUNDED, ArrayShape, Shape, TupleShape
from hloscope.source import Source
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

__all__ = ["TokenParser", "STACK_SECTIONS", "is_int", "token_parser"]

_OPEN = {"{": "}", "(": ")", "[": "]"}
# XLA's identifiers (hlo_lexer.cc): ASCII letters, digits, '_', '.', '-', not starting with a
# digit, '.' or '-'; '%' may precede a name.
_NAME_RE = re.compile(r"%?[A-Za-z_][A-Za-z0-9_.\-]*")
_CLOSE = {"}", ")", "]"}
STACK_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")



def is_int(tok: str) -> bool:
    return tok.isdigit() or (tok[:1] == "-" and tok[1:].isdigit())


class TokenParser:
    def __init__(self, ts: TokenStream) -> None:
        self.ts = ts
        self.toks = ts.toks
        self.pos = 0
        self._shape_cache: dict[tuple, ArrayShape] = {}
        self._comp_fixups: list[tuple[Instruction, str, Any, int]] = []
        self.style = PrintOptions()
        self._saw_typed_operand = False
        self._saw_untyped_operand = False
        self.saw_percent = False
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

    # --- errors and primitive steps ----------------------------------------------------------
    def error(self, message: str, at: int | None = None) -> NoReturn:
        i = self.pos if at is None else at
        tok = self.toks[i]
        if tok == "":
            message += " (found end of input)"
        raise ParseError(message, self.ts.span(i))

    def _expect(self, tok: str, what: str | None = None) -> None:
        if self.toks[self.pos] != tok:
            found = self.toks[self.pos]
            self.error(f"expected {what or repr(tok)}" + (f", found {found!r}" if found else ""))
        self.pos += 1

    def _accept(self, tok: str) -> bool:
        if self.toks[self.pos] == tok:
            self.pos += 1
            return True
        return False

    def _name(self, what: str = "a name") -> str:
        tok = self.toks[self.pos]
        if _NAME_RE.fullmatch(tok) is None:
            self.error(f"expected {what}" + (f", found {tok!r}" if tok else ""))
        self.pos += 1
        if self.toks[self.pos] == ":" and not self.ts.ws(self.pos):
            # XLA's lexer reads `name:` as a name token wherever a name may stand (`HloModule m:`).
            self.pos += 1
        if tok[0] == "%":
            self.saw_percent = True
            return tok[1:]
        return tok

    def _string(self, what: str) -> str:
        """A quoted string token, returned with its quotes."""
        tok = self.toks[self.pos]
        if not tok.startswith('"'):
            self.error(f"expected {what}" + (f", found {tok!r}" if tok else ""))
        if len(tok) < 2 or not tok.endswith('"'):
            self.error("unterminated string: expected a closing '\"' on this line")
        self.pos += 1
        return tok

    def _int(self, what: str = "an integer") -> int:
        tok = self.toks[self.pos]
        if not is_int(tok):
            self.error(f"expected {what}" + (f", found {tok!r}" if tok else ""))
        self.pos += 1
        return int(tok)

    def _skip_balanced(self) -> int:
        """Skip one token or a bracketed group; returns the index after it."""
        toks = self.toks
        i = self.pos
        tok = toks[i]
        if tok in _OPEN:
            stack = [_OPEN[tok]]
            i += 1
            while stack:
                t = toks[i]
                if t == "":
                    self.error(f"unbalanced {tok!r}: no matching {stack[-1]!r}", self.pos)
                if t in _OPEN:
                    stack.append(_OPEN[t])
                elif t in _CLOSE:
                    if t != stack[-1]:
                        self.error(f"expected {stack[-1]!r}, found {t!r}", i)
                    stack.pop()
                i += 1
            self.pos = i
            return i
        if tok == "" or tok in _CLOSE:
            self.error("expected a value")
        self.pos = i + 1
        return i + 1

    def _raw_value(self) -> str:
        """Text of an attribute value we do not type: a bracketed group or token, continued by
        tokens written against it (``[2,4]<=[8]T(1,0)``, ``b01f_01io->b01f``) or by further
        bracketed groups (``mesh[...] {...}``), up to a top-level ',' or the end of the line's
        instruction."""
        toks = self.toks
        ws = self.ts.ws
        start = self.pos
        self._skip_balanced()
        while True:
            t = toks[self.pos]
            if t in ("", ",", "}", ")", "]", "ROOT") or toks[self.pos + 1] == "=":
                break
            if ws(self.pos) and t not in _OPEN:
                break
            if ws(self.pos) and "\n" in ws(self.pos):
                break
            self._skip_balanced()
        return self.ts.text(start, self.pos)

    # --- shapes and layouts --------------------------------------------------------------------
    def parse_shape(self) -> Shape:
        toks = self.toks
        tok = toks[self.pos]
        if tok == "(":
            self.pos += 1
            elements: list[Shape] = []
            if toks[self.pos] != ")":
                while True:
                    elements.append(self.parse_shape())
                    if not self._accept(","):
                        break
            self._expect(")", "',' or ')' in tuple shape")
            return TupleShape(tuple(elements))
        if tok == "b" and toks[self.pos + 1] == "(":  # a buffer shape: b(f32[16])
            at = self.pos
            self.pos += 2
            inner = self.parse_shape()
            if not isinstance(inner, ArrayShape) or inner.buffer:
                self.error("a buffer shape holds an array shape", at)
            self._expect(")", "')' to close the buffer shape")
            return ArrayShape(inner.element_type, inner.dimensions, inner.dynamic, inner.layout, True)
        if tok not in PRIMITIVE_TYPES:
            self.error("expected a shape such as f32[2,3]{1,0}" + (f", found {tok!r}" if tok else ""))
        p = self.pos + 1
        if toks[p] != "[":
            self.error("expected '[' after element type", p)
        # Fast path: static dimensions and a plain or tiled layout, cached by its tokens.
        j = p + 1
        while toks[j] != "]":
            j += 1
            if toks[j] == "":
                self.error("expected ']' to close the dimensions", p)
        has_layout = toks[j + 1] == "{" and (is_int(toks[j + 2]) or toks[j + 2] in (":", "}"))
        end = j + 1
        if has_layout:
            end = j + 2
            depth = 1
            while depth:
                t = toks[end]
                if t == "{" or t == "(":
                    depth += 1
                elif t == "}" or t == ")":
                    depth -= 1
                elif t == "":
                    self.error("expected '}' to close the layout", j + 1)
                end += 1
        key = tuple(toks[self.pos : end])
        cached = self._shape_cache.get(key)
        if cached is not None:
            self.pos = end
            return cached
        self.pos = p + 1
        dims: list[int] = []
        dynamic: list[bool] = []
        any_dynamic = False
        if toks[self.pos] != "]":
            while True:
                t = toks[self.pos]
                if t == "?":
                    dims.append(UNBOUNDED)
                    dynamic.append(True)
                    any_dynamic = True
                    self.pos += 1
                elif t == "<=":
                    self.pos += 1
                    dims.append(self._int("a dimension bound"))
                    dynamic.append(True)
                    any_dynamic = True
                else:
                    dims.append(self._int("a dimension size, '<=' bound or '?'"))
                    dynamic.append(False)
                if not self._accept(","):
                    break
        self._expect("]", "',' or ']' in dimensions")
        layout = self._parse_layout(len(dims)) if has_layout else None
        shape = ArrayShape(tok, tuple(dims), tuple(dynamic) if any_dynamic else (), layout)
        self._shape_cache[key] = shape
        return shape

    def _parse_layout(self, rank: int) -> Layout:
        self._expect("{")
        toks = self.toks
        m2m: list[int] = []
        while is_int(toks[self.pos]):
            m2m.append(int(toks[self.pos]))
            self.pos += 1
            if not self._accept(","):
                break
        fields: dict[str, Any] = {}
        if self._accept(":"):
            while toks[self.pos] != "}":
                t = toks[self.pos]
                if t == "T" or (t.startswith("T") and False):
                    self.pos += 1
                    tiles = []
                    while toks[self.pos] == "(":
                        self.pos += 1
                        tdims = []
                        while toks[self.pos] != ")":
                            if toks[self.pos] == "*":
                                tdims.append(COMBINE_DIMENSION)
                                self.pos += 1
                            else:
                                tdims.append(self._int("a tile dimension"))
                            self._accept(",")
                        self.pos += 1
                        tiles.append(Tile(tuple(tdims)))
                    fields["tiles"] = tuple(tiles)
                elif t in ("E", "S", "L", "M"):
                    self.pos += 1
                    self._expect("(")
                    val = self._int()
                    self._expect(")")
                    key = {"E": "element_size_bits", "S": "memory_space", "L": "tail_padding_alignment",
                           "M": "dynamic_shape_metadata_prefix_bytes"}[t]
                    fields[key] = val
                elif t in ("D", "SC", "P", "#", "*"):
                    self.pos += 1
                    if toks[self.pos] != "(":
                        self.error(f"expected '(' after {t!r} in layout")
                    start = self.pos + 1
                    self._skip_balanced()
                    raw = self.ts.text(start, self.pos - 1)
                    if t == "D":
                        fields["dim_level_types"] = raw
                    elif t == "SC":
                        fields["split_configs"] = fields.get("split_configs", ()) + (raw,)
                    elif t == "P":
                        fields["physical_shape"] = raw
                    elif t == "#":
                        fields["index_primitive_type"] = raw
                    else:
                        fields["pointer_primitive_type"] = raw
                else:
                    self.error("expected a layout field (T, E, S, L, D, SC, P, M, #, *)")
        self._expect("}", "'}' to close the layout")
        if m2m and len(m2m) != rank:
            self.error(f"layout has {len(m2m)} dimensions but the shape has rank {rank}", self.pos - 1)
        return Layout(tuple(m2m), **fields)

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


    def parse_module_attr(self, key: str) -> Any:
        kind = MODULE_ATTRIBUTE_KINDS.get(key)
        toks = self.toks
        if kind == "bool":
            return self._parse_bool()
        if kind == "int":
            return self._int()
        if kind == "io_alias":
            self._expect("{")
            entries = []
            while toks[self.pos] != "}":
                out_index = self._parse_int_tuple()
                self._expect(":")
                self._expect("(")
                param = self._int("a parameter number")
                self._expect(",")
                p_index = self._parse_int_tuple()
                kind_text = ""
                if self._accept(","):
                    kind_text = self._name("may-alias or must-alias")
                self._expect(")")
                entries.append(AliasEntry(out_index, param, p_index, kind_text))
                if not self._accept(","):
                    break
            self._expect("}", "'}' to close input_output_alias")
            return entries
        if kind == "buffer_donor":
            self._expect("{")
            donors = []
            while toks[self.pos] != "}":
                self._expect("(")
                param = self._int("a parameter number")
                self._expect(",")
                donors.append((param, self._parse_int_tuple()))
                self._expect(")")
                if not self._accept(","):
                    break
            self._expect("}", "'}' to close buffer_donor")
            return donors
        if kind == "program_shape":
            self._expect("{")
            self._expect("(")
            params: list[Shape] = []
            if toks[self.pos] != ")":
                while True:
                    params.append(self.parse_shape())
                    if not self._accept(","):
                        break
            self._expect(")")
            self._expect("->")
            result = self.parse_shape()
            self._expect("}")
            return ProgramShape(params, result)
        if kind == "frontend_attributes":
            return FrontendAttributes(self.ts.text(self.pos, self._skip_balanced()))
        return RawAttribute(self._raw_value())

    def _parse_int_tuples(self) -> tuple[tuple[int, ...], ...]:
        self._expect("{")
        groups = []
        while self.toks[self.pos] == "{":
            groups.append(self._parse_int_tuple())
            if not self._accept(","):
                break
        self._expect("}")
        return tuple(groups)

    def _parse_int_tuple(self) -> tuple[int, ...]:
        self._expect("{")
        out = []
        while self.toks[self.pos] != "}":
            out.append(self._int())
            if not self._accept(","):
                break
        self._expect("}")
        return tuple(out)

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
                    self.error(problem, inst.span.index)  # type: ignore[union-attr]
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
                           span=_LazySpan(self.ts, start))  # type: ignore[arg-type]
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
                if t in _OPEN:
                    depth += 1
                elif t in _CLOSE:
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
                if toks[self.pos + 1] == "(" and toks[self.pos] not in _CLOSE:
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
        inst.span = _LazySpan(self.ts, name_at)
        return inst, operand_names, pred_names

    # --- attribute values ----------------------------------------------------------------------
    def _parse_bool(self) -> bool:
        tok = self.toks[self.pos]
        if tok not in ("true", "false"):
            self.error("expected true or false")
        self.pos += 1
        return tok == "true"

    def parse_attr(self, kind: str, key: str, inst: Instruction, key_at: int) -> Any:
        toks = self.toks
        if kind == "int":
            return self._int(f"an integer for {key}")
        if kind == "bool":
            return self._parse_bool()
        if kind == "ints":
            if toks[self.pos] == "{" and toks[self.pos + 1] == "{":
                # A list per operand (slice_sizes of a combined collective-permute).
                return self._parse_int_tuples()
            return self._parse_int_tuple()
        if kind == "ident":
            return self._name(f"a value for {key}")
        if kind == "string":
            return unquote(self._string(f"a quoted string for {key}"))
        if kind in ("computation", "computations", "computation_or_list"):
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
        if kind == "window":
            return self._parse_window()
        if kind == "dim_labels":
            # The labels are the tokens written against each other (`?` lexes on its own).
            start = self.pos
            self.pos += 1
            while toks[self.pos] not in ("", ",", "}", ")") and not self.ts.ws(self.pos):
                self.pos += 1
            text = self.ts.text(start, self.pos)
            try:
                return ConvolutionDimensionNumbers.from_labels(text)
            except ValueError as e:
                self.error(str(e), start)
        if kind == "slice":
            self._expect("{")
            ranges = []
            while toks[self.pos] == "[":
                self.pos += 1
                a = self._int("a slice start")
                self._expect(":")
                b = self._int("a slice limit")
                s = 1
                if self._accept(":"):
                    s = self._int("a slice stride")
                self._expect("]")
                ranges.append(SliceRange(a, b, s))
                if not self._accept(","):
                    break
            self._expect("}", "'}' to close slice")
            return tuple(ranges)
        if kind == "padding":
            tok = toks[self.pos]
            try:
                dims = []
                for part in tok.split("x"):
                    nums = [int(v) for v in _split_underscores(part)]
                    if len(nums) == 2:
                        nums.append(0)
                    if len(nums) != 3:
                        raise ValueError
                    dims.append((nums[0], nums[1], nums[2]))
            except ValueError:
                self.error("expected padding like 0_0x1_1 (low_high[_interior] per dimension)")
            self.pos += 1
            return PaddingConfig(tuple(dims))
        if kind == "metadata":
            return OpMetadata(self.ts.text(self.pos, self._skip_balanced()))
        if kind == "frontend_attributes":
            return FrontendAttributes(self.ts.text(self.pos, self._skip_balanced()))
        if kind == "sharding":
            if toks[self.pos] != "{":
                self.error("expected '{' to open a sharding")
            return Sharding(self.ts.text(self.pos, self._skip_balanced()))
        if kind == "backend_config":
            tok = toks[self.pos]
            if tok.startswith('"'):
                return BackendConfig(self._string("a quoted backend_config"))
            if tok == "{":
                return BackendConfig(self.ts.text(self.pos, self._skip_balanced()))
            self.error("expected a quoted string or a JSON object for backend_config")
        if kind == "replica_groups":
            return self._parse_replica_groups()
        if kind == "intss":
            return self._parse_int_tuples()
        if kind == "precision":
            self._expect("{")
            vals = []
            while toks[self.pos] != "}":
                vals.append(self._name("a precision"))
                if not self._accept(","):
                    break
            self._expect("}")
            return tuple(vals)
        if kind == "bools":
            if toks[self.pos] != "{":
                return (self._parse_bool(),)
            self.pos += 1
            bools = []
            while toks[self.pos] != "}":
                bools.append(self._parse_bool())
                if not self._accept(","):
                    break
            self._expect("}")
            return tuple(bools)
        if kind == "shapes":
            self._expect("{")
            shapes = []
            while toks[self.pos] != "}":
                shapes.append(self.parse_shape())
                if not self._accept(","):
                    break
            self._expect("}")
            return tuple(shapes)
        if kind == "literal":
            # `shape value` (the value a token or a braced group), or a parenthesized tuple of them.
            start = self.pos
            if toks[self.pos] != "(":
                self.parse_shape()
            self._skip_balanced()
            return RawAttribute(self.ts.text(start, self.pos))
        return RawAttribute(self._raw_value())

    def _parse_window(self) -> Window:
        start = self.pos
        self._expect("{", "'{' to open the window")
        toks = self.toks
        fields: dict[str, list[str]] = {}
        while toks[self.pos] != "}":
            key_at = self.pos
            key = self._name("a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal)")
            if key not in ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal"):
                self.error(f"unknown window field {key!r}", key_at)
            self._expect("=")
            fields[key] = toks[self.pos].split("x")
            self.pos += 1
        self.pos += 1
        if not fields:
            return Window(())
        if "size" not in fields:
            self.error("a window needs size=", start)
        n = len(fields["size"])
        try:
            def col(key: str, default: int) -> list[int]:
                vals = fields.get(key)
                if vals is None:
                    return [default] * n
                if len(vals) != n:
                    raise ValueError
                return [int(v) for v in vals]

            sizes, strides = col("size", 1), col("stride", 1)
            lhs, rhs, rev = col("lhs_dilate", 1), col("rhs_dilate", 1), col("rhs_reversal", 0)
            pads = [(0, 0)] * n
            if "pad" in fields:
                if len(fields["pad"]) != n:
                    raise ValueError
                pads = []
                for p in fields["pad"]:
                    lo, hi = _split_underscores(p)
                    pads.append((int(lo), int(hi)))
        except ValueError:
            self.error(f"malformed window: every field needs one value per dimension ({n} in size=)", start)
        return Window(tuple(
            WindowDimension(sizes[i], strides[i], pads[i][0], pads[i][1], rhs[i], lhs[i], bool(rev[i]))
            for i in range(n)
        ))

    def _parse_replica_groups(self) -> ReplicaGroups:
        toks = self.toks
        if toks[self.pos] == "{":
            self.pos += 1
            groups = []
            while toks[self.pos] == "{":
                groups.append(self._parse_int_tuple())
                if not self._accept(","):
                    break
            self._expect("}", "'}' to close replica_groups")
            return ReplicaGroups(groups=tuple(groups))
        if toks[self.pos] == "[":
            start = self.pos
            self.pos += 1
            a = self._int()
            self._expect(",")
            b = self._int()
            self._expect("]")
            self._expect("<=", "'<=' in iota replica groups")
            reshape = self._parse_bracket_ints()
            perm: tuple[int, ...] = ()
            if toks[self.pos] == "T":
                self.pos += 1
                self._expect("(")
                perm_l = []
                while toks[self.pos] != ")":
                    perm_l.append(self._int())
                    self._accept(",")
                self.pos += 1
                perm = tuple(perm_l)
            rg = ReplicaGroups(iota_shape=(a, b), iota_reshape=reshape, iota_transpose=perm)
            if a * b != _prod(reshape):
                self.error("iota replica groups: group shape and reshape sizes differ", start)
            return rg
        # mesh['a'=2,'b'=4] {'a'} and other newer spellings: kept as text.
        return ReplicaGroups(text=self._raw_value())

    def _parse_bracket_ints(self) -> tuple[int, ...]:
        self._expect("[")
        out = []
        while self.toks[self.pos] != "]":
            out.append(self._int())
            if not self._accept(","):
                break
        self._expect("]")
        return tuple(out)




def _split_underscores(part: str) -> list[str]:
    # "-1_-2_0" -> ["-1", "-2", "0"]
    out, cur = [], ""
    for ch in part:
        if ch == "_":
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _prod(xs: tuple[int, ...]) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


class _LazySpan:
    """An instruction's position as a token index; the Span is computed only when asked."""

    __slots__ = ("ts", "index")

    def __init__(self, ts: TokenStream, index: int) -> None:
        self.ts = ts
        self.index = index

    def resolve(self):  # -> Span
        return self.ts.span(self.index)

    def render(self, message: str, severity: str = "error") -> str:
        return self.resolve().render(message, severity)

    @property
    def line(self) -> int:
        return self.resolve().line


def token_parser(text: str, name: str = "<line>") -> TokenParser:
    """A token parser over ``text`` (what the line parser falls back to for one piece)."""
    return TokenParser(lex(Source(text, name)))
