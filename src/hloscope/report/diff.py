"""Compare two modules: which instructions were added, removed or changed, and what it did to the totals.

Note [Matching instructions]
----------------------------
Instructions are matched in two passes. First by name, which is how XLA keeps identity through
its passes (names are unique in a module). The instructions left over on either side are then
matched by structure and metadata: the key ``(opcode, shape without layout, op_name)``, paired
in program order. That catches renumbered instructions (``add.12`` -> ``add.14``) whose meaning
did not change. A dtype change (f32 -> bf16) changes the shape, so such instructions match by
name or stay added/removed; both outcomes name the change.

Two kinds of instruction have keys of their own. A constant is its value: constants match by
shape and value (the literal's text), never by name alone, so that ``constant.100`` is not
paired with an unrelated ``constant.35.clone.1`` because both lack an op_name; a constant that
XLA cloned into fusions matches one of its clones, and the other clones are added. A
parameter is its place: an entry parameter matches the entry parameter of the same number
(its shape may change, e.g. to a shard); a parameter of a fusion body or another computation
matches one with the same number and shape in the same kind of computation.

A matched pair is "changed" when its opcode, shape (dims and element type), layout, sharding or
fusion membership differs. Fusion membership is the name of the fusion instruction whose body
holds the instruction, compared through the matching (so a renamed fusion is not a change).
A constant's fusion membership is not a change: XLA clones constants into the fusions that
read them, and where a copy lives says nothing about the program.

The module totals (FLOPs, live-range peak, collective bytes) come from the analyses when they are
available; this module only subtracts them, like with like (Note [Like with like]).

Note [Like with like]
---------------------
The module before SPMD partitioning is the global program; the one after is one device's
(Note [Global and per-device programs] in report/program_view.py). When one side is global and
the other per device, the totals are compared per device: the global side's FLOPs and bytes
accessed are divided by its device count, except what its manual regions (shard_map bodies)
do, which is per-device code already; its live-range peak is divided evenly (a lower bound for
what each device holds: replicated values are not split); its collective bytes, which only
manual regions have, are per device as they are. Each such metric keeps the figure the
analysis gave (``before_as_given`` / ``after_as_given``) and says what was done in its note.
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
from hloscope.report.program_view import ProgramView, compare_views

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
    # The analyses' own figures where before/after were brought to one basis (Note [Like with like]).
    before_as_given: float | None = None
    after_as_given: float | None = None

    @property
    def delta(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before

    def to_json(self) -> dict[str, Any]:
        data = {"name": self.name, "unit": self.unit, "before": self.before, "after": self.after,
                "delta": self.delta, "note": self.note}
        if self.before_as_given is not None or self.after_as_given is not None:
            data["before_as_given"], data["after_as_given"] = self.before_as_given, self.after_as_given
        return data


@dataclass(slots=True)
class ModuleDiff:
    """What changed from module ``before`` to module ``after``."""

    before: str
    after: str
    before_view: ProgramView | None = None
    after_view: ProgramView | None = None
    matched_by_name: int = 0
    matched_by_structure: int = 0
    unchanged: int = 0
    added: list[InstructionRef] = field(default_factory=list)
    removed: list[InstructionRef] = field(default_factory=list)
    changed: list[InstructionChange] = field(default_factory=list)
    metrics: list[MetricChange] = field(default_factory=list)
    # What the totals compare: "as given", or "per device" when one side is the global program
    # and the other one device's (Note [Like with like]).
    basis: str = "as given"

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
            "before_view": self.before_view.to_json() if self.before_view else None,
            "after_view": self.after_view.to_json() if self.after_view else None,
            "basis": self.basis,
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


def _constant_value(inst: Instruction) -> str:
    """A constant's value as written, whitespace folded (both sides print literals alike)."""
    literal = inst.attrs.get("literal")
    return " ".join(str(literal).split()) if literal is not None else ""


