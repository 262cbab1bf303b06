"""Dataflow and liveness on small hand-written modules: aliasing through tuple, while, DUS."""
from __future__ import annotations

import pytest

import hloscope
from hloscope.analysis.memory.dataflow import analyze_dataflow
from hloscope.analysis.memory.liveness import compute_liveness, flatten_schedule, last_reads
from hloscope.ir import Opcode
from tests.conftest import SEED_FILES

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


CALLS = """HloModule c, is_scheduled=true

%less (x: f32[], y: f32[], i: s32[], j: s32[]) -> pred[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  ROOT %lt = pred[] compare(%x, %y), direction=LT
}

%callee (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%p)
}

ENTRY %main (a: f32[8]) -> (f32[8], s32[8], (f32[2], s32[2])) {
  %a = f32[8]{0} parameter(0)
  %k = f32[8]{0} call(%a), to_apply=%callee
  %iota = s32[8]{0} iota(), iota_dimension=0
  %s = (f32[8]{0}, s32[8]{0}) sort(%k, %iota), dimensions={0}, to_apply=%less
  %s0 = f32[8]{0} get-tuple-element(%s), index=0
  %s1 = s32[8]{0} get-tuple-element(%s), index=1
  %top = (f32[2]{0}, s32[2]{0}) custom-call(%a), custom_call_target="TopK", called_computations={%less}
  ROOT %t = (f32[8]{0}, s32[8]{0}, (f32[2]{0}, s32[2]{0})) tuple(%s0, %s1, %top)
}
"""


def test_call_is_sequential_and_comparators_are_embedded():
    m = hloscope.parse(CALLS)
    df = analyze_dataflow(m)
    callee, less = m.computation("callee"), m.computation("less")
    assert callee not in df.embedded and less in df.embedded  # custom call's comparator too
    # The callee is walked once, with the caller's operand: its parameter defines no value.
    (p,) = df.value_set(callee.instruction("p"))
    assert p.instruction is m.entry.instruction("a")
    assert sum(v.name == "n" for v in df.values) == 1
    (k,) = df.value_set(m.entry.instruction("k"))
    assert k.name == "n"


def test_sort_writes_over_its_only_user_operands():
    from hloscope.analysis.memory.assignment import can_share_operand

    m = hloscope.parse(CALLS)
    e = m.entry
    s, iota, k = e.instruction("s"), e.instruction("iota"), e.instruction("k")
    assert can_share_operand(iota, (), s, (1,))
    assert not can_share_operand(iota, (), s, (0,))  # only at its own tuple index
    assert can_share_operand(k, (), s, (0,))


def test_get_tuple_elements_of_a_wide_tuple_split_it_once(monkeypatch):
    # n get-tuple-elements of an n-tuple once cost O(n) each (seen on a 4,000-element loop
    # state: 11 s); the tuple's sets are now split by first index once.
    import hloscope
    from hloscope.analysis.memory import dataflow

    n = 300
    elems = ", ".join(["f32[4]{0}"] * n)
    body = "\n".join(f"  g{i} = f32[4]{{0}} get-tuple-element(p), index={i}" for i in range(n))
    text = (f"HloModule m\n\nENTRY e {{\n  p = ({elems}) parameter(0)\n{body}\n"
            f"  ROOT t = ({elems}) tuple({', '.join(f'g{i}' for i in range(n))})\n}}\n")
    visited = []
    real = dataflow._Builder.element_sets

    def counting(self, sets, k):
        visited.append(id(sets) not in self.elements)
        return real(self, sets, k)

    monkeypatch.setattr(dataflow._Builder, "element_sets", counting)
    df = dataflow.analyze_dataflow(hloscope.parse(text))
    assert len(visited) == n and sum(visited) == 1  # split on the first, reused by the rest
    p = df.module.entry.parameters[0]
    for i in (0, n - 1):
        g = next(x for x in df.module.entry.instructions if x.name == f"g{i}")
        assert df.value_set(g) == df.value_set(p, (i,))
        assert [u[0].name for u in df.uses(df.value_set(p)[0])].count(f"g{i}") == 1


ASYNC_COLLECTIVES = """HloModule m, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  p = f32[4]{0} parameter(0)
  ars = f32[4]{0} all-reduce-start(p), replica_groups={{0,1}}, to_apply=add
  ard = f32[4]{0} all-reduce-done(ars)
  ags = (f32[4]{0}, f32[8]{0}) all-gather-start(ard), replica_groups={{0,1}}, dimensions={0}
  agd = f32[8]{0} all-gather-done(ags)
  cps = (f32[8]{0}, f32[8]{0}, u32[], u32[]) collective-permute-start(agd), source_target_pairs={{0,1},{1,0}}
  ROOT cpd = f32[8]{0} collective-permute-done(cps)
}
"""


def test_async_collectives_forward_operands_and_destinations():
    # Note [Async collectives]: XLA's dataflow, not a fresh value at every index.
    import hloscope
    from hloscope.analysis.memory.dataflow import analyze_dataflow

    m = hloscope.parse(ASYNC_COLLECTIVES)
    df = analyze_dataflow(m)
    inst = {i.name: i for i in m.entry.instructions}

    def defined(name, index=()):
        (v,) = df.value_set(inst[name], index)
        return v.instruction.name, v.index

    assert defined("ard") == ("ars", ())
    assert defined("ags", (0,)) == ("ars", ())
    assert defined("agd") == ("ags", (1,))
    assert defined("cps", (0,)) == ("ags", (1,))
    assert defined("cpd") == ("cps", (1,))
    assert {(v.instruction.name, v.index) for v in df.values if v.instruction.name in ("ard", "agd", "cpd")} == set()


@pytest.mark.parametrize("seed", ["000", "001", "003", "004"])  # (002 is a buffer assignment dump)
def test_each_values_last_reader_is_its_latest_use(seed: str) -> None:
    # Liveness finds last readers in one pass without the use lists (Note [Lean values]); the
    # two must apply one rule: a call's use counts in its callee, a while's at its body's
    # parameter, tuples and bitcasts forward without reading.
    m = hloscope.load(SEED_FILES[seed])
    df = analyze_dataflow(m)
    seq, time_of, spans = flatten_schedule(m, _order(m))
    last = last_reads(df, time_of, spans)
    for v in df.values:
        times = [-1]
        for user, _, _ in df.uses(v):
            if user.opcode is Opcode.CALL and user.attrs["to_apply"] in spans:
                continue
            if user.opcode is Opcode.WHILE and user.attrs["body"] in spans:
                user = user.attrs["body"].parameters[0]
            times.append(time_of.get(user, -1))
        assert last[v.id] == max(times), v
    assert any(t >= 0 for t in last)
