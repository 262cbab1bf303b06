"""Read XLA's ``BufferAssignment:`` dumps as ``analysis.buffers`` objects (written back by
``buffer_assignment_format.py``, whose ``format_buffer_assignment`` is re-exported here).

XLA writes buffer assignment as text in one of two layouts (see Note [Dump layouts]); both are
line-oriented, one fact per line, so this reader walks lines with compiled regexes and a small
state machine. Unlike HLO text there is no nesting to get wrong here, and the one free-form field
(the ``from instruction:`` HLO text) is kept verbatim, never parsed.

Note [Dump layouts]
-------------------
Older XLA (seed 002) wrote everything into one text, in this order::

    BufferAssignment:
    allocation 0: 0x7f56c03b06d0, size 401408, maybe-live-out:      <- address: older XLA only
     value: <75 fusion.7{0} @0> (size=401408,offset=0): f32[784,128]{1,0}
    ...
    Total bytes used: 2564824 (2.45MiB)
    Used values:
    <0 lhs_value.64 @0>
     positions: / uses: / from instruction: ...
    HloLiveRange (max 74):
      InstructionSequence: / BufferLiveRange: / Live ranges at 69 (peak):

XLA in jax 0.10.2 splits the same content by ``xla/service/dump.cc`` into sibling files named
``<prefix>-buffer-assignment.txt`` (the allocations), ``<prefix>-buffer-assignment-values.txt``
(``Total bytes used`` and ``Used values``), ``<prefix>-live-range.txt`` (``HloLiveRange``) and
``<prefix>-memory-usage-report.txt`` (a per-allocation summary that adds nothing to the above,
so it is not read). The prefix is e.g. ``module_0014.jit_step.cpu_after_optimizations``. Newer
XLA also prints ``uses: (none)``, a space after ``from instruction:``, the shape index in the
peak list with a cumulative count, and a stack-trace breakdown with the peak total.

Note [Peak bytes in older dumps]
--------------------------------
Older XLA listed the peak's live values as ``name: N bytes`` with no shape index, and N is the
byte size of the defining instruction's whole shape (for ``fusion.1{0}`` of a 3-tuple that is 24
pointer bytes, not the element's 5120). This reader keeps N as printed and recovers each
entry's shape index from the ``BufferLiveRange`` list, which XLA prints in the same value order.
``analysis.buffers.compute_peak`` gives the value-sized peak when that is wanted.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from hloscope.errors import InputError, ParseError
from hloscope.fileio import read_input_text
from hloscope.ir.buffer_assignment import (
    Allocation,
    Assigned,
    BufferAssignment,
    BufferValue,
    HloPosition,
    HloUse,
    LiveRange,
    PeakEntry,
    PeakInfo,
    ShapeIndex,
    format_shape_index,
)
from hloscope.source import Source, Span
from hloscope.text.buffer_assignment_format import format_buffer_assignment

__all__ = [
    "parse_buffer_assignment",
    "load_buffer_assignment",
    "format_buffer_assignment",
    "SPLIT_SUFFIXES",
]

SPLIT_SUFFIXES = (
    "-buffer-assignment.txt",
    "-buffer-assignment-values.txt",
    "-live-range.txt",
    "-memory-usage-report.txt",
)
"""The file-name endings XLA's split dump uses (see Note [Dump layouts])."""


class _Grammar:
    """A line grammar as a sequence of regex pieces, each with what it expects.

    ``match`` uses the pieces joined into one compiled regex (the fast path). Only when that
    fails does ``diagnose`` re-match piece by piece to find the column where the line went wrong.
    """

    __slots__ = ("full", "pieces")

    def __init__(self, *pieces: tuple[str, str]) -> None:
        self.full = re.compile("".join(p for p, _ in pieces) + r"\Z")
        self.pieces = [(re.compile(p), what) for p, what in pieces]

    def diagnose(self, line: str) -> tuple[int, int, str]:
        """Where in ``line`` the first non-matching piece starts and the word there ends, and
        what that piece expected."""
        pos = 0
        for piece, what in self.pieces:
            m = piece.match(line, pos)
            if m is None:
                word = _WORD.match(line, pos)
                return pos, pos + (len(word[0]) if word else 0), f"expected {what}"
            pos = m.end()
        return pos, len(line), "unexpected text at end of line"


