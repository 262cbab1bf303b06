"""Write the report screenshots shown in docs/report.md and the README (headless Chromium).

    .venv/bin/python docs/make_screenshots.py

Needs the ``playwright`` Python package and ``/usr/bin/chromium``. Each seed's report is written
to a temporary file with its implied hardware (as `hloscope report` does), opened at 1400x900,
and each tab captured once it is drawn.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hloscope  # noqa: E402
from hloscope.report import write_report  # noqa: E402

SEEDS = {"003": "003_83a80cec1e7cc5e6.txt", "004": "004_54e5854892ee064a.txt"}
# Where each graph shot opens: seed 003 at a gemm inside a loop body, coloured by estimated time.
GRAPH = {"003": ("#graph&i=custom-call.93", "time"), "004": ("#graph", "family")}
OUT = ROOT / "docs" / "images"


def main() -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--headless", "--no-sandbox", "--disable-gpu"])
        for seed, name in SEEDS.items():
            page_path = Path(tmp) / f"{seed}.html"
            write_report(hloscope.load(ROOT / "tests" / "data" / "seeds" / name), page_path)
            for tab in ("overview", "memory", "graph"):
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.goto(page_path.as_uri() + (GRAPH[seed][0] if tab == "graph" else "#" + tab))
                page.wait_for_selector("body[data-ready='1']")
                if tab == "graph":
                    page.select_option("#graph-overlay", GRAPH[seed][1])
                    if seed == "004":  # a fusion opened in place
                        page.locator("#graph-svg g.gnode[data-name='fusion.10']").dblclick()
                        page.click("#graph-fit")
                    page.evaluate("window.scrollTo(0, 250)")
                if tab == "memory":
                    hit = page.locator("#memory-chart rect.hit")
                    box = hit.bounding_box()
                    page.mouse.move(box["x"] + box["width"] * 0.62, box["y"] + 40)
                    page.evaluate("window.scrollTo(0, 250)")
                page.wait_for_timeout(300)
                shot = OUT / f"report-{seed}-{tab}.png"
                page.screenshot(path=str(shot))
                page.close()
                print(shot.relative_to(ROOT))
        browser.close()


if __name__ == "__main__":
    main()
