"""Gather everything the HTML report shows into one JSON-ready dict, without analysing anything.

The report is drawn from ``collect_report_data(module)``: the module's structure (computations and
instructions, for the graph and text views) plus each analysis's own ``to_json()``. Analyses are
optional: each one is imported and run inside try/except, so a missing or failing analysis turns
into a note in its section and never breaks the report.

Note [Report sections]
----------------------
Each analysis section is ``{"status": "ok" | "unavailable" | "error", "message": str, "data": ...}``
where ``data`` is exactly the analysis's ``to_json()`` (``None`` unless status is ok; the memory
section's long lists in columns, Note [Compact memory rows] in ``compact.py``). The page reads
the fields it knows and ignores the rest, so analyses may grow fields freely. The fields the
page reads are listed in ``EXPECTED_FIELDS``. The op profile (``report/profile.py``) and the
timeline (``report/timeline.py``) are sections of their own, made from the time estimate.

Note [Compact instruction rows]
-------------------------------
Seed 003 has 8,200 instructions; one JSON object per instruction with repeated keys would double
the page. Each computation's instructions are rows of a fixed column order (``INSTRUCTION_COLUMNS``)
and operands and called computations are indices, so the page can link them without lookups by
name.
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
import time
import traceback
from collections.abc import Callable
from typing import Any

from hloscope.ir.module import Module
from hloscope.ir.print_options import PrintOptions
from hloscope.ir.printer import instruction_to_text
from hloscope.report.joined import attach_collective_rows, cost_rows, group_allocations, row_index

__all__ = ["collect_report_data", "collect_dump_data", "implied_hardware", "INSTRUCTION_COLUMNS", "EXPECTED_FIELDS", "FORMAT_VERSION"]

# 2: instruction text and family compacted (Note [Compact instruction text] in compact.py).
FORMAT_VERSION = 2

# Per-instruction rows asked of analyses whose to_json() takes ``top``: enough for a useful
# table without putting every instruction of a big module in the page twice.
TOP_INSTRUCTIONS = 500

INSTRUCTION_COLUMNS = ("name", "opcode", "family", "shape", "operands", "called", "op_name",
                       "source", "text")

# What the page reads from each analysis's to_json(); alternatives are separated by "|".
EXPECTED_FIELDS: dict[str, list[str]] = {
    "cost": ["flops", "transcendentals", "bytes_accessed", "loop_aware", "trip_counts",
             "per_instruction[].name", "per_instruction[].computation", "per_instruction[].opcode",
             "per_instruction[].flops", "per_instruction[].transcendentals",
             "per_instruction[].bytes_accessed", "per_instruction[].op_name",
             "per_instruction[].source_file", "per_instruction[].source_line"],
    "timing": ["total_seconds", "hardware", "compute_seconds", "memory_seconds",
               "communication_seconds", "fresh_page_seconds", "notes",
               "longest|per_instruction[].instruction|name",
               "longest|per_instruction[].seconds"],
    "memory": ["peak_bytes", "peak_time", "peak_label", "peak_note", "xla_peak_memory.bytes",
               "xla_peak_memory.label", "xla_peak_memory.counts", "peak_buffers[].name|instruction",
               "peak_buffers[].shape", "peak_buffers[].size|bytes", "peak_buffers[].op_name",
               "peak_buffers[].source_file", "peak_buffers[].source_line",
               "timeline|series|memory_over_time: [{time, bytes, instruction}] or [bytes, ...] or columns",
               "buffers|live_ranges: [{name|instruction, shape, size|bytes, start, end, allocation, offset}] or columns",
               "allocations: [{index, size, kind, memory_space}] or columns (Note [Compact memory rows])"],
    "collectives": ["collectives[]: name, opcode, computation, group_mode, group_size, num_groups, "
                    "payload_bytes|bytes, ring_bytes, count, channel_id, op_name, replica_groups "
                    "(columns, Note [Compact memory rows])",
                    "totals.payload_bytes, totals.ring_bytes"],
    "profile": ["step_seconds", "op_seconds", "peak_flop_rate", "memory_bandwidth",
                "exposed_communication_seconds",
                "categories[]|opcodes[]: key, category, seconds, share, instructions, executions, flops, "
                "bytes_accessed, flop_rate, flop_utilization, bandwidth, bandwidth_utilization, bound, top",
                "advice[]: kind, title, words, seconds, share, instructions"],
    "timeline": ["lanes", "total_ns", "unroll_limit", "trips", "exposed",
                 "events: {ci, ii, start, end, lane, depth, parent, kind} (columns, nanoseconds; "
                 "kind: Note [Interval kinds] in timeline.py)"],
}

# The page's text view: one line per instruction without metadata (op_name and source are
# their own columns) to keep seed 003's page small.
_TEXT_OPTIONS = PrintOptions(metadata=False, stack_frames=False)


def collect_report_data(module: Module, *, hardware: Any = None, title: str | None = None,
                        source_path: str | None = None,
                        progress: Callable[[str, float | None], None] | None = None,
                        numerics: Callable[[], dict[str, Any]] | None = None,
                        jobs: int | None = None,
                        while_waiting: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Everything the report page shows, as one JSON-ready dict (see Note [Report sections]).

    ``hardware`` is passed to the timing estimate (a ``HardwareSpec`` or a bundled name); with
    none, the profile the module implies is used and the page says so (Note [Implied hardware]).
    ``progress(step, seconds)`` is called with ``seconds=None`` when a step starts and with its
    duration when it ends, so a terminal can show what a big module is waiting on.
    ``numerics()`` makes the Numerics section (``report.numerics.numerics_section``).
    ``jobs`` is how many processes may work on it: with two or more (by default, when this
    process may use two CPUs and the module is big) the memory analysis runs in a forked child
    beside the other steps (Note [Memory beside the rest] in ``background.py``); the data is the
    same either way. ``while_waiting(data)`` is then called with everything but the memory
    section, every other step done, before waiting for it: work for the meantime.
    """
    started = time.perf_counter()
    note = progress or (lambda step, seconds: None)

    def step(name: str, run: Callable[[], Any]) -> Any:
        note(name, None)
        t = time.perf_counter()
        out = run()
        note(name, time.perf_counter() - t)
        return out

    data: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "title": title or module.name,
        "source_path": source_path,
        "module": _module_header(module),
        "columns": list(INSTRUCTION_COLUMNS),
    }
    families: dict[str, str] = {}
    background = _memory_in_background(module, jobs, hardware)
    if background is not None:
        note("memory", None)
    try:
        data["computations"] = step("instruction text", lambda: _computations(module, families))
        data["families"] = families
        where = row_index(data["computations"])  # Note [Joined in Python] in joined.py
        data["summary"] = step("summary", lambda: _section(lambda: _call("hloscope.analysis.summary", "summarize", module)))
        cost_result: list[Any] = []

        def run_cost() -> Any:
            cost_result.append(_call("hloscope.analysis.cost", "analyze_cost", module))
            return cost_result[0]

        data["cost"] = step("cost", lambda: _section(run_cost, top=TOP_INSTRUCTIONS))
        if data["cost"]["data"] is not None:
            data["cost"]["data"]["loops"] = _loop_costs(cost_result[0])
            _attach_bytes(data["computations"], cost_result[0])
        memory_result: list[Any] = []

        def join_memory() -> None:
            # The memory section in its place among the keys, whichever process made it.
            if background is None or memory_result:
                return
            section, light, allocations = background.result()
            data["memory"] = section
            memory_result.append(_with_allocations(light, allocations))
            note("memory", section.get("seconds", 0.0))

        if background is None:
            data["memory"], light, allocations = step("memory", lambda: memory_section(module))
            memory_result.append(_with_allocations(light, allocations))
        else:
            data["memory"] = None  # filled by join_memory()
        data["collectives"] = step("collectives", lambda: _section(
            lambda: _call("hloscope.analysis.collectives", "analyze_collectives", module)))
        implied = None
        if hardware is None:
            grid = data["collectives"]["data"] or {}
            hardware, implied = implied_hardware(module, grid.get("num_replicas"), grid.get("num_partitions"))
        times: list[Any] = []

        if background is not None and _estimate_needs_memory(hardware, module):
            join_memory()

        def run_timing() -> Any:
            # The memory section's analysis again would be the report's slowest step twice over.
            times.append(_timing(module, hardware, cost_result[0] if cost_result else None,
                                 memory_result[0] if memory_result else None))
            return times[0]

        data["timing"] = step("time estimate", lambda: _section(run_timing, top=TOP_INSTRUCTIONS))
        if data["timing"]["data"] is not None:
            data["timing"]["data"]["implied"] = implied
            _attach_seconds(data["computations"], times[0])
            _views_of_the_estimate(data, module, cost_result[0] if cost_result else None, times[0], hardware, step, where)
        if isinstance(data["collectives"]["data"], dict):  # after the rows' seconds, which it reads
            from hloscope.report.compact import compact_collectives

            attach_collective_rows(data["collectives"]["data"], data["computations"], where)
            compact_collectives(data["collectives"]["data"])
        if data["cost"]["data"] is not None:
            data["cost"]["data"]["rows"] = cost_rows(data["cost"]["data"], data["timing"]["data"], data["computations"], where)
        if background is not None and not memory_result and while_waiting is not None:
            while_waiting(data)
        join_memory()
        if numerics is not None:  # report/numerics.py: value statistics of a run on inputs
            data["numerics"] = step("value statistics", numerics)
        _why_sections_failed(data, module)
        data["collect_seconds"] = round(time.perf_counter() - started, 3)
        return data
    finally:
        if background is not None:  # a step that raised leaves no child running
            background.cancel()


