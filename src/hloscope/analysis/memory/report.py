"""``analyze_memory``: a module's buffer assignment, live ranges and peak, with XLA's figures.

Stages run in order, each a typed result (habit 12): ``analyze_dataflow`` (values and buffers)
-> ``compute_liveness`` (flattened schedule, live ranges) -> ``assign_buffers`` (allocations and
the heap simulator). ``MemoryReport`` carries XLA's names for the figures and can be dumped in
XLA's text form through ``buffer_assignment`` and ``format_buffer_assignment``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from hloscope.analysis.memory.assignment import AllocationDraft, assign_buffers
from hloscope.analysis.memory.dataflow import Dataflow, Value, analyze_dataflow
from hloscope.analysis.memory.liveness import (
    SCHEDULES,
    Liveness,
    compute_liveness,
    min_memory_order,
    peak_moment,
)
from hloscope.analysis.memory.peak import PEAK_DEFINITION, SpaceUsage, space_usage
from hloscope.analysis.memory.xla_peak import (
    LIVE_RANGE_PEAK_LABEL,
    XlaPeakMemory,
    counted_twice,
    xla_peak_memory,
)
from hloscope.gc_pause import cyclic_gc_paused
from hloscope.ir.buffer_assignment import (
    Allocation,
    Assigned,
    BufferAssignment,
    BufferValue,
    LiveRange,
    PeakEntry,
    PeakInfo,
    value_key,
)
from hloscope.ir.source_location import op_name_and_source

if TYPE_CHECKING:
    from hloscope.ir import Computation, Instruction, Module, ShapeIndex

__all__ = ["PeakBuffer", "LiveBuffer", "TimelinePoint", "AllocationSummary", "MemorySpace", "MemoryReport", "analyze_memory",
           "live_range_peaks", "MAX_JSON_BUFFERS", "PEAK_DEFINITION", "LIVE_RANGE_PEAK_LABEL", "XlaPeakMemory"]

MAX_JSON_BUFFERS = 20_000
"""``to_json`` lists at most this many live ranges (the biggest), about 4 MB of JSON; seed 003
has 2,305. Every one stays in ``MemoryReport.buffers``."""

# Note [The biggest live ranges]
# ------------------------------
# ``to_json`` lists the ``MAX_JSON_BUFFERS`` biggest live ranges (ties: earliest start, then
# their place in ``buffers``), in ``buffers``' order. Made as ``LiveBuffer`` objects first and
# then chosen, the 216,000 live ranges of Llama 3.1 8B at ten times its size took a second for
# the 20,000 listed; so when ``buffers`` has not been made, the values are sorted and chosen as
# plain rows (the same keys, the same stable sorts) and only those listed become objects.


@dataclass(frozen=True, slots=True)
class PeakBuffer:
    """One buffer live at the peak: its largest value live then, where that came from in the
    user's program, and the buffer's bytes (Note [One peak] in ``peak.py``)."""

    instruction: str
    index: tuple[int, ...]
    shape: str
    bytes: int
    opcode: str
    op_name: str | None
    source: str | None  # "file:line" from metadata or the stack-frame table
    memory_space: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"instruction": self.instruction, "index": list(self.index), "shape": self.shape,
                "bytes": self.bytes, "opcode": self.opcode, "op_name": self.op_name,
                "source": self.source, "memory_space": self.memory_space}


@dataclass(frozen=True, slots=True)
class LiveBuffer:
    """One value's live range: live at every schedule step from ``start`` to ``end``, both included.

    ``buffer`` names the HloBuffer holding the value: values with the same ``buffer`` share one
    address and count once in the curve, at the largest of their ``bytes`` (Note [One peak]).
    """

    name: str  # the defining instruction
    index: tuple[int, ...]
    shape: str
    bytes: int
    start: int
    end: int
    op_name: str | None
    source: str | None
    buffer: int = 0
    memory_space: int = 0
    # Where it lives: its allocation's index and its offset there (the heap view's y); -1 for
    # a value in no allocation.
    allocation: int = -1
    offset: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "index": list(self.index), "shape": self.shape, "bytes": self.bytes,
                "start": self.start, "end": self.end, "op_name": self.op_name, "source": self.source,
                "buffer": self.buffer, "memory_space": self.memory_space, "allocation": self.allocation,
                "offset": self.offset}


@dataclass(frozen=True, slots=True)
class TimelinePoint:
    """Bytes live at one schedule step in the default memory space (Note [One peak]).

    The largest point is at ``peak_time`` and holds ``peak_bytes``.
    """

    time: int
    bytes: int
    instruction: str

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "bytes": self.bytes, "instruction": self.instruction}


@dataclass(frozen=True)
class MemorySpace:
    """One memory space's curve and peak (Note [One peak]) and its preallocated temp bytes."""

    memory_space: int
    peak_bytes: int
    peak_time: int
    peak_buffers: tuple[PeakBuffer, ...]
    timeline: tuple[int, ...] = field(repr=False)
    temp_bytes: int

    def to_json(self, max_peak_buffers: int | None = None) -> dict[str, Any]:
        buffers = self.peak_buffers if max_peak_buffers is None else self.peak_buffers[:max_peak_buffers]
        return {"memory_space": self.memory_space, "peak_bytes": self.peak_bytes,
                "peak_time": self.peak_time, "temp_bytes": self.temp_bytes,
                "peak_buffer_count": len(self.peak_buffers),
                "peak_buffers": [b.to_json() for b in buffers], "timeline": list(self.timeline)}


