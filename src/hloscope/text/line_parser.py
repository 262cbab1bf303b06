"""The fast line path of the HLO parser: XLA's one-instruction-per-line form, one regex match
per line and no tokens. It returns a Module equal to the token parser's, or None, in which case
the token parser (``parser.py``) reads the module and reports any error. See Note [Fast line
path] in ``lexer.py``.
"""
from __future__ import annotations

import re
from typing import Any

from hloscope.ir.attribute_specs import ATTRIBUTE_KINDS, MODULE_ATTRIBUTE_KINDS
from hloscope.ir.attributes import AliasEntry, OpMetadata, StackFrameIndex, unquote
from hloscope.ir.computation import Computation
from hloscope.ir.dtypes import PRIMITIVE_TYPES
from hloscope.ir.instruction import Instruction
from hloscope.ir.layout import Layout
from hloscope.ir.literal import Literal
from hloscope.ir.module import Module
from hloscope.ir.opcode import OPCODES_BY_TEXT, Opcode
from hloscope.ir.print_options import PrintOptions
from hloscope.ir.program_shape import ProgramShape
from hloscope.ir.shape import ArrayShape, Shape, TupleShape
from hloscope.source import LazySpan, Source, Span
from hloscope.text.lexer import (
    LINE_ALIAS_RE,
    LINE_ALIASES_RE,
    LINE_ARRAY_SHAPE_RE,
    LINE_ATTRIBUTE_RE,
    LINE_COMPUTATION_HEAD_RE,
    LINE_COMPUTATION_RE,
    LINE_FRAME_ROW_RE,
    LINE_INDEX_COMMENT,
    LINE_INSTRUCTION_RE,
    LINE_INT_RE,
    LINE_INTS_RE,
    LINE_MODULE_RE,
    LINE_NAME_LIST_RE,
    LINE_NAME_RE,
    LINE_NAMES_IN_LIST_RE,
    LINE_OPERAND_RE,
    LINE_PROGRAM_SHAPE_RE,
    LINE_SHAPE_ITEM_RE,
    LINE_SHAPE_LIST_RE,
    lex,
)
from hloscope.text.shorthand import (
    ASYNC_SUFFIXES,
    NOT_ASYNC_WRAPPABLE,
    async_operand_problem,
)
from hloscope.text.token_parser import (  # noqa: E402  (the token parser is this path's fallback and oracle)
    GROUP_MODE_FROM_FLAGS,
    STACK_SECTIONS,
    TokenParser,
    group_mode_problem,
    is_int,
)

__all__ = ["LineParser", "INSTRUCTIONS_SLOT_BY_SLOT"]


# --- The line parser ---------------------------------------------------------------------------
# Note [Fast line path] (lexer.py) explains the subset it reads. Its contract: it returns a
# Module equal to the token parser's (same IR, same print style) or None, and it returns None
# on anything the token parser would reject, so every error comes from the token parser with
# its exact message and location. Guards below name the token parser's cross-line lookaheads
# that a line-at-a-time reader cannot see.

_COMPUTATION_KINDS = ("computation", "computations", "computation_or_list")
_BRACKETS_RE = re.compile(r"[^(){}\[\]]+")
_ONE_BRACKET = str.maketrans("{[}]", "(())")
_INDEX_COMMENT_SUB = re.compile(LINE_INDEX_COMMENT).sub
_NO_OPERANDS: tuple[str, ...] = ()
# Module constants: looking an enum member up on its class costs a call in Python 3.11.
_CONSTANT, _PARAMETER = Opcode.CONSTANT, Opcode.PARAMETER
_ASYNC_UPDATE, _ASYNC_DONE = Opcode.ASYNC_UPDATE, Opcode.ASYNC_DONE


class _Bail(Exception):
    """The line parser met text outside its subset; the token parser decides."""


class _LineSpan(tuple[Any, ...], LazySpan):
    """A position kept as (source, line index, start column, end column), the line counted from
    0; the line's offset is looked up only when a message is rendered. A tuple, made with
    ``tuple.__new__`` (no Python call)."""

    __slots__ = ()

    def resolve(self) -> Span:
        source, k, start, end = self
        offset = source.line_offset(k + 1)
        return Span(source, offset + start, offset + end)