def _why_sections_failed(data: dict[str, Any], module: Module) -> None:
    """When an analysis failed, whether the module verifies: a module XLA's verifier would refuse
    (a call with too few operands, a conditional without branches) breaks analyses in ways
    their own error does not explain, so the section says what is wrong with the module. The
    verifier runs only then: on a valid module of Llama's size it would cost a second."""
    failed = [sec for sec in data.values() if isinstance(sec, dict) and sec.get("status") == "error"]
    if not failed:
        return
    try:
        from hloscope.ir.verifier import verify

        errors = [d for d in verify(module) if d.severity == "error"]
    except Exception:  # noqa: BLE001 - the sections' own messages stand
        return
    if not errors:
        return
    first = errors[0].to_json()
    where = ", ".join(x for x in (f"line {first['line']}" if "line" in first else None,
                                  "/".join(y for y in (first.get("computation"), first.get("instruction")) if y)) if x)
    more = f" and {len(errors) - 1} more" if len(errors) > 1 else ""
    note = f"The module does not verify ({where}: {first['message']}{more}; `hloscope verify` lists them)."
    for sec in failed:
        sec["message"] = f"{note} {sec['message']}"


def memory_section(module: Module, allocations: bool = True) -> tuple[dict[str, Any], Any, tuple[Any, ...]]:
    """The memory section (Note [Report sections]), the analysis it came from without the parts
    built on demand (None when it failed) and, with ``allocations``, its allocations, which an
    XLA:CPU time estimate reads: all of it picklable, so another process can send it (Note
    [Memory beside the rest]; the allocations are half of it)."""
    import dataclasses

    made: list[Any] = []
    explain: list[str] = []

    def run_memory() -> Any:
        r = _call("hloscope.analysis.memory.report", "analyze_memory", module)
        made.append(r)
        with contextlib.suppress(Exception):  # the words are optional; the figures are not
            explain.append(r.explain())
        return r

    section = _section(run_memory)
    if section["data"] is not None:
        from hloscope.report.compact import compact_memory

        if explain:
            section["data"]["explain"] = explain[0]
        group_allocations(section["data"])
        compact_memory(section["data"])  # Note [Compact memory rows]
    if not made:
        return section, None, ()
    r = made[0]
    light = dataclasses.replace(r, build_assignment=None, build_timeline=None, build_buffers=None,
                                build_biggest_buffers=None, build_allocations=None)
    return section, light, r.allocations if allocations else ()


