"""The nouns of buffer assignment: values, allocations, live ranges and the peak, in XLA's terms.

One set of frozen types serves two producers: ``text/buffer_assignment_dump.py`` reads them from
XLA's ``BufferAssignment:`` dumps, and our own assignment (to come) will build them from a module.
Both can then be compared field by field. Nothing here refers to the HLO IR: instructions are
named by their name string, so these objects outlive any parsed module and serialise to JSON as is.

Note [Live ranges are closed intervals]
---------------------------------------
XLA's ``HloLiveRange`` gives every value a ``start`` and an ``end`` on the flattened schedule, and
a value is live at ``t`` when ``start <= t <= end`` (both ends included; the peak search adds the
value at ``start`` and removes it at ``end + 1``). Entry parameters and live-out values end at
``schedule_end_time``, one past the last instruction::

    time         0   1   2   3   4   (schedule_end_time = 4)
    p0 (param)   [===============]   0-4
    a = f(p0)        [=======]       1-3   live at 1, 2 and 3
    b = g(a)             [=======]   2-4   ROOT: extends to the end
    peak at t=2 holds p0, a and b

Note [Value keys]
-----------------
A value is named in the dumps by its defining instruction and shape index. The live-range
section always prints the index (``fusion.7{0}``, ``copy{}``), so that spelling, ``value.key``,
is the key of ``BufferAssignment.live_ranges``. ``<id name{index} @color>`` (``short_string``)
prints the index only when the defining instruction's shape is a tuple; whether it is follows
from the value (a non-empty index, or a tuple-shaped value), so it is not stored separately.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "LogicalTime",
    "ShapeIndex",
    "LiveRange",
    "HloPosition",
    "HloUse",
    "BufferValue",
    "Slice",
    "Assigned",
    "Allocation",
    "PeakEntry",
    "PeakInfo",
    "BufferAssignment",
    "ALLOCATION_KINDS",
    "format_shape_index",
    "value_key",
    "compute_peak",
]

LogicalTime = int
"""A position in the flattened schedule (XLA's ``HloLiveRange::LogicalTime``)."""

ShapeIndex = tuple[int, ...]
"""A path into a tuple shape; ``()`` is the whole shape."""

ALLOCATION_KINDS = (
    "parameter",
    "constant",
    "thread-local",
    "maybe-live-out",
    "preallocated-temp",
    "temp",
)
"""Every value ``Allocation.kind`` takes, in the order ``bytes_by_kind`` lists them."""


def format_shape_index(index: ShapeIndex) -> str:
    """XLA's ``ShapeIndex::ToString``: ``{}``, ``{1}``, ``{0,2}``."""
    return "{" + ",".join(map(str, index)) + "}"


def value_key(instruction: str, index: ShapeIndex) -> str:
    """The live-range spelling of a value, ``name{index}`` (see Note [Value keys])."""
    return instruction + format_shape_index(index)


@dataclass(frozen=True, slots=True)
class LiveRange:
    """Logical times ``[start, end]``, both included (see Note [Live ranges are closed intervals])."""

    start: LogicalTime
    end: LogicalTime

    def contains(self, time: LogicalTime) -> bool:
        """True when the value is live at ``time``."""
        return self.start <= time <= self.end

    def to_json(self) -> dict[str, int]:
        return {"start": self.start, "end": self.end}


@dataclass(frozen=True, slots=True)
class HloPosition:
    """A place a value appears: the output of ``instruction`` at shape ``index``."""

    instruction: str
    index: ShapeIndex = ()

    def to_json(self) -> dict[str, Any]:
        return {"instruction": self.instruction, "index": list(self.index)}


@dataclass(frozen=True, slots=True)
class HloUse:
    """A read of a value: operand ``operand_number`` of ``instruction``, at ``operand_index``."""

    instruction: str
    operand_number: int
    operand_index: ShapeIndex = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "instruction": self.instruction,
            "operand_number": self.operand_number,
            "operand_index": list(self.operand_index),
        }


@dataclass(frozen=True, slots=True)
class BufferValue:
    """One value that needs memory (XLA's ``HloValue`` as buffer assignment sees it).

    ``size`` is the bytes the assignment gave it; ``shape`` is the shape's text with layout.
    ``positions`` starts with the defining position when known; ``instruction_text`` is the
    defining instruction's HLO text as the dump printed it (``None`` when not dumped).
    """

    id: int
    instruction: str
    index: ShapeIndex
    shape: str
    size: int
    color: int | None = 0
    is_phi: bool = False
    positions: tuple[HloPosition, ...] = ()
    uses: tuple[HloUse, ...] = ()
    instruction_text: str | None = None

    @property
    def key(self) -> str:
        """``name{index}``, the key of ``BufferAssignment.live_ranges``."""
        return value_key(self.instruction, self.index)

    @property
    def is_tuple(self) -> bool:
        """True when the value is a tuple (its buffer holds pointers to the elements)."""
        return self.shape.startswith("(")

    @property
    def defining_position(self) -> HloPosition:
        return self.positions[0] if self.positions else HloPosition(self.instruction, self.index)

    def short_string(self) -> str:
        """XLA's ``HloValue::ToShortString``: ``<75 fusion.7{0} @0>``."""
        index = format_shape_index(self.index) if (self.index or self.is_tuple) else ""
        phi = " (phi)" if self.is_phi else ""
        color = f" @{self.color}" if self.color is not None else ""
        return f"<{self.id} {self.instruction}{index}{phi}{color}>"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "instruction": self.instruction,
            "index": list(self.index),
            "shape": self.shape,
            "size": self.size,
            "color": self.color,
            "is_phi": self.is_phi,
            "positions": [p.to_json() for p in self.positions],
            "uses": [u.to_json() for u in self.uses],
        }


