"""Thin adapters from instructions to the pure numpy families (style habits 3 and 4).

Every handler here only unpacks the instruction's attributes and calls one function of
elementwise.py, shape_ops.py, reduction.py, linalg.py, indexing.py or rng.py. Elementwise
opcodes are registered by looping over the family tables, so adding a row there is all it
takes. Computations passed to the pure functions (reducers, comparators, scatter updates) are
handed over vectorized, with a ``known`` fast path when the computation is a plain ``add`` /
``max`` / ... of its two parameters.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from hloscope.interpret import (
    elementwise,
    excess_precision,
    indexing,
    linalg,
    reduction,
    rng,
    shape_ops,
)
from hloscope.interpret.evaluator import EvalContext, known_reduction, sole_owner
from hloscope.interpret.float_env import daz, ftz, ftz_in_place
from hloscope.interpret.registry import UNSUPPORTED, evaluates
from hloscope.interpret.values import Value, element_arrays
from hloscope.ir import ArrayShape, Computation, Family, Instruction, Opcode
from hloscope.ir.attributes import RawAttribute, window_of

__all__: list[str] = []

Operands = list[Any]


def _raw(inst: Instruction, name: str, default: Any = None) -> Any:
    """An attribute the parser keeps as raw text (``lower=true``), as str/bool."""
    v = inst.attrs.get(name, default)
    if isinstance(v, RawAttribute):
        text = v.text
        return {"true": True, "false": False}.get(text, text)
    return v


def _dims(inst: Instruction) -> tuple[int, ...]:
    return tuple(inst.array_shape.dimensions)


# --- elementwise: one registration per table row ----------------------------------------------


def _unary(op: str) -> Any:
    def handler(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
        return elementwise.apply_unary(op, operands[0])
    handler.__name__ = f"unary_{op}"
    return handler


# Note [In-place elementwise]: a binary op whose operand dies here (sole_owner, Note
# [Donation]) writes its result into that operand's array. Big fused elementwise chains (an
# optimizer update over a [32000,1024] embedding) otherwise allocate, page-fault and free one
# full-size array per op, which costs more than the arithmetic and sets the run's peak memory.
# Only rows that are plain numpy ufuncs on types computed in their own width qualify, so the
# result is bit for bit what ``apply_binary`` returns.
_IN_PLACE_UFUNCS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}
_IN_PLACE_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128,
                                                   np.int8, np.int16, np.int32, np.int64,
                                                   np.uint8, np.uint16, np.uint32, np.uint64))


def _donor(operands: Operands) -> int | None:
    """Which operand may take a binary op's result in place, if any (Note [In-place elementwise])."""
    a, b = operands
    if a.shape != b.shape or a.dtype != b.dtype or a.dtype not in _IN_PLACE_DTYPES:
        return None
    del a, b  # sole_owner counts references
    if operands[0] is operands[1]:  # x * x: the list's second reference is not another holder
        operands[1] = None
        ok = sole_owner(operands, 0)
        operands[1] = operands[0]
        return 0 if ok else None
    for i in (0, 1):
        if sole_owner(operands, i):
            return i
    return None


