"""Collective communication: who talks to whom, how many bytes, by ring and by tree algorithms.

For each collective instruction (all-reduce, all-gather, reduce-scatter, all-to-all,
collective-permute, collective-broadcast and their ``-start`` forms) this finds the group mode
and groups exactly as XLA forms them (``hloscope.ir.replica_groups``), the payload each device
contributes, and the bytes each device sends under the two textbook algorithms:

=================== ====================== ======================= =====================
opcode              payload B              ring, bytes per device  tree, bytes per device
=================== ====================== ======================= =====================
all-reduce          operand bytes          2 (n-1)/n B             2 B (reduce + bcast)
all-gather          output bytes           (n-1)/n B               (n-1)/n B
reduce-scatter      operand bytes          (n-1)/n B               (n-1)/n B
all-to-all          operand bytes          (n-1)/n B               (n-1)/n B
collective-permute  operand bytes          B                       B
collective-bcast    operand bytes          B                       B
=================== ====================== ======================= =====================

Latency steps (how many α terms an α-β model charges) are ``2(n-1)`` / ``n-1`` for the ring
and ``2⌈log2 n⌉`` / ``⌈log2 n⌉`` for the tree. Bytes are logical (element count × element
size), not tile-padded: padding is a memory layout, not data sent over the link.

Collectives inside while loops run once per iteration; ``count`` says how many times per step
(``analysis.trip_count.execution_counts``), and the report's totals are multiplied by it.
"""
from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from typing import Any

from hloscope.analysis.async_ops import async_wrapped_instruction
from hloscope.analysis.trip_count import execution_counts
from hloscope.gc_pause import without_cyclic_gc
from hloscope.ir import Instruction, Module, Opcode
from hloscope.ir.replica_groups import CollectiveOpGroupMode, group_mode, participant_groups
from hloscope.ir.shape import Shape, TupleShape

__all__ = ["CollectiveKind", "CollectiveOp", "CollectivesReport", "analyze_collectives", "COLLECTIVE_OPCODES", "wire_bytes",
           "as_collective"]

# Collective opcode -> the kind whose formulas apply (the -start form shares its op's).
COLLECTIVE_OPCODES: dict[Opcode, str] = {
    Opcode.ALL_REDUCE: "all-reduce",
    Opcode.ALL_REDUCE_START: "all-reduce",
    Opcode.ALL_GATHER: "all-gather",
    Opcode.ALL_GATHER_START: "all-gather",
    Opcode.REDUCE_SCATTER: "reduce-scatter",
    Opcode.ALL_TO_ALL: "all-to-all",
    Opcode.RAGGED_ALL_TO_ALL: "all-to-all",
    Opcode.COLLECTIVE_PERMUTE: "collective-permute",
    Opcode.COLLECTIVE_PERMUTE_START: "collective-permute",
    Opcode.COLLECTIVE_BROADCAST: "collective-broadcast",
}

# Ops with a use_global_device_ids attribute (None = the op has no such attribute).
_HAS_GLOBAL_IDS = frozenset({"all-reduce", "all-gather", "reduce-scatter"})


def as_collective(inst: Instruction) -> Instruction | None:
    """The collective ``inst`` performs, or None: ``inst`` itself for a collective opcode, the
    wrapped instruction for async sugar such as GPU dumps' ``reduce-scatter-start`` and
    ``all-to-all-start`` (an async-start wrapping the collective; Note [Async sugar costs] in
    ``analysis/async_ops.py``), whose groups and operands are the async op's."""
    if inst.opcode in COLLECTIVE_OPCODES:
        return inst
    if inst.opcode is Opcode.ASYNC_START:
        wrapped = async_wrapped_instruction(inst)
        if wrapped is not None and wrapped.opcode in COLLECTIVE_OPCODES:
            return wrapped
    return None


def _logical_bytes(shape: Shape) -> int:
    return sum(leaf.byte_size(tiled=False) for _, leaf in shape.leaves())


