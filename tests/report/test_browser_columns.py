"""Long lists stay in columns in the page (Note [Rows from columns] in page.js): a tab builds an
object, and a table row, only for what it shows. At 10x Llama the Collectives tab made an object
of each of its 16,470 rows on first show and the Memory tab one of each of 85,000 allocations."""
from __future__ import annotations

import hloscope
from hloscope.report.data import collect_report_data
from hloscope.report.html import page_data, render_html
from tests.report.browser_util import cells, open_page

N = 400


def _many_collectives(tmp_path):
    shapes = [f"f32[{16 * (1 + i % 37)}]" for i in range(N)]
    params = [f"p{i} = {shapes[i]} parameter({i})" for i in range(N)]
    reduces = [f"r{i} = {shapes[i]} all-reduce(p{i}), replica_groups={{}}, to_apply=add" for i in range(N)]
    text = ("HloModule many, replica_count=8\nadd { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }\n"
            "ENTRY e {\n  " + "\n  ".join(params + reduces) + "\n  ROOT t = (" + ", ".join(shapes) + ") tuple("
            + ", ".join(f"r{i}" for i in range(N)) + ")\n}")
    html = render_html(collect_report_data(hloscope.parse(text)))
    path = tmp_path / "many.html"
    path.write_text(html, encoding="utf-8")
    return path, page_data(html)["collectives"]["data"]["collectives"]


def test_collectives_tab_builds_only_the_rows_it_shows(browser, tmp_path):
    path, col = _many_collectives(tmp_path)
    rows = dict(zip(col["columns"], col["values"]))
    assert len(rows["name"]) == N
    page, problems, _, _ = open_page(browser, path, "#collectives")
    table = page.locator("#collectives-table")
    assert table.get_attribute("data-rows") == str(N)
    assert int(table.get_attribute("data-made")) <= 150  # not one object per row
    assert page.locator("#collectives-table tbody tr:not(.more)").count() == 150
    # The order sorting every row would give: est. time, longest first, ties as listed.
    want = sorted(range(N), key=lambda i: -rows["time"][i])[:150]
    assert cells(page, "collectives-table", "instruction")[:150] == [rows["name"][i] for i in want]
    page.locator("#collectives-table th", has_text="payload").click()
    want = sorted(range(N), key=lambda i: -rows["payload_bytes"][i])[:150]
    assert cells(page, "collectives-table", "instruction")[:150] == [rows["name"][i] for i in want]
    assert int(table.get_attribute("data-made")) <= 300
    page.close()
    assert not problems


def test_memory_tab_keeps_the_allocations_in_columns(browser, pages):
    page, problems, _, _ = open_page(browser, pages["004"], "#memory")
    page.wait_for_function("document.getElementById('heap-canvas') && Number(document.getElementById('heap-canvas').getAttribute('data-boxes')) > 0")
    assert page.evaluate("Array.isArray(hloscopeData.memory.data.allocations.columns)")
    page.select_option("#heap-allocations", "temp")
    assert int(page.locator("#heap-canvas").get_attribute("data-boxes")) > 0
    page.close()
    assert not problems
