"""The HLO tokenizer: one regex pass, token strings plus the whitespace before each.

Measured on seed 003 (style.md): ``findall`` returning strings runs at ~10 MB/s, three times a
match-object loop, so tokens are plain strings classified by their first character. Keeping the
whitespace (and comments) before each token lets any token range be turned back into its exact
source text (for raw attributes) and offsets be computed only when a message needs them.
"""
from __future__ import annotations

import re

from hloscope.source import Source, Span

__all__ = ["lex", "TokenStream"]

# Possessive: a comment must never be re-split by backtracking into tokens. Whitespace is
# C's isspace() set, as XLA's lexer has it (not Unicode's: a no-break space is an error).
_WS = r"(?:[ \t\n\r\f\v]+|/\*.*?\*/|//[^\n]*)*+"
# XLA's strings may span lines (multi-line backend configs).
_STRING = r'"(?:[^"\\]|\\.)*"'
# A string never closed runs to the end of the line: one token the parser rejects.
_BAD_STRING = r'"[^\n]*'
# Metadata and frontend attributes never nest braces outside strings, so each is one token:
# they are ~40% of a dump's bytes, and nothing needs their insides while parsing.
_FLAT_ATTR = r'(?:metadata|frontend_attributes)=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}'
_WORD = r"-?[\w.$%]+(?:[-+](?!>)[\w.$%]*)*"
_PUNCT = r"->|<=|[^ \t\n\r\f\v]"
# The empty alternative at \Z yields the end-of-input sentinel token "" (with the trailing
# whitespace and comments before it), so no text is ever skipped.
_TOKEN_RE = re.compile(f"({_WS})({_FLAT_ATTR}|{_STRING}|{_BAD_STRING}|{_WORD}|{_PUNCT}|\\Z)", re.S)


class TokenStream:
    """Tokens of one Source, with lazy offsets.

    ``toks[i]`` is the i-th token and ``ws(i)`` the whitespace/comments before it. The list
    ends with three sentinel ``""`` tokens so lookahead never runs off the end.
    """

    __slots__ = ("source", "toks", "_pairs", "_offsets")

    def __init__(self, source: Source, pairs: list[tuple[str, str]]) -> None:
        self.source = source
        self._pairs = pairs
        self.toks = [p[1] for p in pairs]
        self._offsets: list[int] | None = None

    def ws(self, i: int) -> str:
        """The whitespace and comments before token ``i``."""
        return self._pairs[i][0] if i < len(self._pairs) else ""

    def offset(self, i: int) -> int:
        """Source offset of token ``i`` (computed for all tokens on first call)."""
        offsets = self._offsets
        if offsets is None:
            import numpy as np

            lens = np.fromiter((len(w) + len(t) for w, t in self._pairs), dtype=np.int64, count=len(self._pairs))
            ws_lens = np.fromiter((len(w) for w, _ in self._pairs), dtype=np.int64, count=len(self._pairs))
            ends = np.cumsum(lens)
            offsets = self._offsets = (ends - lens + ws_lens).tolist()
        return offsets[min(i, len(offsets) - 1)]

    def span(self, i: int, j: int | None = None) -> Span:
        """Span from the start of token ``i`` to the end of token ``j`` (default: token i)."""
        j = i if j is None else j
        start = self.offset(i)
        end = self.offset(j) + len(self.toks[j]) if j < len(self.toks) else start
        return Span(self.source, start, max(end, start))

    def text(self, i: int, j: int) -> str:
        """Exact source text of tokens ``i`` .. ``j-1`` (inner whitespace and comments kept)."""
        if j <= i:
            return ""
        toks = self.toks
        if j == i + 1:
            return toks[i]
        pairs = self._pairs
        return toks[i] + "".join([w + t for w, t in pairs[i + 1 : j]])


def lex(source: Source) -> TokenStream:
    """Tokenize ``source``. Characters no token accepts become one-character tokens the parser
    rejects with a located message, so nothing is skipped silently."""
    pairs = _TOKEN_RE.findall(source.text)
    while len(pairs) > 1 and pairs[-1] == ("", "") and pairs[-2][1] == "":
        pairs.pop()
    if not pairs or pairs[-1][1] != "":
        pairs.append(("", ""))
    # Two more sentinels so the parser's fixed lookahead (pos + 2) never leaves the list.
    pairs.extend((("", ""), ("", "")))
    return TokenStream(source, pairs)


