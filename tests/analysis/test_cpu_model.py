"""The XLA:CPU time model's figures for representative thunks (analysis/cpu_model.py).

Each test builds one instruction the model prices in its own way and checks the seconds it gets
from the profile's rates, so a change in what the model charges shows here, not only as a
different benchmark error.
"""
from __future__ import annotations

import dataclasses
import math

import pytest

import hloscope
from hloscope.analysis.cpu_model import fresh_allocations, is_library_fusion
from hloscope.analysis.hardware import FRESH_BUFFER_BYTES, HardwareSpec, load_hardware
from hloscope.analysis.timing import estimate_time, execution_seconds, roofline_seconds
from tests.analysis.test_timing import SOFTMAX_FUSION, link_seconds

YNN = ', backend_config={"fusion_config":{"kind":"__ynn_fusion"},"outer_dimension_partitions":[]}'

# The same softmax fusion test_timing times as an XLA loop, here also as a YNNPACK library fusion.
XLA_LOOP = SOFTMAX_FUSION
LIBRARY = SOFTMAX_FUSION.replace("kind=kLoop, calls=fused", "kind=kCustom, calls=fused" + YNN)


def _cpu(**rates: float) -> HardwareSpec:
    hw = load_hardware("cpu")
    assert hw.cpu_rates is not None
    return dataclasses.replace(hw, cpu_rates=dataclasses.replace(hw.cpu_rates, **rates))



def test_library_fusion_runs_in_passes() -> None:
    """Note [Library passes]: YNNPACK runs a graph with a reduction in passes, its compute and
    memory one after the other; softmax's exp feeds both the sum and the division and is
    evaluated in each pass (as in XLA's loops), at the library's own exp rate, while the input
    is read once. A profile without that rate keeps the older model: each producer once, the
    exps at the chain's rate, compute and memory overlapping."""
    hw = _cpu(cached_bandwidth=0.0)
    r = hw.cpu_rates
    assert r is not None and r.library_transcendentals > 0
    library, loop = hloscope.parse(LIBRARY), hloscope.parse(XLA_LOOP)
    assert is_library_fusion(library.entry.root) and not is_library_fusion(loop.entry.root)
    cost = hloscope.cost(library).total
    n = 256 * 1024
    # XLA's loops evaluate the exp twice; it depends on no other transcendental, so at the
    # independent rate (Note [Chained transcendentals]).
    loop_compute = estimate_time(loop, hw).compute_seconds
    library_compute = loop_compute - 2 * n * link_seconds(r, 1) + 2 * n / r.library_transcendentals
    assert estimate_time(library, hw).compute_seconds == pytest.approx(library_compute)
    # Note [Reads and writes]: the 1 MiB result is written, the 1 MiB input read, once.
    memory = (cost.bytes_accessed / 2 + 2 * cost.bytes_accessed / 2) * 12 / 16 / hw.memory_bandwidth
    est = estimate_time(library, hw)
    assert est.memory_seconds == pytest.approx(memory)
    assert est.total_seconds == pytest.approx(library_compute + memory + est.launch_seconds, rel=1e-3)

    old = _cpu(cached_bandwidth=0.0, library_transcendentals=0.0)
    once = cost.flops / r.elementwise_flops + n / r.transcendentals
    assert estimate_time(library, old).compute_seconds == pytest.approx(once)
    assert estimate_time(library, old).total_seconds < once + memory


ATTENTION = """HloModule a
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
fused {
  q = f32[8,256,64]{2,1,0} parameter(0)
  k = f32[8,256,64]{2,1,0} parameter(1)
  s = f32[8,256,256]{2,1,0} dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  e = f32[8,256,256]{2,1,0} exponential(s)
  ROOT o = f32[8,256,64]{2,1,0} dot(e, q), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
ENTRY e {
  q = f32[8,256,64]{2,1,0} parameter(0)
  k = f32[8,256,64]{2,1,0} parameter(1)
  ROOT f = f32[8,256,64]{2,1,0} fusion(q, k), kind=kCustom, calls=fused""" + YNN + """
}
"""


def test_library_graph_runs_its_exps_at_the_loop_rate() -> None:
    """Note [Library graphs with dots]: a library fusion's dots at the matmul rate, its exp at the
    transcendental rate (not at the matmul rate, as when the whole fusion was one dot)."""
    peak = load_hardware("cpu").flops_per_second("f32")
    hw = _cpu(cached_dot_flops=peak)  # no cache speed-up: every dot at the large-dot rate
    r = hw.cpu_rates
    assert r is not None
    module = hloscope.parse(ATTENTION)
    dots = 2 * (8 * 256 * 256 * 64) * 2  # two dots of 8x256x256x64 multiply-adds
    exps = 8 * 256 * 256
    assert hloscope.cost(module).total.flops == dots
    assert hloscope.cost(module).total.transcendentals == exps
    assert estimate_time(module, hw).compute_seconds == pytest.approx(dots / peak + exps / r.transcendentals)


ROOTS = """HloModule r
fused {
  p = f32[1048576]{0} parameter(0)
  s = f32[1048576]{0} sqrt(p)
  ROOT q = f32[1048576]{0} rsqrt(s)
}
ENTRY e {
  x = f32[1048576]{0} parameter(0)
  ROOT f = f32[1048576]{0} fusion(x), kind=kLoop, calls=fused
}
"""


