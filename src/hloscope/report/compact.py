"""Page data in columns: the memory section's long lists (Note [Compact memory rows]).

Note [Compact memory rows]
--------------------------
XLA's Llama 3.1 8B step has 23,000 schedule steps and 20,000 live ranges; as JSON objects with
their keys repeated they were 7.7 MB of a 16 MB page, and the browser reads the whole page
before it can start. The page therefore carries the memory analysis's ``timeline``,
``buffers`` and ``allocations`` as columns (``{"columns": [key, ...], "values": [[...], ...]}``,
one list per key) and the default memory space's curve once (``memory_spaces["0"]`` drops its
copy). The figures are the analysis's own ``to_json()``, reordered; the page's script turns
them back into the same objects before anything reads them (``unpackColumns`` in page.js).
"""
from __future__ import annotations

from typing import Any

__all__ = ["compact_memory", "columns"]


def columns(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``rows`` (dicts with the same keys) as one list per key."""
    keys = list(rows[0]) if rows else []
    return {"columns": keys, "values": [[r.get(k) for r in rows] for k in keys]}


def compact_memory(mem: dict[str, Any]) -> None:
    """The memory section's long lists in columns, in place (Note [Compact memory rows])."""
    for key in ("timeline", "buffers", "allocations"):
        rows = mem.get(key)
        if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows[:1]):
            mem[key] = columns(rows)
    spaces = mem.get("memory_spaces")
    if isinstance(spaces, dict) and isinstance(spaces.get("0"), dict):
        spaces["0"]["timeline"] = None  # the same as the headline timeline above