@dataclass(frozen=True, slots=True)
class AllocationSummary:
    """One allocation as the time estimate needs it: its size, its kind (``parameter``,
    ``constant``, ``thread-local``, ``maybe-live-out``, ``temp`` or ``preallocated-temp``) and
    the instructions whose values it holds. ``buffer_assignment`` has the same allocations with
    every value's positions and uses too, which at 3 M instructions is gigabytes."""

    index: int
    size: int
    kind: str
    instructions: tuple[str, ...]  # (names, in value order; one per value held)
    color: int = 0  # its memory space


@dataclass(frozen=True)
class MemoryReport:
    """Memory figures of one module under one schedule, named as XLA names them.

    ``argument_bytes``/``output_bytes``/``alias_bytes``/``temp_bytes`` are what
    ``compiled.memory_analysis()`` reports; ``total_bytes`` is the dump's ``Total bytes used``;
    ``peak_bytes``/``peak_time``/``peak_buffers`` are the peak of the default memory space as
    Note [One peak] defines it (``PEAK_DEFINITION``), the maximum of ``timeline``;
    ``memory_spaces`` has the same per memory space (0 included), and ``xla_peak_time``/
    ``xla_peak_bytes`` XLA's own live-range peak (``Live ranges at N (peak)``, also
    ``buffer_assignment.peak``); ``peak_counted_twice_bytes`` what the peak step counts twice
    (a result written over an operand it reads last: both live then, one memory);
    ``xla_peak_memory`` is ``memory_analysis().peak_memory_in_bytes`` as XLA computes it for
    the module's backend (Note [peak_memory_in_bytes] in ``xla_peak.py``), another quantity
    than ``peak_bytes``; ``temp_lower_bound`` is the most heap-packed temp bytes ever
    live at once plus the temporary tuples' own allocations (never shared), so
    ``temp_bytes - temp_lower_bound`` is what fragmentation costs. ``other_memory_spaces``
    holds temp bytes per non-default memory space (e.g. ``S(1)``), kept out of ``temp_bytes``.
    ``timeline`` has one point per schedule step (its bytes at ``peak_time`` are ``peak_bytes``)
    and ``buffers`` every value's live range, so a step's live set is the buffers spanning it.
    """

    module_name: str
    schedule: str
    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    temp_bytes: int
    constant_bytes: int
    thread_local_bytes: int
    total_bytes: int
    peak_bytes: int
    peak_time: int
    peak_buffers: tuple[PeakBuffer, ...]
    temp_lower_bound: int
    heap_algorithm: str
    schedule_end_time: int
    allocation_count: int
    other_memory_spaces: dict[int, int] = field(default_factory=dict)
    bytes_saved_by_schedule: int | None = None
    # Built on first use (``buffer_assignment``): the figures above do not need it, and
    # building it is a tenth of the analysis on Llama 3.1 8B.
    build_assignment: Callable[[], BufferAssignment] | None = field(default=None, repr=False, compare=False)
    # Also built on first use: one row per schedule step and one per value (six million objects
    # at 3M instructions) that only the JSON and the page show.
    build_timeline: Callable[[], tuple[TimelinePoint, ...]] | None = field(default=None, repr=False, compare=False)
    build_buffers: Callable[[], tuple[LiveBuffer, ...]] | None = field(default=None, repr=False, compare=False)
    build_allocations: Callable[[], tuple[AllocationSummary, ...]] | None = field(default=None, repr=False, compare=False)
    # The ``limit`` biggest of ``buffers`` (in its order) and how many there are in all, without
    # making the rest (Note [The biggest live ranges]).
    build_biggest_buffers: Callable[[int], tuple[tuple[LiveBuffer, ...], int]] | None = field(
        default=None, repr=False, compare=False)
    memory_spaces: dict[int, MemorySpace] = field(default_factory=dict, repr=False, compare=False)
    xla_peak_time: int = 0
    xla_peak_bytes: int = 0
    # The instruction scheduled at ``peak_time`` (the timeline's point there), kept apart so
    # the CLI and the report page name it without building the timeline.
    peak_instruction: str = ""
    xla_peak_memory: XlaPeakMemory = field(default_factory=lambda: XlaPeakMemory("cpu", "", 0, 0))
    peak_counted_twice_bytes: int = 0

    @cached_property
    def buffer_assignment(self) -> BufferAssignment | None:
        """The allocations, their values and the live ranges, as XLA's dump lists them."""
        return _built(self.build_assignment, None)

    @cached_property
    def allocations(self) -> tuple[AllocationSummary, ...]:
        """Every allocation's size, kind and the instructions it holds values of (the dump's
        allocations without the values' positions and uses)."""
        return _built(self.build_allocations, ())

    @cached_property
    def timeline(self) -> tuple[TimelinePoint, ...]:
        """One point per schedule step: the bytes live then (their maximum is ``peak_bytes``)."""
        return _built(self.build_timeline, ())

    @cached_property
    def buffers(self) -> tuple[LiveBuffer, ...]:
        """Every value's live range, by start: a step's live set is the buffers spanning it."""
        return _built(self.build_buffers, ())

    @property
    def fragmentation_bytes(self) -> int:
        return self.temp_bytes - self.temp_lower_bound

    def to_json(self, max_buffers: int = MAX_JSON_BUFFERS) -> dict[str, Any]:
        """Figures, the peak's buffers, the timeline, and up to ``max_buffers`` live ranges.

        When there are more live ranges, the biggest are kept (ties: earliest start) and
        ``buffers_omitted`` says how many were left out; otherwise it is 0.
        """
        # Tens of thousands of small dicts: see Note [No cyclic GC during analyses] in gc_pause.py.
        with cyclic_gc_paused():
            return self._to_json(max_buffers)

    def _to_json(self, max_buffers: int) -> dict[str, Any]:
        if "buffers" not in self.__dict__ and self.build_biggest_buffers is not None:
            # Note [The biggest live ranges]: ``buffers`` not made yet, so only those listed are.
            buffers, total = self.build_biggest_buffers(max_buffers)
        else:
            buffers, total = self.buffers, len(self.buffers)
            if total > max_buffers:
                keep = set(sorted(range(total), key=lambda i: (-buffers[i].bytes, buffers[i].start, i))[:max_buffers])
                buffers = tuple(b for i, b in enumerate(buffers) if i in keep)
        return {
            "module_name": self.module_name, "schedule": self.schedule,
            "argument_bytes": self.argument_bytes, "output_bytes": self.output_bytes,
            "alias_bytes": self.alias_bytes, "temp_bytes": self.temp_bytes,
            "constant_bytes": self.constant_bytes, "thread_local_bytes": self.thread_local_bytes,
            "total_bytes": self.total_bytes, "allocation_count": self.allocation_count,
            "peak_definition": PEAK_DEFINITION,
            "peak_bytes": self.peak_bytes, "peak_time": self.peak_time,
            "peak_instruction": self.peak_instruction,
            "peak_buffers": [b.to_json() for b in self.peak_buffers],
            "memory_spaces": {str(k): v.to_json() for k, v in sorted(self.memory_spaces.items())},
            "xla_live_range_peak": {"time": self.xla_peak_time, "bytes": self.xla_peak_bytes},
            "peak_label": LIVE_RANGE_PEAK_LABEL,
            "peak_counted_twice_bytes": self.peak_counted_twice_bytes,
            "peak_note": self.peak_note(),
            "xla_peak_memory": self.xla_peak_memory.to_json(),
            "temp_lower_bound": self.temp_lower_bound,
            "fragmentation_bytes": self.fragmentation_bytes,
            "heap_algorithm": self.heap_algorithm, "schedule_end_time": self.schedule_end_time,
            "other_memory_spaces": {str(k): v for k, v in self.other_memory_spaces.items()},
            "bytes_saved_by_schedule": self.bytes_saved_by_schedule,
            "timeline": [p.to_json() for p in self.timeline],
            # Every allocation, for the heap view: index, bytes, kind and memory space.
            "allocations": [{"index": a.index, "size": a.size, "kind": a.kind, "memory_space": a.color}
                            for a in self.allocations],
            "buffers": [b.to_json() for b in buffers],
            "buffers_omitted": total - len(buffers),
        }

    def peak_note(self) -> str:
        """Why the live-range peak counts more than memory holds, when it does ('' otherwise)."""
        if not self.peak_counted_twice_bytes:
            return ""
        over = (f", which is why it exceeds the {self.total_bytes} bytes allocated in all"
                if self.peak_bytes > self.total_bytes else "")
        return (f"At its step {self.peak_time} the live-range peak counts {self.peak_counted_twice_bytes} "
                f"bytes twice: an instruction writes its result over an operand it reads last, so both "
                f"are live at that step in one memory ({self.peak_bytes - self.peak_counted_twice_bytes} "
                f"bytes held at once){over}.")

    def explain(self) -> str:
        """Plain words on how XLA's memory figures arise for this module and why they differ."""
        peak_words = ", ".join(f"{b.instruction} ({b.bytes} B)" for b in self.peak_buffers[:5])
        xp = self.xla_peak_memory
        xla_peak = ("not derivable" if xp.bytes is None else str(xp.bytes))
        lines = [
            f"Memory of {self.module_name} (schedule: {self.schedule}, {self.schedule_end_time} steps)",
            "",
            f"1. Total bytes used = {self.total_bytes}: the sum of all {self.allocation_count} allocations",
            f"   = arguments {self.argument_bytes} + outputs {self.output_bytes} - aliased {self.alias_bytes}"
            f" + temps {self.temp_bytes} + constants {self.constant_bytes}"
            f" + thread-local {self.thread_local_bytes}.",
            "   Output allocations can also hold temporaries whose live ranges do not overlap the",
            "   output's, so intermediates parked there cost nothing extra.",
            f"2. Live-range peak = {self.peak_bytes} bytes at time {self.peak_time}: the most bytes of",
            "   device memory (memory space 0) live at one step, each buffer once, counting",
            "   parameters and constants but not fragmentation or thread-local scalars. Largest live",
            "   then: " + (peak_words or "none") + ".",
            "   (XLA's HloLiveRange, over all memory spaces and charging each value its defining",
            f"   instruction's whole shape, finds {self.xla_peak_bytes} bytes at time {self.xla_peak_time}.)",
            f"3. memory_analysis(): argument_size {self.argument_bytes}, output_size {self.output_bytes},",
            f"   alias_size {self.alias_bytes}, temp_size {self.temp_bytes}. temp_size is the one",
            "   preallocated-temp block: the temporaries the heap simulator packed (best of XLA's",
            f"   spatial and temporal best-fit orders; here {self.heap_algorithm}) laid end to end with",
            "   the temporary tuples' own allocations; constants and thread-local buffers are in none",
            "   of the four.",
            f"4. {xp.label} = {xla_peak}",
            f"   (backend {xp.backend}: {xp.backend_reason}): {xp.counts}.",
            f"   Static allocations {xp.static_bytes}"
            + (f", the heap's temporaries at most {xp.heap_trace_peak_bytes} at once" if xp.backend == "gpu" else "")
            + ". A quantity other than the live-range peak of 2., never to be read as it.",
            "",
            f"Temps could fit in {self.temp_lower_bound} bytes if packed without gaps; the heap uses "
            f"{self.temp_bytes}, so fragmentation costs {self.fragmentation_bytes} bytes.",
        ]
        if self.peak_note():
            lines.append(self.peak_note())
        others = sorted(k for k in self.memory_spaces.keys() | self.other_memory_spaces.keys() if k)
        if others:
            lines.append("Other memory spaces (not in the figures above): " + "; ".join(
                f"S({k}) temps {self.other_memory_spaces.get(k, 0)} bytes, peak "
                f"{self.memory_spaces[k].peak_bytes if k in self.memory_spaces else 0} bytes"
                + (f" at time {self.memory_spaces[k].peak_time}" if k in self.memory_spaces else "")
                for k in others))
        if self.bytes_saved_by_schedule is not None:
            lines.append(f"The min-memory schedule changes the live-range peak by "
                         f"{-self.bytes_saved_by_schedule} bytes against the module's order.")
        return "\n".join(lines)