def test_square_roots_cost_elementwise_flops() -> None:
    """Note [Hardware roots]: XLA counts sqrt and rsqrt as transcendentals, XLA:CPU emits them as
    the hardware's square root (and a division): three FLOPs per element here, no polynomial."""
    hw = load_hardware("cpu")
    r = hw.cpu_rates
    assert r is not None
    module = hloscope.parse(ROOTS)
    n = 1048576
    assert hloscope.cost(module).total.transcendentals == 2 * n
    assert estimate_time(module, hw).compute_seconds == pytest.approx(3 * n / r.elementwise_flops)


# Four 32 MiB results in a chain: the first two die before the last two are written, so the
# buffer assignment gives them fewer allocations than results.
CHAIN = """HloModule c, is_scheduled=true
ENTRY e {
  x = f32[8388608]{0} parameter(0)
  a = f32[8388608]{0} exponential(x)
  b = f32[8388608]{0} tanh(x)
  c = f32[8388608]{0} add(a, b)
  d = f32[8388608]{0} multiply(c, x)
  ROOT r = f32[8388608]{0} subtract(d, c)
}
"""


# A 1 KiB fusion writes first into the temporary block it shares with a 32 MiB value (the GPT
# step of issue 25: a select_bitcast_fusion ranked first with the block's faults).
FIRST_WRITER_IS_SMALL = """HloModule s, is_scheduled=true
fused_small {
  p = s32[256]{0} parameter(0)
  ROOT n = s32[256]{0} negate(p)
}
ENTRY e {
  i = s32[256]{0} parameter(0)
  x = f32[8388608]{0} parameter(1)
  small = s32[256]{0} fusion(i), kind=kLoop, calls=fused_small
  a = f32[8388608]{0} exponential(x)
  b = f32[8388608]{0} tanh(a)
  c = f32[8388608]{0} add(a, b)
  d = s32[256]{0} add(small, small)
  ROOT t = (s32[256]{0}, f32[8388608]{0}) tuple(d, c)
}
"""


def test_fresh_pages_are_charged_per_allocation() -> None:
    """Note [Fresh pages per allocation]: each output or temporary allocation of 32 MiB or more
    faults once per run, before the first instruction that writes it; values sharing an
    allocation do not fault again."""
    module = hloscope.parse(CHAIN)
    fresh = fresh_allocations(module)
    assignment = hloscope.memory(module).buffer_assignment
    assert assignment is not None
    allocated = {f"allocation {a.index}": a.size for a in assignment.allocations
                 if a.size >= FRESH_BUFFER_BYTES and not a.is_entry_parameter and not a.is_constant}
    results = 5 * 4 * 8388608
    assert {f.label: f.size for f in fresh} == allocated and sum(allocated.values()) < results
    # The first writer of each allocation is where its faults are scheduled; the parameter is
    # not allocated by the run.
    assert fresh[0].first_writer is module.entry.instructions[1]
    assert all(f.first_writer.opcode.text != "parameter" for f in fresh)


def test_fresh_pages_are_the_allocations_own_line() -> None:
    """The issue-25 case: a 64 MiB temporary block first written by a small fusion. Its page
    faults are an interval of their own (and a term of their own), not the fusion's time: the
    1 KiB fusion stays a microsecond op and does not rank first."""
    module = hloscope.parse(FIRST_WRITER_IS_SMALL)
    hw = _cpu(cached_bandwidth=0.0)
    r = hw.cpu_rates
    assert r is not None and r.fresh_page_bandwidth > 0
    est = estimate_time(module, hw)
    small = est.per_instruction["small"]
    assert small.seconds < 1e-5
    # The temporary block (``small`` and ``b``) and the output block (``a`` and ``c``).
    assert [(p.first_writer, p.kind) for p in est.fresh_pages] == [("small", "preallocated-temp"),
                                                                    ("a", "maybe-live-out")]
    assert est.fresh_page_seconds == pytest.approx(sum(p.bytes for p in est.fresh_pages) / r.fresh_page_bandwidth)
    longest = est.to_json(top=1)["longest"][0]
    assert longest["opcode"] == "fresh-pages" and longest["instruction"].startswith("allocation ")
    assert max(est.per_instruction.values(), key=lambda t: t.seconds).name != "small"
    # Its own term: not memory time, and the total is the instructions' plus the faults.
    assert est.total_seconds == pytest.approx(sum(t.seconds for t in est.per_instruction.values())
                                              + est.fresh_page_seconds + execution_seconds(module, hw))
    # Accelerators allocate from a pool: no such term on a GPU profile.
    gpu = estimate_time(module, load_hardware("h100-sxm"))
    assert gpu.fresh_page_seconds == 0 and gpu.fresh_pages == ()


def test_page_faults_add_to_a_compute_bound_thunk() -> None:
    """Faults run on the thunk's thread: a compute-bound loop with a 32 MiB result pays them on
    top of its roofline, not hidden under its compute time (as an interval before it)."""
    module = hloscope.parse("HloModule t\nENTRY e {\n  x = f32[8388608]{0} parameter(0)\n"
                            "  ROOT y = f32[8388608]{0} tanh(x)\n}\n")
    hw = _cpu(cached_bandwidth=0.0, transcendentals=4e7, unchained_transcendentals=2e8)
    r = hw.cpu_rates
    assert r is not None and r.fresh_page_bandwidth > 0
    n = 8388608
    compute = n * link_seconds(r, 1)  # one tanh, independent
    memory = (4 * n + 2 * 4 * n) * 12 / 16 / hw.memory_bandwidth  # Note [Reads and writes]
    assert compute > memory + 4 * n / r.fresh_page_bandwidth  # compute-bound, faults and all
    est = estimate_time(module, hw)
    assert est.total_seconds == pytest.approx(
        roofline_seconds(compute, memory) + 4 * n / r.fresh_page_bandwidth + hw.kernel_launch_overhead
        + execution_seconds(module, hw))
    assert est.per_instruction["y"].seconds == pytest.approx(roofline_seconds(compute, memory)
                                                             + hw.kernel_launch_overhead)


