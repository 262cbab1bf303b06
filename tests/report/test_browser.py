"""The report in a real browser (headless Debian chromium via Playwright): renders, responds, runs no injected script.

Needs the ``playwright`` Python package and ``/usr/bin/chromium`` (``apt-get install chromium``);
``playwright install`` is not used. Skips with the reason when either is missing.
"""
from __future__ import annotations

import time

import pytest

import hloscope
from hloscope.report.data import collect_report_data
from hloscope.report.html import page_data, render_html
from tests.conftest import MODULE_SEEDS, SEED_FILES
from tests.report.browser_util import cells, graph_item, graph_items, on_item, open_page


@pytest.mark.parametrize("seed", MODULE_SEEDS)
def test_report_renders(browser, pages, seed, tmp_path_factory):
    shots = tmp_path_factory.mktemp(f"shots{seed}")
    page, problems, dialogs, _ = open_page(browser, pages[seed])
    page.screenshot(path=str(shots / "overview.png"))
    page.click("nav button[data-tab=memory]")
    assert page.locator("#memory-chart path.area").count() == 1
    assert page.locator("#memory-chart circle.peak").count() == 1
    page.locator("#memory-chart rect.hit").click(position={"x": 400, "y": 100})
    assert page.locator("#tab-memory h2", has_text="Live at step").count() == 1
    page.screenshot(path=str(shots / "memory.png"))
    page.click("nav button[data-tab=graph]")
    boxes = len(graph_items(page))
    assert 0 < boxes <= 250 and page.evaluate("hloscopeGraph.state().stats.edges") > 0
    page.screenshot(path=str(shots / "graph.png"))
    # Search finds an instruction, and choosing it shows its details.
    name = hloscope.load(SEED_FILES[seed]).entry.root.name
    page.fill("#graph-search", name)
    hit = page.locator(f"#search-results div[data-name='{name}']")
    hit.wait_for(timeout=3000)  # the search waits for typing to pause
    assert hit.count() == 1
    hit.click()
    assert page.locator("#graph-details h2", has_text=name).count() == 1
    page.click("nav button[data-tab=text]")
    assert page.locator("#text-code .line").count() > 0
    page.click("nav button[data-tab=cost]")
    page.screenshot(path=str(shots / "cost.png"))
    page.close()
    assert not problems and not dialogs


def test_fusion_expands_on_double_click(browser, pages):
    page, problems, _, _ = open_page(browser, pages["000"], "#graph")
    before = len(graph_items(page))
    fusion = next(it for it in graph_items(page) if it["kind"] == "call" and it["lines"][1].startswith("fusion"))
    on_item(page, fusion, dbl=True)
    after = graph_items(page)
    assert next(it for it in after if it["id"] == fusion["id"])["open"]
    assert len(after) > before
    page.close()
    assert not problems


def test_seed_003_is_interactive_within_3_seconds(browser, pages):
    page, problems, _, load_seconds = open_page(browser, pages["003"])
    started = time.perf_counter()
    page.click("nav button[data-tab=graph]")
    page.wait_for_function("window.hloscopeGraph && hloscopeGraph.items().length > 0")
    page.click("nav button[data-tab=text]")
    page.wait_for_selector("#text-code .line")
    interact_seconds = time.perf_counter() - started
    page.close()
    assert load_seconds < 3.0, f"seed 003's report took {load_seconds:.2f} s to become ready"
    assert interact_seconds < 3.0, f"graph and text views took {interact_seconds:.2f} s"
    assert not problems


def test_injection_runs_no_script(browser, pages):
    page, problems, dialogs, _ = open_page(browser, pages["injection"])
    page.click("nav button[data-tab=text]")
    page.select_option("#text-computation", index=0)
    page.click("nav button[data-tab=graph]")
    page.fill("#graph-search", "maximum")
    page.wait_for_timeout(300)
    assert page.locator("img").count() == 0
    page.close()
    assert not dialogs and not problems


# --- issue 15: each defect, and the new views ---------------------------------------------------

