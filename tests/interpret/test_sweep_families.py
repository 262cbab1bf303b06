"""Families of differences the XLA test-corpus sweep (tools/xla_sweep.py) found, each checked
against XLA:CPU on a module of our own that has the same mechanism."""
from __future__ import annotations

import numpy as np
import pytest

import hloscope
from hloscope.interpret import run

client = pytest.importorskip("hloscope.xla.client")
RNG = np.random.default_rng(1)


@pytest.mark.parametrize("epsilon", [0.0, 1e-5, 0.5])
def test_onednn_layer_norm_matches_xla_cpu(epsilon: float) -> None:
    bits = int(np.array([epsilon], np.float32).view(np.int32)[0])
    config = '{\\"onednn_layer_norm_config\\":{\\"rescale\\":\\"SCALE_AND_SHIFT\\"' + (
        f',\\"epsilon_typecast\\":{bits}' if epsilon else "") + "}}"
    text = f"""HloModule ln
ENTRY e {{
  x = f32[3,5,6] parameter(0)
  g = f32[6] parameter(1)
  b = f32[6] parameter(2)
  ROOT y = f32[3,5,6] custom-call(x, g, b), custom_call_target="__onednn$layernorm", backend_config="{config}"
}}"""
    x = (RNG.standard_normal((3, 5, 6)) * 3 + 1).astype(np.float32)
    x[0, 0] = 2.0  # a constant row: its variance is 0, so epsilon alone decides
    g, b = RNG.standard_normal(6).astype(np.float32), RNG.standard_normal(6).astype(np.float32)
    ours = run(hloscope.parse(text), [x, g, b])
    theirs = client.compile_and_run(text, [x, g, b])
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_bf16_sum_over_many_short_dimensions_folds_in_order_as_xla_cpu() -> None:
    # No reduced dimension is longer than 32, so XLA:CPU folds all 17765 elements of a row in
    # order; hloscope fell back to pairwise sums beyond 16384 steps (-2240 for XLA's -64).
    # (f16 over several dimensions is summed in another order: Note [XLA:CPU's reduction order].)
    import ml_dtypes

    dtype, np_dtype = "bf16", ml_dtypes.bfloat16
    text = f"""HloModule narrow_sum
add {{
  x = {dtype}[] parameter(0)
  y = {dtype}[] parameter(1)
  ROOT s = {dtype}[] add(x, y)
}}
ENTRY e {{
  a = {dtype}[2,5,11,17,19] parameter(0)
  z = {dtype}[] constant(0)
  ROOT r = {dtype}[2] reduce(a, z), dimensions={{1,2,3,4}}, to_apply=add
}}"""
    for x in (np.full((2, 5, 11, 17, 19), 0.126, np.float32), RNG.standard_normal((2, 5, 11, 17, 19))):
        x = x.astype(np_dtype)
        ours = run(hloscope.parse(text), [x])
        theirs = client.compile_and_run(text, [x])
        np.testing.assert_array_equal(np.asarray(ours, np.float32), np.asarray(theirs, np.float32))


def test_reduce_over_extent_one_ignores_an_init_that_is_no_identity_as_xla_cpu() -> None:
    # XLA requires the init value to be the reducer's identity; XLA:CPU turns a reduce that
    # keeps the element count into a reshape, so init 2 is never added.
    text = """HloModule size_one
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[1,3,1,4] parameter(0)
  two = f32[] constant(2)
  r = f32[3,4] reduce(a, two), dimensions={0,2}, to_apply=add
  b = f32[2,3] parameter(1)
  s = f32[3] reduce(b, two), dimensions={0}, to_apply=add
  ROOT t = (f32[3,4], f32[3]) tuple(r, s)
}"""
    a, b = RNG.standard_normal((1, 3, 1, 4)).astype(np.float32), RNG.standard_normal((2, 3)).astype(np.float32)
    ours = run(hloscope.parse(text), [a, b])
    theirs = client.compile_and_run(text, [a, b])
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[0], a.reshape(3, 4))
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)  # a real reduce still adds its init
    np.testing.assert_allclose(ours[1], b.sum(0) + 2, rtol=1e-6)


