"""The parser's speed by design, checked without timing anything.

* The line path (Note [Fast line path] in ``text/lexer.py``) reads every module XLA wrote that
  we own, and gives exactly what the token parser gives: same IR, print style and spans.
* It never accepts what the token parser rejects (so errors keep their exact message and
  location), including on mutated inputs.
* Its work is linear: one line regex per line, and token-parser calls bounded by the distinct
  shapes and attribute values, not by the number of instructions.
* Metadata stays undecoded text until asked for.
"""
from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

import hloscope as hs
from hloscope.errors import ParseError
from hloscope.ir.equality import first_difference
from hloscope.source import Source
from hloscope.text import line_parser as parser_module
from hloscope.text.lexer import lex
from hloscope.text.line_parser import LineParser as _LineParser
from hloscope.text.token_parser import TokenParser
from tests.conftest import MODULE_SEEDS, SEED_FILES

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
LINE_FORM = [SEED_FILES[s] for s in MODULE_SEEDS] + sorted((GOLDEN / "roundtrip").glob("*.hlo"))
ERRORS = sorted((GOLDEN / "parse_errors").glob("*.hlo"))


def _line_parse(text: str) -> hs.Module | None:
    return _LineParser(Source(text, "<line>")).parse()


def _token_parse(text: str) -> hs.Module:
    return TokenParser(lex(Source(text, "<token>"))).parse_module()


def _assert_same(fast: hs.Module, slow: hs.Module) -> None:
    assert first_difference(fast, slow) is None
    assert repr(fast.style) == repr(slow.style)
    assert fast.to_text() == slow.to_text()
    for a, b in zip(fast.instructions(), slow.instructions(), strict=True):
        sa, sb = a.span.resolve(), b.span.resolve()
        assert (sa.start, sa.end) == (sb.start, sb.end), a.name
        assert type(a.attrs.get("metadata")) is type(b.attrs.get("metadata"))
    for a, b in zip(fast.computations, slow.computations, strict=True):
        sa, sb = a.span.resolve(), b.span.resolve()
        assert (sa.start, sa.end) == (sb.start, sb.end), a.name


@pytest.mark.parametrize("path", LINE_FORM, ids=lambda p: p.stem)
def test_line_path_reads_xla_output_like_the_token_parser(path: Path) -> None:
    text = path.read_text()
    fast = _line_parse(text)
    assert fast is not None, "the line path fell back to the token parser"
    _assert_same(fast, _token_parse(text))


@pytest.mark.parametrize("path", ERRORS, ids=lambda p: p.stem)
def test_line_path_leaves_every_error_to_the_token_parser(path: Path) -> None:
    assert _line_parse(path.read_text()) is None


def _char_mutation(text: str, rng: random.Random) -> str:
    """Edit one instruction line at character level (the line path's own attack surface)."""
    lines = text.split("\n")
    k = rng.randrange(len(lines))
    line = lines[k]
    i = rng.randrange(len(line) + 1)
    junk = rng.choice(list("{}[](),=:%\"/*\\ -<>?T0x") + [", ", "/*index=5*/", " ROOT", "{...}", "->", "\n"])
    op = rng.randrange(3)
    if op == 0:
        line = line[:i] + junk + line[i:]
    elif op == 1:
        line = line[:i] + line[i + rng.randrange(1, 4) :]
    else:
        line = line[:i] + junk + line[i + 1 :]
    lines[k] = line
    return "\n".join(lines)


def test_line_path_agrees_with_the_token_parser_on_mutated_modules() -> None:
    from tests.text.fuzz_parser import mutate, seed_texts

    rng = random.Random(20240601)
    texts = seed_texts(max_bytes=20_000)
    for case in range(240):
        name, text = texts[case % len(texts)]
        mutated = _char_mutation(text, rng) if case % 2 else mutate(text, rng)
        fast = _line_parse(mutated)
        try:
            slow = _token_parse(mutated)
        except ParseError:
            assert fast is None, f"case {case}: the line path accepted what the token parser rejects"
            continue
        if fast is not None:
            _assert_same(fast, slow)


