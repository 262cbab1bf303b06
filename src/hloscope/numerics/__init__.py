"""The numerics stage: where a NaN is born, what every value holds, where two runs part, and
the smallest module that still shows a problem.

    import hloscope as hs
    first = hs.find_nonfinite(m, inputs, replicas=8)     # FirstNonfinite | None
    stats = hs.value_stats(m, inputs, select="fusion")   # StatsReport: per instruction and device
    report = hs.compare_modules(pre, post, inputs)       # CompareReport: .first_divergence
    report = hs.compare_with_xla(m, inputs)              # the same against XLA:CPU (needs jax)
    small = hs.reduce_module(m, inputs, Nonfinite())     # ReduceResult: .module, .candidate.inputs

The first two observe a run (Note [Observers] in interpret/evaluator.py: evaluator hooks
that never change what it computes); comparing and reducing are passes that build new modules
with the IR editing API (cut.py, reduce_passes.py) and run them. This stage sits above
``hloscope.xla`` (comparing with XLA:CPU runs cut-down modules in its child-process worker)
and below ``hloscope.api``.
"""
from hloscope.numerics.compare import (
    CompareReport,
    Divergence,
    PairError,
    ValueRef,
    compare_modules,
)
from hloscope.numerics.matching import Matching, match_values
from hloscope.numerics.nonfinite import (
    FirstNonfinite,
    InputRecord,
    InstructionRecord,
    NonfiniteWatch,
    find_nonfinite,
)
from hloscope.numerics.reduce import (
    Candidate,
    Command,
    DiffersFrom,
    DiffersFromXla,
    Nonfinite,
    ReduceResult,
    reduce_module,
)
from hloscope.numerics.stats import StatsReport, StatsRow, StatsWatch, value_stats
from hloscope.numerics.summary import ValueSummary, summarize
from hloscope.numerics.tolerances import COMPARE
from hloscope.numerics.xla_compare import compare_with_xla

__all__ = [
    "COMPARE", "Candidate", "Command", "CompareReport", "DiffersFrom", "DiffersFromXla", "Divergence",
    "FirstNonfinite", "InputRecord", "InstructionRecord", "Matching", "Nonfinite", "NonfiniteWatch", "PairError",
    "ReduceResult", "StatsReport", "StatsRow", "StatsWatch", "ValueRef", "ValueSummary", "compare_modules",
    "compare_with_xla", "find_nonfinite", "match_values", "reduce_module", "summarize", "value_stats",
]
