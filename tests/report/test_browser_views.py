"""Issue 26's views in a real browser: the whole-program graph, the op profile, the timeline and
the memory view (zoom, brush, the peak's own step, the heap, live buffers grouped)."""
from __future__ import annotations

import json
import re

import pytest

import hloscope
from hloscope.analysis.cost import analyze_cost
from hloscope.analysis.hardware import load_hardware
from hloscope.analysis.profile import analyze_profile
from hloscope.analysis.timing import estimate_time
from hloscope.cli.main import main
from hloscope.report.data import collect_report_data
from hloscope.report.html import render_html
from tests.conftest import SEED_FILES
from tests.report.browser_util import cells, graph_item, graph_items, open_page

PEAK_STEPS = {"000": 33, "004": 12}  # the live-range peaks' own steps (Note [One peak])


# --- memory ------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", sorted(PEAK_STEPS))
def test_clicking_the_peak_gives_the_peak_step(browser, pages, seed):
    page, problems, _, _ = open_page(browser, pages[seed], "#memory")
    page.locator("#memory-chart circle.peak").click()
    assert page.locator("#live-set h2").inner_text().startswith(f"Live at step {PEAK_STEPS[seed]} ")
    # and clicking the curve right where the marker is gives the same step, not the one before
    c = page.locator("#memory-chart circle.peak").bounding_box()
    page.mouse.click(c["x"] + c["width"] / 2, c["y"] + 30)
    assert page.locator("#live-set h2").inner_text().startswith(f"Live at step {PEAK_STEPS[seed]} ")
    page.close()
    assert not problems