def collective_operand_bytes(inst: Instruction) -> int:
    return sum(_logical_bytes(o.shape) for o in inst.operands)


def collective_output_bytes(inst: Instruction) -> int:
    shape = inst.shape
    if inst.opcode in (Opcode.ALL_GATHER_START, Opcode.COLLECTIVE_PERMUTE_START) and isinstance(shape, TupleShape):
        # The start op's result is (operands, outputs[, contexts]); the output is element 1.
        return _logical_bytes(shape.elements[1])
    return _logical_bytes(shape)


@dataclass(frozen=True, slots=True)
class _Formula:
    payload: str  # "operand" or "output"
    ring: Any  # (n, B) -> bytes per device
    tree: Any
    ring_steps: Any  # n -> latency terms
    tree_steps: Any


def _log2(n: int) -> int:
    return max(1, math.ceil(math.log2(n))) if n > 1 else 0


_SHARE = lambda n, b: (n - 1) / n * b if n > 1 else 0.0  # noqa: E731 - one-line table entries
FORMULAS: dict[str, _Formula] = {
    "all-reduce": _Formula("operand", lambda n, b: 2 * _SHARE(n, b), lambda n, b: 2.0 * b if n > 1 else 0.0,
                           lambda n: 2 * (n - 1), lambda n: 2 * _log2(n)),
    "all-gather": _Formula("output", _SHARE, _SHARE, lambda n: n - 1, _log2),
    "reduce-scatter": _Formula("operand", _SHARE, _SHARE, lambda n: n - 1, _log2),
    "all-to-all": _Formula("operand", _SHARE, _SHARE, lambda n: n - 1, lambda n: n - 1),
    "collective-permute": _Formula("operand", lambda n, b: float(b), lambda n, b: float(b),
                                   lambda n: 1, lambda n: 1),
    "collective-broadcast": _Formula("operand", lambda n, b: float(b) if n > 1 else 0.0,
                                     lambda n, b: float(b) if n > 1 else 0.0, lambda n: n - 1, _log2),
}


def wire_bytes(kind: str, group_size: int, payload: float, algorithm: str = "ring") -> float:
    """Bytes one device sends for collective ``kind`` of ``payload`` bytes among ``group_size``."""
    f = FORMULAS[kind]
    return (f.ring if algorithm == "ring" else f.tree)(group_size, payload)


@dataclass(frozen=True)
class CollectiveOp:
    """One collective instruction: its groups and bytes (per device, per execution)."""

    name: str
    opcode: str
    kind: str
    computation: str
    group_mode: str
    group_size: int
    num_groups: int
    payload_bytes: int
    output_bytes: int
    ring_bytes: float
    tree_bytes: float
    ring_steps: int
    tree_steps: int
    count: int  # executions per step (loop trip counts multiplied in)
    channel_id: int | None = None
    op_name: str | None = None
    # The groups as the module writes them: ``{{0,1,2,3}}``, the iota form ``[1,8]<=[8]``, or a
    # collective-permute's ``source_target_pairs``; None when the attribute is absent.
    replica_groups: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class CollectiveKind:
    """Collectives of one opcode, group mode and group size, and their per-step totals."""

    opcode: str
    group_mode: str
    group_size: int
    instructions: int = 0
    count: int = 0  # executions per step
    payload_bytes: int = 0
    ring_bytes: float = 0.0
    tree_bytes: float = 0.0


