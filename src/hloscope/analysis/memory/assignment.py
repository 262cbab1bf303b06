"""Buffer assignment as XLA makes it: which allocation each buffer lives in, and in what order.

``assign_buffers`` follows ``BufferAssigner::CreateAssignment``: the buffers of the sequential
computations (entry, loop bodies, branches) are sorted by size (largest first), live-out before
not, then position (Note [Tuple temps and combined temp allocations]), and for each buffer:

* a constant gets its own read-only ``constant`` allocation (XLA:CPU allocates constants);
* an entry parameter gets a ``parameter`` allocation (reusable only when aliased to an output);
* a buffer of an embedded (``to_apply``) computation gets a ``thread-local`` allocation;
* a buffer holding a tuple gets a tuple allocation of its own, never shared;
* otherwise it may reuse an allocation of one of its operands, or the smallest live-out
  allocation that fits, when no live range interferes (see Note [Sharing at a touch point]);
* a live-out buffer that found none gets a new ``maybe-live-out`` allocation;
* every other buffer is a temporary, placed by the heap simulator (``heap.py``, one
  whole-module simulation per memory space).

Then the thread-local computations' buffers are assigned the same way, and finally every
temporary allocation of a memory space is combined into one ``preallocated-temp`` block.

Note [Sharing at a touch point]
-------------------------------
Two closed live ranges that meet at one time ``t`` still overlap, unless the later value is
computed at ``t`` by a user of the earlier one that may write its output over that operand
(``sharing.can_share_operand``, XLA's ``CanShareOperandBufferWithUser``: same shape and layout,
then elementwise ops, loop fusions whose parameter feeds elementwise ops only, in-place ops;
never a copy)::

    a = exp(x)    [=====]          a ends at t, b starts at t, and b = tanh(a) reads a
    b = tanh(a)         [=====]    elementwise: b may overwrite a, so they share memory

The heap simulator applies the same rule (``ShareWith``) when the operand dies at ``t``. XLA
asks about the operand's *last position* (``TimeBound::end_position``), so a tuple element
last read through a get-tuple-element is judged as that instruction's whole output.

Note [Tuple temps and combined temp allocations]
------------------------------------------------
Measured on XLA:CPU dumps (jaxlib 0.10.2) and read in ``buffer_assignment.cc``: a temporary
buffer holding a tuple (a loop's state, a branch's result) is not heap-simulated; it gets an
allocation of its own (``AssignSingleHloBuffer``'s tuple case). ``CombineTempAllocations``
then lays every temporary allocation of a memory space end to end, each starting at the
previous end rounded up to 64 bytes. The order is not creation order: the allocations are
first split with ``std::partition`` (non-temporaries to the front), which swaps from both
ends and so reorders the temporaries::

    created:    out  param  T1  T2  const  param  const  HEAP
    partition:  out  param  const param const   T2   T1  HEAP    (T1 swapped with the last
                                                                  const, T2 with the param)
    combined:   T2 at 0, T1 at 64, HEAP at 128

Creation order therefore matters: sequential computations' buffers first (size, live-out,
then ``ComparePosition``: computations callers first, instructions in post order), then the
heap allocation of each memory space, then the thread-local computations' buffers.

The index that finds which allocations a buffer may join fast is in ``interference.py``
(Note [Finding interference fast] there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hloscope.analysis.memory.dataflow import Buffer, Dataflow, Value, instruction_post_order
from hloscope.analysis.memory.heap import CPU_ALIGNMENT, HeapResult, simulate_heap
from hloscope.analysis.memory.interference import Occupancy, ReuseIndex
from hloscope.analysis.memory.liveness import Liveness
from hloscope.analysis.memory.sharing import can_share_operand
from hloscope.ir import Opcode

if TYPE_CHECKING:
    from hloscope.ir import Computation, Instruction, Module, ShapeIndex

# The heap and sharing names are re-exported: callers imported them from here first.
__all__ = ["AllocationDraft", "HeapResult", "simulate_heap", "assign_buffers", "can_share_operand",
           "CPU_ALIGNMENT"]


@dataclass
class AllocationDraft:
    """An allocation while it is being built: its kind flags and (value, offset, size) list."""

    index: int
    size: int
    kind: str  # parameter / constant / thread-local / maybe-live-out / preallocated-temp
    color: int = 0
    parameter_number: int | None = None
    parameter_index: tuple[int, ...] = ()
    readonly: bool = False
    is_tuple: bool = False
    assigned: list[tuple[Value, int, int]] = field(default_factory=list)
    occupancy: Occupancy = field(default_factory=Occupancy, repr=False, compare=False)

    @property
    def accepts_reuse(self) -> bool:
        """Whether other buffers may ever join (XLA's ``MaybeAssignBuffer`` early exits)."""
        return not (self.readonly or self.is_tuple or self.kind in ("thread-local", "constant"))


# --- allocations -------------------------------------------------------------------------------
def _interferes(a: Value, b: Value, live: Liveness) -> bool:
    (s1, e1), (s2, e2) = live.ranges[a.id], live.ranges[b.id]
    if s1 > e2 or s2 > e1:
        return False
    if e1 == s2:
        return not _touch_share(b, a, live)
    if e2 == s1:
        return not _touch_share(a, b, live)
    return True


def _touch_share(user_value: Value, operand_value: Value, live: Liveness) -> bool:
    # See Note [Sharing at a touch point].
    # XLA asks about the operand's last position, not its definition: a tuple element read
    # through a get-tuple-element is that instruction's whole output (index {}).
    end_inst, end_index = live.end_position_of(operand_value)
    user = user_value.instruction
    if user.opcode is Opcode.COPY or not live.reads(user, end_inst):
        return False
    return can_share_operand(end_inst, end_index, user, user_value.index)


def assign_buffers(df: Dataflow, live: Liveness) -> tuple[list[AllocationDraft], dict[int, HeapResult]]:
    """Allocations for every buffer with memory, in XLA's final order (temps combined last).

    Returns the allocations and, per memory space, the heap simulator's result for the temps.
    See Note [Tuple temps and combined temp allocations] for the order things are created in.
    """
    entry = df.module.entry
    aliased = {(a.parameter_number, tuple(a.parameter_index)) for a in df.module.input_output_alias}
    buffers = [b for b in df.buffers if _needs_memory(b, live)]
    allocs: list[AllocationDraft] = []
    alloc_of: dict[int, AllocationDraft] = {}  # buffer id -> allocation
    # At most every live-out buffer and aliased parameter gets a reusable allocation.
    expected = sum(1 for b in buffers if b.live_out) + len(aliased)
    reusable: ReuseIndex[AllocationDraft] = ReuseIndex(live.schedule_end_time, expected)
    temps: list[Buffer] = []

    def new(buf: Buffer, kind: str, *, parameter_number: int | None = None, parameter_index: ShapeIndex = (),
            readonly: bool = False, is_tuple: bool = False) -> AllocationDraft:
        a = AllocationDraft(len(allocs), buf.size, kind, buf.color, parameter_number, parameter_index,
                            readonly, is_tuple)
        allocs.append(a)
        _add(a, buf, live)
        alloc_of[buf.id] = a
        return a

    def assign(buf: Buffer) -> None:
        values = buf.values
        if len(values) == 1:  # most buffers (every one of an LLM step without loops): no lists
            inst = values[0].instruction
            constant = inst.opcode is Opcode.CONSTANT
            params = values if inst.opcode is Opcode.PARAMETER and inst.computation is entry else ()
        else:
            constant = any(v.instruction.opcode is Opcode.CONSTANT for v in values)
            params = [v for v in values if v.instruction.opcode is Opcode.PARAMETER
                      and v.instruction.computation is entry]
        if constant:
            new(buf, "constant", readonly=True)
            return
        if params:
            p = params[0]
            num = p.instruction.attrs["parameter_number"]
            has_alias = (num, p.index) in aliased
            a = new(buf, "parameter", parameter_number=num, parameter_index=p.index, readonly=not has_alias)
            if has_alias:
                reusable.register(a)
            return
        if buf.values[0].embedded:
            new(buf, "thread-local")
            return
        if _first_is_tuple(buf):
            # Never reused and never heap-simulated (Note [Tuple temps and combined temp allocations]).
            new(buf, "maybe-live-out" if buf.live_out else "temp", is_tuple=True)
            return
        if _try_reuse(buf, alloc_of, reusable, df, live):
            return
        if not buf.live_out:
            temps.append(buf)
            return
        reusable.register(new(buf, "maybe-live-out"))

    # XLA assigns the sequential computations' buffers, then runs the heap simulator, and only
    # then assigns the thread-local computations' buffers; the order of creation decides how the
    # temp allocations are combined.
    sequential = [b for b in buffers if not b.values[0].embedded]
    thread_local = [b for b in buffers if b.values[0].embedded]
    callers_first = _callers_first(df.module)
    for buf in _assignment_order(sequential, df, df.sequential, callers_first):
        assign(buf)
    heaps: dict[int, HeapResult] = {}
    by_color: dict[int, list[Value]] = {}
    for buf in temps:
        by_color.setdefault(buf.color, []).extend(buf.values)
    # Tuple temps keep their own place in the combined block whatever the packing, so they
    # count in full towards the block's lower bound.
    dedicated: dict[int, int] = {}
    for a in allocs:
        if a.kind == "temp":
            dedicated[a.color] = dedicated.get(a.color, 0) + a.size
    for color in sorted(by_color.keys() | dedicated.keys()):
        values = by_color.get(color, [])
        sizes = {v.id: df.buffer_of[v.id].size for v in values}
        result = simulate_heap(values, df, live, sizes) if values else HeapResult({}, 0, 0, "none")
        heaps[color] = HeapResult(result.offsets, result.heap_size,
                                  result.lower_bound + dedicated.get(color, 0), result.algorithm,
                                  result.trace_peak)
        if not values:
            continue
        a = AllocationDraft(len(allocs), result.heap_size, "preallocated-temp", color)
        for v in sorted(values, key=lambda v: v.id):
            a.assigned.append((v, result.offsets.get(v.id, 0), sizes[v.id]))
        allocs.append(a)
    local_computations = [c for c in df.embedded if not c.is_fusion_computation]
    for buf in _assignment_order(thread_local, df, local_computations, callers_first):
        assign(buf)
    return _combine_temp_allocations(allocs), heaps


def _first_is_tuple(buf: Buffer) -> bool:
    # XLA walks the buffer's values in order: a tuple-shaped one ends the walk with a tuple
    # allocation, a top-level array one first tries its operands' allocations.
    for v in buf.values:
        if v.shape.is_tuple:
            return True
        if not v.index:
            return False
    return False


def _assignment_order(buffers: list[Buffer], df: Dataflow, computations: list[Computation],
                      callers_first: list[Computation]) -> list[Buffer]:
    """XLA's ``kBiggestFirst`` order: size, live-out first, post-order position, buffer id."""
    pos = _post_order_positions(computations, callers_first, df.post_order)
    far = len(pos)

    def first_position(b: Buffer) -> int:
        values = b.values
        if len(values) == 1:  # most buffers: no generator
            return pos.get(values[0].instruction, far)
        return min(pos.get(v.instruction, far) for v in values)

    return sorted(buffers, key=lambda b: (-b.size, not b.live_out, first_position(b), b.id))


def _callers_first(module: Module) -> list[Computation]:
    """The computations reachable from the entry, callers first: the call graph's post order
    from the entry, reversed (XLA's ``ComparePosition`` order of computations)."""
    graph_post: list[Computation] = []
    seen: set[Computation] = {module.entry}
    stack: list[tuple[Computation, int]] = [(module.entry, 0)]
    callees_of: dict[Computation, list[Computation]] = {}
    while stack:
        comp, k = stack.pop()
        callees = callees_of.get(comp)
        if callees is None:
            callees = callees_of[comp] = [c for i in comp.instructions for c in _callees(i)]
        while k < len(callees) and callees[k] in seen:
            k += 1
        if k == len(callees):
            graph_post.append(comp)
            continue
        stack.append((comp, k + 1))
        seen.add(callees[k])
        stack.append((callees[k], 0))
    graph_post.reverse()
    return graph_post


def _post_order_positions(computations: list[Computation], callers_first: list[Computation],
                          post_orders: dict[Computation, list[Instruction]]) -> dict[Instruction, int]:
    """Each instruction's place in XLA's ``ComparePosition`` order over ``computations``.

    Computations come callers first (``_callers_first``), and each lists its instructions in
    ``MakeInstructionPostOrder`` order: a depth-first walk from every instruction without users
    or control successors, first operand first.
    """
    wanted = set(computations)
    pos: dict[Instruction, int] = {}
    for comp in callers_first:
        if comp in wanted:
            order = post_orders.get(comp)
            for inst in order if order is not None else instruction_post_order(comp):
                pos[inst] = len(pos)
    return pos


def _callees(inst: Instruction) -> list[Computation]:
    if inst.opcode is Opcode.WHILE:
        return [inst.attrs["body"], inst.attrs["condition"]]  # XLA's order
    return inst.called_computations


def _combine_temp_allocations(allocs: list[AllocationDraft]) -> list[AllocationDraft]:
    """XLA's ``CombineTempAllocations``: one preallocated-temp allocation per memory space.

    See Note [Tuple temps and combined temp allocations].
    """
    def is_temp(a: AllocationDraft) -> bool:
        return a.kind in ("temp", "preallocated-temp")

    ordered, first_temp = _unstable_partition(allocs, lambda a: not is_temp(a))
    combined: dict[int, AllocationDraft] = {}
    for a in ordered[first_temp:]:
        into = combined.get(a.color)
        if into is None:
            combined[a.color] = AllocationDraft(0, a.size, "preallocated-temp", a.color, is_tuple=a.is_tuple,
                                                assigned=list(a.assigned))
            continue
        base = -(-into.size // CPU_ALIGNMENT) * CPU_ALIGNMENT
        into.size = base + a.size
        into.assigned.extend((v, base + off, size) for v, off, size in a.assigned)
    out = ordered[:first_temp] + list(combined.values())
    for k, a in enumerate(out):
        a.index = k
    return out


def _unstable_partition(items: list[AllocationDraft],
                        front: Callable[[AllocationDraft], bool]) -> tuple[list[AllocationDraft], int]:
    """``std::partition`` as libstdc++ and libc++ run it on bidirectional iterators (swaps from
    both ends), returning the reordered list and where the second group starts."""
    a = list(items)
    first, last = 0, len(a)
    while True:
        while first != last and front(a[first]):
            first += 1
        if first == last:
            return a, first
        last -= 1
        while first != last and not front(a[last]):
            last -= 1
        if first == last:
            return a, first
        a[first], a[last] = a[last], a[first]
        first += 1


def _needs_memory(buf: Buffer, live: Liveness) -> bool:
    # Fusion internals are not values at all; embedded values have no range but need memory.
    values = buf.values
    if len(values) == 1:  # most buffers: no generator
        return values[0].id in live.ranges or values[0].embedded
    return any(v.id in live.ranges or v.embedded for v in values)


def _add(a: AllocationDraft, buf: Buffer, live: Liveness) -> None:
    for v in buf.values:
        a.assigned.append((v, 0, v.size))
        a.occupancy.add(v, live.ranges)


def _try_reuse(buf: Buffer, alloc_of: dict[int, AllocationDraft], reusable: ReuseIndex[AllocationDraft],
               df: Dataflow, live: Liveness) -> bool:
    """XLA's ``AssignSingleHloBuffer`` reuse step: operands' allocations, then smallest first."""
    seen: set[int] = set()
    buffer_of = df.buffer_of
    for v in buf.values:
        if v.index or v.shape.is_tuple:
            continue
        for operand in v.instruction.operands:
            for ov in df.top_values(operand):
                a = alloc_of.get(buffer_of[ov.id].id)
                if a is None or a.index in seen:
                    continue
                seen.add(a.index)
                if _maybe_assign(a, buf, live, df, alloc_of):
                    _commit(a, buf, alloc_of, live, reusable)
                    return True
    # Only allocations that may take the buffer and hold no value surely interfering with one
    # of its values are tried (Note [Finding interference fast]); a buffer with a value without
    # a live range fits no allocation that holds anything (``_maybe_assign``).
    size, color, exact = buf.size, buf.color, buf.live_out
    candidates = reusable.exact.get((color, size)) if exact else reusable.accepting.get(color)
    ranges = []
    for v in buf.values:
        r = live.ranges.get(v.id)
        if r is None:
            return False
        ranges.append(r)
    allocations = reusable.allocations
    for bit in reusable.free(candidates, ranges):
        a = allocations[bit]
        if a.size < size or a.color != color or (exact and a.size != size) or a.index in seen:
            continue
        if _maybe_assign(a, buf, live, df, alloc_of):
            _commit(a, buf, alloc_of, live, reusable)
            return True
    return False


def _commit(a: AllocationDraft, buf: Buffer, alloc_of: dict[int, AllocationDraft], live: Liveness,
            reusable: ReuseIndex[AllocationDraft]) -> None:
    _add(a, buf, live)
    alloc_of[buf.id] = a
    if a.index in reusable.bit_of:
        for v in buf.values:
            r = live.ranges.get(v.id)
            if r is not None:
                reusable.cover(a, *r)


def _maybe_assign(a: AllocationDraft, buf: Buffer, live: Liveness, df: Dataflow,
                  alloc_of: dict[int, AllocationDraft]) -> bool:
    """XLA's ``MaybeAssignBuffer``: may ``buf`` join ``a`` without interfering with its values?"""
    if a.color != buf.color or buf.size > a.size or not a.accepts_reuse:
        return False
    if buf.live_out and a.size != buf.size:
        return False
    occ = a.occupancy
    if not a.assigned:
        return True
    if occ.unranged:
        return False
    for v in buf.values:
        r = live.ranges.get(v.id)
        if r is None:
            return False
        inst = v.instruction
        if inst.opcode is Opcode.COPY and _at_an_operand(a, inst, df, alloc_of):
            return False
        for assigned in occ.meeting(*r):
            if _interferes(v, assigned, live):
                return False
    return True


def _at_an_operand(a: AllocationDraft, copy: Instruction, df: Dataflow, alloc_of: dict[int, AllocationDraft]) -> bool:
    """Whether a value of ``a`` appears at one of ``copy``'s operands: a copy may not land in the
    allocation of its own operand. (Asked of the few copies instead of keeping every
    allocation's positions.)"""
    for operand in copy.operands:
        for values in df.value_sets(operand).values():
            for v in values:
                if alloc_of.get(df.buffer_of[v.id].id) is a:
                    return True
    return False
