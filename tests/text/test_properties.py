"""Property tests: generated shapes, layouts and attribute values print and parse back unchanged."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import hloscope as hs
from hloscope.ir import ArrayShape, Layout, Tile, TupleShape
from hloscope.ir.attributes import PaddingConfig, SliceRange, Window, WindowDimension
from hloscope.ir.dtypes import PRIMITIVE_TYPES
from hloscope.text import parse_shape

ARRAY_TYPES = sorted(n for n, t in PRIMITIVE_TYPES.items() if t.is_array_type)


@st.composite
def array_shapes(draw: st.DrawFn) -> ArrayShape:
    etype = draw(st.sampled_from(ARRAY_TYPES))
    rank = draw(st.integers(0, 4))
    dims = tuple(draw(st.lists(st.integers(0, 4096), min_size=rank, max_size=rank)))
    dynamic: tuple[bool, ...] = ()
    if rank and draw(st.booleans()):
        dynamic = tuple(draw(st.lists(st.booleans(), min_size=rank, max_size=rank)))
        if not any(dynamic):
            dynamic = ()
    layout = None
    if draw(st.booleans()):
        m2m = tuple(draw(st.permutations(range(rank))))
        tiles = ()
        if draw(st.booleans()):
            tiles = tuple(Tile(tuple(draw(st.lists(st.integers(1, 256), min_size=1, max_size=2))))
                          for _ in range(draw(st.integers(1, 2))))
        layout = Layout(m2m, tiles=tiles, memory_space=draw(st.sampled_from((0, 0, 1, 2))),
                        element_size_bits=draw(st.sampled_from((0, 0, 4))))
    return ArrayShape(etype, dims, dynamic, layout)


shapes = st.recursive(array_shapes(), lambda inner: st.lists(inner, max_size=7).map(lambda e: TupleShape(tuple(e))),
                      max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(shapes)
def test_shapes_round_trip(shape) -> None:
    assert parse_shape(shape.to_text()) == shape


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 3), st.integers(-2, 3), st.integers(-2, 3),
                          st.integers(1, 3), st.integers(1, 3), st.booleans()), min_size=1, max_size=3),
       st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(0, 2)), min_size=1, max_size=3))
def test_window_and_padding_round_trip(dims, pads) -> None:
    window = Window(tuple(WindowDimension(*d) for d in dims))
    padding = PaddingConfig(tuple(pads))
    rank = len(dims)
    text = (
        "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
        f"ENTRY e {{\n  x = f32[{','.join(['4'] * rank)}] parameter(0)\n  z = f32[] constant(0)\n"
        f"  ROOT r = f32[{','.join(['4'] * rank)}] reduce-window(x, z), window={window}, to_apply=add\n}}\n\n"
    )
    m = hs.parse(text)
    assert m.entry.root.attrs["window"] == window
    assert m.to_text() == text
    pad_text = text.replace(f"reduce-window(x, z), window={window}, to_apply=add", f"pad(x, z), padding={padding}")
    m2 = hs.parse(pad_text.replace(f"ROOT r = f32[{','.join(['4'] * rank)}]", "ROOT r = f32[1]")) \
        if len(pads) == rank else None
    if m2 is not None:
        assert m2.entry.root.attrs["padding"] == padding


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(1, 3)), min_size=1, max_size=4))
def test_slices_round_trip(ranges) -> None:
    rank = len(ranges)
    sl = tuple(SliceRange(a, a + b, s) for a, b, s in ranges)
    from hloscope.ir.printer import _value

    text = (f"HloModule m\n\nENTRY e {{\n  x = f32[{','.join(['20'] * rank)}] parameter(0)\n"
            f"  ROOT r = f32[{','.join(['1'] * rank)}] slice(x), slice={_value('slice', sl, hs.PrintOptions())}\n}}\n\n")
    m = hs.parse(text)
    assert m.entry.root.attrs["slice"] == sl
    assert m.to_text() == text