def _role(inst: Instruction) -> str:
    comp = inst.computation
    if comp is None:
        return ""
    return "entry" if comp.is_entry else "fusion" if comp.is_fusion_computation else "other"


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

    With ``analyses`` (the default), the change in FLOPs, live-range peak and collective bytes is
    added from whichever of the cost, memory and collectives analyses are available.
    """
    before_view, after_view = compare_views(before, after)
    diff = ModuleDiff(before.name, after.name, before_view, after_view)
    # Each shape's text and layouts once: the parser shares one shape object among all the
    # instructions written with the same shape text (they were half of the matching's time).
    texts: dict[int, tuple[Shape, str, str]] = {}  # id -> (the shape, kept so its id stays its own; texts)

    def shape_texts(shape: Shape) -> tuple[Shape, str, str]:
        got = texts.get(id(shape))
        if got is None:
            got = texts[id(shape)] = (shape, shape.to_text(layout=False), _layouts(shape))
        return got

    def key(inst: Instruction) -> tuple[Any, ...]:
        """The structural key of Note [Matching instructions]."""
        op = inst.opcode
        if op is Opcode.CONSTANT:
            return (op, shape_texts(inst.shape)[1], _constant_value(inst))
        if op is Opcode.PARAMETER:
            role = _role(inst)
            if role == "entry":
                return (op, role, inst.parameter_number)
            return (op, role, inst.parameter_number, shape_texts(inst.shape)[1])
        return (op, shape_texts(inst.shape)[1], _op_name(inst))

    def same_constant(a: Instruction, b: Instruction) -> bool:
        return (a.opcode is not Opcode.CONSTANT and b.opcode is not Opcode.CONSTANT) or (
            a.opcode is b.opcode and key(a) == key(b))

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
        if other is not None and other not in taken_b and same_constant(inst, other):
            pairs.append((inst, other, "name"))
            taken_b.add(other)
        else:
            left_a.append(inst)
    pool: dict[tuple[Any, ...], deque[Instruction]] = defaultdict(deque)
    for inst in after.instructions():
        if inst not in taken_b:
            pool[key(inst)].append(inst)
    for inst in left_a:
        queue = pool.get(key(inst))
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
        if (renamed.get(fa, fa) if fa else None) != fb and a.opcode is not Opcode.CONSTANT:
            changes["fusion"] = (fa, fb)
        if changes:
            comp = b.computation.name if b.computation is not None else ""
            diff.changed.append(InstructionChange(a.name, b.name, comp, b.opcode.text, how, changes))
        else:
            diff.unchanged += 1
    if analyses:
        diff.metrics, diff.basis = _metric_changes(before, after, before_view, after_view)
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


_NO_REGION = (0.0, 0.0)  # (FLOPs, bytes accessed) of a module's manual regions


def _region_calls(module: Module) -> list[Instruction]:
    """The manual regions' (shard_map bodies') calls: per-device code inside a global program."""
    from hloscope.interpret.spmd import region_calls

    ids = region_calls(module)
    return [i for i in module.instructions() if id(i) in ids] if ids else []


def _metric_changes(before: Module, after: Module, before_view: ProgramView | None = None,
                    after_view: ProgramView | None = None) -> tuple[list[MetricChange], str]:
    """The totals before and after, and their basis (Note [Like with like])."""
    out = []
    views = (before_view, after_view)
    kinds = tuple(v.kind if v is not None else None for v in views)
    # Which side is the global program to bring to one device's figures (None: compare as given).
    scaled = 0 if kinds == ("global", "per-device") else 1 if kinds == ("per-device", "global") else None
    view = views[scaled] if scaled is not None else None
    devices = view.devices if view is not None else 1
    basis = "as given" if view is None else "per device"

    def both(module_name: str, function: str, figures: Callable[[Any], tuple[Any, ...]]) -> tuple[Any, Any, str]:
        (a, why_a), (b, why_b) = (_try(module_name, function, before, figures),
                                  _try(module_name, function, after, figures))
        return a, b, why_a or why_b

    def metric(name: str, unit: str, a: float | None, b: float | None, note: str,
               per_device: Callable[[float, int], float] | None, how: str) -> MetricChange:
        if scaled is None or per_device is None or note:
            return MetricChange(name, unit, a, b, note)
        given = (a, b)
        side = "before" if scaled == 0 else "after"
        value = given[scaled]
        figures = [a, b]
        figures[scaled] = per_device(value, scaled) if value is not None else None
        return MetricChange(name, unit, figures[0], figures[1], f"{side} {how}",
                            before_as_given=a, after_as_given=b)

    regions = {0: _NO_REGION, 1: _NO_REGION}

    def cost(side: int) -> Callable[[Any], tuple[Any, ...]]:
        def figures(r: Any) -> tuple[Any, ...]:
            if side == scaled:
                module = (before, after)[side]
                calls = _region_calls(module)
                regions[side] = (sum(r.per_instruction[c].flops for c in calls if c in r.per_instruction),
                                 sum(r.per_instruction[c].bytes_accessed for c in calls if c in r.per_instruction))
            return r.flops, r.bytes_accessed
        return figures

    ca, why_a = _try("hloscope.analysis.cost", "analyze_cost", before, cost(0))
    cb, why_b = _try("hloscope.analysis.cost", "analyze_cost", after, cost(1))
    note = why_a or why_b
    split = f"divided evenly over {devices} devices"

    def even(k: int) -> Callable[[float, int], float]:
        # What manual regions do is one device's already (Note [Like with like]).
        # XLA counts a custom call as -1 FLOP and byte: the rest can come out below zero.
        return lambda value, side: max(value - regions[side][k], 0) / devices + regions[side][k]

    region_note = any(regions[k] != _NO_REGION for k in regions)
    how = split + (", its manual regions' part counted once (per device already)" if region_note else "")
    out.append(metric("flops", "FLOP", ca and ca[0], cb and cb[0], note, even(0), how))
    out.append(metric("bytes_accessed", "B", ca and ca[1], cb and cb[1], note, even(1), how))
    # The peak is the live-range curve's (Note [One peak]): no buffer assignment needed, which
    # is most of the memory analysis's time (Llama 3.1 8B: 0.4 of 1.9 s each side).
    ma, mb, note = both("hloscope.analysis.memory.report", "live_range_peaks",
                        lambda r: (r[0].peak_bytes if 0 in r else 0,))
    out.append(metric("live_range_peak", "B", ma and ma[0], mb and mb[0], note,
                      lambda value, side: value / devices,
                      f"{split} (a lower bound: replicated values are not split)"))
    xa, xb, note = both("hloscope.analysis.collectives", "analyze_collectives",
                        lambda r: (float(r.payload_bytes),))
    out.append(metric("collective_bytes", "B", xa and xa[0], xb and xb[0], note,
                      lambda value, side: value,
                      "as given (a global program's collectives are its manual regions', per device already)"))
    return out, basis