def test_a_given_memory_report_gives_the_same_estimate() -> None:
    """``estimate_time(..., memory_report=...)`` (what the report passes, so the memory analysis
    runs once) charges the same faults as the estimate that runs the analysis itself."""
    from hloscope.analysis.memory.report import analyze_memory

    module = hloscope.parse(CHAIN)
    hw = _cpu(cached_bandwidth=0.0)
    memory = analyze_memory(module)
    assert fresh_allocations(module, memory) == fresh_allocations(module) != []
    given, own = estimate_time(module, hw, memory_report=memory), estimate_time(module, hw)
    assert given.total_seconds == own.total_seconds > 0
    assert given.per_instruction == own.per_instruction


@pytest.mark.parametrize("seed", ["000", "001", "003", "004"])
def test_allocation_summaries_are_the_dumps_allocations(seed: str) -> None:
    """What the page-fault term reads (``MemoryReport.allocations``) is the buffer assignment's
    allocations without the values' positions and uses: same order, sizes, kinds and values."""
    from tests.conftest import SEED_FILES

    report = hloscope.memory(hloscope.load(SEED_FILES[seed]))
    assignment = report.buffer_assignment
    assert assignment is not None and len(report.allocations) == len(assignment.allocations) > 0

    def kind(a) -> str:
        flags = {"parameter": a.is_entry_parameter, "constant": a.is_constant,
                 "thread-local": a.is_thread_local, "preallocated-temp": a.is_preallocated_temp}
        return next((k for k, on in flags.items() if on), "other")

    for summary, full in zip(report.allocations, assignment.allocations, strict=True):
        assert (summary.index, summary.size) == (full.index, full.size)
        assert (summary.kind if summary.kind in ("parameter", "constant", "thread-local", "preallocated-temp")
                else "other") == kind(full)
        assert summary.instructions == tuple(a.value.instruction for a in full.assigned)


def test_library_graph_writes_and_reads_back_inner_dot_results() -> None:
    """Note [Library graphs with dots]: the scores between attention's two dots are written and
    read back, and a 32 MiB one lives in a buffer the library maps on every call."""
    hw = _cpu(cached_bandwidth=0.0)
    module = hloscope.parse(ATTENTION)
    cost = hloscope.cost(module).total
    scores = 4 * 8 * 256 * 256
    # Written: the result and the scores; read: the rest, the scores again included.
    written = 4 * 8 * 256 * 64 + scores
    read = cost.bytes_accessed + 2 * scores - written
    assert estimate_time(module, hw).memory_seconds == pytest.approx((read + 2 * written) * 12 / 16 / hw.memory_bandwidth)
    assert fresh_allocations(module) == []
    large = hloscope.parse(ATTENTION.replace("8,256,", "128,256,"))  # 128x256x256 f32 scores: 32 MiB
    [scratch] = fresh_allocations(large)
    assert (scratch.label, scratch.kind, scratch.size, scratch.first_writer) == (
        f"scratch of {large.entry.root.name}", "library scratch", 128 * 256 * 256 * 4, large.entry.root)


CHAINS = """HloModule t
fused {
  p = f32[1048576]{0} parameter(0)
  a = f32[1048576]{0} exponential(p)
  b = f32[1048576]{0} tanh(p)
  c = f32[1048576]{0} add(a, b)
  ROOT d = f32[1048576]{0} exponential(c)
}
ENTRY e {
  x = f32[1048576]{0} parameter(0)
  ROOT f = f32[1048576]{0} fusion(x), kind=kLoop, calls=fused
}
"""


def test_unchained_transcendentals_cost_less() -> None:
    """Note [Chained transcendentals]: the longest chain is two deep (the exp or the tanh of the
    input, then the last exp): its two links cost a link of a chain of 2 each, the one beside
    it what an independent one does."""
    hw = load_hardware("cpu")
    r = hw.cpu_rates
    assert r is not None
    module = hloscope.parse(CHAINS)
    n = 1048576
    cost = hloscope.cost(module).total
    assert cost.transcendentals == 3 * n
    expected = cost.flops / r.elementwise_flops + 2 * n * link_seconds(r, 2) + n * link_seconds(r, 1)
    assert link_seconds(r, 1) < link_seconds(r, 2) < 1 / r.transcendentals
    assert estimate_time(module, hw).compute_seconds == pytest.approx(expected)
    # The same graph as a library fusion runs each at the library's rate (Note [Library passes]).
    library = hloscope.parse(CHAINS.replace("kind=kLoop, calls=fused", "kind=kCustom, calls=fused" + YNN))
    assert estimate_time(library, hw).compute_seconds == pytest.approx(
        cost.flops / r.elementwise_flops + 3 * n / r.library_transcendentals)


