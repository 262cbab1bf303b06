"""The op profile: a step's estimated time by category and opcode, what each achieves, and what to fix first.

XProf's op profile for a measured step, made from the estimate instead: every instruction
that takes time (``TimeEstimate.per_instruction``; loops, calls and conditionals are their
bodies' instructions, not rows of their own) is put in one category (``category_of``) and
rolled up by category and by opcode. Each row has its time over every run in a step, its
share of the summed operation time, the FLOP/s and bytes/s it achieves (loop-aware FLOPs and
bytes from ``analysis.cost`` over its seconds) against the profile's peaks, and what bounds
it (the bound with the most seconds: compute, memory, launch or communication).

Note [FLOP utilisation]
    An instruction's peak is ``peak_flops`` of its math type (``cpu_model.math_dtype``: a
    dot's operand type, else its result's), so a bf16 matmul is held to the bf16 peak. A row
    of several instructions achieves ``sum(flops) / sum(seconds)`` and uses
    ``sum(flops) / sum(seconds_i * peak_i)`` of what it could have done: each instruction's
    time at its own peak. Bandwidth utilisation is ``sum(bytes) / sum(seconds)`` over the
    profile's peak bandwidth: ``memory_bandwidth``, or on a CPU profile its cache bandwidth
    when higher (``cpu_rates.cached_bandwidth``: the estimate runs a working set that fits in
    cache at that rate, so against DRAM's alone it could pass 100%). Estimated times assume the peaks, so a compute-bound matmul sits
    near 100% by construction; the figures say how far memory-bound and launch-bound work is
    from what the hardware could do, which is what to fix.

``advice`` is the short list of what to fix first, in words, each item naming its
instructions: the largest memory-bound work, communication the compute stream waits for
(``trace.exposed_communication``), launch-bound kernels, and loops whose body dominates.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hloscope.analysis.collectives import COLLECTIVE_OPCODES, as_collective
from hloscope.analysis.cost import CostReport
from hloscope.analysis.cpu_model import MATH_OPS, math_dtype
from hloscope.analysis.hardware import HardwareSpec
from hloscope.analysis.timing import TimeEstimate
from hloscope.analysis.trace import exposed_communication
from hloscope.gc_pause import without_cyclic_gc
from hloscope.ir import Instruction, Module, Opcode
from hloscope.ir.opcode import Family

__all__ = ["CATEGORIES", "ProfileRow", "Advice", "OpProfile", "category_of", "opcode_key", "analyze_profile", "peak_bandwidth"]

CATEGORIES = ("matmul/convolution", "loop fusion", "input fusion (reductions)", "output fusion",
              "custom fusion", "collective", "data movement", "elementwise", "reduction", "custom call",
              "host transfer", "other")
"""The categories, in the order XProf lists its own (matmuls first)."""

_MATMUL_TARGETS = ("__cublas", "__cudnn", "gemm", "matmul", "conv", "dot", "attn", "attention")
_DATA_MOVEMENT = frozenset({
    Opcode.COPY, Opcode.COPY_START, Opcode.TRANSPOSE, Opcode.SLICE, Opcode.DYNAMIC_SLICE,
    Opcode.DYNAMIC_UPDATE_SLICE, Opcode.CONCATENATE, Opcode.PAD, Opcode.GATHER, Opcode.SCATTER,
    Opcode.BROADCAST, Opcode.RESHAPE, Opcode.REVERSE, Opcode.BITCAST, Opcode.IOTA,
})
_HOST = frozenset({Opcode.SEND, Opcode.RECV, Opcode.INFEED, Opcode.OUTFEED})
_ELEMENTWISE = frozenset({Family.UNARY, Family.BINARY, Family.TERNARY, Family.COMPARE, Family.CONVERT,
                          Family.RNG})
_FUSION_KINDS = {"kLoop": "loop fusion", "kInput": "input fusion (reductions)", "kOutput": "output fusion",
                 "kCustom": "custom fusion"}
_CONTROL = frozenset({Opcode.WHILE, Opcode.CALL, Opcode.CONDITIONAL})
# Instructions whose math type is their result's (math_dtype's last case): cached per shape.
_PLAIN = frozenset(op for op in Opcode if op not in (*MATH_OPS, Opcode.FUSION, Opcode.CUSTOM_CALL))


def _target(inst: Instruction) -> str:
    t = inst.attrs.get("custom_call_target") if inst.opcode is Opcode.CUSTOM_CALL else None
    return t if isinstance(t, str) else ""


def _does_math(inst: Instruction) -> bool:
    if inst.opcode in MATH_OPS:
        return True
    if inst.opcode is Opcode.CUSTOM_CALL:
        t = _target(inst).lower()
        return any(k in t for k in _MATMUL_TARGETS)
    if inst.opcode is Opcode.FUSION:
        return any(_does_math(i) for i in inst.attrs["calls"].instructions)
    return False


def _opcode_category(op: Opcode) -> str | None:
    """The category every instruction of ``op`` has, or None when it depends on the instruction."""
    if op in COLLECTIVE_OPCODES:
        return "collective"
    if op in MATH_OPS:
        return "matmul/convolution"
    if op in (Opcode.FUSION, Opcode.CUSTOM_CALL, Opcode.ASYNC_START):
        return None
    if op in _HOST:
        return "host transfer"
    if op in _DATA_MOVEMENT:
        return "data movement"
    if op.family in _ELEMENTWISE:
        return "elementwise"
    if op.family is Family.REDUCTION or op is Opcode.SORT:
        return "reduction"
    return "other"


_BY_OPCODE = {op: _opcode_category(op) for op in Opcode}


def category_of(inst: Instruction) -> str:
    """The op-profile category of one scheduled instruction (``CATEGORIES``).

    A fusion that performs a dot or convolution (or a gemm or fused-attention custom call)
    is a matmul, as XProf files "convolution fusion"; other fusions go by their kind.
    """
    known = _BY_OPCODE[inst.opcode]
    if known is not None:
        return known
    if as_collective(inst) is not None:
        return "collective"
    if _does_math(inst):
        return "matmul/convolution"
    if inst.opcode is Opcode.FUSION:
        return _FUSION_KINDS.get(str(inst.attrs.get("kind", "")), "loop fusion")
    if inst.opcode is Opcode.CUSTOM_CALL:
        return "custom call"
    return "other"


def opcode_key(inst: Instruction) -> str:
    """The op profile's opcode row: the opcode, a fusion with its kind, a custom call with its target."""
    if inst.opcode is Opcode.FUSION:
        return f"fusion ({inst.attrs.get('kind', 'kLoop')})"
    if inst.opcode is Opcode.CUSTOM_CALL:
        return f"custom-call {_target(inst)}".strip()
    wrapped = as_collective(inst)
    if wrapped is not None and wrapped is not inst:
        return f"{wrapped.opcode.text} (async)"
    return inst.opcode.text