def _built(build: Callable[[], Any] | None, default: Any) -> Any:
    if build is None:
        return default
    with cyclic_gc_paused():  # Note [No cyclic GC during analyses] in gc_pause.py
        return build()


def _order(module: Module, schedule: str) -> dict[Computation, list[Instruction]]:
    fusions = module.fusion_computations()
    comps = [c for c in module.computations if c not in fusions]
    if schedule == "min-memory":
        return {c: min_memory_order(c) for c in comps}
    return {c: list(c.instructions) for c in comps}


def _source(module: Module, inst: Instruction) -> tuple[str | None, str | None]:
    return op_name_and_source(inst, module)


def analyze_memory(module: Module, *, schedule: str = "module", backend: str | None = None) -> MemoryReport:
    """Assign buffers as XLA does and report XLA's memory figures (bytes; times are steps).

    ``schedule`` is ``"module"`` (the module's order: its schedule when scheduled, else the
    written order), ``"xla"`` (the written order), or ``"min-memory"`` (a greedy list schedule;
    ``bytes_saved_by_schedule`` then compares its live-range peak with the module's order).
    ``backend`` (``"cpu"``, ``"gpu"``, ``"tpu"``; guessed from the module when None) decides
    how ``xla_peak_memory`` is computed (Note [peak_memory_in_bytes] in ``xla_peak.py``).
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, not {schedule!r}")
    # See Note [No cyclic GC during analyses] in gc_pause.py.
    with cyclic_gc_paused():
        return _analyze(module, schedule, backend)


def live_range_peaks(module: Module, *, schedule: str = "module") -> dict[int, SpaceUsage]:
    """Each memory space's curve and peak (Note [One peak]) without the buffer assignment.

    The figures are ``analyze_memory``'s ``memory_spaces``; only dataflow and live ranges run
    (no heap simulation), so this costs a fraction of the full analysis: what ``hloscope run``
    asks before it allocates.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, not {schedule!r}")
    with cyclic_gc_paused():  # Note [No cyclic GC during analyses] in gc_pause.py
        df = analyze_dataflow(module)
        return space_usage(df, compute_liveness(df, _order(module, schedule)))


