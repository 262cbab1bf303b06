"""The floating-point environment a run follows: which denormals the backend flushes to zero.

Note [Denormals]
    XLA:CPU runs its code with the x86 MXCSR bits DAZ and FTZ set: arithmetic reads a
    denormal f32 or f64 input as zero of its sign and writes a denormal result as zero. So
    log(1e-40) is -inf there (log of zero), sqrt, sign, lgamma, digamma, sums, products and
    comparisons all see zero; bf16, computed in f32, likewise. What moves bits without
    arithmetic keeps a denormal: abs, negate, copy, select, bf16 <-> f32 converts; and so do the
    ops whose XLA:CPU code returns a tiny argument unchanged (sine, tan, expm1, atan2's first
    operand, f32 tanh). f16 denormals are normal numbers in f32, where f16 computes: untouched.
    GPUs flush f32 (and bf16) denormals in most kernels (ftz), keeping f64 ones; TPUs have no
    f32 denormals. "ieee" keeps every denormal (numpy's own behaviour). Measured on XLA:CPU
    (jaxlib 0.10.2) op by op in tests/interpret/test_float_env.py.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["FloatEnv", "FLOAT_ENVS", "current", "using", "resolve", "host_float_env", "daz", "ftz", "ftz_in_place", "KEEPS_DENORMALS",
           "keeps_denormals"]

_F32, _F64, _BF16 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(ml_dtypes.bfloat16)


@dataclass(frozen=True)
class FloatEnv:
    """A backend's denormal handling: the element types whose denormals it flushes."""

    name: str
    flushes: frozenset[np.dtype[Any]]
    description: str
    # f64 -> f16 rounded once (AVX-512 hosts, GPUs) rather than through f32, twice (XLA:CPU
    # on AVX2 hosts; Note [The oracle's instruction set] in tests/conftest.py).
    f64_to_f16_direct: bool = False


FLOAT_ENVS: dict[str, FloatEnv] = {
    "xla-cpu": FloatEnv("xla-cpu", frozenset({_F32, _F64, _BF16}),
                        "XLA:CPU: f32, bf16 and f64 denormals read and written as zero (DAZ, FTZ)"),
    "xla-cpu-avx512": FloatEnv("xla-cpu-avx512", frozenset({_F32, _F64, _BF16}),
                               "XLA:CPU on an AVX-512 host: as xla-cpu, and f64 -> f16 rounded once",
                               f64_to_f16_direct=True),
    "gpu": FloatEnv("gpu", frozenset({_F32, _BF16}),
                    "GPU kernels compiled with ftz: f32 and bf16 denormals flushed, f64 kept",
                    f64_to_f16_direct=True),
    "tpu": FloatEnv("tpu", frozenset({_F32, _BF16}), "TPU: no f32 (or bf16) denormals"),
    "ieee": FloatEnv("ieee", frozenset(), "IEEE 754: every denormal kept"),
}

# Elementwise rows that keep a denormal operand as XLA:CPU does (Note [Denormals]).
KEEPS_DENORMALS = frozenset({"abs", "negate", "copy", "real", "imag", "is-finite", "sine", "tan",
                             "exponential-minus-one", "select", "bitcast-convert", "reduce-precision"})
# ... and those that keep one only in some types (f64 tanh reads it as zero).
KEEPS_DENORMALS_OF = {"tanh": frozenset({_F32, _BF16})}


def keeps_denormals(op: str, dtype: np.dtype[Any]) -> bool:
    """True when elementwise ``op`` passes a denormal operand of ``dtype`` through."""
    return op in KEEPS_DENORMALS or dtype in KEEPS_DENORMALS_OF.get(op, ())

_CURRENT: contextvars.ContextVar[FloatEnv] = contextvars.ContextVar("float_env", default=FLOAT_ENVS["xla-cpu"])


def current() -> FloatEnv:
    """The environment of the run in progress (XLA:CPU's outside any run)."""
    return _CURRENT.get()


_ISA_RANK = {"SSE4_2": 0, "AVX": 1, "AVX2": 2, "AVX512": 3, "AVX512_VNNI": 3, "AVX512_BF16": 3,
             "AVX10": 3, "AMX": 3}