@dataclass(frozen=True)
class ProfileRow:
    """One category's or opcode's time and what it achieves (Note [FLOP utilisation]).

    ``seconds`` covers every run in a step; ``share`` is of the summed operation time
    (``OpProfile.op_seconds``); rates are per second of the row's own time.
    """

    key: str
    category: str
    seconds: float
    share: float
    instructions: int
    executions: float
    flops: float
    bytes_accessed: float
    flop_rate: float | None
    flop_utilization: float | None
    bandwidth: float | None
    bandwidth_utilization: float | None
    bound: str
    bound_seconds: dict[str, float]
    top: tuple[str, ...]  # its slowest instructions, slowest first

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "category": self.category, "seconds": self.seconds, "share": self.share,
                "instructions": self.instructions, "executions": self.executions, "flops": self.flops,
                "bytes_accessed": self.bytes_accessed, "flop_rate": self.flop_rate,
                "flop_utilization": self.flop_utilization, "bandwidth": self.bandwidth,
                "bandwidth_utilization": self.bandwidth_utilization, "bound": self.bound,
                "bound_seconds": dict(self.bound_seconds), "top": list(self.top)}


@dataclass(frozen=True)
class Advice:
    """One thing to fix, in words: its kind, a title, what to do, the time at stake and where."""

    kind: str  # "memory-bound", "exposed communication", "launch-bound" or "loop"
    title: str
    words: str
    seconds: float
    share: float  # of the step
    instructions: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "words": self.words, "seconds": self.seconds,
                "share": self.share, "instructions": list(self.instructions)}


