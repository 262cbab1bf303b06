"""Buffer assignment as XLA makes it: allocations, the heap simulator, and the lower bound.

``assign_buffers`` follows ``BufferAssigner::AssignBuffersForComputations``: buffers sorted by
size (largest first), live-out before not, then definition order, and for each buffer:

* a constant gets its own read-only ``constant`` allocation (XLA:CPU allocates constants);
* an entry parameter gets a ``parameter`` allocation (reusable only when aliased to an output);
* a buffer of an embedded (``to_apply``) computation gets a ``thread-local`` allocation;
* otherwise it may reuse an allocation of one of its operands, or the smallest live-out
  allocation that fits, when no live range interferes (see Note [Sharing at a touch point]);
* a live-out buffer that found none gets a new ``maybe-live-out`` allocation;
* every other buffer is a temporary, packed later by the heap simulator into one
  ``preallocated-temp`` allocation per memory space (XLA:CPU runs one whole-module simulation).

The heap simulator is XLA's choice of the better of two ``GlobalDecreasingSizeBestFitHeap``
runs (spatial: by size then duration; temporal: by duration then size), best fit, offsets
aligned to 64 bytes (XLA:CPU's minimum alignment).

Note [Sharing at a touch point]
-------------------------------
Two closed live ranges that meet at one time ``t`` still overlap, unless the later value is
computed at ``t`` by a user of the earlier one that may write its output over that operand
(``CanShareOperandBufferWithUser``: elementwise ops, loop fusions whose parameter reaches the
root through elementwise ops only, in-place ops; never a copy)::

    a = exp(x)    [=====]          a ends at t, b starts at t, and b = tanh(a) reads a
    b = tanh(a)         [=====]    elementwise: b may overwrite a, so they share memory

The heap simulator applies the same rule (``ShareWith``) when the operand dies at ``t``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.dataflow import ELEMENTWISE_FAMILIES, Buffer, Dataflow, Value, _in_place_pairs
from hloscope.analysis.liveness import Liveness
from hloscope.ir import Opcode

__all__ = ["AllocationDraft", "HeapResult", "simulate_heap", "assign_buffers", "can_share_operand",
           "CPU_ALIGNMENT"]

CPU_ALIGNMENT = 64


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
    assigned: list[tuple[Value, int, int]] | None = None

    def __post_init__(self) -> None:
        if self.assigned is None:
            self.assigned = []


@dataclass(frozen=True)
class HeapResult:
    """Offsets the heap simulator chose (value id -> offset), its size and the no-gap bound."""

    offsets: dict[int, int]
    heap_size: int
    lower_bound: int
    algorithm: str


# --- can an output overwrite an operand? -------------------------------------------------------
def _elementwise(inst: object) -> bool:
    op = inst.opcode  # type: ignore[attr-defined]
    return op.value.family in ELEMENTWISE_FAMILIES or op in (Opcode.CLAMP, Opcode.SELECT)


def _transitively_elementwise(param: object, root: object) -> bool:
    comp = param.computation  # type: ignore[attr-defined]
    stack, seen = [param], set()
    while stack:
        inst = stack.pop()
        if inst is root:
            continue
        users = comp.users(inst)
        if not users:
            return False
        for u in users:
            if u in seen:
                continue
            seen.add(u)
            if not (_elementwise(u) or u.opcode in (Opcode.TUPLE, Opcode.BITCAST)):
                return False
            stack.append(u)
    return True


def can_share_operand(operand: object, operand_index: tuple[int, ...], user: object,
                      user_index: tuple[int, ...]) -> bool:
    """XLA's ``CanShareOperandBufferWithUser`` for the cases XLA:CPU meets."""
    from hloscope.ir.shape import subshape

    try:
        a = subshape(operand.shape, operand_index)  # type: ignore[attr-defined]
        b = subshape(user.shape, user_index)  # type: ignore[attr-defined]
    except IndexError:
        return False
    if a.is_tuple or b.is_tuple or a.element_type != b.element_type or a.byte_size() != b.byte_size():
        return False
    operands = user.operands  # type: ignore[attr-defined]
    for num, op_idx, out_idx in _in_place_pairs(user):
        if out_idx == user_index and num < len(operands) and operands[num] is operand and op_idx == operand_index:
            return True
    if a.dimensions != b.dimensions or a.layout != b.layout:
        if user.opcode is not Opcode.FUSION:  # type: ignore[attr-defined]
            return False
    if user.opcode is Opcode.FUSION:  # type: ignore[attr-defined]
        if user.attrs.get("kind") not in ("kLoop", "kInput", "kOutput"):  # type: ignore[attr-defined]
            return False
        comp = user.attrs["calls"]  # type: ignore[attr-defined]
        root = comp.root
        if user_index:
            if root.opcode is not Opcode.TUPLE:
                return False
            root = root.operands[user_index[0]]
        nums = [i for i, o in enumerate(operands) if o is operand]
        return len(nums) == 1 and _transitively_elementwise(comp.parameters[nums[0]], root)
    if user.opcode in (Opcode.WHILE, Opcode.CONDITIONAL):  # type: ignore[attr-defined]
        return True
    return _elementwise(user) and sum(o is operand for o in operands) == 1


