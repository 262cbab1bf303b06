"""Sizes as the device pads them: a tiled layout fills whole tiles, a scalar too (XLA's ArraySize)."""
from __future__ import annotations

import pytest

import hloscope


@pytest.mark.parametrize(("shape", "padded", "elements"), [
    ("f32[]{:T(128)}", 512, 4),                      # seed 004's scalars: one 128-element tile
    ("f32[3,5]{1,0:T(8,128)}", 8 * 128 * 4, 60),
    ("f32[8,128,4096]{2,1,0:T(8,128)}", 16 << 20, 16 << 20),
    ("u32[]{:S(2)}", 4, 4),                          # a memory space without a tile pads nothing
])
def test_tiles_pad_the_buffer(shape, padded, elements):
    s = hloscope.parse(f"HloModule m\nENTRY e {{ ROOT p = {shape} parameter(0) }}").entry.root.shape
    assert s.byte_size() == padded and s.byte_size(tiled=False) == elements
