"""``from_jax``: a jax function's modules as hloscope sees them, next to XLA's own figures.

One call lowers and compiles ``f`` on XLA:CPU (through ``hloscope.xla.lowering.lower_jax``) exactly
as the program is written (Note [The program as written]) and returns the pre- and
post-optimization modules parsed by hloscope, XLA's ``cost_analysis()`` and
``memory_analysis()``, and XLA's dumped buffer assignment. ``JaxModules.compare()`` puts
hloscope's cost and memory analyses of the optimized module beside XLA's, figure by figure.

Note [The program as written]
    ``from_jax(f, *args, **jit_kwargs)`` compiles ``jax.jit(f, **jit_kwargs)`` for ``args``,
    nothing else: no option is added (jit keeps dropping unused parameters, as in the user's
    program), a function already jitted or pmapped is lowered as it is (options besides are
    refused, since they would be lost), and nothing runs, so donated arrays are neither read
    nor deleted. The module is the one ``jax.jit(f, **jit_kwargs).lower(*args).compile()``
    has: the same argument, output, alias and temp sizes (tests/test_from_jax.py checks it on
    every model of the models tier). Typed PRNG keys (``jax.random.key``) are arguments like
    any other: the module takes their key data.

Note [What is compared with what]
    Cost: ``analyze_cost(post).total`` against ``compiled.cost_analysis()`` (both count a while
    body once). XLA adds the instructions' figures in float32 (Note [XLA sums costs in float32]
    in ``analysis/cost_float32.py``), so above 2**24 its totals are rounded: hloscope's counts
    are summed the same way too (``Figure.rounded``), and a figure is "equal within rounding"
    when that sum is XLA's to the bit; anything else is a mismatch. Memory: ``analyze_memory``
    against ``memory_analysis()`` for argument, output, alias and temp bytes and
    ``peak_memory_in_bytes`` (computed as XLA:CPU computes it: Note [peak_memory_in_bytes] in
    ``analysis/memory/xla_peak.py``), and against the dumped buffer assignment for
    ``total_bytes`` (XLA's ``Total bytes used``) and XLA's HloLiveRange peak. hloscope's own
    live-range peak (Note [One peak]) is shown beside them under its own name; XLA reports no
    such figure. Every compared figure must be equal. For a sharded program every figure is
    per device: the optimized module is the partitioned, per-device program and XLA's analyses
    describe it.
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

# Every figure hloscope compares with XLA's must be equal: FLOPs, transcendentals and bytes as
# XLA sums them (Note [What is compared with what]), memory sizes to the byte. A caller may
# build a Figure with a tolerance of its own.
COST_TOLERANCE = {"flops": 0.0, "transcendentals": 0.0, "bytes_accessed": 0.0}
MEMORY_TOLERANCE = 0.0

_LIVE_RANGE_NOTE = "hloscope's own: the most bytes live at one step (Note [One peak]); XLA reports no such figure"


@dataclass(frozen=True)
class Figure:
    """One figure as hloscope computes it and as XLA reports it (None when XLA gave none).

    ``rounded`` is hloscope's figure summed as XLA sums it, in float32 (None where XLA's
    figure is not such a sum); it equals ``xla`` when the two differ only by XLA's rounding.
    """

    name: str
    hloscope: float
    xla: float | None
    tolerance: float  # allowed |difference| / |xla|
    slack: float = 0.0  # allowed |difference| in absolute units, whatever the tolerance
    checked: bool = True  # False: shown for information, never a mismatch (see ``note``)
    note: str = ""
    rounded: float | None = None

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
    def verdict(self) -> str:
        """``equal``, ``equal within rounding`` (``rounded`` is XLA's figure), ``within
        tolerance``, ``MISMATCH``, ``not compared`` or ``no XLA figure``."""
        if not self.checked:
            return "not compared"
        if self.xla is None:
            return "no XLA figure"
        if self.hloscope == self.xla:
            return "equal"
        if self.rounded is not None and self.rounded == self.xla:
            return "equal within rounding"
        rel = self.relative
        if (rel is not None and abs(rel) <= self.tolerance) or abs(self.hloscope - self.xla) <= self.slack:
            return "within tolerance"
        return "MISMATCH"

    @property
    def ok(self) -> bool:
        """Not a mismatch; unchecked figures and figures XLA does not report count as ok."""
        return self.verdict != "MISMATCH"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "hloscope": self.hloscope, "xla": self.xla,
                "difference": self.difference, "relative": self.relative, "rounded": self.rounded,
                "tolerance": self.tolerance, "slack": self.slack, "checked": self.checked, "ok": self.ok,
                "verdict": self.verdict, "note": self.note}


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
        """A plain table: figure, hloscope, XLA, relative difference, verdict; then the notes."""
        rows = [f"{self.module_name}: hloscope vs XLA",
                f"  {'figure':<26}{'hloscope':>18}{'xla':>18}{'rel':>10}"]
        notes = []
        for f in self.figures:
            xla = "-" if f.xla is None else f"{f.xla:,.0f}"
            rel = "-" if f.relative is None else f"{f.relative:+.2e}" if 0 < abs(f.relative) < 1e-4 else f"{f.relative:+.2%}"
            verdict = f.verdict
            if verdict == "equal within rounding":
                verdict += f" (hloscope's count summed as XLA sums it, in float32: {f.rounded:,.0f})"
            rows.append(f"  {f.name:<26}{f.hloscope:>18,.0f}{xla:>18}{rel:>10}  {verdict}")
            if f.note:
                notes.append(f"  {f.name}: {f.note}")
        return "\n".join(rows + notes)


@dataclass(frozen=True, repr=False)
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

    def __repr__(self) -> str:
        # The buffer assignment and the modules hold every value: a dataclass repr of them
        # printed millions of characters. One line says what this is.
        flops = self.xla_cost.get("flops")
        peak = self.xla_memory.get("peak_memory_in_bytes")
        return (f"<JaxModules {self.post_optimization.name}: {self.num_replicas} replica(s) x "
                f"{self.num_partitions} partition(s), {self.pre_optimization.instruction_count} instructions "
                f"before and {self.post_optimization.instruction_count} after optimization; XLA: "
                f"{'-' if flops is None else f'{flops:,.0f}'} FLOPs, peak_memory_in_bytes "
                f"{'-' if peak is None else f'{peak:,}'}>")

    def compare(self) -> JaxComparison:
        """hloscope's cost and memory analyses of ``post_optimization`` beside XLA's.

        See Note [What is compared with what].
        """
        from hloscope.analysis.cost import analyze_cost
        from hloscope.analysis.cost_float32 import float32_total
        from hloscope.analysis.memory.report import analyze_memory

        report = analyze_cost(self.post_optimization)
        total = report.total
        rounded = float32_total(self.post_optimization, report)
        cx = self.xla_cost
        cost = (
            Figure("flops", float(total.flops), cx.get("flops"), COST_TOLERANCE["flops"],
                   rounded=rounded.flops),
            Figure("transcendentals", float(total.transcendentals), cx.get("transcendentals"),
                   COST_TOLERANCE["transcendentals"], rounded=rounded.transcendentals),
            Figure("bytes_accessed", float(total.bytes_accessed), cx.get("bytes accessed"),
                   COST_TOLERANCE["bytes_accessed"], rounded=rounded.bytes_accessed),
        )
        # from_jax compiles on XLA:CPU, whatever the module looks like.
        mem = analyze_memory(self.post_optimization, backend="cpu")
        mx = self.xla_memory
        ba = self.buffer_assignment

        def xla_int(key: str) -> float | None:
            return float(mx[key]) if key in mx else None

        xla_peak = mem.xla_peak_memory
        memory = (
            Figure("total_bytes", float(mem.total_bytes),
                   None if ba is None else float(ba.total_bytes), MEMORY_TOLERANCE),
            Figure("temp_bytes", float(mem.temp_bytes), xla_int("temp_size_in_bytes"), MEMORY_TOLERANCE),
            Figure("argument_bytes", float(mem.argument_bytes), xla_int("argument_size_in_bytes"),
                   MEMORY_TOLERANCE),
            Figure("output_bytes", float(mem.output_bytes), xla_int("output_size_in_bytes"),
                   MEMORY_TOLERANCE),
            Figure("alias_bytes", float(mem.alias_bytes), xla_int("alias_size_in_bytes"), MEMORY_TOLERANCE),
            # Note [peak_memory_in_bytes] in analysis/memory/xla_peak.py
            Figure("peak_memory_in_bytes", float(xla_peak.bytes or 0), xla_int("peak_memory_in_bytes"),
                   MEMORY_TOLERANCE, note=f"{xla_peak.label}: {xla_peak.counts}"),
            Figure("hlo_live_range_peak_bytes", float(mem.xla_peak_bytes),  # XLA's own (Note [One peak])
                   None if ba is None or ba.peak_bytes is None else float(ba.peak_bytes), MEMORY_TOLERANCE,
                   note="XLA's HloLiveRange peak, against the dump's 'Live ranges at N (peak)'"),
            Figure("live_range_peak_bytes", float(mem.peak_bytes), None, MEMORY_TOLERANCE, checked=False,
                   note=_LIVE_RANGE_NOTE),
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

    The program as written (Note [The program as written]): shardings go in ``jit_kwargs``
    (``in_shardings``/``out_shardings`` with a ``NamedSharding`` over a ``Mesh``) or inside ``f``
    (``shard_map``), donation in ``donate_argnums``; ``f`` may be jitted or pmapped already
    (then without ``jit_kwargs``). Nothing runs: the arguments stay as they were, donated or
    not. Needs jax (``pip install 'hloscope[jax]'``).
    """
    from hloscope.text.parser import parse_module as parse
    from hloscope.xla.lowering import lower_jax

    art = lower_jax(f, *args, run=False, **jit_kwargs)
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
