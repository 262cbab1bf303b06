"""``Case``: one jax program checked against XLA, the one case type of hloscope's tests, tools
and benchmarks (the oracle corpus, the oracle sweep, the analysis sweep).

A case is a function and how to call it: ``fn(*case.inputs())`` under ``jax.jit`` or
``jax.pmap`` (``lowering``), with lazily built jit options (meshes need devices, so they are
made only when the case is lowered), ``jax.config`` overrides while lowering and running
(``jax_config``), the HLO op families it exercises, and its tolerance against XLA:CPU.

``mode`` names how the program is transformed, in the oracle corpus's vocabulary
(``ORACLE_MODES``; its meta files and tests select by it), or plainly ``"jit"``/``"pmap"``, or
``"pmapped"`` when ``fn`` is already a ``jax.pmap``-ed function (lowered as it is).
A *sized* case (``size`` set) makes inputs of that size, ``make_inputs(size)``, so a sweep can
grow the same program.

Importing this module does not import jax.
"""
from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["Case", "ORACLE_MODES", "jax_config", "lower"]

# The oracle corpus's modes: how the program is transformed, and what that fixes.
ORACLE_MODES: dict[str, dict[str, Any]] = {
    "single": {"devices": 1},  # jax.jit on one device
    "pmap8": {"devices": 8},  # jax.pmap over 8 devices (lowers to 8 partitions today)
    "shard_map8": {"devices": 8},  # jax.jit(jax.shard_map(...)) over a mesh of the 8 devices
    "jit_sharded8_shardy": {"devices": 8, "shardy": True},  # NamedShardings, Shardy
    "jit_sharded8_gspmd": {"devices": 8, "shardy": False},  # NamedShardings, GSPMD
}


@dataclasses.dataclass(frozen=True)
class Case:
    """One jax program: ``fn`` called on ``inputs()`` (numpy arrays, positional), lowered with
    ``lowering`` and ``jit_options()``; ``rtol``/``atol`` (times ``tolerance_scale``) against
    XLA:CPU where a check uses per-case tolerances."""

    name: str
    fn: Callable[..., Any]
    make_inputs: Callable[..., tuple[Any, ...]]
    families: tuple[str, ...] = ()
    mode: str = "single"
    shardy: bool | None = None  # None: jax's default partitioner
    devices: int = 1
    jit_kwargs: Callable[[], dict[str, Any]] | None = None  # built lazily: meshes need devices
    config: tuple[tuple[str, Any], ...] = ()  # jax.config overrides while lowering and running
    rtol: float = 1e-5
    atol: float = 1e-6
    tolerance_scale: float = 1.0
    size: int | None = None  # a sized case's inputs are make_inputs(size)

    @property
    def lowering(self) -> str:
        """``"pmap"`` or ``"jit"``: how ``hloscope.xla.lowering.lower_jax`` lowers ``fn``."""
        return "pmap" if self.mode.startswith("pmap") else "jit"

    @property
    def num_devices(self) -> int:
        return self.devices

    @property
    def x64(self) -> bool:
        """Whether the case runs with 64-bit types enabled (``jax_enable_x64``)."""
        return bool(dict(self.config).get("jax_enable_x64", False))

    def inputs(self) -> tuple[Any, ...]:
        """Fresh positional inputs (of ``size`` for a sized case)."""
        return self.make_inputs(self.size) if self.size is not None else self.make_inputs()

    def jit_options(self) -> dict[str, Any]:
        """The keyword arguments of ``jax.jit``/``jax.pmap`` (built now)."""
        return self.jit_kwargs() if self.jit_kwargs is not None else {}

    def resized(self, size: int) -> Case:
        """The same sized case with inputs of ``size``."""
        return dataclasses.replace(self, size=size)


@contextlib.contextmanager
def jax_config(overrides: Iterable[tuple[str, Any]]) -> Iterator[None]:
    """Temporarily apply ``jax.config`` overrides (restored on exit)."""
    import jax

    old = []
    for name, value in overrides:
        old.append((name, getattr(jax.config, name)))
        jax.config.update(name, value)
    try:
        yield
    finally:
        for name, value in reversed(old):
            jax.config.update(name, value)


def lower(case: Case, *inputs: Any) -> Any:
    """jax's ``Lowered`` of ``case``: ``fn`` under ``jax.jit(**case.jit_options())`` (as it is
    for mode ``"pmapped"``, a function already ``jax.pmap``-ed), on ``inputs`` (by default
    ``case.inputs()``), with 64-bit types on while lowering when the case asks for them."""
    import jax

    with jax.enable_x64(True) if case.x64 else contextlib.nullcontext():
        target: Any = case.fn if case.mode == "pmapped" else jax.jit(case.fn, **case.jit_options())
        return target.lower(*(inputs or case.inputs()))
