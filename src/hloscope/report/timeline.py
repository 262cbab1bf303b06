"""The report's timeline section: the estimate's schedule (``TimeEstimate.schedule``) as page data.

The page draws what ``hloscope estimate --trace`` writes (``analysis.trace``): the same
intervals in the same lanes (``trace.lane_of``), loop bodies recorded for their first trip and
unrolled in the browser by the same rule (``trace.trip_offsets``: a while's trips one period,
its duration over its trip count, apart). Intervals are columns of numbers (Note [Compact
instruction rows] in ``data.py``): an instruction is its computation's and row's index.

Note [Timeline rows]
--------------------
The page draws one row per lane and nesting depth that has intervals, lanes in order and
depths within them. Laying 211,640 intervals out into rows took the 10x Llama page's Timeline
tab 230 ms (a string key per interval, then a sort per row), so the rows are decided here:
``rows`` lists each row's ``[lane, depth]`` in drawing order, and ``rows_in_start_order`` says
that each row's intervals already follow one another by start in the event list (a schedule
is recorded in order), so the page fills each row in one pass, without sorting, whenever the
loops stay folded (or there are none). Within a row, intervals never overlap: one stream runs
one instruction at a time at each depth (a test checks it on the Llama step).

Note [Interval kinds]
---------------------
Colouring an interval takes its row's opcode (a loop or call is grey) and its category, and
reading those decoded every computation with an interval: the Timeline tab's first show at 10x
Llama spent 100 ms parsing rows (and as long again collecting their garbage) for colours alone.
So each interval's ``kind`` is joined here (``attach_kinds``): 3 × (category index + 1, 0 for
none) + 1 for a while loop, + 2 for a call or conditional, + 0 otherwise. The page reads a row
only for what it names (a label, the details of a click).
"""
from __future__ import annotations

from typing import Any

from hloscope.analysis.timing import TimeEstimate
from hloscope.analysis.trace import LANES, UNROLL_LIMIT, exposed_communication, lane_of

__all__ = ["timeline_section", "attach_kinds"]


def timeline_section(estimate: TimeEstimate, where: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """Lanes, intervals (nanoseconds, to the picosecond) and each loop's trips, for the Timeline tab.

    ``where`` is each instruction's (computation, row) index (``joined.row_index``).
    """
    lanes = list(LANES.values())
    events = {"ci": [], "ii": [], "start": [], "end": [], "lane": [], "depth": [], "parent": []}
    # A loop is recorded after its body (it ends later), so every interval's index is known
    # before parents are looked up.
    kept = [op for op in estimate.schedule if op.instruction in where]
    index = {op.instruction: k for k, op in enumerate(kept)}
    for op in kept:
        at = where[op.instruction]
        lane = lane_of(op)
        if lane not in lanes:
            lanes.append(lane)
        events["ci"].append(at[0])
        events["ii"].append(at[1])
        events["start"].append(round(op.start * 1e9, 3))
        events["end"].append(round(op.end * 1e9, 3))
        events["lane"].append(lanes.index(lane))
        events["depth"].append(op.depth)
        events["parent"].append(index.get(op.parent, -1) if op.parent else -1)
    exposed = exposed_communication(estimate)
    rows, in_order = _rows(events)
    return {
        "lanes": lanes,
        "total_ns": round(estimate.total_seconds * 1e9, 3),
        "unroll_limit": UNROLL_LIMIT,
        "trips": {str(index[name]): n for name, n in estimate.trip_counts.items() if name in index and n},
        "events": events,
        "rows": rows,
        "rows_in_start_order": in_order,
        "exposed": {str(index[n]): s for n, s in exposed.items() if n in index},
    }


_CONTROL = {"while": 1, "call": 2, "conditional": 2}
_OPCODE = 1  # the opcode's column in a row (data.INSTRUCTION_COLUMNS)


def attach_kinds(timeline: dict[str, Any], computations: list[dict[str, Any]]) -> None:
    """Each interval's ``kind`` beside its ``ci``/``ii`` (Note [Interval kinds]), in place;
    categories are the rows' own (``profile.attach_profile``), -1 where there are none."""
    events = timeline.get("events")
    if not isinstance(events, dict):
        return
    kinds = []
    for ci, ii in zip(events["ci"], events["ii"]):
        comp = computations[ci]
        cats = comp.get("category")
        cat = cats[ii] if cats else -1
        kinds.append(3 * (cat + 1) + _CONTROL.get(comp["instructions"][ii][_OPCODE], 0))
    events["kind"] = kinds


def _rows(events: dict[str, list[Any]]) -> tuple[list[list[int]], bool]:
    """The rows ``[lane, depth]`` in drawing order and whether each row's intervals come in
    start order in ``events`` (Note [Timeline rows])."""
    last: dict[tuple[int, int], float] = {}
    in_order = True
    for lane, depth, start in zip(events["lane"], events["depth"], events["start"]):
        key = (lane, depth)
        if in_order and start < last.get(key, start):
            in_order = False
        last[key] = start
    return [list(k) for k in sorted(last)], in_order
