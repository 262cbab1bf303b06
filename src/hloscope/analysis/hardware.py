"""Named hardware profiles: the peak rates the roofline and communication models divide by.

A ``HardwareSpec`` is a frozen record of one accelerator (one GPU, one TPU chip, or this CPU):
peak FLOP/s per element type, memory bandwidth and capacity, link bandwidth and latency, and
fixed per-op and per-collective overheads. Bundled profiles live as JSON next to this module
(``analysis/hardware/<name>.json``) so users can copy one, edit it and pass the path;
``calibrate()`` measures this machine instead.

Units are SI throughout: FLOP/s, bytes/s, bytes, seconds. Bandwidths are per device and per
direction (unidirectional): NVIDIA's "900 GB/s NVLink" is bidirectional, so the profile holds
450e9. FLOP/s are dense (no structured sparsity), the figure a dense matmul can reach.

Note [Peak FLOP/s by element type]
    ``peak_flops`` is keyed by HLO element-type text (``f32``, ``bf16``, ``f8e4m3fn``, ``s8``,
    ...) plus ``tf32`` for f32 dots that run on tensor cores. Each profile must give ``f32`` and
    ``bf16``; a missing type falls back along ``_FALLBACK`` (f16 -> bf16, any f8 -> f8e4m3fn ->
    bf16, small ints -> s8, everything else -> f32), so an estimate is always possible and the
    fallback chain is the one place to change that policy.
"""
from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from hloscope.errors import InputError

__all__ = [
    "LinkSpec",
    "CpuRates",
    "HardwareSpec",
    "REQUIRED_DTYPES",
    "CACHED_DOT_BYTES",
    "LARGE_DOT_BYTES",
    "load_hardware",
    "list_hardware",
    "save_hardware",
    "calibrate",
]

REQUIRED_DTYPES = ("f32", "bf16")
KINDS = ("gpu", "tpu", "cpu")

# Where a dtype's rate comes from when a profile does not list it. See Note [Peak FLOP/s by
# element type]. Chains end at f32, which every profile has.
_FALLBACK: dict[str, str] = {
    "f16": "bf16",
    "f8e4m3fn": "bf16",
    "f8e5m2": "f8e4m3fn",
    "f8e4m3": "f8e4m3fn",
    "f8e4m3fnuz": "f8e4m3fn",
    "f8e5m2fnuz": "f8e5m2",
    "f8e4m3b11fnuz": "f8e4m3fn",
    "f8e3m4": "f8e4m3fn",
    "f8e8m0fnu": "f8e4m3fn",
    "f4e2m1fn": "f8e4m3fn",
    "u8": "s8",
    "s4": "s8",
    "u4": "s8",
    "s2": "s8",
    "u2": "s8",
    "tf32": "f32",
    "c64": "f32",
    "c128": "f64",
}
_KNOWN_DTYPES = frozenset(_FALLBACK) | {
    "f32", "bf16", "f64", "s8", "s16", "s32", "s64", "u16", "u32", "u64", "pred",
}

# Short names people type, mapped to the bundled profile they mean.
_ALIASES = {"h100": "h100-sxm", "a100": "a100-sxm-80gb", "a100-sxm": "a100-sxm-80gb", "h200-sxm": "h200"}


@dataclass(frozen=True)
class LinkSpec:
    """One kind of link: per-device unidirectional bandwidth (bytes/s) and latency (s)."""

    bandwidth: float
    latency: float

    def to_json(self) -> dict[str, float]:
        return {"bandwidth": self.bandwidth, "latency": self.latency}


@dataclass(frozen=True)
class CpuRates:
    """Rates of the loops XLA:CPU emits itself, which run far below the matmul peak.

    See Note [The XLA:CPU model] in ``analysis.timing``. ``elementwise_flops``: FLOP/s of a
    fused elementwise loop on cache-resident data; ``transcendentals``: exp/tanh/log per
    second; ``transpose_bandwidth``: bytes/s (read + write) of a copy that changes the
    physical order of a large array; ``sort_comparisons``: comparisons per second of XLA's
    sort (``elements * ceil(log2 n)`` along the sorted dimension); ``scatter_elements``:
    update elements per second of a scatter; ``cached_dot_flops``: f32 FLOP/s of a dot whose
    operands and result fit in cache (512^3, ``CACHED_DOT_BYTES``), while ``peak_flops`` holds
    the sustained rate of a large dot (1536^3, ``LARGE_DOT_BYTES``).
    """

    elementwise_flops: float
    transcendentals: float
    transpose_bandwidth: float
    sort_comparisons: float
    scatter_elements: float
    cached_dot_flops: float

    def to_json(self) -> dict[str, float]:
        return {f: getattr(self, f) for f in _CPU_RATE_FIELDS}