# --- The line form XLA writes ------------------------------------------------------------------
# Note [Fast line path]: XLA writes one instruction per line, always in the same spacing. The
# parser first tries to read a module in that form with one regex match per line (no tokens),
# and falls back to the token parser for the whole module on anything else. The patterns below
# accept a strict subset of the grammar: outside quoted strings they admit no '/' (so no
# comment can start) except XLA's /*index=N*/ operand markers and /*i0=N*/ literal row markers
# (whole comments), no newline, and names only where a delimiter ends them, so every boundary
# the fast path cuts at is a token boundary of `lex`. Lines that are only a `//` comment are
# skipped, as the lexer skips them.
# Values whose meaning needs the grammar (shapes, attribute values) are decoded by the token
# parser on just their own text and cached by that text; the forms an LLM module repeats by the
# thousand (simple and tuple shapes, untyped operand lists, computation heads, the HloModule
# line's layouts and aliases, stack frame rows, whole attribute texts) are read by the patterns
# below and cached too. benchmarks/parse.py --paths says where the line path gave up.
_LF_STRING = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'
_LF_NAME = r"%?[A-Za-z_][A-Za-z0-9_.\-]*+"  # XLA's identifiers: ASCII, no leading digit
_LF_INDEX = r"/\*index=[0-9]+\*/"
# XLA's literals mark the index of each row of a multi-dimensional array: { /*i0=0*/ {1, 2} }.
_LF_ROW_INDEX = r"/\*i[0-9]+=[0-9]+\*/"
_LF_ATOM = rf'[^()"/\n]++|{_LF_INDEX}|{_LF_ROW_INDEX}'
_LF_P1 = rf"\((?:{_LF_ATOM})*+\)"
_LF_P2 = rf"\((?:{_LF_ATOM}|{_LF_P1})*+\)"
_LF_P3 = rf"\((?:{_LF_ATOM}|{_LF_P2})*+\)"
_LF_ARRAY = r"[a-z][a-z0-9]*+\[[^\]\n/]*+\](?:\{[^{}\n/]*+\})?+"
_LF_SHAPE = rf"{_LF_ARRAY}|{_LF_P3}"
_LF_BATOM = rf'[^{{}}"/\n]++|{_LF_STRING}|{_LF_INDEX}'
_LF_B1 = rf"\{{(?:{_LF_BATOM})*+\}}"
_LF_B2 = rf"\{{(?:{_LF_BATOM}|{_LF_B1})*+\}}"
_LF_B3 = rf"\{{(?:{_LF_BATOM}|{_LF_B2})*+\}}"
_LF_B4 = rf"\{{(?:{_LF_BATOM}|{_LF_B3})*+\}}"
# A value outside braces and quotes: words, bracketed and parenthesized groups written against
# them (``[2,4]<=[4,2]T(1,0)``), optionally followed by one braced group (``mesh[...] {...}``).
_LF_SQUARE = r'\[(?:[^\[\]{}()"/\n]++|\[[^\[\]{}()"/\n]*+\])*+\]'
_LF_PLAIN = rf'(?:[^\s,{{}}()\[\]"/]++|{_LF_SQUARE}|\([^(){{}}\[\]"/\n]*+\))++(?: \{{[^{{}}"/\n]*+\}})?+'

#: One ``, key=value`` of an instruction's attribute text.
LINE_ATTRIBUTE_RE = re.compile(rf", ([A-Za-z_][\w.\-]*+)=({_LF_STRING}|{_LF_B4}|{_LF_PLAIN})")
#: XLA's ``/*index=N*/`` marker before every fifth operand.
LINE_INDEX_COMMENT = _LF_INDEX
#: One operand: optional /*index=N*/, optional shape (old syntax), name.
LINE_OPERAND_RE = re.compile(rf"(?:, )?({_LF_INDEX})?(?:({_LF_SHAPE}) )?({_LF_NAME})")
#: A name standing alone, and a braced list of names (control predecessors, called computations).
LINE_NAME_RE = re.compile(_LF_NAME)
LINE_NAME_LIST_RE = re.compile(rf"\{{(?:{_LF_NAME}(?:, ?{_LF_NAME})*+,?)?\}}")
LINE_NAMES_IN_LIST_RE = re.compile(_LF_NAME)
#: A computation header line: ``ENTRY %name (signature) -> shape {`` (checked by the parser).
LINE_COMPUTATION_RE = re.compile(r"(ENTRY )?(\S[^\n]*) \{")
#: A computation's first line in XLA's spacing: ``ENTRY``, name, the signature (brackets still to
#: be checked for balance), the result shape.
#: A signature of names and plain array shapes has balanced brackets by its form (the first of
#: the two signature groups); any other (the second) still has them checked.
_LF_PLAIN_PARAMETER = rf"(?:{_LF_INDEX})?{_LF_NAME}: [a-z][a-z0-9]*+\[[0-9,]*+\](?:\{{[0-9,]*+\}})?+"
_LF_PLAIN_SIGNATURE = rf"\((?:{_LF_PLAIN_PARAMETER}(?:, {_LF_PLAIN_PARAMETER})*+)?\)"
LINE_COMPUTATION_HEAD_RE = re.compile(
    rf"(ENTRY )?({_LF_NAME}) (?:(?:({_LF_PLAIN_SIGNATURE})|({_LF_P3})) -> ({_LF_SHAPE}) )?\{{")