@pytest.mark.parametrize("ty", ["f32", "bf16", "s32", "pred"])
def test_pred_dot_is_the_operands_product_compared_with_zero_as_xla_cpu(ty: str) -> None:
    # A pred dot of f32 operands truncated them to integers first (0.5 -> 0).
    import ml_dtypes

    np_dtype = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "s32": np.int32, "pred": np.bool_}[ty]
    text = f"""HloModule pred_dot
ENTRY e {{
  a = {ty}[3,2] parameter(0)
  b = {ty}[2,4] parameter(1)
  ROOT d = pred[3,4] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}"""
    a = np.array([[1, -1], [0.5, 0], [2, 3]], np.float32)
    b = np.array([[1, 0, 0.25, -2], [1, 0, 0, 3]], np.float32)
    if ty == "s32":
        a, b = (a * 4).astype(np.int32), (b * 4).astype(np.int32)
    a, b = a.astype(np_dtype), b.astype(np_dtype)
    ours = run(hloscope.parse(text), [a, b])
    theirs = client.compile_and_run(text, [a, b])
    np.testing.assert_array_equal(ours, theirs)


EXCESS = {
    "convert": """HloModule excess
ENTRY e {
  a = bf16[64] parameter(0)
  b = bf16[64] parameter(1)
  p = bf16[64] multiply(a, b)
  c = f32[64] convert(p)
  ROOT t = (f32[64], bf16[64]) tuple(c, p)
}""",
    "chain": """HloModule excess
ENTRY e {
  a = bf16[64] parameter(0)
  b = bf16[64] parameter(1)
  p = bf16[64] multiply(a, b)
  q = bf16[64] add(p, a)
  ROOT c = f32[64] convert(q)
}""",
    "dot": """HloModule excess
ENTRY e {
  a = bf16[16,64] parameter(0)
  b = bf16[16,64] parameter(1)
  s = bf16[16,64] multiply(a, b)
  e = bf16[16,64] exponential(b)
  ROOT d = f32[64,64] dot(s, e), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}""",
    "bf16-dot": """HloModule excess
ENTRY e {
  a = bf16[16,64] parameter(0)
  b = bf16[16,64] parameter(1)
  d = bf16[64,64] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT c = f32[64,64] convert(d)
}""",
}


