"""Named hardware profiles: the peak rates the roofline and communication models divide by.

A ``HardwareSpec`` is a frozen record of one accelerator (one GPU, one TPU chip, or this CPU):
peak FLOP/s per element type, memory bandwidth and capacity, link bandwidth and latency, and
fixed per-op and per-collective overheads. Bundled profiles live as JSON next to this module
(``analysis/hardware/<name>.json``) so users can copy one, edit it and pass the path;
``hloscope.xla.calibrate.calibrate()`` measures this machine instead.

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from hloscope.errors import InputError
from hloscope.fileio import atomic_write_text, path_error, read_input_text

__all__ = [
    "LinkSpec",
    "CpuRates",
    "HardwareSpec",
    "REQUIRED_DTYPES",
    "CACHED_DOT_BYTES",
    "LARGE_DOT_BYTES",
    "CACHED_STREAM_BYTES",
    "LARGE_STREAM_BYTES",
    "CACHED_TABLE_BYTES",
    "LARGE_TABLE_BYTES",
    "CACHED_TRANSPOSE_BYTES",
    "LARGE_TRANSPOSE_BYTES",
    "COLUMN_REDUCE_ROW_BYTES",
    "WIDE_COLUMN_REDUCE_ROW_BYTES",
    "FRESH_BUFFER_BYTES",
    "LARGE_OUTPUT_BYTES",
    "load_hardware",
    "list_hardware",
    "save_hardware",
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

    The loops that walk an index or a window per element and do not vectorise have rates of
    their own: ``gather_elements`` (gathered elements per second), ``reduce_window_elements``
    (window elements visited per second: output elements times window size),
    ``grouped_conv_flops`` (FLOP/s of a grouped or depthwise convolution, which XLA:CPU emits
    itself instead of calling the library) and ``topk_elements`` (input elements per second of
    the TopK custom call). ``sort_comparisons`` is measured with a one-instruction comparator;
    each further instruction of a comparator (jax's float comparators have about twenty, for
    a total order over NaNs and signed zeros) costs one over ``comparator_ops`` per comparison.
    ``cached_bandwidth`` is XLA's streaming loop on a working set that stays in cache
    (``CACHED_STREAM_BYTES``), while ``memory_bandwidth`` holds its rate past the caches
    (``LARGE_STREAM_BYTES``); an instruction's bytes between the two get a rate interpolated
    on log(bytes), as dots do between their two sizes. ``fresh_page_bandwidth`` is bytes/s of
    first writes to freshly mapped pages, which every top-level result of ``FRESH_BUFFER_BYTES``
    or more pays on each run on top of its streaming time.

    The index walks depend on where the indexed array lives: ``gather_elements`` and
    ``scatter_elements`` are measured on a table of ``LARGE_TABLE_BYTES``,
    ``cached_gather_elements`` and ``cached_scatter_elements`` on one of ``CACHED_TABLE_BYTES``
    that the core's cache keeps; ``transpose_bandwidth`` is a transpose of 32 MiB,
    ``cached_transpose_bandwidth`` one of ``CACHED_TRANSPOSE_BYTES``. ``fft_flops`` is FLOP/s of
    XLA:CPU's FFT (DUCC), counting 5 N log2 N per complex transform of N points.
    ``conv_outputs`` is output elements per second of a convolution XLA:CPU runs with Eigen's
    own kernel rather than a library fusion (Note [Eigen convolutions] in ``cpu_model.py``).
    ``dag_thunk_overhead`` is a thunk's cost when XLA:CPU runs a computation's thunks as a
    graph instead of in sequence, ``execution_overhead`` the fixed cost of one execution, and
    ``parameter_overhead`` and ``result_overhead`` what each of its entry parameters and result
    arrays adds to it (Note [Thunk dispatch] in ``analysis/cpu_thunks.py``);
    ``loop_thunk_overhead`` is a thunk's cost in the body of a while loop, run again on every
    trip, and ``loop_trip_overhead`` what each trip adds (Note [Thunks in loops] there).
    ``transcendentals`` is exp/tanh per second along a chain of ``CHAIN_DEPTH`` (each taking
    the previous one's result), ``unchained_transcendentals`` of independent ones (Note
    [Chained transcendentals] in ``cpu_model.py``, as the Notes named below). ``narrowing_converts`` is f32 -> bf16 roundings per second
    in XLA's own loops (Note [Narrowing converts]), ``eigen_dot_overhead`` what a
    ``dot`` thunk's Eigen contraction costs per call beyond its FLOPs (Note [Eigen dots]).
    ``column_reduce_elements`` and ``wide_column_reduce_elements`` are input elements per second
    of a library (YNNPACK) reduction over a major dimension that keeps rows of
    ``COLUMN_REDUCE_ROW_BYTES`` and ``WIDE_COLUMN_REDUCE_ROW_BYTES`` (Note [Library column
    reductions]). ``gather_loop_flops`` is FLOP/s of elementwise work fused into a gather's
    loop, which does not vectorise (Note [FLOPs in a gather's loop]), and
    ``library_transcendentals`` exp/tanh per second in a library fusion (Note [Library passes]),
    ``fused_transpose_elements`` elements per second of a transpose fused with elementwise work
    (Note [Fused transposes]); ``large_output_bandwidth`` the streaming rate of a loop writing
    ``LARGE_OUTPUT_BYTES`` or more (Note [Large outputs]).
    Profiles written before these existed get the defaults below; a cached rate of 0 means
    "the same as the large one".
    """

    elementwise_flops: float
    transcendentals: float
    transpose_bandwidth: float
    sort_comparisons: float
    scatter_elements: float
    cached_dot_flops: float
    gather_elements: float = 4e8
    reduce_window_elements: float = 3e9
    grouped_conv_flops: float = 1e9
    topk_elements: float = 5e8
    comparator_ops: float = 2e9
    cached_bandwidth: float = 0.0  # 0: no cache speed-up (memory_bandwidth throughout)
    fresh_page_bandwidth: float = 0.0  # 0: first writes to fresh pages cost nothing extra
    fft_flops: float = 1e10
    cached_gather_elements: float = 0.0
    cached_scatter_elements: float = 0.0
    cached_transpose_bandwidth: float = 0.0
    dag_thunk_overhead: float = 0.0  # 0: the same as kernel_launch_overhead
    execution_overhead: float = 0.0
    conv_outputs: float = 0.0  # 0: a plain convolution at the matmul rate alone
    parameter_overhead: float = 0.0
    result_overhead: float = 0.0
    loop_thunk_overhead: float = 1e-08
    loop_trip_overhead: float = 3e-08
    unchained_transcendentals: float = 0.0  # 0: INDEPENDENT_SPEEDUP times ``transcendentals``
    narrowing_converts: float = 0.0  # 0: a convert to bf16/f16 is one FLOP, as XLA counts it
    eigen_dot_overhead: float = 0.0
    column_reduce_elements: float = 0.0  # 0: a library reduction streams, whatever it keeps
    wide_column_reduce_elements: float = 0.0
    gather_loop_flops: float = 0.0  # 0: at elementwise_flops, as in any loop
    fused_transpose_elements: float = 0.0  # 0: a fused transpose at the transposing rate alone
    large_output_bandwidth: float = 0.0  # 0: a large output streams at ``memory_bandwidth``
    library_transcendentals: float = 0.0  # 0: a library's at ``transcendentals``, overlapping memory

    def to_json(self) -> dict[str, float]:
        return {f: getattr(self, f) for f in _CPU_RATE_FIELDS}


