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

Note [Finding interference fast]
--------------------------------
XLA tries each buffer against every reusable allocation, smallest first, and each try compares
the buffer's values with every value the allocation already holds. Done literally that is
quadratic twice over (seed 003 at ten times its size took 21 s). Both factors are cut without
changing which allocation wins:

* Which allocations to try. ``_ReuseIndex`` keeps, as bitsets over the allocations in creation
  order, those a buffer may join at all (same colour, accepting reuse; for a live-out buffer
  also the same size) and two segment trees over time (Note [Doubled time]) that name the
  allocations holding a value that surely interferes with a live range. What is left is tried
  from the highest bit down, which is XLA's order (allocations are created largest first, so
  the last created is the smallest), and each try still runs the exact ``_maybe_assign``; a
  try fails only on a value meeting the buffer at one end of its range, so there are few.
* Each try. An allocation's values never overlap except at touch points, so sorted by
  (start, end) their ends are non-decreasing too, and the values meeting ``[s, e]`` are one
  slice, found by two bisections::

    starts  0   4   9   9  15          values meeting [8, 12]:
    ends    3   9   9  14  20          ends >= 8 from index 1, starts <= 12 up to index 3
                ^^^^^^^^^^              -> indices 1..3, then the exact touch-point rules

  ``_Occupancy`` checks the ordering on every insert and falls back to a scan if it ever breaks.

Note [Doubled time]
-------------------
Live ranges are closed, ``[s, e]``, and two of them that meet at one time may still share
memory (Note [Sharing at a touch point]). To tell "surely interferes" from "touches" with unit
ranges, time ``t`` becomes unit ``2t`` and the gap after it unit ``2t + 1``::

    time            3       4       5       6
    unit        5   6   7   8   9  10  11  12  13
    [4, 6]                  [===============]       closed units 8..12, open units 9..11
    [6, 6]                                 []       closed unit 12, no open units

Two ranges that overlap in more than one time, or where one holds a single time strictly
inside the other, surely interfere. That is exactly when the closed units of one meet the open
units of the other: ``closed`` marks each held value's closed units and is asked for the
buffer's open units; ``open`` marks each held value's open units and is asked for the closed
ones. A range that only touches one end of the buffer's range meets neither and goes to the
exact test.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from hloscope.analysis.dataflow import (
    ELEMENTWISE_FAMILIES,
    Buffer,
    Dataflow,
    Value,
    _in_place_pairs,
)
from hloscope.analysis.liveness import Liveness
from hloscope.ir import Opcode

__all__ = ["AllocationDraft", "HeapResult", "simulate_heap", "assign_buffers", "can_share_operand",
           "CPU_ALIGNMENT"]

CPU_ALIGNMENT = 64


class _Occupancy:
    """The live ranges one allocation holds, sorted by (start, end), for fast interference checks.

    See Note [Finding interference fast]. ``positions`` holds every instruction where one of the
    allocation's values appears (a copy may not land in the allocation of its own operand).
    """

    __slots__ = ("keys", "starts", "ends", "values", "ordered", "positions", "unranged")

    def __init__(self) -> None:
        self.keys: list[tuple[int, int, int]] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.values: list[Value] = []
        self.ordered = True  # ends are non-decreasing in key order
        self.positions: set[object] = set()
        self.unranged = False  # holds a value without a live range: nothing else may join

    def add(self, v: Value, ranges: dict[int, tuple[int, int]]) -> None:
        for p, _ in v.positions:
            self.positions.add(p)
        r = ranges.get(v.id)
        if r is None:
            self.unranged = True
            return
        key = (r[0], r[1], v.id)
        i = bisect.bisect_right(self.keys, key)
        if (i and self.ends[i - 1] > r[1]) or (i < len(self.ends) and self.ends[i] < r[1]):
            self.ordered = False
        self.keys.insert(i, key)
        self.starts.insert(i, r[0])
        self.ends.insert(i, r[1])
        self.values.insert(i, v)

    def meeting(self, start: int, end: int) -> list[Value]:
        """The values whose closed range shares at least one time with ``[start, end]``."""
        if self.ordered:
            lo = bisect.bisect_left(self.ends, start)
            hi = bisect.bisect_right(self.starts, end)
            return self.values[lo:hi]
        return [v for v, s, e in zip(self.values, self.starts, self.ends) if s <= end and e >= start]


