"""Time estimates: roofline per instruction, α-β collectives, schedule and Chrome trace."""
from __future__ import annotations

import dataclasses
import json
import math

import pytest

import hloscope
from hloscope.analysis.cpu_model import CHAIN_DEPTH
from hloscope.analysis.hardware import CpuRates, HardwareSpec, load_hardware
from hloscope.analysis.timing import estimate_time, execution_seconds, roofline_seconds
from hloscope.analysis.trace import trip_offsets
from tests.analysis.async_sugar import ASYNC_SUGAR
from tests.conftest import MODULE_SEEDS, SEED_FILES


@pytest.fixture(scope="module")
def seeds():
    return {s: hloscope.load(SEED_FILES[s]) for s in MODULE_SEEDS}


@pytest.mark.parametrize("hw", ["h100-sxm", "tpu-v5e"])
@pytest.mark.parametrize("seed", MODULE_SEEDS)
def test_seeds_estimate_and_trace(seeds, seed: str, hw: str) -> None:
    est = estimate_time(seeds[seed], load_hardware(hw))
    assert est.schedule
    assert all(op.end >= op.start >= 0 for op in est.schedule)
    # The step ends when its last interval does, and every interval is an instruction's.
    assert max(op.end for op in est.schedule) == pytest.approx(est.total_seconds, rel=1e-12)
    assert {op.instruction for op in est.schedule} <= set(est.per_instruction)
    # A kernel's time is at least its launch, and the terms are the per-instruction terms' sums.
    assert est.launch_seconds == pytest.approx(load_hardware(hw).kernel_launch_overhead * sum(
        t.executions for t in est.per_instruction.values() if t.bound not in ("control", "communication")))
    trace = json.loads(json.dumps(est.to_chrome_trace()))
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    # Every recorded interval, loop bodies once per trip (analysis.trace).
    runs = {p: len(o) for p, o in trip_offsets(est).items()}
    assert len(spans) == sum(runs[op.parent] if op.parent else 1 for op in est.schedule)
    assert sum(op.depth == 0 for op in est.schedule) == sum("parent" not in e["args"] for e in spans)
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


def test_async_sugar_runs_on_the_communication_stream() -> None:
    """A collective written as async sugar (`all-to-all-start`) is timed by the link model and
    overlaps the compute between its start and done; other wrapped ops are kernels."""
    hw = load_hardware("h100-sxm")
    est = estimate_time(hloscope.parse(ASYNC_SUGAR["collectives"]), hw)
    by_name = {op.instruction: op for op in est.schedule}
    assert by_name["s"].stream == by_name["t"].stream == "communication"
    assert est.communication_seconds > 2 * hw.collective_latency
    for name in sorted(ASYNC_SUGAR):
        seconds = estimate_time(hloscope.parse(ASYNC_SUGAR[name]), hw).total_seconds
        assert 0 < seconds < 1e-3, name


def test_while_multiplies_by_trip_count(seeds) -> None:
    est = estimate_time(seeds["003"], load_hardware("h100-sxm"))
    assert set(est.trip_counts.values()) == {64}


TRANSCENDENTAL_LOOP = """HloModule t
fused {
  p = f32[1048576]{0} parameter(0)
  e = f32[1048576]{0} exponential(p)
  ROOT t = f32[1048576]{0} tanh(e)
}
ENTRY e {
  x = f32[1048576]{0} parameter(0)
  ROOT f = f32[1048576]{0} fusion(x), kind=kLoop, calls=fused
}
"""

TRANSPOSING_COPY = """HloModule c
ENTRY e {
  x = f32[2048,2048]{1,0} parameter(0)
  ROOT c = f32[2048,2048]{0,1} copy(x)
}
"""


def link_seconds(r: CpuRates, depth: int) -> float:
    """Seconds of one transcendental on a loop's longest chain of ``depth`` (Note [Chained
    transcendentals] in cpu_model.py)."""
    independent, chain = 1 / r.unchained_transcendentals, 1 / r.transcendentals
    return independent + (chain - independent) * math.log(depth) / math.log(CHAIN_DEPTH)


def _streamed(read: float, written: float, bandwidth: float) -> float:
    """Note [Reads and writes]: a written byte costs two transfers, a read one; the rates are
    z = x + y's (16 transfers per 12 bytes)."""
    return (read + 2 * written) * 12 / 16 / bandwidth


