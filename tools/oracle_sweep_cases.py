"""The oracle sweep's catalogue of small jax programs, op by op (tools/oracle_sweep.py runs them).

Each generator adds ``Case``s: a function, deterministic inputs, how it is lowered. Names are
``<family>.<function>.<dtype>[.<variant>]``; the sweep groups mismatches by the first two parts.
Multi-device programs and whole models are in ``oracle_sweep_programs.py``.

jax must be imported after XLA_FLAGS forces 8 host devices; the runner sees to that.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from hloscope.testing.cases import Case

CASES: list[Case] = []


def case(name: str, fn: Callable[..., Any], args: Callable[[], tuple[Any, ...]], *, mode: str = "jit",
         x64: bool = False, shardy: bool | None = None, kwargs: Callable[[], dict[str, Any]] | None = None,
         rtol_scale: float = 1.0) -> None:
    """Add ``fn(*args())`` lowered by ``mode`` (jit or pmap) with ``kwargs()`` to ``CASES``."""
    CASES.append(Case(name, fn, args, mode=mode, shardy=shardy, jit_kwargs=kwargs,
                      config=(("jax_enable_x64", True),) if x64 else (), tolerance_scale=rtol_scale))


# --------------------------------------------------------------------------------------------
# Inputs


def _dtype(name: str) -> Any:
    import ml_dtypes

    return {"bf16": ml_dtypes.bfloat16, "f8e4m3fn": ml_dtypes.float8_e4m3fn,
            "f8e5m2": ml_dtypes.float8_e5m2}.get(name) or np.dtype(name)


SPECIAL_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, np.inf, -np.inf, np.nan, 1e-30, -1e30, 65504.0,
                  1e-7, 100.0, -0.75]


def values(dtype: str, shape: tuple[int, ...] = (4, 5), seed: int = 0, special: bool = True,
           low: float | None = None, high: float | None = None) -> np.ndarray:
    """Deterministic inputs of ``dtype``: random values, the first ones replaced by edge values
    (NaN, infinities, signed zeros, extremes) when ``special``; ``low``/``high`` bound them."""
    rng = np.random.default_rng(seed)
    dt = _dtype(dtype)
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dt).kind in "iu":
        info = np.iinfo(dt)
        lo = info.min if low is None else int(low)
        hi = info.max if high is None else int(high)
        flat = rng.integers(max(lo, -20), min(hi, 20) + 1, n, dtype=np.int64)
        if special and low is None and high is None:
            edge = [0, 1, info.max, info.min, 2, -1 if info.min < 0 else 3, 7, info.max - 1]
            flat[:min(n, len(edge))] = edge[:n]
        return flat.astype(dt).reshape(shape)
    if np.dtype(dt).kind == "c":
        re_, im = rng.standard_normal(n) * 2, rng.standard_normal(n) * 2
        out = (re_ + 1j * im).astype(dt)
        if special:
            edge = np.array([0, 1j, -1, 2 + 0j, complex(np.inf, 0), complex(0, np.nan), -0.5j, 1e-3],
                            dtype=dt)
            out[:min(n, len(edge))] = edge[:n]
        return out.reshape(shape)
    flat = rng.standard_normal(n) * 2
    if low is not None or high is not None:
        lo, hi = (low if low is not None else -3.0), (high if high is not None else 3.0)
        flat = lo + (hi - lo) * rng.random(n)
    elif special:
        edge = np.array(SPECIAL_FLOATS, np.float64)
        flat[:min(n, len(edge))] = edge[:n]
    with np.errstate(over="ignore"):
        return flat.astype(dt).reshape(shape)


# --------------------------------------------------------------------------------------------
# The programs


FLOATS = ("float32", "bf16", "float16", "float64")
INTS = ("int8", "int32", "uint32", "int64", "uint8", "int16", "uint64")
ALL = FLOATS + INTS + ("bool", "complex64")
X64_DTYPES = {"float64", "int64", "uint64", "complex128"}


def needs_x64(*dtypes: str) -> bool:
    return any(d in X64_DTYPES for d in dtypes)


def _elementwise() -> None:
    import jax.numpy as jnp
    import jax.scipy.special as jss
    from jax import lax

    unary = {
        "abs": jnp.abs, "negative": jnp.negative, "sign": jnp.sign, "floor": jnp.floor,
        "ceil": jnp.ceil, "round": jnp.round, "rint": jnp.rint, "trunc": jnp.trunc, "exp": jnp.exp,
        "exp2": jnp.exp2, "expm1": jnp.expm1, "log": jnp.log, "log2": jnp.log2, "log10": jnp.log10,
        "log1p": jnp.log1p, "sqrt": jnp.sqrt, "cbrt": jnp.cbrt, "square": jnp.square,
        "reciprocal": jnp.reciprocal, "sin": jnp.sin, "cos": jnp.cos, "tan": jnp.tan,
        "arcsin": jnp.arcsin, "arccos": jnp.arccos, "arctan": jnp.arctan, "sinh": jnp.sinh,
        "cosh": jnp.cosh, "tanh": jnp.tanh, "arcsinh": jnp.arcsinh, "arccosh": jnp.arccosh,
        "arctanh": jnp.arctanh, "isnan": jnp.isnan, "isinf": jnp.isinf, "isfinite": jnp.isfinite,
        "signbit": jnp.signbit, "logical_not": jnp.logical_not, "invert": jnp.invert,
        "bitwise_count": jnp.bitwise_count, "sinc": jnp.sinc, "i0": jnp.i0,
        "nan_to_num": jnp.nan_to_num, "real": jnp.real, "imag": jnp.imag, "conj": jnp.conj,
        "angle": jnp.angle, "deg2rad": jnp.deg2rad, "spacing": jnp.spacing, "frexp": jnp.frexp,
        "modf": jnp.modf, "rsqrt": lax.rsqrt, "logistic": lax.logistic, "erf": lax.erf,
        "erfc": lax.erfc, "erf_inv": lax.erf_inv, "lgamma": lax.lgamma, "digamma": lax.digamma,
        "clz": lax.clz, "population_count": lax.population_count, "is_finite": lax.is_finite,
        "round_even": lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
        "integer_pow3": lambda x: lax.integer_pow(x, 3), "integer_pow-2": lambda x: lax.integer_pow(x, -2),
        "ndtri": jss.ndtri, "ndtr": jss.ndtr, "log_ndtr": jss.log_ndtr, "i0e": jss.i0e,
        "i1": jss.i1, "i1e": jss.i1e, "expit": jss.expit, "logit": jss.logit, "entr": jss.entr,
        "gammaln": jss.gammaln, "erfcx": getattr(jss, "erfcx", None), "spence": jss.spence,
        "bessel_i0e": lax.bessel_i0e, "bessel_i1e": lax.bessel_i1e,
        "reduce_precision_e5m2": lambda x: lax.reduce_precision(x, 5, 2),
        "reduce_precision_e8m7": lambda x: lax.reduce_precision(x, 8, 7),
    }
    for fname, fn in unary.items():
        if fn is None:
            continue
        for dt in ALL:
            case(f"unary.{fname}.{dt}", fn, lambda dt=dt: (values(dt),), x64=needs_x64(dt))
    for fname in ("exp", "log", "sqrt", "sin", "tanh", "abs", "sign", "rsqrt", "expm1", "log1p",
                  "arctan", "arcsinh", "square", "reciprocal", "cos", "tan", "cbrt"):
        case(f"unary.{fname}.complex128", unary[fname], lambda: (values("complex128"),), x64=True)

    binary = {
        "add": jnp.add, "subtract": jnp.subtract, "multiply": jnp.multiply, "divide": jnp.divide,
        "floor_divide": jnp.floor_divide, "remainder": jnp.remainder, "fmod": jnp.fmod,
        "power": jnp.power, "float_power": jnp.float_power, "maximum": jnp.maximum,
        "minimum": jnp.minimum, "fmax": jnp.fmax, "fmin": jnp.fmin, "arctan2": jnp.arctan2,
        "hypot": jnp.hypot, "logaddexp": jnp.logaddexp, "logaddexp2": jnp.logaddexp2,
        "copysign": jnp.copysign, "nextafter": jnp.nextafter, "heaviside": jnp.heaviside,
        "gcd": jnp.gcd, "lcm": jnp.lcm, "bitwise_and": jnp.bitwise_and, "bitwise_or": jnp.bitwise_or,
        "bitwise_xor": jnp.bitwise_xor, "left_shift": jnp.left_shift, "right_shift": jnp.right_shift,
        "equal": jnp.equal, "less": jnp.less, "greater_equal": jnp.greater_equal,
        "not_equal": jnp.not_equal, "logical_and": jnp.logical_and, "logical_xor": jnp.logical_xor,
        "lax_rem": lax.rem, "lax_div": lax.div, "lax_pow": lax.pow, "lax_max": lax.max,
        "lax_min": lax.min, "shift_right_logical": lax.shift_right_logical,
        "shift_right_arithmetic": lax.shift_right_arithmetic, "shift_left": lax.shift_left,
        "xlogy": jss.xlogy, "xlog1py": jss.xlog1py, "zeta": jss.zeta, "gammainc": jss.gammainc,
        "gammaincc": jss.gammaincc, "polygamma": lambda n, x: jss.polygamma(jnp.abs(n).astype(int) % 3, x),
        "igamma_grad_a": lambda a, x: jax.grad(lambda a: jss.gammainc(a, x).sum())(a),
        "rel_entr": jss.rel_entr, "kl_div": jss.kl_div, "ldexp": lambda x, y: jnp.ldexp(x, 3),
        "complex": lax.complex, "atan2_lax": lax.atan2, "nextafter_lax": lax.nextafter,
        "isclose": jnp.isclose, "divmod": jnp.divmod,
    }
    for fname, fn in binary.items():
        # jnp.gcd's loop never ends on INT_MIN in XLA itself; keep gcd/lcm to small values.
        special = fname not in ("gcd", "lcm")
        for dt in ALL:
            case(f"binary.{fname}.{dt}", fn,
                 lambda dt=dt, sp=special: (values(dt, seed=1, special=sp),
                                            values(dt, seed=2, special=sp)[::-1].copy()), x64=needs_x64(dt))
    for fname in ("power", "divide", "multiply", "add", "lax_pow", "equal"):
        case(f"binary.{fname}.complex128", binary[fname],
             lambda: (values("complex128", seed=1), values("complex128", seed=2)), x64=True)
    # Mixed integer power (x ** int) and shifts by out-of-range amounts.
    for dt in ("int8", "int32", "uint32", "int64", "uint8"):
        case(f"binary.shift_wide.{dt}", lambda x, s: (x << s, x >> s, lax.shift_right_logical(x, s)),
             lambda dt=dt: (values(dt, seed=3), (np.arange(20) * 5 % 70).astype(dt).reshape(4, 5)),
             x64=needs_x64(dt))
        case(f"binary.int_pow.{dt}", lambda x, y: lax.pow(x, y),
             lambda dt=dt: (values(dt, seed=4), np.arange(20).astype(dt).reshape(4, 5) % 9),
             x64=needs_x64(dt))
    for dt in FLOATS:
        case(f"binary.pow_int_exp.{dt}", lambda x, y: lax.pow(x, y),
             lambda dt=dt: (values(dt, seed=4), np.arange(-10, 10).astype(np.int32).reshape(4, 5)),
             x64=needs_x64(dt))
        case(f"ternary.clamp.{dt}", lambda lo, x, hi: lax.clamp(lo, x, hi),
             lambda dt=dt: (values(dt, (), special=False), values(dt), values(dt, (), seed=9, special=False)),
             x64=needs_x64(dt))
        case(f"ternary.betainc.{dt}", jss.betainc,
             lambda dt=dt: (values(dt, low=0.1, high=4), values(dt, seed=1, low=0.1, high=4),
                            values(dt, seed=2, low=0, high=1)), x64=needs_x64(dt))
        case(f"ternary.where.{dt}", jnp.where,
             lambda dt=dt: (values("bool"), values(dt), values(dt, seed=3)), x64=needs_x64(dt))
        case(f"ternary.fma.{dt}", lambda a, b, c: a * b + c,
             lambda dt=dt: (values(dt), values(dt, seed=1), values(dt, seed=2)), x64=needs_x64(dt))
    # Every convert between two dtypes, with edge values (NaN, inf, out of range).
    conv_dtypes = ALL + ("f8e4m3fn", "f8e5m2", "complex128")
    for src in conv_dtypes:
        for dst in conv_dtypes:
            if src == dst or ("complex" in src and "complex" not in dst):
                continue
            case(f"convert.{src}->{dst}", lambda x, dst=dst: lax.convert_element_type(x, _dtype(dst)),
                 lambda src=src: (_convert_input(src),), x64=needs_x64(src, dst))
    for src in ("float32", "int32", "uint32", "bf16", "float16", "int8"):
        for dst in ("float32", "int32", "uint32", "bf16", "float16", "int8", "uint8", "int16"):
            if np.dtype(_dtype(src)).itemsize * 8 and src != dst:
                case(f"bitcast.{src}->{dst}", lambda x, dst=dst: lax.bitcast_convert_type(x, _dtype(dst)),
                     lambda src=src: (values(src, (4, 4)),))


def _convert_input(dt: str) -> np.ndarray:
    if np.dtype(_dtype(dt)).kind == "f" or dt.startswith(("bf", "f8")):
        v = [0.0, -0.0, 1.5, -1.5, 2.5, -2.5, 127.9, 128.5, -129.5, 255.5, 256.0, 65504.0, 70000.0, 3e9,
             -3e9, 5e18, -1e19, 1e20, np.inf, -np.inf, np.nan, 1e-40, 0.49999997, 3.4e38]
        with np.errstate(over="ignore"):
            return np.array(v, np.float64).astype(_dtype(dt))
    return values(dt, (24,))


def _reductions() -> None:
    import jax.numpy as jnp
    import jax.scipy.special as jss
    from jax import lax

    red = {
        "sum": jnp.sum, "prod": jnp.prod, "max": jnp.max, "min": jnp.min, "mean": jnp.mean,
        "var": jnp.var, "std": jnp.std, "argmax": jnp.argmax, "argmin": jnp.argmin, "any": jnp.any,
        "all": jnp.all, "cumsum": jnp.cumsum, "cumprod": jnp.cumprod, "cummax": lambda x, axis: lax.cummax(x, axis),
        "cummin": lambda x, axis: lax.cummin(x, axis), "logsumexp": jss.logsumexp, "nanmax": jnp.nanmax,
        "nansum": jnp.nansum, "nanmean": jnp.nanmean, "median": jnp.median, "sort": jnp.sort,
        "argsort": jnp.argsort, "ptp": jnp.ptp, "count_nonzero": jnp.count_nonzero,
        "cumlogsumexp": lambda x, axis: lax.cumlogsumexp(x, axis), "nancumsum": jnp.nancumsum,
        "quantile": lambda x, axis: jnp.quantile(x, 0.3, axis=axis), "nanargmax": jnp.nanargmax,
        "lexsort": lambda x, axis: jnp.lexsort((x, -x), axis=axis),
        "top_k": lambda x, axis: lax.top_k(jnp.moveaxis(x, axis, -1), 3),
        "sort_stable_desc": lambda x, axis: jnp.sort(x, axis=axis, stable=True, descending=True),
        "argsort_desc": lambda x, axis: jnp.argsort(x, axis=axis, descending=True),
        "unique_counts": lambda x, axis: jnp.unique(x, size=6, return_counts=True, fill_value=0),
        "searchsorted": lambda x, axis: jnp.searchsorted(jnp.sort(x.ravel()), x),
        "approx_max_k": lambda x, axis: lax.approx_max_k(x, 2, reduction_dimension=axis),
        "reduce_and": lambda x, axis: lax.reduce_and(x, (axis,)),
        "reduce_xor": lambda x, axis: lax.reduce_xor(x, (axis,)),
        "reduce_or": lambda x, axis: lax.reduce_or(x, (axis,)),
        "associative_scan": lambda x, axis: lax.associative_scan(jnp.add, x, axis=axis),
        "associative_scan_rev": lambda x, axis: lax.associative_scan(jnp.maximum, x, axis=axis,
                                                                     reverse=True),
    }
    for fname, fn in red.items():
        for dt in ALL:
            for axis in (0, 1):
                case(f"reduce.{fname}.{dt}.ax{axis}", lambda x, fn=fn, axis=axis: fn(x, axis=axis),
                     lambda dt=dt: (values(dt, (6, 7)),), x64=needs_x64(dt))
    for dt in ("float32", "bf16", "float16", "int32", "float64"):
        for op, init in (("add", 0), ("max", -np.inf), ("min", np.inf), ("mul", 1)):
            for win, stride, pad in (((2, 3), (1, 2), "VALID"), ((3, 3), (2, 1), "SAME"),
                                     ((2, 2), (1, 1), ((1, 2), (0, 1)))):
                case(f"reduce_window.{op}.{dt}.{win}{stride}{pad}",
                     lambda x, op=op, init=init, win=win, stride=stride, pad=pad: lax.reduce_window(
                         x, jnp.array(init, x.dtype) if np.isfinite(init) or x.dtype.kind == "f"
                         else jnp.array(jnp.iinfo(x.dtype).min if init < 0 else jnp.iinfo(x.dtype).max, x.dtype),
                         getattr(lax, op), win, stride, pad),
                     lambda dt=dt: (values(dt, (5, 7)),), x64=needs_x64(dt))
        case(f"reduce_window.dilated.{dt}",
             lambda x: lax.reduce_window(x, jnp.array(0, x.dtype), lax.add, (2, 2), (1, 2), ((1, 0), (2, 1)),
                                         base_dilation=(2, 1), window_dilation=(1, 2)),
             lambda dt=dt: (values(dt, (4, 6), special=False),), x64=needs_x64(dt))
        if dt != "int32":  # grad needs floats
            case(f"reduce_window.maxpool_grad.{dt}",
                 lambda x: jax.grad(lambda v: (lax.reduce_window(v, -jnp.inf, lax.max, (2, 2), (2, 2), "SAME")
                                               .astype(jnp.float32) ** 2).sum())(x),
                 lambda dt=dt: (np.round(values(dt, (5, 6), special=False)),), x64=needs_x64(dt))
        case(f"reduce_window.variadic.{dt}",
             lambda x: lax.reduce_window((x, -x), (jnp.array(0, x.dtype), jnp.array(0, x.dtype)),
                                         lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])),
                                         (2, 3), (1, 1), "VALID"),
             lambda dt=dt: (values(dt, (4, 6), special=False),), x64=needs_x64(dt))
    for dt in ("float32", "bf16", "int32", "float64", "uint32"):
        case(f"reduce.variadic_argmax.{dt}",
             lambda x: lax.reduce((x, lax.broadcasted_iota(jnp.int32, x.shape, 1)),
                                  (jnp.array(0, x.dtype), jnp.int32(0)),
                                  lambda a, b: (jnp.maximum(a[0], b[0]), jnp.minimum(a[1], b[1])), (1,)),
             lambda dt=dt: (values(dt, (5, 6)),), x64=needs_x64(dt))
        case(f"sort.multi_operand.{dt}",
             lambda x, y: lax.sort((x, y, -y), dimension=0, num_keys=2),
             lambda dt=dt: (np.round(values(dt, (6, 3), special=False)), values("int32", (6, 3))),
             x64=needs_x64(dt))


def _indexing() -> None:
    import jax.numpy as jnp
    from jax import lax

    idx = np.array([[0, 2], [5, 1], [-1, 3], [2, 2], [9, -7]], np.int32)
    for dt in ("float32", "int8", "bf16", "bool", "complex64", "float64", "uint32"):
        x = lambda dt=dt: (values(dt, (6, 5)),)  # noqa: E731
        for mode in ("clip", "fill", "promise_in_bounds", None):
            case(f"gather.take.{dt}.{mode}", lambda a, mode=mode: jnp.take(a, jnp.array([0, 4, 7, -1, -9]),
                                                                          axis=0, mode=mode), x, x64=needs_x64(dt))
            case(f"gather.pairs.{dt}.{mode}",
                 lambda a, mode=mode: a.at[idx[:, 0], idx[:, 1]].get(mode=mode), x, x64=needs_x64(dt))
            for op in ("set", "add", "mul", "min", "max"):
                if dt == "bool" and op in ("add", "mul"):
                    continue
                case(f"scatter.{op}.{dt}.{mode}",
                     lambda a, op=op, mode=mode: getattr(a.at[idx[:, 0], idx[:, 1]], op)(
                         a[0, 0], mode=mode), x, x64=needs_x64(dt))
                case(f"scatter.rows.{op}.{dt}.{mode}",
                     lambda a, op=op, mode=mode: getattr(a.at[jnp.array([1, 1, 7, -2])], op)(
                         a[:4], mode=mode), x, x64=needs_x64(dt))
        case(f"dynamic_slice.{dt}", lambda a, i: (lax.dynamic_slice(a, (i, i - 3), (3, 2)),
                                                  lax.dynamic_update_slice(a, a[:2, :2], (i + 3, -i))),
             lambda dt=dt: (values(dt, (6, 5)), np.int32(2)), x64=needs_x64(dt))
        case(f"dynamic_slice.u8_index.{dt}", lambda a, i: lax.dynamic_slice(a, (i, i), (2, 2)),
             lambda dt=dt: (values(dt, (6, 5)), np.uint8(250)), x64=needs_x64(dt))
        case(f"index.slicing.{dt}", lambda a: (a[::-2, 1::2], a[..., None, 2], a[jnp.array([True, False] * 3)
                                                                                   .nonzero(size=2)[0]]),
             lambda dt=dt: (values(dt, (6, 5)),), x64=needs_x64(dt))
        case(f"index.unique_sorted.{dt}", lambda a: jnp.unique(a.ravel(), size=12, fill_value=a[0, 0]),
             lambda dt=dt: (values(dt, (6, 5)),), x64=needs_x64(dt))
    for dt in ("float32", "int32", "float16"):
        case(f"segment_sum.{dt}", lambda d, s: (jax.ops.segment_sum(d, s, 4), jax.ops.segment_max(d, s, 4),
                                                jax.ops.segment_min(d, s, 4, indices_are_sorted=True),
                                                jax.ops.segment_prod(d, s, 4)),
             lambda dt=dt: (values(dt, (7, 2), special=False), np.array([0, 0, 1, 3, 3, 5, -1], np.int32)))
    case("gather.batched_vmap", jax.vmap(lambda a, i: a[i]), lambda: (values("float32", (3, 6)),
                                                                      np.array([1, 5, 9], np.int32)))
    case("scatter.batched_vmap", jax.vmap(lambda a, i, v: a.at[i].add(v)),
         lambda: (values("float32", (3, 6)), np.array([[1, 1], [5, 0], [9, 2]], np.int32),
                  values("float32", (3, 2), seed=4)))
    case("gather.2d_windows", lambda a, i: jax.vmap(lambda s: lax.dynamic_slice(a, s, (2, 3)))(i),
         lambda: (values("float32", (6, 7)), np.array([[0, 0], [5, 6], [2, 1], [-1, 3]], np.int32)))
    case("scatter.window_update", lambda a, i, u: a.at[i:i + 2, 1:4].set(u),
         lambda: (values("float32", (6, 7)), np.int32(5), values("float32", (2, 3), seed=5)))


def _shape_ops() -> None:
    import jax.numpy as jnp
    from jax import lax

    ops = {
        "transpose": lambda x: jnp.transpose(x, (2, 0, 1)), "reshape": lambda x: x.reshape(4, -1),
        "flip": lambda x: jnp.flip(x, (0, 2)), "roll": lambda x: jnp.roll(x, (1, -2), (1, 2)),
        "pad": lambda x: jnp.pad(x, ((1, 0), (0, 2), (3, 1)), mode="reflect"),
        "pad_edge": lambda x: jnp.pad(x, ((1, 0), (0, 2), (3, 1)), mode="edge"),
        "pad_lax": lambda x: lax.pad(x, jnp.array(7, x.dtype), ((1, -1, 1), (0, 0, 2), (-1, 2, 0))),
        "concat": lambda x: jnp.concatenate([x, x[:, :1] * 2], 1), "tile": lambda x: jnp.tile(x, (1, 2, 1)),
        "repeat": lambda x: jnp.repeat(x, 2, axis=1), "tril": lambda x: jnp.tril(x[0]),
        "diag": lambda x: jnp.diagonal(x, axis1=1, axis2=2), "rot90": lambda x: jnp.rot90(x, axes=(1, 2)),
        "broadcast": lambda x: jnp.broadcast_to(x[:, :1], (2, 3, 3, 4)),
        "squeeze_expand": lambda x: jnp.expand_dims(x[:, 1], (0, 2)),
        "iota": lambda x: lax.broadcasted_iota(x.dtype, (3, 4), 1) + x[0, :1, :1],
        "split": lambda x: jnp.split(x, [1], axis=2), "stack": lambda x: jnp.stack([x, x], 1),
        "rev_lax": lambda x: lax.rev(x, (1,)), "eye": lambda x: jnp.eye(4, 5, 1, dtype=x.dtype) * x[0, 0, 0],
        "triu_indices": lambda x: x[0][jnp.triu_indices(3, 1, 4)],
        "meshgrid": lambda x: jnp.meshgrid(x[0, 0], x[1, 1]),
        "sliding": lambda x: lax.conv_general_dilated_patches(x[None].astype(jnp.float32), (2, 2), (1, 1),
                                                              "VALID") if True else x,
        "argwhere": lambda x: jnp.argwhere(x != 0, size=6, fill_value=-1),
        "where_nonzero": lambda x: jnp.nonzero(x, size=5),
        "select_n": lambda x: lax.select_n(jnp.arange(4) % 3, x[0, 0], x[0, 1], x[1, 0]),
    }
    for fname, fn in ops.items():
        for dt in ("float32", "int8", "bf16", "bool", "complex64", "int64"):
            case(f"shape.{fname}.{dt}", fn, lambda dt=dt: (values(dt, (2, 3, 4)),), x64=needs_x64(dt))


def _linalg() -> None:
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    def spd(n: int, dt: str, seed: int = 0) -> np.ndarray:
        a = np.random.default_rng(seed).standard_normal((n, n))
        m = a @ a.T + n * np.eye(n)
        if "complex" in dt:
            b = np.random.default_rng(seed + 1).standard_normal((n, n))
            m = m + 1j * (b - b.T)
        return m.astype(dt)

    def gen(n: int, dt: str, seed: int = 0, batch: tuple[int, ...] = ()) -> np.ndarray:
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((*batch, n, n)) + 0.5 * np.eye(n)
        if "complex" in dt:
            a = a + 1j * rng.standard_normal((*batch, n, n))
        return a.astype(dt)

    fns = {
        "cholesky": lambda a: jnp.linalg.cholesky(a), "qr": lambda a: jnp.linalg.qr(a),
        "svd": lambda a: jnp.linalg.svd(a, compute_uv=False), "svd_full": lambda a: jnp.abs(jnp.linalg.svd(a)[1]),
        "eigh": lambda a: jnp.linalg.eigh(a)[0], "inv": jnp.linalg.inv, "det": jnp.linalg.det,
        "slogdet": jnp.linalg.slogdet, "solve": lambda a: jnp.linalg.solve(a, a[:, :2] + 1),
        "lu": lambda a: jsl.lu(a), "lu_factor": lambda a: jsl.lu_factor(a),
        "cho_solve": lambda a: jsl.cho_solve(jsl.cho_factor(a), a[:, :1]),
        "solve_triangular": lambda a: jsl.solve_triangular(a, a[:, :2], lower=True),
        "solve_triangular_T": lambda a: jsl.solve_triangular(a, a[:, :2], trans=1, unit_diagonal=True),
        "expm": jsl.expm, "pinv": jnp.linalg.pinv, "matrix_power": lambda a: jnp.linalg.matrix_power(a, 5),
        "norm2": lambda a: jnp.linalg.norm(a, 2), "norm_fro": lambda a: jnp.linalg.norm(a),
        "eigvals": lambda a: jnp.sort(jnp.abs(jnp.linalg.eigvals(a))), "tridiag": lambda a: jnp.linalg.eigvalsh(a),
        "matmul": lambda a: a @ a.T, "einsum": lambda a: jnp.einsum("ij,jk,kl->il", a, a, a),
        "schur": lambda a: jnp.abs(jnp.diag(jsl.schur(a)[0])), "hessenberg": lambda a: jsl.hessenberg(a).shape,
        "inv_grad": lambda a: jax.grad(lambda m: jnp.linalg.inv(m).sum())(a),
        "cholesky_grad": lambda a: jax.grad(lambda m: jnp.linalg.cholesky(m).sum())(a),
        "qr_grad": lambda a: jax.grad(lambda m: jnp.linalg.qr(m)[1].sum())(a),
        "eigh_grad": lambda a: jax.grad(lambda m: jnp.linalg.eigh(m)[0].sum())(a),
        "svd_grad": lambda a: jax.grad(lambda m: jnp.linalg.svd(m, compute_uv=False).sum())(a),
    }
    spd_fns = {"cholesky", "cho_solve", "eigh", "tridiag", "cholesky_grad", "eigh_grad"}
    for fname, fn in fns.items():
        for dt in ("float32", "float64", "complex64"):
            mk = (lambda dt=dt: (spd(4, dt),)) if fname in spd_fns else (lambda dt=dt: (gen(4, dt),))
            case(f"linalg.{fname}.{dt}", fn, mk, x64=needs_x64(dt), rtol_scale=50)
        case(f"linalg.{fname}.batched", jax.vmap(fn), lambda: (gen(3, "float32", batch=(2,)) + 3 * np.eye(3,
                                                                                              dtype=np.float32),),
             rtol_scale=50)
    for dt in ("float32", "complex64", "float64"):
        for kind in ("fft", "ifft", "rfft", "irfft", "fft2", "rfftn", "hfft"):
            if kind in ("rfft", "rfftn") and "complex" in dt:
                continue
            case(f"fft.{kind}.{dt}", getattr(jnp.fft, kind), lambda dt=dt: (values(dt, (4, 6), special=False),),
                 x64=needs_x64(dt), rtol_scale=20)


def _nn_random() -> None:
    import jax.numpy as jnp

    nn = {n: getattr(jax.nn, n) for n in (
        "relu", "gelu", "silu", "softplus", "sigmoid", "log_sigmoid", "softmax", "log_softmax", "elu",
        "leaky_relu", "celu", "selu", "glu", "hard_tanh", "relu6", "hard_sigmoid", "hard_swish",
        "standardize", "logsumexp", "mish", "squareplus", "sparse_plus", "sparse_sigmoid", "soft_sign",
        "tanh", "log1mexp") if hasattr(jax.nn, n)}
    nn["gelu_exact"] = lambda x: jax.nn.gelu(x, approximate=False)
    nn["one_hot"] = lambda x: jax.nn.one_hot(jnp.asarray(x, jnp.float32).astype(jnp.int32) % 5, 5)
    nn["softmax_grad"] = lambda x: jax.grad(lambda v: (jax.nn.softmax(v) ** 2).sum())(x)
    nn["gelu_grad"] = lambda x: jax.grad(lambda v: jax.nn.gelu(v).sum())(x)
    nn["dpa"] = lambda x: jax.nn.dot_product_attention(x[None, :, None, :4], x[None, :, None, 1:],
                                                       x[None, :, None, :4], is_causal=True)
    for fname, fn in nn.items():
        for dt in ("float32", "bf16", "float16", "float64"):
            case(f"nn.{fname}.{dt}", fn, lambda dt=dt: (values(dt, (4, 5)),), x64=needs_x64(dt))

    dists = {
        "normal": lambda k, dt: jax.random.normal(k, (3, 5), dt),
        "uniform": lambda k, dt: jax.random.uniform(k, (3, 5), dt, -2, 3),
        "bernoulli": lambda k, dt: jax.random.bernoulli(k, 0.3, (3, 5)),
        "randint": lambda k, dt: jax.random.randint(k, (3, 5), -5, 1000),
        "categorical": lambda k, dt: jax.random.categorical(k, jnp.arange(6, dtype=dt), shape=(9,)),
        "gumbel": lambda k, dt: jax.random.gumbel(k, (3, 5), dt),
        "permutation": lambda k, dt: jax.random.permutation(k, 10),
        "choice": lambda k, dt: jax.random.choice(k, 10, (4,), replace=False),
        "truncated_normal": lambda k, dt: jax.random.truncated_normal(k, -1, 2, (3, 5), dt),
        "gamma": lambda k, dt: jax.random.gamma(k, jnp.array([0.5, 1.0, 3.0], dt), (2, 3), dt),
        "beta": lambda k, dt: jax.random.beta(k, 2.0, 3.0, (4,), dt),
        "dirichlet": lambda k, dt: jax.random.dirichlet(k, jnp.ones(3, dt), (2,), dt),
        "poisson": lambda k, dt: jax.random.poisson(k, 3.0, (6,)),
        "exponential": lambda k, dt: jax.random.exponential(k, (5,), dt),
        "laplace": lambda k, dt: jax.random.laplace(k, (5,), dt),
        "t": lambda k, dt: jax.random.t(k, 3.0, (5,), dt),
        "cauchy": lambda k, dt: jax.random.cauchy(k, (5,), dt),
        "orthogonal": lambda k, dt: jax.random.orthogonal(k, 3, dtype=dt),
        "rademacher": lambda k, dt: jax.random.rademacher(k, (6,)),
        "ball": lambda k, dt: jax.random.ball(k, 3, shape=(2,), dtype=dt),
        "bits": lambda k, dt: jax.random.bits(k, (5,), jnp.uint8),
        "bits64": lambda k, dt: jax.random.bits(k, (3,), jnp.uint32),
        "split_fold": lambda k, dt: jax.random.key_data(jax.random.fold_in(jax.random.split(k, 3)[1], 7)),
        "mvn": lambda k, dt: jax.random.multivariate_normal(k, jnp.zeros(2, dt), jnp.eye(2, dtype=dt), (3,)),
        "binomial": lambda k, dt: jax.random.binomial(k, 10.0, 0.3, (5,), dt),
        "geometric": lambda k, dt: jax.random.geometric(k, 0.3, (5,)),
    }
    for impl in ("threefry2x32", "rbg", "unsafe_rbg"):
        for dname, fn in dists.items():
            for dt in ("float32", "bf16", "float64"):
                if dt != "float32" and dname in ("bernoulli", "randint", "permutation", "choice", "poisson",
                                                 "rademacher", "bits", "bits64", "split_fold", "geometric"):
                    continue
                case(f"random.{impl}.{dname}.{dt}",
                     lambda seed, fn=fn, impl=impl, dt=dt: fn(jax.random.key(seed, impl=impl), _dtype(dt)),
                     lambda: (np.uint32(42),), x64=needs_x64(dt), rtol_scale=5)


def _transforms() -> None:
    import jax.numpy as jnp
    from jax import lax

    x = lambda: (values("float32", (4, 5), special=False),)  # noqa: E731

    def f(v):
        return jnp.sum(jnp.tanh(v) * jnp.sin(v[::-1]) + jnp.cumsum(v, 1) ** 2) + jnp.max(v)

    @jax.custom_vjp
    def clip_grad(v):
        return jnp.sin(v)

    clip_grad.defvjp(lambda v: (jnp.sin(v), v), lambda v, g: (jnp.clip(g * jnp.cos(v), -0.1, 0.1),))

    @jax.custom_jvp
    def soft(v):
        return jnp.log1p(jnp.exp(v))

    soft.defjvp(lambda p, t: (soft(p[0]), t[0] * jax.nn.sigmoid(p[0])))

    progs = {
        "grad": jax.grad(f), "hessian": lambda v: jax.hessian(lambda u: f(u.reshape(4, 5)))(v.ravel()[:5]
                                                                                              .repeat(4)),
        "jvp": lambda v: jax.jvp(f, (v,), (jnp.ones_like(v),)),
        "vjp": lambda v: jax.vjp(jnp.sort, v)[1](v),
        "vmap_sort": jax.vmap(jnp.argsort), "vmap_cond": jax.vmap(lambda r: lax.cond(r[0] > 0, jnp.sin, jnp.cos, r)),
        "vmap_while": jax.vmap(lambda r: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + jnp.abs(c[1]).sum()
                                                                                         + 1, c[1] * 0.9),
                                                       (r[0], r))[1]),
        "scan": lambda v: lax.scan(lambda c, r: (c * 0.5 + r, jnp.tanh(c)), v[0], v),
        "scan_reverse_unroll": lambda v: lax.scan(lambda c, r: (c + r, c * r), v[0], v, reverse=True, unroll=2),
        "scan_grad": jax.grad(lambda v: lax.scan(lambda c, r: (jnp.sin(c) * r, c), v[0], v)[0].sum()),
        "fori": lambda v: lax.fori_loop(0, 7, lambda i, c: c.at[i % 4].add(i * c[(i + 1) % 4]), v),
        "fori_unrolled": lambda v: lax.fori_loop(0, 3, lambda i, c: c * 2 + i, v, unroll=True),
        "while_dyn": lambda v: lax.while_loop(lambda c: c[1].sum() < 100, lambda c: (c[0] + 1, c[1] * 1.5 + 1),
                                              (0, jnp.abs(v)))[0],
        "cond": lambda v: lax.cond(v.sum() > 0, lambda a: a * 2, lambda a: -a, v),
        "cond_index": lambda v: lax.switch(jnp.clip(v[0, 0].astype(int), -1, 5),
                                           [jnp.sin, jnp.cos, jnp.tanh, lambda a: a], v),
        "switch_neg": lambda v: lax.switch(-3, [jnp.sin, jnp.cos], v),
        "custom_vjp": jax.grad(lambda v: clip_grad(v).sum()), "custom_jvp": jax.grad(lambda v: soft(v).sum()),
        "remat": jax.grad(jax.checkpoint(lambda v: jnp.sin(jnp.sin(v)).sum())),
        "remat_policy": jax.grad(jax.checkpoint(lambda v: jnp.tanh(v @ v.T).sum(),
                                                policy=jax.checkpoint_policies.dots_saveable)),
        "map": lambda v: lax.map(lambda r: jnp.sort(r) * r[0], v),
        "map_batched": lambda v: lax.map(lambda r: r.sum(), v, batch_size=3),
        "jacfwd": jax.jacfwd(lambda v: jnp.sin(v[0]) * v[1]), "jacrev": jax.jacrev(lambda v: jnp.cumprod(v[0])),
        "nested_scan_cond": lambda v: lax.scan(lambda c, r: (lax.cond(c.sum() > 0, lambda: c - r, lambda: c + r),
                                                             None), v[0], v)[0],
        "while_with_gather": lambda v: lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1].at[c[0]]
                                                      .set(c[1][3 - c[0]])), (0, v))[1],
        "optimization_barrier": lambda v: lax.optimization_barrier((v, v * 2)),
        "stop_gradient": jax.grad(lambda v: (lax.stop_gradient(v) * v).sum()),
        "cumsum_grad": jax.grad(lambda v: (jnp.cumsum(v, 0) ** 2).sum()),
        "scatter_grad": jax.grad(lambda v: (v.at[jnp.array([0, 0, 2])].multiply(v[1:4]) ** 2).sum()),
        "gather_grad": jax.grad(lambda v: (v[jnp.array([0, 0, 3]), 1:] ** 3).sum()),
        "sort_grad": jax.grad(lambda v: (jnp.sort(v, 1) * jnp.arange(5.0)).sum()),
        "pow_grad": jax.grad(lambda v: (jnp.abs(v) ** v).sum()),
        "max_grad": jax.grad(lambda v: jnp.max(jnp.round(v), 1).sum()),
        "reduce_prod_grad": jax.grad(lambda v: jnp.prod(v, 1).sum()),
        "conv_grad": jax.grad(lambda v: (lax.conv_general_dilated(v[None, None], v[None, None, :3, :3], (1, 2),
                                                                  "SAME") ** 2).sum()),
        "cond_grad": jax.grad(lambda v: lax.cond(v[0, 0] > 0, lambda a: (a ** 2).sum(), lambda a: a.sum(), v)),
        "while_fori_grad": jax.grad(lambda v: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * v, v).sum()),
        "pure_callback_free": lambda v: jnp.linalg.norm(v, axis=1, ord=3),
        "dtype_mix": lambda v: (v.astype(jnp.bfloat16) @ v.T.astype(jnp.bfloat16)).astype(jnp.float16),
        "int_matmul": lambda v: (v * 10).astype(jnp.int8) @ (v.T * 10).astype(jnp.int8),
        "int_matmul_pref": lambda v: jnp.matmul((v * 10).astype(jnp.int8), (v.T * 10).astype(jnp.int8),
                                                preferred_element_type=jnp.int32),
        "u8_matmul": lambda v: jnp.abs(v * 10).astype(jnp.uint8) @ jnp.abs(v.T * 10).astype(jnp.uint8),
        "bool_matmul": lambda v: (v > 0).astype(jnp.int32) @ (v.T > 0).astype(jnp.int32),
        "conv_int": lambda v: lax.conv((v * 10).astype(jnp.int32)[None, None], jnp.ones((1, 1, 2, 2), jnp.int32),
                                       (1, 1), "VALID"),
        "conv_f16": lambda v: lax.conv(v.astype(jnp.float16)[None, None], v[None, None, :2, :2]
                                       .astype(jnp.float16), (1, 1), "SAME"),
        "conv_bf16": lambda v: lax.conv(v.astype(jnp.bfloat16)[None, None], v[None, None, :2, :3]
                                        .astype(jnp.bfloat16), (2, 1), "SAME"),
        "conv_c64": lambda v: lax.conv((v + 1j * v[::-1]).astype(jnp.complex64)[None, None],
                                       (v[:2, :2] - 1j).astype(jnp.complex64)[None, None], (1, 1), "SAME"),
        "dot_general_batch": lambda v: lax.dot_general(v.reshape(2, 2, 5), v.reshape(2, 5, 2),
                                                       (((2,), (1,)), ((0,), (0,)))),
        "matvec_f64": lambda v: v.astype(jnp.float32) @ v[0],
    }
    for pname, fn in progs.items():
        case(f"transform.{pname}", fn, x)


GENERATORS = (_elementwise, _reductions, _indexing, _shape_ops, _linalg, _nn_random, _transforms)
