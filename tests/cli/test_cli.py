"""End-to-end tests of the command line: exit codes, JSON twins, standard input, safe outputs."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import hloscope as hs
from hloscope.cli.main import main
from hloscope.errors import InputError
from tests.conftest import SEED_FILES

S000, S001, S002, S004 = (str(SEED_FILES[k]) for k in ("000", "001", "002", "004"))


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_summary_json(capsys) -> None:
    data = run_json(capsys, "summary", "--json", S001)
    assert data["name"] == "func_shard_parallel__1.68"
    assert data["collectives"] == {"all-gather": 1, "all-reduce": 2}
    assert data["instructions"] == 49
    assert data["parameter_bytes"] == sum(p["bytes"] for p in data["parameters"])


def test_summary_table_names_the_module(capsys) -> None:
    assert main(["summary", S004]) == 0
    out = capsys.readouterr().out
    assert "SyncTensorsGraph.32" in out and "replica_count=4" in out and "convolution" in out


def test_print_reads_standard_input(capsys, monkeypatch) -> None:
    text = Path(S001).read_text()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert main(["print", "-"]) == 0
    assert capsys.readouterr().out == text


def test_print_canonical_is_accepted_again(capsys) -> None:
    assert main(["print", "--canonical", S000]) == 0
    out = capsys.readouterr().out
    assert "metadata=" not in out and "%" not in out
    assert hs.parse(out).instruction_count == hs.load(S000).instruction_count


def test_print_output_is_atomic_and_never_overwrites_the_input(tmp_path, capsys) -> None:
    src = tmp_path / "m.hlo"
    src.write_text(Path(S001).read_text())
    assert main(["print", str(src), "-o", str(src)]) == 1
    assert "refusing to overwrite the input" in capsys.readouterr().err
    assert src.read_text() == Path(S001).read_text()
    out = tmp_path / "out.hlo"
    assert main(["print", str(src), "--style", "old", "-o", str(out)]) == 0
    assert hs.ir.first_difference(hs.load(out), hs.load(src)) is None
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp files left


def test_missing_file_is_one_clear_line(capsys) -> None:
    assert main(["summary", "/nonexistent/m.hlo"]) == 1
    err = capsys.readouterr().err
    assert err == "/nonexistent/m.hlo: no such file\n"


@pytest.mark.parametrize("content", [b"", b"  \n\t\r\n\x0b\x0c"])
def test_an_empty_or_blank_file_is_one_clear_line(tmp_path, capsys, content: bytes) -> None:
    src = tmp_path / "m.hlo"
    src.write_bytes(content)
    assert main(["summary", str(src)]) == 1
    assert capsys.readouterr().err == f"{src}: the file is empty; expected an HLO module\n"
    with pytest.raises(InputError, match="the file is empty"):
        hs.api.load_bytes(content)


def test_verify_ok_and_failure_exit_codes(tmp_path, capsys) -> None:
    assert main(["verify", S004]) == 0
    assert "ok" in capsys.readouterr().out
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY e {\n  a = f32[2]{0} parameter(0)\n  ROOT b = f32[3]{0} negate(a)\n}\n")
    assert main(["verify", str(bad)]) == 3
    err = capsys.readouterr().err
    assert "bad.hlo:5:8: error: expected shape f32[2]" in err and "^" in err
    data = run_json(capsys, "verify", "--json", S001)
    assert data["ok"] is True and data["diagnostics"] == []


def test_buffers_reads_seed_002(capsys) -> None:
    data = run_json(capsys, "buffers", "--json", S002)
    assert data["allocation_count"] == 68
    assert data["total_bytes"] == 2_564_824
    assert data["peak_time"] == 69
    assert len(data["peak_buffers"]) == 39


def test_cost_json_keys(capsys) -> None:
    data = run_json(capsys, "cost", "--json", "--per-op", "--top", "3", S000)
    assert set(data) >= {"flops", "transcendentals", "bytes_accessed", "loop_aware", "trip_counts", "per_instruction"}
    assert set(data["loop_aware"]) == {"flops", "transcendentals", "bytes_accessed"}
    assert data["flops"] == 5_713_084
    assert len(data["per_instruction"]) == 3


def test_collectives_json(capsys) -> None:
    data = run_json(capsys, "collectives", "--json", S004)
    (c,) = data["collectives"]
    assert c["group_size"] == 4 and c["payload_bytes"] == 16_777_220
    (k,) = data["by_kind"]
    assert (k["opcode"], k["group_size"], k["instructions"]) == (c["opcode"], 4, 1)
    assert k["payload_bytes"] == data["totals"]["payload_bytes"] == 16_777_220 * c["count"]


def test_collectives_text_lists_kinds_and_the_top(tmp_path, capsys) -> None:
    from hloscope.analysis.collectives import analyze_collectives
    from hloscope.text import parse_module

    path = tmp_path / "m.hlo"
    lines = ["HloModule m, replica_count=4", "", "add {", "  a = f32[] parameter(0)", "  b = f32[] parameter(1)",
             "  ROOT c = f32[] add(a, b)", "}", "", "ENTRY e {", "  p = f32[1024] parameter(0)"]
    for k in range(1, 5):  # all-reduces of 1, 2, 3, 4 KiB
        lines.append(f"  s{k} = f32[{256 * k}] slice(p), slice={{[0:{256 * k}]}}")
        lines.append(f"  r{k} = f32[{256 * k}] all-reduce(s{k}), replica_groups={{}}, to_apply=add")
    lines += ["  ROOT g = f32[4096] all-gather(p), dimensions={0}, replica_groups={}", "}", ""]
    path.write_text("\n".join(lines))
    r = analyze_collectives(parse_module(path.read_text()))
    kinds = r.by_kind()
    assert [(k.opcode, k.instructions) for k in kinds] == [("all-reduce", 4), ("all-gather", 1)]
    assert sum(k.ring_bytes for k in kinds) == r.ring_bytes
    assert [c.name for c in r.top(3)] == ["g", "r4", "r3"]  # the gather's 16 KiB output leads
    assert len(r.top(0)) == 5
    assert main(["collectives", "--top", "2", str(path)]) == 0
    out = capsys.readouterr().out
    assert "By kind" in out and "r4" in out and "r3" not in out
    assert "3 more: --top 0 lists every one" in out
    assert main(["collectives", "--top", "0", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Every collective" in out and "r1" in out and "more:" not in out


def test_estimate_writes_a_chrome_trace(tmp_path, capsys) -> None:
    """The command's figures are the API's for the same module and profile, and the trace holds
    its schedule interval for interval (microseconds)."""
    import hloscope
    from hloscope.analysis.hardware import load_hardware
    from hloscope.analysis.timing import estimate_time

    trace = tmp_path / "t.json"
    data = run_json(capsys, "estimate", "--json", "--hardware", "h100-sxm", "--trace", str(trace), S000)
    est = estimate_time(hloscope.load(S000), load_hardware("h100-sxm"))
    assert data["total_seconds"] == pytest.approx(est.total_seconds, rel=1e-12)
    assert data["hardware"] == "h100-sxm" and data["hardware_assumed"] is None
    assert data["backend"]["backend"] == "gpu" and data["notes"] == []
    spans = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in spans] == [op.instruction for op in est.schedule]
    assert [(e["ts"], e["dur"]) for e in spans] == [
        (pytest.approx(op.start * 1e6), pytest.approx(op.duration * 1e6)) for op in est.schedule]
    assert max(e["ts"] + e["dur"] for e in spans) == pytest.approx(est.total_seconds * 1e6)


def test_estimate_without_hardware_says_what_it_assumed(capsys) -> None:
    """Issue 25 item 5: the profile comes from the backend the module was compiled for, and the
    output says which and why (seed 000's cuBLAS gemms: a GPU; seed 004's tiles: a TPU)."""
    gpu = run_json(capsys, "estimate", "--json", S000)
    assert gpu["hardware"] == "h100-sxm" and "__cublas$gemm" in gpu["hardware_assumed"]
    assert gpu["backend"]["evidence"][0]["what"] == "cuBLAS custom calls"
    tpu = run_json(capsys, "estimate", "--json", S004)
    assert tpu["hardware"] == "tpu-v5p" and "T(8,128)" in tpu["hardware_assumed"]
    assert main(["estimate", S001]) == 0
    out = capsys.readouterr().out
    assert "h100-sxm assumed, as the module was compiled for a GPU" in out
    assert "note: the module has no fusions" in out


def test_estimate_unknown_hardware_lists_names(capsys) -> None:
    assert main(["estimate", "--hardware", "h900", S000]) == 1
    assert "h100-sxm" in capsys.readouterr().err


def test_calibrate_writes_a_profile_usable_by_estimate(tmp_path, capsys) -> None:
    import hloscope
    from hloscope.analysis.hardware import load_hardware
    from hloscope.analysis.timing import estimate_time

    out = tmp_path / "cpu.json"
    assert main(["calibrate", "--seconds", "0.3", "-o", str(out)]) == 0
    capsys.readouterr()
    data = run_json(capsys, "estimate", "--json", "--hardware", str(out), S001)
    spec = load_hardware(out)
    assert (data["hardware"], data["hardware_kind"]) == ("cpu-calibrated", "cpu") == (spec.name, spec.kind)
    assert data["total_seconds"] == pytest.approx(estimate_time(hloscope.load(S001), spec).total_seconds, rel=1e-12)
    # Seed 001 is a GPU module estimated on a CPU profile: the command says so.
    assert any("compiled for a GPU" in n for n in data["notes"])


def test_memory_json_and_dump(tmp_path, capsys) -> None:
    dump = tmp_path / "ba.txt"
    data = run_json(capsys, "memory", "--json", "--dump", str(dump), S001)
    for key in ("argument_bytes", "output_bytes", "alias_bytes", "temp_bytes", "total_bytes", "peak_bytes",
                "peak_time", "peak_buffers", "allocation_count"):
        assert key in data
    back = run_json(capsys, "buffers", "--json", str(dump))
    assert back["total_bytes"] == data["total_bytes"]
    assert back["allocation_count"] == data["allocation_count"]


def test_parse_error_has_no_traceback_via_the_real_entry_point(tmp_path) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  ROOT a = f32[2] wat(0)\n}\n")
    proc = subprocess.run([sys.executable, "-m", "hloscope", "summary", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{bad}:3:19: error: unknown opcode 'wat'")
    assert "Traceback" not in proc.stderr


def test_help_lists_every_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "hloscope", "--help"], capture_output=True, text=True)
    for name in ("summary", "print", "verify", "buffers", "cost", "collectives", "estimate", "memory", "report"):
        assert name in proc.stdout


def test_json_output_layout_round_trips():
    # emit_json lays out two levels by hand and encodes the rest with json's C encoder.
    import json

    from hloscope.cli.common import format_json

    obj = {"a": 1, "rows": [{"x": 1, "y": [1, 2]}, {"x": 2}], "c": {"d": [1, 2], "e": {"f": None}},
           "empty": [], "none": {}, "text": 'q"uote'}
    text = format_json(obj)
    assert json.loads(text) == obj
    assert text.splitlines()[:5] == ['{', '  "a": 1,', '  "rows": [', '    {"x": 1, "y": [1, 2]},',
                                     '    {"x": 2}']
    assert json.loads(format_json([1, {"a": [1]}])) == [1, {"a": [1]}]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_working_says_what_a_slow_step_does_and_clears_it():
    import time

    from hloscope.cli.common import working

    slow, quick, piped = _Terminal(), _Terminal(), io.StringIO()
    with working("hloscope memory: assigning", after=0.05, stream=slow):
        time.sleep(0.3)
    assert slow.getvalue() == "\r\033[Khloscope memory: assigning\u2026\r\033[K"
    with working("hloscope memory: assigning", after=5, stream=quick):
        pass
    with working("hloscope memory: assigning", after=0.0, stream=piped):
        time.sleep(0.1)
    assert quick.getvalue() == piped.getvalue() == ""


def test_read_module_errors_stay_the_loaders(tmp_path, capsys):
    assert main(["memory", str(tmp_path / "missing.hlo")]) == 1
    err = capsys.readouterr().err
    assert "missing.hlo: no such file" in err and "Traceback" not in err


FRAMES_MODULE = """HloModule framed

