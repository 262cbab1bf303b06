"""Ops XLA rewrites into others before codegen, evaluated as those rewrites compute them.

batch-norm-training/-inference/-grad follow XLA's BatchNormExpander op for op (statistics as
E[x^2] - E[x]^2, the inference op as one scale and shift), stochastic-convert follows its
StochasticConvertDecomposer (the fraction's bits against the random bits), and
rng-get-and-update-state XLA:CPU's RngState (0x7012395, plus delta on each execution), and
scan its ScanExpander (one to_apply call per step, in order).

SliceToDynamic, PadToStatic and SetBound are here too, as what they do to values; the dynamic
sizes they make and read are dynamic.py's (Note [Dynamic shapes as bounds]).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hloscope.errors import UnsupportedCustomCallError
from hloscope.interpret import dynamic, elementwise, reduction
from hloscope.interpret.converts import convert
from hloscope.interpret.custom_calls import register_custom_call
from hloscope.interpret.dtype_bits import bit_width, int_limits
from hloscope.interpret.evaluator import EvalContext
from hloscope.interpret.registry import evaluates
from hloscope.interpret.values import Value, zeros_of
from hloscope.ir import Instruction, Opcode, TupleShape

__all__: list[str] = []

Operands = list[Any]


def _number(inst: Instruction, name: str, default: float) -> float:
    """A numeric attribute, which the parser may keep as raw text (``epsilon=0.001``)."""
    v = inst.attrs.get(name, default)
    return float(getattr(v, "text", v))


def _un(op: str, x: np.ndarray) -> np.ndarray:
    return elementwise.apply_unary(op, x)


def _bin(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b, dtype=np.asarray(a).dtype))
    return elementwise.apply_binary(op, np.ascontiguousarray(a), np.ascontiguousarray(b))


def _sum(x: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    return reduction.reduce((x,), (np.zeros((), x.dtype),), dims, known="add")[0]


class _BatchNorm:
    """The pieces every batch-norm expansion shares: feature axis, count and broadcasts."""

    def __init__(self, inst: Instruction, x: np.ndarray) -> None:
        self.f = int(_number(inst, "feature_index", 0))
        self.dtype = x.dtype
        self.ndim = x.ndim
        self.others = tuple(d for d in range(x.ndim) if d != self.f)
        count = int(np.prod([x.shape[d] for d in self.others])) if self.others else 1
        # The expander converts the s32 element count to the element type.
        self.count = convert(np.asarray(count, np.int32), x.dtype)
        self.eps = convert(np.asarray(_number(inst, "epsilon", 0.0), np.float32), x.dtype)

    def wide(self, v: np.ndarray) -> np.ndarray:
        """A per-feature vector broadcast along the operand's other dimensions."""
        shape = [1] * self.ndim
        shape[self.f] = -1
        return v.reshape(shape)


