"""What every oracle program file shares: the registry (``PROGRAMS``, the ``program``
decorator, ``MODES``) and the input helpers. The program files import this module, never each
other, so ``programs.py`` can import them all without an import cycle. The corpus hashes this
file into every case's key: editing it rebuilds the whole corpus.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh

from hloscope.testing.cases import ORACLE_MODES, Case

MODES = tuple(ORACLE_MODES)
INT32_MIN = np.iinfo(np.int32).min
# The jax config of programs that compute in 64 bits (``program(..., config=X64)``).
X64 = (("jax_enable_x64", True),)


PROGRAMS: list[Case] = []


def program(name: str, inputs: Callable[[], tuple[Any, ...]], families: str, *, mode: str = "single",
            **kw: Any):
    """Decorator adding the function as a ``hloscope.testing.cases.Case`` named ``name``;
    ``mode`` is one of ``MODES`` and fixes the device count and partitioner."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        PROGRAMS.append(Case(name, fn, inputs, tuple(families.split()), mode=mode, **ORACLE_MODES[mode], **kw))
        return fn

    return register


def rng(seed: int) -> np.random.Generator:
    """The deterministic generator every program input draws from."""
    return np.random.default_rng(seed)


def f32(*shape: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (rng(seed).standard_normal(shape) * scale).astype(np.float32)


@functools.cache
def mesh8(shape: tuple[int, ...] = (8,), names: tuple[str, ...] = ("x",)) -> Mesh:
    return Mesh(np.array(jax.devices()[:8]).reshape(shape), names)

