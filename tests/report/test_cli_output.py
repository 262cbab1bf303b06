"""What the CLI prints next to the page: one unit convention, lists that appear when asked for,
op_names cut where they lose least, and a dump that is not a module named as such."""
from __future__ import annotations

import json
import re

import hloscope
from hloscope.analysis.cost import analyze_cost
from hloscope.cli.common import format_bytes, short
from hloscope.cli.main import main
from hloscope.report.data import collect_report_data, implied_hardware
from hloscope.report.html import page_data
from tests.conftest import SEED_FILES


def test_report_on_a_buffer_assignment_dump_reports_the_dump(tmp_path, capsys):
    """Seed 002 is a BufferAssignment dump: the page shows its allocations and peak, no parse error."""
    from hloscope.text.buffer_assignment_dump import load_buffer_assignment

    out = tmp_path / "r.html"
    assert main(["report", str(SEED_FILES["002"]), "-o", str(out)]) == 0
    assert "hloscope buffers" in capsys.readouterr().out
    page = out.read_text()
    data = page_data(page)
    ba = load_buffer_assignment(SEED_FILES["002"])
    assert data["kind"] == "buffer-assignment"
    assert data["dump"]["peak_bytes"] == ba.peak_bytes and data["dump"]["total_bytes"] == ba.total_bytes
    assert [b["instruction"] for b in data["dump"]["peak_buffers"]] == [e.instruction for e in ba.peak_buffers]
    assert main(["report", str(SEED_FILES["002"]), "-o", str(SEED_FILES["002"])]) == 1  # never over the input


def test_cost_top_alone_lists_instructions(capsys):
    assert main(["cost", str(SEED_FILES["000"]), "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "Costliest instructions" in out
    assert main(["cost", str(SEED_FILES["000"])]) == 0
    assert "Costliest instructions" not in capsys.readouterr().out


def test_cli_json_and_page_give_one_bytes_figure(capsys):
    """Seed 003's bytes accessed: binary units in the CLI, the same figure in JSON and the page."""
    m = hloscope.load(SEED_FILES["003"])
    figure = analyze_cost(m).bytes_accessed
    assert main(["cost", str(SEED_FILES["003"])]) == 0
    out = capsys.readouterr().out
    assert format_bytes(figure) in out and format_bytes(figure).endswith("GiB")
    assert not re.search(r"\d G\b", out.split("bytes accessed", 1)[1].splitlines()[0])
    assert main(["cost", str(SEED_FILES["003"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bytes_accessed"] == figure
    assert collect_report_data(m)["cost"]["data"]["bytes_accessed"] == figure


def test_short_keeps_the_leaf_op():
    op_name = "pmap(_multi_device_update_fn)/jit(main)/scan/while/body/transpose(jvp(layer_7))/dot_general"
    cut = short(op_name, 48)
    assert len(cut) == 48 and cut.endswith("dot_general") and cut.startswith("pmap(") and "…" in cut
    assert short("short one") == "short one"


def test_implied_hardware_names_its_reason():
    """The page's choice is the estimate command's (one inference, analysis/backend.py)."""
    from hloscope.analysis.backend import infer_backend

    seed000 = hloscope.load(SEED_FILES["000"])
    gpu = implied_hardware(seed000)
    assert gpu[0] == "h100-sxm" and "__cublas$gemm" in gpu[1]
    assert gpu[1].startswith(infer_backend(seed000).assumed())
    tpu = implied_hardware(hloscope.load(SEED_FILES["004"]))
    assert tpu[0] == "tpu-v5p" and "4 replicas" in tpu[1]
    cpu = implied_hardware(hloscope.parse("HloModule m\nENTRY e { ROOT p = f32[4] parameter(0) }"))
    assert cpu[0] == "cpu"


def test_loops_carry_their_time_into_the_page_data():
    """Every instruction's estimated seconds ride along its row; a loop's include its trips."""
    data = collect_report_data(hloscope.load(SEED_FILES["003"]), hardware="h100-sxm")
    rows = {r["name"]: r for r in data["timing"]["data"]["per_instruction"]}
    loops = [r for r in rows.values() if r["opcode"] == "while"]
    assert len(loops) == 18 and all(r["trip_count"] == 64 and r["seconds"] > 1e-3 for r in loops)
    entry = next(c for c in data["computations"] if c["is_entry"])
    seconds = dict(zip((r[0] for r in entry["instructions"]), entry["seconds"]))
    assert all(seconds[r["name"]] == r["seconds"] for r in loops)
    assert rows["custom-call.93"]["executions"] == 64


def test_report_progress_names_slow_steps(tmp_path, capsys, monkeypatch):
    """Off a terminal only steps of a second or more are written, one line each, on stderr."""
    import io

    from hloscope.cli.report import TerminalProgress

    stream = io.StringIO()
    progress = TerminalProgress(stream)
    progress("cost", None)
    progress("cost", 0.2)
    progress("memory", None)
    progress("memory", 6.24)
    assert stream.getvalue() == "hloscope report: memory took 6.2 s\n"
    out = tmp_path / "r.html"
    assert main(["report", str(SEED_FILES["000"]), "-o", str(out)]) == 0
    assert "instructions" in capsys.readouterr().out


def test_memory_prints_other_memory_spaces_in_binary_units(capsys):
    """Seed 004's S(1) and S(2) lines use the units S(0)'s figures use, not raw bytes."""
    assert main(["memory", str(SEED_FILES["004"])]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("memory space S(")]
    assert len(lines) == 2
    assert "temporaries 86.00 MiB, live-range peak 86.00 MiB" in lines[0]
    assert "temporaries 68 B, live-range peak 8 B" in lines[1]