@dataclass(frozen=True)
class CollectivesReport:
    """Every collective of a module, and per-step totals (loop-aware: × ``count``)."""

    collectives: tuple[CollectiveOp, ...]
    num_replicas: int
    num_partitions: int

    @property
    def payload_bytes(self) -> int:
        return sum(c.payload_bytes * c.count for c in self.collectives)

    @property
    def ring_bytes(self) -> float:
        return sum(c.ring_bytes * c.count for c in self.collectives)

    @property
    def tree_bytes(self) -> float:
        return sum(c.tree_bytes * c.count for c in self.collectives)

    def by_name(self, name: str) -> CollectiveOp:
        return next(c for c in self.collectives if c.name == name)

    def by_kind(self) -> list[CollectiveKind]:
        """The collectives grouped by opcode, group mode and group size, with their per-step
        totals (× ``count``), most bytes on the wire (ring) first. The groups' totals add up to
        the report's."""
        kinds: dict[tuple[str, str, int], CollectiveKind] = {}
        for c in self.collectives:
            key = (c.opcode, c.group_mode, c.group_size)
            k = kinds.get(key)
            if k is None:
                k = kinds[key] = CollectiveKind(*key)
            k.instructions += 1
            k.count += c.count
            k.payload_bytes += c.payload_bytes * c.count
            k.ring_bytes += c.ring_bytes * c.count
            k.tree_bytes += c.tree_bytes * c.count
        return sorted(kinds.values(), key=lambda k: (-k.ring_bytes, k.opcode, k.group_mode, k.group_size))

    def top(self, n: int) -> list[CollectiveOp]:
        """The ``n`` collectives moving the most bytes per step on the wire (ring, × ``count``);
        every one when ``n`` is 0; ties keep the module's order."""
        ranked = sorted(self.collectives, key=lambda c: -c.ring_bytes * c.count)
        return ranked if n <= 0 else ranked[:n]

    def to_json(self) -> dict[str, Any]:
        return {
            "num_replicas": self.num_replicas,
            "num_partitions": self.num_partitions,
            "collectives": [c.to_json() for c in self.collectives],
            "by_kind": [asdict(k) for k in self.by_kind()],
            "totals": {"payload_bytes": self.payload_bytes, "ring_bytes": self.ring_bytes,
                       "tree_bytes": self.tree_bytes, "count": sum(c.count for c in self.collectives),
                       "instructions": len(self.collectives)},
        }


def _groups_attr(inst: Instruction) -> list[list[int]]:
    return _expanded(inst.attrs.get("replica_groups"), inst.attrs.get("device_ids"))


def _expanded(replica_groups: Any, device_ids: Any) -> list[list[int]]:
    if replica_groups is None:
        return []
    try:
        return replica_groups.expanded(device_ids)
    except ValueError:
        return []


def _groups_text(inst: Instruction, kind: str) -> str | None:
    """The replica groups (or a permute's source-target pairs) as the module writes them."""
    if kind == "collective-permute":
        pairs = inst.attrs.get("source_target_pairs")
        return None if pairs is None else "{" + ",".join(f"{{{p[0]},{p[1]}}}" for p in pairs) + "}"
    rg = inst.attrs.get("replica_groups")
    return None if rg is None else str(rg)


def _mode(inst: Instruction, kind: str) -> CollectiveOpGroupMode:
    has_channel = inst.attrs.get("channel_id") is not None
    use_global = bool(inst.attrs.get("use_global_device_ids", False)) if kind in _HAS_GLOBAL_IDS else None
    return group_mode(has_channel, use_global)


