"""The report's op-profile section: ``analysis.profile`` as page data, and its per-instruction
figures beside each computation's rows (the graph's colourings read them).

Only renders: every figure is ``OpProfile``'s own (``to_json``), the same the CLI's
``hloscope profile`` prints.
"""
from __future__ import annotations

from typing import Any

from hloscope.analysis.cost import CostReport
from hloscope.analysis.hardware import HardwareSpec, load_hardware
from hloscope.analysis.profile import CATEGORIES, OpProfile, analyze_profile
from hloscope.analysis.timing import TimeEstimate
from hloscope.ir.module import Module

__all__ = ["profile_of", "attach_profile"]


def profile_of(module: Module, cost: CostReport, estimate: TimeEstimate, hardware: Any) -> OpProfile:
    """The op profile of ``estimate``; ``hardware`` is the spec (or bundled name) it was made on."""
    spec = hardware if isinstance(hardware, HardwareSpec) else load_hardware(str(hardware))
    return analyze_profile(module, estimate, cost, spec)


def attach_profile(computations: list[dict[str, Any]], profile: OpProfile) -> None:
    """Each row's category (an index into ``categories``, -1 for none) and FLOP and bandwidth
    utilisation (fractions of the peaks, None where the instruction takes no time)."""
    index = {c: k for k, c in enumerate(CATEGORIES)}
    per = profile.per_instruction
    for comp in computations:
        cat, flop, band = [], [], []
        for r in comp["instructions"]:
            got = per.get(r[0])
            cat.append(index.get(got[0], -1) if got else -1)
            flop.append(None if not got or got[1] is None else round(got[1], 4))
            band.append(None if not got or got[2] is None else round(got[2], 4))
        comp["category"], comp["flop_util"], comp["band_util"] = cat, flop, band
