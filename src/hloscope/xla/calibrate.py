"""Measuring this machine: a hardware profile from timed numpy and XLA:CPU kernels.

XLA:CPU's own rates (through jaxlib, when installed) are what the time estimate models; without
jax, numpy's stand in for the loops.
"""
from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import replace
from typing import Any

import ml_dtypes
import numpy as np

from hloscope.analysis.cpu_model import LIBRARY_FUSION_KINDS
from hloscope.analysis.hardware import (
    CACHED_STREAM_BYTES,
    CACHED_TABLE_BYTES,
    COLUMN_REDUCE_ROW_BYTES,
    FRESH_BUFFER_BYTES,
    LARGE_OUTPUT_BYTES,
    LARGE_STREAM_BYTES,
    WIDE_COLUMN_REDUCE_ROW_BYTES,
    CpuRates,
    HardwareSpec,
    LinkSpec,
    load_hardware,
)
from hloscope.errors import InputError
from hloscope.xla import client as xla_bridge
from hloscope.xla.calibration_kernels import (
    ADD,
    TOTAL_ORDER_LT,
    eigen_dot_chain,
    iota_operand,
    loop_module,
)
from hloscope.xla.client import compile_hlo

__all__ = ["calibrate"]


def _round(x: float, digits: int = 4) -> float:
    """Measurements carry a few digits of signal; keep profiles readable."""
    return float(f"{x:.{digits - 1}e}")


# ---------------------------------------------------------------------------------------------
# Calibration


# What _repeat times with: wall time, or (calibrate(clock="cpu")) the process's CPU time, which
# other processes on a shared machine do not inflate (Note [CPU time on a shared machine]).
_clock = time.perf_counter

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def calibrate(seconds: float = 2.0, *, name: str = "cpu-calibrated", xla: bool | None = None,
              clock: str = "wall") -> HardwareSpec:
    """Measure this machine and return a ``kind="cpu"`` profile.

    Note [CPU time on a shared machine]
        With ``clock="cpu"`` every kernel is timed by the process's CPU time instead of the
        wall clock. On a machine other processes load, wall times grow with the load (and long
        kernels more than short ones, which rarely find a quiet moment), while CPU time stays
        what the kernel costs. An estimate made with such a profile predicts CPU seconds, so
        it is compared with CPU seconds (benchmarks/estimate.py does); on an idle machine the
        two agree for XLA:CPU's single-threaded loops.

    Roughly ``seconds`` of wall time (plus a second or two of XLA compiles) is split between:

    * matmul FLOP/s per type. With ``xla`` (default: when jax is installed) these are XLA:CPU's
      own dots (its Eigen/YNNPACK kernels, f32/bf16/f64, 1024^3 and 512^3, best kept), the
      kernels the estimated modules will run; otherwise numpy's BLAS (f32/f64; bf16, f16 and s8
      get the f32 rate, which is how XLA:CPU runs them after upcasting);
    * memory bandwidth: best of a large array copy (read + write) and a large sum (read);
    * ``CpuRates`` (Note [The XLA:CPU model] in ``analysis.timing``): with ``xla``, XLA:CPU
      loops measured on generated data (an elementwise FMA chain, an exp/tanh chain, a sort, a
      scatter-add); the transposing copy is numpy's strided copy. Without jax the loop rates
      are numpy's, and sort/scatter keep the generic ``cpu`` profile's figures.

    Links are host memory (the copy bandwidth). Overheads and the memory size come from the
    generic ``cpu`` profile and ``os.sysconf``.
    """
    if seconds <= 0:
        raise InputError(f"calibrate(seconds={seconds}): the budget must be positive")
    if clock not in CLOCKS:
        raise InputError(f"calibrate(clock={clock!r}): choose one of {', '.join(CLOCKS)}")
    global _clock
    saved, _clock = _clock, CLOCKS[clock]
    try:
        return _calibrate(seconds, name, xla)
    finally:
        _clock = saved


def _calibrate(seconds: float, name: str, xla: bool | None) -> HardwareSpec:
    base = load_hardware("cpu")
    assert base.cpu_rates is not None
    if xla is None:
        xla = xla_bridge.available()
    copy_bw, read_bw = (_round(r) for r in _memory_rates(0.2 * seconds))
    memory_bw = max(copy_bw, read_bw)
    if xla:
        peak = {k: _round(v) for k, v in _xla_dot_rates(0.3 * seconds).items()}
        loops = {k: _round(v) for k, v in _xla_loop_rates(0.35 * seconds).items()}
        # XLA's own streaming loop is what the estimated loops run at, not numpy's copy.
        memory_bw = loops.pop("memory_bandwidth")
        rates = CpuRates(cached_dot_flops=_round(_xla_cached_dot_rate(0.1 * seconds)), **loops)
        launch = -1.0  # measured below, once the rates that time the thunks' own work are known
        how = ("XLA:CPU dots and loops (stream, FMA chain, exp/tanh chained and independent, sort, scatter, gather, "
               "reduce-window, depthwise and Eigen convolutions, TopK, transposing copy, FFT; thunk chains and graphs "
               "for the dispatch overheads, 64 small arrays in and out for the per-array costs) on random data; numpy copy and sum for the links")
    else:
        f32 = _round(_matmul_rate(np.float32, 0.25 * seconds))
        f64 = _round(_matmul_rate(np.float64, 0.25 * seconds))
        peak = {"f64": f64, "f32": f32, "bf16": f32, "f16": f32, "s8": f32}
        transpose_bw = _round(_transpose_bandwidth(0.1 * seconds))
        elementwise, transcendental = _numpy_loop_rates(0.2 * seconds)
        cached = _round(_matmul_rate(np.float32, 0.1 * seconds, sizes=(512,)))
        rates = replace(base.cpu_rates, elementwise_flops=_round(elementwise), cached_dot_flops=cached,
                        transcendentals=_round(transcendental), transpose_bandwidth=transpose_bw)
        launch = base.kernel_launch_overhead
        how = ("numpy matmul f32/f64, copy, sum, transposed copy, exp/tanh; bf16/f16/s8 use the "
               "f32 rate; sort and scatter rates are the generic cpu profile's")
    peak.setdefault("f16", peak["f32"])
    peak.setdefault("s8", peak["f32"])
    spec = replace(
        base,
        name=name,
        peak_flops=peak,
        memory_bandwidth=memory_bw,
        memory_bytes=_physical_memory() or base.memory_bytes,
        intra_node=LinkSpec(copy_bw, base.intra_node.latency),
        inter_node=None,
        kernel_launch_overhead=max(launch, 0.0),
        cpu_rates=rates,
        notes=(
            f"Measured by hloscope.xla.calibrate.calibrate(seconds={seconds}) at "
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {how}. Link latencies and the collective latency are the "
            "generic cpu profile's."
        ),
        sources=("measured on this machine",),
    )
    if launch < 0:
        spec = _with_dispatch_overheads(spec, 0.05 * seconds)
    return spec


