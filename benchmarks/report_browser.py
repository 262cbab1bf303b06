"""The report at LLM scale: how long it takes to build, to become usable, and to answer clicks.

    .venv/bin/python benchmarks/report_browser.py --xla-dir /work/xla_bench [--sizes 1,10] [--runs 3]

For XLA's Llama 3.1 8B step (``hlo_llama31_8b_bf16_1x8.hlo``) and its 10x copy (made as
``benchmarks/scale.py`` makes it: ten renamed copies called one after another), or any
``--hlo FILE``: ``hloscope report`` runs as a child process (wall and CPU seconds), then the
page opens in headless Chromium (Debian's, through Playwright) and each step is timed in the
page itself (``performance.now()`` around the synchronous work of the click):

* ready: navigation start to ``body[data-ready]`` (the page is usable);
* graph: the Graph tab's first picture of the whole program (model, layout and drawing);
* open / close: a top-level group of the graph opened and closed again;
* search: the graph's search box answering a query (Enter: no typing pause);
* tabs: each tab shown (the first time builds it; the figure is the slowest tab);
* timeline zoom, memory zoom: one zoom step each;
* long tasks: the longest task the browser reports (PerformanceObserver "longtask") from
  load to the end, and how many passed 200 ms.

Figures are medians of ``--runs`` page openings; the machine is shared, so the load average
is printed with them.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LLAMA = "hlo_llama31_8b_bf16_1x8.hlo"

# Installed before the page's own script: every long task the browser reports.
LONGTASKS = """
window.__longtasks = [];
try {
  new PerformanceObserver(list => list.getEntries().forEach(e => window.__longtasks.push(e.duration)))
    .observe({type: "longtask", buffered: true});
} catch (e) {}
"""

# One page's interactions, timed inside the page (milliseconds).
INTERACT = """async () => {
  const out = {};
  const click = sel => { const t = performance.now(); document.querySelector(sel).click(); return performance.now() - t; };
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  out.graph = click("nav button[data-tab=graph]");
  await frame();
  const top = hloscopeGraph.items().filter(it => it.depth === 1 && it.kind !== "op");
  const group = top.find(it => !it.open) || top[0];
  out.open = hloscopeGraph.toggle(group.id);
  await frame();
  out.close = hloscopeGraph.toggle(group.id);
  await frame();
  // A person reads the picture before typing: the page makes its search index meanwhile.
  await new Promise(r => setTimeout(r, 800));
  const box = document.getElementById("graph-search");
  box.value = "dot.1";
  let t = performance.now();
  box.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter"}));
  out.search = performance.now() - t;
  await frame();
  out.tabs = {};
  for (const name of ["profile", "timeline", "memory", "collectives", "cost", "text", "overview", "graph"]) {
    out.tabs[name] = click(`nav button[data-tab=${name}]`);
    await frame();
  }
  click("nav button[data-tab=timeline]"); await frame();
  out.timeline_zoom = hloscopeTimeline.zoom(0.5);
  click("nav button[data-tab=memory]"); await frame();
  t = performance.now();
  const v = hloscopeMemory.view();
  hloscopeMemory.zoom(v.v0 + (v.v1 - v.v0) * 0.25, v.v0 + (v.v1 - v.v0) * 0.75);
  out.memory_zoom = performance.now() - t;
  await frame(); await frame();
  out.longest_task = Math.max(0, ...window.__longtasks);
  out.tasks_over_200 = window.__longtasks.filter(d => d > 200).length;
  return out;
}"""


def _scaled(src: Path, k: int, work: Path) -> Path:
    spec = importlib.util.spec_from_file_location("scale", ROOT / "benchmarks" / "scale.py")
    scale = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["scale"] = scale  # its dataclasses look their module up
    spec.loader.exec_module(scale)
    return scale.scaled(src, k, work).path


def build(src: Path, out: Path) -> dict[str, float]:
    """``hloscope report`` as a user runs it, in a child process: wall and CPU seconds."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    started, cpu0 = time.perf_counter(), os.times()
    subprocess.run([sys.executable, "-m", "hloscope", "report", str(src), "-o", str(out)], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cpu1 = os.times()
    return {"wall": time.perf_counter() - started,
            "cpu": (cpu1.children_user - cpu0.children_user) + (cpu1.children_system - cpu0.children_system),
            "mb": out.stat().st_size / 1e6}


def measure_page(page_path: Path, runs: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"])
        for _ in range(runs):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.add_init_script(LONGTASKS)
            page.goto(page_path.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=120_000)
            ready = page.evaluate("performance.now()")
            row = page.evaluate(INTERACT)
            row["ready"] = ready
            row["tab"] = max(row.pop("tabs").values())
            rows.append(row)
            page.close()
        browser.close()
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xla-dir", type=Path, default=Path(os.environ.get("HLOSCOPE_XLA_BENCH", "/work/xla_bench")))
    ap.add_argument("--hlo", type=Path, help="measure this module instead of XLA's Llama step")
    ap.add_argument("--sizes", default="1,10")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "hloscope-report-bench")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    src = args.hlo or args.xla_dir / LLAMA
    if not src.exists():
        print(f"no module at {src} (give --xla-dir or --hlo)", file=sys.stderr)
        return 1
    args.work.mkdir(parents=True, exist_ok=True)
    results = {}
    for k in (int(x) for x in args.sizes.split(",")):
        module = src if k == 1 else _scaled(src, k, args.work)
        page = args.work / f"{module.stem}.html"
        figures = build(module, page)
        figures.update(measure_page(page, args.runs))
        results[f"{k}x"] = figures
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"load": load, "results": results}, indent=1))
        return 0
    print(f"{src.name}; load average {load[0]:.1f} on {os.cpu_count()} cores; medians of {args.runs} page openings")
    cols = [("build wall s", "wall", 1), ("build CPU s", "cpu", 1), ("page MB", "mb", 1), ("ready ms", "ready", 1),
            ("graph ms", "graph", 1), ("open ms", "open", 1), ("close ms", "close", 1), ("search ms", "search", 1),
            ("slowest tab ms", "tab", 1), ("timeline zoom ms", "timeline_zoom", 1), ("memory zoom ms", "memory_zoom", 1),
            ("longest task ms", "longest_task", 1), ("tasks > 200 ms", "tasks_over_200", 1)]
    print(f"{'':18}" + "".join(f"{k:>10}" for k in results))
    for label, key, _ in cols:
        print(f"{label:18}" + "".join(f"{results[k][key]:>10.3g}" if isinstance(results[k][key], float) else f"{results[k][key]:>10}" for k in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
