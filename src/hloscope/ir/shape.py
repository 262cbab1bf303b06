"""Shapes: arrays (with optional layout and dynamic dimensions), tuples, token and opaque."""
from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from hloscope.ir.dtypes import PRIMITIVE_TYPES, PrimitiveType
from hloscope.ir.layout import COMBINE_DIMENSION, Layout

__all__ = ["Shape", "ArrayShape", "TupleShape", "ShapeIndex", "UNBOUNDED", "POINTER_SIZE",
           "with_default_layouts", "without_layouts", "filled_layouts"]

# XLA's Shape::kUnboundedSize: a dynamic dimension with no bound, printed as "?".
UNBOUNDED = -1
# Size XLA charges a tuple buffer per element (a table of pointers).
POINTER_SIZE = 8

ShapeIndex = tuple[int, ...]


def _cached_text(shape: ArrayShape | TupleShape, layout: bool) -> str:
    """``shape``'s text with or without its layout, both printed once and kept on the (frozen)
    shape: the report prints each instruction's shape twice."""
    texts = shape._texts
    if texts is None:
        texts = (shape._text(True), shape._text(False))
        object.__setattr__(shape, "_texts", texts)  # frozen: set once, after init
    return texts[0] if layout else texts[1]


@dataclass(frozen=True, slots=True)
class ArrayShape:
    """An array (or token/opaque) shape such as ``f32[8,<=128]{1,0}``.

    ``dimensions`` holds each dimension's size, or its bound when the dimension is dynamic
    (``UNBOUNDED`` for ``?``); ``dynamic`` flags dynamic dimensions and is empty when none are.
    """

    element_type: str
    dimensions: tuple[int, ...] = ()
    dynamic: tuple[bool, ...] = ()
    layout: Layout | None = None
    buffer: bool = False  # XLA's buffer shape `b(f32[16])`: a mutable buffer holding the array
    # ``byte_size()`` and ``element_count`` once computed (-1: not yet). The parser shares one
    # object per distinct shape text, and the analyses ask a shape's size again and again (the
    # report of Llama 3.1 8B at ten times its size: 1.2 M asks of 96 shapes).
    _byte_size: int = field(default=-1, init=False, repr=False, compare=False)
    _element_count: int = field(default=-1, init=False, repr=False, compare=False)
    # ``to_text()`` with and without the layout, once printed (the report prints each
    # instruction's shape twice: 735,000 printings of 96 shapes at ten times Llama 3.1 8B).
    _texts: tuple[str, str] | None = field(default=None, init=False, repr=False, compare=False)

    is_tuple = False

    @property
    def primitive_type(self) -> PrimitiveType:
        return PRIMITIVE_TYPES[self.element_type]

    @property
    def rank(self) -> int:
        return len(self.dimensions)

    @property
    def dtype(self) -> np.dtype:
        dt = PRIMITIVE_TYPES[self.element_type].dtype
        if dt is None:
            raise ValueError(f"{self.element_type} has no numpy dtype")
        return dt

    @property
    def element_count(self) -> int:
        count = self._element_count
        if count < 0:
            count = math.prod(max(d, 0) for d in self.dimensions)
            object.__setattr__(self, "_element_count", count)  # frozen: set once, after init
        return count

    def is_dynamic_dimension(self, i: int) -> bool:
        return bool(self.dynamic) and self.dynamic[i]

    def byte_size(self, *, tiled: bool = True) -> int:
        """Bytes of the buffer, padded to whole tiles when the layout is tiled (as XLA counts)."""
        has_tiles = self.layout is not None and bool(self.layout.tiles)
        if has_tiles and not tiled:
            return self._size(False)  # a tiled layout's bytes unpadded: rare, not kept
        size = self._byte_size  # the same with or without ``tiled`` when nothing is tiled
        if size < 0:
            size = self._size(has_tiles)
            object.__setattr__(self, "_byte_size", size)  # frozen: set once, after init
        return size

    def _size(self, padded: bool) -> int:
        pt = PRIMITIVE_TYPES[self.element_type]
        if not pt.is_array_type:
            return 0
        count = self.element_count
        layout = self.layout
        # A scalar with a tile fills the whole tile too: a TPU's f32[]{:T(128)} takes 512 bytes
        # (XLA's ShapeUtil::ArraySize rounds the missing dimensions, as 1, up to the tile).
        if padded and layout is not None:
            count = _tiled_element_count(self.dimensions, layout)
        if layout is not None and layout.element_size_bits and pt.bits < 8:
            return (count * layout.element_size_bits + 7) // 8
        return count * pt.byte_size

    def leaves(self) -> Iterator[tuple[ShapeIndex, ArrayShape]]:
        yield (), self

    def with_layout(self, layout: Layout | None) -> ArrayShape:
        return ArrayShape(self.element_type, self.dimensions, self.dynamic, layout, self.buffer)

    def __str__(self) -> str:
        return self.to_text()

    def to_text(self, *, layout: bool = True) -> str:
        return _cached_text(self, layout)

    def _text(self, layout: bool) -> str:
        if self.dynamic:
            dims = ",".join(
                ("?" if d == UNBOUNDED else f"<={d}") if dyn else str(d)
                for d, dyn in zip(self.dimensions, self.dynamic, strict=True)
            )
        else:
            dims = ",".join(map(str, self.dimensions))
        text = f"{self.element_type}[{dims}]"
        if layout and self.layout is not None:
            text += str(self.layout)
        return f"b({text})" if self.buffer else text


