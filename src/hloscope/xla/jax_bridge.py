"""``from_jax``: a jax function's modules as hloscope sees them, next to XLA's own figures.

One call lowers and compiles ``f`` on XLA:CPU (through ``hloscope.xla.client.lower_jax``) and returns
the pre- and post-optimization modules parsed by hloscope, XLA's ``cost_analysis()`` and
``memory_analysis()``, and XLA's dumped buffer assignment. ``JaxModules.compare()`` puts
hloscope's cost and memory analyses of the optimized module beside XLA's, figure by figure.

Note [What is compared with what]
    Cost: ``analyze_cost(post).total`` against ``compiled.cost_analysis()`` (both count a while
    body once). Memory: ``analyze_memory(post)`` against ``memory_analysis()`` for argument,
    output, alias and temp bytes and ``peak_memory_in_bytes`` (= arguments + outputs - aliased
    + temps), and against the dumped buffer assignment for ``total_bytes`` (XLA's ``Total bytes
    used``) and the live-range peak. For a sharded program every figure is per device: the
    optimized module is the partitioned, per-device program and XLA's analyses describe it.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hloscope.ir.buffer_assignment import BufferAssignment
from hloscope.ir.module import Module

__all__ = ["from_jax", "JaxModules", "Figure", "JaxComparison"]

# Tolerances of the acceptance tests: FLOPs and transcendentals are counted exactly as XLA does;
# bytes accessed depend on fusion details we model closely but not exactly.
COST_TOLERANCE = {"flops": 0.0, "transcendentals": 0.0, "bytes_accessed": 0.05}
MEMORY_TOLERANCE = 0.02
# Small modules: XLA's heap packs scalar temporaries of a while loop's phis differently from
# ours by a few tens of bytes (tests/analysis/test_memory.py allows the same 128 bytes).
MEMORY_SLACK = 128.0

# Note [peak_memory_in_bytes]
#     XLA fills memory_analysis().peak_memory_in_bytes from ComputePeakMemorySizes over the
#     heap simulator's trace in the BufferAssignmentProto, which neither the text dump nor the
#     optimized HLO carries; hloscope's figure is arguments + outputs - aliased + temps, an upper
#     bound of XLA's. Shown side by side, never counted as a mismatch.
_PEAK_NOTE = "XLA: heap-trace peak (ComputePeakMemorySizes); hloscope: args + outputs - alias + temps"


@dataclass(frozen=True)
class Figure:
    """One figure as hloscope computes it and as XLA reports it (None when XLA gave none)."""

    name: str
    hloscope: float
    xla: float | None
    tolerance: float  # allowed |difference| / |xla|
    slack: float = 0.0  # allowed |difference| in absolute units, whatever the tolerance
    checked: bool = True  # False: shown for information, never a mismatch (see ``note``)
    note: str = ""

    @property
    def difference(self) -> float | None:
        return None if self.xla is None else self.hloscope - self.xla

    @property
    def relative(self) -> float | None:
        """``difference / xla`` (0 when both are 0), or None when XLA has no figure."""
        if self.xla is None:
            return None
        if self.xla == 0:
            return 0.0 if self.hloscope == 0 else float("inf")
        return (self.hloscope - self.xla) / abs(self.xla)

    @property
    def ok(self) -> bool:
        """Within tolerance; unchecked figures and figures XLA does not report count as ok."""
        rel = self.relative
        return (not self.checked or rel is None or abs(rel) <= self.tolerance
                or abs(self.hloscope - (self.xla or 0.0)) <= self.slack)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "hloscope": self.hloscope, "xla": self.xla,
                "difference": self.difference, "relative": self.relative,
                "tolerance": self.tolerance, "slack": self.slack, "checked": self.checked, "ok": self.ok,
                "note": self.note}


@dataclass(frozen=True)
class JaxComparison:
    """hloscope's cost and memory figures beside XLA's for one optimized module."""

    module_name: str
    cost: tuple[Figure, ...]
    memory: tuple[Figure, ...]

    @property
    def figures(self) -> tuple[Figure, ...]:
        return self.cost + self.memory

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.figures)

    @property
    def mismatches(self) -> tuple[Figure, ...]:
        return tuple(f for f in self.figures if not f.ok)

    def figure(self, name: str) -> Figure:
        """The figure called ``name`` (``flops``, ``temp_bytes``, ...); KeyError if none."""
        for f in self.figures:
            if f.name == name:
                return f
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {"module_name": self.module_name, "ok": self.ok,
                "cost": [f.to_json() for f in self.cost],
                "memory": [f.to_json() for f in self.memory]}

    def to_text(self) -> str:
        """A plain table: figure, hloscope, XLA, relative difference, ok/MISMATCH."""
        rows = [f"{self.module_name}: hloscope vs XLA",
                f"  {'figure':<22}{'hloscope':>16}{'xla':>16}{'rel':>10}"]
        for f in self.figures:
            xla = "-" if f.xla is None else f"{f.xla:,.0f}"
            rel = "-" if f.relative is None else f"{f.relative:+.2%}"
            verdict = "ok" if f.ok else "MISMATCH"
            if not f.checked:
                verdict = "(not compared)"
            rows.append(f"  {f.name:<22}{f.hloscope:>16,.0f}{xla:>16}{rel:>10}  {verdict}")
        return "\n".join(rows)


@dataclass(frozen=True)
class JaxModules:
    """A jax function's modules (hloscope IR) and XLA's analyses of its compilation.

    ``xla_cost`` is ``compiled.cost_analysis()`` (keys ``flops``, ``transcendentals``,
    ``bytes accessed``...); ``xla_memory`` is ``compiled.memory_analysis()`` as a dict
    (``argument_size_in_bytes``, ``temp_size_in_bytes``, ``peak_memory_in_bytes``...);
    ``buffer_assignment`` is XLA's dumped assignment of the optimized module (None if XLA wrote
    none). Multi-device programs: everything describes one device's partitioned program.
    """

    pre_optimization: Module
    post_optimization: Module
    xla_cost: dict[str, float]
    xla_memory: dict[str, int]
    buffer_assignment: BufferAssignment | None
    num_replicas: int = 1
    num_partitions: int = 1
    pre_optimization_text: str = field(default="", repr=False)
    post_optimization_text: str = field(default="", repr=False)

    def compare(self) -> JaxComparison:
        """hloscope's cost and memory analyses of ``post_optimization`` beside XLA's.

        See Note [What is compared with what].
        """
        from hloscope.analysis.cost import analyze_cost
        from hloscope.analysis.memory.report import analyze_memory

        total = analyze_cost(self.post_optimization).total
        cx = self.xla_cost
        cost = (
            Figure("flops", float(total.flops), cx.get("flops"), COST_TOLERANCE["flops"]),
            Figure("transcendentals", float(total.transcendentals), cx.get("transcendentals"),
                   COST_TOLERANCE["transcendentals"]),
            Figure("bytes_accessed", float(total.bytes_accessed), cx.get("bytes accessed"),
                   COST_TOLERANCE["bytes_accessed"]),
        )
        mem = analyze_memory(self.post_optimization)
        mx = self.xla_memory
        ba = self.buffer_assignment

        def xla_int(key: str) -> float | None:
            return float(mx[key]) if key in mx else None

        peak = mem.argument_bytes + mem.output_bytes - mem.alias_bytes + mem.temp_bytes
        memory = (
            Figure("total_bytes", float(mem.total_bytes),
                   None if ba is None else float(ba.total_bytes), MEMORY_TOLERANCE, MEMORY_SLACK),
            Figure("temp_bytes", float(mem.temp_bytes), xla_int("temp_size_in_bytes"), MEMORY_TOLERANCE, MEMORY_SLACK),
            Figure("argument_bytes", float(mem.argument_bytes), xla_int("argument_size_in_bytes"),
                   MEMORY_TOLERANCE, MEMORY_SLACK),
            Figure("output_bytes", float(mem.output_bytes), xla_int("output_size_in_bytes"),
                   MEMORY_TOLERANCE, MEMORY_SLACK),
            Figure("alias_bytes", float(mem.alias_bytes), xla_int("alias_size_in_bytes"), MEMORY_TOLERANCE, MEMORY_SLACK),
            # Note [peak_memory_in_bytes]
            Figure("peak_memory_bytes", float(peak), xla_int("peak_memory_in_bytes"), MEMORY_TOLERANCE,
                   checked=False, note=_PEAK_NOTE),
            Figure("live_range_peak_bytes", float(mem.xla_peak_bytes),  # XLA's own (Note [One peak])
                   None if ba is None or ba.peak_bytes is None else float(ba.peak_bytes),
                   MEMORY_TOLERANCE, MEMORY_SLACK),
        )
        return JaxComparison(self.post_optimization.name, cost, memory)

    def to_json(self) -> dict[str, Any]:
        return {
            "pre_optimization": self.pre_optimization.name,
            "post_optimization": self.post_optimization.name,
            "num_replicas": self.num_replicas,
            "num_partitions": self.num_partitions,
            "xla_cost": dict(self.xla_cost),
            "xla_memory": dict(self.xla_memory),
            "buffer_assignment": None if self.buffer_assignment is None else {
                "total_bytes": self.buffer_assignment.total_bytes,
                "allocation_count": self.buffer_assignment.allocation_count,
                "peak_bytes": self.buffer_assignment.peak_bytes,
            },
        }


def from_jax(f: Callable[..., Any], *args: Any, **jit_kwargs: Any) -> JaxModules:
    """Lower and compile ``jax.jit(f, **jit_kwargs)`` for ``args`` on XLA:CPU; hloscope's view of it.

    Shardings go in ``jit_kwargs`` (``in_shardings``/``out_shardings`` with a ``NamedSharding``
    over a ``Mesh``), or inside ``f`` (``shard_map``). The function is also run once, because
    the bridge collects its outputs. Needs jax (``pip install 'hloscope[jax]'``).
    """
    from hloscope.text.parser import parse_module as parse
    from hloscope.xla.client import lower_jax

    art = lower_jax(f, *args, **jit_kwargs)
    pre = parse(art.pre_optimization_text, "<jax pre-optimization>")
    post = parse(art.post_optimization_text, "<jax post-optimization>")
    return JaxModules(
        pre_optimization=pre,
        post_optimization=post,
        xla_cost=dict(art.cost_analysis),
        xla_memory=dict(art.memory_analysis),
        buffer_assignment=_buffer_assignment(art.dump_files, post.name),
        num_replicas=art.num_replicas,
        num_partitions=art.num_partitions,
        pre_optimization_text=art.pre_optimization_text,
        post_optimization_text=art.post_optimization_text,
    )


def _buffer_assignment(dump_files: dict[str, str], module_name: str) -> BufferAssignment | None:
    """XLA's buffer assignment from the dump texts ``lower_jax`` kept (split or single file)."""
    from hloscope.text.buffer_assignment_dump import SPLIT_SUFFIXES, load_buffer_assignment

    stems = [k[: -len(SPLIT_SUFFIXES[0])] for k in dump_files if k.endswith(SPLIT_SUFFIXES[0])]
    if not stems:
        return None
    # The reader finds a split dump's sibling files by prefix on disk, so lay them out again.
    stem = stems[0]
    with tempfile.TemporaryDirectory(prefix="hloscope-ba-") as d:
        prefix = os.path.join(d, f"module_0000.{module_name}.{stem}")
        for suffix in SPLIT_SUFFIXES:
            text = dump_files.get(stem + suffix)
            if text is not None:
                with open(prefix + suffix, "w", encoding="utf-8") as fh:
                    fh.write(text)
        return load_buffer_assignment(prefix)