def _with_allocations(light: Any, allocations: tuple[Any, ...]) -> Any:
    """The memory analysis ``memory_section`` sent, reading its allocations again."""
    import dataclasses

    return None if light is None else dataclasses.replace(light, build_allocations=lambda: allocations)


def _memory_in_background(module: Module, jobs: int | None, hardware: Any) -> Any:
    """The memory section's work started in a forked child, or None where it runs here."""
    from hloscope.report.background import (
        PARALLEL_FROM,
        Background,
        can_fork,
        free_cpus,
        memory_to_spare,
    )

    wanted = jobs if jobs is not None else (free_cpus() if module.instruction_count >= PARALLEL_FROM else 1)
    if wanted < 2 or not can_fork() or not memory_to_spare(module.instruction_count):
        return None
    allocations = _estimate_needs_memory(hardware, module)
    try:
        return Background(lambda: memory_section(module, allocations))
    except OSError:  # no process or pipe to spare (EAGAIN, ENOMEM): the step runs here
        return None


def _estimate_needs_memory(hardware: Any, module: Module) -> bool:
    """Whether the time estimate on ``hardware`` (None: the one ``module`` implies) reads the
    buffer assignment (XLA:CPU's fresh pages, Note [Fresh pages per allocation]); True when it
    cannot tell."""
    try:
        if hardware is None:
            hardware = implied_hardware(module)[0]
        if isinstance(hardware, str):
            from hloscope.analysis.hardware import load_hardware

            hardware = load_hardware(hardware)
        return getattr(hardware, "kind", "cpu") == "cpu"
    except Exception:  # noqa: BLE001 - the estimate's own section reports a bad profile
        return True