def _analyze(module: Module, schedule: str, backend: str | None) -> MemoryReport:
    df = analyze_dataflow(module)
    live = compute_liveness(df, _order(module, schedule))
    allocs, heaps = assign_buffers(df, live)
    xla_peak_time, xla_at_peak = peak_moment(df, live)
    usage = space_usage(df, live)
    default = usage.get(0) or SpaceUsage(0, [0] * live.schedule_end_time, 0, 0, [])
    saved = None
    if schedule == "min-memory":
        base = space_usage(df, compute_liveness(df, _order(module, "module"))).get(0)
        saved = (base.peak_bytes if base else 0) - default.peak_bytes
    sources: dict[Instruction, tuple[str | None, str | None]] = {}

    def source_of(inst: Instruction) -> tuple[str | None, str | None]:
        if inst not in sources:
            sources[inst] = _source(module, inst)
        return sources[inst]

    texts: dict[int, str] = {}

    def shape_text(v: Value) -> str:  # printed once per shape: the live ranges and the dump both need it
        text = texts.get(id(v.shape))
        if text is None:
            text = texts[id(v.shape)] = v.shape.to_text()
        return text

    def peak_buffers(space: SpaceUsage) -> tuple[PeakBuffer, ...]:
        out = []
        for v, nbytes in space.peak_values:
            op_name, source = source_of(v.instruction)
            out.append(PeakBuffer(v.name, v.index, shape_text(v), nbytes,
                                  v.instruction.opcode.text, op_name, source, v.color))
        return tuple(out)

    def ranged() -> list[tuple[int, int, str, ShapeIndex, Value]]:
        """(start, end, name, index, value) of every value with a live range, in ``buffers``'
        order: by start, end, name and index (a stable sort: ties keep the values' order)."""
        ranges = live.ranges
        rows = [(r[0], r[1], v.name, v.index, v) for v in df.values if (r := ranges.get(v.id)) is not None]
        rows.sort(key=_without_value)
        return rows

    def live_buffers(rows: list[tuple[int, int, str, ShapeIndex, Value]]) -> tuple[LiveBuffer, ...]:
        placed = {v.id: (a.index, offset) for a in allocs for v, offset, _ in a.assigned}
        out = []
        for start, end, name, index, v in rows:
            op_name, source = source_of(v.instruction)
            where = placed.get(v.id, (-1, 0))
            out.append(LiveBuffer(name, index, shape_text(v), v.size, start, end, op_name, source,
                                  df.buffer_of[v.id].id, v.color, where[0], where[1]))
        return tuple(out)

    def build_buffers() -> tuple[LiveBuffer, ...]:
        return live_buffers(ranged())

    def build_biggest_buffers(limit: int) -> tuple[tuple[LiveBuffer, ...], int]:
        # Note [The biggest live ranges]: the rows are chosen before any LiveBuffer is made.
        rows = ranged()
        total = len(rows)
        if total > limit:
            keep = set(sorted(range(total), key=lambda i: (-rows[i][4].size, rows[i][0], i))[:limit])
            rows = [row for i, row in enumerate(rows) if i in keep]
        return live_buffers(rows), total

    def build_timeline() -> tuple[TimelinePoint, ...]:
        return tuple(TimelinePoint(t, nbytes, inst.name)
                     for t, (nbytes, inst) in enumerate(zip(default.timeline, live.sequence)))

    by_kind: dict[str, int] = {}
    other: dict[int, int] = {}
    for a in allocs:
        if a.color and a.kind == "preallocated-temp":
            other[a.color] = other.get(a.color, 0) + a.size
            continue
        by_kind[a.kind] = by_kind.get(a.kind, 0) + a.size
    alias_bytes = sum(a.size for a in allocs if a.kind == "parameter" and not a.readonly)
    default_heap = heaps.get(0)

    def build_allocations() -> tuple[AllocationSummary, ...]:
        return tuple(AllocationSummary(a.index, a.size, a.kind, tuple(v.name for v, _, _ in sorted(a.assigned, key=_by_id)),
                                       a.color) for a in allocs)

    def build_assignment() -> BufferAssignment:
        return _to_buffer_assignment(module, df, live, allocs, xla_peak_time, xla_at_peak, shape_text)

    headline = peak_buffers(default)
    spaces = {k: MemorySpace(k, u.peak_bytes, u.peak_time, headline if k == 0 else peak_buffers(u),
                             tuple(u.timeline), other.get(k, 0) if k else by_kind.get("preallocated-temp", 0))
              for k, u in usage.items()}
    return MemoryReport(
        module_name=module.name, schedule=schedule,
        argument_bytes=by_kind.get("parameter", 0),
        output_bytes=by_kind.get("maybe-live-out", 0) + alias_bytes,
        alias_bytes=alias_bytes,
        temp_bytes=by_kind.get("preallocated-temp", 0),
        constant_bytes=by_kind.get("constant", 0),
        thread_local_bytes=by_kind.get("thread-local", 0),
        total_bytes=sum(a.size for a in allocs),
        peak_bytes=default.peak_bytes, peak_time=default.peak_time,
        peak_buffers=headline,
        temp_lower_bound=default_heap.lower_bound if default_heap else 0,
        heap_algorithm=default_heap.algorithm if default_heap else "none",
        schedule_end_time=live.schedule_end_time, allocation_count=len(allocs),
        other_memory_spaces=other, bytes_saved_by_schedule=saved, build_assignment=build_assignment,
        build_timeline=build_timeline, build_buffers=build_buffers, build_allocations=build_allocations,
        build_biggest_buffers=build_biggest_buffers,
        memory_spaces=spaces,
        xla_peak_time=xla_peak_time,
        peak_instruction=live.sequence[default.peak_time].name if 0 <= default.peak_time < len(live.sequence) else "",
        xla_peak_bytes=sum(v.size for v in xla_at_peak),
        xla_peak_memory=xla_peak_memory(module, allocs, {k: h.trace_peak for k, h in heaps.items()}, backend),
        peak_counted_twice_bytes=counted_twice(default.peak_values, allocs))


