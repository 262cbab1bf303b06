"""Helpers of the report's browser tests: open a page and collect its errors, read its tables."""
from __future__ import annotations

import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def analysed(data: dict) -> dict:
    """The report's data as the analyses made it: every section ok, the memory section with its
    own timeline and live ranges (nothing is made up for the page to draw)."""
    for name in ("summary", "cost", "memory", "collectives", "timing"):
        assert data[name]["status"] == "ok", (name, data[name]["message"])
    mem = data["memory"]["data"]
    assert mem["timeline"] and mem["buffers"]
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
