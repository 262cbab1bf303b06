"""PrintOptions: how a module is written back as text."""
from __future__ import annotations

from dataclasses import dataclass, replace

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
    - ``canonical``: XLA's short canonical form (``HloPrintOptions::Canonical``): no ``%``,
      no metadata, no backend config, operand shapes shown.
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

    def updated(self, **changes: object) -> PrintOptions:
        return replace(self, **changes)  # type: ignore[arg-type]

    @staticmethod
    def canonical() -> PrintOptions:
        return PrintOptions(percent=False, operand_shapes=True, signatures=False, metadata=False,
                            backend_config=False, stack_frames=False)

    @staticmethod
    def short() -> PrintOptions:
        """New-style text without metadata: what engineers paste into bug reports."""
        return PrintOptions(metadata=False)