def test_cpu_model_uses_loop_rates() -> None:
    """Note [The XLA:CPU model]: transcendentals at their own rate, strided copies at theirs."""
    bundled = load_hardware("cpu")
    assert bundled.cpu_rates is not None
    # Without the cache speed-up first: every loop streams at memory_bandwidth.
    cpu = dataclasses.replace(bundled, cpu_rates=dataclasses.replace(bundled.cpu_rates, cached_bandwidth=0.0,
                                                                     cached_transpose_bandwidth=0.0))
    rates = cpu.cpu_rates
    assert rates is not None
    loop = estimate_time(hloscope.parse(TRANSCENDENTAL_LOOP), cpu)
    # The tanh takes the exp's result: a chain of two, each a link of such a chain (Note
    # [Chained transcendentals] in cpu_model.py).
    n = 1048576
    compute = 2 * n * link_seconds(rates, 2)
    memory = _streamed(4 * n, 4 * n, cpu.memory_bandwidth)
    assert loop.compute_seconds == pytest.approx(compute)
    assert loop.total_seconds == pytest.approx(roofline_seconds(compute, memory) + cpu.kernel_launch_overhead
                                               + execution_seconds(hloscope.parse(TRANSCENDENTAL_LOOP), cpu))
    # With it, a loop whose bytes the core's cache keeps (CACHED_STREAM_BYTES) writes at the
    # cached rate, and reads its parameter from memory (Note [Cold operands]); larger ones
    # stream between the cached and the memory rate, on log(bytes).
    small = TRANSCENDENTAL_LOOP.replace("1048576", "32768")
    cached = estimate_time(hloscope.parse(small), bundled).memory_seconds
    assert cached == pytest.approx(_streamed(0, 4 * 32768, bundled.cpu_rates.cached_bandwidth)
                                   + _streamed(4 * 32768, 0, bundled.memory_bandwidth))
    larger = estimate_time(hloscope.parse(TRANSCENDENTAL_LOOP), bundled)
    assert 32 * cached < larger.memory_seconds < memory
    # The same module on a profile without cpu_rates: transcendentals at the matmul peak.
    plain = dataclasses.replace(cpu, cpu_rates=None)
    assert estimate_time(hloscope.parse(TRANSCENDENTAL_LOOP), plain).compute_seconds < compute / 10
    copy = estimate_time(hloscope.parse(TRANSPOSING_COPY), cpu)
    assert copy.memory_seconds == pytest.approx(2 * 4 * 2048**2 / rates.transpose_bandwidth)


def test_cpu_model_dot_uses_the_dot_rate() -> None:
    """A dot's FLOPs at the dot rate, and the one Eigen call's set-up (Note [Eigen dots])."""
    cpu = load_hardware("cpu")
    assert cpu.cpu_rates is not None
    est = estimate_time(hloscope.parse(MATMUL), cpu)
    assert est.compute_seconds == pytest.approx(2 * 4096**3 / cpu.flops_per_second("f32")
                                                + cpu.cpu_rates.eigen_dot_overhead)


_LT = "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction=LT\n}\n"
_LONG_LT = ("lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  n = f32[] negate(a)\n"
            "  m = f32[] negate(b)\n  ROOT c = pred[] compare(m, n), direction=GT\n}\n")
_FAMILIES = {
    "sort": ("ENTRY e {\n  x = f32[8,1024]{1,0} parameter(0)\n"
             "  ROOT s = f32[8,1024]{1,0} sort(x), dimensions={1}, to_apply=lt\n}\n"),
    "gather": ("ENTRY e {\n  t = f32[4096,32]{1,0} parameter(0)\n  i = s32[1000,1]{1,0} parameter(1)\n"
               "  ROOT g = f32[1000,32]{1,0} gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
               "start_index_map={0}, index_vector_dim=1, slice_sizes={1,32}\n}\n"),
    "depthwise": ("ENTRY e {\n  x = f32[2,16,16,8]{3,2,1,0} parameter(0)\n  w = f32[3,3,1,8]{3,2,1,0} parameter(1)\n"
                  "  ROOT c = f32[2,16,16,8]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, "
                  "dim_labels=b01f_01io->b01f, feature_group_count=8\n}\n"),
    "topk": ("gt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction=GT\n}\n"
             "ENTRY e {\n  x = f32[64,512]{1,0} parameter(0)\n  ROOT r = (f32[64,4]{1,0}, s32[64,4]{1,0}) "
             "custom-call(x), custom_call_target=\"TopK\", called_computations={gt}\n}\n"),
    "reduce_window": ("add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
                      "ENTRY e {\n  x = f32[64,512]{1,0} parameter(0)\n  z = f32[] constant(0)\n"
                      "  ROOT r = f32[64,512]{1,0} reduce-window(x, z), window={size=1x16 pad=0_0x15_0}, to_apply=add\n}\n"),
}