class _Counting:
    """A compiled pattern that counts its calls."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.pattern, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return method(*args, **kwargs)

        return counted


def _doubled(text: str) -> str:
    """The module with every computation twice (the copies renamed), printed."""
    from hloscope.ir import Module

    comps = []
    entry = None
    for k in range(2):
        m = hs.parse(text)
        for c in m.computations:
            c.name = f"{c.name}.x{k}"
            c.is_entry = k == 1 and c is m.entry
            entry = c if c.is_entry else entry
            comps.append(c)
    return Module(m.name, comps, entry, m.attrs, stack_frames=m.stack_frames, style=m.style).to_text()


def test_parse_work_is_linear_in_size(monkeypatch: pytest.MonkeyPatch) -> None:
    text = SEED_FILES["003"].read_text()
    counts = []
    for t in (text, _doubled(text)):
        line_re = _Counting(parser_module.LINE_INSTRUCTION_RE)
        token_parsers = _Counting(re.compile(""))
        real = parser_module._token_parser

        def counted_token_parser(s: str, real: Any = real, c: _Counting = token_parsers) -> Any:
            c.calls += 1
            return real(s)

        monkeypatch.setattr(parser_module, "LINE_INSTRUCTION_RE", line_re)
        monkeypatch.setattr(parser_module, "_token_parser", counted_token_parser)
        m = hs.parse(t)
        n = m.instruction_count
        lines = t.count("\n") + 1
        # One line regex per line of a computation body (so every instruction went through the
        # line path), nothing per token.
        assert n <= line_re.calls <= lines
        # The token parser runs on the header, each computation's first line, and once per
        # distinct shape or attribute value (cached), never once per instruction.
        assert token_parsers.calls < len(m.computations) + n // 4
        counts.append((line_re.calls, token_parsers.calls, len(m.computations), n))
    (l1, t1, c1, i1), (l2, t2, c2, i2) = counts
    assert i2 == 2 * i1 and l2 == 2 * l1
    # Twice the computations: twice the headers; the shapes and values are the same ones.
    assert t2 - t1 <= c2 - c1


def test_metadata_stays_text_until_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from hloscope.ir import attributes

    kv = _Counting(attributes._KV_RE)
    monkeypatch.setattr(attributes, "_KV_RE", kv)
    text = SEED_FILES["003"].read_text()
    m = hs.parse(text)
    with_metadata = [i for i in m.instructions() if i.metadata is not None]
    assert len(with_metadata) > 4000
    assert kv.calls == 0, "parsing decoded metadata"
    first = with_metadata[0]
    assert first.metadata is not None and first.metadata.text in text
    assert first.metadata.op_type is not None
    assert kv.calls == 1


_OPERANDS = ", ".join(f"/*index={i}*/%p{i}" if i % 5 == 0 and i else f"%p{i}" for i in range(12))
_NEW_FORMS = {
    # Line comments are whitespace to the lexer: between computations, inside a body, indented.
    "comment lines": """// a note before the module
HloModule m

// between computations
%add (a: f32[], b: f32[]) -> f32[] {
  // inside a body
  %a = f32[] parameter(0)
// at column 0 inside a body
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %e {
  %x = f32[2] parameter(0)
  %c = f32[] constant(0)
    // deeper
  ROOT %s = f32[] reduce(%x, %c), dimensions={0}, to_apply=%add
}
""",
    # XLA's literal row markers inside a constant.
    "literal row markers": """HloModule m

ENTRY %e {
  %c = f32[1,1,2]{2,1,0} constant({ { /*i0=0*/ { /*i1=0*/ {1, 2} } } })
  %d = f32[2,2] constant({ { /*i0=0*/ {1, 2} }, { /*i0=1*/ {3, 4} } })
  ROOT %t = (f32[1,1,2]{2,1,0}, f32[2,2]) tuple(%c, %d)
}
""",
    # Tuple shapes in XLA's spacing, read element by element: nested, empty, with index markers.
    "tuple shapes": """HloModule m

ENTRY %e (p: (f32[2]{0}, (s32[], ()), f32[], f32[], f32[], /*index=5*/f32[3])) -> (s32[], ()) {
  %p = (f32[2]{0}, (s32[], ()), f32[], f32[], f32[], /*index=5*/f32[3]) parameter(0)
  %q = (s32[], ()) get-tuple-element(%p), index=1
  %r = (s32[], ()) copy(%q)
  ROOT %t = (s32[], ()) tuple()
}
""",
    # Attribute texts repeated word for word, references included (read once, resolved each).
    "repeated references": """HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}