def _transpose_bandwidth(budget: float) -> float:
    """Bytes/s (read + write) of copying a 16 MiB f32 matrix into its transpose."""
    n = 2048
    src = np.ones((n, n), dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src.T)
    return 2.0 * src.nbytes / _repeat(lambda: np.copyto(dst, src.T), budget)


def _numpy_loop_rates(budget: float) -> tuple[float, float]:
    """(FLOP/s of an in-place multiply-add on 1 MiB, exp + tanh per second) with numpy."""
    x = np.linspace(-1, 1, 1 << 18, dtype=np.float32)
    y = np.empty_like(x)

    def fma() -> None:
        np.multiply(x, 0.5, out=y)
        np.add(y, 0.25, out=y)

    def transcendental() -> None:
        np.exp(x, out=y)
        np.tanh(x, out=y)

    return 2 * x.size / _repeat(fma, budget / 2), 2 * x.size / _repeat(transcendental, budget / 2)


# XLA:CPU microbenchmarks. Data is generated inside each module from one scalar parameter
# (iota times the parameter, so nothing folds at compile time): transfers stay negligible.
def _xla_seconds(text: str, budget: float) -> float:
    """Best seconds of one execution of ``text`` (one f32 scalar parameter) on XLA:CPU."""

    compiled = compile_hlo(text)
    arg = [np.float32(1.0 / 4096)]
    compiled.run(arg)
    return _repeat(lambda: compiled.run(arg), budget)


def _xla_dot_rates(budget: float) -> dict[str, float]:
    """FLOP/s of XLA:CPU's dot per element type at a large size (f32, bf16: 1536^3; f64: 1024^3).

    The rate falls with size on small caches (on a 2-core EPYC: ~100 GFLOP/s at 512^3, ~45 at
    1536^3), and the dots worth estimating are the large ones, so the sustained rate is kept.
    """
    rates: dict[str, float] = {}
    for dtype in ("f32", "bf16", "f64"):
        best = 0.0
        for n in ((1024,) if dtype == "f64" else (1536,)):
            convert = "" if dtype == "f32" else f"  x = {dtype}[{n},{n}]{{1,0}} convert(x0)\n"
            gen = iota_operand((n, n)).replace("  x = ", "  x0 = " if convert else "  x = ")
            text = (f"HloModule calibrate_dot_{dtype}\nENTRY e {{\n{gen}{convert}"
                    f"  ROOT d = {dtype}[{n},{n}]{{1,0}} dot(x, x), lhs_contracting_dims={{1}}, "
                    "rhs_contracting_dims={0}\n}\n")
            best = max(best, 2.0 * n**3 / _xla_seconds(text, budget / 3))
        rates[dtype] = best
    return rates


def _xla_cached_dot_rate(budget: float) -> float:
    """f32 FLOP/s of XLA:CPU's dot at 512^3 (``CACHED_DOT_BYTES``)."""
    n = 512
    text = (f"HloModule calibrate_cached_dot\nENTRY e {{\n{iota_operand((n, n))}"
            f"  ROOT d = f32[{n},{n}]{{1,0}} dot(x, x), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n}}\n")
    return 2.0 * n**3 / _xla_seconds(text, budget)


def _xla_device_seconds(text: str, args: list[np.ndarray], budget: float) -> float:
    """Best seconds of one execution of ``text`` on XLA:CPU with ``args`` already on the device
    and the result left there (no transfer is timed: the estimated modules' are not either)."""
    return _xla_timed(text, args, budget)[0]


def _xla_timed(text: str, args: list[np.ndarray], budget: float) -> tuple[float, str]:
    """``_xla_device_seconds`` and the module XLA:CPU compiled (its optimized text)."""
    import jax

    compiled = compile_hlo(text)
    arrays = compiled.put(args)

    def once() -> None:
        jax.block_until_ready(compiled.executable.execute_sharded(arrays)
                              .disassemble_into_single_device_arrays())

    once()
    return _repeat(once, budget), compiled.executable.hlo_modules()[0].to_string()


# Where, within a 4 KiB page, each input of the streaming loop starts: x and y are each placed at
# four offsets a quarter page apart, the two always half a page apart (Note [4K aliasing]).
STREAM_PLACEMENTS = ((0, 2048), (1024, 3072), (2048, 0), (3072, 1024))
STREAM_WARM_UP_SECONDS = 0.6


