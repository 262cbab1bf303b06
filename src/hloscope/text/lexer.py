"""The HLO tokenizer: one regex pass, token strings plus the whitespace before each.

Measured on seed 003 (style.md): ``findall`` returning strings runs at ~10 MB/s, three times a
match-object loop, so tokens are plain strings classified by their first character. Keeping the
whitespace (and comments) before each token lets any token range be turned back into its exact
source text (for raw attributes) and offsets be computed only when a message needs them.
"""
from __future__ import annotations

import itertools
import re

from hloscope.text.source import Source, Span

__all__ = ["lex", "TokenStream"]

# Possessive: a comment must never be re-split by backtracking into tokens.
_WS = r"(?:\s+|/\*.*?\*/|//[^\n]*)*+"
_STRING = r'"(?:[^"\\\n]|\\.)*"'
# Metadata and frontend attributes never nest braces outside strings, so each is one token:
# they are ~40% of a dump's bytes, and nothing needs their insides while parsing.
_FLAT_ATTR = r'(?:metadata|frontend_attributes)=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}'
_WORD = r"-?[\w.$%]+(?:[-+](?!>)[\w.$%]*)*"
_PUNCT = r"->|<=|\S"
# The empty alternative at \Z yields the end-of-input sentinel token "" (with the trailing
# whitespace and comments before it), so no text is ever skipped.
_TOKEN_RE = re.compile(f"({_WS})({_FLAT_ATTR}|{_STRING}|{_WORD}|{_PUNCT}|\\Z)", re.S)


class TokenStream:
    """Tokens of one Source, with lazy offsets.

    ``toks[i]`` is the i-th token and ``wss[i]`` the whitespace/comments before it. The list
    ends with a sentinel ``""`` token so lookahead never runs off the end.
    """

    __slots__ = ("source", "toks", "wss", "_offsets")

    def __init__(self, source: Source, toks: list[str], wss: list[str]) -> None:
        self.source = source
        self.toks = toks
        self.wss = wss
        self._offsets: list[int] | None = None

    def offset(self, i: int) -> int:
        """Source offset of token ``i`` (computed for all tokens on first call)."""
        if self._offsets is None:
            lens = itertools.accumulate(
                itertools.chain.from_iterable((len(w), len(t)) for w, t in zip(self.wss, self.toks))
            )
            flat = list(lens)
            # token i starts after wss[0..i], toks[0..i-1]: that is flat[2*i]
            self._offsets = flat[0::2]
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
        toks, wss = self.toks, self.wss
        if j == i + 1:
            return toks[i]
        return toks[i] + "".join([wss[k] + toks[k] for k in range(i + 1, j)])


def lex(source: Source) -> TokenStream:
    """Tokenize ``source``. Characters no token accepts become one-character tokens the parser
    rejects with a located message, so nothing is skipped silently."""
    pairs = _TOKEN_RE.findall(source.text)
    while len(pairs) > 1 and pairs[-1] == ("", "") and pairs[-2][1] == "":
        pairs.pop()
    if not pairs or pairs[-1][1] != "":
        pairs.append(("", ""))
    wss, toks = (list(x) for x in zip(*pairs))
    return TokenStream(source, toks, wss)
