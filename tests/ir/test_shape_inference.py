"""Shape inference: one rule (or a reasoned exemption) per opcode, each matching XLA."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hloscope
from hloscope.ir import Opcode
from hloscope.ir.attributes import Window, WindowDimension
from hloscope.ir.shape_inference import (
    NOT_INFERABLE,
    SHAPE_CHECKS,
    SHAPE_RULES,
    ShapeInferenceError,
    infer_shape,
    same_shape,
    shape_text,
    window_output_dimensions,
)
from hloscope.text import parse_shape


def test_every_opcode_has_a_rule_or_a_reason() -> None:
    for op in Opcode:
        assert (op in SHAPE_RULES) != (op in NOT_INFERABLE), op
    assert all(reason.strip() for reason in NOT_INFERABLE.values())
    assert set(SHAPE_CHECKS) <= set(NOT_INFERABLE)


def _root(body: str, params: str) -> object:
    """Parse an entry computation with ``params`` (one per line) and ``body`` as its ROOT."""
    lines = [f"  p{i} = {s} parameter({i})" for i, s in enumerate(params.split(";")) if s]
    text = "HloModule t\n" + _SUM + "ENTRY e {\n" + "\n".join(lines) + f"\n  ROOT r = {body}\n}}\n"
    return hloscope.parse(text).entry.root


_SUM = """add2 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""

# (declared root, parameter shapes, expected inferred shape)
CASES = [
    ("f32[2,3] add(p0, p1)", "f32[2,3];f32[2,3]", "f32[2,3]"),
    ("pred[2,3] compare(p0, p1), direction=LT", "s32[2,3];s32[2,3]", "pred[2,3]"),
    ("f32[4] abs(p0)", "c64[4]", "f32[4]"),
    ("f64[4] imag(p0)", "c128[4]", "f64[4]"),
    ("c64[4] complex(p0, p0)", "f32[4]", "c64[4]"),
    ("pred[4] is-finite(p0)", "bf16[4]", "pred[4]"),
    ("s8[4] convert(p0)", "f32[4]", "s8[4]"),
    ("u8[4,4] bitcast-convert(p0)", "f32[4]", "u8[4,4]"),
    ("f32[4] bitcast-convert(p0)", "u16[4,2]", "f32[4]"),
    ("f32[3,2] transpose(p0), dimensions={1,0}", "f32[2,3]", "f32[3,2]"),
    ("f32[2,2] slice(p0), slice={[0:4:2], [1:3]}", "f32[4,4]", "f32[2,2]"),
    ("f32[1,16] pad(p0, p1), padding=-1_0x1_2_3", "f32[2,4];f32[]", "f32[1,16]"),
    ("f32[2,9] concatenate(p0, p1), dimensions={1}", "f32[2,4];f32[2,5]", "f32[2,9]"),
    ("f32[2,2] dynamic-slice(p0, p1, p1), dynamic_slice_sizes={2,2}", "f32[4,4];s32[]", "f32[2,2]"),
    ("f32[3] reduce(p0, p1), dimensions={0}, to_apply=add2", "f32[5,3];f32[]", "f32[3]"),
    ("f32[2,3] reduce-window(p0, p1), window={size=2x2 stride=2x1 pad=0_0x0_0}, to_apply=add2",
     "f32[4,4];f32[]", "f32[2,3]"),
    ("f32[5,2,7] dot(p0, p1), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
     "rhs_contracting_dims={1}", "bf16[5,2,3];bf16[5,3,7]", "f32[5,2,7]"),
    ("f32[2,4,3,3] convolution(p0, p1), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01",
     "f32[2,3,6,6];f32[4,3,3,3]", "f32[2,4,3,3]"),
    ("f32[2,6,5] convolution(p0, p1), window={size=2 pad=0_0 lhs_dilate=2}, dim_labels=bf0_io0->bf0, "
     "feature_group_count=2", "f32[2,4,3];f32[2,6,2]", "f32[2,6,4]"),
    ("f32[3,2,4] gather(p0, p1), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, "
     "index_vector_dim=1, slice_sizes={2,4}", "f32[6,4];s32[3,1]", "f32[3,2,4]"),
    ("f32[3,4] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
     "index_vector_dim=1, slice_sizes={1,4}", "f32[6,4];s32[3]", "f32[3,4]"),
    ("c64[4,5] fft(p0), fft_type=RFFT, fft_length={8}", "f32[4,8]", "c64[4,5]"),
    ("f32[4,8] fft(p0), fft_type=IRFFT, fft_length={8}", "c64[4,5]", "f32[4,8]"),
    ("(f32[2,3], s32[2,3]) topk(p0), k=3, largest=true", "f32[2,9]", "(f32[2,3], s32[2,3])"),
    ("f32[16,3] all-gather(p0), dimensions={0}, replica_groups={{0,1,2,3}}", "f32[4,3]", "f32[16,3]"),
    ("f32[1,3] reduce-scatter(p0), dimensions={0}, replica_groups=[2,4]<=[8], to_apply=add2",
     "f32[4,3]", "f32[1,3]"),
    ("(f32[4], f32[4], u32[], u32[]) collective-permute-start(p0), source_target_pairs={{0,1}}",
     "f32[4]", "(f32[4], f32[4], u32[], u32[])"),
    ("(f32[4], f32[8]) all-gather-start(p0), dimensions={0}, replica_groups={{0,1}}", "f32[4]",
     "(f32[4], f32[8])"),
    ("(f32[2,3,4], f32[3], f32[3]) batch-norm-training(p0, p1, p1), epsilon=0.001, feature_index=1",
     "f32[2,3,4];f32[3]", "(f32[2,3,4], f32[3], f32[3])"),
    ("f32[<=4,3] set-dimension-size(p0, p1), dimensions={0}", "f32[4,3];s32[]", "f32[<=4,3]"),
    ("u32[] replica-id()", "", "u32[]"),
    ("f32[3] get-tuple-element(p0), index=1", "(s32[], f32[3])", "f32[3]"),
]


