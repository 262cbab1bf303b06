"""Tests, tools and benchmarks share hloscope.testing instead of reaching into each other: no
test loads a tool by its path, no tool imports the tests, and the library never imports
hloscope.testing."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def _python_files(*dirs: str) -> list[Path]:
    return [p for d in dirs for p in sorted((ROOT / d).rglob("*.py"))]


# Ways a test could load a file by its path, and ways it could name the tools folder (the path
# is often built apart from the call: `path = ROOT / "tools" / "x.py"`, then the call).
_LOADS_BY_PATH = re.compile(r"spec_from_file_location|SourceFileLoader|runpy\.run_path|\bexec\(|__import__\(")
_NAMES_TOOLS = re.compile(r"""["']tools["']|["']tools/|/\s*["']tools""")


def test_no_test_loads_a_tool_by_path() -> None:
    offenders = [str(p.relative_to(ROOT)) for p in _python_files("tests")
                 if p != Path(__file__).resolve()  # this file spells the patterns out
                 and _LOADS_BY_PATH.search(text := p.read_text()) and _NAMES_TOOLS.search(text)]
    assert offenders == []


def test_the_contract_sees_a_path_built_apart_from_the_call() -> None:
    """The way test_xla_sweep.py loaded tools/xla_sweep.py, which the old pattern missed."""
    text = 'path = ROOT / "tools" / "xla_sweep.py"\nspec = importlib.util.spec_from_file_location("t", path)\n'
    assert _LOADS_BY_PATH.search(text) and _NAMES_TOOLS.search(text)


def test_tools_and_benchmarks_do_not_import_the_tests() -> None:
    imports = re.compile(r"^\s*(?:from|import)\s+(tests(?:\.\w+)*)", re.M)
    found = {(str(p.relative_to(ROOT)), m) for p in _python_files("tools", "benchmarks")
             for m in imports.findall(p.read_text())}
    assert found == set(), sorted(found)


def test_the_library_does_not_import_hloscope_testing() -> None:
    code = "import sys, hloscope, hloscope.cli.main; print(any(m.startswith('hloscope.testing') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
