"""Time estimates: roofline per instruction, α-β collectives, schedule and Chrome trace."""
from __future__ import annotations

import dataclasses
import json

import pytest

import hloscope
from hloscope.analysis.hardware import load_hardware
from hloscope.analysis.timing import estimate_time, roofline_seconds
from tests.conftest import MODULE_SEEDS, SEED_FILES


@pytest.fixture(scope="module")
def seeds():
    return {s: hloscope.load(SEED_FILES[s]) for s in MODULE_SEEDS}


@pytest.mark.parametrize("hw", ["h100-sxm", "tpu-v5e"])
@pytest.mark.parametrize("seed", MODULE_SEEDS)
def test_seeds_estimate_and_trace(seeds, seed: str, hw: str) -> None:
    est = estimate_time(seeds[seed], load_hardware(hw))
    assert est.total_seconds > 0
    assert est.schedule
    assert all(op.end >= op.start >= 0 for op in est.schedule)
    assert max(op.end for op in est.schedule) <= est.total_seconds + 1e-12
    trace = json.loads(json.dumps(est.to_chrome_trace()))
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == len(est.schedule)
    assert all({"name", "ts", "dur", "pid", "tid"} <= set(e) for e in spans)
    json.dumps(est.to_json(top=5))


MATMUL = """HloModule mm
ENTRY e {
  a = f32[4096,4096]{1,0} parameter(0)
  b = f32[4096,4096]{1,0} parameter(1)
  ROOT d = f32[4096,4096]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_matmul_scales_with_flops() -> None:
    hw = load_hardware("h100-sxm")
    slow = dataclasses.replace(hw, peak_flops={k: v / 2 for k, v in hw.peak_flops.items()})
    module = hloscope.parse(MATMUL)
    fast_t = estimate_time(module, hw).total_seconds
    slow_t = estimate_time(module, slow).total_seconds
    assert 1.9 < slow_t / fast_t <= 2.0
    flops = 2 * 4096**3
    assert fast_t == pytest.approx(flops / hw.flops_per_second("f32"), rel=0.05)


def test_roofline_combination() -> None:
    assert roofline_seconds(1.0, 0.0) == 1.0
    assert roofline_seconds(1.0, 1.0) == pytest.approx(1.05)
    assert roofline_seconds(0.2, 1.0) == pytest.approx(1.01)


ASYNC = """HloModule m, replica_count=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[1048576] parameter(0)
  y = f32[1024,1024] parameter(1)
  s = f32[1048576] all-reduce-start(x), replica_groups={}, to_apply=add
  d = f32[1024,1024] dot(y, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r = f32[1048576] all-reduce-done(s)
  ROOT t = (f32[1048576], f32[1024,1024]) tuple(r, d)
}
"""


def test_async_collective_overlaps_compute() -> None:
    hw = load_hardware("h100-sxm")
    est = estimate_time(hloscope.parse(ASYNC), hw)
    by_name = {op.instruction: op for op in est.schedule}
    comm, dot = by_name["s"], by_name["d"]
    assert comm.stream == "communication" and dot.stream == "compute"
    assert comm.start == dot.start == 0.0
    assert est.total_seconds == pytest.approx(max(comm.end, dot.end))
    sync = estimate_time(hloscope.parse(ASYNC.replace("all-reduce-start", "all-reduce")
                                        .replace("  r = f32[1048576] all-reduce-done(s)\n", "")
                                        .replace("tuple(r, d)", "tuple(s, d)")), hw)
    assert sync.total_seconds == pytest.approx(comm.duration + dot.duration)


def test_while_multiplies_by_trip_count(seeds) -> None:
    est = estimate_time(seeds["003"], load_hardware("h100-sxm"))
    assert set(est.trip_counts.values()) == {64}