def test_brushing_zooms_the_curve_and_the_heap(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#memory")
    hit = page.locator("#memory-chart rect.hit").bounding_box()
    before = page.evaluate("hloscopeMemory.view()")
    page.mouse.move(hit["x"] + hit["width"] * 0.4, hit["y"] + 50)
    page.mouse.down()
    page.mouse.move(hit["x"] + hit["width"] * 0.6, hit["y"] + 60, steps=4)
    page.mouse.up()
    after = page.evaluate("hloscopeMemory.view()")
    assert after["v1"] - after["v0"] < 0.3 * (before["v1"] - before["v0"])
    assert int(page.locator("#heap-canvas").get_attribute("data-boxes")) > 0
    page.locator("#memory-chart rect.hit").dblclick()
    assert page.evaluate("hloscopeMemory.view()") == before
    page.close()
    assert not problems


def test_heap_shows_each_buffer_at_its_offset(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#memory")
    canvas = page.locator("#heap-canvas")
    assert int(canvas.get_attribute("data-boxes")) > 500  # those at least a third of a pixel tall
    page.select_option("#heap-allocations", "temp")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    text = ""
    for fx in (0.3, 0.45, 0.55, 0.7):
        for fy in (0.2, 0.4, 0.6, 0.8):
            page.mouse.move(box["x"] + box["width"] * fx, box["y"] + box["height"] * fy)
            text = page.locator("#heap-readout").inner_text()
            if "at offset" in text:
                break
        if "at offset" in text:
            break
    assert re.search(r"at offset .* of allocation \d+ \((preallocated-)?temp", text), text
    page.close()
    assert not problems


def test_live_buffers_group_by_op_name_and_source_line(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#memory&t=1244")
    assert page.locator("#live-set h2").inner_text().startswith("Live at step 1244 ")
    page.select_option("#live-group-by", "source")
    sources = cells(page, "live-groups", "source line")
    assert any(s.endswith(".py:182") for s in sources) and len(sources) == len(set(sources))
    page.select_option("#live-group-by", "op_name")
    assert any("scatter-add" in s for s in cells(page, "live-groups", "op_name"))
    page.close()
    assert not problems


def test_chips_say_which_memory_spaces_they_count(browser, pages):
    page, problems, _, _ = open_page(browser, pages["004"], "#memory")
    chips = page.locator("#tab-memory .memfigs").inner_text()
    page.close()
    assert "total allocated, S(0) and S(1), S(2)" in chips and "live-range peak, S(0)" in chips
    assert not problems


def test_a_tpu_scalar_takes_its_tile(browser, pages):
    page, problems, _, _ = open_page(browser, pages["004"], "#memory")
    page.select_option("#peak-group-by", "")
    names = cells(page, "peak-table", "buffer") if page.locator("#peak-table").count() else []
    rows = page.evaluate("""() => { const b = JSON.parse(document.getElementById('hloscope-memory-buffers').textContent);
        const c = k => b.values[b.columns.indexOf(k)];
        return c("name").map((n, i) => [n, c("bytes")[i]]).filter(r => r[0] === 'p0.1').map(r => r[1]); }""")
    page.close()
    assert rows == [512], names
    assert not problems


# --- the whole-program graph -------------------------------------------------------------------

def test_graph_shows_the_whole_program_in_few_boxes(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#graph")
    items = graph_items(page)
    top = [it for it in items if it["depth"] == 1]
    entry = page.evaluate("hloscopeData.computations.find(c => c.is_entry).instructions.length")
    assert len(top) <= 30 and sum(it["count"] for it in top) == entry  # every instruction, in few boxes
    assert len(items) <= 120 and page.evaluate("hloscopeGraph.state().scale") >= 0.25  # "fit" stays readable
    page.close()
    assert not problems


def flat_layers(layers: int = 12, per_layer: int = 9) -> str:
    """A module without op_names, as XLA's Llama step: repeated layers of dot + elementwise."""
    lines = ["HloModule flat", "ENTRY e {", "  x0 = f32[64,64] parameter(0)"]
    lines += [f"  w{k} = f32[64,64] parameter({k + 1})" for k in range(layers)]
    for k in range(layers):
        lines.append(f"  d{k} = f32[64,64] dot(x{k}, w{k}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}")
        prev = f"d{k}"
        for j in range(per_layer):
            lines.append(f"  e{k}_{j} = f32[64,64] {'tanh' if j % 2 else 'negate'}({prev})")
            prev = f"e{k}_{j}"
        lines.append(f"  x{k + 1} = f32[64,64] add({prev}, x{k})")
    lines += [f"  ROOT r = f32[64,64] copy(x{layers})", "}"]
    return "\n".join(lines)


def test_a_module_without_op_names_is_grouped_in_repeating_blocks(browser, tmp_path):
    path = tmp_path / "flat.html"
    path.write_text(render_html(collect_report_data(hloscope.parse(flat_layers(layers=60)), hardware="cpu")), encoding="utf-8")
    page, problems, _, _ = open_page(browser, path, "#graph")
    names = [it["name"] for it in graph_items(page) if it["depth"] == 1]
    page.close()
    assert "parameters" in names
    assert sum(bool(re.fullmatch(r"block \d+ of 6[01]", n)) for n in names) >= 55, names  # one per layer
    assert not problems


def test_namespace_labels_keep_what_tells_siblings_apart(browser, tmp_path):
    long = "jit(f)/transformer_block_with_a_long_name/attention_projection_layer"
    lines = ["HloModule ns", "ENTRY e {", "  p = f32[8] parameter(0)"]
    prev = "p"
    for k, body in enumerate([f"{long}/scan/while/body"] * 20 + [f"{long}/scan/while/cond"] * 20 + ["jit(f)/other"] * 20):
        lines.append(f'  n{k} = f32[8] negate({prev}), metadata={{op_name="{body}/neg"}}')
        prev = f"n{k}"
    lines += [f"  ROOT r = f32[8] copy({prev})", "}"]
    path = tmp_path / "ns.html"
    path.write_text(render_html(collect_report_data(hloscope.parse("\n".join(lines)), hardware="cpu")), encoding="utf-8")
    page, problems, _, _ = open_page(browser, path, "#graph")
    page.click("#graph-expand-all")
    labels = [it["name"] for it in graph_items(page) if it["kind"] == "ns"]
    page.close()
    # the shared "jit(f)" is dropped; a long chain keeps its end, the part that differs
    assert "other" in labels and "body" in labels and "cond" in labels, labels
    top = next(lb for lb in labels if lb.endswith("scan/while"))
    assert top.startswith("…/") and len(top) <= 40, top
    assert not problems


@pytest.mark.parametrize("overlay", ["time", "bytes", "util", "peak"])
def test_every_colouring_has_a_legend_of_absolute_values(browser, pages, overlay):
    page, problems, _, _ = open_page(browser, pages["003"], "#graph")
    page.select_option("#graph-overlay", overlay)
    ticks = page.locator("#graph-legend .ramp-ticks span").all_inner_texts()
    page.close()
    assert len(ticks) == 5
    unit = {"time": r"(s|ms|µs|ns)$", "bytes": r"(B|KiB|MiB|GiB)$", "util": r"%$", "peak": r"(B|KiB|MiB|GiB)$"}[overlay]
    assert all(re.search(unit, t) for t in ticks), ticks
    assert not problems


def contrast(fg: str, bg: str) -> float:
    def lum(h: str) -> float:
        c = [int(h[k:k + 2], 16) / 255 for k in (1, 3, 5)]
        c = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    a, b = sorted((lum(fg), lum(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


@pytest.mark.parametrize("overlay", ["family", "time", "bytes", "util"])
def test_text_on_every_box_colour_is_readable(browser, pages, overlay):
    page, problems, _, _ = open_page(browser, pages["003"], "#graph")
    page.select_option("#graph-overlay", overlay)
    page.click("#graph-expand-all")
    boxes = [it for it in graph_items(page) if it["fill"] and it["fill"].startswith("#")]
    page.close()
    worst = min(min(contrast(it["ink"][0], it["fill"]), contrast(it["ink"][1], it["fill"])) for it in boxes)
    assert worst >= 4.5, worst
    assert not problems


def test_get_tuple_element_shows_its_index(browser, pages):
    page, problems, _, _ = open_page(browser, pages["004"], "#graph&i=get-tuple-element.29")
    node = graph_item(page, "get-tuple-element.29")
    details = page.locator("#graph-details").inner_text()
    page.close()
    assert "get-tuple-element {0}" in node["lines"][1]
    assert "tuple index\n0" in details
    assert not problems


def test_search_finds_an_opened_fusion_and_its_computation(browser, pages):
    page, problems, _, _ = open_page(browser, pages["000"], "#graph&i=fusion.9")
    page.evaluate(f"hloscopeGraph.toggle({graph_item(page, 'fusion.9')['id']!r})")
    for query in ("fusion.9", "fused_computation.9"):
        page.fill("#graph-search", query)
        hit = page.locator("#search-results div.hit[data-name='fusion.9']")
        hit.wait_for(timeout=3000)
        hit.click()
        chosen = next(it for it in graph_items(page) if it["selected"])
        assert chosen["name"] == "fusion.9" and chosen["open"], query
    page.close()
    assert not problems


def test_the_minimap_moves_the_view(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#graph")
    page.click("#graph-expand-all")
    page.evaluate("hloscopeGraph.fit()")
    canvas = page.locator("#graph-canvas").bounding_box()
    page.mouse.move(canvas["x"] + canvas["width"] / 2, canvas["y"] + canvas["height"] / 2)
    for _ in range(6):
        page.mouse.wheel(0, -400)
    before = page.evaluate("hloscopeGraph.items().find(it => it.depth === 1)")
    mini = page.locator("#graph-minimap").bounding_box()
    page.mouse.click(mini["x"] + mini["width"] * 0.9, mini["y"] + mini["height"] * 0.9)
    after = page.evaluate("hloscopeGraph.items().find(it => it.depth === 1)")
    page.close()
    assert (before["x"], before["y"]) != (after["x"], after["y"])
    assert not problems


# --- the op profile ------------------------------------------------------------------------------

def test_profile_page_cli_and_json_agree(browser, pages, capsys):
    assert main(["profile", str(SEED_FILES["003"]), "--hardware", "h100-sxm", "--json", "--top", "0"]) == 0
    cli = json.loads(capsys.readouterr().out)
    m = hloscope.load(SEED_FILES["003"])
    hw = load_hardware("h100-sxm")
    cost = analyze_cost(m)
    api = analyze_profile(m, estimate_time(m, hw, cost_report=cost), cost, hw).to_json()
    page, problems, _, _ = open_page(browser, pages["003"], "#profile")
    data = page.evaluate("hloscopeData.profile.data")
    shown = cells(page, "profile-table", "est. time")
    fmt = page.evaluate("cli => cli.categories.map(r => hloscopeFormat.seconds(r.seconds))", cli)
    page.close()
    for key in ("categories", "advice", "step_seconds", "op_seconds"):
        assert cli[key] == api[key] == data[key], key
    assert shown == fmt
    assert not problems


def test_what_to_fix_first_marks_its_operations_in_the_graph(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"])
    items = page.locator("#fix-first li")
    assert items.count() >= 2
    words = items.all_inner_texts()
    assert any("Exposed communication" in w for w in words) and any("bound" in w for w in words)
    items.first.locator("button").click()
    marked = [it for it in graph_items(page) if it["marked"]]
    page.close()
    assert len(marked) >= 3
    assert not problems


def test_profile_is_useful_without_op_names(browser, tmp_path):
    path = tmp_path / "flat.html"
    path.write_text(render_html(collect_report_data(hloscope.parse(flat_layers()), hardware="h100-sxm")), encoding="utf-8")
    page, problems, _, _ = open_page(browser, path, "#profile")
    cats = cells(page, "profile-table", "category / opcode / instruction")
    page.click("#tab-profile button[data-view=op_name]")
    note = page.locator("#op-name-profile").inner_text()
    page.close()
    assert any("matmul" in c for c in cats) and any("elementwise" in c for c in cats)
    assert "No instruction of this module has an op_name" in note
    assert not problems


# --- the timeline --------------------------------------------------------------------------------

def test_timeline_unrolls_and_folds_loops(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#timeline")
    rows = {(lane, depth): n for lane, depth, n in page.evaluate("hloscopeTimeline.view().rows")}
    assert rows[("compute", 1)] == 16704 and ("collectives", 0) in rows  # 18 loops × 64 trips of their bodies
    page.select_option("#timeline-loops", "folded")
    folded = {(lane, depth): n for lane, depth, n in page.evaluate("hloscopeTimeline.view().rows")}
    assert folded[("compute", 1)] == 261
    assert "loops=folded" in page.evaluate("location.hash")
    page.close()
    assert not problems


def test_timeline_is_the_trace_estimate_writes(browser, pages, tmp_path):
    from hloscope.analysis.trace import unrolled_events

    m = hloscope.load(SEED_FILES["003"])
    events, _ = unrolled_events(estimate_time(m, load_hardware("h100-sxm")))
    trace = tmp_path / "t.json"
    assert main(["estimate", str(SEED_FILES["003"]), "--hardware", "h100-sxm", "--trace", str(trace), "--json"]) == 0
    spans = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    page, problems, _, _ = open_page(browser, pages["003"], "#timeline")
    drawn = sum(n for _, _, n in page.evaluate("hloscopeTimeline.view().rows"))
    page.close()
    assert drawn == len(events) == len(spans)
    assert not problems


def test_timeline_click_shows_details_and_links(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#timeline")
    page.evaluate("hloscopeTimeline.show(0, 1.2e7)")
    x, y = page.evaluate("hloscopeTimeline.where('while.45')")
    page.mouse.click(x, y)
    assert page.locator("#timeline-details h2").inner_text() == "while.45"
    assert "64" in page.locator("#timeline-details").inner_text()
    ms = page.evaluate("hloscopeTimeline.zoom(0.5)")
    page.locator("#timeline-details button", has_text="show in graph").click()
    chosen = next(it for it in graph_items(page) if it["selected"])
    page.close()
    assert chosen["name"] == "while.45"
    assert ms < 100, ms
    assert not problems


def test_exposed_communication_is_drawn(browser, pages):
    page, problems, _, _ = open_page(browser, pages["000"], "#timeline")
    data = page.evaluate("hloscopeData.timeline.data")
    page.close()
    assert data["exposed"] and "collectives" in data["lanes"]
    assert not problems
