"""``hloscope run`` refuses a run the memory analysis says cannot fit (issue 16)."""
from __future__ import annotations

import json

import pytest

MODULE = """HloModule m, replica_count=4

ENTRY e {
  p = f32[1024,1024]{1,0} parameter(0)
  e = f32[1024,1024]{1,0} exponential(p)
  ROOT a = f32[1024,1024]{1,0} add(e, p)
}
"""
MIB4 = 4 * 1024 * 1024  # one f32[1024,1024]


def test_check_counts_every_device_and_says_what_fits():
    import hloscope
    from hloscope.api import check_run_memory

    m = hloscope.parse(MODULE)
    # p lives throughout, e until the add, a from the add: three arrays at the add.
    check = check_run_memory(m, 4, available=5 * MIB4)
    assert check.per_device_bytes == 3 * MIB4 and check.needed_bytes == 12 * MIB4
    assert not check.fits
    text = check.message()
    assert f"{12 * MIB4:,} bytes" in text and f"{5 * MIB4:,} bytes" in text
    assert "at most 1 (" in text and "--force" in text
    assert check_run_memory(m, 4, available=12 * MIB4).fits
    tiny = check_run_memory(m, 1, available=MIB4).message()
    assert "smaller batch" in tiny and "fewer devices" not in tiny


def test_cli_refuses_before_allocating_and_force_runs(monkeypatch, tmp_path, capsys):
    import hloscope.api
    from hloscope.cli.main import main

    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    monkeypatch.setattr(hloscope.api, "available_memory", lambda: 2 * MIB4)

    def no_inputs(*args, **kwargs):
        raise AssertionError("inputs were drawn before the memory check")

    monkeypatch.setattr("hloscope.interpret.inputs.random_inputs", no_inputs)
    assert main(["run", "--random", "0", "--replicas", "4", str(path)]) == 1
    err = capsys.readouterr().err
    assert "not enough memory" in err and f"{12 * MIB4:,} bytes" in err and f"{2 * MIB4:,} bytes" in err
    monkeypatch.undo()
    monkeypatch.setattr(hloscope.api, "available_memory", lambda: 2 * MIB4)
    assert main(["run", "--random", "0", "--replicas", "1", "--force", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["outputs"]


@pytest.mark.parametrize("available", [None])
def test_unknown_available_memory_never_refuses(available, monkeypatch):
    import hloscope
    import hloscope.api
    from hloscope.api import check_run_memory

    monkeypatch.setattr(hloscope.api, "available_memory", lambda: available)
    assert check_run_memory(hloscope.parse(MODULE), 1000).fits
