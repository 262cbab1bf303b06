"""Page data made smaller: the memory section's long lists in columns (Note [Compact memory
rows]) and each instruction's text without what its row already says (Note [Compact instruction
text]).

Note [Compact memory rows]
--------------------------
XLA's Llama 3.1 8B step has 23,000 schedule steps and 20,000 live ranges; as JSON objects with
their keys repeated they were 7.7 MB of a 16 MB page, and the browser reads the whole page
before it can start. The page therefore carries the memory analysis's ``timeline``,
``buffers`` and ``allocations`` as columns (``{"columns": [key, ...], "values": [[...], ...]}``,
one list per key, a step column that only counts 0, 1, 2... named rather than listed) and
the default memory space's curve and peak buffers once (``memory_spaces["0"]`` drops its
copies). The collectives section's list is in columns too. The figures are the analysis's own ``to_json()``, reordered; the page's script turns
them back into the same objects before anything reads them (``unpackColumns`` in page.js).

Note [Compact instruction text]
-------------------------------
An instruction's printed line (``name = shape{layout} opcode(a, b), attrs``) repeats its row's
name, shape, opcode and operands: on XLA's Llama 3.1 8B step at ten times its size that was
20 of the text column's 28 MB, and the page's size is most of the time it takes to open (the
browser reads and parses every byte before the page can start). The text column therefore
holds ``[layout, rest]`` when the line starts with ``name = shape``, then ``layout``, then
`` opcode(`` and the operands' names (each the name of the row its index points at) joined
by ", ", and the page puts the line back together before anything reads it (``decodeRows`` in
page.js); the line is rebuilt from exactly the characters it was cut from. Any other line (a
tuple shape prints its layouts inside, a constant its literal) stays whole. The family column
is the opcode's own family, so rows carry 0 there and the page fills it from ``families``.
"""
from __future__ import annotations

from typing import Any

__all__ = ["compact_memory", "compact_collectives", "columns", "compact_text"]


def columns(rows: list[dict[str, Any]], index: str | None = None) -> dict[str, Any]:
    """``rows`` (dicts with the same keys) as one list per key. A key ``index`` whose value is
    each row's position (0, 1, 2, ...) is named as ``"index"`` instead of listed."""
    keys = list(rows[0]) if rows else []
    if index in keys and all(r.get(index) == k for k, r in enumerate(rows)):
        keys.remove(index)
        return {"columns": keys, "index": index, "values": [[r.get(k) for r in rows] for k in keys]}
    return {"columns": keys, "values": [[r.get(k) for r in rows] for k in keys]}


def compact_memory(mem: dict[str, Any]) -> None:
    """The memory section's long lists in columns, in place (Note [Compact memory rows])."""
    for key in ("timeline", "buffers", "allocations"):
        rows = mem.get(key)
        if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows[:1]):
            mem[key] = columns(rows, index="time" if key == "timeline" else None)
    spaces = mem.get("memory_spaces")
    if isinstance(spaces, dict) and isinstance(spaces.get("0"), dict):
        zero = spaces["0"]
        zero["timeline"] = None  # the same as the headline timeline above
        if zero.get("peak_buffers") == mem.get("peak_buffers"):
            zero["peak_buffers"] = None  # and the same peak buffers


def compact_collectives(col: dict[str, Any]) -> None:
    """The collectives section's list in columns, in place (Note [Compact memory rows]: a
    module of 318,000 instructions has 16,000 collectives, 5.7 MB as objects)."""
    rows = col.get("collectives")
    if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows):
        col["collectives"] = columns(rows)


def compact_text(text: str, name: str, shape: str, opcode: str, operands: list[str] | None) -> str | list[str]:
    """``text`` as ``[layout, rest]`` when the page can rebuild it from its row, else ``text``
    (Note [Compact instruction text]). ``operands`` are the names the row's operand indices
    point at, or None when one of them points nowhere."""
    head = name + " = " + shape
    if operands is None or not text.startswith(head):
        return text
    mid = " " + opcode + "(" + ", ".join(operands)
    at = text.find(mid, len(head))
    if at < 0:
        return text
    return [text[len(head):at], text[at + len(mid):]]