ENTRY %e {
  %x = f32[2] parameter(0)
  %c = f32[] constant(0)
  %s = f32[] reduce(%x, %c), dimensions={0}, to_apply=%add
  %t = f32[] reduce(%x, %c), dimensions={0}, to_apply=%add, control-predecessors={%s}
  %u = f32[] reduce(%x, %c), dimensions={0}, to_apply=%add, control-predecessors={%s}
  ROOT %v = (f32[], f32[], f32[]) tuple(%s, %t, %u)
}
""",
    # Wide untyped operand lists: with and without '%', with and without /*index=N*/.
    "wide operand lists": "HloModule m\n\nENTRY %e {\n"
    + "".join(f"  %p{i} = f32[] parameter({i})\n" for i in range(12))
    + "  %t = (f32[], f32[]) tuple(%p0, %p1)\n"
    + f"  ROOT %u = ({', '.join(['f32[]'] * 12)}) tuple({_OPERANDS})\n}}\n",
    "wide operand lists, no percent": "HloModule m\n\nENTRY e {\n"
    + "".join(f"  p{i} = f32[] parameter({i})\n" for i in range(12))
    + f"  ROOT u = ({', '.join(['f32[]'] * 12)}) tuple({_OPERANDS.replace('%', '')})\n}}\n",
    "wide operand lists, no index markers": "HloModule m\n\nENTRY e {\n"
    + "".join(f"  p{i} = f32[] parameter({i})\n" for i in range(7))
    + f"  ROOT u = ({', '.join(['f32[]'] * 7)}) tuple({', '.join(f'p{i}' for i in range(7))})\n}}\n",
}


@pytest.mark.parametrize("form", sorted(_NEW_FORMS))
def test_line_path_reads_these_forms_like_the_token_parser(form: str) -> None:
    text = _NEW_FORMS[form]
    fast = _line_parse(text)
    assert fast is not None, "the line path fell back to the token parser"
    _assert_same(fast, _token_parse(text))
    if form == "repeated references":
        t, u = fast.entry.instructions[3:5]
        assert t.attrs["to_apply"] is u.attrs["to_apply"] is fast.computations[0]
        assert t.control_predecessors == u.control_predecessors and t.control_predecessors is not u.control_predecessors


@pytest.mark.parametrize("line", [
    "  %u = (f32[], f32[]) tuple(%p0,%p1)",  # no space after ','
    "  %u = (f32[], f32[]) tuple(%p0 , %p1)",
    "  %u = (f32[], f32[]) tuple(%%p0, %p1)",
    "  %u = (f32[], f32[]) tuple(%p0/*index=1*/%p1)",
    "  %u = (f32[], f32[]) tuple(%p0, /*index=1*/ /*index=1*/%p1)",
    "  %u = (f32[], f32[]) tuple(%p0, /*i0=1*/%p1)",
    "  %u = f32[2] constant(/*i0=0*/{1, 2})",
    "  %u = f32[2] constant({1, 2} /*i0=0*/)",
    "  %u = f32[2] constant({1, 2} /*i0=0)",
    "  /* a block comment */",
    "  %u = (f32[],f32[]) tuple(%p0, %p1)",
    "  %u = (f32[], f32[]) tuple(p0, %p1)",
    "  %u = (f32[], f32[]) tuple(%p0, p1)",
    "  %u = (f32[], f32[]) tuple(%p0, %%p1)",
    "  %u = (f32[2]{0,1}, f32[]) tuple(%p0, %p1)",
    "  %u = (f32[], /*index=1*/ f32[]) tuple(%p0, %p1)",
    "  %u = (f32[], (f32[]) tuple(%p0, %p1)",
])
def test_line_path_leaves_near_misses_of_these_forms_to_the_token_parser(line: str) -> None:
    text = f"HloModule m\n\nENTRY e {{\n  %p0 = f32[] parameter(0)\n  %p1 = f32[] parameter(1)\n{line}\n}}\n"
    fast = _line_parse(text)
    try:
        slow = _token_parse(text)
    except ParseError:
        assert fast is None
        return
    assert fast is None or _assert_same(fast, slow) is None


@pytest.mark.parametrize("head", [
    "ENTRY {",
    "ENTRY ENTRY {",
    "%ENTRY {",
    "ENTRY %e (p: f32[2}) -> f32[] {",
    "ENTRY %e (p: f32[2]{0}, /*index=1*/q: (f32[], s32[3]{0})) -> (f32[], f32[2]) {",
    "ENTRY %e (p: f32[2]) -> f32[2]{0,1} {",
    "ENTRY %e (p: f32[2]) -> f32[2]{0} junk {",
    "ENTRY %e (p: f32[2]) ->f32[2] {",
    "ENTRY %e (p: f32[2] -> f32[2] {",
    "ENTRY %e () -> f32[] {",
    "ENTRY %e (p: f32[2]{0}, /*index=1*/q: s32[], r: pred[]) -> f32[] {",
    "ENTRY %e (p: f32[2]{0}, q: s32[]{0}) -> f32[] {",
    "ENTRY %e (p: f32[2]{0}, q: s32[) -> f32[] {",
    "%c.1 (p.1: f32[2]{0}) -> f32[2]{0} {",
    "ENTRY HloModule {",
    "ENTRY %e (p: \"f32[2]\") -> f32[] {",
])
def test_computation_heads_read_by_the_line_path_as_by_the_token_parser(head: str) -> None:
    text = f"HloModule m\n\n{head}\n  %p = f32[] parameter(0)\n  ROOT %c = f32[] constant(1)\n}}\n"
    fast = _line_parse(text)
    try:
        slow = _token_parse(text)
    except ParseError:
        assert fast is None
        return
    if fast is not None:
        _assert_same(fast, slow)


def test_signatures_in_xla_spacing_skip_the_token_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = parser_module._token_parser
    monkeypatch.setattr(parser_module, "_token_parser", lambda s: calls.append(s) or real(s))
    head = "ENTRY %e (p: f32[2]{0}, /*index=1*/q: (f32[], s32[3]{0})) -> (f32[], f32[2]) {"
    text = f"HloModule m\n\n{head}\n  %p = f32[] parameter(0)\n  ROOT %c = f32[] constant(1)\n}}\n"
    fast = _line_parse(text)
    assert fast is not None and fast.style.signatures
    assert head not in calls


_FRAMES = """FileNames
1 "a.py"
2 "b \\\\"q\\\\".py"

