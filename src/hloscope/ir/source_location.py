"""Where an instruction came from in the user's program: its op_name and ``file:line``.

XLA keeps the source position in the metadata as ``source_file``/``source_line`` (older
dumps) or as a ``stack_frame_id`` into the module's stack-frame tables (jax since 0.4.3x);
``op_name_and_source`` reads either, innermost frame first, as the memory report and the
numerics tools show it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hloscope.ir.instruction import Instruction
    from hloscope.ir.module import Module

__all__ = ["op_name_and_source"]


def op_name_and_source(inst: Instruction, module: Module | None = None) -> tuple[str | None, str | None]:
    """(op_name, ``"file:line"``) of ``inst`` from its metadata, each None when not recorded.
    ``module`` (default: the instruction's own) holds the stack-frame tables; the place is
    ``Module.source_location``'s, the one lookup every table and page uses."""
    md = inst.metadata
    if md is None:
        return None, None
    if module is None and inst.computation is not None:
        module = inst.computation.module
    return md.op_name, (module.source_location(inst) if module is not None else None)
