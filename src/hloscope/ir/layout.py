"""Layouts: minor_to_major order plus XLA's optional tiling, element size and memory space."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Tile", "Layout", "COMBINE_DIMENSION"]

# XLA's Tile::kCombineDimension, printed as "*".
COMBINE_DIMENSION = -(2**63)


@dataclass(frozen=True, slots=True)
class Tile:
    """One tile of a tiled layout, e.g. ``(8,128)``."""

    dimensions: tuple[int, ...]

    def __str__(self) -> str:
        return "(" + ",".join("*" if d == COMBINE_DIMENSION else str(d) for d in self.dimensions) + ")"


@dataclass(frozen=True, slots=True)
class Layout:
    """An XLA layout as printed in ``{1,0:T(8,128)S(1)}``.

    ``minor_to_major`` lists dimensions from fastest- to slowest-varying. The fields after the
    colon are kept so that printing reproduces them: dim level types ``D(...)``, tiles ``T...``,
    tail padding alignment ``L(n)``, element size in bits ``E(n)``, index and pointer types
    ``#(t)`` / ``*(t)``, memory space ``S(n)``, split configs ``SC(...)``, physical shape
    ``P(shape)`` and dynamic-shape metadata prefix bytes ``M(n)``.
    """

    minor_to_major: tuple[int, ...]
    tiles: tuple[Tile, ...] = ()
    element_size_bits: int = 0
    memory_space: int = 0
    dim_level_types: str = ""  # raw text inside D(...)
    tail_padding_alignment: int = 0
    index_primitive_type: str = ""
    pointer_primitive_type: str = ""
    split_configs: tuple[str, ...] = ()  # raw text inside each SC(...)
    physical_shape: str = ""  # raw text inside P(...)
    dynamic_shape_metadata_prefix_bytes: int = 0

    def __str__(self) -> str:
        parts: list[str] = []
        if self.dim_level_types:
            parts.append(f"D({self.dim_level_types})")
        if self.tiles:
            parts.append("T" + "".join(str(t) for t in self.tiles))
        if self.tail_padding_alignment:
            parts.append(f"L({self.tail_padding_alignment})")
        if self.element_size_bits:
            parts.append(f"E({self.element_size_bits})")
        if self.index_primitive_type:
            parts.append(f"#({self.index_primitive_type})")
        if self.pointer_primitive_type:
            parts.append(f"*({self.pointer_primitive_type})")
        if self.memory_space:
            parts.append(f"S({self.memory_space})")
        for sc in self.split_configs:
            parts.append(f"SC({sc})")
        if self.physical_shape:
            parts.append(f"P({self.physical_shape})")
        if self.dynamic_shape_metadata_prefix_bytes:
            parts.append(f"M({self.dynamic_shape_metadata_prefix_bytes})")
        head = ",".join(map(str, self.minor_to_major))
        return "{" + head + (":" + "".join(parts) if parts else "") + "}"

    @staticmethod
    def default(rank: int) -> Layout:
        """The major-to-minor default layout ``{rank-1,...,0}``."""
        return Layout(tuple(range(rank - 1, -1, -1)))
