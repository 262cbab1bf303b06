"""Memory analysis in XLA's stages: dataflow -> liveness -> sharing -> heap -> assignment -> report.

``analyze_memory(module)`` is the entry; the buffer-assignment nouns it fills live in
``hloscope.ir.buffer_assignment``.
"""
from hloscope.analysis.memory.report import (
    MAX_JSON_BUFFERS,
    LiveBuffer,
    MemoryReport,
    PeakBuffer,
    TimelinePoint,
    analyze_memory,
)

__all__ = ["PeakBuffer", "LiveBuffer", "TimelinePoint", "MemoryReport", "analyze_memory",
           "MAX_JSON_BUFFERS"]
