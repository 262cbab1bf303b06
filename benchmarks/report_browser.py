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

The steps start as soon as the page is ready, while it still parses rows and builds the
search index in slices (Note [Work in slices] in page.js): what a quick person meets.
``--settle S`` waits S seconds first, for the figures of a page that has finished that work.

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

# Each step runs as its own call into the page and returns its wall time there (ms); the
# benchmark also reads the CPU time Chromium's processes spent meanwhile (Note [CPU time of a
# step]), which a busy shared machine disturbs far less than wall time.
STEPS = [
    ("graph", """() => { const t = performance.now(); document.querySelector("nav button[data-tab=graph]").click(); return performance.now() - t; }"""),
    ("open", """() => { const g = hloscopeGraph.items().find(it => it.depth === 1 && !it.open && it.kind !== "op"); window.__g = g.id; return hloscopeGraph.toggle(g.id); }"""),
    ("close", """() => hloscopeGraph.toggle(window.__g)"""),
    # A person reads the picture before typing: the page makes its search index meanwhile.
    ("search", """async () => { await new Promise(r => setTimeout(r, 800)); const box = document.getElementById("graph-search"); box.value = "dot.1";
        const t = performance.now(); box.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter"})); return performance.now() - t; }"""),
] + [(f"tab {name}", f"""() => {{ const t = performance.now(); document.querySelector("nav button[data-tab={name}]").click(); return performance.now() - t; }}""")
     for name in ("profile", "timeline", "memory", "collectives", "cost", "text", "overview", "graph")] + [
    ("timeline zoom", """() => { document.querySelector("nav button[data-tab=timeline]").click(); return hloscopeTimeline.zoom(0.5); }"""),
    ("memory zoom", """() => { document.querySelector("nav button[data-tab=memory]").click(); const v = hloscopeMemory.view(), t = performance.now();
        hloscopeMemory.zoom(v.v0 + (v.v1 - v.v0) * 0.25, v.v0 + (v.v1 - v.v0) * 0.75); return performance.now() - t; }"""),
]
# Note [CPU time of a step]
#     Chromium's work for a step runs in its renderer (and a little in the browser and GPU
#     processes): the CPU seconds of every process descending from this one, read from
#     /proc before and after the step, are that work whatever else the machine runs.


def _descendants_cpu() -> float:
    """CPU seconds (user + system) of every live process below this one (Linux /proc)."""
    parent, cpu = {}, {}
    tick = os.sysconf("SC_CLK_TCK")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fields = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)] = int(fields[1])
        cpu[int(d)] = (int(fields[11]) + int(fields[12])) / tick
    me, total = os.getpid(), 0.0
    for pid in cpu:
        p, seen = pid, 0
        while p in parent and p != me and seen < 64:
            p, seen = parent[p], seen + 1
        if p == me and pid != me:
            total += cpu[pid]
    return total


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


def measure_page(page_path: Path, runs: int, settle: float = 0.0) -> dict[str, float]:
    """Median wall ms (in the page) and CPU ms (Chromium's processes) of each step."""
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"])
        for _ in range(runs):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.add_init_script(LONGTASKS)
            cpu0 = _descendants_cpu()
            page.goto(page_path.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=120_000)
            row = {"ready": page.evaluate("performance.now()"), "ready cpu": 1e3 * (_descendants_cpu() - cpu0)}
            if settle:
                page.wait_for_timeout(settle * 1000)
            for name, js in STEPS:
                cpu0 = _descendants_cpu()
                row[name] = page.evaluate(js)
                page.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))")
                row[name + " cpu"] = 1e3 * (_descendants_cpu() - cpu0)
            row["longest task"] = page.evaluate("Math.max(0, ...window.__longtasks)")
            row["tasks > 200 ms"] = page.evaluate("window.__longtasks.filter(d => d > 200).length")
            tabs = [k for k in row if k.startswith("tab ") and not k.endswith(" cpu")]
            row["slowest tab"] = max(row[k] for k in tabs)
            row["slowest tab cpu"] = max(row[k + " cpu"] for k in tabs)
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
    ap.add_argument("--settle", type=float, default=0.0, help="seconds to wait after ready before the steps")
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
        figures.update(measure_page(page, args.runs, args.settle))
        results[f"{k}x"] = figures
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"load": load, "results": results}, indent=1))
        return 0
    print(f"{src.name}; load average {load[0]:.1f} on {os.cpu_count()} cores; medians of {args.runs} page openings"
          + (f", steps {args.settle:g} s after ready" if args.settle else ", steps right after ready"))
    print("wall ms in the page (CPU ms of Chromium's processes)")
    keys = ["ready", "graph", "open", "close", "search", "slowest tab", "timeline zoom", "memory zoom"]
    print(f"{'':18}" + "".join(f"{k:>22}" for k in results))
    for label, key in (("build wall s", "wall"), ("build CPU s", "cpu"), ("page MB", "mb")):
        print(f"{label:18}" + "".join(f"{results[k][key]:>22.3g}" for k in results))
    for key in keys:
        print(f"{key:18}" + "".join(f"{results[k][key]:>12.0f} ({results[k][key + ' cpu']:>6.0f})" for k in results))
    for key in ("longest task", "tasks > 200 ms"):
        print(f"{key:18}" + "".join(f"{results[k][key]:>22.0f}" for k in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
