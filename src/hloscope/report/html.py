"""Render report data (``report/data.py``) as one self-contained HTML page: no network, opens from disk.

The page is a fixed shell plus inlined parts: the stylesheet and the script parts (``PARTS``) from ``assets/`` (with
the vendored dagre layout library ahead of the script, see ``assets/VENDORED.md``) and the data
as ``<script type="application/json">`` blocks (Note [Lazy page data]). The script builds
everything else in the browser.

Note [Lazy page data]
---------------------
XLA's Llama 3.1 8B step at ten times its size (318,000 instructions) made a 107 MB page that
took 2.2 s to open: the browser parsed all of its JSON, and collected the garbage of it, before
the first tab could show, though the first tab reads a few hundred kB of it. The data is
therefore split (``pack_page_data``): the ``hloscope-data`` block has everything but the long
lists; each computation's rows (and the per-row figures beside them, ``ROW_KEYS``) are one line
of the ``hloscope-rows`` block; and each long list of a section (``LAZY``) is a block of its own. The page parses
a computation's line, or a list's block, when something first reads it (``lazyProp`` and
``rowsOf`` in page.js), and parses the remaining lines in short slices while nobody is
clicking. ``page_data`` reads a page back into the data it was made from.

Note [Page encoding]
--------------------
The bytes of the page are most of the time it takes to open (about 14 ms a MB on the VM the
figures of docs/report.md come from, for the browser to read and scan them, before any script
runs), so the blocks say each thing once. The computations' heads (name, root, row count...) and the buffers live at the memory peak are
columns, one list per key. In a row,
the shape, the opcode and a compacted text
(Note [Compact instruction text] in compact.py) are indices into ``shapes``, ``opcodes`` and
``texts``, and op_name and source are 0 (none) or 1 + an index into ``strings``: a transformer's
layers repeat the same shapes, attributes and op_names. Each row's estimated seconds keep four
significant digits (the page shows three); bytes that are whole numbers are written as integers.
The timeline's intervals are integer picoseconds, each start as its distance from the previous
start and each end as its distance from its start, and the computation and row of each interval
as their distance from the previous one (``"codec": "ps-deltas"``): the intervals of a schedule
follow each other. The memory curve's steps (232,000 at 10x Llama, 7.2 MB with each step's
instruction name) carry their bytes as the difference from the step before and their instruction
as its row's position among all computations' rows, as the difference from the step before's
(``"codec": {"bytes": "deltas", "instruction": "row-deltas"}``): the schedule walks the rows in
order, so most steps are ``1``. The page names a step's instruction from its row only when it
shows one (``rowName``). In a block of columns, a column of few distinct strings (an allocation's
kind, a collective's opcode and replica groups) is those strings once and each row's 0 (none) or
1 + an index into them (``{"strings": [...], "at": [...]}``). The page undoes each of these when
it parses a block (``decodeRows``, ``decodeEvents``, ``decodeSteps``, ``decodeStrings``);
``page_data`` does the same in Python.

Note [Escaping untrusted text]
------------------------------
Names, op_name and source paths come from HLO files we did not write. They never enter the HTML
as markup: the data block is ``json.dumps`` output with ``<``, ``>`` and ``&`` written as
``\\u003c``-style escapes, so no ``</script>`` or ``<!--`` can end or change the block (JSON.parse
reads the escapes back), and the script builds the DOM with ``textContent`` only. The one
module string in the shell, the title, goes through ``html.escape``.
"""
from __future__ import annotations

import html
import json
import re
from functools import cache
from importlib import resources
from typing import Any

from hloscope.report.compact import columns
from hloscope.report.joined import seconds_as_shown

__all__ = ["render_html", "json_for_script", "pack_page_data", "page_data", "PARTS", "LAZY", "ROW_KEYS"]


def json_for_script(obj: Any) -> str:
    """``obj`` as JSON that is safe inside a ``<script>`` element (see Note [Escaping untrusted text])."""
    return _escaped(_dumps(obj))