def test_cost_table_lists_loops_with_their_share(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"])
    page.click("nav button[data-tab=cost]")
    names = cells(page, "cost-table", "instruction")
    what = cells(page, "cost-table", "what")
    share = cells(page, "cost-table", "share")
    times = cells(page, "cost-table", "est. time")
    # Sorted by estimated time, seed 003's 64-trip loops (4-6 ms each) come first, with a share.
    assert names[0].startswith("while."), names[:5]
    assert "64 trips" in what[0] and share[0].strip().endswith("%") and times[0].endswith("ms")
    assert sum(n.startswith("while.") for n in names) == 18
    assert cells(page, "cost-table", "FLOPs (all runs)")[0].endswith(" G")  # body × trips, not a dash
    # A gemm inside a loop body has its time (all trips), not a dash.
    k = names.index("custom-call.93")
    assert times[k] != "–" and cells(page, "cost-table", "runs")[k] == "×64"
    page.close()
    assert not problems


def test_flops_figure_says_what_it_counts(browser, pages):
    page, problems, _, _ = open_page(browser, pages["000"])
    fig = page.locator("#fig-flops").inner_text()
    assert "120.53 MFLOP" in fig and "custom calls counted" in fig and "5.71 MFLOP" in fig
    page.close()
    assert not problems


def test_collectives_show_groups_and_time(browser, pages):
    page, problems, _, _ = open_page(browser, pages["000"])
    page.click("nav button[data-tab=collectives]")
    groups = cells(page, "collectives-table", "groups")
    times = cells(page, "collectives-table", "est. time")
    assert groups and all(g.strip().isdigit() for g in groups)
    assert all(t not in ("", "–") for t in times)
    page.close()
    assert not problems


def click_step(page, step: int) -> None:
    hit = page.locator("#memory-chart rect.hit")
    t0, t1 = float(hit.get_attribute("data-t0")), float(hit.get_attribute("data-t1"))
    box = hit.bounding_box()
    hit.click(position={"x": (step - t0 + 0.5) / (t1 - t0) * box["width"], "y": box["height"] / 2})


def test_live_set_keeps_tuple_indices(browser, pages):
    page, problems, _, _ = open_page(browser, pages["000"])
    page.click("nav button[data-tab=memory]")
    click_step(page, 33)
    assert page.locator("#live-set h2", has_text="Live at step 33").count() == 1
    names = [n.replace(" graph", "") for n in page.locator("#live-set td:first-child").all_inner_texts()]
    assert len(names) == len(set(names)), "two live buffers shown under one name"
    assert any(n.startswith("all-reduce") and n.endswith("}") for n in names)
    page.close()
    assert not problems


@pytest.mark.parametrize("seed", MODULE_SEEDS)
def test_memory_chart_peak_is_its_maximum_and_keeps_its_shape(browser, pages, seed):
    page, problems, _, _ = open_page(browser, pages[seed])
    page.click("nav button[data-tab=memory]")
    chart = page.locator("#memory-chart")
    assert chart.get_attribute("preserveAspectRatio") in (None, "xMidYMid meet")
    ticks = page.locator("#memory-chart line.tick").count()
    assert ticks >= 4, "the x axis shows only its ends"
    data = page_data(pages[seed].read_text(encoding="utf-8"))["memory"]["data"]
    # Hovering names the instruction at that step.
    box = page.locator("#memory-chart rect.hit").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 10)
    assert "live" in page.locator("#memory-readout").inner_text()
    marker = int(float(page.locator("#memory-chart circle.peak").get_attribute("data-bytes")))
    page.close()
    assert not problems
    tl = data["timeline"]  # columns in the page (Note [Compact memory rows])
    top = max(tl["values"][tl["columns"].index("bytes")]) if isinstance(tl, dict) else max(p["bytes"] for p in tl)
    assert marker == data["peak_bytes"] == top


def inside(a: dict, b: dict, slack: float = 1.0) -> bool:
    """Whether box a lies within box b (page coordinates)."""
    return (a["x"] >= b["x"] - slack and a["y"] >= b["y"] - slack and a["x"] + a["w"] <= b["x"] + b["w"] + slack
            and a["y"] + a["h"] <= b["y"] + b["h"] + slack)