@dataclass(frozen=True)
class OpProfile:
    """The op profile of one estimate: rows by category and by opcode, and ``advice``.

    ``per_instruction`` holds each timed instruction's (category, FLOP utilisation, bandwidth
    utilisation), utilisations None when it takes no time.
    """

    hardware: str
    step_seconds: float
    op_seconds: float
    peak_flop_rate: float  # the profile's highest peak, for scale
    memory_bandwidth: float
    categories: tuple[ProfileRow, ...]
    opcodes: tuple[ProfileRow, ...]
    advice: tuple[Advice, ...]
    exposed_communication_seconds: float
    per_instruction: dict[str, tuple[str, float | None, float | None]] = field(repr=False)

    def to_json(self, *, top: int = 0) -> dict[str, Any]:
        """Everything but the per-instruction table; ``top`` > 0 keeps that many opcode rows."""
        opcodes = self.opcodes[:top] if top else self.opcodes
        return {"hardware": self.hardware, "step_seconds": self.step_seconds, "op_seconds": self.op_seconds,
                "peak_flop_rate": self.peak_flop_rate, "memory_bandwidth": self.memory_bandwidth,
                "exposed_communication_seconds": self.exposed_communication_seconds,
                "category_names": list(CATEGORIES),
                "categories": [r.to_json() for r in self.categories],
                "opcodes": [r.to_json() for r in opcodes],
                "advice": [a.to_json() for a in self.advice]}


@dataclass
class _Acc:
    seconds: float = 0.0
    executions: float = 0.0
    flops: float = 0.0
    bytes: float = 0.0
    peak_seconds: float = 0.0  # sum of seconds_i * peak_i (Note [FLOP utilisation])
    count: int = 0
    bounds: dict[str, float] = field(default_factory=dict)
    members: list[tuple[float, str]] = field(default_factory=list)

    def add(self, name: str, seconds: float, executions: float, flops: float, nbytes: float, peak: float,
            bound: str) -> None:
        self.seconds += seconds
        self.executions += executions
        self.flops += flops
        self.bytes += nbytes
        self.peak_seconds += seconds * peak
        self.count += 1
        self.bounds[bound] = self.bounds.get(bound, 0.0) + seconds
        self.members.append((seconds, name))


    def merge(self, other: _Acc) -> None:
        self.seconds += other.seconds
        self.executions += other.executions
        self.flops += other.flops
        self.bytes += other.bytes
        self.peak_seconds += other.peak_seconds
        self.count += other.count
        for k, v in other.bounds.items():
            self.bounds[k] = self.bounds.get(k, 0.0) + v
        self.members.extend(other.members)


def _row(key: str, category: str, a: _Acc, op_seconds: float, bandwidth: float, top: int = 20) -> ProfileRow:
    s = a.seconds
    bound = max(a.bounds.items(), key=lambda kv: kv[1])[0] if a.bounds else "compute"
    return ProfileRow(
        key, category, s, s / op_seconds if op_seconds else 0.0, a.count, a.executions, a.flops, a.bytes,
        a.flops / s if s > 0 else None, a.flops / a.peak_seconds if a.peak_seconds > 0 else None,
        a.bytes / s if s > 0 else None, a.bytes / s / bandwidth if s > 0 and bandwidth > 0 else None,
        bound, dict(a.bounds), tuple(n for _, n in sorted(a.members, key=lambda m: -m[0])[:top]))


def peak_bandwidth(hardware: HardwareSpec) -> float:
    """The highest memory bandwidth the estimate uses on ``hardware`` (Note [FLOP utilisation])."""
    cached = hardware.cpu_rates.cached_bandwidth if hardware.cpu_rates is not None else 0.0
    return max(hardware.memory_bandwidth, cached)


