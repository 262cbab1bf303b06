"""Shape inference: the result shape of every HLO opcode from its operands and attributes.

``infer_shape(inst)`` gives the shape XLA's ``ShapeInference`` would give ``inst``, or raises
``ShapeInferenceError`` saying which operand or attribute is inconsistent and what was expected.
One registry keyed by opcode (``SHAPE_RULES``) holds the rules; opcodes whose result cannot be
derived from the operands are listed in ``NOT_INFERABLE`` with a reason, and where part of their
shape can still be checked, ``check_shape`` does so. Every opcode is in exactly one of the two
tables (a test enforces it).

The registry and the vocabulary rules are written in live in ``shapes/rules.py``; the rules
themselves in one module per op family, all imported here so that importing this module fills
the registry:

==========================  ============================================================
``shapes/elementwise``       unary, binary, compare, select, clamp, convert, bitcast-convert
``shapes/movement``          transpose, slices, concatenate, pad, tuples, gather, scatter,
                            and the checks of reshape, broadcast and iota
``shapes/reduction``         reduce, reduce-window, select-and-scatter, sort, topk, batch norm
``shapes/linalg``            dot, convolution, fft, triangular-solve
``shapes/collectives``       all-reduce, all-gather, reduce-scatter, all-to-all, permutes
``shapes/async_ops``         async-start/-update/-done (both spellings), copy-start/-done
``shapes/control``           call, fusion, conditional, while, map, send/recv, fixed shapes
==========================  ============================================================

Comparisons ignore layouts (``same_shape``; the verifier uses XLA's ``compatible``, which also
ignores dynamic flags).
"""
from __future__ import annotations

from hloscope.ir.instruction import Instruction
from hloscope.ir.shape import Shape
from hloscope.ir.shapes import (  # noqa: F401 - importing a family registers its rules
    async_ops,
    collectives,
    control,
    elementwise,
    linalg,
    movement,
    reduction,
)
from hloscope.ir.shapes.async_ops import (
    async_start_of,
    async_wrapped_computation,
    async_wrapped_instruction,
)
from hloscope.ir.shapes.elementwise import ELEMENT_KINDS
from hloscope.ir.shapes.reduction import window_output_dimensions
from hloscope.ir.shapes.rules import (
    NOT_INFERABLE,
    SHAPE_CHECKS,
    SHAPE_RULES,
    ShapeInferenceError,
    compatible,
    is_prefix,
    same_shape,
    same_type_ignoring_fp_precision,
    shape_check,
    shape_rule,
    shape_text,
)

__all__ = [
    "NOT_INFERABLE", "SHAPE_CHECKS", "SHAPE_RULES", "ShapeInferenceError", "async_start_of",
    "async_wrapped_computation", "async_wrapped_instruction", "check_shape", "compatible",
    "infer_shape", "is_prefix", "same_shape", "same_type_ignoring_fp_precision", "shape_check",
    "shape_rule", "shape_text", "window_output_dimensions",
]

# The element-type table of the elementwise rules, under the name tools/fuzz_hlo.py's tests
# patch (the same dict object, so patching it changes the rules).
_ELEMENT_KINDS = ELEMENT_KINDS


def infer_shape(inst: Instruction) -> Shape | None:
    """The shape XLA infers for ``inst`` (None for opcodes in ``NOT_INFERABLE``).

    Raises ``ShapeInferenceError`` when the operands or attributes are inconsistent.
    """
    rule = SHAPE_RULES.get(inst.opcode)
    return None if rule is None else rule(inst)


def check_shape(inst: Instruction) -> None:
    """Run the partial consistency check of a non-inferable opcode (no-op when it has none)."""
    check = SHAPE_CHECKS.get(inst.opcode)
    if check is not None:
        check(inst)
