"""Compare two modules: which instructions were added, removed or changed, and what it did to the totals.

Note [Matching instructions]
----------------------------
Instructions are matched in two passes. First by name, which is how XLA keeps identity through
its passes (names are unique in a module). The instructions left over on either side are then
matched by structure and metadata: the key ``(opcode, shape without layout, op_name)``, paired
in program order. That catches renumbered instructions (``add.12`` -> ``add.14``) whose meaning
did not change. A dtype change (f32 -> bf16) changes the shape, so such instructions match by
name or stay added/removed; both outcomes name the change.

A matched pair is "changed" when its opcode, shape (dims and element type), layout, sharding or
fusion membership differs. Fusion membership is the name of the fusion instruction whose body
holds the instruction, compared through the matching (so a renamed fusion is not a change).

The module totals (FLOPs, peak memory, collective bytes) come from the analyses when they are
available; this module only subtracts them.
"""
from __future__ import annotations

import importlib
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hloscope.gc_pause import without_cyclic_gc
from hloscope.ir.instruction import Instruction
from hloscope.ir.module import Module
from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import ArrayShape, Shape

__all__ = ["InstructionRef", "InstructionChange", "MetricChange", "ModuleDiff", "diff_modules"]


@dataclass(frozen=True, slots=True)
class InstructionRef:
    """An instruction named with its computation, opcode, shape and op_name (for added/removed)."""

    name: str
    computation: str
    opcode: str
    shape: str
    op_name: str | None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "computation": self.computation, "opcode": self.opcode,
                "shape": self.shape, "op_name": self.op_name}


@dataclass(frozen=True, slots=True)
class InstructionChange:
    """A matched pair that differs; ``changes`` maps a field to its (before, after) values."""

    before: str
    after: str
    computation: str
    opcode: str
    matched_by: str  # "name" or "structure"
    changes: dict[str, tuple[Any, Any]]

    def to_json(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "computation": self.computation,
                "opcode": self.opcode, "matched_by": self.matched_by,
                "changes": {k: {"before": a, "after": b} for k, (a, b) in self.changes.items()}}


@dataclass(frozen=True, slots=True)
class MetricChange:
    """One module total before and after. Values are None when the analysis is unavailable."""

    name: str
    unit: str
    before: float | None
    after: float | None
    note: str = ""

    @property
    def delta(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "unit": self.unit, "before": self.before, "after": self.after,
                "delta": self.delta, "note": self.note}


@dataclass(slots=True)
class ModuleDiff:
    """What changed from module ``before`` to module ``after``."""

    before: str
    after: str
    matched_by_name: int = 0
    matched_by_structure: int = 0
    unchanged: int = 0
    added: list[InstructionRef] = field(default_factory=list)
    removed: list[InstructionRef] = field(default_factory=list)
    changed: list[InstructionChange] = field(default_factory=list)
    metrics: list[MetricChange] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        """True when no instruction was added, removed or changed."""
        return not (self.added or self.removed or self.changed)

    def change_counts(self) -> dict[str, int]:
        """How many changed pairs differ in each field (opcode, shape, layout, ...)."""
        counts: dict[str, int] = defaultdict(int)
        for c in self.changed:
            for k in c.changes:
                counts[k] += 1
        return dict(counts)

    def to_json(self) -> dict[str, Any]:
        return {
            "before": self.before,
            "after": self.after,
            "matched_by_name": self.matched_by_name,
            "matched_by_structure": self.matched_by_structure,
            "unchanged": self.unchanged,
            "change_counts": self.change_counts(),
            "added": [r.to_json() for r in self.added],
            "removed": [r.to_json() for r in self.removed],
            "changed": [c.to_json() for c in self.changed],
            "metrics": [m.to_json() for m in self.metrics],
        }


def _op_name(inst: Instruction) -> str | None:
    md = inst.metadata
    return None if md is None else md.op_name


def _ref(inst: Instruction) -> InstructionRef:
    comp = inst.computation.name if inst.computation is not None else ""
    return InstructionRef(inst.name, comp, inst.opcode.text, inst.shape.to_text(layout=False), _op_name(inst))


def _layouts(shape: Shape) -> str:
    return ";".join(str(leaf.layout) if isinstance(leaf, ArrayShape) and leaf.layout else "-"
                    for _, leaf in shape.leaves())


def _fusion_owner(module: Module) -> dict[Instruction, str]:
    """Instruction -> name of the fusion instruction whose body holds it."""
    owner: dict[Instruction, str] = {}
    for inst in module.instructions():
        if inst.opcode is Opcode.FUSION:
            for comp in inst.called_computations:
                for inner in comp.instructions:
                    owner[inner] = inst.name
    return owner


