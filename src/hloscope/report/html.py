"""Render report data (``report/data.py``) as one self-contained HTML page: no network, opens from disk.

The page is a fixed shell plus inlined parts: the stylesheet and the script parts (``PARTS``) from ``assets/`` (with
the vendored dagre layout library ahead of the script, see ``assets/VENDORED.md``) and the data
as a ``<script type="application/json">`` block. The script builds everything else
in the browser.

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
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["render_html", "json_for_script", "PARTS"]


def json_for_script(obj: Any) -> str:
    """``obj`` as JSON that is safe inside a ``<script>`` element (see Note [Escaping untrusted text])."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str, allow_nan=False)
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


def render_html(data: dict[str, Any]) -> str:
    """The report page for ``data`` (as made by ``collect_report_data``), as one HTML string."""
    title = str(data.get("title") or data.get("module", {}).get("name") or "HLO module")
    # The Content-Security-Policy forbids every network fetch, so an opened report cannot
    # phone home even if a future asset tried to.
    return _SHELL.format(
        title=html.escape(title),
        css=_asset("report.css"),
        dagre=_vendored_dagre(),
        js="\n".join(_asset(name) for name in PARTS),
        data=json_for_script(data),
    )
