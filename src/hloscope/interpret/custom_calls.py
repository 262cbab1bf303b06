"""Custom calls: a public registry keyed by ``custom_call_target``, and the targets we know.

``register_custom_call(target)(fn)`` adds ``fn(ctx, inst, operands) -> value``; like opcode
handlers, ``fn`` is a thin adapter that reads the instruction's backend_config and output shape
and calls a pure function. A target ending in ``*`` registers a prefix (``xla.sdy.*``).

Known targets: cuBLAS gemms (``__cublas$gemm``, ``__cublas$lt$matmul``), jax's threefry kernel
(``cuda_threefry2x32`` and its ffi names), ``TopK``, XLA:CPU's oneDNN layer norm, jax's host callbacks without results
(``jax.debug.print``: skipped), the partitioner's annotations (``Sharding``,
``SPMDFullToShardShape``, ``SPMDShardToFullShape``, ``xla.sdy.*``: identities in a single
global program), and XLA:CPU's LAPACK FFI kernels (``lapack_?getrf_ffi`` ...), evaluated with
the same LAPACK routines through scipy so results follow jax's conventions (1-based pivots,
``info`` codes, the untouched triangle of potrf).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from hloscope.errors import UnsupportedCustomCallError
from hloscope.interpret import linalg, reduction, rng, spmd
from hloscope.interpret.evaluator import EvalContext, sole_owner
from hloscope.interpret.registry import evaluates
from hloscope.interpret.values import Value, array_shapes, element_arrays, zeros_of
from hloscope.ir import ArrayShape, Instruction, Opcode, TupleShape
from hloscope.ir.backend_configs import GemmSpec, gemm_spec

__all__ = ["CustomCallHandler", "gemm", "register_custom_call", "custom_call_targets",
           "lookup_custom_call"]

CustomCallHandler = Callable[[EvalContext, Instruction, list[Any]], Value]

_TARGETS: dict[str, CustomCallHandler] = {}
_PREFIXES: dict[str, CustomCallHandler] = {}


def register_custom_call(*targets: str) -> Callable[[CustomCallHandler], CustomCallHandler]:
    """Register ``fn(ctx, inst, operands) -> value`` for each custom_call_target in ``targets``
    (``"prefix*"`` matches every target starting with prefix). Later registrations win, so a
    user may override a built-in target."""

    def register(fn: CustomCallHandler) -> CustomCallHandler:
        for t in targets:
            if t.endswith("*"):
                _PREFIXES[t[:-1]] = fn
            else:
                _TARGETS[t] = fn
        return fn

    return register


def custom_call_targets() -> list[str]:
    """Every registered target (prefixes end in ``*``), sorted."""
    return sorted([*_TARGETS, *(p + "*" for p in _PREFIXES)])


def lookup_custom_call(target: str) -> CustomCallHandler | None:
    """The handler of ``target``, or None."""
    fn = _TARGETS.get(target)
    if fn is None:
        for prefix, f in _PREFIXES.items():
            if target.startswith(prefix):
                return f
    return fn


@evaluates(Opcode.CUSTOM_CALL)
def _custom_call(ctx: EvalContext, inst: Instruction, operands: list[Any]) -> Value:
    target = inst.custom_call_target or ""
    fn = lookup_custom_call(target)
    if fn is None:
        raise UnsupportedCustomCallError(
            f"custom-call target {target!r} ({inst.name}) has no handler; register one with "
            "hloscope.interpret.register_custom_call(target)")
    return fn(ctx, inst, operands)


# --- cuBLAS ------------------------------------------------------------------------------------


def _with_workspace(inst: Instruction, result: np.ndarray) -> Value:
    """The gemm's value: the result, or (result, workspace...) with zeroed scratch buffers."""
    if isinstance(inst.shape, TupleShape):
        return (result, *(zeros_of(s) for s in inst.shape.elements[1:]))
    return result