def overlaps(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["w"] - 1 and b["x"] < a["x"] + a["w"] - 1 and a["y"] < b["y"] + b["h"] - 1 and b["y"] < a["y"] + a["h"] - 1


def test_expanded_fusion_box_covers_only_its_nodes(browser, pages):
    page, problems, _, _ = open_page(browser, pages["000"], "#graph&i=fusion.9")
    box = graph_item(page, "fusion.9")
    page.evaluate(f"hloscopeGraph.toggle({box['id']!r})")
    items = graph_items(page)
    box = next(it for it in items if it["id"] == box["id"])
    mine = [it for it in items if it["id"].startswith(box["id"] + "/")]
    others = [it for it in items if not it["id"].startswith(box["id"]) and not box["id"].startswith(it["id"] + "/")]
    assert box["open"] and len(mine) > 1
    assert all(inside(it, box) for it in mine)
    assert not [it["name"] for it in others if overlaps(it, box) and not it["open"]]
    page.close()
    assert not problems


def all_boxes_inside(page) -> bool:
    s = page.locator("#graph-canvas").bounding_box()
    return all(inside(it, {"x": s["x"], "y": s["y"], "w": s["width"], "h": s["height"]}) for it in graph_items(page))


def test_fit_fits_a_wide_graph(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#graph")
    page.click("#graph-expand-all")
    assert len(graph_items(page)) > 1000
    page.click("#graph-fit")
    assert all_boxes_inside(page)
    page.close()
    assert not problems


@pytest.mark.parametrize("query", ["custom-call", "cublas", "f32[12,10]", "spmd_update", "exp"])
def test_search_finds_opcode_op_name_shape_and_target(browser, pages, query):
    page, problems, _, _ = open_page(browser, pages["000"])
    page.click("nav button[data-tab=graph]")
    page.fill("#graph-search", query)
    hit = page.locator("#search-results div.hit").first
    hit.wait_for(timeout=3000)
    name = hit.get_attribute("data-name")
    hit.click()
    b = next(it for it in graph_items(page) if it["selected"])
    s = page.locator("#graph-canvas").bounding_box()
    assert b["name"] == name
    # Centred: the node's middle is near the view's middle.
    assert abs(b["x"] + b["w"] / 2 - (s["x"] + s["width"] / 2)) < 40
    assert abs(b["y"] + b["h"] / 2 - (s["y"] + s["height"] / 2)) < 40
    assert f"i={name}" in page.evaluate("location.hash")
    page.close()
    assert not problems


def test_closing_a_group_hides_its_nodes(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#graph")
    group = next(it for it in graph_items(page) if it["open"] and it["kind"] in ("ns", "auto"))
    members = [it for it in graph_items(page) if it["id"].startswith(group["id"] + "/")]
    assert len(members) > 1
    on_item(page, group, dbl=True)
    assert not [it for it in graph_items(page) if it["id"].startswith(group["id"] + "/")]
    closed = next(it for it in graph_items(page) if it["id"] == group["id"])
    assert not closed["open"] and closed["lines"][0].startswith("▸")
    on_item(page, closed, dbl=True)
    assert len([it for it in graph_items(page) if it["id"].startswith(group["id"] + "/")]) == len(members)
    page.close()
    assert not problems


def test_overview_answers_where_the_time_goes(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"])
    assert page.locator("#time-split i").count() == 4
    assert "h100-sxm assumed, as the module was compiled for a GPU" in page.locator("#implied-hardware").inner_text()
    steps = page.locator("#top-steps tbody tr").all_inner_texts()
    assert steps and "64 trips" in steps[0]
    page.locator("#top-steps tbody tr").first.locator("span.link", has_text="body").click()
    opened = next(it for it in graph_items(page) if it["selected"])  # the loop, opened on its body
    assert opened["name"].startswith("while") and opened["open"]
    assert any(it["id"].startswith(opened["id"] + "/") and "body" in it["name"] for it in graph_items(page))
    assert page.locator("#op-profile tbody tr").count() > 1
    page.close()
    assert not problems


def test_links_keep_tab_and_instruction(browser, pages):
    page, problems, _, _ = open_page(browser, pages["000"], "#graph&i=fusion.9")
    assert page.locator("#graph-details h2", has_text="fusion.9").count() == 1
    page.click("nav button[data-tab=memory]")
    assert page.evaluate("location.hash") == "#memory"
    page.close()
    assert not problems


def test_page_and_cli_format_numbers_alike(browser, pages):
    from hloscope.cli.common import format_bytes, format_count, format_seconds

    page, problems, _, _ = open_page(browser, pages["000"])
    values = [0, 1, 1023, 1024, 1536, 6.38e9, 2**30 * 5.94, 12345678, 999.5, 1e12 * 3.3]
    seconds = [2.5, 0.0973, 5.853e-3, 4e-6, 1.2e-7, 1.0, 0.001]
    got = page.evaluate("([v, s]) => [v.map(hloscopeFormat.bytes), v.map(hloscopeFormat.count), s.map(hloscopeFormat.seconds)]",
                        [values, seconds])
    assert got == [[format_bytes(v) for v in values], [format_count(v) for v in values], [format_seconds(v) for v in seconds]]
    page.close()
    assert not problems


def test_big_module_text_and_graph_stay_responsive(browser, tmp_path):
    """20,000 instructions in one computation: the Text view builds only the lines in sight."""
    n = 20_000
    lines = ["HloModule big", "ENTRY e {", "  p = f32[64] parameter(0)", "  a0 = f32[64] add(p, p)"]
    lines += [f"  a{k} = f32[64] {'multiply' if k % 3 else 'add'}(a{k - 1}, p)" for k in range(1, n)]
    lines += [f"  ROOT r = f32[64] negate(a{n - 1})", "}"]
    path = tmp_path / "big.html"
    path.write_text(render_html(collect_report_data(hloscope.parse("\n".join(lines)), hardware="cpu")), encoding="utf-8")
    page, problems, _, load_seconds = open_page(browser, path)
    started = time.perf_counter()
    page.click("nav button[data-tab=text]")
    page.wait_for_selector("#text-code .line")
    text_seconds = time.perf_counter() - started
    assert page.locator("#text-code .line").count() < 200
    page.evaluate("document.getElementById('text-code').scrollTop = 19 * 15000")
    page.wait_for_selector("#L0_15000")
    started = time.perf_counter()
    page.click("nav button[data-tab=graph]")
    page.wait_for_function("window.hloscopeGraph && hloscopeGraph.items().length > 0")
    graph_seconds = time.perf_counter() - started
    page.close()
    assert not problems
    assert load_seconds < 5 and text_seconds < 1 and graph_seconds < 1.5, (load_seconds, text_seconds, graph_seconds)


def test_fusions_open_nested(browser, pages):
    """A fusion inside an opened fusion opens too, its box inside its parent's."""
    page, problems, _, _ = open_page(browser, pages["004"], "#graph")
    on_item(page, graph_item(page, "fusion.10"), dbl=True)
    on_item(page, graph_item(page, "fusion.18"), dbl=True)
    outer, inner = graph_item(page, "fusion.10"), graph_item(page, "fusion.18")
    assert outer["open"] and inner["open"] and inside(inner, outer)
    assert inner["x"] > outer["x"] and inner["y"] > outer["y"]
    assert len([it for it in graph_items(page) if it["id"].startswith(inner["id"] + "/")]) > 1
    page.close()
    assert not problems


def test_buffer_assignment_dump_page(browser, tmp_path):
    from hloscope.report.data import collect_dump_data
    from hloscope.text.buffer_assignment_dump import load_buffer_assignment

    path = tmp_path / "dump.html"
    ba = load_buffer_assignment(SEED_FILES["002"])
    path.write_text(render_html(collect_dump_data(ba)), encoding="utf-8")
    page, problems, _, _ = open_page(browser, path)
    assert page.locator("nav button").all_inner_texts() == ["Buffers"]
    assert page.locator("#dump-peak-table tbody tr").count() == len(ba.peak_buffers)
    assert "1.66 MiB" in page.locator("#figures").inner_text()
    page.close()
    assert not problems


@pytest.mark.parametrize("overlay", ["time", "bytes", "peak", "util"])
def test_overlays_colour_nodes_by_figure(browser, pages, overlay):
    page, problems, _, _ = open_page(browser, pages["000"], "#graph")
    page.select_option("#graph-overlay", overlay)
    fills = {it["fill"] for it in graph_items(page) if it["fill"]}
    assert len(fills) >= 2, "every node has the same colour"
    page.close()
    assert not problems


def test_namespaces_nest_and_open_one_level_at_a_time(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#graph&i=custom-call.93")
    items = graph_items(page)
    chain = [it for it in items if it["open"] and it["kind"] == "ns"]
    assert chain, "custom-call.93 is inside no op_name namespace"
    page.click("#graph-collapse-all")
    top = [it for it in graph_items(page) if it["kind"] in ("ns", "auto")]
    assert top and not any(it["open"] for it in top)
    group = next(it for it in top if it["kind"] in ("ns", "auto") and not it["open"])
    on_item(page, group, dbl=True)
    inner = [it for it in graph_items(page) if it["id"].startswith(group["id"] + "/")]
    assert inner and not any(it["open"] for it in inner), "opening a group opens one level"
    page.close()
    assert not problems