class _NameSpan(tuple[Any, ...], LazySpan):
    """An instruction's name as (source, line index): where the name lies in its line is found
    again, by the pattern that read the line, only when a message is rendered (keeping columns
    for every instruction was a thirtieth of the load time of XLA's LLM modules)."""

    __slots__ = ()

    def resolve(self) -> Span:
        source, k = self
        line = source.line_text(k + 1)
        m = LINE_INSTRUCTION_RE.fullmatch(line)
        start, end = m.span(2) if m is not None else (0, 0)
        offset = source.line_offset(k + 1)
        return Span(source, offset + start, offset + end)


_new_tuple = tuple.__new__
_INT_START = frozenset("-0123456789")

#: Whether the line parser builds instructions slot by slot, without a constructor call (which
#: was a twentieth of the load time of XLA's LLM modules): only while ``Instruction`` has exactly
#: the slots it fills, so a new slot makes it call the constructor again (and a test fail).
INSTRUCTIONS_SLOT_BY_SLOT = Instruction.__slots__ == (
    "name", "opcode", "shape", "operands", "attrs", "computation", "span")


def _token_parser(text: str) -> TokenParser:
    return TokenParser(lex(Source(text, "<line>")))


def _balanced(text: str) -> bool:
    """Whether the brackets of ``text`` nest, each closed by its own kind (as the token parser
    skips a bracketed group)."""
    b = _BRACKETS_RE.sub("", text)
    while True:
        shorter = b.replace("()", "").replace("[]", "").replace("{}", "")
        if len(shorter) == len(b):
            return not b
        b = shorter


def _io_alias(value: str) -> list[AliasEntry] | None:
    """``{ {0}: (0, {}, may-alias), ... }`` in XLA's spacing, or None."""
    if LINE_ALIASES_RE.fullmatch(value) is None:
        return None
    return [AliasEntry(_ints(out), int(param), _ints(index), kind or "")
            for out, param, index, kind in LINE_ALIAS_RE.findall(value)]


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",")) if text else ()


def _nests(text: str) -> bool:
    """Whether the brackets of ``text`` nest (any kind closing any kind, as a literal is read)."""
    b = _BRACKETS_RE.sub("", text).translate(_ONE_BRACKET)
    while "()" in b:
        b = b.replace("()", "")
    return not b


