"""The interpreter's registry: which handler evaluates each opcode, and why some have none.

A handler is ``handler(ctx, inst, operands) -> value``: ``ctx`` is the device's
``EvalContext`` (evaluator.py), ``inst`` the Instruction, ``operands`` the operand values in
order. A handler that calls computations or meets other devices is a *generator function*; the
evaluator drives it with ``yield from`` (Note [Cooperative devices] in run.py). Handlers are
registered with ``@evaluates(Opcode.X, ...)`` next to the family they adapt (handlers.py,
control_flow.py, custom_calls.py, run.py); importing ``hloscope.interpret`` loads them all.

Every opcode either has a handler or a stated reason in ``UNSUPPORTED`` (style habit 2); a test
checks that nothing falls between the two.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from hloscope.ir import Opcode
from hloscope.ir.op_table import OpTable

__all__ = ["Handler", "HANDLERS", "UNSUPPORTED", "evaluates", "handler_for", "implemented_opcodes",
           "is_generator_handler"]

Handler = Callable[[Any, Any, list[Any]], Any]

UNSUPPORTED: dict[Opcode, str] = {
    Opcode.INFEED: "infeed reads from the host at run time; hloscope has no host stream to read",
    Opcode.OUTFEED: "outfeed writes to the host at run time; hloscope has no host stream",
    Opcode.SEND: "send/recv pair with a host or another program; not modelled",
    Opcode.SEND_DONE: "send/recv pair with a host or another program; not modelled",
    Opcode.RECV: "send/recv pair with a host or another program; not modelled",
    Opcode.RECV_DONE: "send/recv pair with a host or another program; not modelled",
    Opcode.RAGGED_ALL_TO_ALL: "ragged collectives have no pure function in collectives.py yet",
    Opcode.RAGGED_DOT: "ragged-dot has no pure function in linalg.py yet",
    Opcode.SCALED_DOT: "scaled-dot (block-scaled fp8/fp4) has no pure function in linalg.py yet",
    Opcode.COLLECTIVE_REDUCE: "collective-reduce has no pure function in collectives.py yet",
    Opcode.SHUFFLE: "shuffle has no documented semantics in XLA's evaluator",
}


HANDLERS: OpTable[Handler] = OpTable("interpreter", unsupported=UNSUPPORTED)


def evaluates(*opcodes: Opcode, replace: bool = False) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of ``opcodes`` (one owner per opcode,
    Note [One rule for duplicates] in hloscope.ir.op_table)."""
    return HANDLERS.register(*opcodes, replace=replace)


def handler_for(opcode: Opcode) -> Handler | None:
    """The registered handler of ``opcode``, or None."""
    return HANDLERS.get(opcode)


def is_generator_handler(fn: Handler) -> bool:
    """True for handlers the evaluator must drive with ``yield from``."""
    return inspect.isgeneratorfunction(fn)


def implemented_opcodes() -> frozenset[Opcode]:
    """Opcodes the interpreter can evaluate (after ``hloscope.interpret`` has been imported)."""
    return frozenset(HANDLERS)