def _stream_seconds(text: str, n: int, budget: float) -> float:
    """Seconds of one run of the streaming loop ``text`` (``z = x + y`` over ``n`` f32) on inputs
    whose place in their pages is chosen, not left to the allocator: the third fastest of the
    four placements of ``STREAM_PLACEMENTS``, each measured twice.

    Note [4K aliasing]
        A core guesses whether a load reads what an earlier store wrote from the addresses'
        low 12 bits only. When the output sits a few cache lines past an input within its
        page, every load of that input meets a recent store with the same low bits and waits
        for it. Measured here on z = x + y over 96 MB (jax, the inputs placed in one numpy
        buffer, the output where XLA put it): 11.9 and 14.6 GB/s with x 128 bytes behind the
        output (modulo 4 KiB), 13-19 GB/s with both inputs 192-256 bytes behind it, and
        20.6-25.2 GB/s at the thirty other placements tried. Consecutive large allocations of
        one size land at nearly the same place in their pages (glibc's chunk headers move each
        by a few cache lines), so an output allocated after its inputs is often just past one
        of them: the calibration that left placement to the allocator measured 13 to 24 GB/s
        from one set of buffers to the next and 15.7 to 22.4 between benchmark runs, while a
        workload of the same traffic (two inputs, one output, 96 MB) kept 24 GB/s. A step's
        buffers are where its allocator put them, which the estimate cannot know, so it
        charges streaming at the rate without the stall. Each input is put at four offsets a
        quarter page apart, x and y half a page apart: wherever the output lands, at most one
        placement puts x just behind it and at most one y, so at least two of the four are
        free of the stall.
    """
    import jax

    compiled = compile_hlo(text)
    device = compiled.devices[0]
    page = 4096 // 4  # in f32 elements
    rng = np.random.default_rng(1)
    block = rng.standard_normal(2 * (n + page) + page, dtype=np.float32)
    base = (-block.ctypes.data % 4096) // 4  # the block's first page boundary

    def at(k: int, offset: int) -> np.ndarray:
        start = base + k * (n + page) + offset // 4
        return block[start:start + n]

    # jax reads an aligned host array in place (no copy), so the inputs are where placed; where
    # it copies instead, the four placements are four draws of the allocator's.
    # A process's first runs of this loop are slow: 5-7 GB/s while the allocator moves the
    # output by 128 bytes a run (the first 30-40 runs here), then still 14-17 GB/s for about
    # 0.4 s more, where the same buffers later run at 20-24. So it runs for STREAM_WARM_UP_SECONDS
    # and until the output has stayed put for eight runs first.
    warm = [jax.device_put(at(0, 0), device), jax.device_put(at(1, 0), device)]
    last, same, start = -1, 0, time.perf_counter()
    while same < 8 or time.perf_counter() - start < STREAM_WARM_UP_SECONDS:
        out = compiled.executable.execute_sharded(warm).disassemble_into_single_device_arrays()
        jax.block_until_ready(out)
        where = out[0][0].unsafe_buffer_pointer()
        del out
        same = same + 1 if where == last else 0
        last = where
        if time.perf_counter() - start > 4 * STREAM_WARM_UP_SECONDS:
            break  # an allocator that never settles: measure as it is
    # Each placement twice; at least four of the eight are free of the stall, and the third
    # fastest is one of them (or faster), not the one luckiest sample.
    seconds = []
    for dx, dy in STREAM_PLACEMENTS * 2:
        arrays = [jax.device_put(at(0, dx), device), jax.device_put(at(1, dy), device)]

        def once(arrays: list[Any] = arrays) -> None:
            jax.block_until_ready(compiled.executable.execute_sharded(arrays)
                                  .disassemble_into_single_device_arrays())

        once()
        seconds.append(_repeat(once, budget / (2 * len(STREAM_PLACEMENTS))))
    return sorted(seconds)[2]


