"""Cost rules: what XLA's ``HloCostAnalysis`` charges each instruction, one rule per opcode.

The rules transcribe ``xla/service/hlo_cost_analysis.cc`` as configured for XLA:CPU
(``ShapeUtil::ByteSizeOf`` with 8-byte tuple pointers, no repeated-input accounting). One
``@cost_rule`` per opcode (or family); an opcode without a rule is listed in ``NO_COST`` with
the reason it costs nothing beyond the default. ``CostAnalyzer`` walks computations once each
for the rules that include nested computations. The module totals, the loop-aware view and the
per-instruction report are ``analysis/cost.py``'s.

Note [XLA's default bytes]
    Before its handler runs, XLA charges every instruction the bytes of its output plus the
    bytes of every operand (tuples count as their pointer table). Handlers then override:
    parameters, constants, get-tuple-element and bitcasts touch nothing; slices touch twice
    their output; a fusion reads what its fused parameters' users read (see
    ``_fusion_parameter_read_bytes``). Nested computations (reducers, comparators) contribute
    FLOPs but never bytes, except the bodies of while, call, conditional and async-start, whose
    whole cost (bytes included) becomes the caller's.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hloscope.analysis.async_ops import async_wrapped_instruction
from hloscope.ir import ArrayShape, Computation, Family, Instruction, Opcode, TupleShape
from hloscope.ir.attributes import window_of
from hloscope.ir.op_table import OpTable
from hloscope.ir.shape import Shape

__all__ = [
    "COST_RULES",
    "Cost",
    "CostAnalyzer",
    "ELEMENTWISE",
    "FMA_FLOPS",
    "NO_COST",
    "TRANSCENDENTAL",
    "ZERO",
    "convolution_flops",
    "cost_rule",
    "elements",
    "instruction_cost",
    "leaf_elements",
    "shape_bytes",
    "transpose_is_bitcast",
]

FMA_FLOPS = 2  # XLA's kFmaFlops: one multiply-add is two FLOPs


@dataclass(frozen=True, slots=True)
class Cost:
    """FLOPs, transcendental operations and bytes of memory traffic of some HLO."""

    flops: float = 0.0
    transcendentals: float = 0.0
    bytes_accessed: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flops + other.flops, self.transcendentals + other.transcendentals,
                    self.bytes_accessed + other.bytes_accessed)

    def __mul__(self, k: int | float) -> Cost:
        return Cost(self.flops * k, self.transcendentals * k, self.bytes_accessed * k)

    __rmul__ = __mul__

    def with_bytes(self, bytes_accessed: float) -> Cost:
        return Cost(self.flops, self.transcendentals, bytes_accessed)

    def compute_only(self) -> Cost:
        """The FLOPs and transcendentals without bytes (what a reducer adds to its caller)."""
        return Cost(self.flops, self.transcendentals, 0.0)

    def to_json(self) -> dict[str, float]:
        return {"flops": self.flops, "transcendentals": self.transcendentals,
                "bytes_accessed": self.bytes_accessed}


ZERO = Cost()


def shape_bytes(shape: Shape) -> int:
    """Bytes XLA:CPU's shape-size function gives ``shape``: its elements, unpadded (a tiled
    layout's padding is not counted: ``ShapeUtil::ByteSizeOf`` reads ``ElementsIn``; XLA's
    analysis of ``f32[3,5]{1,0:T(8,128)}`` counts 60 bytes), and tuple pointer tables."""
    return shape.byte_size(tiled=False)


def elements(shape: Shape) -> int:
    """Elements of an array shape (of the first leaf for a tuple, as XLA's handlers pick it)."""
    if isinstance(shape, TupleShape):
        return elements(shape.elements[0])
    return shape.element_count


def leaf_elements(shape: Shape) -> int:
    return sum(leaf.element_count for _, leaf in shape.leaves())


def _output_bytes(inst: Instruction) -> int:
    """Bytes XLA charges for writing ``inst``'s result.

    Measured against XLA:CPU (jaxlib 0.10): a tuple-shaped result costs the bytes of its
    leaves (sort, reduce, topk, rng-bit-generator, opt-barrier alike), while a tuple-shaped
    operand costs only its pointer table.
    """
    shape = inst.shape
    if not isinstance(shape, TupleShape):
        return shape_bytes(shape)
    return sum(shape_bytes(leaf) for _, leaf in shape.leaves())


def _default_bytes(inst: Instruction) -> int:
    """Output plus operand bytes: XLA's Preprocess default (Note [XLA's default bytes])."""
    return _output_bytes(inst) + sum(shape_bytes(o.shape) for o in inst.operands)


# --------------------------------------------------------------------------------------------
# The registry

CostFn = Callable[[Instruction, "CostAnalyzer"], Cost]
COST_RULES: OpTable[CostFn] = OpTable("cost")


def cost_rule(*opcodes: Opcode) -> Callable[[CostFn], CostFn]:
    """Register ``fn(instruction, analyzer) -> Cost`` as the cost rule of ``opcodes``."""
    return COST_RULES.register(*opcodes)


# Opcodes that cost only XLA's default bytes (output + operands) and no FLOPs, with why.
NO_COST: dict[Opcode, str] = {
    Opcode.REVERSE: "data movement: default bytes",
    Opcode.CONCATENATE: "data movement: default bytes",
    Opcode.COPY: "data movement: default bytes",
    Opcode.PAD: "data movement: default bytes",
    Opcode.RESHAPE: "data movement: default bytes",
    Opcode.BROADCAST: "data movement: default bytes (repeated reads not counted on CPU)",
    Opcode.SHUFFLE: "data movement: default bytes",
    Opcode.IOTA: "writes its output only",
    Opcode.REPLICA_ID: "writes a scalar",
    Opcode.PARTITION_ID: "writes a scalar",
    Opcode.GET_DIMENSION_SIZE: "metadata read",
    Opcode.SET_DIMENSION_SIZE: "metadata write",
    Opcode.DYNAMIC_RESHAPE: "data movement: default bytes",
    Opcode.ALL_GATHER: "communication, not FLOPs (see analysis.collectives)",
    Opcode.ALL_GATHER_START: "communication, not FLOPs (see analysis.collectives)",
    Opcode.ALL_GATHER_DONE: "completes an async collective",
    Opcode.ALL_REDUCE_DONE: "completes an async collective",
    Opcode.REDUCE_SCATTER: "XLA counts no FLOPs for reduce-scatter",
    Opcode.ALL_TO_ALL: "communication only",
    Opcode.RAGGED_ALL_TO_ALL: "communication only",
    Opcode.COLLECTIVE_BROADCAST: "communication only",
    Opcode.COLLECTIVE_PERMUTE: "communication only",
    Opcode.COLLECTIVE_PERMUTE_START: "communication only",
    Opcode.COLLECTIVE_PERMUTE_DONE: "completes an async collective",
    Opcode.COLLECTIVE_REDUCE: "communication only",
    Opcode.SEND: "communication only",
    Opcode.SEND_DONE: "completes a send",
    Opcode.RECV: "communication only",
    Opcode.RECV_DONE: "completes a recv",
    Opcode.COPY_START: "asynchronous copy",
    Opcode.COPY_DONE: "asynchronous copy",
    Opcode.ASYNC_UPDATE: "the work is charged to async-start",
    Opcode.ASYNC_DONE: "the work is charged to async-start",
    Opcode.OPTIMIZATION_BARRIER: "no code, default bytes as XLA charges",
    Opcode.RNG_GET_AND_UPDATE_STATE: "updates a counter",
    Opcode.BATCH_NORM_TRAINING: "XLA leaves batch norm uncounted (expanded before codegen)",
    Opcode.BATCH_NORM_INFERENCE: "XLA leaves batch norm uncounted (expanded before codegen)",
    Opcode.BATCH_NORM_GRAD: "XLA leaves batch norm uncounted (expanded before codegen)",
    Opcode.TOPK: "XLA's HloCostAnalysis has no TopK rule (default bytes)",
    Opcode.SCALED_DOT: "XLA's CPU cost analysis has no scaled-dot rule",
    Opcode.SCAN: "not emitted by jax; no XLA rule",
}


def _default_rule(inst: Instruction, an: CostAnalyzer) -> Cost:
    return Cost(bytes_accessed=_default_bytes(inst))


# Elementwise ops XLA counts as transcendentals instead of FLOPs (HandleElementwiseOp's list;
# the inverse and hyperbolic functions were missing here until the differential fuzzer,
# tools/fuzz_hlo.py, compared them). XLA has no atan opcode; hloscope's counts as atan2 does.
TRANSCENDENTAL = frozenset({
    Opcode.ACOS, Opcode.ACOSH, Opcode.ASIN, Opcode.ASINH, Opcode.ATAN, Opcode.ATAN2, Opcode.ATANH,
    Opcode.CBRT, Opcode.COS, Opcode.COSH, Opcode.ERF, Opcode.EXP, Opcode.EXPM1, Opcode.LOG,
    Opcode.LOG1P, Opcode.LOGISTIC, Opcode.POWER, Opcode.RSQRT, Opcode.SIN, Opcode.SINH,
    Opcode.SQRT, Opcode.TAN, Opcode.TANH,
})

_ELEMENTWISE_FAMILIES = (Family.UNARY, Family.BINARY, Family.TERNARY, Family.COMPARE)
ELEMENTWISE = tuple(
    op for op in Opcode
    if op.family in _ELEMENTWISE_FAMILIES
) + (Opcode.CONVERT, Opcode.REDUCE_PRECISION, Opcode.BITCAST_CONVERT, Opcode.STOCHASTIC_CONVERT)


@cost_rule(*ELEMENTWISE)
def _elementwise(inst: Instruction, an: CostAnalyzer) -> Cost:
    n = elements(inst.shape)
    b = _default_bytes(inst)
    if inst.opcode in TRANSCENDENTAL:
        return Cost(0, n, b)
    return Cost(n, 0, b)


@cost_rule(Opcode.PARAMETER, Opcode.CONSTANT, Opcode.GET_TUPLE_ELEMENT, Opcode.BITCAST,
           Opcode.DOMAIN, Opcode.AFTER_ALL, Opcode.ADD_DEPENDENCY)
def _free(inst: Instruction, an: CostAnalyzer) -> Cost:
    # Pointer forwarding or compile-time only: no code runs, no memory is touched.
    return ZERO


@cost_rule(Opcode.TUPLE)
def _tuple(inst: Instruction, an: CostAnalyzer) -> Cost:
    # A tuple writes only its table of pointers.
    return Cost(bytes_accessed=shape_bytes(inst.shape))


@cost_rule(Opcode.TRANSPOSE)
def _transpose(inst: Instruction, an: CostAnalyzer) -> Cost:
    if transpose_is_bitcast(inst):
        return ZERO
    return _default_rule(inst, an)


def transpose_is_bitcast(inst: Instruction) -> bool:
    """XLA's ``IsEffectiveBitcast``: the permutation only relabels the physical order."""
    out, src = inst.shape, inst.operands[0].shape
    if not (isinstance(out, ArrayShape) and isinstance(src, ArrayShape)):
        return False
    perm = inst.attrs.get("dimensions", ())
    # A shape written without a layout has XLA's default one (its parser fills it in), so an
    # identity transpose of layout-less shapes is a bitcast too.
    mapped = tuple(perm[d] for d in _minor_to_major(out))
    return mapped == _minor_to_major(src)


def _minor_to_major(shape: ArrayShape) -> tuple[int, ...]:
    if shape.layout is None:
        return tuple(range(shape.rank - 1, -1, -1))
    return tuple(shape.layout.minor_to_major)


@cost_rule(Opcode.SLICE)
def _slice(inst: Instruction, an: CostAnalyzer) -> Cost:
    return Cost(bytes_accessed=2 * shape_bytes(inst.shape))


@cost_rule(Opcode.DYNAMIC_SLICE)
def _dynamic_slice(inst: Instruction, an: CostAnalyzer) -> Cost:
    # XLA charges only the first start index, whatever the rank.
    return Cost(bytes_accessed=2 * shape_bytes(inst.shape) + shape_bytes(inst.operands[1].shape))


@cost_rule(Opcode.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(inst: Instruction, an: CostAnalyzer) -> Cost:
    # Operand 0 aliases the output: only the update is read and written.
    update = shape_bytes(inst.operands[1].shape)
    return Cost(bytes_accessed=2 * update + shape_bytes(inst.operands[2].shape))


@cost_rule(Opcode.DOT)
def _dot(inst: Instruction, an: CostAnalyzer) -> Cost:
    lhs = inst.operands[0].shape
    assert isinstance(lhs, ArrayShape)
    width = math.prod(lhs.dimensions[d] for d in inst.attrs.get("lhs_contracting_dims", ()))
    return Cost(FMA_FLOPS * elements(inst.shape) * width, 0, _default_bytes(inst))


@cost_rule(Opcode.RAGGED_DOT)
def _ragged_dot(inst: Instruction, an: CostAnalyzer) -> Cost:
    # XLA's HandleRaggedDot removes one result dimension per rhs group dimension, but removes
    # dimensions 0, 1, ... by position, not the group dimensions (the result has none): a
    # [m, n] result counts 2 * n * k FLOPs. Matched as XLA counts, so totals agree.
    lhs, out = inst.operands[0].shape, inst.shape
    assert isinstance(lhs, ArrayShape) and isinstance(out, ArrayShape)
    width = math.prod(lhs.dimensions[d] for d in inst.attrs.get("lhs_contracting_dims", ()))
    kept = list(out.dimensions)
    for i in range(len(inst.attrs.get("rhs_group_dims", ()))):
        del kept[i]
    return Cost(FMA_FLOPS * math.prod(kept) * width, 0, _default_bytes(inst))


@cost_rule(Opcode.CONVOLUTION)
def _convolution(inst: Instruction, an: CostAnalyzer) -> Cost:
    flops = convolution_flops(inst, inst.operands[0].shape, inst.operands[1].shape, inst.shape)
    return Cost(flops, 0, _default_bytes(inst))


def convolution_flops(inst: Instruction, lhs: Shape, rhs: Shape, out: Shape) -> int:
    """XLA's ``GetConvolutionFlops``: 2 × FMAs over valid (unpadded, undilated) positions."""
    if isinstance(out, TupleShape):
        out = out.elements[0]
    assert isinstance(lhs, ArrayShape) and isinstance(rhs, ArrayShape) and isinstance(out, ArrayShape)
    dn = inst.attrs["dim_labels"]
    window = inst.attrs.get("window")
    wdims = window.dimensions if window is not None else ()
    input_feature = lhs.dimensions[dn.input_feature_dimension]
    output_feature = out.dimensions[dn.output_feature_dimension]
    batch = lhs.dimensions[dn.input_batch_dimension]
    valid = 1
    for k, wd in enumerate(wdims):
        valid *= _valid_positions(
            lhs.dimensions[dn.input_spatial_dimensions[k]],
            rhs.dimensions[dn.kernel_spatial_dimensions[k]],
            out.dimensions[dn.output_spatial_dimensions[k]],
            wd,
        )
    fgc = inst.attrs.get("feature_group_count", 1)
    bgc = inst.attrs.get("batch_group_count", 1)
    return FMA_FLOPS * (input_feature // fgc) * output_feature * (batch // bgc) * valid


def _valid_positions(n_in: int, n_kernel: int, n_out: int, wd: Any) -> int:
    """(kernel, output) index pairs of one spatial dimension that read a real input element."""
    # XLA's two shortcuts for the N^2 patterns of gradient convolutions.
    if (n_in == n_out == n_kernel == wd.base_dilation and wd.window_dilation == 1
            and max(1, n_in - 1) == wd.stride and wd.padding_low == 0 and wd.padding_high == 0):
        return n_in
    if (n_in == 1 and n_kernel == n_out and wd.window_dilation == 1 and wd.base_dilation == 1
            and wd.stride == 1 and wd.padding_high == n_out - 1 and wd.padding_low == n_out - 1):
        return n_out
    # Counted per kernel tap over an arithmetic progression of outputs: O(kernel) not O(k*n).
    count = 0
    bd = wd.base_dilation
    for k in range(n_kernel):
        offset = k * wd.window_dilation - wd.padding_low
        for o in range(n_out) if bd > 1 else ():
            u = o * wd.stride + offset
            if u % bd == 0 and 0 <= u // bd < n_in:
                count += 1
        if bd == 1:
            count += _count_in_range(offset, wd.stride, n_out, 0, n_in - 1)
    return count


def _count_in_range(offset: int, stride: int, n: int, lo: int, hi: int) -> int:
    """How many o in [0, n) have lo <= offset + o*stride <= hi (stride >= 1)."""
    if hi < lo or n <= 0:
        return 0
    first = max(0, -((offset - lo) // stride)) if offset < lo else 0
    last = min(n - 1, (hi - offset) // stride) if hi >= offset else -1
    return max(0, last - first + 1)


@cost_rule(Opcode.FFT)
def _fft(inst: Instruction, an: CostAnalyzer) -> Cost:
    log_factors = 1
    for n in inst.attrs.get("fft_length", ()):
        log_factors *= max(int(n).bit_length() - 1, 0)  # Log2Floor
    n = elements(inst.operands[0].shape)
    return Cost(FMA_FLOPS * 4 * log_factors * n, 0, _default_bytes(inst))


@cost_rule(Opcode.TRIANGULAR_SOLVE)
def _triangular_solve(inst: Instruction, an: CostAnalyzer) -> Cost:
    a, b = inst.operands[0].shape, inst.operands[1].shape
    assert isinstance(a, ArrayShape)
    flops = FMA_FLOPS * a.dimensions[-1] * elements(b)
    # Half of the triangular matrix is read.
    return Cost(flops, 0, shape_bytes(inst.shape) + shape_bytes(a) / 2 + shape_bytes(b))


@cost_rule(Opcode.CHOLESKY)
def _cholesky(inst: Instruction, an: CostAnalyzer) -> Cost:
    a = inst.operands[0].shape
    assert isinstance(a, ArrayShape)
    # XLA: batch * n^3 / 3, and half the matrix read and half written.
    return Cost((a.dimensions[-1] * elements(a)) // 3, 0, shape_bytes(a))


@cost_rule(Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START)
def _all_reduce(inst: Instruction, an: CostAnalyzer) -> Cost:
    # XLA assumes two participants: one add per output element.
    flops = leaf_elements(inst.shape)
    out = sum(shape_bytes(leaf) for _, leaf in inst.shape.leaves())
    return Cost(flops, 0, out + sum(shape_bytes(o.shape) for o in inst.operands))


@cost_rule(Opcode.RNG)
def _rng(inst: Instruction, an: CostAnalyzer) -> Cost:
    return Cost(0, elements(inst.shape), _default_bytes(inst))


@cost_rule(Opcode.RNG_BIT_GENERATOR)
def _rng_bit_generator(inst: Instruction, an: CostAnalyzer) -> Cost:
    return Cost(0, leaf_elements(inst.shape), _default_bytes(inst))


@cost_rule(Opcode.INFEED)
def _infeed(inst: Instruction, an: CostAnalyzer) -> Cost:
    return Cost(bytes_accessed=sum(shape_bytes(leaf) for _, leaf in inst.shape.leaves()))


@cost_rule(Opcode.OUTFEED)
def _outfeed(inst: Instruction, an: CostAnalyzer) -> Cost:
    return Cost(bytes_accessed=sum(shape_bytes(leaf) for o in inst.operands for _, leaf in o.shape.leaves()))


@cost_rule(Opcode.MAP)
def _map(inst: Instruction, an: CostAnalyzer) -> Cost:
    sub = an.computation_cost(inst.attrs["to_apply"]).compute_only()
    return sub * elements(inst.shape) + Cost(bytes_accessed=_default_bytes(inst))


@cost_rule(Opcode.REDUCE)
def _reduce(inst: Instruction, an: CostAnalyzer) -> Cost:
    sub = an.computation_cost(inst.attrs["to_apply"]).compute_only()
    count = elements(inst.operands[0].shape) - elements(inst.shape)
    return sub * count + Cost(bytes_accessed=_default_bytes(inst))


@cost_rule(Opcode.REDUCE_WINDOW)
def _reduce_window(inst: Instruction, an: CostAnalyzer) -> Cost:
    sub = an.computation_cost(inst.attrs["to_apply"]).compute_only()
    dims = window_of(inst.attrs).dimensions
    window_elements = math.prod(d.size for d in dims)
    out_elements = elements(inst.shape)
    count = (window_elements - 1) * out_elements
    # XLA recognises a reduce followed by a broadcast along one dimension (cumulative ops).
    reducing = [d for d in dims if d.size != 1]
    padded = [d for d in dims if d.padding_low or d.padding_high]
    if len(reducing) == 1 and len(padded) == 1 and isinstance(inst.shape, ArrayShape):
        for i, d in enumerate(dims):
            if (d.size != 1 and d.padding_low and d.padding_high and d.padding_low == d.padding_high
                    and d.size == 2 * d.padding_low + 1):
                if d.padding_low == inst.shape.dimensions[i] - 1:
                    span = inst.shape.dimensions[i]
                    count = out_elements // span + span - 1
                break
    return sub * count + Cost(bytes_accessed=_default_bytes(inst))


@cost_rule(Opcode.SELECT_AND_SCATTER)
def _select_and_scatter(inst: Instruction, an: CostAnalyzer) -> Cost:
    select = an.computation_cost(inst.attrs["select"]).compute_only()
    scatter = an.computation_cost(inst.attrs["scatter"]).compute_only()
    source = elements(inst.operands[1].shape)
    window_elements = math.prod(d.size for d in window_of(inst.attrs).dimensions)
    return (select * (source * (window_elements - 1)) + scatter * source
            + Cost(bytes_accessed=_default_bytes(inst)))


@cost_rule(Opcode.SORT)
def _sort(inst: Instruction, an: CostAnalyzer) -> Cost:
    # A comparison sort: n * ceil(log2 n) FLOPs, whatever the comparator.
    n = elements(inst.operands[0].shape)
    log2_ceiling = (n - 1).bit_length() if n > 0 else 0
    return Cost(n * log2_ceiling, 0, _default_bytes(inst))


@cost_rule(Opcode.GATHER)
def _gather(inst: Instruction, an: CostAnalyzer) -> Cost:
    # A copy the size of the output plus a read of the indices; no FLOPs.
    out = shape_bytes(inst.shape)
    return Cost(bytes_accessed=2 * out + shape_bytes(inst.operands[1].shape))


@cost_rule(Opcode.SCATTER)
def _scatter(inst: Instruction, an: CostAnalyzer) -> Cost:
    n = (len(inst.operands) - 1) // 2
    indices, updates = inst.operands[n], inst.operands[n + 1:]
    update_bytes = sum(shape_bytes(u.shape) for u in updates)
    sub = an.computation_cost(inst.attrs["to_apply"]).compute_only()
    # Input, output and updates each move one update's worth, plus the indices.
    return sub * elements(updates[0].shape) + Cost(
        bytes_accessed=3 * update_bytes + shape_bytes(indices.shape))


@cost_rule(Opcode.WHILE)
def _while(inst: Instruction, an: CostAnalyzer) -> Cost:
    # One iteration, bytes included (Note [Loop-aware totals] for the multiplied form).
    return an.computation_cost(inst.attrs["body"]) + an.computation_cost(inst.attrs["condition"])


@cost_rule(Opcode.CALL)
def _call(inst: Instruction, an: CostAnalyzer) -> Cost:
    return an.computation_cost(inst.called_computations[0])


@cost_rule(Opcode.ASYNC_START)
def _async_start(inst: Instruction, an: CostAnalyzer) -> Cost:
    # XLA's HandleAsyncStart charges the whole wrapped computation (Note [Async sugar costs]
    # in analysis/async_ops.py).
    wrapped = async_wrapped_instruction(inst)
    if wrapped is not None:
        return COST_RULES.get(wrapped.opcode, _default_rule)(wrapped, an)
    return an.computation_cost(inst.called_computations[0])


@cost_rule(Opcode.CONDITIONAL)
def _conditional(inst: Instruction, an: CostAnalyzer) -> Cost:
    # XLA takes the maximum of each property separately over the branches.
    branches = [an.computation_cost(c) for c in inst.called_computations]
    return Cost(max(b.flops for b in branches), max(b.transcendentals for b in branches),
                max(b.bytes_accessed for b in branches))


@cost_rule(Opcode.CUSTOM_CALL)
def _custom_call(inst: Instruction, an: CostAnalyzer) -> Cost:
    # XLA cannot know what a custom call does. Its handler writes -1 ("unknown") into flops and
    # bytes; hlo_module_cost_analysis then reports the sum. We mirror that for equality and
    # count the call by meaning in the loop-aware totals (custom_call_cost).
    return Cost(-1.0, 0.0, -1.0)


# --------------------------------------------------------------------------------------------
# Fusion (Note [XLA's default bytes])

@cost_rule(Opcode.FUSION)
def _fusion(inst: Instruction, an: CostAnalyzer) -> Cost:
    fused: Computation = inst.attrs["calls"]
    if inst.attrs.get("kind") == "kCustom":
        # XLA charges a custom fusion around a gather or scatter as that op alone.
        for hlo in fused.instructions:
            if hlo.opcode in (Opcode.GATHER, Opcode.SCATTER):
                inner = COST_RULES[hlo.opcode](hlo, an)
                an.computation_cost(fused)  # still record per-instruction costs inside
                return inner
    sub = an.computation_cost(fused)
    return sub.compute_only() + Cost(bytes_accessed=_fusion_bytes(inst, fused, an))


def _fusion_bytes(inst: Instruction, fused: Computation, an: CostAnalyzer) -> float:
    root = fused.root
    total = 0.0
    # Outputs: a dynamic-update-slice root writes only its update (the buffer is aliased).
    if isinstance(inst.shape, ArrayShape):
        if root.opcode is Opcode.DYNAMIC_UPDATE_SLICE:
            total += shape_bytes(root.operands[1].shape)
        else:
            total += shape_bytes(inst.shape)
    else:
        for index, leaf in inst.shape.leaves():
            producer = root.operands[index[0]] if root.opcode is Opcode.TUPLE else None
            if len(index) == 1 and producer is not None and producer.opcode is Opcode.DYNAMIC_UPDATE_SLICE:
                total += shape_bytes(producer.operands[1].shape)
            else:
                total += shape_bytes(leaf)
    # Constants bigger than a scalar live in memory and are read.
    for hlo in fused.instructions:
        if hlo.opcode is Opcode.CONSTANT and leaf_elements(hlo.shape) > 1:
            total += shape_bytes(hlo.shape)
    users = an.users_of(fused)
    # Each tuple's first get-tuple-element user per index, found once per tuple (scanning the
    # users for every leaf would be quadratic in the tuple's size).
    gtes: dict[Instruction, dict[Any, Instruction]] = {}

    def element(node: Instruction, i: int) -> Instruction | None:
        by_index = gtes.get(node)
        if by_index is None:
            by_index = gtes[node] = {}
            for u in users.get(node, ()):
                if u.opcode is Opcode.GET_TUPLE_ELEMENT:
                    by_index.setdefault(u.attrs.get("index"), u)
        return by_index.get(i)

    for param in fused.parameters:
        if isinstance(param.shape, TupleShape):
            for index, _ in param.shape.leaves():
                node = param
                for i in index:
                    nxt = element(node, i)
                    if nxt is None:
                        break
                    node = nxt
                total += _fusion_parameter_read_bytes(node, an)
        else:
            total += _fusion_parameter_read_bytes(param, an)
    return total


def _fusion_parameter_read_bytes(hlo: Instruction, an: CostAnalyzer) -> int:
    """Bytes a fused parameter's users read from memory (XLA's ``FusionParameterReadBytes``)."""
    size = 0
    seen_trivial_user = False
    assert hlo.computation is not None
    for user in an.users_of(hlo.computation).get(hlo, ()):
        op = user.opcode
        if op is Opcode.FUSION:
            nested: Computation = user.attrs["calls"]
            for idx, operand in enumerate(user.operands):
                if operand is hlo:
                    size += _fusion_parameter_read_bytes(nested.parameters[idx], an)
        elif op is Opcode.SLICE:
            size += shape_bytes(user.shape)
        elif op is Opcode.DYNAMIC_SLICE and user.operands[0] is hlo:
            size += shape_bytes(user.shape)
        elif op is Opcode.DYNAMIC_UPDATE_SLICE and user.operands[0] is hlo:
            pass  # operand 0 is aliased to the output: not read
        elif op in (Opcode.BROADCAST, Opcode.RESHAPE):
            size += shape_bytes(hlo.shape)
        elif not seen_trivial_user:
            # Other users are assumed to share one read from memory.
            seen_trivial_user = True
            size += shape_bytes(hlo.shape)
    return size


class CostAnalyzer:
    """Walks computations once each, memoising totals and per-instruction costs (XLA's view:
    nested bodies once)."""

    def __init__(self) -> None:
        self.per_instruction: dict[Instruction, Cost] = {}
        self.totals: dict[Computation, Cost] = {}
        self._users: dict[Computation, dict[Instruction, list[Instruction]]] = {}

    def users_of(self, comp: Computation) -> dict[Instruction, list[Instruction]]:
        got = self._users.get(comp)
        if got is None:
            got = {}
            for inst in comp.instructions:
                for op in dict.fromkeys(inst.operands):  # XLA's users() holds each user once
                    got.setdefault(op, []).append(inst)
            self._users[comp] = got
        return got

    def computation_cost(self, comp: Computation) -> Cost:
        got = self.totals.get(comp)
        if got is not None:
            return got
        # Summed as three floats, the same additions in the same order as ``total + c`` makes
        # them, without a Cost per instruction (748,000 at ten times Llama 3.1 8B).
        flops = transcendentals = nbytes = 0.0
        per_instruction = self.per_instruction
        for inst in comp.instructions:
            c = instruction_cost(inst, self)
            per_instruction[inst] = c
            flops += c.flops
            transcendentals += c.transcendentals
            nbytes += c.bytes_accessed
        total = self.totals[comp] = Cost(flops, transcendentals, nbytes)
        return total


def instruction_cost(inst: Instruction, analyzer: CostAnalyzer | None = None) -> Cost:
    """XLA's cost of one instruction (nested computations included as XLA includes them)."""
    rule = COST_RULES.get(inst.opcode, _default_rule)
    return rule(inst, analyzer or CostAnalyzer())


COST_RULES.register(*(op for op in NO_COST if op not in COST_RULES))(_default_rule)
