"""The report's timeline section: the estimate's schedule (``TimeEstimate.schedule``) as page data.

The page draws what ``hloscope estimate --trace`` writes (``analysis.trace``): the same
intervals in the same lanes (``trace.lane_of``), loop bodies recorded for their first trip and
unrolled in the browser by the same rule (``trace.trip_offsets``: a while's trips one period,
its duration over its trip count, apart). Intervals are columns of numbers (Note [Compact
instruction rows] in ``data.py``): an instruction is its computation's and row's index.
"""
from __future__ import annotations

from typing import Any

from hloscope.analysis.timing import TimeEstimate
from hloscope.analysis.trace import LANES, UNROLL_LIMIT, exposed_communication, lane_of

__all__ = ["timeline_section"]


def timeline_section(estimate: TimeEstimate, computations: list[dict[str, Any]]) -> dict[str, Any]:
    """Lanes, intervals (nanoseconds, to the picosecond) and each loop's trips, for the Timeline tab."""
    where: dict[str, tuple[int, int]] = {}
    for ci, comp in enumerate(computations):
        for ii, r in enumerate(comp["instructions"]):
            where.setdefault(r[0], (ci, ii))
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
    return {
        "lanes": lanes,
        "total_ns": round(estimate.total_seconds * 1e9, 3),
        "unroll_limit": UNROLL_LIMIT,
        "trips": {str(index[name]): n for name, n in estimate.trip_counts.items() if name in index and n},
        "events": events,
        "exposed": {str(index[n]): s for n, s in exposed.items() if n in index},
    }
