"""Value statistics (hloscope.numerics.stats and ``hloscope stats``)."""
from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

import hloscope as hs
from hloscope.cli.main import main
from hloscope.interpret import RunOptions
from hloscope.numerics.stats import value_stats
from tests.numerics.test_nonfinite import LOOP, X

SIMPLE = """HloModule s
ENTRY main {
  x = f32[2,3] parameter(0)
  e = f32[2,3] exponential(x), metadata={op_name="jit(f)/exp"}
  z = f32[] constant(0)
  zb = f32[2,3] broadcast(z), dimensions={}
  m = f32[2,3] maximum(e, zb)
  ROOT d = f32[2,3] divide(x, zb)
}
"""


def test_rows_hold_what_numpy_says() -> None:
    x = np.array([[0.0, 1.0, -2.0], [3.0, 0.5, 0.0]], np.float32)
    report = value_stats(hs.parse(SIMPLE), [x])
    rows = {r.name: r for r in report.rows}
    e = np.exp(x)
    r = rows["e"]
    assert (r.executions, r.size, r.finite, r.nan, r.inf, r.zero) == (1, 6, 6, 0, 0, 0)
    assert r.min == pytest.approx(e.min()) and r.max == pytest.approx(e.max())
    assert r.mean == pytest.approx(e.mean()) and r.std == pytest.approx(e.std(), rel=1e-5)
    assert r.op_name == "jit(f)/exp"
    d = rows["d"]  # x / 0: 0/0 twice, +-inf otherwise
    assert (d.nan, d.inf, d.finite) == (2, 4, 0) and d.min is None
    assert rows["x"].opcode == "parameter" and rows["x"].zero == 2
    assert [r.name for r in report.rows][:2] == ["x", "e"]  # parameters, then execution order


def test_loops_sum_over_iterations_and_devices_agree_on_both_executors() -> None:
    m = hs.parse(LOOP)
    inputs = [[X * (d + 1)] for d in range(4)]
    per = value_stats(m, inputs, replicas=4, options=RunOptions(mode="per-device"))
    lock = value_stats(m, inputs, replicas=4, options=RunOptions(mode="lockstep"))
    assert [r.to_json() for r in per.rows] == [r.to_json() for r in lock.rows]
    f0 = next(r for r in per.rows if r.name == "f" and r.device == 0)
    assert f0.executions == 5 and f0.size == 20


def test_select_and_save(tmp_path) -> None:
    report = value_stats(hs.parse(LOOP), [X], select="^x2$", save_dir=tmp_path)
    assert {r.name for r in report.rows} == {"x2"}
    saved = np.load(tmp_path / "x2.npz")
    assert sorted(k for k in saved.files if not k.startswith("__")) == [f"d0.{j}" for j in range(5)]
    np.testing.assert_array_equal(saved["d0.0"], X * 0.5)


def test_cli_csv_and_json(tmp_path, capsys) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(SIMPLE)
    assert main(["stats", str(path), "--csv", "--random", "1"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["name"] for r in rows} >= {"x", "e", "m", "d"}
    assert main(["stats", str(path), "--json", "--select", "exp"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in out["rows"]] == ["e"]