#: A row of a stack frame table: ``1 "file.py"`` or ``2 {file_name_id=1 line=6}``.
LINE_FRAME_ROW_RE = re.compile(rf'([0-9]+) ({_LF_STRING}|\{{[^{{}}()\[\]"/\n]*+\}})')
#: The module's line: ``HloModule name`` and its attribute text (``, key=value`` each).
LINE_MODULE_RE = re.compile(rf"HloModule ({_LF_NAME})(.*)")
#: ``{(p0, /*index=1*/p1)->result}`` (entry_computation_layout) -> parameter text, result.
_LF_SHAPE_LIST = rf"(?:(?:{_LF_INDEX})?(?:{_LF_SHAPE})(?:, (?:{_LF_INDEX})?(?:{_LF_SHAPE}))*+)?"
LINE_PROGRAM_SHAPE_RE = re.compile(rf"\{{\(({_LF_SHAPE_LIST})\)->({_LF_SHAPE})\}}")
#: Shapes, ", " between them, every fifth perhaps after /*index=N*/ (parameters, tuple elements).
LINE_SHAPE_LIST_RE = re.compile(_LF_SHAPE_LIST)
#: One shape of such a list.
LINE_SHAPE_ITEM_RE = re.compile(rf"(?:, )?(?:{_LF_INDEX})?({_LF_SHAPE})")
#: ``{ {0}: (0, {}, may-alias), ... }`` (input_output_alias), and one alias in it.
_LF_INTS = r"(?:[0-9]+(?:, ?[0-9]+)*+)?"
_LF_ALIAS = rf"\{{({_LF_INTS})\}}: \(([0-9]+), \{{({_LF_INTS})\}}(?:, ([a-z]+-alias))?\)"
LINE_ALIAS_RE = re.compile(_LF_ALIAS)
LINE_ALIASES_RE = re.compile(rf"\{{ ?(?:{_LF_ALIAS}(?:, {_LF_ALIAS})*+)? ?\}}")
#: A simple array shape ``f32[2,3]{1,0}``: element type, dimensions, minor-to-major.
LINE_ARRAY_SHAPE_RE = re.compile(r"([a-z][a-z0-9]*)\[((?:[0-9]+(?:,[0-9]+)*)?)\](?:\{((?:[0-9]+(?:,[0-9]+)*)?)\})?")
LINE_INT_RE = re.compile(r"-?[0-9]+")
#: A braced list of integers: ``{}``, ``{1,0}``.
LINE_INTS_RE = re.compile(r"\{(?:-?[0-9]+(?:,-?[0-9]+)*+)?\}")
_LF_OPERAND = rf"(?:{_LF_INDEX})?(?:(?:{_LF_SHAPE}) )?{_LF_NAME}"

_LF_UNTYPED_OPERAND = rf"(?:{_LF_INDEX})?{_LF_NAME}"

#: ``  ROOT %name = shape opcode(operands), attributes`` -> root, name, shape, opcode, operand
#: text, two markers ('' when the operand text is an operand list: the first when it is names
#: alone, each perhaps after /*index=N*/, the second when some are written with their shapes;
#: None otherwise), attribute text (``, key=value`` each).
LINE_INSTRUCTION_RE = re.compile(
    rf"[ \t]*+(ROOT )?({_LF_NAME}) = ({_LF_SHAPE}) ([a-z][\w\-]*+)"
    rf"\(((?:{_LF_UNTYPED_OPERAND}(?:, {_LF_UNTYPED_OPERAND})*+()(?=\))"
    rf"|{_LF_OPERAND}(?:, {_LF_OPERAND})*+()(?=\)))?+(?:{_LF_ATOM}|{_LF_P3})*+)\)(.*)", re.S
)
