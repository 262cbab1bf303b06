"""tools/report_corpus.py, the report built over a directory of modules (XLA's test corpus),
run as a user runs it on three modules of our own."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import SEED_FILES
from tests.interpret.test_scalar_windows import REDUCE_WINDOW

ROOT = Path(__file__).resolve().parents[2]


def test_the_tool_lists_each_module_and_what_failed(tmp_path):
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "a_seed.hlo").write_text(SEED_FILES["001"].read_text())
    (modules / "b_not_hlo.hlo").write_text("HloModule m\nENTRY e {\n  ROOT x = f32[] bogus()\n}\n")
    (modules / "c_window.hlo").write_text(REDUCE_WINDOW)
    (modules / "d_invalid.hlo").write_text("HloModule m\ntwo {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
                                           "  ROOT c = f32[4] add(a, b)\n}\nENTRY e {\n  x = f32[4] parameter(0)\n"
                                           "  ROOT y = f32[4] call(x), to_apply=two\n}\n")
    results = tmp_path / "r.jsonl"
    got = subprocess.run([sys.executable, str(ROOT / "tools" / "report_corpus.py"), str(modules), "--results",
                          str(results), "--jobs", "1"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert got.returncode == 0, got.stderr[-2000:]
    lines = {r[0]: r for r in map(json.loads, results.read_text().splitlines())}
    assert [lines[n][1] for n in sorted(lines)] == ["ok", "parse", "ok", "error"]
    assert all("does not verify" in m for m in lines["d_invalid.hlo"][2].values())
    assert got.stdout.startswith("4 modules: ") and "memory: The module does not verify" in got.stdout