def _binary(op: str) -> Any:
    ufunc = _IN_PLACE_UFUNCS.get(op)
    if elementwise.BINARY.get(op) is not ufunc:
        ufunc = None  # the row has semantics of its own: only apply_binary has them

    def handler(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
        if ufunc is not None and ctx.donate:
            i = _donor(operands)
            if i is not None:
                with np.errstate(all="ignore"):  # Note [Denormals] in float_env.py
                    return ftz_in_place(ufunc(daz(operands[0]), daz(operands[1]), out=operands[i]))
        return elementwise.apply_binary(op, operands[0], operands[1])
    handler.__name__ = f"binary_{op}"
    return handler


def _ternary(op: str) -> Any:
    def handler(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
        return elementwise.apply_ternary(op, operands[0], operands[1], operands[2])
    handler.__name__ = f"ternary_{op}"
    return handler


def _divide(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # Note [Division by a constant]: XLA's algebraic simplifier rewrites A / C, for a constant
    # (or broadcast constant) C and a non-constant A of a float or complex type, into
    # A * (1 / C). XLA:CPU therefore computes f16 100 / 3 as 100 * 0.33325 = 33.3125, not
    # 33.34375, and z / (0 + 0i) as NaN + NaNi. bf16 and the fp8 types are widened to f32
    # before that pass runs, so for them 1 / C and the product are f32, rounded once at the
    # end. A pre-optimization module must give what XLA:CPU computes for it, so we rewrite
    # too (the post-optimization text already holds the multiply).
    a, b = operands
    dt = a.dtype
    if not _divides_by_constant(inst) or not (reduction.is_float_dtype(dt) or dt.kind == "c"):
        if dt.kind == "f" and ctx.donate:  # IEEE division: numpy's, in place when it can be
            del a, b
            i = _donor(operands)
            if i is not None:
                with np.errstate(all="ignore"):
                    return ftz_in_place(np.true_divide(daz(operands[0]), daz(operands[1]), out=operands[i]))
            a, b = operands
        return elementwise.apply_binary("divide", a, b)
    if dt in _WIDENED_BEFORE_SIMPLIFICATION:
        a, b = a.astype(np.float32), b.astype(np.float32)
    reciprocal = elementwise.apply_binary("divide", np.ones_like(b), b)
    return elementwise.convert(elementwise.apply_binary("multiply", a, reciprocal), dt)


# Narrow floats XLA:CPU computes in f32 from the start of its pipeline (f16 stays f16).
_WIDENED_BEFORE_SIMPLIFICATION = frozenset(
    np.dtype(t) for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
                          ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e4m3b11fnuz,
                          ml_dtypes.float8_e3m4, ml_dtypes.float8_e4m3, ml_dtypes.float8_e8m0fnu,
                          ml_dtypes.float4_e2m1fn))


def _divides_by_constant(inst: Instruction) -> bool:
    dividend, divisor = inst.operands
    if dividend.opcode is Opcode.CONSTANT:
        return False  # XLA folds constant / constant exactly instead
    if divisor.opcode is Opcode.BROADCAST:
        divisor = divisor.operands[0]
    return divisor.opcode is Opcode.CONSTANT


_OWN_HANDLERS = {Opcode.DIVIDE: _divide}  # table rows whose handler needs the instruction

for _op in Opcode:
    if _op in _OWN_HANDLERS:
        evaluates(_op)(_OWN_HANDLERS[_op])
    elif _op.family is Family.UNARY and _op.text in elementwise.UNARY:
        evaluates(_op)(_unary(_op.text))
    elif _op.text in elementwise.BINARY:
        evaluates(_op)(_binary(_op.text))
    elif _op.text in elementwise.TERNARY:
        evaluates(_op)(_ternary(_op.text))
    elif _op.family in (Family.UNARY, Family.BINARY):
        # Stated, not silent: the coverage test sees the reason until the row is added.
        UNSUPPORTED.setdefault(_op, f"no row for {_op.text!r} in elementwise.{_op.family.name} yet")


@evaluates(Opcode.COMPARE)
def _compare(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return elementwise.compare(operands[0], operands[1], inst.attrs["direction"], inst.attrs.get("type"))


@evaluates(Opcode.CONVERT)
def _convert(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return elementwise.convert(operands[0], inst.array_shape.dtype)


@evaluates(Opcode.BITCAST_CONVERT)
def _bitcast_convert(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return elementwise.bitcast_convert(operands[0], inst.array_shape.dtype)


@evaluates(Opcode.REDUCE_PRECISION)
def _reduce_precision(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return elementwise.reduce_precision(operands[0], inst.attrs["exponent_bits"], inst.attrs["mantissa_bits"])


# --- structural ops ----------------------------------------------------------------------------


@evaluates(Opcode.BROADCAST)
def _broadcast(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return shape_ops.broadcast_in_dim(operands[0], _dims(inst), inst.attrs.get("dimensions", ()))


@evaluates(Opcode.RESHAPE)
def _reshape(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return shape_ops.reshape(operands[0], _dims(inst))


@evaluates(Opcode.TRANSPOSE)
def _transpose(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return shape_ops.transpose(operands[0], inst.attrs["dimensions"])


def _copy_value(v: Value) -> Value:
    return tuple(_copy_value(e) for e in v) if isinstance(v, tuple) else shape_ops.copy(v)


@evaluates(Opcode.COPY)
def _copy(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return _copy_value(operands[0])  # a tuple copy copies every leaf, as XLA's deep copy


@evaluates(Opcode.SLICE)
def _slice(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    ranges = inst.attrs["slice"]
    return shape_ops.slice(operands[0], [r.start for r in ranges], [r.limit for r in ranges],
                           [r.stride for r in ranges])


@evaluates(Opcode.CONCATENATE)
def _concatenate(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return shape_ops.concatenate(operands, inst.attrs["dimensions"][0])


@evaluates(Opcode.PAD)
def _pad(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    cfg = inst.attrs["padding"].dimensions
    return shape_ops.pad(operands[0], operands[1], [d[0] for d in cfg], [d[1] for d in cfg], [d[2] for d in cfg])


@evaluates(Opcode.REVERSE)
def _reverse(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return shape_ops.reverse(operands[0], inst.attrs["dimensions"])


@evaluates(Opcode.IOTA)
def _iota(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return shape_ops.iota(_dims(inst), inst.array_shape.dtype, inst.attrs["iota_dimension"])


@evaluates(Opcode.DYNAMIC_SLICE)
def _dynamic_slice(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return shape_ops.dynamic_slice(operands[0], operands[1:], inst.attrs["dynamic_slice_sizes"])


@evaluates(Opcode.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # Write into the operand when nothing else can see it (Note [Donation] in evaluator.py):
    # scan loops update one row of a large buffer per iteration.
    in_place = ctx.donate and sole_owner(operands, 0)
    return shape_ops.dynamic_update_slice(operands[0], operands[1], operands[2:], in_place=in_place)


def _minor_to_major(shape: ArrayShape) -> tuple[int, ...]:
    if shape.layout is None:
        return tuple(range(shape.rank - 1, -1, -1))
    return tuple(shape.layout.minor_to_major)


@evaluates(Opcode.BITCAST)
def _bitcast(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # A bitcast reinterprets the physical buffer. With row-major layouts on both sides and one
    # element type that is exactly a reshape, the common case; otherwise go through the bytes.
    # Tiles are ignored: XLA only bitcasts between tilings that keep the element order.
    x = operands[0]
    src = inst.operands[0].array_shape
    dst = inst.array_shape
    if src.rank <= 1 and src.dimensions == dst.dimensions:
        # No layout can reorder one dimension, so this is elementwise; staying elementwise also
        # keeps it right inside vectorized scalar computations (comparators see whole arrays).
        return x if x.dtype == dst.dtype else elementwise.bitcast_convert(x, dst.dtype)
    row_major = tuple(range(dst.rank - 1, -1, -1))
    if (x.dtype == dst.dtype and _minor_to_major(dst) == row_major
            and _minor_to_major(src) == tuple(range(src.rank - 1, -1, -1))):
        return shape_ops.reshape(x, dst.dimensions)
    return shape_ops.bitcast_between_layouts(x, x.shape, _minor_to_major(src), dst.dimensions,
                                             _minor_to_major(dst), dst.dtype)


# --- reductions --------------------------------------------------------------------------------


def reducer_of(ctx: EvalContext, comp: Computation) -> tuple[Any, str | None]:
    """(vectorized reducer, known name) for a reducer computation; the reducer takes the
    accumulators then the new values, as tuples, and returns a tuple."""
    known = known_reduction(comp)
    if known is not None:
        return None, known
    f = ctx.vectorized(comp)

    def reducer(acc: tuple[Any, ...], new: tuple[Any, ...]) -> tuple[Any, ...]:
        r = f(*acc, *new)
        return r if isinstance(r, tuple) else (r,)

    return reducer, None


def _one_or_tuple(inst: Instruction, results: tuple[Any, ...]) -> Value:
    return results if inst.shape.is_tuple else results[0]


@evaluates(Opcode.REDUCE)
def _reduce(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    n = len(operands) // 2
    reducer, known = reducer_of(ctx, inst.attrs["to_apply"])
    if known is not None:  # a plain add/max/...: its arithmetic reads and writes as ours does
        operands = [daz(o) for o in operands]
    out = reduction.reduce(operands[:n], operands[n:], inst.attrs["dimensions"], reducer, known)
    if known is not None:
        out = tuple(ftz(o) for o in out)
    return _one_or_tuple(inst, out)


@evaluates(Opcode.REDUCE_WINDOW)
def _reduce_window(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    n = len(operands) // 2
    w = window_of(inst.attrs).dimensions
    reducer, known = reducer_of(ctx, inst.attrs["to_apply"])
    out = reduction.reduce_window(
        operands[:n], operands[n:], [d.size for d in w], [d.stride for d in w],
        [d.base_dilation for d in w], [d.window_dilation for d in w],
        [(d.padding_low, d.padding_high) for d in w], reducer, known)
    return _one_or_tuple(inst, out)


# select(a, b) = compare(a, b, DIRECTION) is the common select-and-scatter selector.
_KNOWN_SELECT = {"GE": "ge", "GT": "gt", "LE": "le", "LT": "lt"}


def _known_select(comp: Computation) -> str | None:
    root, params = comp.root, comp.parameters
    if (root.opcode is Opcode.COMPARE and len(params) == 2 and root.operands[0] is params[0]
            and root.operands[1] is params[1]):
        return _KNOWN_SELECT.get(root.attrs.get("direction", ""))
    return None


@evaluates(Opcode.SELECT_AND_SCATTER)
def _select_and_scatter(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    w = window_of(inst.attrs).dimensions
    select_comp, scatter_comp = inst.attrs["select"], inst.attrs["scatter"]
    known_select = _known_select(select_comp)
    select = None if known_select else ctx.vectorized(select_comp)
    scatter, known_scatter = reducer_of(ctx, scatter_comp)
    return reduction.select_and_scatter(
        operands[0], operands[1], operands[2], [d.size for d in w], [d.stride for d in w],
        [(d.padding_low, d.padding_high) for d in w], select=select, scatter=scatter,
        known_select=known_select, known_scatter=known_scatter)


def _known_comparator(comp: Computation) -> tuple[str, str | None] | None:
    root, params = comp.root, comp.parameters
    if (root.opcode is Opcode.COMPARE and len(params) >= 2 and root.operands[0] is params[0]
            and root.operands[1] is params[1]):
        return root.attrs["direction"], root.attrs.get("type")
    return None


@evaluates(Opcode.SORT)
def _sort(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    comp = inst.attrs["to_apply"]
    known = _known_comparator(comp)
    comparator: Callable[[tuple[Any, ...], tuple[Any, ...]], Any] | None = None
    if known is None:
        f = ctx.vectorized(comp)

        def call_comparator(lhs: tuple[Any, ...], rhs: tuple[Any, ...]) -> Any:
            # XLA interleaves the comparator's parameters: lhs0, rhs0, lhs1, rhs1, ...
            return f(*[v for pair in zip(lhs, rhs, strict=True) for v in pair])

        comparator = call_comparator

    out = reduction.sort(operands, inst.attrs["dimensions"][0], comparator,
                         bool(inst.attrs.get("is_stable", False)), known)
    return _one_or_tuple(inst, out)


@evaluates(Opcode.TOPK)
def _topk(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return reduction.top_k(operands[0], inst.attrs["k"], bool(inst.attrs.get("largest", True)))


# --- linear algebra ----------------------------------------------------------------------------


@evaluates(Opcode.DOT)
def _dot(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return _dot_as(inst, operands, inst.array_shape.dtype)


@excess_precision.register_wide(Opcode.DOT)
def _dot_f32(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return _dot_as(inst, operands, np.dtype(np.float32))  # Note [Excess precision]


def _dot_as(inst: Instruction, operands: Operands, out: Any) -> Value:
    a = inst.attrs
    return ftz(linalg.dot_general(daz(operands[0]), daz(operands[1]), a.get("lhs_batch_dims", ()),
                                  a.get("rhs_batch_dims", ()), a.get("lhs_contracting_dims", ()),
                                  a.get("rhs_contracting_dims", ()), out))


@evaluates(Opcode.CONVOLUTION)
def _convolution(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return _convolution_as(inst, operands, inst.array_shape.dtype)


@excess_precision.register_wide(Opcode.CONVOLUTION)
def _convolution_f32(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return _convolution_as(inst, operands, np.dtype(np.float32))  # Note [Excess precision]


def _convolution_as(inst: Instruction, operands: Operands, out: Any) -> Value:
    window = inst.attrs.get("window")
    dims = window.dimensions if window is not None else ()
    spec = [{"size": d.size, "stride": d.stride, "pad_low": d.padding_low, "pad_high": d.padding_high,
             "lhs_dilation": d.base_dilation, "rhs_dilation": d.window_dilation,
             "window_reversal": d.window_reversal} for d in dims]
    return linalg.convolution(operands[0], operands[1], window=spec, dim_labels=str(inst.attrs["dim_labels"]),
                              feature_group_count=inst.attrs.get("feature_group_count", 1),
                              batch_group_count=inst.attrs.get("batch_group_count", 1),
                              out_dtype=out)


@evaluates(Opcode.TRIANGULAR_SOLVE)
def _triangular_solve(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return linalg.triangular_solve(operands[0], operands[1], bool(_raw(inst, "left_side", False)),
                                   bool(_raw(inst, "lower", False)), bool(_raw(inst, "unit_diagonal", False)),
                                   str(_raw(inst, "transpose_a", "NO_TRANSPOSE")))


@evaluates(Opcode.CHOLESKY)
def _cholesky(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return linalg.cholesky(operands[0], bool(_raw(inst, "lower", False)))


@evaluates(Opcode.FFT)
def _fft(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    if operands[0].size == 0:  # nothing to transform: the declared (empty) result, as XLA
        return np.zeros(_dims(inst), inst.array_shape.dtype)
    return linalg.fft(operands[0], inst.attrs["fft_type"], inst.attrs["fft_length"])


# --- indexing ----------------------------------------------------------------------------------


def gather_dims(a: dict[str, Any], indices_axis: bool = False, operand_axis: bool = False) -> dict[str, Any]:
    """A gather's dimension numbers as ``indexing.gather`` keywords. For values stacked along
    a leading device axis (Note [Lockstep]): with ``indices_axis`` the indices have one, a
    leading batch dimension of the result; with ``operand_axis`` too the operand has one, and
    the two are matched as batching dimensions."""
    ki, ko = int(indices_axis), int(operand_axis)
    op = lambda ds: [d + ko for d in ds]  # noqa: E731
    return dict(offset_dims=[d + ki for d in a.get("offset_dims", ())],
                collapsed_slice_dims=op(a.get("collapsed_slice_dims", ())),
                start_index_map=op(a.get("start_index_map", ())), index_vector_dim=a["index_vector_dim"] + ki,
                slice_sizes=[1] * ko + list(a["slice_sizes"]),
                operand_batching_dims=[0] * ko + op(a.get("operand_batching_dims", ())),
                start_indices_batching_dims=[0] * ko + [d + ki for d in a.get("start_indices_batching_dims", ())])


def scatter_dims(a: dict[str, Any], device_axis: bool = False) -> dict[str, Any]:
    """A scatter's dimension numbers as ``indexing.scatter`` keywords; with ``device_axis``
    for values stacked along a leading device axis (Note [Lockstep]), a batching dimension of
    operands and indices and a scatter dimension of the updates."""
    k = int(device_axis)
    up = lambda ds: [d + k for d in ds]  # noqa: E731
    return dict(update_window_dims=up(a.get("update_window_dims", ())),
                inserted_window_dims=up(a.get("inserted_window_dims", ())),
                scatter_dims_to_operand_dims=up(a.get("scatter_dims_to_operand_dims", ())),
                index_vector_dim=a["index_vector_dim"] + k,
                input_batching_dims=[0] * k + up(a.get("input_batching_dims", ())),
                scatter_indices_batching_dims=[0] * k + up(a.get("scatter_indices_batching_dims", ())))


@evaluates(Opcode.GATHER)
def _gather(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return indexing.gather(operands[0], operands[1], **gather_dims(inst.attrs))


def known_update(comp: Computation) -> str | None:
    if len(comp.parameters) == 2 and comp.root is comp.parameters[1]:
        return "replace"
    return known_reduction(comp)


@evaluates(Opcode.SCATTER)
def _scatter(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    n = (len(operands) - 1) // 2
    comp = inst.attrs["to_apply"]
    known = known_update(comp) if n == 1 else None
    update = None
    if known is None:
        update, _ = reducer_of(ctx, comp)
        if update is None:  # a known reduction of a variadic scatter: use the general path
            f = ctx.vectorized(comp)
            update = lambda cur, new: (lambda r: r if isinstance(r, tuple) else (r,))(f(*cur, *new))  # noqa: E731
    out = indexing.scatter(operands[:n], operands[n], operands[n + 1:], update_computation=update, known=known,
                           **scatter_dims(inst.attrs))
    return _one_or_tuple(inst, out)


# --- random numbers ----------------------------------------------------------------------------


@evaluates(Opcode.RNG_BIT_GENERATOR)
def _rng_bit_generator(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    bits_shape = element_arrays(inst)[1]
    return rng.rng_bit_generator(inst.attrs.get("algorithm", "rng_default"), operands[0],
                                 tuple(bits_shape.dimensions), bits_shape.dtype)


@evaluates(Opcode.RNG)
def _rng(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return rng.rng(inst.attrs["distribution"], operands[0], operands[1], _dims(inst),
                   inst.array_shape.dtype, ctx.rng)
