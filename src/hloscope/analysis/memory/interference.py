"""Which reusable allocations a buffer may join: the interference index of buffer assignment.

``assignment.py`` asks, for each buffer, for the allocations (newest first) holding no value that
surely interferes with the buffer's live ranges, then runs XLA's exact test on each. This module
keeps what makes that question cheap at LLM scale: each allocation's values sorted by time
(``Occupancy``), and a segment tree over time naming the allocations on each unit (``OrTree``,
``ReuseIndex``).

Note [Finding interference fast]
--------------------------------
XLA tries each buffer against every reusable allocation, smallest first, and each try compares
the buffer's values with every value the allocation already holds. Done literally that is
quadratic twice over (seed 003 at ten times its size took 21 s). Both factors are cut without
changing which allocation wins:

* Which allocations to try. ``ReuseIndex`` keeps, as bitsets over the allocations in creation
  order, those a buffer may join at all (same colour, accepting reuse; for a live-out buffer
  also the same size) and a segment tree over time (Note [Doubled time]) that names the
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

  ``Occupancy`` checks the ordering on every insert and falls back to a scan if it ever breaks.

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
A node of the tree in ``ReuseIndex`` that holds allocation ``k`` in a bitset costs ``k / 8``
bytes whatever else it holds; with bitsets in every node, memory grows as time x
allocations (Llama 3.1 8B at ten times its size: 2 GB). The low levels have many nodes holding
one or two allocations each, the high levels few nodes holding many, so the levels below
``dense_from`` keep plain lists of allocation numbers (most low nodes stay empty: a slot of
8 bytes each, ``None``) and only the levels from it up keep bitsets. A low node holding one number keeps it bare (a
list per node was most of the tree's memory)::

    level  dense_from+2   [bitset]                          few nodes, many bits each
    level  dense_from     [bitset] [bitset]  [bitset]
    below                 3 - [3,17] - 5 - - 8              many nodes, bare numbers, short lists

``dense_from`` is the smallest level where there are at most ``2 * DENSE_BITS_PER_UNIT / n``
dense nodes per time unit for ``n`` allocations, so each of the two bitset arrays takes at
most about ``DENSE_BITS_PER_UNIT / 4`` bytes per time unit, and a query reads only the short lists of
the ``2 * dense_from`` low nodes on its two sides.

Note [Reading from the top]
---------------------------
Only the highest free candidate is wanted, and it is usually near the top: at 100 times the
size of Llama 3.1 8B (88,100 reusable allocations) half the winners lie within the newest
2,307. ORing every node's whole bitset made each query cost the number of allocations, so
``ReuseIndex.free`` gathers the nodes first and reads them a window at a time from the top,
each window half as wide again as the last::

    candidates  [.......................|.....|...|..]   bit K-1 at the right
                  fourth (6,912)        third second first (2,048)

Growing the windows slowly reads little past the answer: at 100 times the size, finding the
first candidate took 35.3 s of CPU with windows growing fourfold, 28.4 s twofold and 27.1 s by
half, measured in one process on the same queries (the same 1.3 s each at ten times the size).

Bitsets are ``bytearray``s, so a window of a node is a slice (its own bytes only) turned into
an int for the bitwise work, and marking an allocation in a node sets one byte in place (ORing
into a Python int copied the whole int: the cost of recording a value grew with the number of
allocations). A query costs about as much as the depth of its answer; a buffer that fits
nowhere still reads every window.

Note [Skipping what stays busy]
-------------------------------
What lies above the answer is nearly all busy for one reason: a value that lives to the end of
the schedule (a live-out result; a donated parameter's update). At ten times the size of Llama
3.1 8B, 97% of the busy candidates read above the answers (1.41 M of 1.44 M, one query in 50
sampled) held such a value, starting before the buffer's range ends. Once an allocation holds
one, it is busy for every later range, so each set of candidates (``Members``) keeps a max tree,
in number order, of where each member's value reaching the end starts (``suffix``; past the end
when it holds none)::

    member      k0    k1    k2    k3    k4    k5     query [40, 55]: busy when the suffix
    suffix      99    12    99    30    70    48     starts before 55 -> highest is k4
    (99: none, past the end of a 98-step schedule; the inner nodes hold their leaves' max)

``free`` asks the tree for the highest member whose suffix starts late enough (``O(log n)``) and
starts its window there, and asks again whenever a window runs out. The windows still read the
whole interference tree, suffixes included, so nothing is named free that was not before; only
runs of members the tree already knows to be busy are skipped. A query every member is busy for
stops at once. At a hundred times the size this took the assignment without the heap from
93-103 s to 76 s of CPU; at ten times it stays 5.3 s.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from hloscope.analysis.memory.dataflow import Value

__all__ = ["Members", "Occupancy", "OrTree", "ReuseIndex", "Reusable", "bits_of", "bytes_of"]

# Where the interference tree switches from lists to bitsets (Note [Sparse low levels]): with 256
# the bitsets of Llama 3.1 8B at ten times its size take under 140 MB and queries at its own
# size read few lists (64 read more lists and saved no memory that showed in the peak RSS).
DENSE_BITS_PER_UNIT = 256
# A list node with more numbers than this becomes a bitset: such nodes are few (at most one per
# LIST_LIMIT numbers put), so their bitsets stay small in all, and no query reads long lists.
LIST_LIMIT = 32
# The first window of candidates read from the top (Note [Reading from the top]); each next one
# is half as wide again.
FIRST_WINDOW = 2048


class Occupancy:
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


class OrTree:
    """Sets of allocation numbers over time units: ``add`` puts ``k`` on a unit range, ``query``
    names every ``k`` put on at least one unit of a range, as a bitset.

    A segment tree over units ``[0, n)``. A range ``[a, b)`` put meets a range ``[lo, hi)`` asked
    exactly when it holds unit ``lo`` (``a <= lo < b``) or starts inside (``lo < a < hi``), never
    both, so two sets of nodes answer (as the heap's ``_PlacedChunks`` does)::

        cover[node]    k on the canonical nodes of [a, b): the nodes on the path from leaf lo
                       up to the root hold every k holding unit lo
        starts[node]   k on leaf a and each of its ancestors: the canonical nodes of
                       (lo, hi) hold every k starting inside

    ``add`` visits the canonical nodes of its range and walks up from its first unit until a
    node already holds ``k`` (``starts`` is upward closed); ``gather`` walks one path and the
    canonical nodes of the rest. (A ``cover`` and a ``within`` set per node, walked up from
    both ends, did twice the work on each side: the report of Llama 3.1 8B at ten times its
    size spent 1.2 s putting and 0.75 s gathering.)

    Memory stays linear (Note [Sparse low levels]): nodes below level ``dense_from`` keep lists
    of numbers, nodes from it up keep bitsets. A bitset is a ``bytearray`` (number ``k`` is bit
    ``k & 7`` of byte ``k >> 3``): marking a number costs the same whatever the number, where
    ORing it into a Python int copies the whole int (Note [Reading from the top]).
    """

    __slots__ = ("width", "dense_from", "cover", "starts", "cover_low", "starts_low")

    def __init__(self, n: int, dense_from: int = 0) -> None:
        self.width = 1 << max(1, n).bit_length()
        self.dense_from = min(dense_from, self.width.bit_length() - 1)
        # Nodes at level L have indices [width >> L, 2 * width >> L): the dense levels are the
        # first ``2 * width >> dense_from`` indices, the sparse ones are kept in ``*_low``.
        top = (2 * self.width) >> self.dense_from
        self.cover: list[bytearray | None] = [None] * top
        self.starts: list[bytearray | None] = [None] * top
        # One slot per node (the dense levels' slots stay unused): indexing a list, the hot
        # loop's most frequent operation, took the assignment at ten times the size of Llama 3.1
        # 8B from 7.65 to 7.32 s against a dict of the nodes used, for 16 MB there.
        self.cover_low: list[int | list[int] | bytearray | None] = [None] * (2 * self.width)
        self.starts_low: list[int | list[int] | bytearray | None] = [None] * (2 * self.width)

    def add(self, lo: int, hi: int, k: int) -> None:
        """Put number ``k`` on the units ``[lo, hi)``."""
        if lo >= hi:
            return
        dense = self.dense_from
        # Leaf lo and its ancestors in ``starts``, up to the first that already holds k (its
        # ancestors hold k too).
        node, level = lo + self.width, 0
        starts_low = self.starts_low
        while level < dense and _put(starts_low, node, k):
            node >>= 1
            level += 1
        if level >= dense:
            starts = self.starts
            while node and _mark(starts, node, k):
                node >>= 1
        # The canonical nodes of [lo, hi) in ``cover``.
        cover, cover_low = self.cover, self.cover_low
        lo += self.width
        hi += self.width
        level = 0
        while lo < hi:
            if level < dense:
                if lo & 1:
                    _put(cover_low, lo, k)
                    lo += 1
                if hi & 1:
                    hi -= 1
                    _put(cover_low, hi, k)
            else:
                if lo & 1:
                    _mark(cover, lo, k)
                    lo += 1
                if hi & 1:
                    hi -= 1
                    _mark(cover, hi, k)
            lo >>= 1
            hi >>= 1
            level += 1

    def gather(self, lo: int, hi: int, parts: list[bytearray], low: list[int]) -> None:
        """What was put on ``[lo, hi)``: the bitsets of the nodes read are appended to ``parts``,
        the numbers of the list nodes to ``low`` (see ``query``)."""
        if lo >= hi:
            return
        dense = self.dense_from
        # Holding unit lo: ``cover`` on the path from its leaf up.
        node, level = lo + self.width, 0
        cover_low = self.cover_low
        while level < dense:
            got = cover_low[node]
            if got is not None:
                if isinstance(got, int):
                    low.append(got)
                elif isinstance(got, list):
                    low.extend(got)
                else:
                    parts.append(got)
            node >>= 1
            level += 1
        cover = self.cover
        while node:
            got = cover[node]
            if got is not None:
                parts.append(got)
            node >>= 1
        # Starting inside (lo, hi): ``starts`` on the canonical nodes of [lo + 1, hi).
        starts, starts_low = self.starts, self.starts_low
        lo += self.width + 1
        hi += self.width
        level = 0
        while lo < hi:
            if level < dense:
                if lo & 1:
                    got = starts_low[lo]
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
                    got = starts_low[hi]
                    if got is not None:
                        if isinstance(got, int):
                            low.append(got)
                        elif isinstance(got, list):
                            low.extend(got)
                        else:
                            parts.append(got)
            else:
                if lo & 1:
                    got = starts[lo]
                    if got is not None:
                        parts.append(got)
                    lo += 1
                if hi & 1:
                    hi -= 1
                    got = starts[hi]
                    if got is not None:
                        parts.append(got)
            lo >>= 1
            hi >>= 1
            level += 1

    def query(self, lo: int, hi: int) -> int:
        """The bitset of the numbers put on at least one unit of ``[lo, hi)``, as an int."""
        parts: list[bytearray] = []
        low: list[int] = []
        self.gather(lo, hi, parts, low)
        return _union(parts, low)


def _union(parts: list[bytearray], low: list[int]) -> int:
    """What ``gather`` found, as one int bitset."""
    acc = bits_of(low)
    for x in parts:
        acc |= int.from_bytes(x, "little")
    return acc


def _mark(bitsets: list[bytearray | None], node: int, k: int) -> bool:
    """Set bit ``k`` in a dense node's bitset; False when it was set already."""
    got = bitsets[node]
    if got is None:
        got = bitsets[node] = bytearray()
    return _set(got, k)


def _put(lists: list[int | list[int] | bytearray | None], node: int, k: int) -> bool:
    """Add ``k`` to a low node; False when it was there already."""
    # Each number once per node: an allocation holding a run of short values would otherwise
    # repeat in every node above them. Most low nodes hold one number, kept bare (a list per
    # node was most of the tree's memory); a node that gathers many numbers (the last time,
    # where every live-out value ends) becomes a bitset (Note [Sparse low levels]).
    got = lists[node]
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


class Reusable(Protocol):
    """What the index reads of an allocation (``assignment.AllocationDraft``)."""

    index: int
    size: int
    color: int
    occupancy: Occupancy

    @property
    def accepts_reuse(self) -> bool: ...


A = TypeVar("A", bound=Reusable)


class Members:
    """One set of allocations a buffer may join (``ReuseIndex.accepting`` or ``.exact``): a bitset
    over allocation numbers, and a max tree over the members, in number order, of where each
    member's value reaching the schedule's end starts. See Note [Skipping what stays busy]."""

    __slots__ = ("bits", "numbers", "tree", "leaves")

    def __init__(self) -> None:
        self.bits = bytearray()
        self.numbers: list[int] = []  # ascending: allocations are numbered as they are registered
        self.leaves = 1
        self.tree = [-1, -1]  # node i holds the max of its leaves; -1 on leaves not yet used

    def add(self, k: int, suffix: int) -> int:
        """Add number ``k`` (above every member) whose suffix starts at ``suffix``; its position."""
        p = len(self.numbers)
        self.numbers.append(k)
        _set(self.bits, k)
        if p == self.leaves:
            # Twice the leaves, the old ones first, and the nodes above them made anew.
            old = self.tree[p:]
            self.leaves *= 2
            tree = self.tree = [-1] * (2 * self.leaves)
            tree[self.leaves:self.leaves + p] = old
            for i in range(self.leaves - 1, 0, -1):
                tree[i] = max(tree[2 * i], tree[2 * i + 1])
        self.lower(p, suffix)
        return p

    def lower(self, p: int, suffix: int) -> None:
        """The member at position ``p`` now has its suffix starting at ``suffix`` (or earlier)."""
        tree = self.tree
        i = p + self.leaves
        if tree[i] != -1 and tree[i] <= suffix:
            return
        tree[i] = suffix
        i >>= 1
        while i:
            top = max(tree[2 * i], tree[2 * i + 1])
            if tree[i] == top:
                break
            tree[i] = top
            i >>= 1

    def highest(self, below: int, at_least: int) -> int:
        """The highest member numbered below ``below`` whose suffix starts at ``at_least`` or
        later, or -1: the last qualifying leaf left of the bound, found in ``O(log n)``."""
        hi = bisect.bisect_left(self.numbers, below)
        if not hi:
            return -1
        tree, leaves = self.tree, self.leaves
        i = hi - 1 + leaves
        # Nodes ending just left of the last one tried, each covering more, until one qualifies.
        while tree[i] < at_least:
            while not i & 1:
                i >>= 1
            if i == 1:
                return -1
            i -= 1
        while i < leaves:
            i = 2 * i + 1
            if tree[i] < at_least:
                i -= 1
        return self.numbers[i - leaves]


class ReuseIndex(Generic[A]):
    """The reusable allocations, in creation order (bit ``k`` = the ``k``-th registered), and
    which of them certainly interfere with a live range. See Note [Finding interference fast].

    ``accepting[color]`` and ``exact[(color, size)]`` are the allocations a buffer of that colour
    (and, when live-out, that size) may join (``Members``). ``closed`` marks each assigned
    value's live range on doubled time and ``touching[t]`` names the allocations with a value
    starting or ending at ``t`` (Note [Doubled time]); ``suffix[k]`` is where allocation ``k``'s
    value reaching the end starts (Note [Skipping what stays busy]). ``expected`` is how many
    allocations may be registered at most; it sets where the tree turns dense (Note [Sparse low
    levels]).
    """

    __slots__ = ("allocations", "bit_of", "accepting", "exact", "closed", "touching", "end_time", "suffix",
                 "positions")

    def __init__(self, end_time: int, expected: int = 0) -> None:
        self.allocations: list[A] = []
        self.bit_of: dict[int, int] = {}
        self.accepting: dict[int, Members] = {}
        self.exact: dict[tuple[int, int], Members] = {}
        dense_from = (expected // DENSE_BITS_PER_UNIT).bit_length()
        self.closed = OrTree(2 * end_time + 2, dense_from)
        self.touching: dict[int, list[int]] = {}
        self.end_time = end_time
        # No value reaching the end: past every time, so no query is ever blocked by it.
        self.suffix: list[int] = []
        self.positions: list[tuple[tuple[Members, int], ...]] = []  # per allocation: (set, position)

    def register(self, a: A) -> None:
        k = len(self.allocations)
        self.bit_of[a.index] = k
        self.allocations.append(a)
        none = self.end_time + 1
        self.suffix.append(none)
        if a.accepts_reuse:
            sets = (self.accepting.setdefault(a.color, Members()), self.exact.setdefault((a.color, a.size), Members()))
            self.positions.append(tuple((m, m.add(k, none)) for m in sets))
        else:
            self.positions.append(())
        for start, end in zip(a.occupancy.starts, a.occupancy.ends):
            self.cover(a, start, end)

    def cover(self, a: A, start: int, end: int) -> None:
        """Record that ``a`` holds a value live over ``[start, end]``."""
        k = self.bit_of[a.index]
        self.closed.add(2 * start, 2 * end + 1, k)
        self.touching.setdefault(start, []).append(k)
        if end != start:
            self.touching.setdefault(end, []).append(k)
        if end == self.end_time and start < self.suffix[k]:
            self.suffix[k] = start
            for members, p in self.positions[k]:
                members.lower(p, start)

    def interfering(self, start: int, end: int) -> int:
        """Bitset of the allocations holding a value that surely interferes with ``[start, end]``."""
        parts: list[bytearray] = []
        low: list[int] = []
        self._gather(start, end, parts, low)
        return _union(parts, low)

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

    def free(self, candidates: Members | None, ranges: list[tuple[int, int]]) -> Iterator[int]:
        """The allocations of ``candidates`` holding no value that surely interferes with any of
        ``ranges``, highest number first. See Notes [Reading from the top] and [Skipping what
        stays busy]."""
        if candidates is None or not candidates.numbers:
            return
        # A value from ``s`` to the end surely interferes with a range ``[a, b]``, a < b, when
        # s < b, and with a single time t when s < t < end (Note [Doubled time]): the members
        # whose suffix starts before ``at_least`` are busy whatever else they hold.
        at_least = 0
        for start, end in ranges:
            if start < end:
                at_least = max(at_least, end)
            elif start < self.end_time:
                at_least = max(at_least, start)
        bits = candidates.bits
        # Past every member above the highest one not busy till the end; when there is none,
        # nothing is gathered (a sixth of the queries at ten times the size of Llama 3.1 8B).
        top = candidates.highest(len(bits) << 3, at_least)
        if top < 0:
            return
        parts: list[bytearray] = []
        low: list[int] = []
        for start, end in ranges:
            self._gather(start, end, parts, low)
        low.sort(reverse=True)
        next_low = 0
        width = max(1, FIRST_WINDOW >> 3)
        while True:
            hi = (top >> 3) + 1  # in bytes
            lo = max(0, hi - width)
            free = int.from_bytes(bits[lo:hi], "little")
            base, ceiling = lo << 3, hi << 3
            j = next_low
            while j < len(low) and low[j] >= ceiling:
                j += 1
            next_low = j
            while j < len(low) and low[j] >= base:
                j += 1
            if free:
                busy = bits_of([k - base for k in low[next_low:j]]) if j > next_low else 0
                for x in parts:
                    if len(x) > lo:
                        busy |= int.from_bytes(x[lo:hi], "little")
                free &= ~busy
                while free:
                    top = free.bit_length() - 1
                    free ^= 1 << top
                    yield base + top
            next_low = j
            if not lo:
                return
            width += (width + 1) >> 1
            top = candidates.highest(lo << 3, at_least)
            if top < 0:
                return
