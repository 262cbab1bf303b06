"""Fixtures for comparing hloscope's analyses with XLA:CPU on compiled JAX programs.

``xla_cpu_compiled(name, lower)`` compiles ``lower()`` (a jax ``Lowered``) once per session with
XLA's dumps on and returns ``Compiled(text, buffer_assignment, stats)``: the after-optimizations
module, XLA's buffer-assignment dump read into ``analysis.buffers`` types, and
``compiled.memory_analysis()``. The memory and collectives tests share it, so a program both
use is compiled once.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import pytest


class Compiled(NamedTuple):
    text: str
    buffer_assignment: Any
    stats: Any


@pytest.fixture(scope="session")
def xla_cpu_compiled(tmp_path_factory):
    from hloscope.text.buffer_assignment_dump import load_buffer_assignment

    cache: dict[str, Compiled] = {}

    def compiled(name: str, lower: Any) -> Compiled:
        if name not in cache:
            d = tmp_path_factory.mktemp(name)
            c = lower().compile(compiler_options={"xla_dump_to": str(d), "xla_dump_hlo_as_text": True})
            (hlo,) = d.glob("*.cpu_after_optimizations.txt")
            cache[name] = Compiled(hlo.read_text(), load_buffer_assignment(d), c.memory_analysis())
        return cache[name]

    return compiled


