"""Parse-error goldens: each bad file gives exactly its .err text (file:line:col, line, caret),
exit code 1 from the CLI, and never a traceback."""
from __future__ import annotations

from pathlib import Path

import pytest

import hloscope as hs
from hloscope.cli.main import main

CASES = sorted((Path(__file__).resolve().parents[1] / "golden" / "parse_errors").glob("*.hlo"))


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_parse_error_golden(path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    expected = path.with_suffix(".err").read_text()
    monkeypatch.chdir(path.parents[3])  # goldens name the file relative to the repository
    rel = path.relative_to(path.parents[3])
    with pytest.raises(hs.ParseError) as info:
        hs.load(rel)
    assert str(info.value) + "\n" == expected
    assert main(["print", str(rel)]) == 1
    captured = capsys.readouterr()
    assert captured.err == expected
    assert "Traceback" not in captured.err


def test_errors_point_into_the_middle_of_long_lines() -> None:
    text = "HloModule m\nENTRY e {\n  a = f32[2] parameter(0), metadata={op_name=\"" + "x" * 500 + "\"}\n" \
           "  ROOT b = f32[2] negate(a), metadata={op_name=\"" + "y" * 400 + "\"}, bogus=\n}\n"
    with pytest.raises(hs.ParseError) as info:
        hs.parse(text, "long.hlo")
    msg = str(info.value)
    assert msg.startswith("long.hlo:5:1: error: expected a value")
