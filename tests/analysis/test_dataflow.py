"""Dataflow and liveness on small hand-written modules: aliasing through tuple, while, DUS."""
from __future__ import annotations

import hloscope
from hloscope.analysis.dataflow import analyze_dataflow
from hloscope.analysis.liveness import compute_liveness

WHILE = """HloModule w, is_scheduled=true

%cond (p: (s32[], f32[8])) -> pred[] {
  %p = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (p.1: (s32[], f32[8])) -> (s32[], f32[8]) {
  %p.1 = (s32[], f32[8]{0}) parameter(0)
  %i.1 = s32[] get-tuple-element(%p.1), index=0
  %x = f32[8]{0} get-tuple-element(%p.1), index=1
  %one = s32[] constant(1)
  %i.2 = s32[] add(%i.1, %one)
  %y = f32[8]{0} sine(%x)
  ROOT %t = (s32[], f32[8]{0}) tuple(%i.2, %y)
}

ENTRY %main (a: f32[8], b: s32[]) -> f32[8] {
  %a = f32[8]{0} parameter(0)
  %b = s32[] parameter(1)
  %init = (s32[], f32[8]{0}) tuple(%b, %a)
  %w = (s32[], f32[8]{0}) while(%init), condition=%cond, body=%body
  ROOT %r = f32[8]{0} get-tuple-element(%w), index=1
}
"""


def _order(m):
    return {c: list(c.instructions) for c in m.computations}


def test_while_state_shares_one_buffer():
    m = hloscope.parse(WHILE)
    df = analyze_dataflow(m)
    w = m.entry.instruction("w")
    (out,) = df.value_set(w, (1,))
    (a,) = df.value_set(m.entry.instruction("a"))
    body = m.computation("body")
    (y,) = df.value_set(body.instruction("y"))
    assert df.buffer_of[out.id] is df.buffer_of[a.id] is df.buffer_of[y.id]
    assert df.buffer_of[out.id].live_out


def test_gte_forwards_and_tuple_defines_only_top():
    m = hloscope.parse(WHILE)
    df = analyze_dataflow(m)
    init = m.entry.instruction("init")
    assert df.value_set(init, (1,)) == df.value_set(m.entry.instruction("a"))
    (top,) = df.value_set(init, ())
    assert top.instruction is init


def test_live_ranges_flatten_condition_then_body():
    m = hloscope.parse(WHILE)
    df = analyze_dataflow(m)
    live = compute_liveness(df, _order(m))
    names = [i.name for i in live.sequence]
    assert names.index("lt") < names.index("t") < names.index("w")
    (a,) = df.value_set(m.entry.instruction("a"))
    assert live.ranges[a.id][0] == 0  # entry parameters start at 0


DUS = """HloModule d, is_scheduled=true

ENTRY %main (x: f32[16], u: f32[4], i: s32[]) -> f32[16] {
  %x = f32[16]{0} parameter(0)
  %u = f32[4]{0} parameter(1)
  %i = s32[] parameter(2)
  %c = f32[16]{0} copy(%x)
  ROOT %d = f32[16]{0} dynamic-update-slice(%c, %u, %i)
}
"""


def test_dynamic_update_slice_is_in_place():
    m = hloscope.parse(DUS)
    df = analyze_dataflow(m)
    (c,) = df.value_set(m.entry.instruction("c"))
    (d,) = df.value_set(m.entry.instruction("d"))
    assert c is not d and df.buffer_of[c.id] is df.buffer_of[d.id]