FileNames
1 "train.py"
2 "model.py"

FunctionNames
1 "main"
2 "layer"

FileLocations
1 {file_name_id=1 function_name_id=1 line=30 end_line=30 column=0 end_column=0}
2 {file_name_id=2 function_name_id=2 line=12 end_line=12 column=4 end_column=4}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=1}

ENTRY main {
  x = f32[64,64]{1,0} parameter(0)
  d = f32[64,64]{1,0} dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/dot_general" stack_frame_id=2}
  ROOT e = f32[64,64]{1,0} exponential(d), metadata={op_name="jit(f)/exp" source_file="old.py" source_line=7}
}
"""


def test_cost_and_memory_name_the_same_source(tmp_path, capsys) -> None:
    # Newer jax writes only a stack_frame_id; cost --top left the source column empty where
    # memory filled it. Both now ask Module.source_location.
    path = tmp_path / "framed.hlo"
    path.write_text(FRAMES_MODULE)
    m = hs.load(path)
    assert m.source_location(m.entry.instruction("d")) == "model.py:12"  # the innermost frame
    assert m.source_location(m.entry.instruction("e")) == "old.py:7"
    assert m.source_location(m.entry.instruction("x")) is None
    cost = run_json(capsys, "cost", "--json", "--top", "3", str(path))
    assert {r["name"]: r["source"] for r in cost["per_instruction"]} == {"d": "model.py:12", "e": "old.py:7",
                                                                         "x": None}
    memory = run_json(capsys, "memory", "--json", "--top", "0", str(path))
    sources = {b["instruction"]: b["source"] for b in memory["peak_buffers"]}
    assert sources.get("d") == "model.py:12" or sources.get("e") == "old.py:7"
    assert main(["cost", "--top", "2", str(path)]) == 0
    assert "model.py:12" in capsys.readouterr().out