@dataclass(frozen=True, slots=True)
class Slice:
    """Bytes ``[offset, offset + size)`` of one allocation."""

    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size

    def to_json(self) -> dict[str, int]:
        return {"offset": self.offset, "size": self.size}


@dataclass(frozen=True, slots=True)
class Assigned:
    """A value placed in an allocation at ``offset``, taking ``size`` bytes."""

    value: BufferValue
    offset: int
    size: int

    @property
    def slice(self) -> Slice:
        return Slice(self.offset, self.size)

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value.id,
            "key": self.value.key,
            "offset": self.offset,
            "size": self.size,
        }


@dataclass(frozen=True, slots=True)
class Allocation:
    """A contiguous block of memory that one or more values share over time (``BufferAllocation``).

    Values share an allocation when their live ranges do not overlap, so the sum of the
    ``assigned`` sizes can exceed ``size``. ``parameter_shape`` and ``output_shape`` are the shape
    texts XLA prints for parameter and output allocations; ``address`` is the pointer older XLA
    printed after the index; ``unknown_flags`` keeps header flags this reader does not know.
    """

    index: int
    size: int
    is_entry_parameter: bool = False
    parameter_number: int | None = None
    parameter_shape_index: ShapeIndex = ()
    maybe_live_out: bool = False
    is_constant: bool = False
    is_thread_local: bool = False
    is_tuple: bool = False
    is_preallocated_temp: bool = False
    color: int = 0
    assigned: tuple[Assigned, ...] = ()
    parameter_shape: str | None = None
    output_shape: str | None = None
    address: str | None = None
    unknown_flags: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        """One of ``ALLOCATION_KINDS``; the first that applies, in that order."""
        if self.is_entry_parameter:
            return "parameter"
        if self.is_constant:
            return "constant"
        if self.is_thread_local:
            return "thread-local"
        if self.maybe_live_out:
            return "maybe-live-out"
        if self.is_preallocated_temp:
            return "preallocated-temp"
        return "temp"

    def slice_of(self, value: BufferValue | int) -> Slice:
        """The slice ``value`` (or the value with that id) occupies; KeyError if not here."""
        value_id = value if isinstance(value, int) else value.id
        for a in self.assigned:
            if a.value.id == value_id:
                return a.slice
        raise KeyError(f"value {value_id} is not assigned to allocation {self.index}")

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "size": self.size,
            "kind": self.kind,
            "is_entry_parameter": self.is_entry_parameter,
            "parameter_number": self.parameter_number,
            "parameter_shape_index": list(self.parameter_shape_index),
            "parameter_shape": self.parameter_shape,
            "output_shape": self.output_shape,
            "maybe_live_out": self.maybe_live_out,
            "is_constant": self.is_constant,
            "is_thread_local": self.is_thread_local,
            "is_tuple": self.is_tuple,
            "is_preallocated_temp": self.is_preallocated_temp,
            "color": self.color,
            "assigned": [a.to_json() for a in self.assigned],
        }


@dataclass(frozen=True, slots=True)
class PeakEntry:
    """One value live at the peak: its instruction, shape index and bytes.

    ``index`` is ``None`` when the dump named only the instruction (older XLA) and the value
    could not be told apart from its siblings.
    """

    instruction: str
    index: ShapeIndex | None
    bytes: int

    @property
    def key(self) -> str:
        return self.instruction if self.index is None else value_key(self.instruction, self.index)

    def to_json(self) -> dict[str, Any]:
        return {
            "instruction": self.instruction,
            "index": None if self.index is None else list(self.index),
            "bytes": self.bytes,
        }


@dataclass(frozen=True, slots=True)
class PeakInfo:
    """The moment of highest memory use and what is live then.

    ``entries`` keep the order they were listed or computed in. ``stated_bytes`` is the total the
    dump printed for the peak, if it printed one; otherwise the peak is the sum of the entries.
    """

    time: LogicalTime
    entries: tuple[PeakEntry, ...]
    stated_bytes: int | None = None

    @property
    def bytes(self) -> int:
        return (
            self.stated_bytes
            if self.stated_bytes is not None
            else sum(e.bytes for e in self.entries)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "bytes": self.bytes,
            "stated_bytes": self.stated_bytes,
            "entries": [e.to_json() for e in self.entries],
        }