def _escaped(text: str) -> str:
    """JSON text made safe inside a ``<script>`` element (Note [Escaping untrusted text])."""
    # U+2028/2029 are legal in JSON but were line breaks in older JavaScript parsers.
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


@cache
def _asset(name: str) -> str:
    text = resources.files("hloscope.report").joinpath("assets", name).read_text(encoding="utf-8")
    # Our own assets must not be able to close the element they are inlined into.
    assert "</script" not in text.lower() and "</style" not in text.lower(), name
    return text


# The page's script, in order: later parts use the names earlier ones define, and the last
# starts the page. They run inside one function scope, so nothing leaks into the window.
PARTS = ("page.js", "overview.js", "profile.js", "memory.js", "memory_chart.js", "timeline.js", "graph_model.js", "graph_layout.js",
         "graph_draw.js", "graph_view.js", "numerics.js", "text.js")


@cache
def _vendored_dagre() -> str:
    """dagre (MIT, assets/VENDORED.md) with its licence as a comment, defining the global ``dagre``."""
    licence = _asset("dagre.LICENSE.txt").replace("*/", "* /")
    return "/*! dagre 3.1.3 (@dagrejs/dagre), vendored unmodified.\n" + licence + "*/\n" + _asset("dagre.min.js")


_SHELL = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="generator" content="hloscope">
<title>{title} · hloscope</title>
<style>
{css}
</style>
</head>
<body>
<header>
  <div class="titlebar"><h1 id="title">{title}</h1><div class="sub" id="subtitle"></div></div>
  <div class="figures" id="figures"></div>
  <nav id="tabs"></nav>
