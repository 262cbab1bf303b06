"""The memory curve and its peak, one per memory space, from the live ranges.

Note [One peak]
---------------
The report's peak is the maximum of its own curve, and both count the same things:

* At each step ``t`` of the flattened schedule (``0 <= t < schedule_end_time``), the bytes in a
  memory space are those of every *buffer* (an HloBuffer: the values that must share one
  address, such as a loop's state or an operand updated in place) of that space with a value
  live at ``t`` (``start <= t <= end``), each buffer counted once, at the size of its largest
  value that has a live range. Parameters and constants count; thread-local values (no live
  range) do not, nor does fragmentation.
* The peak is the step with the most bytes, the earliest on a tie; the peak's buffers are, for
  each buffer live then, its largest value live then, carrying the buffer's bytes, so they add
  up to the peak.
* The default memory space (``S(0)``, device memory, HBM on accelerators) is the headline:
  ``peak_bytes``, ``peak_time``, ``peak_buffers`` and ``timeline``. Every other space
  (``S(1)``, TPU alternate memory, ...) has its own curve and peak in ``memory_spaces``.

Counting buffers rather than values matters where one buffer's values chain: a loop's init
value dies on the step its condition's parameter is born, an updated operand on the step its
in-place update is born, and counting both at that step showed the loop state twice (seed 000:
a 22.4 MB "peak" in a module that uses 22.4 MB in all). XLA's own live-range peak
(``HloLiveRange``, Note [The live-range peak]) charges each value its defining instruction's
whole shape, so a loop's state costs only its tuple's pointer table there; it is kept, for the
dump and for comparison with XLA, in ``BufferAssignment.peak``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.memory.dataflow import Dataflow, Value
from hloscope.analysis.memory.liveness import Liveness

__all__ = ["SpaceUsage", "space_usage", "PEAK_DEFINITION"]

PEAK_DEFINITION = (
    "per memory space, the most bytes live at one step of the flattened schedule: every buffer "
    "(values sharing one address) with a value live at that step (start <= step <= end), counted "
    "once at its largest value's size; parameters and constants included, thread-local values "
    "and fragmentation not; the earliest such step; memory space 0 is the headline peak")


@dataclass(frozen=True)
class SpaceUsage:
    """One memory space's curve (bytes at each step) and its peak (Note [One peak])."""

    memory_space: int
    timeline: list[int]
    peak_bytes: int
    peak_time: int
    peak_values: list[tuple[Value, int]]  # (value, its buffer's bytes), biggest first


def space_usage(df: Dataflow, live: Liveness) -> dict[int, SpaceUsage]:
    """Each memory space's curve and peak, from every value with a live range: ``O(n log n)``."""
    steps = live.schedule_end_time
    ranges = live.ranges
    # Each buffer's values with a live range (a lone value's buffer lends its own list: no new
    # list per buffer, Note [Lean values] in dataflow.py), and the bytes it is charged.
    members: list[list[Value]] = []
    for buf in df.buffers:
        values = buf.values
        if len(values) == 1:
            if values[0].id in ranges:
                members.append(values)
        else:
            values = [v for v in values if v.id in ranges]
            if values:
                members.append(values)
    charge: list[int] = []
    deltas: dict[int, list[int]] = {}
    for values in members:
        size = max(v.size for v in values)
        charge.append(size)
        space = values[0].color
        d = deltas.get(space)
        if d is None:
            d = deltas[space] = [0] * (steps + 2)
        # The buffer is live over the union of its values' ranges (integer steps).
        spans = sorted(ranges[v.id] for v in values)
        lo, hi = spans[0]
        for s, e in spans[1:]:
            if s <= hi + 1:
                if e > hi:
                    hi = e
                continue
            d[lo] += size
            d[hi + 1] -= size
            lo, hi = s, e
        d[lo] += size
        d[hi + 1] -= size
    out: dict[int, SpaceUsage] = {}
    for space in sorted(deltas):
        d = deltas[space]
        timeline: list[int] = []
        usage = peak = peak_time = 0
        for t in range(steps):
            usage += d[t]
            timeline.append(usage)
            if usage > peak:
                peak, peak_time = usage, t
        at: dict[int, Value] = {}  # member number -> its value shown at the peak
        for k, values in enumerate(members):
            if values[0].color != space:
                continue
            for v in values:
                s, e = ranges[v.id]
                if s <= peak_time <= e:
                    best = at.get(k)
                    if best is None or (-v.size, v.name, v.index) < (-best.size, best.name, best.index):
                        at[k] = v
        peak_values = sorted(((v, charge[b]) for b, v in at.items()),
                             key=lambda p: (-p[1], p[0].name, p[0].index))
        out[space] = SpaceUsage(space, timeline, peak, peak_time, peak_values)
    return out
