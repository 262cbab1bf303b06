"""XLA's ``peak_memory_in_bytes``, computed as XLA computes it, and the words that name it.

Note [peak_memory_in_bytes]
---------------------------
``compiled.memory_analysis().peak_memory_in_bytes`` is not a live-range peak. Read in XLA's
source (xla/pjrt/cpu/cpu_client.cc ``GetCompiledMemoryStats``,
xla/pjrt/se/stream_executor_executable.cc, xla/service/buffer_assignment.cc
``ComputePeakMemoryImpl``), it is ``ComputePeakMemorySizes`` over the executable's
``BufferAssignmentProto``:

1. *Static allocations*: every allocation that is an entry parameter, a constant or maybe
   live out, and not thread-local, counts the size of the largest value assigned to it
   (``AllocateStaticBuffers``; every memory space). An aliased parameter is one allocation,
   so this is arguments + outputs - aliased + constants, give or take an allocation holding a
   smaller value than its size.
2. Then the events of the heap-simulator traces the proto carries (``heap_simulator_traces``)
   are replayed on top: ``ALLOC`` adds a value's size, ``FREE`` takes it away, ``SHARE_WITH``
   (a value written over its operand) adds nothing. The peak is the most memory seen.

What each backend's proto carries decides what the figure counts:

* **XLA:CPU**: ``CpuCompiler`` calls ``CpuExecutable::Finalize``, which calls
  ``BufferAssignment::Finalize``, and that clears every allocation's heap traces before the
  proto is made. Step 2 replays nothing: the figure is the static allocations alone, and no
  temporary counts. Measured: equal to jax's figure on every model of the models tier and
  every program of ``tests/analysis/test_memory.py``.
* **XLA:GPU**: ``GpuCompiler`` makes the proto right after buffer assignment, traces kept
  (one per heap simulation, so per memory space): static allocations plus the most bytes the
  temporaries hold at once, with in-place writes counted once. Here that is computed on
  hloscope's assignment, which follows XLA:CPU's rules (alignment, which operands a result
  may overwrite); XLA:GPU's own assignment may differ, and no GPU was at hand to check it.
* **XLA:TPU**: the TPU compiler fills the figure itself (through the PJRT C API); its code is
  not open, so hloscope gives no figure.

hloscope's own peak (Note [One peak] in ``peak.py``) is another quantity: the most bytes live
at one step of the schedule, temporaries included. The two are always shown side by side,
each under its own name (``XlaPeakMemory.label`` and ``LIVE_RANGE_PEAK_LABEL``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hloscope.analysis.memory.assignment import AllocationDraft
    from hloscope.analysis.memory.dataflow import Value
    from hloscope.ir import Module

__all__ = ["BACKENDS", "LIVE_RANGE_PEAK_LABEL", "XlaPeakMemory", "counted_twice", "guess_backend",
           "static_bytes", "xla_peak_memory"]

BACKENDS = ("cpu", "gpu", "tpu")

LIVE_RANGE_PEAK_LABEL = "live-range peak, S(0) (hloscope: most bytes live at one step)"
"""The name hloscope's own peak (``MemoryReport.peak_bytes``) goes by in the CLI and on the page."""

_COUNTS = {
    "cpu": "the static allocations: arguments + outputs - aliased + constants, each allocation at "
           "its largest value; XLA:CPU's buffer assignment keeps no heap traces, so no temporary counts",
    "gpu": "the static allocations (arguments + outputs - aliased + constants) plus the most bytes "
           "the temporaries hold at once (XLA:GPU keeps its heap traces), computed on hloscope's "
           "assignment, which follows XLA:CPU's rules",
    "tpu": "filled in by XLA's TPU compiler, whose code is not open: hloscope cannot derive it",
}

# Custom-call targets only GPU stacks emit (cuBLAS, cuDNN, Triton, jax's CUDA kernels,
# Transformer Engine).


