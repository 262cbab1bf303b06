"""Opcode coverage: for every opcode, whether each stage has a rule, or the reason it has none.

Built from the stages' own ``OpTable`` registries (shape inference, interpreter, cost
analysis), so it cannot drift from what the code does; tests/test_coverage.py checks every table,
lockstep and dataflow included. ``hloscope status`` prints it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hloscope.ir.opcode import Opcode

__all__ = ["StageCoverage", "OpcodeCoverage", "opcode_coverage"]


@dataclass(frozen=True, slots=True)
class StageCoverage:
    """One stage's answer for one opcode: ``rule`` or ``reason`` (why not), or neither (a gap)."""

    rule: bool
    reason: str | None = None

    @property
    def status(self) -> str:
        return "yes" if self.rule else ("no" if self.reason else "GAP")


@dataclass(frozen=True, slots=True)
class OpcodeCoverage:
    opcode: Opcode
    parse: StageCoverage
    verify: StageCoverage
    evaluate: StageCoverage
    cost: StageCoverage

    def to_json(self) -> dict[str, Any]:
        return {"opcode": self.opcode.text, **{
            stage: {"status": cov.status, "reason": cov.reason}
            for stage, cov in (("parse", self.parse), ("verify", self.verify), ("evaluate", self.evaluate),
                               ("cost", self.cost))
        }}


def opcode_coverage() -> list[OpcodeCoverage]:
    """Coverage of every opcode in the table, in table order."""
    import hloscope.interpret  # noqa: F401  (registers the handlers)
    from hloscope.analysis.cost import COST_RULES
    from hloscope.interpret.registry import HANDLERS
    from hloscope.ir.shape_inference import SHAPE_CHECKS, SHAPE_RULES

    out = []
    for op in Opcode:
        out.append(OpcodeCoverage(
            op,
            StageCoverage(True),  # the parser reads every opcode of the table
            StageCoverage(op in SHAPE_RULES or op in SHAPE_CHECKS, SHAPE_RULES.reason(op)),
            StageCoverage(op in HANDLERS, HANDLERS.reason(op)),
            StageCoverage(op in COST_RULES, COST_RULES.reason(op)),
        ))
    return out
