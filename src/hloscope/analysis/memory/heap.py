"""The heap simulator: where in the preallocated temp block each temporary value lives.

``simulate_heap`` is XLA's whole-module heap simulation as XLA:CPU runs it
(``HeapSimulator::RunComputation`` with ``ChooseBestHeapAlgorithm``):

1. Replay the schedule: at each time, values starting then are allocated (or share the chunk
   of an operand dying at that time, ``ShareWith``, when the user may overwrite it: see
   ``sharing.py``), then values ending then are freed. Every event ticks the heap's own clock,
   so a value's interval is measured in events, not in schedule steps.
2. Place the allocated values with ``GlobalDecreasingSizeBestFitHeap`` twice, ``spatial``
   (size, then the value's own duration, then id) and ``temporal`` (duration of the whole
   group sharing the chunk, then size, then id), each value into the smallest free gap that
   fits (best fit), offsets aligned to 64 bytes (XLA:CPU's minimum alignment), and keep the
   smaller heap (the spatial one on a tie).
3. ``_lower_bound``: the most bytes live at one tick, which no packing can beat.

A group of values sharing one chunk blocks it only over each value's own interval, so other
values may use the chunk in the gaps between them (XLA adds one interval-tree node per value).

Note [Finding the chunks that meet an interval]
-----------------------------------------------
Best fit needs, for each value placed, the chunks already placed whose time interval meets its
own. Scanning all of them made the heap quadratic (Llama 3.1 8B: 98 of 109 s); blocks of time
listing every chunk in each block it spans were still quadratic in the long-lived chunks. XLA
keeps a ``BufferIntervalTree``; ``_PlacedChunks`` keeps two segment trees over heap time so
that each meeting chunk is found once, in ``O(log T)`` node visits plus one per chunk found.
A closed chunk interval ``[s, e]`` meets ``[a, b]`` exactly when it is busy at ``a``
(``s <= a <= e``) or starts within ``(a, b]``, never both::

    covering   each chunk in the canonical nodes of [s, e]; the nodes on the path from
               leaf a to the root hold every chunk busy at a, each exactly once
    by_start   each chunk in every ancestor of leaf s; the canonical nodes of (a, b]
               hold every chunk starting there, each exactly once

Each node keeps only the union of its chunks' offsets, as sorted disjoint pieces: the gaps
depend on nothing else, and chunks packed side by side merge, so a query meets a few pieces
per node instead of every chunk (Llama 3.1 8B: 17 M chunks found in all, 1.2 M pieces after
merging). A group's own intervals that overlap or abut are merged first, as the same integer
times. The gaps between the pieces found are then swept in offset order as before, so the
offsets are the scan's, chunk for chunk (``tests/analysis/test_heap.py`` compares the two).

Cost: placing a value updates ``O(log T)`` nodes (a bisection each) and reads ``O(log T)``
nodes plus their pieces; the pieces are the busy stretches of the heap then, not the chunks,
so it is ``O(n log n)`` while packing stays tight and ``O(n * gaps)`` at worst, the bound XLA's
own tree has. A node's union holds its children's, so a chunk goes up ``by_start`` only until
an ancestor already holds its offsets (packed heaps reuse offsets: most walks stop low).
Llama 3.1 8B: both orders take 0.77 s CPU; `hloscope memory` took 27.9 s CPU, now 1.8.

Note [The second order stops at the first's size]
-------------------------------------------------
The temporal packing is kept only when its heap is smaller than the spatial one (a tie keeps
the spatial one), and a packing's heap only grows as values are placed: once the temporal
heap reaches the spatial size it cannot win, so it stops there and the spatial packing stands,
the same choice with the same offsets. At ten times Llama 3.1 8B the temporal heap reaches the
spatial size at the 11,893rd of 47,729 placements (Llama itself: 2,272 of 13,018), so most of
the second packing is never done.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from hloscope.analysis.memory.dataflow import Dataflow, Value
from hloscope.analysis.memory.liveness import Liveness
from hloscope.analysis.memory.sharing import can_share_operand
from hloscope.ir import Opcode

__all__ = ["CPU_ALIGNMENT", "HeapResult", "simulate_heap"]

CPU_ALIGNMENT = 64


@dataclass(frozen=True)
class HeapResult:
    """Offsets the heap simulator chose (value id -> offset), its size and the no-gap bound.

    ``lower_bound`` is the most bytes live at one heap tick; ``assign_buffers`` adds the bytes
    of the temporary tuples' own allocations, which share the temp block but not the heap.
    ``trace_peak`` keeps the heap's own figure, what XLA's heap-simulator trace peaks at
    (Note [peak_memory_in_bytes] in ``xla_peak.py``).
    """

    offsets: dict[int, int]
    heap_size: int
    lower_bound: int
    algorithm: str
    trace_peak: int = 0


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
    taken: set[int] = set()  # values ending now whose chunk a value starting now took over
    for t in range(live.schedule_end_time + 1):
        freeing = by_end.get(t, [])
        for v in by_start.get(t, []):
            buf = df.buffer_of[v.id]
            target = first_in_buffer.get(buf.id)
            if target is None and len(buf.values) == 1:
                target = _share_candidate(v, df, live, taken, ids, t)
                if target is not None:
                    end[target] = clock
                    clock += 1
                    taken.add(target)
            if target is not None:
                root = canonical.get(target, target)
                coloc.setdefault(root, []).append(v.id)
                canonical[v.id] = root
            else:
                first_in_buffer[buf.id] = v.id
            start[v.id] = clock
            clock += 1
        for v in freeing:
            if v.id not in taken:
                end[v.id] = clock
                clock += 1
    roots = [v.id for v in values if v.id not in canonical and v.id in start]
    # Note [The second order stops at the first's size]: temporal gives up once it is no smaller.
    spatial = _best_fit(roots, start, end, coloc, sizes, "spatial", alignment)
    assert spatial is not None  # it has nothing to give up at
    best = HeapResult(spatial[0], spatial[1], 0, "spatial")
    temporal = _best_fit(roots, start, end, coloc, sizes, "temporal", alignment, give_up_at=best.heap_size)
    if temporal is not None:
        best = HeapResult(temporal[0], temporal[1], 0, "temporal")
    bound = _lower_bound(start, end, canonical, sizes)
    return HeapResult(best.offsets, best.heap_size, bound, best.algorithm, bound)


def _share_candidate(v: Value, df: Dataflow, live: Liveness, taken: set[int], ids: set[int],
                     t: int) -> int | None:
    """A value dying at ``t`` whose chunk ``v`` (starting at ``t``) may take over, XLA's ShareWith.

    Only a value still to be freed at ``t`` qualifies (one already taken over does not); sets,
    not scans, so an instruction reading thousands of dying operands stays linear.
    """
    inst = v.instruction
    if inst.opcode is Opcode.COPY:
        return None
    for operand in inst.operands:
        for ov in df.value_set(operand):
            if (ov.id not in ids or ov.id in taken or len(df.buffer_of[ov.id].values) > 1
                    or live.ranges[ov.id][1] != t):
                continue
            if live.reads(inst, ov.instruction) and can_share_operand(ov.instruction, ov.index, inst, v.index):
                return ov.id
    return None


def _best_fit(roots: list[int], start: dict[int, int], end: dict[int, int], coloc: dict[int, list[int]],
              sizes: dict[int, int], kind: str, alignment: int,
              give_up_at: int | None = None) -> tuple[dict[int, int], int] | None:
    """Offsets and heap size of ``roots`` packed best fit in ``kind``'s order; None as soon as
    the heap reaches ``give_up_at`` (Note [The second order stops at the first's size])."""
    def span(r: int) -> tuple[int, int]:
        members = [r, *coloc.get(r, [])]
        return min(start[m] for m in members), max(end.get(m, start[m]) for m in members)

    if kind == "spatial":
        # XLA's spatial order measures the duration of the first value alone, not of the values
        # sharing its chunk (GetSpatialBufferIntervalCompare); the temporal order uses the span.
        order = sorted(roots, key=lambda r: (-sizes[r], start[r] - end.get(r, start[r]), r))
    else:
        spans = {r: span(r) for r in roots}
        order = sorted(roots, key=lambda r: (spans[r][0] - spans[r][1], -sizes[r], r))
    # A group of values sharing a chunk occupies it only over each value's own interval, so
    # others may use the chunk in the gaps between them (XLA's MakeFreeChunksList queries the
    # tree once per colocated interval, and CommitChunkAndInterval adds one node per interval).
    # No chunk ends above all chunks stacked: that bounds the offsets a piece's key must hold.
    stacked = sum(-(-max(sizes[m] for m in [r, *coloc.get(r, [])]) // alignment) * alignment for r in roots)
    placed = _PlacedChunks(max([*end.values(), *start.values(), 0]) + 1, stacked)
    shift, mask = placed.shift, placed.mask
    offsets: dict[int, int] = {}
    heap = 0
    for r in order:
        shared = coloc.get(r)
        if shared is None:
            members: list[int] = [r]
            size = sizes[r]
            intervals = [(start[r], end.get(r, start[r]))]
        else:
            members = [r, *shared]
            size = max(sizes[m] for m in members)
            intervals = _merged([(start[m], end.get(m, start[m])) for m in members])
        busy: list[int] = []
        for lo_t, hi_t in intervals:
            placed.overlapping(lo_t, hi_t, busy)
        # Chunks occupy whole alignment units, so every busy edge, the cursor and every gap are
        # aligned; only the heap's end uses the exact size. Best fit: the smallest gap that
        # holds ``size`` (a gap of at least ``need``), the lowest on a tie, so the first gap of
        # exactly ``need`` ends the scan; above every chunk the heap is unbounded.
        aligned = -(-size // alignment) * alignment
        need = aligned if aligned > alignment else alignment
        busy.sort()
        best_off, best_len, cursor = -1, 1 << 62, 0
        for key in busy:
            hi = key & mask
            if hi > cursor:
                gap = (key >> shift) - cursor
                if need <= gap < best_len:
                    best_off, best_len = cursor, gap
                    if gap == need:
                        break
                cursor = hi
        if best_off < 0:
            best_off = cursor
        chunk_end = best_off + aligned
        for lo_t, hi_t in intervals:
            placed.add(lo_t, hi_t, best_off, chunk_end)
        for m in members:
            offsets[m] = best_off
        heap = max(heap, best_off + size)
        if give_up_at is not None and heap >= give_up_at:
            return None
    if give_up_at is not None and heap >= give_up_at:
        return None  # nothing placed: an empty heap is no smaller either
    return offsets, heap


def _merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The same integer times as closed intervals that neither overlap nor abut.

    A value taking over its operand's chunk starts on the tick after the operand ends, so a
    group's intervals often chain into one; merging them saves tree work, not changes results.
    """
    if len(intervals) == 1:
        return intervals
    intervals.sort()
    out = [intervals[0]]
    for s, e in intervals[1:]:
        last_s, last_e = out[-1]
        if s <= last_e + 1:
            if e > last_e:
                out[-1] = (last_s, e)
        else:
            out.append((s, e))
    return out


class _PlacedChunks:
    """Placed chunks by time interval: the offsets busy at some time of a closed time interval.

    See Note [Finding the chunks that meet an interval]. Each tree node keeps the union of its
    chunks' offset ranges as sorted disjoint pieces, touching ones merged: the gaps depend only
    on the union, and packed chunks merge into few pieces. A piece ``[lo, hi)`` is one integer,
    ``lo << shift | hi``, so pieces sort by ``lo`` as plain integers (tuples sort several times
    slower, and sorting them was the heap's largest cost).
    """

    __slots__ = ("width", "shift", "mask", "by_start", "covering")

    def __init__(self, n: int, max_offset: int) -> None:
        self.width = 1 << max(1, n).bit_length()
        self.shift = max_offset.bit_length() + 1
        self.mask = (1 << self.shift) - 1
        self.by_start: list[list[int] | None] = [None] * (2 * self.width)
        self.covering: list[list[int] | None] = [None] * (2 * self.width)

    def add(self, lo_t: int, hi_t: int, lo: int, hi: int) -> None:
        """Record offsets ``[lo, hi)`` as busy over the times ``[lo_t, hi_t]``."""
        shift, mask = self.shift, self.mask
        key, lo_key, hi_key = lo << shift | hi, lo << shift, hi << shift | mask
        # Every ancestor of lo_t's leaf in ``by_start``, from the leaf up. A node's union holds
        # its children's, so once one already holds [lo, hi) every node above it does too.
        by_start = self.by_start
        i = lo_t + self.width
        while i and _insert(by_start, i, key, lo_key, hi_key, lo, hi, shift, mask):
            i >>= 1
        # The canonical nodes of [lo_t, hi_t] in ``covering``.
        covering = self.covering
        a, b = lo_t + self.width, hi_t + self.width + 1
        while a < b:
            if a & 1:
                _insert(covering, a, key, lo_key, hi_key, lo, hi, shift, mask)
                a += 1
            if b & 1:
                b -= 1
                _insert(covering, b, key, lo_key, hi_key, lo, hi, shift, mask)
            a >>= 1
            b >>= 1

    def overlapping(self, lo_t: int, hi_t: int, out: list[int]) -> None:
        """Append to ``out`` pieces whose union is every offset busy in ``[lo_t, hi_t]``."""
        # Busy at lo_t: the nodes on the path from lo_t's leaf up (one per covering interval).
        covering = self.covering
        i = lo_t + self.width
        while i:
            node = covering[i]
            if node is not None:
                out.extend(node)
            i >>= 1
        # Starting after lo_t and by hi_t: the canonical nodes of (lo_t, hi_t].
        by_start = self.by_start
        a, b = lo_t + 1 + self.width, hi_t + self.width + 1
        while a < b:
            if a & 1:
                node = by_start[a]
                if node is not None:
                    out.extend(node)
                a += 1
            if b & 1:
                b -= 1
                node = by_start[b]
                if node is not None:
                    out.extend(node)
            a >>= 1
            b >>= 1


def _insert(tree: list[list[int] | None], i: int, key: int, lo_key: int, hi_key: int, lo: int, hi: int,
            shift: int, mask: int) -> bool:
    """Put the piece ``key`` = ``[lo, hi)`` into node ``i``'s union, merging the pieces it
    overlaps or touches; False when the union held it already."""
    node = tree[i]
    if node is None:
        tree[i] = [key]
        return True
    k = bisect_left(node, lo_key)  # the first piece starting at or after lo ...
    if k and node[k - 1] & mask >= lo:  # ... or the one before, when it reaches lo
        k -= 1
    j = bisect_right(node, hi_key, k)  # the first piece starting after hi
    if k == j:
        node.insert(k, key)
        return True
    first, last = node[k] >> shift, node[j - 1] & mask
    if j == k + 1 and first <= lo and last >= hi:
        return False
    if first >= lo and last <= hi:
        merged = key
    else:
        merged = (first if first < lo else lo) << shift | (last if last > hi else hi)
    if j == k + 1:
        node[k] = merged
    else:
        node[k:j] = (merged,)
    return True


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