def _tiled_element_count(dims: tuple[int, ...], layout: Layout) -> int:
    # Physical (major-to-minor) sizes; the first tile pads the minor-most ones. A shape of
    # lower rank than the tile still fills a whole tile (leading dimensions of size 1).
    physical = [dims[d] for d in reversed(layout.minor_to_major)]
    tile = layout.tiles[0].dimensions
    physical = [1] * max(0, len(tile) - len(physical)) + physical
    for k in range(1, len(tile) + 1):
        t = tile[-k]
        if t != COMBINE_DIMENSION and t > 0:
            physical[-k] = -(-physical[-k] // t) * t
    return math.prod(physical)


@dataclass(frozen=True, slots=True)
class TupleShape:
    """A tuple shape ``(s0, s1, ...)``."""

    elements: tuple[Shape, ...]
    _texts: tuple[str, str] | None = field(default=None, init=False, repr=False, compare=False)  # as ArrayShape's

    is_tuple = True
    layout = None

    def byte_size(self, *, tiled: bool = True) -> int:
        """A tuple's own buffer: one pointer per element, as XLA allocates it."""
        return POINTER_SIZE * len(self.elements)

    def leaves(self) -> Iterator[tuple[ShapeIndex, ArrayShape]]:
        for i, e in enumerate(self.elements):
            for index, leaf in e.leaves():
                yield (i, *index), leaf

    def subshape(self, index: ShapeIndex) -> Shape:
        shape: Shape = self
        for i in index:
            assert isinstance(shape, TupleShape)
            shape = shape.elements[i]
        return shape

    def __str__(self) -> str:
        return self.to_text()

    def to_text(self, *, layout: bool = True) -> str:
        return _cached_text(self, layout)

    def _text(self, layout: bool) -> str:
        parts = []
        for i, e in enumerate(self.elements):
            prefix = f"/*index={i}*/" if i and i % 5 == 0 else ""
            parts.append(prefix + e.to_text(layout=layout))
        return "(" + ", ".join(parts) + ")"


Shape = ArrayShape | TupleShape


def subshape(shape: Shape, index: ShapeIndex) -> Shape:
    """The shape at ``index`` inside ``shape`` (``()`` is the shape itself)."""
    for i in index:
        if not isinstance(shape, TupleShape):
            raise IndexError(f"shape index {index} goes inside non-tuple {shape}")
        shape = shape.elements[i]
    return shape


def without_layouts(shape: Shape) -> Shape:
    """``shape`` with every layout dropped (recursively); the same object when it has none."""
    if isinstance(shape, TupleShape):
        elements = tuple(without_layouts(e) for e in shape.elements)
        return shape if all(a is b for a, b in zip(elements, shape.elements, strict=True)) else TupleShape(elements)
    return shape.with_layout(None) if shape.layout is not None else shape


def with_default_layouts(shape: Shape) -> Shape:
    """``shape`` with every array of rank >= 1 that has no layout given XLA's default ({n-1,...,0})."""
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(with_default_layouts(e) for e in shape.elements))
    if shape.layout is None and shape.primitive_type.is_array_type and shape.rank:
        return shape.with_layout(Layout.default(shape.rank))
    return shape


# Shapes are immutable and a module repeats few of them: fill each one's layouts once.
filled_layouts = functools.lru_cache(maxsize=4096)(with_default_layouts)