</header>
<main>
<noscript><p>This report needs JavaScript to draw its tables and graphs.</p></noscript>
</main>
<footer>Made by hloscope. Everything on this page is in this one file; it makes no network requests.</footer>
<script type="application/json" id="hloscope-data">{data}</script>
{blocks}
<script>
{dagre}
(function () {{
"use strict";
{js}
}})();
</script>
</body>
</html>
"""


# The long lists each in a block of their own (Note [Lazy page data]): section, key under its data.
LAZY = (("memory", "timeline"), ("memory", "buffers"), ("memory", "allocations"), ("timeline", "events"),
        ("collectives", "collectives"))
# What a computation's line in ``hloscope-rows`` holds, in order.
ROW_KEYS = ("instructions", "bytes", "seconds", "category", "flop_util", "band_util")
# The columns given as indices (data.INSTRUCTION_COLUMNS, Note [Page encoding]).
_NAME, _OPCODE, _SHAPE, _OP_NAME, _SOURCE, _TEXT = 0, 1, 3, 6, 7, 8


# One encoder for every block: json.dumps with options makes a new one per call, and the rows
# block is one call per computation (29,000 at ten times Llama 3.1 8B).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str, allow_nan=False)


def _dumps(obj: Any) -> str:
    return _ENCODER.encode(obj)


class Packed:
    """Blocks of the page made ahead of the rest (``pack_ahead``)."""

    __slots__ = ("rows", "blocks")

    def __init__(self, rows: tuple[dict[str, Any], str] | None, blocks: dict[str, str]) -> None:
        self.rows = rows
        self.blocks = blocks


def pack_ahead(data: dict[str, Any], but: tuple[str, ...] = ()) -> Packed:
    """The page's rows and the long lists' blocks of every section but ``but``, made ahead:
    the report makes them while the memory section is still under way (Note [Memory beside
    the rest] in ``background.py``); ``pack_page_data`` then makes only the rest."""
    comps = data.get("computations") or []
    blocks = {}
    for section, key in LAZY:
        value = _lazy_value(data, section, key) if section not in but else None
        if value is not None:
            blocks[f"hloscope-{section}-{key}"] = _block_text(data, section, key, value)
    return Packed(pack_rows(comps) if comps else None, blocks)


def _lazy_value(data: dict[str, Any], section: str, key: str) -> Any:
    sec = data.get(section)
    if not (isinstance(sec, dict) and isinstance(sec.get("data"), dict)):
        return None
    return sec["data"].get(key)


def _block_text(data: dict[str, Any], section: str, key: str, value: Any) -> str:
    if (section, key) == ("timeline", "events"):
        value = _events_codec(value)
    elif (section, key) == ("memory", "timeline"):
        value = _steps_codec(value, data.get("computations") or [])
    return _dumps(_interned(value))


def pack_page_data(data: dict[str, Any], ahead: Packed | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """``data`` as the page carries it (Note [Lazy page data]): the main block's dict and the
    other blocks' JSON text by element id. ``data`` itself is left as it was. ``ahead`` holds
    blocks made already (``pack_ahead``)."""
    core = dict(data)
    blocks: dict[str, str] = {}
    lazy = []
    for section, key in LAZY:
        value = _lazy_value(core, section, key)
        if value is None:
            continue
        block = f"hloscope-{section}-{key}"
        made = ahead.blocks.get(block) if ahead is not None else None
        blocks[block] = made if made is not None else _block_text(data, section, key, value)
        sec = core[section]
        core[section] = dict(sec, data=dict(sec["data"], **{key: None}))
        lazy.append([section, key, block])
    core["lazy"] = lazy
    mem = core.get("memory")
    mem_data = mem.get("data") if isinstance(mem, dict) else None
    peak = mem_data.get("peak_buffers") if isinstance(mem_data, dict) else None
    if (isinstance(mem, dict) and isinstance(mem_data, dict) and isinstance(peak, list) and len(peak) >= 64
            and all(isinstance(b, dict) and b.keys() == peak[0].keys() for b in peak)):
        # 9,456 at 10x Llama, 1.6 MB as objects in the block the page parses first
        core["memory"] = dict(mem, data=dict(mem_data, peak_buffers=_interned(columns(peak))))
    comps = data.get("computations") or []
    if comps:
        rows = ahead.rows if ahead is not None else None
        fields, rows_block = rows if rows is not None else pack_rows(comps)
        core.update(fields)
        blocks["hloscope-rows"] = rows_block
    return core, blocks


def pack_rows(comps: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """The computations' rows as the page carries them (Note [Page encoding]): the main block's
    fields for them and the ``hloscope-rows`` block."""
    core: dict[str, Any] = {}
    shapes: dict[str, int] = {}
    opcodes: dict[str, int] = {}
    texts: dict[tuple[str, ...], int] = {}
    strings: dict[str, int] = {}

    def string(v: Any) -> Any:  # 0 for none, 1 + its index for a string
        return 0 if v is None else 1 + strings.setdefault(v, len(strings)) if isinstance(v, str) else v

    lines, heads = [], []
    for comp in comps:
        rows = []
        for r in comp["instructions"]:
            r = list(r)
            r[_SHAPE] = shapes.setdefault(r[_SHAPE], len(shapes))
            r[_OPCODE] = opcodes.setdefault(r[_OPCODE], len(opcodes))
            r[_OP_NAME], r[_SOURCE] = string(r[_OP_NAME]), string(r[_SOURCE])
            if isinstance(r[_TEXT], list):
                r[_TEXT] = texts.setdefault(tuple(r[_TEXT]), len(texts))
            rows.append(r)
        figures = [_figures(k, comp.get(k)) for k in ROW_KEYS[1:]]
        lines.append(_dumps([rows, *figures]))
        heads.append({k: v for k, v in comp.items() if k not in ROW_KEYS} | {"count": len(rows)})
    # one list per key (Note [Page encoding]): 29,000 heads at 10x Llama repeated their keys
    core["computations"] = {"columns": list(heads[0]), "values": [[h.get(k) for h in heads] for k in heads[0]]} \
        if all(h.keys() == heads[0].keys() for h in heads) else heads
    core["shapes"], core["opcodes"], core["row_keys"] = list(shapes), list(opcodes), list(ROW_KEYS)
    core["texts"], core["strings"] = [list(t) for t in texts], list(strings)
    return core, "\n".join(lines)  # a JSON text has no raw line break


def _figures(key: str, values: Any) -> Any:
    """A computation's per-row figures as the page carries them (Note [Page encoding])."""
    if not isinstance(values, list):
        return values
    if key == "seconds":
        return [seconds_as_shown(x) for x in values]
    return [int(x) if isinstance(x, float) and x.is_integer() else x for x in values]