def _xla_loop_rates(budget: float) -> dict[str, float]:
    """Rates of XLA:CPU's own loops (see ``CpuRates``) and its streaming memory bandwidth, each
    measured on one kernel of that family over random data of realistic size: the rates of
    sorts, gathers and transcendentals depend on the data (ordered keys sort faster; exp of a
    large argument takes another path)."""
    rng = np.random.default_rng(0)
    normal = lambda *shape: rng.standard_normal(shape, dtype=np.float32)  # noqa: E731
    share = budget / 16
    rates: dict[str, float] = {}

    # Streaming: z = x + y over just under 8 Mi elements (LARGE_STREAM_BYTES, 96 MB moved: past
    # the caches a core can keep, yet each buffer below glibc's mmap ceiling, so the output's
    # pages are reused).
    n = LARGE_STREAM_BYTES // 12
    text = (f"HloModule calibrate_stream\nENTRY e {{\n  x = f32[{n}]{{0}} parameter(0)\n"
            f"  y = f32[{n}]{{0}} parameter(1)\n  ROOT z = f32[{n}]{{0}} add(x, y)\n}}\n")
    streamed = _stream_seconds(text, n, share * 2)
    rates["memory_bandwidth"] = 3 * 4 * n / streamed
    # Note [Large outputs] in analysis/cpu_model.py: the same loop writing LARGE_OUTPUT_BYTES.
    big = LARGE_OUTPUT_BYTES // 4
    rates["large_output_bandwidth"] = 3 * 4 * big / _stream_seconds(text.replace(str(n), str(big)), big, share)
    # The same loop with an output of FRESH_BUFFER_BYTES: mapped anew on every run, its pages
    # fault at their first write; the time beyond streaming is that.
    large, fresh = n, FRESH_BUFFER_BYTES // 4
    fresh_text = text.replace(str(large), str(fresh))
    # Both placed alike (Note [4K aliasing]): the difference is the faults, not a stall.
    expected = streamed * fresh / large
    extra = _stream_seconds(fresh_text, fresh, share * 2) - expected
    # Faulting 32 MiB in costs two to three times the loop (10-12 ms against 4.5 here); a
    # difference under a quarter of the loop is the two timings' noise, not faults, and the
    # allocator reuses the pages (0: no fresh-page cost). Taken as faults, 6% of noise charged
    # the mul/add workload 0.27 ms.
    rates["fresh_page_bandwidth"] = FRESH_BUFFER_BYTES / extra if extra > 0.25 * expected else 0.0
    # The same loop on 1.2 MB (CACHED_STREAM_BYTES), which the core's own cache keeps, and on
    # half that: an execution's fixed cost (dispatch, the thread pool's hand-off) is tens of
    # microseconds, so the rate is the difference's (the estimate charges that cost apart).
    n = CACHED_STREAM_BYTES // 12
    seconds = []
    for size in (n // 2, n):
        small = text.replace(str(large), str(size))
        seconds.append(_xla_device_seconds(small, [normal(size), normal(size)], share / 2))
    half, full = seconds
    rates["cached_bandwidth"] = (3 * 4 * (n - n // 2) / (full - half) if full > 1.2 * half
                                 else 3 * 4 * n / full)

    n, chain = 1 << 20, 8  # y = y * c + c, chain times: 2 * chain FLOPs per element
    lines, prev = [], "x"
    for k in range(chain):
        lines.append(f"  c{k} = f32[] constant(0.{k + 1})\n  cb{k} = f32[{n}]{{0}} broadcast(c{k}), dimensions={{}}\n"
                     f"  m{k} = f32[{n}]{{0}} multiply({prev}, cb{k})\n  a{k} = f32[{n}]{{0}} add(m{k}, cb{k})\n")
        prev = f"a{k}"
    text = (f"HloModule calibrate_fma\nENTRY e {{\n  x = f32[{n}]{{0}} parameter(0)\n" + "".join(lines)
            + f"  ROOT r = f32[{n}]{{0}} copy({prev})\n}}\n")
    rates["elementwise_flops"] = 2 * chain * n / _xla_device_seconds(text, [normal(n)], share)

    from hloscope.analysis.cpu_model import CHAIN_DEPTH

    chain = CHAIN_DEPTH
    lines, prev = [], "x"  # alternating exp and tanh on values near 1: chain per element
    for k in range(chain):
        op = "exponential" if k % 2 == 0 else "tanh"
        lines.append(f"  t{k} = f32[{n}]{{0}} {op}({prev})\n")
        prev = f"t{k}"
    text = (f"HloModule calibrate_transcendentals\nENTRY e {{\n  x = f32[{n}]{{0}} parameter(0)\n"
            + "".join(lines) + f"  ROOT r = f32[{n}]{{0}} copy({prev})\n}}\n")
    rates["transcendentals"] = chain * n / _xla_device_seconds(text, [0.5 * normal(n)], share)
    # The same number, independent: each of the input, summed (Note [Chained transcendentals]).
    lines = [f"  t{k} = f32[{n}]{{0}} {'exponential' if k % 2 == 0 else 'tanh'}(x)\n" for k in range(chain)]
    lines += [f"  sum{k} = f32[{n}]{{0}} add({'t0' if k == 1 else f'sum{k - 1}'}, t{k})\n" for k in range(1, chain)]
    text = (f"HloModule calibrate_independent\nENTRY e {{\n  x = f32[{n}]{{0}} parameter(0)\n"
            + "".join(lines) + f"  ROOT r = f32[{n}]{{0}} copy(sum{chain - 1})\n}}\n")
    rates["unchained_transcendentals"] = chain * n / _xla_device_seconds(text, [0.5 * normal(n)], share)

    # Note [Narrowing converts]: 8 against 4 bf16 round trips (convert, multiply, convert back)
    # per element; each round trip's two FLOPs at the elementwise rate aside.
    def round_trips(k: int) -> str:
        lines = [f"  x = bf16[{n}]{{0}} parameter(0)", "  c = f32[] constant(1.001)",
                 f"  cb = f32[{n}]{{0}} broadcast(c), dimensions={{}}"]
        prev = "x"
        for i in range(k):
            lines += [f"  w{i} = f32[{n}]{{0}} convert({prev})", f"  m{i} = f32[{n}]{{0}} multiply(w{i}, cb)",
                      f"  {'ROOT ' if i == k - 1 else ''}b{i} = bf16[{n}]{{0}} convert(m{i})"]
            prev = f"b{i}"
        return "HloModule calibrate_narrowing\nENTRY e {\n" + "\n".join(lines) + "\n}\n"

    x16 = normal(n).astype(ml_dtypes.bfloat16)
    trip = (_xla_device_seconds(round_trips(8), [x16], share) - _xla_device_seconds(round_trips(4), [x16], share)) / (4 * n)
    rounding = trip - 2 / rates["elementwise_flops"]
    # Under the FLOP's own cost is noise (a loaded machine): the generic profile's figure stands.
    generic = load_hardware("cpu").cpu_rates
    assert generic is not None
    rates["narrowing_converts"] = (1 / rounding if rounding > 1 / rates["elementwise_flops"]
                                   else generic.narrowing_converts)

    rows, cols = 32, 16384
    text = ("HloModule calibrate_sort\nlt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT c = pred[] compare(a, b), direction=LT\n}\nENTRY e {\n"
            f"  x = f32[{rows},{cols}]{{1,0}} parameter(0)\n"
            f"  ROOT r = f32[{rows},{cols}]{{1,0}} sort(x), dimensions={{1}}, to_apply=lt\n}}\n")
    comparisons = rows * cols * (cols - 1).bit_length()
    keys = normal(rows, cols)
    plain = _xla_device_seconds(text, [keys], share)
    rates["sort_comparisons"] = comparisons / plain
    # The same sort with a comparator as jax writes one for floats: NaNs and -0.0 mapped, the
    # bits compared as integers in a total order (sign-flipped) -- 17 instructions.
    total = text.replace("  ROOT c = pred[] compare(a, b), direction=LT\n", TOTAL_ORDER_LT)
    extra = TOTAL_ORDER_LT.count(" = ") - TOTAL_ORDER_LT.count("constant(") - 1
    seconds = _xla_device_seconds(total, [keys], share)
    rates["comparator_ops"] = comparisons * extra / max(seconds - plain, 0.05 * seconds)

    table, count, width = 65536, 262144, 32  # an embedding table's rows, as jax writes them
    idx = rng.integers(0, table, (count, 1)).astype(np.int32)
    text = (f"HloModule calibrate_scatter\n{ADD}ENTRY e {{\n  t = f32[{table},{width}]{{1,0}} parameter(0)\n"
            f"  i = s32[{count},1]{{1,0}} parameter(1)\n  u = f32[{count},{width}]{{1,0}} parameter(2)\n"
            f"  ROOT r = f32[{table},{width}]{{1,0}} scatter(t, i, u), update_window_dims={{1}}, "
            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n")
    seconds = _xla_device_seconds(text, [normal(table, width), idx, normal(count, width)], share)
    # The parameter is not donated, so XLA:CPU copies the table before scattering into it; the
    # estimated modules show that copy as its own instruction, so its time is taken out here.
    copy = (f"HloModule calibrate_copy\nENTRY e {{\n  t = f32[{table},{width}]{{1,0}} parameter(0)\n"
            f"  ROOT r = f32[{table},{width}]{{1,0}} negate(t)\n}}\n")
    seconds -= _xla_device_seconds(copy, [normal(table, width)], share / 2)
    rates["scatter_elements"] = count * width / max(seconds, 1e-6)
    # The same into a table the core's cache keeps (CACHED_TABLE_BYTES; Note [Transposes] and
    # _indexed_rate in analysis/cpu_model.py say why the table's size matters).
    small = CACHED_TABLE_BYTES // (4 * width)
    small_idx = rng.integers(0, small, (count, 1)).astype(np.int32)
    small_text = text.replace(f"f32[{table},{width}]", f"f32[{small},{width}]")
    seconds = _xla_device_seconds(small_text, [normal(small, width), small_idx, normal(count, width)], share)
    seconds -= _xla_device_seconds(copy.replace(f"f32[{table},{width}]", f"f32[{small},{width}]"),
                                   [normal(small, width)], share / 4)
    rates["cached_scatter_elements"] = count * width / max(seconds, 1e-6)
    text = (f"HloModule calibrate_gather\nENTRY e {{\n  t = f32[{table},{width}]{{1,0}} parameter(0)\n"
            f"  i = s32[{count},1]{{1,0}} parameter(1)\n"
            f"  ROOT r = f32[{count},{width}]{{1,0}} gather(t, i), offset_dims={{1}}, collapsed_slice_dims={{0}}, "
            f"start_index_map={{0}}, index_vector_dim=1, slice_sizes={{1,{width}}}\n}}\n")
    gathered = _xla_device_seconds(text, [normal(table, width), idx], share)
    rates["gather_elements"] = count * width / gathered
    # The same gather with a multiply fused in (Note [FLOPs in a gather's loop] in
    # analysis/cpu_model.py): the loop does not vectorise, so its FLOPs run one at a time.
    scaled = text.replace("  ROOT r = ", "  g = ").replace(
        "}\n}\n", f"}}\n  c = f32[] constant(2)\n  b = f32[{count},{width}]{{1,0}} broadcast(c), dimensions={{}}\n"
        f"  ROOT r = f32[{count},{width}]{{1,0}} multiply(g, b)\n}}\n")
    extra = _xla_device_seconds(scaled, [normal(table, width), idx], share) - gathered
    # Under a twentieth of the gather is the two timings' noise: no figure (0).
    rates["gather_loop_flops"] = count * width / extra if extra > 0.05 * gathered else 0.0
    small_text = text.replace(f"f32[{table},{width}]", f"f32[{small},{width}]")
    rates["cached_gather_elements"] = count * width / _xla_device_seconds(small_text, [normal(small, width), small_idx],
                                                                          share)

    rows, cols, window = 1024, 4096, 16  # a cumulative sum's first level, as XLA:CPU writes it
    text = (f"HloModule calibrate_reduce_window\n{ADD}ENTRY e {{\n  x = f32[{rows},{cols}]{{1,0}} parameter(0)\n"
            f"  z = f32[] constant(0)\n  ROOT r = f32[{rows},{cols}]{{1,0}} reduce-window(x, z), "
            f"window={{size=1x{window} pad=0_0x{window - 1}_0}}, to_apply=add\n}}\n")
    rates["reduce_window_elements"] = (rows * cols * window
                                       / _xla_device_seconds(text, [normal(rows, cols)], share))

    b, hw_, c = 8, 64, 64  # a depthwise 3x3 convolution, NHWC
    text = (f"HloModule calibrate_grouped_conv\nENTRY e {{\n  x = f32[{b},{hw_},{hw_},{c}]{{3,2,1,0}} parameter(0)\n"
            f"  w = f32[3,3,1,{c}]{{3,2,1,0}} parameter(1)\n"
            f"  ROOT r = f32[{b},{hw_},{hw_},{c}]{{3,2,1,0}} convolution(x, w), window={{size=3x3 pad=1_1x1_1}}, "
            f"dim_labels=b01f_01io->b01f, feature_group_count={c}\n}}\n")
    flops = 2 * b * hw_ * hw_ * c * 9
    rates["grouped_conv_flops"] = flops / _xla_device_seconds(text, [normal(b, hw_, hw_, c), normal(3, 3, 1, c)], share)
    # A 3x3 convolution of 16 channels, which XLA:CPU runs with Eigen's kernel (Note [Eigen
    # convolutions] in analysis/cpu_model.py): output elements per second.
    c = 16
    text = (f"HloModule calibrate_conv\nENTRY e {{\n  x = f32[{b},{hw_},{hw_},{c}]{{3,2,1,0}} parameter(0)\n"
            f"  w = f32[3,3,{c},{c}]{{3,2,1,0}} parameter(1)\n"
            f"  ROOT r = f32[{b},{hw_},{hw_},{c}]{{3,2,1,0}} convolution(x, w), window={{size=3x3 pad=1_1x1_1}}, "
            f"dim_labels=b01f_01io->b01f\n}}\n")
    rates["conv_outputs"] = b * hw_ * hw_ * c / _xla_device_seconds(text, [normal(b, hw_, hw_, c), normal(3, 3, c, c)],
                                                                     share)

    rows, cols, k = 1024, 4096, 16
    text = ("HloModule calibrate_topk\ngt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT c = pred[] compare(a, b), direction=GT\n}\nENTRY e {\n"
            f"  x = f32[{rows},{cols}]{{1,0}} parameter(0)\n"
            f"  ROOT r = (f32[{rows},{k}]{{1,0}}, s32[{rows},{k}]{{1,0}}) custom-call(x), "
            "custom_call_target=\"TopK\", called_computations={gt}\n}\n")
    rates["topk_elements"] = rows * cols / _xla_device_seconds(text, [normal(rows, cols)], share)

    # Note [Library column reductions] in analysis/cpu_model.py: sums over the rows of
    # 4096 x 4096 and 256 x 65536 f32, keeping COLUMN_REDUCE_ROW_BYTES and
    # WIDE_COLUMN_REDUCE_ROW_BYTES. Where XLA:CPU keeps such a reduction in its own loop (no
    # library), the rule is off (0): it is about the library's kernel.
    for key, row in (("column_reduce_elements", COLUMN_REDUCE_ROW_BYTES),
                     ("wide_column_reduce_elements", WIDE_COLUMN_REDUCE_ROW_BYTES)):
        cols = row // 4
        rows = (16 << 20) // cols
        text = (f"HloModule calibrate_column_reduce\n{ADD}ENTRY e {{\n  x = f32[{rows},{cols}]{{1,0}} parameter(0)\n"
                f"  z = f32[] constant(0)\n  ROOT r = f32[{cols}]{{0}} reduce(x, z), dimensions={{0}}, to_apply=add\n}}\n")
        seconds, optimized = _xla_timed(text, [normal(rows, cols)], share / 2)
        rates[key] = rows * cols / seconds if any(k in optimized for k in LIBRARY_FUSION_KINDS) else 0.0
    if not (rates["column_reduce_elements"] and rates["wide_column_reduce_elements"]):
        rates["column_reduce_elements"] = rates["wide_column_reduce_elements"] = 0.0
    # Note [Library passes]: a library's exp, as the difference between the row sums of exp(x)
    # and of x over 4096 x 2048 f32; 0 (the old model) where XLA:CPU keeps them in its loops.
    rows, cols = 4096, 2048
    seconds = []
    for exp in (True, False):
        inner = f"  e = f32[{rows},{cols}]{{1,0}} exponential(x)\n" if exp else ""
        text = (f"HloModule calibrate_library_exp\n{ADD}ENTRY e {{\n  x = f32[{rows},{cols}]{{1,0}} parameter(0)\n"
                f"{inner}  z = f32[] constant(0)\n  ROOT r = f32[{rows}]{{0}} reduce({'e' if exp else 'x'}, z), "
                "dimensions={1}, to_apply=add\n}\n")
        took, optimized = _xla_timed(text, [normal(rows, cols)], share / 2)
        seconds.append(took if any(k in optimized for k in LIBRARY_FUSION_KINDS) else math.nan)
    beyond = seconds[0] - seconds[1]
    rates["library_transcendentals"] = rows * cols / beyond if beyond > 0.05 * seconds[1] else 0.0

    # Transposes (a layout-changing copy may be assigned away) of 32 MiB with power-of-two
    # rows, as a model's arrays have; the median rate of three shapes. Measured here, one
    # process: 4096 x 2048 3.56 GB/s, 2048 x 4096 3.73, 8192 x 1024 3.83, 1024 x 8192 4.16, and
    # 4095 x 2048 (the one shape calibrated before) 2.36, which made every large transpose
    # half as fast as it ran.
    transpose_rates = []
    for rows, cols in ((4096, 2048), (2048, 4096), (8192, 1024)):
        text = (f"HloModule calibrate_transpose\nENTRY e {{\n  x = f32[{rows},{cols}]{{1,0}} parameter(0)\n"
                f"  ROOT r = f32[{cols},{rows}]{{1,0}} transpose(x), dimensions={{1,0}}\n}}\n")
        transpose_rates.append(2 * 4 * rows * cols / _xla_device_seconds(text, [normal(rows, cols)], share / 2))
    rates["transpose_bandwidth"] = statistics.median(transpose_rates)
    # Note [Fused transposes] in analysis/cpu_model.py: the 2048 x 4096 transpose times 2, one
    # loop fusion; its whole time per element.
    rows, cols = 2048, 4096
    text = (f"HloModule calibrate_fused_transpose\nENTRY e {{\n  x = f32[{rows},{cols}]{{1,0}} parameter(0)\n"
            f"  t = f32[{cols},{rows}]{{1,0}} transpose(x), dimensions={{1,0}}\n  c = f32[] constant(2)\n"
            f"  b = f32[{cols},{rows}]{{1,0}} broadcast(c), dimensions={{}}\n"
            f"  ROOT r = f32[{cols},{rows}]{{1,0}} multiply(t, b)\n}}\n")
    rates["fused_transpose_elements"] = rows * cols / _xla_device_seconds(text, [normal(rows, cols)], share / 2)
    # And one the cache keeps (CACHED_TRANSPOSE_BYTES moved): 512 x 512 and 512 x 1024, the
    # difference (an execution's fixed cost is a good part of either).
    seconds = []
    for rows, cols in ((512, 512), (512, 1024)):
        small = (f"HloModule calibrate_transpose\nENTRY e {{\n  x = f32[{rows},{cols}]{{1,0}} parameter(0)\n"
                 f"  ROOT r = f32[{cols},{rows}]{{1,0}} transpose(x), dimensions={{1,0}}\n}}\n")
        seconds.append(_xla_device_seconds(small, [normal(rows, cols)], share / 2))
    rates["cached_transpose_bandwidth"] = 2 * 4 * 512 * 512 / max(seconds[1] - seconds[0], 0.2 * seconds[1])

    # XLA:CPU's FFT (DUCC): a batch of 2-D transforms, 5 N log2 N FLOPs each.
    batch, n = 8, 256
    text = (f"HloModule calibrate_fft\nENTRY e {{\n  x = c64[{batch},{n},{n}]{{2,1,0}} parameter(0)\n"
            f"  ROOT r = c64[{batch},{n},{n}]{{2,1,0}} fft(x), fft_type=FFT, fft_length={{{n},{n}}}\n}}\n")
    x = (normal(batch, n, n) + 1j * normal(batch, n, n)).astype(np.complex64)
    rates["fft_flops"] = batch * 5 * n * n * math.log2(n * n) / _xla_device_seconds(text, [x], share)
    return rates


def _with_dispatch_overheads(spec: HardwareSpec, budget: float) -> HardwareSpec:
    """``spec`` with the thunk executor's costs measured (Note [Thunk dispatch] in
    analysis/cpu_thunks.py): what a chain of small reductions, each adding its sum back, takes
    beyond what ``spec`` charges for their work, per thunk (they run in sequence); the same for
    independent multiply-reduce fusions, per thunk the executor runs while it hands ready ones
    to its pool; both over 4 KiB arrays (more than the 512 bytes that keep a graph in
    sequence), counted on the modules XLA compiled (a reduction is two thunks there, a window
    pass and a final one); and an execution's fixed cost (one negate of 16 elements)."""
    from hloscope.analysis.cpu_thunks import thunks_of, wide_thunks
    from hloscope.analysis.timing import estimate_time
    from hloscope.ir import Opcode
    from hloscope.text import parse_module

    assert spec.cpu_rates is not None
    n, add = 1024, ADD

    def chain(k: int) -> str:
        lines = [f"  x0 = f32[{n}]{{0}} parameter(0)", "  z = f32[] constant(0)"]
        for i in range(1, k + 1):
            lines += [f"  r{i} = f32[] reduce(x{i - 1}, z), dimensions={{0}}, to_apply=add",
                      f"  b{i} = f32[{n}]{{0}} broadcast(r{i}), dimensions={{}}",
                      f"  x{i} = f32[{n}]{{0}} add(x{i - 1}, b{i})"]
        lines[-1] = lines[-1].replace(f"  x{k} =", f"  ROOT x{k} =")
        return f"HloModule calibrate_chain\n{add}ENTRY e {{\n" + "\n".join(lines) + "\n}\n"

    def graph(k: int) -> str:
        lines = [f"  x = f32[{n}]{{0}} parameter(0)", "  z = f32[] constant(0)"]
        for i in range(k):
            lines += [f"  k{i} = f32[] constant({i + 1})", f"  b{i} = f32[{n}]{{0}} broadcast(k{i}), dimensions={{}}",
                      f"  m{i} = f32[{n}]{{0}} multiply(x, b{i})",
                      f"  r{i} = f32[] reduce(m{i}, z), dimensions={{0}}, to_apply=add"]
        lines.append(f"  ROOT t = ({','.join(['f32[]'] * k)}) tuple({','.join(f'r{i}' for i in range(k))})")
        return f"HloModule calibrate_graph\n{add}ENTRY e {{\n" + "\n".join(lines) + "\n}\n"

    # The work alone: no dispatch costs at all.
    bare = replace(spec, kernel_launch_overhead=0.0,
                   cpu_rates=replace(spec.cpu_rates, dag_thunk_overhead=0.0, execution_overhead=0.0,
                                     loop_thunk_overhead=0.0, loop_trip_overhead=0.0, eigen_dot_overhead=0.0))

    def beyond_work(text: str, size: int = n) -> tuple[float, int, int]:
        seconds, compiled = _xla_timed(text, [np.linspace(-1e-3, 1e-3, size, dtype=np.float32)], budget / 10)
        module = parse_module(compiled)
        work = estimate_time(module, bare).total_seconds
        loops = [i for i in module.entry.instructions if i.opcode is Opcode.WHILE]
        if loops:  # the thunks of the loop's body
            return seconds - work, len(thunks_of(loops[0].attrs["body"])), 0
        return seconds - work, len(thunks_of(module.entry)), len(wide_thunks(module.entry))

    short, long = 20, 200
    (c0, n0, _), (c1, n1, _) = beyond_work(chain(short)), beyond_work(chain(long))
    # Each cost is a difference of two timings; where noise (a loaded machine) swallows it, the
    # generic profile's figure stands rather than a near-zero one.
    generic = load_hardware("cpu")
    assert generic.cpu_rates is not None
    launch = (c1 - c0) / max(n1 - n0, 1) if c1 > c0 else generic.kernel_launch_overhead
    (g0, m0, w0), (g1, m1, w1) = beyond_work(graph(short)), beyond_work(graph(80))
    extra = g1 - g0 - (m1 - w1 - m0 + w0) * launch
    dag = extra / max(w1 - w0, 1) if extra > 0 else generic.cpu_rates.dag_thunk_overhead
    # Note [Thunks in loops]: loops over a body of 1 and of 8 pairs of links, of 64 trips, and
    # one of 16 trips over the smaller body.
    trips, small = 64, 64
    (l0, b0, _), (l1, b1, _) = beyond_work(loop_module(1, trips, small), small), beyond_work(loop_module(8, trips, small), small)
    (l2, _, _) = beyond_work(loop_module(1, trips // 4, small), small)
    # Both are a few tens of ns here (5-10 ns a thunk, 25-30 ns a trip with its 8 thunks), so
    # under 10 ns is the work's own noise and 10 ns stands for it; a negative difference is a
    # loaded machine's, and the generic figure stands.
    loop_thunk = (l1 - l0) / trips / max(b1 - b0, 1)
    loop_thunk = max(loop_thunk, 1e-8) if loop_thunk > -1e-8 else generic.cpu_rates.loop_thunk_overhead
    per_trip = (l0 - l2) / (trips - trips // 4)  # the trip's own cost and its body's thunks'
    loop_trip = max(per_trip - b0 * loop_thunk, 1e-8) if per_trip > -1e-8 else generic.cpu_rates.loop_trip_overhead
    # Note [Eigen dots]: chains of 24 dots of 16 batch elements and of 1, the same thunks: what
    # the 15 further contractions cost beyond their FLOPs.
    def eigen_dots(batch: int) -> float:
        text, args = eigen_dot_chain(24, batch)
        seconds, compiled = _xla_timed(text, args, budget / 10)
        return (seconds - estimate_time(parse_module(compiled), bare).total_seconds) / 24

    per_call = (eigen_dots(16) - eigen_dots(1)) / 15
    eigen_dot = per_call if per_call > 1e-8 else generic.cpu_rates.eigen_dot_overhead
    one = ("HloModule calibrate_one\nENTRY e {\n  x = f32[16]{0} parameter(0)\n"
           "  ROOT y = f32[16]{0} negate(x)\n}\n")
    execution = _xla_device_seconds(one, [np.ones(16, np.float32)], budget / 10)
    spec = replace(spec, kernel_launch_overhead=_round(launch), cpu_rates=replace(
        spec.cpu_rates, dag_thunk_overhead=_round(dag), execution_overhead=_round(execution),
        loop_thunk_overhead=_round(loop_thunk), loop_trip_overhead=_round(loop_trip),
        eigen_dot_overhead=_round(eigen_dot)))
    return _with_buffer_overheads(spec, budget)


def _with_buffer_overheads(spec: HardwareSpec, budget: float) -> HardwareSpec:
    """``spec`` with what each entry parameter and each result array adds to an execution
    (Note [Thunk dispatch] in analysis/cpu_thunks.py), beyond what ``spec`` already charges:
    one fusion adding 64 small parameters against one adding 2; 64 small results against 2.
    The ViT step of the models tier hands over 47 arrays each way, and these costs were a
    fifth of its 0.5 ms."""
    from hloscope.analysis.timing import estimate_time
    from hloscope.text import parse_module

    assert spec.cpu_rates is not None
    small = "f32[16]{0}"

    def many_in(k: int) -> str:
        lines = [f"  p{i} = {small} parameter({i})" for i in range(k)]
        acc = "p0"
        for i in range(1, k):
            lines.append(f"  a{i} = {small} add({acc}, p{i})")
            acc = f"a{i}"
        lines[-1] = lines[-1].replace(f"  {acc} =", f"  ROOT {acc} =")
        return "HloModule calibrate_parameters\nENTRY e {\n" + "\n".join(lines) + "\n}\n"

    def many_out(k: int) -> str:
        lines = [f"  p0 = {small} parameter(0)"]
        for i in range(k):
            lines += [f"  c{i} = f32[] constant({i + 1})", f"  b{i} = {small} broadcast(c{i}), dimensions={{}}",
                      f"  o{i} = {small} multiply(p0, b{i})"]
        lines.append(f"  ROOT t = ({','.join(['f32[16]'] * k)}) tuple({','.join(f'o{i}' for i in range(k))})")
        return "HloModule calibrate_results\nENTRY e {\n" + "\n".join(lines) + "\n}\n"

    def beyond_model(text: str, args: int) -> float:
        seconds, compiled = _xla_timed(text, [np.ones(16, np.float32)] * args, budget / 5)
        return seconds - estimate_time(parse_module(compiled), spec).total_seconds

    k0, k1 = 2, 64
    # As for the dispatch costs: where noise swallows the difference (under 10 ns an array on a
    # loaded machine), the generic profile's figure stands.
    generic = load_hardware("cpu").cpu_rates
    assert generic is not None
    per_parameter = (beyond_model(many_in(k1), k1) - beyond_model(many_in(k0), k0)) / (k1 - k0)
    if per_parameter < 1e-8:
        per_parameter = generic.parameter_overhead
    per_result = (beyond_model(many_out(k1), 1) - beyond_model(many_out(k0), 1)) / (k1 - k0)
    if per_result < 1e-8:
        per_result = generic.result_overhead
    return replace(spec, cpu_rates=replace(spec.cpu_rates, parameter_overhead=_round(per_parameter),
                                           result_overhead=_round(per_result)))


# Shortest span one timing sample covers with the CPU clock (Note [CPU time on a shared machine]).
CPU_SAMPLE_SECONDS = 0.03


def _repeat(fn: Any, budget: float) -> float:
    """Seconds of one ``fn()`` over repeated calls within ``budget`` seconds (at least 3 samples):
    the best wall time, or the median CPU time. The kernel charges another thread's CPU time
    only at its scheduler ticks, so a CPU-time reading may be off by a tick (1-4 ms) either
    way: each sample then times enough calls to span ``CPU_SAMPLE_SECONDS``, which makes that
    error small, and the median (not the minimum, which keeps the luckiest error) is taken."""
    per_sample = 1
    if _clock is time.process_time:
        t0 = time.perf_counter()
        fn()
        per_sample = max(1, math.ceil(CPU_SAMPLE_SECONDS / max(time.perf_counter() - t0, 1e-6)))
    times = []
    start = time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < budget:
        t0 = _clock()
        for _ in range(per_sample):
            fn()
        times.append((_clock() - t0) / per_sample)
    seconds = statistics.median(times) if _clock is time.process_time else min(times)
    return max(seconds, 1e-9)


def _matmul_rate(dtype: Any, budget: float, sizes: tuple[int, ...] = (1536,)) -> float:
    rng = np.random.default_rng(0)
    best = 0.0
    for n in sizes:
        a = rng.standard_normal((n, n)).astype(dtype)
        b = rng.standard_normal((n, n)).astype(dtype)
        out = np.empty((n, n), dtype=dtype)
        np.matmul(a, b, out=out)  # warm up BLAS threads
        t = _repeat(lambda a=a, b=b, out=out: np.matmul(a, b, out=out), budget / 2)
        best = max(best, 2.0 * n**3 / t)
    return best


def _memory_rates(budget: float) -> tuple[float, float]:
    """(copy bandwidth counting read + write, read bandwidth of a sum) in bytes/s."""
    n = 32 * 1024 * 1024 // 8  # 32 MiB of f64: beyond typical last-level caches
    src = np.ones(n, dtype=np.float64)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    copy_t = _repeat(lambda: np.copyto(dst, src), budget / 2)
    sum_t = _repeat(lambda: src.sum(), budget / 2)
    return 2.0 * src.nbytes / copy_t, src.nbytes / sum_t


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None
