"""Parsing HLO text: the one public entry, whichever path reads the text.

Text in the line form XLA writes is read by the line parser (Note [Fast line path] in
``lexer.py``); anything else, and every error, by the token parser (``token_parser.py``).
"""
from __future__ import annotations

from hloscope.gc_pause import cyclic_gc_paused
from hloscope.ir.module import Module
from hloscope.ir.shape import Shape
from hloscope.source import Source
from hloscope.text.lexer import lex
from hloscope.text.line_parser import LineParser
from hloscope.text.token_parser import TokenParser

__all__ = ["parse_module", "parse_shape"]


def parse_module(text: str, name: str = "<string>") -> Module:
    """Parse HLO module text; raises ParseError with ``name:line:col`` and a caret.

    Text in the line form XLA writes is read by the line parser (Note [Fast line path] in
    ``lexer.py``); anything else, and every error, by the token parser.
    """
    source = Source(text, name)
    # Parsing allocates tens of thousands of objects that all stay alive; the cyclic collector
    # would scan them repeatedly for nothing (~10% of the time on seed 003).
    with cyclic_gc_paused():
        module = LineParser(source).parse()
        if module is not None:
            return module
        return TokenParser(lex(source)).parse_module()


def parse_shape(text: str) -> Shape:
    """Parse a shape such as ``(f32[2,3]{1,0}, s32[])``."""
    p = TokenParser(lex(Source(text, "<shape>")))
    shape = p.parse_shape()
    if p.toks[p.pos] != "":
        p.error("unexpected text after shape")
    return shape
