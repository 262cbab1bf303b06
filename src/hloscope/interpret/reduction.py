"""Pure numpy semantics of XLA's reducing ops: reduce, reduce-window, select-and-scatter, sort
and the TopK custom call.

These ops call a user computation (the reducer, the select/scatter pair, the comparator). The
interpreter hands it over as a *vectorized* Python callable, see Note [Vectorized computations];
an interpreter that recognises a trivial computation also passes `known`, which selects a numpy
ufunc fast path. Results are always tuples of arrays, one per operand, even for one operand.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from hloscope.interpret.indexing import combine_at
from hloscope.interpret.shape_ops import pad

__all__ = [
    "Comparator",
    "Reducer",
    "reduce",
    "reduce_window",
    "select_and_scatter",
    "sort",
    "top_k",
]

# Note [Vectorized computations]
# ------------------------------
# Calling a Python-interpreted HLO computation once per element is far too slow, so every
# computation argument is applied to whole arrays at once:
#
#   Reducer:    reducer(acc: tuple[ndarray, ...], new: tuple[ndarray, ...]) -> tuple[ndarray, ...]
#               the N accumulators then the N new values, exactly XLA's parameter order for a
#               variadic reduce; all arrays share one shape and the call is elementwise.
#   Comparator: comparator(lhs: tuple[ndarray, ...], rhs: tuple[ndarray, ...]) -> bool ndarray
#               lhs/rhs hold one array per sort operand; True means "lhs goes before rhs".
#               NB: XLA's comparator parameters are interleaved (lhs0, rhs0, lhs1, rhs1, ...);
#               the interpreter reorders them.
#   Select:     select(current, candidate) -> bool ndarray; True keeps `current`.
#
# Results may be scalars or broadcastable (a reducer returning a constant); they are broadcast and
# cast to the operand dtypes here.
#
# Known fast paths (`known=`): "add", "multiply", "max", "min", "and", "or". For pred operands
# "add"/"or" are logical or and "multiply"/"and" logical and, as in XLA.

Reducer = Callable[[tuple[np.ndarray, ...], tuple[np.ndarray, ...]], Sequence[np.ndarray]]
Comparator = Callable[[tuple[np.ndarray, ...], tuple[np.ndarray, ...]], np.ndarray]

_NARROW_FLOATS = {
    np.dtype(t)
    for t in (
        np.float16,
        ml_dtypes.bfloat16,
        ml_dtypes.float8_e4m3fn,
        ml_dtypes.float8_e5m2,
        ml_dtypes.float8_e4m3fnuz,
        ml_dtypes.float8_e5m2fnuz,
        ml_dtypes.float8_e4m3b11fnuz,
    )
}


def is_float_dtype(dtype: np.dtype) -> bool:
    """True for numpy and ml_dtypes floating types (ml_dtypes types have kind 'V')."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype in _NARROW_FLOATS or (
        dtype.kind == "V" and dtype.type.__module__.startswith("ml_dtypes")
        and "float" in dtype.name
    )


def _known_ufunc(known: str, dtype: np.dtype) -> np.ufunc:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return {"add": np.logical_or, "or": np.logical_or, "max": np.logical_or,
                "multiply": np.logical_and, "and": np.logical_and, "min": np.logical_and}[known]
    if known in ("and", "or"):
        return np.bitwise_and if known == "and" else np.bitwise_or
    return {"add": np.add, "multiply": np.multiply, "max": np.maximum, "min": np.minimum}[known]


def _apply(fn: Reducer, a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...],
           dtypes: Sequence[np.dtype]) -> tuple[np.ndarray, ...]:
    out = fn(a, b)
    if isinstance(out, np.ndarray):
        out = (out,)
    shape = np.broadcast_shapes(*(x.shape for x in a))
    return tuple(np.broadcast_to(np.asarray(o).astype(dt, copy=False), shape)
                 for o, dt in zip(out, dtypes, strict=True))


def _tree_reduce(values: tuple[np.ndarray, ...], reducer: Reducer, dtypes: Sequence[np.dtype]) -> tuple[np.ndarray, ...]:
    """Combine along the last axis (extent >= 1) with log-depth pairing of neighbours, so the
    left-to-right order of the elements is kept (only the association changes)."""
    vals = values
    while vals[0].shape[-1] > 1:
        k = vals[0].shape[-1]
        h = k // 2
        a = tuple(v[..., 0 : 2 * h : 2] for v in vals)
        b = tuple(v[..., 1 : 2 * h : 2] for v in vals)
        r = _apply(reducer, a, b, dtypes)
        if k % 2:
            r = tuple(np.concatenate([ri, v[..., -1:]], axis=-1) for ri, v in zip(r, vals, strict=True))
        vals = r
    return tuple(v[..., 0] for v in vals)


