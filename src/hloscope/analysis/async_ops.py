"""Async ops written as sugar: the instruction an ``op-start`` wraps, for the analyses.

Note [Async sugar costs]
    ``call-start(x), to_apply=f`` (and ``reduce-start``, ``custom-call-start``, ...) is XLA's
    short form of an async-start whose computation holds one instruction, the wrapped op, on
    parameters standing for the operands (Note [Async sugar] in ``text/shorthand.py``).
    XLA's ``HandleAsyncStart`` makes the computation's cost the async-start's, so the start
    costs exactly what the wrapped op costs alone (bytes included: a custom call's -1 too),
    and async-update/-done cost XLA's default bytes (their outputs plus the operand's
    pointer table). Measured on XLA's analysis of call, reduce, dot (with an update),
    custom-call and fusion sugar (``tests/analysis/async_sugar.py``, asserted in test_cost.py).
    Collectives wrapped this way (GPU dumps' ``reduce-scatter-start``, ``all-to-all-start``)
    are collectives for ``analysis.collectives`` and the estimate's link model.
"""
from __future__ import annotations

from hloscope.ir import Instruction, Opcode, TupleShape

__all__ = ["async_wrapped_instruction"]

# Async-start fields that belong to the async op, not to the instruction it wraps.
_ASYNC_ONLY_ATTRS = frozenset(("async_wrapped_opcode", "async_execution_thread", "async_group_id"))


def async_wrapped_instruction(inst: Instruction) -> Instruction | None:
    """The instruction an async-start written as sugar wraps, or None for any other instruction.

    See Note [Async sugar costs]. The result is a fresh stand-in, not part of any computation:
    it has the async op's operands, the wrapped opcode and attributes, and the shape at index
    {1} of the async-start (the wrapped instruction's result).
    """
    wrapped = inst.attrs.get("async_wrapped_opcode") if inst.opcode is Opcode.ASYNC_START else None
    if wrapped is None:
        return None
    shape = inst.shape
    out = shape.elements[1] if isinstance(shape, TupleShape) and len(shape.elements) > 1 else shape
    attrs = {k: v for k, v in inst.attrs.items() if k not in _ASYNC_ONLY_ATTRS}
    stand_in = Instruction(inst.name, wrapped, out, list(inst.operands), attrs, span=inst.span)
    stand_in.computation = inst.computation
    return stand_in
