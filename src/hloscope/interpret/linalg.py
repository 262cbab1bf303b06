"""Pure numpy semantics of XLA's linear-algebra ops: dot, convolution, triangular-solve,
cholesky and fft.

Note [Accumulation type]
------------------------
XLA:CPU upcasts narrow floats (bf16, f16, f8) to f32 for dots and convolutions and rounds the
result once to the output type; f64 stays f64, complex stays complex. Integer dots convert the
operands to the result type and wrap on overflow; we multiply in 64-bit and truncate, which
gives the same bits because wrapping arithmetic is exact modulo 2^bits. A pred dot of preds
is an OR of ANDs; of floats, the float product compared with zero. The output type is the instruction's (the "preferred element type").
"""
from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from hloscope.interpret import blas
from hloscope.interpret.reduction import is_float_dtype
from hloscope.interpret.shape_ops import pad

__all__ = [
    "ConvDimLabels",
    "cholesky",
    "convolution",
    "dot_general",
    "fft",
    "parse_dim_labels",
    "triangular_solve",
]


def _compute_dtype(out_dtype: np.dtype, *inputs: np.ndarray) -> np.dtype:
    out_dtype = np.dtype(out_dtype)
    dts = [np.dtype(x.dtype) for x in inputs] + [out_dtype]
    if any(d.kind == "c" for d in dts):
        wide = any(d in (np.complex128, np.float64) for d in dts)
        return np.dtype(np.complex128 if wide else np.complex64)
    if is_float_dtype(out_dtype) or any(is_float_dtype(d) for d in dts):
        # A pred result of float operands is the float product compared with 0 (XLA:CPU:
        # [1, -1] . [1, 1] is false, [0.5] . [1] true), not a product of truncated integers.
        return np.dtype(np.float64 if np.dtype(np.float64) in dts else np.float32)
    if out_dtype == np.bool_:
        return np.dtype(np.int64)
    return np.dtype(np.uint64 if out_dtype.kind == "u" else np.int64)


def _prepare(x: np.ndarray, out_dtype: np.dtype, compute: np.dtype) -> np.ndarray:
    # Integer operands are first converted to the result type (XLA converts to the preferred
    # element type), then widened; 64-bit wrapping keeps the low bits exact.
    if compute.kind in "iu" and np.dtype(out_dtype).kind in "iu":
        return x.astype(out_dtype).astype(compute)
    return x.astype(compute)


def _finish(r: np.ndarray, out_dtype: np.dtype) -> np.ndarray:
    out_dtype = np.dtype(out_dtype)
    if out_dtype == np.bool_:
        return r != 0
    return np.asarray(r).astype(out_dtype, copy=False)  # r is a fresh product: no copy needed


def dot_general(
    lhs: np.ndarray,
    rhs: np.ndarray,
    lhs_batch: Sequence[int],
    rhs_batch: Sequence[int],
    lhs_contracting: Sequence[int],
    rhs_contracting: Sequence[int],
    out_dtype: np.dtype | type | None = None,
) -> np.ndarray:
    """HLO `dot`: sum over paired contracting dimensions, elementwise over paired batch
    dimensions. Result dimensions are (batch..., lhs free..., rhs free...), free dimensions in
    their operand order. Accumulation per Note [Accumulation type]."""
    out_dtype = np.dtype(out_dtype if out_dtype is not None else np.result_type(lhs, rhs))
    compute = _compute_dtype(out_dtype, lhs, rhs)
    lfree = [d for d in range(lhs.ndim) if d not in lhs_batch and d not in lhs_contracting]
    rfree = [d for d in range(rhs.ndim) if d not in rhs_batch and d not in rhs_contracting]
    bshape = [lhs.shape[d] for d in lhs_batch]
    m = int(np.prod([lhs.shape[d] for d in lfree], dtype=np.int64))
    n = int(np.prod([rhs.shape[d] for d in rfree], dtype=np.int64))
    k = int(np.prod([lhs.shape[d] for d in lhs_contracting], dtype=np.int64))
    b = int(np.prod(bshape, dtype=np.int64))
    a3 = np.transpose(_prepare(lhs, out_dtype, compute), list(lhs_batch) + lfree + list(lhs_contracting))
    b3 = np.transpose(_prepare(rhs, out_dtype, compute), list(rhs_batch) + list(rhs_contracting) + rfree)
    a3, b3 = a3.reshape(b, m, k), b3.reshape(b, k, n)
    if compute.kind == "c":
        # XLA sums the complex products (ac - bd) + (ad + bc)i; BLAS's zgemm/zdot reach NaN
        # where those give ±inf (x * (1 + inf i)), so multiply the parts with real matmuls.
        ar, ai, br, bi = np.real(a3), np.imag(a3), np.real(b3), np.imag(b3)
        r = np.empty((b, m, n), compute)
        r.real = np.matmul(ar, br) - np.matmul(ai, bi)
        r.imag = np.matmul(ar, bi) + np.matmul(ai, br)
    else:
        r = matmul(a3, b3)
    out_shape = bshape + [lhs.shape[d] for d in lfree] + [rhs.shape[d] for d in rfree]
    return _finish(r.reshape(out_shape), out_dtype)