def _compute(body: str, hw: HardwareSpec, header: str = "") -> float:
    return estimate_time(hloscope.parse("HloModule m\n" + header + body), hw).compute_seconds


def test_cpu_model_families_run_at_their_own_rates() -> None:
    """Note [The XLA:CPU model]: the loops that do not vectorise each have a calibrated rate."""
    cpu = load_hardware("cpu")
    r = cpu.cpu_rates
    assert r is not None
    comparisons = 8 * 1024 * 10
    assert _compute(_FAMILIES["sort"], cpu, _LT) == pytest.approx(comparisons / r.sort_comparisons)
    # Two more comparator instructions cost two over comparator_ops per comparison.
    assert _compute(_FAMILIES["sort"], cpu, _LONG_LT) == pytest.approx(
        comparisons * (1 / r.sort_comparisons + 2 / r.comparator_ops))
    # A 4096-row table is CACHED_TABLE_BYTES: the cached gather rate.
    assert _compute(_FAMILIES["gather"], cpu) == pytest.approx(1000 * 32 / r.cached_gather_elements)
    # XLA's FLOPs of the depthwise convolution (valid window positions only), at its own rate.
    flops = hloscope.cost(hloscope.parse("HloModule m\n" + _FAMILIES["depthwise"])).total.flops
    assert 0 < flops < 2 * 2 * 16 * 16 * 8 * 9
    assert _compute(_FAMILIES["depthwise"], cpu) == pytest.approx(flops / r.grouped_conv_flops)
    assert _compute(_FAMILIES["topk"], cpu) == pytest.approx(64 * 512 / r.topk_elements)
    walk = 64 * 512 * 16 / r.reduce_window_elements
    assert _compute(_FAMILIES["reduce_window"], cpu) == pytest.approx(walk, rel=0.5)
    assert _compute(_FAMILIES["reduce_window"], cpu) >= walk
    # Each rate is the one that decides: halving it doubles that family's compute time.
    for name, field in [("gather", "cached_gather_elements"), ("depthwise", "grouped_conv_flops"),
                        ("topk", "topk_elements")]:
        slow = dataclasses.replace(cpu, cpu_rates=dataclasses.replace(r, **{field: getattr(r, field) / 2}))
        assert _compute(_FAMILIES[name], slow) == pytest.approx(2 * _compute(_FAMILIES[name], cpu), rel=0.05)


SOFTMAX_FUSION = """HloModule s
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
fused {
  p = f32[256,1024]{1,0} parameter(0)
  e = f32[256,1024]{1,0} exponential(p)
  z = f32[] constant(0)
  s = f32[256]{0} reduce(e, z), dimensions={1}, to_apply=add
  b = f32[256,1024]{1,0} broadcast(s), dimensions={0}
  ROOT d = f32[256,1024]{1,0} divide(e, b)
}
ENTRY e {
  x = f32[256,1024]{1,0} parameter(0)
  ROOT f = f32[256,1024]{1,0} fusion(x), kind=kLoop, calls=fused
}
"""


def test_cpu_model_counts_producers_each_loop_evaluates() -> None:
    """Note [Recomputed producers]: the exp feeds the reduction's loop and the root's, so it runs
    twice, though XLA's cost analysis counts it once."""
    cpu = load_hardware("cpu")
    r = cpu.cpu_rates
    assert r is not None
    module = hloscope.parse(SOFTMAX_FUSION)
    cost = hloscope.cost(module).total
    n = 256 * 1024
    assert cost.transcendentals == n
    # Twice, each at the unchained rate (it depends on no other transcendental).
    twice = cost.flops / r.elementwise_flops + 2 * n * link_seconds(r, 1)
    assert estimate_time(module, cpu).compute_seconds == pytest.approx(twice)
    # The input is read by both loops too: twice, where the cost analysis counts it once.
    flat = dataclasses.replace(cpu, cpu_rates=dataclasses.replace(r, cached_bandwidth=0.0))
    assert estimate_time(module, flat).memory_seconds == pytest.approx(
        (cost.bytes_accessed + 4 * n) / cpu.memory_bandwidth)


