"""Shape rules of linear algebra: dot, convolution, fft and triangular-solve."""
from __future__ import annotations

from hloscope.ir.attributes import Window
from hloscope.ir.instruction import Instruction
from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import Shape
from hloscope.ir.shapes.reduction import window_output_dimensions
from hloscope.ir.shapes.rules import (
    COMPLEX_OF,
    REAL_OF,
    ShapeInferenceError,
    array_shape,
    attribute,
    declared_array,
    dims_in_range,
    operand_shape,
    shape_rule,
    shape_text,
)

__all__: list[str] = []


@shape_rule(Opcode.DOT)
def _dot(inst: Instruction) -> Shape:
    """Batch dimensions, then lhs free, then rhs free; the declared (preferred) element type."""
    a, b = operand_shape(inst, 0), operand_shape(inst, 1)
    lb, rb = tuple(attribute(inst, "lhs_batch_dims", ())), tuple(attribute(inst, "rhs_batch_dims", ()))
    lc, rc = tuple(attribute(inst, "lhs_contracting_dims", ())), tuple(attribute(inst, "rhs_contracting_dims", ()))
    dims_in_range(lb + lc, a.rank, "lhs batch/contracting dimension")
    dims_in_range(rb + rc, b.rank, "rhs batch/contracting dimension")
    for what, ld, rd in (("batch", lb, rb), ("contracting", lc, rc)):
        if [a.dimensions[d] for d in ld] != [b.dimensions[d] for d in rd]:
            raise ShapeInferenceError(
                f"dot {what} dimensions differ: lhs {shape_text(a)} dims {list(ld)} vs "
                f"rhs {shape_text(b)} dims {list(rd)}")
    free_a = [d for d in range(a.rank) if d not in lb and d not in lc]
    free_b = [d for d in range(b.rank) if d not in rb and d not in rc]
    dims = [a.dimensions[d] for d in (*lb, *free_a)] + [b.dimensions[d] for d in free_b]
    return array_shape(declared_array(inst).element_type, dims)


@shape_rule(Opcode.CONVOLUTION)
def _convolution(inst: Instruction) -> Shape:
    """Batch / batch_group_count, kernel output features, and the window's spatial sizes."""
    a, k = operand_shape(inst, 0), operand_shape(inst, 1)
    dn = attribute(inst, "dim_labels")
    fgc, bgc = attribute(inst, "feature_group_count", 1), attribute(inst, "batch_group_count", 1)
    rank = len(dn.input_spatial_dimensions) + 2
    if a.rank != rank or k.rank != rank:
        raise ShapeInferenceError(f"dim_labels {dn} need rank {rank}, got {shape_text(a)} and {shape_text(k)}")
    batch, feat = a.dimensions[dn.input_batch_dimension], a.dimensions[dn.input_feature_dimension]
    kin, kout = k.dimensions[dn.kernel_input_feature_dimension], k.dimensions[dn.kernel_output_feature_dimension]
    if feat % fgc or feat // fgc != kin:
        raise ShapeInferenceError(
            f"input features {feat} / feature_group_count {fgc} must equal kernel input features {kin}")
    if kout % fgc or kout % bgc or batch % bgc:
        raise ShapeInferenceError(
            f"kernel output features {kout} and batch {batch} must divide by the group counts ({fgc}, {bgc})")
    window = attribute(inst, "window", Window(()))
    ksizes = [k.dimensions[d] for d in dn.kernel_spatial_dimensions]
    if [w.size for w in window.dimensions] != ksizes:
        raise ShapeInferenceError(f"window sizes {window} do not match kernel spatial sizes {ksizes}")
    spatial = window_output_dimensions(tuple(a.dimensions[d] for d in dn.input_spatial_dimensions), window)
    dims = [0] * rank
    dims[dn.output_batch_dimension], dims[dn.output_feature_dimension] = batch // bgc, kout
    for d, n in zip(dn.output_spatial_dimensions, spatial, strict=True):
        dims[d] = n
    return array_shape(declared_array(inst).element_type, dims)


_FFT_TYPES = {"FFT": "c", "IFFT": "c", "RFFT": "r2c", "IRFFT": "c2r"}


@shape_rule(Opcode.FFT)
def _fft(inst: Instruction) -> Shape:
    """FFT/IFFT keep the shape; RFFT halves the minor length (+1) into complex; IRFFT inverts it."""
    s, kind = operand_shape(inst, 0), attribute(inst, "fft_type")
    length = tuple(attribute(inst, "fft_length"))
    n = len(length)
    if kind not in _FFT_TYPES or s.rank < n:
        raise ShapeInferenceError(f"fft_type={kind} with fft_length {list(length)} does not fit {shape_text(s)}")
    if kind in ("FFT", "IFFT"):
        return s
    dims = list(s.dimensions)
    if kind == "RFFT":
        if tuple(dims[-n:]) != length or s.element_type not in COMPLEX_OF:
            raise ShapeInferenceError(f"RFFT of {shape_text(s)} needs real minor dimensions {list(length)}")
        dims[-1] = length[-1] // 2 + 1
        return array_shape(COMPLEX_OF[s.element_type], dims)
    if tuple(dims[-n:-1]) != length[:-1] or dims[-1] != length[-1] // 2 + 1 or s.element_type not in REAL_OF:
        raise ShapeInferenceError(f"IRFFT of {shape_text(s)} does not match fft_length {list(length)}")
    dims[-n:] = length
    return array_shape(REAL_OF[s.element_type], dims)


@shape_rule(Opcode.TRIANGULAR_SOLVE)
def _triangular_solve(inst: Instruction) -> Shape:
    """b's shape; a is square in its two minor dimensions."""
    a, b = operand_shape(inst, 0), operand_shape(inst, 1)
    if a.rank < 2 or a.dimensions[-1] != a.dimensions[-2] or a.rank != b.rank:
        raise ShapeInferenceError(f"triangular-solve needs a square a of b's rank, got {shape_text(a)}, {shape_text(b)}")
    return b