def _reduce_last(values: tuple[np.ndarray, ...], inits: tuple[np.ndarray, ...], reducer: Reducer | None,
                 known: str | None) -> tuple[np.ndarray, ...]:
    """Reduce the last axis of every operand, combining each init in exactly once."""
    dtypes = [v.dtype for v in values]
    shape = values[0].shape[:-1]
    if values[0].shape[-1] == 0:
        return tuple(np.full(shape, i, dtype=dt) for i, dt in zip(inits, dtypes, strict=True))
    if known is not None and len(values) == 1:
        x, init = values[0], inits[0]
        uf = _known_ufunc(known, x.dtype)
        if not (x.dtype in _NARROW_FLOATS and uf in (np.add, np.multiply)):
            if x.dtype.kind == "V" and x.dtype.name.startswith(("int", "uint")):
                # ml_dtypes' sub-byte integers (u4) have no bitwise ufunc loops: reduce in the
                # byte type, then wrap back to the element type.
                wide = np.dtype(np.int8 if x.dtype.name.startswith("int") else np.uint8)
                r = uf.reduce(x.astype(wide), axis=-1, dtype=wide)
                return (np.asarray(uf(np.asarray(init).astype(wide), r)).astype(x.dtype),)
            r = uf.reduce(x, axis=-1, dtype=x.dtype)
            return (np.asarray(uf(init, r)).astype(x.dtype),)
        # Narrow floats: pairwise in the element type (rounding each step like XLA's reducer in
        # bf16), not numpy's sequential loop, which saturates (bf16: 256 + 1 == 256).
        reducer = lambda a, b: (uf(a[0], b[0]),)  # noqa: E731
    if reducer is None:
        raise ValueError("reduce needs a reducer callable or a known reducer name")
    total = _tree_reduce(values, reducer, dtypes)
    init_b = tuple(np.broadcast_to(i, total[0].shape) for i in inits)
    return tuple(np.array(x) for x in _apply(reducer, init_b, total, dtypes))


# Note [XLA:CPU's reduction order]
# --------------------------------
# XLA leaves the association order of `reduce` unspecified, but in bf16 or f16, which round
# after every step, the order decides the result. XLA:CPU's order is deterministic, so for those
# types we follow it (measured against jaxlib 0.10.2 for f16 and bf16 sums of 8 to 5000
# elements over one or several dimensions; all bit-exact):
#
#   1. TreeReductionRewriter: while a reduced dimension is longer than 32, the reduce becomes a
#      reduce-window over windows of min(dim, 32) elements along every reduced dimension
#      (stride = window, SAME padding, which splits the padding between low and high), then a
#      reduce of that. The pass runs to a fixed point, so 5000 -> 157 -> 5 -> one value.
#   2. What is left is folded in row-major order of the reduced positions, starting from the
#      init value: acc = f(...f(f(init, x0), x1)..., xn). Each window of step 1 is folded the
#      same way (reduce_window here does).
#
# Not so for f16 over several dimensions: XLA:CPU keeps f16 (bf16 is widened to f32 with a
# rounding reducer) and its loop emitter sums a row of (2,20,20) or (2,8,8,8) in an order the
# above does not give (measured: 50.06 where the in-order fold gives 50.03); a known gap.
#
# Integer sums and products are exact in any order (modulo 2^bits), but step 1 applies the init
# value once per window and once more at the end: XLA requires the init to be the reducer's
# identity, and XLA:CPU computes something else when it is not (a u32 sum over 2048 elements
# with init 1 gives the sum plus 67 = 64 + 2 + 1; measured for u32, s32 and s8, add and
# multiply, 33 to 5000 elements, jaxlib 0.10.2). `_init_applications` counts them, and an
# integer add or multiply applies the init that many times; max, min, and, or are idempotent.
#
# f32 and f64 sums with a plain add keep numpy's pairwise sums: XLA:CPU vectorizes some f32
# reductions in an order this does not model, and the differences stay within a few ulps. A
# float reduce whose computation is not a plain op follows the order above whatever its type
# (optimized modules sum bf16 in f32 with a reducer that rounds to bf16 after each add).

TREE_REDUCTION_WINDOW = 32
_MAX_SEQUENTIAL_STEPS = 1 << 14  # beyond this, a Python loop per position costs too much


