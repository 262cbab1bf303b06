"""The estimated schedule as a timeline: lanes of events, loops unrolled, exposed communication.

``analysis.timing`` records each scheduled instruction once (a loop body's first trip, Note
[Nested schedule] there). This module turns that record into what a trace viewer shows, for
the two faces that show it: ``hloscope estimate --trace`` writes ``chrome_trace(estimate)``
(Chrome/Perfetto JSON) and the report's Timeline tab draws ``estimate.schedule`` with the
same lanes (``lane_of``) and unrolls loops the same way (``trip_offsets``).

Lanes are the simulator's streams, named for the reader: compute (kernels), collectives,
async copies, host transfers and other asynchronous work (``LANES``).

Exposed communication is the part of a collective during which the compute stream has
nothing to run: all of a synchronous collective (compute waits for it), and whatever of an
asynchronous one the work scheduled up to its ``-done`` does not cover.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hloscope.analysis.schedule import ASYNC, COMMUNICATION, COMPUTE, COPY, HOST, ScheduledOp

if TYPE_CHECKING:
    from hloscope.analysis.timing import TimeEstimate

__all__ = ["LANES", "UNROLL_LIMIT", "TraceEvent", "lane_of", "trip_offsets", "unrolled_events",
           "chrome_trace", "exposed_communication"]

# stream -> the lane's name, in the order lanes are drawn.
LANES: dict[str, str] = {COMPUTE: "compute", COMMUNICATION: "collectives", COPY: "async copies",
                         HOST: "host transfers", ASYNC: "async work"}

UNROLL_LIMIT = 200_000
"""Past this many events, loops stay folded: each body is shown for its first trip only."""


def lane_of(op: ScheduledOp) -> str:
    """The lane an interval is drawn in (``LANES``' values)."""
    return LANES.get(op.stream, op.stream)


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One interval of the unrolled schedule; ``trip`` counts from 0 within its innermost loop."""

    instruction: str
    opcode: str
    start: float
    end: float
    lane: str
    computation: str
    depth: int
    parent: str
    trip: int


def trip_offsets(estimate: TimeEstimate) -> dict[str, list[tuple[float, int]]]:
    """For each control instruction with recorded children: ``(offset, trip)`` of each run of
    its children, relative to their first run (a while loop's trips are one period apart, the
    period being its duration over its trip count; a call or conditional runs once per run
    of its own parent). Nested loops multiply."""
    by_name = {e.instruction: e for e in estimate.schedule}
    parents = {e.parent for e in estimate.schedule if e.parent}
    memo: dict[str, list[tuple[float, int]]] = {"": [(0.0, 0)]}

    def offsets(name: str) -> list[tuple[float, int]]:
        if name in memo:
            return memo[name]
        ctl = by_name.get(name)
        outer = offsets(ctl.parent) if ctl is not None else [(0.0, 0)]
        trips = estimate.trip_counts.get(name) if ctl is not None and ctl.opcode == "while" else None
        k = max(1, trips or 1) if ctl is not None and ctl.opcode == "while" else 1
        period = (ctl.end - ctl.start) / k if ctl is not None and k else 0.0
        memo[name] = [(o + t * period, t) for o, _ in outer for t in range(k)]
        return memo[name]

    return {p: offsets(p) for p in parents}


def unrolled_events(estimate: TimeEstimate, limit: int = UNROLL_LIMIT) -> tuple[list[TraceEvent], bool]:
    """Every interval of one step, loops unrolled trip by trip; ``(events, folded)``.

    When unrolling would make more than ``limit`` events, each body is kept for its first
    trip only and ``folded`` is True.
    """
    offsets = trip_offsets(estimate)
    total = sum(len(offsets[e.parent]) if e.parent else 1 for e in estimate.schedule)
    folded = total > limit
    out: list[TraceEvent] = []
    for e in estimate.schedule:
        runs = [(0.0, 0)] if folded or not e.parent else offsets[e.parent]
        for dt, trip in runs:
            out.append(TraceEvent(e.instruction, e.opcode, e.start + dt, e.end + dt, lane_of(e),
                                  e.computation, e.depth, e.parent, trip))
    out.sort(key=lambda t: (t.start, t.depth))
    return out, folded


def chrome_trace(estimate: TimeEstimate, limit: int = UNROLL_LIMIT) -> dict[str, Any]:
    """The estimate's timeline as Chrome/Perfetto trace JSON: one thread per lane, complete
    events in microseconds, loops unrolled (``otherData.folded`` says when they are not)."""
    events, folded = unrolled_events(estimate, limit)
    lanes = list(LANES.values())
    for e in events:
        if e.lane not in lanes:
            lanes.append(e.lane)
    tids = {lane: k + 1 for k, lane in enumerate(lanes)}
    out: list[dict[str, Any]] = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": lane}}
        for lane, tid in tids.items()
    ]
    for e in events:
        args: dict[str, Any] = {"opcode": e.opcode, "computation": e.computation}
        if e.parent:
            args.update(parent=e.parent, trip=e.trip)
        out.append({"ph": "X", "name": e.instruction, "cat": e.opcode, "pid": 1, "tid": tids[e.lane],
                    "ts": e.start * 1e6, "dur": (e.end - e.start) * 1e6, "args": args})
    return {"traceEvents": out, "displayTimeUnit": "ns",
            "otherData": {"hardware": estimate.hardware, "total_seconds": estimate.total_seconds,
                          "folded": folded}}


def exposed_communication(estimate: TimeEstimate) -> dict[str, float]:
    """Seconds per step (every run) during which each collective leaves the compute stream
    idle, by instruction name; only collectives with some exposed time are listed."""
    compute: dict[str, list[ScheduledOp]] = {}
    for e in estimate.schedule:
        if e.stream == COMPUTE:
            compute.setdefault(e.parent, []).append(e)
    starts = {p: [e.start for e in es] for p, es in compute.items()}
    out: dict[str, float] = {}
    for e in estimate.schedule:
        if e.stream != COMMUNICATION or e.end <= e.start:
            continue
        busy = 0.0
        es, ss = compute.get(e.parent, []), starts.get(e.parent, [])
        k = max(0, bisect_left(ss, e.start) - 1)
        while k < len(es) and es[k].start < e.end:
            busy += max(0.0, min(es[k].end, e.end) - max(es[k].start, e.start))
            k += 1
        exposed = max(0.0, (e.end - e.start) - busy)
        timed = estimate.per_instruction.get(e.instruction)
        if exposed > 0 and timed is not None:
            out[e.instruction] = timed.seconds * exposed / (e.end - e.start)
    return out
