"""Running an analysis with the cyclic garbage collector paused.

Note [No cyclic GC during analyses]
-----------------------------------
An analysis allocates a few small objects per instruction (costs, rows, dict entries) and frees
almost none until it returns. CPython's cyclic collector runs a full collection each time the
long-lived generation grows by a quarter, and each one walks every object alive, the parsed
module included: on the Llama 3.1 8B module at ten times its size that made ``analyze_cost``
take 10.6 s instead of 6.1 s, and the share grows with the module. The analyses pause the
collector while they run and restore the caller's setting after; reference counting still
frees everything that is not in a cycle, and cycles wait for the next collection. (The parser
and the memory analysis do the same; see ``text/parser.py`` and Note [No garbage collection
during the analysis] in ``analysis/memory/report.py``.)
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
            gc.enable()


def without_cyclic_gc(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run with the cyclic collector paused (Note [No cyclic GC during analyses])."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with cyclic_gc_paused():
            return fn(*args, **kwargs)

    return run
