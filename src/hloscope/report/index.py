"""The index page of a sweep: one row per module line (Note [Sweeps] in hloscope/sweep.py).

It renders the lines and nothing else: stage, instructions, FLOPs, peak, estimated time,
collectives and errors per module, each linked to the module's own report. Reports are
written on demand, not by the sweep: under ``hloscope report DIR --serve`` a link writes the
report the first time it is opened; on a page opened from disk, a link whose report is not
written yet offers the command that writes it. The rows are HTML made here with every string
escaped (Note [Escaping untrusted text] in html.py); the small script only sorts, filters
and copies, and the page makes no network request.
"""
from __future__ import annotations

import html
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ReportLink", "render_index"]


@dataclass(frozen=True)
class ReportLink:
    """Where a module's report is (``href``, relative to the index), whether it is written,
    and the command that writes it."""

    href: str
    written: bool
    command: str


def _bytes(n: Any) -> str:
    if n is None:
        return ""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _count(n: Any) -> str:
    if n is None:
        return ""
    for unit, size in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:g}" if isinstance(n, float) else str(n)


def _seconds(s: Any) -> str:
    if s is None:
        return ""
    for unit, size in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def _cell(text: str, sort: Any = None, cls: str = "") -> str:
    key = "" if sort is None else f' data-sort="{html.escape(str(sort))}"'
    klass = f' class="{cls}"' if cls else ""
    return f"<td{klass}{key}>{text}</td>"


def _row(record: Mapping[str, Any], link: ReportLink | None, with_xla: bool) -> str:
    e = html.escape
    name = record.get("module") or record.get("path", "?").rsplit("/", 1)[-1]
    label = f'<span class="name">{e(str(name))}</span><br><span class="path">{e(str(record.get("path", "")))}</span>'
    if link is not None:
        hint = "" if link.written else f' data-command="{e(link.command)}" title="{e(link.command)}"'
        state = "written" if link.written else "on-demand"
        label += f'<br><a class="report {state}" href="{e(link.href)}"{hint}>report</a>'
    errors = record.get("errors") or []
    status = str(record.get("status", ""))
    if errors:
        shown = "<br>".join(f"<b>{e(str(x.get('step')))}</b>: {e(str(x.get('message')))}" for x in errors[:3])
        more = f"<br>… {len(errors) - 3} more" if len(errors) > 3 else ""
        problems = f'<span class="status {e(status)}">{e(status)}</span> {shown}{more}'
    else:
        problems = f'<span class="status ok">{e(status)}</span>'
    xla = record.get("xla")
    xla_cell = ""
    if isinstance(xla, Mapping):
        diff = xla.get("max_abs_difference")
        xla_cell = e(str(xla.get("status"))) + (f"<br>{diff:.3g}" if isinstance(diff, float | int) else "")
    colls = record.get("collectives")
    cells = [
        _cell(label, name, "module"),
        _cell(e(str(record.get("stage") or "")), record.get("stage") or ""),
        _cell(_count(record.get("instructions")), record.get("instructions"), "num"),
        _cell(_count(record.get("flops")), record.get("flops"), "num"),
        _cell(_bytes(record.get("peak_bytes")), record.get("peak_bytes"), "num"),
        _cell(_seconds(record.get("estimate_seconds")), record.get("estimate_seconds"), "num"),
        _cell("" if colls is None else f"{colls}" + (f"<br>{_bytes(record.get('collective_bytes'))}" if colls else ""),
              colls, "num"),
        _cell(problems, len(errors), "problems"),
    ]
    if with_xla:
        cells.insert(-1, _cell(xla_cell, xla.get("max_abs_difference") if isinstance(xla, Mapping) else None))
    return f'<tr data-status="{e(status)}">' + "".join(cells) + "</tr>"


_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin: 0 0 .2em; }
.sub { color: #555; margin-bottom: 1em; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #ddd; padding: .3em .5em; vertical-align: top; text-align: left; }
th { position: sticky; top: 0; background: #f6f6f6; cursor: pointer; user-select: none; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.name { font-weight: 600; }
.path { color: #777; font-size: .85em; word-break: break-all; }
.status { font-weight: 600; }
.status.ok { color: #2a7; } .status.failed, .status.crashed, .status.timeout { color: #c33; }
a.report.on-demand { color: #777; }
.problems { max-width: 40em; font-size: .9em; overflow-wrap: anywhere; }
td.module { max-width: 30em; overflow-wrap: anywhere; }
#filter { margin: 0 0 .8em; padding: .3em; width: 24em; }
.hint { color: #555; font-size: .9em; }
"""

_JS = """
(function () {
  "use strict";
  var table = document.getElementById("modules");
  var body = table.tBodies[0];
  var served = location.protocol === "http:" || location.protocol === "https:";
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
    th.addEventListener("click", function () {
      var rows = Array.prototype.slice.call(body.rows);
      var up = th.getAttribute("data-dir") !== "up";
      th.setAttribute("data-dir", up ? "up" : "down");
      rows.sort(function (a, b) {
        var x = a.cells[col].getAttribute("data-sort"), y = b.cells[col].getAttribute("data-sort");
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
        return up ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  document.getElementById("filter").addEventListener("input", function (ev) {
    var q = ev.target.value.toLowerCase();
    Array.prototype.forEach.call(body.rows, function (r) {
      r.style.display = r.textContent.toLowerCase().indexOf(q) >= 0 ? "" : "none";
    });
  });
  if (!served) {
    Array.prototype.forEach.call(document.querySelectorAll("a.on-demand"), function (a) {
      a.addEventListener("click", function (ev) {
        ev.preventDefault();
        var command = a.getAttribute("data-command");
        if (navigator.clipboard) { navigator.clipboard.writeText(command).catch(function () {}); }
        window.prompt("This report is written on demand. Run (copied if the browser allows it):", command);
      });
    });
  }
})();
"""


def render_index(records: Sequence[Mapping[str, Any]], *, title: str = "hloscope sweep",
                 links: Mapping[str, ReportLink] | None = None, source: str = "") -> str:
    """The index page of a sweep's lines (``records``); ``links`` maps a line's key to its
    report. ``source`` names the results file in the subtitle."""
    e = html.escape
    links = links or {}
    statuses = Counter(str(r.get("status")) for r in records)
    hardware = sorted({str(r["hardware"]) for r in records if r.get("hardware")})
    flops = sum(r.get("flops") or 0 for r in records)
    has_xla = any(isinstance(r.get("xla"), Mapping) for r in records)
    summary = (f"{len(records)} modules: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
               + f"; {_count(flops)} FLOPs in all"
               + (f"; time estimated on {', '.join(hardware)}" if hardware else "")
               + (f"; results from {source}" if source else ""))
    header = ["module", "stage", "instructions", "FLOPs", "peak", "est. time", "collectives",
              *(["vs XLA:CPU"] if has_xla else []), "status and errors"]
    rows = "\n".join(_row(r, links.get(str(r.get("key"))), has_xla) for r in records)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'">
<meta name="generator" content="hloscope">
<title>{e(title)} · hloscope</title>
<style>{_CSS}</style>
</head>
<body>
<h1>{e(title)}</h1>
<div class="sub">{e(summary)}</div>
<input id="filter" type="search" placeholder="filter rows (name, stage, error...)">
<span class="hint">Click a column to sort. Grey report links are written on demand.</span>
<table id="modules">
<thead><tr>{"".join(f"<th>{e(h)}</th>" for h in header)}</tr></thead>
<tbody>
{rows}
</tbody>
</table>
<script>{_JS}</script>
</body>
</html>
"""
