"""Liveness: the flattened schedule, each value's live range, and the live-range peak.

This follows XLA's ``HloLiveRange`` in module-scoped mode: the entry schedule is flattened,
with a while's condition then body, and a call's or conditional's computations, spliced in just
before the instruction that calls them. Times are positions in that flat sequence, and
``schedule_end_time`` is its length (see Note [Live ranges are closed intervals] in
``ir/buffer_assignment.py``).

Note [Live range rules]
-----------------------
* A value starts at its defining instruction; parameters start where their computation starts.
* It ends at its last use, or at its last position; a position at a computation's root counts
  as the end of that computation (the entry root: ``schedule_end_time``).
* A use by a while counts at the body parameter (the init value dies as the body starts); uses
  by a call are ignored (the callee's own uses count).
* Entry parameters not aliased to an output live the whole program.
* Values of one buffer are then chained (``NormalizeAliasedBuffers``): sorted by (start, end),
  each range is cut at the next one's start and the next one inherits the larger end::

      tuple.2{2}      [===]                    the init dies at the condition parameter
      cond.param{2}       [===]
      body.param{2}           [=========]      ... which hands over to the body
      while{2}                          [====] and the body root's value to the result

Note [The live-range peak]
--------------------------
``ComputePeakMemoryMoment`` sweeps (time, is_end, value id) events, a value starting at
``start`` and ending at ``end + 1``, and charges each value the byte size of its *defining
instruction's whole shape* (a tuple element is charged the tuple's pointer table). Starts sort
before ends at the same time, so a value ending at ``t - 1`` still counts while the values
starting at ``t`` are added. The list printed at the peak time uses each value's own size. We do
the same, so our peak time and list equal the dump's ``Live ranges at N (peak)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hloscope.analysis.memory.dataflow import FORWARDING, Dataflow, Value
from hloscope.ir import Opcode

if TYPE_CHECKING:
    from hloscope.ir import Computation, Instruction, Module, ShapeIndex

__all__ = ["Liveness", "flatten_schedule", "compute_liveness", "last_reads", "peak_moment", "SCHEDULES",
           "min_memory_order"]

SCHEDULES = ("module", "xla", "min-memory")


@dataclass
class Liveness:
    """Flattened schedule and live ranges (value id -> (start, end), both included)."""

    sequence: list[Instruction]
    time_of: dict[Instruction, int]
    spans: dict[Computation, tuple[int, int]]
    ranges: dict[int, tuple[int, int]]
    # value id -> its last position (instruction, shape index), XLA's TimeBound::end_position,
    # where that is not its definition (read it through ``end_position_of``); a value meeting
    # another at one time may share its memory through it (assignment.py).
    end_position: dict[int, tuple[Instruction, ShapeIndex]]
    # instruction -> the set of its operands, built on first ask for a wide one (``reads``: a
    # concatenate or tuple asked once per operand would cost O(n) per ask as a list).
    operand_sets: dict[Instruction, frozenset[Instruction]] = field(default_factory=dict, repr=False, compare=False)

    def reads(self, user: Instruction, operand: Instruction) -> bool:
        """Whether ``operand`` is one of ``user``'s operands. A short operand list is scanned;
        a wide one is made a set once (a set per user cost more memory than the search)."""
        operands = user.operands
        if len(operands) <= 16:
            return operand in operands
        found = self.operand_sets.get(user)
        if found is None:
            found = self.operand_sets[user] = frozenset(operands)
        return operand in found

    def end_position_of(self, value: Value) -> tuple[Instruction, ShapeIndex]:
        """``value``'s last position in the schedule (XLA's ``TimeBound::end_position``)."""
        return self.end_position.get(value.id) or (value.instruction, value.index)

    @property
    def schedule_end_time(self) -> int:
        return len(self.sequence)


def flatten_schedule(module: Module, order: dict[Computation, list[Instruction]]
                     ) -> tuple[list[Instruction], dict[Instruction, int], dict[Computation, tuple[int, int]]]:
    """The flat instruction sequence, each instruction's time, and each computation's span."""
    seq: list[Instruction] = []
    time_of: dict[Instruction, int] = {}
    spans: dict[Computation, tuple[int, int]] = {}

    def visit(comp: Computation) -> None:
        if comp in spans:
            return
        start = len(seq)
        spans[comp] = (start, start)  # guards against recursion
        for inst in order[comp]:
            op = inst.opcode
            if op is Opcode.WHILE:
                visit(inst.attrs["condition"])
                visit(inst.attrs["body"])
            elif op in (Opcode.CALL, Opcode.CONDITIONAL):
                for callee in inst.called_computations:
                    visit(callee)
            time_of[inst] = len(seq)
            seq.append(inst)
        spans[comp] = (start, len(seq))

    visit(module.entry)
    return seq, time_of, spans


def compute_liveness(df: Dataflow, order: dict[Computation, list[Instruction]]) -> Liveness:
    """Live ranges of every scheduled value (see Note [Live range rules])."""
    module = df.module
    seq, time_of, spans = flatten_schedule(module, order)
    end_time = len(seq)
    entry = module.entry
    aliased = {(a.parameter_number, tuple(a.parameter_index)) for a in module.input_output_alias}
    ranges: dict[int, tuple[int, int]] = {}
    end_position: dict[int, tuple[Instruction, ShapeIndex]] = {}
    last_read = last_reads(df, time_of, spans)
    for v in df.values:
        inst = v.instruction
        if inst not in time_of:
            continue
        comp = inst.computation
        assert comp is not None  # it is in the flattened schedule, so in a computation
        t = time_of[inst]
        start = spans[comp][0] if inst.opcode is Opcode.PARAMETER else t
        end = spans[comp][1] if inst is comp.root else t
        last = None  # the defining position
        others = v.other_positions if v.defined_here else v.other_positions[1:]
        for p, p_index in others:
            pc = p.computation
            assert pc is not None  # values appear only at instructions of computations
            if p is pc.root:
                if pc not in spans:
                    continue
                pt = spans[pc][1]
            elif p in time_of:
                pt = time_of[p]
            else:
                continue
            if pt > end:
                end, last = pt, (p, p_index)
        if inst.opcode is Opcode.PARAMETER and comp is entry and (
                inst.attrs["parameter_number"], v.index) not in aliased:
            end = end_time
        elif last_read[v.id] > end:
            end = last_read[v.id]
        ranges[v.id] = (start, end)
        if last is not None:
            end_position[v.id] = last
    _normalize_aliased(df, ranges)
    return Liveness(seq, time_of, spans, ranges, end_position)


def last_reads(df: Dataflow, time_of: dict[Instruction, int], spans: dict[Computation, tuple[int, int]]) -> list[int]:
    """Per value id, the time of the last instruction that reads it (-1: none), by the use rules
    of Note [Live range rules], in one pass over the instructions: who reads what as in
    ``Dataflow.uses``, which would make every use a tuple (Note [Lean values] in dataflow.py)."""
    last = [-1] * len(df.values)
    sets = df.sets
    for inst in sets:
        op = inst.opcode
        if op in FORWARDING:
            continue
        if op is Opcode.CALL and inst.attrs["to_apply"] in spans:
            continue  # the callee's own uses count
        reader = inst
        if op is Opcode.WHILE and inst.attrs["body"] in spans:
            reader = inst.attrs["body"].parameters[0]
        t = time_of.get(reader)
        if t is None:
            continue
        if op is Opcode.GET_TUPLE_ELEMENT:  # it reads only the tuple's own value
            for v in df.value_set(inst.operands[0]):
                if t > last[v.id]:
                    last[v.id] = t
            continue
        for operand in inst.operands:
            entry = sets.get(operand)
            if entry is None:
                continue
            if isinstance(entry, Value):
                if t > last[entry.id]:
                    last[entry.id] = t
                continue
            for vs in entry.values():
                for v in vs:
                    if t > last[v.id]:
                        last[v.id] = t
    return last


def _normalize_aliased(df: Dataflow, ranges: dict[int, tuple[int, int]]) -> None:
    for buf in df.buffers:
        if len(buf.values) < 2:
            continue
        chain = sorted((ranges[v.id][0], ranges[v.id][1], v.id) for v in buf.values if v.id in ranges)
        cur = [list(c) for c in chain]
        for a, b in zip(cur, cur[1:]):
            b[1] = max(a[1], b[1])
            a[1] = min(a[1], b[0])
        for s, e, vid in cur:
            ranges[vid] = (s, e)


def peak_moment(df: Dataflow, live: Liveness) -> tuple[int, list[Value]]:
    """XLA's live-range peak: the time and the values live then, biggest first.

    See Note [The live-range peak] for how XLA charges values and breaks ties.
    """
    events: list[tuple[int, bool, int, int]] = []
    for v in df.values:
        r = live.ranges.get(v.id)
        if r is None:
            continue
        size = v.instruction.shape.byte_size()
        events.append((r[0], False, v.id, size))
        events.append((r[1] + 1, True, v.id, size))
    events.sort()
    usage = peak = 0
    peak_time = 0
    for time, is_end, _, size in events:
        usage += -size if is_end else size
        if usage > peak:
            peak, peak_time = usage, time
    at = [v for v in df.values if v.id in live.ranges
          and live.ranges[v.id][0] <= peak_time <= live.ranges[v.id][1]]
    at.sort(key=lambda v: (-v.size, v.name, v.index))
    return peak_time, at


def min_memory_order(comp: Computation) -> list[Instruction]:
    """A greedy list schedule of ``comp`` that keeps live bytes low.

    Among the ready instructions it picks the one whose issue frees the most bytes net
    (operands whose last unscheduled user it is, minus its own output), ties broken by the
    written order. Parameters come first, as XLA's schedulers place them.
    """
    insts = list(comp.instructions)
    pos = {inst: i for i, inst in enumerate(insts)}
    users: dict[Instruction, list[Instruction]] = {i: [] for i in insts}
    pending: dict[Instruction, int] = {}
    for inst in insts:
        preds = set(inst.operands) | set(inst.attrs.get("control-predecessors", []))
        preds = {p for p in preds if p in pos}
        pending[inst] = len(preds)
        for p in preds:
            users[p].append(inst)
    remaining_users = {i: len(set(u for u in users[i] if i in u.operands)) for i in insts}
    ready = [i for i in insts if pending[i] == 0]
    out: list[Instruction] = []
    while ready:
        def gain(inst: Instruction) -> tuple[int, int, int]:
            freed = sum(o.shape.byte_size() for o in set(inst.operands)
                        if remaining_users.get(o) == 1 and o.opcode is not Opcode.PARAMETER)
            is_param = 0 if inst.opcode is Opcode.PARAMETER else 1
            return (is_param, -(freed - inst.shape.byte_size()), pos[inst])
        best = min(ready, key=gain)
        ready.remove(best)
        out.append(best)
        for o in set(best.operands):
            if o in remaining_users:
                remaining_users[o] -= 1
        for u in users[best]:
            pending[u] -= 1
            if pending[u] == 0:
                ready.append(u)
    return out
