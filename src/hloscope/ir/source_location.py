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
    ``module`` (default: the instruction's own) holds the stack-frame tables."""
    md = inst.metadata
    if md is None:
        return None, None
    fields = md.fields
    op_name = md.op_name
    if fields.get("source_file"):
        return op_name, f"{fields['source_file']}:{fields.get('source_line', 0)}"
    frame_id = fields.get("stack_frame_id")
    if module is None and inst.computation is not None:
        module = inst.computation.module
    if frame_id is not None and module is not None and module.stack_frames is not None:
        try:
            frames = module.stack_frames.frame(int(frame_id))
        except Exception:  # a malformed table must not break what reads it
            frames = []
        if frames:
            file, _, line = frames[0]
            return op_name, f"{file}:{line}"
    return op_name, None