@without_cyclic_gc
def analyze_profile(module: Module, estimate: TimeEstimate, cost: CostReport, hardware: HardwareSpec) -> OpProfile:
    """The op profile of ``estimate`` (see the module docstring); ``cost`` gives the loop-aware
    FLOPs and bytes of the same module, ``hardware`` the peaks the estimate used."""
    timed = estimate.per_instruction
    by_name = {i.name: i for i in module.instructions() if i.name in timed}
    cats: dict[str, _Acc] = {}
    ops: dict[tuple[str, str], _Acc] = {}
    per: dict[str, tuple[str, float | None, float | None]] = {}
    bw = peak_bandwidth(hardware)
    peaks: dict[Any, float] = {}  # by shape object: the parser shares one among equal shapes
    plain_keys: dict[Opcode, tuple[str, str]] = {}
    for inst, c in cost.loop_aware_per_instruction.items():
        t = timed.get(inst.name)
        op = inst.opcode
        if t is None or op in _CONTROL or t.bound == "control" or by_name.get(inst.name) is not inst:
            continue
        if op in _PLAIN:
            key = plain_keys.get(op)
            if key is None:
                key = plain_keys[op] = (category_of(inst), opcode_key(inst))
            peak = peaks.get(inst.shape)
            if peak is None:
                peak = peaks[inst.shape] = hardware.flops_per_second(math_dtype(inst))
        else:
            key = (category_of(inst), opcode_key(inst))
            peak = hardware.flops_per_second(math_dtype(inst))
        flops = c.flops + c.transcendentals
        s = t.seconds
        acc = ops.get(key)
        if acc is None:
            acc = ops[key] = _Acc()
        acc.add(inst.name, s, t.executions, flops, c.bytes_accessed, peak, t.bound)
        per[inst.name] = (key[0], flops / (s * peak) if s > 0 and peak > 0 else None,
                          c.bytes_accessed / s / bw if s > 0 and bw > 0 else None)
    for (cat, _), a in ops.items():
        cats.setdefault(cat, _Acc()).merge(a)
    op_seconds = sum(a.seconds for a in cats.values())
    categories = tuple(sorted((_row(k, k, a, op_seconds, bw) for k, a in cats.items()), key=lambda r: -r.seconds))
    opcodes = tuple(sorted((_row(k[1], k[0], a, op_seconds, bw) for k, a in ops.items()), key=lambda r: -r.seconds))
    exposed = exposed_communication(estimate)
    advice = _advice(module, estimate, by_name, cats, per, exposed, hardware)
    return OpProfile(hardware.name, estimate.total_seconds, op_seconds, max(hardware.peak_flops.values()), bw,
                     categories, opcodes, advice, sum(exposed.values()), per)


# --- what to fix first ------------------------------------------------------------------------

def _names(rows: Iterable[tuple[float, str]], n: int = 12) -> tuple[str, ...]:
    return tuple(name for _, name in sorted(rows, key=lambda r: -r[0])[:n])


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%" if x >= 0.001 else f"{100 * x:.2f}%"


def _bytes(n: float) -> str:  # the CLI's and the page's binary units (Note [One unit convention])
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{round(n)} B"


