"""One step of the report run in a second process while this one does the others.

Note [Memory beside the rest]
-----------------------------
The report's steps are single-threaded Python, and one of them, the memory analysis (XLA's
buffer assignment and heap simulation, one buffer after another), takes as long as all the
others together: at ten times the size of Llama 3.1 8B, 11.4 s of a 24.4 s build, against 9.7 s
for the instruction text, cost, collectives, estimate, profile, timeline and page. Its input is
the parsed module only, and what the page needs back is its section (8 MB pickled at that size,
0.15 s to send and read). So when a second CPU is free, the memory step runs in a forked child,
which shares the parsed module with its parent (copy on write: nothing is parsed or sent
twice), and the parent goes on with the other steps, then encodes the page's blocks but the
memory section's (the rows, the timeline, the collectives: 36 of 46 MB) while it waits. The two
meet before the page is drawn, or before the time estimate on an XLA:CPU profile, which reads
the buffer assignment's allocations (Note [Fresh pages per allocation] in
``analysis/cpu_model.py``; only then are they sent: they are half of what the child would
send).

It is skipped, and the step runs in this process as before, where forking is not safe or not
worth it: no ``os.fork`` (Windows), one CPU allowed to this process (``taskset``, a container's
limit), other threads running (a fork copies only the calling thread, so a lock another thread
holds would stay held in the child: a server's Python threads, or the thread pools of JAX,
PyTorch or TensorFlow, which a notebook may have loaded: ``THREADED_RUNTIMES``; the CLI loads
none of them), a module too small to gain from it (``PARALLEL_FROM``), or too big for the
memory the machine has available (``CHILD_BYTES_PER_INSTRUCTION`` each: the child's own pages
come on top of the parent's, where one process would have freed the memory step's before the
next step). A child that dies or cannot send its result (killed, out of memory) costs only the
time it took: the step then runs here. The result is the same either way: the same function
makes it, on the same module.
"""
from __future__ import annotations

import os
import pickle
import sys
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Background", "CHILD_BYTES_PER_INSTRUCTION", "PARALLEL_FROM", "THREADED_RUNTIMES", "can_fork",
           "free_cpus", "memory_to_spare"]

T = TypeVar("T")

# Below this many instructions the whole report takes about a second and a fork's fixed costs
# (copying the page tables, pickling the section) would be a visible share of the gain.
PARALLEL_FROM = 20_000


def free_cpus() -> int:
    """The CPUs this process may run on (its affinity, where the platform tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# The child's peak RSS per instruction of the module, rounded up: 2.3 kB at ten times the size of
# Llama 3.1 8B (0.74 GB for 318,550 instructions), 3.3 kB at its size (0.10 GB). No fork without
# this much memory available.
CHILD_BYTES_PER_INSTRUCTION = 3_500

# Runtimes that keep thread pools of their own once loaded (JAX warns on every fork after it).
THREADED_RUNTIMES = ("jax", "jaxlib", "torch", "tensorflow")


def can_fork() -> bool:
    """Whether a fork is safe here: the platform has one, no other Python thread runs and no
    runtime with thread pools of its own is loaded."""
    return (hasattr(os, "fork") and threading.active_count() == 1
            and not any(name in sys.modules for name in THREADED_RUNTIMES))


def memory_to_spare(instructions: int) -> bool:
    """Whether the machine has memory available for a child working on a module of this many
    instructions (True where it does not say)."""
    from hloscope.api import available_memory

    have = available_memory()
    return have is None or have >= CHILD_BYTES_PER_INSTRUCTION * instructions


class Background(Generic[T]):
    """``work()`` run in a forked child (Note [Memory beside the rest]); ``result()`` waits for it.

    ``result()`` returns what ``work()`` returned in the child, or runs ``work()`` here when the
    child failed to deliver it. ``work()`` must return something ``pickle`` can send, and catch
    its own errors where they belong in its result. Raises OSError when no child can be made.
    """

    def __init__(self, work: Callable[[], T]) -> None:
        self.work = work
        self.pid: int | None = None
        self.fd: int | None = None
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            raise
        if pid == 0:  # the child: run, send, and leave without running the parent's exit hooks
            status = 1
            try:
                os.close(read)
                payload = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write, "wb") as out:
                    out.write(payload)
                status = 0
            finally:
                os._exit(status)
        os.close(write)
        self.pid, self.fd = pid, read

    def result(self) -> T:
        """The child's result; ``work()`` run here instead when the child did not deliver one."""
        if self.fd is None:
            raise RuntimeError("Background.result() called twice")
        with os.fdopen(self.fd, "rb") as pipe:
            self.fd = None
            payload = pipe.read()  # until the child closes its end: it has sent all, or died
        status = self._reap()
        if status == 0:
            try:
                return pickle.loads(payload)
            except Exception:  # noqa: BLE001 - a truncated payload: do the work here
                pass
        return self.work()

    def cancel(self) -> None:
        """Stop the child if it still runs (the parent gave up on its result)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.pid is not None:
            import signal

            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()

    def _reap(self) -> int:
        pid, self.pid = self.pid, None
        if pid is None:
            return -1
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)
