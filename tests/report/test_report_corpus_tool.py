"""tools/report_corpus.py, the report built over a directory of modules (XLA's test corpus)
through hloscope.sweep, run as a user runs it on four modules of our own."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import SEED_FILES
from tests.interpret.test_scalar_windows import REDUCE_WINDOW
from tests.report.test_report import INVALID_CALL

ROOT = Path(__file__).resolve().parents[2]


def test_the_tool_lists_each_module_and_what_failed(tmp_path):
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "a_seed.hlo").write_text(SEED_FILES["001"].read_text())
    (modules / "b_not_hlo.hlo").write_text("HloModule m\nENTRY e {\n  ROOT x = f32[] bogus()\n}\n")
    (modules / "c_window.hlo").write_text(REDUCE_WINDOW)
    (modules / "d_invalid.hlo").write_text(INVALID_CALL)
    results = tmp_path / "r.jsonl"
    got = subprocess.run([sys.executable, str(ROOT / "tools" / "report_corpus.py"), str(modules), "--results",
                          str(results), "--jobs", "1"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert got.returncode == 0, got.stderr[-2000:]
    lines = {Path(r["path"]).name: r for r in map(json.loads, results.read_text().splitlines())}
    assert [lines[n]["status"] for n in sorted(lines)] == ["ok", "failed", "ok", "failed"]
    assert [e["step"] for e in lines["b_not_hlo.hlo"]["errors"]] == ["load"]
    assert lines["d_invalid.hlo"]["errors"] and all(
        "does not verify" in e["message"] for e in lines["d_invalid.hlo"]["errors"])
    assert got.stdout.startswith("4 modules: 2 ok, 1 failed, 1 not parsed")
    assert "memory: The module does not verify" in got.stdout