_WORD = re.compile(r"[^\s,():<>|]+|.?")
_NUM = r"(\d+)(?!\w)"


_NAME = r"([^\s{}<>,:]+)"
_INDEX = r"(\{[0-9,]*\})"

_ALLOCATION = _Grammar(
    (r"allocation ", "'allocation '"),
    (_NUM, "an allocation index"),
    (r": ", "': '"),
    (r"(?:(0x[0-9a-fA-F]+), )?", "an address"),
    (r"size ", "'size '"),
    (_NUM, "an allocation size in bytes"),
    (r"(.*)", "allocation flags"),
    (r":", "':' at the end of the allocation header"),
)
_ALLOCATION_FLAG = re.compile(
    r", (?:parameter (\d+), shape \|([^|]*)\| at ShapeIndex (\{[0-9,]*\})"
    r"|output shape is \|([^|]*)\||color (\d+)|(?!parameter |output |color )([^,|]+))"
)
_FLAG_FORMS = (
    ("parameter", "', parameter N, shape |S| at ShapeIndex {...}'"),
    ("output", "', output shape is |S|'"),
    ("color", "', color N'"),
)
_ASSIGNED_VALUE = _Grammar(
    (r" value: <", "' value: <'"),
    (r"(\d+)", "a value id"),
    (r" ", "' '"),
    (_NAME, "an instruction name"),
    (_INDEX + "?", "a shape index"),
    (r"( \(phi\))?", "' (phi)'"),
    (r"(?: @(\d+))?", "a color such as ' @0'"),
    (r"> \(size=", "'> (size='"),
    (_NUM, "a size in bytes"),
    (r",offset=", "',offset='"),
    (_NUM, "an offset in bytes"),
    (r"\): ", "'): '"),
    (r"(\S.*)", "a shape"),
)
_VALUE_HEADER = _Grammar(
    (r"<", "'<'"),
    (r"(\d+)", "a value id"),
    (r" ", "' '"),
    (_NAME, "an instruction name"),
    (_INDEX + "?", "a shape index"),
    (r"( \(phi\))?", "' (phi)'"),
    (r"(?: @(\d+))?", "a color such as ' @0'"),
    (r">", "'>'"),
)
_POSITION = _Grammar(
    (r"  ", "two spaces"),
    (_NAME, "an instruction name"),
    (r"(?: " + _INDEX + ")?", "a shape index"),
)
_USE = _Grammar(
    (r"  ", "two spaces"),
    (_NAME, "an instruction name"),
    (r", operand ", "', operand '"),
    (_NUM, "an operand number"),
    (r"(?: " + _INDEX + ")?", "a shape index"),
)
_TOTAL = _Grammar(
    (r"Total bytes used: ", "'Total bytes used: '"),
    (_NUM, "a byte count"),
    (r"(?: \(.*\))?", "'(' and a human-readable size"),
)
_LIVE_RANGE_HEADER = _Grammar(
    (r"HloLiveRange \(max ", "'HloLiveRange (max '"),
    (r"(\d+)", "the schedule end time"),
    (r"\):", "'):'"),
)
_SEQUENCE_ENTRY = _Grammar(
    (r"    ", "four spaces"),
    (r"(\d+)", "a logical time"),
    (r":", "':'"),
    (_NAME, "an instruction name"),
)
_BUFFER_LIVE_RANGE = _Grammar(
    (r"    ", "four spaces"),
    (_NAME, "an instruction name"),
    (_INDEX, "a shape index such as '{}'"),
    (r":", "':'"),
    (r"(\d+)", "a start time"),
    (r"-", "'-'"),
    (r"(\d+)", "an end time"),
)
_PEAK_HEADER = _Grammar(
    (r"  Live ranges at ", "'  Live ranges at '"),
    (r"(-?\d+)", "the peak time"),
    (r" \(peak\):", "' (peak):'"),
)
_PEAK_ENTRY = _Grammar(
    (r"    ", "four spaces"),
    (_NAME, "an instruction name"),
    (_INDEX + "?", "a shape index"),
    (r": ", "': '"),
    (_NUM, "a byte count"),
    (r" bytes", "' bytes'"),
    (r"(?: \(cumulative: (\d+) bytes\))?", "'(cumulative: N bytes)'"),
)
_STACK_TRACE_TOTAL = re.compile(
    r"  Stack trace breakdown for peak usage: ([0-9][0-9 ,'\u00a0\u202f]*) bytes"
)


