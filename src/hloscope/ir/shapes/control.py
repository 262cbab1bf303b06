"""Shape rules of control flow and of the ops whose shape the opcode fixes: call, fusion,
conditional, while, map, scan, optimization barriers, send/recv, infeed/outfeed, rng, ids.
"""
from __future__ import annotations

from hloscope.ir.instruction import Instruction
from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import ArrayShape, Shape, TupleShape
from hloscope.ir.shapes.rules import (
    SCALAR,
    TOKEN,
    ShapeInferenceError,
    array_shape,
    called_root_shape,
    compatible,
    declared_array,
    int_attribute,
    merge_equal,
    operand_shape,
    operand_shapes,
    same_shape,
    shape_check,
    shape_rule,
    shape_text,
    tuple_element,
)

__all__: list[str] = []


@shape_rule(Opcode.CALL, Opcode.FUSION, Opcode.CONDITIONAL)
def _called_root(inst: Instruction) -> Shape:
    """The root shape of the (first) called computation; the verifier checks the others."""
    for attr in ("to_apply", "calls", "branch_computations", "true_computation"):
        if attr in inst.attrs:
            return called_root_shape(inst, attr)
    raise ShapeInferenceError(f"{inst.opcode.text} calls no computation")


@shape_rule(Opcode.MAP)
def _map(inst: Instruction) -> Shape:
    """The operands' dimensions in the element type the mapped computation returns."""
    shapes = operand_shapes(inst)
    for i, s in enumerate(shapes):
        merge_equal(inst, shapes[0], s, 0, i, check_type=False)
    root = called_root_shape(inst, "to_apply")
    if not isinstance(root, ArrayShape) or root.rank:
        raise ShapeInferenceError(f"map's computation must return a scalar, returns {shape_text(root)}")
    return array_shape(root.element_type, shapes[0].dimensions)


@shape_rule(Opcode.SCAN)
def _scan(inst: Instruction) -> Shape:
    """(each per-step output of to_apply stacked along the scan dimension..., its carries...):
    operands are the inputs then ``num_carries`` inits, to_apply returns (outputs..., carries...)."""
    carries = int_attribute(inst, "num_carries")
    dims = tuple(inst.attrs.get("dimensions", ()))
    if len(dims) != 1:
        raise ShapeInferenceError(f"scan needs exactly one dimension, has {list(dims)}")
    dim = int(dims[0])
    if not 0 <= carries <= len(inst.operands):
        raise ShapeInferenceError(f"scan has {carries} carries but {len(inst.operands)} operands")
    root = called_root_shape(inst, "to_apply")
    results = list(root.elements) if isinstance(root, TupleShape) else [root]
    n_out = len(results) - carries
    if n_out < 0:
        raise ShapeInferenceError(f"scan's computation returns {len(results)} values, fewer than its {carries} carries")
    inputs = [operand_shape(inst, i) for i in range(len(inst.operands) - carries)]
    for i, x in enumerate(inputs):
        if not 0 <= dim < x.rank:
            raise ShapeInferenceError(f"scan dimension {dim} is out of range for operand {i} {shape_text(x)}")
    if inputs:
        length = inputs[0].dimensions[dim]
        for i, x in enumerate(inputs):
            if x.dimensions[dim] != length:
                raise ShapeInferenceError(f"scan operand {i} {shape_text(x)} has {x.dimensions[dim]} steps, "
                                          f"operand 0 has {length}")
    else:  # no inputs: the declared outputs say the length
        declared = inst.shape.elements[0] if isinstance(inst.shape, TupleShape) else inst.shape
        if not isinstance(declared, ArrayShape) or not 0 <= dim < declared.rank:
            raise ShapeInferenceError("scan without inputs needs a declared output holding the scan dimension")
        length = declared.dimensions[dim]
    outs: list[Shape] = []
    for k, r in enumerate(results[:n_out]):
        if not isinstance(r, ArrayShape) or dim > r.rank:
            raise ShapeInferenceError(f"scan output {k} {shape_text(r)} cannot be stacked along dimension {dim}")
        outs.append(array_shape(r.element_type, (*r.dimensions[:dim], length, *r.dimensions[dim:])))
    shapes = outs + results[n_out:]
    return TupleShape(tuple(shapes)) if isinstance(root, TupleShape) else shapes[0]


