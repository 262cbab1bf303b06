"""PrintOptions: how a module is written back as text."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

__all__ = ["PrintOptions"]


@dataclass
class PrintOptions:
    """Choices for the printer. A parsed module remembers the style it was read in
    (``module.style``), and printing it with the defaults reproduces that style.

    - ``percent``: names written ``%name`` (XLA's long form).
    - ``operand_shapes``: operands written with their shapes (``f32[2]{0} %a``).
    - ``signatures``: computations written with ``(p: f32[]) -> f32[]`` signatures.
    - ``metadata``, ``backend_config``: print those attributes.
    - ``layouts``: print layouts in shapes.
    - ``operand_index_comments``: mark every fifth operand ``/*index=5*/`` (XLA's default
      printer does; ``lowered.as_text()`` does not).
    - ``end_comments``: close computations of more than five instructions with ``} // name``,
      as TPU dumps do.
    - ``control_predecessors``: print ``control-predecessors={...}``.
    - ``xla_order``: computations in XLA's order (post-order of the call graph from the entry)
      instead of the order read.
    - ``default_layouts``: write the default layout (``{n-1,...,0}``) in array shapes read
      without one, as XLA's parser fills it in.
    - ``unique_names``: rename instructions (and computations) whose names repeat in the module
      as XLA's module does (Note [Unique names] in printer.py).
    - ``canonical_literals``: write constants' values as XLA prints them (Note [Canonical
      literals] in ir/literal.py) instead of as they were read.
    - ``entry_layout``: write ``entry_computation_layout`` even when the module has none (XLA
      always knows it; default layouts fill in shapes written without one).
    ``PrintOptions.canonical()`` is XLA's short parsable form (see there).
    """

    percent: bool = False
    operand_shapes: bool = False
    signatures: bool = False
    metadata: bool = True
    backend_config: bool = True
    layouts: bool = True
    stack_frames: bool = True
    end_comments: bool = False
    operand_index_comments: bool = True
    control_predecessors: bool = True
    entry_layout: bool = False
    default_layouts: bool = False
    unique_names: bool = False
    canonical_literals: bool = False
    xla_order: bool = False

    def updated(self, **changes: Any) -> PrintOptions:
        return replace(self, **changes)

    @staticmethod
    def canonical() -> PrintOptions:
        """XLA's short parsable form (``HloPrintOptions::ShortParsable``): bare names, no operand
        shapes, no metadata, stack frames or control predecessors; backend configs kept."""
        return PrintOptions(percent=False, operand_shapes=False, signatures=False, metadata=False,
                            backend_config=True, stack_frames=False, control_predecessors=False,
                            operand_index_comments=False, entry_layout=True, default_layouts=True,
                            unique_names=True, canonical_literals=True, xla_order=True)

    @staticmethod
    def short() -> PrintOptions:
        """New-style text without metadata: what engineers paste into bug reports."""
        return PrintOptions(metadata=False)
