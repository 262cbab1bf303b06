"""The package's structure holds: no import cycles, no private names taken across modules, the
layer contract (import-linter), and files of one responsibility (under 800 lines)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hloscope.testing.architecture import read_import_graph

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
MAX_LINES = 800


@pytest.fixture(scope="module")
def graph():
    return read_import_graph(SRC)


def test_no_import_cycles(graph) -> None:
    assert graph.cycles() == []


def test_no_private_names_across_modules(graph) -> None:
    assert [str(u) for u in graph.private_uses] == []


def test_the_reader_finds_cycles_and_private_uses(tmp_path: Path) -> None:
    pkg = tmp_path / "hloscope"
    (pkg / "ir").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ir" / "__init__.py").write_text("")
    (pkg / "ir" / "a.py").write_text("from hloscope.ir import b\n\ndef f():\n    return b._hidden\n")
    (pkg / "ir" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hloscope.ir import c\n"
        "def g():\n    from hloscope.ir.a import f\n    return f\n")
    (pkg / "ir" / "c.py").write_text("from hloscope.ir.b import _x\n")
    g = read_import_graph(tmp_path)
    assert g.cycles() == [["hloscope.ir.a", "hloscope.ir.b"]]  # b -> c is TYPE_CHECKING only
    assert sorted(str(u) for u in g.private_uses) == [
        "hloscope.ir.a:4 uses hloscope.ir.b._hidden", "hloscope.ir.c:1 uses hloscope.ir.b._x"]


def test_source_files_stay_under_800_lines() -> None:
    long = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_layer_contract() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    proc = subprocess.run([exe, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:]
