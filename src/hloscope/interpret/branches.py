"""Which branch a conditional runs: one answer for the evaluator's control flow, the lockstep
runner and the dynamic-size store, which all need it (a module of its own, so the size store
does not import the control flow that imports the evaluator)."""
from __future__ import annotations

from typing import Any

from hloscope.ir import Instruction

__all__ = ["select_branch"]


def select_branch(inst: Instruction, selector: Any) -> tuple[Any, int]:
    """The branch computation a conditional runs for ``selector``, and its index.

    An s32 selector picks ``branch_computations[i]``; XLA runs the last branch for an
    out-of-range index (negative ones too). A pred selector picks true (0) or false (1).
    """
    if "branch_computations" in inst.attrs:
        branches = inst.attrs["branch_computations"]
        index = int(selector)
        if not 0 <= index < len(branches):
            index = len(branches) - 1
        return branches[index], index
    index = 0 if bool(selector) else 1
    return inst.attrs["true_computation" if index == 0 else "false_computation"], index