def _one(body: str, header: str = "") -> hloscope.Module:
    return hloscope.parse(f"HloModule m\n{header}ENTRY e {{\n{body}\n}}\n")


def test_transposes_stream_whole_runs() -> None:
    """Note [Transposes]: moving attention heads keeps 256-byte runs of the head dimension and
    streams as a copy does; a transpose of the minor dimension walks single elements at the
    transposing rate, interpolated between the cached and the large calibration on log(bytes)."""
    hw = _cpu(cached_bandwidth=0.0)
    r = hw.cpu_rates
    assert r is not None
    heads = _one("  k = f32[8,2048,16,64]{3,2,1,0} parameter(0)\n"
                 "  ROOT t = f32[8,16,2048,64]{3,2,1,0} transpose(k), dimensions={0,2,1,3}")
    full = _one("  k = f32[8,2048,16,64]{3,2,1,0} parameter(0)\n"
                "  ROOT t = f32[8,16,64,2048]{3,2,1,0} transpose(k), dimensions={0,2,3,1}")
    n = 8 * 2048 * 16 * 64 * 4
    assert estimate_time(heads, hw).memory_seconds == pytest.approx((n + 2 * n) * 12 / 16 / hw.memory_bandwidth)
    assert estimate_time(full, hw).memory_seconds == pytest.approx(2 * n / r.transpose_bandwidth)
    # A 1024 x 1024 transpose (8 MiB moved) lies between the two calibrations.
    mid = _one("  x = f32[1024,1024]{1,0} parameter(0)\n  ROOT t = f32[1024,1024]{1,0} transpose(x), dimensions={1,0}")
    moved = 2 * 4 * 1024 * 1024
    seconds = estimate_time(mid, hw).memory_seconds
    assert moved / r.cached_transpose_bandwidth < seconds < moved / r.transpose_bandwidth


def _reduction(shape: tuple[int, ...], dims: tuple[int, ...], library: bool = True) -> hloscope.Module:
    kept = [n for d, n in enumerate(shape) if d not in dims]
    text = (f"HloModule r\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}}\n"
            f"fused {{\n  x = f32[{','.join(map(str, shape))}] parameter(0)\n  z = f32[] constant(0)\n"
            f"  ROOT r = f32[{','.join(map(str, kept))}] reduce(x, z), dimensions={{{','.join(map(str, dims))}}}, "
            f"to_apply=add\n}}\nENTRY e {{\n  x = f32[{','.join(map(str, shape))}] parameter(0)\n"
            f"  ROOT f = f32[{','.join(map(str, kept))}] fusion(x), "
            + ("kind=kCustom, calls=fused" + YNN if library else "kind=kInput, calls=fused") + "\n}\n")
    return hloscope.parse(text)


def test_library_column_reductions_cost_by_the_row_they_keep() -> None:
    """Note [Library column reductions]: a library sum over rows keeping 4,096 elements costs
    the narrow calibration per input element, keeping 65,536 or more the wide one, 16,384 the
    power law between; a row's own sum, a full sum and XLA's own loop stream."""
    hw = _cpu(column_reduce_elements=4.5e9, wide_column_reduce_elements=1.3e9, library_transcendentals=0.0)
    n = 16 << 20

    def compute(module: hloscope.Module) -> float:
        return estimate_time(module, hw).compute_seconds

    assert compute(_reduction((4096, 4096), (0,))) == pytest.approx(n / 4.5e9)
    assert compute(_reduction((256, 65536), (0,))) == pytest.approx(n / 1.3e9)
    assert compute(_reduction((64, 256, 1024), (0,))) == pytest.approx(n / 1.3e9)  # keeps 262,144
    power = math.log(4.5 / 1.3) / math.log(16)
    assert compute(_reduction((1024, 16384), (0,))) == pytest.approx(n * 4 ** power / 4.5e9)
    # Summing the middle dimension keeps the 1,024 minor ones: below the narrow row, cheaper.
    assert compute(_reduction((64, 256, 1024), (1,))) < n / 4.5e9
    streamed = compute(_reduction((4096, 4096), (1,)))
    assert streamed < n / 4.5e9 / 3
    assert compute(_reduction((4096, 4096), (0, 1))) == pytest.approx(streamed, rel=1e-3)
    assert compute(_reduction((4096, 4096), (0,), library=False)) == pytest.approx(streamed)
    # Run in passes (Note [Library passes]), the reduction's calibrated time is its whole time.
    passes = _cpu(column_reduce_elements=4.5e9, wide_column_reduce_elements=1.3e9)
    est = estimate_time(_reduction((4096, 4096), (0,)), passes)
    assert est.total_seconds - est.launch_seconds == pytest.approx(n / 4.5e9, rel=1e-3)
    # A profile without the two rates (written before them) keeps the stream.
    old = _cpu(column_reduce_elements=0.0, wide_column_reduce_elements=0.0)
    assert estimate_time(_reduction((4096, 4096), (0,)), old).compute_seconds == pytest.approx(
        estimate_time(_reduction((4096, 4096), (1,)), old).compute_seconds)


