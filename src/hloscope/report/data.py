"""Gather everything the HTML report shows into one JSON-ready dict, without analysing anything.

The report is drawn from ``collect_report_data(module)``: the module's structure (computations and
instructions, for the graph and text views) plus each analysis's own ``to_json()``. Analyses are
optional: each one is imported and run inside try/except, so a missing or failing analysis turns
into a note in its section and never breaks the report.

Note [Report sections]
----------------------
Each analysis section is ``{"status": "ok" | "unavailable" | "error", "message": str, "data": ...}``
where ``data`` is exactly the analysis's ``to_json()`` (``None`` unless status is ok). The page
reads the fields it knows and ignores the rest, so analyses may grow fields freely. The fields
the page reads are listed in ``EXPECTED_FIELDS``.

Note [Compact instruction rows]
-------------------------------
Seed 003 has 8,200 instructions; one JSON object per instruction with repeated keys would double
the page. Each computation's instructions are rows of a fixed column order (``INSTRUCTION_COLUMNS``)
and operands and called computations are indices, so the page can link them without lookups by
name.
"""
from __future__ import annotations

import importlib
import inspect
import time
import traceback
from collections.abc import Callable
from typing import Any

from hloscope.ir.module import Module
from hloscope.ir.print_options import PrintOptions
from hloscope.ir.printer import instruction_to_text

__all__ = ["collect_report_data", "INSTRUCTION_COLUMNS", "EXPECTED_FIELDS", "FORMAT_VERSION"]

FORMAT_VERSION = 1

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
               "communication_seconds", "longest|per_instruction[].instruction|name",
               "longest|per_instruction[].seconds"],
    "memory": ["peak_bytes", "peak_time", "peak_buffers[].name|instruction",
               "peak_buffers[].shape", "peak_buffers[].size|bytes", "peak_buffers[].op_name",
               "peak_buffers[].source_file", "peak_buffers[].source_line",
               "timeline|series|memory_over_time: [{time, bytes, instruction}] or [bytes, ...]",
               "buffers|live_ranges: [{name|instruction, shape, size|bytes, start, end}]"],
    "collectives": ["collectives[]: name, opcode, computation, group_mode, group_size, num_groups, "
                    "payload_bytes|bytes, ring_bytes, count, channel_id, op_name",
                    "totals.payload_bytes, totals.ring_bytes"],
}

# The page's text view: one line per instruction without metadata (op_name and source are
# their own columns) to keep seed 003's page small.
_TEXT_OPTIONS = PrintOptions(metadata=False, stack_frames=False)


def collect_report_data(module: Module, *, hardware: Any = None, title: str | None = None,
                        source_path: str | None = None) -> dict[str, Any]:
    """Everything the report page shows, as one JSON-ready dict (see Note [Report sections]).

    ``hardware`` is passed to the timing estimate (a ``HardwareSpec`` or a bundled name); with
    none, timing runs with its own default if it has one.
    """
    started = time.perf_counter()
    data: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "title": title or module.name,
        "source_path": source_path,
        "module": _module_header(module),
        "columns": list(INSTRUCTION_COLUMNS),
        "computations": _computations(module),
        "summary": _section(lambda: _call("hloscope.analysis.summary", "summarize", module)),
        "cost": _section(lambda: _call("hloscope.analysis.cost", "analyze_cost", module), top=TOP_INSTRUCTIONS),
        "memory": _section(lambda: _call("hloscope.analysis.memory.report", "analyze_memory", module)),
        "collectives": _section(lambda: _call("hloscope.analysis.collectives", "analyze_collectives", module)),
        "timing": _section(lambda: _timing(module, hardware), top=TOP_INSTRUCTIONS),
    }
    data["collect_seconds"] = round(time.perf_counter() - started, 3)
    return data


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


def _computations(module: Module) -> list[dict[str, Any]]:
    comp_index = {c.name: k for k, c in enumerate(module.computations)}
    fusions = module.fusion_computations()
    out = []
    for comp in module.computations:
        index = {id(i): k for k, i in enumerate(comp.instructions)}
        rows = []
        for inst in comp.instructions:
            fields = inst.metadata.fields if inst.metadata is not None else {}
            op_name = fields.get("op_name")
            src = fields.get("source_file")
            line = fields.get("source_line")
            source = f"{src}:{line}" if src and line is not None else (str(src) if src else None)
            try:
                text = instruction_to_text(inst, _TEXT_OPTIONS)
            except Exception as e:  # a printer gap must not hide the rest of the module
                text = f"{inst.name} = <cannot print: {type(e).__name__}>"
            rows.append([
                inst.name,
                inst.opcode.text,
                inst.opcode.family.value,
                inst.shape.to_text(layout=False),
                [index.get(id(op), -1) for op in inst.operands],
                [comp_index.get(c.name, -1) for c in inst.called_computations],
                None if op_name is None else str(op_name),
                source,
                text,
            ])
        out.append({
            "name": comp.name,
            "is_entry": comp is module.entry,
            "is_fusion": comp in fusions,
            "root": index.get(id(comp.root), -1),
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


def _timing(module: Module, hardware: Any) -> Any:
    if hardware is None:
        # A time estimate is only as good as its hardware profile, so none is guessed.
        raise _Unavailable("no hardware given (write_report(..., hardware='h100-sxm') or --hardware NAME)")
    if isinstance(hardware, str):
        from hloscope.analysis.hardware import load_hardware

        hardware = load_hardware(hardware)
    return _call("hloscope.analysis.timing", "estimate_time", module, hardware)


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
