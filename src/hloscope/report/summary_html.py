"""A compact HTML summary of a module for Jupyter (``Module._repr_html_``); every module string escaped."""
from __future__ import annotations

from html import escape

from hloscope.ir.module import Module

__all__ = ["module_summary_html"]

_STYLE = ("font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;"
          "border:1px solid #e3e6ee;border-radius:10px;padding:10px 14px;max-width:760px")


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def module_summary_html(module: Module, *, max_rows: int = 8) -> str:
    """A small card: name, sizes, device counts, top opcodes, parameters and outputs.

    It reads ``hloscope.analysis.summary`` only; names and shapes are HTML-escaped because they
    come from the module file.
    """
    from hloscope.analysis.summary import summarize

    s = summarize(module)
    facts = [f"{s.instruction_count:,} instructions", f"{s.computation_count} computations "
             f"({s.fusion_computation_count} fused)", f"entry {escape(module.entry.name)}"]
    if s.replica_count:
        facts.append(f"{s.replica_count} replicas")
    if s.num_partitions:
        facts.append(f"{s.num_partitions} partitions")
    if s.is_scheduled:
        facts.append("scheduled")
    ops = ", ".join(f"<code>{escape(op)}</code>&nbsp;×{n}" for op, n in s.opcode_counts[:max_rows])
    parts = [f'<div style="{_STYLE}">',
             f'<div style="font-size:15px;font-weight:600">HloModule {escape(s.name)}</div>',
             f'<div style="color:#6b7385">{" · ".join(facts)}</div>',
             f'<div style="margin-top:6px">{ops}</div>']
    if s.collectives:
        parts.append("<div>collectives: " + ", ".join(f"{escape(op)}&nbsp;×{n}" for op, n in s.collectives) + "</div>")
    for title, rows, total in (("Parameters", s.parameters, s.parameter_bytes), ("Outputs", s.outputs, s.output_bytes)):
        parts.append(f'<div style="margin-top:8px;font-weight:600">{title} ({_bytes(total)})</div>'
                     '<table style="border-collapse:collapse;font-size:12px">')
        for r in rows[:max_rows]:
            parts.append(f'<tr><td style="padding:1px 10px 1px 0">{escape(r.name)}</td>'
                         f'<td style="padding:1px 10px 1px 0"><code>{escape(r.shape)}</code></td>'
                         f'<td style="text-align:right">{_bytes(r.bytes)}</td></tr>')
        if len(rows) > max_rows:
            parts.append(f'<tr><td colspan="3" style="color:#6b7385">… {len(rows) - max_rows} more</td></tr>')
        parts.append("</table>")
    parts.append('<div style="color:#6b7385;margin-top:6px">Full report: '
                 '<code>hloscope.report.write_report(module, "report.html")</code></div></div>')
    return "".join(parts)