def _deltas(xs: list[int]) -> list[int]:
    return [b - a for a, b in zip([0, *xs], xs)]


def _events_codec(ev: Any) -> Any:
    """The timeline's intervals in integer picoseconds and differences (Note [Page encoding])."""
    if not (isinstance(ev, dict) and all(isinstance(ev.get(k), list) for k in ("ci", "ii", "start", "end"))):
        return ev
    start = [round(x * 1000) for x in ev["start"]]
    end = [round(x * 1000) for x in ev["end"]]
    return dict(ev, codec="ps-deltas", start=_deltas(start), end=[e - s for s, e in zip(start, end)],
                ci=_deltas(ev["ci"]), ii=_deltas(ev["ii"]))


def _undo_events_codec(ev: Any) -> Any:
    if not (isinstance(ev, dict) and ev.get("codec") == "ps-deltas"):
        return ev
    out = dict(ev)
    del out["codec"]
    for key in ("ci", "ii", "start"):
        total, out[key] = 0, []
        for d in ev[key]:
            total += d
            out[key].append(total)
    out["end"] = [(s + d) / 1000 for s, d in zip(out["start"], ev["end"])]
    out["start"] = [s / 1000 for s in out["start"]]
    return out


def _interned(value: Any) -> Any:
    """A block of columns with each column of few distinct strings (or none) as those strings
    and each row's 0 or 1 + its index among them (Note [Page encoding])."""
    if not (isinstance(value, dict) and isinstance(value.get("columns"), list) and isinstance(value.get("values"), list)):
        return value
    values: list[Any] = []
    for col in value["values"]:
        if isinstance(col, list) and len(col) >= 64 and all(v is None or isinstance(v, str) for v in col):
            seen: dict[str, int] = {}
            at = [0 if v is None else 1 + seen.setdefault(v, len(seen)) for v in col]
            if 4 * len(seen) <= len(col):
                values.append({"strings": list(seen), "at": at})
                continue
        values.append(col)
    return dict(value, values=values)


def _undo_interned(value: Any) -> Any:
    if not (isinstance(value, dict) and isinstance(value.get("columns"), list) and isinstance(value.get("values"), list)):
        return value
    return dict(value, values=[[c["strings"][k - 1] if k else None for k in c["at"]] if isinstance(c, dict) else c
                               for c in value["values"]])


def _steps_codec(tl: Any, computations: list[dict[str, Any]]) -> Any:
    """The memory curve's bytes and instructions as differences (Note [Page encoding]); a
    column stays as it was when it cannot be (a size not an integer, a name with no row)."""
    if not (isinstance(tl, dict) and isinstance(tl.get("columns"), list) and isinstance(tl.get("values"), list)):
        return tl
    cols, values, codec = tl["columns"], list(tl["values"]), {}
    if "bytes" in cols and all(type(x) is int for x in values[cols.index("bytes")]):
        values[cols.index("bytes")] = _deltas(values[cols.index("bytes")])
        codec["bytes"] = "deltas"
    if "instruction" in cols and computations:
        at: dict[str, int] = {}
        start = 0
        for comp in computations:  # the first row of a repeated name, which has that name too
            for ii, r in enumerate(comp["instructions"]):
                at.setdefault(r[_NAME], start + ii)
            start += len(comp["instructions"])
        rows = [at.get(n) for n in values[cols.index("instruction")]]
        if None not in rows:
            values[cols.index("instruction")] = _deltas(rows)  # type: ignore[arg-type]
            codec["instruction"] = "row-deltas"
    return dict(tl, values=values, codec=codec) if codec else tl


