"""Helpers of the report's browser tests: open a page and collect its errors, read its tables."""
from __future__ import annotations

import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


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


def open_page(browser, path: Path, hash: str = "", viewport: tuple[int, int] = (1400, 900), color_scheme: str = "light"):
    """Open ``path`` and wait until the page says it is ready.

    Returns (page, problems, dialogs, seconds): console errors, page errors and network requests
    are collected in ``problems``; any dialog (alert) is dismissed and recorded.
    """
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]}, color_scheme=color_scheme)
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
    page.goto(path.as_uri() + hash)
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    return page, problems, dialogs, time.perf_counter() - started


def cells(page, table_id: str, column: str) -> list[str]:
    """The text of one column of a page table, by its header label."""
    return page.evaluate("""([id, col]) => {
        const t = document.getElementById(id);
        const k = Array.from(t.querySelectorAll("thead th")).findIndex(th => th.textContent.replace(/[▲▼]/g, "").trim() === col);
        return Array.from(t.querySelectorAll("tbody tr")).map(tr => tr.children[k] ? tr.children[k].textContent : "");
    }""", [table_id, column])


def graph_items(page) -> list[dict]:
    """The boxes the Graph tab draws (its canvas has no DOM nodes): id, kind, name, lines,
    open, selected, fill and ink, and where it is on the page (x, y, w, h)."""
    page.wait_for_function("window.hloscopeGraph && hloscopeGraph.items().length > 0", timeout=10_000)
    return page.evaluate("hloscopeGraph.items()")


def graph_item(page, name: str) -> dict | None:
    """The drawn box of an instruction (or group label) ``name``, or None when not drawn."""
    return next((it for it in graph_items(page) if it["name"] == name), None)


def on_item(page, item: dict, dbl: bool = False) -> None:
    """Click (or double-click) the middle of a drawn box (its header, for an open group)."""
    x = item["x"] + min(item["w"] / 2, 40)
    y = item["y"] + (min(8, item["h"] / 2) if item["open"] else item["h"] / 2)
    if dbl:
        page.mouse.dblclick(x, y)
    else:
        page.mouse.click(x, y)
