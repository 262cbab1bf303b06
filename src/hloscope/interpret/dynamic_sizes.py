"""Dynamic sizes: where each value's live (Note [Dynamic shapes as bounds] in dynamic.py) and
the size rules, one per opcode, as XLA's DynamicDimensionInference gives a result's dynamic
sizes from its operands'. dynamic.py holds the semantics (DynamicPadder's rewrites) and the
wrapper that runs both around an instruction's handler."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hloscope.ir import ArrayShape, Instruction, Module, Opcode, TupleShape
from hloscope.ir.attributes import window_of
from hloscope.ir.op_table import OpTable
from hloscope.ir.opcode import Family

__all__ = ["SIZE_RULES", "Operands", "Sizes", "array_sizes", "bounds_of", "conv_labels", "defined_counts",
           "dynamic_reshape_sizes", "has_dynamic", "involves_dynamic", "set_sizes", "sizes_of"]

Operands = list[Any]
# One array's dynamic sizes: per dimension an int, None where the dimension is static. A tuple
# value's are a list of its elements' (each such a tuple, a list, or None).
Sizes = Any


# --- where sizes live -----------------------------------------------------------------------


def _key(ctx: Any, inst: Instruction) -> tuple[str, int, int]:
    return ("dynamic-sizes", id(inst), ctx.device)


def sizes_of(ctx: Any, inst: Instruction) -> Sizes:
    """The dynamic sizes of ``inst``'s latest value on ctx's device (None: all static). A
    get-tuple-element the plan bound straight to its element (Note [Unpacked tuple parameters]
    in evaluator.py) never ran, so it reads its tuple's."""
    sizes = ctx.cache.get(_key(ctx, inst))
    if sizes is None and inst.opcode is Opcode.GET_TUPLE_ELEMENT:
        whole = sizes_of(ctx, inst.operands[0])
        if isinstance(whole, list):
            return whole[inst.attrs["index"]]
    return sizes


def set_sizes(ctx: Any, inst: Instruction, sizes: Sizes) -> None:
    ctx.cache[_key(ctx, inst)] = sizes


def _shape_is_dynamic(shape: Any) -> bool:
    if isinstance(shape, TupleShape):
        return any(_shape_is_dynamic(s) for s in shape.elements)
    return isinstance(shape, ArrayShape) and any(shape.dynamic)


_SIZE_OPS = {Opcode.SET_DIMENSION_SIZE, Opcode.GET_DIMENSION_SIZE, Opcode.DYNAMIC_RESHAPE}
_SIZE_TARGETS = {"SliceToDynamic", "PadToStatic", "SetBound"}


def involves_dynamic(inst: Instruction) -> bool:
    """Whether ``inst`` may see or make a dynamic size: a dynamic operand or result shape, or
    an op about sizes."""
    return (inst.opcode in _SIZE_OPS or inst.custom_call_target in _SIZE_TARGETS
            or _shape_is_dynamic(inst.shape) or any(_shape_is_dynamic(o.shape) for o in inst.operands))


def has_dynamic(module: Module) -> bool:
    """Whether any instruction of ``module`` involves a dynamic size (DynamicPadder's test)."""
    key = "_hloscope_has_dynamic"
    cached = getattr(module, "__dict__", {}).get(key)
    if cached is None:
        cached = any(involves_dynamic(i) for i in module.instructions())
    return bool(cached)


def bounds_of(inst: Instruction) -> tuple[int, ...]:
    shape = inst.shape
    return tuple(shape.dimensions) if isinstance(shape, ArrayShape) else ()


def array_sizes(sizes: Sizes) -> tuple[int | None, ...] | None:
    """An array operand's sizes (a tuple or None)."""
    return sizes if isinstance(sizes, tuple) else None


def _or_none(sizes: list[int | None]) -> tuple[int | None, ...] | None:
    return tuple(sizes) if any(s is not None for s in sizes) else None


def defined_counts(sizes: tuple[int | None, ...] | None, bounds: tuple[int, ...]) -> tuple[int, ...]:
    """Per dimension the number of defined elements (the bound where static), in [0, bound]."""
    if sizes is None:
        return bounds
    return tuple(b if s is None else min(max(int(s), 0), b) for s, b in zip(sizes, bounds, strict=True))


# --- size rules: DynamicDimensionInference, one per opcode ------------------------------------

SizeRule = Callable[[Instruction, list[Sizes], Operands], Sizes]
SIZE_RULES: OpTable[SizeRule] = OpTable(
    "dynamic sizes", fallback="the result has no dynamic size (XLA's DynamicDimensionInference has no rule either)")


