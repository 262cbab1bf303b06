"""Seconds of one XLA:CPU thunk: which rate of the ``cpu`` profile each kind of work runs at.

See Note [The XLA:CPU model] in ``analysis.timing``, which uses ``cpu_seconds``. XLA:CPU hands
dots and plain convolutions to a library (Eigen, YNNPACK) that runs near the machine's matmul
peak, and emits every other loop itself; some of those loops are vectorised streams, others
walk an index or a window per element and run far slower. Each such family has its own
calibrated rate (``CpuRates``), measured on an XLA:CPU kernel of that family and nothing else.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from hloscope.analysis.cost import ELEMENTWISE, TRANSCENDENTAL, Cost, transpose_is_bitcast
from hloscope.analysis.hardware import (
    CACHED_DOT_BYTES,
    CACHED_STREAM_BYTES,
    CACHED_TABLE_BYTES,
    CACHED_TRANSPOSE_BYTES,
    COLUMN_REDUCE_ROW_BYTES,
    FRESH_BUFFER_BYTES,
    LARGE_DOT_BYTES,
    LARGE_OUTPUT_BYTES,
    LARGE_STREAM_BYTES,
    LARGE_TABLE_BYTES,
    LARGE_TRANSPOSE_BYTES,
    WIDE_COLUMN_REDUCE_ROW_BYTES,
    CpuRates,
    HardwareSpec,
)
from hloscope.analysis.memory.report import MemoryReport, analyze_memory
from hloscope.ir import PRIMITIVE_TYPES, ArrayShape, Computation, Instruction, Module, Opcode
from hloscope.ir.attributes import window_of

__all__ = ["FreshAllocation", "LIBRARY_FUSION_KINDS", "MATH_OPS", "cpu_seconds", "fresh_allocations", "is_library_fusion",
           "REUSE_BYTES", "math_dtype", "runs_in_passes"]

MATH_OPS = (Opcode.DOT, Opcode.CONVOLUTION, Opcode.RAGGED_DOT, Opcode.SCALED_DOT)


def math_dtype(inst: Instruction) -> str:
    """The element type whose FLOP rate applies: a dot's or convolution's operand type."""
    target = inst
    if inst.opcode is Opcode.FUSION:
        fused: Computation = inst.attrs["calls"]
        target = next((i for i in fused.instructions if i.opcode in MATH_OPS), fused.root)
    if target.opcode in MATH_OPS and target.operands:
        shape = target.operands[0].shape
    elif inst.opcode is Opcode.CUSTOM_CALL and inst.operands:
        shape = inst.operands[0].shape
    else:
        shape = target.shape
    leaf = next((s for _, s in shape.leaves()), None)
    return leaf.element_type if isinstance(leaf, ArrayShape) else "f32"


def cpu_seconds(inst: Instruction, c: Cost, hw: HardwareSpec, rates: CpuRates,
                cold_bytes: float = 0.0) -> tuple[float, float]:
    """(compute, memory) seconds of one XLA:CPU thunk; see Note [The XLA:CPU model]. Its
    allocations' page faults are their own (``fresh_allocations``). ``cold_bytes`` of its
    operands are not in the cache when it runs (Note [Cold operands])."""
    body = inst.attrs["calls"].instructions if inst.opcode is Opcode.FUSION else (inst,)
    flops, transcendentals = max(c.flops, 0), max(c.transcendentals, 0)
    nbytes_again = 0.0
    column_reduce = 0.0
    math_ops = [i for i in body if i.opcode in MATH_OPS]
    grouped = [i for i in math_ops if _is_grouped_convolution(i)]
    if grouped:
        # Grouped (depthwise) convolutions are XLA's own loop, not the library's kernel.
        compute = flops / rates.grouped_conv_flops
    elif math_ops and is_library_fusion(inst) and all(i.opcode is Opcode.DOT for i in math_ops):
        # Note [Library graphs with dots]
        dot_flops = min(float(sum(_dot_flops(i) for i in math_ops)), flops)
        rest = _loop_compute(body, flops - dot_flops, transcendentals, rates)
        compute = dot_flops / _dot_rate(hw, rates, math_dtype(inst), c.bytes_accessed) + rest
    elif (transposed_conv := _transposed_conv_gemm(inst)) is not None:
        # Note [Transposed convolutions]
        gemm_flops, columns = transposed_conv
        gemm = gemm_flops / _dot_rate(hw, rates, math_dtype(inst), c.bytes_accessed + 2 * columns)
        # The packing pass starts when the GEMM is done: its adds and its stream (the matrix read,
        # the output zero-filled, then read and written) follow the GEMM's time, not overlap it.
        packed = columns + 3 * _bytes_of(inst)
        compute = (gemm + columns / _bytes_per_element(inst) / rates.elementwise_flops
                   + packed * _STREAM_SHARE / _stream_rate(hw, rates, packed))
    elif math_ops:
        compute = (flops + transcendentals) / _dot_rate(hw, rates, math_dtype(inst), c.bytes_accessed)
        if inst.opcode is Opcode.CONVOLUTION and rates.conv_outputs > 0:
            # Note [Eigen convolutions]
            compute = max(compute, _elements_of(inst) / rates.conv_outputs)
        elif inst.opcode is Opcode.DOT:
            # Note [Eigen dots]
            compute += _dot_batch(inst) * rates.eigen_dot_overhead
    elif (sort := next((i for i in body if i.opcode is Opcode.SORT), None)) is not None:
        extra = max(_comparator_ops(sort) - 1, 0)
        compute = _sort_comparisons(sort) * (1 / rates.sort_comparisons + extra / rates.comparator_ops)
    elif inst.opcode is Opcode.CUSTOM_CALL and inst.custom_call_target == "TopK":
        compute = _elements_of(inst.operands[0]) / rates.topk_elements
    elif (scatter := next((i for i in body if i.opcode is Opcode.SCATTER), None)) is not None:
        updates = scatter.operands[(len(scatter.operands) - 1) // 2 + 1]
        compute = _elements_of(updates) / _indexed_rate(rates.scatter_elements, rates.cached_scatter_elements,
                                                        _bytes_of(scatter.operands[0]))
    elif inst.opcode is Opcode.FFT:
        compute = _fft_flops(inst) / rates.fft_flops
    else:
        # An emitted loop: vectorised arithmetic, plus the per-element index work of gathers
        # and the per-window-element walk of reduce-windows, which do not vectorise.
        library = is_library_fusion(inst)
        if inst.opcode is Opcode.FUSION and not library:
            # Note [Recomputed producers]
            again_flops, again_transcendentals, again_bytes = _recomputed(inst.attrs["calls"])
            flops += again_flops
            transcendentals += again_transcendentals
            nbytes_again = again_bytes
        elif library and rates.library_transcendentals > 0:
            # Note [Library passes]: producers again in each pass, the input not re-read.
            again_flops, again_transcendentals, _ = _recomputed(inst.attrs["calls"])
            flops += again_flops
            transcendentals += again_transcendentals
        # Note [Chained transcendentals]: XLA's own loops overlap independent ones.
        compute = _loop_compute(body, flops, transcendentals, rates, chained=not library,
                                library=library and rates.library_transcendentals > 0)
        if library:
            column_reduce = _column_reduce_seconds(body, rates)
            compute = max(compute, column_reduce)
    scratch = 2 * sum(_materialized_bytes(inst))
    nbytes = max(c.bytes_accessed, 0) + nbytes_again + scratch
    # Note [Reads and writes]
    written = min(float(_bytes_of(inst)), max(c.bytes_accessed, 0.0)) + scratch / 2
    transposed = [i for i in body if _strided_run_bytes(i) < STREAMED_RUN_BYTES]
    if transposed and not (math_ops and not grouped):
        # Note [Transposes]
        moved = 2.0 * max(_bytes_of(i) for i in transposed)
        if (rates.fused_transpose_elements > 0 and inst.opcode is Opcode.FUSION and not is_library_fusion(inst)
                and (c.flops > 0 or c.transcendentals > 0)):
            # See Note [Fused transposes].
            walked = sum(_elements_of(i) * _fused_transpose_share(_pages_before_reuse(i)) for i in transposed)
            compute = max(compute, walked / rates.fused_transpose_elements)
        return compute, nbytes / _transpose_rate(rates, moved)
    # Note [Cold operands]
    read = nbytes - written
    cold = min(max(cold_bytes, 0.0), read)
    if written >= LARGE_OUTPUT_BYTES and rates.large_output_bandwidth > 0:
        # Note [Large outputs]
        memory = (read + 2 * written) * _STREAM_SHARE / min(rates.large_output_bandwidth, hw.memory_bandwidth)
    else:
        memory = ((read - cold + 2 * written) * _STREAM_SHARE / _stream_rate(hw, rates, nbytes)
                  + cold * _STREAM_SHARE / hw.memory_bandwidth)
    if column_reduce > 0 and compute == column_reduce and runs_in_passes(inst, rates):
        # The column reduction's calibrated time holds its own reading, and a library's
        # passes add memory time to compute: what it takes beyond the reading is compute.
        compute = max(column_reduce - memory, 0.0)
    return compute, memory


# Note [Cold operands]
#     The cache speed-up of a small loop holds for operands a recent instruction wrote, not for
#     the step's parameters or values written long before: an optimizer's update of 50
#     parameters of 256 KiB each read its 50 x 1 MiB of parameters and moments from memory
#     (11.4 ms here, where every fusion's bytes at the cached rate gave 4.7). The simulation
#     (``analysis.timing``) passes the bytes of each instruction's operands that are cold: an
#     entry parameter or constant, or a value produced before more than ``REUSE_BYTES`` of other
#     traffic went through the cache since; those are read at ``memory_bandwidth``.
REUSE_BYTES = CACHED_STREAM_BYTES


def _transposed_conv_gemm(inst: Instruction) -> tuple[float, float] | None:
    """(GEMM FLOPs, bytes of the column matrix) of a convolution XLA:CPU runs as a transposed
    one (Note [Transposed convolutions]), or None."""
    if inst.opcode is not Opcode.CONVOLUTION or len(inst.operands) != 2:
        return None
    window, dn = inst.attrs.get("window"), inst.attrs.get("dim_labels")
    lhs, rhs, out = inst.operands[0].shape, inst.operands[1].shape, inst.shape
    if (window is None or dn is None or not 1 <= len(window.dimensions) <= 2
            or not all(isinstance(s, ArrayShape) for s in (lhs, rhs, out))
            or inst.attrs.get("feature_group_count", 1) != 1 or inst.attrs.get("batch_group_count", 1) != 1
            or math_dtype(inst) not in ("f32", "f16")):
        return None
    dims = window.dimensions
    if (not any(d.base_dilation > 1 for d in dims)
            or any(d.window_dilation != 1 or d.stride != 1 or d.window_reversal for d in dims)):
        return None
    assert isinstance(lhs, ArrayShape) and isinstance(rhs, ArrayShape) and isinstance(out, ArrayShape)
    rows = lhs.dimensions[dn.input_batch_dimension] * math.prod(lhs.dimensions[d] for d in dn.input_spatial_dimensions)
    columns = (math.prod(rhs.dimensions[d] for d in dn.kernel_spatial_dimensions)
               * rhs.dimensions[dn.kernel_output_feature_dimension])
    channels = lhs.dimensions[dn.input_feature_dimension]
    element = _bytes_per_element(inst)
    return 2.0 * rows * channels * columns, float(rows * columns * element)


def _bytes_per_element(inst: Instruction) -> int:
    shape = inst.shape
    return max(PRIMITIVE_TYPES[shape.element_type].byte_size, 1) if isinstance(shape, ArrayShape) else 4


# Note [Transposed convolutions]
#     XLA:CPU runs a 2-D (or 1-D) convolution with input dilation, unit strides and window
#     dilation and one feature group, as a transposed convolution does, its own way
#     (``EigenTransposedConv2D`` in ``backends/cpu/runtime/convolution_thunk_internal.h``): one
#     GEMM of the undilated input, [batch x input positions, input channels], by the kernel,
#     [input channels, kernel taps x output channels], into a column matrix it allocates on
#     each call, then a pass adding each column back to the output position it lands on
#     (``Pack2DPatches``), over an output it first zero-fills. So it costs the GEMM's FLOPs at
#     the matmul rate (the zeros of the dilation are never multiplied), then the packing pass
#     (one add per matrix element, the matrix read back, the output filled and updated), and the
#     matrix's fresh pages: a 3x3 stride-2
#     transposed convolution of 8x32x32x64 took 3.1 ms here, estimated 6.4 as an Eigen
#     convolution's output elements (Note [Eigen convolutions]), which is what XLA:CPU runs
#     for every other convolution it does not hand to a library.

# Note [Eigen convolutions]
#     A convolution XLA:CPU does not hand to a library (YNNPACK takes most NHWC ones as a
#     ``__ynn_fusion``; an input-dilated one, as a transposed convolution is, or one of few
#     channels stays a ``convolution`` thunk) runs Eigen's spatial convolution, whose time here
#     went with its output elements more than with its FLOPs: 4.6-7 ns an output element for
#     3x3 kernels over 3 to 64 input channels (10-53 GFLOP/s), where a dot runs at 85-125. So
#     such a thunk takes the longer of its FLOPs at the matmul rate and its output elements at
#     ``cpu_rates.conv_outputs`` (calibrated on a 3x3 convolution of 16 channels).

# Note [Eigen dots]
#     A dot XLA:CPU does not hand to a library (YNNPACK takes most as a ``__ynn_fusion``; one
#     contracting a non-minor dimension stays a ``dot`` thunk) runs Eigen's tensor contraction
#     once per batch element (``DotThunk``), and each call sets up its blocking and packing
#     beyond the FLOPs: here chains of such dots cost 0.84-1.19 us a call beyond their work
#     (32x32 by 32x16 and 32x128), and 0.86 us per batch element for 16 and 64 batches of
#     32x32 by 32x16, where their FLOPs take 0.3 us. The bf16 GPT's two attention dots (64
#     batches each) measured 127 us against 20 estimated without it. ``calibrate`` measures
#     ``cpu_rates.eigen_dot_overhead`` on chains of 16-batch dots.


def _dot_batch(dot: Instruction) -> int:
    """Contractions Eigen runs for ``dot``: the product of its batch dimensions."""
    lhs = dot.operands[0].shape if dot.operands else None
    if not isinstance(lhs, ArrayShape):
        return 1
    return math.prod(lhs.dimensions[d] for d in dot.attrs.get("lhs_batch_dims", ()))


# Note [Reads and writes]
#     A loop writing a cache line it has not read first reads it anyway (write-allocate) and
#     later writes it back: a written byte costs two transfers, a read byte one. The streaming
#     rates are measured on z = x + y (8 bytes read, 4 written per element: 16 transfers per 12
#     bytes accessed), so an instruction's streaming time is (read + 2 written) * 12/16 bytes at
#     that rate: a matrix-vector product that only reads its 64 MB matrix streamed it at 14
#     GB/s where z = x + y moved 11. Written bytes are the result's (at most what the cost
#     analysis counts: an in-place dynamic-update-slice writes only its update).
_STREAM_SHARE = 12 / 16


def _fft_flops(fft: Instruction) -> float:
    """5 N log2 N per complex transform of N points (a real one, half), over the batch."""
    lengths = [int(n) for n in fft.attrs.get("fft_length", ())]
    points = math.prod(lengths) if lengths else 1
    if points <= 1:
        return 0.0
    kind = str(fft.attrs.get("fft_type", "FFT")).upper()
    real = kind in ("RFFT", "IRFFT")
    # The batch is the real side's elements (a complex transform's either side) over the points.
    real_side = fft.operands[0] if kind != "IRFFT" else fft
    batch = _elements_of(real_side) / points
    return batch * 5 * points * math.log2(points) / (2 if real else 1)


def _indexed_rate(large: float, cached: float, table_bytes: float) -> float:
    """Elements/s of a gather or scatter into a table of ``table_bytes``: each element lands at
    a random row, whose cost grows with the table as the cache keeps less of it. The time per
    element is interpolated on log(bytes) between the two calibrations (``CACHED_TABLE_BYTES``,
    ``LARGE_TABLE_BYTES``) and extrapolated past the large one (a 32 MiB table gathered at half
    the 8 MiB rate here: more of its pages miss the TLB)."""
    if cached <= large:
        return large
    w = math.log(LARGE_TABLE_BYTES / max(table_bytes, 1.0)) / math.log(LARGE_TABLE_BYTES / CACHED_TABLE_BYTES)
    seconds = 1 / large + (1 / cached - 1 / large) * min(w, 1.0)
    return 1 / max(seconds, 1 / cached)


# Note [Transposes]
#     A copy that changes the physical order of an array walks one side with a stride; what
#     that costs depends on the contiguous run it moves at a time: the output's most-minor
#     dimensions that are also the operand's, in the same order. Heads moved from [b, t, h, d]
#     to [b, h, t, d] with d = 64 f32 are 256-byte runs, and stream as a copy does (10 ms for
#     64 MiB, as the copy); runs of 16 bytes took 30 ms and of 8 bytes 51 ms. So an instruction
#     whose runs reach STREAMED_RUN_BYTES (two cache lines: the prefetcher follows them) is
#     timed as a stream, and a shorter one at the transposing rate, which depends on how much
#     of the array the cache keeps while the walk comes back for the next line: 0.5-0.7 ms for
#     a 512 x 512 or 1024 x 1024 f32 transpose here (12-15 GB/s), 3.6-4.2 GB/s for 32 MiB with
#     power-of-two rows (and 2.4 GB/s at 4095 x 2048).
#     That rate is interpolated on log(bytes) between the two calibrations
#     (``CACHED_TRANSPOSE_BYTES`` and ``LARGE_TRANSPOSE_BYTES`` moved).
STREAMED_RUN_BYTES = 128


# Note [Library column reductions]
#     YNNPACK sums or maxes a major dimension of an array into a kept row of the minor ones, and
#     that costs more the wider the kept row, beyond reading the input. Measured here over 16 Mi
#     f32 elements per reduction (64 MiB read; the input's reading alone streams at 28 GB/s,
#     0.14 ns per element): keeping 1,024 elements 0.15 ns per element, 2,048 0.18, 4,096
#     0.22, 16,384 0.37, 65,536 0.76 and 262,144 (a 3-D sum over its first dimension) 0.72;
#     max 0.20, 0.51, 1.0 and 1.13 at 4,096, 16,384, 65,536 and 262,144. A reduction of the
#     minor dimension (a row's sum, a softmax's) or of all of them streams at any width.
#     ``column_reduce_elements`` is calibrated on a sum keeping COLUMN_REDUCE_ROW_BYTES and
#     ``wide_column_reduce_elements`` on one keeping WIDE_COLUMN_REDUCE_ROW_BYTES; a row between
#     (and below, where the stream takes over) gets a power law through the two, and a wider
#     one the wide rate (measured flat from there). The time is the reduction's whole time,
#     its reading included, so it stands against the fusion's other compute, not beside it.
#     XLA's own reduce loops (other types and reducers) are not these; see the README.
def _column_reduce_seconds(body: tuple[Instruction, ...] | list[Instruction], rates: CpuRates) -> float:
    narrow, wide = rates.column_reduce_elements, rates.wide_column_reduce_elements
    if narrow <= 0 or wide <= 0:
        return 0.0
    total = 0.0
    for i in body:
        if i.opcode is not Opcode.REDUCE:
            continue
        row = _kept_row_bytes(i)
        if row <= 0:
            continue
        if row >= WIDE_COLUMN_REDUCE_ROW_BYTES or wide >= narrow:
            per_element = 1 / wide
        else:
            power = math.log(narrow / wide) / math.log(WIDE_COLUMN_REDUCE_ROW_BYTES / COLUMN_REDUCE_ROW_BYTES)
            per_element = (row / COLUMN_REDUCE_ROW_BYTES) ** power / narrow
        total += _elements_of(i.operands[0]) * per_element
    return total


def _kept_row_bytes(reduce: Instruction) -> float:
    """Bytes of the kept dimensions more minor than every reduced one (Note [Library column
    reductions]); 0 when the most-minor dimension is reduced."""
    operand = reduce.operands[0].shape if reduce.operands else None
    if not isinstance(operand, ArrayShape) or not operand.dimensions:
        return 0.0
    reduced = set(reduce.attrs.get("dimensions", ()))
    order = (operand.layout.minor_to_major if operand.layout is not None
             else tuple(reversed(range(len(operand.dimensions)))))
    if not reduced:
        return 0.0
    elements = 1
    for d in order:
        if d in reduced:
            break
        elements *= operand.dimensions[d]
    return float(elements * _bytes_per_element(reduce.operands[0])) if elements > 1 else 0.0


def _transpose_rate(rates: CpuRates, moved: float) -> float:
    large, cached = rates.transpose_bandwidth, rates.cached_transpose_bandwidth
    if cached <= large or moved >= LARGE_TRANSPOSE_BYTES:
        return large
    if moved <= CACHED_TRANSPOSE_BYTES:
        return cached
    w = math.log(LARGE_TRANSPOSE_BYTES / moved) / math.log(LARGE_TRANSPOSE_BYTES / CACHED_TRANSPOSE_BYTES)
    return large * (cached / large) ** w


# Note [Fused transposes]
#     XLA:CPU moves a fusion that only transposes (a parameter, a transpose, a copy) with a
#     tiled walk, but a transpose fused with elementwise work runs XLA's generic loop, one
#     element at a time along the output, and reads a source line again only when the walk
#     comes back to it. Measured here, per element, the same transpose alone and times 2:
#     4096 x 2048 2.3 and 8.3 ns, 2048 x 4096 2.1 and 5.1, 8192 x 1024 2.1 and 7.6, 1024 x 8192
#     1.9 and 4.8, 2048 x 2048 0.7 and 4.7, 1024 x 1024 0.7 and 4.3; 3-D, (256, 128, 256) by
#     (2, 0, 1) 1.6 and 4.9, (512, 512, 32) by (2, 1, 0) 1.9 and 4.9, (16, 1024, 512) and
#     (8, 2048, 512) by (0, 2, 1) 2.7 and 4.7 times 0.125, but (64, 512, 256) by (0, 2, 1) 1.3
#     and 1.5 and (128, 256, 256) by (1, 2, 0) 1.6 and 1.2. What orders them is how many pages
#     the walk passes before it reads a line again (the output's dimensions more minor than
#     the one walking the source's minor dimension; a page per line where the stride is a page
#     or more): 128 for the last two, 512 for the 2.7 ns one, 1,024 for 4.3-4.8, 2,048 and more
#     for 4.7-8.3. So a loop fusion with FLOPs and such a transpose costs, per element,
#     ``cpu_rates.fused_transpose_elements`` (calibrated on 2048 x 4096 times 2: 2,048 pages)
#     times a share that grows on log(pages) from 0 at FUSED_TRANSPOSE_NEAR_PAGES to 1 at
#     FUSED_TRANSPOSE_FAR_PAGES; the 2-D walks past 4,096 pages run 1.5-1.6 times that.
FUSED_TRANSPOSE_NEAR_PAGES = 128
FUSED_TRANSPOSE_FAR_PAGES = 2048
_PAGE_BYTES = 4096


def _fused_transpose_share(pages: float) -> float:
    if pages <= FUSED_TRANSPOSE_NEAR_PAGES:
        return 0.0
    return min(math.log(pages / FUSED_TRANSPOSE_NEAR_PAGES)
               / math.log(FUSED_TRANSPOSE_FAR_PAGES / FUSED_TRANSPOSE_NEAR_PAGES), 1.0)


def _pages_before_reuse(inst: Instruction) -> float:
    """Pages a transposing walk passes before it reads a source line again (Note [Fused
    transposes]): the output's dimensions more minor than the one walking the source's most
    minor dimension, at most one page per line."""
    out, src = inst.shape, inst.operands[0].shape if inst.operands else None
    if not (isinstance(out, ArrayShape) and isinstance(src, ArrayShape) and out.layout and src.layout):
        return 0.0
    perm = tuple(inst.attrs.get("dimensions", ())) if inst.opcode is Opcode.TRANSPOSE else None
    out_order = [d if perm is None else perm[d] for d in _nontrivial(out, out.layout.minor_to_major)]
    src_order = list(_nontrivial(src, src.layout.minor_to_major))
    if not src_order or src_order[0] not in out_order:
        return 0.0
    walked = out_order[:out_order.index(src_order[0])]
    step = max(src.byte_size() // max(src.element_count, 1), 1)
    stride: dict[int, int] = {}
    for d in src_order:
        stride[d] = step
        step *= src.dimensions[d]
    lines = math.prod(src.dimensions[d] for d in walked)
    span = max((src.dimensions[d] * stride[d] for d in walked), default=0)
    return float(min(lines, max(span / _PAGE_BYTES, 1.0)))


def _strided_run_bytes(inst: Instruction) -> float:
    """Bytes of the contiguous runs a physical-order change moves (Note [Transposes]); infinite
    for an instruction that keeps the physical order."""
    if inst.opcode is Opcode.TRANSPOSE:
        if transpose_is_bitcast(inst):
            return math.inf
        perm = tuple(inst.attrs.get("dimensions", ()))
    elif inst.opcode is Opcode.COPY and inst.operands:
        perm = None
    else:
        return math.inf
    out, src = inst.shape, inst.operands[0].shape
    if not (isinstance(out, ArrayShape) and isinstance(src, ArrayShape) and out.layout and src.layout):
        return math.inf
    out_order = [d if perm is None else perm[d] for d in _nontrivial(out, out.layout.minor_to_major)]
    src_order = list(_nontrivial(src, src.layout.minor_to_major))
    if out_order == src_order:
        return math.inf
    run = 1
    for a, b in zip(out_order, src_order, strict=False):
        if a != b:
            break
        run *= src.dimensions[a]
    return float(run * max(src.byte_size() // max(src.element_count, 1), 1))


# XLA:CPU's library fusions (``library_fusion_kinds.h``): a kCustom fusion whose backend config
# names one of these runs as one call into that library, not as loops XLA emits.
LIBRARY_FUSION_KINDS = frozenset({"__ynn_fusion", "__onednn_fusion"})


def is_library_fusion(inst: Instruction) -> bool:
    """A fusion XLA:CPU hands to a library (YNNPACK, oneDNN) as one graph, which it runs in
    passes (Note [Library passes])."""
    if inst.opcode is not Opcode.FUSION or inst.attrs.get("kind") != "kCustom":
        return False
    bc = inst.backend_config
    cfg = bc.json() if bc is not None else None
    fusion_config = cfg.get("fusion_config") if isinstance(cfg, dict) else None
    return isinstance(fusion_config, dict) and fusion_config.get("kind") in LIBRARY_FUSION_KINDS


# Note [Library passes]
#     YNNPACK runs a fused graph with reductions in passes, and its compute and memory time add
#     up rather than overlap. Measured here over 4096 x 1024 and 4096 x 2048 f32, per element
#     (x * 2 in XLA's loop 0.31-0.32 ns, a row sum 0.15-0.17): sum(exp(x)) 0.40-0.41, the sum
#     plus an exp of 0.24; exp(x - max) 0.59, x - max 0.35-0.36 plus the same exp; x / sum
#     0.35-0.36; layer norm 0.52-0.56, where overlapping compute with memory gave 0.33-0.42.
#     A producer that feeds a reduction and the elementwise pass after it is computed in
#     both, as XLA's own loops do (Note [Recomputed producers]): with softmax's exp twice the
#     model gives 1.0 ns per element (4096 x 2048) against 0.83-1.34 measured in five runs, and
#     0.78 with it once. The input is not read again
#     (x / sum cost 0.04 ns more than x * 2, not the 0.15 of a read). A library's exp costs
#     ``cpu_rates.library_transcendentals`` (calibrated as the difference of those two row
#     sums), a fifth of a chained one in XLA's loops. Dots in a library graph keep their
#     own model (Note [Library graphs with dots]). A profile without that rate (written before
#     it) keeps the older model: each producer once, the exps at the chain's rate, compute
#     and memory overlapping, which fitted softmax and missed layer norm by a third.
def runs_in_passes(inst: Instruction, rates: CpuRates) -> bool:
    """Whether ``inst``'s compute and memory time add up instead of overlapping: a library
    fusion without dots, on a profile that has its rates (Note [Library passes])."""
    if rates.library_transcendentals <= 0 or not is_library_fusion(inst):
        return False
    return not any(i.opcode in MATH_OPS for i in inst.attrs["calls"].instructions)


@dataclass(frozen=True, slots=True)
class FreshAllocation:
    """An allocation whose pages are mapped anew on every run (Note [Fresh pages per allocation]).

    ``label`` names it (``"allocation 3"`` of the buffer assignment, or ``"scratch of X"`` for
    a library fusion's own buffer), ``kind`` is the buffer assignment's kind (``temp``,
    ``maybe-live-out``, ...) or ``"library scratch"``, ``size`` is in bytes and
    ``first_writer`` is the top-level instruction whose writes fault its pages in.
    """

    label: str
    kind: str
    size: int
    first_writer: Instruction


def fresh_allocations(module: Module, memory: MemoryReport | None = None) -> list[FreshAllocation]:
    """The allocations of ``module`` mapped anew on every run, in schedule order of their first
    writers. ``memory`` reuses an ``analyze_memory(module)`` result (the report's memory section).

    Note [Fresh pages per allocation]
        XLA:CPU allocates each of the buffer assignment's output and temporary allocations anew
        for every execution (``MemoryForAllocation`` in ``pjrt/cpu/cpu_client.cc``), and
        glibc maps a block of ``FRESH_BUFFER_BYTES`` or more anew each time, so every page of
        such an allocation faults once per run, whichever of the values sharing it writes it
        first: a softmax-then-norm whose four 32 MiB results share one output and one
        temporary allocation faults on 64 MiB a run (16,384 faults counted), not on 128.
        Parameters and constants are not allocated by the run; an allocation first written
        inside a loop body is charged to no one (its later trips reuse it).
        The faults are the allocation's cost, not its first writer's: a 1 KiB fusion that
        happens to write first into a 64 MiB temporary block is not slow. The estimate shows
        each such allocation as its own interval (``fresh-pages``), on the compute stream just
        before its first writer, whose thread takes the faults; the writer's own time is its
        roofline. Only an XLA:CPU profile has this term: accelerators allocate from a pool.
    """
    report = memory if memory is not None else analyze_memory(module)
    if report.build_allocations is None:
        return []
    order = {inst.name: k for k, inst in enumerate(module.entry.instructions)}
    by_name = {inst.name: inst for inst in module.entry.instructions}
    fresh: list[tuple[int, FreshAllocation]] = []
    # The allocations' sizes and kinds and who writes them: not ``buffer_assignment``, which
    # would make every value's positions and uses (gigabytes at 3 M instructions).
    for alloc in report.allocations:
        if (alloc.size < FRESH_BUFFER_BYTES or alloc.kind in _NOT_ALLOCATED_BY_THE_RUN
                or not alloc.instructions):
            continue
        writers = [name for name in alloc.instructions if name in order]
        first = min(writers, key=order.__getitem__, default=None)
        if first is not None and by_name[first].opcode not in _NOT_WRITERS:
            fresh.append((order[first], FreshAllocation(f"allocation {alloc.index}", alloc.kind, alloc.size,
                                                        by_name[first])))
    for k, inst in enumerate(module.entry.instructions):  # Note [Library graphs with dots]: their scratch
        scratch = sum(n for n in _materialized_bytes(inst) if n >= FRESH_BUFFER_BYTES)
        if scratch:
            fresh.append((k, FreshAllocation(f"scratch of {inst.name}", "library scratch", scratch, inst)))
    return [a for _, a in sorted(fresh, key=lambda kv: kv[0])]


def _materialized_bytes(inst: Instruction) -> list[int]:
    """Bytes of each dot result a library fusion writes out and reads back inside its graph, or
    of the column matrix of a transposed convolution (Note [Transposed convolutions])."""
    if (transposed_conv := _transposed_conv_gemm(inst)) is not None:
        return [int(transposed_conv[1])]
    if not is_library_fusion(inst):
        return []
    fused: Computation = inst.attrs["calls"]
    return [i.shape.byte_size() for i in fused.instructions
            if i.opcode is Opcode.DOT and i is not fused.root and isinstance(i.shape, ArrayShape)]


# Allocation kinds (``AllocationSummary.kind``) a run does not map anew: its arguments, the
# constants, and thread-local scratch.
_NOT_ALLOCATED_BY_THE_RUN = frozenset({"parameter", "constant", "thread-local"})

# Instructions whose values are other buffers' (a tuple's index table is all they write).
_NOT_WRITERS = frozenset({Opcode.PARAMETER, Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT, Opcode.BITCAST})


# Note [Large outputs]
#     On this VM a loop that writes 64 MiB or more streams at half the rate of one writing less:
#     x * 2 over f32 arrays of 32, 40 and 48 MiB ran at 26-27, 27 and 23-25 GB/s, over 64 MiB at
#     13-15, and a concatenation writing 64 MiB from 32 at 14 (reading 128 MiB alone streams at
#     28); a decode step's transposes of its 64 MiB cache ran 1.4 and 4 times their estimate. Where
#     that happens depends on the machine's last-level cache and what else shares it, so it is
#     calibrated, not assumed: ``cpu_rates.large_output_bandwidth`` is the placed z = x + y
#     (Note [4K aliasing]) over arrays of LARGE_OUTPUT_BYTES, and a loop writing that much or
#     more streams at it. On a machine whose cache holds neither calibration the two rates
#     agree and nothing changes. A transposing walk of 64 MiB ran 1.4 times its estimate, not
#     the streams' 1.9 (slowing it by theirs put the decode step at +28%), and is left as it is.
def _stream_rate(hw: HardwareSpec, rates: CpuRates, nbytes: float) -> float:
    """Bytes/s of a loop moving ``nbytes``: ``memory_bandwidth`` past the caches, up to
    ``cached_bandwidth`` for a working set the core's cache keeps, interpolated on log(bytes)
    between the two calibrations (``CACHED_STREAM_BYTES``, ``LARGE_STREAM_BYTES``)."""
    large, cached = hw.memory_bandwidth, rates.cached_bandwidth
    if cached <= large or nbytes >= LARGE_STREAM_BYTES:
        return large
    if nbytes <= CACHED_STREAM_BYTES:
        return cached
    w = math.log(LARGE_STREAM_BYTES / nbytes) / math.log(LARGE_STREAM_BYTES / CACHED_STREAM_BYTES)
    return large * (cached / large) ** w


def _recomputed(fused: Computation) -> tuple[float, float, float]:
    """(FLOPs, transcendentals, bytes) a fusion evaluates or reads beyond what the cost
    analysis counts.

    Note [Recomputed producers]
        XLA's cost analysis counts each fused instruction once, but a fusion holding reductions
        runs one loop per reduction plus one for its root, and an elementwise producer read by
        several of those loops is evaluated in each (softmax's exp feeds the sum and the
        normalised output: evaluated twice, and timed so); likewise a fused parameter is read
        by each loop that needs it (layer norm reads its input for the mean, the variance and
        the output). An instruction's loops are the reductions and the root its values flow
        into without passing through another reduction.
    """
    users: dict[Instruction, list[Instruction]] = {}
    for i in fused.instructions:
        for o in i.operands:
            users.setdefault(o, []).append(i)
    loops: dict[Instruction, frozenset[Instruction]] = {}
    for i in reversed(fused.instructions):  # users come after their operands
        heads: set[Instruction] = {i} if i is fused.root else set()
        for u in users.get(i, ()):
            heads |= {u} if u.opcode is Opcode.REDUCE else loops.get(u, frozenset())
        loops[i] = frozenset(heads)
    flops = transcendentals = nbytes = 0.0
    for i in fused.instructions:
        extra = len(loops[i]) - 1
        if extra <= 0 or not isinstance(i.shape, ArrayShape):
            continue
        if i.opcode is Opcode.PARAMETER:
            nbytes += extra * i.shape.byte_size()
        elif i.opcode in TRANSCENDENTAL:
            transcendentals += extra * i.shape.element_count
        elif i.opcode in ELEMENTWISE:
            flops += extra * i.shape.element_count
    return flops, transcendentals, nbytes


def _loop_compute(body: tuple[Instruction, ...] | list[Instruction], flops: float, transcendentals: float,
                  rates: CpuRates, chained: bool = False, library: bool = False) -> float:
    """Seconds of the vectorised loops over ``body``: FLOPs and transcendentals at their rates,
    square roots as FLOPs (Note [Hardware roots]), gathers' and reduce-windows' walks at theirs.
    ``chained``: the transcendentals cost by the depth of their chains (XLA's own loops, Note
    [Chained transcendentals]), else each at the calibrated chain's rate (a library's passes)."""
    roots = [i for i in body if i.opcode in _ROOT_OPS]
    counted = min(float(sum(_elements_of(i) for i in roots)), transcendentals)  # XLA: one each
    flops += sum(_elements_of(i) * _ROOT_OPS[i.opcode] for i in roots) if counted else 0
    polynomial = transcendentals - counted
    # Note [FLOPs in a gather's loop]
    gathers = rates.gather_loop_flops > 0 and any(i.opcode is Opcode.GATHER for i in body)
    compute = flops / (rates.gather_loop_flops if gathers else rates.elementwise_flops) + (
        _chained_seconds(body, polynomial, rates) if chained
        else polynomial / (rates.library_transcendentals if library else rates.transcendentals))
    if chained and rates.narrowing_converts > 0:
        # Note [Narrowing converts]: each rounds at its own rate, not as the FLOP counted for it.
        narrowed = sum(_elements_of(i) for i in body if _is_narrowing_convert(i))
        compute += narrowed * max(1 / rates.narrowing_converts - 1 / rates.elementwise_flops, 0.0)
    for i in body:
        if i.opcode is Opcode.GATHER:
            compute += _elements_of(i) / _indexed_rate(rates.gather_elements, rates.cached_gather_elements,
                                                       _bytes_of(i.operands[0]))
        elif i.opcode is Opcode.REDUCE_WINDOW:
            # The walk runs the reducer as scalar code per window element: one instruction at
            # the calibrated rate (an add), each further one (a variadic argmax's compares and
            # selects) at the rate of a sort comparator's instructions.
            window = math.prod(d.size for d in window_of(i.attrs).dimensions)
            visits = _elements_of(i) / max(sum(1 for _ in i.shape.leaves()), 1) * window
            extra = max(_comparator_ops(i) - 1, 0)
            compute += visits * (1 / rates.reduce_window_elements + extra / rates.comparator_ops)
    return compute


# Note [FLOPs in a gather's loop]
#     A gather's loop walks an index per element and does not vectorise, and neither does the
#     elementwise work XLA fuses into it: a multiply fused into a gather of 262,144 rows of 32
#     f32 added 0.25 ns per element here (0.56 -> 0.81), eleven times its FLOP at the vectorised
#     elementwise rate; 0.31 at 524,288 rows. ``cpu_rates.gather_loop_flops`` is calibrated on
#     that multiply, and a loop with a gather runs its FLOPs at it.
# Note [Narrowing converts]
#     XLA:CPU rounds an f32 to bf16 or f16 in its own loops with a sequence of integer
#     instructions (round to nearest even, NaN kept) on a machine without a native conversion,
#     where XLA's cost analysis counts one FLOP. A bf16 model's fusions are full of them (each
#     bf16 op is computed in f32 and rounded back): measured here over 1 Mi elements, a round
#     trip f32 -> bf16 -> f32 with a multiply cost 0.26 ns per element, 13 times its three
#     FLOPs at the elementwise rate; an f16 one 0.12 ns. ``cpu_rates.narrowing_converts`` is
#     calibrated on bf16 round trips (8 against 4 per element); the widening convert is a
#     shift and stays a FLOP. Library fusions convert natively and are not charged so.
_NARROW_FLOATS = frozenset({"bf16", "f16"})
_WIDE_FLOATS = frozenset({"f32", "f64"})


def _is_narrowing_convert(inst: Instruction) -> bool:
    if inst.opcode is not Opcode.CONVERT or not inst.operands:
        return False
    out, src = inst.shape, inst.operands[0].shape
    return (isinstance(out, ArrayShape) and isinstance(src, ArrayShape)
            and out.element_type in _NARROW_FLOATS and src.element_type in _WIDE_FLOATS)


def _dot_flops(dot: Instruction) -> int:
    """XLA's FLOPs of a dot: two per multiply-add, output elements times contracted size."""
    lhs = dot.operands[0].shape
    if not isinstance(lhs, ArrayShape):
        return 0
    contracted = math.prod(lhs.dimensions[d] for d in dot.attrs.get("lhs_contracting_dims", ()))
    return 2 * _elements_of(dot) * contracted


# Note [Chained transcendentals]
#     XLA's loop emits one iteration's instructions straight, and the core overlaps iterations
#     only as far as its reorder window reaches. An exp or tanh is a polynomial of a few dozen
#     instructions, so a loop whose transcendentals form a chain (each taking the previous
#     one's result) shows their latency, and more so the longer the chain; independent ones
#     (softmax's exp, gelu's tanh, the log of a normal sampler) overlap. Measured here with
#     XLA:CPU over 1 Mi f32 elements, per element beyond the copy's streaming: a chain of
#     1, 2, 3, 4 and 8 alternating exp and tanh cost 0.16, 0.78, 1.60, 2.85 and 9.13 ns, 4
#     independent ones summed 0.49 ns, and tanh -> (exp, tanh) -> exp 2.06 ns: the longest
#     chain at its depth's cost per link, the one beside it at the independent rate.
#     So a loop's transcendentals on its longest chain (of depth d) cost a link of a chain of
#     d each, the rest what independent ones do: ``cpu_rates.unchained_transcendentals`` (8
#     independent ones summed) and ``transcendentals`` (a chain of CHAIN_DEPTH) are the
#     calibrated ends, a link of depth d between them on log(d). A library fusion's exps are
#     the library's own (Note [Library passes]).
CHAIN_DEPTH = 8
# Independent over chained transcendentals when a profile has no figure of its own (above:
# 8 links at 1.14 ns each against 0.2 ns for each of 4 independent ones).
INDEPENDENT_SPEEDUP = 5.0


def _chained_seconds(body: tuple[Instruction, ...] | list[Instruction], polynomial: float,
                     rates: CpuRates) -> float:
    """Seconds of ``polynomial`` transcendentals (the loop's count, recomputed ones included)
    of a loop over ``body`` (operands come first), Note [Chained transcendentals]."""
    if polynomial <= 0:
        return 0.0
    chain = 1 / rates.transcendentals
    independent = 1 / (rates.unchained_transcendentals or INDEPENDENT_SPEEDUP * rates.transcendentals)
    # Each instruction's deepest chain of transcendentals up to it: (depth, elements on it).
    deepest: dict[Instruction, tuple[int, float]] = {}
    for i in body:
        depth, on_it = max((deepest.get(o, (0, 0.0)) for o in i.operands), default=(0, 0.0))
        if i.opcode in TRANSCENDENTAL and i.opcode not in _ROOT_OPS:
            depth, on_it = depth + 1, on_it + _elements_of(i)
        deepest[i] = (depth, on_it)
    depth, on_chain = max(deepest.values(), default=(0, 0.0))
    if depth == 0:
        return polynomial * independent
    on_chain = min(on_chain, polynomial)
    w = min(math.log(depth) / math.log(CHAIN_DEPTH), 1.0)
    link = independent + (max(chain, independent) - independent) * w
    return on_chain * link + (polynomial - on_chain) * independent


# Note [Library graphs with dots]
#     A library fusion may hold more than its dots: YNNPACK takes attention's scores, softmax
#     and second matmul as one graph. Only the dots run on the matmul micro-kernel; the
#     graph's exp, reductions and scaling run as the library's vectorised loops, at the rates
#     XLA's own loops have (8.4 M exps of a 4x8x512x512 softmax are 7 ms here, not the 0.05 ms
#     they would take at the matmul rate). The micro-kernel writes a dot's whole result before
#     the graph goes on, so a dot that is not the graph's root is written and read back, in a
#     buffer the library allocates on each call: attention's 32 MiB of scores faulted 8,193
#     pages a run, where none of XLA's own allocations for that module reaches 32 MiB.

# Note [Hardware roots]
#     XLA's cost analysis counts sqrt and rsqrt as transcendentals, but XLA:CPU emits sqrt as
#     LLVM's sqrt intrinsic (one vsqrtps per vector) and rsqrt as that and a division
#     (``EmitSqrt``/``EmitRsqrt`` in ``elemental_ir_emitter.cc``), where exp, log or tanh are
#     polynomials of a few dozen instructions. So a root costs what an elementwise FLOP does
#     (rsqrt two), not a transcendental: jax's normal sampler (a log and a sqrt per element)
#     measured 1.9 ms for its last fusion, 1.9 so estimated, 2.8 with the roots as
#     transcendentals.
# Elementwise FLOPs each root costs (count of its instructions, from the emitter above).
_ROOT_OPS = {Opcode.SQRT: 1, Opcode.RSQRT: 2}


def _is_grouped_convolution(inst: Instruction) -> bool:
    return inst.opcode is Opcode.CONVOLUTION and (
        inst.attrs.get("feature_group_count", 1) > 1 or inst.attrs.get("batch_group_count", 1) > 1)


def _dot_rate(hw: HardwareSpec, rates: CpuRates, dtype: str, nbytes: float) -> float:
    """A library dot's FLOP/s: ``peak_flops`` for large operands, faster when they fit in cache.

    Between the two calibration sizes the rate is interpolated on log(bytes); the cache speed-up
    measured for f32 applies to every type.
    """
    large = hw.flops_per_second(dtype)
    speedup = max(rates.cached_dot_flops / hw.flops_per_second("f32"), 1.0)
    if nbytes >= LARGE_DOT_BYTES or speedup == 1.0:
        return large
    if nbytes <= CACHED_DOT_BYTES:
        return large * speedup
    w = math.log(LARGE_DOT_BYTES / nbytes) / math.log(LARGE_DOT_BYTES / CACHED_DOT_BYTES)
    return large * speedup**w


def _elements_of(inst: Instruction) -> int:
    return sum(s.element_count for _, s in inst.shape.leaves() if isinstance(s, ArrayShape))


def _sort_comparisons(sort: Instruction) -> float:
    shape = sort.operands[0].shape
    if not isinstance(shape, ArrayShape) or not shape.dimensions:
        return 0.0
    n = shape.dimensions[sort.attrs.get("dimensions", (len(shape.dimensions) - 1,))[0]]
    return float(shape.element_count * max((n - 1).bit_length(), 1))


def _comparator_ops(sort: Instruction) -> int:
    """Instructions of a sort's comparator (or a reducer) that run per comparison (not
    parameters, constants or the tuple of a variadic reducer's results)."""
    comparator = sort.attrs.get("to_apply")
    if comparator is None:
        return 1
    return max(sum(i.opcode not in (Opcode.PARAMETER, Opcode.CONSTANT, Opcode.TUPLE) for i in comparator.instructions),
               1)


def _nontrivial(shape: ArrayShape, minor_to_major: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in minor_to_major if shape.dimensions[d] > 1)


def _bytes_of(inst: Instruction) -> int:
    return sum(leaf.byte_size() for _, leaf in inst.shape.leaves() if isinstance(leaf, ArrayShape))