FRESH = """HloModule f
ENTRY e {
  x = f32[8388608]{0} parameter(0)
  ROOT y = f32[8388608]{0} negate(x)
}
"""
SMALL = FRESH.replace("8388608", "4194304")


def test_cpu_model_large_results_pay_for_fresh_pages() -> None:
    """A top-level result of 32 MiB is mapped anew on every run; a smaller one is not."""
    cpu = load_hardware("cpu")
    r = cpu.cpu_rates
    assert r is not None and r.fresh_page_bandwidth > 0
    without = dataclasses.replace(cpu, cpu_rates=dataclasses.replace(r, fresh_page_bandwidth=0.0))
    large, plain = estimate_time(hloscope.parse(FRESH), cpu), estimate_time(hloscope.parse(FRESH), without)
    assert large.fresh_page_seconds == pytest.approx(4 * 8388608 / r.fresh_page_bandwidth)
    assert large.total_seconds - plain.total_seconds == pytest.approx(large.fresh_page_seconds)
    assert large.memory_seconds == plain.memory_seconds and plain.fresh_page_seconds == 0
    small = hloscope.parse(SMALL)
    assert estimate_time(small, cpu).total_seconds == estimate_time(small, without).total_seconds


# One instruction of each kind the estimate models differently, at a size n (Note [The XLA:CPU
# model]: library dots with a cache speed-up, loops, strided copies, sorts, collectives).
_SIZED = {
    "dot": "a = f32[{n},{n}]{1,0} parameter(0)\n ROOT d = f32[{n},{n}]{1,0} dot(a, a), "
           "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    "dot_bf16": "a = bf16[{n},{n}]{1,0} parameter(0)\n ROOT d = bf16[{n},{n}]{1,0} dot(a, a), "
                "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    "exp": "a = f32[{n},{n}]{1,0} parameter(0)\n ROOT d = f32[{n},{n}]{1,0} exponential(a)",
    "transpose": "a = f32[{n},{n}]{1,0} parameter(0)\n ROOT d = f32[{n},{n}]{0,1} copy(a)",
    "sort": "a = f32[{n},{n}]{1,0} parameter(0)\n ROOT d = f32[{n},{n}]{1,0} sort(a), dimensions={1}, to_apply=lt",
    "all_reduce": "a = f32[{n},{n}]{1,0} parameter(0)\n ROOT d = f32[{n},{n}]{1,0} all-reduce(a), "
                  "replica_groups={}, to_apply=add",
    "conv": "a = f32[1,{n},{n},16]{3,2,1,0} parameter(0)\n w = f32[3,3,16,16]{3,2,1,0} parameter(1)\n"
            " ROOT c = f32[1,{n},{n},16]{3,2,1,0} convolution(a, w), window={size=3x3 pad=1_1x1_1}, "
            "dim_labels=b01f_01io->b01f",
}
_HEADER = """HloModule m, replica_count=8
add {
 a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT c = f32[] add(a, b)
}
lt {
 a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT c = pred[] compare(a, b), direction=LT
}
ENTRY e {
 """


@pytest.mark.parametrize("kind", sorted(_SIZED))
def test_estimate_grows_with_size(kind: str) -> None:
    """On every bundled profile, a bigger instance never takes less time (the cached-dot
    speed-up and the CPU sort and loop rates included), and the times are finite."""
    from hloscope.analysis.hardware import list_hardware

    sizes = (1, 4, 16, 64, 128, 256, 512, 768, 1024, 1536, 2048, 4096)
    for name in list_hardware():
        hw = load_hardware(name)
        times = [estimate_time(hloscope.parse(_HEADER + _SIZED[kind].replace("{n}", str(n)) + "\n}"), hw).total_seconds
                 for n in sizes]
        assert all(t > 0 and t == t and t != float("inf") for t in times), (name, times)
        assert times == sorted(times), (name, list(zip(sizes, times)))
