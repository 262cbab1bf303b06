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

# The stand-in for the wrapped instruction is the one shape inference and the verifier check
# (ir/shape_async.py): the analyses see the same instruction XLA's cost analysis would.
from hloscope.ir.shape_inference import async_wrapped_instruction

__all__ = ["async_wrapped_instruction"]
