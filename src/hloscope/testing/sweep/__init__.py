"""Sweep hloscope's analyses against XLA:CPU on many small JAX programs generated here.

Each case is a jax function with arguments made at a size ``n``; it is lowered and compiled on
XLA:CPU (8 fake host devices, so pmap, shard_map and sharded jit work) with XLA's dumps on, and
compared, one check per letter:

a. cost: ``hloscope.analysis.cost.analyze_cost`` of the optimized text against XLA's
   ``hlo_module_cost_analysis`` of the same text and against ``compiled.cost_analysis()``;
   and of the unoptimized text (``lowered.as_text("hlo")``) against XLA's analysis of it.
   FLOPs and transcendentals must be equal, bytes within 5% (``BYTES_RTOL``);
b. memory: ``analyze_memory`` of the optimized text against ``compiled.memory_analysis()``
   (argument, output, alias, temp sizes) and XLA's buffer-assignment dump (total bytes,
   allocation count, the live-range peak and its buffers, every temporary's offset);
c. estimate: ``estimate_time`` on every bundled hardware profile gives finite, non-negative
   seconds, visits every instruction with a cost rule, and (``--monotone``) does not shrink
   when the case is compiled again at twice the size.

Cases come from a catalog (``catalog()``: jax.numpy/lax/nn functions over f32, bf16, f16, f64,
fp8, int4/8/16/32/64, unsigned and complex types, grad/vmap/scan/while/cond, convolutions,
pooling, sorts, gathers/scatters, FFT, LAPACK linalg, random numbers, callbacks, collectives
under pmap, shard_map and sharded jit, donation, whole training steps), from seeded random
op chains under a wrapper (``random_cases``) and from seeded random dataflow graphs whose
values have several users and whose outputs are any of them (``random_graphs``). Usage::

    python tools/analysis_sweep.py [--only REGEX] [--random N] [--graphs N] [--seed S] [-n SIZE]
                                   [--monotone] [--json OUT] [-v]

(XLA:CPU must see eight host devices: ``ensure_host_devices()`` before jax is imported.)

The summary counts matches per check and mismatches per kind, so one cause shows as one line;
``--json`` keeps every mismatch with the case's opcodes. The whole default sweep (about 750
cases) takes a few minutes on two cores; ``--only`` narrows it to a family. The programs are
in ``hloscope.testing.sweep.ops`` (single ops over dtypes) and ``.programs`` (whole programs,
collectives, random generators); every case is a sized ``hloscope.testing.cases.Case``.
"""
from __future__ import annotations

import contextlib
import math
import os
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.testing.cases import Case, lower
from hloscope.testing.sweep.programs import catalog, random_cases, random_graphs

__all__ = ["Artifacts", "Case", "build", "catalog", "ensure_host_devices", "random_cases",
           "random_graphs", "run_case", "summarize"]


def ensure_host_devices(n: int = 8) -> None:
    """Make XLA:CPU show ``n`` host devices (pmap, shard_map and sharded jit need them); only
    effective before jax initialises its backends."""
    flag = f"--xla_force_host_platform_device_count={n}"
    if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()


BYTES_RTOL = 0.05
BYTES_ATOL = 16


# --------------------------------------------------------------------------------------------
# Compiling and comparing


@dataclass
class Artifacts:
    """What one lowering and compilation of a case gives: both texts and XLA's figures."""

    pre: str
    post: str
    xla_post_cost: dict[str, float]
    xla_pre_cost: dict[str, float] | None
    compiled_cost: dict[str, float]
    stats: Any
    buffer_assignment: Any


def _xla_cost(text: str) -> dict[str, float]:
    from hloscope.xla.client import cost_analysis

    return cost_analysis(text)


def build(case: Case, n: int) -> Artifacts:
    """Lower and compile ``case`` at size ``n`` with dumps on; XLA's figures of both stages."""
    import jax

    from hloscope.text.buffer_assignment_dump import load_buffer_assignment

    with jax.enable_x64(True) if case.x64 else contextlib.nullcontext():
        lowered = lower(case, *case.make_inputs(n))
        with tempfile.TemporaryDirectory() as d:
            compiled = lowered.compile(compiler_options={"xla_dump_to": d, "xla_dump_hlo_as_text": True})
            (post_file,) = Path(d).glob("*.cpu_after_optimizations.txt")
            post = post_file.read_text()
            ba = load_buffer_assignment(d)
        pre = lowered.as_text(dialect="hlo")
    try:
        xla_pre: dict[str, float] | None = _xla_cost(pre)
    except Exception:  # XLA's analysis of an unoptimized module can refuse (e.g. unsupported custom call)
        xla_pre = None
    ca = compiled.cost_analysis()
    if isinstance(ca, list):
        ca = ca[0] if ca else {}
    return Artifacts(pre, post, _xla_cost(post), xla_pre, dict(ca or {}), compiled.memory_analysis(), ba)