def _shape_index(text: str | None) -> ShapeIndex:
    """``{0,2}`` -> ``(0, 2)``; ``None`` or ``{}`` -> ``()``."""
    if not text or text == "{}":
        return ()
    return tuple(int(x) for x in text[1:-1].split(","))


@dataclass(slots=True)
class _Row:
    """A value as its allocation line gave it, before ``Used values`` adds positions and uses."""

    id: int
    instruction: str
    index: ShapeIndex
    shape: str
    size: int
    offset: int
    color: int | None
    is_phi: bool
    allocation: int


@dataclass(slots=True)
class _Details:
    """A value's ``Used values`` block: positions, uses and the defining instruction's text."""

    span: Span
    positions: list[HloPosition] = field(default_factory=list)
    uses: list[HloUse] = field(default_factory=list)
    instruction_text: str | None = None


@dataclass(slots=True)
class _AllocationDraft:
    index: int
    size: int
    address: str | None
    color: int = 0
    parameter_number: int | None = None
    parameter_shape: str | None = None
    parameter_shape_index: ShapeIndex = ()
    output_shape: str | None = None
    flags: set[str] = field(default_factory=set)
    unknown_flags: list[str] = field(default_factory=list)
    value_ids: list[int] = field(default_factory=list)


class _Reader:
    """Accumulates the sections of one buffer assignment from one or more texts."""

    def __init__(self) -> None:
        self.allocations: list[_AllocationDraft] = []
        self.rows: dict[int, _Row] = {}
        self.details: dict[int, _Details] = {}
        self.total: tuple[int, Span] | None = None
        self.sequence: list[str] = []
        self.ranges: list[tuple[str, ShapeIndex, LiveRange]] = []
        self.schedule_end: int | None = None
        self.peak_time: int | None = None
        self.peak_entries: list[PeakEntry] = []
        self.peak_running = 0
        self.stated_peak: int | None = None
        self.first_source: Source | None = None

    # -- one text ---------------------------------------------------------------------------

    def feed(self, text: str, name: str) -> None:
        """Read every line of ``text``; ``name`` is what error messages call it."""
        source = Source(text, name)
        if self.first_source is None:
            self.first_source = source
        state = "top"
        current: _Details | None = None
        in_uses = False
        pos = 0
        for line in text.split("\n"):
            start = pos
            pos += len(line) + 1
            if line.endswith("\r"):
                line = line[:-1]
            if not line:
                continue
            c = line[0]
            if c == " ":
                if state == "allocation" and line.startswith(" value: "):
                    self._assigned_value(source, start, line)
                elif state == "values":
                    if current is None:
                        continue
                    if line.startswith("  "):
                        if in_uses:
                            if line != "  (none)":
                                m = self._match(_USE, source, start, line)
                                current.uses.append(HloUse(m[1], int(m[2]), _shape_index(m[3])))
                        else:
                            m = self._match(_POSITION, source, start, line)
                            current.positions.append(HloPosition(m[1], _shape_index(m[2])))
                    elif line == " positions:":
                        in_uses = False
                    elif line == " uses:":
                        in_uses = True
                    elif line.startswith(" from instruction:"):
                        current.instruction_text = line[len(" from instruction:") :].lstrip(" ")
                elif state in ("sequence", "ranges", "peak", "live_range"):
                    state = self._live_range_line(source, start, line, state)
                continue
            if c == "a" and line.startswith("allocation "):
                self._allocation_header(source, start, line)
                state = "allocation"
            elif c == "<" and state == "values":
                m = self._match(_VALUE_HEADER, source, start, line)
                value_id = int(m[1])
                if value_id in self.details:
                    self._fail(
                        source,
                        start + 1,
                        start + 1 + len(m[1]),
                        f"value {value_id} is listed twice under 'Used values'",
                    )
                current = self.details[value_id] = _Details(Span(source, start, start + len(line)))
                in_uses = False
            elif line.startswith("Total bytes used:"):
                m = self._match(_TOTAL, source, start, line)
                self.total = (int(m[1]), Span(source, start + 18, start + 18 + len(m[1])))
                state = "top"
            elif line == "Used values:":
                state, current = "values", None
            elif line.startswith("HloLiveRange ("):
                m = self._match(_LIVE_RANGE_HEADER, source, start, line)
                self.schedule_end = int(m[1])
                state = "live_range"
            elif line.startswith("BufferAssignment"):
                state = "top"
            else:
                # Memory-usage reports, stats and anything newer XLA adds: not ours to read.
                state = "top"

    def _match(self, grammar: _Grammar, source: Source, start: int, line: str) -> re.Match[str]:
        m = grammar.full.match(line)
        if m is None:
            begin, end, message = grammar.diagnose(line)
            self._fail(source, start + begin, start + end, message)
        return m

    @staticmethod
    def _fail(source: Source, start: int, end: int, message: str) -> NoReturn:
        raise ParseError(message, Span(source, start, max(end, start + 1)))

    def _allocation_header(self, source: Source, start: int, line: str) -> None:
        m = self._match(_ALLOCATION, source, start, line)
        index = int(m[1])
        if index != len(self.allocations):
            self._fail(
                source,
                start + m.start(1),
                start + m.end(1),
                f"expected allocation {len(self.allocations)}, found allocation {index}",
            )
        draft = _AllocationDraft(index, int(m[3]), m[2])
        flags, flags_at = m[4], m.start(4)
        pos = 0
        while pos < len(flags):
            f = _ALLOCATION_FLAG.match(flags, pos)
            if f is None:
                at = start + flags_at + pos
                word = _WORD.match(flags, pos + 2)
                rest = flags[pos + 2 :]
                expected = next(
                    (form for key, form in _FLAG_FORMS if rest.startswith(key)),
                    "', ' and an allocation flag",
                )
                self._fail(
                    source, at, at + 2 + (len(word[0]) if word else 0), f"expected {expected}"
                )
            if f[1] is not None:
                draft.parameter_number = int(f[1])
                draft.parameter_shape = f[2]
                draft.parameter_shape_index = _shape_index(f[3])
            elif f[4] is not None:
                draft.output_shape = f[4]
            elif f[5] is not None:
                draft.color = int(f[5])
            elif f[6] in ("constant", "thread-local", "maybe-live-out", "preallocated-temp"):
                draft.flags.add(f[6])
            else:
                draft.unknown_flags.append(f[6])
            pos = f.end()
        self.allocations.append(draft)

    def _assigned_value(self, source: Source, start: int, line: str) -> None:
        m = self._match(_ASSIGNED_VALUE, source, start, line)
        draft = self.allocations[-1]
        value_id, size, offset = int(m[1]), int(m[6]), int(m[7])
        if value_id in self.rows:
            other = self.rows[value_id].allocation
            self._fail(
                source,
                start + m.start(1),
                start + m.end(1),
                f"value {value_id} is already assigned to allocation {other}",
            )
        if offset + size > draft.size:
            self._fail(
                source,
                start + m.start(6) - 5,
                start + m.end(7),
                f"value {value_id} at offset {offset} with size {size} ends past the end of "
                f"allocation {draft.index} (size {draft.size})",
            )
        color = None if m[5] is None else int(m[5])
        self.rows[value_id] = _Row(
            value_id,
            m[2],
            _shape_index(m[3]),
            m[8],
            size,
            offset,
            color,
            m[4] is not None,
            draft.index,
        )
        draft.value_ids.append(value_id)

    def _live_range_line(self, source: Source, start: int, line: str, state: str) -> str:
        if line.startswith("    "):
            if state == "sequence":
                m = self._match(_SEQUENCE_ENTRY, source, start, line)
                if int(m[1]) != len(self.sequence):
                    self._fail(
                        source,
                        start + 4,
                        start + 4 + len(m[1]),
                        f"expected logical time {len(self.sequence)}, found {m[1]}",
                    )
                self.sequence.append(m[2])
            elif state == "ranges":
                m = self._match(_BUFFER_LIVE_RANGE, source, start, line)
                begin, end = int(m[3]), int(m[4])
                if end < begin:
                    self._fail(
                        source,
                        start + m.start(3),
                        start + m.end(4),
                        f"live range ends ({end}) before it starts ({begin})",
                    )
                self.ranges.append((m[1], _shape_index(m[2]), LiveRange(begin, end)))
            elif state == "peak":
                m = self._match(_PEAK_ENTRY, source, start, line)
                size = int(m[3])
                entry = PeakEntry(m[1], None if m[2] is None else _shape_index(m[2]), size)
                self.peak_entries.append(entry)
                self.peak_running += size
                if m[4] is not None and int(m[4]) != self.peak_running:
                    self._fail(
                        source,
                        start + m.start(4),
                        start + m.end(4),
                        f"cumulative bytes {m[4]} do not match the running total {self.peak_running}",
                    )
            return state
        if line == "  InstructionSequence:":
            return "sequence"
        if line == "  BufferLiveRange:":
            return "ranges"
        if line.startswith("  Live ranges at "):
            self.peak_time = int(self._match(_PEAK_HEADER, source, start, line)[1])
            return "peak"
        t = _STACK_TRACE_TOTAL.match(line)
        if t is not None:
            self.stated_peak = int(re.sub(r"\D", "", t[1]))
        # The stack-trace tree and other lines we do not model end the live-range sections.
        return "top"

    # -- the result ----------------------------------------------------------------------

    def finish(self) -> BufferAssignment:
        """Check the sections against each other and build the ``BufferAssignment``."""
        if not self.allocations:
            source = self.first_source or Source("", "<string>")
            raise ParseError(
                "no 'allocation N: size ...' lines: this is not a BufferAssignment dump",
                Span(source, 0, 1),
            )
        for value_id, details in self.details.items():
            if value_id not in self.rows:
                raise ParseError(
                    f"value {value_id} is listed under 'Used values' but assigned to no allocation",
                    details.span,
                )
        values: dict[int, BufferValue] = {}
        for value_id in sorted(self.rows):
            row = self.rows[value_id]
            d = self.details.get(value_id)
            values[value_id] = BufferValue(
                id=row.id,
                instruction=row.instruction,
                index=row.index,
                shape=row.shape,
                size=row.size,
                color=row.color,
                is_phi=row.is_phi,
                positions=tuple(d.positions) if d else (),
                uses=tuple(d.uses) if d else (),
                instruction_text=d.instruction_text if d else None,
            )
        allocations = tuple(self._allocation(draft, values) for draft in self.allocations)
        allocated = sum(a.size for a in allocations)
        if self.total is not None and self.total[0] != allocated:
            raise ParseError(
                f"'Total bytes used' is {self.total[0]} but the allocations add up to {allocated}",
                self.total[1],
            )
        live_ranges = {name + format_shape_index(index): r for name, index, r in self.ranges}
        return BufferAssignment(
            allocations=allocations,
            total_bytes=allocated,
            values=tuple(values.values()),
            live_ranges=live_ranges,
            instruction_sequence=tuple(self.sequence),
            schedule_end_time=self.schedule_end,
            peak=self._peak(),
        )

    def _allocation(self, d: _AllocationDraft, values: dict[int, BufferValue]) -> Allocation:
        assigned = tuple(
            Assigned(values[i], self.rows[i].offset, self.rows[i].size) for i in d.value_ids
        )
        return Allocation(
            index=d.index,
            size=d.size,
            is_entry_parameter=d.parameter_number is not None,
            parameter_number=d.parameter_number,
            parameter_shape_index=d.parameter_shape_index,
            maybe_live_out="maybe-live-out" in d.flags,
            is_constant="constant" in d.flags,
            is_thread_local="thread-local" in d.flags,
            # XLA does not print is_tuple; an allocation holding only tuple values is one.
            is_tuple=bool(assigned) and all(a.value.is_tuple for a in assigned),
            is_preallocated_temp="preallocated-temp" in d.flags,
            color=d.color,
            assigned=assigned,
            parameter_shape=d.parameter_shape,
            output_shape=d.output_shape,
            address=d.address,
            unknown_flags=tuple(d.unknown_flags),
        )

    def _peak(self) -> PeakInfo | None:
        if self.peak_time is None:
            return None
        entries = self.peak_entries
        if any(e.index is None for e in entries):
            entries = self._resolve_peak_indices(self.peak_time, entries)
        return PeakInfo(self.peak_time, tuple(entries), self.stated_peak)

    def _resolve_peak_indices(self, time: int, entries: list[PeakEntry]) -> list[PeakEntry]:
        """Give index-less peak entries their shape index (see Note [Peak bytes in older dumps])."""
        live = [(name, index) for name, index, r in self.ranges if r.contains(time)]
        if [name for name, _ in live] == [e.instruction for e in entries]:
            return [
                PeakEntry(e.instruction, index, e.bytes)
                for e, (_, index) in zip(entries, live, strict=True)
            ]
        by_name: dict[str, list[ShapeIndex]] = {}
        for name, index in live:
            by_name.setdefault(name, []).append(index)
        return [
            PeakEntry(e.instruction, by_name[e.instruction][0], e.bytes)
            if e.index is None and len(by_name.get(e.instruction, ())) == 1
            else e
            for e in entries
        ]


