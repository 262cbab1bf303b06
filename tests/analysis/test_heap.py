"""The heap simulator's best fit: the indexed search against a plain scan of every placed chunk."""
from __future__ import annotations

import random

from hloscope.analysis.memory.heap import _best_fit


def _best_fit_by_scan(roots, start, end, coloc, sizes, kind, alignment):
    """The best fit as first written: every placed chunk is compared with every new one."""
    def span(r):
        members = [r, *coloc.get(r, [])]
        return min(start[m] for m in members), max(end.get(m, start[m]) for m in members)

    spans = {r: span(r) for r in roots}
    if kind == "spatial":
        order = sorted(roots, key=lambda r: (-sizes[r], start[r] - end.get(r, start[r]), r))
    else:
        order = sorted(roots, key=lambda r: (spans[r][0] - spans[r][1], -sizes[r], r))
    placed, offsets, heap = [], {}, 0
    for r in order:
        members = [r, *coloc.get(r, [])]
        size = max(sizes[m] for m in members)
        intervals = [(start[m], end.get(m, start[m])) for m in members]
        busy = sorted((lo, hi) for s, e, lo, hi in placed
                      if any(s <= hi_t and lo_t <= e for lo_t, hi_t in intervals))
        best_off, best_len, cursor = None, None, 0
        for lo, hi in busy + [(1 << 62, 1 << 62)]:
            off = -(-cursor // alignment) * alignment
            if hi > cursor and lo > off and lo - off >= size:
                if best_len is None or lo - cursor < best_len:
                    best_off, best_len = off, lo - cursor
            cursor = max(cursor, hi)
        chunk_end = best_off + -(-size // alignment) * alignment
        placed.extend((lo_t, hi_t, best_off, chunk_end) for lo_t, hi_t in intervals)
        for m in members:
            offsets[m] = best_off
        heap = max(heap, best_off + size)
    return offsets, heap


def test_best_fit_matches_a_scan():
    rng = random.Random(11)
    for case in range(300):
        n = rng.randint(1, 40)
        horizon = rng.randint(1, 3 * n)
        start, end, sizes = {}, {}, {}
        for v in range(n):
            s = rng.randint(0, horizon)
            start[v] = s
            if rng.random() < 0.95:  # a few values without an end, as the heap allows
                end[v] = rng.randint(s, min(horizon, s + rng.choice((0, 1, 3, horizon))))
            sizes[v] = rng.choice((0, 1, 8, 64, 64, 100, 128, 500, 4096))
        # Groups sharing a chunk: members follow their root in time, as shared chunks do.
        roots, coloc = [], {}
        for v in range(n):
            if roots and rng.random() < 0.25:
                coloc.setdefault(rng.choice(roots), []).append(v)
            else:
                roots.append(v)
        for kind in ("spatial", "temporal"):
            for alignment in (1, 64):
                got = _best_fit(roots, start, end, coloc, sizes, kind, alignment)
                want = _best_fit_by_scan(roots, start, end, coloc, sizes, kind, alignment)
                assert got == want, (case, kind, alignment)


def test_temporal_order_gives_up_at_the_spatial_size():
    # Note [The second order stops at the first's size]: None exactly when the packing would
    # not be smaller than the bound, the same packing otherwise.
    rng = random.Random(5)
    for case in range(200):
        n = rng.randint(0, 30)
        start = {v: rng.randint(0, 2 * n) for v in range(n)}
        end = {v: rng.randint(s, s + 5) for v, s in start.items()}
        sizes = {v: rng.choice((0, 8, 64, 100, 4096)) for v in range(n)}
        roots = list(range(n))
        full = _best_fit(roots, start, end, {}, sizes, "temporal", 64)
        assert full is not None
        for bound in {0, 1, full[1], full[1] + 1, 2 * full[1] + 64}:
            got = _best_fit(roots, start, end, {}, sizes, "temporal", 64, give_up_at=bound)
            assert got == (full if full[1] < bound else None), (case, bound)
