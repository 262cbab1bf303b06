"""The simulated schedule's vocabulary: its streams and its intervals (``ScheduledOp``).

``analysis.timing`` fills a schedule as it estimates a step; ``analysis.trace`` turns it into
a timeline. Both read these names from here, so neither imports the other's internals.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["COMPUTE", "COMMUNICATION", "COPY", "HOST", "ASYNC", "STREAMS", "ScheduledOp"]

# The streams of the simulated schedule: kernels, collectives, asynchronous copies (copy-start
# to copy-done), host transfers (send/recv to their -done) and other asynchronous work.
COMPUTE, COMMUNICATION, COPY, HOST, ASYNC = "compute", "communication", "copy", "host", "async"
STREAMS = (COMPUTE, COMMUNICATION, COPY, HOST, ASYNC)


@dataclass(frozen=True, slots=True)
class ScheduledOp:
    """One interval of the simulated schedule (seconds from the start of the step).

    Instructions inside a loop body, a called computation or a conditional's slowest branch
    are recorded too, for their first run only (Note [Nested schedule] in ``timing.py``):
    ``parent`` names the while, call or conditional they run under and ``depth`` counts the
    levels (0 in the entry).
    """

    instruction: str
    opcode: str
    start: float
    end: float
    stream: str
    computation: str = ""
    depth: int = 0
    parent: str = ""

    @property
    def duration(self) -> float:
        return self.end - self.start