@dataclass(frozen=True)
class XlaPeakMemory:
    """XLA's ``peak_memory_in_bytes`` for ``backend`` (Note [peak_memory_in_bytes]).

    ``bytes`` is None where hloscope cannot derive it (TPU). ``backend_reason`` says why that
    backend was assumed; ``static_bytes`` and ``heap_trace_peak_bytes`` are the two parts XLA
    adds (the second only where the backend keeps heap traces).
    """

    backend: str
    backend_reason: str
    static_bytes: int
    heap_trace_peak_bytes: int

    @property
    def bytes(self) -> int | None:
        if self.backend == "cpu":
            return self.static_bytes
        if self.backend == "gpu":
            return self.static_bytes + self.heap_trace_peak_bytes
        return None

    @property
    def label(self) -> str:
        """What the figure is, in a few words (the CLI's row and the page's chip)."""
        name = f"XLA:{self.backend.upper()} peak_memory_in_bytes"
        return name if self.bytes is None else name + " (as XLA computes it)"

    @property
    def counts(self) -> str:
        """What the figure counts, in a sentence."""
        return _COUNTS[self.backend]

    def to_json(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "backend": self.backend, "backend_reason": self.backend_reason,
                "label": self.label, "counts": self.counts, "static_bytes": self.static_bytes,
                "heap_trace_peak_bytes": self.heap_trace_peak_bytes}


def guess_backend(module: Module) -> tuple[str, str]:
    """The backend ``module`` was compiled for, and why (analysis/backend.py, the one inference
    the estimate and the report use too); a module that names no backend is counted as XLA:CPU's."""
    from hloscope.analysis.backend import infer_backend

    inferred = infer_backend(module)
    if inferred.backend == "unknown":
        return "cpu", f"assumed: {inferred.reason()}"
    return inferred.backend, inferred.reason()


def static_bytes(allocations: list[AllocationDraft]) -> int:
    """XLA's ``AllocateStaticBuffers``: each entry-parameter, constant or maybe-live-out
    allocation (not thread-local) at the size of the largest value assigned to it."""
    total = 0
    for a in allocations:
        is_param = a.kind == "parameter"
        live_out = a.kind == "maybe-live-out" or (is_param and not a.readonly)
        if a.kind == "thread-local" or not (is_param or a.kind == "constant" or live_out):
            continue
        total += max((size for _, _, size in a.assigned), default=0)
    return total


def xla_peak_memory(module: Module, allocations: list[AllocationDraft], heap_trace_peaks: dict[int, int],
                    backend: str | None = None) -> XlaPeakMemory:
    """XLA's ``peak_memory_in_bytes`` of ``module`` for ``backend`` (guessed when None), from
    hloscope's allocations and each memory space's heap trace peak."""
    if backend is None:
        backend, reason = guess_backend(module)
    elif backend in BACKENDS:
        reason = "given"
    else:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    # ComputePeakMemoryImpl replays the traces one after another; each frees what it allocated,
    # so the most any one adds is what counts.
    return XlaPeakMemory(backend, reason, static_bytes(allocations), max(heap_trace_peaks.values(), default=0))


def counted_twice(peak_values: list[tuple[Value, int]], allocations: list[AllocationDraft]) -> int:
    """Bytes the live-range peak counts twice: buffers live at the peak step whose memory
    overlaps, because one is written over the other at that step (Note [Sharing at a touch
    point] in ``assignment.py``). The step counts both, the memory holds them once."""
    if not peak_values:
        return 0
    live_buffers = {v.id: v for v, _ in peak_values}
    slices: dict[int, list[tuple[int, int]]] = {}
    for a in allocations:
        for v, offset, size in a.assigned:
            if v.id in live_buffers:
                slices.setdefault(a.index, []).append((offset, offset + size))
    twice = 0
    for spans in slices.values():
        spans.sort()
        reach = spans[0][0]
        for lo, hi in spans:
            if lo < reach:
                twice += min(hi, reach) - lo
            reach = max(reach, hi)
    return twice
