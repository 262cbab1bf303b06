"""The HTML report: written for every seed, self-contained, escaped, robust to failing analyses."""
from __future__ import annotations

import json
import re
import shutil

import pytest

import hloscope
from hloscope.cli.main import main
from hloscope.errors import InputError
from hloscope.report import report_html, write_report
from hloscope.report.data import collect_report_data
from hloscope.report.html import json_for_script, page_data, render_html
from tests.conftest import MODULE_SEEDS, SEED_FILES

INJECTION = "<script>alert(1)</script>"
URL_ATTR = re.compile(r"""\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


def data_block(page: str) -> dict:
    assert '<script type="application/json" id="hloscope-data">' in page, "the data block is missing"
    return page_data(page)


def injection_module() -> hloscope.Module:
    """Seed 000 with a <script> op_name (and one that tries to close the data block)."""
    text = SEED_FILES["000"].read_text()
    text = text.replace('op_name="max"', f'op_name="{INJECTION}"', 1)
    text = text.replace('op_name="add"', 'op_name="</script><img src=x onerror=alert(2)>"', 1)
    return hloscope.parse(text)


@pytest.fixture(scope="module")
def modules():
    return {s: hloscope.load(SEED_FILES[s]) for s in MODULE_SEEDS}


@pytest.mark.parametrize("seed", MODULE_SEEDS)
def test_report_is_written_and_self_contained(seed, modules, tmp_path):
    out = tmp_path / f"{seed}.html"
    assert write_report(modules[seed], out) == str(out)
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert not URL_ATTR.search(page), "the page must not load anything from the network"
    assert "<link" not in page
    # Only our script elements: the data blocks (Note [Lazy page data]) and the inlined script.
    blocks = page.count('<script type="application/json" id="hloscope-')
    assert page.count("<script") == blocks + 1 and blocks >= 2
    data = data_block(page)
    assert data["module"]["name"] == modules[seed].name
    assert sum(len(c["instructions"]) for c in data["computations"]) == modules[seed].instruction_count
    # Every analysis runs on every seed: a failure is a failure, not an "error" section.
    for name in ("summary", "cost", "memory", "collectives", "timing"):
        assert data[name]["status"] == "ok", (name, data[name]["message"])
        assert data[name]["data"] is not None


def test_injected_op_name_stays_text():
    page = report_html(injection_module())
    blocks = page.count('<script type="application/json" id="hloscope-')  # Note [Lazy page data]
    assert page.count("<script") == page.count("</script>") == blocks + 1
    assert INJECTION not in page and "<img" not in page
    data = data_block(page)
    op_names = [r[data["columns"].index("op_name")] for c in data["computations"] for r in c["instructions"]]
    assert INJECTION in op_names  # the text survives, escaped, for the page to show as text
    assert ".innerHTML" not in page and "insertAdjacentHTML" not in page  # DOM via textContent only


def test_json_for_script_escapes_markup():
    text = json_for_script({"a": "</script><!-- & \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028"}


def test_failing_analysis_becomes_a_note(modules, monkeypatch):
    import hloscope.analysis.summary as summary

    def boom(module):
        raise RuntimeError("deliberate failure")

    monkeypatch.setattr(summary, "summarize", boom)
    data = collect_report_data(modules["001"])
    assert data["summary"]["status"] == "error"
    assert "deliberate failure" in data["summary"]["message"]
    assert "deliberate failure" in render_html(data)


def test_missing_analysis_is_unavailable(modules, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "hloscope.analysis.collectives", None)  # import fails
    data = collect_report_data(modules["004"])
    assert data["collectives"]["status"] == "unavailable"
    assert "hloscope.analysis.collectives" in data["collectives"]["message"]
    # No hardware given: the profile the module implies (TPU layouts here), named on the page.
    assert data["timing"]["status"] == "ok"
    assert data["timing"]["data"]["hardware"] == "tpu-v5p" and "TPU" in data["timing"]["data"]["implied"]


def test_the_memory_analysis_runs_once(modules, monkeypatch):
    # The time estimate on a CPU needs the buffer assignment (page faults): it takes the memory
    # section's, not a second analysis (half the report's time on an LLM step).
    import hloscope.analysis.cpu_model as cpu_model
    import hloscope.analysis.memory.report as memory_report

    calls = []
    real = memory_report.analyze_memory

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(memory_report, "analyze_memory", counted)
    monkeypatch.setattr(cpu_model, "analyze_memory", counted)
    data = collect_report_data(modules["001"], hardware="cpu")
    assert data["memory"]["status"] == data["timing"]["status"] == "ok"
    assert len(calls) == 1


def test_refuses_to_overwrite_the_input(tmp_path):
    src = tmp_path / "m.txt"
    shutil.copy(SEED_FILES["004"], src)
    module = hloscope.load(src)
    with pytest.raises(InputError):
        write_report(module, src)
    assert src.read_text() == SEED_FILES["004"].read_text()


def test_repr_html_is_compact_and_escaped(modules):
    html = modules["003"]._repr_html_()
    assert modules["003"].name in html and len(html) < 20_000
    assert "<script" not in html


def test_cli_report(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(SEED_FILES["001"]), "-o", str(out)]) == 0
    assert str(out.resolve()) in capsys.readouterr().out
    assert data_block(out.read_text())["module"]["name"] == "func_shard_parallel__1.68"


def test_cli_report_without_file_uses_the_example(tmp_path, capsys):
    out = tmp_path / "example.html"
    assert main(["report", "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out and out.exists()


def test_cli_report_refuses_input_as_output(tmp_path, capsys):
    src = tmp_path / "m.txt"
    shutil.copy(SEED_FILES["004"], src)
    assert main(["report", str(src), "-o", str(src)]) == 1
    assert "refusing" in capsys.readouterr().err


def test_memory_columns_are_the_analysis_rows():
    """Note [Compact memory rows]: the page's columns hold exactly the analysis's rows."""
    from hloscope.analysis.memory.report import analyze_memory

    m = hloscope.load(SEED_FILES["004"])
    page = collect_report_data(m)["memory"]["data"]
    mine = analyze_memory(m).to_json()
    for key in ("timeline", "buffers", "allocations"):
        cols = page[key]
        rows = [dict(zip(cols["columns"], vals)) for vals in zip(*cols["values"])]
        if "index" in cols:  # a column that only counted its rows
            rows = [{cols["index"]: k, **r} for k, r in enumerate(rows)]
        assert rows == mine[key], key
    assert page["timeline"].get("index") == "time"
    assert page["memory_spaces"]["0"]["timeline"] is None and page["memory_spaces"]["1"]["timeline"]
    assert page["memory_spaces"]["0"]["peak_buffers"] is None and page["memory_spaces"]["1"]["peak_buffers"]
    assert mine["memory_spaces"]["0"]["peak_buffers"] == page["peak_buffers"]


def test_instruction_text_is_cut_only_where_the_row_rebuilds_it():
    """Note [Compact instruction text]: [layout, rest] put back as the page does gives the
    printed line, character for character; the rest of the lines stay whole."""
    from hloscope.ir.print_options import PrintOptions
    from hloscope.ir.printer import instruction_to_text

    options = PrintOptions(metadata=False, stack_frames=False)  # the page's text, as data.py prints it

    m = hloscope.load(SEED_FILES["003"])
    data = collect_report_data(m)
    cols = {c: k for k, c in enumerate(data["columns"])}
    cut = 0
    for comp, page in zip(m.computations, data["computations"]):
        rows = page["instructions"]
        for inst, r in zip(comp.instructions, rows):
            t = r[cols["text"]]
            assert r[cols["family"]] == 0 and data["families"][r[cols["opcode"]]] == inst.opcode.family.value
            if isinstance(t, list):
                cut += 1
                names = ", ".join(rows[k][cols["name"]] for k in r[cols["operands"]])
                t = f"{r[cols['name']]} = {r[cols['shape']]}{t[0]} {r[cols['opcode']]}({names}{t[1]}"
            assert t == instruction_to_text(inst, options)
    assert cut > 0.7 * m.instruction_count


@pytest.mark.parametrize("seed", ["003", "004"])
def test_page_blocks_read_back_into_the_data(seed):
    """Note [Lazy page data]: the page's blocks hold the data exactly, long lists and rows apart."""
    data = collect_report_data(hloscope.load(SEED_FILES[seed]))
    page = render_html(data)
    back = page_data(page)
    for want, got in zip(data["computations"], back["computations"]):  # Note [Page encoding]
        seconds = got.pop("seconds")
        assert [x is None for x in seconds] == [x is None for x in want["seconds"]]
        assert [x for x in seconds if x is not None] == pytest.approx([x for x in want["seconds"] if x is not None], rel=5e-4)
        assert not any(isinstance(x, float) and len(repr(x)) > 10 for x in seconds)
    assert json.loads(json.dumps({**data, "computations": [{k: v for k, v in c.items() if k != "seconds"}
                                                          for c in data["computations"]]})) == back
    assert back["timeline"]["data"]["events"] == data["timeline"]["data"]["events"]  # exactly
    steps = json.loads(re.search(r'id="hloscope-memory-timeline">(.*?)</script>', page, re.S).group(1))
    assert steps["codec"] == {"bytes": "deltas", "instruction": "row-deltas"}  # and back exactly, above
    interned = 0
    for block in re.findall(r'id="hloscope-(?:memory|collectives)-\w+">(.*?)</script>', page, re.S):
        for c in json.loads(block).get("values") or []:  # few distinct strings are written once
            assert not (isinstance(c, list) and len(c) >= 64 and all(isinstance(v, str) for v in c) and 4 * len(set(c)) <= len(c))
            interned += isinstance(c, dict)
    assert interned > 0 or seed != "003"  # seed 003: its 579 allocations' kinds, among others
    main_block = re.search(r'id="hloscope-data">(.*?)</script>', page, re.S).group(1)
    assert len(main_block) < 0.5 * len(page)  # the rows and long lists are blocks of their own
    heads = json.loads(main_block)["computations"]  # the heads in columns, no rows among them
    assert "name" in heads["columns"] and "instructions" not in heads["columns"]


def test_timeline_intervals_carry_their_kind():
    """Note [Interval kinds]: each interval's category and whether it is a loop or call come
    with it, as its row says, so the Timeline tab colours intervals without reading rows."""
    data = collect_report_data(hloscope.load(SEED_FILES["003"]))
    ev, comps = data["timeline"]["data"]["events"], data["computations"]
    for ci, ii, kind in zip(ev["ci"], ev["ii"], ev["kind"], strict=True):
        opcode, cat = comps[ci]["instructions"][ii][1], comps[ci]["category"][ii]
        assert kind == 3 * (cat + 1) + {"while": 1, "call": 2, "conditional": 2}.get(opcode, 0)
    assert {k % 3 for k in ev["kind"]} == {0, 1} and min(ev["kind"]) < 3  # seed 003 has loops, and rows without a category


# A call with one operand too few: the memory analysis fails on it.
INVALID_CALL = """HloModule m
two {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  ROOT c = f32[4] add(a, b)
}
ENTRY e {
  x = f32[4] parameter(0)
  ROOT y = f32[4] call(x), to_apply=two
}"""


def test_a_failing_section_says_when_the_module_does_not_verify():
    # The section says why in the module's terms, not only in Python's.
    data = collect_report_data(hloscope.parse(INVALID_CALL), jobs=1)
    failed = {k: v["message"] for k, v in data.items() if isinstance(v, dict) and v.get("status") == "error"}
    assert failed
    for message in failed.values():
        assert message.startswith("The module does not verify (line 9, e/y: callee two must be")


def test_sections_of_a_valid_module_need_no_verifier(modules, monkeypatch):
    import hloscope.ir.verifier as verifier

    monkeypatch.setattr(verifier, "verify", lambda *a, **k: pytest.fail("verified a module nothing failed on"))
    data = collect_report_data(modules["001"], jobs=1)
    assert not [k for k, v in data.items() if isinstance(v, dict) and v.get("status") == "error"]