class ConvDimLabels(NamedTuple):
    """Convolution dimension numbers: which operand dimension plays which role."""

    lhs_batch: int
    lhs_feature: int
    lhs_spatial: tuple[int, ...]
    rhs_input_feature: int
    rhs_output_feature: int
    rhs_spatial: tuple[int, ...]
    out_batch: int
    out_feature: int
    out_spatial: tuple[int, ...]


def _transposed(x: np.ndarray) -> bool:
    """Whether each matrix of ``x [..., k, n]`` is the transpose of a C-ordered ``[n, k]``."""
    item = x.itemsize
    return x.shape[-2] > 1 and x.strides[-2] == item and x.strides[-1] == x.shape[-2] * item


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.matmul(a, b)`` (a ``[..., m, k]``, b ``[..., k, n]``), giving BLAS the operand
    order it reads fastest.

    A few activation rows times a weight stored ``[n, k]`` (x @ W.T, every dense layer's
    forward or input-gradient gemm with a GPU dump's layouts) is bound by reading the weight,
    and OpenBLAS streams it about 1.6x faster as ``(W @ x.T).T`` (measured single-threaded on
    [16, 4096] x [4096, 2048] f32: 8.7 ms against 5.5 ms). The result is then a transposed
    view, which every consumer accepts."""
    if a.shape[-2] * 4 <= b.shape[-1] and _transposed(b):
        return np.swapaxes(np.matmul(np.swapaxes(b, -1, -2), np.swapaxes(a, -1, -2)), -1, -2)
    return np.matmul(a, b)


class _ThreadControl(Protocol):
    """What hloscope uses of threadpoolctl's controller of one BLAS library."""

    num_threads: int

    def set_num_threads(self, num_threads: int) -> object: ...


@functools.cache
def _blas_gemm(dtype: np.dtype) -> Callable[..., np.ndarray] | None:
    """BLAS's ``?gemm`` for ``dtype`` from scipy, or None without scipy (an optional
    accelerator: numpy has no gemm with beta)."""
    try:
        from scipy.linalg import blas
    except ImportError:
        return None
    (gemm,) = blas.get_blas_funcs(("gemm",), dtype=dtype)  # a tuple of names gives a list
    return gemm


@functools.cache
def _scipy_blas_threads() -> _ThreadControl | None:
    """threadpoolctl's handle on scipy's own BLAS library (wheels bundle one apart from
    numpy's), or None without threadpoolctl or when scipy shares numpy's."""
    try:
        import scipy.linalg.blas  # noqa: F401  (loads the library)
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    import numpy

    numpy_dir = Path(numpy.__file__).parent.parent
    for lib in ThreadpoolController().lib_controllers:
        path = Path(lib.filepath)
        if lib.internal_api == "openblas" and "scipy" in path.parent.name and numpy_dir in path.parents:
            return lib
    return None


# Note [One BLAS thread for skinny accumulations]: a gemm that adds a thin product (k = a
# batch of 16) into a big output is bound by memory, and scipy's BLAS (a second OpenBLAS
# beside numpy's) leaves its worker threads spinning after each call, taking the cores from
# the numpy matmul that follows. Measured on 2 cores, one skinny accumulation into [2048,4096]
# then one 2 x [2048,4096] matmul: 10.3 + 13.4 ms with two scipy threads, 5.8 + 6.7 ms with
# one. Wider products (compute bound) keep every thread.
_SKINNY_K = 64


def _blas_operand(x: np.ndarray) -> tuple[np.ndarray, int] | None:
    """``x`` as a Fortran-ordered array BLAS reads in place, with its transpose flag."""
    if x.flags.f_contiguous:
        return x, 0
    if x.flags.c_contiguous:
        return x.T, 1
    return None


def matmul_accumulate(c: np.ndarray, a: np.ndarray, b: np.ndarray, alpha: float | complex = 1) -> bool:
    """``c += alpha * a @ b`` in place with one BLAS gemm (beta = 1), for 2-D ``a [m, k]``,
    ``b [k, n]`` and a writeable C-ordered ``c [m, n]``, all of one float or complex type.

    A gemm that accumulates into its output (cuBLAS's beta = 1, XLA's dot + add) otherwise
    costs a fresh result array and a pass adding it to ``c``; for the skinny products of
    weight gradients (k = batch) that pass and the page faults of the fresh array cost more
    than the product. numpy's own BLAS does it when reachable (Note [numpy's own BLAS]),
    else scipy's. Returns False, with ``c`` untouched, when neither is there or the operands
    do not fit; the caller then computes it the ordinary way.
    """
    if blas.gemm(c, a, b, alpha):
        return True
    dtype = c.dtype
    if (a.ndim != 2 or b.ndim != 2 or c.ndim != 2 or a.dtype != dtype or b.dtype != dtype
            or dtype.kind not in "fc" or dtype.itemsize < 4 or not c.flags.c_contiguous
            or not c.flags.writeable or 0 in c.shape or a.shape[1] == 0):
        return False
    gemm = _blas_gemm(dtype)
    bt, at = _blas_operand(b.T), _blas_operand(a.T)  # c.T = b.T @ a.T, column-major
    if gemm is None or bt is None or at is None:
        return False
    threads = _scipy_blas_threads() if a.shape[1] <= _SKINNY_K else None
    before = threads.num_threads if threads is not None else 1
    if threads is not None and before > 1:
        threads.set_num_threads(1)  # Note [One BLAS thread for skinny accumulations]
    try:
        out = gemm(alpha, bt[0], at[0], beta=1, c=c.T, trans_a=bt[1], trans_b=at[1], overwrite_c=1)
    finally:
        if threads is not None and before > 1:
            threads.set_num_threads(before)
    if not np.shares_memory(out, c):  # the wrapper copied c after all: write the result back
        c[...] = out.T
    return True


def parse_dim_labels(text: str) -> ConvDimLabels:
    """Parse XLA's `dim_labels=b01f_01io->b01f` text. Letters name roles (b/f batch/feature,
    i/o kernel input/output feature), digits number spatial dimensions; the character's
    position is the dimension. Works for any spatial order ("0bf_oi0->0bf") and none
    ("bf_io->bf")."""
    m = re.fullmatch(r"([^_]+)_([^-]+)->(.+)", text.strip())
    if not m:
        raise ValueError(f"malformed dim_labels {text!r}; expected e.g. 'b01f_01io->b01f'")
    lhs, rhs, out = m.groups()

    def roles(s: str, letters: str) -> tuple[list[int], tuple[int, ...]]:
        found = [s.index(c) if c in s else -1 for c in letters]
        digits = sorted((int(c), i) for i, c in enumerate(s) if c.isdigit())
        if -1 in found or len(digits) + len(letters) != len(s) or \
                [d for d, _ in digits] != list(range(len(digits))):
            raise ValueError(f"malformed dim_labels part {s!r} in {text!r}")
        return found, tuple(i for _, i in digits)

    (lb, lf), ls = roles(lhs, "bf")
    (ri, ro), rs = roles(rhs, "io")
    (ob, of), os_ = roles(out, "bf")
    if not len(ls) == len(rs) == len(os_):
        raise ValueError(f"dim_labels {text!r} have differing spatial ranks")
    return ConvDimLabels(lb, lf, ls, ri, ro, rs, ob, of, os_)


_WINDOW_FIELDS = ("size", "stride", "pad_low", "pad_high", "lhs_dilation", "rhs_dilation",
                  "window_reversal")
_WINDOW_DEFAULTS = {"stride": 1, "pad_low": 0, "pad_high": 0, "lhs_dilation": 1,
                    "rhs_dilation": 1, "window_reversal": False}


def _window_dim(w: Mapping | Sequence) -> dict:
    d = dict(w) if isinstance(w, Mapping) else dict(zip(_WINDOW_FIELDS, w, strict=False))  # short tuples take defaults
    return {**_WINDOW_DEFAULTS, **d}


_IM2COL_BYTES = 256 * 2**20  # the largest window matrix one convolution step copies


def convolution(
    lhs: np.ndarray,
    rhs: np.ndarray,
    *,
    window: Sequence[Mapping | Sequence],
    dim_labels: ConvDimLabels | Sequence | str,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    out_dtype: np.dtype | type | None = None,
) -> np.ndarray:
    """HLO `convolution`. Per spatial dimension (`window[i]` describes the i-th spatial
    dimension, numbered as in dim_labels, as a dict or a tuple in the order size, stride,
    pad_low, pad_high, lhs_dilation, rhs_dilation, window_reversal): the input is dilated by
    `lhs_dilation` (zeros between elements), padded (negative padding crops), and correlated
    with the kernel dilated by `rhs_dilation` (reversed first if `window_reversal`), moving by
    `stride`. With `feature_group_count` G the input features and the output features split
    into G contiguous groups that convolve pairwise; with `batch_group_count` the input batch
    and the output features split that way. Accumulation per Note [Accumulation type].
    """
    if isinstance(dim_labels, str):
        dim_labels = parse_dim_labels(dim_labels)
    lb, lf, ls, ri, ro, rs, ob, of, os_ = dim_labels
    out_dtype = np.dtype(out_dtype if out_dtype is not None else np.result_type(lhs, rhs))
    compute = _compute_dtype(out_dtype, lhs, rhs)
    wins = [_window_dim(w) for w in window]
    nsp = len(ls)
    if len(wins) != nsp:
        raise ValueError(f"convolution window has {len(wins)} dimensions, dim_labels {nsp}")
    # Canonical layouts: input (N, C, spatial...), kernel (O, I, spatial...).
    x = np.transpose(_prepare(lhs, out_dtype, compute), (lb, lf, *ls))
    k = np.transpose(_prepare(rhs, out_dtype, compute), (ro, ri, *rs))
    flip = tuple(2 + i for i, w in enumerate(wins) if w["window_reversal"])
    if flip:
        k = np.flip(k, flip)
    g, bg = feature_group_count, batch_group_count
    if g == 1 and bg == 1 and nsp and 4 * int(np.prod(x.shape[2:])) <= int(np.prod([w["size"] for w in wins])):
        # Note [A window wider than its input]
        order = np.argsort((ob, of, *os_))
        return _finish(np.transpose(_by_input_positions(x, k, wins, compute), order), out_dtype)
    x = pad(x, np.zeros((), compute), [0, 0] + [w["pad_low"] for w in wins],
            [0, 0] + [w["pad_high"] for w in wins], [0, 0] + [w["lhs_dilation"] - 1 for w in wins])
    eff = [(w["size"] - 1) * w["rhs_dilation"] + 1 for w in wins]
    out_sp = [(n - e) // w["stride"] + 1 if n >= e else 0 for n, e, w in zip(x.shape[2:], eff, wins, strict=True)]
    nbatch, cin = x.shape[:2]
    cout = k.shape[0]
    out = np.zeros((nbatch // bg, cout, *out_sp), compute)
    if 0 not in out_sp and out.size:
        view = sliding_window_view(x, eff, axis=tuple(range(2, 2 + nsp)))
        view = view[(slice(None), slice(None), *(np.s_[:: w["stride"]] for w in wins),
                     *(np.s_[:: w["rhs_dilation"]] for w in wins))]
        # view: (N, C, out_sp..., kernel_sp...). One tensordot per group; groups are few or
        # small, and each tensordot is a BLAS call over all positions at once.
        cg, og, nb = cin // g, cout // (g * bg), nbatch // bg
        sum_axes = [1] + list(range(2 + nsp, 2 + 2 * nsp))
        # tensordot copies the windows it reads into one matrix (im2col): batch * positions x
        # channels * window elements. A batch chunk bounds that copy (a 7x7 stride-2 conv of
        # f32[128,3,224,224] needed 0.9 GB at once, over the sweep's memory limit).
        per_image = cg * int(np.prod(out_sp)) * int(np.prod([w["size"] for w in wins])) * compute.itemsize
        chunk = max(1, _IM2COL_BYTES // max(per_image, 1))
        # One image bigger than that (a 30x30 kernel over 512 channels: 1.9 GB) is cut along
        # its first output dimension too.
        first = out_sp[0] if nsp else 1
        rows = first if per_image <= _IM2COL_BYTES else max(1, _IM2COL_BYTES * first // per_image)
        for gi, bi in itertools.product(range(g), range(bg)):
            o0 = (bi * g + gi) * og
            ks = k[o0 : o0 + og]
            for n0, r0 in itertools.product(range(0, nb, chunk), range(0, first, rows)):
                xs = view[bi * nb + n0 : bi * nb + min(n0 + chunk, nb), gi * cg : (gi + 1) * cg]
                if nsp:
                    xs = xs[:, :, r0 : r0 + rows]
                r = np.tensordot(xs, ks, axes=(sum_axes, [1] + list(range(2, 2 + nsp))))
                if nsp:
                    out[n0 : n0 + r.shape[0], o0 : o0 + og, r0 : r0 + r.shape[1]] = np.moveaxis(r, -1, 1)
                else:
                    out[n0 : n0 + r.shape[0], o0 : o0 + og] = np.moveaxis(r, -1, 1)
    # Back from (N, O, spatial...) to the output dimension order.
    order = np.argsort((ob, of, *os_))
    return _finish(np.transpose(out, order), out_dtype)


# Note [A window wider than its input]
# -------------------------------------
# A convolution whose window is much larger than its input (XLA's simplifier tests; a filter
# gradient over a small image: a 3x3 input padded by 30 under a 32x32 window) spends nearly
# every product of the window walk on padding: at f32[3,3,160,160] x f32[128,32,32,160] the
# walk did 3.4 T multiply-adds and ran past a minute, where XLA:CPU swaps the operands first
# (SwapConvolutionOperandsIfBeneficial). When the input has at most a quarter as many spatial
# positions as the window, the sum runs over the input's positions instead: input position s
# meets output position p at kernel offset j = (pad_low + s * lhs_dilation - p * stride) /
# rhs_dilation, when that is a whole number inside the window, so each s is one product of
# the input's (batch x features) values with the kernel entries it meets at every p.


def _by_input_positions(x: np.ndarray, k: np.ndarray, wins: list[dict[str, int]], compute: np.dtype) -> np.ndarray:
    """The convolution of canonical ``x`` (N, C, spatial...; not padded) and ``k`` (O, C,
    spatial...; reversed where the window says) as (N, O, output spatial...), summed over the
    input's positions (Note [A window wider than its input])."""
    x = x.astype(compute, copy=False)
    k = k.astype(compute, copy=False)
    sizes = [w["size"] for w in wins]
    spans = [max((n - 1) * w["lhs_dilation"] + 1 + w["pad_low"] + w["pad_high"], 0) if n else 0
             for n, w in zip(x.shape[2:], wins, strict=True)]
    eff = [(w["size"] - 1) * w["rhs_dilation"] + 1 for w in wins]
    out_sp = [(n - e) // w["stride"] + 1 if n >= e else 0 for n, e, w in zip(spans, eff, wins, strict=True)]
    nbatch, cout = x.shape[0], k.shape[0]
    out = np.zeros((nbatch, cout, int(np.prod(out_sp))), compute)
    if not out.size or not x.size:
        return out.reshape(nbatch, cout, *out_sp)
    grids = np.meshgrid(*(np.arange(m) for m in out_sp), indexing="ij")
    kflat = k.reshape(cout, k.shape[1], -1)  # kernel offsets in row-major order over ``sizes``
    for s in itertools.product(*(range(n) for n in x.shape[2:])):
        at = np.zeros(out_sp, np.int64)
        valid = np.ones(out_sp, bool)
        for d, w in enumerate(wins):
            reach = w["pad_low"] + s[d] * w["lhs_dilation"] - grids[d] * w["stride"]
            j = reach // w["rhs_dilation"]
            valid &= (reach % w["rhs_dilation"] == 0) & (j >= 0) & (j < sizes[d])
            at = at * sizes[d] + np.clip(j, 0, sizes[d] - 1)
        where = np.flatnonzero(valid)
        if where.size:
            met = kflat[:, :, at.reshape(-1)[where]]  # (O, C, positions)
            out[:, :, where] += np.tensordot(x[(slice(None), slice(None), *s)], met, axes=([1], [1]))
    return out.reshape(nbatch, cout, *out_sp)


def _solve_lower_left(m: np.ndarray, b: np.ndarray, unit: bool) -> np.ndarray:
    """Forward substitution for lower-triangular m (..., n, n), b (..., n, k): a loop over
    the n rows, each step vectorized over batch and right-hand sides."""
    n = m.shape[-1]
    x = np.zeros(np.broadcast_shapes(m.shape[:-2], b.shape[:-2]) + b.shape[-2:], b.dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(n):
            acc = b[..., i, :] - np.einsum("...j,...jk->...k", m[..., i, :i], x[..., :i, :])
            x[..., i, :] = acc if unit else acc / m[..., i, i, None]
    return x


def triangular_solve(
    a: np.ndarray,
    b: np.ndarray,
    left_side: bool,
    lower: bool,
    unit_diagonal: bool,
    transpose_a: str = "NO_TRANSPOSE",
) -> np.ndarray:
    """HLO `triangular-solve` (batched over leading dimensions): returns x with op(a) @ x = b
    (`left_side`) or x @ op(a) = b, where op is identity, transpose or conjugate transpose
    ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"). Only the `lower` (or upper) triangle of a is read;
    with `unit_diagonal` the diagonal is taken as ones and not read. Singular a gives inf/NaN,
    not an error. Computed in f64/c128 and rounded to the operand type."""
    out_dtype = b.dtype
    compute = np.complex128 if np.dtype(a.dtype).kind == "c" else np.float64
    m = a.astype(compute)
    m = np.tril(m) if lower else np.triu(m)
    transpose_a = transpose_a.upper()
    if transpose_a in ("TRANSPOSE", "ADJOINT"):
        m = np.swapaxes(m, -1, -2)
        lower = not lower
        if transpose_a == "ADJOINT":
            m = np.conj(m)
    elif transpose_a != "NO_TRANSPOSE":
        raise ValueError(f"unknown transpose_a {transpose_a!r}")
    rhs = b.astype(compute)
    if not left_side:
        # x @ M = b  <=>  M^T @ x^T = b^T
        m, rhs, lower = np.swapaxes(m, -1, -2), np.swapaxes(rhs, -1, -2), not lower
    if not lower:
        # Reverse rows and columns: an upper-triangular system becomes a lower one.
        m, rhs = m[..., ::-1, ::-1], rhs[..., ::-1, :]
    x = _solve_lower_left(m, rhs, unit_diagonal)
    if not lower:
        x = x[..., ::-1, :]
    if not left_side:
        x = np.swapaxes(x, -1, -2)
    return x.astype(out_dtype)


def cholesky(a: np.ndarray, lower: bool = True) -> np.ndarray:
    """HLO `cholesky` (batched): L with a = L @ L^H (or U with a = U^H @ U when not `lower`),
    reading only that triangle of a; the other triangle of the result is zero. A matrix that is
    not positive definite yields a result of NaN everywhere, both triangles, as XLA:CPU's
    CholeskyExpander gives for the HLO op (jax on CPU calls LAPACK's potrf instead, a custom
    call with its own handler, and leaves the other triangle zero). Column-by-column,
    vectorized over the batch; computed in f64/c128."""
    out_dtype = a.dtype
    compute = np.complex128 if np.dtype(a.dtype).kind == "c" else np.float64
    m = a.astype(compute)
    if not lower:
        m = np.conj(np.swapaxes(m, -1, -2))  # the upper triangle of a, as a lower one
    m = np.tril(m)
    n = m.shape[-1]
    ell = np.zeros_like(m)
    ok = np.ones(m.shape[:-2], bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        for j in range(n):
            row = ell[..., j, :j]
            d = np.real(m[..., j, j]) - np.real(np.einsum("...k,...k->...", row, np.conj(row)))
            ok &= d > 0
            djj = np.sqrt(np.where(d > 0, d, np.nan))
            ell[..., j, j] = djj
            below = m[..., j + 1 :, j] - np.einsum("...ik,...k->...i", ell[..., j + 1 :, :j], np.conj(row))
            ell[..., j + 1 :, j] = below / djj[..., None]
    ell = np.where(ok[..., None, None], np.tril(ell), np.nan)
    if not lower:
        ell = np.conj(np.swapaxes(ell, -1, -2))
    return ell.astype(out_dtype)


_FFT_OUT = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128,
            np.dtype(np.complex64): np.complex64, np.dtype(np.complex128): np.complex128}


def fft(x: np.ndarray, fft_type: str, fft_length: Sequence[int]) -> np.ndarray:
    """HLO `fft` over the last len(fft_length) dimensions. FFT/IFFT: complex -> complex
    (IFFT scaled by 1/N). RFFT: real -> complex with the last dimension fft_length[-1]//2+1.
    IRFFT: complex -> real of shape fft_length (reads fft_length[-1]//2+1 inputs). Types follow
    XLA: f32 <-> c64, f64 <-> c128."""
    fft_type = fft_type.upper()
    axes = tuple(range(x.ndim - len(fft_length), x.ndim))
    s = tuple(fft_length)
    if 0 in s and fft_type in ("FFT", "IFFT", "RFFT", "IRFFT"):
        # A zero-length transform: zeros, as XLA's reference evaluator defines it (XLA:CPU
        # leaves the output uninitialized; numpy refuses "0 FFT data points").
        k = len(s)
        lead = x.shape[:x.ndim - k]
        dims = {"FFT": x.shape[x.ndim - k:], "IFFT": x.shape[x.ndim - k:],
                "RFFT": (*x.shape[x.ndim - k:-1], s[-1] // 2 + 1), "IRFFT": s}[fft_type]
        real = np.float32 if np.dtype(x.dtype) in (np.complex64, np.float32) else np.float64
        dtype = real if fft_type == "IRFFT" else _FFT_OUT[np.dtype(x.dtype)]
        return np.zeros((*lead, *dims), dtype)
    if fft_type == "FFT":
        return np.fft.fftn(x, s=s, axes=axes).astype(_FFT_OUT[np.dtype(x.dtype)])
    if fft_type == "IFFT":
        return np.fft.ifftn(x, s=s, axes=axes).astype(_FFT_OUT[np.dtype(x.dtype)])
    if fft_type == "RFFT":
        return np.fft.rfftn(x, s=s, axes=axes).astype(_FFT_OUT[np.dtype(x.dtype)])
    if fft_type == "IRFFT":
        real = np.float32 if np.dtype(x.dtype) == np.complex64 else np.float64
        return np.fft.irfftn(x, s=s, axes=axes).astype(real)
    raise ValueError(f"unknown fft_type {fft_type!r}; expected FFT, IFFT, RFFT or IRFFT")