class LineParser:
    """Reads a module in XLA's one-instruction-per-line form, or gives up (returns None)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.shapes: dict[str, Shape] = {}
        self.values: dict[tuple[str, str], tuple[Any, bool]] = {}
        self.fixups: list[tuple[Instruction, str, Any]] = []
        # Attribute texts read so far (see _attributes): metadata, and the rest of the text.
        self.metadata: dict[str, OpMetadata] = {}
        self.attribute_texts: dict[str, tuple[dict[str, Any], bool, list[tuple[str, Any]]]] = {}
        self.saw_percent = False
        self.saw_typed = False
        self.saw_untyped = False
        self.saw_signature = False
        self.saw_end_comment = False
        self.index_comments: bool | None = None
        # Where the line path gave up, when it did: said by benchmarks/parse.py --paths.
        self.gave_up_at: int | None = None
        self.gave_up = ""

    def parse(self) -> Module | None:
        try:
            return self._module()
        except Exception as e:  # noqa: BLE001 - _Bail, a ParseError or anything else: the token parser decides
            if self.gave_up_at is None:
                self.gave_up = f"{type(e).__name__} outside computation bodies"
            else:
                lines = self.source.text.split("\n")
                line = lines[self.gave_up_at] if self.gave_up_at < len(lines) else "(end of input)"
                self.gave_up = f"line {self.gave_up_at + 1}: {line[:160]!r}"
            return None

    # --- pieces decoded by the token parser on their own text, cached by that text ----------
    def _shape(self, text: str) -> Shape:
        m = LINE_ARRAY_SHAPE_RE.fullmatch(text)
        if m is not None and m.group(1) in PRIMITIVE_TYPES:
            et, dims_text, m2m_text = m.groups()
            dims = tuple(int(d) for d in dims_text.split(",")) if dims_text else ()
            layout = None
            if m2m_text is not None:
                m2m = tuple(int(d) for d in m2m_text.split(",")) if m2m_text else ()
                if m2m and len(m2m) != len(dims):
                    raise _Bail
                layout = Layout(m2m)
            shape: Shape = ArrayShape(et, dims, (), layout)
        elif text[:1] == "(" and text[-1] == ")" and LINE_SHAPE_LIST_RE.fullmatch(text, 1, len(text) - 1):
            # A tuple in XLA's spacing: its elements cached one by one (a while loop's state is a
            # tuple of hundreds of arrays, written in full on every instruction that carries it).
            shapes = self.shapes
            elements = []
            for t in LINE_SHAPE_ITEM_RE.findall(text, 1, len(text) - 1):
                element = shapes.get(t)
                elements.append(element if element is not None else self._shape(t))
            shape = TupleShape(tuple(elements))
        else:
            p = _token_parser(text)
            shape = p.parse_shape()
            if p.toks[p.pos] != "":
                raise _Bail
        self.shapes[text] = shape
        return shape

    def _value(self, kind: str, key: str, text: str) -> Any:
        # Integers, booleans and integer lists are read here, as the token parser reads them
        # (an LLM module's channel_id=N are all distinct: a token parser each was a tenth of
        # its load time); the rest by the token parser.
        if kind == "int" and LINE_INT_RE.fullmatch(text):
            hit: tuple[Any, bool] = (int(text), False)
        elif kind == "bool" and (text == "true" or text == "false"):
            hit = (text == "true", False)
        elif kind == "ints" and LINE_INTS_RE.fullmatch(text):
            hit = (tuple(int(v) for v in text[1:-1].split(",")) if len(text) > 2 else (), False)
        else:
            p = _token_parser(text)
            value = p.parse_attr(kind, key, None, 0)  # type: ignore[arg-type]
            if p.toks[p.pos] != "":
                raise _Bail
            hit = (value, p.saw_percent)
        self.values[(key, text)] = hit
        return hit

    # --- module, computations, instructions -------------------------------------------------
    def _module(self) -> Module:
        source = self.source
        text = source.text
        lines = text.split("\n")
        comp_re = LINE_COMPUTATION_RE.fullmatch
        off = 0
        first = len(lines)
        for k, line in enumerate(lines):
            if line and not line[0].isspace() and comp_re(line):
                first = k
                break
            off += len(line) + 1
        # The stack frame tables (thousands of lines in a module from jax) in their line form are
        # read here; the header before them, or the whole header if they are written otherwise,
        # by the token parser.
        header_end, stack_frames = first, None
        tables = next((k for k in range(first) if lines[k] in STACK_SECTIONS), None)
        if tables is not None:
            stack_frames = self._stack_frames(lines[tables:first])
            if stack_frames is not None:
                header_end = tables
        header = self._module_line(lines[:header_end])
        if header is not None:
            name, attrs = header
        else:
            hp = _token_parser("\n".join(lines[:header_end]) if stack_frames is not None else text[:off])
            name, attrs, header_frames = hp.parse_header()
            if hp.toks[hp.pos] != "":
                raise _Bail
            if stack_frames is None:
                stack_frames = header_frames
            self.saw_percent = hp.saw_percent

        computations: list[Computation] = []
        by_name: dict[str, Computation] = {}
        entry: Computation | None = None
        k = first
        n = len(lines)
        while k < n:
            line = lines[k]
            if not line or line.isspace() or line.startswith("//"):
                k += 1
                continue
            if line[0].isspace():
                raise _Bail
            comp, k = self._computation(lines, k)  # (which checks the line is a head)
            if comp.name in by_name or (comp.is_entry and entry is not None):
                raise _Bail
            by_name[comp.name] = comp
            computations.append(comp)
            if comp.is_entry:
                entry = comp
        if not computations:
            raise _Bail
        if entry is None:
            entry = computations[-1]
            entry.is_entry = True
        if not name:
            name = "module_" + entry.name  # as XLA names a module written without a header
        for inst, key, value in self.fixups:
            inst.attrs[key] = [by_name[v] for v in value] if isinstance(value, list) else by_name[value]
        style = PrintOptions()
        style.percent = self.saw_percent
        style.operand_shapes = self.saw_typed and not self.saw_untyped
        style.signatures = self.saw_signature
        style.end_comments = self.saw_end_comment
        style.operand_index_comments = self.index_comments is not False
        return Module(name, computations, entry, attrs, stack_frames=stack_frames, style=style, source=source)

    def _module_line(self, lines: list[str]) -> tuple[str, dict[str, Any]] | None:
        """The module's name and attributes when its header is one ``HloModule name, key=value,
        ...`` line in XLA's spacing (blank lines and line comments around it), or None. The
        parameter layouts and aliases, a few thousand of each in an LLM module, are read by
        regex; any other attribute, or anything unusual, by the token parser."""
        found = None
        for line in lines:
            if not line or line.isspace() or line.startswith("//"):
                continue
            if found is not None:
                return None
            found = LINE_MODULE_RE.fullmatch(line)
            if found is None:
                return None
        if found is None:
            return None
        name, rest = found.groups()
        percent = name[0] == "%"
        attrs: dict[str, Any] = {}
        covered = 0
        for key, value in LINE_ATTRIBUTE_RE.findall(rest):
            covered += len(key) + len(value) + 3
            kind = MODULE_ATTRIBUTE_KINDS.get(key)
            v = None
            if kind == "program_shape":
                v = self._program_shape(value)
            elif kind == "io_alias":
                v = _io_alias(value)
            if v is None:
                p = _token_parser(value)
                v = p.parse_module_attr(key)
                if p.toks[p.pos] != "":
                    return None
                percent = percent or p.saw_percent
            attrs[key] = v
        if covered != len(rest):
            return None
        if percent:
            self.saw_percent = True
        return (name[1:] if percent and name[0] == "%" else name), attrs

    def _program_shape(self, value: str) -> ProgramShape | None:
        """``{(p0, p1, /*index=2*/p2)->result}``, the shapes cached by their text."""
        m = LINE_PROGRAM_SHAPE_RE.fullmatch(value)
        if m is None:
            return None
        params_text, result_text = m.groups()
        shapes = self.shapes
        params = []
        for t in LINE_SHAPE_ITEM_RE.findall(params_text):
            shape = shapes.get(t)
            params.append(shape if shape is not None else self._shape(t))
        result = shapes.get(result_text)
        return ProgramShape(params, result if result is not None else self._shape(result_text))

    def _stack_frames(self, lines: list[str]) -> StackFrameIndex | None:
        """The stack frame tables written one row a line (``1 "file.py"``, ``2 {file_name_id=1
        ...}``) as the token parser reads them, or None for anything else."""
        sections: dict[str, list[tuple[int, str]]] = {}
        rows: list[tuple[int, str]] = []
        named = False
        row = LINE_FRAME_ROW_RE.fullmatch
        for line in lines:
            if line in STACK_SECTIONS:
                rows = sections[line] = []
                named = line in ("FileNames", "FunctionNames")
                continue
            if not line or line.isspace():
                continue
            m = row(line)
            if m is None or named != (m.group(2)[0] == '"'):
                return None
            key, value = m.groups()
            rows.append((int(key), unquote(value) if named else value))
        return StackFrameIndex(
            tuple(sections.get("FileNames", ())), tuple(sections.get("FunctionNames", ())),
            tuple(sections.get("FileLocations", ())), tuple(sections.get("StackFrames", ())),
        )

    def _computation(self, lines: list[str], k: int) -> tuple[Computation, int]:
        source = self.source
        head = lines[k]
        h = LINE_COMPUTATION_HEAD_RE.fullmatch(head)
        g = h.groups() if h is not None else None
        if g is not None and (g[3] is None or _balanced(g[3])) and (g[0] or g[1] != "ENTRY"):
            # What the token parser's parse_computation_header reads: the signature only for
            # its form (balanced brackets) and the result shape after it.
            entry_kw, comp_name, plain_signature, signature, result = g
            is_entry = entry_kw is not None
            first_token = 5 if is_entry else len(comp_name)
            if comp_name[0] == "%":
                self.saw_percent = True
                comp_name = comp_name[1:]
            if plain_signature is not None or signature is not None:
                self.saw_signature = True
                if result not in self.shapes:
                    self._shape(result)
        else:
            if not LINE_COMPUTATION_RE.fullmatch(head):
                raise _Bail
            hp = _token_parser(head)
            is_entry, comp_name = hp.parse_computation_header()
            if hp.toks[hp.pos] != "":
                raise _Bail
            self.saw_percent = self.saw_percent or hp.saw_percent
            self.saw_signature = self.saw_signature or hp.saw_signature
            first_token = len(hp.toks[0])
        if (comp_name[:1] in _INT_START and is_int(comp_name)) or comp_name in STACK_SECTIONS \
                or comp_name == "HloModule":
            raise _Bail
        span = _new_tuple(_LineSpan, (source, k, 0, first_token))
        k += 1
        # Made first, so each instruction points at it as it is made (Computation's ``parameters``).
        comp = Computation.__new__(Computation)
        param_at: list[int] = []  # where the parameters are in ``instructions``
        instructions: list[Instruction] = []
        names: dict[str, Instruction] = {}
        later: list[tuple[int, Any]] = []  # instructions written before an operand
        slot_by_slot = INSTRUCTIONS_SLOT_BY_SLOT
        append = instructions.append
        new_instruction = object.__new__
        operand = names.__getitem__
        pending_preds: list[tuple[Instruction, list[str]]] = []
        followers: list[Instruction] = []
        root: Instruction | None = None
        # One pass per line, the common case inline (a call per instruction was a tenth of the
        # load time of XLA's LLM modules); rare forms go to the methods below.
        match = LINE_INSTRUCTION_RE.fullmatch
        shapes = self.shapes
        opcodes = OPCODES_BY_TEXT
        percent = untyped_seen = False
        index_comments_unknown = self.index_comments is None
        try:
            while True:
                line = lines[k]
                m = match(line)
                if m is None:
                    if line[:1] == "}":
                        rest = line[1:]
                        if rest:
                            if not rest.lstrip(" \t").startswith("//"):
                                raise _Bail
                            if rest.startswith(" // "):
                                self.saw_end_comment = True
                        k += 1
                        break
                    if line and not line.isspace() and not line.lstrip(" \t").startswith("//"):
                        raise _Bail  # (a line comment is whitespace to the token parser too)
                    k += 1
                    continue
                root_kw, name, shape_text, op_text, args, untyped, typed, attr_text = m.groups()
                if name[0] == "%":
                    percent = True
                    name = name[1:]
                elif name == "ROOT":
                    raise _Bail
                shape = shapes.get(shape_text)
                if shape is None:
                    shape = self._shape(shape_text)
                opcode = opcodes.get(op_text)
                if opcode is _PARAMETER and args.isdigit():  # (a fifth of an LLM module's lines)
                    attrs: dict[str, Any] = {"parameter_number": int(args)}
                    operands: list[Instruction] = []
                    param_at.append(len(instructions))
                else:
                    attrs = {}
                    if opcode is None or opcode is _CONSTANT or opcode is _PARAMETER:
                        opcode, operand_names = self._unusual_operands(opcode, op_text, args, untyped, typed, attrs)
                        if opcode is _PARAMETER:
                            param_at.append(len(instructions))
                    elif not args:
                        operand_names = _NO_OPERANDS
                    elif untyped is None:
                        if typed is None:  # not an operand list (LINE_INSTRUCTION_RE)
                            raise _Bail
                        operand_names = self._typed_operands(args)  # written with their shapes (old syntax)
                    else:
                        # Names, ", " between them, every fifth perhaps after /*index=N*/ (the
                        # form LINE_INSTRUCTION_RE checked), cut with string methods: a regex per
                        # operand was a quarter of the load time of XLA's LLM modules.
                        untyped_seen = True
                        if index_comments_unknown and args.count(", ") >= 5:
                            if self.index_comments is None:  # (the first wide list decides)
                                self.index_comments = args.split(", ", 6)[5][0] == "/"
                            index_comments_unknown = False
                        if "/" in args:
                            args = _INDEX_COMMENT_SUB("", args)
                        if args[0] == "%":
                            # (every name written with '%', as XLA writes them; were one not, its
                            # piece would hold ", " and name no instruction: the line path gives up)
                            percent = True
                            operand_names = args[1:].split(", %")
                        else:
                            operand_names = args.split(", ")
                    if not operand_names:
                        operands = []
                    else:
                        try:  # XLA writes operands before their users: resolved now, but for the rare others
                            operands = list(map(operand, operand_names))
                        except KeyError:
                            operands = []
                            later.append((len(instructions), operand_names))
                inst_span = _new_tuple(_NameSpan, (source, k))
                if slot_by_slot:
                    inst = new_instruction(Instruction)
                    inst.name = name
                    inst.opcode = opcode
                    inst.shape = shape
                    inst.operands = operands
                    inst.attrs = attrs
                    inst.computation = comp
                    inst.span = inst_span
                else:
                    inst = Instruction(name, opcode, shape, operands, attrs, span=inst_span)
                    inst.computation = comp
                if attr_text:
                    pred_names = self._attributes(inst, attrs, attr_text)
                    if pred_names is not None:
                        pending_preds.append((inst, pred_names))
                    if opcode in GROUP_MODE_FROM_FLAGS and group_mode_problem(opcode, attrs) is not None:
                        raise _Bail  # the token parser says where and why
                names[name] = inst  # (a name written twice shows in the count at the end)
                append(inst)
                if opcode is _ASYNC_UPDATE or opcode is _ASYNC_DONE:
                    followers.append(inst)
                if root_kw is not None:
                    if root is not None:
                        raise _Bail
                    root = inst
                k += 1
        except Exception:
            self.gave_up_at = k  # (for benchmarks/parse.py --paths: the line it could not read)
            raise
        if percent:
            self.saw_percent = True
        if untyped_seen:
            self.saw_untyped = True
        if not instructions or len(names) != len(instructions):
            raise _Bail
        for i, operand_names in later:
            instructions[i].operands = list(map(operand, operand_names))
        for inst in followers:
            if async_operand_problem(inst):
                raise _Bail
        for inst, pred_names in pending_preds:
            inst.attrs["control-predecessors"] = [names[p] for p in pred_names]
        if root is None:
            root = instructions[-1]
        comp.__init__(comp_name, instructions, root, is_entry=is_entry, span=span,
                      parameters=[instructions[i] for i in param_at])
        return comp, k

    def _unusual_operands(self, opcode: Opcode | None, op_text: str, args: str, untyped: str | None,
                          typed: str | None, attrs: dict[str, Any]) -> tuple[Opcode, Any]:
        """A constant's literal, a parameter's number, or the operands of XLA's async sugar."""
        if opcode is None:  # XLA's async sugar, `call-start` (Note [Async sugar] in parser.py)
            base, _, suffix = op_text.rpartition("-")
            opcode, wrapped = ASYNC_SUFFIXES.get(suffix), OPCODES_BY_TEXT.get(base)
            if opcode is None or wrapped is None or wrapped in NOT_ASYNC_WRAPPABLE:
                raise _Bail
            operand_names: Any = _NO_OPERANDS
            if args:
                if untyped is None and typed is None:  # not an operand list (LINE_INSTRUCTION_RE)
                    raise _Bail
                operand_names = self._typed_operands(args)
            attrs["async_wrapped_opcode"] = wrapped
            return opcode, operand_names
        if opcode is _CONSTANT:
            if not args or args != args.strip() or args[0] == "/" or args[-1] == "/":
                raise _Bail
            if ("{" in args or "[" in args or "}" in args or "]" in args) and not _nests(args):
                raise _Bail
            attrs["literal"] = Literal(args)
            return opcode, _NO_OPERANDS
        if LINE_INT_RE.fullmatch(args) is None:
            raise _Bail
        attrs["parameter_number"] = int(args)
        return opcode, _NO_OPERANDS

    def _attributes(self, inst: Instruction, attrs: dict[str, Any], attr_text: str) -> list[str] | None:
        """Reads ``, key=value`` each into ``attrs``; returns the control predecessors' names.

        The attributes of most instructions repeat those of others word for word (an LLM module
        has a tenth as many distinct attribute texts, metadata included, as instructions), so
        each distinct text is read once and its values are shared, as the values cache already
        shares them: every value type is immutable. References to computations and control
        predecessors are kept as names and resolved for each instruction."""
        metadata = None
        # XLA writes metadata last; when it is one flat braced group (what the lexer reads as
        # one _FLAT_ATTR token: one '{', one '}', whole strings without escapes) it is split
        # off without a regex. A wrong cut leaves the rest unmatched, and the check below bails.
        j = attr_text.rfind(", metadata={")
        if j >= 0:
            md = attr_text[j + 11 :]
            metadata = self.metadata.get(md)
            if metadata is None and md.count("}") == 1 and md[-1] == "}" and md.count("{") == 1 \
                    and not md.count('"') % 2 and "\\" not in md:
                metadata = self.metadata[md] = OpMetadata(md)
            if metadata is not None:
                attr_text = attr_text[:j]
        pred_names = None
        if attr_text:
            known = self.attribute_texts.get(attr_text)
            if known is None:
                known = self._read_attributes(attr_text)
            values, percent, references = known
            if attrs and not attrs.keys().isdisjoint(values):
                raise _Bail
            attrs.update(values)
            if percent:
                self.saw_percent = True
            for key, names in references:
                if key == "control-predecessors":
                    pred_names = names
                    attrs[key] = []  # filled in when the computation's names are known
                else:
                    self.fixups.append((inst, key, names))
        if metadata is not None:
            if "metadata" in attrs:
                raise _Bail
            attrs["metadata"] = metadata
        return pred_names

    def _read_attributes(self, attr_text: str) -> tuple[dict[str, Any], bool, list[tuple[str, Any]]]:
        """The values of an attribute text (names standing for the computations and
        instructions it refers to), whether a name was written with '%', and those references;
        cached by the text."""
        covered = 0
        percent = False
        values = self.values
        out: dict[str, Any] = {}
        references: list[tuple[str, Any]] = []
        for key, value in LINE_ATTRIBUTE_RE.findall(attr_text):
            covered += len(key) + len(value) + 3
            if key in out:
                raise _Bail
            if key == "metadata" and value[0] == "{" and value.count("{") == 1:
                out[key] = OpMetadata(value)  # one lexer token (_FLAT_ATTR)
                continue
            hit = values.get((key, value))
            if hit is None:
                kind = ATTRIBUTE_KINDS.get(key, "raw")
                if kind in _COMPUTATION_KINDS or key == "control-predecessors":
                    refs = self._references(kind, value)
                    references.append((key, refs))
                    out[key] = refs
                    continue
                hit = self._value(kind, key, value)
            if hit[1]:
                percent = True
            out[key] = hit[0]
        if covered != len(attr_text):
            raise _Bail
        known = self.attribute_texts[attr_text] = (out, percent, references)
        return known

    def _typed_operands(self, args: str) -> list[str]:
        """The names of an operand list whose operands may be written with their shapes."""
        shapes = self.shapes
        items = LINE_OPERAND_RE.findall(args)
        percent = False
        operand_names = []
        for _, op_shape, op_name in items:
            if op_shape:
                self.saw_typed = True
                if op_shape not in shapes:
                    self._shape(op_shape)
            else:
                self.saw_untyped = True
            if op_name[0] == "%":
                percent = True
                op_name = op_name[1:]
            operand_names.append(op_name)
        if percent:
            self.saw_percent = True
        if self.index_comments is None and len(items) > 5:
            self.index_comments = bool(items[5][0])
        return operand_names

    def _references(self, kind: str, value: str) -> str | list[str]:
        """The names in a computation reference (``%c`` or ``{%a, %b}``) or control-predecessors."""
        if value[0] == "{":
            if kind == "computation" or LINE_NAME_LIST_RE.fullmatch(value) is None:
                raise _Bail
            refs = LINE_NAMES_IN_LIST_RE.findall(value)
            if any(r[0] == "%" for r in refs):
                self.saw_percent = True
                refs = [r[1:] if r[0] == "%" else r for r in refs]
            return refs
        if kind not in ("computation", "computation_or_list") or not LINE_NAME_RE.fullmatch(value):
            raise _Bail
        if value[0] == "%":
            self.saw_percent = True
            return value[1:]
        return value
