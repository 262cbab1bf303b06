"""Shape rules of reductions and window ops: reduce, reduce-window, select-and-scatter, sort,
topk and batch norm; ``window_output_dimensions`` is shared with convolution.
"""
from __future__ import annotations

from hloscope.ir.attributes import Window
from hloscope.ir.instruction import Instruction
from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import ArrayShape, Shape, TupleShape
from hloscope.ir.shapes.rules import (
    ShapeInferenceError,
    array_shape,
    attribute,
    dims_in_range,
    int_attribute,
    merge_equal,
    operand_shape,
    operand_shapes,
    same_type_ignoring_fp_precision,
    shape_rule,
    shape_text,
    tuple_or_single,
)

__all__ = ["window_output_dimensions"]


def window_output_dimensions(base: tuple[int, ...], window: Window) -> tuple[int, ...]:
    """Output sizes of a window sweep over ``base`` (XLA's InferWindowOutputShape).

    Per dimension: the dilated, padded base and the dilated window give
    ``(padded - window) // stride + 1``, or 0 when the window does not fit.
    """
    if len(window.dimensions) != len(base):
        raise ShapeInferenceError(f"window has {len(window.dimensions)} dimensions for rank {len(base)}")
    out = []
    for n, w in zip(base, window.dimensions, strict=True):
        if w.size <= 0 or w.stride <= 0 or w.base_dilation <= 0 or w.window_dilation <= 0:
            raise ShapeInferenceError(f"window dimension {w} has a non-positive size, stride or dilation")
        padded = (max(n - 1, 0) * w.base_dilation + 1 if n else 0) + w.padding_low + w.padding_high
        span = (w.size - 1) * w.window_dilation + 1
        out.append(0 if span > padded else (padded - span) // w.stride + 1)
    return tuple(out)


def _inputs_and_inits(inst: Instruction) -> tuple[list[ArrayShape], list[ArrayShape]]:
    shapes = operand_shapes(inst)
    n = len(shapes) // 2
    if len(shapes) % 2 or not n:
        raise ShapeInferenceError(f"{inst.opcode.text} needs N inputs and N init values, got {len(shapes)} operands")
    inputs, inits = shapes[:n], shapes[n:]
    for i, (x, v) in enumerate(zip(inputs, inits, strict=True)):
        if v.rank or x.dimensions != inputs[0].dimensions:
            raise ShapeInferenceError(
                f"input {i} {shape_text(x)} / init {shape_text(v)} of {inst.opcode.text}: inits must be "
                f"scalars and inputs must share dimensions {list(inputs[0].dimensions)}")
    return inputs, inits



def _accumulator_types(inst: Instruction, inits: list[ArrayShape]) -> list[str]:
    """The result element types of a reduction: its reducer's accumulator types, as XLA's
    InferReduceShape takes them. An init may differ from its accumulator in float precision
    only (an f8 init of an f32 sum gives an f32 result)."""
    comp = inst.attrs.get("to_apply")
    root = getattr(comp, "root", None)
    if root is None:  # no reducer to read (a malformed module): the inits' types
        return [v.element_type for v in inits]
    leaves = [leaf for _, leaf in root.shape.leaves()]
    if len(leaves) != len(inits) or any(leaf.rank for leaf in leaves) or not all(
            same_type_ignoring_fp_precision(leaf.element_type, v.element_type)
            for leaf, v in zip(leaves, inits, strict=True)):
        # A reducer that does not fit its inits: the verifier's signature check says how.
        return [v.element_type for v in inits]
    return [leaf.element_type for leaf in leaves]


@shape_rule(Opcode.REDUCE)
def _reduce(inst: Instruction) -> Shape:
    """Inputs without ``dimensions``, in the reducer's accumulator types; a tuple when variadic."""
    inputs, inits = _inputs_and_inits(inst)
    dims = tuple(attribute(inst, "dimensions"))
    dims_in_range(dims, inputs[0].rank, "reduce dimension")
    keep = [k for k in range(inputs[0].rank) if k not in dims]
    return tuple_or_single([array_shape(t, (x.dimensions[k] for k in keep))
                             for x, t in zip(inputs, _accumulator_types(inst, inits), strict=True)])


@shape_rule(Opcode.REDUCE_WINDOW)
def _reduce_window(inst: Instruction) -> Shape:
    """The window's output sizes over the inputs, in the reducer's accumulator types."""
    inputs, inits = _inputs_and_inits(inst)
    # The window may be left out where it has no dimensions (XLA's parser makes it empty).
    dims = window_output_dimensions(inputs[0].dimensions, attribute(inst, "window", Window(())))
    return tuple_or_single([array_shape(t, dims) for t in _accumulator_types(inst, inits)])


@shape_rule(Opcode.SELECT_AND_SCATTER)
def _select_and_scatter(inst: Instruction) -> Shape:
    """Operand 0's shape; the source has the window's output shape over it."""
    s, src, init = operand_shape(inst, 0), operand_shape(inst, 1), operand_shape(inst, 2)
    expected = window_output_dimensions(s.dimensions, attribute(inst, "window", Window(())))
    if src.dimensions != expected:
        raise ShapeInferenceError(f"source {shape_text(src)} must have the window's output dimensions {list(expected)}")
    if init.rank or init.element_type != src.element_type:
        raise ShapeInferenceError(f"init value must be {src.element_type}[], got {shape_text(init)}")
    return s


@shape_rule(Opcode.SORT)
def _sort(inst: Instruction) -> Shape:
    """The operands' shapes (a tuple when several); all share dimensions."""
    shapes = operand_shapes(inst)
    for i, s in enumerate(shapes):
        merge_equal(inst, shapes[0], s, 0, i, check_type=False)
    dims_in_range(tuple(attribute(inst, "dimensions")), shapes[0].rank, "sort dimension")
    return tuple_or_single(list(shapes))


@shape_rule(Opcode.TOPK)
def _topk(inst: Instruction) -> Shape:
    """(values, s32 indices), the minor dimension cut to ``k``."""
    s, k = operand_shape(inst, 0), attribute(inst, "k")
    if not s.rank or k > s.dimensions[-1]:
        raise ShapeInferenceError(f"topk k={k} exceeds the minor dimension of {shape_text(s)}")
    dims = (*s.dimensions[:-1], k)
    return TupleShape((array_shape(s.element_type, dims), array_shape("s32", dims)))


@shape_rule(Opcode.BATCH_NORM_TRAINING, Opcode.BATCH_NORM_GRAD)
def _batch_norm(inst: Instruction) -> Shape:
    """(operand shape, feature vector, feature vector)."""
    s = operand_shape(inst, 0)
    f = int_attribute(inst, "feature_index")
    dims_in_range((f,), s.rank, "feature_index")
    vec = array_shape(s.element_type, (s.dimensions[f],))
    return TupleShape((s, vec, vec))


