"""Running the parser, the verifier and the analyses with the cyclic garbage collector paused.

Note [No cyclic GC during analyses]
-----------------------------------
An analysis allocates a few small objects per instruction (costs, rows, dict entries) and frees
almost none until it returns. CPython's cyclic collector runs a full collection each time the
long-lived generation grows by a quarter, and each one walks every object alive, the parsed
module included: on the Llama 3.1 8B module at ten times its size that made ``analyze_cost``
take 10.6 s instead of 6.1 s, and the memory analysis on seed 003 at ten times its size 3.2 s
instead of 2.1 s; the share grows with the module. The parser, the verifier and the analyses
pause the collector while they run and restore the caller's setting after; reference counting
still frees everything that is not in a cycle, and cycles wait for the next collection.

Note [Resuming the collector]
-----------------------------
Every object allocated while the collector was paused is still in the youngest generation when
it resumes, so the first collection after it, run by the next allocation, walks them all: at
the end of ``hloscope memory`` on Llama 3.1 8B at ten times its size that was 1.3 s, on the
user's time, for objects that nearly all stay alive. Before resuming, ``gc.freeze()`` and
``gc.unfreeze()`` move every tracked object into the oldest generation (two list splices), so
the young generations start empty; the oldest one is collected when it has grown by a quarter
again, as it would be anyway, and cycles among those objects are still found then. (When the
caller has frozen objects itself, the trick is skipped: unfreezing would thaw them too.)
"""
from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

__all__ = ["cyclic_gc_paused", "without_cyclic_gc"]

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic collector inside the block (Note [No cyclic GC during analyses])."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not gc.get_freeze_count():  # never thaw what the caller froze on purpose
                gc.freeze()  # Note [Resuming the collector]
                gc.unfreeze()
            gc.enable()


def without_cyclic_gc(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run with the cyclic collector paused (Note [No cyclic GC during analyses])."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with cyclic_gc_paused():
            return fn(*args, **kwargs)

    return run