def parse_buffer_assignment(text: str, name: str = "<string>") -> BufferAssignment:
    """Read a single-file ``BufferAssignment:`` dump (see Note [Dump layouts]).

    Any part may be missing except the allocations; lines this reader does not model are
    skipped. Malformed lines and sections that contradict each other raise ``ParseError``
    pointing at the line, with ``name`` as the file name.
    """
    if not text.strip():
        raise InputError(f"{name}: the file is empty; expected XLA's buffer-assignment dump")
    reader = _Reader()
    reader.feed(text, name)
    return reader.finish()


# -- finding the files ---------------------------------------------------------------------


def _split_prefix(name: str) -> str | None:
    for suffix in SPLIT_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return None


def _module_name(prefix: str) -> str:
    """``module_0014.jit_step.cpu_after_optimizations`` -> ``jit_step``."""
    parts = Path(prefix).name.split(".")
    if len(parts) >= 3 and parts[0].startswith("module_"):
        return ".".join(parts[1:-1])
    return Path(prefix).name


def _load_split(prefix: str) -> BufferAssignment:
    """Read ``prefix`` + the split suffixes that exist, each file under its own name."""
    main = Path(prefix + SPLIT_SUFFIXES[0])
    if not main.is_file():
        raise InputError(
            f"{main}: not found; the allocations of a split buffer-assignment dump live there"
        )
    reader = _Reader()
    text = read_input_text(main, "XLA's buffer-assignment dump")
    reader.feed(text, str(main))
    # Older XLA wrote everything into -buffer-assignment.txt; read siblings only for what is missing.
    wanted = []
    if "\nUsed values:" not in text:
        wanted.append(SPLIT_SUFFIXES[1])
    if "\nHloLiveRange " not in text:
        wanted.append(SPLIT_SUFFIXES[2])
    for suffix in wanted:
        sibling = Path(prefix + suffix)
        if sibling.is_file():
            reader.feed(read_input_text(sibling, "XLA's buffer-assignment dump"), str(sibling))
    ba = reader.finish()
    return _with_module_name(ba, _module_name(prefix))


