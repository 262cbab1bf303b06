"""The cyclic collector's pause (Notes [No cyclic GC during analyses] and [Resuming the
collector] in ``gc_pause.py``)."""

import gc
import weakref

from hloscope.gc_pause import cyclic_gc_paused, without_cyclic_gc


class _Node:
    def __init__(self) -> None:
        self.peer: object = self


def test_the_collector_is_paused_inside_and_restored_after() -> None:
    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
        with cyclic_gc_paused():  # nested: the inner one leaves it paused
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()  # the caller's setting, not ours
    finally:
        gc.enable()


def test_resuming_leaves_the_young_generations_empty_and_nothing_frozen() -> None:
    # What the pause allocated would otherwise all sit in generation 0, for the first
    # collection after it to walk; cycles among it must still be collectable.
    @without_cyclic_gc
    def allocate() -> tuple[list[list[int]], weakref.ref[_Node]]:
        kept = [[k] for k in range(50_000)]
        return kept, weakref.ref(_Node())  # a cycle nothing else refers to

    gc.collect()
    kept, cycle = allocate()
    assert gc.get_count()[0] < 1_000 and gc.get_freeze_count() == 0
    assert cycle() is not None  # only the collector frees a cycle ...
    gc.collect()
    assert cycle() is None  # ... and it still does
    assert len(kept) == 50_000