_CPU_RATE_FIELDS = ("elementwise_flops", "transcendentals", "transpose_bandwidth", "sort_comparisons",
                    "scatter_elements", "cached_dot_flops", "gather_elements", "reduce_window_elements",
                    "grouped_conv_flops", "topk_elements", "comparator_ops", "cached_bandwidth",
                    "fresh_page_bandwidth", "fft_flops", "cached_gather_elements", "cached_scatter_elements",
                    "cached_transpose_bandwidth", "dag_thunk_overhead", "execution_overhead", "conv_outputs",
                    "parameter_overhead", "result_overhead", "loop_thunk_overhead", "loop_trip_overhead",
                    "unchained_transcendentals", "narrowing_converts", "eigen_dot_overhead",
                    "column_reduce_elements", "wide_column_reduce_elements", "gather_loop_flops",
            "library_transcendentals", "fused_transpose_elements",
            "large_output_bandwidth")
# Rates a profile may leave out (the dataclass defaults: figures measured on a 2-core x86 VM).
_CPU_RATE_DEFAULTS = ("gather_elements", "reduce_window_elements", "grouped_conv_flops", "topk_elements",
                      "comparator_ops", "cached_bandwidth", "fresh_page_bandwidth", "fft_flops",
                      "cached_gather_elements", "cached_scatter_elements", "cached_transpose_bandwidth",
                      "dag_thunk_overhead", "execution_overhead", "conv_outputs", "parameter_overhead",
                      "result_overhead", "loop_thunk_overhead", "loop_trip_overhead",
                      "unchained_transcendentals", "narrowing_converts", "eigen_dot_overhead",
                      "column_reduce_elements", "wide_column_reduce_elements", "gather_loop_flops",
            "library_transcendentals", "fused_transpose_elements",
            "large_output_bandwidth")
