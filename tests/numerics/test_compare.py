"""compare (hloscope.numerics.compare, matching, xla_compare) and its command."""
from __future__ import annotations

import json

import numpy as np
import pytest

import hloscope as hs
from hloscope.cli.main import main
from hloscope.numerics.compare import assemble_shards, compare_modules
from hloscope.numerics.matching import match_values
from hloscope.testing.numerics_plants import change_constant, swap_operands
from tests.numerics.test_nonfinite import LOOP, X

# Before and after "optimizations": the same program with metadata; B folds x - 1 into a
# fusion and computes the division as a multiply by the reciprocal.
BEFORE = """HloModule before
ENTRY main {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  one = f32[] constant(1)
  ob = f32[8] broadcast(one), dimensions={}
  s = f32[8] subtract(x, ob), metadata={op_name="jit(f)/sub"}
  m = f32[8] multiply(s, y), metadata={op_name="jit(f)/mul"}
  e = f32[8] exponential(m), metadata={op_name="jit(f)/exp"}
  two = f32[] constant(2)
  tb = f32[8] broadcast(two), dimensions={}
  ROOT d = f32[8] divide(e, tb), metadata={op_name="jit(f)/div"}
}
"""
AFTER = """HloModule after
fused {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  c = f32[] constant(1)
  cb = f32[8] broadcast(c), dimensions={}
  s.1 = f32[8] subtract(p0, cb), metadata={op_name="jit(f)/sub"}
  m.1 = f32[8] multiply(s.1, p1), metadata={op_name="jit(f)/mul"}
  ROOT e.1 = f32[8] exponential(m.1), metadata={op_name="jit(f)/exp"}
}
ENTRY main {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  f = f32[8] fusion(x, y), kind=kLoop, calls=fused, metadata={op_name="jit(f)/exp"}
  half = f32[] constant(0.5)
  hb = f32[8] broadcast(half), dimensions={}
  ROOT d.1 = f32[8] multiply(f, hb), metadata={op_name="jit(f)/div"}
}
"""
INPUTS = [np.linspace(-1, 1, 8, dtype=np.float32), np.linspace(0.5, 2, 8, dtype=np.float32)]


def test_matching_pairs_through_fusions() -> None:
    m = match_values(hs.parse(BEFORE), hs.parse(AFTER))
    pairs = {b.name: a.name for b, a in m.partner.items()}
    assert pairs["s.1"] == "s" and pairs["m.1"] == "m" and pairs["e.1"] == "e" and pairs["f"] == "e"
    assert pairs["d.1"] == "d"  # the outputs, by index
    assert {b.name: how for b, how in m.how.items()}["f"] == "fusion root"


def test_two_modules_of_one_program_agree() -> None:
    report = compare_modules(hs.parse(BEFORE), hs.parse(AFTER), INPUTS)
    assert report.first_divergence is None and report.compared >= 5


def test_a_changed_constant_is_located() -> None:
    a = hs.parse(AFTER)
    b, name = change_constant(a)  # the 1 is skipped (0 and +-1 are not changed): the 0.5
    report = compare_modules(a, b, INPUTS)
    d = report.first_divergence
    assert d is not None and d.b.name == name == "half"
    assert [p.b for p in d.after][:1] == ["hb"]


def test_swapped_operands_are_located_with_the_chain_before_agreeing() -> None:
    a = hs.parse(BEFORE)
    b, name = swap_operands(a)
    report = compare_modules(a, b, INPUTS)
    d = report.first_divergence
    assert d is not None and d.b.name == name == "s"
    assert all(p.agrees for p in d.before)
    assert d.after and d.after[0].b == "m" and not d.after[0].agrees


def test_loop_iterations_are_compared_one_by_one() -> None:
    a = hs.parse(LOOP)
    b = hs.parse(LOOP.replace("constant(0.5)", "constant(0.25)"))
    d = compare_modules(a, b, [X]).first_divergence
    assert d is not None and d.b.name == "half" and d.error.execution == 0


