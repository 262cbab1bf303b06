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
units of the other. For a buffer's range of more than one time, its open units already meet the
closed units of every value surely interfering with it (a single held time inside it is one
closed unit among its open ones), so one tree, ``closed``, marking each held value's closed
units, answers it. A single time ``t`` has no open units: what surely interferes with it is a
value strictly around it, which covers unit ``2t`` and neither starts nor ends at ``t``. So the
tree is asked for unit ``2t``, and the few allocations with a value starting or ending at ``t``
(``touching``) are looked up in their occupancy. A range that only touches one end of the
buffer's range is not named and goes to the exact test.

One tree instead of a second one for open units halves the cost of recording each assigned
value, and single-time buffers are few (96 of Llama 3.1 8B's 19,043 queries).

Note [Sparse low levels]
------------------------
A node of the trees in ``_ReuseIndex`` that holds allocation ``k`` as a Python-int bitset costs
``k / 8`` bytes whatever else it holds; with bitsets in every node, memory grows as time x
allocations (Llama 3.1 8B at ten times its size: 2 GB). The low levels have many nodes holding
one or two allocations each, the high levels few nodes holding many, so the levels below
``dense_from`` keep plain lists of allocation numbers (in dicts: most low nodes stay empty)
and only the levels from it up keep bitsets::

    level  dense_from+2   [bitset]                          few nodes, many bits each
    level  dense_from     [bitset] [bitset]  [bitset]
    below                 [3] [] [3,17] [] [5] [] [] [8]    many nodes, short lists

``dense_from`` is the smallest level where there are at most ``2 * DENSE_BITS_PER_UNIT / n``
dense nodes per time unit for ``n`` allocations, so each of the four bitset arrays takes at
most about ``DENSE_BITS_PER_UNIT / 4`` bytes per time unit, and a query reads only the short lists of
the ``2 * dense_from`` low nodes on its two sides.

Note [Reading from the top]
---------------------------
Only the highest free candidate is wanted, and it is usually near the top: at 100 times the
size of Llama 3.1 8B (88,100 reusable allocations) half the winners lie within the newest
2,307. ORing every node's whole bitset made each query cost the number of allocations, so
``_ReuseIndex.free`` gathers the nodes first and reads them a window at a time from the top,
each window four times wider than the last::

    candidates  [..............................|.......|..]   bit K-1 at the right
                  third window (4 x 4 x 2,048)   second  first (2,048)

A window's bits of each node are one shift away (``x >> lo``), which costs the bits above
``lo`` only, so a query costs about as much as the depth of its answer. A buffer that fits
nowhere still reads everything, as before.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hloscope.analysis.memory.dataflow import Buffer, Dataflow, Value, instruction_post_order
from hloscope.analysis.memory.heap import CPU_ALIGNMENT, HeapResult, simulate_heap
from hloscope.analysis.memory.liveness import Liveness
from hloscope.analysis.memory.sharing import can_share_operand
from hloscope.ir import Opcode

if TYPE_CHECKING:
    from hloscope.ir import Computation, Instruction, Module, ShapeIndex

# The heap and sharing names are re-exported: callers imported them from here first.
__all__ = ["AllocationDraft", "HeapResult", "simulate_heap", "assign_buffers", "can_share_operand",
           "CPU_ALIGNMENT"]

# Where the interference trees switch from lists to bitsets (Note [Sparse low levels]): with 256
# the bitsets of Llama 3.1 8B at ten times its size take under 140 MB and queries at its own
# size read few lists (64 read more lists and saved no memory that showed in the peak RSS).
DENSE_BITS_PER_UNIT = 256
# A list node with more numbers than this becomes a bitset: such nodes are few (at most one per
# LIST_LIMIT numbers put), so their bitsets stay small in all, and no query reads long lists.
LIST_LIMIT = 32
# The first window of candidates read from the top (Note [Reading from the top]); each next one
# is four times wider.
FIRST_WINDOW = 2048


class _Occupancy:
    """The live ranges one allocation holds, sorted by (start, end), for fast interference checks.

    See Note [Finding interference fast].
    """

    __slots__ = ("keys", "starts", "ends", "values", "ordered", "unranged")

    def __init__(self) -> None:
        self.keys: list[tuple[int, int, int]] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.values: list[Value] = []
        self.ordered = True  # ends are non-decreasing in key order
        self.unranged = False  # holds a value without a live range: nothing else may join

    def add(self, v: Value, ranges: dict[int, tuple[int, int]]) -> None:
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

    def holds_around(self, t: int) -> bool:
        """Whether a value's range holds ``t`` strictly inside."""
        if self.ordered:
            # ends > t from ``lo`` on, starts < t up to ``hi``
            return bisect.bisect_right(self.ends, t) < bisect.bisect_left(self.starts, t)
        return any(s < t < e for s, e in zip(self.starts, self.ends))

    def meeting(self, start: int, end: int) -> list[Value]:
        """The values whose closed range shares at least one time with ``[start, end]``."""
        if self.ordered:
            lo = bisect.bisect_left(self.ends, start)
            hi = bisect.bisect_right(self.starts, end)
            return self.values[lo:hi]
        return [v for v, s, e in zip(self.values, self.starts, self.ends) if s <= end and e >= start]


class _OrTree:
    """Sets of allocation numbers over time units: ``add`` puts ``k`` on a unit range, ``query``
    names every ``k`` put on at least one unit of a range, as a bitset.

    A segment tree over units ``[0, n)``: ``cover[node]`` holds what was added over the node's
    whole span, ``within[node]`` what was added anywhere in its subtree. Both operations visit
    the ``O(log n)`` nodes of the range and the paths above its two end units.

    Memory stays linear (Note [Sparse low levels]): nodes below level ``dense_from`` keep lists
    of numbers, nodes from it up keep bitsets. A bitset is a ``bytearray`` (number ``k`` is bit
    ``k & 7`` of byte ``k >> 3``): marking a number costs the same whatever the number, where
    ORing it into a Python int copies the whole int (Note [Reading from the top]).
    """

    __slots__ = ("width", "dense_from", "cover", "within", "cover_low", "within_low")

    def __init__(self, n: int, dense_from: int = 0) -> None:
        self.width = 1 << max(1, n).bit_length()
        self.dense_from = min(dense_from, self.width.bit_length() - 1)
        # Nodes at level L have indices [width >> L, 2 * width >> L): the dense levels are the
        # first ``2 * width >> dense_from`` indices, the sparse ones are kept in dicts.
        top = (2 * self.width) >> self.dense_from
        self.cover: list[bytearray | None] = [None] * top
        self.within: list[bytearray | None] = [None] * top
        self.cover_low: dict[int, int | list[int] | bytearray] = {}
        self.within_low: dict[int, int | list[int] | bytearray] = {}

    def add(self, lo: int, hi: int, k: int) -> None:
        """Put number ``k`` on the units ``[lo, hi)``."""
        if lo >= hi:
            return
        byte, bit = k >> 3, 1 << (k & 7)
        cover, within, cover_low, within_low = self.cover, self.within, self.cover_low, self.within_low
        first, last = lo + self.width, hi - 1 + self.width
        dense = self.dense_from
        # The paths above the two end units first, while ``within`` is upward closed (a node
        # holding k has every ancestor holding it): each walk stops at the first node that
        # already holds k, the second one at the latest where it joins the first.
        for node in (first >> 1, last >> 1):
            level = 1
            while node:
                if level < dense:
                    if not _put(within_low, node, k):
                        break
                elif not _mark(within, node, byte, bit):
                    break
                node >>= 1
                level += 1
        lo, hi = first, last + 1
        level = 0
        while lo < hi:
            if level < dense:
                if lo & 1:
                    _put(cover_low, lo, k)
                    _put(within_low, lo, k)
                    lo += 1
                if hi & 1:
                    hi -= 1
                    _put(cover_low, hi, k)
                    _put(within_low, hi, k)
            else:
                if lo & 1:
                    _mark(cover, lo, byte, bit)
                    _mark(within, lo, byte, bit)
                    lo += 1
                if hi & 1:
                    hi -= 1
                    _mark(cover, hi, byte, bit)
                    _mark(within, hi, byte, bit)
            lo >>= 1
            hi >>= 1
            level += 1

    def gather(self, lo: int, hi: int, parts: list[bytearray], low: list[int]) -> None:
        """What was put on ``[lo, hi)``: the bitsets of the nodes read are appended to ``parts``,
        the numbers of the list nodes to ``low`` (see ``query``)."""
        if lo >= hi:
            return
        cover, within, cover_low, within_low = self.cover, self.within, self.cover_low, self.within_low
        first, last = lo + self.width, hi - 1 + self.width
        lo, hi = first, last + 1
        level, dense = 0, self.dense_from
        while lo < hi:
            if level < dense:
                if lo & 1:
                    got = within_low.get(lo)
                    if got is not None:
                        if isinstance(got, int):
                            low.append(got)
                        elif isinstance(got, list):
                            low.extend(got)
                        else:
                            parts.append(got)
                    lo += 1
                if hi & 1:
                    hi -= 1
                    got = within_low.get(hi)
                    if got is not None:
                        if isinstance(got, int):
                            low.append(got)
                        elif isinstance(got, list):
                            low.extend(got)
                        else:
                            parts.append(got)
            else:
                if lo & 1:
                    got = within[lo]
                    if got is not None:
                        parts.append(got)
                    lo += 1
                if hi & 1:
                    hi -= 1
                    got = within[hi]
                    if got is not None:
                        parts.append(got)
            lo >>= 1
            hi >>= 1
            level += 1
        # The paths above the two end units, each node once (they join below the root).
        a, b = first >> 1, last >> 1
        level = 1
        while a and level < dense:
            for i in (a,) if a == b else (a, b):
                got = cover_low.get(i)
                if got is not None:
                    if isinstance(got, int):
                        low.append(got)
                    elif isinstance(got, list):
                        low.extend(got)
                    else:
                        parts.append(got)
            a >>= 1
            b >>= 1
            level += 1
        while a:
            got = cover[a]
            if got is not None:
                parts.append(got)
            if b != a:
                got = cover[b]
                if got is not None:
                    parts.append(got)
            a >>= 1
            b >>= 1

    def query(self, lo: int, hi: int) -> int:
        """The bitset of the numbers put on at least one unit of ``[lo, hi)``, as an int."""
        parts: list[bytearray] = []
        low: list[int] = []
        self.gather(lo, hi, parts, low)
        acc = bits_of(low)
        for x in parts:
            acc |= int.from_bytes(x, "little")
        return acc


def _mark(bitsets: list[bytearray | None], node: int, byte: int, bit: int) -> bool:
    """Set ``bit`` of byte ``byte`` in a node's bitset; False when it was set already."""
    got = bitsets[node]
    if got is None:
        got = bitsets[node] = bytearray(byte + 1)
    elif len(got) <= byte:
        got.extend(bytes(byte + 1 - len(got)))
    elif got[byte] & bit:
        return False
    got[byte] |= bit
    return True


def _put(lists: dict[int, int | list[int] | bytearray], node: int, k: int) -> bool:
    """Add ``k`` to a low node; False when it was there already."""
    # Each number once per node: an allocation holding a run of short values would otherwise
    # repeat in every node above them. Most low nodes hold one number, kept bare (a list per
    # node was most of the tree's memory); a node that gathers many numbers (the last time,
    # where every live-out value ends) becomes a bitset (Note [Sparse low levels]).
    got = lists.get(node)
    if got is None:
        lists[node] = k
        return True
    if isinstance(got, int):
        if got == k:
            return False
        lists[node] = [got, k]
        return True
    if isinstance(got, list):
        if k in got:
            return False
        if len(got) < LIST_LIMIT:
            got.append(k)
            return True
        got = lists[node] = bytes_of(got)
    return _set(got, k)


def _set(bits: bytearray, k: int) -> bool:
    """Set bit ``k`` of a bitset; False when it was set already."""
    byte, bit = k >> 3, 1 << (k & 7)
    if len(bits) <= byte:
        bits.extend(bytes(byte + 1 - len(bits)))
    elif bits[byte] & bit:
        return False
    bits[byte] |= bit
    return True


def bytes_of(numbers: list[int]) -> bytearray:
    """The bitset with bit ``k`` set for each ``k`` in ``numbers``, as a ``bytearray``."""
    bits = bytearray((max(numbers) >> 3) + 1 if numbers else 0)
    for k in numbers:
        bits[k >> 3] |= 1 << (k & 7)
    return bits


def bits_of(numbers: list[int]) -> int:
    """The bitset with bit ``k`` set for each ``k`` in ``numbers``, built in one pass (ORing
    ``1 << k`` into a growing int would copy it once per number)."""
    if not numbers:
        return 0
    return int.from_bytes(bytes_of(numbers), "little")


class _ReuseIndex:
    """The reusable allocations, in creation order (bit ``k`` = the ``k``-th registered), and
    which of them certainly interfere with a live range. See Note [Finding interference fast].

    ``accepting[color]`` and ``exact[(color, size)]`` are the allocations a buffer of that colour
    (and, when live-out, that size) may join, as bitsets. ``closed`` marks each assigned value's
    live range on doubled time and ``touching[t]`` names the allocations with a value starting
    or ending at ``t`` (Note [Doubled time]). ``expected`` is how many allocations may be
    registered at most; it sets where the tree turns dense (Note [Sparse low levels]).
    """

    __slots__ = ("allocations", "bit_of", "accepting", "exact", "closed", "touching")

    def __init__(self, end_time: int, expected: int = 0) -> None:
        self.allocations: list[AllocationDraft] = []
        self.bit_of: dict[int, int] = {}
        self.accepting: dict[int, bytearray] = {}
        self.exact: dict[tuple[int, int], bytearray] = {}
        dense_from = (expected // DENSE_BITS_PER_UNIT).bit_length()
        self.closed = _OrTree(2 * end_time + 2, dense_from)
        self.touching: dict[int, list[int]] = {}

    def register(self, a: AllocationDraft) -> None:
        k = len(self.allocations)
        self.bit_of[a.index] = k
        self.allocations.append(a)
        if a.accepts_reuse:
            _set(self.accepting.setdefault(a.color, bytearray()), k)
            _set(self.exact.setdefault((a.color, a.size), bytearray()), k)
        for start, end in zip(a.occupancy.starts, a.occupancy.ends):
            self.cover(a, start, end)

    def cover(self, a: AllocationDraft, start: int, end: int) -> None:
        """Record that ``a`` holds a value live over ``[start, end]``."""
        k = self.bit_of[a.index]
        self.closed.add(2 * start, 2 * end + 1, k)
        touching = self.touching
        got = touching.get(start)
        if got is None:
            touching[start] = [k]
        else:
            got.append(k)
        if end != start:
            got = touching.get(end)
            if got is None:
                touching[end] = [k]
            else:
                got.append(k)

    def interfering(self, start: int, end: int) -> int:
        """Bitset of the allocations holding a value that surely interferes with ``[start, end]``."""
        parts: list[bytearray] = []
        low: list[int] = []
        self._gather(start, end, parts, low)
        acc = bits_of(low)
        for x in parts:
            acc |= int.from_bytes(x, "little")
        return acc

    def _gather(self, start: int, end: int, parts: list[bytearray], low: list[int]) -> None:
        # Note [Doubled time]: a range of more than one time meets the closed units of every value
        # surely interfering with it on its own open units; a single time t is surely interfered
        # with only by a value strictly around it: of the values on unit 2t, those starting or
        # ending at t are told apart by their allocation's occupancy.
        if start < end:
            self.closed.gather(2 * start + 1, 2 * end, parts, low)
            return
        busy = self.closed.query(2 * start, 2 * start + 1)
        for k in set(self.touching.get(start, ())):
            if busy >> k & 1 and not self.allocations[k].occupancy.holds_around(start):
                busy ^= 1 << k
        if busy:
            parts.append(bytearray(busy.to_bytes((busy.bit_length() + 7) >> 3, "little")))

    def free(self, candidates: bytes | bytearray | None, ranges: list[tuple[int, int]]) -> Iterator[int]:
        """The allocations of ``candidates`` (a bitset) holding no value that surely interferes
        with any of ``ranges``, highest number first. See Note [Reading from the top]."""
        if not candidates:
            return
        parts: list[bytearray] = []
        low: list[int] = []
        for start, end in ranges:
            self._gather(start, end, parts, low)
        low.sort(reverse=True)
        next_low = 0
        hi = len(candidates)  # in bytes
        width = max(1, FIRST_WINDOW >> 3)
        while hi > 0:
            lo = max(0, hi - width)
            free = int.from_bytes(candidates[lo:hi], "little")
            base = lo << 3
            j = next_low
            while j < len(low) and low[j] >= base:
                j += 1
            if free:
                for x in parts:
                    if len(x) > lo:
                        busy = int.from_bytes(x[lo:hi], "little")
                        if busy:
                            free &= ~busy
                if j > next_low:
                    free &= ~bits_of([k - base for k in low[next_low:j]])
                while free:
                    top = free.bit_length() - 1
                    free ^= 1 << top
                    yield base + top
            next_low = j
            hi = lo
            width *= 4


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
    occupancy: _Occupancy = field(default_factory=_Occupancy, repr=False, compare=False)

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
    end_inst, end_index = live.end_position[operand_value.id]
    user = user_value.instruction
    operands = user.operands
    # A short operand list is scanned: a cached set per user cost more memory than the search
    if user.opcode is Opcode.COPY or end_inst not in (operands if len(operands) <= 16 else live.operands_of(user)):
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
    reusable = _ReuseIndex(live.schedule_end_time, expected)
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
        defining = [v.instruction for v in buf.values]
        if any(i.opcode is Opcode.CONSTANT for i in defining):
            new(buf, "constant", readonly=True)
            return
        params = [v for v in buf.values if v.instruction.opcode is Opcode.PARAMETER
                  and v.instruction.computation is entry]
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
                                  result.lower_bound + dedicated.get(color, 0), result.algorithm)
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
    return sorted(buffers, key=lambda b: (-b.size, not b.live_out,
                                          min(pos.get(v.instruction, far) for v in b.values), b.id))


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
    return any(v.id in live.ranges or v.embedded for v in buf.values)


def _add(a: AllocationDraft, buf: Buffer, live: Liveness) -> None:
    for v in buf.values:
        a.assigned.append((v, 0, v.size))
        a.occupancy.add(v, live.ranges)


def _try_reuse(buf: Buffer, alloc_of: dict[int, AllocationDraft], reusable: _ReuseIndex,
               df: Dataflow, live: Liveness) -> bool:
    """XLA's ``AssignSingleHloBuffer`` reuse step: operands' allocations, then smallest first."""
    seen: set[int] = set()
    for v in buf.values:
        if v.index or v.shape.is_tuple:
            continue
        for operand in v.instruction.operands:
            for ov in df.value_set(operand):
                a = alloc_of.get(df.buffer_of[ov.id].id)
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
            reusable: _ReuseIndex) -> None:
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
        for values in df.sets.get(operand, {}).values():
            for v in values:
                if alloc_of.get(df.buffer_of[v.id].id) is a:
                    return True
    return False
