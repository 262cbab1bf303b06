"""Lockstep execution (interpret/lockstep.py, Note [Lockstep]) gives exactly the per-device
path's results: on every multi-device oracle program, on seeds 000/001/004, and on small
modules whose control flow differs per device (where "auto" runs that instruction per
device)."""
from __future__ import annotations

import numpy as np
import pytest

try:
    from tests.conftest import SEED_FILES
except ImportError:  # tests/ is not a package
    from conftest import SEED_FILES  # type: ignore[no-redef]

import hloscope
from hloscope.errors import InterpretError
from hloscope.interpret import RunOptions, lockstep, run
from hloscope.interpret.inputs import random_inputs
from hloscope.testing.oracle.programs import PROGRAMS

MULTI_DEVICE = [p.name for p in PROGRAMS if p.num_devices > 1]
LOCKSTEP = RunOptions(mode="lockstep")
PER_DEVICE = RunOptions(mode="per-device")


def _leaves(v):
    if isinstance(v, (tuple, list)):
        return [leaf for e in v for leaf in _leaves(e)]
    return [np.asarray(v)]


def assert_identical(a, b) -> None:
    la, lb = _leaves(a), _leaves(b)
    assert len(la) == len(lb)
    for i, (x, y) in enumerate(zip(la, lb, strict=True)):
        assert x.shape == y.shape and x.dtype == y.dtype, f"leaf {i}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}"
        np.testing.assert_array_equal(x, y, err_msg=f"leaf {i}")


@pytest.mark.parametrize("stage", ["pre", "post"])
@pytest.mark.parametrize("name", MULTI_DEVICE)
def test_oracle_lockstep_equals_per_device(oracle_corpus, name: str, stage: str) -> None:
    case = oracle_corpus.case(name)
    meta = case.meta
    r, p = meta["num_replicas"], meta["num_partitions"]
    if r * p == 1:
        pytest.skip("one device")
    module = hloscope.parse(case.pre_text if stage == "pre" else case.post_text)
    if not lockstep.applies(module):
        pytest.skip("lockstep does not apply")
    try:
        per_device = run(module, case.inputs(), replicas=r, partitions=p, options=PER_DEVICE)
    except InterpretError:
        pytest.skip("the per-device path fails on this program (tested elsewhere)")
    try:
        got = run(module, case.inputs(), replicas=r, partitions=p, options=LOCKSTEP)
    except lockstep.Diverged:
        # Control flow that depends on the device (e.g. on axis_index) is what lockstep cannot
        # express; mode "auto" then starts over per device (test_run_oracle checks that path).
        pytest.skip("the devices' control flow differs")
    assert_identical(got, per_device)


@pytest.mark.parametrize("seed,grid", [("000", {"replicas": 8}), ("001", {"partitions": 4}),
                                       ("004", {"replicas": 4})])
def test_seed_lockstep_equals_per_device(seed: str, grid: dict) -> None:
    m = hloscope.load(SEED_FILES[seed])
    n = grid.get("replicas", 1) * grid.get("partitions", 1)
    inputs = [random_inputs(m, d, "positive") for d in range(n)]  # different data per device
    per_device = run(m, inputs, **grid, options=PER_DEVICE)
    got = run(m, inputs, **grid, options=LOCKSTEP)
    assert_identical(got, per_device)


_DIVERGING = """
HloModule diverge, replica_count=2

cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  r = u32[] replica-id()
  limit = s32[] convert(r)
  three = s32[] constant(3)
  lim = s32[] add(limit, three)
  ROOT lt = pred[] compare(i, lim), direction=LT
}

body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  two = f32[] constant(2)
  b = f32[4] broadcast(two), dimensions={}
  y = f32[4] multiply(x, b)
  ROOT t = (s32[], f32[4]) tuple(j, y)
}

ENTRY main {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  s = (s32[], f32[4]) tuple(zero, x)
  w = (s32[], f32[4]) while(s), condition=cond, body=body
  ROOT out = f32[4] get-tuple-element(w), index=1
}
"""