def device_grid(module: Module, ops: list[Instruction],
                 num_replicas: int | None, num_partitions: int | None) -> tuple[int, int]:
    """Replicas × partitions: given, else the header's, else what the replica groups imply.

    Old pmap dumps carry neither ``replica_count`` nor ``num_partitions``; their groups name
    every replica, so the largest id + 1 is the device count of that kind.
    """
    replicas = num_replicas or module.replica_count
    partitions = num_partitions or module.num_partitions
    if replicas and partitions:
        return replicas, partitions
    max_id: dict[CollectiveOpGroupMode, int] = {}
    for inst in ops:
        kind = COLLECTIVE_OPCODES[inst.opcode]
        try:
            mode = _mode(inst, kind)
        except Exception:
            continue
        ids = [i for g in _groups_attr(inst) for i in g]
        if kind == "collective-permute":
            ids = [i for pair in inst.attrs.get("source_target_pairs", ()) for i in pair]
        if ids:
            max_id[mode] = max(max_id.get(mode, 0), max(ids) + 1)
    if not replicas:
        replicas = max(max_id.get(CollectiveOpGroupMode.CROSS_REPLICA, 0),
                       max_id.get(CollectiveOpGroupMode.CROSS_REPLICA_AND_PARTITION, 0)) or 1
    if not partitions:
        total = max_id.get(CollectiveOpGroupMode.FLATTENED_ID, 0)
        partitions = max(max_id.get(CollectiveOpGroupMode.CROSS_PARTITION, 0),
                         total // replicas if total else 0) or 1
    return replicas, partitions


def group_summary(inst: Instruction, kind: str, replicas: int, partitions: int) -> tuple[str, int, int]:
    """(group mode, group size, number of groups) of one collective."""
    if kind == "collective-permute":
        pairs = inst.attrs.get("source_target_pairs", ())
        devices = {i for pair in pairs for i in pair}
        mode = _mode(inst, kind)
        return mode.value, len(devices), 1 if devices else 0
    return _groups_summary(_mode(inst, kind), inst.attrs.get("replica_groups"), inst.attrs.get("device_ids"),
                           replicas, partitions)


# Kept per distinct spelling: the parser shares one (frozen) attribute per distinct text, and an
# LLM step has thousands of collectives over a few groupings (16,470 over 4 at ten times Llama
# 3.1 8B), each asked by the collectives analysis and again by the time estimate.
@functools.lru_cache(maxsize=1024)
def _groups_summary(mode: CollectiveOpGroupMode, replica_groups: Any, device_ids: Any, replicas: int,
                    partitions: int) -> tuple[str, int, int]:
    written = _expanded(replica_groups, device_ids)
    try:
        groups = participant_groups(mode, written, replicas, partitions, must_cover=False)
    except Exception:
        # Groups that do not fit the grid we were given: report them as written.
        return mode.value, max((len(g) for g in written), default=replicas), max(1, len(written))
    return mode.value, max((len(g) for g in groups), default=1), len(groups)


@without_cyclic_gc
def analyze_collectives(module: Module, num_replicas: int | None = None,
                        num_partitions: int | None = None) -> CollectivesReport:
    """Every collective of ``module`` with its groups and bytes per device.

    ``num_replicas``/``num_partitions`` default to the module header, or when the header does
    not say (old pmap dumps), to what the replica groups imply.
    """
    found = [(i, c) for i in module.instructions() if (c := as_collective(i)) is not None]
    replicas, partitions = device_grid(module, [c for _, c in found], num_replicas, num_partitions)
    counts = execution_counts(module)
    out: list[CollectiveOp] = []
    for original, inst in found:
        kind = COLLECTIVE_OPCODES[inst.opcode]
        f = FORMULAS[kind]
        mode, size, n_groups = group_summary(inst, kind, replicas, partitions)
        payload = collective_output_bytes(inst) if f.payload == "output" else collective_operand_bytes(inst)
        md = inst.metadata
        out.append(CollectiveOp(
            name=inst.name, opcode=inst.opcode.text if original is inst else f"{inst.opcode.text}-start", kind=kind,
            computation=inst.computation.name if inst.computation else "?",
            group_mode=mode, group_size=size, num_groups=n_groups,
            payload_bytes=payload, output_bytes=collective_output_bytes(inst),
            ring_bytes=f.ring(size, payload), tree_bytes=f.tree(size, payload),
            ring_steps=f.ring_steps(size) if size > 1 else 0,
            tree_steps=f.tree_steps(size) if size > 1 else 0,
            count=counts.get(inst.computation, 1) if inst.computation is not None else 1,
            channel_id=inst.attrs.get("channel_id"),
            op_name=md.op_name if md is not None else None,
            replica_groups=_groups_text(inst, kind),
        ))
    return CollectivesReport(tuple(out), replicas, partitions)
