"""Issue 26's defects found in the browser, one test each (each failed before its fix).

The graph's own defects (a get-tuple-element's index, search in an opened fusion) are in
``test_browser_graph.py`` with the whole-program graph they are drawn in.
"""
from __future__ import annotations

import pytest

import hloscope
from hloscope.report.data import collect_report_data
from hloscope.report.html import render_html
from tests.report.browser_util import cells, open_page


def test_a_malformed_link_does_not_blank_the_page(browser, pages):
    page, problems, _, _ = open_page(browser, pages["000"], "#graph&i=fusion%2")
    assert page.locator("nav button").count() >= 5
    assert "could not be read" in page.locator("#flash").inner_text()
    page.close()
    assert not problems


def test_a_link_to_an_unknown_instruction_says_so(browser, pages):
    page, problems, _, _ = open_page(browser, pages["000"], "#graph&i=no.such.instruction")
    assert "no instruction named “no.such.instruction”" in page.locator("#flash").inner_text()
    page.close()
    assert not problems


def search_hits(page, query: str) -> list[list[str]]:
    """(name, where) of each hit of the graph's search box."""
    page.fill("#graph-search", query)
    page.locator("#search-results > div").first.wait_for(timeout=3000)
    return page.eval_on_selector_all("#search-results div.hit", "hs => hs.map(h => [h.dataset.name, h.dataset.computation])")


@pytest.mark.parametrize("query", ["T(8,128)S(1)", "S(1)", "{:T(128)}"])
def test_search_finds_layouts_and_memory_spaces(browser, pages, query):
    page, problems, _, _ = open_page(browser, pages["004"], "#graph")
    hits = search_hits(page, query)
    page.close()
    assert hits, f"no hit for {query}"
    assert not problems


def test_search_ranks_the_entry_before_fused_parameters(browser, pages):
    page, problems, _, _ = open_page(browser, pages["000"], "#graph")
    hits = search_hits(page, "parameter")
    page.close()
    assert hits[0][1].startswith("pmap_"), hits[:5]  # the entry computation's parameters first
    assert not problems


def test_text_tab_finds_lines_out_of_sight(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#text")
    rows = page.evaluate("hloscopeData.computations.find(c => c.is_entry).instructions.length")
    assert rows > 500
    page.fill("#text-search", "tuple.803")
    page.press("#text-search", "Enter")
    line = page.locator("#text-code .line.hl")
    line.wait_for(timeout=3000)
    assert "tuple.803" in line.inner_text()
    assert line.is_visible() and "of" in page.locator("#text-search-count").inner_text()
    page.close()
    assert not problems


def test_collectives_show_their_replica_groups(browser, pages, tmp_path):
    page, problems, _, _ = open_page(browser, pages["000"], "#collectives")
    assert cells(page, "collectives-table", "replica groups")[0] == "{{0,1,2,3,4,5,6,7}}"
    page.close()
    text = """HloModule iota, replica_count=8
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e { p = f32[16] parameter(0)  ROOT r = f32[16] all-reduce(p), replica_groups=[1,8]<=[8], to_apply=add }"""
    path = tmp_path / "iota.html"
    path.write_text(render_html(collect_report_data(hloscope.parse(text))), encoding="utf-8")
    page, more, _, _ = open_page(browser, path, "#collectives")
    assert cells(page, "collectives-table", "replica groups")[0] == "[1,8]<=[8]"
    page.close()
    assert not problems and not more


def test_op_names_break_only_after_slashes(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#cost", viewport=(1000, 800))
    breaks = page.evaluate("""() => {
        const out = [];
        document.querySelectorAll("#cost-table td.wrap").forEach(td => {
            const text = td.textContent, range = document.createRange();
            const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
            let prevTop = null, prevChar = "", n;
            while ((n = walker.nextNode())) for (let i = 0; i < n.length; i++) {
                range.setStart(n, i); range.setEnd(n, i + 1);
                const r = range.getClientRects()[0];
                if (!r) continue;
                if (prevTop !== null && r.top > prevTop + 2) out.push(prevChar + "|" + n.data[i]);
                prevTop = r.top; prevChar = n.data[i];
            }
        });
        return out;
    }""")
    page.close()
    assert breaks, "no op_name wrapped at this width"
    bad = [b for b in breaks if b[0] not in "/:, "]
    assert len(bad) <= len(breaks) // 20, bad[:10]  # only tokens longer than the column break elsewhere
    assert not problems


def test_header_leaves_the_graph_most_of_a_small_screen(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], "#graph", viewport=(1280, 720))
    header = page.locator("header").bounding_box()["height"]
    canvas = page.locator("#graph-canvas").bounding_box()
    visible = min(canvas["y"] + canvas["height"], 720) - max(canvas["y"], 0)
    page.close()
    assert header <= 140, header
    assert visible >= 440, visible
    assert not problems


def test_hottest_operations_are_not_clipped(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], viewport=(1440, 900))
    clipped = page.evaluate("""() => Array.from(document.querySelectorAll("#top-ops .scroll, #top-steps .scroll"))
        .map(s => s.scrollWidth - s.clientWidth)""")
    page.close()
    assert clipped and max(clipped) <= 1, clipped
    assert not problems


def test_page_follows_the_dark_setting(browser, pages):
    page, problems, _, _ = open_page(browser, pages["003"], color_scheme="dark")
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    rgb = [int(x) for x in bg[bg.index("(") + 1:bg.index(")")].split(",")[:3]]
    page.close()
    assert sum(rgb) < 3 * 60, bg
    assert not problems


def test_one_list_when_the_entry_has_no_loops(browser, pages):
    page, problems, _, _ = open_page(browser, pages["000"])
    lists = [cells(page, k, "instruction") for k in ("top-steps", "top-ops") if page.locator(f"#{k}").count()]
    page.close()
    assert len(lists) == 1 or lists[0] != lists[1], lists
    assert not problems


def test_seed_001_terms_that_add_to_the_step_are_not_more(browser, pages):
    page, problems, _, _ = open_page(browser, pages["001"])
    note = page.locator("#terms-note").inner_text()
    step = page.locator("#fig-time .v").inner_text()
    page.close()
    assert "more than" not in note or step not in note.split("more than")[0].split("add to")[-1], note
    assert not problems


def test_link_keeps_memory_space_and_step(browser, pages):
    page, problems, _, _ = open_page(browser, pages["004"], "#memory")
    page.click("#memory-spaces button[data-space='1']")
    assert "space=1" in page.evaluate("location.hash")
    page.evaluate("window.hloscopeMemory.pick(5)")
    link = page.evaluate("location.hash")
    assert "t=5" in link and "space=1" in link
    page.close()
    page, more, _, _ = open_page(browser, pages["004"], link)
    assert page.locator("#live-set h2", has_text="Live at step 5").count() == 1
    assert "S(1)" in page.locator("#memory-spaces button.active").inner_text()
    page.close()
    assert not problems and not more