class _OrTree:
    """Bitsets over time units: ``add`` ORs a bit into a unit range, ``query`` ORs a range.

    A segment tree over units ``[0, n)``: ``cover[node]`` holds the bits added over the node's
    whole span, ``within[node]`` those added anywhere in its subtree. Both operations visit the
    ``O(log n)`` nodes of the range and the paths above its two end units.
    """

    __slots__ = ("width", "cover", "within")

    def __init__(self, n: int) -> None:
        self.width = 1 << max(1, n).bit_length()
        self.cover = [0] * (2 * self.width)
        self.within = [0] * (2 * self.width)

    def add(self, lo: int, hi: int, bit: int) -> None:
        """OR ``bit`` into the units ``[lo, hi)``."""
        if lo >= hi:
            return
        cover, within = self.cover, self.within
        first, last = lo + self.width, hi - 1 + self.width
        lo, hi = first, last + 1
        while lo < hi:
            if lo & 1:
                cover[lo] |= bit
                within[lo] |= bit
                lo += 1
            if hi & 1:
                hi -= 1
                cover[hi] |= bit
                within[hi] |= bit
            lo >>= 1
            hi >>= 1
        for i in (first >> 1, last >> 1):
            while i:
                within[i] |= bit
                i >>= 1

    def query(self, lo: int, hi: int) -> int:
        """The bits added to at least one unit of ``[lo, hi)``."""
        if lo >= hi:
            return 0
        cover, within = self.cover, self.within
        first, last = lo + self.width, hi - 1 + self.width
        acc = 0
        lo, hi = first, last + 1
        while lo < hi:
            if lo & 1:
                acc |= within[lo]
                lo += 1
            if hi & 1:
                hi -= 1
                acc |= within[hi]
            lo >>= 1
            hi >>= 1
        for i in (first >> 1, last >> 1):
            while i:
                acc |= cover[i]
                i >>= 1
        return acc


