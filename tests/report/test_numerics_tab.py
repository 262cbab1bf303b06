"""The report's Numerics tab: report/numerics.py's section and assets/numerics.js in a browser."""
from __future__ import annotations

import numpy as np

import hloscope as hs
from hloscope.report import report_html
from hloscope.report.data import collect_report_data
from hloscope.report.numerics import numerics_section
from tests.numerics.test_nonfinite import LOOP, X
from tests.report.browser_util import open_page


def test_section_rows_growth_and_first_nonfinite() -> None:
    sec = numerics_section(hs.parse(LOOP), [X])
    assert sec["status"] == "ok"
    data = sec["data"]
    rows = [dict(zip(data["columns"], r)) for r in data["rows"]]
    f = next(r for r in rows if r["name"] == "f")
    assert f["executions"] == 5 and f["nan"] == 13
    first = data["first_nonfinite"]
    assert first["instruction"]["name"] == "f" and first["fused"]["name"] == "l"
    assert {g["name"] for g in data["growth"]["vanish"]} >= {"x2"}  # x * 0.5


def test_a_mask_written_as_finfo_min_is_not_an_explosion() -> None:
    # The models tier's GPT step masks attention with -3.4e38 (jnp.finfo.min): its Numerics tab
    # listed that select first, "7.3e38 times its operands".
    text = """HloModule mask
masking {
  x = f32[4] parameter(0)
  m = pred[4] compare(x, x), direction=GT
  big = f32[] constant(-3.40282347e+38)
  b = f32[4] broadcast(big), dimensions={}
  ROOT masked = f32[4] select(m, x, b)
}
ENTRY e {
  x = f32[4] parameter(0)
  masked = f32[4] fusion(x), kind=kLoop, calls=masking
  k = f32[] constant(1000)
  kb = f32[4] broadcast(k), dimensions={}
  grown = f32[4] multiply(x, kb)
  ROOT t = (f32[4], f32[4]) tuple(masked, grown)
}"""
    data = numerics_section(hs.parse(text), [np.float32([0.5, 1, 2, 3])])["data"]
    exploding = {g["name"] for g in data["growth"]["explode"]}
    assert "masked" not in exploding and "grown" in exploding


def test_section_on_several_devices_sums_them() -> None:
    data = numerics_section(hs.parse(LOOP), [[X * (d + 1)] for d in range(2)], replicas=2)["data"]
    f = dict(zip(data["columns"], next(r for r in data["rows"] if r[0] == "f")))
    assert f["devices"] == 2 and data["devices"] == 2


def test_a_failing_run_is_a_note_not_a_broken_report() -> None:
    sec = numerics_section(hs.parse(LOOP), [np.ones(3, np.float32)])  # the wrong shape
    assert sec["status"] == "error" and sec["data"] is None


def test_no_inputs_no_tab() -> None:
    assert "numerics" not in collect_report_data(hs.parse(LOOP))
    assert "numerics" in collect_report_data(hs.parse(LOOP), numerics=lambda: numerics_section(hs.parse(LOOP), [X]))


def test_tab_draws_in_a_browser(browser, tmp_path) -> None:
    path = tmp_path / "r.html"
    path.write_text(report_html(hs.parse(LOOP), run_inputs=[X]), encoding="utf-8")
    page, problems, _, _ = open_page(browser, path, "#numerics")
    assert page.locator("#numerics-chart").count() == 1
    assert page.locator("#numerics-table tbody tr").count() >= 8
    assert "made by f (l, log, inside it) in iteration 1 of w" in page.locator("#numerics-first-nonfinite").inner_text()
    page.close()
    assert not problems
