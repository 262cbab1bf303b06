"""The estimated schedule as a timeline: loop bodies recorded once and unrolled, lanes, exposed communication."""
from __future__ import annotations

import pytest

import hloscope
from hloscope.analysis.hardware import load_hardware
from hloscope.analysis.timing import estimate_time
from hloscope.analysis.trace import (
    chrome_trace,
    exposed_communication,
    trip_offsets,
    unrolled_events,
)
from tests.conftest import SEED_FILES

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""
# An asynchronous all-reduce with a big matmul between its start and done: hidden behind it.
HIDDEN = "HloModule m, replica_count=8\n" + ADD + """ENTRY e {
  x = f32[1024]{0} parameter(0)
  a = f32[2048,2048]{1,0} parameter(1)
  s = f32[1024]{0} all-reduce-start(x), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=add
  d = f32[2048,2048]{1,0} dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r = f32[1024]{0} all-reduce-done(s)
  ROOT t = (f32[1024]{0}, f32[2048,2048]{1,0}) tuple(r, d)
}"""
# The same all-reduce, synchronous: compute waits for all of it.
BLOCKING = "HloModule m, replica_count=8\n" + ADD + """ENTRY e {
  x = f32[1024]{0} parameter(0)
  r = f32[1024]{0} all-reduce(x), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=add
  ROOT n = f32[1024]{0} negate(r)
}"""
# A TPU prefetch: copy-start ... copy-done overlaps the work between them.
PREFETCH = """HloModule m
ENTRY e {
  p = f32[4096,4096]{1,0} parameter(0)
  q = f32[1024,1024]{1,0} parameter(1)
  s = (f32[4096,4096]{1,0:S(1)}, f32[4096,4096]{1,0}, u32[]) copy-start(p)
  d = f32[1024,1024]{1,0} dot(q, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = f32[4096,4096]{1,0:S(1)} copy-done(s)
  ROOT t = (f32[4096,4096]{1,0:S(1)}, f32[1024,1024]{1,0}) tuple(c, d)
}"""


@pytest.fixture(scope="module")
def seed_003():
    return estimate_time(hloscope.load(SEED_FILES["003"]), load_hardware("h100-sxm"))


def test_loop_bodies_are_recorded_once_from_the_loop_start(seed_003):
    est = seed_003
    loops = [e for e in est.schedule if e.opcode == "while" and e.depth == 0]
    assert len(loops) == 18
    for w in loops:
        body = [e for e in est.schedule if e.parent == w.instruction]
        assert body and all(e.depth == 1 for e in body)
        assert min(e.start for e in body) == pytest.approx(w.start)
        period = (w.end - w.start) / est.trip_counts[w.instruction]
        assert max(e.end for e in body) <= w.start + period * (1 + 1e-9)
    assert len({e.instruction for e in est.schedule}) == len(est.schedule)  # each once


def test_unrolled_loops_fill_the_loop(seed_003):
    est = seed_003
    events, folded = unrolled_events(est)
    assert not folded
    w = next(e for e in est.schedule if e.opcode == "while")
    runs = [e for e in events if e.parent == w.instruction]
    assert {e.trip for e in runs} == set(range(est.trip_counts[w.instruction]))
    assert max(e.end for e in runs) == pytest.approx(w.end, rel=1e-9)
    assert len(trip_offsets(est)[w.instruction]) == 64
    folded_events, folded = unrolled_events(est, limit=100)
    assert folded and len(folded_events) == len(est.schedule)
    assert chrome_trace(est, limit=100)["otherData"]["folded"] is True


def test_a_synchronous_collective_is_all_exposed():
    est = estimate_time(hloscope.parse(BLOCKING), load_hardware("h100-sxm"))
    exposed = exposed_communication(est)
    assert exposed["r"] == pytest.approx(est.per_instruction["r"].seconds)


def test_an_asynchronous_collective_hidden_by_compute_is_not_exposed():
    est = estimate_time(hloscope.parse(HIDDEN), load_hardware("h100-sxm"))
    s = next(e for e in est.schedule if e.instruction == "s")
    d = next(e for e in est.schedule if e.instruction == "d")
    assert s.stream == "communication" and d.start <= s.start and s.end <= d.end
    assert "s" not in exposed_communication(est)


def test_a_prefetch_runs_on_the_copy_engine_beside_compute():
    est = estimate_time(hloscope.parse(PREFETCH), load_hardware("tpu-v5p"))
    s = next(e for e in est.schedule if e.instruction == "s")
    d = next(e for e in est.schedule if e.instruction == "d")
    assert s.stream == "copy" and d.stream == "compute"
    assert s.start == d.start == 0.0  # they overlap
    assert est.total_seconds == pytest.approx(max(s.end, d.end))
    lanes = {e["args"]["name"] for e in chrome_trace(est)["traceEvents"] if e["ph"] == "M"}
    assert {"compute", "collectives", "async copies", "host transfers"} <= lanes
