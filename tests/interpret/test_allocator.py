"""Note [Keeping freed memory]: during a run glibc serves large blocks from its heap, and
afterwards its defaults come back. Observed through mallinfo2's count of mmapped bytes.

glibc's settings are the process's: each check runs in a fresh interpreter, so what other tests
in this pytest worker did (threads of the Ray tests, an interrupted run) cannot decide it."""
from __future__ import annotations

import ctypes
import multiprocessing

import numpy as np
import pytest

import hloscope
from hloscope.interpret import allocator
from hloscope.interpret.evaluator import RunOptions


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]


def _mmapped_bytes() -> int:
    libc = allocator._glibc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        pytest.skip("needs glibc 2.33 or later")
    libc.mallinfo2.restype = _Mallinfo2
    return libc.mallinfo2().hblkhd


BIG = 64 << 20  # above glibc's largest mmap threshold


def _mmaps_a_big_block() -> bool:
    before = _mmapped_bytes()
    block = np.empty(BIG, np.uint8)
    grew = _mmapped_bytes() - before >= BIG
    del block
    return grew


def _in_fresh_process(check) -> None:
    if allocator._glibc() is None or not hasattr(allocator._glibc(), "mallinfo2"):
        pytest.skip("needs glibc 2.33 or later")
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        pool.apply(check)  # re-raises the child's AssertionError


def test_big_blocks_come_from_the_heap_inside_and_mmap_outside() -> None:
    _in_fresh_process(_heap_inside_and_mmap_outside)


def test_run_keeps_memory_only_while_running() -> None:
    _in_fresh_process(_memory_kept_only_while_running)


def _heap_inside_and_mmap_outside() -> None:
    assert _mmaps_a_big_block()
    with allocator.kept_freed_memory():
        with allocator.kept_freed_memory():  # nested: the inner exit must not restore
            assert not _mmaps_a_big_block()
        assert not _mmaps_a_big_block()
    assert _mmaps_a_big_block()
    with allocator.kept_freed_memory(enabled=False):
        assert _mmaps_a_big_block()


def _memory_kept_only_while_running() -> None:
    seen = []

    class Watch:  # a hook: records, at one instruction, whether big blocks are mmapped
        def on_instruction(self, inst, operands, result) -> None:
            if inst.name == "r":
                seen.append(_mmaps_a_big_block())

    module = hloscope.parse("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] negate(p)\n}\n")
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(hloscope.run(module, [x], options=RunOptions(hooks=[Watch()])), -x)
    hloscope.run(module, [x], options=RunOptions(hooks=[Watch()], keep_freed_memory=False))
    assert seen == [False, True], seen
    assert _mmaps_a_big_block()
