"""The single-op families of the analysis sweep's catalog (``hloscope.testing.sweep``).

Each family function returns sized ``hloscope.testing.cases.Case`` objects (``sweep_case``): a jax function and a maker of its arguments at
a size ``n``, over the dtypes the op accepts (f32, bf16, f16, f64, ints, unsigned, complex).
Whole programs, collectives and the seeded random generators are in ``programs.py``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hloscope.testing.cases import Case

__all__ = ["COMPLEX", "FLOATS", "INTS", "array_of", "needs_x64", "op_cases", "sweep_case"]


def sweep_case(name: str, fn: Callable[..., Any], make: Callable[[int], tuple[Any, ...]], *,
               x64: bool = False, pmapped: bool = False, jit: dict[str, Any] | None = None,
               n: int = 8) -> Case:
    """A sized ``Case``: ``fn(*make(n))`` under ``jax.jit(fn, **jit)``, or as is when ``fn`` is
    already ``pmapped`` (mode ``"pmapped"``)."""
    return Case(name, fn, make, mode="pmapped" if pmapped else "jit",
                jit_kwargs=(lambda: dict(jit)) if jit else None,
                config=(("jax_enable_x64", True),) if x64 else (), size=n)


# --------------------------------------------------------------------------------------------
# Argument makers


def array_of(dtype: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Seeded values of numpy/ml_dtypes type ``dtype`` and ``shape``."""
    import ml_dtypes

    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        lo = 0 if dtype.startswith("u") else -5
        return rng.integers(lo, 6, shape).astype(dtype)
    if dtype.startswith("complex"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    x = rng.standard_normal(shape)
    if dtype == "bfloat16":
        return x.astype(ml_dtypes.bfloat16)
    return x.astype(dtype)


def needs_x64(dtype: str) -> bool:
    """Whether jax needs 64-bit types enabled for ``dtype``."""
    return dtype in ("float64", "int64", "uint64", "complex128")


FLOATS = ("float32", "bfloat16", "float16", "float64")
INTS = ("int32", "int8", "uint8", "int64")
COMPLEX = ("complex64", "complex128")


# --------------------------------------------------------------------------------------------
# The catalog


def _unary_cases() -> list[Case]:
    import jax.numpy as jnp
    from jax import lax

    float_fns: dict[str, Callable[[Any], Any]] = {
        "exp": jnp.exp, "log": lambda x: jnp.log(jnp.abs(x) + 1), "sin": jnp.sin, "cos": jnp.cos,
        "tan": jnp.tan, "tanh": jnp.tanh, "sqrt": lambda x: jnp.sqrt(jnp.abs(x)), "rsqrt": lambda x: lax.rsqrt(jnp.abs(x) + 1),
        "cbrt": lax.cbrt, "expm1": jnp.expm1, "log1p": lambda x: jnp.log1p(jnp.abs(x)),
        "logistic": lax.logistic, "erf": lax.erf, "erf_inv": lambda x: lax.erf_inv(jnp.tanh(x)),
        "atan": jnp.arctan, "asin": lambda x: jnp.arcsin(jnp.tanh(x)), "acosh": lambda x: jnp.arccosh(jnp.abs(x) + 1),
        "sinh": jnp.sinh, "floor_ceil_round": lambda x: jnp.floor(x) + jnp.ceil(x) + jnp.round(x),
        "abs_neg_sign": lambda x: jnp.abs(x) - x + jnp.sign(x), "is_finite": lambda x: jnp.isfinite(x),
        "lgamma_digamma": lambda x: lax.lgamma(jnp.abs(x) + 1) + lax.digamma(jnp.abs(x) + 1),
        "square_reciprocal": lambda x: x * x + 1 / (jnp.abs(x) + 1), "pow_int": lambda x: lax.integer_pow(x, 3),
        "pow_float": lambda x: jnp.power(jnp.abs(x), 1.7), "clip": lambda x: jnp.clip(x, -0.5, 0.5),
        "nan_to_num": lambda x: jnp.nan_to_num(x / x), "reduce_precision": lambda x: lax.reduce_precision(x, 5, 10),
    }
    int_fns: dict[str, Callable[[Any], Any]] = {
        "not_popcnt_clz": lambda x: ~x + lax.population_count(x) + lax.clz(x),
        "abs_neg_sign": lambda x: jnp.abs(x) - x + jnp.sign(x),
        "shift": lambda x: (x << 2) ^ (x >> 1),
        "div_rem_const": lambda x: x // 3 + x % 5,
        "to_float": lambda x: x.astype(jnp.float32) * 0.5,
    }
    complex_fns: dict[str, Callable[[Any], Any]] = {
        "exp_log": lambda z: jnp.exp(z) + jnp.log(z + 3), "abs_angle": lambda z: jnp.abs(z) + jnp.angle(z),
        "conj_real_imag": lambda z: (z * jnp.conj(z)).real + z.imag, "sqrt_tanh": lambda z: jnp.sqrt(z) + jnp.tanh(z),
    }
    cases = []
    for name, fn in float_fns.items():
        for dt in FLOATS:
            cases.append(sweep_case(f"unary.{name}.{dt}", fn, lambda n, dt=dt: (array_of(dt, (n, n + 3)),), x64=needs_x64(dt)))
    for name, fn in int_fns.items():
        for dt in INTS:
            cases.append(sweep_case(f"unary.{name}.{dt}", fn, lambda n, dt=dt: (array_of(dt, (n, n + 3)),), x64=needs_x64(dt)))
    for name, fn in complex_fns.items():
        for dt in COMPLEX:
            cases.append(sweep_case(f"unary.{name}.{dt}", fn, lambda n, dt=dt: (array_of(dt, (n, n + 3)),), x64=needs_x64(dt)))
    return cases


def _binary_cases() -> list[Case]:
    import jax.numpy as jnp
    from jax import lax

    fns: dict[str, tuple[Callable[[Any, Any], Any], tuple[str, ...]]] = {
        "add_mul_sub": (lambda a, b: a * b + a - b, FLOATS + INTS + COMPLEX),
        "div": (lambda a, b: a / (b * b + 1), FLOATS + COMPLEX),
        "int_div_rem": (lambda a, b: a // (b * b + 1) + a % (b * b + 1), INTS),
        "max_min": (lambda a, b: jnp.maximum(a, b) - jnp.minimum(a, b), FLOATS + INTS),
        "atan2_pow": (lambda a, b: jnp.arctan2(a, b) + jnp.abs(a) ** b, FLOATS),
        "compare_select": (lambda a, b: jnp.where(a > b, a, b) + (a == b), FLOATS + INTS),
        "bitwise": (lambda a, b: (a & b) | (a ^ ~b), INTS + ("bool",)),
        "rem_float": (lambda a, b: lax.rem(a, b + 10), FLOATS),
        "logaddexp": (jnp.logaddexp, FLOATS),
        "broadcast_add": (lambda a, b: a[:, None, :] + b[None, :, :], FLOATS + INTS),
        "complex_build": (lambda a, b: jnp.abs(lax.complex(a, b) ** 2), ("float32", "float64")),
    }
    cases = []
    for name, (fn, dtypes) in fns.items():
        for dt in dtypes:
            cases.append(sweep_case(f"binary.{name}.{dt}", fn,
                              lambda n, dt=dt: (array_of(dt, (n, n + 1)), array_of(dt, (n, n + 1), 1)), x64=needs_x64(dt)))
    return cases


def _reduction_cases() -> list[Case]:
    import jax
    import jax.numpy as jnp

    fns: dict[str, tuple[Callable[[Any], Any], tuple[str, ...]]] = {
        "sum0": (lambda x: x.sum(0), FLOATS + INTS + COMPLEX),
        "sum_all": (lambda x: x.sum(), FLOATS + INTS),
        "max1": (lambda x: x.max(1), FLOATS + INTS),
        "min_prod": (lambda x: x.min(0) + x.prod(1).sum(), ("float32", "int32", "bfloat16")),
        "mean_var": (lambda x: x.mean(-1) + x.var(0).sum(), FLOATS),
        "argmax_argmin": (lambda x: jnp.argmax(x, 0) + jnp.argmin(x, 1).sum(), FLOATS + INTS),
        "logsumexp": (lambda x: jax.nn.logsumexp(x, axis=1), FLOATS),
        "any_all": (lambda x: jnp.any(x > 0, 0) | jnp.all(x < 2, 0), FLOATS + ("bool",)),
        "norm": (lambda x: jnp.linalg.norm(x, axis=0), ("float32", "float64", "complex64")),
        "cumsum": (lambda x: jnp.cumsum(x, 0), FLOATS + INTS),
        "cumprod_cummax": (lambda x: jnp.cumprod(x, 1) + jax.lax.cummax(x, 0), ("float32", "int32")),
        "sum_3d": (lambda x: x.reshape(x.shape[0], -1, 2).sum((0, 2)), ("float32", "bfloat16")),
    }
    cases = []
    for name, (fn, dtypes) in fns.items():
        for dt in dtypes:
            cases.append(sweep_case(f"reduce.{name}.{dt}", fn, lambda n, dt=dt: (array_of(dt, (n, 2 * n)),), x64=needs_x64(dt)))
    return cases


def _movement_cases() -> list[Case]:
    import jax.numpy as jnp
    from jax import lax

    fns: dict[str, Callable[..., Any]] = {
        "transpose": lambda x: x.T + 1,
        "transpose3": lambda x: jnp.transpose(x.reshape(2, -1, x.shape[1]), (2, 0, 1)) * 2,
        "reshape_broadcast": lambda x: jnp.broadcast_to(x.reshape(-1)[None], (3, x.size)) + 1,
        "concat": lambda x: jnp.concatenate([x, x * 2, x[:, :1]], 1),
        "pad": lambda x: jnp.pad(x, ((1, 2), (0, 3))) * 2,
        "pad_interior_negative": lambda x: lax.pad(x, jnp.zeros((), x.dtype), ((1, 2, 1), (-1, 2, 0))),
        "slice_strided": lambda x: x[1::2, ::3] + x[:1, :1],
        "reverse": lambda x: x[::-1, ::-1] + x,
        "roll": lambda x: jnp.roll(x, 3, axis=1),
        "tile_repeat": lambda x: jnp.tile(x, (2, 1)) + jnp.repeat(x, 2, axis=0),
        "dynamic_slice": lambda x, i: lax.dynamic_slice(x, (i, i * 0), (2, x.shape[1])) * 3,
        "dynamic_update_slice": lambda x, i: lax.dynamic_update_slice(x, x[:2] * 2, (i, i // i)),
        "take": lambda x, i: jnp.take(x, jnp.array([0, 2, 1, 3]) + i, axis=0),
        "iota_eye": lambda x: x + jnp.eye(x.shape[0], x.shape[1], dtype=x.dtype) + jnp.arange(x.shape[1], dtype=x.dtype),
        "tril_triu": lambda x: jnp.tril(x) - jnp.triu(x, 1),
        "flip_swap": lambda x: jnp.swapaxes(x[None], 0, 2).sum(1),
        "expand_squeeze_copy": lambda x: jnp.squeeze(x[:, None, :] * 1, 1).copy(),
    }
    cases = []
    for name, fn in fns.items():
        for dt in ("float32", "bfloat16", "int8", "float64"):
            needs_i = fn.__code__.co_argcount == 2

            def make(n: int, dt: str = dt, needs_i: bool = needs_i) -> tuple[Any, ...]:
                x = array_of(dt, (n, n + 2))
                return (x, np.int32(1)) if needs_i else (x,)

            cases.append(sweep_case(f"move.{name}.{dt}", fn, make, x64=needs_x64(dt)))
    return cases


def _dot_cases() -> list[Case]:
    import jax.numpy as jnp
    from jax import lax

    cases = []
    for dt in ("float32", "bfloat16", "float16", "float64", "complex64", "int32"):
        cases.append(sweep_case(f"dot.matmul.{dt}", lambda a, b: a @ b,
                          lambda n, dt=dt: (array_of(dt, (n, 2 * n)), array_of(dt, (2 * n, n + 1), 1)), x64=needs_x64(dt)))
        cases.append(sweep_case(f"dot.matvec.{dt}", lambda a, b: a @ b[:, 0],
                          lambda n, dt=dt: (array_of(dt, (n, 2 * n)), array_of(dt, (2 * n, 3), 1)), x64=needs_x64(dt)))
        cases.append(sweep_case(f"dot.batched.{dt}", lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
                          lambda n, dt=dt: (array_of(dt, (3, n, n)), array_of(dt, (3, n, 5), 1)), x64=needs_x64(dt)))
        cases.append(sweep_case(f"dot.outer_inner.{dt}", lambda a, b: jnp.outer(a[0], b[0]).sum() + jnp.vdot(a[0], b[0]),
                          lambda n, dt=dt: (array_of(dt, (2, n)), array_of(dt, (2, n), 1)), x64=needs_x64(dt)))
    for dt, pref in (("int8", jnp.int32), ("bfloat16", jnp.float32), ("float16", jnp.float32), ("int8", jnp.float32)):
        cases.append(sweep_case(f"dot.preferred.{dt}.{np.dtype(pref).name}",
                          lambda a, b, pref=pref: lax.dot(a, b, preferred_element_type=pref),
                          lambda n, dt=dt: (array_of(dt, (n, 2 * n)), array_of(dt, (2 * n, n), 1))))
    cases.append(sweep_case("dot.einsum_multi_contract", lambda a, b: jnp.einsum("abcd,cdbe->ae", a, b),
                      lambda n: (array_of("float32", (n, 3, 4, 2)), array_of("float32", (4, 2, 3, 5), 1))))
    cases.append(sweep_case("dot.chain_bias_act", lambda x, w1, w2: jnp.tanh(jnp.maximum(x @ w1 + 1, 0) @ w2),
                      lambda n: (array_of("float32", (n, 16)), array_of("float32", (16, 32), 1), array_of("float32", (32, 4), 2))))
    return cases


def _conv_cases() -> list[Case]:
    import jax
    from jax import lax

    def conv(lhs_spec: str, **kw: Any) -> Callable[..., Any]:
        rhs_spec = {"NCH": "OIH", "NCHW": "OIHW", "NHWC": "HWIO", "NDHWC": "DHWIO"}[lhs_spec]
        return lambda x, w: lax.conv_general_dilated(x, w, dimension_numbers=(lhs_spec, rhs_spec, lhs_spec), **kw)

    cases = []
    variants: dict[str, tuple[Callable[..., Any], Callable[[int, str], tuple[Any, ...]]]] = {
        "1d": (conv("NCH", window_strides=(1,), padding="SAME"),
               lambda n, dt: (array_of(dt, (2, 3, 4 * n)), array_of(dt, (4, 3, 5), 1))),
        "2d_same": (conv("NCHW", window_strides=(1, 1), padding="SAME"),
                    lambda n, dt: (array_of(dt, (2, 3, n, n)), array_of(dt, (4, 3, 3, 3), 1))),
        "2d_nhwc_strided": (conv("NHWC", window_strides=(2, 2), padding="VALID"),
                            lambda n, dt: (array_of(dt, (2, n + 1, n + 1, 3)), array_of(dt, (3, 3, 3, 5), 1))),
        "2d_dilated": (conv("NCHW", window_strides=(1, 1), padding=((2, 1), (1, 2)), rhs_dilation=(2, 1),
                            lhs_dilation=(1, 2)),
                       lambda n, dt: (array_of(dt, (1, 2, n, n)), array_of(dt, (3, 2, 3, 3), 1))),
        "2d_grouped": (conv("NCHW", window_strides=(1, 1), padding="SAME", feature_group_count=2),
                       lambda n, dt: (array_of(dt, (2, 4, n, n)), array_of(dt, (6, 2, 3, 3), 1))),
        "depthwise": (conv("NHWC", window_strides=(1, 1), padding="SAME", feature_group_count=4),
                      lambda n, dt: (array_of(dt, (1, n, n, 4)), array_of(dt, (3, 3, 1, 4), 1))),
        "3d": (conv("NDHWC", window_strides=(1, 1, 1), padding="SAME"),
               lambda n, dt: (array_of(dt, (1, 4, n // 2 + 2, n // 2 + 2, 2)), array_of(dt, (2, 3, 3, 2, 3), 1))),
        "1x1": (conv("NHWC", window_strides=(1, 1), padding="VALID"),
                lambda n, dt: (array_of(dt, (2, n, n, 8)), array_of(dt, (1, 1, 8, 16), 1))),
    }
    for name, (fn, make) in variants.items():
        for dt in ("float32", "bfloat16", "float16"):
            cases.append(sweep_case(f"conv.{name}.{dt}", fn, lambda n, make=make, dt=dt: make(n, dt)))
        cases.append(sweep_case(f"conv.{name}.grad", lambda x, w, fn=fn: jax.grad(lambda x, w: (fn(x, w) ** 2).sum(), (0, 1))(x, w),
                          lambda n, make=make: make(n, "float32")))
    cases.append(sweep_case("conv.transpose", lambda x, w: lax.conv_transpose(x, w, (2, 2), "SAME",
                                                                        dimension_numbers=("NHWC", "HWIO", "NHWC")),
                      lambda n: (array_of("float32", (1, n, n, 3)), array_of("float32", (3, 3, 3, 4), 1))))
    cases.append(sweep_case("conv.f64", conv("NCHW", window_strides=(1, 1), padding="SAME"),
                      lambda n: (array_of("float64", (1, 2, n, n)), array_of("float64", (2, 2, 3, 3), 1)), x64=True))
    return cases


def _pool_cases() -> list[Case]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    maxpool = lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")  # noqa: E731
    avgpool = lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME") / 9  # noqa: E731
    cases = []
    for dt in ("float32", "bfloat16"):
        cases.append(sweep_case(f"pool.max.{dt}", maxpool, lambda n, dt=dt: (array_of(dt, (2, n, n, 3)),)))
        cases.append(sweep_case(f"pool.avg.{dt}", avgpool, lambda n, dt=dt: (array_of(dt, (2, n, n, 3)),)))
    cases.append(sweep_case("pool.max.grad", jax.grad(lambda x: maxpool(x).sum()), lambda n: (array_of("float32", (2, n, n, 3)),)))
    cases.append(sweep_case("pool.avg.grad", jax.grad(lambda x: (avgpool(x) ** 2).sum()), lambda n: (array_of("float32", (2, n, n, 3)),)))
    cases.append(sweep_case("pool.int_max", lambda x: lax.reduce_window(x, jnp.iinfo(jnp.int32).min, lax.max, (2, 3), (1, 2), "SAME"),
                      lambda n: (array_of("int32", (n, 2 * n)),)))
    return cases


def _sort_cases() -> list[Case]:
    import jax.numpy as jnp
    from jax import lax

    cases = []
    for dt in ("float32", "bfloat16", "int32", "uint8", "float64"):
        cases.append(sweep_case(f"sort.sort.{dt}", lambda x: jnp.sort(x, axis=-1), lambda n, dt=dt: (array_of(dt, (4, 4 * n)),),
                          x64=needs_x64(dt)))
        cases.append(sweep_case(f"sort.argsort.{dt}", lambda x: jnp.argsort(x, axis=0), lambda n, dt=dt: (array_of(dt, (4 * n, 3)),),
                          x64=needs_x64(dt)))
        cases.append(sweep_case(f"sort.top_k.{dt}", lambda x: lax.top_k(x, 3), lambda n, dt=dt: (array_of(dt, (3, 4 * n)),),
                          x64=needs_x64(dt)))
    cases.append(sweep_case("sort.multi_key", lambda a, b, c: lax.sort((a, b, c), num_keys=2),
                      lambda n: (array_of("int32", (4 * n,)), array_of("float32", (4 * n,), 1), array_of("float32", (4 * n,), 2))))
    cases.append(sweep_case("sort.unique_like", lambda x: jnp.diff(jnp.sort(x)) != 0, lambda n: (array_of("int32", (4 * n,)),)))
    cases.append(sweep_case("sort.median", lambda x: jnp.median(x, axis=1), lambda n: (array_of("float32", (3, 4 * n)),)))
    return cases


def _index_cases() -> list[Case]:
    import jax
    import jax.numpy as jnp

    def idx(n: int, k: int, seed: int = 3) -> np.ndarray:
        return np.random.default_rng(seed).integers(0, n, k).astype(np.int32)

    cases = []
    for dt in ("float32", "bfloat16", "int32", "complex64"):
        cases.append(sweep_case(f"index.gather_rows.{dt}", lambda x, i: x[i], lambda n, dt=dt: (array_of(dt, (4 * n, 5)), idx(4 * n, n))))
        cases.append(sweep_case(f"index.scatter_set.{dt}", lambda x, i: x.at[i].set(x[0]),
                          lambda n, dt=dt: (array_of(dt, (4 * n, 5)), idx(4 * n, n))))
        cases.append(sweep_case(f"index.scatter_add.{dt}", lambda x, i, u: x.at[i].add(u),
                          lambda n, dt=dt: (array_of(dt, (4 * n, 5)), idx(4 * n, n), array_of(dt, (n, 5), 1))))
    for mode in ("clip", "fill", "drop"):
        cases.append(sweep_case(f"index.gather_mode.{mode}", lambda x, i, mode=mode: x.at[i].get(mode=mode, fill_value=0)
                          if mode == "fill" else x.at[i].get(mode=mode),
                          lambda n: (array_of("float32", (n, 6)), idx(2 * n, n))))
    for op in ("mul", "min", "max"):
        cases.append(sweep_case(f"index.scatter_{op}", lambda x, i, u, op=op: getattr(x.at[i], op)(u),
                          lambda n: (array_of("float32", (n, 6)), idx(n, 2 * n), array_of("float32", (2 * n, 6), 1))))
    cases.append(sweep_case("index.gather_2d", lambda x, i, j: x[i, j], lambda n: (array_of("float32", (n, n + 1)), idx(n, 7), idx(n, 7, 4))))
    cases.append(sweep_case("index.scatter_2d_dups", lambda x, i, j, u: x.at[i, j].add(u),
                      lambda n: (array_of("float32", (n, n)), idx(n, 9), idx(n, 9, 4), array_of("float32", (9,), 1))))
    cases.append(sweep_case("index.vmap_gather", jax.vmap(lambda r, i: r[i]), lambda n: (array_of("float32", (3, 4 * n)), np.stack([idx(4 * n, n, s) for s in range(3)]))))
    cases.append(sweep_case("index.one_hot", lambda i: jax.nn.one_hot(i, 10), lambda n: (idx(10, 4 * n),)))
    cases.append(sweep_case("index.boolean_where", lambda x: jnp.where(x > 0, x, 0).sum(0), lambda n: (array_of("float32", (4 * n, 3)),)))
    cases.append(sweep_case("index.gather_grad", jax.grad(lambda x, i: (x[i] ** 2).sum()), lambda n: (array_of("float32", (4 * n, 5)), idx(4 * n, n))))
    cases.append(sweep_case("index.segment_sum", lambda x, s: jax.ops.segment_sum(x, s, num_segments=5),
                      lambda n: (array_of("float32", (4 * n, 3)), idx(5, 4 * n))))
    return cases


def _fft_cases() -> list[Case]:
    import jax.numpy as jnp

    fns: dict[str, Callable[[Any], Any]] = {
        "fft": lambda x: jnp.fft.fft(x), "ifft": lambda x: jnp.fft.ifft(x), "rfft": lambda x: jnp.fft.rfft(x.real),
        "irfft": lambda x: jnp.fft.irfft(x), "fft2": lambda x: jnp.fft.fft2(x), "rfftn": lambda x: jnp.fft.rfftn(x.real),
        "fft_odd": lambda x: jnp.fft.fft(x[:, :-1]),
    }
    cases = []
    for name, fn in fns.items():
        for dt in COMPLEX:
            cases.append(sweep_case(f"fft.{name}.{dt}", fn, lambda n, dt=dt: (array_of(dt, (4, 2 * n)),), x64=needs_x64(dt)))
    return cases


def _linalg_cases() -> list[Case]:
    import jax
    import jax.numpy as jnp

    spd = lambda a: a @ a.T + a.shape[0] * jnp.eye(a.shape[0], dtype=a.dtype)  # noqa: E731
    fns: dict[str, Callable[[Any], Any]] = {
        "cholesky": lambda a: jnp.linalg.cholesky(spd(a)),
        "qr": lambda a: jnp.linalg.qr(a),
        "svd": lambda a: jnp.linalg.svd(a),
        "svd_values": lambda a: jnp.linalg.svd(a, compute_uv=False),
        "eigh": lambda a: jnp.linalg.eigh(spd(a)),
        "lu": lambda a: jax.scipy.linalg.lu(a),
        "inv": lambda a: jnp.linalg.inv(spd(a)),
        "det_slogdet": lambda a: jnp.linalg.det(spd(a)) + jnp.linalg.slogdet(spd(a))[1],
        "solve": lambda a: jnp.linalg.solve(spd(a), a),
        "triangular_solve": lambda a: jax.scipy.linalg.solve_triangular(spd(a), a, lower=True),
        "eig": lambda a: jnp.linalg.eigvals(a),
        "pinv": lambda a: jnp.linalg.pinv(a),
        "batched_cholesky": lambda a: jnp.linalg.cholesky(jax.vmap(spd)(jnp.stack([a, a * 2]))),
    }
    cases = []
    for name, fn in fns.items():
        for dt in ("float32", "float64", "complex64"):
            if name == "eig" and dt != "float32":
                continue
            cases.append(sweep_case(f"linalg.{name}.{dt}", fn, lambda n, dt=dt: (array_of(dt, (n, n)),), x64=needs_x64(dt)))
    return cases


def _control_cases() -> list[Case]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    def scan_rnn(h, xs, w):
        def step(h, x):
            y = jnp.tanh(h @ w + x)
            return y, y

        return lax.scan(step, h, xs)

    def scan_reverse_unroll(xs):
        return lax.scan(lambda c, x: (c * 0.5 + x, c.sum()), jnp.zeros(xs.shape[1:]), xs, reverse=True, unroll=2)

    def fori_dus(x):
        def body(i, c):
            buf, acc = c
            return lax.dynamic_update_slice(buf, jnp.sin(acc)[None] * i, (i, 0)), acc + 1

        return lax.fori_loop(0, 6, body, (jnp.zeros((6, x.shape[0])), x))

    def while_dyn(x, k):
        return lax.while_loop(lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] @ c[1] / 10), (0, x))[1]

    def while_pred(x):
        return lax.while_loop(lambda c: c.sum() < 1e3, lambda c: c * 2 + 1, jnp.abs(x))

    def cond2(p, x):
        return lax.cond(p > 0, lambda x: jnp.exp(x) @ x, lambda x: x * 2, x)

    def cond_tuple(p, x):
        return lax.cond(p > 0, lambda x: (x @ x, jnp.sin(x).sum()), lambda x: (x.T, x.max()), x)

    def switch4(i, x):
        return lax.switch(i, [jnp.sin, jnp.cos, lambda x: x @ x, lambda x: jnp.sort(x, 0)], x)

    def nested(x):
        return lax.fori_loop(0, 3, lambda i, c: lax.fori_loop(0, 4, lambda j, d: jnp.tanh(d) + j, c) * i, x)

    def scan_in_cond(p, xs):
        return lax.cond(p > 0, lambda xs: lax.scan(lambda c, x: (c + x, c), xs[0], xs)[0], lambda xs: xs[0], xs)

    def map_fn(xs):
        return lax.map(lambda x: jnp.linalg.norm(x) * x, xs)

    def checkpointed(w, x):
        f = jax.checkpoint(lambda w, x: jnp.tanh(jnp.tanh(x @ w) @ w))
        return jax.grad(lambda w: f(w, x).sum())(w)

    def scan_grad(w, xs):
        def loss(w):
            return lax.scan(lambda h, x: (jnp.tanh(h @ w + x), None), jnp.zeros(xs.shape[1:]), xs)[0].sum()

        return jax.grad(loss)(w)

    f = "float32"
    return [
        sweep_case("control.scan_rnn", scan_rnn, lambda n: (array_of(f, (2, n)), array_of(f, (5, 2, n), 1), array_of(f, (n, n), 2))),
        sweep_case("control.scan_reverse_unroll", scan_reverse_unroll, lambda n: (array_of(f, (6, n)),)),
        sweep_case("control.fori_dus", fori_dus, lambda n: (array_of(f, (n,)),)),
        sweep_case("control.while_dynamic", while_dyn, lambda n: (array_of(f, (n, n)), np.int32(3))),
        sweep_case("control.while_pred", while_pred, lambda n: (array_of(f, (n,)),)),
        sweep_case("control.cond", cond2, lambda n: (np.float32(1), array_of(f, (n, n)))),
        sweep_case("control.cond_tuple", cond_tuple, lambda n: (np.float32(-1), array_of(f, (n, n)))),
        sweep_case("control.switch4", switch4, lambda n: (np.int32(2), array_of(f, (n, n)))),
        sweep_case("control.nested_fori", nested, lambda n: (array_of(f, (n,)),)),
        sweep_case("control.scan_in_cond", scan_in_cond, lambda n: (np.float32(1), array_of(f, (4, n)))),
        sweep_case("control.map", map_fn, lambda n: (array_of(f, (5, n)),)),
        sweep_case("control.checkpoint_grad", checkpointed, lambda n: (array_of(f, (n, n)), array_of(f, (3, n), 1))),
        sweep_case("control.scan_grad", scan_grad, lambda n: (array_of(f, (n, n)), array_of(f, (4, 2, n), 1))),
        sweep_case("control.scan_bf16", lambda xs: lax.scan(lambda c, x: (c + x.astype(jnp.float32), c.astype(jnp.bfloat16)),
                                                      jnp.zeros(xs.shape[1:]), xs),
             lambda n: (array_of("bfloat16", (5, n)),)),
    ]


def _nn_cases() -> list[Case]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    def attention(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, is_causal=True)

    def layer_norm_grad(x, g):
        def loss(g):
            m = x.mean(-1, keepdims=True)
            return (((x - m) * lax.rsqrt(x.var(-1, keepdims=True) + 1e-5) * g) ** 2).sum()

        return jax.grad(loss)(g)

    def mlp_train(w1, w2, x, y):
        def loss(p):
            return jnp.mean((jax.nn.gelu(x @ p[0]) @ p[1] - y) ** 2)

        g = jax.grad(loss)((w1, w2))
        return w1 - 0.1 * g[0], w2 - 0.1 * g[1]

    def cross_entropy(logits, labels):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=1))

    f = "float32"
    cases = []
    for name, fn in {"relu": jax.nn.relu, "gelu": jax.nn.gelu, "gelu_exact": lambda x: jax.nn.gelu(x, approximate=False),
                     "silu": jax.nn.silu, "softplus": jax.nn.softplus, "softmax": jax.nn.softmax,
                     "log_softmax": jax.nn.log_softmax, "elu_selu": lambda x: jax.nn.elu(x) + jax.nn.selu(x),
                     "standardize": jax.nn.standardize}.items():
        for dt in ("float32", "bfloat16", "float16"):
            cases.append(sweep_case(f"nn.{name}.{dt}", fn, lambda n, dt=dt: (array_of(dt, (n, 3 * n)),)))
        cases.append(sweep_case(f"nn.{name}.grad", jax.grad(lambda x, fn=fn: (fn(x) ** 2).sum()), lambda n: (array_of(f, (n, 3 * n)),)))
    cases += [
        sweep_case("nn.attention", attention, lambda n: tuple(array_of(f, (2, n, 2, 8), s) for s in range(3))),
        sweep_case("nn.attention_bf16", attention, lambda n: tuple(array_of("bfloat16", (2, n, 2, 8), s) for s in range(3))),
        sweep_case("nn.layer_norm_grad", layer_norm_grad, lambda n: (array_of(f, (n, 32)), array_of(f, (32,), 1))),
        sweep_case("nn.mlp_train", mlp_train, lambda n: (array_of(f, (16, 32)), array_of(f, (32, 4), 1), array_of(f, (n, 16), 2),
                                                   array_of(f, (n, 4), 3))),
        sweep_case("nn.cross_entropy", cross_entropy, lambda n: (array_of(f, (n, 10)), np.arange(n, dtype=np.int32) % 10)),
        sweep_case("nn.vmap_matvec", jax.vmap(lambda w, x: jnp.tanh(w @ x), in_axes=(None, 0)),
             lambda n: (array_of(f, (n, n)), array_of(f, (5, n), 1))),
        sweep_case("nn.jacfwd", jax.jacfwd(lambda x: jnp.sin(x) * x.sum()), lambda n: (array_of(f, (n,)),)),
        sweep_case("nn.hessian", jax.hessian(lambda x: (jnp.tanh(x) ** 2).sum()), lambda n: (array_of(f, (n,)),)),
    ]
    return cases


def _random_number_cases() -> list[Case]:
    import jax

    def key(impl: str) -> Callable[[int], tuple[Any, ...]]:
        return lambda n: (np.asarray(jax.random.key_data(jax.random.key(0, impl=impl))),)

    cases = []
    for impl in ("threefry2x32", "rbg", "unsafe_rbg"):
        def normal(k: Any, impl: str = impl, n: int = 8) -> Any:
            return jax.random.normal(jax.random.wrap_key_data(k, impl=impl), (n, 16))

        def misc(k: Any, impl: str = impl) -> Any:
            kk = jax.random.wrap_key_data(k, impl=impl)
            a, b = jax.random.split(kk)
            return (jax.random.bernoulli(a, 0.3, (40,)), jax.random.permutation(b, 20),
                    jax.random.categorical(a, np.zeros((4, 7), np.float32)))

        cases.append(sweep_case(f"random.normal.{impl}", normal, key(impl)))
        cases.append(sweep_case(f"random.misc.{impl}", misc, key(impl)))
    return cases


def op_cases() -> list[Case]:
    """Every single-op family: elementwise, reductions, data movement, dots, convolutions,
    pooling, sorts, indexing, FFT, linalg, control flow, nn functions and random numbers."""
    return (_unary_cases() + _binary_cases() + _reduction_cases() + _movement_cases() + _dot_cases()
            + _conv_cases() + _pool_cases() + _sort_cases() + _index_cases() + _fft_cases() + _linalg_cases()
            + _control_cases() + _nn_cases() + _random_number_cases())
