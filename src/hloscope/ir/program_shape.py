"""A module's ProgramShape (``entry_computation_layout``): parameter and result shapes."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hloscope.ir.shape import Shape

__all__ = ["ProgramShape"]


class ProgramShape:
    """``entry_computation_layout={(p0, p1)->result}``: parameter and result shapes with layouts."""

    __slots__ = ("parameters", "result")

    def __init__(self, parameters: list[Shape], result: Shape) -> None:
        self.parameters = parameters
        self.result = result

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProgramShape) and (self.parameters, self.result) == (other.parameters, other.result)

    def __hash__(self) -> int:
        return hash((tuple(self.parameters), self.result))

    def __str__(self) -> str:
        return "{(" + ", ".join(s.to_text() for s in self.parameters) + ")->" + self.result.to_text() + "}"

    def __repr__(self) -> str:
        return f"ProgramShape{self}"
