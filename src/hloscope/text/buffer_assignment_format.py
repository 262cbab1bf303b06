"""Write ``BufferAssignment`` objects as XLA's ``BufferAssignment:`` dump text.

The inverse of ``buffer_assignment_dump.parse_buffer_assignment`` (which re-exports
``format_buffer_assignment``): one file in the older single-file layout (Note [Dump layouts] in
``buffer_assignment_dump.py``) with current XLA's spellings.
"""

from __future__ import annotations

from hloscope.ir.buffer_assignment import BufferAssignment, ShapeIndex, format_shape_index

__all__ = ["format_buffer_assignment"]


def _human_bytes(n: int) -> str:
    """tsl's ``HumanReadableNumBytes``: ``7.1KiB``, ``2.45MiB``."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < 1024:
        return f"{sign}{n}B"
    units = "KMGTPE"
    unit = 0
    while n >= 1024 * 1024:
        n //= 1024
        unit += 1
    digits = 1 if unit == 0 else 2
    return f"{sign}{n / 1024.0:.{digits}f}{units[unit]}iB"


def _index_suffix(index: ShapeIndex, tuple_shaped: bool) -> str:
    return " " + format_shape_index(index) if (index or tuple_shaped) else ""


def format_buffer_assignment(ba: BufferAssignment) -> str:
    """Write ``ba`` as a single-file dump that ``parse_buffer_assignment`` reads back.

    The layout is seed 002's (see Note [Dump layouts]) with current XLA's spellings
    (``uses: (none)``, indexed peak entries). Values appear under ``Used values`` and the
    live-range section appears only when ``ba`` has them.
    """
    out: list[str] = ["BufferAssignment:\n"]
    for a in ba.allocations:
        head = [f"allocation {a.index}: "]
        if a.address:
            head.append(f"{a.address}, ")
        head.append(f"size {a.size}")
        if a.color:
            head.append(f", color {a.color}")
        if a.is_entry_parameter:
            shape = a.parameter_shape if a.parameter_shape is not None else "<unknown shape>"
            head.append(
                f", parameter {a.parameter_number}, shape |{shape}| at ShapeIndex "
                f"{format_shape_index(a.parameter_shape_index)}"
            )
        if a.output_shape is not None:
            head.append(f", output shape is |{a.output_shape}|")
        for flag, on in (
            ("constant", a.is_constant),
            ("thread-local", a.is_thread_local),
            ("maybe-live-out", a.maybe_live_out),
            ("preallocated-temp", a.is_preallocated_temp),
        ):
            if on:
                head.append(", " + flag)
        head.extend(", " + f for f in a.unknown_flags)
        head.append(":\n")
        out.append("".join(head))
        for x in sorted(a.assigned, key=lambda x: x.value.id):
            out.append(
                f" value: {x.value.short_string()} (size={x.size},offset={x.offset}): {x.value.shape}\n"
            )
    out.append(f"\nTotal bytes used: {ba.total_bytes} ({_human_bytes(ba.total_bytes)})\n")
    if any(v.positions or v.uses or v.instruction_text for v in ba.values):
        out.append("\nUsed values:\n")
        for v in sorted(ba.values, key=lambda v: v.id):
            out.append(v.short_string() + "\n positions:\n")
            for p in v.positions:
                out.append(f"  {p.instruction}{_index_suffix(p.index, v.is_tuple)}\n")
            out.append(" uses:\n")
            for u in v.uses:
                out.append(
                    f"  {u.instruction}, operand {u.operand_number}{_index_suffix(u.operand_index, v.is_tuple)}\n"
                )
            if not v.uses:
                out.append("  (none)\n")
            if v.instruction_text is not None:
                out.append(f" from instruction: {v.instruction_text}\n")
    if ba.schedule_end_time is not None or ba.live_ranges or ba.peak is not None:
        end = (
            ba.schedule_end_time
            if ba.schedule_end_time is not None
            else len(ba.instruction_sequence)
        )
        out.append(f"\nHloLiveRange (max {end}):\n  InstructionSequence:\n")
        out.extend(f"    {i}:{name}\n" for i, name in enumerate(ba.instruction_sequence))
        out.append("  BufferLiveRange:\n")
        out.extend(f"    {key}:{r.start}-{r.end}\n" for key, r in ba.live_ranges.items())
        if ba.peak is not None:
            out.append(f"  Live ranges at {ba.peak.time} (peak):\n")
            cumulative = 0
            for e in ba.peak.entries:
                cumulative += e.bytes
                if e.index is None:
                    out.append(f"    {e.instruction}: {e.bytes} bytes\n")
                else:
                    out.append(f"    {e.key}: {e.bytes} bytes (cumulative: {cumulative} bytes)\n")
            if ba.peak.stated_bytes is not None:
                out.append(
                    f"  Stack trace breakdown for peak usage: {ba.peak.stated_bytes} bytes\n"
                )
    return "".join(out)