def _with_module_name(ba: BufferAssignment, name: str) -> BufferAssignment:
    return BufferAssignment(
        ba.allocations,
        ba.total_bytes,
        ba.values,
        ba.live_ranges,
        ba.instruction_sequence,
        ba.schedule_end_time,
        ba.peak,
        module_name=name,
    )


def _pick(prefixes: list[str], module: str | None, where: str) -> str:
    if not prefixes:
        raise InputError(f"{where}: no '*{SPLIT_SUFFIXES[0]}' buffer-assignment dump found")
    if module is not None:
        chosen = [
            p
            for p in prefixes
            if Path(p).name == module
            or module in Path(p).name.split(".")
            or Path(p).name.startswith(module)
        ]
    else:
        chosen = prefixes
    if len(chosen) == 1:
        return chosen[0]
    listing = "\n".join("  " + Path(p).name for p in sorted(chosen or prefixes))
    if module is None:
        hint = "pass module=<name> to pick one"
    elif chosen:
        hint = f"module={module!r} matches several; pass a longer name"
    else:
        hint = f"none matches module={module!r}"
    raise InputError(f"{where}: {len(prefixes)} buffer-assignment dumps, {hint}:\n{listing}")


def load_buffer_assignment(
    path: str | os.PathLike[str], module: str | None = None
) -> BufferAssignment:
    """Read an XLA buffer-assignment dump from disk, in either layout (see Note [Dump layouts]).

    ``path`` may be a single-file dump; any one file of a split dump (its siblings are found by
    prefix); a directory from ``--xla_dump_to`` (``module`` picks one when it holds several
    modules: a full prefix, the module name such as ``jit_step``, or ``module_0014``); or a file
    prefix such as ``dump/module_0014.jit_step.cpu_after_optimizations``. Raises ``InputError``
    when no dump, or more than one, fits, and ``ParseError`` for malformed text.
    """
    p = Path(path)
    if p.is_dir():
        prefixes = sorted(
            str(p / prefix)
            for f in p.iterdir()
            if f.name.endswith(SPLIT_SUFFIXES[0]) and (prefix := _split_prefix(f.name)) is not None
        )
        return _load_split(_pick(prefixes, module, str(p)))
    if p.is_file():
        prefix = _split_prefix(p.name)
        if prefix is not None and prefix:
            return _load_split(str(p.parent / prefix))
        return parse_buffer_assignment(read_input_text(p, "XLA's buffer-assignment dump"), str(p))
    parent = p.parent if p.parent.is_dir() else None
    if parent is None:
        raise InputError(f"{p}: no such file or directory")
    prefixes = sorted(
        str(parent / f.name[: -len(SPLIT_SUFFIXES[0])])
        for f in parent.iterdir()
        if f.name.startswith(p.name) and f.name.endswith(SPLIT_SUFFIXES[0])
    )
    return _load_split(_pick(prefixes, module, str(p)))