@pytest.mark.parametrize("case", sorted(EXCESS))
def test_bf16_op_read_through_a_convert_to_f32_is_not_rounded_as_on_xla_cpu(case: str) -> None:
    # Note [Excess precision]: XLA:CPU computes bf16 arithmetic in f32 and hands a convert to
    # f32 (written, or inserted before a dot with an f32 result) the unrounded value.
    import ml_dtypes

    m = hloscope.parse(EXCESS[case])
    shape = tuple(m.entry.parameters[0].shape.dimensions)
    a, b = (RNG.standard_normal(shape).astype(ml_dtypes.bfloat16) for _ in range(2))
    ours = run(m, [a, b])
    theirs = client.compile_and_run(EXCESS[case], [a, b])
    for o, t in zip(ours if isinstance(ours, tuple) else [ours], theirs if isinstance(theirs, tuple) else [theirs],
                    strict=True):
        np.testing.assert_allclose(np.asarray(o, np.float64), np.asarray(t, np.float64), rtol=1e-5, atol=1e-4)
    # A GPU kernel computes what the module says: every bf16 result rounded to bf16.
    gpu = hloscope.run(m, [a, b], options=hloscope.RunOptions(float_env="gpu"))
    expected = _rounded_every_step(case, a, b)
    for o, t in zip(gpu if isinstance(gpu, tuple) else [gpu], expected, strict=True):
        np.testing.assert_allclose(np.asarray(o, np.float64), np.asarray(t, np.float64), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("batch", ["{0,1}", "{1,0}"])
def test_a_dot_xla_canonicalizes_reads_its_bf16_operands_rounded_as_xla_cpu(batch: str) -> None:
    # Note [Excess precision]: DotDecomposer transposes the operands of a dot whose batch
    # dimensions are out of order before FloatNormalization, so the multiply feeding it is
    # rounded to bf16; in order, the dot reads it unrounded. Values near 500 make a rounding
    # of the products show (0.95 off in XLA's channel-dequantization gemm test).
    import ml_dtypes

    text = f"""HloModule canonical
ENTRY e {{
  w = bf16[4,2,32,16] parameter(0)
  s = bf16[4,16] parameter(1)
  x = bf16[4,2,32,16] parameter(2)
  b = bf16[4,2,32,16] broadcast(s), dimensions={{0,3}}
  m = bf16[4,2,32,16] multiply(w, b)
  ROOT d = f32[{'2,4' if batch == '{1,0}' else '4,2'},16,16] dot(m, x), lhs_batch_dims={batch}, lhs_contracting_dims={{2}}, rhs_batch_dims={batch}, rhs_contracting_dims={{2}}
}}"""
    w = RNG.integers(-8, 8, (4, 2, 32, 16)).astype(ml_dtypes.bfloat16)
    s_ = RNG.standard_normal((4, 16)).astype(ml_dtypes.bfloat16)
    x = (RNG.standard_normal((4, 2, 32, 16)) * 4).astype(ml_dtypes.bfloat16)
    ours = np.asarray(run(hloscope.parse(text), [w, s_, x]), np.float64)
    theirs = np.asarray(client.compile_and_run(text, [w, s_, x]), np.float64)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-3)


def _rounded_every_step(case: str, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    """EXCESS[case] in numpy with each bf16 result rounded to bf16 (no excess precision)."""
    import ml_dtypes

    def bf16(x: np.ndarray) -> np.ndarray:
        return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16)

    fa, fb = np.asarray(a, np.float32), np.asarray(b, np.float32)
    if case == "convert":
        p = bf16(fa * fb)
        return [p.astype(np.float32), p]
    if case == "chain":
        return [bf16(bf16(fa * fb).astype(np.float32) + fa).astype(np.float32)]
    if case == "dot":
        s, e = bf16(fa * fb).astype(np.float64), bf16(np.exp(fb)).astype(np.float64)
        return [(s.T @ e).astype(np.float32)]
    assert case == "bf16-dot"
    return [bf16(fa.astype(np.float64).T @ fb.astype(np.float64)).astype(np.float32)]


@pytest.mark.parametrize("fft_type", ["FFT", "IFFT"])
def test_zero_length_fft_is_zeros_as_xla_evaluator_defines(fft_type: str) -> None:
    # numpy refused "0 FFT data points" and the error leaked as an internal one; XLA's
    # reference evaluator gives zeros (XLA:CPU leaves the output uninitialized).
    text = f"""HloModule zero_fft
ENTRY e {{
  x = c64[2,1,3,1] parameter(0)
  ROOT f = c64[2,1,3,1] fft(x), fft_type={fft_type}, fft_length={{1,0,1}}
}}"""
    x = (RNG.standard_normal((2, 1, 3, 1)) + 1j).astype(np.complex64)
    out = run(hloscope.parse(text), [x])
    assert out.dtype == np.complex64 and out.shape == (2, 1, 3, 1) and not out.any()


