"""Instruction: one HLO instruction, with typed attributes and references to its operands."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import ArrayShape, Shape

if TYPE_CHECKING:
    from hloscope.ir.attributes import BackendConfig, FrontendAttributes, OpMetadata, Sharding
    from hloscope.ir.computation import Computation
    from hloscope.source import SpanLike

__all__ = ["Instruction", "CALLED_COMPUTATION_ATTRS"]

# Attributes whose values name computations (a Computation, or a list of them).
CALLED_COMPUTATION_ATTRS = (
    "to_apply",
    "calls",
    "condition",
    "body",
    "select",
    "scatter",
    "true_computation",
    "false_computation",
    "branch_computations",
    "called_computations",
    "comparator",
)
_CALLED_KEYS = frozenset(CALLED_COMPUTATION_ATTRS)


class Instruction:
    """One HLO instruction.

    ``attrs`` holds the attributes in the order they were written, typed where hloscope knows
    them (see ``hloscope.ir.attribute_specs``): ints, bools, tuples of ints, Computation
    references, and the classes of ``hloscope.ir.attributes``. A constant's literal is
    ``attrs["literal"]`` and a parameter's number ``attrs["parameter_number"]``; control
    predecessors are ``attrs["control-predecessors"]`` (a list of instructions).
    """

    __slots__ = ("name", "opcode", "shape", "operands", "attrs", "computation", "span")

    def __init__(
        self,
        name: str,
        opcode: Opcode,
        shape: Shape,
        operands: list[Instruction] | None = None,
        attrs: dict[str, Any] | None = None,
        *,
        span: SpanLike | None = None,
    ) -> None:
        self.name = name
        self.opcode = opcode
        self.shape = shape
        self.operands: list[Instruction] = operands if operands is not None else []
        self.attrs: dict[str, Any] = attrs if attrs is not None else {}
        self.computation: Computation | None = None
        self.span = span

    # --- conveniences over attrs -------------------------------------------------------------
    @property
    def called_computations(self) -> list[Computation]:
        """Computations this instruction calls, in attribute order."""
        attrs = self.attrs
        if _CALLED_KEYS.isdisjoint(attrs):  # most instructions: a few keys checked, not eleven
            return []
        out: list[Computation] = []
        for key in CALLED_COMPUTATION_ATTRS:
            v = attrs.get(key)
            if v is None:
                continue
            if isinstance(v, list):
                out.extend(v)
            elif not isinstance(v, str):
                out.append(v)
        return out

    @property
    def control_predecessors(self) -> list[Instruction]:
        """Instructions that must run before this one (``control-predecessors={...}``)."""
        return self.attrs.get("control-predecessors", [])

    @property
    def metadata(self) -> OpMetadata | None:
        return self.attrs.get("metadata")

    @property
    def sharding(self) -> Sharding | None:
        return self.attrs.get("sharding")

    @property
    def backend_config(self) -> BackendConfig | None:
        return self.attrs.get("backend_config")

    @property
    def frontend_attributes(self) -> FrontendAttributes | None:
        return self.attrs.get("frontend_attributes")

    @property
    def parameter_number(self) -> int:
        return self.attrs["parameter_number"]

    @property
    def custom_call_target(self) -> str | None:
        return self.attrs.get("custom_call_target")

    @property
    def is_root(self) -> bool:
        return self.computation is not None and self.computation.root is self

    @property
    def array_shape(self) -> ArrayShape:
        """The shape, asserted to be an array (for ops that only make arrays)."""
        assert isinstance(self.shape, ArrayShape), f"{self.name} has tuple shape {self.shape}"
        return self.shape

    # --- users and editing (Note [Editing the IR] in computation.py) ---------------------------
    @property
    def users(self) -> list[Instruction]:
        """Instructions of the same computation that use this one as an operand, each once
        (empty when the instruction belongs to no computation)."""
        comp = self.computation
        return comp.users(self) if comp is not None else []

    def replace_all_uses_with(self, new: Instruction) -> list[Instruction]:
        """Make every user of this instruction use ``new`` instead (and ``new`` the root if
        this was the root); returns the users changed. This instruction stays, unused.
        XLA's ``HloInstruction::ReplaceAllUsesWith``; torch.fx's ``Node.replace_all_uses_with``."""
        comp = self.computation
        if comp is None:
            raise ValueError(f"{self.name} belongs to no computation, so it has no uses to replace")
        return comp.replace_all_uses_with(self, new)

    def replace_operand_with(self, index: int, new: Instruction) -> None:
        """Make ``new`` this instruction's operand ``index``, keeping users correct."""
        comp = self.computation
        if comp is None:
            self.operands[index] = new
        else:
            comp.replace_operand(self, index, new)

    def to_text(self, options: Any = None, **overrides: Any) -> str:
        """This instruction as one line of HLO text (see ``hloscope.text.PrintOptions``)."""
        from hloscope.ir.printer import instruction_to_text

        return instruction_to_text(self, options, **overrides)

    def __repr__(self) -> str:
        ops = ", ".join(o.name for o in self.operands)
        return f"<Instruction {self.name} = {self.shape.to_text(layout=False)} {self.opcode.text}({ops})>"