_ZERO_OK = ("cached_bandwidth", "fresh_page_bandwidth", "cached_gather_elements", "cached_scatter_elements",
            "cached_transpose_bandwidth", "dag_thunk_overhead", "execution_overhead", "conv_outputs",
            "parameter_overhead", "result_overhead", "loop_thunk_overhead", "loop_trip_overhead",
            "unchained_transcendentals", "narrowing_converts", "eigen_dot_overhead",
            "column_reduce_elements", "wide_column_reduce_elements", "gather_loop_flops",
            "library_transcendentals", "fused_transpose_elements",
            "large_output_bandwidth")
# Bytes of the two calibration dots (two f32 operands and the result).
CACHED_DOT_BYTES = 3 * 4 * 512 * 512
LARGE_DOT_BYTES = 3 * 4 * 1536 * 1536
# Bytes moved by the two streaming calibrations (z = x + y over f32 arrays of 96 Ki and just
# under 8 Mi elements). The cached one stays in the core's own cache (the 2 MiB L2 of this VM),
# which the small loops of a step see (an operand just written by the producer before): here
# z = x + y streamed 24-60 GB/s up to 1.2 MB moved, 19 GB/s at 4.7 MB and 9-12 GB/s from 19 MB
# on while the machine was loaded (a shared last-level cache is the other tenants' as much as
# ours; quieter, 22-26 GB/s from 12 to 48 MB). Between the two sizes the rate is interpolated
# on log(bytes). The large one stays past the cache, each array under FRESH_BUFFER_BYTES so
# that its pages are reused (Note [Fresh pages per allocation]).
CACHED_STREAM_BYTES = 3 * 4 * (96 << 10)
LARGE_STREAM_BYTES = 3 * 4 * ((8 << 20) - (64 << 10))
# Bytes of the tables the gather and scatter calibrations index (65,536 and 4,096 rows of 32
# f32), and of the two transposes (32 MiB, such as 4096 x 2048, and 512 x 512 f32, read and written).
LARGE_TABLE_BYTES = 4 * 65536 * 32
CACHED_TABLE_BYTES = 4 * 4096 * 32
LARGE_TRANSPOSE_BYTES = 2 * 4 * 4096 * 2048
CACHED_TRANSPOSE_BYTES = 2 * 4 * 512 * 512
# glibc maps every block of this size or more anew (its mmap threshold's ceiling on 64-bit), so
# an XLA:CPU buffer that large has fresh pages on every run, and the kernel faults in and zeroes
# each page at its first write (``CpuRates.fresh_page_bandwidth``).
FRESH_BUFFER_BYTES = 32 << 20
# An output this large or larger streams at ``large_output_bandwidth`` (Note [Large outputs] in
# ``cpu_model.py``): the calibration's loop writes exactly this much.
LARGE_OUTPUT_BYTES = 64 << 20
# The rows the two column-reduction calibrations keep (sums over the rows of 4096 x 4096 and
# 256 x 65536 f32): in the core's first-level cache, and past it.
COLUMN_REDUCE_ROW_BYTES = 4 * 4096
WIDE_COLUMN_REDUCE_ROW_BYTES = 4 * 65536


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
            checks += [(f"cpu_rates.{f}", getattr(self.cpu_rates, f), f in _ZERO_OK)
                       for f in _CPU_RATE_FIELDS]
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
                cpu_rates=None if cpu is None else CpuRates(**{
                    f: float(cpu[f]) for f in _CPU_RATE_FIELDS if f in cpu or f not in _CPU_RATE_DEFAULTS}),
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
        if not path.exists():
            raise InputError(f"no hardware profile file at {path}")
        try:
            data = json.loads(read_input_text(path, "a hardware profile (JSON)"))
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
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise path_error(target.parent, e, writing=True) from None
    atomic_write_text(target, _to_text(spec.to_json()))
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
