"""The module summary: what a module is, at a glance (name, sizes, parameters, outputs, collectives)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from hloscope.gc_pause import without_cyclic_gc
from hloscope.ir.module import Module
from hloscope.ir.opcode import Family
from hloscope.ir.shape import Shape

__all__ = ["TensorInfo", "ModuleSummary", "summarize"]


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """One entry parameter or output leaf."""

    name: str
    shape: str
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "shape": self.shape, "bytes": self.bytes}


@dataclass(frozen=True, slots=True)
class ModuleSummary:
    """Counts and interfaces of a module. ``opcode_counts`` covers every computation."""

    name: str
    computation_count: int
    fusion_computation_count: int
    instruction_count: int
    entry_instruction_count: int
    opcode_counts: tuple[tuple[str, int], ...]
    parameters: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    collectives: tuple[tuple[str, int], ...]
    replica_count: int | None
    num_partitions: int | None
    is_scheduled: bool
    while_loops: int
    custom_call_targets: tuple[tuple[str, int], ...]

    @property
    def parameter_bytes(self) -> int:
        return sum(p.bytes for p in self.parameters)

    @property
    def output_bytes(self) -> int:
        return sum(o.bytes for o in self.outputs)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "computations": self.computation_count,
            "fusion_computations": self.fusion_computation_count,
            "instructions": self.instruction_count,
            "entry_instructions": self.entry_instruction_count,
            "opcode_counts": dict(self.opcode_counts),
            "parameters": [p.to_json() for p in self.parameters],
            "parameter_bytes": self.parameter_bytes,
            "outputs": [o.to_json() for o in self.outputs],
            "output_bytes": self.output_bytes,
            "collectives": dict(self.collectives),
            "custom_call_targets": dict(self.custom_call_targets),
            "while_loops": self.while_loops,
            "replica_count": self.replica_count,
            "num_partitions": self.num_partitions,
            "is_scheduled": self.is_scheduled,
        }


def _leaves(prefix: str, shape: Shape) -> list[TensorInfo]:
    out = []
    for index, leaf in shape.leaves():
        name = prefix + "".join(f".{i}" for i in index)
        out.append(TensorInfo(name, leaf.to_text(), leaf.byte_size()))
    return out


@without_cyclic_gc
def summarize(module: Module) -> ModuleSummary:
    """Summarize ``module``: one pass over its instructions."""
    counts: Counter[str] = Counter()
    collectives: Counter[str] = Counter()
    targets: Counter[str] = Counter()
    whiles = 0
    for inst in module.instructions():
        op = inst.opcode
        counts[op.text] += 1
        if op.family is Family.COLLECTIVE and not op.text.endswith("-done"):
            collectives[op.text] += 1
        if op.text == "while":
            whiles += 1
        target = inst.attrs.get("custom_call_target")
        if target is not None:
            targets[target] += 1
    entry = module.entry
    params: list[TensorInfo] = []
    for p in entry.parameters:
        params.extend(_leaves(f"{p.name} (arg{p.parameter_number})", p.shape))
    outputs = _leaves("out", entry.root.shape)
    return ModuleSummary(
        name=module.name,
        computation_count=len(module.computations),
        fusion_computation_count=len(module.fusion_computations()),
        instruction_count=sum(counts.values()),
        entry_instruction_count=len(entry.instructions),
        opcode_counts=tuple(counts.most_common()),
        parameters=tuple(params),
        outputs=tuple(outputs),
        collectives=tuple(collectives.most_common()),
        replica_count=module.replica_count,
        num_partitions=module.num_partitions,
        is_scheduled=module.is_scheduled,
        while_loops=whiles,
        custom_call_targets=tuple(targets.most_common()),
    )
