"""The numerics stage: where a NaN is born, what every value holds, where two runs part, and
the smallest module that still shows a problem.

    import hloscope as hs
    first = hs.find_nonfinite(m, inputs, replicas=8)     # FirstNonfinite | None
    stats = hs.value_stats(m, inputs, select="fusion")   # per instruction and device

These tools observe runs (Note [Observers] in interpret/evaluator.py) and never change what a
run computes; comparing and reducing build new modules with the IR editing API and run them.
"""
from hloscope.numerics.nonfinite import (
    FirstNonfinite,
    InputRecord,
    InstructionRecord,
    NonfiniteWatch,
    find_nonfinite,
)
from hloscope.numerics.summary import ValueSummary, summarize

__all__ = [
    "FirstNonfinite", "InputRecord", "InstructionRecord", "NonfiniteWatch", "ValueSummary",
    "find_nonfinite", "summarize",
]
