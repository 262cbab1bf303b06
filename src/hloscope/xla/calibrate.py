"""Measuring this machine: a hardware profile from timed numpy and XLA:CPU kernels.

XLA:CPU's own rates (through jaxlib, when installed) are what the time estimate models; without
jax, numpy's stand in for the loops.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import replace
from typing import Any

import numpy as np

from hloscope.analysis.hardware import (
    CpuRates,
    HardwareSpec,
    LinkSpec,
    load_hardware,
)
from hloscope.errors import InputError
from hloscope.xla import client as xla_bridge
from hloscope.xla.client import compile_hlo

__all__ = ["calibrate"]


def _round(x: float, digits: int = 4) -> float:
    """Measurements carry a few digits of signal; keep profiles readable."""
    return float(f"{x:.{digits - 1}e}")


# ---------------------------------------------------------------------------------------------
# Calibration


def calibrate(seconds: float = 2.0, *, name: str = "cpu-calibrated", xla: bool | None = None) -> HardwareSpec:
    """Measure this machine and return a ``kind="cpu"`` profile.

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
    base = load_hardware("cpu")
    assert base.cpu_rates is not None
    if xla is None:
        xla = xla_bridge.available()
    copy_bw, read_bw = (_round(r) for r in _memory_rates(0.2 * seconds))
    transpose_bw = _round(_transpose_bandwidth(0.1 * seconds))
    if xla:
        peak = {k: _round(v) for k, v in _xla_dot_rates(0.35 * seconds).items()}
        loops = _xla_loop_rates(0.35 * seconds)
        rates = CpuRates(
            elementwise_flops=_round(loops["elementwise_flops"]),
            transcendentals=_round(loops["transcendentals"]),
            transpose_bandwidth=transpose_bw,
            sort_comparisons=_round(loops["sort_comparisons"]),
            scatter_elements=_round(loops["scatter_elements"]),
            cached_dot_flops=_round(_xla_cached_dot_rate(0.1 * seconds)),
        )
        how = "XLA:CPU dots and loops on generated data, numpy copy, sum and transposed copy"
    else:
        f32 = _round(_matmul_rate(np.float32, 0.25 * seconds))
        f64 = _round(_matmul_rate(np.float64, 0.25 * seconds))
        peak = {"f64": f64, "f32": f32, "bf16": f32, "f16": f32, "s8": f32}
        elementwise, transcendental = _numpy_loop_rates(0.2 * seconds)
        cached = _round(_matmul_rate(np.float32, 0.1 * seconds, sizes=(512,)))
        rates = replace(base.cpu_rates, elementwise_flops=_round(elementwise), cached_dot_flops=cached,
                        transcendentals=_round(transcendental), transpose_bandwidth=transpose_bw)
        how = ("numpy matmul f32/f64, copy, sum, transposed copy, exp/tanh; bf16/f16/s8 use the "
               "f32 rate; sort and scatter rates are the generic cpu profile's")
    peak.setdefault("f16", peak["f32"])
    peak.setdefault("s8", peak["f32"])
    return replace(
        base,
        name=name,
        peak_flops=peak,
        memory_bandwidth=max(copy_bw, read_bw),
        memory_bytes=_physical_memory() or base.memory_bytes,
        intra_node=LinkSpec(copy_bw, base.intra_node.latency),
        inter_node=None,
        cpu_rates=rates,
        notes=(
            f"Measured by hloscope.xla.calibrate.calibrate(seconds={seconds}) at "
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {how}. Latencies and overheads are the generic "
            "cpu profile's."
        ),
        sources=("measured on this machine",),
    )


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
_GEN = """  s = f32[] parameter(0)
  i = f32[{dims}]{{{layout}}} iota(), iota_dimension={axis}
  b = f32[{dims}]{{{layout}}} broadcast(s), dimensions={{}}
  x = f32[{dims}]{{{layout}}} multiply(i, b)
"""


def _gen(dims: tuple[int, ...], axis: int = 0) -> str:
    layout = ",".join(str(d) for d in reversed(range(len(dims))))
    return _GEN.format(dims=",".join(map(str, dims)), layout=layout, axis=axis)


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
            gen = _gen((n, n)).replace("  x = ", "  x0 = " if convert else "  x = ")
            text = (f"HloModule calibrate_dot_{dtype}\nENTRY e {{\n{gen}{convert}"
                    f"  ROOT d = {dtype}[{n},{n}]{{1,0}} dot(x, x), lhs_contracting_dims={{1}}, "
                    "rhs_contracting_dims={0}\n}\n")
            best = max(best, 2.0 * n**3 / _xla_seconds(text, budget / 3))
        rates[dtype] = best
    return rates