def _views_of_the_estimate(data: dict[str, Any], module: Module, cost: Any, estimate: Any, hardware: Any,
                           step: Callable[[str, Callable[[], Any]], Any], where: dict[str, tuple[int, int]]) -> None:
    """The op profile (``report/profile.py``) and the timeline (``report/timeline.py``) of the estimate."""
    from hloscope.report.profile import attach_profile, profile_of
    from hloscope.report.timeline import attach_kinds, timeline_section

    made: list[Any] = []

    def run_profile() -> Any:
        made.append(profile_of(module, cost, estimate, hardware))
        return made[0]

    if cost is not None:
        data["profile"] = step("op profile", lambda: _section(run_profile))
        if made:
            attach_profile(data["computations"], made[0])
    data["timeline"] = step("timeline", lambda: _section(lambda: timeline_section(estimate, where)))
    if isinstance(data["timeline"].get("data"), dict):  # after the rows' categories, which it reads
        attach_kinds(data["timeline"]["data"], data["computations"])


# Note [Implied hardware]
# -----------------------
# "Where does the time go" needs a time estimate, and that needs a hardware profile. Without
# --hardware the report picks the one the module's backend implies rather than showing no
# times: the one inference of the estimate command (Note [Inferring the backend] in
# analysis/backend.py: GPU and TPU library custom calls, backend configs, TPU tiled layouts).
# The page names the choice and why, so nobody mistakes it for a measurement of their own
# machine; the estimate's own notes (an unoptimized module, another backend's module) ride
# along in the timing section's ``notes``.


