"""``?gemm`` with beta, called in the BLAS library numpy itself uses.

Note [numpy's own BLAS]
-----------------------
numpy has no gemm with beta, so ``c += a @ b`` costs a fresh product and a pass adding it,
unless something calls BLAS directly. scipy's BLAS does, but scipy's wheels bundle a second
OpenBLAS with its own thread pool, and its workers spin for a while after each call, taking
the cores from numpy's next matmul (measured on 2 cores, an accumulation into [2048, 4096]
with k = 16 followed by a [2, 2048] x [2048, 4096] numpy product: 8.7 ms through scipy on
one thread, 17.6 ms on two, 6.5 ms here). So we look the gemm up in numpy's own library:
dlsym on numpy's extension module searches the libraries it links, and numpy's wheels export
OpenBLAS under ILP64 names (``scipy_cblas_sgemm64_``). Only 64-bit-integer names are used, so
the argument types are known; the functions are checked once against numpy on a small
problem before first use. Where none is found (other builds, Windows) callers fall back to
scipy's BLAS.
"""
from __future__ import annotations

import ctypes
import functools
import importlib
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # ctypes' own name for it (ctypes._CFuncPtr) is private in the stubs
    from _ctypes import CFuncPtr

__all__ = ["gemm"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}
_NAMES = ("scipy_cblas_{}gemm64_", "cblas_{}gemm64_", "cblas_{}gemm_64")


def _numpy_library() -> ctypes.CDLL | None:
    for module in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            path = importlib.import_module(module).__file__
        except ImportError:
            continue
        try:
            return ctypes.CDLL(path)
        except OSError:
            return None
    return None


@functools.cache
def _function(dtype: np.dtype) -> CFuncPtr | None:
    lib = _numpy_library()
    if lib is None:
        return None
    for name in _NAMES:
        try:
            fn = getattr(lib, name.format(_PREFIX[dtype]))
        except AttributeError:
            continue
        i64, ptr = ctypes.c_int64, ctypes.c_void_p
        # Real gemms take alpha and beta by value, complex ones by pointer.
        scalar = {"s": ctypes.c_float, "d": ctypes.c_double}.get(_PREFIX[dtype], ptr)
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, i64, i64, i64, scalar,
                       ptr, i64, ptr, i64, scalar, ptr, i64]
        fn.restype = None
        return fn if _works(fn, dtype) else None
    return None


def _works(fn: CFuncPtr, dtype: np.dtype) -> bool:
    """One small accumulation with a transposed and a strided operand, against numpy."""
    rng = np.random.default_rng(0)

    def values(*shape: int) -> np.ndarray:
        x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype.kind == "c" else 0)
        return x.astype(dtype)

    a = values(4, 3).T          # [3, 4], column-major
    b = values(4, 10)[:, :5]    # [4, 5], leading dimension 10
    c = values(3, 5)
    alpha = 0.5 - 0.25j if dtype.kind == "c" else 0.5
    want = c + alpha * (a @ b)
    _call(fn, dtype, c, a, b, alpha, 1.0)
    return bool(np.allclose(c, want, rtol=1e-5, atol=1e-5))


def _layout(x: np.ndarray) -> tuple[int, int] | None:
    """(transpose flag, leading dimension) reading the 2-D ``x`` in row-major BLAS, or None."""
    rows, cols = x.shape
    item = x.itemsize
    s0, s1 = x.strides
    if s0 % item or s1 % item:
        return None
    s0, s1 = s0 // item, s1 // item
    if cols == 1 or s1 == 1:
        ld = s0 if rows > 1 else cols
        if ld >= max(1, cols):
            return _NO_TRANS, ld
    if rows == 1 or s0 == 1:
        ld = s1 if cols > 1 else rows
        if ld >= max(1, rows):
            return _TRANS, ld
    return None


def _call(fn: CFuncPtr, dtype: np.dtype, c: np.ndarray, a: np.ndarray, b: np.ndarray,
          alpha: float | complex, beta: float | complex) -> bool:
    la, lb, lc = _layout(a), _layout(b), _layout(c)
    if la is None or lb is None or lc is None or lc[0] != _NO_TRANS:
        return False
    (m, k), n = a.shape, b.shape[1]
    if dtype.kind == "c":
        al, be = np.array(alpha, dtype), np.array(beta, dtype)
        alpha, beta = al.ctypes.data, be.ctypes.data
    fn(_ROW_MAJOR, la[0], lb[0], m, n, k, alpha, a.ctypes.data, la[1], b.ctypes.data, lb[1],
       beta, c.ctypes.data, lc[1])
    return True


def gemm(c: np.ndarray, a: np.ndarray, b: np.ndarray, alpha: float | complex = 1,
         beta: float | complex = 1) -> bool:
    """``c = alpha * a @ b + beta * c`` in place, for 2-D ``a [m, k]``, ``b [k, n]`` and a
    writeable ``c [m, n]`` of one float or complex type, in numpy's own BLAS (Note [numpy's
    own BLAS]). Any operand may be a transposed or row-strided view. Returns False, with ``c``
    untouched, when that BLAS is not reachable or the operands do not fit it."""
    dtype = c.dtype
    if (dtype not in _PREFIX or a.dtype != dtype or b.dtype != dtype or a.ndim != 2
            or b.ndim != 2 or c.ndim != 2 or not c.flags.writeable
            or not (c.flags.aligned and a.flags.aligned and b.flags.aligned)
            or not (dtype.isnative and a.dtype.isnative and b.dtype.isnative)
            or a.shape[1] != b.shape[0] or c.shape != (a.shape[0], b.shape[1])
            or 0 in c.shape or a.shape[1] == 0
            or np.may_share_memory(c, a) or np.may_share_memory(c, b)):
        return False
    fn = _function(dtype)
    return fn is not None and _call(fn, dtype, c, a, b, alpha, beta)