def _transposed(shape: tuple[int, ...], perm: tuple[int, ...], scale: bool) -> hloscope.Module:
    out = [shape[p] for p in perm]
    layout = "{" + ",".join(map(str, reversed(range(len(shape))))) + "}"
    src, dst = ",".join(map(str, shape)) + "]" + layout, ",".join(map(str, out)) + "]" + layout
    body = f"  x = f32[{src} parameter(0)\n  t = f32[{dst} transpose(x), dimensions={{{','.join(map(str, perm))}}}\n"
    if scale:
        body += (f"  c = f32[] constant(2)\n  b = f32[{dst} broadcast(c), dimensions={{}}\n"
                 f"  ROOT r = f32[{dst} multiply(t, b)\n")
    else:
        body = body.replace("  t = ", "  ROOT t = ")
    return hloscope.parse(f"HloModule m\nfused {{\n{body}}}\nENTRY e {{\n  x = f32[{src} parameter(0)\n"
                          f"  ROOT f = f32[{dst} fusion(x), kind=kLoop, calls=fused\n}}\n")


def test_fused_transposes_cost_by_the_pages_their_walk_passes() -> None:
    """Note [Fused transposes]: times 2 fused in, a 2048 x 4096 transpose (2,048 pages before a
    line is read again) costs the fused rate per element; alone, it is the transposing walk (no
    compute); fused, (64, 512, 256) by (0, 2, 1) comes back within 128 pages and costs its FLOP,
    (16, 1024, 512) by (0, 2, 1) within 512 and costs half the fused rate."""
    hw = _cpu(fused_transpose_elements=2e8)
    r = hw.cpu_rates
    assert r is not None
    n = 2048 * 4096
    assert estimate_time(_transposed((2048, 4096), (1, 0), True), hw).compute_seconds == pytest.approx(n / 2e8)
    assert estimate_time(_transposed((2048, 4096), (1, 0), False), hw).compute_seconds == 0
    near = estimate_time(_transposed((64, 512, 256), (0, 2, 1), True), hw).compute_seconds
    assert near == pytest.approx(n / r.elementwise_flops)
    far = estimate_time(_transposed((256, 128, 256), (2, 0, 1), True), hw).compute_seconds
    assert far == pytest.approx(n / 2e8)
    half = estimate_time(_transposed((16, 1024, 512), (0, 2, 1), True), hw).compute_seconds
    assert half == pytest.approx(n / 2 / 2e8)


def test_large_outputs_stream_at_their_own_rate() -> None:
    """Note [Large outputs]: a loop writing 64 MiB streams at large_output_bandwidth; one writing
    32 MiB, and any on a profile without that rate, at memory_bandwidth."""
    hw = _cpu(cached_bandwidth=0.0)
    slow = dataclasses.replace(hw, cpu_rates=dataclasses.replace(hw.cpu_rates, large_output_bandwidth=hw.memory_bandwidth / 2))

    def memory(elements: int, profile: HardwareSpec) -> float:
        return estimate_time(_one(f"  x = f32[{elements}]{{0}} parameter(0)\n  c = f32[] constant(2)\n"
                                  f"  b = f32[{elements}]{{0}} broadcast(c), dimensions={{}}\n"
                                  f"  ROOT r = f32[{elements}]{{0}} multiply(x, b)"), profile).memory_seconds

    large, small = 16 << 20, 8 << 20
    assert memory(large, slow) == pytest.approx(2 * memory(large, hw))
    assert memory(small, slow) == pytest.approx(memory(small, hw))


def test_fft_costs_five_n_log_n_per_transform() -> None:
    """A 2-D FFT of 1024 x 1024 points: 5 N log2 N at fft_flops (XLA's cost analysis multiplies
    the per-dimension logarithms, 100 for this one, instead of adding them, 20); a real one half."""
    hw = _cpu()
    r = hw.cpu_rates
    assert r is not None
    c2c = _one("  x = c64[1024,1024]{1,0} parameter(0)\n"
               "  ROOT f = c64[1024,1024]{1,0} fft(x), fft_type=FFT, fft_length={1024,1024}")
    r2c = _one("  x = f32[1024,1024]{1,0} parameter(0)\n"
               "  ROOT f = c64[1024,513]{1,0} fft(x), fft_type=RFFT, fft_length={1024,1024}")
    points = 1024 * 1024
    assert estimate_time(c2c, hw).compute_seconds == pytest.approx(5 * points * 20 / r.fft_flops)
    assert estimate_time(r2c, hw).compute_seconds == pytest.approx(5 * points * 20 / 2 / r.fft_flops)


def test_gathers_and_scatters_slow_down_with_their_table() -> None:
    """The same updates into a table the cache keeps, one of the large calibration's size and one
    four times larger: each element's time grows with log(table bytes), past the large rate too."""
    hw = _cpu()
    r = hw.cpu_rates
    assert r is not None and r.cached_scatter_elements > r.scatter_elements

    def scatter(rows: int) -> float:
        return estimate_time(_one(
            f"  t = f32[{rows},32]{{1,0}} parameter(0)\n  i = s32[4096,1]{{1,0}} parameter(1)\n"
            "  u = f32[4096,32]{1,0} parameter(2)\n"
            f"  ROOT s = f32[{rows},32]{{1,0}} scatter(t, i, u), update_window_dims={{1}}, inserted_window_dims={{0}}, "
            "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add",
            "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"),
            hw).compute_seconds

    small, large, larger = scatter(4096), scatter(65536), scatter(262144)
    assert small == pytest.approx(4096 * 32 / r.cached_scatter_elements)
    assert large == pytest.approx(4096 * 32 / r.scatter_elements)
    assert larger - large == pytest.approx((large - small) / 2)  # two doublings past, four before