@register_custom_call("__cublas$gemm", "__cublas$lt$matmul")
def _gemm(ctx: EvalContext, inst: Instruction, operands: list[Any]) -> Value:
    """``alpha * dot(lhs, rhs) + beta * c`` (+ bias vector, relu for cublasLt epilogues),
    accumulated in f32 for narrow floats and rounded once to the result type."""
    return gemm(ctx, inst, operands, stacked=False)


Accumulate = Callable[[np.ndarray, np.ndarray, np.ndarray, "GemmSpec"], np.ndarray | None]


def gemm(ctx: EvalContext, inst: Instruction, operands: list[Any], *, stacked: bool,
         product: Callable[[np.ndarray, np.ndarray, GemmSpec], np.ndarray] | None = None,
         accumulate: Accumulate | None = None) -> Value:
    """The gemm of ``operands``; with ``stacked`` every operand and the result carry a leading
    device axis (lockstep.py), and ``product(lhs, rhs, spec)`` computes the stacked product.

    With beta = 1 and a donated output operand ``c`` (Note [Donation] in evaluator.py), the
    product is added into ``c`` in place by ``accumulate(lhs, rhs, c, spec)`` (default: one
    BLAS gemm with beta = 1), which returns ``c`` or None when it cannot."""
    spec = ctx.attrs(inst, gemm_spec)
    compute = spec.compute
    lhs, rhs = operands[0], operands[1]
    if (spec.beta == 1 and not spec.bias and not spec.relu and spec.out.dtype == compute
            and len(operands) > 2 and ctx.donate and sole_owner(operands, 2)):
        acc = (accumulate or _accumulate)(lhs, rhs, operands[2], spec)
        if acc is not None:
            dims = (acc.shape[0], *spec.out.dimensions) if stacked else spec.out.dimensions
            return _finish_gemm(inst, acc.reshape(dims), stacked)
    if product is not None:
        r = product(lhs, rhs, spec)
    else:
        r = _plain_matmul(lhs, rhs, spec.lb, spec.rb, spec.lc, spec.rc, compute)
        if r is None:
            r = linalg.dot_general(lhs, rhs, spec.lb, spec.rb, spec.lc, spec.rc, compute)
    # r is a fresh array of the compute type from here on, so the epilogue updates it in place.
    r = np.asarray(r).astype(compute, copy=False)
    if spec.alpha != 1:
        r *= spec.alpha
    rest = list(operands[2:])
    if spec.beta != 0:
        c = rest.pop(0)
        c = np.asarray(c).astype(compute, copy=False).reshape(r.shape)
        if spec.beta == 1:
            r += c
        else:
            r += spec.beta * c
    if spec.bias:
        b = rest.pop(0).astype(compute, copy=False)  # a vector along the last dimension
        if stacked:  # [device, n] against [device, ..., n]
            b = b.reshape(b.shape[0], *([1] * (r.ndim - 2)), b.shape[-1])
        r += b
    if spec.relu:
        np.maximum(r, 0, out=r)
    dims = (r.shape[0], *spec.out.dimensions) if stacked else spec.out.dimensions
    return _finish_gemm(inst, r.astype(spec.out.dtype, copy=False).reshape(dims), stacked)


def _finish_gemm(inst: Instruction, r: np.ndarray, stacked: bool) -> Value:
    """The gemm's result value: ``r``, with the workspace of a tuple-shaped call."""
    if stacked and isinstance(inst.shape, TupleShape):
        n = r.shape[0]
        return (r, *(np.broadcast_to(z, (n, *np.shape(z))) for z in (zeros_of(s) for s in inst.shape.elements[1:])))
    return _with_workspace(inst, r)


