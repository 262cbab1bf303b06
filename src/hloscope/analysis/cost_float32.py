"""XLA's cost totals as XLA adds them up: hloscope's per-instruction costs summed in float32.

Note [XLA sums costs in float32]
    ``HloCostAnalysis`` (xla/service/hlo_cost_analysis.cc) keeps every property in a
    ``float``: ``Postprocess`` adds each instruction's properties to ``properties_sum_`` with
    ``properties_sum_[key] += val``, in the order ``HloComputation::Accept`` visits them (a
    post-order depth-first walk from the root, operands first in operand order, then control
    predecessors; instructions nobody uses are walked first, from each in turn). A called
    computation is summed the same way by a nested analysis (``ProcessSubcomputation``), and
    its float sum becomes the caller's property: a fusion's FLOPs and transcendentals
    (``HandleFusion``; its bytes are computed apart), the whole of a call or async-start, a
    loop's body plus its condition (``HandleWhile``), the largest of a conditional's branches.
    ``compiled.cost_analysis()`` (``PjRtExecutableUtil::RunHloCostAnalysis``) returns the entry
    computation's sum. Each instruction's own figure is an integer stored into a float, so it
    is rounded once too.

    Past 2**24 a float32 cannot hold every integer, so XLA's total differs from the exact one
    (gpt_dp8: exact 48,264,309 FLOPs, XLA 48,264,224). ``float32_total`` repeats XLA's
    additions, in XLA's order, on hloscope's per-instruction counts: where hloscope counts
    every instruction as XLA does, the result is XLA's figure to the bit; a real difference in
    any count shows as a different float.
"""
from __future__ import annotations

import numpy as np

from hloscope.analysis.cost import CostReport
from hloscope.analysis.cost_rules import Cost
from hloscope.ir import Computation, Instruction, Module, Opcode

__all__ = ["float32_total", "accept_order"]

_F32 = np.float32


def accept_order(comp: Computation) -> list[Instruction]:
    """The order ``HloComputation::Accept`` visits ``comp``'s instructions (Note [XLA sums
    costs in float32]): from each unused instruction that no control edge leaves, then from the
    root, depth first, operands in order, then control predecessors, each instruction once."""
    has_users: set[int] = set()
    control_successor: set[int] = set()
    for inst in comp.instructions:
        for op in inst.operands:
            has_users.add(id(op))
        for pred in inst.control_predecessors:
            control_successor.add(id(pred))
    starts = [i for i in comp.instructions
              if id(i) not in has_users and i is not comp.root and id(i) not in control_successor]
    starts.append(comp.root)
    order: list[Instruction] = []
    state: dict[int, int] = {}  # id -> 1 visiting, 2 visited
    for start in starts:
        if state.get(id(start)) == 2:
            continue
        stack = [start]
        while stack:
            node = stack[-1]
            s = state.get(id(node))
            if s == 2:
                stack.pop()
                continue
            if s == 1:
                stack.pop()
                state[id(node)] = 2
                order.append(node)
                continue
            state[id(node)] = 1
            # Pushed in operand order then reversed, so the first operand is walked first.
            children = [c for c in (*node.operands, *node.control_predecessors) if id(c) not in state]
            stack.extend(reversed(children))
    return order


def float32_total(module: Module, report: CostReport) -> Cost:
    """``report``'s module total summed as XLA sums it (Note [XLA sums costs in float32]):
    the value ``compiled.cost_analysis()`` reports when hloscope's per-instruction counts are
    XLA's."""
    per = report.per_instruction
    sums: dict[Computation, tuple[np.float32, np.float32, np.float32]] = {}

    def total(comp: Computation) -> tuple[np.float32, np.float32, np.float32]:
        got = sums.get(comp)
        if got is None:
            f = t = b = _F32(0)
            for inst in accept_order(comp):
                cf, ct, cb = own(inst)
                f, t, b = _F32(f + cf), _F32(t + ct), _F32(b + cb)
            got = sums[comp] = (f, t, b)
        return got

    def own(inst: Instruction) -> tuple[np.float32, np.float32, np.float32]:
        c = per.get(inst, Cost())
        exact = (_F32(c.flops), _F32(c.transcendentals), _F32(c.bytes_accessed))
        op = inst.opcode
        if op is Opcode.FUSION and not _custom_gather_or_scatter(inst):
            f, t, _ = total(inst.attrs["calls"])
            return f, t, exact[2]
        if op in (Opcode.CALL, Opcode.ASYNC_START) and inst.called_computations:
            return total(inst.called_computations[0])
        if op is Opcode.WHILE:
            body, cond = total(inst.attrs["body"]), total(inst.attrs["condition"])
            return (_F32(body[0] + cond[0]), _F32(body[1] + cond[1]), _F32(body[2] + cond[2]))
        if op is Opcode.CONDITIONAL:
            branches = [total(c) for c in inst.called_computations]
            return (max(b[0] for b in branches), max(b[1] for b in branches), max(b[2] for b in branches))
        return exact

    f, t, b = total(module.entry)
    return Cost(float(f), float(t), float(b))


def _custom_gather_or_scatter(inst: Instruction) -> bool:
    # HandleFusion charges a kCustom fusion around a gather or scatter as that op alone.
    return inst.attrs.get("kind") == "kCustom" and any(
        i.opcode in (Opcode.GATHER, Opcode.SCATTER) for i in inst.attrs["calls"].instructions)
