"""Write the report screenshots shown in docs/report.md and the README (headless Chromium).

    .venv/bin/python docs/make_screenshots.py [--xla-dir /work/xla_bench] [--only 003]

Needs the ``playwright`` Python package and ``/usr/bin/chromium``. Each module's report is
written to a temporary file with its implied hardware (as `hloscope report` does), opened at
1400x900, and every tab captured once it is drawn: seeds 003 (GPU) and 004 (TPU), and XLA's
Llama 3.1 8B step when ``--xla-dir`` holds it (it is not in the repository).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import hloscope  # noqa: E402
from hloscope.report import write_report  # noqa: E402

SEEDS = {"003": ROOT / "tests" / "data" / "seeds" / "003_83a80cec1e7cc5e6.txt",
         "004": ROOT / "tests" / "data" / "seeds" / "004_54e5854892ee064a.txt"}
LLAMA = "hlo_llama31_8b_bf16_1x8.hlo"
TABS = ("overview", "graph", "profile", "timeline", "memory", "collectives", "cost", "text")
# Where a tab opens and what is done before the shot, per module.
SETUP = {
    ("003", "graph"): ("#graph&colour=time", None),
    ("003", "timeline"): ("#timeline", "hloscopeTimeline.show(0, 1.3e7)"),
    ("003", "memory"): ("#memory&t=1244", "window.scrollTo(0, 330)"),
    ("003", "text"): ("#text&i=custom-call.93", None),
    ("004", "graph"): ("#graph", "hloscopeGraph.toggle(hloscopeGraph.items().find(i => i.name === 'fusion.10').id)"),
    ("004", "memory"): ("#memory&space=1&t=7", "window.scrollTo(0, 330)"),
    ("llama", "graph"): ("#graph&colour=time", None),
    ("llama", "memory"): ("#memory&t=11802", "window.scrollTo(0, 330)"),
}
# XLA's Llama step is a GPU module (Transformer Engine custom calls): estimated on the H100
# profile, as `hloscope report --hardware h100-sxm` does.
HARDWARE = {"llama": "h100-sxm"}
OUT = ROOT / "docs" / "images"


def modules(xla_dir: Path | None) -> dict[str, Path]:
    found = dict(SEEDS)
    if xla_dir is not None and (xla_dir / LLAMA).exists():
        found["llama"] = xla_dir / LLAMA
    return found


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xla-dir", type=Path, default=Path(os.environ.get("HLOSCOPE_XLA_BENCH", "/work/xla_bench")))
    ap.add_argument("--only", help="one module: 003, 004 or llama")
    ap.add_argument("--tabs", default=",".join(TABS))
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--headless", "--no-sandbox", "--disable-gpu"])
        for key, src in modules(args.xla_dir).items():
            if args.only and key != args.only:
                continue
            page_path = Path(tmp) / f"{key}.html"
            write_report(hloscope.load(src), page_path, hardware=HARDWARE.get(key))
            for tab in args.tabs.split(","):
                hash_, prepare = SETUP.get((key, tab), ("#" + tab, None))
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.goto(page_path.as_uri() + hash_)
                page.wait_for_selector("body[data-ready='1']", timeout=120_000)
                if prepare:
                    page.evaluate(prepare)
                page.wait_for_timeout(400)
                shot = OUT / f"report-{key}-{tab}.png"
                page.screenshot(path=str(shot))
                page.close()
                print(shot.relative_to(ROOT))
        browser.close()


if __name__ == "__main__":
    main()