def test_diverging_loop_runs_per_device_in_auto_mode() -> None:
    m = hloscope.parse(_DIVERGING)
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(lockstep.Diverged):
        run(m, [x], replicas=2, options=LOCKSTEP)
    out = run(m, [x], replicas=2)
    np.testing.assert_array_equal(out[0], x * 8)
    np.testing.assert_array_equal(out[1], x * 16)
    assert_identical(out, run(m, [x], replicas=2, options=PER_DEVICE))


# Devices 0-1 loop 2 times, 2-3 loop 3 times; each iteration all-reduces within its pair, so
# the loop that left lockstep still meets the other devices. After it, a conditional whose
# selector differs per device, then lockstep again.
_DIVERGING_COLLECTIVES = """
HloModule diverge2, replica_count=4

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

cond {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  r = u32[] replica-id()
  two = u32[] constant(2)
  half = u32[] divide(r, two)
  h = s32[] convert(half)
  lim = s32[] add(h, h)
  ROOT lt = pred[] compare(i, lim), direction=LE
}

body {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[3] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[3] all-reduce(x), replica_groups={{0,1},{2,3}}, to_apply=add
  ROOT t = (s32[], f32[3]) tuple(j, y)
}

neg {
  a = f32[3] parameter(0)
  ROOT n = f32[3] negate(a)
}

twice {
  a = f32[3] parameter(0)
  ROOT c = f32[3] add(a, a)
}

ENTRY main {
  x = f32[3] parameter(0)
  zero = s32[] constant(0)
  s = (s32[], f32[3]) tuple(zero, x)
  w = (s32[], f32[3]) while(s), condition=cond, body=body
  v = f32[3] get-tuple-element(w), index=1
  r = u32[] replica-id()
  one = u32[] constant(1)
  odd = u32[] and(r, one)
  sel = s32[] convert(odd)
  c = f32[3] conditional(sel, v, v), branch_computations={neg, twice}
  ROOT all = f32[3] all-reduce(c), replica_groups={{0,1,2,3}}, to_apply=add
}
"""


def test_divergence_leaves_lockstep_for_one_instruction_only() -> None:
    m = hloscope.parse(_DIVERGING_COLLECTIVES)
    inputs = [[np.full(3, d + 1, np.float32)] for d in range(4)]
    with pytest.raises(lockstep.Diverged):
        run(m, inputs, replicas=4, options=LOCKSTEP)
    out = run(m, inputs, replicas=4)
    # Pair (1, 2) all-reduces once (3 each), pair (3, 4) three times (7, 14, 28); even devices
    # negate, odd ones double: -3 + 6 - 28 + 56.
    expected = 31
    for d in range(4):
        np.testing.assert_array_equal(out[d], np.full(3, expected, np.float32))
    assert_identical(out, run(m, inputs, replicas=4, options=PER_DEVICE))


@pytest.mark.parametrize("mode", ["auto", "per-device"])
def test_donated_inputs_are_handed_over(mode: str) -> None:
    m = hloscope.parse(_DIVERGING_COLLECTIVES)
    inputs = [[np.full(3, d + 1, np.float32)] for d in range(4)]
    expected = run(m, inputs, replicas=4, options=PER_DEVICE)
    given = [[x.copy() for x in args] for args in inputs]
    got = run(m, given, replicas=4, options=RunOptions(mode=mode), donate=True)
    assert given == []  # the caller's list is emptied: the run holds the arrays alone
    assert_identical(got, expected)


def test_a_donated_input_can_hold_the_output() -> None:
    m = hloscope.parse("HloModule sq\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] multiply(x, x)\n}")
    x = np.arange(4, dtype=np.float32)
    kept = run(m, [x])
    assert not np.shares_memory(kept, x) and x[3] == 3  # not donated: the input is left alone
    address = x.ctypes.data
    given = [x]
    del x  # donation means the caller keeps no reference
    out = run(m, given, donate=True)
    assert given == [] and out.ctypes.data == address  # the output took the input's memory
    np.testing.assert_array_equal(out, kept)