def test_flops_fused_into_a_gather_run_at_the_gather_loops_rate() -> None:
    """Note [FLOPs in a gather's loop]: the multiply fused into a gather costs its FLOP at
    gather_loop_flops; the same multiply in a plain loop at the vectorised elementwise rate."""
    hw = _cpu(gather_loop_flops=4e9)
    r = hw.cpu_rates
    assert r is not None
    gather = ("  t = f32[65536,32]{1,0} parameter(0)\n  i = s32[4096,1]{1,0} parameter(1)\n"
              "  g = f32[4096,32]{1,0} gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
              "start_index_map={0}, index_vector_dim=1, slice_sizes={1,32}\n")
    scaled = ("  c = f32[] constant(2)\n  b = f32[4096,32]{1,0} broadcast(c), dimensions={}\n"
              "  ROOT r = f32[4096,32]{1,0} multiply(g, b)\n")

    def fused(body: str, params: str, operands: str) -> hloscope.Module:
        return hloscope.parse(f"HloModule m\nfused {{\n{body}}}\nENTRY e {{\n{params}"
                              f"  ROOT f = f32[4096,32]{{1,0}} fusion({operands}), kind=kLoop, calls=fused\n}}\n")

    params = "  t = f32[65536,32]{1,0} parameter(0)\n  i = s32[4096,1]{1,0} parameter(1)\n"
    plain = estimate_time(fused(gather.replace("  g = ", "  ROOT g = "), params, "t, i"), hw).compute_seconds
    with_multiply = estimate_time(fused(gather + scaled, params, "t, i"), hw).compute_seconds
    assert with_multiply - plain == pytest.approx(4096 * 32 / 4e9)
    loop = fused("  g = f32[4096,32]{1,0} parameter(0)\n" + scaled, "  g = f32[4096,32]{1,0} parameter(0)\n", "g")
    assert estimate_time(loop, hw).compute_seconds == pytest.approx(4096 * 32 / r.elementwise_flops)


def test_eigen_convolutions_go_with_their_outputs() -> None:
    """Note [Eigen convolutions]: a plain convolution thunk takes the longer of its FLOPs at the
    matmul rate and its output elements at conv_outputs."""
    hw = _cpu()
    r = hw.cpu_rates
    assert r is not None
    conv = _one("  x = f32[8,64,64,3]{3,2,1,0} parameter(0)\n  w = f32[3,3,3,16]{3,2,1,0} parameter(1)\n"
                "  ROOT c = f32[8,64,64,16]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, "
                "dim_labels=b01f_01io->b01f")
    outputs = 8 * 64 * 64 * 16
    flops = hloscope.cost(conv).total.flops
    assert outputs / r.conv_outputs > flops / hw.flops_per_second("f32")
    assert estimate_time(conv, hw).compute_seconds == pytest.approx(outputs / r.conv_outputs)


def test_transposed_convolutions_run_as_a_gemm_and_a_packing_pass() -> None:
    """Note [Transposed convolutions]: an input-dilated convolution with unit strides is one
    GEMM of the undilated input by the kernel into a column matrix, then a pass adding the
    columns into the zero-filled output; the matrix is the thunk's own fresh allocation when
    large. With a window dilation it is an Eigen convolution again."""
    from hloscope.analysis.cpu_model import FreshAllocation, fresh_allocations

    hw = _cpu(cached_bandwidth=0.0, cached_dot_flops=1.0)  # no cache speed-ups: the large rates
    r = hw.cpu_rates
    assert r is not None
    body = ("  x = f32[8,32,32,64]{3,2,1,0} parameter(0)\n  w = f32[3,3,64,32]{3,2,1,0} parameter(1)\n"
            "  ROOT c = f32[8,64,64,32]{3,2,1,0} convolution(x, w), window={size=3x3 pad=2_1x2_1 lhs_dilate=2x2}, "
            "dim_labels=b01f_01io->b01f")
    conv = _one(body)
    rows, columns = 8 * 32 * 32, 3 * 3 * 32
    gemm_flops = 2 * rows * 64 * columns
    matrix = 4 * rows * columns
    out = 4 * 8 * 64 * 64 * 32
    packed = matrix + 3 * out  # the matrix read back, the output filled, read and written
    compute = gemm_flops / hw.flops_per_second("f32") + rows * columns / r.elementwise_flops + (
        packed * 12 / 16 / hw.memory_bandwidth)
    est = estimate_time(conv, hw)
    assert est.compute_seconds == pytest.approx(compute)
    # Far less than the same outputs as an Eigen convolution's (Note [Eigen convolutions]).
    assert compute < 8 * 64 * 64 * 32 / r.conv_outputs
    assert matrix < FRESH_BUFFER_BYTES and fresh_allocations(conv) == []
    large = _one(body.replace("f32[8,", "f32[32,"))  # a 36 MiB matrix
    assert fresh_allocations(large) == [FreshAllocation(f"scratch of {large.entry.root.name}", "library scratch",
                                                        4 * matrix, large.entry.root)]
    dilated = _one(body.replace("lhs_dilate=2x2", "lhs_dilate=2x2 rhs_dilate=2x2"))
    assert estimate_time(dilated, hw).compute_seconds == pytest.approx(8 * 64 * 64 * 32 / r.conv_outputs)
    assert fresh_allocations(dilated) == []


