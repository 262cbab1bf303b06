"""Computation: an ordered list of instructions with parameters and a root."""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from hloscope.ir.instruction import Instruction
from hloscope.ir.opcode import Opcode

if TYPE_CHECKING:
    from hloscope.ir.module import Module
    from hloscope.source import Span

__all__ = ["Computation"]


class Computation:
    """A named HLO computation.

    ``instructions`` keeps the written order, which for a scheduled module is the schedule.
    ``parameters[i]`` is the instruction ``parameter(i)``. ``users()`` is computed on demand
    (one pass) and cached until the instruction list changes.
    """

    __slots__ = ("name", "instructions", "root", "parameters", "is_entry", "attrs", "module", "span",
                 "_users", "_users_key", "_by_name")

    def __init__(
        self,
        name: str,
        instructions: list[Instruction],
        root: Instruction,
        *,
        is_entry: bool = False,
        attrs: dict[str, Any] | None = None,
        span: Span | None = None,
    ) -> None:
        self.name = name
        self.instructions = instructions
        self.root = root
        self.is_entry = is_entry
        self.attrs: dict[str, Any] = attrs or {}  # e.g. execution_thread
        self.module: Module | None = None
        self.span = span
        params = [i for i in instructions if i.opcode is Opcode.PARAMETER]
        params.sort(key=lambda p: p.attrs["parameter_number"])
        self.parameters: list[Instruction] = params
        for inst in instructions:
            inst.computation = self
        self._users: dict[Instruction, list[Instruction]] | None = None
        self._users_key = -1
        self._by_name: dict[str, Instruction] | None = None

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)

    def instruction(self, name: str) -> Instruction:
        """The instruction called ``name``; KeyError if none."""
        if self._by_name is None or len(self._by_name) != len(self.instructions):
            self._by_name = {i.name: i for i in self.instructions}
        return self._by_name[name]

    def users(self, instruction: Instruction) -> list[Instruction]:
        """Instructions of this computation that use ``instruction`` as an operand (in order)."""
        key = id(self.instructions) ^ len(self.instructions)
        if self._users is None or self._users_key != key:
            users: dict[Instruction, list[Instruction]] = {i: [] for i in self.instructions}
            for inst in self.instructions:
                seen = set()
                for op in inst.operands:
                    if id(op) not in seen:
                        seen.add(id(op))
                        users.setdefault(op, []).append(inst)
            self._users = users
            self._users_key = key
        return self._users.get(instruction, [])

    @property
    def is_fusion_computation(self) -> bool:
        mod = self.module
        return mod is not None and self in mod.fusion_computations()

    @property
    def program_shape(self) -> tuple[list[Any], Any]:
        """(parameter shapes, result shape)."""
        return [p.shape for p in self.parameters], self.root.shape

    def to_text(self, options: Any = None, **overrides: Any) -> str:
        from hloscope.ir.printer import computation_to_text

        return computation_to_text(self, options, **overrides)

    def __repr__(self) -> str:
        entry = "ENTRY " if self.is_entry else ""
        return f"<Computation {entry}{self.name}: {len(self.instructions)} instructions>"