def test_convolution_in_batch_chunks_gives_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    # The window matrix is copied per batch chunk, so a large convolution fits in memory
    # (sweep module: a 7x7 stride-2 conv of f32[128,3,224,224] ran out of the 4 GB limit).
    from hloscope.interpret import linalg

    x = RNG.standard_normal((5, 3, 9, 9)).astype(np.float32)
    k = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    window = [{"size": 3, "stride": 2, "pad_low": 1, "pad_high": 1}] * 2
    whole = linalg.convolution(x, k, window=window, dim_labels="bf01_oi01->bf01")
    monkeypatch.setattr(linalg, "_IM2COL_BYTES", 1)  # one image per chunk
    chunked = linalg.convolution(x, k, window=window, dim_labels="bf01_oi01->bf01")
    np.testing.assert_allclose(chunked, whole, rtol=1e-6, atol=1e-6)
    theirs = client.compile_and_run("""HloModule conv
ENTRY e {
  x = f32[5,3,9,9] parameter(0)
  k = f32[4,3,3,3] parameter(1)
  ROOT c = f32[5,4,5,5] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
}""", [x, k])
    np.testing.assert_allclose(chunked, theirs, rtol=1e-5, atol=1e-5)


def test_bf16_all_reduce_of_a_product_sums_it_unrounded_as_xla_cpu() -> None:
    # AllReducePromotion: a bf16 all-reduce is an f32 all-reduce between converts, so the
    # multiply feeding it is read unrounded (Note [Excess precision]).
    import ml_dtypes

    from hloscope.xla.worker import run_on_xla

    text = """HloModule ar, replica_count=4
sum {
  x = bf16[] parameter(0)
  y = bf16[] parameter(1)
  ROOT s = bf16[] add(x, y)
}
ENTRY e {
  a = bf16[256] parameter(0)
  b = bf16[256] parameter(1)
  p = bf16[256] multiply(a, b)
  ROOT r = bf16[256] all-reduce(p), replica_groups={}, to_apply=sum
}"""
    inputs = [[RNG.standard_normal(256).astype(ml_dtypes.bfloat16) for _ in range(2)] for _ in range(4)]
    ours = run(hloscope.parse(text), inputs)
    theirs = run_on_xla(text, inputs, replicas=4, partitions=1, per_device=True, timeout=300).outputs
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(np.asarray(o, np.float32), np.asarray(t, np.float32))


NEVER_ENDS = """HloModule loop
cond {
  p = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[2] get-tuple-element(p), index=1
  step = s32[] constant(STEP)
  i2 = s32[] add(i, step)
  ROOT t = (s32[], f32[2]) tuple(i2, x)
}
ENTRY e {
  x = f32[2] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[2]) tuple(z, x)
  ROOT w = (s32[], f32[2]) while(init), condition=cond, body=body
}"""


def test_a_loop_whose_state_stops_changing_stops_with_an_error() -> None:
    # XLA's tests hold such loops (a counter incremented by 0, a body returning its
    # parameter); hloscope ran them until killed (Note [Loops that never end]).
    from hloscope.errors import InterpretError

    x = np.float32([1, 2])
    out = run(hloscope.parse(NEVER_ENDS.replace("STEP", "1")), [x])
    assert int(out[0]) == 3
    with pytest.raises(InterpretError, match=r"while loop w never ends: iteration 1 left its state unchanged"):
        run(hloscope.parse(NEVER_ENDS.replace("STEP", "0")), [x])
    identity = """HloModule loop
cond {
  p = (f32[128,128]) parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  ROOT p = (f32[128,128]) parameter(0)
}
ENTRY e {
  x = f32[128,128] parameter(0)
  init = (f32[128,128]) tuple(x)
  ROOT w = (f32[128,128]) while(init), condition=cond, body=body
}"""
    with pytest.raises(InterpretError, match=r"body returns its state unchanged"):
        run(hloscope.parse(identity), [np.zeros((128, 128), np.float32)])


def test_variadic_reduce_with_a_lane_mixing_reducer_folds_in_order_as_xla_cpu() -> None:
    # (max(acc0, acc1), max(x0, x1)) is no monoid: the result depends on the order, and
    # XLA:CPU folds a short dimension in order where hloscope paired neighbours (a tree).
    text = """HloModule mix
mx {
  a0 = s32[] parameter(0)
  a1 = s32[] parameter(1)
  x0 = s32[] parameter(2)
  x1 = s32[] parameter(3)
  m0 = s32[] maximum(a0, a1)
  m1 = s32[] maximum(x0, x1)
  ROOT t = (s32[], s32[]) tuple(m0, m1)
}
ENTRY e {
  a = s32[16,10,4] parameter(0)
  b = s32[16,10,4] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = (s32[16,4], s32[16,4]) reduce(a, b, i, j), dimensions={1}, to_apply=mx
}"""
    a, b = (RNG.integers(-50, 50, (16, 10, 4)).astype(np.int32) for _ in range(2))
    i, j = np.int32(7), np.int32(-3)
    ours = run(hloscope.parse(text), [a, b, i, j])
    theirs = client.compile_and_run(text, [a, b, i, j])
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(o, t)