def _cost_mismatches(tag: str, ours: Any, xla: dict[str, float]) -> list[str]:
    out = []
    if ours.flops != xla.get("flops", 0.0):
        out.append(f"{tag}.flops ours={ours.flops:g} xla={xla.get('flops', 0.0):g}")
    if ours.transcendentals != xla.get("transcendentals", 0.0):
        out.append(f"{tag}.transcendentals ours={ours.transcendentals:g} xla={xla.get('transcendentals', 0.0):g}")
    want = xla.get("bytes accessed", 0.0)
    if not math.isclose(ours.bytes_accessed, want, rel_tol=BYTES_RTOL, abs_tol=BYTES_ATOL):
        out.append(f"{tag}.bytes ours={ours.bytes_accessed:g} xla={want:g}")
    return out


def check_cost(art: Artifacts) -> list[str]:
    """Check a: hloscope's cost of both stages against XLA's analyses (mismatch lines)."""
    import hloscope
    from hloscope.analysis.cost import analyze_cost

    post = analyze_cost(hloscope.parse(art.post)).total
    bad = _cost_mismatches("cost.post", post, art.xla_post_cost)
    bad += _cost_mismatches("cost.compiled", post, art.compiled_cost)
    if art.xla_pre_cost is None:
        bad.append("cost.pre_unavailable XLA's analysis refused the unoptimized module")
    else:
        bad += _cost_mismatches("cost.pre", analyze_cost(hloscope.parse(art.pre)).total, art.xla_pre_cost)
    return bad


def _temp_offsets(ba: Any) -> set[tuple[Any, ...]]:
    return {(x.value.instruction, x.value.index, x.offset, x.size)
            for a in ba.allocations if a.is_preallocated_temp for x in a.assigned}


def check_memory(art: Artifacts) -> list[str]:
    """Check b: hloscope's memory analysis against XLA's figures and buffer assignment."""
    import hloscope
    from hloscope.analysis.memory.report import analyze_memory

    r = analyze_memory(hloscope.parse(art.post), backend="cpu")  # compiled by XLA:CPU
    s, ba = art.stats, art.buffer_assignment
    bad = []
    for key, ours, theirs in (
        ("memory.temp", r.temp_bytes, s.temp_size_in_bytes),
        ("memory.argument", r.argument_bytes, s.argument_size_in_bytes),
        ("memory.output", r.output_bytes, s.output_size_in_bytes),
        ("memory.alias", r.alias_bytes, s.alias_size_in_bytes),
        ("memory.total", r.total_bytes, ba.total_bytes),
        ("memory.allocations", r.allocation_count, ba.allocation_count),
        ("memory.peak_time", r.xla_peak_time, ba.peak.time),  # XLA's own peak (Note [One peak])
        # Note [peak_memory_in_bytes] in analysis/memory/xla_peak.py
        ("memory.peak_memory_in_bytes", r.xla_peak_memory.bytes, s.peak_memory_in_bytes),
    ):
        if ours != theirs:
            bad.append(f"{key} ours={ours} xla={theirs}")
    ours_ba = r.buffer_assignment
    if ours_ba is None or ours_ba.peak is None:  # analyze_memory always fills both
        return bad + ["memory: the analysis gave no buffer assignment or peak"]
    ours_peak = sorted((e.instruction, e.index, e.bytes) for e in ours_ba.peak.entries)
    theirs_peak = sorted((e.instruction, e.index, e.bytes) for e in ba.peak.entries)
    if ours_peak != theirs_peak:
        extra = sorted(set(ours_peak) - set(theirs_peak))[:3]
        missing = sorted(set(theirs_peak) - set(ours_peak))[:3]
        bad.append(f"memory.peak_buffers extra={extra} missing={missing}")
    if _temp_offsets(ours_ba) != _temp_offsets(ba):
        bad.append("memory.temp_offsets")
    if r.temp_lower_bound > r.temp_bytes:
        bad.append(f"memory.lower_bound {r.temp_lower_bound} > {r.temp_bytes}")
    return bad


_HARDWARE_CACHE: list[Any] = []


def _hardware() -> list[Any]:
    from hloscope.analysis.hardware import list_hardware, load_hardware

    if not _HARDWARE_CACHE:
        _HARDWARE_CACHE.extend(load_hardware(h) for h in list_hardware())
    return _HARDWARE_CACHE