def test_narrowing_converts_cost_their_rounding() -> None:
    """Note [Narrowing converts]: in XLA's own loops each f32 -> bf16 convert costs
    1/narrowing_converts (not the FLOP XLA counts for it); the widening one stays a FLOP; a
    library fusion converts natively."""
    hw = _cpu(narrowing_converts=4e9)
    r = hw.cpu_rates
    assert r is not None
    n = 1 << 20
    fused = (f"fused {{\n  x = bf16[{n}]{{0}} parameter(0)\n  w = f32[{n}]{{0}} convert(x)\n"
             f"  m = f32[{n}]{{0}} multiply(w, w)\n  ROOT b = bf16[{n}]{{0}} convert(m)\n}}\n")
    entry = f"  p = bf16[{n}]{{0}} parameter(0)\n  ROOT f = bf16[{n}]{{0}} fusion(p), kind=kLoop, calls=fused"
    loop = _one(entry, fused)
    flops = hloscope.cost(loop).total.flops
    assert flops == 3 * n
    assert estimate_time(loop, hw).compute_seconds == pytest.approx(2 * n / r.elementwise_flops + n / r.narrowing_converts)
    library = _one(entry.replace("kind=kLoop, calls=fused", "kind=kCustom, calls=fused" + YNN), fused)
    assert estimate_time(library, hw).compute_seconds == pytest.approx(flops / r.elementwise_flops)
    assert estimate_time(loop, _cpu(narrowing_converts=0.0)).compute_seconds == pytest.approx(
        flops / r.elementwise_flops)


def test_eigen_dots_cost_a_call_per_batch_element() -> None:
    """Note [Eigen dots]: a dot thunk runs one Eigen contraction per batch element, each
    costing eigen_dot_overhead beyond its FLOPs; a library fusion's dot does not."""
    hw = _cpu(eigen_dot_overhead=1e-6, cached_dot_flops=1.0)
    r = hw.cpu_rates
    assert r is not None
    body = ("  a = f32[16,4,32,32]{3,2,1,0} parameter(0)\n  x = f32[16,4,32,16]{3,2,1,0} parameter(1)\n"
            "  ROOT d = f32[16,4,32,16]{3,2,1,0} dot(a, x), lhs_contracting_dims={2}, rhs_contracting_dims={2}, "
            "lhs_batch_dims={0,1}, rhs_batch_dims={0,1}")
    dot = _one(body)
    flops = hloscope.cost(dot).total.flops
    assert flops == 2 * 64 * 32 * 32 * 16
    assert estimate_time(dot, hw).compute_seconds == pytest.approx(flops / hw.flops_per_second("f32") + 64e-6)
    plain = _one(body.replace("16,4,", "").replace("{3,2,1,0}", "{1,0}").replace("={2}", "={0}")
                 .replace(", lhs_batch_dims={0,1}, rhs_batch_dims={0,1}", ""))
    assert estimate_time(plain, hw).compute_seconds == pytest.approx(
        hloscope.cost(plain).total.flops / hw.flops_per_second("f32") + 1e-6)


def test_a_variadic_reducer_runs_its_instructions_per_window_element() -> None:
    """An argmax pooling's reduce-window (a value and its index per window element) costs its
    reducer's further instructions at comparator_ops, as a sort's comparator does."""
    hw = _cpu()
    r = hw.cpu_rates
    assert r is not None
    header = ("argmax {\n  a = f32[] parameter(0)\n  i = s32[] parameter(1)\n  b = f32[] parameter(2)\n"
              "  j = s32[] parameter(3)\n  ge = pred[] compare(a, b), direction=GE\n  v = f32[] select(ge, a, b)\n"
              "  k = s32[] select(ge, i, j)\n  ROOT t = (f32[], s32[]) tuple(v, k)\n}\n")
    module = _one("  x = f32[16,16,16,16]{3,2,1,0} parameter(0)\n  n = s32[16,16,16,16]{3,2,1,0} parameter(1)\n"
                  "  z = f32[] constant(0)\n  y = s32[] constant(0)\n"
                  "  ROOT r = (f32[16,8,8,16]{3,2,1,0}, s32[16,8,8,16]{3,2,1,0}) reduce-window(x, n, z, y), "
                  "window={size=1x2x2x1 stride=1x2x2x1}, to_apply=argmax", header)
    visits = 16 * 8 * 8 * 16 * 4
    walk = visits * (1 / r.reduce_window_elements + 2 / r.comparator_ops)
    flops = hloscope.cost(module).total.flops  # the reducer's arithmetic, vectorised as any loop's
    assert estimate_time(module, hw).compute_seconds == pytest.approx(walk + flops / r.elementwise_flops)