def test_a_loop_returning_its_elements_on_several_devices_stops_with_an_error() -> None:
    # The body rebuilds its state from its parameter's elements and all-gathers a value
    # nobody reads (XLA's all_gather_combiner test): it never ends, on every executor.
    from hloscope.errors import InterpretError

    text = """HloModule loop, replica_count=2
cond {
  p = (f32[4], s32[4]) parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  p = (f32[4], s32[4]) parameter(0)
  x = f32[4] get-tuple-element(p), index=0
  i = s32[4] get-tuple-element(p), index=1
  g = f32[8] all-gather(x), replica_groups={}, dimensions={0}
  ROOT t = (f32[4], s32[4]) tuple(x, i)
}
ENTRY e {
  x = f32[4] parameter(0)
  i = s32[4] parameter(1)
  init = (f32[4], s32[4]) tuple(x, i)
  ROOT w = (f32[4], s32[4]) while(init), condition=cond, body=body
}"""
    args = [np.zeros(4, np.float32), np.zeros(4, np.int32)]
    for mode in ("per-device", "lockstep"):
        with pytest.raises(InterpretError, match="never ends: its body returns its state unchanged"):
            run(hloscope.parse(text), args, options=hloscope.RunOptions(mode=mode))


def test_tokens_pass_the_excess_precision_plan() -> None:
    # The plan asked a token for its numpy dtype (ValueError) in five XLA test modules.
    text = """HloModule tok
ENTRY e {
  x = f32[3] parameter(0)
  t = token[] after-all()
  ROOT d = f32[3] add-dependency(x, t)
}"""
    np.testing.assert_array_equal(run(hloscope.parse(text), [np.float32([1, 2, 3])]), [1, 2, 3])


def test_fft_of_an_empty_operand_has_the_declared_shape() -> None:
    # numpy resized the empty axes to fft_length: c64[0,1,1,1] for a declared c64[0,1,0,1].
    text = """HloModule empty_fft
ENTRY e {
  x = c64[0,1,0,1] parameter(0)
  ROOT f = c64[0,1,0,1] fft(x), fft_type=FFT, fft_length={1,1,1}
}"""
    out = run(hloscope.parse(text), [np.zeros((0, 1, 0, 1), np.complex64)])
    assert out.shape == (0, 1, 0, 1) and out.dtype == np.complex64


def test_an_inline_manual_region_runs_like_the_called_form() -> None:
    # GSPMD markers around ops in the entry itself (no call): the copy met a Sharded value and
    # leaked "AttributeError: 'Sharded' object has no attribute 'copy'"; such regions are now
    # outlined into a called computation (Note [Manual regions written inline] in interpret/spmd.py) and run.
    text = """HloModule inline_region, num_partitions=2
ENTRY e {
  x = s32[4] parameter(0), sharding={devices=[2]<=[2]}
  s = s32[2] custom-call(x), custom_call_target="SPMDFullToShardShape", sharding={manual}
  c = s32[2] copy(s), sharding={manual}
  ROOT f = s32[4] custom-call(c), custom_call_target="SPMDShardToFullShape", sharding={devices=[2]<=[2]}
}"""
    out = run(hloscope.parse(text), [np.arange(4, dtype=np.int32)])
    np.testing.assert_array_equal(out, np.arange(4, dtype=np.int32))


