"""Browser fixtures shared by the report's browser tests (headless Debian chromium via Playwright).

Needs the ``playwright`` Python package and ``/usr/bin/chromium`` (``apt-get install chromium``);
``playwright install`` is not used. Tests using these fixtures skip with the reason when either
is missing. The pages are written once per session.
"""
from __future__ import annotations

import os
import shutil

import pytest

import hloscope
from hloscope.report.data import collect_report_data
from hloscope.report.html import render_html
from tests.conftest import MODULE_SEEDS, SEED_FILES
from tests.report.browser_util import ARGS, CHROMIUM, analysed


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the Python driver)")
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        pytest.skip("no chromium: apt-get install -y chromium")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def pages(tmp_path_factory):
    """Each module seed's report page, and one with markup injected into its op_names."""
    out = tmp_path_factory.mktemp("reports")
    paths = {}
    for seed in MODULE_SEEDS:
        data = analysed(collect_report_data(hloscope.load(SEED_FILES[seed])))
        paths[seed] = out / f"{seed}.html"
        paths[seed].write_text(render_html(data), encoding="utf-8")
    text = SEED_FILES["000"].read_text().replace('op_name="max"', 'op_name="<script>alert(1)</script>"', 1)
    text = text.replace('op_name="add"', 'op_name="</script><img src=x onerror=alert(2)>"', 1)
    paths["injection"] = out / "injection.html"
    paths["injection"].write_text(render_html(collect_report_data(hloscope.parse(text))), encoding="utf-8")
    return paths