def _xla_cached_dot_rate(budget: float) -> float:
    """f32 FLOP/s of XLA:CPU's dot at 512^3 (``CACHED_DOT_BYTES``)."""
    n = 512
    text = (f"HloModule calibrate_cached_dot\nENTRY e {{\n{_gen((n, n))}"
            f"  ROOT d = f32[{n},{n}]{{1,0}} dot(x, x), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n}}\n")
    return 2.0 * n**3 / _xla_seconds(text, budget)


def _xla_loop_rates(budget: float) -> dict[str, float]:
    """Rates of XLA:CPU's own loops; see ``CpuRates``."""
    n, chain = 1 << 18, 8  # 1 MiB: cache-resident, so the loop's arithmetic is what is timed
    lines = [_gen((n,))]
    prev = "x"
    for k in range(chain):  # y = y * c + c, chain times: 2 * chain FLOPs per element
        lines.append(f"  c{k} = f32[] constant(0.{k + 1})\n  cb{k} = f32[{n}]{{0}} broadcast(c{k}), dimensions={{}}\n"
                     f"  m{k} = f32[{n}]{{0}} multiply({prev}, cb{k})\n  a{k} = f32[{n}]{{0}} add(m{k}, cb{k})\n")
        prev = f"a{k}"
    fma = "HloModule calibrate_fma\nENTRY e {\n" + "".join(lines) + f"  ROOT r = f32[{n}]{{0}} copy({prev})\n}}\n"
    lines, prev = [_gen((n,))], "x"
    for k in range(chain):  # alternating exp and tanh: chain transcendentals per element
        op = "exponential" if k % 2 == 0 else "tanh"
        lines.append(f"  t{k} = f32[{n}]{{0}} {op}({prev})\n")
        prev = f"t{k}"
    trans = "HloModule calibrate_transcendentals\nENTRY e {\n" + "".join(lines) + f"  ROOT r = f32[{n}]{{0}} copy({prev})\n}}\n"
    rows, cols = 16, 8192  # pseudo-random keys: fraction of sin(x) * 1e4
    sort = (
        "HloModule calibrate_sort\nlt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT c = pred[] compare(a, b), direction=LT\n}\nENTRY e {\n" + _gen((rows, cols), axis=1)
        + f"  sn = f32[{rows},{cols}]{{1,0}} sine(x)\n  k = f32[] constant(10000)\n"
        f"  kb = f32[{rows},{cols}]{{1,0}} broadcast(k), dimensions={{}}\n"
        f"  y = f32[{rows},{cols}]{{1,0}} multiply(sn, kb)\n  fl = f32[{rows},{cols}]{{1,0}} floor(y)\n"
        f"  fr = f32[{rows},{cols}]{{1,0}} subtract(y, fl)\n"
        f"  ROOT r = f32[{rows},{cols}]{{1,0}} sort(fr), dimensions={{1}}, to_apply=lt\n}}\n"
    )
    table, updates, width = 16384, 65536, 16
    scatter = (
        "HloModule calibrate_scatter\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT c = f32[] add(a, b)\n}\nENTRY e {\n" + _gen((updates, width))
        + f"  z = f32[] constant(0)\n  op = f32[{table},{width}]{{1,0}} broadcast(z), dimensions={{}}\n"
        f"  j = s32[{updates},1]{{1,0}} iota(), iota_dimension=0\n  p = s32[] constant(7919)\n"
        f"  pb = s32[{updates},1]{{1,0}} broadcast(p), dimensions={{}}\n  jp = s32[{updates},1]{{1,0}} multiply(j, pb)\n"
        f"  mk = s32[] constant({table})\n  mb = s32[{updates},1]{{1,0}} broadcast(mk), dimensions={{}}\n"
        f"  idx = s32[{updates},1]{{1,0}} remainder(jp, mb)\n"
        f"  ROOT r = f32[{table},{width}]{{1,0}} scatter(op, idx, x), update_window_dims={{1}}, "
        "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n"
    )
    share = budget / 4
    return {
        "elementwise_flops": 2 * chain * n / _xla_seconds(fma, share),
        "transcendentals": chain * n / _xla_seconds(trans, share),
        "sort_comparisons": rows * cols * (cols - 1).bit_length() / _xla_seconds(sort, share),
        "scatter_elements": updates * width / _xla_seconds(scatter, share),
    }


def _repeat(fn: Any, budget: float) -> float:
    """Best wall time of ``fn()`` over repeated calls within ``budget`` seconds (at least 2)."""
    best = math.inf
    start = time.perf_counter()
    runs = 0
    while runs < 2 or time.perf_counter() - start < budget:
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        runs += 1
    return max(best, 1e-9)


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