def estimates(text: str) -> dict[str, float]:
    """Estimated total seconds of ``text`` on every bundled profile."""
    import hloscope
    from hloscope.analysis.cost import analyze_cost
    from hloscope.analysis.timing import estimate_time

    m = hloscope.parse(text)
    cost = analyze_cost(m)
    return {hw.name: estimate_time(m, hw, cost_report=cost).total_seconds for hw in _hardware()}


def check_estimate(text: str) -> list[str]:
    """Check c: finite, non-negative estimates on every hardware profile, every rule visited."""
    import hloscope
    from hloscope.analysis.cost import COST_RULES, NO_COST, analyze_cost

    bad = []
    m = hloscope.parse(text)
    report = analyze_cost(m)
    for inst in m.instructions():
        if inst.opcode not in COST_RULES and inst.opcode not in NO_COST:
            bad.append(f"estimate.no_rule {inst.opcode.text}")
    # The estimate walks the entry and the bodies, branches and callees it runs, charging each
    # instruction its cost-report entry: a missing entry would silently be free.
    stack, seen = [m.entry], set()
    while stack:
        comp = stack.pop()
        if comp in seen:
            continue
        seen.add(comp)
        for inst in comp.instructions:
            if inst not in report.per_instruction:
                bad.append(f"estimate.uncosted {inst.opcode.text}")
            if inst.opcode.text in ("while", "call", "conditional", "async-start"):
                stack.extend(c for c in inst.called_computations
                             if inst.opcode.text != "async-start" or "async_wrapped_opcode" not in inst.attrs)
    for name, seconds in estimates(text).items():
        if not (math.isfinite(seconds) and seconds >= 0):
            bad.append(f"estimate.{name} {seconds}")
    return sorted(set(bad))


def check_monotone(case: Case, small: Artifacts) -> list[str]:
    """The estimate at twice the size is not smaller (1% slack for launch-only programs)."""
    big = build(case, 2 * (case.size or 8))
    a, b = estimates(small.post), estimates(big.post)
    return [f"estimate.monotone.{k} n={a[k]:.3g} 2n={b[k]:.3g}" for k in a if b[k] < a[k] * 0.99]


def _opcodes_of(text: str) -> set[str]:
    import hloscope

    try:
        return {i.opcode.text for i in hloscope.parse(text).instructions()}
    except Exception:
        return set()


def run_case(case: Case, monotone: bool) -> dict[str, Any]:
    """All checks of one case; ``{"name", "status", "mismatches", "seconds"}``."""
    t0 = time.perf_counter()
    out: dict[str, Any] = {"name": case.name, "mismatches": [], "status": "ok"}
    try:
        art = build(case, case.size or 8)
    except Exception as e:  # jax refused the program itself: not hloscope's problem
        out.update(status="skipped", error=f"{type(e).__name__}: {str(e)[:200]}")
        return out
    for check in (check_cost, check_memory, lambda a: check_estimate(a.post)):
        try:
            out["mismatches"] += check(art)
        except Exception as e:
            out["mismatches"].append(f"crash.{getattr(check, '__name__', 'estimate')} {type(e).__name__}: {e}"[:300])
            out["traceback"] = traceback.format_exc()
    if monotone:
        try:
            out["mismatches"] += check_monotone(case, art)
        except Exception as e:
            out["mismatches"].append(f"crash.monotone {type(e).__name__}: {e}"[:300])
    if out["mismatches"]:
        out["status"] = "mismatch"
        out["opcodes"] = sorted(_opcodes_of(art.post))
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def summarize(results: list[dict[str, Any]]) -> str:
    """Counts per status, per check (cost/memory/estimate) and per mismatch kind."""
    lines = []
    ran = [r for r in results if r["status"] != "skipped"]
    lines.append(f"{len(results)} cases, {len(ran)} compiled, {len(results) - len(ran)} skipped")
    for area in ("cost.post", "cost.compiled", "cost.pre", "memory", "estimate", "crash"):
        hit = [r for r in ran if any(m.startswith(area) for m in r["mismatches"])]
        lines.append(f"  {area:14} {len(ran) - len(hit):4} match  {len(hit):4} differ")
    kinds = Counter(m.split(" ")[0] for r in ran for m in set(x.split(" ")[0] for x in r["mismatches"]))
    if kinds:
        lines.append("mismatch kinds:")
        lines += [f"  {k:32} {v}" for k, v in kinds.most_common()]
    return "\n".join(lines)