def _pass_through(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    # PassThroughDynamicDimension: every operand's dynamic dimension is the result's.
    out: list[int | None] = [None] * len(bounds_of(inst))
    for s in ins:
        for d, n in enumerate(array_sizes(s) or ()):
            if n is not None and d < len(out):
                out[d] = n
    return _or_none(out)


def _nary_size(a: int, b: int) -> int:
    # HandleElementwiseNary: the larger where the smaller is 1 (an implicit broadcast of that
    # operand), else the smaller.
    return max(a, b) if min(a, b) == 1 and a != b else min(a, b)


def _elementwise(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    out: list[int | None] = [None] * len(bounds_of(inst))
    for s in ins:
        for d, n in enumerate(array_sizes(s) or ()):
            if n is not None and d < len(out):
                out[d] = n if out[d] is None else _nary_size(out[d], n)  # type: ignore[arg-type]
    return _or_none(out)


def _register_elementwise() -> None:
    for op in Opcode:
        if op.value.family in (Family.UNARY, Family.CONVERT) and op not in SIZE_RULES:
            SIZE_RULES.add(op, _pass_through)
        elif op.value.family in (Family.BINARY, Family.COMPARE, Family.TERNARY) and op not in SIZE_RULES:
            SIZE_RULES.add(op, _elementwise)


@SIZE_RULES.register(Opcode.CLAMP, Opcode.REVERSE, Opcode.COPY, Opcode.ALL_REDUCE, Opcode.OPTIMIZATION_BARRIER,
                     Opcode.DOMAIN, Opcode.SELECT_AND_SCATTER, Opcode.SORT, Opcode.REDUCE_PRECISION)
def _pass_first(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    if inst.opcode is Opcode.SELECT_AND_SCATTER:
        return array_sizes(ins[0])  # the source's sizes do not reach the result
    if isinstance(inst.shape, TupleShape) and inst.opcode is Opcode.SORT:
        dims = _pass_through(inst.operands[0], ins, operands)  # every key and value sorts alike
        return [dims] * len(inst.shape.elements)
    if inst.opcode is Opcode.OPTIMIZATION_BARRIER or inst.opcode is Opcode.DOMAIN:
        return ins[0]
    return _pass_through(inst, ins, operands)


SIZE_RULES.add(Opcode.MAP, _elementwise)
SIZE_RULES.add(Opcode.SELECT, _elementwise)


@SIZE_RULES.register(Opcode.TUPLE)
def _tuple_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    return list(ins) if any(s is not None for s in ins) else None


@SIZE_RULES.register(Opcode.GET_TUPLE_ELEMENT)
def _gte_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    return ins[0][inst.attrs["index"]] if isinstance(ins[0], list) else None


@SIZE_RULES.register(Opcode.BROADCAST)
def _broadcast_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    out: list[int | None] = [None] * len(bounds_of(inst))
    for d, n in enumerate(array_sizes(ins[0]) or ()):
        out[inst.attrs["dimensions"][d]] = n
    return _or_none(out)


@SIZE_RULES.register(Opcode.TRANSPOSE)
def _transpose_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    s = array_sizes(ins[0])
    return None if s is None else tuple(s[d] for d in inst.attrs["dimensions"])


@SIZE_RULES.register(Opcode.REDUCE)
def _reduce_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    n = len(inst.operands) // 2
    reduced = set(inst.attrs["dimensions"])
    kept: list[int | None] = [None] * (len(bounds_of(inst.operands[0])) - len(reduced))
    for s in ins[:n]:  # every input of a variadic reduce gives its sizes to every output
        k = 0
        for d, size in enumerate(array_sizes(s) or ()):
            if d in reduced:
                continue
            if size is not None:
                kept[k] = size
            k += 1
    out = _or_none(kept)
    return [out] * n if isinstance(inst.shape, TupleShape) else out


def _windowed(size: int, w: Any) -> int:
    # GetWindowedOutputSize with PADDING_VALID, the window's own padding aside.
    effective = (w.size - 1) * w.window_dilation + 1
    return max((size - effective + w.stride) // w.stride, 0)


@SIZE_RULES.register(Opcode.REDUCE_WINDOW)
def _reduce_window_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    n = len(inst.operands) // 2
    window = window_of(inst.attrs).dimensions
    out: list[int | None] = [None] * len(bounds_of(inst.operands[0]))
    for s in ins[:n]:
        for d, size in enumerate(array_sizes(s) or ()):
            if size is not None:
                w = window[d]
                trivial = w.size == 1 and w.stride == 1 and w.window_dilation == 1 and w.base_dilation == 1 \
                    and not w.padding_low and not w.padding_high
                out[d] = size if trivial else _windowed(size, w)
    sizes = _or_none(out)
    return [sizes] * n if isinstance(inst.shape, TupleShape) else sizes


@SIZE_RULES.register(Opcode.DOT)
def _dot_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    a = inst.attrs
    lb, rb = list(a.get("lhs_batch_dims", ())), list(a.get("rhs_batch_dims", ()))
    lc, rc = set(a.get("lhs_contracting_dims", ())), set(a.get("rhs_contracting_dims", ()))
    lr, rr = len(bounds_of(inst.operands[0])), len(bounds_of(inst.operands[1]))
    lhs_free = [d for d in range(lr) if d not in lc and d not in lb]
    rhs_free = [d for d in range(rr) if d not in rc and d not in rb]
    maps = ({d: i for i, d in enumerate(lb)} | {d: len(lb) + i for i, d in enumerate(lhs_free)},
            {d: i for i, d in enumerate(rb)} | {d: len(lb) + len(lhs_free) + i for i, d in enumerate(rhs_free)})
    out: list[int | None] = [None] * len(bounds_of(inst))
    for k in (0, 1):
        for d, size in enumerate(array_sizes(ins[k]) or ()):
            if size is not None and d in maps[k]:
                out[maps[k][d]] = size
    return _or_none(out)


def conv_labels(inst: Instruction) -> tuple[str, str, str]:
    lhs, rest = str(inst.attrs["dim_labels"]).split("_", 1)
    rhs, out = rest.split("->")
    return lhs, rhs, out


@SIZE_RULES.register(Opcode.CONVOLUTION)
def _convolution_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    # Only the batch dimension carries through (a dynamic feature dimension is contracted,
    # a dynamic spatial one XLA does not support).
    lhs, _, out_labels = conv_labels(inst)
    s = array_sizes(ins[0])
    if s is None or s[lhs.index("b")] is None:
        return None
    out: list[int | None] = [None] * len(bounds_of(inst))
    out[out_labels.index("b")] = s[lhs.index("b")]
    return tuple(out)


@SIZE_RULES.register(Opcode.CONCATENATE)
def _concatenate_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    dim = inst.attrs["dimensions"][0]
    out: list[int | None] = [None] * len(bounds_of(inst))
    total, dynamic = 0, False
    for op, s in zip(inst.operands, ins, strict=True):
        arr = array_sizes(s)
        n = arr[dim] if arr is not None else None
        dynamic |= n is not None
        total += bounds_of(op)[dim] if n is None else n
        for d, size in enumerate(arr or ()):
            if d != dim and size is not None:
                out[d] = size
    if dynamic:
        out[dim] = total
    return _or_none(out)


@SIZE_RULES.register(Opcode.SLICE)
def _slice_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    s = array_sizes(ins[0])
    if s is None:
        return None
    out: list[int | None] = [None] * len(s)
    for d, (size, r) in enumerate(zip(s, inst.attrs["slice"], strict=True)):
        start, limit, stride = r.start, r.limit, r.stride
        if size is not None and -(-(limit - start) // stride) != 1:  # one element: static
            out[d] = min(max(-(-(size - start) // stride), 0), bounds_of(inst)[d])
    return _or_none(out)


@SIZE_RULES.register(Opcode.DYNAMIC_SLICE)
def _dynamic_slice_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    s = array_sizes(ins[0])
    if s is None:
        return None
    return _or_none([n if n is not None and bounds_of(inst)[d] == bounds_of(inst.operands[0])[d]
                     and bounds_of(inst)[d] != 1 else None for d, n in enumerate(s)])


@SIZE_RULES.register(Opcode.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    out = list(array_sizes(ins[0]) or [None] * len(bounds_of(inst)))
    for d, n in enumerate(array_sizes(ins[1]) or ()):
        if n is not None and bounds_of(inst.operands[1])[d] == bounds_of(inst)[d]:
            out[d] = n  # a full-size update gives its size; a partial one leaves the base's
    return _or_none(out)


@SIZE_RULES.register(Opcode.PAD)
def _pad_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    s = array_sizes(ins[0])
    if s is None:
        return None
    cfg = inst.attrs["padding"].dimensions
    return _or_none([None if n is None else max(n - 1, 0) * c[2] + n + c[0] + c[1] for n, c in zip(s, cfg, strict=True)])


@SIZE_RULES.register(Opcode.GATHER)
def _gather_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    a = inst.attrs
    offset_dims, collapsed = list(a.get("offset_dims", ())), set(a.get("collapsed_slice_dims", ()))
    out: list[int | None] = [None] * len(bounds_of(inst))
    operand_dims = [d for d in range(len(bounds_of(inst.operands[0]))) if d not in collapsed]
    for d, n in enumerate(array_sizes(ins[0]) or ()):
        if n is not None and a["slice_sizes"][d] == bounds_of(inst.operands[0])[d] and d in operand_dims:
            out[offset_dims[operand_dims.index(d)]] = n
    batch_out = [d for d in range(len(out)) if d not in offset_dims]
    index_dims = [d for d in range(len(bounds_of(inst.operands[1]))) if d != a["index_vector_dim"]]
    for d, n in enumerate(array_sizes(ins[1]) or ()):
        if n is not None and d in index_dims:
            out[batch_out[index_dims.index(d)]] = n
    return _or_none(out)


@SIZE_RULES.register(Opcode.SCATTER)
def _scatter_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    n = (len(inst.operands) - 1) // 2
    outs = [array_sizes(s) for s in ins[:n]]
    return list(outs) if isinstance(inst.shape, TupleShape) else outs[0]


def _reshape_groups(a: tuple[int, ...], b: tuple[int, ...]) -> list[tuple[list[int], list[int]]]:
    """Runs of dimensions of ``a`` and ``b`` between the places where their bound products
    agree, in order (a reshape keeps each run's elements together)."""
    pa, pb = [math.prod(a[:k]) for k in range(len(a) + 1)], [math.prod(b[:k]) for k in range(len(b) + 1)]
    groups: list[tuple[list[int], list[int]]] = []
    i0 = j0 = 0
    i = j = 1
    while i <= len(a) and j <= len(b):
        if pa[i] == pb[j]:
            groups.append((list(range(i0, i)), list(range(j0, j))))
            i0, j0 = i, j
            i, j = i + 1, j + 1
        elif pa[i] < pb[j]:
            i += 1
        else:
            j += 1
    if i0 < len(a) or j0 < len(b):
        groups.append((list(range(i0, len(a))), list(range(j0, len(b)))))
    return groups


@SIZE_RULES.register(Opcode.RESHAPE)
def _reshape_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    s = array_sizes(ins[0])
    if s is None:
        return None
    src, dst = tuple(bounds_of(inst.operands[0])), bounds_of(inst)
    shape = inst.array_shape
    out: list[int | None] = [None] * len(dst)
    for ga, gb in _reshape_groups(src, dst):
        if all(s[d] is None for d in ga):
            continue
        count = math.prod(defined_counts(s, src)[d] for d in ga)
        if len(ga) == 1 and len(gb) == 1:
            out[gb[0]] = count
            continue
        # The group's one dynamic result dimension takes what its static ones leave.
        dynamic = [d for d in gb if shape.is_dynamic_dimension(d)] or \
            [d for d in gb if d == inst.attrs.get("inferred_dimension")] or [d for d in gb if dst[d] > 1][:1]
        if dynamic and count != math.prod(dst[d] for d in gb):
            rest = math.prod(dst[d] for d in gb if d != dynamic[0])
            out[dynamic[0]] = count // rest if rest else 0
    return _or_none(out)


@SIZE_RULES.register(Opcode.CUSTOM_CALL)
def _custom_call_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    target = inst.custom_call_target
    if target == "SetBound":
        return ins[0]
    if target == "SliceToDynamic":  # operands: the data, then one s32 size per dimension
        return tuple(int(n) for n in operands[1:])
    return None  # PadToStatic's results are static; other targets are opaque




@SIZE_RULES.register(Opcode.SET_DIMENSION_SIZE)
def _set_dimension_size_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    dim, size = inst.attrs["dimensions"][0], int(operands[1])
    out = list(array_sizes(ins[0]) or [None] * len(bounds_of(inst)))
    # Setting a static dimension to its bound keeps it static (HandleSetDimensionSize).
    static = inst.operands[1].opcode is Opcode.CONSTANT and size == bounds_of(inst)[dim] \
        and not inst.array_shape.is_dynamic_dimension(dim)
    out[dim] = None if static else size
    return _or_none(out)


@SIZE_RULES.register(Opcode.DYNAMIC_RESHAPE)
def dynamic_reshape_sizes(inst: Instruction, ins: list[Sizes], operands: Operands) -> Sizes:
    # HandleDynamicReshape: the sizes are operands 1.., on the result's dynamic dimensions.
    return _or_none([int(n) if inst.array_shape.is_dynamic_dimension(d) else None
                     for d, n in enumerate(operands[1:])])


_register_elementwise()