class _ReuseIndex:
    """The reusable allocations, in creation order (bit ``k`` = the ``k``-th registered), and
    which of them certainly interfere with a live range. See Note [Finding interference fast].

    ``accepting[color]`` and ``exact[(color, size)]`` are the allocations a buffer of that colour
    (and, when live-out, that size) may join. ``closed`` and ``open`` mark each assigned value's
    live range on doubled time (Note [Doubled time]).
    """

    __slots__ = ("allocations", "bit_of", "accepting", "exact", "closed", "open")

    def __init__(self, end_time: int) -> None:
        self.allocations: list[AllocationDraft] = []
        self.bit_of: dict[int, int] = {}
        self.accepting: dict[int, int] = {}
        self.exact: dict[tuple[int, int], int] = {}
        self.closed = _OrTree(2 * end_time + 2)
        self.open = _OrTree(2 * end_time + 2)

    def register(self, a: AllocationDraft) -> None:
        bit = 1 << len(self.allocations)
        self.bit_of[a.index] = len(self.allocations)
        self.allocations.append(a)
        if a.accepts_reuse:
            self.accepting[a.color] = self.accepting.get(a.color, 0) | bit
            key = (a.color, a.size)
            self.exact[key] = self.exact.get(key, 0) | bit
        for start, end in zip(a.occupancy.starts, a.occupancy.ends):
            self.cover(a, start, end)

    def cover(self, a: AllocationDraft, start: int, end: int) -> None:
        """Record that ``a`` holds a value live over ``[start, end]``."""
        bit = 1 << self.bit_of[a.index]
        self.closed.add(2 * start, 2 * end + 1, bit)
        self.open.add(2 * start + 1, 2 * end, bit)

    def interfering(self, start: int, end: int) -> int:
        """Bitset of the allocations holding a value that surely interferes with ``[start, end]``."""
        return self.closed.query(2 * start + 1, 2 * end) | self.open.query(2 * start, 2 * end + 1)


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
    occupancy: _Occupancy = field(default_factory=_Occupancy, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.assigned is None:
            self.assigned = []

    @property
    def accepts_reuse(self) -> bool:
        """Whether other buffers may ever join (XLA's ``MaybeAssignBuffer`` early exits)."""
        return not (self.readonly or self.is_tuple or self.kind in ("thread-local", "constant"))


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

    if operand.opcode is Opcode.CONSTANT:  # type: ignore[attr-defined]
        return False
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
    if user.opcode is Opcode.SORT:  # type: ignore[attr-defined]
        # Sort permutes in place: operand k may become output k when sort is its only user.
        if len(operand.computation.users(operand)) != 1:  # type: ignore[attr-defined]
            return False
        if len(operands) == 1:
            return True
        nums = [i for i, o in enumerate(operands) if o is operand]
        return len(nums) == 1 and user_index[:1] == (nums[0],)
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
    return HeapResult(best.offsets, best.heap_size, _lower_bound(start, end, canonical, sizes), best.algorithm)


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
    # Placed chunks by time block, so a chunk meets only the chunks near it in time (XLA keeps a
    # BufferIntervalTree for the same purpose); each chunk is listed in every block it spans.
    blocks: dict[int, list[tuple[int, int, int, int]]] = {}
    offsets: dict[int, int] = {}
    heap = 0
    for r in order:
        members = [r, *coloc.get(r, [])]
        size = max(sizes[m] for m in members)
        # Chunks occupy whole alignment units; only the heap's end uses the exact size. A group of
        # colocated values is checked over its whole span (they are contiguous in time).
        lo_t, hi_t = spans[r]
        near: dict[int, tuple[int, int, int, int]] = {}
        for b in range(lo_t >> _BLOCK_BITS, (hi_t >> _BLOCK_BITS) + 1):
            for chunk in blocks.get(b, ()):
                near[chunk[0]] = chunk
        busy = sorted((c[3], c[4]) for c in near.values() if c[1] <= hi_t and lo_t <= c[2])
        best_off, best_len, cursor = None, None, 0
        for lo, hi in busy + [(1 << 62, 1 << 62)]:
            off = -(-cursor // alignment) * alignment
            if hi > cursor and lo > off and lo - off >= size:
                length = lo - cursor
                if best_len is None or length < best_len:
                    best_off, best_len = off, length
            cursor = max(cursor, hi)
        assert best_off is not None
        chunk = (r, lo_t, hi_t, best_off, best_off + -(-size // alignment) * alignment)
        for b in range(lo_t >> _BLOCK_BITS, (hi_t >> _BLOCK_BITS) + 1):
            blocks.setdefault(b, []).append(chunk)
        for m in members:
            offsets[m] = best_off
        heap = max(heap, best_off + size)
    return offsets, heap


_BLOCK_BITS = 5  # time blocks of 32 heap events


def _lower_bound(start: dict[int, int], end: dict[int, int], canonical: dict[int, int],
                 sizes: dict[int, int]) -> int:
    """The most bytes the heap must hold at one moment: no heap can be smaller.

    Times are the heap's event clock, where a value that takes over its dying operand's chunk
    starts after the operand's end, so the two are never counted together. Values that share a
    chunk (one buffer's chained values, or a user writing over its operand) count once, and only
    while one of them is live: the union of their own ranges, not the hull from first start to
    last end (a buffer reused by a loop is free between its values).
    """
    groups: dict[int, list[int]] = {}
    for vid in start:
        groups.setdefault(canonical.get(vid, vid), []).append(vid)
    deltas: dict[int, int] = {}
    for members in groups.values():
        size = max(sizes[m] for m in members)
        spans = sorted((start[m], end.get(m, start[m])) for m in members)
        lo, hi = spans[0]
        for s, e in spans[1:] + [(1 << 62, 1 << 62)]:
            if s <= hi:
                hi = max(hi, e)
                continue
            deltas[lo] = deltas.get(lo, 0) + size  # live over the clock ticks [lo, hi]
            deltas[hi + 1] = deltas.get(hi + 1, 0) - size
            lo, hi = s, e
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
    reusable = _ReuseIndex(live.schedule_end_time)
    temps: list[Buffer] = []

    def new(buf: Buffer, kind: str, **kw: object) -> AllocationDraft:
        a = AllocationDraft(len(allocs), buf.size, kind, buf.color, **kw)  # type: ignore[arg-type]
        allocs.append(a)
        _add(a, buf, live)
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
                reusable.register(a)
            continue
        if buf.values[0].embedded:
            new(buf, "thread-local")
            continue
        if _try_reuse(buf, alloc_of, reusable, df, live):
            continue
        if not buf.live_out:
            temps.append(buf)
            continue
        reusable.register(new(buf, "maybe-live-out", is_tuple=buf.values[0].shape.is_tuple))  # type: ignore[attr-defined]
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


def _add(a: AllocationDraft, buf: Buffer, live: Liveness) -> None:
    for v in buf.values:
        a.assigned.append((v, 0, v.size))  # type: ignore[union-attr]
        a.occupancy.add(v, live.ranges)


def _try_reuse(buf: Buffer, alloc_of: dict[int, AllocationDraft], reusable: _ReuseIndex,
               df: Dataflow, live: Liveness) -> bool:
    """XLA's ``AssignSingleHloBuffer`` reuse step: operands' allocations, then smallest first."""
    seen: set[int] = set()
    for v in buf.values:
        if v.index or v.shape.is_tuple:  # type: ignore[attr-defined]
            continue
        for operand in v.instruction.operands:  # type: ignore[attr-defined]
            for ov in df.value_set(operand):
                a = alloc_of.get(df.buffer_of[ov.id].id)
                if a is None or a.index in seen:
                    continue
                seen.add(a.index)
                if _maybe_assign(a, buf, live):
                    _commit(a, buf, alloc_of, live, reusable)
                    return True
    # Only allocations that may take the buffer and hold no value surely interfering with one
    # of its values are tried (Note [Finding interference fast]); a buffer with a value without
    # a live range fits no allocation that holds anything (``_maybe_assign``).
    size, color, exact = buf.size, buf.color, buf.live_out
    candidates = reusable.exact.get((color, size), 0) if exact else reusable.accepting.get(color, 0)
    for v in buf.values:
        r = live.ranges.get(v.id)
        if r is None:
            return False
        candidates &= ~reusable.interfering(*r)
    for index in seen:
        k = reusable.bit_of.get(index)
        if k is not None:
            candidates &= ~(1 << k)
    allocations = reusable.allocations
    while candidates:
        bit = candidates.bit_length() - 1
        candidates ^= 1 << bit
        a = allocations[bit]
        if a.size < size or a.color != color or (exact and a.size != size) or a.index in seen:
            continue
        if _maybe_assign(a, buf, live):
            _commit(a, buf, alloc_of, live, reusable)
            return True
    return False


def _commit(a: AllocationDraft, buf: Buffer, alloc_of: dict[int, AllocationDraft], live: Liveness,
            reusable: _ReuseIndex) -> None:
    _add(a, buf, live)
    alloc_of[buf.id] = a
    if a.index in reusable.bit_of:
        for v in buf.values:
            r = live.ranges.get(v.id)
            if r is not None:
                reusable.cover(a, *r)


def _maybe_assign(a: AllocationDraft, buf: Buffer, live: Liveness) -> bool:
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
        if inst.opcode is Opcode.COPY and any(p in occ.positions for p in inst.operands):  # type: ignore[attr-defined]
            return False
        for assigned in occ.meeting(*r):
            if _interferes(v, assigned, live):
                return False
    return True