def host_float_env(xla_flags: str | None = None, host_has_avx512: bool | None = None) -> str:
    """The XLA:CPU environment of this process (what ``float_env="auto"`` means).

    Note [Which XLA:CPU]
        XLA:CPU compiles for the host's instruction set unless ``XLA_FLAGS`` caps it with
        ``--xla_cpu_max_isa``, and its f64 -> f16 rounding follows that level (Note [Denormals]):
        an AVX-512 level rounds once, lower levels through f32. So "auto" reads the same two
        things XLA:CPU reads: the flag, else the CPU (numpy's CPU-feature table).
    """
    flags = os.environ.get("XLA_FLAGS", "") if xla_flags is None else xla_flags
    m = re.search(r"--xla_cpu_max_isa=(\w+)", flags)
    if m is not None:
        rank = _ISA_RANK.get(m.group(1).upper())
        if rank is not None:
            return "xla-cpu-avx512" if rank >= 3 else "xla-cpu"
    if host_has_avx512 is None:
        host_has_avx512 = _host_has_avx512()
    return "xla-cpu-avx512" if host_has_avx512 else "xla-cpu"


def _host_has_avx512() -> bool:
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # numpy < 2
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as features  # type: ignore[no-redef]  # numpy 1.x path
        except ImportError:
            return False
    return bool(features.get("AVX512F", False))


def resolve(name: str) -> str:
    """``name`` with "auto" replaced by this process's XLA:CPU environment."""
    return host_float_env() if name == "auto" else name


@contextlib.contextmanager
def using(name: str) -> Iterator[FloatEnv]:
    """Run the body in environment ``name`` (a key of FLOAT_ENVS, or "auto")."""
    env = FLOAT_ENVS.get(resolve(name))
    if env is None:
        raise ValueError(f"unknown floating-point environment {name!r}; choose one of {', '.join(FLOAT_ENVS)}")
    token = _CURRENT.set(env)
    try:
        yield env
    finally:
        _CURRENT.reset(token)


_CHUNK = 1 << 16  # elements looked at at once: no full-size temporaries (Note [In-place elementwise])


def _has_denormal(x: np.ndarray, tiny: Any) -> bool:
    """Whether ``x`` holds a denormal, in chunks along its first axis (views, never a copy of
    the whole array: an in-place chain's peak memory is one array)."""
    if x.ndim == 0:
        return bool(0 < abs(float(x)) < float(tiny))
    if not x.flags.c_contiguous and x.size > _CHUNK and x.shape[0] > 1:
        return any(_has_denormal(row, tiny) for row in x)  # views, row by row
    flat = x.reshape(-1) if x.flags.c_contiguous else x
    with np.errstate(invalid="ignore"):
        for i in range(0, flat.shape[0], _CHUNK if flat.ndim == 1 else flat.shape[0]):
            part = np.abs(flat[i:i + _CHUNK] if flat.ndim == 1 else flat)
            if ((part < tiny) & (part > 0)).any():
                return True
    return False


def _flushed(x: np.ndarray) -> np.ndarray:
    tiny = ml_dtypes.finfo(x.dtype).smallest_normal
    if not _has_denormal(x, tiny):
        return x
    with np.errstate(invalid="ignore"):
        small = np.abs(x) < tiny
    return np.where(small, np.copysign(np.zeros((), x.dtype), x), x).astype(x.dtype, copy=False)


def daz(x: Any) -> Any:
    """``x`` as arithmetic reads it: denormals as zeros of their sign, where the current
    environment flushes ``x``'s type (the array itself when nothing changes)."""
    if isinstance(x, np.ndarray) and x.dtype in _CURRENT.get().flushes:
        return _flushed(x)
    return x


def ftz(x: Any) -> Any:
    """A result as arithmetic writes it: denormals flushed to zeros of their sign."""
    return daz(x)


def ftz_in_place(x: np.ndarray) -> np.ndarray:
    """``ftz`` writing into ``x`` itself (an in-place elementwise result); returns ``x``."""
    if x.dtype in _CURRENT.get().flushes:
        tiny = ml_dtypes.finfo(x.dtype).smallest_normal
        if _has_denormal(x, tiny):
            with np.errstate(invalid="ignore"):
                small = np.abs(x) < tiny
            np.copyto(x, np.copysign(np.zeros((), x.dtype), x), where=small)
    return x
