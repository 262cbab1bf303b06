"""The first non-finite value (hloscope.numerics.nonfinite): the birth rules, where it is
(loops, fusions, devices) on every executor, and ``run --find-nonfinite``."""
from __future__ import annotations

import json

import numpy as np
import pytest

import hloscope as hs
from hloscope.cli.main import main
from hloscope.interpret import RunOptions
from hloscope.numerics import find_nonfinite

LOOP = """HloModule nan_loop

fused_log {
  p0 = f32[4] parameter(0)
  c = f32[] constant(1)
  b = f32[4] broadcast(c), dimensions={}
  s = f32[4] subtract(p0, b), metadata={op_name="jit(f)/sub" source_file="/home/u/train.py" source_line=41}
  ROOT l = f32[4] log(s), metadata={op_name="jit(f)/log" source_file="/home/u/train.py" source_line=42}
}

body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  half = f32[] constant(0.5)
  hb = f32[4] broadcast(half), dimensions={}
  x2 = f32[4] multiply(x, hb)
  f = f32[4] fusion(x2), kind=kLoop, calls=fused_log, metadata={op_name="jit(f)/log"}
  ROOT t = (s32[], f32[4]) tuple(i2, f)
}

cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY main {
  x = f32[4] parameter(0)
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  t = (s32[], f32[4]) tuple(zero, x)
  w = (s32[], f32[4]) while(t), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
"""

# log(x * 0.5 - 1) repeated: 5 stays finite for one iteration, the others longer.
X = np.array([100.0, 1000.0, 10000.0, 5.0], np.float32)


def test_names_the_fused_op_its_loop_iteration_and_source() -> None:
    first = find_nonfinite(hs.parse(LOOP), [X])
    assert first is not None and first.kind == "instruction"
    assert (first.instruction.name, first.instruction.computation) == ("f", "body")
    assert first.fused is not None and (first.fused.name, first.fused.opcode) == ("l", "log")
    assert [(lp.loop, lp.iteration) for lp in first.loops] == [("w", 1)]
    assert first.source == "/home/u/train.py:42" and first.op_name == "jit(f)/log"
    (label, operand), = first.fused.operands
    assert label == "s" and operand.finite == 4 and operand.min < 0  # log of a negative number
    assert first.fused.result[0][1].nan == 1
    assert first.devices == (0,)


def _per_device(n: int) -> list[list[np.ndarray]]:
    # Device d starts from X * (d + 1): device 3's last element reaches a negative log later.
    return [[X * (d + 1)] for d in range(n)]


@pytest.mark.parametrize("mode", ["per-device", "lockstep"])
def test_devices_where_it_happened_on_either_executor(mode: str) -> None:
    first = find_nonfinite(hs.parse(LOOP), _per_device(4), replicas=4, options=RunOptions(mode=mode))
    assert first is not None and first.devices == (0, 1, 2)
    assert [(lp.loop, lp.iteration) for lp in first.loops] == [("w", 1)]
    assert first.fused is not None and first.fused.name == "l"


def test_lockstep_keeps_running_in_lockstep_with_the_watch() -> None:
    """The watch accepts stacked values (sees_stacked), so the run keeps its executor."""
    from hloscope.interpret.executor import choose_executor
    from hloscope.numerics import NonfiniteWatch

    m = hs.parse(LOOP)
    options = RunOptions(hooks=[NonfiniteWatch(m, 4)])
    assert choose_executor(m, options, 4).name == "lockstep"


BIRTHS = """HloModule births
ENTRY main {
  x = f32[3] parameter(0)
  ninf = f32[] constant(-inf)
  b = f32[3] broadcast(ninf), dimensions={}
  m = f32[3] maximum(x, b)
  d = f32[3] subtract(b, b)
  ROOT r = (f32[3], f32[3]) tuple(m, d)
}
"""


def test_a_minus_infinity_constant_is_meant_but_inf_minus_inf_is_a_birth() -> None:
    """Note [Births]: -inf (a max-reduction's start, a mask) is not a finding; the NaN that
    -inf - -inf makes is."""
    first = find_nonfinite(hs.parse(BIRTHS), [np.ones(3, np.float32)])
    assert first is not None and first.instruction.name == "d"
    assert first.instruction.result[0][1].nan == 3


def test_an_input_that_already_held_one() -> None:
    m = hs.parse("HloModule i\nENTRY main {\n  x = f32[2] parameter(0)\n  ROOT y = f32[2] add(x, x)\n}\n")
    first = find_nonfinite(m, [np.array([1.0, np.nan], np.float32)])
    assert first is not None and first.kind == "input"
    assert first.inputs[0].number == 0 and first.inputs[0].summary.nan == 1
    assert find_nonfinite(m, [np.ones(2, np.float32)]) is None


def test_a_nan_constant_when_nothing_else_made_one() -> None:
    m = hs.parse("HloModule c\nENTRY main {\n  x = f32[] parameter(0)\n  n = f32[] constant(nan)\n"
                 "  ROOT y = f32[] add(x, n)\n}\n")
    first = find_nonfinite(m, [np.float32(1)])
    assert first is not None and first.kind == "constant" and first.inputs[0].name == "n"


def test_run_find_nonfinite_exit_status_and_json(tmp_path, capsys) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(LOOP)
    np.savez(tmp_path / "in.npz", arg0=X)
    assert main(["run", str(path), "--inputs", str(tmp_path / "in.npz"), "--find-nonfinite", "--json"]) == 4
    out = json.loads(capsys.readouterr().out)
    found = out["first_nonfinite"]
    assert found["instruction"]["name"] == "f" and found["fused"]["name"] == "l"
    assert found["loops"] == [{"while": "w", "iteration": 1}] and found["source"] == "/home/u/train.py:42"
    assert out["outputs"] is None  # the run stopped there
    assert main(["run", str(path), "--inputs", str(tmp_path / "in.npz"), "--find-nonfinite"]) == 4
    assert "made by l (log) inside the fusion" in capsys.readouterr().out


def test_run_find_nonfinite_on_a_finite_run(tmp_path, capsys) -> None:
    path = tmp_path / "m.hlo"
    path.write_text("HloModule f\nENTRY main {\n  x = f32[2] parameter(0)\n  ROOT y = f32[2] add(x, x)\n}\n")
    assert main(["run", str(path), "--find-nonfinite", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["first_nonfinite"] is None and "out" in out["outputs"]


def test_a_run_without_the_watch_is_unchanged() -> None:
    """The watch observes: the outputs of a run with it (run to the end) are the same."""
    from hloscope.numerics import NonfiniteWatch

    m = hs.parse(LOOP)
    plain = hs.run(m, [X * 0 + 3])
    watched = hs.run(m, [X * 0 + 3], options=RunOptions(hooks=[NonfiniteWatch(m, stop=False)]))
    np.testing.assert_array_equal(plain, watched)
