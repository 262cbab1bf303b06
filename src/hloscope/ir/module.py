"""Module: computations, the entry computation, and the module header's configuration."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from hloscope.ir.attributes import AliasEntry, StackFrameIndex
from hloscope.ir.computation import Computation
from hloscope.ir.instruction import Instruction
from hloscope.ir.names import NameUniquer
from hloscope.ir.opcode import Opcode
from hloscope.ir.program_shape import ProgramShape

if TYPE_CHECKING:
    pass

__all__ = ["Module", "NameUniquer", "ProgramShape", "HTML_DISPLAY"]

HTML_DISPLAY: list[Callable[[Module], str]] = []
"""Jupyter's rich display of a Module: ``hloscope.report`` puts its renderer here on import."""

class Module:
    """An HLO module.

    ``attrs`` holds the header attributes in written order (``is_scheduled``,
    ``input_output_alias``, ``entry_computation_layout``, ``replica_count``, ...), typed where
    known. Computations are in written order; callees precede callers in XLA's dumps.
    """

    __slots__ = ("name", "computations", "entry", "attrs", "stack_frames", "style", "source",
                 "_by_name", "_fusion_comps")

    def __init__(
        self,
        name: str,
        computations: list[Computation],
        entry: Computation,
        attrs: dict[str, Any] | None = None,
        *,
        stack_frames: StackFrameIndex | None = None,
        style: Any = None,
        source: Any = None,
    ) -> None:
        self.name = name
        self.computations = computations
        self.entry = entry
        self.attrs: dict[str, Any] = attrs or {}
        self.stack_frames = stack_frames
        self.style = style  # the text style the module was read in (see hloscope.text.PrintOptions)
        self.source = source  # the Source it was parsed from, if any
        for c in computations:
            c.module = self
        self._by_name: dict[str, Computation] = {c.name: c for c in computations}
        self._fusion_comps: set[Computation] | None = None

    # --- configuration ----------------------------------------------------------------------
    @property
    def is_scheduled(self) -> bool:
        return bool(self.attrs.get("is_scheduled", False))

    @property
    def replica_count(self) -> int | None:
        """``replica_count=`` from the header, or None when the header does not say."""
        return self.attrs.get("replica_count")

    @property
    def num_partitions(self) -> int | None:
        return self.attrs.get("num_partitions")

    @property
    def input_output_alias(self) -> list[AliasEntry]:
        return list(self.attrs.get("input_output_alias", []))

    @property
    def buffer_donor(self) -> list[tuple[int, tuple[int, ...]]]:
        return list(self.attrs.get("buffer_donor", []))

    @property
    def entry_computation_layout(self) -> ProgramShape | None:
        return self.attrs.get("entry_computation_layout")

    # --- structure ----------------------------------------------------------------------------
    def computation(self, name: str) -> Computation:
        """The computation called ``name``; KeyError if none."""
        return self._by_name[name]

    def __iter__(self) -> Iterator[Computation]:
        return iter(self.computations)

    def instructions(self) -> Iterator[Instruction]:
        """Every instruction of every computation, computation by computation."""
        for c in self.computations:
            yield from c.instructions

    def reachable_computations(self) -> list[Computation]:
        """The entry computation and every computation it calls, directly or not (entry first,
        then depth-first). What else the module holds never runs: jax's path into XLA:CPU (its
        importer into MLIR) drops it, as XLA's import tests show (hlo_to_mhlo/tests/import.hlo)."""
        order, seen, stack = [], {self.entry}, [self.entry]
        while stack:
            comp = stack.pop()
            order.append(comp)
            for inst in comp.instructions:
                for callee in inst.called_computations:
                    if callee not in seen:
                        seen.add(callee)
                        stack.append(callee)
        return order

    @property
    def instruction_count(self) -> int:
        return sum(len(c.instructions) for c in self.computations)

    def source_location(self, inst: Instruction) -> str | None:
        """Where ``inst`` comes from in the program's source, as ``file:line``: its metadata's
        ``source_file``/``source_line``, else the innermost frame of its ``stack_frame_id`` in
        the module's stack-frame tables (newer jax writes only the frame id); None when unknown.

        The one lookup every table and page uses, so they show the same place for an instruction.
        """
        md = inst.metadata
        if md is None:
            return None
        fields = md.fields
        file = fields.get("source_file")
        if file:
            line = fields.get("source_line")
            return f"{file}:{line}" if line is not None else str(file)
        frame_id = fields.get("stack_frame_id")
        if frame_id is None or self.stack_frames is None:
            return None
        try:
            frames = self.stack_frames.frame(int(frame_id))
        except (ValueError, TypeError, KeyError):  # a malformed table must not break a report
            return None
        if not frames:
            return None
        file, _, line = frames[0]
        return f"{file}:{line}"

    def fusion_computations(self) -> set[Computation]:
        """Computations called by fusion instructions (their bodies are not scheduled)."""
        if self._fusion_comps is None:
            out: set[Computation] = set()
            for inst in self.instructions():
                if inst.opcode is Opcode.FUSION:
                    out.update(inst.called_computations)
            self._fusion_comps = out
        return self._fusion_comps

    # --- editing (Note [Editing the IR] in computation.py) --------------------------------------
    def add_computation(self, comp: Computation, *, before: Computation | None = None) -> Computation:
        """Add ``comp`` (its name must be new in the module) at the end, or just before
        ``before`` (callees precede their callers in XLA's text); returns it."""
        if comp.name in self._by_name:
            raise ValueError(f"module {self.name} already has a computation named {comp.name}")
        index = len(self.computations) if before is None else self.computations.index(before)
        self.computations.insert(index, comp)
        comp.module = self
        self._by_name[comp.name] = comp
        self.invalidate_caches()
        return comp

    def remove_computation(self, comp: Computation) -> None:
        """Remove ``comp``, which no instruction of the module may call and which is not the
        entry computation."""
        if comp is self.entry:
            raise ValueError(f"cannot remove {comp.name}: it is the entry computation")
        callers = [i.name for i in self.instructions() if comp in i.called_computations]
        if callers:
            raise ValueError(f"cannot remove {comp.name}: it is called by {', '.join(callers)}")
        self.computations.remove(comp)
        del self._by_name[comp.name]
        comp.module = None
        self.invalidate_caches()

    def invalidate_caches(self) -> None:
        """Forget what was derived from the instructions (which computations fusions call);
        computations call this after every edit."""
        self._fusion_comps = None

    def schedule(self) -> dict[str, list[Instruction]] | None:
        """For a scheduled module, each non-fusion computation's instruction sequence."""
        if not self.is_scheduled:
            return None
        fusions = self.fusion_computations()
        return {c.name: list(c.instructions) for c in self.computations if c not in fusions}

    def to_text(self, options: Any = None, **overrides: Any) -> str:
        """The module as HLO text XLA's parser accepts (see ``hloscope.text.PrintOptions``)."""
        from hloscope.ir.printer import to_text

        return to_text(self, options, **overrides)

    def equals(self, other: Module) -> bool:
        """Structural equality: same header, computations, instructions, shapes and attributes."""
        from hloscope.ir.equality import modules_equal

        return modules_equal(self, other)

    def _repr_html_(self) -> str | None:
        # Note [HTML display]: the summary table is drawn by hloscope.report, a layer above
        # the IR, which installs itself here when imported (``import hloscope`` does).
        return HTML_DISPLAY[0](self) if HTML_DISPLAY else None

    def __repr__(self) -> str:
        return (f"<Module {self.name}: {len(self.computations)} computations, "
                f"{self.instruction_count} instructions, entry {self.entry.name}>")