def test_thunks_in_sequence_and_as_a_graph() -> None:
    """Note [Thunk dispatch]: a chain of 4 KiB thunks runs in sequence (kernel_launch_overhead
    each); 20 independent ones as a graph, where the executor pops the first 11 while more than
    8 others are ready (dag_thunk_overhead each) and the last 9 as any other; small buffers or
    at most 8 thunks always in sequence; an execution adds its own cost."""
    from hloscope.analysis.cpu_thunks import runs_in_sequence, wide_thunks

    hw = _cpu(dag_thunk_overhead=5e-6, execution_overhead=1e-5)
    r = hw.cpu_rates
    assert r is not None
    add = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"

    def module(k: int, n: int, independent: bool) -> hloscope.Module:
        lines = [f"  x0 = f32[{n}]{{0}} parameter(0)", "  z = f32[] constant(0)"]
        for i in range(1, k + 1):
            src = "x0" if independent else f"x{i - 1}"
            lines.append(f"  x{i} = f32[{n}]{{0}} exponential({src})")
        lines.append(f"  ROOT t = ({','.join([f'f32[{n}]{{0}}'] * k)}) tuple({','.join(f'x{i}' for i in range(1, k + 1))})")
        return _one("\n".join(lines), add)

    cases = {(20, 1024, False): (True, 0), (20, 1024, True): (False, 11), (20, 64, True): (True, 0),
             (8, 1024, True): (True, 0)}
    for (k, n, independent), (sequential, wide) in cases.items():
        m = module(k, n, independent)
        assert runs_in_sequence(m.entry) is sequential, (k, n, independent)
        assert len(wide_thunks(m.entry)) == wide
        est = estimate_time(m, hw)
        expected = (wide * r.dag_thunk_overhead + (k - wide) * hw.kernel_launch_overhead
                    + execution_seconds(m, hw))
        assert est.launch_seconds == pytest.approx(expected)


def test_thunks_in_a_loop_body_cost_the_loop_figures() -> None:
    """Note [Thunks in loops]: a loop body's thunks cost ``loop_thunk_overhead`` on every trip
    and each trip ``loop_trip_overhead``; the step's own thunks ``kernel_launch_overhead``."""
    from hloscope.analysis.cpu_thunks import loop_computations

    hw = _cpu(execution_overhead=0.0, parameter_overhead=0.0, result_overhead=0.0,
              loop_thunk_overhead=2e-8, loop_trip_overhead=5e-8)
    r = hw.cpu_rates
    assert r is not None
    module = hloscope.parse("""HloModule l
body {
  s = (s32[], f32[64]{0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[64]{0} get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[64]{0} exponential(x)
  z = f32[64]{0} tanh(y)
  ROOT t = (s32[], f32[64]{0}) tuple(j, z)
}
cond {
  s = (s32[], f32[64]{0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  x = f32[64]{0} parameter(0)
  a = f32[64]{0} negate(x)
  zero = s32[] constant(0)
  s = (s32[], f32[64]{0}) tuple(zero, a)
  w = (s32[], f32[64]{0}) while(s), condition=cond, body=body
  ROOT b = f32[64]{0} get-tuple-element(w), index=1
}
""")
    assert {c.name for c in loop_computations(module)} == {"body", "cond"}
    est = estimate_time(module, hw)
    assert est.trip_counts["w"] == 10
    # body: add, exponential, tanh; condition: compare. The entry: negate.
    expected = hw.kernel_launch_overhead + 10 * (4 * r.loop_thunk_overhead + r.loop_trip_overhead)
    assert est.launch_seconds == pytest.approx(expected)


def test_each_parameter_and_result_array_adds_to_an_execution() -> None:
    """Note [Thunk dispatch]: an execution's fixed cost grows by ``parameter_overhead`` per entry
    parameter array (a tuple parameter counts its leaves) and ``result_overhead`` per result
    array; the thunks' own times do not change."""
    m = _one("  p = (f32[8]{0}, f32[8]{0}, s32[]) parameter(0)\n  q = f32[8]{0} parameter(1)\n"
             "  a = f32[8]{0} get-tuple-element(p), index=0\n  s = f32[8]{0} add(a, q)\n"
             "  ROOT t = (f32[8]{0}, f32[8]{0}) tuple(s, q)")
    plain = _cpu(execution_overhead=1e-5, parameter_overhead=0.0, result_overhead=0.0)
    costly = _cpu(execution_overhead=1e-5, parameter_overhead=3e-7, result_overhead=2e-6)
    assert execution_seconds(m, plain) == pytest.approx(1e-5)
    assert execution_seconds(m, costly) == pytest.approx(1e-5 + 4 * 3e-7 + 2 * 2e-6)
    a, b = estimate_time(m, plain), estimate_time(m, costly)
    assert b.total_seconds - a.total_seconds == pytest.approx(4 * 3e-7 + 2 * 2e-6)
    assert b.launch_seconds - a.launch_seconds == pytest.approx(4 * 3e-7 + 2 * 2e-6)
    assert execution_seconds(m, load_hardware("h100-sxm")) == 0.0


def test_parameters_are_read_from_memory_and_fresh_results_from_cache() -> None:
    """Note [Cold operands]: a small loop reading the step's parameter reads it at the memory
    rate; the next loop reading what the first just wrote reads it at the cached rate."""
    hw = _cpu()
    r = hw.cpu_rates
    assert r is not None and r.cached_bandwidth > hw.memory_bandwidth
    n = 16384  # 64 KiB arrays: every loop's bytes well inside CACHED_STREAM_BYTES
    est = estimate_time(_one(f"  x = f32[{n}]{{0}} parameter(0)\n  a = f32[{n}]{{0}} negate(x)\n"
                             f"  ROOT b = f32[{n}]{{0}} negate(a)"), hw)
    share = 12 / 16
    write = 2 * 4 * n * share / r.cached_bandwidth
    negate = n / r.elementwise_flops
    assert est.per_instruction["a"].seconds - hw.kernel_launch_overhead == pytest.approx(
        roofline_seconds(negate, 4 * n * share / hw.memory_bandwidth + write))
    assert est.per_instruction["b"].seconds - hw.kernel_launch_overhead == pytest.approx(
        roofline_seconds(negate, 4 * n * share / r.cached_bandwidth + write))
