"""Memory analysis in XLA's stages: dataflow -> liveness -> sharing -> heap -> assignment -> report.

``analyze_memory(module)`` is the entry; the buffer-assignment nouns it fills live in
``hloscope.ir.buffer_assignment``. ``live_range_peaks(module)`` gives only the curves and peaks
(Note [One peak] in ``peak.py``), without the heap.
"""
from hloscope.analysis.memory.peak import PEAK_DEFINITION, SpaceUsage
from hloscope.analysis.memory.report import (
    MAX_JSON_BUFFERS,
    LiveBuffer,
    MemoryReport,
    MemorySpace,
    PeakBuffer,
    TimelinePoint,
    analyze_memory,
    live_range_peaks,
)

__all__ = ["PeakBuffer", "LiveBuffer", "TimelinePoint", "MemorySpace", "MemoryReport", "SpaceUsage",
           "analyze_memory", "live_range_peaks", "MAX_JSON_BUFFERS", "PEAK_DEFINITION"]