def test_shards_are_put_together_when_the_devices_holding_each_agree() -> None:
    full = np.arange(16, dtype=np.float32).reshape(4, 4)
    # 4 devices, 2 shards along dimension 0, each held by two neighbours ("data" major)
    parts = [full[:2], full[:2], full[2:], full[2:]]
    np.testing.assert_array_equal(assemble_shards(parts, (4, 4), full, None), full)
    parts = [full[:2], full[2:], full[:2], full[2:]]  # every other device ("data" minor)
    np.testing.assert_array_equal(assemble_shards(parts, (4, 4), full, None), full)
    partial = [full[:2], full[:2] + 1, full[2:], full[2:]]  # the holders disagree: not shards
    assert assemble_shards(partial, (4, 4), full, None) is None


def test_global_program_against_its_partitioned_version() -> None:
    """A value a device holds whole is compared with the global one; a device's part of a
    sum (the same shape, differing between devices) is not."""
    glob = """HloModule g
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]0,1}
  t = f32[8,4] tanh(x), metadata={op_name="jit(f)/tanh"}
  z = f32[] constant(0)
  ROOT s = f32[4] reduce(t, z), dimensions={0}, to_apply=add, metadata={op_name="jit(f)/reduce_sum"}
}
"""
    part = """HloModule p, replica_count=1, num_partitions=2
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,4] parameter(0)
  t = f32[4,4] tanh(x), metadata={op_name="jit(f)/tanh"}
  z = f32[] constant(0)
  r = f32[4] reduce(t, z), dimensions={0}, to_apply=add, metadata={op_name="jit(f)/reduce_sum"}
  ROOT s = f32[4] all-reduce(r), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=add, metadata={op_name="jit(f)/reduce_sum"}
}
"""
    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(8, 4)
    report = compare_modules(hs.parse(glob), hs.parse(part), [x], partitions=2)
    assert report.first_divergence is None
    compared = {p.b for p in report.pairs}
    assert "t" in compared and "s" in compared and "r" not in compared


def test_cli_exit_status_and_json(tmp_path, capsys) -> None:
    (tmp_path / "a.hlo").write_text(BEFORE)
    b, _ = swap_operands(hs.parse(BEFORE))
    (tmp_path / "b.hlo").write_text(b.to_text())
    np.savez(tmp_path / "in.npz", arg0=INPUTS[0], arg1=INPUTS[1])
    args = ["compare", str(tmp_path / "a.hlo"), str(tmp_path / "b.hlo"), "--inputs", str(tmp_path / "in.npz")]
    assert main(args + ["--json"]) == 4
    d = json.loads(capsys.readouterr().out)["first_divergence"]
    assert d["a"]["name"] == "s" and d["b"]["name"] == "s"
    assert main(["compare", str(tmp_path / "a.hlo"), str(tmp_path / "a.hlo"), "--inputs", str(tmp_path / "in.npz")]) == 0
    assert "no divergence" in capsys.readouterr().out


DENORMAL = """HloModule denorm
fused_log {
  p0 = f32[4] parameter(0)
  c = f32[] constant(1e-30)
  b = f32[4] broadcast(c), dimensions={}
  s = f32[4] multiply(p0, b)
  ROOT l = f32[4] log(s), metadata={op_name="jit(f)/log" source_file="model.py" source_line=8}
}
ENTRY main {
  x = f32[4] parameter(0)
  two = f32[] constant(2)
  tb = f32[4] broadcast(two), dimensions={}
  y = f32[4] multiply(x, tb)
  f = f32[4] fusion(y), kind=kLoop, calls=fused_log
  ROOT r = f32[4] negate(f)
}
"""


def test_against_xla_finds_the_fused_op_that_parts(tmp_path, capsys) -> None:
    """hloscope told to keep denormals (--float-env ieee) against XLA:CPU, which flushes
    them: log(2e-41) is -92.3 here and -inf there, inside the fusion."""
    pytest.importorskip("jax")
    (tmp_path / "m.hlo").write_text(DENORMAL)
    np.savez(tmp_path / "in.npz", arg0=np.array([1e-11, 1, 2, 3], np.float32))
    code = main(["compare", str(tmp_path / "m.hlo"), "--against", "xla", "--float-env", "ieee",
                 "--inputs", str(tmp_path / "in.npz"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 4
    d = out["first_divergence"]
    assert d["b"]["name"] == "l" and [w["name"] for w in d["within"]] == ["f"]
    assert d["b"]["source"] == "model.py:8"
    assert main(["compare", str(tmp_path / "m.hlo"), "--against", "xla",
                 "--inputs", str(tmp_path / "in.npz")]) == 0
