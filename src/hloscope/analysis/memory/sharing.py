"""May an instruction write its output over an operand's buffer? XLA's answer, for XLA:CPU.

``can_share_operand`` transcribes ``HloDataflowAnalysis::CanShareOperandBufferWithUser``: the
operand and the output must have equal shapes (element type, dimensions and layout:
``ShapeUtil::Equal``), and then the user must be an in-place op on that operand, a loop or
input fusion that reaches the operand only through elementwise ops, an output fusion adding
the operand to a dot or convolution, a while or conditional, a sort that is the operand's only
user, or an op (any other fusion included) elementwise on the operand, reading it once. Constants
and copies never share. Buffer assignment asks it where two live ranges touch (Note [Sharing
at a touch point] in ``assignment.py``) and the heap simulator where an operand dies as its
user starts (``heap.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hloscope.analysis.memory.dataflow import ELEMENTWISE_FAMILIES, in_place_pairs
from hloscope.ir import Opcode, ShapeIndex, TupleShape, subshape
from hloscope.ir.dtypes import primitive_type

if TYPE_CHECKING:
    from hloscope.ir import Computation, Instruction

__all__ = ["can_share_operand"]


def _elementwise(inst: Instruction) -> bool:
    op = inst.opcode
    return op.value.family in ELEMENTWISE_FAMILIES or op in (Opcode.CLAMP, Opcode.SELECT)


def _elementwise_on_operand(inst: Instruction, number: int | None = None) -> bool:
    """XLA's ``IsElementwiseOnOperand`` (``IsElementwise`` when ``number`` is None): a
    dynamic-update-slice is elementwise on the buffer it updates (operand 0) only, a copy and a
    constant are elementwise, a bitcast-convert only between equal widths, a map over its
    dimensions in order, a fusion when every path from that operand's parameter to the root is
    (``HloFusionInstruction::IsElementwiseImpl``)."""
    op = inst.opcode
    if op is Opcode.DYNAMIC_UPDATE_SLICE:
        return number == 0
    if op is Opcode.BITCAST_CONVERT:
        src = inst.operands[0].array_shape  # bitcast-convert reads and makes arrays only
        out = inst.array_shape.element_type
        return primitive_type(out).bits == primitive_type(src.element_type).bits
    if op is Opcode.MAP:
        # A map over all dimensions in order (or written without them) is elementwise.
        dims = tuple(inst.attrs.get("dimensions") or ())
        return not dims or dims == tuple(range(inst.array_shape.rank))
    if op is Opcode.CONSTANT:
        return True
    if op is Opcode.FUSION:
        comp = inst.attrs["calls"]
        if number is None:
            return all(i.opcode is Opcode.PARAMETER or _elementwise_on_operand(i) for i in comp.instructions)
        return _fusion_elementwise_on(comp.parameters[number])
    return op is Opcode.COPY or _elementwise(inst)


def _fusion_elementwise_on(param: Instruction) -> bool:
    """Every instruction downstream of a fused ``param`` is elementwise, or elementwise on the
    operands it reads the path through (unlike ``_transitively_elementwise``, a tuple is not)."""
    comp = param.computation
    assert comp is not None  # a fused parameter belongs to its fusion computation
    stack, seen = [param], {param}
    while stack:
        current = stack.pop()
        for u in comp.users(current):
            if u in seen:
                continue
            if not (_elementwise_on_operand(u) or all(
                    _elementwise_on_operand(u, k) for k, o in enumerate(u.operands) if o is current)):
                return False
            seen.add(u)
            stack.append(u)
    return True


def _transitively_elementwise(param: Instruction) -> bool:
    """XLA's ``AreTransitiveUsesElementwiseOrTuple``: every instruction downstream of ``param``
    inside its fusion is elementwise on the operands it reads it through, or a tuple (a bitcast
    is neither; a dynamic-update-slice is, on the buffer it updates)."""
    comp = param.computation
    assert comp is not None  # a fused parameter belongs to its fusion computation
    stack, seen = [param], {param}
    while stack:
        current = stack.pop()
        for u in comp.users(current):
            if u.opcode is not Opcode.TUPLE and not all(
                    _elementwise_on_operand(u, k) for k, o in enumerate(u.operands) if o is current):
                return False
            if u not in seen:
                seen.add(u)
                stack.append(u)
    return True


def can_share_operand(operand: Instruction, operand_index: ShapeIndex, user: Instruction,
                      user_index: ShapeIndex) -> bool:
    """XLA's ``CanShareOperandBufferWithUser`` for the cases XLA:CPU meets."""
    if operand.opcode is Opcode.CONSTANT:
        return False
    try:
        a = subshape(operand.shape, operand_index)
        b = subshape(user.shape, user_index)
    except IndexError:
        return False
    # ShapeUtil::Equal comes first, even for in-place ops: a fusion whose root is a bitcast of
    # its result keeps its own buffer (measured: pmap_donate in tests/analysis/jax_programs.py).
    if (isinstance(a, TupleShape) or isinstance(b, TupleShape) or a.element_type != b.element_type or a.dimensions != b.dimensions
            or a.layout != b.layout):
        return False
    operands = user.operands
    for num, op_idx, out_idx in in_place_pairs(user):
        if out_idx == user_index and num < len(operands) and operands[num] is operand and op_idx == operand_index:
            return True
    nums = [i for i, o in enumerate(operands) if o is operand]
    if user.opcode is Opcode.FUSION:
        kind = user.attrs.get("kind")
        comp = user.attrs["calls"]
        if kind in ("kLoop", "kInput"):
            return len(nums) == 1 and _transitively_elementwise(comp.parameters[nums[0]])
        if kind == "kOutput" and comp.root.opcode is Opcode.ADD:
            return _output_fusion_accumulates(comp, comp.parameters[nums[0]])
        # Any other fusion, such as XLA:CPU's library fusions (kCustom, `__ynn_fusion`), meets
        # XLA's last rule: is it elementwise on the operand? (Found by tools/analysis_sweep.py.)
        return len(nums) == 1 and _fusion_elementwise_on(comp.parameters[nums[0]])
    if user.opcode in (Opcode.WHILE, Opcode.CONDITIONAL):
        return True
    if user.opcode is Opcode.SORT:
        # Sort permutes in place: operand k may become output k when sort is its only user.
        if len(operand.users) != 1:
            return False
        if len(operands) == 1:
            return True
        return len(nums) == 1 and user_index[:1] == (nums[0],)
    # XLA's last rule. (A copy never gets here: buffer assignment and the heap never let a copy
    # write over its operand.)
    if user.opcode is Opcode.COPY or len(nums) != 1:
        return False
    return _elementwise_on_operand(user, nums[0])


def _output_fusion_accumulates(comp: Computation, param: Instruction) -> bool:
    """XLA's rule for an output fusion rooted at ``add(dot or convolution, x)``: the fusion may
    write over ``param`` when ``param``'s only use is as ``x``."""
    root = comp.root
    product = next((o for o in root.operands if o.opcode in (Opcode.DOT, Opcode.CONVOLUTION)), None)
    if product is None:
        return False
    other = 1 if product is root.operands[0] else 0
    uses = [(u, k) for u in comp.users(param) for k, o in enumerate(u.operands) if o is param]
    return uses == [(root, other)]