def plain_operands(lhs: np.ndarray, rhs: np.ndarray, spec: GemmSpec,
                   stacked: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    """The operands of a plain matrix product (one contracting dimension each, no batch) as
    views ``a [..., m, k]`` and ``b [..., k, n]``, after a leading device axis when
    ``stacked``; None for every other form."""
    rank = 3 if stacked else 2
    if spec.lb or spec.rb or lhs.ndim != rank or rhs.ndim != rank or len(spec.lc) != 1 or len(spec.rc) != 1:
        return None
    a = lhs if spec.lc[0] == 1 else np.swapaxes(lhs, -1, -2)
    b = rhs if spec.rc[0] == 0 else np.swapaxes(rhs, -1, -2)
    return a, b


def _accumulate(lhs: np.ndarray, rhs: np.ndarray, c: np.ndarray, spec: GemmSpec) -> np.ndarray | None:
    """``c += alpha * lhs . rhs`` in place for the plain 2-D form (see ``_plain_matmul``)."""
    ops = plain_operands(lhs, rhs, spec)
    if ops is None:
        return None
    a, b = ops
    out = c.reshape(a.shape[0], b.shape[1]) if c.flags.c_contiguous else None
    if out is None or not linalg.matmul_accumulate(out, a, b, spec.alpha):
        return None
    return c


def _plain_matmul(lhs: np.ndarray, rhs: np.ndarray, lb: tuple[int, ...], rb: tuple[int, ...],
                  lc: tuple[int, ...], rc: tuple[int, ...], compute: np.dtype) -> np.ndarray | None:
    """The gemm of two 2-D operands already of the compute type, with one contracting dimension
    each and no batch: one BLAS call on (transposed) views, no operand copies. None for every
    other form, which ``linalg.dot_general`` handles. Gemms of GPU dumps are nearly all of this
    form, and copying a weight matrix per call dominated their evaluation."""
    if (lb or rb or lhs.ndim != 2 or rhs.ndim != 2 or len(lc) != 1 or len(rc) != 1
            or lhs.dtype != compute or rhs.dtype != compute or compute.kind not in "fc"):
        return None
    a = lhs if lc[0] == 1 else lhs.T
    b = rhs if rc[0] == 0 else rhs.T
    return linalg.matmul(a, b)


# --- jax's threefry kernel ---------------------------------------------------------------------


@register_custom_call("cuda_threefry2x32", "cu_threefry2x32", "cu_threefry2x32_ffi",
                      "hip_threefry2x32", "hip_threefry2x32_ffi")
def _threefry(ctx: EvalContext, inst: Instruction, operands: list[Any]) -> Value:
    """jax's GPU threefry: operands (key0, key1, x0, x1), result (y0, y1), keys broadcast."""
    out = element_arrays(inst)[0].dimensions
    k0, k1, x0, x1 = (np.broadcast_to(np.asarray(o, np.uint32), out) for o in operands[:4])
    y0, y1 = rng.threefry2x32(k0, k1, x0, x1)
    return (np.asarray(y0, np.uint32).reshape(out), np.asarray(y1, np.uint32).reshape(out))


@register_custom_call("TopK")
def _top_k(ctx: EvalContext, inst: Instruction, operands: list[Any]) -> Value:
    """XLA's TopK custom call: the k largest along the last dimension, (values, s32 indices)."""
    k = element_arrays(inst)[0].dimensions[-1]
    return reduction.top_k(operands[0], k)


# --- XLA:CPU's oneDNN kernels ------------------------------------------------------------------


@register_custom_call("__onednn$layernorm")
def _onednn_layer_norm(ctx: EvalContext, inst: Instruction, operands: list[Any]) -> Value:
    """XLA:CPU's oneDNN layer norm (onednn_layer_norm.cc): operands (x, scale, shift), each row
    along the last dimension normalised by its mean and biased variance, then scaled and
    shifted. Epsilon is the float whose bits are the config's ``epsilon_typecast`` (0 when
    absent); oneDNN computes in f32 whatever the storage type."""
    bc = inst.backend_config
    cfg = (bc.json() if bc is not None else None) or {}
    bits = int((cfg.get("onednn_layer_norm_config") or {}).get("epsilon_typecast", 0))
    epsilon = float(np.array([bits], np.int32).view(np.float32)[0])
    x, scale, shift = (np.asarray(o, np.float32) for o in operands[:3])
    mean = x.mean(axis=-1, keepdims=True, dtype=np.float32)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True, dtype=np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant row with epsilon 0: NaN, as oneDNN
        out = centred / np.sqrt(var + np.float32(epsilon)) * scale + shift
    return out.astype(array_shapes(inst)[0].dtype)


# --- buffers ---------------------------------------------------------------------------------------


@register_custom_call("Pin", "Unpin")
def _pin(ctx: EvalContext, inst: Instruction, operands: list[Any]) -> Value:
    """XLA's buffer custom calls: ``Pin`` makes an array a buffer ``b(...)`` that in-place ops
    write into, ``Unpin`` turns it back; they move no values (the buffer flag is about where
    XLA may write, not about what is there)."""
    return operands[0]


@register_custom_call("CreateBuffer", "AllocateBuffer")
def _create_buffer(ctx: EvalContext, inst: Instruction, operands: list[Any]) -> Value:
    """A fresh buffer (CreateBuffer; AllocateBuffer, the host offloader's). XLA leaves its
    contents undefined; zeros make runs reproducible."""
    return zeros_of(inst.shape)


# --- host callbacks ------------------------------------------------------------------------------


def _holds_no_data(shape: Any) -> bool:
    if isinstance(shape, TupleShape):
        return all(_holds_no_data(e) for e in shape.elements)
    return shape.primitive_type.kind in ("token", "opaque")


@register_custom_call("xla_ffi_python_cpu_callback", "xla_python_cpu_callback",
                      "xla_ffi_python_gpu_callback", "xla_python_gpu_callback")
def _host_callback(ctx: EvalContext, inst: Instruction, operands: list[Any]) -> Value:
    """jax.debug.print / jax.debug.callback: a Python function run on the host for its side
    effect; its result is () or a token, so the module's values do not depend on it and it is
    skipped. pure_callback / io_callback results are computed by Python code that the module
    does not hold, so those cannot be evaluated."""
    if _holds_no_data(inst.shape):
        return zeros_of(inst.shape)
    raise UnsupportedCustomCallError(
        f"{inst.custom_call_target} ({inst.name}) returns {inst.shape}: a jax.pure_callback or "
        "io_callback whose result comes from Python code outside the module")


# --- partitioner annotations -------------------------------------------------------------------


@register_custom_call("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "xla.sdy.*",
                      "MoveToHost", "MoveToDevice", "annotate_device_placement",
                      # Sharding propagation's barriers, layout assignment's constraint and the
                      # unprefixed Shardy markers: metadata XLA removes before codegen.
                      "ShardBarrierTo", "ShardBarrierFrom", "LayoutConstraint",
                      "LocalToGlobalShape", "GlobalToLocalShape")
def _annotation(ctx: EvalContext, inst: Instruction, operands: list[Any]) -> Value:
    """Sharding and placement annotations change no values in a single global program; the
    manual-region markers cut values into shards and put them back (Note [Global programs]
    in spmd.py)."""
    target = inst.custom_call_target
    n = ctx.num_replicas * ctx.num_partitions
    if ctx.in_region and target in spmd.ENTER_TARGETS + spmd.LEAVE_TARGETS:
        return spmd.nested_region_marker(inst, operands)
    if target in spmd.ENTER_TARGETS and n > 1:
        return spmd.enter_region(ctx.module, inst, operands, n)
    if target in spmd.LEAVE_TARGETS and n > 1 and all(isinstance(o, spmd.Sharded) for o in operands):
        return spmd.leave_region(ctx.module, inst, operands, n)
    if any(isinstance(o, spmd.Sharded) for o in operands):  # an annotation inside the region's wiring
        if len(operands) == 1:
            return operands[0]
        raise UnsupportedCustomCallError(f"{target} over several manual-region values")
    x = operands[0] if len(operands) == 1 else tuple(operands)
    # Only an annotation whose declared operand and result shapes differ cuts or joins shards.
    # The runtime shape says nothing: a reducer's annotation sees whole vectorized arrays
    # (Note [Vectorized computations]) where the module declares f32[].
    declared = inst.operands[0].shape if len(inst.operands) == 1 else None
    if (isinstance(inst.shape, ArrayShape) and isinstance(declared, ArrayShape)
            and tuple(declared.dimensions) != tuple(inst.shape.dimensions)):
        raise UnsupportedCustomCallError(
            f"{inst.custom_call_target} changes the shape ({np.shape(x)} -> {inst.shape}): this is "
            "a manual (shard_map) region of a sharded module, which hloscope does not split into "
            "shards yet; run the partitioned (post-optimization) module instead")
    return x


# --- XLA:CPU LAPACK kernels --------------------------------------------------------------------
# jax lowers linalg on CPU to "lapack_<t><routine>_ffi" with t in s/d/c/z; leading dimensions
# are a batch (frontend attribute num_batch_dims). backend_config is an MLIR dictionary such as
# {uplo = 76 : ui8, mode = 86 : ui8}: characters as their ASCII codes.

_MLIR_INT = re.compile(r"(\w+)\s*=\s*(-?\d+)")


def _ffi_attrs(inst: Instruction) -> dict[str, int]:
    bc = inst.backend_config
    return {k: int(v) for k, v in _MLIR_INT.findall(bc.text if bc is not None else "")}


def _lapack(prefix: str, name: str) -> Callable[..., Any]:
    from scipy.linalg import lapack

    return getattr(lapack, prefix + name)


def _batched(a: np.ndarray, per_matrix: Callable[[np.ndarray], tuple[Any, ...]]) -> tuple[np.ndarray, ...]:
    """Apply ``per_matrix`` to every matrix of a batch; stack each output over the batch.

    The loop runs once per matrix (LAPACK itself is per matrix), never per element."""
    batch = a.shape[:-2]
    mats = a.reshape((-1, *a.shape[-2:]))
    results = [per_matrix(m) for m in mats]
    if not results:
        raise UnsupportedCustomCallError("empty batches of LAPACK calls are not supported")
    return tuple(np.stack([np.asarray(r[i]) for r in results]).reshape(batch + np.shape(results[0][i]))
                 for i in range(len(results[0])))


def _cast(inst: Instruction, values: tuple[np.ndarray, ...]) -> Value:
    shapes = array_shapes(inst)
    out = tuple(np.asarray(v).astype(s.dtype).reshape(s.dimensions) for v, s in zip(values, shapes, strict=True))
    return out if isinstance(inst.shape, TupleShape) else out[0]


def _getrf(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
    f = _lapack(p, "getrf")

    def one(m: np.ndarray) -> tuple[Any, ...]:
        lu, piv, info = f(m)
        return lu, piv + 1, info  # LAPACK (and jax) pivots are 1-based; scipy's are 0-based

    return _cast(inst, _batched(ops[0], one))


def _potrf(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
    f = _lapack(p, "potrf")
    lower = attrs.get("uplo", ord("L")) == ord("L")
    # clean=0 keeps the other triangle as LAPACK leaves it (the input's values), as jax sees it.
    return _cast(inst, _batched(ops[0], lambda m: f(m, lower=lower, clean=0)))


def _geqrf(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
    f = _lapack(p, "geqrf")
    return _cast(inst, _batched(ops[0], lambda m: f(m)[:2]))


def _orgqr(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
    f = _lapack(p, "orgqr" if p in "sd" else "ungqr")
    a, tau = ops[0], ops[1]
    mats = a.reshape((-1, *a.shape[-2:]))
    taus = tau.reshape((-1, tau.shape[-1]))
    q = np.stack([f(m, t)[0] for m, t in zip(mats, taus, strict=True)])
    return _cast(inst, (q,))


def _syevd(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
    f = _lapack(p, "syevd" if p in "sd" else "heevd")
    lower = attrs.get("uplo", ord("L")) == ord("L")
    vectors = attrs.get("mode", ord("V")) == ord("V")

    def one(m: np.ndarray) -> tuple[Any, ...]:
        w, v, info = f(m, compute_v=int(vectors), lower=int(lower))
        return (v if vectors else m), w, info

    return _cast(inst, _batched(ops[0], one))


def _svd(routine: str) -> Callable[..., Value]:
    """gesdd (divide and conquer, jax's default) or gesvd (QR iteration): same FFI signature,
    outputs (x overwritten, s, u, vt, info), mode A (full), S (economy) or N (values only)."""

    def impl(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
        f = _lapack(p, routine)
        mode = chr(attrs.get("mode", ord("A")))
        shapes = element_arrays(inst)

        def one(m: np.ndarray) -> tuple[Any, ...]:
            u, s, vt, info = f(m, compute_uv=int(mode != "N"), full_matrices=int(mode == "A"))
            if mode == "N":  # jax still declares u and vt outputs; their contents are unspecified
                u = np.zeros(shapes[2].dimensions[-2:], m.dtype)
                vt = np.zeros(shapes[3].dimensions[-2:], m.dtype)
            return m, s, u, vt, info

        return _cast(inst, _batched(ops[0], one))

    return impl


def _geev(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
    """General eigendecomposition. Real input: (wr, wi, vl, vr, info) with LAPACK's packed real
    eigenvectors unpacked into complex columns as jaxlib does (a conjugate pair j, j+1 shares
    columns j (real part) and j+1 (imaginary part)); complex input: (w, vl, vr, info). A matrix
    with a non-finite entry is not decomposed: info = -4, other outputs unspecified (zeros)."""
    f = _lapack(p, "geev")
    left = attrs.get("compute_left", ord("N")) == ord("V")
    right = attrs.get("compute_right", ord("V")) == ord("V")
    real = p in "sd"

    def unpack(imag: np.ndarray, packed: np.ndarray) -> np.ndarray:
        # LAPACK stores a conjugate pair (imag[j] > 0, imag[j+1] = -imag[j]) as column j = real
        # part, column j+1 = imaginary part; real eigenvalues (imag 0 or NaN) own their column.
        first = imag > 0
        second = np.roll(first, 1)
        re = np.where(second, np.roll(packed, 1, axis=-1), packed)
        im = np.where(first, np.roll(packed, -1, axis=-1), np.where(second, -packed, 0))
        return re + 1j * im

    def one(m: np.ndarray) -> tuple[Any, ...]:
        n = m.shape[-1]
        none = np.zeros((n, n))
        if not np.all(np.isfinite(m)):
            return (*([np.zeros(n)] * (2 if real else 1)), none, none, -4)
        if real:
            wr, wi, vl, vr, info = f(m, compute_vl=int(left), compute_vr=int(right))
            return wr, wi, unpack(wi, vl) if left else none, unpack(wi, vr) if right else none, info
        w, vl, vr, info = f(m, compute_vl=int(left), compute_vr=int(right))
        return w, vl if left else none, vr if right else none, info

    return _cast(inst, _batched(ops[0], one))


def _gees(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
    """Schur decomposition without reordering (jaxlib implements no `sort`): real input gives
    (T, Schur vectors, wr, wi, sdim = 0, info), complex input (T, Schur vectors, w, sdim, info)."""
    if attrs.get("sort", ord("N")) != ord("N"):
        raise UnsupportedCustomCallError(f"lapack_{p}gees_ffi with sorted eigenvalues (jaxlib has none)")
    f = _lapack(p, "gees")
    vectors = attrs.get("mode", ord("V")) == ord("V")

    def one(m: np.ndarray) -> tuple[Any, ...]:
        if p in "sd":
            t, sdim, wr, wi, vs, _, info = f(lambda *a: 0, m, compute_v=int(vectors), sort_t=0)
            return t, vs, wr, wi, sdim, info
        t, sdim, w, vs, _, info = f(lambda *a: 0, m, compute_v=int(vectors), sort_t=0)
        return t, vs, w, sdim, info

    return _cast(inst, _batched(ops[0], one))


def _geqp3(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
    """QR with column pivoting: (x, jpvt) -> (packed QR, 1-based pivots, tau). jax passes jpvt
    all zero (every column free); LAPACK's fixed leading columns (jpvt != 0) are not modelled."""
    if np.any(np.asarray(ops[1]) != 0):
        raise UnsupportedCustomCallError(f"lapack_{p}geqp3_ffi with preset pivots (jpvt != 0)")
    f = _lapack(p, "geqp3")
    return _cast(inst, _batched(ops[0], lambda m: f(m)[:3]))


def _gtsv(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
    """Tridiagonal solve: (dl, d, du, b) -> (dl, d, du overwritten by the LU factors, x, info).
    dl[..., 0] and du[..., -1] are padding, as in jax's layout (LAPACK reads dl from index 1)."""
    f = _lapack(p, "gtsv")
    dl, d, du, b = (np.asarray(o) for o in ops)
    batch = b.shape[:-2]
    outs = []
    for k in np.ndindex(*batch):
        du2, d2, du_out, x, info = f(dl[k][1:], d[k], du[k][:-1], b[k])
        dl_out = np.concatenate([dl[k][:1], du2])
        outs.append((dl_out, d2, np.concatenate([du_out, du[k][-1:]]), x, info))
    stacked = tuple(np.stack([o[i] for o in outs]).reshape(batch + np.shape(outs[0][i])) for i in range(5))
    return _cast(inst, stacked)


def _gehrd(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
    f = _lapack(p, "gehrd")
    n = ops[0].shape[-1]
    lo, hi = attrs.get("low", 1) - 1, attrs.get("high", int(n)) - 1  # LAPACK's ilo/ihi are 1-based
    return _cast(inst, _batched(ops[0], lambda m: f(m, lo=lo, hi=hi)))


def _sytrd(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
    f = _lapack(p, "sytrd" if p in "sd" else "hetrd")
    lower = attrs.get("uplo", ord("L")) == ord("L")
    return _cast(inst, _batched(ops[0], lambda m: f(m, lower=int(lower))))


def _trsm(p: str, inst: Instruction, ops: list[Any], attrs: dict[str, int]) -> Value:
    trans = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}[chr(attrs.get("trans_x", ord("N")))]
    x = linalg.triangular_solve(ops[0], ops[1], attrs.get("side", ord("L")) == ord("L"),
                                attrs.get("uplo", ord("L")) == ord("L"),
                                attrs.get("diag", ord("N")) == ord("U"), trans)
    return _cast(inst, (x,))


# routine -> (implementation, the type prefixes jaxlib registers it for)
_LAPACK_ROUTINES: dict[str, tuple[Callable[..., Value], str]] = {
    "trsm": (_trsm, "sdcz"), "getrf": (_getrf, "sdcz"), "potrf": (_potrf, "sdcz"),
    "geqrf": (_geqrf, "sdcz"), "geqp3": (_geqp3, "sdcz"), "orgqr": (_orgqr, "sd"),
    "ungqr": (_orgqr, "cz"), "syevd": (_syevd, "sd"), "heevd": (_syevd, "cz"),
    "gesdd": (_svd("gesdd"), "sdcz"), "gesvd": (_svd("gesvd"), "sdcz"), "geev": (_geev, "sdcz"),
    "gees": (_gees, "sdcz"), "gehrd": (_gehrd, "sdcz"), "sytrd": (_sytrd, "sd"),
    "hetrd": (_sytrd, "cz"), "gtsv": (_gtsv, "sdcz"),
}


def _lapack_handler(prefix: str, routine: str) -> CustomCallHandler:
    impl = _LAPACK_ROUTINES[routine][0]

    def handler(ctx: EvalContext, inst: Instruction, operands: list[Any]) -> Value:
        return impl(prefix, inst, operands, _ffi_attrs(inst))

    handler.__name__ = f"lapack_{prefix}{routine}_ffi"
    return handler


for _r, (_, _prefixes) in _LAPACK_ROUTINES.items():
    for _p in _prefixes:
        register_custom_call(f"lapack_{_p}{_r}_ffi")(_lapack_handler(_p, _r))