@evaluates(Opcode.BATCH_NORM_TRAINING)
def _batch_norm_training(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    x, scale, offset = operands
    bn = _BatchNorm(inst, x)
    mean = _bin("divide", _sum(x, bn.others), bn.count)
    square_mean = _bin("divide", _sum(_bin("multiply", x, x), bn.others), bn.count)
    var = _bin("subtract", square_mean, _bin("multiply", mean, mean))
    rsqrt = _un("rsqrt", _bin("add", bn.wide(var), bn.eps))
    normalized = _bin("multiply", _bin("subtract", x, bn.wide(mean)), rsqrt)
    out = _bin("add", _bin("multiply", normalized, bn.wide(scale)), bn.wide(offset))
    return (out, mean, var)


@evaluates(Opcode.BATCH_NORM_INFERENCE)
def _batch_norm_inference(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    x, scale, offset, mean, var = operands
    bn = _BatchNorm(inst, x)
    true_scale = _bin("multiply", scale, _un("rsqrt", _bin("add", var, bn.eps)))
    true_shift = _bin("subtract", offset, _bin("multiply", mean, true_scale))
    return _bin("add", _bin("multiply", x, bn.wide(true_scale)), bn.wide(true_shift))


@evaluates(Opcode.BATCH_NORM_GRAD)
def _batch_norm_grad(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    x, scale, mean, var, grad_y = operands
    bn = _BatchNorm(inst, x)
    var_eps = _bin("add", bn.wide(var), bn.eps)
    rsqrt_wide = _un("rsqrt", var_eps)
    rsqrt = _un("rsqrt", _bin("add", var, bn.eps))
    x_minus_mean = _bin("subtract", x, bn.wide(mean))
    sum_gy_xmm = _sum(_bin("multiply", grad_y, x_minus_mean), bn.others)
    grad_beta = _sum(grad_y, bn.others)
    grad_scale = _bin("multiply", sum_gy_xmm, rsqrt)
    i1 = _bin("multiply", grad_y, bn.count)
    i5 = _bin("divide", _bin("multiply", bn.wide(sum_gy_xmm), x_minus_mean), var_eps)
    i6 = _bin("subtract", _bin("subtract", i1, bn.wide(grad_beta)), i5)
    scale_rsqrt = _bin("divide", _bin("multiply", bn.wide(scale), rsqrt_wide), bn.count)
    return (_bin("multiply", scale_rsqrt, i6), grad_scale, grad_beta)


@evaluates(Opcode.STOCHASTIC_CONVERT)
def _stochastic_convert(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    """Round toward zero, then away from zero where the random bits are below the fraction
    scaled to their width; saturate at the integer type's limits (StochasticConvertDecomposer)."""
    x, random = operands
    to = inst.array_shape.dtype
    negative = _un("sign", x).astype(np.float64) < 0
    magnitude = _un("abs", x)
    whole = _un("floor", magnitude)
    fraction = _bin("subtract", magnitude, whole)
    if fraction.dtype == np.float16:  # the expander widens f16: 2^16 is not an f16
        fraction = convert(fraction, np.float32)
    fixed = _bin("multiply", fraction, np.asarray(2.0 ** bit_width(random.dtype), fraction.dtype))
    round_up = random < convert(fixed, random.dtype)
    truncated = convert(whole, to)
    result = np.where(round_up, _bin("add", truncated, np.ones((), to)), truncated)
    result = np.where(negative, _un("negate", result), result)
    lo, hi = int_limits(to)
    wide = x.astype(np.float64)  # the decomposer compares in the operand's type: exact here
    result = np.where(wide <= float(convert(np.asarray(lo, np.int64), x.dtype)), to.type(lo), result)
    result = np.where(wide >= float(convert(np.asarray(hi, np.int64), x.dtype)), to.type(hi), result)
    return result.astype(to)


@evaluates(Opcode.RNG_GET_AND_UPDATE_STATE)
def _rng_get_and_update_state(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    """XLA:CPU keeps one 128-bit state per instruction, starting at 0x7012395 and advanced by
    ``delta`` on every execution; the result is the state before the update, low word first."""
    key = ("rng-state", id(inst))
    state = ctx.cache.get(key, 0x7012395)
    ctx.cache[key] = (state + int(_number(inst, "delta", 0))) % (1 << 128)
    return np.array([state & ((1 << 64) - 1), state >> 64], np.uint64)


@register_custom_call("SliceToDynamic")
def _slice_to_dynamic(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # Note [Dynamic shapes as bounds]: operands are the data and one s32 size per dimension;
    # XLA:CPU writes the data compacted, as it hands out a dynamic output.
    return dynamic.compact(operands[0], tuple(int(n) for n in operands[1:]))


@register_custom_call("PadToStatic")
def _pad_to_static(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # Note [Dynamic shapes as bounds]: an array a SliceToDynamic compacted goes back to its
    # padded form with its sizes; otherwise the sizes we know are the bounds.
    x = np.asarray(operands[0])
    sizes = dynamic.sizes_of(ctx, inst.operands[0]) if inst.operands[0].custom_call_target == "SliceToDynamic" else None
    if sizes is None:
        return (x, *(np.asarray(n, np.int32) for n in x.shape))
    sizes = tuple(b if n is None else min(max(int(n), 0), b) for n, b in zip(sizes, x.shape, strict=True))
    out = np.zeros_like(x)
    out[tuple(slice(0, n) for n in sizes)] = x.reshape(-1)[:int(np.prod(sizes))].reshape(sizes)
    return (out, *(np.asarray(n, np.int32) for n in sizes))


@register_custom_call("SetBound")
def _set_bound(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    return operands[0]


@register_custom_call("control_dep")
def _control_dep(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # An ordering edge AsyncCollectiveReplacer removes: it carries no data, so its value is
    # the empty tuple it declares, or its first operand where it stands in for one.
    if isinstance(inst.shape, TupleShape) and not inst.shape.elements:
        return ()
    if operands and inst.operands[0].shape == inst.shape:
        return operands[0]
    raise UnsupportedCustomCallError(f"control_dep {inst.name} declares {inst.shape}, which is neither () "
                                     "nor its first operand's shape")


@register_custom_call("GetRngSeed")
def _get_rng_seed(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # XLA:CPU's RngSeedThunk writes the run's rng_seed, or a fresh random nonzero u64 when that
    # is 0 (as under jax), so its value differs from run to run; ours is drawn from the run's
    # seeded generator (RunOptions.seed), nonzero too, so a run is reproducible.
    seed = 0
    while seed == 0:
        seed = int(ctx.rng.integers(0, 2**64, dtype=np.uint64))
    return np.asarray(seed, np.uint64)


def _flag(inst: Instruction, name: str) -> bool:
    """A boolean attribute, which the parser keeps as raw text (``is_reverse=true``)."""
    v = inst.attrs.get(name, False)
    return str(getattr(v, "text", v)).lower() == "true"


@evaluates(Opcode.SCAN)
def _scan(ctx: EvalContext, inst: Instruction, operands: Operands) -> Value:
    # XLA's ScanExpander: the operands are inputs then num_carries inits; step i applies to_apply
    # to the inputs' slices at i along the scan dimension and the carries, which returns
    # (outputs..., new carries...); the result is (each output stacked along the dimension...,
    # final carries...). is_reverse walks i from the end; is_associative only licenses a
    # different evaluation order, so the sequential one is exact.
    dim = int(inst.attrs["dimensions"][0])
    carries = int(_number(inst, "num_carries", 0))
    reverse = _flag(inst, "is_reverse")
    inputs, carry = operands[:len(operands) - carries], list(operands[len(operands) - carries:])
    shapes = inst.shape.elements if isinstance(inst.shape, TupleShape) else (inst.shape,)
    n_out = len(shapes) - carries
    outs = [np.asarray(zeros_of(s)) for s in shapes[:n_out]]  # scan outputs are arrays (stacked per step)
    length = inputs[0].shape[dim] if inputs else (outs[0].shape[dim] if outs else 0)
    body = inst.attrs["to_apply"]
    for step in range(length):
        i = length - 1 - step if reverse else step
        args = [np.asarray(np.take(x, i, axis=dim)) for x in inputs] + carry  # 0-d arrays, not scalars
        result = ctx.call_now(body, args)
        parts = result if isinstance(result, tuple) else (result,)
        for out, part in zip(outs, parts[:n_out], strict=True):
            np.moveaxis(out, dim, 0)[i] = part
        carry = list(parts[n_out:])
    results = [*outs, *carry]
    return tuple(results) if isinstance(inst.shape, TupleShape) else results[0]