# --- the heap simulator ------------------------------------------------------------------------
def simulate_heap(values: list[Value], df: Dataflow, live: Liveness, sizes: dict[int, int],
                  alignment: int = CPU_ALIGNMENT) -> HeapResult:
    """Pack ``values`` (one memory space) as XLA's whole-module heap simulation does."""
    ids = {v.id for v in values}
    by_start: dict[int, list[Value]] = {}
    by_end: dict[int, list[Value]] = {}
    for v in sorted(values, key=lambda v: (*live.ranges[v.id], v.id)):
        s, e = live.ranges[v.id]
        by_start.setdefault(s, []).append(v)
        by_end.setdefault(e, []).append(v)
    # Replay alloc/share/free events; interval times count events, as XLA's heap does.
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    coloc: dict[int, list[int]] = {}
    canonical: dict[int, int] = {}
    first_in_buffer: dict[int, int] = {}
    clock = 0
    for t in range(live.schedule_end_time + 1):
        freeing = by_end.get(t, [])
        for v in by_start.get(t, []):
            buf = df.buffer_of[v.id]
            target = first_in_buffer.get(buf.id)
            if target is None and len(buf.values) == 1:
                target = _share_candidate(v, df, live, freeing, ids, t)
                if target is not None:
                    end[target] = clock
                    clock += 1
                    freeing.remove(next(x for x in freeing if x.id == target))
            if target is not None:
                root = canonical.get(target, target)
                coloc.setdefault(root, []).append(v.id)
                canonical[v.id] = root
            else:
                first_in_buffer[buf.id] = v.id
            start[v.id] = clock
            clock += 1
        for v in freeing:
            end[v.id] = clock
            clock += 1
    roots = [v.id for v in values if v.id not in canonical and v.id in start]
    best: HeapResult | None = None
    for name in ("spatial", "temporal"):
        offsets, heap = _best_fit(roots, start, end, coloc, sizes, name, alignment)
        if best is None or heap < best.heap_size:
            best = HeapResult(offsets, heap, 0, name)
    assert best is not None
    return HeapResult(best.offsets, best.heap_size, _lower_bound(values, live, sizes, df), best.algorithm)


def _share_candidate(v: Value, df: Dataflow, live: Liveness, freeing: list[Value], ids: set[int],
                     t: int) -> int | None:
    inst = v.instruction
    if inst.opcode is Opcode.COPY:  # type: ignore[attr-defined]
        return None
    for operand in inst.operands:  # type: ignore[attr-defined]
        for ov in df.value_set(operand):
            if ov.id not in ids or len(df.buffer_of[ov.id].values) > 1 or live.ranges[ov.id][1] != t:
                continue
            if not any(f is ov for f in freeing):
                continue
            if ov.instruction in inst.operands and can_share_operand(ov.instruction, ov.index, inst, v.index):  # type: ignore[attr-defined]
                return ov.id
    return None