@pytest.mark.parametrize(("body", "params", "expected"), CASES, ids=[c[0].split("(")[0] for c in CASES])
def test_rule(body: str, params: str, expected: str) -> None:
    inferred = infer_shape(_root(body, params))
    assert inferred is not None and shape_text(inferred) == expected
    assert same_shape(inferred, parse_shape(expected))


ERRORS = [
    ("f32[2,3] add(p0, p1)", "f32[2,3];f32[3,2]", "different dimensions"),
    ("f32[2,3] add(p0, p1)", "f32[2,3];bf16[2,3]", "different element types: f32 vs bf16"),
    ("f32[2,2] slice(p0), slice={[0:5], [0:2]}", "f32[4,4]", r"slice range \[0:5\] of dimension 0"),
    ("f32[2,7] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}", "f32[2,3];f32[4,7]",
     "dot contracting dimensions differ"),
    ("f32[3] get-tuple-element(p0), index=2", "(s32[], f32[3])", "tuple index 2 is out of range"),
    ("f32[4] bitcast-convert(p0)", "u16[4,3]", "needs a minor dimension of size 2"),
    ("f32[3] reduce-scatter(p0), dimensions={0}, replica_groups={{0,1,2}}, to_apply=add2", "f32[8]",
     "does not divide into 3 shards"),
    # XLA takes the shard count from the declared result; it must match the group size.
    ("f32[8] all-gather(p0), dimensions={0}, replica_groups={{0,1}}", "f32[2]",
     "groups of 2 devices has 2 shards, but the declared f32.8. has 4"),
]


@pytest.mark.parametrize(("body", "params", "message"), ERRORS)
def test_rule_errors(body: str, params: str, message: str) -> None:
    with pytest.raises(ShapeInferenceError, match=message):
        infer_shape(_root(body, params))


def test_not_inferable_returns_none() -> None:
    assert infer_shape(_root("f32[2,3] reshape(p0)", "f32[6]")) is None