@without_cyclic_gc
def diff_modules(before: Module, after: Module, *, analyses: bool = True) -> ModuleDiff:
    """Diff ``before`` against ``after`` (see Note [Matching instructions]).

    With ``analyses`` (the default), the change in FLOPs, peak memory and collective bytes is
    added from whichever of the cost, memory and collectives analyses are available.
    """
    diff = ModuleDiff(before.name, after.name)
    # Each shape's text and layouts once: the parser shares one shape object among all the
    # instructions written with the same shape text (they were half of the matching's time).
    texts: dict[int, tuple[Shape, str, str]] = {}  # id -> (the shape, kept so its id stays its own; texts)

    def shape_texts(shape: Shape) -> tuple[Shape, str, str]:
        got = texts.get(id(shape))
        if got is None:
            got = texts[id(shape)] = (shape, shape.to_text(layout=False), _layouts(shape))
        return got

    by_name_b: dict[str, Instruction] = {}
    for inst in after.instructions():
        by_name_b.setdefault(inst.name, inst)
    pairs: list[tuple[Instruction, Instruction, str]] = []
    # Instructions compare by identity: no id() int per instruction (Note [Lean values] in
    # analysis/memory/dataflow.py says why fresh memory matters at this scale).
    taken_b: set[Instruction] = set()
    left_a: list[Instruction] = []
    for inst in before.instructions():
        other = by_name_b.get(inst.name)
        if other is not None and other not in taken_b:
            pairs.append((inst, other, "name"))
            taken_b.add(other)
        else:
            left_a.append(inst)
    pool: dict[tuple[str, str, str | None], deque[Instruction]] = defaultdict(deque)
    for inst in after.instructions():
        if inst not in taken_b:
            pool[(inst.opcode.text, shape_texts(inst.shape)[1], _op_name(inst))].append(inst)
    for inst in left_a:
        queue = pool.get((inst.opcode.text, shape_texts(inst.shape)[1], _op_name(inst)))
        if queue:
            other = queue.popleft()
            pairs.append((inst, other, "structure"))
            taken_b.add(other)
        else:
            diff.removed.append(_ref(inst))
    diff.added = [_ref(i) for i in after.instructions() if i not in taken_b]

    owner_a, owner_b = _fusion_owner(before), _fusion_owner(after)
    renamed = {a.name: b.name for a, b, _ in pairs if a.opcode is Opcode.FUSION}  # (owners are fusions)
    for a, b, how in pairs:
        if how == "name":
            diff.matched_by_name += 1
        else:
            diff.matched_by_structure += 1
        changes: dict[str, tuple[Any, Any]] = {}
        if a.opcode is not b.opcode:
            changes["opcode"] = (a.opcode.text, b.opcode.text)
        (_, sa, la), (_, sb, lb) = shape_texts(a.shape), shape_texts(b.shape)
        if sa != sb:
            changes["shape"] = (sa, sb)
        if la != lb:
            changes["layout"] = (la, lb)
        sha = str(a.sharding) if a.sharding is not None else None
        shb = str(b.sharding) if b.sharding is not None else None
        if sha != shb:
            changes["sharding"] = (sha, shb)
        fa, fb = owner_a.get(a), owner_b.get(b)
        if (renamed.get(fa, fa) if fa else None) != fb:
            changes["fusion"] = (fa, fb)
        if changes:
            comp = b.computation.name if b.computation is not None else ""
            diff.changed.append(InstructionChange(a.name, b.name, comp, b.opcode.text, how, changes))
        else:
            diff.unchanged += 1
    if analyses:
        diff.metrics = _metric_changes(before, after)
    return diff


def _try(module_name: str, function: str, module: Module, figures: Callable[[Any], tuple[Any, ...]]) -> tuple[Any, str]:
    """The ``figures`` read off ``function(module)``, or None and why not.

    The figures are read off the result object: its ``to_json`` lists every buffer or collective
    (on the Llama 3.1 8B module the memory report's alone took over a second) for one number.
    """
    try:
        fn = getattr(importlib.import_module(module_name), function)
    except (ImportError, AttributeError):
        return None, f"{module_name} not available"
    try:
        return figures(fn(module)), ""
    except Exception as e:  # a failing analysis leaves its metric empty, never the diff
        return None, f"{type(e).__name__}: {e}"


def _metric_changes(before: Module, after: Module) -> list[MetricChange]:
    out = []

    def both(module_name: str, function: str, figures: Callable[[Any], tuple[Any, ...]]) -> tuple[Any, Any, str]:
        (a, why_a), (b, why_b) = (_try(module_name, function, before, figures),
                                  _try(module_name, function, after, figures))
        return a, b, why_a or why_b

    def cost(r: Any) -> tuple[Any, ...]:
        return r.flops, r.bytes_accessed

    ca, cb, note = both("hloscope.analysis.cost", "analyze_cost", cost)
    out.append(MetricChange("flops", "FLOP", ca and ca[0], cb and cb[0], note))
    out.append(MetricChange("bytes_accessed", "B", ca and ca[1], cb and cb[1], note))
    # The peak is the live-range curve's (Note [One peak]): no buffer assignment needed, which
    # is most of the memory analysis's time (Llama 3.1 8B: 0.4 of 1.9 s each side).
    ma, mb, note = both("hloscope.analysis.memory.report", "live_range_peaks",
                        lambda r: (r[0].peak_bytes if 0 in r else 0,))
    out.append(MetricChange("peak_memory", "B", ma and ma[0], mb and mb[0], note))
    xa, xb, note = both("hloscope.analysis.collectives", "analyze_collectives",
                        lambda r: (float(r.payload_bytes),))
    out.append(MetricChange("collective_bytes", "B", xa and xa[0], xb and xb[0], note))
    return out