FunctionNames
1 "f"
FileLocations
1 {file_name_id=1 function_name_id=1 line=6 end_line=6 column=13 end_column=18}
StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=1 parent_frame_id=1}
"""


@pytest.mark.parametrize("frames", [
    _FRAMES,
    _FRAMES.replace('1 "f"', '1 {f}'),
    _FRAMES.replace("1 {file_location_id", '1 "x"'),
    _FRAMES.replace("2 {file", "-2 {file"),
    _FRAMES.replace("1 {file_name", "1 {(file_name"),
    _FRAMES.replace("1 {file_name", "1 {/*c*/file_name"),
    _FRAMES.replace("StackFrames\n", "StackFrames\n1\n{file_location_id=3}\n"),
    _FRAMES.replace("FunctionNames\n", "FunctionNames \n"),
    _FRAMES + "FileNames\n7 \"again.py\"\n",
    _FRAMES + "junk\n",
])
def test_stack_frame_tables_read_by_the_line_path_as_by_the_token_parser(frames: str) -> None:
    text = f"HloModule m, entry_computation_layout={{()->f32[]}}\n\n{frames}\nENTRY %e {{\n  ROOT %c = f32[] constant(1)\n}}\n"
    fast = _line_parse(text)
    try:
        slow = _token_parse(text)
    except ParseError:
        assert fast is None
        return
    assert fast is not None
    _assert_same(fast, slow)
    assert fast.stack_frames == slow.stack_frames
    if frames == _FRAMES:
        assert fast.stack_frames is not None and len(fast.stack_frames.stack_frames) == 2


_LAYOUT = "entry_computation_layout={(f32[2]{0}, s32[], (f32[], s32[3]{0}), f32[], f32[], /*index=5*/f32[])->(f32[2]{0}, s32[])}"


@pytest.mark.parametrize("head", [
    f"HloModule m, {_LAYOUT}",
    f"HloModule %m, is_scheduled=true, {_LAYOUT}, num_partitions=8",
    "HloModule m, input_output_alias={ {0}: (0, {}, may-alias), {1,2}: (1, {0, 1}, must-alias), {3}: (2, {}) }",
    "HloModule m, input_output_alias={}",
    "HloModule m, input_output_alias={ {0}: (0, {}, %may-alias) }",
    "HloModule m, input_output_alias={ {0}: (-1, {}, may-alias) }",
    "HloModule m, input_output_alias={ {0}: (0, {}, may-alias), }",
    "HloModule m, input_output_alias={{0}:(0,{},may-alias)}",
    'HloModule m, frontend_attributes={a="1", b="{2}"}, replica_count=2',
    "HloModule m, entry_computation_layout={(f32[2]{0,1})->f32[]}",
    "HloModule m, entry_computation_layout={(f32[2]{0} )->f32[]}",
    "HloModule m, entry_computation_layout={()->f32[]}",
    "HloModule m, entry_computation_layout={(f32[2]{0}, /*index=1*/ f32[])->f32[]}",
    "HloModule m,  replica_count=2",
    "HloModule m, replica_count=2 // a comment",
    "HloModule m:",
    "HloModule m, buffer_donor={ (0, {}), (1, {0}) }",
    "HloModule m, mystery=[2,4]<=[8]T(1,0), other={a b}",
])
def test_module_lines_read_by_the_line_path_as_by_the_token_parser(head: str) -> None:
    text = f"// a note\n{head}\n\nENTRY %e {{\n  ROOT %c = f32[] constant(1)\n}}\n"
    fast = _line_parse(text)
    try:
        slow = _token_parse(text)
    except ParseError:
        assert fast is None
        return
    assert fast is not None
    _assert_same(fast, slow)
    assert fast.name == slow.name
    assert repr(fast.attrs) == repr(slow.attrs)


def test_module_lines_in_xla_spacing_skip_the_token_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = parser_module._token_parser
    monkeypatch.setattr(parser_module, "_token_parser", lambda s: calls.append(s) or real(s))
    text = (f"HloModule m, {_LAYOUT}, input_output_alias={{ {{0}}: (0, {{}}, may-alias) }}\n\n"
            "ENTRY %e {\n  ROOT %c = f32[] constant(1)\n}\n")
    m = _line_parse(text)
    assert m is not None and len(m.attrs["entry_computation_layout"].parameters) == 6
    assert not [c for c in calls if "layout" in c or "alias" in c]


def test_the_line_parser_still_builds_instructions_slot_by_slot() -> None:
    # If this fails, Instruction's slots changed: the line parser now calls its constructor (a
    # twentieth slower on LLM modules); fill the new slot in LineParser._computation and update
    # INSTRUCTIONS_SLOT_BY_SLOT.
    assert parser_module.INSTRUCTIONS_SLOT_BY_SLOT


def test_the_line_parser_reads_the_same_with_the_constructor(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _NEW_FORMS["repeated references"]
    slot_by_slot = _line_parse(text)
    monkeypatch.setattr(parser_module, "INSTRUCTIONS_SLOT_BY_SLOT", False)
    constructed = _line_parse(text)
    assert slot_by_slot is not None and constructed is not None
    _assert_same(slot_by_slot, constructed)


@pytest.mark.parametrize("attrs", [
    "dimensions={}", "dimensions={1,0}", "dimensions={1, 0}", "dimensions={1,}", "dimensions={-1,0}",
    "dimensions={{1},{0}}", "channel_id=7", "channel_id=007", "channel_id=-2", "channel_id=x",
    "channel_id=\u0663", "is_stable=true", "is_stable=false", "is_stable=True", "is_stable={true}",
])
def test_simple_values_read_by_the_line_path_as_by_the_token_parser(attrs: str) -> None:
    text = f"HloModule m\n\nENTRY %e {{\n  %p = f32[2,2]{{1,0}} parameter(0)\n  ROOT %t = f32[2,2]{{0,1}} transpose(%p), {attrs}\n}}\n"
    fast = _line_parse(text)
    try:
        slow = _token_parse(text)
    except ParseError:
        assert fast is None
        return
    if fast is not None:
        _assert_same(fast, slow)
        key = attrs.split("=")[0]
        assert repr(fast.entry.root.attrs[key]) == repr(slow.entry.root.attrs[key])
