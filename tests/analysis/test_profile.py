"""The op profile: time by category and opcode, what it achieves against the peaks, what to fix first."""
from __future__ import annotations

import pytest

import hloscope
from hloscope.analysis.cost import analyze_cost
from hloscope.analysis.hardware import load_hardware
from hloscope.analysis.profile import (
    CATEGORIES,
    analyze_profile,
    category_of,
    opcode_key,
    peak_bandwidth,
)
from hloscope.analysis.timing import estimate_time
from tests.conftest import MODULE_SEEDS, SEED_FILES


def profile_of(module, hardware: str):
    hw = load_hardware(hardware)
    cost = analyze_cost(module)
    return analyze_profile(module, estimate_time(module, hw, cost_report=cost), cost, hw)


@pytest.mark.parametrize("seed", MODULE_SEEDS)
@pytest.mark.parametrize("hardware", ["h100-sxm", "tpu-v5p", "cpu"])
def test_rows_add_up_and_stay_within_the_peaks(seed, hardware):
    p = profile_of(hloscope.load(SEED_FILES[seed]), hardware)
    assert p.categories and {r.key for r in p.categories} <= set(CATEGORIES)
    assert sum(r.seconds for r in p.categories) == pytest.approx(p.op_seconds)
    assert sum(r.seconds for r in p.opcodes) == pytest.approx(p.op_seconds)
    assert sum(r.share for r in p.categories) == pytest.approx(1.0)
    assert sum(r.instructions for r in p.categories) == sum(r.instructions for r in p.opcodes)
    for r in p.opcodes:
        # the estimate never runs faster than the peaks it assumes
        assert r.flop_utilization is None or r.flop_utilization <= 1.0 + 1e-6, r
        assert r.bandwidth_utilization is None or r.bandwidth_utilization <= 1.0 + 1e-6, r
        assert r.bound in ("compute", "memory", "launch", "communication")
        assert r.top and len(r.top) <= 20


def test_seed_003_what_to_fix_first():
    p = profile_of(hloscope.load(SEED_FILES["003"]), "h100-sxm")
    kinds = [a.kind for a in p.advice]
    assert kinds[0] == "launch-bound" and "memory-bound" in kinds and "exposed communication" in kinds
    assert [a.seconds for a in p.advice] == sorted((a.seconds for a in p.advice), reverse=True)
    exposed = next(a for a in p.advice if a.kind == "exposed communication")
    assert exposed.seconds == pytest.approx(p.exposed_communication_seconds)
    assert "synchronous" in exposed.words and all(n.startswith("all-reduce") for n in exposed.instructions)
    assert "CUDA graphs" in p.advice[0].words
    by_key = {r.key: r for r in p.opcodes}
    assert by_key["custom-call __cublas$gemm"].category == "matmul/convolution"
    assert by_key["fusion (kLoop)"].category == "loop fusion"


def test_a_loop_that_dominates_is_named():
    text = """HloModule loop
body { p = (s32[], f32[256,256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[256,256] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[256,256] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (s32[], f32[256,256]) tuple(j, y) }
cond { p = (s32[], f32[256,256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(100)
  ROOT lt = pred[] compare(i, n), direction=LT }
ENTRY e { x = f32[256,256] parameter(0)
  zero = s32[] constant(0)
  t = (s32[], f32[256,256]) tuple(zero, x)
  w = (s32[], f32[256,256]) while(t), condition=cond, body=body
  ROOT r = f32[256,256] get-tuple-element(w), index=1 }"""
    p = profile_of(hloscope.parse(text), "cpu")
    loop = next(a for a in p.advice if a.kind == "loop")
    assert loop.instructions[0] == "w" and "100 trips of body" in loop.words and "y" in loop.instructions
    assert all("CUDA" not in a.words for a in p.advice)  # a CPU profile's words


def test_categories_of_instructions():
    m = hloscope.load(SEED_FILES["004"])
    cats = {i.name: category_of(i) for i in m.entry.instructions}
    assert cats["fusion.10"] == "matmul/convolution"  # an output fusion around a convolution
    assert cats["all-reduce.28"] == "collective" and cats["copy-start"] == "data movement"
    assert opcode_key(next(i for i in m.entry.instructions if i.name == "fusion.10")) == "fusion (kOutput)"


def test_a_cpu_profiles_peak_bandwidth_is_its_cache_bandwidth():
    hw = load_hardware("cpu")
    assert peak_bandwidth(hw) == max(hw.memory_bandwidth, hw.cpu_rates.cached_bandwidth)
    assert peak_bandwidth(load_hardware("h100-sxm")) == load_hardware("h100-sxm").memory_bandwidth