def _secs(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{float(f'{s / scale:.3g}'):g} {unit}"
    return f"{float(f'{s * 1e9:.3g}'):g} ns"


def _advice(module: Module, est: TimeEstimate, by_name: dict[str, Instruction], cats: dict[str, _Acc],
            per: dict[str, tuple[str, float | None, float | None]], exposed: dict[str, float],
            hw: HardwareSpec) -> tuple[Advice, ...]:
    step = est.total_seconds or 1.0
    out: list[Advice] = []
    timed = est.per_instruction

    # The largest memory-bound work, by category.
    mem: dict[str, list[tuple[float, str]]] = {}
    for name, (cat, _, _) in per.items():
        if timed[name].bound == "memory":
            mem.setdefault(cat, []).append((timed[name].seconds, name))
    if mem:
        cat, rows = max(mem.items(), key=lambda kv: sum(s for s, _ in kv[1]))
        secs = sum(s for s, _ in rows)
        util = [u for _, n in rows if (u := per[n][2]) is not None]
        how = {"data movement": "change the layouts upstream so copies and transposes disappear, or fuse them into their users",
               "elementwise": "fuse them with their producers and consumers so intermediates stay on chip",
               "loop fusion": "fuse across the boundaries between them, or store intermediates in a narrower type",
               "input fusion (reductions)": "fuse the reductions with what feeds them, or reduce in a narrower type",
               "reduction": "fuse the reductions with what feeds them, or reduce in a narrower type",
               "matmul/convolution": "batch the small matmuls together or grow them so they reach the compute peak"}.get(
                   cat, "move fewer bytes: fuse them, or store in a narrower type")
        out.append(Advice(
            "memory-bound", f"Memory-bound {cat}: {_secs(secs)} ({_pct(secs / step)} of the step)",
            f"{len(rows)} {cat} operation{'s' if len(rows) != 1 else ''} wait for memory"
            + (f", reaching {_pct(sum(util) / len(util))} of the {_bytes(peak_bandwidth(hw))}/s peak bandwidth on average" if util else "")
            + f". To speed them up, {how}.", secs, secs / step, _names(rows)))

    # Communication the compute stream waits for.
    if exposed:
        secs = sum(exposed.values())
        sync = [n for n in exposed if by_name.get(n) is not None and not by_name[n].opcode.text.endswith("-start")
                and by_name[n].opcode is not Opcode.ASYNC_START]
        kinds: dict[str, float] = {}
        for n, s in exposed.items():
            op = by_name[n].opcode.text if n in by_name else "?"
            kinds[op] = kinds.get(op, 0.0) + s
        main = max(kinds.items(), key=lambda kv: kv[1])[0]
        words = (f"{len(exposed)} collective{'s' if len(exposed) != 1 else ''} (mostly {main}) "
                 f"leave{'s' if len(exposed) == 1 else ''} the compute stream idle. "
                 + (("It is synchronous: compute waits for all of it" if len(exposed) == 1 else
                     "All are synchronous: compute waits for all of each" if len(sync) == len(exposed) else
                     f"{len(sync)} of them are synchronous: compute waits for all of each")
                    + ". Making them asynchronous "
                    "(XLA's latency-hiding scheduler, *-start/*-done pairs) lets independent work run meanwhile; "
                    if sync else "They start too late, or too little work sits between their start and done; ")
                 + "combining small ones saves their latency, and sharding differently can avoid some.")
        out.append(Advice("exposed communication", f"Exposed communication: {_secs(secs)} ({_pct(secs / step)} of the step)",
                          words, secs, secs / step, _names((s, n) for n, s in exposed.items())))

    # Launch-bound kernels.
    launch = [(timed[n].seconds, n) for n in per if timed[n].bound == "launch"]
    if launch:
        secs = sum(s for s, _ in launch)
        runs = sum(timed[n].executions for _, n in launch)
        out.append(Advice(
            "launch-bound", f"Launch-bound kernels: {_secs(secs)} ({_pct(secs / step)} of the step)",
            f"{len(launch)} small kernel{'s' if len(launch) != 1 else ''} ({runs:,.0f} launches a step) cost more to "
            + ("dispatch" if hw.kind == "cpu" else "launch")
            + f" ({_secs(hw.kernel_launch_overhead)} each) than to run. "
            + {"cpu": "Fusing them saves XLA:CPU's per-thunk dispatch.",
               "gpu": "Fusing them, or capturing the step as a graph (CUDA graphs), saves most of it."}.get(
                   hw.kind, "Fusing them saves most of it."), secs, secs / step, _names(launch)))

    # Loops whose body dominates the step.
    for name, t in timed.items():
        inst = by_name.get(name)
        if inst is None or inst.opcode is not Opcode.WHILE or t.seconds < 0.2 * step:
            continue
        body = inst.attrs["body"]
        inner = [(timed[i.name].seconds, i.name) for i in body.instructions if i.name in timed and i.name in per]
        trips = est.trip_counts.get(name)
        out.append(Advice(
            "loop", f"Loop {name}: {_secs(t.seconds)} ({_pct(t.seconds / step)} of the step)",
            f"{trips if trips is not None else 'an unknown number of'} trips of {body.name} take this share of the step; "
            "each trip's slowest operations are listed. Work done in every trip that does not change between trips "
            "can move out of the loop, and a longer body per trip (unrolling) saves the loop's own overhead.",
            t.seconds, t.seconds / step, (name, *_names(inner, 11))))

    out.sort(key=lambda a: -a.seconds)
    return tuple(a for a in out if a.share >= 0.01 or a is out[0])[:5]
