"""Figures the page would otherwise join or search for in the browser, computed once here.

Note [Joined in Python]
-----------------------
At 10x Llama (318,550 instructions) every join the page made in JavaScript was a long task:
naming the peak's instruction parsed the 7 MB memory curve at start-up, the header's collective
payload parsed the collectives block, the Collectives tab built a name table over a
computation's 23,113 rows for each of ten computations, and the Cost tab built the name index
over every row (decoding every computation not yet decoded) to find each row's computation,
opcode, op_name and time. Python has these at hand while it builds the data, so the page gets
them ready: each collective's computation and row index (``ci``, ``ii``), the Cost tab's rows
already joined (``cost.rows``), and the allocations grouped by memory space
(``allocation_spaces``). A figure the page shows in two places is read from one place (the
collective's time is its row's ``seconds``; a cost row's time is the same rounded value the
row carries, ``seconds_as_shown``), so the two never disagree.
"""
from __future__ import annotations

from typing import Any

__all__ = ["row_index", "attach_collective_rows", "cost_rows", "group_allocations", "seconds_as_shown"]

# Columns of a computation's row (data.INSTRUCTION_COLUMNS).
_NAME, _OPCODE, _CALLED, _OP_NAME, _SOURCE = 0, 1, 5, 6, 7


def seconds_as_shown(x: Any) -> Any:
    """An estimated time as the page carries it: four significant digits (it shows three)."""
    return float(f"{x:.4g}") if isinstance(x, float) else x


def row_index(computations: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Each instruction name's (computation index, row index); the first row of a repeated
    name, as the page's own name index (``instAt`` in page.js) takes it."""
    where: dict[str, tuple[int, int]] = {}
    for ci, comp in enumerate(computations):
        for ii, r in enumerate(comp["instructions"]):
            where.setdefault(r[_NAME], (ci, ii))
    return where


def attach_collective_rows(collectives: dict[str, Any], computations: list[dict[str, Any]],
                           where: dict[str, tuple[int, int]]) -> None:
    """Each collective's ``ci``/``ii`` (its row; -1 when not found) and ``time``, its row's
    estimated seconds as the page carries them, in place, before the list goes into columns."""
    for c in collectives.get("collectives") or []:
        ci, ii = where.get(c.get("name"), (-1, -1))
        seconds = computations[ci].get("seconds") if ci >= 0 else None
        c["ci"], c["ii"], c["time"] = ci, ii, seconds_as_shown(seconds[ii]) if seconds else None


def _source(c: dict[str, Any]) -> str:
    """A cost row's source as the page writes it (``sourceOf`` in page.js)."""
    if c.get("source"):
        return str(c["source"])
    f, line = c.get("source_file"), c.get("source_line")
    return "" if not f else f"{f}:{line}" if line is not None else str(f)


def cost_rows(cost: dict[str, Any], timing: dict[str, Any] | None, computations: list[dict[str, Any]],
              where: dict[str, tuple[int, int]]) -> list[dict[str, Any]]:
    """The Cost tab's rows: each instruction of the cost analysis's per-instruction rows, its
    loops and the estimate's per-instruction rows, once, in that order of first appearance, with
    its computation, opcode, op_name, source, estimated seconds (its row's, as shown), runs,
    trips and, for a while loop, its body's computation index."""
    rows: dict[str, dict[str, Any]] = {}

    def row(name: str) -> dict[str, Any]:
        got = rows.get(name)
        if got is None:
            ci, ii = where.get(name, (-1, -1))
            r = computations[ci]["instructions"][ii] if ci >= 0 else None
            seconds = computations[ci].get("seconds") if ci >= 0 and timing is not None else None
            got = rows[name] = {
                "name": name, "computation": computations[ci]["name"] if ci >= 0 else "",
                "opcode": r[_OPCODE] if r else "", "flops": None, "bytes": None, "trans": None,
                "time": seconds_as_shown(seconds[ii]) if seconds else None, "runs": None, "trip": None,
                "op_name": (r[_OP_NAME] or "") if r else "", "source": (r[_SOURCE] or "") if r else "",
                # A while's called computations are [condition, body] as XLA prints them.
                "body": r[_CALLED][-1] if r and r[_OPCODE] == "while" and r[_CALLED] else -1,
            }
        return got

    for c in cost.get("per_instruction") or []:
        r = row(c["name"])
        r["flops"], r["bytes"], r["trans"] = c.get("flops"), c.get("bytes_accessed"), c.get("transcendentals")
        if c.get("op_name"):
            r["op_name"] = c["op_name"]
        if _source(c):
            r["source"] = _source(c)
    for c in cost.get("loops") or []:  # a loop's FLOPs and bytes: body and condition × trips
        r = row(c["name"])
        r["flops"], r["bytes"], r["trans"], r["trip"] = c["flops"], c["bytes_accessed"], c["transcendentals"], c["trip_count"]
    for t in (timing or {}).get("per_instruction") or []:
        r = row(t["name"])
        r["runs"], r["trip"] = t.get("executions"), t.get("trip_count")
    return list(rows.values())


def group_allocations(mem: dict[str, Any]) -> None:
    """The memory section's allocations ordered by (memory space, index), in place, and
    ``allocation_spaces``: each space's [first, end) positions in that list, so the heap view
    takes its space's allocations as one slice, already in the order it lays them out."""
    allocs = mem.get("allocations")
    if not isinstance(allocs, list) or not all(isinstance(a, dict) for a in allocs):
        return
    allocs.sort(key=lambda a: (a.get("memory_space") or 0, a.get("index", 0)))
    spaces: dict[str, list[int]] = {}
    for k, a in enumerate(allocs):
        span = spaces.setdefault(str(a.get("memory_space") or 0), [k, k])
        span[1] = k + 1
    mem["allocation_spaces"] = spaces