def compute_peak(
    values: Iterable[BufferValue], live_ranges: Mapping[str, LiveRange]
) -> PeakInfo | None:
    """The earliest time at which the summed size of live values is highest, and what is live.

    This is XLA's ``HloLiveRange::ComputePeakMemoryMoment`` sweep over value sizes: a value
    counts from ``start`` through ``end`` (see Note [Live ranges are closed intervals]). Values
    without a live range are skipped. Returns ``None`` when no value has a live range.
    """
    sized = [(v, live_ranges[v.key]) for v in values if v.key in live_ranges]
    if not sized:
        return None
    deltas: dict[int, int] = {}
    for v, r in sized:
        deltas[r.start] = deltas.get(r.start, 0) + v.size
        deltas[r.end + 1] = deltas.get(r.end + 1, 0) - v.size
    usage = peak = 0
    peak_time = sized[0][1].start
    for time in sorted(deltas):
        usage += deltas[time]
        if usage > peak:
            peak, peak_time = usage, time
    live = [(v, r) for v, r in sized if r.contains(peak_time)]
    live.sort(key=lambda vr: (-vr[0].size, vr[0].instruction, vr[0].index))
    entries = tuple(PeakEntry(v.instruction, v.index, v.size) for v, _ in live)
    return PeakInfo(peak_time, entries, stated_bytes=peak)


@dataclass(frozen=True, slots=True)
class BufferAssignment:
    """A whole module's buffer assignment: allocations, values, live ranges and the peak.

    ``total_bytes`` is the sum of allocation sizes (XLA's ``Total bytes used``).
    ``live_ranges`` maps ``value.key`` to its range; ``instruction_sequence`` is the flattened
    schedule and ``schedule_end_time`` its end (XLA's ``max``). ``peak`` is what the producer
    stated; when it is ``None`` the peak properties are computed from the live ranges.
    """

    allocations: tuple[Allocation, ...]
    total_bytes: int
    values: tuple[BufferValue, ...] = ()
    live_ranges: Mapping[str, LiveRange] = field(default_factory=dict)
    instruction_sequence: tuple[str, ...] = ()
    schedule_end_time: LogicalTime | None = None
    peak: PeakInfo | None = None
    module_name: str | None = None

    @property
    def allocation_count(self) -> int:
        return len(self.allocations)

    @property
    def bytes_by_kind(self) -> dict[str, int]:
        """Allocation bytes per ``Allocation.kind``, kinds in ``ALLOCATION_KINDS`` order."""
        totals: dict[str, int] = {}
        for a in self.allocations:
            totals[a.kind] = totals.get(a.kind, 0) + a.size
        return {k: totals[k] for k in ALLOCATION_KINDS if k in totals}

    @property
    def count_by_kind(self) -> dict[str, int]:
        """Number of allocations per ``Allocation.kind``, only kinds that occur."""
        counts: dict[str, int] = {}
        for a in self.allocations:
            counts[a.kind] = counts.get(a.kind, 0) + 1
        return {k: counts[k] for k in ALLOCATION_KINDS if k in counts}

    def _peak(self) -> PeakInfo | None:
        if self.peak is not None:
            return self.peak
        return compute_peak(self.values, self.live_ranges)

    @property
    def peak_time(self) -> LogicalTime | None:
        peak = self._peak()
        return None if peak is None else peak.time

    @property
    def peak_bytes(self) -> int | None:
        """Bytes live at the peak, as stated by the producer or summed over the live values."""
        peak = self._peak()
        return None if peak is None else peak.bytes

    @property
    def peak_buffers(self) -> tuple[PeakEntry, ...]:
        """The values live at the peak, biggest first (ties keep their listed order)."""
        peak = self._peak()
        if peak is None:
            return ()
        return tuple(sorted(peak.entries, key=lambda e: -e.bytes))

    def value(self, key: str | int) -> BufferValue:
        """The value with this id or ``name{index}`` key; KeyError if there is none."""
        for v in self.values:
            if v.id == key or v.key == key:
                return v
        raise KeyError(key)

    def allocation_of(self, value: BufferValue | int) -> Allocation:
        """The allocation holding ``value`` (or the value with that id)."""
        value_id = value if isinstance(value, int) else value.id
        for a in self.allocations:
            if any(x.value.id == value_id for x in a.assigned):
                return a
        raise KeyError(value_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "module_name": self.module_name,
            "allocation_count": self.allocation_count,
            "total_bytes": self.total_bytes,
            "bytes_by_kind": self.bytes_by_kind,
            "count_by_kind": self.count_by_kind,
            "peak_time": self.peak_time,
            "peak_bytes": self.peak_bytes,
            "schedule_end_time": self.schedule_end_time,
            "allocations": [a.to_json() for a in self.allocations],
            "values": [v.to_json() for v in self.values],
            "live_ranges": {k: r.to_json() for k, r in self.live_ranges.items()},
            "instruction_sequence": list(self.instruction_sequence),
            "peak": None if self.peak is None else self.peak.to_json(),
        }
