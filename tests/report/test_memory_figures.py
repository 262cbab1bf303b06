"""The memory figures are computed once and shown alike by ``memory`` (table and ``--json``), the
report's data and its page: hloscope's live-range peak and XLA's ``peak_memory_in_bytes``, each
under its own name (Note [peak_memory_in_bytes] in analysis/memory/xla_peak.py), and the note
that explains a live-range peak above the bytes allocated."""
from __future__ import annotations

import json

import pytest

import hloscope
from hloscope.cli.main import main
from hloscope.report.data import collect_report_data
from hloscope.report.html import render_html
from hloscope.testing.models import build
from tests.report.browser_util import open_page

# A step writes its result over an operand it reads last, while the parameter is live too: the
# live-range peak (three buffers at step 2) exceeds the two allocations XLA:CPU makes.
IN_PLACE = """HloModule in_place, entry_computation_layout={(f32[1024]{0})->f32[1024]{0}}

ENTRY e {
  p = f32[1024]{0} parameter(0)
  a = f32[1024]{0} exponential(p)
  b = f32[1024]{0} add(a, p)
  ROOT c = f32[1024]{0} multiply(b, p)
}
"""


@pytest.fixture(scope="module", params=["in_place", "gpt_dp8"])
def module_file(request, tmp_path_factory):
    if request.param == "gpt_dp8":
        return build("gpt_dp8").path / "post.hlo"
    path = tmp_path_factory.mktemp("mem") / "in_place.hlo"
    path.write_text(IN_PLACE)
    return path


def test_the_in_place_module_peaks_above_what_is_allocated() -> None:
    r = hloscope.memory(hloscope.parse(IN_PLACE))
    assert (r.peak_bytes, r.total_bytes, r.peak_counted_twice_bytes) == (12288, 8192, 4096)
    assert r.xla_peak_memory.bytes == 8192  # the parameter and the output: XLA:CPU's figure
    assert "exceeds the 8192 bytes allocated" in r.peak_note()


def test_cli_json_and_page_agree(module_file, browser, capsys, tmp_path):
    assert main(["memory", "--json", str(module_file)]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert main(["memory", "--top", "1", str(module_file)]) == 0
    table = capsys.readouterr().out
    data = collect_report_data(hloscope.load(module_file))
    assert data["memory"]["status"] == "ok"
    mem = data["memory"]["data"]
    xp = cli["xla_peak_memory"]
    for key in ("peak_bytes", "peak_label", "peak_note", "total_bytes", "xla_peak_memory", "xla_live_range_peak"):
        assert cli[key] == mem[key], key
    assert xp["bytes"] is not None and xp["label"].startswith("XLA:CPU peak_memory_in_bytes")
    # The table names each peak as the JSON does, with the same bytes.
    assert f"{cli['peak_label']}, at step {cli['peak_time']}" in table
    assert f"{cli['peak_bytes']:,}" in table and f"{xp['bytes']:,}" in table and xp["label"] in table
    if cli["peak_note"]:
        assert cli["peak_note"] in table.replace("\n", " ")
    # The page shows the same numbers under the same names.
    page_path = tmp_path / "r.html"
    page_path.write_text(render_html(data), encoding="utf-8")
    page, problems, _, _ = open_page(browser, page_path)
    page.click("nav button[data-tab=memory]")
    chips = {c.get_attribute("data-figure"): (c.get_attribute("data-bytes"), c.locator("span").inner_text())
             for c in page.locator("#tab-memory .memfigs .mf[data-figure]").all()}
    note = page.locator("#peak-note")
    shown_note = note.inner_text() if note.count() else ""
    page.close()
    assert not problems
    assert chips["peak"] == (str(cli["peak_bytes"]), cli["peak_label"])
    assert chips["xla-peak-memory"] == (str(xp["bytes"]), xp["label"])
    assert chips["total"][0] == str(cli["total_bytes"])
    assert chips["xla-live-range-peak"][0] == str(cli["xla_live_range_peak"]["bytes"])
    assert shown_note == cli["peak_note"]
    if cli["peak_bytes"] > cli["total_bytes"]:
        assert shown_note, "a peak above the bytes allocated is explained on the page"
