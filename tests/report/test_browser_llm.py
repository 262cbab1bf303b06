"""The report on XLA's Llama 3.1 8B step (31,855 instructions, no op_names) in a real browser.

Skipped when XLA's benchmark modules are absent (``HLOSCOPE_XLA_BENCH`` or ``.cache/xla_bench``;
they are XLA's files, never committed). The page budgets of issue 26 are wall-clock figures of a
quiet machine (``benchmarks/report_browser.py`` measures them, docs/report.md has the figures);
this machine is shared by several test runs, so the bounds here are a few times looser, and the
build is measured in CPU seconds, which a busy machine disturbs far less.
"""
from __future__ import annotations

import time

import pytest

import hloscope
from hloscope.report.data import collect_report_data
from hloscope.report.html import render_html
from hloscope.testing.models import xla_bench_dir
from tests.report.browser_util import graph_items, open_page

LLAMA = "hlo_llama31_8b_bf16_1x8.hlo"
PEAK_STEP = 11802


@pytest.fixture(scope="module")
def llama_page(tmp_path_factory):
    bench = xla_bench_dir()
    if bench is None or not (bench / LLAMA).exists():
        pytest.skip(f"XLA's {LLAMA} is not here (set HLOSCOPE_XLA_BENCH)")
    cpu = time.process_time()
    html = render_html(collect_report_data(hloscope.load(bench / LLAMA), hardware="h100-sxm"))
    seconds = time.process_time() - cpu
    path = tmp_path_factory.mktemp("llama") / "llama.html"
    path.write_text(html, encoding="utf-8")
    return path, seconds


def test_llama_report_builds_in_under_6_cpu_seconds(llama_page):
    assert llama_page[1] < 6.0, f"{llama_page[1]:.2f} s"


def test_llama_peak_step_can_be_clicked(browser, llama_page):
    page, problems, _, _ = open_page(browser, llama_page[0], "#memory")
    marker = page.locator("#memory-chart circle.peak")
    assert marker.get_attribute("data-time") == str(PEAK_STEP)
    marker.click()
    assert page.locator("#live-set h2").inner_text().startswith(f"Live at step {PEAK_STEP} ")
    c = marker.bounding_box()  # the curve right under the marker: its pixel's largest step
    page.mouse.click(c["x"] + c["width"] / 2, c["y"] + 40)
    assert page.locator("#live-set h2").inner_text().startswith(f"Live at step {PEAK_STEP} ")
    page.close()
    assert not problems


def test_llama_whole_program_is_one_readable_picture(browser, llama_page):
    page, problems, _, _ = open_page(browser, llama_page[0], "#graph")
    top = [it for it in graph_items(page) if it["depth"] == 1]
    names = [it["name"] for it in top]
    blocks = [n for n in names if n.startswith("block ")]
    assert len(blocks) == 64 and "parameters" in names  # 32 layers forward, 32 backward
    assert sum(it["count"] for it in top) == 23113  # the whole entry computation
    assert page.evaluate("hloscopeGraph.state().scale") >= 0.4
    page.close()
    assert not problems


def test_llama_interactions_stay_fast(browser, llama_page):
    page, problems, _, load = open_page(browser, llama_page[0])
    ms = page.evaluate("""async () => {
        const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
        const out = {};
        let t = performance.now(); document.querySelector("nav button[data-tab=graph]").click(); out.graph = performance.now() - t;
        await frame();
        const group = hloscopeGraph.items().find(it => it.depth === 1 && !it.open && it.kind !== "op");
        out.open = hloscopeGraph.toggle(group.id); await frame();
        out.close = hloscopeGraph.toggle(group.id); await frame();
        const box = document.getElementById("graph-search"); box.value = "all-reduce.51";
        t = performance.now(); box.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter"})); out.search = performance.now() - t;
        await frame();
        t = performance.now(); document.querySelector("nav button[data-tab=timeline]").click(); out.timeline = performance.now() - t;
        await frame();
        out.zoom = hloscopeTimeline.zoom(0.5);
        t = performance.now(); document.querySelector("nav button[data-tab=overview]").click(); out.tab = performance.now() - t;
        await frame();
        t = performance.now(); document.querySelector("nav button[data-tab=memory]").click(); out.memory = performance.now() - t;
        await frame();
        const v = hloscopeMemory.view();
        t = performance.now(); hloscopeMemory.zoom(v.v0 + (v.v1 - v.v0) * 0.25, v.v0 + (v.v1 - v.v0) * 0.75); out.memzoom = performance.now() - t;
        return out;
    }""")
    page.close()
    assert not problems
    assert load < 10 and ms["graph"] < 3000, (load, ms)  # budgets: 1 s each, quiet machine
    assert max(ms["open"], ms["close"], ms["search"], ms["zoom"], ms["tab"], ms["memory"], ms["memzoom"]) < 500, ms  # budget 100 ms