_CPU_RATE_FIELDS = ("elementwise_flops", "transcendentals", "transpose_bandwidth", "sort_comparisons",
                    "scatter_elements", "cached_dot_flops")
# Bytes of the two calibration dots (two f32 operands and the result).
CACHED_DOT_BYTES = 3 * 4 * 512 * 512
LARGE_DOT_BYTES = 3 * 4 * 1536 * 1536


@dataclass(frozen=True)
class HardwareSpec:
    """Peak rates of one device. See the module docstring for units.

    ``cpu_rates`` holds the extra rates of the ``cpu`` model (``None`` on accelerators).
    ``intra_node`` is the fast fabric between devices of one host or slice (NVLink, ICI);
    ``inter_node`` the network between hosts (InfiniBand, DCN), ``None`` when not modelled.
    ``kernel_launch_overhead`` is the fixed cost of each launched op, ``collective_latency``
    the fixed cost of each collective on top of its link latency and transfer time.
    """

    name: str
    kind: str
    peak_flops: Mapping[str, float]
    memory_bandwidth: float
    memory_bytes: int
    intra_node: LinkSpec
    inter_node: LinkSpec | None = None
    kernel_launch_overhead: float = 0.0
    collective_latency: float = 0.0
    cpu_rates: CpuRates | None = None
    notes: str = ""
    sources: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "peak_flops", MappingProxyType(dict(self.peak_flops)))
        object.__setattr__(self, "sources", tuple(self.sources))
        problems = self.problems()
        if problems:
            raise InputError(f"hardware profile {self.name!r} is invalid:\n  " + "\n  ".join(problems))

    def problems(self) -> list[str]:
        """Every reason this spec is unusable (empty when valid)."""
        out: list[str] = []
        if not self.name:
            out.append("name is empty")
        if self.kind not in KINDS:
            out.append(f"kind is {self.kind!r}; expected one of {', '.join(KINDS)}")
        for dtype in REQUIRED_DTYPES:
            if dtype not in self.peak_flops:
                out.append(f"peak_flops has no {dtype!r} entry (required: {', '.join(REQUIRED_DTYPES)})")
        for dtype, rate in self.peak_flops.items():
            if dtype not in _KNOWN_DTYPES:
                out.append(f"peak_flops key {dtype!r} is not an element type such as f32, bf16, s8")
            if not _positive(rate):
                out.append(f"peak_flops[{dtype!r}] = {rate!r}; expected a positive number of FLOP/s")
        checks: list[tuple[str, Any, bool]] = [
            ("memory_bandwidth", self.memory_bandwidth, False),
            ("memory_bytes", self.memory_bytes, False),
            ("intra_node.bandwidth", self.intra_node.bandwidth, False),
            ("intra_node.latency", self.intra_node.latency, True),
            ("kernel_launch_overhead", self.kernel_launch_overhead, True),
            ("collective_latency", self.collective_latency, True),
        ]
        if self.inter_node is not None:
            checks += [
                ("inter_node.bandwidth", self.inter_node.bandwidth, False),
                ("inter_node.latency", self.inter_node.latency, True),
            ]
        if self.cpu_rates is not None:
            checks += [(f"cpu_rates.{f}", getattr(self.cpu_rates, f), False) for f in _CPU_RATE_FIELDS]
        for what, value, zero_ok in checks:
            if not (_non_negative(value) if zero_ok else _positive(value)):
                kind = "non-negative" if zero_ok else "positive"
                out.append(f"{what} = {value!r}; expected a {kind} number")
        return out

    def flops_per_second(self, dtype: str) -> float:
        """Peak FLOP/s for ``dtype`` (HLO element-type text), falling back along ``_FALLBACK``."""
        seen = dtype
        while seen not in self.peak_flops:
            seen = _FALLBACK.get(seen, "f32")
        return self.peak_flops[seen]

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``load_hardware`` reads back (the bundled files' schema)."""
        data: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "peak_flops": dict(self.peak_flops),
            "memory_bandwidth": self.memory_bandwidth,
            "memory_bytes": self.memory_bytes,
            "interconnect": {
                "intra_node": self.intra_node.to_json(),
                "inter_node": None if self.inter_node is None else self.inter_node.to_json(),
            },
            "kernel_launch_overhead": self.kernel_launch_overhead,
            "collective_latency": self.collective_latency,
            "notes": self.notes,
            "sources": list(self.sources),
        }
        if self.cpu_rates is not None:
            data["cpu_rates"] = self.cpu_rates.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, origin: str = "<json>") -> HardwareSpec:
        """Build a spec from the ``to_json`` schema; ``origin`` names the file in errors."""
        try:
            links = data["interconnect"]
            inter = links.get("inter_node")
            cpu = data.get("cpu_rates")
            return cls(
                name=str(data["name"]),
                kind=str(data["kind"]),
                peak_flops={str(k): float(v) for k, v in data["peak_flops"].items()},
                memory_bandwidth=float(data["memory_bandwidth"]),
                memory_bytes=int(data["memory_bytes"]),
                intra_node=LinkSpec(float(links["intra_node"]["bandwidth"]), float(links["intra_node"]["latency"])),
                inter_node=None if inter is None else LinkSpec(float(inter["bandwidth"]), float(inter["latency"])),
                kernel_launch_overhead=float(data.get("kernel_launch_overhead", 0.0)),
                collective_latency=float(data.get("collective_latency", 0.0)),
                cpu_rates=None if cpu is None else CpuRates(**{f: float(cpu[f]) for f in _CPU_RATE_FIELDS}),
                notes=str(data.get("notes", "")),
                sources=tuple(str(s) for s in data.get("sources", ())),
            )
        except KeyError as e:
            raise InputError(f"{origin}: hardware profile is missing the field {e.args[0]!r}") from None
        except (TypeError, ValueError, AttributeError) as e:
            raise InputError(f"{origin}: hardware profile has a malformed field: {e}") from None