def test_same_shape_ignores_layout_only() -> None:
    assert same_shape(parse_shape("f32[2,3]{0,1}"), parse_shape("f32[2,3]{1,0}"))
    assert not same_shape(parse_shape("f32[<=2,3]"), parse_shape("f32[2,3]"))
    assert not same_shape(parse_shape("(f32[2])"), parse_shape("f32[2]"))


# --- against XLA itself: jax.eval_shape runs XLA's shape rules for these ops ---------------------
_dim = st.tuples(st.integers(1, 9), st.integers(1, 4), st.integers(1, 3), st.integers(-2, 3),
                 st.integers(-2, 3), st.integers(1, 3), st.integers(1, 2))


@settings(max_examples=40, deadline=None)
@given(st.lists(_dim, min_size=1, max_size=3))
def test_window_output_matches_jax(dims: list[tuple[int, ...]]) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    base = tuple(d[0] for d in dims)
    window = Window(tuple(WindowDimension(size=d[1], stride=d[2], padding_low=max(d[3], 0),
                                          padding_high=max(d[4], 0), base_dilation=d[5],
                                          window_dilation=d[6]) for d in dims))
    ours = window_output_dimensions(base, window)
    out = jax.eval_shape(lambda x: lax.reduce_window(
        x, 0.0, lax.add, tuple(w.size for w in window.dimensions), tuple(w.stride for w in window.dimensions),
        tuple((w.padding_low, w.padding_high) for w in window.dimensions),
        base_dilation=tuple(w.base_dilation for w in window.dimensions),
        window_dilation=tuple(w.window_dilation for w in window.dimensions)),
        jax.ShapeDtypeStruct(base, jnp.float32))
    assert ours == out.shape, (base, window)
    del np


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(-3, 4), st.integers(-3, 4), st.integers(0, 3)),
                min_size=1, max_size=3))
def test_pad_matches_jax(dims: list[tuple[int, int, int, int]]) -> None:
    import jax
    import jax.numpy as jnp
    from jax import lax

    base = tuple(d[0] for d in dims)
    cfg = tuple(d[1:] for d in dims)
    params = f"f32[{','.join(map(str, base))}];f32[]"
    padding = "x".join(f"{lo}_{hi}_{it}" for lo, hi, it in cfg)
    try:
        expected = jax.eval_shape(lambda x: lax.pad(x, 0.0, cfg), jax.ShapeDtypeStruct(base, jnp.float32)).shape
    except (TypeError, ValueError):
        expected = None  # XLA rejects it (a negative size): so must we
    root = _root(f"f32[] pad(p0, p1), padding={padding}", params)
    if expected is None:
        with pytest.raises(ShapeInferenceError):
            infer_shape(root)
    else:
        assert infer_shape(root).dimensions == expected


SCAN_MODULE = """HloModule m
step {{
  x = f32[3] parameter(0)
  c = s32[2] parameter(1)
  ROOT t = {root} tuple({elems})
}}
ENTRY e {{
  x = f32[{xdims}] parameter(0)
  c = s32[2] parameter(1)
  ROOT r = {declared} scan(x, c), dimensions={{{dim}}}, num_carries=1, to_apply=step
}}"""


@pytest.mark.parametrize(("dim", "xdims", "expected"), [(0, "5,3", "(f32[5,3], f32[5,3], s32[2])"),
                                                        (1, "3,5", "(f32[3,5], f32[3,5], s32[2])")])
def test_scan_stacks_outputs_along_its_dimension(dim: int, xdims: str, expected: str) -> None:
    text = SCAN_MODULE.format(root="(f32[3], f32[3], s32[2])", elems="x, x, c", xdims=xdims,
                              declared=expected, dim=dim)
    inst = hloscope.parse(text).entry.root
    assert same_shape(infer_shape(inst), parse_shape(expected))


def test_scan_with_more_carries_than_results_is_an_error() -> None:
    text = SCAN_MODULE.format(root="(s32[2])", elems="c", xdims="5,3", declared="(s32[2])", dim=0)
    text = text.replace("num_carries=1", "num_carries=2")
    with pytest.raises(ShapeInferenceError, match="carries"):
        infer_shape(hloscope.parse(text).entry.root)