def _by_id(assigned: tuple[Value, int, int]) -> int:
    return assigned[0].id


def _without_value(row: tuple[int, int, str, ShapeIndex, Value]) -> tuple[int, int, str, ShapeIndex]:
    return row[:4]


def _to_buffer_assignment(module: Module, df: Dataflow, live: Liveness, allocs: list[AllocationDraft],
                          peak_time: int, at_peak: list[Value], shape_text: Callable[[Value], str]) -> BufferAssignment:
    values: dict[int, BufferValue] = {}

    def bv(v: Value) -> BufferValue:
        if v.id not in values:
            values[v.id] = BufferValue(v.id, v.name, v.index, shape_text(v), df.buffer_of[v.id].size,
                                       v.color, v.is_phi, v.hlo_positions(), df.hlo_uses(v))
        return values[v.id]

    out = []
    root_text = module.entry.root.shape.to_text(layout=False)
    param_texts: dict[int, str] = {}  # one printing per parameter, not per allocation of its elements
    for a in allocs:
        if a.parameter_number is not None and a.parameter_number not in param_texts:
            param_texts[a.parameter_number] = module.entry.parameters[a.parameter_number].shape.to_text(layout=False)
        assigned = tuple(Assigned(bv(v), off, size) for v, off, size in sorted(a.assigned, key=_by_id))
        is_output = a.kind == "maybe-live-out" and any(
            v.instruction is module.entry.root and not v.index for v, _, _ in a.assigned)
        out.append(Allocation(
            index=a.index, size=a.size, is_entry_parameter=a.kind == "parameter",
            parameter_number=a.parameter_number, parameter_shape_index=a.parameter_index,
            maybe_live_out=a.kind == "maybe-live-out" or (a.kind == "parameter" and not a.readonly),
            is_constant=a.kind == "constant", is_thread_local=a.kind == "thread-local",
            is_tuple=a.is_tuple, is_preallocated_temp=a.kind == "preallocated-temp", color=a.color,
            assigned=assigned,
            parameter_shape=param_texts.get(a.parameter_number) if a.parameter_number is not None else None,
            output_shape=root_text if is_output else None))
    ranges = {value_key(v.name, v.index): LiveRange(*live.ranges[v.id]) for v in df.values if v.id in live.ranges}
    peak = PeakInfo(peak_time, tuple(PeakEntry(v.name, v.index, v.size) for v in at_peak))
    return BufferAssignment(
        allocations=tuple(out), total_bytes=sum(a.size for a in allocs),
        values=tuple(values[k] for k in sorted(values)), live_ranges=ranges,
        instruction_sequence=tuple(i.name for i in live.sequence),
        schedule_end_time=live.schedule_end_time, peak=peak, module_name=module.name)