def implied_hardware(module: Module, replicas: int | None = None,
                     partitions: int | None = None) -> tuple[str, str]:
    """The bundled profile ``module`` implies, and the reason in words (Note [Implied hardware]).

    ``replicas``/``partitions`` are the device grid the collectives analysis found (the header's
    counts when not given).
    """
    from hloscope.analysis.backend import infer_backend

    inferred = infer_backend(module)
    r = replicas or module.replica_count or 1
    p = partitions or module.num_partitions or 1
    where = f"{r} replica{'s' if r != 1 else ''} × {p} partition{'s' if p != 1 else ''}"
    return inferred.profile, f"{inferred.assumed()}; {where}"


def _loop_costs(cost: Any) -> list[dict[str, Any]]:
    """Each while loop's loop-aware cost (its body and condition times its trips, as the cost
    analysis charges it), which ``to_json``'s per-instruction rows leave out as control flow."""
    rows = []
    for inst, c in getattr(cost, "loop_aware_per_instruction", {}).items():
        if inst.opcode.text == "while":
            rows.append({"name": inst.name, "flops": c.flops, "transcendentals": c.transcendentals,
                         "bytes_accessed": c.bytes_accessed, "trip_count": cost.trip_counts.get(inst.name)})
    return rows


def _attach_bytes(computations: list[dict[str, Any]], cost: Any) -> None:
    """Each instruction's loop-aware bytes accessed per step, beside its row (the graph's overlay)."""
    per = {inst.name: c.bytes_accessed for inst, c in getattr(cost, "loop_aware_per_instruction", {}).items()}
    for comp in computations:
        comp["bytes"] = [per.get(r[0]) for r in comp["instructions"]]


def _attach_seconds(computations: list[dict[str, Any]], estimate: Any) -> None:
    """Each instruction's estimated seconds per step (loop trips included), beside its row."""
    per = getattr(estimate, "per_instruction", None) or {}
    for comp in computations:
        rows = comp["instructions"]
        comp["seconds"] = [_seconds(per.get(r[0])) for r in rows]


def _seconds(t: Any) -> float | None:
    return None if t is None else float(t.seconds)


def _module_header(module: Module) -> dict[str, Any]:
    return {
        "name": module.name,
        "entry": module.entry.name,
        "replica_count": module.replica_count,
        "num_partitions": module.num_partitions,
        "is_scheduled": module.is_scheduled,
        "computation_count": len(module.computations),
        "instruction_count": module.instruction_count,
    }


def _computations(module: Module, families: dict[str, str]) -> list[dict[str, Any]]:
    """Each computation's rows (Note [Compact instruction rows]); ``families`` is filled with
    each opcode's family, which the rows leave out (Note [Compact instruction text])."""
    from hloscope.report.compact import compact_text

    comp_index = {c.name: k for k, c in enumerate(module.computations)}
    fusions = module.fusion_computations()
    out = []
    for comp in module.computations:
        # Keyed by the instructions themselves: they hash by identity, in C.
        index = {inst: k for k, inst in enumerate(comp.instructions)}
        rows = []
        for inst in comp.instructions:
            metadata = inst.attrs.get("metadata")
            op_name = metadata.fields.get("op_name") if metadata is not None else None
            source = module.source_location(inst) if metadata is not None else None
            opcode = inst.opcode.text
            if opcode not in families:
                families[opcode] = inst.opcode.family.value
            shape = inst.shape.to_text(layout=False)
            operands = [index.get(op, -1) for op in inst.operands]
            try:
                text = instruction_to_text(inst, _TEXT_OPTIONS)
            except Exception as e:  # a printer gap must not hide the rest of the module
                text = f"{inst.name} = <cannot print: {type(e).__name__}>"
            names = None if -1 in operands else [op.name for op in inst.operands]
            rows.append([
                inst.name,
                opcode,
                0,  # the opcode's family: ``families`` has it
                shape,
                operands,
                [comp_index.get(c.name, -1) for c in inst.called_computations],
                None if op_name is None else str(op_name),
                source,
                compact_text(text, inst.name, shape, opcode, names),
            ])
        out.append({
            "name": comp.name,
            "is_entry": comp is module.entry,
            "is_fusion": comp in fusions,
            "root": index.get(comp.root, -1),
            "instructions": rows,
        })
    return out