def _positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def _non_negative(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0


# ---------------------------------------------------------------------------------------------
# Bundled profiles


def _bundled_dir() -> Any:
    return resources.files("hloscope.analysis").joinpath("hardware")


def list_hardware() -> list[str]:
    """Names of the bundled profiles, sorted."""
    return sorted(
        entry.name.removesuffix(".json") for entry in _bundled_dir().iterdir() if entry.name.endswith(".json")
    )


def load_hardware(name_or_path: str | os.PathLike[str]) -> HardwareSpec:
    """A bundled profile by name (``"h100-sxm"``, case-insensitive, a few short aliases such as
    ``"h100"``), or a profile JSON file by path."""
    text = os.fspath(name_or_path)
    looks_like_path = text.endswith(".json") or os.sep in text or (os.altsep or os.sep) in text
    if looks_like_path or (Path(text).is_file() and not _is_bundled(text)):
        path = Path(text)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"no hardware profile file at {path}") from None
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{e.lineno}:{e.colno}: invalid JSON in hardware profile: {e.msg}") from None
        return HardwareSpec.from_json(data, origin=str(path))
    key = text.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if not _is_bundled(key):
        raise InputError(
            f"unknown hardware {text!r}; known: {', '.join(list_hardware())} "
            "(or pass the path of a profile .json file)"
        )
    entry = _bundled_dir().joinpath(f"{key}.json")
    return HardwareSpec.from_json(json.loads(entry.read_text(encoding="utf-8")), origin=f"bundled {key}.json")


def _is_bundled(name: str) -> bool:
    return name in list_hardware()


def save_hardware(spec: HardwareSpec, path: str | os.PathLike[str]) -> Path:
    """Write ``spec`` as profile JSON, atomically (temp file in the same directory, then
    ``os.replace``), so a reader never sees half a file. Returns the path written."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(_to_text(spec.to_json()))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _to_text(data: dict[str, Any]) -> str:
    """JSON with rates in short exponent form (``9.89e+14``, not ``989000000000000.0``) so a
    person editing a profile can read the figures."""
    text = json.dumps(data, indent=2)
    return re.sub(r"(?<![\w.\"])(\d{7,}\.\d+)(?![\w\"])", _short, text) + "\n"


def _short(match: re.Match[str]) -> str:
    # The shortest exponent form that reads back as the same float.
    return np.format_float_scientific(float(match.group(1)), unique=True, trim="-", exp_digits=2).replace(
        ".e", "e"
    )


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
        from hloscope import xla as xla_bridge
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
            f"Measured by hloscope.analysis.hardware.calibrate(seconds={seconds}) at "
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
    from hloscope.xla import compile_hlo

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
