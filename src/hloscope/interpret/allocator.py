"""Freed memory stays in the process while a module runs (glibc only).

Note [Keeping freed memory]
---------------------------
glibc serves every block above its mmap threshold (at most 32 MiB) with a fresh ``mmap`` and
unmaps it at ``free``, so each large intermediate a module makes faults in new zeroed pages;
a training step makes tens of GB of them. Measured in seed 003 on 8 replicas, a 32 MiB copy
took 2.3 ms into reused memory, 6.6 ms into fresh memory, and now and then 100 ms (a
virtual machine handing pages back to its host); the run faulted in 25 GB. XLA's runtime
keeps its buffers instead. While ``run`` evaluates, ``kept_freed_memory`` has glibc take
large blocks from the heap too (``M_MMAP_MAX`` = 0) and not shrink it (``M_TRIM_THRESHOLD``),
so a freed block is reused by the next one; afterwards it sets glibc's default values back
and returns the free pages with ``malloc_trim`` (glibc then keeps its mmap threshold at the
default instead of adapting it, as after any ``mallopt``). Elsewhere (macOS, musl, Windows)
it does nothing. ``RunOptions(keep_freed_memory=False)`` turns it off.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import platform
import threading
from collections.abc import Iterator

__all__ = ["kept_freed_memory"]

_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
_DEFAULT_TRIM_THRESHOLD, _DEFAULT_MMAP_MAX = 128 * 1024, 65536  # glibc's malloc.c
_NEVER_TRIM = 2**31 - 1  # mallopt takes an int

_lock = threading.Lock()
_depth = 0  # nested or concurrent runs: the first one in sets, the last one out restores


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(None)
        mallopt, trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return libc


@contextlib.contextmanager
def kept_freed_memory(enabled: bool = True) -> Iterator[None]:
    """Within the block, glibc reuses freed large blocks instead of unmapping them (Note
    [Keeping freed memory]); on leaving, its defaults come back and free pages are returned."""
    global _depth
    libc = _glibc() if enabled else None
    if libc is None:
        yield
        return
    with _lock:
        _depth += 1
        if _depth == 1:
            libc.mallopt(_M_MMAP_MAX, 0)
            libc.mallopt(_M_TRIM_THRESHOLD, _NEVER_TRIM)
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                libc.mallopt(_M_MMAP_MAX, _DEFAULT_MMAP_MAX)
                libc.mallopt(_M_TRIM_THRESHOLD, _DEFAULT_TRIM_THRESHOLD)
                libc.malloc_trim(0)