def test_llama_background_work_and_memory_tab_make_no_long_task(browser, llama_page):
    """Note [Work in slices] and Note [Series as columns]: after start-up, the page's own work
    (the rows nobody read yet, the graph's search index) and the Memory tab's first show (its
    31,000-step curve and heap) each stay under 200 ms on a quiet machine, so no click waits
    behind them; 500 ms here, as the interactions' bound, where other test runs share the
    cores (480 ms seen under load; the search index built in one piece was a 248 ms task)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.add_init_script("""window.__tasks = [];
        new PerformanceObserver(l => l.getEntries().forEach(e => window.__tasks.push([e.startTime, e.duration])))
            .observe({type: "longtask", buffered: true});""")
    page.goto(llama_page[0].as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    ready = page.evaluate("performance.now()")
    page.evaluate("document.querySelector('nav button[data-tab=graph]').click()")  # starts the search index
    page.wait_for_function("hloscopeData.computations.every(c => Object.prototype.hasOwnProperty.call(c, 'instructions'))",
                           timeout=30_000)
    page.wait_for_timeout(1000)  # the search index's last slices
    page.evaluate("document.querySelector('nav button[data-tab=memory]').click()")
    page.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 100)))")  # the heap's frame
    tasks = page.evaluate("window.__tasks")
    page.close()
    after_ready = [round(d) for start, d in tasks if start + d > ready]
    assert max(after_ready, default=0) < 500, after_ready  # budget 200 ms, quiet machine


def _llama_data(llama_page):
    from hloscope.report.html import page_data

    return page_data(llama_page[0].read_text(encoding="utf-8"))


def test_llama_timeline_rows_from_python_never_overlap(browser, llama_page):
    """Note [Timeline rows]: the rows Python lists hold every interval, each row's intervals in
    start order in the event list and none overlapping the next; the page draws those rows."""
    tl = _llama_data(llama_page)["timeline"]["data"]
    ev, rows = tl["events"], tl["rows"]
    assert tl["rows_in_start_order"] and rows == sorted(rows)
    by_row: dict[tuple[int, int], list[int]] = {tuple(r): [] for r in rows}
    for j, key in enumerate(zip(ev["lane"], ev["depth"])):
        by_row[key].append(j)
    assert sum(len(js) for js in by_row.values()) == len(ev["ci"]) == 21163
    for js in by_row.values():
        for a, b in zip(js, js[1:]):
            assert ev["start"][a] <= ev["start"][b] and ev["end"][a] <= ev["start"][b] + 1e-3, (a, b)
    page, problems, _, _ = open_page(browser, llama_page[0], "#timeline")
    note = page.locator("#timeline-note").inner_text()
    page.close()
    assert note.startswith(f"{len(rows)} rows, 21163 intervals"), note
    assert not problems


def test_llama_header_collective_payload_is_the_collectives_tab_sum(browser, llama_page):
    """One quantity: the header's figure is the analysis's total, the sum of payload × runs over
    the rows the Collectives tab lists."""
    from hloscope.cli.common import format_bytes

    col = _llama_data(llama_page)["collectives"]["data"]
    rows = dict(zip(col["collectives"]["columns"], col["collectives"]["values"]))
    total = sum(p * c for p, c in zip(rows["payload_bytes"], rows["count"]))
    assert total == col["totals"]["payload_bytes"] > 0
    page, problems, _, _ = open_page(browser, llama_page[0], "#collectives")
    header = page.locator("#fig-collectives .v").inner_text()
    listed = page.locator("#collectives-table tbody tr:not(.more)").count()
    page.close()
    assert header == format_bytes(total)
    assert listed == min(150, len(rows["name"])) and not problems


def test_llama_peak_instruction_is_hloscope_memorys(browser, llama_page):
    """The Overview names the peak's instruction as `hloscope memory` does, and both are the
    memory curve's instruction at the peak step."""
    import os
    import subprocess
    import sys

    from hloscope.analysis.memory.report import analyze_memory

    bench = xla_bench_dir()
    r = analyze_memory(hloscope.load(bench / LLAMA))
    assert r.peak_time == PEAK_STEP and r.peak_instruction == r.timeline[r.peak_time].instruction
    cli = subprocess.run([sys.executable, "-m", "hloscope", "memory", str(bench / LLAMA)], capture_output=True,
                         text=True, check=True, env={**os.environ, "COLUMNS": "200"}).stdout
    assert f"at step {PEAK_STEP} of {r.schedule_end_time} ({r.peak_instruction})" in cli
    page, problems, _, _ = open_page(browser, llama_page[0], "#overview")
    glance = page.locator("#memory-glance p").first.inner_text()
    page.close()
    assert f"at schedule step {PEAK_STEP} ({r.peak_instruction})" in glance and not problems