def _same_padding(n: int, window: int) -> tuple[int, int]:
    total = max((-(-n // window) - 1) * window + window - n, 0)
    return total // 2, total - total // 2


def _init_applications(shape: Sequence[int], dims: Sequence[int]) -> int:
    """How many times XLA:CPU applies a reduce's init value to each result element: once per
    window of each tree-reduction step, and once in the final fold (Note [XLA:CPU's reduction
    order])."""
    w = TREE_REDUCTION_WINDOW
    shape, count = list(shape), 1
    while any(shape[d] > w for d in dims):
        count += int(np.prod([-(-shape[d] // min(shape[d], w)) for d in dims]))
        shape = [-(-n // min(n, w)) if d in dims else n for d, n in enumerate(shape)]
    return count


def _is_integer_dtype(dtype: np.dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind in "iu" or (dtype.kind == "V" and dtype.name.startswith(("int", "uint")))


def _apply_init_again(result: np.ndarray, init: np.ndarray, times: int, known: str) -> np.ndarray:
    """``result`` with an integer ``init`` added (multiplied) ``times`` more times, wrapping
    modulo 2^bits as the element type does."""
    bits = 8 * result.dtype.itemsize if result.dtype.kind in "iu" else int(result.dtype.name.lstrip("uint") or 8)
    modulus = 1 << bits
    value = int(np.asarray(init).astype(np.int64)) % modulus
    factor = value * times % modulus if known == "add" else pow(value, times, modulus)
    wide = result.astype(np.int64) % modulus
    out = (wide + factor if known == "add" else wide * factor) % modulus
    if result.dtype.kind == "i" or result.dtype.name.startswith("int"):
        out = np.where(out >= modulus // 2, out - modulus, out)
    return out.astype(result.dtype)


def _follows_xla_cpu_order(dtype: np.dtype, known: str | None) -> bool:
    # A float reduce with a computation of its own may round inside it: XLA:CPU's optimized
    # modules widen bf16 sums to f32 with a reducer that rounds to bf16 after each add.
    dtype = np.dtype(dtype)
    if known is None:
        return is_float_dtype(dtype) or dtype.kind == "c"
    return dtype in _NARROW_FLOATS and known in ("add", "multiply")


def _reduce_in_xla_cpu_order(x: np.ndarray, init: np.ndarray, dims: Sequence[int],
                             reducer: Reducer, ufunc: np.ufunc | None = None) -> np.ndarray | None:
    """One-operand `reduce` in XLA:CPU's order (Note [XLA:CPU's reduction order]); None when
    that order would take more than _MAX_SEQUENTIAL_STEPS vectorized steps. With ``ufunc``
    (the reducer as a numpy ufunc) the final fold is one ``ufunc.accumulate``, strictly in
    order and rounding every step in the element type, so it has no step limit: a bf16 sum
    over several dimensions of at most 32 each (17765 elements, none rewritten into a tree)
    fell back to pairwise sums and gave -2240 where XLA:CPU's fold saturates at -64."""
    w = TREE_REDUCTION_WINDOW
    shape, steps = list(x.shape), 0
    while any(shape[d] > w for d in dims):
        steps += int(np.prod([min(shape[d], w) for d in dims]))
        shape = [-(-n // min(n, w)) if d in dims else n for d, n in enumerate(shape)]
    if steps + (0 if ufunc is not None else int(np.prod([shape[d] for d in dims]))) > _MAX_SEQUENTIAL_STEPS:
        return None
    while any(x.shape[d] > w for d in dims):
        window = [min(n, w) if d in dims else 1 for d, n in enumerate(x.shape)]
        padding = [_same_padding(n, k) for n, k in zip(x.shape, window, strict=True)]
        x = reduce_window((x,), (init,), window, window, padding=padding, reducer=reducer)[0]
    kept = [d for d in range(x.ndim) if d not in dims]
    flat = np.transpose(x, kept + list(dims)).reshape((*[x.shape[d] for d in kept], -1))
    if ufunc is not None:
        start = np.broadcast_to(np.asarray(init, flat.dtype), (*flat.shape[:-1], 1))
        folded = ufunc.accumulate(np.concatenate([start, flat], axis=-1), axis=-1, dtype=flat.dtype)
        return np.array(folded[..., -1])
    acc = (np.broadcast_to(init, flat.shape[:-1]),)
    for j in range(flat.shape[-1]):
        acc = _apply(reducer, acc, (flat[..., j],), [x.dtype])
    return np.array(acc[0])


def _variadic_in_xla_cpu_order(xs: tuple[np.ndarray, ...], inits: tuple[np.ndarray, ...], dims: Sequence[int],
                               reducer: Reducer) -> tuple[np.ndarray, ...] | None:
    """A variadic `reduce` in XLA:CPU's order (Note [XLA:CPU's reduction order]); None past
    _MAX_SEQUENTIAL_STEPS. A reducer that is a proper monoid (argmax's) gives the same result
    in any order; one that mixes its operands' lanes (XLA's coalescing-analysis tests:
    (max(acc0, acc1), max(x0, x1))) gives XLA:CPU's, which folds in order, not a tree's."""
    w = TREE_REDUCTION_WINDOW
    shape, steps = list(xs[0].shape), 0
    while any(shape[d] > w for d in dims):
        steps += int(np.prod([min(shape[d], w) for d in dims]))
        shape = [-(-n // min(n, w)) if d in dims else n for d, n in enumerate(shape)]
    if steps + int(np.prod([shape[d] for d in dims])) > _MAX_SEQUENTIAL_STEPS:
        return None
    dtypes = [x.dtype for x in xs]
    while any(xs[0].shape[d] > w for d in dims):
        window = [min(n, w) if d in dims else 1 for d, n in enumerate(xs[0].shape)]
        padding = [_same_padding(n, k) for n, k in zip(xs[0].shape, window, strict=True)]
        xs = tuple(reduce_window(xs, inits, window, window, padding=padding, reducer=reducer))
    kept = [d for d in range(xs[0].ndim) if d not in dims]
    flats = [np.transpose(x, kept + list(dims)).reshape((*[x.shape[d] for d in kept], -1)) for x in xs]
    acc = tuple(np.broadcast_to(i, flats[0].shape[:-1]) for i in inits)
    for j in range(flats[0].shape[-1]):
        acc = _apply(reducer, acc, tuple(f[..., j] for f in flats), dtypes)
    return tuple(np.array(a) for a in acc)


def reduce(
    operands: Sequence[np.ndarray],
    inits: Sequence[np.ndarray],
    dimensions: Sequence[int],
    reducer: Reducer | None = None,
    known: str | None = None,
) -> tuple[np.ndarray, ...]:
    """HLO `reduce` (variadic): reduce `dimensions` of all operands together with `reducer`
    (Note [Vectorized computations]); each init value is combined in exactly once, as
    `reducer(init, reduction_of_elements)`. Returns one array per operand with the reduced
    dimensions removed. XLA leaves the association order unspecified; bf16, f16 and fp8
    reductions follow XLA:CPU's (Note [XLA:CPU's reduction order]), others a balanced tree.
    """
    operands = tuple(np.asarray(o) for o in operands)
    if all(operands[0].shape[d] == 1 for d in dimensions):
        # XLA:CPU's simplifier replaces a reduce that keeps the element count (no dimensions,
        # or only dimensions of extent 1) by a reshape of its operands: the init value, which
        # XLA requires to be the reducer's identity, is never applied (c64 (1+0j) * x with x
        # = -inf+2.5j stays x, where applying it would give NaN; a sum over a dimension of 1
        # with init 2 gives x, not x + 2, as in XLA's collective_pipeliner tests).
        kept = [n for d, n in enumerate(operands[0].shape) if d not in dimensions]
        return tuple(o.reshape(kept) for o in operands)
    inits = tuple(np.asarray(i, dtype=o.dtype) for i, o in zip(inits, operands, strict=True))
    dims = sorted(set(dimensions))
    if (len(operands) == 1 and known in ("add", "multiply") and operands[0].size
            and _is_integer_dtype(operands[0].dtype)):
        times = _init_applications(operands[0].shape, dims) - 1
        if times:  # an init that is not the identity counts (Note [XLA:CPU's reduction order])
            once = _reduce_dims(operands, inits, dims, reducer, known)[0]
            return (_apply_init_again(once, inits[0], times, known),)
    return _reduce_dims(operands, inits, dims, reducer, known)


def _reduce_dims(operands: tuple[np.ndarray, ...], inits: tuple[np.ndarray, ...], dims: list[int],
                 reducer: Reducer | None, known: str | None) -> tuple[np.ndarray, ...]:
    """`reduce` of ``dims`` (sorted) with each init applied once, except where XLA:CPU's order
    is followed (Note [XLA:CPU's reduction order])."""
    if len(operands) == 1 and operands[0].size and _follows_xla_cpu_order(operands[0].dtype, known):
        fn, uf = reducer, None
        if known is not None:
            uf = _known_ufunc(known, operands[0].dtype)
            fn = lambda a, b: (uf(a[0], b[0]),)  # noqa: E731
        if fn is not None:
            # The unlimited in-order fold is measured for bf16 only: XLA:CPU sums f16 over
            # several dimensions in another order, which this does not model yet.
            bf16 = operands[0].dtype == np.dtype(ml_dtypes.bfloat16)
            r = _reduce_in_xla_cpu_order(operands[0], inits[0], dims, fn, uf if bf16 else None)
            if r is not None:
                return (r,)
    count = len(operands)  # a bool of len() would narrow the tuple's type for what follows
    if count > 1 and reducer is not None and operands[0].size:
        rs = _variadic_in_xla_cpu_order(operands, inits, dims, reducer)
        if rs is not None:
            return rs
    kept = [d for d in range(operands[0].ndim) if d not in dims]
    kept_shape = tuple(operands[0].shape[d] for d in kept)
    moved = tuple(np.transpose(o, kept + dims).reshape(kept_shape + (-1,)) if o.size else
                  np.empty(kept_shape + (int(np.prod([o.shape[d] for d in dims])),), o.dtype)
                  for o in operands)
    return _reduce_last(moved, inits, reducer, known)


def _window_geometry(shape, window, strides, base_dilations, window_dilations, padding):
    out = []
    for n, w, s, bd, wd, (lo, hi) in zip(shape, window, strides, base_dilations, window_dilations,
                                         padding, strict=True):
        padded = lo + (max(n - 1, 0) * bd + 1 if n else 0) + hi
        eff = (w - 1) * wd + 1 if w else 0
        out.append((padded - eff) // s + 1 if padded >= eff and w else 0)
    return tuple(out)


def _windows(a: np.ndarray, window, strides, window_dilations) -> np.ndarray:
    """View of shape out_shape + window: windows of `a` (already padded and base-dilated)."""
    eff = tuple((w - 1) * wd + 1 for w, wd in zip(window, window_dilations, strict=True))
    v = sliding_window_view(a, eff)
    nd = a.ndim
    sel = tuple(np.s_[::s] for s in strides) + tuple(np.s_[::wd] for wd in window_dilations)
    return v[sel] if nd else v


def reduce_window(
    operands: Sequence[np.ndarray],
    inits: Sequence[np.ndarray],
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None = None,
    base_dilations: Sequence[int] | None = None,
    window_dilations: Sequence[int] | None = None,
    padding: Sequence[tuple[int, int]] | None = None,
    reducer: Reducer | None = None,
    known: str | None = None,
) -> tuple[np.ndarray, ...]:
    """HLO `reduce-window` (variadic): for each window position, fold the window's elements
    into the init value with `reducer`, in row-major window order: acc = init, then
    acc = reducer(acc, x) for each element (XLA:CPU's loop; see `_fold_in_order`).

    The operand is base-dilated (holes between elements) and padded with (lo, hi) per
    dimension; windows are `window_dimensions` elements spaced `window_dilations` apart, moved
    by `window_strides`. Padding and dilation holes are *skipped*, not filled with the init
    value: that is what XLA:CPU and the HloEvaluator compute (jax: reduce_window(add) of
    [1..5] with init 1, window 3, pad (1,1) is [4, 7, 10, 13, 10]). The StableHLO spec pads with
    the init value instead; both agree whenever init is the reducer's identity.
    """
    operands = tuple(np.asarray(o) for o in operands)
    if operands[0].ndim == 0:
        # XLA:CPU's simplifier replaces a reduce-window of scalars by its operands, as it does a
        # reduce of nothing (``reduce`` above): the init value is never applied (42 with init 1
        # under add stays 42, where folding it in would give 43; XLA's hlo_parser_test module).
        return operands
    inits = tuple(np.asarray(i, dtype=o.dtype) for i, o in zip(inits, operands, strict=True))
    nd = operands[0].ndim
    strides = tuple(window_strides or (1,) * nd)
    base = tuple(base_dilations or (1,) * nd)
    wdil = tuple(window_dilations or (1,) * nd)
    pads = tuple((lo, hi) for lo, hi in (padding or ((0, 0),) * nd))
    window = tuple(window_dimensions)
    out_shape = _window_geometry(operands[0].shape, window, strides, base, wdil, pads)
    scan = _cumulative_scan(operands, window, strides, base, wdil, pads)
    if scan is not None:
        axis, forward, exclusive = scan
        fn = reducer
        if fn is None:
            uf = _known_ufunc(known or "", operands[0].dtype)
            fn = lambda a, b: (uf(a[0], b[0]),)  # noqa: E731
        return (_scan_as_tree(operands[0], inits[0], axis, forward, exclusive, fn),)
    if 0 in out_shape or 0 in window:
        return tuple(np.full(out_shape, i, dtype=o.dtype) for i, o in zip(inits, operands, strict=True))
    lo = [p[0] for p in pads]
    hi = [p[1] for p in pads]
    interior = [b - 1 for b in base]
    needs_mask = any(lo) or any(hi) or any(interior)
    padded = tuple(pad(o, i, lo, hi, interior) if needs_mask else o for o, i in zip(operands, inits, strict=True))
    mask = pad(np.ones(operands[0].shape, bool), np.False_, lo, hi, interior) if needs_mask else None
    return _fold_windows(padded, mask, inits, out_shape, window, strides, wdil, reducer, known)


# Note [XLA:CPU's cumulative reduce-window]
# ------------------------------------------
# jnp.cumsum and friends lower to a reduce-window whose one non-trivial window spans the whole
# dimension with padding n-1 before it (n after it for a reverse scan; n for an exclusive
# scan). XLA:CPU's ReduceWindowRewriter turns such a scan longer than 16 into a tree: pad the
# dimension with the init value to a multiple of 16, scan each block of 16 alone, scan the
# blocks' totals exclusively (the same rewrite again when there are more than 16 blocks), and
# combine each element's block scan with its block's prefix, f(block_scan, prefix). In bf16,
# which rounds after every step, that is another result than the plain running sum (the
# cumsum_bf16 oracle program), so the interpreter computes it the same way. It also turns an
# O(n^2) fold into O(16 n).

SCAN_BASE_LENGTH = 16


def _cumulative_scan(operands: tuple[np.ndarray, ...], window: tuple[int, ...], strides: tuple[int, ...],
                     base: tuple[int, ...], wdil: tuple[int, ...],
                     padding: tuple[tuple[int, int], ...]) -> tuple[int, bool, bool] | None:
    """(axis, forward, exclusive) when the reduce-window is a scan XLA:CPU rewrites."""
    if len(operands) != 1:
        return None
    axes = [d for d, w in enumerate(window) if w != 1 or padding[d] != (0, 0)]
    if len(axes) != 1:
        return None
    d = axes[0]
    n = operands[0].shape[d]
    lo, hi = padding[d]
    if n <= SCAN_BASE_LENGTH or window[d] != n or strides[d] != 1 or base[d] != 1 or wdil[d] != 1:
        return None
    if lo in (n - 1, n) and hi == 0:
        return d, True, lo == n
    if hi in (n - 1, n) and lo == 0:
        return d, False, hi == n
    return None


def _scan_as_tree(x: np.ndarray, init: np.ndarray, axis: int, forward: bool, exclusive: bool,
                  fn: Reducer) -> np.ndarray:
    """A cumulative reduce-window along ``axis`` the way XLA:CPU computes it (Note
    [XLA:CPU's cumulative reduce-window])."""
    b = SCAN_BASE_LENGTH
    v = np.moveaxis(x, axis, -1)
    n = v.shape[-1]
    k = -(-n // b) * b
    if k != n:  # real padding: the init value takes part in the block scans
        v = np.concatenate([v, np.broadcast_to(init, v.shape[:-1] + (k - n,)).astype(v.dtype)], axis=-1)
    tiles = v.reshape(v.shape[:-1] + (k // b, b))
    nd = tiles.ndim
    pad = [(0, 0)] * (nd - 1) + [(b - 1, 0) if forward else (0, b - 1)]
    blocks = reduce_window((tiles,), (init,), (1,) * (nd - 1) + (b,), padding=pad, reducer=fn)[0]
    totals = blocks[..., -1] if forward else blocks[..., 0]
    c = totals.shape[-1]
    inner_pad = [(0, 0)] * (nd - 2) + [(c, 0) if forward else (0, c)]
    prefix = reduce_window((totals,), (init,), (1,) * (nd - 2) + (c,), padding=inner_pad, reducer=fn)[0]
    prefix = prefix[..., :c] if forward else prefix[..., 1:]
    both = _apply(fn, (blocks,), (np.broadcast_to(prefix[..., None], blocks.shape),), [x.dtype])[0]
    out = both.reshape(v.shape)[..., :n]
    if exclusive:
        edge = np.broadcast_to(init, out.shape[:-1] + (1,)).astype(x.dtype)
        out = np.concatenate([edge, out] if forward else [out, edge], axis=-1)
    return np.ascontiguousarray(np.moveaxis(out, -1, axis))


def _fold_windows(padded: tuple[np.ndarray, ...], mask: np.ndarray | None, inits: tuple[np.ndarray, ...],
                  out_shape: tuple[int, ...], window: tuple[int, ...], strides: tuple[int, ...],
                  wdil: tuple[int, ...], reducer: Reducer | None, known: str | None) -> tuple[np.ndarray, ...]:
    """Fold every window into the inits one window position at a time, in row-major window
    order: acc = reducer(acc, x) for the element at that position of every window at once (a
    strided slice of the padded operand), skipping padding and dilation holes (`mask`).

    XLA:CPU's reduce-window is this loop, and floating-point results depend on it: a running
    sum of [1e30, -1e30, 1] ends at 1 in order but at 0 summed pairwise, and a bf16 sum rounds
    after every step (256 + 1 + 1 stays 256). One position at a time also never materializes
    the windows (a cumulative sum over n elements has n windows of n)."""
    if reducer is None:
        uf = _known_ufunc(known or "", padded[0].dtype)
        reducer = lambda a, b: (uf(a[0], b[0]),)  # noqa: E731
    dtypes = [p.dtype for p in padded]

    def at(a: np.ndarray, pos: tuple[int, ...]) -> np.ndarray:
        return a[tuple(np.s_[q * d : q * d + (n - 1) * s + 1 : s]
                       for q, d, n, s in zip(pos, wdil, out_shape, strides, strict=True))]

    acc = tuple(np.broadcast_to(i, out_shape) for i in inits)
    for pos in itertools.product(*(range(w) for w in window)):
        step = _apply(reducer, acc, tuple(at(p, pos) for p in padded), dtypes)
        if mask is not None:
            valid = at(mask, pos)
            step = tuple(np.where(valid, s, a) for s, a in zip(step, acc, strict=True))
        acc = step
    return tuple(np.array(a) for a in acc)


def select_and_scatter(
    operand: np.ndarray,
    source: np.ndarray,
    init: np.ndarray,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None = None,
    padding: Sequence[tuple[int, int]] | None = None,
    select: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    scatter: Reducer | None = None,
    known_select: str | None = None,
    known_scatter: str | None = None,
) -> np.ndarray:
    """HLO `select-and-scatter`: for every window of `operand` (one per `source` element), pick
    one operand element with `select`, then combine the source element into a result
    initialised with `init` at that position using `scatter` (`scatter(current, source)`).

    Selection follows XLA's evaluator: walk the window's in-bounds positions in row-major order,
    keeping a current pick; a new element replaces it when `select(current, new)` is False. So
    "ge" keeps the first maximum among ties and "gt" ends on the last one. Padding positions
    never take part. `known_select` ("ge", "gt", "le", "lt") replaces the `select` callable;
    `known_scatter` (e.g. "add") the scatter one. Collisions (overlapping windows) combine in
    row-major source order; see Note [Scatter collisions] in indexing.py.
    """
    operand = np.asarray(operand)
    source = np.asarray(source)
    nd = operand.ndim
    window = tuple(window_dimensions)
    strides = tuple(window_strides or (1,) * nd)
    pads = tuple((lo, hi) for lo, hi in (padding or ((0, 0),) * nd))
    init = np.asarray(init, dtype=operand.dtype)
    result = np.full(operand.shape, init, dtype=operand.dtype).reshape(-1)
    if source.size == 0 or operand.size == 0:
        return result.reshape(operand.shape)
    if known_select is not None:
        select = {"ge": np.greater_equal, "gt": np.greater, "le": np.less_equal,
                  "lt": np.less}[known_select.lower()]
    if select is None:
        raise ValueError("select_and_scatter needs a select callable or known_select")
    lo = [p[0] for p in pads]
    hi = [p[1] for p in pads]
    # -1 marks padding in the padded index array.
    flat_index = np.arange(operand.size, dtype=np.int64).reshape(operand.shape)
    idx_w = _windows(pad(flat_index, -1, lo, hi), window, strides, (1,) * nd)
    val_w = _windows(pad(operand, init, lo, hi), window, strides, (1,) * nd)
    idx_w = idx_w[tuple(np.s_[: n] for n in source.shape)]
    val_w = val_w[tuple(np.s_[: n] for n in source.shape)]
    # A loop over the window's positions (not over elements), in row-major order.
    sel_val: np.ndarray | None = None
    sel_idx: np.ndarray | None = None
    have: np.ndarray | None = None
    for pos in itertools.product(*(range(w) for w in window)):
        cand = val_w[(Ellipsis, *pos)]
        cidx = idx_w[(Ellipsis, *pos)]
        cvalid = cidx >= 0
        if sel_val is None or sel_idx is None or have is None:  # the first position (all three set together)
            sel_val, sel_idx, have = cand.copy(), cidx.copy(), cvalid.copy()
            continue
        keep = np.asarray(select(sel_val, cand), dtype=bool)
        take = cvalid & (~have | ~keep)
        sel_val = np.where(take, cand, sel_val)
        sel_idx = np.where(take, cidx, sel_idx)
        have |= cvalid
    assert sel_idx is not None and have is not None
    combine_at((result,), sel_idx[have], (source[have],), scatter, known_scatter)
    return result.reshape(operand.shape)


# ---------------------------------------------------------------------------------------------
# sort


def _order_key(x: np.ndarray, direction: str, compare_type: str | None) -> np.ndarray:
    """A key whose ascending numpy order is the order of `compare(direction, compare_type)`.

    TOTALORDER on floats orders by sign-magnitude bits: -NaN < -inf < ... < -0.0 < +0.0 < ... <
    +inf < +NaN. FLOAT ordering treats -0.0 == 0.0 and puts NaN last (XLA leaves NaN order
    under a non-total compare unspecified)."""
    direction = direction.upper()
    if direction not in ("LT", "GT"):
        raise ValueError(f"sort fast path needs an LT or GT comparator, got {direction}")
    dt = x.dtype
    if dt == np.bool_:
        key = x.astype(np.uint8)
    elif is_float_dtype(dt) and (compare_type or "").upper() != "TOTALORDER":
        f = x.astype(np.float64)
        return -f if direction == "GT" else f
    elif is_float_dtype(dt):
        i = x.view(np.dtype(f"i{dt.itemsize}"))
        key = np.where(i < 0, i ^ np.iinfo(i.dtype).max, i)
    elif dt.kind in "iu":
        key = x
    else:
        raise ValueError(f"no sort fast path for element type {dt}")
    return ~key if direction == "GT" else key


def _known_sort_perm(keys: Sequence[np.ndarray], direction: str, compare_type: str | None) -> np.ndarray:
    ks = [_order_key(k, direction, compare_type) for k in keys]
    if len(ks) == 1:
        return np.argsort(ks[0], axis=-1, kind="stable")
    return np.lexsort(ks[::-1], axis=-1)


def _merge_sort_perm(flat: Sequence[np.ndarray], comparator: Comparator) -> np.ndarray:
    """Stable bottom-up merge sort of the rows of `flat` (each (B, n)), returning the (B, n)
    permutation. Each level merges all run pairs of all rows at once; an element of a left run
    finds its place in the right run by a vectorized binary search, so the comparator is called
    O(log^2 n) times on whole arrays. The row is padded to a power of two with virtual elements
    that compare greater than everything."""
    b, n = flat[0].shape
    p = 1 << max(n - 1, 0).bit_length()
    perm = np.broadcast_to(np.arange(p, dtype=np.int64), (b, p)).copy()
    rows = np.arange(b)[:, None, None]

    def less(ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
        pa, pb = ia >= n, ib >= n
        ca, cb = np.minimum(ia, n - 1), np.minimum(ib, n - 1)
        r = np.asarray(comparator(tuple(f[rows, ca] for f in flat), tuple(f[rows, cb] for f in flat)),
                       dtype=bool)
        return np.where(pa, False, np.where(pb, True, r))

    w = 1
    while w < p:
        runs = perm.reshape(b, p // (2 * w), 2, w)
        left, right = runs[:, :, 0, :], runs[:, :, 1, :]
        # For left element a_i: count = number of right elements b_j with b_j < a_i.
        lo = np.zeros(left.shape, np.int64)
        hi = np.full(left.shape, w, np.int64)
        for _ in range(w.bit_length()):
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi) // 2
            bj = np.take_along_axis(right, np.minimum(mid, w - 1), axis=2)
            t = less(bj, left)
            lo = np.where(active & t, mid + 1, lo)
            hi = np.where(active & ~t, mid, hi)
        # A consistent comparator gives non-decreasing counts already; forcing it keeps the
        # result a permutation even for comparators that are not strict weak orders.
        count = np.maximum.accumulate(lo, axis=2)
        pos_left = np.arange(w) + count
        merged = np.empty(runs.shape[:2] + (2 * w,), np.int64)
        np.put_along_axis(merged, pos_left, left, axis=2)
        taken = np.zeros(merged.shape, bool)
        np.put_along_axis(taken, pos_left, True, axis=2)
        # Right elements keep their order and fill the free slots.
        free = np.argsort(taken, axis=2, kind="stable")[:, :, :w]
        np.put_along_axis(merged, free, right, axis=2)
        perm = merged.reshape(b, p)
        w *= 2
    return perm[:, :n]


def sort(
    operands: Sequence[np.ndarray],
    dimension: int,
    comparator: Comparator | None = None,
    is_stable: bool = False,
    known: tuple | None = None,
) -> tuple[np.ndarray, ...]:
    """HLO `sort` (variadic): permute all operands along `dimension` by the order `comparator`
    defines (Note [Vectorized computations]; it must be a strict weak order, as XLA requires).

    The general path is a stable merge sort, so `is_stable` needs no special handling (an
    unstable sort may return any order of equal elements; we return the stable one).
    `known=(direction, compare_type)` or `(direction, compare_type, num_keys)` says the
    comparator is a lexicographic `compare(lhs_k, rhs_k, direction, type)` over the first
    num_keys operands (default 1), which uses numpy's stable argsort/lexsort.
    """
    ops = tuple(np.asarray(o) for o in operands)
    x0 = ops[0]
    if x0.ndim == 0:
        return tuple(o.copy() for o in ops)
    n = x0.shape[dimension]
    moved = [np.moveaxis(o, dimension, -1) for o in ops]
    batch_shape = moved[0].shape[:-1]
    if x0.size == 0:
        return tuple(o.copy() for o in ops)
    flat = [m.reshape(-1, n) for m in moved]
    if known is not None:
        direction, compare_type, *rest = known
        num_keys = rest[0] if rest else 1
        perm = _known_sort_perm(flat[:num_keys], direction, compare_type)
    elif comparator is not None:
        perm = _merge_sort_perm(flat, comparator)
    else:
        raise ValueError("sort needs a comparator callable or a known comparator")
    return tuple(np.ascontiguousarray(np.moveaxis(
        np.take_along_axis(f, perm, axis=1).reshape(batch_shape + (n,)), -1, dimension))
        for f in flat)


def top_k(x: np.ndarray, k: int, largest: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """XLA's TopK (custom call / `topk` op): the `k` largest elements along the last dimension
    and their int32 indices, in descending order; ties keep the lower index first. Floats are
    ordered by total order, matching XLA:CPU: +NaN is the largest, -NaN the smallest, and 0.0
    ranks above -0.0. ``largest=False`` gives the `k` smallest in ascending order instead."""
    x = np.asarray(x)
    perm = _known_sort_perm([x], "GT" if largest else "LT", "TOTALORDER")[..., :k]
    return np.take_along_axis(x, perm, axis=-1), perm.astype(np.int32)