@shape_rule(Opcode.OPTIMIZATION_BARRIER, Opcode.WHILE, Opcode.ADD_DEPENDENCY)
def _first_operand(inst: Instruction) -> Shape:
    """Operand 0's shape (a while's result is its init; the body is checked by the verifier)."""
    return inst.operands[0].shape


_FIXED: dict[Opcode, Shape] = {
    Opcode.REPLICA_ID: SCALAR["u32"], Opcode.PARTITION_ID: SCALAR["u32"],
    Opcode.GET_DIMENSION_SIZE: SCALAR["s32"], Opcode.RNG_GET_AND_UPDATE_STATE: ArrayShape("u64", (2,)),
    Opcode.AFTER_ALL: TOKEN, Opcode.OUTFEED: TOKEN, Opcode.SEND_DONE: TOKEN,
}


@shape_rule(*_FIXED)
def _fixed(inst: Instruction) -> Shape:
    """Ops whose result shape is fixed by the opcode."""
    if inst.opcode is Opcode.OUTFEED:
        _token_operand(inst, 1)
    return _FIXED[inst.opcode]


@shape_rule(Opcode.SEND)
def _send(inst: Instruction) -> Shape:
    """(data, u32[] context, token[])."""
    return TupleShape((inst.operands[0].shape, SCALAR["u32"], TOKEN))


@shape_rule(Opcode.RECV_DONE)
def _recv_done(inst: Instruction) -> Shape:
    """(data, token[]) from recv's (data, u32[], token[])."""
    return TupleShape((tuple_element(inst, 0), TOKEN))


@shape_check(Opcode.RNG)
def _check_rng(inst: Instruction) -> None:
    """Two scalar bounds of the result's type. A third operand stands for StableHLO's shape
    operand (``rng(a, b, shape)``, in XLA's RngExpander tests, of any type: u64[3], f16[3]):
    XLA's importer into MLIR takes the shape from the declared result and never reads it, and
    XLA:CPU runs such a module, so it is accepted and ignored."""
    out = declared_array(inst)
    shapes = operand_shapes(inst)
    if len(shapes) not in (2, 3):
        raise ShapeInferenceError(f"rng takes two bounds (and optionally a shape), got {len(shapes)} operands")
    for i, s in enumerate(shapes[:2]):
        if s.rank or s.element_type != out.element_type:
            raise ShapeInferenceError(f"rng bound {i} must be {out.element_type}[], got {shape_text(s)}")


@shape_check(Opcode.RNG_BIT_GENERATOR)
def _check_rng_bit_generator(inst: Instruction) -> None:
    # XLA's verifier checks only the tuple form (state, data); a bare data array is allowed.
    state = inst.operands[0].shape
    out = inst.shape
    if isinstance(out, TupleShape) and (len(out.elements) != 2 or not compatible(out.elements[0], state)):
        raise ShapeInferenceError(f"rng-bit-generator must give ({shape_text(state)}, data) or data")


def _declared_data(inst: Instruction) -> Shape:
    """Element 0 of the declared tuple: the only part of a recv's or an infeed's declared shape
    XLA's parser keeps (it builds the rest)."""
    out = inst.shape
    if not isinstance(out, TupleShape) or not out.elements:
        raise ShapeInferenceError(f"{inst.opcode.text} must have a tuple shape (data, ...), declared {shape_text(out)}")
    return out.elements[0]


def _token_operand(inst: Instruction, i: int) -> None:
    if i >= len(inst.operands) or not same_shape(inst.operands[i].shape, TOKEN):
        got = shape_text(inst.operands[i].shape) if i < len(inst.operands) else "nothing"
        raise ShapeInferenceError(f"operand {i} of {inst.opcode.text} must be a token[], got {got}")


@shape_rule(Opcode.RECV)
def _recv(inst: Instruction) -> Shape:
    """(data, u32[] context, token[]), the data as declared."""
    return TupleShape((_declared_data(inst), SCALAR["u32"], TOKEN))


@shape_rule(Opcode.INFEED)
def _infeed(inst: Instruction) -> Shape:
    """(data, token[]), the data as declared, from a token operand."""
    _token_operand(inst, 0)
    return TupleShape((_declared_data(inst), TOKEN))
