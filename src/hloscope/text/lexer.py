"""The HLO tokenizer: one regex pass, token strings plus the whitespace before each.

Measured on seed 003 (style.md): ``findall`` returning strings runs at ~10 MB/s, three times a
match-object loop, so tokens are plain strings classified by their first character. Keeping the
whitespace (and comments) before each token lets any token range be turned back into its exact
source text (for raw attributes) and offsets be computed only when a message needs them.
"""
from __future__ import annotations

import re

from hloscope.text.source import Source, Span

__all__ = ["lex", "TokenStream"]

# Possessive: a comment must never be re-split by backtracking into tokens.
_WS = r"(?:\s+|/\*.*?\*/|//[^\n]*)*+"
_STRING = r'"(?:[^"\\\n]|\\.)*"'
# A string missing its closing quote runs to the end of the line: one token the parser rejects.
_BAD_STRING = r'"[^\n]*'
# Metadata and frontend attributes never nest braces outside strings, so each is one token:
# they are ~40% of a dump's bytes, and nothing needs their insides while parsing.
_FLAT_ATTR = r'(?:metadata|frontend_attributes)=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}'
_WORD = r"-?[\w.$%]+(?:[-+](?!>)[\w.$%]*)*"
_PUNCT = r"->|<=|\S"
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
        if self._offsets is None:
            import numpy as np

            lens = np.fromiter((len(w) + len(t) for w, t in self._pairs), dtype=np.int64, count=len(self._pairs))
            ws_lens = np.fromiter((len(w) for w, _ in self._pairs), dtype=np.int64, count=len(self._pairs))
            ends = np.cumsum(lens)
            self._offsets = (ends - lens + ws_lens).tolist()
        return self._offsets[min(i, len(self._offsets) - 1)]

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
