"""The report in a real browser (headless Debian chromium via Playwright): renders, responds, runs no injected script.

Needs the ``playwright`` Python package and ``/usr/bin/chromium`` (``apt-get install chromium``);
``playwright install`` is not used. Skips with the reason when either is missing.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

import hloscope
from hloscope.report.data import collect_report_data
from hloscope.report.html import render_html
from tests.conftest import MODULE_SEEDS, SEED_FILES

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the Python driver)")
if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
    pytest.skip("no chromium: apt-get install -y chromium", allow_module_level=True)


def with_memory_series(data: dict) -> dict:
    """Give the page a memory series to draw when the memory analysis has none yet.

    The series and live ranges are made up here, in the shape EXPECTED_FIELDS documents, so the
    chart and click-to-list code paths are exercised whatever the analysis provides today.
    """
    mem = data["memory"]
    if mem["status"] != "ok":
        mem.update(status="ok", message="", data={"peak_bytes": 0, "peak_time": 0, "peak_buffers": []})
    m = mem["data"]
    if not any(k in m for k in ("timeline", "series", "memory_over_time")):
        peak = int(m.get("peak_bytes") or 1 << 20)
        m["timeline"] = [{"time": t, "bytes": peak * (1 - abs(t - 30) / 60)} for t in range(61)]
        m["peak_time"] = 30
        m["buffers"] = [{"name": f"synthetic.{i}", "shape": "f32[8]", "size": 32 * (i + 1), "start": i, "end": i + 20}
                        for i in range(40)]
    return data


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    paths = {}
    for seed in MODULE_SEEDS:
        data = with_memory_series(collect_report_data(hloscope.load(SEED_FILES[seed])))
        paths[seed] = out / f"{seed}.html"
        paths[seed].write_text(render_html(data), encoding="utf-8")
    text = SEED_FILES["000"].read_text().replace('op_name="max"', 'op_name="<script>alert(1)</script>"', 1)
    text = text.replace('op_name="add"', 'op_name="</script><img src=x onerror=alert(2)>"', 1)
    paths["injection"] = out / "injection.html"
    paths["injection"].write_text(render_html(collect_report_data(hloscope.parse(text))), encoding="utf-8")
    return paths


def open_page(browser, path: Path):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    dialogs: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: problems.append("network: " + r.url) if not r.url.startswith(("file:", "data:")) else None)

    def on_dialog(d):
        dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", on_dialog)
    started = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    return page, problems, dialogs, time.perf_counter() - started


@pytest.mark.parametrize("seed", MODULE_SEEDS)
def test_report_renders(browser, pages, seed, tmp_path_factory):
    shots = tmp_path_factory.mktemp(f"shots{seed}")
    page, problems, dialogs, _ = open_page(browser, pages[seed])
    page.screenshot(path=str(shots / "overview.png"))
    page.click("nav button[data-tab=memory]")
    assert page.locator("#memory-chart path.area").count() == 1
    assert page.locator("#memory-chart circle.peak").count() == 1
    page.locator("#memory-chart rect.hit").click(position={"x": 400, "y": 100})
    assert page.locator("#tab-memory h2", has_text="Live at time").count() == 1
    page.screenshot(path=str(shots / "memory.png"))
    page.click("nav button[data-tab=graph]")
    nodes = page.locator("#graph-svg g.gnode").count()
    assert 0 < nodes <= 250 and page.locator("#graph-svg path.gedge").count() > 0
    page.screenshot(path=str(shots / "graph.png"))
    # Search finds an instruction, and choosing it shows its details.
    name = hloscope.load(SEED_FILES[seed]).entry.root.name
    page.fill("#graph-search", name)
    hit = page.locator(f"#search-results div[data-name='{name}']")
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
    page, problems, _, _ = open_page(browser, pages["000"])
    page.click("nav button[data-tab=graph]")
    before = page.locator("#graph-svg g.gnode").count()
    page.locator("#graph-svg g.gnode.fusion").first.dblclick()
    assert page.locator("#graph-svg rect.gcluster").count() == 1
    assert page.locator("#graph-svg g.gnode").count() > before
    page.close()
    assert not problems


def test_seed_003_is_interactive_within_3_seconds(browser, pages):
    page, problems, _, load_seconds = open_page(browser, pages["003"])
    started = time.perf_counter()
    page.click("nav button[data-tab=graph]")
    page.wait_for_selector("#graph-svg g.gnode")
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