def _undo_steps_codec(tl: Any, computations: list[dict[str, Any]]) -> Any:
    if not (isinstance(tl, dict) and isinstance(tl.get("codec"), dict)):
        return tl
    out, values = dict(tl), list(tl["values"])
    codec = out.pop("codec")
    names = [r[_NAME] for comp in computations for r in comp["instructions"]]
    for key, how in codec.items():
        k, total, got = tl["columns"].index(key), 0, []
        for d in values[k]:
            total += d
            got.append(names[total] if how == "row-deltas" else total)
        values[k] = got
    out["values"] = values
    return out


def page_data(page: str) -> dict[str, Any]:
    """The data a page written by ``render_html`` was made from, read back from its blocks."""
    found = dict(re.findall(r'<script type="application/json" id="([\w-]+)">(.*?)</script>', page, re.S))
    data = json.loads(found["hloscope-data"])
    for section, key, block in data.pop("lazy", []):
        data[section]["data"][key] = _undo_events_codec(_undo_interned(json.loads(found[block])))
    mem = data.get("memory", {}).get("data")
    if isinstance(mem, dict) and isinstance(mem.get("peak_buffers"), dict):
        peak = _undo_interned(mem["peak_buffers"])
        mem["peak_buffers"] = [dict(zip(peak["columns"], vals)) for vals in zip(*peak["values"])]
    if "row_keys" in data:
        shapes, opcodes, keys = data.pop("shapes"), data.pop("opcodes"), data.pop("row_keys")
        texts, strings = data.pop("texts"), data.pop("strings")

        def string(v: Any) -> Any:
            return None if v == 0 else strings[v - 1] if isinstance(v, int) else v

        heads = data["computations"]
        if isinstance(heads, dict):  # the heads in columns
            data["computations"] = [dict(zip(heads["columns"], vals)) for vals in zip(*heads["values"])]
        lines = found["hloscope-rows"].split("\n")
        for head, line in zip(data["computations"], lines):
            got = json.loads(line)
            for r in got[0]:
                r[_SHAPE], r[_OPCODE] = shapes[r[_SHAPE]], opcodes[r[_OPCODE]]
                r[_OP_NAME], r[_SOURCE] = string(r[_OP_NAME]), string(r[_SOURCE])
                if isinstance(r[_TEXT], int):
                    r[_TEXT] = texts[r[_TEXT]]
            head.pop("count")
            head.update({k: v for k, v in zip(keys, got) if v is not None or k == "instructions"})
    mem = data.get("memory", {}).get("data")
    if isinstance(mem, dict):
        mem["timeline"] = _undo_steps_codec(mem.get("timeline"), data.get("computations") or [])
    return data


def render_html(data: dict[str, Any], ahead: Packed | None = None) -> str:
    """The report page for ``data`` (as made by ``collect_report_data``), as one HTML string;
    ``ahead`` holds blocks made already (``pack_ahead``)."""
    title = str(data.get("title") or data.get("module", {}).get("name") or "HLO module")
    core, blocks = pack_page_data(data, ahead)
    # The Content-Security-Policy forbids every network fetch, so an opened report cannot
    # phone home even if a future asset tried to.
    return _SHELL.format(
        title=html.escape(title),
        css=_asset("report.css"),
        dagre=_vendored_dagre(),
        js="\n".join(_asset(name) for name in PARTS),
        data=json_for_script(core),
        blocks="\n".join(f'<script type="application/json" id="{k}">{_escaped(v)}</script>' for k, v in blocks.items()),
    )