class _Unavailable(Exception):
    """The analysis module or function does not exist (yet)."""


def _call(module_name: str, function: str, *args: Any, **kwargs: Any) -> Any:
    try:
        mod = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name:
            raise _Unavailable(f"{module_name} is not available in this version of hloscope") from None
        raise
    fn = getattr(mod, function, None)
    if fn is None:
        raise _Unavailable(f"{module_name}.{function} is not available in this version of hloscope")
    return fn(*args, **kwargs)


def _timing(module: Module, hardware: Any, cost: Any, memory: Any) -> Any:
    if isinstance(hardware, str):
        from hloscope.analysis.hardware import load_hardware

        hardware = load_hardware(hardware)
    return _call("hloscope.analysis.timing", "estimate_time", module, hardware, cost_report=cost,
                 memory_report=memory)


def _to_json(result: Any, options: dict[str, Any]) -> Any:
    to_json = getattr(result, "to_json", None)
    if to_json is None:
        return result
    params = inspect.signature(to_json).parameters
    return to_json(**{k: v for k, v in options.items() if k in params})


def _section(run: Callable[[], Any], **json_options: Any) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        payload = _to_json(run(), json_options)
    except _Unavailable as e:
        return {"status": "unavailable", "message": str(e), "data": None}
    except Exception as e:  # any analysis failure becomes a note in its own section
        where = traceback.extract_tb(e.__traceback__)[-1]
        return {"status": "error", "data": None,
                "message": f"{type(e).__name__}: {e} (at {where.filename.rsplit('/', 1)[-1]}:{where.lineno})"}
    return {"status": "ok", "message": "", "data": payload,
            "seconds": round(time.perf_counter() - started, 3)}


def collect_dump_data(ba: Any, *, title: str | None = None, source_path: str | None = None) -> dict[str, Any]:
    """The report page's data for an XLA BufferAssignment dump (no module: no graph or text).

    Everything shown is the dump's own: its allocations by kind, the peak its live ranges give
    (``BufferAssignment.peak_*``, the same as ``hloscope buffers``) and the values in each
    allocation. The page shows one Buffers tab for it.
    """
    shapes = {v.key: v.shape for v in ba.values}
    peak = [dict(e.to_json(), shape=shapes.get(e.key, "")) for e in ba.peak_buffers]
    allocations = []
    for a in sorted(ba.allocations, key=lambda a: -a.size):
        allocations.append({
            "index": a.index, "kind": a.kind, "size": a.size, "color": a.color,
            "parameter_number": a.parameter_number,
            "values": [{"name": x.value.instruction, "index": list(x.value.index), "shape": x.value.shape,
                        "offset": x.offset, "size": x.size} for x in a.assigned[:50]],
            "value_count": len(a.assigned),
        })
    name = ba.module_name or (title or "BufferAssignment dump")
    return {
        "format": FORMAT_VERSION,
        "kind": "buffer-assignment",
        "title": title or name,
        "source_path": source_path,
        "module": {"name": name, "entry": "", "replica_count": None, "num_partitions": None,
                   "is_scheduled": bool(ba.instruction_sequence), "computation_count": 0,
                   "instruction_count": len(ba.instruction_sequence)},
        "columns": list(INSTRUCTION_COLUMNS),
        "computations": [],
        "dump": {"allocation_count": ba.allocation_count, "total_bytes": ba.total_bytes,
                 "bytes_by_kind": ba.bytes_by_kind, "count_by_kind": ba.count_by_kind,
                 "peak_bytes": ba.peak_bytes, "peak_time": ba.peak_time,
                 "schedule_end_time": ba.schedule_end_time, "value_count": len(ba.values),
                 "peak_buffers": peak, "allocations": allocations},
    }
