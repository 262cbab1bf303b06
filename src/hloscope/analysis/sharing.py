"""May an instruction write its output over an operand's buffer? XLA's answer, for XLA:CPU.

``can_share_operand`` transcribes ``HloDataflowAnalysis::CanShareOperandBufferWithUser``: the
operand and the output must have equal shapes (element type, dimensions and layout:
``ShapeUtil::Equal``), and then the user must be an in-place op on that operand, a loop or
input fusion that reaches the operand only through elementwise ops, a while or conditional, a
sort that is the operand's only user, or an elementwise op reading the operand once. Constants
and copies never share. Buffer assignment asks it where two live ranges touch (Note [Sharing
at a touch point] in ``assignment.py``) and the heap simulator where an operand dies as its
user starts (``heap.py``).
"""

from __future__ import annotations

from hloscope.analysis.dataflow import ELEMENTWISE_FAMILIES, _in_place_pairs
from hloscope.ir import Opcode

__all__ = ["can_share_operand"]


def _elementwise(inst: object) -> bool:
    op = inst.opcode  # type: ignore[attr-defined]
    return op.value.family in ELEMENTWISE_FAMILIES or op in (Opcode.CLAMP, Opcode.SELECT)


def _transitively_elementwise(param: object) -> bool:
    """XLA's ``AreTransitiveUsesElementwiseOrTuple``: every instruction downstream of ``param``
    inside its fusion is elementwise or a tuple (a bitcast is neither)."""
    comp = param.computation  # type: ignore[attr-defined]
    stack, seen = [param], {param}
    while stack:
        for u in comp.users(stack.pop()):
            if not (_elementwise(u) or u.opcode is Opcode.TUPLE):
                return False
            if u not in seen:
                seen.add(u)
                stack.append(u)
    return True


def can_share_operand(operand: object, operand_index: tuple[int, ...], user: object,
                      user_index: tuple[int, ...]) -> bool:
    """XLA's ``CanShareOperandBufferWithUser`` for the cases XLA:CPU meets."""
    from hloscope.ir.shape import subshape

    if operand.opcode is Opcode.CONSTANT:  # type: ignore[attr-defined]
        return False
    try:
        a = subshape(operand.shape, operand_index)  # type: ignore[attr-defined]
        b = subshape(user.shape, user_index)  # type: ignore[attr-defined]
    except IndexError:
        return False
    # ShapeUtil::Equal comes first, even for in-place ops: a fusion whose root is a bitcast of
    # its result keeps its own buffer (measured: pmap_donate in tests/analysis/jax_programs.py).
    if (a.is_tuple or b.is_tuple or a.element_type != b.element_type or a.dimensions != b.dimensions
            or a.layout != b.layout):
        return False
    operands = user.operands  # type: ignore[attr-defined]
    for num, op_idx, out_idx in _in_place_pairs(user):
        if out_idx == user_index and num < len(operands) and operands[num] is operand and op_idx == operand_index:
            return True
    if user.opcode is Opcode.FUSION:  # type: ignore[attr-defined]
        if user.attrs.get("kind") not in ("kLoop", "kInput", "kOutput"):  # type: ignore[attr-defined]
            return False
        comp = user.attrs["calls"]  # type: ignore[attr-defined]
        nums = [i for i, o in enumerate(operands) if o is operand]
        return len(nums) == 1 and _transitively_elementwise(comp.parameters[nums[0]])
    if user.opcode in (Opcode.WHILE, Opcode.CONDITIONAL):  # type: ignore[attr-defined]
        return True
    if user.opcode is Opcode.SORT:  # type: ignore[attr-defined]
        # Sort permutes in place: operand k may become output k when sort is its only user.
        if len(operand.computation.users(operand)) != 1:  # type: ignore[attr-defined]
            return False
        if len(operands) == 1:
            return True
        nums = [i for i, o in enumerate(operands) if o is operand]
        return len(nums) == 1 and user_index[:1] == (nums[0],)
    return _elementwise(user) and sum(o is operand for o in operands) == 1
