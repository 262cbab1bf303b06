"""Source text with lazily computed line/column positions, and caret rendering for messages."""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Source", "Span", "SpanLike", "LazySpan"]


class Source:
    """The text of one input and its name (a path or ``<string>``).

    Line starts are computed on first use only: positions are kept as offsets everywhere and
    turned into ``line:col`` only when a message is rendered.
    """

    __slots__ = ("text", "name", "_line_starts")

    def __init__(self, text: str, name: str = "<string>") -> None:
        self.text = text
        self.name = name
        self._line_starts: list[int] | None = None

    def _starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            pos = find("\n")
            while pos != -1:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
            self._line_starts = starts
        return self._line_starts

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of ``offset``."""
        starts = self._starts()
        line = bisect.bisect_right(starts, offset) - 1
        return line + 1, offset - starts[line] + 1

    def line_offset(self, line: int) -> int:
        """The offset where 1-based ``line`` starts."""
        return self._starts()[line - 1]

    def line_text(self, line: int) -> str:
        """The text of 1-based ``line`` without its newline."""
        starts = self._starts()
        begin = starts[line - 1]
        end = starts[line] - 1 if line < len(starts) else len(self.text)
        return self.text[begin:end].rstrip("\r")


@dataclass(frozen=True, slots=True)
class Span:
    """A half-open range of offsets ``[start, end)`` in a Source."""

    source: Source
    start: int
    end: int

    @property
    def line(self) -> int:
        return self.source.line_col(self.start)[0]

    @property
    def column(self) -> int:
        return self.source.line_col(self.start)[1]

    def text(self) -> str:
        return self.source.text[self.start : self.end]

    def render(self, message: str, severity: str = "error") -> str:
        """``name:line:col: severity: message``, then the source line and ``^~~~`` under the span."""
        line, col = self.source.line_col(self.start)
        text = self.source.line_text(line)
        width = max(1, min(self.end, self.start + len(text) - col + 1) - self.start)
        shown = text.expandtabs(1)
        if len(shown) > 200:  # metadata makes lines long; show a window around the caret
            lo = max(0, col - 100)
            shown = ("..." if lo else "") + shown[lo : lo + 200] + "..."
            col = col - lo + (3 if lo else 0)
        caret = " " * (col - 1) + "^" + "~" * (min(width, 60) - 1)
        return f"{self.source.name}:{line}:{col}: {severity}: {message}\n{shown}\n{caret}"


class SpanLike(Protocol):
    """A position in a source: a ``Span``, or a lazy one the parsers keep per instruction (a
    token index or source offsets) that becomes a Span only when a message needs it."""

    @property
    def line(self) -> int: ...

    @property
    def column(self) -> int: ...

    def render(self, message: str, severity: str = "error") -> str: ...


class LazySpan:
    """Base of the parsers' lazy positions: a subclass says how to ``resolve`` itself into a
    Span, and line, column and messages come from that Span only when asked."""

    __slots__ = ()

    def resolve(self) -> Span:
        raise NotImplementedError

    def render(self, message: str, severity: str = "error") -> str:
        return self.resolve().render(message, severity)

    @property
    def line(self) -> int:
        return self.resolve().line

    @property
    def column(self) -> int:
        return self.resolve().column