def test_u64_constant_minus_one_is_all_ones_as_xla_reads_it() -> None:
    # An OverflowError leaked as an internal error (hlo_parser_test ConstantUnsignedUnderflow).
    text = "HloModule m\nENTRY e {\n  ROOT c = u64[2] constant({-1, 5})\n}"
    ours = run(hloscope.parse(text), [])
    np.testing.assert_array_equal(ours, client.compile_and_run(text, []))
    assert ours.tolist() == [2**64 - 1, 5]


def test_allocate_buffer_is_a_fresh_buffer() -> None:
    # The host offloader's AllocateBuffer custom call had no handler (host_offloader_test).
    text = """HloModule alloc
ENTRY e {
  a = f32[4] custom-call(), custom_call_target="AllocateBuffer"
  x = f32[1] parameter(0)
  i = s32[] constant(2)
  ROOT d = f32[4] dynamic-update-slice(a, x, i)
}"""
    out = run(hloscope.parse(text), [np.float32([7])])
    assert out.tolist() == [0, 0, 7, 0]


@pytest.mark.parametrize("op", ["and", "or", "add", "maximum"])
def test_u4_reduce_with_a_known_reducer_runs_as_xla_cpu(op: str) -> None:
    # numpy has no bitwise_and loop for ml_dtypes' uint4: a TypeError leaked as internal error.
    import ml_dtypes

    text = f"""HloModule nibbles
r {{
  a = u4[] parameter(0)
  b = u4[] parameter(1)
  ROOT c = u4[] {op}(a, b)
}}
ENTRY e {{
  x = u4[6,5] parameter(0)
  z = u4[] constant(0)
  ROOT s = u4[6] reduce(x, z), dimensions={{1}}, to_apply=r
}}"""
    x = RNG.integers(0, 16, (6, 5)).astype(ml_dtypes.uint4)
    ours = run(hloscope.parse(text), [x])
    theirs = client.compile_and_run(text, [x])
    np.testing.assert_array_equal(np.asarray(ours, np.int32), np.asarray(theirs, np.int32))


@pytest.mark.parametrize("ty,op,shape,dims", [
    ("u32", "add", (3, 2048), (1,)),     # 64 windows, then 2, then the final fold: init 67 times
    ("s32", "multiply", (2, 1025), (1,)),
    ("s8", "add", (40, 3, 40), (0, 2)),  # windows along both reduced dimensions
    ("u8", "add", (4, 32), (1,)),        # no window: init once
    ("s32", "maximum", (2, 100), (1,)),  # idempotent: once or many times alike
])
def test_integer_reduce_applies_an_init_that_is_no_identity_as_xla_cpu(ty: str, op: str, shape, dims) -> None:
    # XLA:CPU's tree-reduction rewrite applies the init once per window of 32 and once more;
    # hloscope applied it once (XLA's reduce_row/side_output_unsigned: 8/8 sums off by 462).
    def dims_text(values) -> str:
        return ",".join(map(str, values))

    out_shape = [n for d, n in enumerate(shape) if d not in dims]
    text = f"""HloModule int_reduce
r {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT c = {ty}[] {op}(a, b)
}}
ENTRY e {{
  p = {ty}[{dims_text(shape)}] parameter(0)
  i = {ty}[] parameter(1)
  ROOT s = {ty}[{dims_text(out_shape)}] reduce(p, i), dimensions={{{dims_text(dims)}}}, to_apply=r
}}"""
    dtype = np.dtype({"u32": np.uint32, "s32": np.int32, "s8": np.int8, "u8": np.uint8}[ty])
    x = RNG.integers(-3 if dtype.kind == "i" else 0, 4, shape).astype(dtype)
    if op == "multiply":  # no zeros: a zero product hides the init
        x = RNG.choice([1, -1, 3] if dtype.kind == "i" else [1, 3], shape).astype(dtype)
    init = np.asarray(3, dtype)
    m = hloscope.parse(text)
    np.testing.assert_array_equal(run(m, [x, init]), client.compile_and_run(text, [x, init]))