def _best_fit(roots: list[int], start: dict[int, int], end: dict[int, int], coloc: dict[int, list[int]],
              sizes: dict[int, int], kind: str, alignment: int) -> tuple[dict[int, int], int]:
    def span(r: int) -> tuple[int, int]:
        members = [r, *coloc.get(r, [])]
        return min(start[m] for m in members), max(end.get(m, start[m]) for m in members)

    spans = {r: span(r) for r in roots}
    if kind == "spatial":
        order = sorted(roots, key=lambda r: (-sizes[r], spans[r][0] - spans[r][1], r))
    else:
        order = sorted(roots, key=lambda r: (spans[r][0] - spans[r][1], -sizes[r], r))
    placed: list[tuple[int, int, int, int]] = []  # (start, end, offset, size)
    offsets: dict[int, int] = {}
    heap = 0
    for r in order:
        size = max(sizes[m] for m in [r, *coloc.get(r, [])])
        members = [r, *coloc.get(r, [])]
        # Chunks occupy whole alignment units; only the heap's end uses the exact size.
        # Chunks occupy whole alignment units; only the heap's end uses the exact size. A group of
        # colocated values is checked over its whole span (they are contiguous in time).
        lo_t, hi_t = spans[r]
        busy = sorted((o, o + -(-s // alignment) * alignment) for s0, e0, o, s in placed
                      if s0 <= hi_t and lo_t <= e0)
        best_off, best_len, cursor = None, None, 0
        for lo, hi in busy + [(1 << 62, 1 << 62)]:
            off = -(-cursor // alignment) * alignment
            if hi > cursor and lo > off and lo - off >= size:
                length = lo - cursor
                if best_len is None or length < best_len:
                    best_off, best_len = off, length
            cursor = max(cursor, hi)
        assert best_off is not None
        placed.append((lo_t, hi_t, best_off, size))
        for m in members:
            offsets[m] = best_off
        heap = max(heap, best_off + size)
    return offsets, heap


def _lower_bound(values: list[Value], live: Liveness, sizes: dict[int, int], df: Dataflow) -> int:
    """Most bytes of these values live at one logical time, each buffer counted once."""
    deltas: dict[int, int] = {}
    spans: dict[int, tuple[int, int, int]] = {}
    for v in values:
        b = df.buffer_of[v.id].id
        s, e = live.ranges[v.id]
        old = spans.get(b)
        spans[b] = (min(s, old[0]), max(e, old[1]), sizes[v.id]) if old else (s, e, sizes[v.id])
    for s, e, size in spans.values():
        deltas[s] = deltas.get(s, 0) + size
        deltas[e + 1] = deltas.get(e + 1, 0) - size
    cur = peak = 0
    for t in sorted(deltas):
        cur += deltas[t]
        peak = max(peak, cur)
    return peak


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
    end_inst = live.end_instruction[operand_value.id]
    user = user_value.instruction
    if user.opcode is Opcode.COPY or end_inst not in user.operands:  # type: ignore[attr-defined]
        return False
    return can_share_operand(end_inst, operand_value.index, user, user_value.index)


def assign_buffers(df: Dataflow, live: Liveness) -> tuple[list[AllocationDraft], dict[int, HeapResult]]:
    """Allocations for every buffer with memory, in XLA's order of creation.

    Returns the allocations and, per memory space, the heap simulator's result for the temps.
    """
    entry = df.module.entry  # type: ignore[attr-defined]
    aliased = {(a.parameter_number, tuple(a.parameter_index)) for a in df.module.input_output_alias}  # type: ignore[attr-defined]
    order_pos = {v.id: k for k, v in enumerate(df.values)}
    buffers = [b for b in df.buffers if _needs_memory(b, live)]
    buffers.sort(key=lambda b: (-b.size, not b.live_out, min(order_pos[v.id] for v in b.values)))
    allocs: list[AllocationDraft] = []
    alloc_of: dict[int, AllocationDraft] = {}  # buffer id -> allocation
    reusable: list[AllocationDraft] = []
    temps: list[Buffer] = []

    def new(buf: Buffer, kind: str, **kw: object) -> AllocationDraft:
        a = AllocationDraft(len(allocs), buf.size, kind, buf.color, **kw)  # type: ignore[arg-type]
        allocs.append(a)
        _add(a, buf)
        alloc_of[buf.id] = a
        return a

    for buf in buffers:
        defining = [v.instruction for v in buf.values]
        if any(i.opcode is Opcode.CONSTANT for i in defining):  # type: ignore[attr-defined]
            new(buf, "constant", readonly=True)
            continue
        params = [v for v in buf.values if v.instruction.opcode is Opcode.PARAMETER  # type: ignore[attr-defined]
                  and v.instruction.computation is entry]  # type: ignore[attr-defined]
        if params:
            p = params[0]
            num = p.instruction.attrs["parameter_number"]  # type: ignore[attr-defined]
            has_alias = (num, p.index) in aliased
            a = new(buf, "parameter", parameter_number=num, parameter_index=p.index, readonly=not has_alias)
            if has_alias:
                reusable.append(a)
            continue
        if buf.values[0].embedded:
            new(buf, "thread-local")
            continue
        if _try_reuse(buf, alloc_of, reusable, df, live):
            continue
        if not buf.live_out:
            temps.append(buf)
            continue
        reusable.append(new(buf, "maybe-live-out", is_tuple=buf.values[0].shape.is_tuple))  # type: ignore[attr-defined]
    heaps: dict[int, HeapResult] = {}
    by_color: dict[int, list[Value]] = {}
    for buf in temps:
        by_color.setdefault(buf.color, []).extend(buf.values)
    for color, values in sorted(by_color.items()):
        sizes = {v.id: df.buffer_of[v.id].size for v in values}
        result = simulate_heap(values, df, live, sizes)
        heaps[color] = result
        a = AllocationDraft(len(allocs), result.heap_size, "preallocated-temp", color)
        for v in sorted(values, key=lambda v: v.id):
            a.assigned.append((v, result.offsets.get(v.id, 0), sizes[v.id]))  # type: ignore[union-attr]
        allocs.append(a)
    return allocs, heaps


def _needs_memory(buf: Buffer, live: Liveness) -> bool:
    # Fusion internals are not values at all; embedded values have no range but need memory.
    return any(v.id in live.ranges or v.embedded for v in buf.values)


def _add(a: AllocationDraft, buf: Buffer) -> None:
    for v in buf.values:
        a.assigned.append((v, 0, v.size))  # type: ignore[union-attr]


def _try_reuse(buf: Buffer, alloc_of: dict[int, AllocationDraft], reusable: list[AllocationDraft],
               df: Dataflow, live: Liveness) -> bool:
    candidates: list[AllocationDraft] = []
    for v in buf.values:
        if v.index or v.shape.is_tuple:  # type: ignore[attr-defined]
            continue
        for operand in v.instruction.operands:  # type: ignore[attr-defined]
            for ov in df.value_set(operand):
                a = alloc_of.get(df.buffer_of[ov.id].id)
                if a is not None:
                    candidates.append(a)
    candidates.extend(reversed(reusable))
    seen: set[int] = set()
    for a in candidates:
        if a.index in seen:
            continue
        seen.add(a.index)
        if _maybe_assign(a, buf, live):
            _add(a, buf)
            alloc_of[buf.id] = a
            return True
    return False


def _maybe_assign(a: AllocationDraft, buf: Buffer, live: Liveness) -> bool:
    if a.color != buf.color or buf.size > a.size or a.readonly or a.kind in ("thread-local", "constant"):
        return False
    if a.is_tuple:
        return False
    for assigned, _, _ in a.assigned:  # type: ignore[union-attr]
        for v in buf.values:
            if v.id not in live.ranges or assigned.id not in live.ranges:
                return False
            if _interferes(v, assigned, live):
                return False
            if v.instruction.opcode is Opcode.COPY and any(  # type: ignore[attr-defined]
                    p in v.instruction.operands for p, _ in assigned.positions):  # type: ignore[attr-defined]
                return False
    if buf.live_out and a.size != buf.size:
        return False
    return True
